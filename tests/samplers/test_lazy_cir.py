"""Lazy SCIR (dscir.samplers.cir_lazy): lazy columns compose to the exact CIR
transition over their gap, the stationary law, the row-total bookkeeping, the
Rao-Blackwellised kept mean, streams independent of blocks, the cost per step."""

import numpy as np
import pytest
from scipy import stats

from dscir.errors import DscirError
from dscir.experiments import lazy_lda
from dscir.experiments.lazy_dirichlet import read_phi
from dscir.models import dirichlet as model
from dscir.rng import derive
from dscir.samplers import cir, cir_lazy

P_MIN = 1e-3
SCHEDULE = [0.3, 0.05, 0.5, 0.2, 0.1, 0.4]  # varying h, as a decaying schedule gives


def lazy_pattern(x0, prior, counts, seed):
    """K x W entries from x0; every column stepped at iterations 0 and 5 with
    ``counts`` (shape prior + counts), columns W/2.. also at 1..4 with no counts,
    columns ..W/2 lazy there (empty steps): their gap is h1 + ... + h4."""
    k, w = x0.shape
    state = cir_lazy.init(x0)
    half = np.arange(w // 2, w)
    for m, h in enumerate(SCHEDULE):
        key = derive(seed, m)
        if m in (0, len(SCHEDULE) - 1):
            state = cir_lazy.step(state, np.arange(w), np.full((k, w), counts), prior, h, key)
        else:
            state = cir_lazy.step(state, half, np.zeros((k, half.size)), prior, h, key)
    return state


def dense_pattern(x0, prior, counts, seed):
    lt = np.log(x0)
    last = len(SCHEDULE) - 1
    for m, h in enumerate(SCHEDULE):
        a = prior + counts if m in (0, last) else prior
        lt = cir.transition(lt, a, h, derive(seed, 100 + m))
    return lt


@pytest.mark.parametrize("prior,counts", [(0.5, 4.0), (0.05, 20.0)])
def test_lazy_gaps_compose_to_the_dense_chain_in_law(prior, counts):
    # from a point far from stationarity; the lazy half (one catch-up over
    # h1 + ... + h4) and the stepped half must both have the dense chain's law
    x0 = np.full((4, 5000), 30.0)
    state = lazy_pattern(x0, prior, counts, seed=1)
    assert state.clock == pytest.approx(sum(SCHEDULE))
    assert np.all(state.last == state.clock)
    dense = dense_pattern(np.full(20_000, 30.0), prior, counts, seed=2)
    lazy, stepped = state.log_theta[:2500].ravel(), state.log_theta[2500:].ravel()
    assert stats.ks_2samp(lazy, dense).pvalue > P_MIN
    assert stats.ks_2samp(stepped, dense).pvalue > P_MIN


@pytest.mark.parametrize("prior", [0.3, 2.0])
def test_a_touch_after_a_gap_is_the_exact_transition_over_the_summed_steps(prior):
    x0, n = 6.0, 20_000
    state = cir_lazy.init(np.full((1, n), x0))
    for m, h in enumerate(SCHEDULE):
        state = cir_lazy.step(state, np.array([], np.int64), np.zeros((1, 0)), prior, h,
                              derive(3, m))
    state = cir_lazy.touch(state, np.arange(n), prior, derive(3, 99))
    g = sum(SCHEDULE)
    c = -np.expm1(-g)
    law = stats.ncx2(2 * prior, 2 * x0 * np.exp(-g) / c, scale=c / 2)
    assert stats.kstest(np.exp(state.log_theta[:, 0]), law.cdf).pvalue > P_MIN
    # power: the law over the last step alone is far off
    short = stats.ncx2(2 * prior, 2 * x0 * np.exp(-0.4) / -np.expm1(-0.4),
                       scale=-np.expm1(-0.4) / 2)
    assert stats.kstest(np.exp(state.log_theta[:, 0]), short.cdf).pvalue < 1e-6


@pytest.mark.parametrize("prior", [0.01, 0.3])
def test_stationary_law_is_gamma_prior_with_zero_counts(prior):
    # from far away (x0 = 10) over a clock of 40 with columns touched at random
    # iterations: each entry's law is Gamma(prior, 1) (compared on the log scale)
    rng = np.random.default_rng(5)
    k, w = 4, 5000
    state = cir_lazy.init(np.full((k, w), 10.0))
    for m in range(80):
        words = np.flatnonzero(rng.random(w) < 0.1)
        state = cir_lazy.step(state, words, np.zeros((k, words.size)), prior, 0.5, derive(6, m))
    state = cir_lazy.realize(state, prior, derive(6, 999))
    law = stats.loggamma(prior)
    assert stats.kstest(state.log_theta.ravel(), law.cdf).pvalue > P_MIN


def random_run(seed, k=3, w=40, steps=25, keep_every=0, totals="mean"):
    """A state after steps with random words, counts and step sizes (and keeps)."""
    rng = np.random.default_rng(seed)
    state = cir_lazy.init(rng.gamma(1.0, 1.0, (k, w)))
    prior, norms = 0.2, []
    for m in range(steps):
        words = np.flatnonzero(rng.random(w) < 0.25)
        key = derive(seed, m)
        state = cir_lazy.touch(state, words, prior, key)
        state = cir_lazy.step(state, words, rng.poisson(2.0, (k, words.size)).astype(float),
                              prior, float(rng.uniform(0.05, 1.5)), key, scale=1.5)
        if keep_every and m % keep_every == 0:
            norm = cir_lazy.normaliser(cir_lazy.moments(state, prior), totals, key)
            expected = conditional_mean(state, prior)
            state = cir_lazy.keep(state, norm)
            norms.append(expected / norm[:, None])
    return state, prior, norms


def conditional_mean(state, prior):
    """E[theta_kw(T) | last values] (K x W), brute force."""
    e = np.exp(-(state.clock - state.last))
    return (np.exp(state.log_theta) * e[:, None] + prior * (1 - e)[:, None]).T


def realized_totals(state, prior, key):
    """Row totals of a copy of ``state`` with every column realized at the clock."""
    return np.exp(cir_lazy.realize(cir_lazy.copy(state), prior, key).log_theta).sum(0)


def test_moments_are_the_conditional_mean_and_variance_of_the_row_totals():
    state, prior, _ = random_run(7)
    mean, var, fresh = cir_lazy.moments(state, prior)
    e = np.exp(-(state.clock - state.last))[:, None]
    x = np.exp(state.log_theta)
    assert np.allclose(mean, (x * e + prior * (1 - e)).sum(0), rtol=1e-10)
    assert np.allclose(var, (2 * x * (e - e * e) + prior * (1 - e) ** 2).sum(0), rtol=1e-9)
    assert np.allclose(fresh, x[state.last == state.clock].sum(0), rtol=1e-12)
    assert np.any(state.last < state.clock)  # some columns are lazy
    # and they are the moments of the realized totals (Monte Carlo over catch-ups)
    totals = np.array([realized_totals(state, prior, derive(8, i)) for i in range(3000)])
    se = np.sqrt(var / totals.shape[0])
    assert np.all(np.abs(totals.mean(0) - mean) < 4 * se)
    assert np.allclose(totals.var(0), var, rtol=0.15)


def test_drawn_totals_have_the_moments_and_nearly_the_law_of_the_realized_ones():
    state, prior, _ = random_run(9, w=60)
    m = cir_lazy.moments(state, prior)
    drawn = np.array([cir_lazy.normaliser(m, "draw", derive(10, i)) for i in range(4000)])
    realized = np.array([realized_totals(state, prior, derive(11, i)) for i in range(4000)])
    assert np.all(np.abs(drawn.mean(0) - m[0]) < 4 * np.sqrt(m[1] / 4000))
    assert np.allclose(drawn.var(0), m[1], rtol=0.1)
    # the moment-matched Gamma is not the exact law (a sum of noncentral chi-squares
    # of different scales); measured KS distance here 0.01-0.02, bound 0.05
    for k in range(m.shape[1]):
        assert stats.ks_2samp(drawn[:, k], realized[:, k]).statistic < 0.05


def test_kept_mean_is_the_sum_of_the_conditional_expectations_over_r():
    # keeps every 2 steps over a clock of ~20 (several windows of the prefix sums)
    state, prior, terms = random_run(12, steps=30, keep_every=2)
    assert state.kept.n_windows >= 2
    expected = np.mean(terms, axis=0)
    before = cir_lazy.copy(state)
    got = cir_lazy.mean_phi(state, prior)
    assert np.allclose(got, expected, rtol=1e-10)
    assert np.allclose(got.sum(1), 1.0)  # mean totals: each kept phi sums to one
    # reading it changes nothing: scoring or checkpointing never alters the chain
    assert np.array_equal(state.kept.phi_sum, before.kept.phi_sum)
    assert np.array_equal(state.kept.at, before.kept.at)


def test_streams_are_named_by_word_not_by_block():
    rng = np.random.default_rng(13)
    k, w = 3, 30
    theta0 = rng.gamma(1.0, 1.0, (k, w))
    whole = cir_lazy.init(theta0)
    blocks = [cir_lazy.init(theta0[:, :12]), cir_lazy.init(theta0[:, 12:], first_word=12)]
    for m in range(10):
        words = np.flatnonzero(rng.random(w) < 0.3)
        counts = rng.poisson(3.0, (k, words.size)).astype(float)
        whole = cir_lazy.step(whole, words, counts, 0.1, 0.4, derive(14, m))
        for b, (lo, hi) in enumerate([(0, 12), (12, w)]):
            sel = (words >= lo) & (words < hi)
            blocks[b] = cir_lazy.step(blocks[b], words[sel] - lo, counts[:, sel], 0.1, 0.4,
                                      derive(14, m))
    assert np.array_equal(whole.log_theta, np.concatenate([b.log_theta for b in blocks]))
    total = sum(cir_lazy.moments(b, 0.1) for b in blocks)
    assert np.allclose(total, cir_lazy.moments(whole, 0.1), rtol=1e-12)


def test_entries_visited_per_step_do_not_depend_on_the_vocabulary():
    k, u = 20, 10
    per_step = {}
    for w in (100, 10_000):
        rng = np.random.default_rng(15)
        state = cir_lazy.init(np.ones((k, w)))
        counts = []
        for m in range(20):
            words = np.sort(rng.choice(100, u, replace=False))
            before = state.entries
            state = cir_lazy.touch(state, words, 0.1, derive(16, m))
            norm = cir_lazy.normaliser(cir_lazy.moments(state, 0.1), "draw", derive(16, m))
            state = cir_lazy.step(state, words, np.ones((k, u)), 0.1, 0.2, derive(16, m))
            state = cir_lazy.keep(state, norm)
            counts.append(state.entries - before)
        per_step[w] = counts
    assert per_step[100] == per_step[10_000]
    # touch + step of U columns, a kept term per column, O(K) for the sums and keep
    assert max(per_step[100]) <= k * (3 * u + 2)


def test_read_phi_on_the_dirichlet_posterior_is_as_close_as_the_dense_steps():
    # the row-total approximation measured as the issue asks: KS distance of a
    # category's phi, read as a step reads its columns, from its exact Beta
    # marginal; lazy ("mean" and "draw") against dense over 4 seeds. Measured
    # medians (benchmarks/results/lazy_scir.json) differ by less than the chains'
    # seed-to-seed spread; the bound asserted is lazy <= dense + 0.05.
    counts, n, h = model.SPARSE, 100, 0.1
    a = model.ALPHA + counts
    law = stats.beta(a[1], a.sum() - a[1])
    ks = {m: np.median([stats.kstest(read_phi(m, counts, n, h, s, 300, 1500, 1), law.cdf)
                        .statistic for s in range(4)]) for m in ("dense", "mean", "draw")}
    assert ks["mean"] <= ks["dense"] + 0.05
    assert ks["draw"] <= ks["dense"] + 0.05


def test_a_chain_resumed_from_its_arrays_continues_bit_for_bit():
    state, prior, _ = random_run(17, steps=12, keep_every=3)
    resumed = cir_lazy.from_arrays(cir_lazy.to_arrays(state))  # copies: state untouched
    words = np.array([0, 5, 9, 30])

    def go_on(s):
        s = cir_lazy.touch(s, words, prior, derive(18, 0))
        s = cir_lazy.step(s, words, np.ones((3, 4)), prior, 0.3, derive(18, 0))
        s = cir_lazy.keep(s, cir_lazy.normaliser(cir_lazy.moments(s, prior), "mean"))
        return s.log_theta, cir_lazy.mean_phi(s, prior), s.clock

    assert all(np.array_equal(a, b) for a, b in zip(go_on(resumed), go_on(state)))
    with pytest.raises(DscirError, match="missing clock"):
        cir_lazy.from_arrays({k: v for k, v in cir_lazy.to_arrays(state).items()
                              if k != "clock"})


def test_bad_input_is_one_readable_error():
    state = cir_lazy.init(np.ones((2, 5)))
    with pytest.raises(DscirError, match="sorted distinct"):
        cir_lazy.touch(state, np.array([3, 1]), 0.1, 0)
    with pytest.raises(DscirError, match="sorted distinct"):
        cir_lazy.touch(state, np.array([5]), 0.1, 0)
    with pytest.raises(DscirError, match="counts have shape"):
        cir_lazy.step(state, np.array([1, 2]), np.ones((2, 3)), 0.1, 0.1, 0)
    with pytest.raises(DscirError, match="step_size"):
        cir_lazy.step(state, np.array([1]), np.ones((2, 1)), 0.1, 0.0, 0)
    with pytest.raises(DscirError, match="counts must be finite"):
        cir_lazy.step(state, np.array([1]), -np.ones((2, 1)), 0.1, 0.1, 0)
    with pytest.raises(DscirError, match="prior"):
        cir_lazy.touch(state, np.array([1]), 0.0, 0)
    state = cir_lazy.step(state, np.array([1]), np.ones((2, 1)), 0.1, 0.1, 0)
    with pytest.raises(DscirError, match="before they were touched"):
        cir_lazy.columns(state, np.array([0]), np.ones(2))
    with pytest.raises(DscirError, match="totals must be one of"):
        cir_lazy.normaliser(cir_lazy.moments(state, 0.1), "exact")
    with pytest.raises(DscirError, match="positive finite row totals"):
        cir_lazy.keep(state, np.zeros(2))
    with pytest.raises(DscirError, match="K x W"):
        cir_lazy.init(np.ones(3))


def test_lda_chains_with_the_lazy_step_score_like_the_dense_ones():
    # the normaliser feeds back through the Gibbs step here; held-out completion
    # perplexity of the kept mean phi, median over 3 seeds (chains sometimes
    # merge two topics, dense and lazy alike). Measured: dense 135.8, lazy 135.5 ("draw")
    # (true topics 123.8); asserted: lazy within 5 % of dense. Perplexity is
    # blind to row totals off by a common factor, so the kept mean's rows must
    # also be distributions.
    data = lazy_lda.corpus(5, 1500, 600, 50, 0.02, 0)
    ppl = {}
    for m in ("dense", "draw"):
        runs = [lazy_lda.run(m, data, 5, 300, 20, 150, 5, s)["phi"] for s in range(3)]
        assert np.allclose([r.sum(1) for r in runs], 1.0)
        ppl[m] = np.median([lazy_lda.perplexity(r, data["heldout"], 1) for r in runs])
    assert ppl["draw"] <= 1.05 * ppl["dense"]
