"""Checkpoint and resume: a chain interrupted and resumed is bit for bit the uninterrupted one."""

from __future__ import annotations

import functools

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from dscir.api import LDA
from dscir.engine.chain import Chain, run_chain
from dscir.runs import Run, checkpoint, read_checkpoint, write_checkpoint
from dscir.errors import DscirError
from support.chains import lda_chain
from support.lda import K_TRUE, small_config
from support.runs import Interrupt, assert_same_run, read_checkpoint_dir


@pytest.fixture
def client(two_workers):
    return two_workers


def lda(**kw) -> LDA:
    base = dict(n_topics=K_TRUE, batch_size=30, sweeps=10, n_iter=14, burn_in=4, thin=2,
                eval_every=5, eval_sweeps=10, seed=7, progress=False)
    base.update(kw)
    return LDA(**base)


def test_fit_interrupted_and_resumed_equals_uninterrupted(
        synthetic_store, client, tmp_path, monkeypatch):
    store, _ = synthetic_store
    whole = lda().fit(store, client=client, out=tmp_path / "whole")

    step = Chain.step

    def step_until_9(self, prefetch=True):
        if self.iteration == 9:
            raise Interrupt  # the driver dies after iteration 9; the last checkpoint is at 8
        return step(self, prefetch)

    monkeypatch.setattr(Chain, "step", step_until_9)
    with pytest.raises(Interrupt):
        lda().fit(store, client=client, out=tmp_path / "cut", checkpoint_every=4)
    monkeypatch.setattr(Chain, "step", step)
    assert read_checkpoint(tmp_path / "cut").iteration == 8
    with pytest.raises(DscirError, match="unfinished run"):
        Run.open(tmp_path / "cut")

    resumed = lda().fit(store, client=client, resume=tmp_path / "cut")
    assert np.array_equal(resumed.topic_word_, whole.topic_word_)
    assert [e.iteration for e in resumed.evaluations_] == [5, 10, 14]
    assert [e.perplexity for e in resumed.evaluations_] == \
        [e.perplexity for e in whole.evaluations_]
    assert_same_run(Run.open(tmp_path / "whole"), Run.open(tmp_path / "cut"))

    # A finished run extends from its final checkpoint like a longer uninterrupted
    # one (which has no score at 14, where the shorter run ended).
    longer = lda(n_iter=18).fit(store, client=client, out=tmp_path / "longer")
    extended = lda(n_iter=18).fit(store, client=client, resume=tmp_path / "cut")
    assert_same_run(Run.open(tmp_path / "longer"), Run.open(tmp_path / "cut"), evaluations=False)
    assert np.array_equal(extended.topic_word_, longer.topic_word_)
    scores = {e.iteration: e.perplexity for e in extended.evaluations_}
    assert list(scores) == [5, 10, 14, 15, 18]
    assert [scores[e.iteration] for e in longer.evaluations_] == \
        [e.perplexity for e in longer.evaluations_]


def test_resume_with_other_settings_is_refused(synthetic_store, client, tmp_path):
    store, _ = synthetic_store
    lda(n_iter=4).fit(store, client=client, out=tmp_path / "run", checkpoint_every=2)
    with pytest.raises(DscirError, match=r"checkpointed with sweeps=10, .*this fit has sweeps=12"):
        lda(n_iter=6, sweeps=12).fit(store, client=client, resume=tmp_path / "run")
    with pytest.raises(DscirError, match="past n_iter"):
        lda(n_iter=2).fit(store, client=client, resume=tmp_path / "run")
    assert Run.open(tmp_path / "run").iteration == 4  # still the finished run
    lda(n_iter=4).fit(store, client=client, out=tmp_path / "plain", checkpoint_every=0)
    with pytest.raises(DscirError, match="no checkpoints to resume"):
        lda(n_iter=6).fit(store, client=client, resume=tmp_path / "plain")
    with pytest.raises(DscirError, match=r"^checkpoint_every needs out,"):
        lda().fit(store, client=client, checkpoint_every=2)
    with pytest.raises(DscirError, match=r"^checkpoint_interval needs out,"):
        lda().fit(store, client=client, checkpoint_interval=60)
    with pytest.raises(DscirError, match=r"checkpoint_every=0 cannot go with resume"):
        lda(n_iter=6).fit(store, client=client, resume=tmp_path / "run", checkpoint_every=0)


def test_a_fit_with_out_checkpoints_by_default_and_not_with_checkpoint_every_0(
        synthetic_store, client, tmp_path):
    """With ``out`` alone a run is checkpointed (resumable, every 300 s and at the
    end); ``checkpoint_every=0`` turns checkpoints off. Guards against the default
    left at no checkpoints (Ctrl-C then loses the whole fit)."""
    from dscir.runs.store import resumable

    store, _ = synthetic_store
    lda(n_iter=4).fit(store, client=client, out=tmp_path / "default")
    assert resumable(tmp_path / "default")["checkpoint_interval"] == 300.0
    assert read_checkpoint(tmp_path / "default").iteration == 4
    lda(n_iter=4).fit(store, client=client, out=tmp_path / "none", checkpoint_every=0)
    assert not (tmp_path / "none" / "checkpoints").exists()


