"""The KSD of DP-mixture runs (dscir.diagnostics.dp_stein, dscir.api.stein): the
sticks' score against finite differences of the log posterior of a tiny mixture,
the responsibilities against a user-by-user computation, the minibatch estimate
averaged over every minibatch against the full data's, exact conjugate draws
against biased ones, and ``diagnose --ksd`` on a small DP run."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit, gammaln
from scipy.stats import multinomial

from dscir.api.stein import complete_sticks, dp_chain_ksd, estimated_responsibilities
from dscir.diagnostics.dp_stein import stick_logits, stick_score
from dscir.diagnostics.ksd import ksd
from dscir.models.mixtures.dp import DPMMConfig, Sample
from dscir.models.mixtures.dp.allocation import responsibility_sums

A0, ALPHA = 0.7, 1.3
# tiny users (counts over W = 3 areas) under K = 3 represented components
X = np.array([[2, 0, 1], [0, 3, 0], [1, 1, 1], [0, 0, 2], [4, 0, 0], [1, 2, 0]])
K, W = 3, 3


def weights(u: np.ndarray) -> tuple[np.ndarray, float]:
    """Stick-breaking weights [K] and the rest's mass of the breaks v = expit(u)."""
    v = expit(u)
    return v * np.concatenate([[1.0], np.cumprod(1 - v)[:-1]]), float(np.prod(1 - v))


def dir_mult(x: np.ndarray) -> float:
    """p(x) of one user under a component drawn from Dirichlet(a0): the integral of
    the multinomial over the prior (Dirichlet-multinomial)."""
    n = x.sum()
    return math.exp(gammaln(n + 1) - np.sum(gammaln(x + 1)) + gammaln(W * A0)
                    - gammaln(n + W * A0) + np.sum(gammaln(x + A0) - gammaln(A0)))


def user_terms(u: np.ndarray, phi: np.ndarray, x: np.ndarray) -> np.ndarray:
    """w_l Mult(x | phi_l) for the K components and rest x DirMult(x | a0), one user."""
    w, rest = weights(u)
    return np.append([w[j] * multinomial.pmf(x, x.sum(), phi[j]) for j in range(K)],
                     rest * dir_mult(x))


def log_posterior(u: np.ndarray, phi: np.ndarray, users=X) -> float:
    """log p(u | x) up to a constant: Beta(1, alpha) sticks with the Jacobian of
    u = logit v, and each user's mixture over the components and the rest."""
    v = expit(u)
    prior = np.sum((ALPHA - 1) * np.log1p(-v) + np.log(v) + np.log1p(-v))
    return float(prior + sum(np.log(user_terms(u, phi, x).sum()) for x in users))


def brute_responsibilities(u: np.ndarray, phi: np.ndarray, users=X) -> np.ndarray:
    """sum_i r_il [K + 1], user by user."""
    terms = np.array([user_terms(u, phi, x) for x in users])
    return (terms / terms.sum(axis=1, keepdims=True)).sum(axis=0)


def csr(users: np.ndarray):
    c = sp.csr_matrix(users)
    return c.indptr, c.indices, c.data


def kernel_sums(u: np.ndarray, phi: np.ndarray, users=X) -> np.ndarray:
    w, rest = weights(u)
    return responsibility_sums(*csr(users), np.log(w), np.log(phi), np.log(rest), A0, W)


@pytest.fixture
def state():
    rng = np.random.default_rng(5)
    return rng.normal(size=K), rng.dirichlet(np.ones(W), size=K)


def test_logits_of_a_sample_are_its_breaks(state):
    u, _ = state
    w, rest = weights(u)
    np.testing.assert_allclose(stick_logits(np.log(w), np.log(rest)), u, rtol=1e-12)


def test_responsibilities_are_the_users_exact_ones(state):
    """Against scipy's multinomial and a Dirichlet-multinomial written out, user by
    user: a wrong rest column (mass, prior term) or a dropped user shows here."""
    u, phi = state
    want = brute_responsibilities(u, phi)
    np.testing.assert_allclose(kernel_sums(u, phi), want, rtol=1e-12)
    assert want[-1] > 1e-3  # the rest's column carries weight in this case


def test_score_is_the_gradient_of_the_log_posterior(state):
    """A dropped Jacobian, a tail sum from l > j instead of l >= j, a missing prior
    term or the rest left out gives a different gradient."""
    u, phi = state
    got = stick_score(u, ALPHA, kernel_sums(u, phi))
    h, want = 1e-6, np.zeros(K)
    for j in range(K):
        e = np.eye(K)[j] * h
        want[j] = (log_posterior(u + e, phi) - log_posterior(u - e, phi)) / (2 * h)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    # the leading sticks alone: the same coordinates of the full score
    np.testing.assert_allclose(stick_score(u[:2], ALPHA, kernel_sums(u, phi)), got[:2])


