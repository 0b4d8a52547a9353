"""The CUDA Gibbs kernel's checks under numba's CUDA simulator, run as a script by
``test_gibbs_cuda.py`` in a process of its own with ``NUMBA_ENABLE_CUDASIM=1``
(numba reads it on import, so it must not reach the other tests' process).

Prints one JSON object: each check's name and its failure (None: passed);
``python cuda_sim.py NAME ...`` runs only the checks named.
"""

from __future__ import annotations

import json
import sys
import traceback
import warnings

import numpy as np
from scipy.stats import chisquare

# the simulator runs each device thread as a Python thread: a short switch interval
# lets its barriers pass without waiting out the default 5 ms each
sys.setswitchinterval(1e-4)
# device integers wrap silently; the simulator's NumPy scalars warn when they do
warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)

from dscir.models.lda import gibbs_cuda as ck

FORMS = ("dense", "sparse")
N_DOCS = 160  # documents (independent streams) per law test


def _dense(cols, topics, values, shape):
    out = np.zeros(shape, np.int64)
    out[topics, cols] = values
    return out


def _run(indptr, local, data, docs, phi, alpha, sweeps, seed, form, blocks=None, it=0):
    cols, topics, values, n_kept = ck.topic_word_counts(
        indptr, local, data, docs, phi, local, alpha, sweeps, seed, it, form, blocks)
    return cols, topics, values, n_kept


def check_conservation(form):
    """Every word's counts add up to its tokens x kept sweeps, in nonzero_by_column's order."""
    rng = np.random.default_rng(1)
    phi = rng.random((5, 6)) + 0.05
    indptr = np.array([0, 3, 4, 7])
    local = np.array([0, 2, 5, 1, 0, 3, 4], np.int32)
    data = np.array([2, 1, 3, 1, 1, 2, 1])
    cols, topics, values, n_kept = _run(indptr, local, data, np.array([4, 9, 2]), phi, 0.3,
                                        5, 7, form)
    assert n_kept == 3, n_kept
    assert np.all(values > 0) and np.all((topics >= 0) & (topics < 5))
    order = np.lexsort((topics, cols))
    assert np.array_equal(order, np.arange(cols.size)), "not ordered by column, then topic"
    per_word = np.bincount(local, weights=data, minlength=6) * n_kept
    got = np.bincount(cols, weights=values, minlength=6)
    assert np.array_equal(got, per_word), (got, per_word)


def _law(counts, p, what):
    _, pvalue = chisquare(counts, counts.sum() * p)
    assert pvalue > 5e-4, f"{what}: counts {counts} against {np.round(counts.sum() * p, 1)}"


def check_single_token_law(form):
    """A one-token document's topic follows p(k) ∝ alpha phi_kw over many streams
    (six topics: a block's first threads own two each; a small alpha, so counting
    the token itself in its own conditional would all but pin it)."""
    phi = np.array([[0.3], [0.05], [0.05], [0.05], [0.5], [0.05]])
    n = N_DOCS
    indptr = np.arange(n + 1)
    local = np.zeros(n, np.int32)
    cols, topics, values, _ = _run(indptr, local, np.ones(n, np.int64), np.arange(n), phi,
                                   0.05, 2, 3, form, blocks=2)
    counts = _dense(cols, topics, values, phi.shape)[:, 0]
    _law(counts, phi[:, 0] / phi[:, 0].sum(), f"{form} single token")


def _conditional(phi_w, other, alpha):
    q = (alpha + (np.arange(phi_w.size) == other)) * phi_w
    return q / q.sum()


def two_token_law(phi, alpha, sweeps):
    """The exact law of (z1, z2) at each kept sweep of a two-token document (words
    0 and 1): the sequential initialisation, then systematic-scan sweeps, enumerated."""
    k = phi.shape[0]
    init = np.zeros((k, k))
    p1 = phi[:, 0] / phi[:, 0].sum()
    for a in range(k):
        init[a] = p1[a] * _conditional(phi[:, 1], a, alpha)
    sweep = np.zeros((k * k, k * k))
    for a in range(k):
        for b in range(k):
            for a2, pa in enumerate(_conditional(phi[:, 0], b, alpha)):
                sweep[a * k + b, a2 * k:(a2 + 1) * k] += pa * _conditional(phi[:, 1], a2, alpha)
    law, kept = init.ravel(), []
    for s in range(sweeps):
        law = law @ sweep
        if s >= sweeps // 2:
            kept.append(law.reshape(k, k))
    return kept


