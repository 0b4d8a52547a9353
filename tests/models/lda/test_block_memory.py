"""What a worker allocates per topic-word entry with the topics on the workers
(issue 36): one vocabulary block's step and kept sample, and a Gibbs task's
columns, measured by tracemalloc (NumPy's buffers included) beside their
inputs, in float64 words per entry. A worker holds 2 words per entry of its
blocks (log theta, the kept phi sum); these budgets keep what a task adds to
that about one block's new array, not several.

What each test guards against:
- a block step forming counts x factor as a float K x width array (mutant
  ``block-step-counts-times-factor``) beside the new state and its integer
  counts: budget 2.25 words (measured 4.3 before issue 36's change);
- the row sums that end a step forming exp of the whole block (mutant
  ``row-lse-whole-block``; the step's budget above does not see it, as its
  counts are freed by then): budget 0.25 words;
- a kept sample forming the whole block's phi beside the new sum (mutant
  ``keep-whole-block-phi``): budget 1.25 (3 before);
- the sparse Gibbs kernel copying float32 columns to float64 (mutant
  ``sparse-gibbs-float64-columns``), or a worker's one part copying the columns
  cut for it (mutant ``gibbs-part-columns-copied``): budget 1.9 words per
  K x U entry (measured 1.42; either copy adds one word, 2.42);
- and that the row-chunked forms are the whole-block expressions bit for bit
  (K not a multiple of ``ROWS``): a chunk that skips rows (mutant
  ``row-chunks-skip-a-row``) or a kept phi normalised by the wrong rows changes
  them. The chain itself is pinned by tests/test_chain_digests.py.
"""

from __future__ import annotations

import functools
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from dscir.corpus import CSRBatch
from dscir.models import column_blocks as cb
from dscir.models.lda import vocabulary_blocks as vb
from dscir.models.lda.gibbs import gibbs_expectations
from dscir.models.lda.tasks import SparseCounts
from dscir.samplers import get_sampler

K, WIDTH = 1000, 300  # K >> ROWS: a ROWS-row temporary is a small share of the block


def new_words(fn, *args, entries: int, repeats: int = 3) -> tuple[float, object]:
    """``fn(*args)``'s peak of newly allocated bytes, in 8-byte words per entry: the
    least over ``repeats`` calls, since tracemalloc also counts what other threads
    (a cluster's event loop left by an earlier test) allocate meanwhile, which
    only adds to a call's own peak."""
    peaks = []
    for _ in range(repeats):
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            value = fn(*args)
            peaks.append(tracemalloc.get_traced_memory()[1] - base)
        finally:
            tracemalloc.stop()
    return min(peaks) / 8 / entries, value


def block(seed: int = 0, k: int = K, width: int = WIDTH) -> vb.Block:
    init = functools.partial(vb.init_block, seed, k, get_sampler("scir"))
    return vb.start_block(0, 0, width, init)


def counts_on_every_word(k: int, width: int, seed: int = 1) -> tuple[SparseCounts, None]:
    rng = np.random.default_rng(seed)
    words = np.repeat(np.arange(width, dtype=np.int32), 3)
    topics = rng.integers(0, k, words.size).astype(np.int32)
    return SparseCounts(words, topics, rng.integers(1, 9, words.size), 5, 0), None


def test_a_block_step_adds_only_the_new_state_and_its_counts():
    b = block()
    step = (get_sampler("scir"), 0.5, 3.7, 0.4, 2, 7, None, counts_on_every_word(K, WIDTH))
    vb.step_block(b, *step)  # compiled and warm
    words, out = new_words(vb.step_block, b, *step, entries=K * WIDTH)
    assert np.isfinite(out.state.log_theta).all()
    assert words < 2.25, f"a block step allocated {words:.2f} words per entry"


def test_a_blocks_row_sums_take_a_chunk_of_rows_at_a_time():
    """The row log-sum-exp a step ends with forms ``ROWS`` rows' temporary, not the
    whole block's (mutant ``row-lse-whole-block``: one word per entry)."""
    lt = block().state.log_theta
    words, lse = new_words(cb.row_lse, lt, entries=K * WIDTH)
    assert np.isfinite(lse).all()
    assert words < 0.25, f"the row sums allocated {words:.2f} words per entry"


