"""Warm-started local chains: the kernel, and the chain guarantees with it.

The kernel: a warm visit is a Gibbs chain for p(z | w, phi) from the given
start (one sweep from an exact draw stays exact), a cold visit through it is
the cold kernel bit for bit, and with many sweeps warm and cold starts give
the exact expected counts. The chain (its state kept by
``dscir.engine.local_state``, tested in tests/engine/test_local_state.py): the
same with 1 or 2 workers or in-process, after a worker is killed once its
task has computed, and after an interrupted run resumes from its checkpoint.
"""

from __future__ import annotations

import os
import sys
import time

import cloudpickle
import numpy as np
import pytest
from distributed.diagnostics.plugin import WorkerPlugin
from scipy import stats

from dscir.api import LDA

from dscir.engine.chain import Chain, run_chain
from dscir.engine.inprocess import InProcessExecutor
from dscir.engine import local_state
from dscir.errors import DscirError
from dscir.models.lda import LDAModel, gibbs_expectations
from dscir.models.lda.warm import gibbs_from
from dscir.runs import Run, read_checkpoint, store as runstore
from support.chains import lda_chain
from support.lda import K_TRUE, small_config
from support.runs import Interrupt, assert_same_run
from support.killing import Killer
from support.gibbs import PHI, ALPHA, _copies, exact_assignment_posterior, exact_expected_counts

# Worker processes cannot import this test module: send the plugin by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

WARM = dict(warm_start=True, sweeps=6, burn_sweeps=2, control_variates=True)


