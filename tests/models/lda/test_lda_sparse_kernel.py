"""The large-K Gibbs kernel (Metropolis-Hastings with alias tables) against exact
answers and against the dense kernel: its alias tables, the stationary law of
one token's transition, the joint law of a tiny document's topics, expected
counts, and the dense kernel's structural guarantees."""

import itertools

import numba as nb
import numpy as np
import pytest
from scipy.special import gammaln, logsumexp
from scipy.stats import chisquare

from dscir.errors import DscirError
from dscir.models.lda import _sparse
from dscir.models.lda.gibbs import SPARSE_FROM_K, resolve_kernel
from dscir.rng import mix_in, new_state

from support.gibbs import ALPHA, PHI, _random_batch, _run, batch_estimates, exact_expected_counts


def _chi2_p(observed, expected_p):
    """Chi-square p-value of counts against probabilities, cells with expected < 5
    pooled into one."""
    expected = expected_p * observed.sum()
    small = expected < 5
    obs = np.append(observed[~small], observed[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    return chisquare(obs, exp).pvalue


# -- alias tables ---------------------------------------------------------------

def _alias_law(table):
    """The exact law an alias table draws from: (prob[k] + Σ_{alias[j]=k} (1 − prob[j])) / K."""
    prob, alias = table[:, 0], table[:, 1].astype(np.int64)
    n = prob.size
    law = prob.copy()
    np.add.at(law, alias, 1.0 - prob)
    return law / n


@pytest.mark.parametrize("weights", [
    np.array([0.5, 0.3, 0.2]),
    np.array([1.0, 0.0, 0.0, 3.0, 0.0]),
    np.array([1e-300, 1.0, 1e-30, 0.0, 2.5, 1e-200, 7.0]),
    np.random.default_rng(0).gamma(0.05, size=1000),
])
def test_alias_table_draws_exactly_the_weights(weights):
    table = _sparse.alias_tables(np.ascontiguousarray(weights[None, :]))[0]
    np.testing.assert_allclose(_alias_law(table), weights / weights.sum(), rtol=1e-12,
                               atol=1e-15)
    # a topic of weight zero is never drawn, neither kept nor as an alias
    prob, alias = table[:, 0], table[:, 1].astype(np.int64)
    zero = weights == 0.0
    assert np.all(prob[zero] == 0.0) and not np.any(zero[alias][prob < 1.0])


# -- the word proposal -----------------------------------------------------------

@nb.njit(cache=True)
def _initial_topics(n, rows, sums, table, key):
    """The initial topics (word-proposal draws) of n tokens of word 0."""
    tokens = np.zeros(n, dtype=np.int32)
    buf = _sparse.proposal_buffers(n)
    _sparse._propose(tokens, 0, n, n, True, np.zeros(n, dtype=np.int32), rows, sums, table,
                     rows.shape[1], 0.1, new_state(key), buf)
    return buf[0][:, 0].copy(), buf[1][:, 0].copy()


def test_word_rows_are_phi_in_blocks_with_their_sums():
    # phi's columns as rows, zero-padded to whole blocks; a block's sum adds its
    # weights in order, as the search inside the block does (so its last partial
    # sum is the sum, bit for bit).
    phi = np.random.default_rng(3).gamma(0.3, size=(37, 4)) * np.array([1e-200, 1.0, 3e5, 7.0])
    rows, sums = _sparse.word_rows(phi)
    width = 5 * _sparse.BLOCK
    assert rows.shape == (4, width) and rows.ctypes.data % 64 == 0
    np.testing.assert_array_equal(rows[:, :37], phi.T)
    assert np.all(rows[:, 37:] == 0.0)
    blocks = rows.reshape(4, 5, _sparse.BLOCK)
    np.testing.assert_array_equal(sums, np.cumsum(blocks, axis=2)[:, :, -1])


@pytest.mark.parametrize("n_topics", [5, 40])
def test_word_proposal_draws_the_word_row(n_topics):
    # Block alias then a search inside the block: topic k with probability
    # phi_kw / Σ phi_w, zeros never (chi-square over 60,000 draws; weights from
    # 1e-3 to 1 over several blocks, some zero, one block all zero), and the
    # drawn topic's phi alongside.
    row = np.random.default_rng(4).uniform(1e-3, 1.0, size=n_topics)
    row[::7] = 0.0
    if n_topics > 32:
        row[16:24] = 0.0
    rows, sums = _sparse.word_rows(row[:, None])
    table = _sparse.alias_tables(sums)
    topics, phis = _initial_topics(60_000, rows, sums, table, 5)
    law = row
    np.testing.assert_array_equal(phis, row[topics])
    counts = np.bincount(topics, minlength=n_topics)
    assert counts.size == n_topics and np.all(counts[law == 0] == 0)
    assert _chi2_p(counts, law / law.sum()) > 1e-3


# -- one token's transition -----------------------------------------------------

@nb.njit(cache=True)
def _transitions(starts, i, z, rows, sums, table, ndk_other, alpha, key):
    """Token i (word 0) moved once from each start: its proposals drawn, then
    its MH cycles; the other tokens' topics z and counts ndk_other stay fixed."""
    out = np.empty(starts.size, dtype=np.int64)
    n_tok = z.size
    tokens = np.zeros(n_tok, dtype=np.int32)
    z_phi = np.empty(n_tok, dtype=np.float32)
    buf = _sparse.proposal_buffers(n_tok)
    ndk = ndk_other.copy()
    for c in range(starts.size):
        state = new_state(mix_in(key, c))
        z[i] = starts[c]
        z_phi[i] = rows[0, starts[c]]
        ndk[:] = ndk_other
        ndk[starts[c]] += 1.0
        _sparse._propose(tokens, i, i + 1, n_tok, False, z, rows, sums, table, ndk.size, alpha,
                         state, buf)
        _sparse._moves(tokens, i, i + 1, False, z, z_phi, rows, ndk, alpha, buf)
        out[c] = z[i]
    return out


def _token_case(alpha):
    """Token i = 2 of a 7-token document over K = 6 topics: the other tokens'
    topics, their counts, the token's phi row (one zero) and its exact conditional."""
    z = np.array([0, 0, 4, 3, 3, 3, 5], dtype=np.int32)  # z[2] is the token's own (stale) topic
    i = 2
    ndk = np.bincount(np.delete(z, i), minlength=6).astype(np.float64)
    row = np.array([0.05, 0.4, 0.0, 0.1, 0.3, 0.15])
    target = (alpha + ndk) * row
    return z, i, ndk, row, target / target.sum()


@pytest.mark.parametrize("alpha", [0.1, 0.01, 2.0])
@pytest.mark.parametrize("start", ["stationary", "worst"])
def test_token_transition_leaves_its_conditional_invariant(alpha, start):
    # Started from the exact conditional (alpha + n_dk^{¬i}) phi_kw, one move of
    # MH_CYCLES word/document cycles must leave it unchanged: chi-square over 40,000
    # moves. Started from the least likely allowed topic, 30 moves must reach it
    # too (the chain converges to it, it is not stuck). Guards against a missing
    # acceptance term, a document proposal that counts the token itself, or a
    # wrong uniform-topic weight.
    z, i, ndk, row, target = _token_case(alpha)
    rows, sums = _sparse.word_rows(row[:, None])
    table = _sparse.alias_tables(sums)
    rng = np.random.default_rng(1)
    n = 40_000
    if start == "stationary":
        starts = rng.choice(6, size=n, p=target)
    else:
        starts = np.full(n, int(np.argmin(np.where(target > 0, target, 2.0))))
    z_state = z.copy()
    ends = _transitions(starts, i, z_state, rows, sums, table, ndk, alpha, 7)
    for move in range(29 if start == "worst" else 0):
        ends = _transitions(ends, i, z_state, rows, sums, table, ndk, alpha, 8 + move)
    counts = np.bincount(ends, minlength=6)
    assert counts[2] == 0  # phi = 0: never proposed by the word, never accepted from the doc
    assert _chi2_p(counts, target) > 1e-3, (counts / n, target)


def test_token_transition_check_has_power():
    # The chi-square above separates the target from what a kernel without the
    # Dirichlet term would sample (phi alone): same sample size, p far below 1e-3.
    _, _, _, row, target = _token_case(0.1)
    draws = np.random.default_rng(2).choice(6, size=40_000, p=row / row.sum())
    assert _chi2_p(np.bincount(draws, minlength=6), target) < 1e-12


# -- the joint law of a tiny document -------------------------------------------

@nb.njit(cache=True)
def _final_topics(tokens, phi, alpha, sweeps, n_chains, key):
    n_tok = tokens.size
    n_topics = phi.shape[0]
    rows, sums = _sparse.word_rows(phi)
    table = _sparse.alias_tables(sums)
    out = np.empty((n_chains, n_tok), dtype=np.int32)
    z = np.empty(n_tok, dtype=np.int32)
    z_phi = np.empty(n_tok, dtype=np.float32)
    buf = _sparse.proposal_buffers(n_tok)
    ndk = np.zeros(n_topics)
    kept = np.empty((sweeps - sweeps // 2, n_tok), dtype=np.int32)
    doc_acc = np.zeros(n_topics, dtype=np.int64)
    for c in range(n_chains):
        state = new_state(mix_in(key, c))
        _sparse._mh_document(tokens, n_tok, z, z_phi, rows, sums, table, alpha, sweeps, state,
                             ndk, buf, kept, doc_acc)
        out[c] = z
    return out


def test_joint_topics_of_a_tiny_document_match_brute_force():
    # Four tokens of four distinct words, K = 3: all 81 assignments z and their
    # exact p(z | w, phi) ∝ Π phi[z_i, w_i] Π_k Γ(alpha + n_k)/Γ(alpha). The
    # final state of 30,000 independent chains of 60 sweeps against it (chi-square;
    # MH mixes slower per sweep than exact draws: after 12 sweeps p ~ 1e-3, not yet
    # converged from the sequential start).
    phi = np.array([[0.50, 0.10, 0.05, 0.30],
                    [0.30, 0.60, 0.15, 0.05],
                    [0.20, 0.30, 0.80, 0.65]])
    tokens = np.arange(4, dtype=np.int32)
    zs = np.array(list(itertools.product(range(3), repeat=4)))
    counts = np.stack([(zs == k).sum(axis=1) for k in range(3)], axis=1)
    logp = np.log(phi[zs, tokens]).sum(axis=1) + (gammaln(ALPHA + counts)
                                                  - gammaln(ALPHA)).sum(axis=1)
    exact = np.exp(logp - logsumexp(logp))
    final = _final_topics(tokens, phi, ALPHA, 60, 30_000, 11)
    cell = (final * 3 ** np.arange(3, -1, -1)).sum(axis=1)
    observed = np.bincount(cell, minlength=81)
    assert _chi2_p(observed, exact) > 1e-3


# -- expected counts ------------------------------------------------------------

@pytest.mark.parametrize("rescale", [False, True])
def test_expected_counts_match_brute_force(rescale):
    # As for the dense kernel (test_gibbs): 40 independent batch estimates,
    # |z| < 4.5 on each of the 9 entries of E[n_kw] of the tiny document.
    cols = PHI
    if rescale:
        cols = PHI * 10.0 ** np.random.default_rng(0).uniform(-150, 150, size=PHI.shape[1])
    est = batch_estimates(cols, "sparse")
    se = est.std(axis=0, ddof=1) / np.sqrt(est.shape[0])
    z = (est.mean(axis=0) - exact_expected_counts(PHI, ALPHA)) / se
    assert np.abs(z).max() < 4.5, z


def test_expected_counts_of_a_batch_agree_with_the_dense_kernel():
    # A random batch (K = 6, 12 documents, up to 90 tokens each, sparse phi): the
    # kernels' expected topic-word counts, each estimated by 30 replicates (new
    # iteration = independent streams), agree within Monte Carlo error (two-sample
    # z on every cell with variance, |z| < 4.5).
    indptr, indices, data, phi = _random_batch(n_topics=6, seed=3)
    docs = np.arange(indptr.size - 1)
    est = {k: np.array([_run(indptr, indices, data, docs, phi, sweeps=30, iteration=it,
                             kernel=k)[0] for it in range(30)]) for k in ("dense", "sparse")}
    mean = {k: v.mean(axis=0) for k, v in est.items()}
    var = sum(v.var(axis=0, ddof=1) / v.shape[0] for v in est.values())
    live = var > 0
    z = (mean["sparse"] - mean["dense"])[live] / np.sqrt(var[live])
    assert np.abs(z).max() < 4.5, z
    assert live.sum() > 50


# -- structure shared with the dense kernel -------------------------------------

def test_outputs_are_consistent_integer_counts():
    indptr, indices, data, phi = _random_batch()
    docs = np.arange(indptr.size - 1) + 100
    tw, dt, n_kept = _run(indptr, indices, data, docs, phi, sweeps=7, kernel="sparse")
    assert n_kept == 4 and tw.dtype == np.int64 and dt.dtype == np.int64
    lengths = np.add.reduceat(np.append(data, 0), indptr[:-1]) * (np.diff(indptr) > 0)
    np.testing.assert_array_equal(dt.sum(axis=1), lengths * n_kept)
    np.testing.assert_array_equal(dt.sum(axis=0), tw.sum(axis=1))
    word_totals = np.bincount(indices, weights=data, minlength=phi.shape[1])
    np.testing.assert_array_equal(tw.sum(axis=0), word_totals * n_kept)
    assert np.all(tw[phi == 0] == 0)


def test_document_result_independent_of_batch_and_reproducible():
    indptr, indices, data, phi = _random_batch()
    docs = np.arange(indptr.size - 1) + 40
    tw, dt, _ = _run(indptr, indices, data, docs, phi, kernel="sparse")
    again = _run(indptr, indices, data, docs, phi, kernel="sparse")
    np.testing.assert_array_equal(again[1], dt)
    assert not np.array_equal(_run(indptr, indices, data, docs, phi, kernel="sparse",
                                   iteration=3)[1], dt)
    total = np.zeros_like(tw)
    for d in range(docs.size):
        sl = slice(indptr[d], indptr[d + 1])
        if indptr[d] == indptr[d + 1]:
            continue
        one = _run(np.array([0, indptr[d + 1] - indptr[d]]), indices[sl], data[sl],
                   docs[d:d + 1], phi, kernel="sparse")
        np.testing.assert_array_equal(one[1][0], dt[d])
        total += one[0]
    np.testing.assert_array_equal(total, tw)


# -- choosing the kernel --------------------------------------------------------

def test_auto_picks_dense_below_the_threshold_and_sparse_from_it():
    assert resolve_kernel("auto", 100) == "dense"
    assert resolve_kernel("auto", SPARSE_FROM_K - 1) == "dense"
    assert resolve_kernel("auto", SPARSE_FROM_K) == "sparse"
    assert resolve_kernel("dense", 10_000) == "dense"
    assert resolve_kernel("sparse", 2) == "sparse"
    # auto at small K is the dense chain, draw for draw
    indptr, indices, data, phi = _random_batch()
    docs = np.arange(indptr.size - 1)
    auto, dense = (_run(indptr, indices, data, docs, phi, kernel=k) for k in ("auto", "dense"))
    np.testing.assert_array_equal(auto[0], dense[0])
    assert not np.array_equal(_run(indptr, indices, data, docs, phi, kernel="sparse")[1],
                              dense[1])


def test_unknown_kernel_is_one_clear_error():
    indptr, indices, data, phi = _random_batch()
    with pytest.raises(DscirError, match="kernel must be one of auto, dense, sparse"):
        _run(indptr, indices, data, np.arange(indptr.size - 1), phi, kernel="alias")


# -- the setting: estimator, CLI, chain -----------------------------------------

def test_estimator_passes_the_kernel_and_names_a_bad_one():
    from dscir.api import LDA

    # "auto" is resolved in the chain's configuration, so runs record the kernel that ran
    assert LDA(n_topics=100, policy="reference").chain_config().kernel == "dense"
    assert LDA(n_topics=1000, policy="reference").chain_config().kernel == "sparse"
    assert LDA(n_topics=1000, warm_start=True, policy="reference").chain_config().kernel == "dense"
    assert LDA(kernel="sparse", policy="reference").chain_config().kernel == "sparse"
    with pytest.raises(DscirError, match="kernel must be one of"):
        LDA(kernel="alias").chain_config()


def test_cli_kernel_option_rejects_an_unknown_kernel(capsys):
    from dscir.cli import main

    assert main(["fit", "lda", "/nonexistent/store", "--kernel", "alias"]) == 2
    assert "invalid choice: 'alias'" in capsys.readouterr().err


def test_sparse_chain_is_the_same_on_one_and_two_workers(one_worker, two_workers, tmp_path):
    # The kernel setting reaches the workers' tasks (the sparse chain differs from
    # the dense one) and keeps the engine's guarantee: the same chain on 1 and 2 workers.
    from support.chains import lda_chain
    from support.lda import synthetic_lda, small_config
    from dscir.corpus import write_corpus

    path = str(tmp_path / "s.zarr")
    write_corpus(path, synthetic_lda(120, 40, seed=2)[0], chunk_docs=32)
    states = {}
    for name, client, kernel in (("sparse-1", one_worker, "sparse"),
                                 ("sparse-2", two_workers, "sparse"),
                                 ("dense-2", two_workers, "dense")):
        chain = lda_chain(client, path, small_config(kernel=kernel))
        assert chain.model.kernel == kernel
        for _ in range(3):
            chain.step()
        chain.close()
        states[name] = chain.model.topics.state_.log_theta
    assert np.array_equal(states["sparse-1"], states["sparse-2"])
    assert not np.array_equal(states["sparse-2"], states["dense-2"])