def tiny_store(path, users=X) -> str:
    from dscir.corpus import write_corpus

    write_corpus(path, sp.csr_matrix(users), vocabulary=[f"a{i}" for i in range(W)])
    return str(path)


def test_minibatch_estimate_averages_to_the_full_data_and_all_is_exact(tmp_path, state):
    """Over every minibatch of 2 of the 6 users (each scaled by N/|S| = 3) the
    estimate's mean is the full data's sums exactly; a missing scale is 3 times off.
    The full data (batch "all") is the user-by-user sum itself."""
    from dscir.engine.inprocess import InProcessExecutor

    u, phi = state
    w, rest = weights(u)
    executor = InProcessExecutor(tiny_store(tmp_path / "users.zarr"), "dpmm")
    train = np.arange(len(X))
    est = lambda batch: estimated_responsibilities(  # noqa: E731
        executor, train, A0, np.log(w), np.log(phi), np.log(rest), np.asarray(batch), 0)
    want = brute_responsibilities(u, phi)
    np.testing.assert_allclose(est(train), want, rtol=1e-12)
    mean = np.mean([est(b) for b in itertools.combinations(train, 2)], axis=0)
    np.testing.assert_allclose(mean, want, rtol=1e-12)


def test_a_sample_with_few_sticks_is_completed_by_prior_draws():
    """The completed sticks carry exactly the rest's mass between them and the new
    rest, and their breaks follow Beta(1, alpha) (mean 1 / (1 + alpha))."""
    log_phi = np.log(np.full((2, W), 1 / W))
    v = np.array([0.5, 0.3])
    w, rest = v * np.array([1.0, 0.5]), 0.5 * 0.7
    breaks = []
    for s in range(400):
        lw, lp, lr = complete_sticks(Sample(np.log(w), log_phi, math.log(rest), 2.0), 5, A0, s)
        assert lw.shape == (5,) and lp.shape == (5, W)
        np.testing.assert_array_equal(lw[:2], np.log(w))
        assert np.exp(lw[2:]).sum() + math.exp(lr) == pytest.approx(rest, rel=1e-12)
        np.testing.assert_allclose(np.exp(lp).sum(axis=1), 1.0, rtol=1e-12)
        breaks.append(expit(stick_logits(lw, lr)[2:]))
    assert np.mean(breaks) == pytest.approx(1 / 3, abs=0.02)
    same = complete_sticks(Sample(np.log(w), log_phi, math.log(rest), 2.0), 2, A0, 0)
    np.testing.assert_array_equal(same[0], np.log(w))


# disjoint blocks: component j puts mass on areas 3j..3j+2 only, so every user's
# allocation is its block's component and the posterior of the breaks given
# phi is conjugate: v_j ~ Beta(1 + m_j, alpha + M_j)
BLOCKS = np.array([20, 12, 6, 2])


def block_users(rng) -> tuple[np.ndarray, np.ndarray]:
    phi = np.zeros((BLOCKS.size, 3 * BLOCKS.size))
    for j in range(BLOCKS.size):
        phi[j, 3 * j: 3 * j + 3] = 1 / 3
    users = np.concatenate([[rng.multinomial(30, phi[j]) for _ in range(m)]
                            for j, m in enumerate(BLOCKS)])
    return users, phi


def test_exact_conjugate_draws_give_a_small_ksd_biased_ones_a_large_one():
    """Breaks from the exact posterior against over-confident (counts x 2), flat
    (counts / 2) and ones drawn for a larger alpha; with a dropped Jacobian or a
    wrong tail sum the exact draws look biased."""
    rng = np.random.default_rng(3)
    users, phi = block_users(rng)
    after = np.cumsum(BLOCKS[::-1])[::-1] - BLOCKS
    with np.errstate(divide="ignore"):
        log_phi = np.log(phi)
    indptr, indices, data = csr(users)
    values, tail = {}, 0.0
    for name, scale, alpha in [("exact", 1.0, ALPHA), ("confident", 2.0, ALPHA),
                               ("flat", 0.5, ALPHA), ("alpha x 4", 1.0, 4 * ALPHA)]:
        v = rng.beta(1 + scale * BLOCKS, alpha + scale * after, size=(1000, BLOCKS.size))
        u, s = [], []
        for breaks in v:
            w = breaks * np.concatenate([[1.0], np.cumprod(1 - breaks)[:-1]])
            log_rest = float(np.sum(np.log1p(-breaks)))
            sums = responsibility_sums(indptr, indices, data, np.log(w), log_phi, log_rest,
                                       5.0, phi.shape[1])
            tail = max(tail, sums[-1])
            u.append(stick_logits(np.log(w), log_rest))
            s.append(stick_score(u[-1], ALPHA, sums))
        values[name] = ksd(np.array(u), np.array(s))
    assert tail < 1e-9  # the rest (a0 = 5) takes no users: the conjugate draws are exact
    # exact draws at the V-statistic's own level (0.23-0.35 over seeds); the
    # biased sets at 1.1-5.6
    assert values["exact"] < 0.45, values
    for name in ("confident", "flat", "alpha x 4"):
        assert values[name] > 2.5 * values["exact"], values


