"""LDA's per-document Gibbs sampling: exact expectations on a tiny document, invariances,
reproducibility, document completion, validation."""


import numpy as np
import pytest
from scipy.special import logsumexp

from dscir.errors import DscirError
from dscir.models.lda import completion_log_likelihood, gibbs_expectations
from support.gibbs import (ALPHA, DOC_CNT, DOC_IND, PHI, WORDS, _copies, _random_batch, _run,
                             batch_estimates,
                             _tokens, exact_assignment_posterior, exact_expected_counts)

@pytest.mark.parametrize("rescale", [False, True])
def test_expected_counts_match_brute_force(rescale):
    # 40 independent batch estimates (each 50 chains x 20 kept sweeps): their
    # mean's standard error comes from the spread between batches, so it
    # accounts for autocorrelation within chains. |z| < 4.5 on each of the 9
    # entries has a false-alarm probability below 1e-4 for the whole test.
    # Rescaled: every column multiplied by an arbitrary 10^±150 factor, the
    # driver's situation (the conditional must not change).
    cols = PHI
    if rescale:
        cols = PHI * 10.0 ** np.random.default_rng(0).uniform(-150, 150, size=PHI.shape[1])
    est = batch_estimates(cols)
    exact = exact_expected_counts(PHI, ALPHA)
    se = est.std(axis=0, ddof=1) / np.sqrt(est.shape[0])
    z = (est.mean(axis=0) - exact) / se
    assert np.abs(z).max() < 4.5, z


def test_brute_force_check_has_power():
    # Ignoring the Dirichlet coupling between tokens (z_i ∝ phi[:, w_i] alone)
    # moves E[n_kw] by far more than the Monte Carlo error allowed above, so
    # the previous test would catch a sampler with a wrong conditional.
    est = batch_estimates(PHI)
    se = est.std(axis=0, ddof=1) / np.sqrt(est.shape[0])
    tok = _tokens()
    naive = np.zeros_like(PHI)
    for w in tok:
        naive[:, w] += PHI[:, w] / PHI[:, w].sum()
    assert np.abs((naive - exact_expected_counts(PHI, ALPHA)) / se).max() > 20


def test_outputs_are_consistent_integer_counts():
    indptr, indices, data, phi = _random_batch()
    docs = np.arange(indptr.size - 1) + 100
    tw, dt, n_kept = _run(indptr, indices, data, docs, phi, sweeps=7)
    assert n_kept == 4  # sweeps - sweeps // 2
    assert tw.dtype == np.int64 and dt.dtype == np.int64
    assert dt.shape == (docs.size, phi.shape[0])
    lengths = np.add.reduceat(np.append(data, 0), indptr[:-1]) * (np.diff(indptr) > 0)
    np.testing.assert_array_equal(dt.sum(axis=1), lengths * n_kept)
    np.testing.assert_array_equal(dt.sum(axis=0), tw.sum(axis=1))
    word_totals = np.bincount(indices, weights=data, minlength=phi.shape[1])
    np.testing.assert_array_equal(tw.sum(axis=0), word_totals * n_kept)


@pytest.mark.parametrize("kernel", ["dense", "sparse"])
def test_power_of_two_rescaling_gives_identical_output(kernel):
    # Multiplying a column by 2^j is exact in floating point, so every weight,
    # sum and comparison scales exactly and the draws are bit-identical (the
    # sparse kernel's block sums, alias probabilities and search targets too).
    indptr, indices, data, phi = _random_batch()
    docs = np.arange(indptr.size - 1)
    words = np.unique(indices)
    local = np.searchsorted(words, indices).astype(np.int32)
    cols = phi[:, words]
    scaled = cols * 2.0 ** np.random.default_rng(1).integers(-900, 900, size=words.size)
    a, b = (gibbs_expectations(indptr, indices, data, docs, c, local, 0.2, 10, 1, 1, kernel)
            for c in (cols, scaled))
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_reproducible_and_streams_named_by_seed_iteration_doc():
    indptr, indices, data, phi = _random_batch()
    docs = np.arange(indptr.size - 1) * 3
    a = _run(indptr, indices, data, docs, phi)
    b = _run(indptr, indices, data, docs, phi)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    for other in (dict(iteration=3), dict(seed=6)):
        c = _run(indptr, indices, data, docs, phi, **other)
        assert not np.array_equal(a[1], c[1])


