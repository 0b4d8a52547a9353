"""LDA's Gibbs expectations on a CUDA device (``LDA(device="cuda")``).

The chain of ``gibbs.gibbs_expectations``, run by ``_gibbs_cuda``: for each
document, z drawn sequentially, then ``sweeps`` collapsed sweeps p(z_i = k) ∝
(alpha + n_dk^{¬i}) phi_{k,w_i}, the first ``sweeps // 2`` discarded and the
(topic, word) counts of the others summed as integers. Two forms of the draw,
exact in law alike: ``"dense"`` (O(K / 32) per thread and token, K topic counts
in shared memory) and ``"sparse"`` (a smoothing bucket searched in the word's
cumulative phi, O(log K), and a bucket over the document's other tokens,
O(N_d / 32): no K-sized state, for large K). Each document's stream is named
by (seed, iteration, document id), so its counts depend neither on the launch
geometry nor on the other documents of its part; they are not the CPU
kernel's numbers (another search order), only the same law.

Pure array code, no Dask. numba's CUDA target (the ``numba-cuda`` package,
``pip install 'dscir[gpu]'``) is imported on first use: this module imports
anywhere, and a call without it or without a device raises one ``DscirError``.
"""

from __future__ import annotations

import time

import numpy as np

from dscir.errors import DscirError
from dscir.models.lda.gibbs import _check_alpha, _check_int, _csr, _docs, _local, _matrix
from dscir.rng import derive

DEVICES = ("cpu", "cuda")
FORMS = ("dense", "sparse")
#: How the Gibbs tasks name a device kernel: ``"cuda-dense"``, ``"cuda-sparse"``.
PREFIX = "cuda-"
#: The dense form holds a document's K topic counts (int32) in 48 KiB of shared memory.
DENSE_MAX_TOPICS = 48 * 1024 // 4
#: Blocks of a launch by default (one per document up to this many).
MAX_BLOCKS = 1 << 16
_HELPER_THREADS = 128


def device_kernel(kernel: str, device: str) -> str:
    """The kernel name the Gibbs tasks get: ``kernel`` ("dense" or "sparse") on the
    CPU, ``PREFIX + kernel`` on a CUDA device."""
    if device not in DEVICES:
        raise DscirError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")
    return kernel if device == "cpu" else PREFIX + kernel


def on_device(kernel) -> bool:
    """Whether a Gibbs task's ``kernel`` runs on a CUDA device."""
    return isinstance(kernel, str) and kernel.startswith(PREFIX)


def check_device() -> None:
    """Nothing where a CUDA device (or numba's simulator) is there; one
    ``DscirError`` saying what is missing otherwise."""
    _cuda()


def _cuda():
    """``numba.cuda``, once ``check_device`` passes."""
    try:
        from numba import cuda
    except ImportError as exc:
        raise DscirError("device='cuda' needs numba's CUDA target: pip install "
                         "'dscir[gpu]' (the numba-cuda package)") from exc
    try:
        found = cuda.is_available()
    except Exception:  # a broken driver or toolkit: no usable device either
        found = False
    if not found:
        raise DscirError("device='cuda' found no CUDA device here (numba.cuda.is_available()"
                         " is False): run where an NVIDIA GPU and its driver are, with "
                         "dscir[gpu] installed, or use device='cpu'")
    return cuda


def _tokens(indptr, data, local) -> tuple[np.ndarray, np.ndarray]:
    """(token offsets int64 [n + 1], token word columns int32 [tokens]): counts
    expanded, one token per occurrence, in CSR order."""
    ends = np.concatenate(([0], np.cumsum(data, dtype=np.int64)))
    return ends[indptr], np.repeat(local, data).astype(np.int32)


