"""LDA with its topics on the workers (placement="workers", issue 14 parts 1 and 3).

What each test guards against:
- the engine's blocks hold any array (no model's maths there): an input routed
  to a block that does not hold its columns (mutant
  ``blocks-routed-to-every-block``), columns joined out of order or a block
  written at another's columns changes the array;
- the blocked step is the driver's step on the block's columns, given the same
  counts and noise: a block's counts taken at the wrong word offset, or the
  counts of several tasks overwritten instead of added (mutant
  ``blocked-counts-overwritten``), changes it;
- the columns cut from the blocks are ``phi_columns`` of the dense log phi: a
  normaliser missing a block (mutant ``blocked-normaliser-missing-block``) or
  columns cut at the wrong offset changes them;
- float32 columns on the wire give the float64 columns' counts on a batch;
- held-out scores from the blocks' columns are the scores of the dense mean phi;
- the chain is the same on 1 and 2 workers, with workers killed mid-iteration
  (a lost block is rebuilt from its lineage), and when checkpointed (each block
  writing its own columns, a worker killed mid-write) and resumed.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from typing import Any, NamedTuple

import cloudpickle
import numpy as np
import pytest
import zarr

from support.chains import lda_chain
from dscir.engine import blocks
from dscir.models import column_blocks
from dscir.engine.chain import Chain, run_chain
from dscir.errors import DscirError
from dscir.models.lda import LDAConfig
from dscir.models.lda import vocabulary_blocks as vb
from dscir.models.lda.evaluation import perplexity
from dscir.models.lda.gibbs import gibbs_expectations, phi_columns
from dscir.models.lda.tasks import GibbsResult, sparse_counts
from dscir.samplers import get_sampler
from dscir.runs.checkpoint import Checkpoint, HeldArray, read_checkpoint, write_checkpoint
from dscir.samplers.simplex import normalize_log
from support.lda import K_TRUE, W, small_config, synthetic_lda
from support.killing import killing

K = K_TRUE

# The generic blocks below are this module's: the workers unpickle them by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def workers_config(**kw) -> LDAConfig:
    # 40 entries a block: blocks of 10 words, 4 blocks over W = 40.
    return small_config(**{"placement": "workers", "block_entries": 10 * K, "burn_in": 2,
                           "thin": 2, **kw})


def add_counts(counts: np.ndarray, results) -> np.ndarray:
    """The tasks' dense K x U counts added into K x W ``counts`` (the plain sum)."""
    for r in results:
        counts[:, r.words] += r.topic_word
    return counts


def dense_blocks(n_words: int, width: int, seed: int = 5):
    """Blocks of a fresh SCIR state and the dense state they cut."""
    sampler = get_sampler("scir")
    bounds = column_blocks.block_bounds(K, n_words, width * K)
    made = [vb.start_block(j, int(lo), int(hi), functools.partial(vb.init_block, seed, K,
                                                                   sampler))
            for j, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:]))]
    dense = np.concatenate([b.state.log_theta for b in made], axis=1)
    return sampler, bounds, made, dense