def test_chain_ksd_of_all_users_is_the_exact_scores_ksd(tmp_path, state):
    """dp_chain_ksd with the full data equals the KSD of the brute-force scores
    of the same samples (no minibatch, scale 1)."""
    from dscir.engine.inprocess import InProcessExecutor

    executor = InProcessExecutor(tiny_store(tmp_path / "users.zarr"), "dpmm")
    train = np.arange(len(X))
    _, phi = state
    rng = np.random.default_rng(9)
    cfg = DPMMConfig(sampler="gibbs", a0=A0, alpha_shape=1.0, alpha_rate=1.0, batch_size=2,
                     step_theta=1.0, step_sticks=1.0, n_init=3, seed=4, init="random",
                     split_merge=0)
    samples, u, s = [], [], []
    for _ in range(6):
        uu = rng.normal(size=K)
        w, rest = weights(uu)
        samples.append(Sample(np.log(w), np.log(phi), math.log(rest), ALPHA))
        u.append(uu)
        s.append(stick_score(uu, ALPHA, brute_responsibilities(uu, phi)))
    want = ksd(np.array(u), np.array(s))
    assert dp_chain_ksd(executor, train, cfg, samples, K, train.size) == pytest.approx(
        want, rel=1e-10)
    assert dp_chain_ksd(executor, train, cfg, samples, K, 2) != pytest.approx(want, rel=1e-3)


@pytest.fixture(scope="module")
def dp_run(tmp_path_factory):
    from dscir.api import DPMixture
    from dscir.corpus import split_heldout, write_corpus
    from support.mixtures import synthetic_mixture

    root = tmp_path_factory.mktemp("dpksd")
    x, _ = synthetic_mixture(80, seed=0)
    store = root / "users.zarr"
    write_corpus(store, x, vocabulary=[f"i{j}" for j in range(x.shape[1])])
    split_heldout(store, fraction=0.2, seed=0)
    model = DPMixture("gibbs", n_iter=10, burn_in=4, thin=1, seed=1, progress=False)
    model.fit(store, out=root / "run", n_chains=2)
    return model, str(root / "run")


def test_diagnose_gives_each_dp_chains_ksd(dp_run):
    """Both chains, over the leading sticks, from the full data by default for a
    Gibbs run; a minibatch gives other (noisier) scores; the same call again
    gives the same numbers."""
    model, _ = dp_run
    d = model.diagnose(score=False, ksd=True, local=True)
    k = d.ksd
    assert len(k.values) == 2 and all(np.isfinite(k.values)) and min(k.values) > 0
    assert k.full and k.batch_size == 64 and k.sticks == 10 and k.n_samples == 6
    assert "KSD over the 10 leading sticks (logit v_j; scores from the full data (64 users))" \
        in d.table()
    again = model.diagnose(score=False, ksd=True, ksd_batch_size="all", local=True)
    assert again.ksd.values == k.values
    mini = model.diagnose(score=False, ksd=True, ksd_batch_size=16, ksd_sticks=3, local=True)
    assert not mini.ksd.full and mini.ksd.sticks == 3
    assert "16-user minibatches" in mini.table()


def test_cli_diagnose_ksd_of_a_dp_run_and_bad_input(dp_run, one_worker, capsys):
    from dscir.cli import main

    model, run = dp_run
    address = one_worker.scheduler.address
    want = model.diagnose(score=False, ksd=True, ksd_sticks=4, local=True).ksd.values
    assert main(["diagnose", run, "--no-score", "--ksd", "--ksd-sticks", "4",
                 "--ksd-batch-size", "all", "--address", address]) == 0
    out = capsys.readouterr().out
    assert f"chain 0: {want[0]:.4g}" in out and f"chain 1: {want[1]:.4g}" in out
    for bad in (["--ksd-sticks", "0"], ["--ksd-batch-size", "0"], ["--ksd-batch-size", "65"],
                ["--ksd-batch-size", "most"]):
        assert main(["diagnose", run, "--no-score", "--ksd", *bad, "--address", address]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4 and all(line.startswith("dscir: error: ") for line in err), err
    assert "--ksd-sticks" in err[0] and "1..64" in err[1] and "1..64" in err[2]
    assert "'all'" in err[3]
