"""The KSD of the sparse/dense Dirichlet study (dscir.diagnostics.stein's
``dirichlet_totals`` and ``dirichlet_score``, ``dscir.experiments.dirichlet.ksd_of``):
the score against finite differences of the log density of eta, the completion
against the exact Gamma laws, exact against biased samples, and the study's wiring."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dscir.diagnostics.stein import dirichlet_score, dirichlet_totals
from dscir.errors import DscirError
from dscir.experiments import dirichlet as experiment
from dscir.models import dirichlet as model
from dscir.rng import derive
from dscir.samplers import cir
from dscir.samplers.simplex import normalize_log

A = model.ALPHA + model.SPARSE


def log_density(eta: np.ndarray) -> float:
    """log p(eta) of eta_j = log theta_j, theta_j ~ Gamma(alpha + n_j, 1) independently:
    scipy's Gamma log density at exp(eta) plus the Jacobian eta."""
    return float(np.sum(stats.gamma.logpdf(np.exp(eta), A) + eta))


def test_score_is_the_gradient_of_the_log_density_of_eta():
    """A score missing n_j (the prior's alpha only), or missing -theta_j, or taken in
    theta instead of eta, gives a different gradient."""
    rng = np.random.default_rng(3)
    theta = rng.gamma(A)
    theta[3:] = np.maximum(theta[3:], 1e-3)  # finite differences need moderate eta
    phi, total = theta / theta.sum(), theta.sum()
    eta, score = dirichlet_score(np.log(phi)[None], np.array([total]), model.ALPHA,
                                 model.SPARSE)
    np.testing.assert_allclose(eta[0], np.log(theta), rtol=1e-12, atol=1e-12)
    h, want = 1e-5, np.zeros(model.D)
    for j in range(model.D):
        e = np.zeros(model.D)
        e[j] = h
        want[j] = (log_density(eta[0] + e) - log_density(eta[0] - e)) / (2 * h)
    np.testing.assert_allclose(score[0], want, rtol=1e-6, atol=1e-6)


def test_completion_gives_the_exact_gamma_totals_and_gamma_thetas():
    """T ~ Gamma(sum_j (alpha + n_j), 1) (1001 here, not the prior's d alpha = 1), and
    theta = T phi of exact Dirichlet draws has the independent Gamma(alpha + n_j)
    marginals whose score the KSD uses."""
    size = 4000
    totals = dirichlet_totals(np.random.default_rng(5), size, model.ALPHA, model.SPARSE)
    shape = A.sum()
    assert abs(totals.mean() - shape) < 4 * np.sqrt(shape / size)
    assert abs(totals.var() / shape - 1) < 4 * np.sqrt(2 / size) * 1.1
    assert stats.kstest(totals, stats.gamma(shape).cdf).pvalue > 0.01
    log_phi = normalize_log(cir.sample_stationary(np.broadcast_to(A, (size, A.size)),
                                                  derive(6, 99)))
    eta, _ = dirichlet_score(log_phi, totals, model.ALPHA, model.SPARSE)
    for j in (0, 1, 3):  # counts 800, 100, 0
        assert stats.kstest(eta[:, j], lambda x, a=A[j]: stats.gamma(a).cdf(np.exp(x))
                            ).pvalue > 0.01, j
    # theta_0 and theta_1 are independent: their correlation is that of noise
    assert abs(np.corrcoef(eta[:, 0], eta[:, 1])[0, 1]) < 4 / np.sqrt(size)


@pytest.mark.parametrize("seed", [0, 1])
def test_exact_draws_get_a_smaller_ksd_than_biased_ones(seed):
    """On the sparse posterior, 500 exact draws measured KSD 2.4-2.6 (seeds 0-3), a
    Dirichlet with 10 of the 800 counts moved to the second category 4.8-5.2, and
    SGRLD at a too-large step (1e-3, minibatch 100, 100 burn-in) 4.0-5.6."""
    size = 500
    exact = experiment.ksd_of(experiment.exact_log_phi(model.SPARSE, size, seed),
                              model.SPARSE, seed)
    shifted = model.ALPHA + np.array([790, 110, 100, 0, 0, 0, 0, 0, 0, 0])
    wrong = experiment.ksd_of(
        normalize_log(cir.sample_stationary(np.broadcast_to(shifted, (size, A.size)),
                                            derive(seed, 98))), model.SPARSE, seed)
    sgrld = experiment.ksd_of(experiment.run_chain("sgrld", model.SPARSE, 100, 1e-3, seed,
                                                   100, size), model.SPARSE, seed)
    assert exact < 3.0, exact
    assert wrong > 4.0 and wrong > 1.5 * exact, (exact, wrong)
    assert sgrld > 3.5 and sgrld > 1.4 * exact, (exact, sgrld)


def test_study_reports_the_ksd_of_the_chosen_chain_and_the_grids_smallest():
    result = experiment.study(seeds=1, fractions=[0.5], burn_in=20, kept=30)
    for row in result["distances"]:
        counts = experiment.POSTERIORS[row["posterior"]]
        n, seed = row["minibatch"], row["seed"]
        per_step = {h: experiment.ksd_of(
            experiment.run_chain(row["method"], counts, n, h, seed, 20, 30), counts, seed)
            for h in experiment.GRIDS[row["method"]]}
        assert row["ksd"] == per_step[row["step_size"]]
        assert row["ksd_best"] == min(per_step.values())
        assert per_step[row["ksd_step_size"]] == row["ksd_best"]
        assert row["exact_ksd"] == experiment.ksd_of(
            experiment.exact_log_phi(counts, 30, seed), counts, seed)
    summ = experiment.summary(result)
    assert {"scir_ksd", "sgrld_ksd", "scir_ksd_best", "sgrld_ksd_best",
            "exact_ksd"} <= set(summ[0])


def test_dirichlet_score_validates_input():
    with pytest.raises(DscirError, match="must be"):
        dirichlet_score(np.zeros((4, 3)), np.ones(4), 0.1, np.ones(2))
    with pytest.raises(DscirError, match="must be"):
        dirichlet_score(np.zeros((4, 3)), np.ones(3), 0.1, np.ones(3))
    with pytest.raises(DscirError, match="positive"):
        dirichlet_score(np.zeros((2, 3)), np.array([1.0, 0.0]), 0.1, np.ones(3))