def gibbs_results(n_words: int, n_tasks: int, seed: int = 0) -> list[GibbsResult]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_tasks):
        words = np.sort(rng.choice(n_words, size=n_words // 2, replace=False)).astype(np.int64)
        counts = rng.integers(0, 50, size=(K, words.size)) * (rng.random((K, words.size)) < 0.4)
        out.append(GibbsResult(words, counts, 10, 0))
    return out


def test_block_bounds_depend_on_k_w_and_the_setting_only():
    assert column_blocks.block_bounds(4, 40, 40).tolist() == [0, 10, 20, 30, 40]
    assert column_blocks.block_bounds(4, 41, 40).tolist() == [0, 10, 20, 30, 40, 41]
    assert column_blocks.block_bounds(100, 5, 10).tolist() == [0, 1, 2, 3, 4, 5]  # one word at least


class Cells(NamedTuple):
    """A block of an array that is no model's: its columns from ``lo``."""

    lo: int
    values: np.ndarray
    task: Any = None


def cells(index: int, lo: int, hi: int, whole: np.ndarray) -> Cells:
    return Cells(lo, np.array(whole[:, lo:hi]))


def plus(block: Cells, *adds: int) -> Cells:
    return block._replace(values=block.values + sum(adds))


def row_sums(block: Cells) -> np.ndarray:
    return block.values.sum(axis=1)


def cells_cut(block: Cells, cols: np.ndarray, scale: int) -> np.ndarray:
    return block.values[:, cols - block.lo] * scale


def cells_outputs(block: Cells) -> dict[str, np.ndarray]:
    return {"v": block.values}


def test_blocked_state_holds_any_array(two_workers, tmp_path):
    """The engine's blocks know no model: an integer 2 x 10 array in blocks of 3
    columns, each input added to the blocks holding its columns only, the blocks'
    row sums gathered in one round with a timed task's value, columns cut across
    blocks and joined in order, and the blocks written into one Zarr array.
    Guards against an input routed to every block (mutant
    ``blocks-routed-to-every-block``: LDA's blocks would not notice, as they add
    only their own words' counts), pieces joined out of block order, or a block
    written at another's columns."""
    from dscir.engine.dask import DaskExecutor

    whole = np.arange(20, dtype=np.int64).reshape(2, 10)
    ex = DaskExecutor(two_workers, str(tmp_path), "generic")
    held = ex.blocked(2, 10, 6)
    assert held.bounds.tolist() == [0, 3, 6, 9, 10]
    held.start("cells", cells, whole)
    items = [ex.submit("one", int, 1), ex.submit("hundred", int, 100)]
    held.update("plus", plus, (), held.route(items, [np.array([0, 4]), np.array([9])]))
    want = whole.copy()
    want[:, 0:6] += 1
    want[:, 9:] += 100
    sums, extra = held.summarise("sums", row_sums, extra=[ex.submit("x", int, 7, timed=True)])
    assert extra == [7]
    np.testing.assert_array_equal(np.sum(sums, axis=0), want.sum(axis=1))
    (cut,) = ex.gather(held.cut("cut", cells_cut, [np.array([1, 5, 8, 9])], (2,)))
    np.testing.assert_array_equal(cut, want[:, [1, 5, 8, 9]] * 2)
    zarr.open_group(str(tmp_path / "out"), mode="w")
    held.write("write", str(tmp_path / "out"), {"v": "v"}, 2, cells_outputs)
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "out" / "v"))[:], want)


def test_blocked_step_is_the_dense_step_on_the_block_columns():
    sampler, bounds, made, dense = dense_blocks(40, 10)
    results = gibbs_results(40, 3)
    counts = add_counts(np.zeros((K, 40), np.int64), results)
    factor, h, m = 270 / 30 / 10, 0.4, 7
    timed = [(sparse_counts(r), None) for r in results]
    for b in made:
        lo, hi = b.lo, b.lo + 10
        got = blocks.stamped(b, vb.step_block, sampler, 0.5, factor, h, 3, m, None, *timed)
        assert got.task is not None and got.task.seconds >= 0
        want = sampler.step(sampler.State(dense[:, lo:hi]), 0.5, counts[:, lo:hi] * factor, h,
                            blocks_key(3, m, b.index))
        np.testing.assert_array_equal(got.state.log_theta, want.log_theta)
        np.testing.assert_array_equal(got.lse, column_blocks.row_lse(want.log_theta))