def test_a_cold_visit_is_the_cold_kernel_bit_for_bit():
    indptr, indices, data, local = _copies(30)
    docs = np.arange(30) * 7
    n_tok = int(data.sum())
    for sweeps in (2, 9):
        want = gibbs_expectations(indptr, indices, data, docs, PHI, local, ALPHA, sweeps, 4, 3)
        got = gibbs_from(indptr, indices, data, docs, PHI, local, np.zeros(n_tok, np.int32),
                         np.zeros(30, bool), ALPHA, sweeps, sweeps // 2, 4, 3)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
        assert got[2] == want[2]


def _pooled_chi2(observed, p, minimum=5.0):
    """Chi-square p-value of counts against probabilities, bins expecting < minimum pooled."""
    expected = p * observed.sum()
    small = expected < minimum
    obs = np.append(observed[~small], observed[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    return stats.chisquare(obs, exp).pvalue


def test_one_sweep_from_an_exact_draw_stays_exact():
    """p(z | w, phi) is invariant under a warm visit: z0 drawn from it exactly,
    one sweep (no burn-in) leaves the law of z unchanged (chi-square over all
    K^N assignments, 6,000 documents, fixed seeds)."""
    zs, _, p = exact_assignment_posterior(PHI, ALPHA)
    n = 6000
    rng = np.random.default_rng(2)
    z0 = zs[rng.choice(p.size, size=n, p=p)].astype(np.int32)
    indptr, indices, data, local = _copies(n)
    *_, z1 = gibbs_from(indptr, indices, data, np.arange(n), PHI, local, z0.ravel(),
                        np.ones(n, bool), ALPHA, 1, 0, 11, 5)
    index = {tuple(z): i for i, z in enumerate(zs)}
    observed = np.bincount([index[tuple(z)] for z in z1.reshape(n, -1)], minlength=p.size)
    assert _pooled_chi2(observed, p) > 1e-3
    # The sweep moved the chain (it is not the identity map on z).
    assert np.mean(np.any(z1.reshape(n, -1) != z0, axis=1)) > 0.3


@pytest.mark.parametrize("warm", [False, True])
def test_warm_and_cold_agree_with_the_exact_counts_when_sweeps_are_many(warm):
    """Both start-ups, given 60 sweeps (30 kept), estimate E[n_kw | w, phi]; the warm
    start is the worst one (every token in topic 0)."""
    exact = exact_expected_counts(PHI, ALPHA)
    indptr, indices, data, local = _copies(100)
    estimates = []
    for b in range(20):
        docs = np.arange(100) + 100 * b
        z = np.zeros(int(data.sum()), np.int32)
        tw, _, kept, _ = gibbs_from(indptr, indices, data, docs, PHI, local, z,
                                    np.full(100, warm), ALPHA, 60, 30, 8, 1)
        estimates.append(tw / (100 * kept))
    estimates = np.array(estimates)
    se = estimates.std(axis=0, ddof=1) / np.sqrt(len(estimates))
    assert np.all(np.abs(estimates.mean(axis=0) - exact) <= 4 * se + 1e-3)


def test_invalid_warm_arguments_raise():
    indptr, indices, data, local = _copies(2)
    z = np.zeros(int(data.sum()), np.int32)
    args = (indptr, indices, data, np.arange(2), PHI, local)
    with pytest.raises(DscirError, match="burn=4 must be smaller"):
        gibbs_from(*args, z, np.ones(2, bool), ALPHA, 4, 4, 0, 0)
    with pytest.raises(DscirError, match="topics 0..2"):
        gibbs_from(*args, z + 3, np.ones(2, bool), ALPHA, 4, 1, 0, 0)
    with pytest.raises(DscirError, match="z must hold"):
        gibbs_from(*args, z[1:], np.ones(2, bool), ALPHA, 4, 1, 0, 0)


# -- the chain ---------------------------------------------------------------------


def _state(chain):
    m = chain.model
    return (m.topics.state_.log_theta, m.mean_phi(), m.topics.stored,
            chain.executor.local_values(chain.local))


def _assert_same(a, b):
    for x, y in zip(_state(a)[:3], _state(b)[:3]):
        assert np.array_equal(x, y)
    for x, y in zip(_state(a)[3], _state(b)[3]):
        assert (x is None and y is None) or np.array_equal(x, y)


def _revisited(chain) -> bool:
    """Whether some document was visited at least twice (read warm): the stored
    sum counts every visited token once, fewer than the tokens visited."""
    return chain.history and sum(r["n_tokens"] for r in chain.history) > \
        chain.model.topics.stored.sum()


def test_warm_chain_is_the_same_on_one_or_two_workers_or_in_process(
        synthetic_store, one_worker, two_workers):
    store, _ = synthetic_store
    chains = [lda_chain(one_worker, store, small_config(**WARM)),
              lda_chain(two_workers, store, small_config(**WARM)),
              Chain(LDAModel, small_config(**WARM), store, InProcessExecutor(store, "lda"))]
    for c in chains:
        run_chain(c, 12, progress=False)  # more than one epoch: documents revisited
    assert _revisited(chains[0])
    _assert_same(chains[0], chains[1])
    _assert_same(chains[0], chains[2])


class StallAfterTask(WorkerPlugin):
    """The first worker to finish a task whose key names ``part`` at ``iteration``
    (its local state already written) writes its pid to ``flag`` and stalls
    before it can report the result, until killed: the task then runs again."""

    def __init__(self, flag: str, part: str, iteration: int):
        self.flag, self.part, self.iteration = flag, part, iteration

    def transition(self, key, start, finish, **kwargs):
        if (start, finish) != ("executing", "memory") or not isinstance(key, tuple):
            return
        if self.part not in key[0] or key[1] != self.iteration:
            return
        try:
            fd = os.open(self.flag, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        time.sleep(120)


def test_a_worker_killed_after_its_task_wrote_leaves_the_warm_chain_unchanged(
        synthetic_store, two_workers, tmp_path):
    """The retried Gibbs task of iteration 5 (documents revisited) reads the
    state its killed first attempt did, not what that attempt wrote."""
    store, _ = synthetic_store
    config = small_config(**WARM, batch_size=60)

    def chain():
        c = lda_chain(two_workers, store, config)
        run_chain(c, 8, progress=False)
        return c

    two_workers.wait_for_workers(2, timeout=120)
    undisturbed = chain()
    flag = tmp_path / "flag"
    two_workers.register_plugin(StallAfterTask(str(flag), "gibbs", 5), name="stall-after")
    killer = Killer(flag)
    killer.start()
    try:
        disturbed = chain()
    finally:
        killer.stop.set()
        two_workers.unregister_worker_plugin("stall-after")
    assert killer.killed is not None
    two_workers.wait_for_workers(2, timeout=120)
    assert _revisited(disturbed)
    _assert_same(disturbed, undisturbed)


def test_a_resumed_warm_run_is_the_uninterrupted_one(
        synthetic_store, two_workers, tmp_path, monkeypatch):
    """Interrupted at iteration 19, two epochs after its checkpoint at 10, the
    states flushed at every iteration (so the abandoned iterations rewrote
    every shard's chunks several times), resumed from it."""
    store, _ = synthetic_store
    monkeypatch.setattr(local_state, "LINEAGE_BYTES", 0)

    def lda():
        return LDA(n_topics=K_TRUE, batch_size=60, sweeps=6, burn_sweeps=2, warm_start=True,
                   control_variates=True, n_iter=22, burn_in=4, thin=2, eval_every=0,
                   seed=7, progress=False)

    whole = lda().fit(store, client=two_workers, out=tmp_path / "whole")
    step = Chain.step

    def step_until_19(self, prefetch=True):
        if self.iteration == 19:
            raise Interrupt
        return step(self, prefetch)

    monkeypatch.setattr(Chain, "step", step_until_19)
    with pytest.raises(Interrupt):
        lda().fit(store, client=two_workers, out=tmp_path / "cut", checkpoint_every=10)
    monkeypatch.setattr(Chain, "step", step)
    assert read_checkpoint(tmp_path / "cut").iteration == 10
    resumed = lda().fit(store, client=two_workers, resume=tmp_path / "cut")
    assert np.array_equal(resumed.topic_word_, whole.topic_word_)
    assert_same_run(Run.open(tmp_path / "whole"), Run.open(tmp_path / "cut"),
                    evaluations=False)
    assert np.array_equal(resumed._chain.model.topics.stored, whole._chain.model.topics.stored)
    ok, problems = runstore.verify(tmp_path / "cut")  # local/z: chunks written on use
    assert "local/z" in ok and not problems