def test_document_result_independent_of_batch_composition():
    # Each document alone (with only its own phi columns) gives the same
    # counts as inside the batch, so the exact sum over any split of the
    # documents into tasks is the same.
    indptr, indices, data, phi = _random_batch()
    docs = np.arange(indptr.size - 1) + 40
    tw, dt, _ = _run(indptr, indices, data, docs, phi)
    total = np.zeros_like(tw)
    for d in range(docs.size):
        sl = slice(indptr[d], indptr[d + 1])
        if indptr[d] == indptr[d + 1]:
            continue
        one = _run(np.array([0, indptr[d + 1] - indptr[d]]), indices[sl], data[sl],
                   docs[d:d + 1], phi)
        np.testing.assert_array_equal(one[1][0], dt[d])
        total += one[0]
    np.testing.assert_array_equal(total, tw)
    order = np.random.default_rng(2).permutation(docs.size)
    sub = [np.arange(indptr[d], indptr[d + 1]) for d in order]
    entries = np.concatenate(sub)
    shuffled = _run(np.concatenate(([0], np.cumsum([s.size for s in sub]))),
                    indices[entries], data[entries], docs[order], phi)
    np.testing.assert_array_equal(shuffled[1], dt[order])
    np.testing.assert_array_equal(shuffled[0], tw)


def _valid_args():
    indptr, indices, data, local = _copies(2)
    return dict(indptr=indptr, indices=indices, data=data, docs=np.array([0, 1]),
                phi_cols=PHI.copy(), local_words=local, alpha=0.1, sweeps=4, seed=0,
                iteration=0)


@pytest.mark.parametrize("change, message", [
    (dict(alpha=0.0), "alpha"),
    (dict(alpha=float("nan")), "alpha"),
    (dict(sweeps=1), "sweeps"),
    (dict(seed=-1), "seed"),
    (dict(iteration=1.5), "iteration"),
    (dict(docs=np.array([0])), "docs"),
    (dict(local_words=np.zeros(3, dtype=np.int32)), "local_words"),
    (dict(local_words=np.full(6, 3, dtype=np.int32)), "phi columns"),
    (dict(indptr=np.array([0, 3, 5])), "indptr"),
    (dict(indptr=np.array([0, 4, 3, 6])), "non-decreasing"),
    (dict(data=np.array([1, 1, 1, 1, -1, 1])), "non-negative"),
    (dict(indices=np.zeros(6)), "integer"),
    (dict(phi_cols=np.ones(3)), "2-d"),
    (dict(phi_cols=-PHI), "non-negative"),
    (dict(phi_cols=PHI * np.array([1.0, 0.0, 1.0])), "positive entry"),
])
def test_invalid_arguments_raise(change, message):
    args = _valid_args() | change
    with pytest.raises(DscirError, match=message):
        gibbs_expectations(**args)


def _completion(obs, test, log_phi, docs=None, sweeps=20, seed=0, alpha=ALPHA):
    """Run completion on lists of per-document {column: count} dicts."""
    def csr(rows):
        indptr = np.concatenate(([0], np.cumsum([len(r) for r in rows]))).astype(np.int64)
        cols = np.array([c for r in rows for c in r], dtype=np.int32)
        counts = np.array([n for r in rows for n in r.values()], dtype=np.int32)
        return indptr, cols, counts
    oi, oc, od = csr(obs)
    ti, tc, td = csr(test)
    docs = np.arange(len(obs)) if docs is None else docs
    return completion_log_likelihood(oi, oc + 100, od, ti, tc + 100, td, docs, log_phi,
                                     oc, tc, alpha, sweeps, seed)


