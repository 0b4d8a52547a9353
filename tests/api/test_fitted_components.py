"""The mixtures' fitted components that stay where the workers' blocks wrote them
(issue 36; ``dscir.api.fitted``, ``dscir.api.heldout``).

What each test guards against:
- the lazy ``components_`` (a dask array over the blocks' ``components``)
  differing from the dense ones of the same chain: a block written at the
  wrong columns or with the wrong normalisers, predictions or scores from
  columns of other words, the top words of a block given the wrong offset, a
  loaded run read eagerly; every use is compared bit for bit (the columns are
  the stored state's log theta less the blocks' row normalisers, as the blocks
  cut them, so they are the final sample's log phi exactly);
- log phi taken as the log of the stored phi, which underflows to 0 at large W
  (-inf, then NaN probabilities): the budget test's finite predict_proba;
- the size rule: NumPy at or below ``DENSE_MAX_ENTRIES`` entries, a dask array
  above it, for a fit and for ``load(run)``;
- the driver keeping K x W after fit, or building it in predict, predict_proba,
  score or top words: the memory budget test (mutants
  ``mixture-components-gathered``, ``mixture-columns-read-whole``,
  ``mixture-top-words-gathered``, ``mixture-columns-from-stored-phi``).
"""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

from dscir import DPMixture, Mixture
from dscir.api import fitted
from dscir.models.mixtures import components as mixture_components
from support.zipf import W as ZIPF_W

BLOCK_ENTRIES = 40  # K = 4: blocks of 10 columns


def dp(**kw) -> DPMixture:
    base = dict(sampler="sgrld", batch_size=100, n_init=4, n_iter=8, eval_every=4,
                burn_in=8, seed=4, placement="workers", progress=False)
    return DPMixture(**{**base, **kw})


def finite(**kw) -> Mixture:
    base = dict(n_clusters=4, sampler="scir", batch_size=100, n_iter=8, eval_every=4,
                burn_in=8, seed=4, placement="workers", progress=False)
    return Mixture(**{**base, **kw})


@pytest.mark.parametrize("make", [dp, finite], ids=["dpmm", "mixture"])
def test_lazy_components_are_the_dense_ones(dpmm_store, two_workers, tmp_path, monkeypatch,
                                            make):
    """No kept sample (burn_in = n_iter): predictions and scores read the final
    sample's components, from the driver's array or from the stored ones."""
    from support.mixtures import synthetic_mixture

    monkeypatch.setattr(mixture_components, "BLOCK_ENTRIES", BLOCK_ENTRIES)
    store, _ = dpmm_store
    docs, _ = synthetic_mixture(60, seed=11)
    dense = make().fit(store, client=two_workers)
    dense_run = make().fit(store, client=two_workers, out=tmp_path / "dense")
    assert isinstance(dense.components_, np.ndarray)
    assert isinstance(type(dense).load(tmp_path / "dense").components_, np.ndarray)
    monkeypatch.setattr(fitted, "DENSE_MAX_ENTRIES", 0)
    lazy = make().fit(store, client=two_workers)
    run = make().fit(store, client=two_workers, out=tmp_path / "run")
    loaded = type(run).load(tmp_path / "run")
    np.testing.assert_array_equal(dense_run.components_, dense.components_)
    for est in (lazy, run, loaded):
        assert fitted.is_lazy(est.components_)
        assert est._final.log_phi is None  # the final sample holds no K x W
        np.testing.assert_array_equal(est.materialize_components(), dense.components_)
        np.testing.assert_array_equal(est.predict(docs), dense.predict(docs))
        if isinstance(est, Mixture):
            np.testing.assert_array_equal(est.predict_proba(docs), dense.predict_proba(docs))
        assert est.top_words(5) == dense.top_words(5)
        assert str(est.top_words_table(3)) == str(dense.top_words_table(3))
        assert est.score() == dense.score()
        assert est.score(client=two_workers) == dense.score(client=two_workers)


BUDGET_K, BUDGET_W = 100, ZIPF_W  # 2 x 10^7 entries: 160 MB of float64


@pytest.mark.slow  # runs with its mutants
def test_the_driver_keeps_no_k_by_w(zipf_store, two_workers, tmp_path):
    """K = 100 x W = 2 x 10^5 components (160 MB of float64) on the workers: the
    fitted estimator keeps on the driver (tracemalloc, NumPy's buffers included)
    less than half of K x W x 8 bytes (a gathered ``components_`` and final log
    phi take twice K x W x 8), and predict, predict_proba, score, top words and
    load(run) each add a peak below that (measured: under a fifth). The fit's own peak is not
    bounded here: the mixtures draw their starting K x W on the driver, and the
    in-process scheduler keeps the tasks that loaded it into the blocks while
    the chain (``_chain``, kept for ``partial_fit``) holds them: it is dropped
    before the count."""
    store, counts = zipf_store
    budget = BUDGET_K * BUDGET_W * 8 // 2
    est = Mixture(n_clusters=BUDGET_K, sampler="scir", batch_size=50, n_iter=1, burn_in=1,
                  eval_every=0, seed=0, placement="workers", progress=False)
    docs = counts[:100]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        est.fit(store, client=two_workers, out=tmp_path / "run")
        del est._chain
        gc.collect()
        two_workers.run(gc.collect)  # the scheduler forgets the chain's tasks
        kept = {"fit": tracemalloc.get_traced_memory()[0] - before}
        peaks = {}
        for name, call in [("predict", lambda: est.predict(docs)),
                           ("predict_proba", lambda: est.predict_proba(docs)),
                           ("score", lambda: est.score(client=two_workers)),
                           ("top_words", lambda: est.top_words(10)),
                           ("load", lambda: Mixture.load(tmp_path / "run").predict(docs))]:
            start = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            value = call()
            peaks[name] = tracemalloc.get_traced_memory()[1] - start
            if name == "predict_proba":  # phi underflows to 0 here: log phi is read, not log(0)
                assert value.shape == (100, BUDGET_K) and np.isfinite(value).all()
    finally:
        tracemalloc.stop()
    assert fitted.is_lazy(est.components_)
    over = {k: v for k, v in {**kept, **peaks}.items() if v > budget}
    assert not over, f"driver bytes over the budget of {budget}: kept {kept}, peaks {peaks}"