@pytest.mark.parametrize("name", ["sgrld", "gsgrhmc", "sgld", "sghmc"])
def test_a_step_given_the_whole_rows_totals_is_the_dense_step_on_its_columns(name):
    """The expanded-mean samplers read c_k. / theta_k.: given the whole rows'
    totals, a step on the first columns of the rows is the dense step's first
    columns (same stream); from the block's own sums it is not. Guards against a
    block stepping with its own partial totals, or theta's and the counts'
    totals swapped."""
    sampler = get_sampler(name)
    rng = np.random.default_rng(4)
    theta = rng.gamma(0.5, 1.0, size=(K, 40)) + 1e-3
    counts = rng.integers(0, 30, size=(K, 40)).astype(np.float64)
    state = sampler.init(theta)
    dense = sampler.step(state, 0.5, counts, 0.01, 11)
    part = type(state)(*(np.array(a[:, :10]) for a in state))
    totals = np.stack([theta.sum(axis=1), counts.sum(axis=1)])
    given = sampler.step(part, 0.5, counts[:, :10], 0.01, 11, totals)
    own = sampler.step(part, 0.5, counts[:, :10], 0.01, 11)
    for got, want, alone in zip(given, dense, own):
        np.testing.assert_allclose(got, want[:, :10], rtol=1e-12)
        assert not np.allclose(alone, want[:, :10], rtol=1e-6)


def test_row_totals_are_the_dense_rows_totals():
    """The ``row-totals`` task: exp of the blocks' combined normalisers and every
    result's counts, added exactly and scaled (guards against totals of one
    block's results only, or a missing scale)."""
    _, _, made, dense = dense_blocks(40, 10)
    results = gibbs_results(40, 3)
    counts = add_counts(np.zeros((K, 40), np.int64), results)
    norm = column_blocks.combine([b.lse for b in made])
    got = vb.row_totals(norm, 2.5, *[(sparse_counts(r), None) for r in results])
    np.testing.assert_allclose(got[0], np.exp(dense).sum(axis=1), rtol=1e-12)
    np.testing.assert_array_equal(got[1], counts.sum(axis=1) * 2.5)


def blocks_key(seed: int, m: int, index: int) -> int:
    from dscir.rng import domains
    from dscir.rng import derive

    return derive(seed, domains.SAMPLER, m, index)


def test_columns_from_blocks_are_the_dense_phi_columns():
    _, _, made, dense = dense_blocks(40, 10)
    norm = column_blocks.combine([b.lse for b in made])
    words = np.array([0, 3, 9, 10, 21, 22, 39], np.int64)
    bounds = np.array([b.lo for b in made] + [40])
    got = column_blocks.join_columns(*[vb.block_columns(made[b], part, norm, "float64")
                                for b, part in column_blocks.columns_by_block(words, bounds)])
    np.testing.assert_allclose(got, phi_columns(normalize_log(dense, axis=1), words),
                               rtol=1e-12, atol=0)



def test_mean_log_columns_from_blocks_are_the_dense_ones():
    """Held-out scoring's columns: log of the kept phi's mean, or the current log
    phi before any is kept, cut per block and joined (guards against a block's
    columns taken at the wrong offset or the mean not divided)."""
    _, _, made, dense = dense_blocks(40, 10)
    norm = column_blocks.combine([b.lse for b in made])
    words = np.array([1, 2, 12, 25, 26, 27, 38], np.int64)
    bounds = np.array([b.lo for b in made] + [40])
    kept = [vb.keep_block(vb.keep_block(b, norm), norm) for b in made]
    log_phi = normalize_log(dense, axis=1)
    for n_samples, source, want in ((0, made, log_phi), (2, kept, log_phi)):
        got = column_blocks.join_columns(*[
            vb.block_mean_log_columns(source[b], part, n_samples, norm)
            for b, part in column_blocks.columns_by_block(words, bounds)])
        np.testing.assert_allclose(got, want[:, words], rtol=1e-12, atol=1e-12)