def check_two_token_law(form):
    """Each token's topic at the kept sweep follows the exact law of the chain (more
    topics than a block's threads: a thread walks several)."""
    phi = np.array([[1.0, 0.1], [0.2, 1.0], [0.4, 0.5], [0.6, 0.3], [0.3, 0.6], [0.5, 0.4]])
    alpha = 0.1
    n = N_DOCS
    indptr = np.arange(0, 2 * n + 1, 2)
    local = np.tile(np.array([0, 1], np.int32), n)
    cols, topics, values, _ = _run(indptr, local, np.ones(2 * n, np.int64), np.arange(n), phi, alpha,
                                   2, 5, form, blocks=2)
    counts = _dense(cols, topics, values, phi.shape)
    (law,) = two_token_law(phi, alpha, 2)
    _law(counts[:, 0], law.sum(axis=1), f"{form} two tokens, first")
    _law(counts[:, 1], law.sum(axis=0), f"{form} two tokens, second")


def check_streams_by_document(form):
    """A document's counts: the same alone or beside others, on any grid, run to run."""
    rng = np.random.default_rng(2)
    phi = rng.random((4, 5)) + 0.1
    indptr = np.array([0, 2, 4, 6])
    local = np.array([0, 1, 3, 4, 2, 0], np.int32)  # document 8 alone uses words 3, 4
    data = np.array([1, 2, 2, 1, 1, 1])
    docs = np.array([3, 8, 11])
    runs = [_run(indptr, local, data, docs, phi, 0.5, 4, 9, form, blocks=b) for b in (1, 2, 3)]
    runs.append(_run(indptr, local, data, docs, phi, 0.5, 4, 9, form, blocks=2))
    first = [np.concatenate(r[:3]) for r in runs]
    assert all(np.array_equal(first[0], x) for x in first[1:]), "grid or run changed counts"
    alone = _run(np.array([0, 2]), local[2:4], data[2:4], docs[1:2], phi, 0.5, 4, 9, form)
    both = _dense(*runs[0][:3], phi.shape)[:, 3:]
    assert np.array_equal(_dense(*alone[:3], phi.shape)[:, 3:], both), "stream not by document"
    other = _run(np.array([0, 2]), local[2:4], data[2:4], docs[1:2], phi, 0.5, 4, 9, form, it=1)
    assert not np.array_equal(np.concatenate(other[:3]), np.concatenate(alone[:3])), \
        "the iteration does not name the stream"


def check_matches_cpu_where_the_order_is_the_same():
    """With K no larger than a block's threads, thread t owns topic t alone, so the
    dense form searches the topics in the CPU kernel's order, one uniform a token
    from the same stream: its counts are the CPU kernel's, exactly."""
    from dscir.models.lda._gibbs_cuda import THREADS
    from dscir.models.lda._gibbs import nonzero_by_column
    from dscir.models.lda.gibbs import gibbs_expectations

    rng = np.random.default_rng(4)
    phi = rng.random((3, 5)) + 0.05
    assert phi.shape[0] <= THREADS
    indptr = np.array([0, 3, 5, 8])
    local = np.array([0, 1, 4, 2, 3, 0, 2, 4], np.int32)
    data = np.array([2, 1, 1, 3, 1, 1, 2, 1], np.int32)
    docs = np.array([6, 1, 9])
    cpu, _, _ = gibbs_expectations(indptr, local, data, docs, phi, local, 0.4, 6, 11, 2)
    gpu = _run(indptr, local, data, docs, phi, 0.4, 6, 11, "dense", it=2)
    expected = nonzero_by_column(cpu)
    assert all(np.array_equal(a, b) for a, b in zip(gpu[:3], expected)), (gpu, expected)


def check_task():
    """``tasks.gibbs_sparse_counts`` with a device kernel: SparseCounts in global word ids."""
    from dscir.corpus import CSRBatch
    from dscir.models.lda.tasks import SparseCounts, gibbs_sparse_counts

    batch = CSRBatch(np.array([0, 2, 3]), np.array([10, 40, 10], np.int32),
                     np.array([2, 1, 3], np.int32), np.array([5, 6]))
    words = np.array([10, 40])
    out = gibbs_sparse_counts(batch, words, np.ones((3, 2)), 0.5, 2, 1, 0,
                              ck.device_kernel("dense", "cuda"))
    assert isinstance(out, SparseCounts) and out.n_tokens == 6 and out.n_kept == 1
    assert set(out.word_ids.tolist()) <= {10, 40} and out.values.sum() == 6


CHECKS = {f"{name}[{form}]": (lambda f=fn, m=form: f(m)) for form in FORMS
          for name, fn in (("conservation", check_conservation),
                           ("single_token_law", check_single_token_law),
                           ("two_token_law", check_two_token_law),
                           ("streams_by_document", check_streams_by_document))}
CHECKS["task"] = check_task
CHECKS["matches_cpu[dense]"] = check_matches_cpu_where_the_order_is_the_same


def main(names: list[str]) -> None:
    """Run the checks named (all without names)."""
    results = {}
    for name in names or list(CHECKS):
        check = CHECKS[name]
        try:
            check()
            results[name] = None
        except Exception:
            results[name] = traceback.format_exc(limit=3)
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1:])
