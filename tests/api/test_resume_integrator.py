"""A resumed gSGRHMC chain keeps the integrator its run recorded (dscir.api.lda_params.
resumed_options): bit for bit the uninterrupted chain, whatever dscir's default or the
fit's unset option; a conflicting explicit integrator, or a run that predates the
record, is one clear error."""

from __future__ import annotations

import numpy as np
import pytest
import zarr

from dscir.api import LDA
from dscir.engine.chain import Chain
from dscir.errors import DscirError
from dscir.runs import Run, checkpoint, read_checkpoint
from dscir.samplers.base import SAMPLERS
from support.lda import K_TRUE
from support.runs import Interrupt, assert_same_run


def lda(**kw) -> LDA:
    base = dict(n_topics=K_TRUE, sampler="gsgrhmc", batch_size=30, sweeps=5, n_iter=6,
                burn_in=2, thin=2, eval_every=3, eval_sweeps=5, seed=11, progress=False,
                policy="reference")
    return LDA(**{**base, **kw})


def cut_at_4(store, out, monkeypatch, **kw) -> None:
    """A run of ``lda(**kw)`` whose driver dies after iteration 5 (checkpoint at 4)."""
    step = Chain.step

    def step_until_5(self, prefetch=True):
        if self.iteration == 5:
            raise Interrupt
        return step(self, prefetch)

    monkeypatch.setattr(Chain, "step", step_until_5)
    with pytest.raises(Interrupt):
        lda(**kw).fit(store, out=out, checkpoint_every=4)
    monkeypatch.setattr(Chain, "step", step)
    assert read_checkpoint(out).iteration == 4


def test_a_resume_continues_with_the_recorded_integrator(synthetic_store, tmp_path, monkeypatch):
    """Written with the non-default "euler" and resumed without the option: the
    uninterrupted Euler chain (guards against continuing with the default); an
    explicit "splitting" is refused naming both."""
    store, _ = synthetic_store
    euler = {"sampler_options": {"integrator": "euler"}}
    whole = lda(**euler).fit(store, out=tmp_path / "whole")
    assert whole.config_.sampler_options == {"integrator": "euler"}
    cut_at_4(store, tmp_path / "cut", monkeypatch, **euler)
    with pytest.raises(DscirError, match=r"ran gsgrhmc with integrator='euler', this fit asks "
                                         r"for integrator='splitting'"):
        lda(sampler_options={"integrator": "splitting"}).fit(store, resume=tmp_path / "cut")
    resumed = lda().fit(store, resume=tmp_path / "cut")
    assert np.array_equal(resumed.topic_word_, whole.topic_word_)
    assert_same_run(Run.open(tmp_path / "whole"), Run.open(tmp_path / "cut"))


def test_a_resume_keeps_the_default_it_ran_when_the_default_changes(
        synthetic_store, tmp_path, monkeypatch):
    """A run written with the integrator unset records the default that ran, and a
    dscir whose default differs continues with it (guards against a dropped record);
    a run checkpointed before the record is refused, not continued with a guess."""
    store, _ = synthetic_store
    whole = lda().fit(store, out=tmp_path / "whole")
    assert whole.config_.sampler_options == {"integrator": "splitting"}
    cut_at_4(store, tmp_path / "cut", monkeypatch)
    monkeypatch.setitem(SAMPLERS, "gsgrhmc", SAMPLERS["gsgrhmc"].with_options(integrator="euler"))
    assert lda().chain_config().sampler_options == {"integrator": "euler"}  # the new default
    resumed = lda().fit(store, resume=tmp_path / "cut")
    assert np.array_equal(resumed.topic_word_, whole.topic_word_)
    assert_same_run(Run.open(tmp_path / "whole"), Run.open(tmp_path / "cut"))

    latest = sorted(p for p in (tmp_path / "cut" / "checkpoints").iterdir()
                    if p.name.isdigit())[-1]
    g = zarr.open_group(str(latest), mode="r+")
    meta = dict(g.attrs[checkpoint.ATTR])
    meta["config"] = {**meta["config"], "sampler_options": {}}
    g.attrs[checkpoint.ATTR] = meta
    with pytest.raises(DscirError, match="checkpointed before dscir recorded gsgrhmc's "
                                         "integrator"):
        lda(n_iter=8).fit(store, resume=tmp_path / "cut")