def test_completion_without_observed_tokens_uses_uniform_theta():
    # phi ~ e^-1000 underflows in linear space; the result must still be exact.
    log_phi = np.log(PHI) - 1000.0
    test = [{0: 2, 2: 1}, {}, {1: 3}]
    ll, n = _completion([{}, {}, {}], test, log_phi)
    expected = [2 * (logsumexp(log_phi[:, 0]) - np.log(3)) + logsumexp(log_phi[:, 2]) - np.log(3),
                0.0, 3 * (logsumexp(log_phi[:, 1]) - np.log(3))]
    np.testing.assert_allclose(ll, expected, rtol=1e-13)
    np.testing.assert_array_equal(n, [3, 0, 3])
    assert n.dtype == np.int64


def test_completion_matches_exact_posterior_mean_theta():
    # Observed part = the tiny document; its exact E[theta_k] = E[(n_k + alpha)
    # / (N + K alpha)] by enumeration. 200 documents (independent streams),
    # 2000 sweeps each: the mean log-likelihood must be within 5 standard
    # errors plus the Jensen bias of log at an estimated theta (about
    # Var/2, bounded here by the per-document variance).
    zs, counts, p = exact_assignment_posterior(PHI, ALPHA)
    theta = p @ ((counts + ALPHA) / (counts.sum(axis=1, keepdims=True) + 3 * ALPHA))
    test = {0: 1, 1: 2}
    exact = np.log(theta @ PHI[:, 0]) + 2 * np.log(theta @ PHI[:, 1])
    obs = {int(j): int(c) for j, c in zip(np.searchsorted(WORDS, DOC_IND), DOC_CNT)}
    ll, n = _completion([obs] * 200, [test] * 200, np.log(PHI), sweeps=2000)
    assert np.all(n == 3)
    sd = ll.std(ddof=1)
    assert abs(ll.mean() - exact) < 5 * sd / np.sqrt(ll.size) + sd**2
    # Uniform theta (ignoring the observed tokens) is clearly worse.
    uniform = np.log(PHI[:, 0].mean()) + 2 * np.log(PHI[:, 1].mean())
    assert abs(uniform - exact) > 20 * sd / np.sqrt(ll.size) + sd**2


def test_completion_is_stable_for_tiny_phi():
    # log phi shifted by -1024 (phi underflows to 0 in float64): identical
    # draws (values on a 2^-10 grid, so the shift is exact) and a log-likelihood
    # lower by exactly 1024 nats per test token.
    rng = np.random.default_rng(4)
    log_phi = np.round(np.log(rng.dirichlet(np.ones(5), size=4)) * 1024) / 1024
    obs = [{0: 3, 1: 1, 4: 2}, {2: 5}, {}]
    test = [{1: 1, 3: 1}, {2: 1}, {0: 2}]
    a, n = _completion(obs, test, log_phi)
    b, _ = _completion(obs, test, log_phi - 1024.0)
    assert np.all(np.isfinite(b))
    np.testing.assert_allclose(b, a - 1024.0 * n, rtol=1e-14)


def test_completion_streams_named_by_seed_and_doc():
    log_phi = np.log(PHI)
    obs = [{0: 2, 1: 1}] * 3
    test = [{2: 1}] * 3
    a, _ = _completion(obs, test, log_phi, docs=np.array([5, 6, 7]), sweeps=6)
    b, _ = _completion(obs[:1], test[:1], log_phi, docs=np.array([6]), sweeps=6)
    assert a[1] == b[0]
    assert len(set(a)) > 1
    c, _ = _completion(obs, test, log_phi, docs=np.array([5, 6, 7]), sweeps=6, seed=1)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("change, message", [
    (dict(log_phi=np.full((3, 3), np.nan)), "NaN"),
    (dict(log_phi=np.full((3, 3), -np.inf)), "finite entry"),
    (dict(test=[{0: 1}, {}]), "documents"),
    (dict(sweeps=0), "sweeps"),
])
def test_completion_invalid_arguments_raise(change, message):
    args = dict(obs=[{0: 1}], test=[{1: 1}], log_phi=np.log(PHI), sweeps=4) | change
    with pytest.raises(DscirError, match=message):
        _completion(**args)
