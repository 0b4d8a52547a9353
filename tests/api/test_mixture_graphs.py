"""What a mixture fit sends the scheduler: with a large vocabulary no task graph
carries the components or their columns, in either placement (no "Sending
large graph" warning, which the CLI's filter would otherwise hide), and the
bytes of an iteration's graphs do not grow with the vocabulary.

Plausible bugs guarded: the components (or their columns) travelling inside
the tasks again (the driver's columns no longer sent ahead of the round), a
per-block cost that grows with the columns rather than the blocks.
"""

from __future__ import annotations

import warnings
from collections import defaultdict

import numpy as np
import pytest
import scipy.sparse as sp
from distributed.protocol import serialize, to_serialize

from dscir import DPMixture, Mixture
from dscir.corpus import write_corpus

N_DOCS, LENGTH, SPREAD = 1000, 200, 30


def corpus(tmp_path_factory, n_words: int, spread: int, name: str) -> str:
    """N_DOCS documents of LENGTH tokens uniform over n_words // spread words, their
    ids multiplied by ``spread`` (the same documents in a larger vocabulary)."""
    rng = np.random.default_rng(8)
    ids = rng.integers(0, n_words // spread, size=(N_DOCS, LENGTH)) * spread
    rows = np.repeat(np.arange(N_DOCS), LENGTH)
    x = sp.csr_matrix((np.ones(rows.size, np.int64), (rows, ids.ravel())),
                      shape=(N_DOCS, n_words))
    x.sum_duplicates()
    path = tmp_path_factory.mktemp(name) / "corpus.zarr"
    write_corpus(path, x, chunk_docs=250)
    return str(path)


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """60,000 words, about 20,000 of them in a minibatch part."""
    return corpus(tmp_path_factory, 60_000, 1, "wide")


def large_graphs(fit) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit()
    return [str(w.message) for w in caught if "Sending large graph" in str(w.message)]


def test_fits_send_no_large_graph(wide, two_workers):
    # 100 x 20,000 float64 columns a part: 16 MB, over Dask's 10 MB warning threshold,
    # sent ahead of the round (Client.scatter), not inside it
    driver = Mixture(100, n_iter=1, init="random", placement="driver", progress=False)
    assert large_graphs(lambda: driver.fit(wide, client=two_workers)) == []
    assert driver._chain.model.held.placement == "driver"
    dp = DPMixture(n_init=100, n_iter=3, progress=False)
    assert large_graphs(lambda: dp.fit(wide, client=two_workers)) == []
    assert dp._chain.model.held.trial is not None  # 'auto': still timing the driver
    # the finite mixture's default start (collapsed sweeps, about 2 minutes here) aside
    model = Mixture(100, n_iter=3, init="random", placement="workers", progress=False)
    assert large_graphs(lambda: model.fit(wide, client=two_workers)) == []
    assert model._chain.model.held.placement == "workers"


@pytest.mark.benchmark
def test_default_mixture_fit_sends_no_large_graph(wide, two_workers):
    model = Mixture(100, n_iter=3, progress=False)
    assert large_graphs(lambda: model.fit(wide, client=two_workers)) == []
    assert model.config_.init == "collapsed"


def graph_bytes(client, monkeypatch, fit) -> dict[int, int]:
    """Bytes of the graphs ``fit`` sends, per chain iteration named in their keys."""
    sizes: dict[int, int] = defaultdict(int)
    real = client._graph_to_futures

    def recording(expr, keys, *args, **kwargs):
        header, frames = serialize(to_serialize(expr), on_error="raise")
        key = next(iter(keys))
        if isinstance(key, tuple) and len(key) > 1 and isinstance(key[1], int):
            sizes[key[1]] += sum(memoryview(f).nbytes for f in frames)
        return real(expr, keys, *args, **kwargs)

    monkeypatch.setattr(client, "_graph_to_futures", recording)
    fit()
    monkeypatch.undo()
    return dict(sizes)


def per_iteration(sizes: dict[int, int]) -> int:
    """The largest iteration's bytes, the start (iteration 0: the blocks' load) aside."""
    return max(v for k, v in sizes.items() if k > 0)


def test_iteration_bytes_do_not_grow_with_the_vocabulary(tmp_path_factory, two_workers,
                                                         monkeypatch):
    base = corpus(tmp_path_factory, 2_000, 1, "base")
    spread = corpus(tmp_path_factory, 2_000 * SPREAD, SPREAD, "spread")  # the same documents

    def sent(placement, store):
        model = Mixture(40, sampler="scir", batch_size=250, n_iter=4, init="random",
                        placement=placement, progress=False)
        return per_iteration(graph_bytes(two_workers, monkeypatch,
                                         lambda: model.fit(store, client=two_workers)))

    reference, workers = sent("workers", base), sent("workers", spread)
    # 30 times the vocabulary: 5 blocks instead of 1, each a few small tasks (a step, a
    # summary, a cut per part) of under 5 kB, whatever its width
    assert workers - reference <= 4 * 5_000
    # and no columns travel from the driver: 42 kB measured an iteration (the parts'
    # allocations and the blocks' O(K) tasks); 40 x ~2,000 float64 columns cut on the
    # driver would add about 640 kB a part
    assert reference <= 100_000