def _grid(n: int) -> tuple[int, int]:
    """A 1-d launch of helper kernels covering n items (grid-stride loops)."""
    threads = max(1, min(_HELPER_THREADS, n))
    return max(1, min(-(-n // threads), 1024)), threads


def _sparse_entries(cuda, ck, counts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(cols int32, topics int32, values int64): the nonzero entries of the device's
    K x U ``counts``, by column then topic (``_kernels.nonzero_by_column``'s order)."""
    n_cols = counts.shape[1]
    nnz = cuda.device_array(n_cols, np.int64)
    ck.column_nonzeros[_grid(n_cols)](counts, nnz)
    per_col = nnz.copy_to_host()
    start = np.concatenate(([0], np.cumsum(per_col)))
    topics = cuda.device_array(int(start[-1]), np.int32)
    values = cuda.device_array(int(start[-1]), np.int64)
    if start[-1]:
        ck.column_entries[_grid(n_cols)](counts, cuda.to_device(start[:-1]), topics, values)
    cols = np.repeat(np.arange(n_cols, dtype=np.int32), per_col)
    return cols, topics.copy_to_host(), values.copy_to_host()


def _sample(cuda, ck, form, inputs, d_phi, alpha, sweeps, key, blocks):
    """Launch the sampler of ``form`` on the device's ``inputs`` (token offsets,
    token words, document ids); the K x U kept counts on the device."""
    n_topics, n_cols = d_phi.shape
    rows = cuda.device_array((n_cols, n_topics), np.float64)
    ck.word_rows[_grid(n_topics * n_cols)](d_phi, rows)
    counts = cuda.device_array((n_topics, n_cols), np.int64)
    ck.zero[_grid(n_topics * n_cols)](counts)
    z = cuda.device_array(max(inputs[1].size, 1), np.int32)
    args = (*inputs, rows)
    rest = (float(alpha), sweeps, sweeps // 2, key, z, counts)
    if form == "dense":
        ck.dense_counts[blocks, ck.THREADS, 0, 4 * n_topics](*args, *rest)
    else:
        cum = cuda.device_array((n_cols, n_topics), np.float64)
        ck.cumulate[_grid(n_cols)](rows, cum)
        ck.token_counts[blocks, ck.THREADS](*args, cum, *rest)
    return counts


def topic_word_counts(indptr, indices, data, docs, phi_cols, local_words, alpha, sweeps,
                      seed, iteration, form="dense", blocks=None, timing=None):
    """The nonzero kept topic-word counts of a batch of documents, on the device.

    Arguments as ``gibbs.gibbs_expectations`` (``phi_cols`` [K, U] may be
    rescaled per column; float32 or float64); ``form`` is ``"dense"`` or
    ``"sparse"``; ``blocks`` the grid (default one block per document up to
    ``MAX_BLOCKS``: results do not depend on it); a ``timing`` dict gets
    ``"kernel_s"``, the sampler's seconds on the device, inputs there (synchronised).

    Returns ``(cols int32 [nnz], topics int32 [nnz], values int64 [nnz], n_kept)``:
    the entries of the K x U counts summed over kept sweeps and documents, by
    column then topic, as ``_kernels.nonzero_by_column`` orders them.
    """
    if form not in FORMS:
        raise DscirError(f"form must be one of {', '.join(FORMS)}, got {form!r}")
    indptr, indices, data = _csr(indptr, indices, data)
    phi_cols = _matrix(phi_cols, "phi_cols", float32=True)
    if not np.all(np.isfinite(phi_cols)) or (phi_cols.size and phi_cols.min() < 0.0):
        raise DscirError("phi_cols must be finite and non-negative")
    if phi_cols.shape[1] and not np.all(phi_cols.max(axis=0) > 0.0):
        raise DscirError("every phi column must have a positive entry")
    n_topics = phi_cols.shape[0]
    if form == "dense" and n_topics > DENSE_MAX_TOPICS:
        raise DscirError(f"the dense CUDA kernel holds K topic counts in shared memory: K "
                         f"<= {DENSE_MAX_TOPICS}, got {n_topics}; use kernel='sparse'")
    local = _local(local_words, indices.size, phi_cols.shape[1], "local_words")
    docs = _docs(docs, indptr.size - 1)
    alpha = _check_alpha(alpha)
    sweeps = _check_int(sweeps, "sweeps", 2)
    key = np.uint64(derive(_check_int(seed, "seed", 0), _check_int(iteration, "iteration", 0)))
    blocks = min(max(docs.size, 1), MAX_BLOCKS) if blocks is None else \
        _check_int(blocks, "blocks", 1)
    cuda = _cuda()
    from dscir.models.lda import _gibbs_cuda as ck

    tokens = _tokens(indptr, data, local)
    n_kept = sweeps - sweeps // 2
    if tokens[1].size == 0:
        empty = np.zeros(0, np.int32)
        return empty, empty.copy(), np.zeros(0, np.int64), n_kept
    d_phi = cuda.to_device(phi_cols)
    inputs = tuple(cuda.to_device(a) for a in (*tokens, docs))
    cuda.synchronize()
    start = time.perf_counter()
    counts = _sample(cuda, ck, form, inputs, d_phi, alpha, sweeps, key, blocks)
    cuda.synchronize()
    if timing is not None:
        timing["kernel_s"] = time.perf_counter() - start
    return (*_sparse_entries(cuda, ck, counts), n_kept)


def gibbs_sparse_counts(batch, words: np.ndarray, phi_cols: np.ndarray, alpha: float,
                        sweeps: int, seed: int, iteration: int, kernel: str):
    """A Gibbs task's fields of ``tasks.SparseCounts`` (word ids, topics, values,
    n_kept, n_tokens) for ``batch`` (a ``CSRBatch``) with ``kernel`` named by
    ``device_kernel``, on this worker's device."""
    local = np.searchsorted(words, batch.indices).astype(np.int32)
    cols, topics, values, n_kept = topic_word_counts(
        batch.indptr, batch.indices, batch.data, batch.docs, phi_cols, local, alpha, sweeps,
        seed, iteration, kernel.removeprefix(PREFIX))
    word_ids = np.asarray(words).astype(np.int32)[cols]
    return word_ids, topics, values, int(n_kept), int(np.asarray(batch.data).sum())