def test_float32_columns_give_the_float64_counts():
    counts, _ = synthetic_lda(200, 60, seed=4)
    batch = counts.tocsr()
    words = np.unique(batch.indices).astype(np.int64)
    local = np.searchsorted(words, batch.indices).astype(np.int32)
    rng = np.random.default_rng(1)
    log_phi = normalize_log(np.log(rng.gamma(0.5, 1.0, size=(K, W))), axis=1)
    cols = phi_columns(log_phi, words)
    docs = np.arange(batch.shape[0], dtype=np.int64)
    run = functools.partial(gibbs_expectations, batch.indptr, batch.indices, batch.data, docs,
                            local_words=local, alpha=0.1, sweeps=40, seed=3, iteration=2)
    wide, _, _ = run(phi_cols=cols)
    narrow, _, _ = run(phi_cols=cols.astype(np.float32))
    assert wide.sum() == 20 * 200 * 60
    np.testing.assert_array_equal(narrow, wide)


def chain(client, store, n_iter=6, config=None):
    driver = lda_chain(client, store, config or workers_config())
    scores = [e.perplexity for e in run_chain(driver, n_iter, eval_every=3, progress=False)]
    return driver, scores


def same_chain(a: Chain, b: Chain) -> None:
    fa, sa = a.model.topics.dense()
    fb, sb = b.model.topics.dense()
    np.testing.assert_array_equal(fa["log_theta"], fb["log_theta"])
    np.testing.assert_array_equal(sa, sb)
    assert [r["n_tokens"] for r in a.history] == [r["n_tokens"] for r in b.history]


def test_one_and_two_workers_give_the_same_chain(synthetic_store, one_worker,
                                                 two_workers):
    store, _ = synthetic_store
    one, one_scores = chain(one_worker, store)
    two, two_scores = chain(two_workers, store)
    assert one.model.placement == "workers" and one.model.topics.blocks.n_blocks == 4
    same_chain(one, two)
    assert one_scores == two_scores
    # Scoring from the blocks' columns is scoring the dense mean phi.
    cfg, model = two.config, two.model
    assert model.topics.n_samples == 2 and model.score() == perplexity(
        two.executor, model.data.heldout, model.mean_phi(), cfg.alpha, cfg.eval_sweeps,
        cfg.seed, cfg.completion_every)
    # The same blocks in this process: the same chain, scores and kept mean.
    driver, driver_scores = chain(two_workers, store, 6, workers_config(placement="driver"))
    assert driver.model.placement == "driver" and driver.model.topics.blocks.in_process
    same_chain(driver, two)
    assert driver_scores == two_scores
    np.testing.assert_array_equal(driver.model.mean_phi(), model.mean_phi())


def test_killed_workers_leave_the_blocked_chain_unchanged(
        synthetic_store, two_workers, tmp_path):
    store, _ = synthetic_store
    undisturbed, scores = chain(two_workers, store)
    disturbed, disturbed_scores = killing(two_workers, tmp_path,
                                          {"gibbs": 2, "block-step": 4},
                                          lambda: chain(two_workers, store))
    same_chain(disturbed, undisturbed)
    assert disturbed_scores == scores


def test_checkpoint_written_by_the_blocks_resumes_the_uninterrupted_chain(
        synthetic_store, one_worker, two_workers, tmp_path):
    """The blocks write the checkpoint's K x W arrays (the driver holds none of
    them), with a worker killed mid-write; the blocks restart from the
    checkpoint (bounding their lineage), and a worker killed two iterations
    later loses blocks that Dask rebuilds from those reads; the chain goes on
    unchanged, and a resume that reads each block's columns on its worker
    continues it bit for bit. Guards against held arrays left unwritten or
    written at the wrong columns, and a restart that does not read them."""
    store, _ = synthetic_store
    # The uninterrupted chain runs on another cluster, out of the kills' way (the
    # chain is the same on any number of workers).
    whole, _ = chain(one_worker, store, 8)
    cut = lda_chain(two_workers, store, workers_config())
    run_chain(cut, 4, progress=False)
    ckpt = cut.checkpoint()
    assert ckpt.arrays == {} and ckpt.held.names == ["sampler/log_theta", "phi_sum"]

    def go_on():
        write_checkpoint(tmp_path / "run", ckpt)
        assert all("-block-load-" in f.key[0] for f in cut.model.topics.blocks.futures)
        run_chain(cut, 4, progress=False)

    # The gibbs kill loses blocks whose lineage starts at the checkpoint's reads.
    killing(two_workers, tmp_path, {"block-write": None, "gibbs": 6}, go_on)
    same_chain(cut, whole)
    back = read_checkpoint(tmp_path / "run")
    assert isinstance(back.arrays["phi_sum"], HeldArray) and back.iteration == 4
    resumed = lda_chain(two_workers, store, workers_config())
    resumed.restore(back)
    run_chain(resumed, 4, progress=False)
    same_chain(resumed, whole)
    np.testing.assert_array_equal(resumed.model.mean_phi(), whole.model.mean_phi())


