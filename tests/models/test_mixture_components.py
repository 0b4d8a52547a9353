"""The mixtures' components in column blocks (``dscir.models.mixtures.components``):
each block's step is the sampler's step of its own columns with its own stream,
cuts are the columns of the combined normalisers, and a chain is the same on
one and two workers, in this process (placement="driver") and after a resume.

Plausible bugs guarded: a block adding counts at another block's columns
(offset window), a block whose row sums are not refreshed after its step (a
stale block), a stream shared by the blocks, a chain that depends on the
cluster or on where the blocks are held.
"""

from __future__ import annotations

import numpy as np
import pytest

from dscir import DPMixture, Mixture
from dscir.engine.dask import DaskExecutor
from dscir.models.mixtures import components as mixture_components
from dscir.models.column_blocks import block_bounds, combine, row_lse
from dscir.models.mixtures.dp.tasks import AllocationResult
from dscir.models.mixtures.blocks import sparse_allocation, state_row_lse
from dscir.models.mixtures.components import Components, resolve_placement
from dscir.rng import derive
from dscir.samplers import get_sampler
from support.runs import assert_same_stored_run, interrupt_after

K, W, ENTRIES = 4, 30, 40  # blocks of 10 columns: 3 blocks


def same(result):
    return result


def fake_results(rng, n_parts: int = 3):
    """Allocation results of random parts: sorted words, counts per component."""
    out = []
    for j in range(n_parts):
        words = np.sort(rng.choice(W, size=rng.integers(3, 12), replace=False)).astype(np.int64)
        comps = np.sort(rng.choice(K, size=2, replace=False)).astype(np.int64)
        counts = rng.integers(0, 5, size=(comps.size, words.size)).astype(np.int64)
        rows = np.arange(3 * j, 3 * j + 3, dtype=np.int64)
        z = rng.choice(comps, size=3).astype(np.int32)
        out.append(AllocationResult(rows, z, comps, np.bincount(np.searchsorted(comps, z),
                                                                minlength=comps.size), words,
                                    counts))
    return out


@pytest.mark.parametrize("placement", ["driver", "workers"])
@pytest.mark.parametrize("sampler", ["scir", "sgrld"])
def test_block_step_is_each_blocks_own_step(dpmm_store, two_workers, monkeypatch, sampler,
                                            placement):
    monkeypatch.setattr(mixture_components, "BLOCK_ENTRIES", ENTRIES)
    s = get_sampler(sampler)
    rng = np.random.default_rng(3)
    start = s.init_log(np.log(rng.gamma(1.0, 1.0, size=(K, W))))
    executor = DaskExecutor(two_workers, dpmm_store[0], "mixture")
    held = Components(executor, s, start, placement)
    on = held.blocks.executor  # the blocks' own: the Dask executor's or this process's
    bounds = block_bounds(K, W, ENTRIES)
    assert held.blocks.n_blocks == 3
    # each block's row sums: log-sum-exp of log theta (SCIR), the log of the sums (SGRLD)
    norm = combine([state_row_lse(s.State(*(f[:, a:b] for f in start)))
                    for a, b in zip(bounds, bounds[1:])])
    np.testing.assert_array_equal(held.norm, norm)

    words = [np.array([0, 9, 10, 29]), np.array([15])]
    cols = on.gather(held.columns(words))
    for w, c in zip(words, cols):
        np.testing.assert_array_equal(c, start.log_theta[:, w] - norm[:, None])

    results = fake_results(rng)
    counts = np.zeros((K, W), np.int64)
    for r in results:
        counts[np.ix_(r.components, r.words)] += r.counts
    futures = [on.submit("fake", sparse_allocation, same, r, j=j, timed=True)
               for j, r in enumerate(results)]
    z = np.full(9, -1, np.int32)
    scale, key = 2.5, 77
    occupancy, tokens = held.advance(futures, [r.words for r in results], z, a0=0.5,
                                     scale=scale, h=0.1, key=key)

    totals = np.stack([np.exp(norm), counts.sum(axis=1) * scale])
    want = [s.step(s.State(*(f[:, a:b] for f in start)), 0.5,
                   counts[:, a:b] * scale, 0.1, derive(key, j), totals)
            for j, (a, b) in enumerate(zip(bounds, bounds[1:]))]
    fields = held.fields()
    for name in s.State._fields:
        np.testing.assert_array_equal(
            fields[name], np.concatenate([getattr(w, name) for w in want], axis=1))
    new_norm = combine([state_row_lse(w) for w in want])
    np.testing.assert_array_equal(held.norm, new_norm)
    log_theta = np.concatenate([w.log_theta for w in want], axis=1)
    np.testing.assert_array_equal(held.log_phi(), log_theta - new_norm[:, None])
    assert tokens == counts.sum()
    assert z.tolist() == np.concatenate([r.z for r in results]).tolist()
    want_occupancy = np.zeros(K, np.int64)
    for r in results:
        want_occupancy[r.components] += r.n_rows
    np.testing.assert_array_equal(occupancy, want_occupancy)


