"""DP mixture pieces against exact answers, and the exact Gibbs slice sampler."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats
from scipy.special import gammaln

from dscir.errors import DscirError
from dscir.models.mixtures import dp as dpmm
from dscir.rng import derive
from dscir.samplers import cir, sgrld
from dscir.samplers.simplex import beta_from_log_gammas, normalize_log
from support.mixtures import K_TRUE, W, adjusted_rand_index, synthetic_mixture

def test_adjusted_rand_index():
    assert adjusted_rand_index([0, 0, 1, 1], [5, 5, 2, 2]) == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    assert abs(adjusted_rand_index(rng.integers(0, 3, 3000), rng.integers(0, 3, 3000))) < 0.01


def test_stick_counts_and_weights():
    np.testing.assert_array_equal(dpmm.stick_counts([3, 0, 2, 1]),
                                  [[3, 3], [0, 3], [2, 1], [1, 0]])
    log_sticks = np.log([[1.0, 1.0], [1.0, 3.0], [3.0, 1.0]])  # v = 1/2, 1/4, 3/4
    log_w, log_rest = dpmm.log_weights(log_sticks)
    np.testing.assert_allclose(np.exp(log_w), [0.5, 0.125, 0.28125])
    assert math.exp(log_rest) == pytest.approx(0.5 * 0.75 * 0.25)


def test_new_sticks_are_the_fewest_that_cover_the_smallest_slice():
    for log_min_u, alpha in ((-3.0, 1.0), (-40.0, 0.2), (-5000.0, 2.0)):
        g = dpmm.new_sticks(-0.5, log_min_u, alpha, key=derive(1, int(-log_min_u)))
        _, log_1mv = beta_from_log_gammas(g[:, 0], g[:, 1])
        cum = -0.5 + np.cumsum(log_1mv)
        assert np.all(np.isfinite(g)) and cum[-1] < log_min_u
        assert g.shape[0] == 1 or cum[-2] >= log_min_u
    assert dpmm.new_sticks(-5.0, -3.0, 1.0, key=1).shape == (0, 2)
    with pytest.raises(DscirError, match="components"):
        dpmm.new_sticks(0.0, -1e6, 10.0, key=1, max_components=1000)


def test_prior_sticks_are_beta_1_alpha():
    g = dpmm.new_sticks(0.0, -1e4, 3.0, key=7)  # ~30,000 prior breaks
    log_v, _ = beta_from_log_gammas(g[:, 0], g[:, 1])
    assert stats.kstest(np.exp(log_v), stats.beta(1.0, 3.0).cdf).pvalue > 1e-3


def test_scir_stick_and_component_steps_reach_the_exact_full_conditionals():
    """Full data, fixed allocations: after enough SCIR steps of h = 0.1 from a
    poor start, every replicate of the global update is an exact draw of
    v_j ~ Beta(1 + m_j, alpha + M_j) and phi_j ~ Dirichlet(a0 + c_j) (KS)."""
    rng = np.random.default_rng(3)
    m = np.array([40.0, 0.0, 7.0, 1.0])
    counts = rng.poisson(2.0, size=(4, 6)) * (m[:, None] > 0)
    k, alpha, a0, reps = m.size, 1.7, 0.5, 1500
    c_rep = np.tile(counts, (reps, 1))
    sticks, theta = cir.State(np.zeros((k * reps, 2))), cir.State(np.full((k * reps, 6), 3.0))
    prior = dpmm.stick_prior(k * reps, alpha)
    stats_rep = np.concatenate([dpmm.stick_counts(m)] * reps)
    for t in range(150):  # e^{-15}: the start is forgotten
        sticks = cir.step(sticks, prior, stats_rep, 0.1, derive(5, t, 0))
        theta = cir.step(theta, a0, c_rep, 0.1, derive(5, t, 1))
    log_v, _ = beta_from_log_gammas(sticks.log_theta[:, 0], sticks.log_theta[:, 1])
    v = np.exp(log_v).reshape(reps, k)
    after = dpmm.stick_counts(m)[:, 1]
    for j in range(k):
        exact = stats.beta(1 + m[j], alpha + after[j])
        assert stats.kstest(v[:, j], exact.cdf).pvalue > 1e-3
    phi = np.exp(normalize_log(theta.log_theta, axis=1)).reshape(reps, k, 6)
    a = a0 + counts
    for j in range(k):
        for w in (0, 3):
            exact = stats.beta(a[j, w], a[j].sum() - a[j, w])
            assert stats.kstest(phi[:, j, w], exact.cdf).pvalue > 1e-3


@pytest.mark.parametrize("a0", [0.5, 0.01])
def test_global_step_with_infinite_steps_is_the_exact_gibbs_update(a0):
    """global_step(SCIR, h = inf) draws sticks and components afresh from the
    Beta/Dirichlet full conditionals whatever the current state (KS); a0 = 0.5
    is SCIR's and exact Gibbs's, 0.01 SGRLD's on text (``dscir.models.mixtures.policy``).
    The component gammas are tested themselves (Gamma(a0 + c), on the log scale:
    at a0 = 0.01 an empty row's phi lies within 1e-16 of 0 or 1 about half the
    time, below what a double resolves near 1)."""
    m = np.array([30.0, 5.0, 0.0])
    counts = np.array([[10.0, 0.0, 3.0], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0]])
    v, phi, log_theta = [], [], []
    for r in range(1500):
        keys = [derive(9, r, d) for d in range(3)]
        sticks, theta, _ = dpmm.global_step(
            cir, cir.State(np.full((3, 2), 50.0 * (r % 2))), cir.State(np.zeros((3, 3))), 2.0,
            m, counts, a0=a0, alpha_prior=(1.0, 1.0), step_sizes=(math.inf, math.inf),
            keys=keys)
        v.append(np.exp(beta_from_log_gammas(*sticks.log_theta.T)[0]))
        phi.append(np.exp(normalize_log(theta.log_theta, axis=1)))
        log_theta.append(theta.log_theta)
    v, phi, log_theta = np.array(v), np.array(phi), np.array(log_theta)
    after = dpmm.stick_counts(m)[:, 1]
    for j in range(3):
        assert stats.kstest(v[:, j], stats.beta(1 + m[j], 2.0 + after[j]).cdf).pvalue > 1e-3
        a = a0 + counts[j]
        assert stats.kstest(log_theta[:, j, 0], stats.loggamma(a[0]).cdf).pvalue > 1e-3
        if counts[j].any():
            assert stats.kstest(phi[:, j, 0], stats.beta(a[0], a.sum() - a[0]).cdf).pvalue > 1e-3


def test_alpha_conditional_is_consistent_with_its_prior():
    """alpha ~ Gamma(2, 3), v_1..v_K ~ Beta(1, alpha), then alpha' | v: alpha' must
    again be Gamma(2, rate 3) (the conditional of a joint keeps its marginal)."""
    rng = np.random.default_rng(11)
    draws = []
    for r in range(3000):
        alpha = rng.gamma(2.0, 1.0 / 3.0)
        v = rng.beta(1.0, alpha, size=5)
        log_rest = float(np.sum(np.log1p(-np.minimum(v, 1 - 1e-16))))
        draws.append(dpmm.sample_alpha(log_rest, 5, 2.0, 3.0, derive(2, r)))
    assert stats.kstest(draws, stats.gamma(2.0, scale=1.0 / 3.0).cdf).pvalue > 1e-3


def test_allocation_probabilities():
    """One user, many streams: frequencies match prod_w phi^x over {w_j >= u}."""
    log_phi = np.log(np.array([[0.5, 0.3, 0.2], [0.2, 0.2, 0.6], [0.1, 0.8, 0.1],
                               [0.3, 0.3, 0.4]]))
    log_w = np.log([0.4, 0.3, 0.2, 0.05])
    n = 20000
    indptr = np.arange(n + 1) * 2
    local = np.tile([0, 2], n)
    data = np.tile([2, 1], n)
    z = dpmm.allocate(indptr, local, data, np.arange(n), np.full(n, np.log(0.1)), log_w,
                      log_phi, key=4)
    assert not np.any(z == 3)  # w_3 = 0.05 < u = 0.1
    lik = np.exp(2 * log_phi[:3, 0] + log_phi[:3, 2])
    expected = n * lik / lik.sum()
    observed = np.bincount(z, minlength=3)[:3]
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_slices_lie_below_their_weight_and_are_uniform():
    log_w = np.log([0.6, 0.3, 0.1])
    z = np.tile([0, 2], 5000)
    log_u = dpmm.slice_log_u(log_w, z, np.arange(z.size), key=8)
    u_over_w = np.exp(log_u - log_w[z])
    assert np.all(u_over_w < 1) and stats.kstest(u_over_w, "uniform").pvalue > 1e-3


def test_log_predictive_by_brute_force():
    rng = np.random.default_rng(2)
    x = sp.csr_matrix(np.array([[2, 0, 1, 0], [0, 0, 0, 5], [1, 1, 1, 1]]))
    phi = rng.dirichlet(np.ones(4), size=3)
    w = np.array([0.5, 0.3, 0.1])
    a0 = 0.3
    got = dpmm.log_predictive(x.indptr, x.indices, x.data, np.log(w), np.log(phi),
                              math.log(0.1), a0, 4)
    for i, row in enumerate(x.toarray()):
        n = row.sum()
        mix = sum(w[j] * stats.multinomial(n, phi[j]).pmf(row) for j in range(3))
        dirmult = math.exp(gammaln(n + 1) - gammaln(row + 1).sum() + gammaln(4 * a0)
                           - gammaln(n + 4 * a0) + (gammaln(row + a0) - gammaln(a0)).sum())
        assert got[i] == pytest.approx(math.log(mix + 0.1 * dirmult), rel=1e-10)


def test_predictive_average_is_a_log_space_mean():
    avg = dpmm.PredictiveAverage()
    avg.add(np.array([-1000.0, -2.0]))
    avg.add(np.array([-1001.0, -3.0]))
    expected = np.log(np.exp([0.0, -2.0]) + np.exp([-1.0, -3.0])) - np.log(2) + [-1000, 0]
    np.testing.assert_allclose(avg.per_user(), expected)


def test_exact_gibbs_recovers_the_mixture():
    x, truth = synthetic_mixture(600, seed=0)
    g = dpmm.GibbsSlice(x.indptr, x.indices, x.data, W, a0=0.5, alpha_prior=(1.0, 1.0),
                        n_init=20, seed=1)
    for _ in range(150):
        g.step()
    sizes = np.bincount(g.z)
    # measured over seeds 1-5: ARI 0.98-1.0 after 100 sweeps, 1.0 from 125 on (a
    # split of the largest cluster takes ~100 sweeps to merge); 4 clusters
    assert adjusted_rand_index(truth, g.z) > 0.97
    assert np.sum(sizes >= 10) == K_TRUE and g.n_clusters <= K_TRUE + 3
    again = dpmm.GibbsSlice(x.indptr, x.indices, x.data, W, a0=0.5, alpha_prior=(1.0, 1.0),
                            n_init=20, seed=1)
    for _ in range(75):
        again.step()
    for _ in range(75):
        again.step()
    np.testing.assert_array_equal(again.z, g.z)


@pytest.mark.parametrize("sampler", ["gibbs", "sgrld"])
def test_thousands_of_components_stay_finite(sampler):
    """alpha ~ 2000 and a0 = 0.001: every slice proposes thousands of components."""
    x, _ = synthetic_mixture(200, seed=4)
    if sampler == "gibbs":
        g = dpmm.GibbsSlice(x.indptr, x.indices, x.data, W, a0=0.001,
                            alpha_prior=(2000.0, 1.0), n_init=30, seed=2)
        proposed = []
        for _ in range(3):
            g.step()
            proposed.append(g.n_proposed)
            sample = g.sample()
            assert np.all(np.isfinite(sample.log_w)) and np.all(np.isfinite(sample.log_phi))
        assert min(proposed) > 1000
        lp = dpmm.log_predictive(x.indptr, x.indices, x.data, sample.log_w, sample.log_phi,
                                 sample.log_rest, 0.001, W)
        assert np.all(np.isfinite(lp))
        return
    # the SGRLD global step on thousands of prior components with tiny shapes
    log_sticks = dpmm.new_sticks(0.0, -1e4, 2.0, key=5)[:3000]  # ~20,000 are drawn
    k = log_sticks.shape[0]
    sticks = sgrld.init(np.exp(log_sticks))
    theta = sgrld.init(np.maximum(np.exp(dpmm.prior_components(k, W, 0.001, key=3)), 5e-324))
    occupancy = np.zeros(k)
    occupancy[:4] = 1e5
    counts = np.zeros((k, W))
    counts[:4, :7] = 1e4
    for t in range(5):
        sticks, theta, alpha = dpmm.global_step(
            sgrld, sticks, theta, 2.0, occupancy, counts, a0=0.001, alpha_prior=(1.0, 1.0),
            step_sizes=(0.001, 0.005), keys=[derive(t, d) for d in range(3)])
        assert np.all(np.isfinite(sticks.log_theta)) and np.all(np.isfinite(theta.log_theta))
        assert np.isfinite(alpha) and alpha > 0
    assert k == 3000 and np.all(np.isfinite(dpmm.log_weights(sticks.log_theta)[0]))