class FailingHeld:
    """Held arrays whose holders fail half-way through writing them."""

    names = ["phi_sum"]

    def write(self, group: str) -> None:
        zarr.open_group(group, mode="r+").create_array("state/phi_sum", shape=(2, 2),
                                                       dtype="float64")
        raise OSError("a block's worker lost its disk")

    def restart(self, arrays) -> None:
        raise AssertionError("restarted from a checkpoint that is not in place")


def test_a_failed_held_write_leaves_the_previous_checkpoint():
    """Held arrays land with the rest of the checkpoint, as a set: a failure while
    the holders write leaves no new checkpoint and the previous one intact (guards
    against writing them after the rename)."""
    import tempfile

    def ckpt(iteration, held=None):
        return Checkpoint(model="lda", config={}, store="/s", iteration=iteration,
                          position=(0, 0), n_samples=0, sample_rows={},
                          arrays={"counts": np.full((2, 2), float(iteration))}, values={},
                          history={}, evaluations={}, held=held)

    with tempfile.TemporaryDirectory() as run:
        write_checkpoint(run, ckpt(2))
        with pytest.raises(OSError, match="lost its disk"):
            write_checkpoint(run, ckpt(4, FailingHeld()))
        back = read_checkpoint(run)
        assert back.iteration == 2
        np.testing.assert_array_equal(back.arrays["counts"], np.full((2, 2), 2.0))


def test_gsgrhmc_on_the_workers_is_the_same_chain_on_one_and_two_workers(
        synthetic_store, one_worker, two_workers):
    """A Hamiltonian sampler's position and momentum in blocks, with the rows'
    totals from the ``row-totals`` task: the same chain on any number of
    workers, and it learns the topics (perplexity falls)."""
    from distributed import get_task_stream

    store, _ = synthetic_store
    config = workers_config(sampler="gsgrhmc", step_size=0.02, tau=None, kappa=0.0,
                            alpha=0.01, beta=0.1)
    one, one_scores = chain(one_worker, store, 6, config)
    with get_task_stream(two_workers) as stream:
        two, two_scores = chain(two_workers, store, 6, config)
    # The blocks step with the whole rows' totals, one task per iteration.
    assert sum("-row-totals-" in str(t["key"]) for t in stream.data) == 6
    assert one.model.topics.blocks.n_blocks == 4 and one_scores == two_scores
    fa, sa = one.model.topics.dense()
    fb, sb = two.model.topics.dense()
    for k in ("theta", "r"):
        np.testing.assert_array_equal(fa[k], fb[k])
    np.testing.assert_array_equal(sa, sb)
    assert two_scores[-1] < two_scores[0]


def test_placements_that_cannot_run_give_one_clear_error():
    with pytest.raises(DscirError, match="warm starts"):
        small_config(placement="workers", warm_start=True)
    with pytest.raises(DscirError, match="placement must be one of"):
        small_config(placement="cluster")