@pytest.mark.parametrize("placement", ["driver", "workers"])
def test_grow_and_shrink_per_block(dpmm_store, two_workers, monkeypatch, placement):
    monkeypatch.setattr(mixture_components, "BLOCK_ENTRIES", ENTRIES)
    s = get_sampler("scir")
    start = s.init_log(np.log(np.random.default_rng(4).gamma(1.0, 1.0, size=(K, W))))
    held = Components(DaskExecutor(two_workers, dpmm_store[0], "dpmm"), s, start, placement)
    held.extend(3, 0.5, 11)
    grown = held.fields()["log_theta"]
    assert grown.shape == (K + 3, W) and held.n_rows == K + 3
    np.testing.assert_array_equal(grown[:K], start.log_theta)
    assert not np.array_equal(grown[K:, :10], grown[K:, 10:20])  # a stream per block
    held.head(2)
    np.testing.assert_array_equal(held.fields()["log_theta"], start.log_theta[:2])
    np.testing.assert_array_equal(held.norm, row_lse(start.log_theta[:2]))


def test_auto_placement_is_measured_up_to_its_bound(dpmm_store, one_worker):
    executor = DaskExecutor(one_worker, dpmm_store[0], "mixture")
    bound = mixture_components.MEASURED_UP_TO
    assert resolve_placement("auto", 20, bound // 20 + 1, executor) == "workers"
    assert resolve_placement("auto", 20, bound // 20, executor) == "measured"
    assert resolve_placement("auto", 20, bound, object()) == "driver"  # no workers to hold them
    assert resolve_placement("driver", 20, 10, executor) == "driver"
    with pytest.raises(ValueError, match="needs a Dask cluster"):
        resolve_placement("workers", 2, 3, object())


def test_the_trial_times_each_placement_then_keeps_the_faster():
    """Guards against the trial keeping the slower placement, timing the first
    iteration after a move (the move's own cost), or never settling."""
    clock = iter(np.cumsum([0.0, 9.0, 2.0, 2.0, 2.0, 9.0, 1.5, 7.0, 1.0, 8.0]))
    trial, placement, moves = mixture_components.PlacementTrial(4), "workers", []
    while trial.choice is None:
        move = trial.tick(placement, float(next(clock)))
        if move is not None:
            moves.append(move)
            placement = move
    assert moves == ["driver", "driver"] and trial.choice == "driver"
    assert trial.seconds == {"workers": [9.0, 2.0, 2.0, 2.0], "driver": [1.5, 7.0, 1.0, 8.0]}
    assert "1e+03 ms on the driver" in trial.summary()
    assert "stay on the driver" in trial.summary()
    slow = mixture_components.PlacementTrial(1)
    assert [slow.tick("workers", 0.0), slow.tick("workers", 3.0), slow.tick("driver", 5.0),
            slow.tick("driver", 9.0)] == [None, "driver", None, "workers"]
    per_row = mixture_components.PlacementTrial(1)  # 4 s for 2 components beats 3 s for 1
    assert [per_row.tick("workers", 0.0, 1), per_row.tick("workers", 3.0, 1),
            per_row.tick("driver", 5.0, 2), per_row.tick("driver", 9.0, 2)][-1] == "driver"


def dp(**kw) -> DPMixture:
    base = dict(sampler="sgrld", batch_size=100, n_init=4, n_iter=10, eval_every=4, burn_in=2,
                thin=2, seed=4, placement="workers", progress=False)
    return DPMixture(**{**base, **kw})


def finite(**kw) -> Mixture:
    base = dict(n_clusters=4, sampler="scir", batch_size=100, n_iter=10, eval_every=4,
                burn_in=2, thin=2, seed=4, placement="workers", progress=False)
    return Mixture(**{**base, **kw})


@pytest.mark.parametrize("make", [dp, finite], ids=["dpmm", "mixture"])
def test_one_chain_on_one_and_two_workers_and_the_driver(dpmm_store, one_worker, two_workers,
                                                          tmp_path, monkeypatch, make):
    monkeypatch.setattr(mixture_components, "BLOCK_ENTRIES", ENTRIES)
    path, _ = dpmm_store
    a = make().fit(path, client=one_worker, out=tmp_path / "one")
    b = make().fit(path, client=two_workers, out=tmp_path / "two")
    assert a.config_.placement == "workers"
    assert_same_stored_run(tmp_path / "one", tmp_path / "two")
    assert a.score() == b.score()
    driver = make(placement="driver").fit(path, client=two_workers, out=tmp_path / "driver")
    assert driver._chain.model.held.blocks.in_process
    assert_same_stored_run(tmp_path / "driver", tmp_path / "two")  # the same blocks' chain
    assert driver.score() == b.score()
    monkeypatch.setattr(mixture_components, "TRIAL", 1)  # driver, workers, then the faster
    measured = make(placement="auto").fit(path, client=two_workers, out=tmp_path / "auto")
    held = measured._chain.model.held
    assert held.trial is None and held.placement in ("driver", "workers")
    assert_same_stored_run(tmp_path / "auto", tmp_path / "two")  # moved twice, one chain
    assert measured.score() == b.score()


@pytest.mark.parametrize("make", [dp, finite], ids=["dpmm", "mixture"])
def test_workers_resume_equals_uninterrupted(dpmm_store, two_workers, tmp_path, monkeypatch,
                                             make):
    monkeypatch.setattr(mixture_components, "BLOCK_ENTRIES", ENTRIES)
    path, _ = dpmm_store
    whole = make().fit(path, client=two_workers, out=tmp_path / "whole")
    with monkeypatch.context() as m:
        interrupt_after(m, 7)
        with pytest.raises(KeyboardInterrupt):
            make().fit(path, client=two_workers, out=tmp_path / "run", checkpoint_every=3)
    resumed = make().fit(path, client=two_workers, resume=tmp_path / "run")
    assert_same_stored_run(tmp_path / "whole", tmp_path / "run")
    assert resumed.score() == whole.score()


@pytest.mark.parametrize("name", ["sgrld", "sgld", "scir", "gsgrhmc"])
def test_appended_prior_rows_are_init_logs_values(name):
    """A block's new prior rows, written into the grown array in one pass, are
    ``concat(state, init_log(rows))`` bit for bit, its old rows' sums kept. Guards
    against a floor dropped (theta of exactly 0 from a Gamma(0.01) draw), rows
    appended at the wrong end, or the old rows' sums recomputed differently."""
    from dscir.models.mixtures.blocks import extend_block, new_block
    from dscir.samplers.cir import sample_stationary

    sampler = get_sampler(name)
    start = sampler.init_log(sample_stationary(np.full((K, W), 0.01), 3))
    new = sample_stationary(np.full((3, W), 0.01), 5)
    assert np.exp(new).min() == 0.0  # the floor matters
    expected = new_block(0, 0, sampler.concat(start, sampler.init_log(new)))
    grown = extend_block(new_block(0, 0, start), sampler, 3, 0.01, 5, 1)
    for a, b in zip(grown.state, expected.state):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(grown.lse, expected.lse)
    with pytest.raises(ValueError, match="finite everywhere"):
        sampler.append_log(start, np.full((1, W), np.inf))