@pytest.fixture
def python_sigint():
    """SIGINT handled as a fresh Python process handles it (an import by another test,
    dask_jobqueue's runner, replaces the handler with its own for the whole process)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_mid_iteration_checkpoints_at_its_end_then_raises(
        synthetic_store, client, tmp_path, monkeypatch, python_sigint):
    """SIGINT arriving during an iteration of a fit with ``out`` (default options) is
    held to the end of that iteration, which is checkpointed, then raised; resumed,
    the run is the uninterrupted one. Guards against dropping the Ctrl-C checkpoint
    (the default interval is minutes: the run would have none to resume from)."""
    store, _ = synthetic_store
    lda().fit(store, client=client, out=tmp_path / "whole")
    step = Chain.step

    def step_signalled_in_7(self, prefetch=True):
        if self.iteration == 6:
            os.kill(os.getpid(), signal.SIGINT)  # handled at once: inside iteration 7
        return step(self, prefetch)

    monkeypatch.setattr(Chain, "step", step_signalled_in_7)
    with pytest.raises(KeyboardInterrupt):
        lda().fit(store, client=client, out=tmp_path / "cut")
    monkeypatch.setattr(Chain, "step", step)
    assert read_checkpoint(tmp_path / "cut").iteration == 7
    lda().fit(store, client=client, resume=tmp_path / "cut")
    assert_same_run(Run.open(tmp_path / "whole"), Run.open(tmp_path / "cut"))


def test_checkpoints_by_wall_time_leave_the_chain_unchanged(
        synthetic_store, client, tmp_path, monkeypatch):
    """A warm-started chain (local state flushed at each checkpoint) checkpointed by
    time at every iteration (a tiny interval), cut after iteration 9 and resumed, is
    bit for bit the chain never checkpointed: where the clock puts a checkpoint
    does not matter. Guards against the interval ignored (no checkpoint at 9) and
    against a checkpoint that changes the chain."""
    from support.digests import run_digest

    store, _ = synthetic_store
    warm = functools.partial(lda, warm_start=True, control_variates=True, burn_sweeps=1,
                             sweeps=4)
    warm().fit(store, client=client, out=tmp_path / "whole", checkpoint_every=0)
    step = Chain.step

    def step_until_9(self, prefetch=True):
        if self.iteration == 9:
            raise Interrupt
        return step(self, prefetch)

    monkeypatch.setattr(Chain, "step", step_until_9)
    with pytest.raises(Interrupt):
        warm().fit(store, client=client, out=tmp_path / "cut", checkpoint_interval=1e-9)
    monkeypatch.setattr(Chain, "step", step)
    assert read_checkpoint(tmp_path / "cut").iteration == 9
    warm().fit(store, client=client, resume=tmp_path / "cut")
    assert run_digest(tmp_path / "cut") == run_digest(tmp_path / "whole")


def test_a_checkpoint_older_than_a_setting_resumes_at_the_value_it_had(
        synthetic_store, client, tmp_path):
    """A checkpoint written before warm_start, burn_sweeps, control_variates and
    kernel existed (its config lacks them) resumes to the same chain as the same
    checkpoint with them; guards against refusing such runs ("checkpointed with
    warm_start=None") and against reading a missing kernel as anything but the
    dense kernel those chains ran (refused when this fit asks for the sparse one)."""
    import shutil

    import zarr

    from dscir.models.lda.config import LDAConfig
    from support.digests import run_digest

    store, _ = synthetic_store
    new, old = tmp_path / "new", tmp_path / "old"
    # Chains before the policy existed ran the reference settings.
    old_lda = functools.partial(lda, policy="reference")
    old_lda(n_iter=4).fit(store, client=client, out=new, checkpoint_every=2)
    shutil.copytree(new, old)
    latest = sorted(p for p in (old / "checkpoints").iterdir() if p.name.isdigit())[-1]
    g = zarr.open_group(str(latest), mode="r+")
    meta = dict(g.attrs[checkpoint.ATTR])
    meta["config"] = {k: v for k, v in meta["config"].items() if k not in LDAConfig.PREDATED}
    g.attrs[checkpoint.ATTR] = meta
    with pytest.raises(DscirError, match=r"checkpointed with kernel='dense'.*kernel='sparse'"):
        old_lda(n_iter=6, kernel="sparse").fit(store, client=client, resume=old)
    for run in (new, old):
        old_lda(n_iter=6).fit(store, client=client, resume=run)
    assert run_digest(old) == run_digest(new)


@pytest.mark.parametrize("sampler, beta, step", [("gsgrhmc", 1e-4, 0.02), ("sgrld", 1e-4, 0.01)])
def test_checkpoint_restores_every_sampler_state(synthetic_store, client, tmp_path,
                                                  sampler, beta, step):
    store, _ = synthetic_store
    cfg = small_config(sampler=sampler, beta=beta, step_size=step, tau=None, burn_in=2)
    whole = lda_chain(client, store, cfg)
    run_chain(whole, 6, progress=False)
    first = lda_chain(client, store, cfg)
    run_chain(first, 3, progress=False)
    write_checkpoint(tmp_path, first.checkpoint())
    second = lda_chain(client, store, cfg)
    second.restore(read_checkpoint_dir(tmp_path))
    run_chain(second, 3, progress=False)
    for name, value in whole.model.topics.state_._asdict().items():  # theta, and r for gSGRHMC
        assert np.array_equal(getattr(second.model.topics.state_, name), value), name
    assert np.array_equal(second.model.topics.dense()[1], whole.model.topics.dense()[1])
    assert second.n_samples == whole.n_samples


def test_interrupted_checkpoint_write_keeps_the_previous_one(
        synthetic_store, client, tmp_path, monkeypatch):
    store, _ = synthetic_store
    driver = lda_chain(client, store, small_config(burn_in=1, thin=1))
    run_chain(driver, 2, progress=False)
    saved = driver.checkpoint()
    write_checkpoint(tmp_path, saved)
    run_chain(driver, 2, progress=False)

    put, calls = checkpoint.put, []

    def failing_put(group, name, value):
        calls.append(name)
        if len(calls) == 3:  # the state and phi_sum are written, the history is not
            raise OSError("disk full")
        put(group, name, value)

    monkeypatch.setattr(checkpoint, "put", failing_put)
    with pytest.raises(OSError, match="disk full"):
        write_checkpoint(tmp_path, driver.checkpoint())
    monkeypatch.setattr(checkpoint, "put", put)
    assert any(e.startswith(".") for e in os.listdir(tmp_path / "checkpoints"))

    back = read_checkpoint_dir(tmp_path)
    assert back.iteration == 2 and back.position == saved.position
    assert back.n_samples == saved.n_samples == 1
    assert sorted(back.arrays) == sorted(saved.arrays) == ["phi_sum", "sampler/log_theta"]
    for name, value in saved.arrays.items():
        assert np.array_equal(back.arrays[name], value), name
    for f, v in saved.history.items():
        assert np.array_equal(back.history[f], v), f

    write_checkpoint(tmp_path, driver.checkpoint())  # the next write tidies up
    assert sorted(os.listdir(tmp_path / "checkpoints")) == [f"{4:012d}", "zarr.json"]
    assert read_checkpoint(tmp_path).iteration == 4


def test_a_checkpoint_write_interrupted_by_ctrl_c_leaves_no_partial_entry(
        synthetic_store, client, tmp_path, monkeypatch):
    """Ctrl-C during a checkpoint's write (``dscir.engine.interrupts`` raises it in
    dscir's code) removes the partial entry, so the interrupted run verifies.
    Guards against a leftover that ``dscir verify`` reports as damage."""
    store, _ = synthetic_store
    driver = lda_chain(client, store, small_config(burn_in=1, thin=1))
    run_chain(driver, 2, progress=False)
    write_checkpoint(tmp_path, driver.checkpoint())
    run_chain(driver, 2, progress=False)
    put, calls = checkpoint.put, []

    def interrupted(group, name, value):
        calls.append(name)
        if len(calls) == 3:  # some arrays are written, not all
            raise KeyboardInterrupt
        put(group, name, value)

    monkeypatch.setattr(checkpoint, "put", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_checkpoint(tmp_path, driver.checkpoint())
    assert sorted(os.listdir(tmp_path / "checkpoints")) == [f"{2:012d}", "zarr.json"]


def test_cli_driver_killed_and_resumed_equals_uninterrupted(
        tcp_cluster, synthetic_store, tmp_path):
    store, _ = synthetic_store
    common = [sys.executable, "-m", "dscir", "fit", "lda", store, "--topics", "4",
              "--iterations", "40", "--batch-size", "30", "--sweeps", "10", "--eval-sweeps",
              "10", "--eval-every", "10", "--thin", "2", "--seed", "11", "--no-progress",
              "--address", tcp_cluster]
    run = tmp_path / "run"
    driver = subprocess.Popen([*common, "--checkpoint-every", "3", "--out", str(run)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    checkpoints = run / "checkpoints"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and driver.poll() is None:
        if checkpoints.exists() and any(e.isdigit() for e in os.listdir(checkpoints)):
            break
        time.sleep(0.02)
    assert driver.poll() is None, driver.stderr.read()  # still running: killed mid-run
    driver.send_signal(signal.SIGKILL)
    assert driver.wait(timeout=60) == -signal.SIGKILL
    driver.stderr.close()
    at = read_checkpoint(run).iteration
    assert 3 <= at < 40

    resumed = subprocess.run([*common, "--resume", str(run)], capture_output=True, text=True,
                             timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    whole = subprocess.run([*common, "--out", str(tmp_path / "whole")], capture_output=True,
                           text=True, timeout=600)
    assert whole.returncode == 0, whole.stderr
    assert resumed.stdout == whole.stdout  # the same perplexity and topics printed
    assert_same_run(Run.open(tmp_path / "whole"), Run.open(run))

    other = subprocess.run([*common, "--seed", "12", "--resume", str(run)],
                           capture_output=True, text=True, timeout=120)
    assert other.returncode == 2 and "seed=11" in other.stderr and "seed=12" in other.stderr