def test_auto_placement_resolves_on_the_corpus_and_picks_the_topics(synthetic_store,
                                                                   monkeypatch):
    """``chain_config(store)`` resolves "auto" by K x W (so the run records what
    ran) and the one ``LDAModel`` holds the topics of that placement, resolving
    "auto" the same way when it is given a configuration that left it. Guards
    against "auto" left unresolved (a large model silently on the driver) or the
    topics not following the placement."""
    from dscir.api import LDA
    from dscir.models.base import Data
    from dscir.models.lda import LDAModel, placement
    from dscir.models.lda.topics import Topics

    store, _ = synthetic_store
    data = Data.open(store)
    est = LDA(n_topics=K, policy="reference")
    assert est.chain_config(store).placement == "driver"
    assert est._model_type(est.chain_config(store)) is LDAModel
    topics = LDAModel(est.chain_config(), data, blocks.Immediate()).topics
    assert isinstance(topics, Topics) and topics.blocks.in_process
    monkeypatch.setattr(placement, "WORKERS_FROM_ENTRIES", K * W)
    config = est.chain_config(store)
    assert config.placement == "workers" and est._model_type(config) is LDAModel
    for given in (config, dataclasses.replace(config, placement="auto")):
        with pytest.raises(DscirError, match="placement='workers' needs a Dask cluster"):
            LDAModel(given, data, None)
    assert LDAModel(small_config(placement="driver"), data,
                    blocks.Immediate()).placement == "driver"


def test_both_topic_states_have_the_whole_interface():
    """``LDAModel`` calls only ``TopicState`` members, so each SCIR step's topics
    must have every one (guards against a member added to one step only)."""
    from dscir.models.lda.model import TOPIC_STATES
    from dscir.models.lda.topics import TopicState

    members = [n for n in vars(TopicState) if not n.startswith("_")]
    members += list(TopicState.__annotations__)
    assert {"gibbs", "step", "keep", "held", "restore", "write_run_arrays"} <= set(members)
    assert set(TOPIC_STATES) == {"dense", "lazy"}
    for cls in TOPIC_STATES.values():
        missing = [n for n in members if n not in ("n_samples", "kept_rows")
                   and not hasattr(cls, n)]
        assert not missing, (cls.__name__, missing)


def test_the_blocks_write_the_runs_arrays(synthetic_store, two_workers, tmp_path):
    """The run's K x W arrays, written block by block from the workers, are the
    chain's (checksummed, readable by ``Run``); guards against a block written at
    the wrong columns or a mean divided by the wrong count."""
    from dscir.api import LDA
    from dscir.runs import Run
    from dscir.runs.store import verify

    store, _ = synthetic_store
    est = LDA(n_topics=K, batch_size=30, sweeps=10, n_iter=5, burn_in=1, thin=2, seed=3,
              placement="workers", block_entries=10 * K, progress=False)
    est.fit(store, client=two_workers, out=tmp_path / "run")
    run = Run.open(tmp_path / "run")
    assert run.config["placement"] == "workers" and run.n_samples == 2
    fields, phi_sum = est._chain.model.topics.dense()
    np.testing.assert_array_equal(run.phi_mean, phi_sum / 2)
    np.testing.assert_array_equal(run.phi_mean, est.topic_word_)
    np.testing.assert_array_equal(run.state["log_theta"], fields["log_theta"])
    sound, problems = verify(tmp_path / "run")
    assert not problems and any("phi_mean" in a for a in sound)


def test_sparse_counts_are_the_nonzero_counts_by_word():
    """What a Gibbs task sends the blocks: every nonzero count, exactly, ordered
    by word (guards against entries dropped or out of order, which the blocks'
    range lookups would then miss)."""
    (result,) = gibbs_results(40, 1, seed=3)
    sparse = sparse_counts(result)
    assert np.all(np.diff(sparse.word_ids) >= 0)
    dense = np.zeros((K, 40), np.int64)
    dense[sparse.topics, sparse.word_ids] = sparse.values
    want = np.zeros((K, 40), np.int64)
    want[:, result.words] = result.topic_word
    np.testing.assert_array_equal(dense, want)
    assert sparse.values.size == np.count_nonzero(result.topic_word)