def test_a_kept_sample_adds_only_the_new_sum():
    b = block()
    norm = cb.combine([b.lse])
    words, out = new_words(vb.keep_block, b, norm, entries=K * WIDTH)
    assert out.phi_sum.sum() == pytest.approx(K)  # one phi: each row sums to one
    assert words < 1.25, f"a first kept sample allocated {words:.2f} words per entry"
    words, out = new_words(vb.keep_block, out, norm, entries=K * WIDTH)
    assert out.phi_sum.sum() == pytest.approx(2 * K)
    assert words < 1.25, f"a second kept sample allocated {words:.2f} words per entry"


def test_a_block_holds_no_kept_sum_before_its_first_keep():
    """Dask spills a worker's blocks by their ``sizeof``: a zero sum held from the
    start would count as much again as the state (and be written to disk)."""
    from dask.sizeof import sizeof

    b = block()
    assert b.phi_sum is None and sizeof(b) < 1.1 * b.state.log_theta.nbytes
    outputs = vb.block_outputs(b, 0, cb.combine([b.lse]))
    np.testing.assert_array_equal(outputs["phi_sum"], np.zeros_like(b.state.log_theta))
    arrays = {"sampler/log_theta": b.state.log_theta, "phi_sum": outputs["phi_sum"]}
    back = vb.block_from_arrays(0, 0, arrays, type(b.state))
    assert back.phi_sum is None and sizeof(back) < 1.1 * b.state.log_theta.nbytes
    kept = vb.keep_block(b, cb.combine([b.lse]))
    again = vb.block_from_arrays(0, 0, {**arrays, "phi_sum": kept.phi_sum}, type(b.state))
    np.testing.assert_array_equal(again.phi_sum, kept.phi_sum)


def test_row_chunked_forms_are_the_whole_block_expressions_bit_for_bit():
    k = 2 * cb.ROWS + 5
    b = block(seed=3, k=k, width=17)
    lt = b.state.log_theta
    top = lt.max(axis=1)
    np.testing.assert_array_equal(cb.row_lse(lt), top + np.log(np.exp(lt - top[:, None])
                                                                .sum(axis=1)))
    norm = cb.combine([b.lse]) + np.linspace(0.0, 1.0, k)
    kept = vb.keep_block(vb.keep_block(b, norm), norm)
    phi = np.exp(lt - norm[:, None])
    np.testing.assert_array_equal(kept.phi_sum, (np.zeros_like(phi) + phi) + phi)


def gibbs_case(k: int, n_words: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    docs = sp.random(60, n_words, density=0.05, random_state=seed, format="csr",
                     data_rvs=lambda n: rng.integers(1, 4, n)).astype(np.int64)
    words = np.unique(docs.indices).astype(np.int64)
    cols = rng.random((k, words.size)).astype(np.float32) + np.float32(0.01)
    return docs, words, cols


def test_a_sparse_gibbs_task_adds_two_words_per_column_entry():
    docs, words, cols = gibbs_case(K, 2000)
    batch = CSRBatch(docs.indptr, docs.indices, docs.data, np.arange(docs.shape[0]))
    args = (words, words, cols, 0.1, 4, 3, 1, "sparse")
    vb.gibbs_from_columns(batch, *args)  # compiled and warm
    n, out = new_words(vb.gibbs_from_columns, batch, *args, entries=K * words.size)
    assert out.values.sum() == 2 * docs.data.sum()  # kept sweeps x tokens
    assert n < 1.9, f"a Gibbs task allocated {n:.2f} words per K x U entry"


@pytest.mark.parametrize("kernel", ["dense", "sparse"])
def test_float32_columns_are_their_float64_values_to_the_gibbs_kernels(kernel):
    docs, words, cols = gibbs_case(40, 200, seed=2)
    local = np.searchsorted(words, docs.indices).astype(np.int32)
    run = functools.partial(gibbs_expectations, docs.indptr, docs.indices, docs.data,
                            np.arange(docs.shape[0]), local_words=local, alpha=0.1, sweeps=6,
                            seed=3, iteration=2, kernel=kernel)
    narrow, _, _ = run(phi_cols=cols)
    wide, _, _ = run(phi_cols=cols.astype(np.float64))
    np.testing.assert_array_equal(narrow, wide)
