"""The engine's contracts: one stream table, typed samplers, any run read back by the CLI."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import dscir
from dscir.rng import domains
from dscir.cli import main
from dscir.errors import DscirError
from dscir.models.mixtures.dp import DPMMConfig, DPMMModel
from dscir.models.lda import LDAModel
from dscir.samplers import SAMPLERS, get_sampler


def test_every_stream_domain_is_distinct_and_named_once():
    """Guards against a new model reusing a domain number: two streams with the same
    (seed, domain, iteration, id) would be the same random numbers."""
    numbers = [d.number for d in domains.DOMAINS]
    names = [d.name for d in domains.DOMAINS]
    assert len(set(numbers)) == len(numbers)
    assert len(set(names)) == len(names)
    for d in domains.DOMAINS:
        assert getattr(domains, d.name) == d.number
    # The exact baselines name streams (seed, sweep, ...): DP_INIT must stay above them.
    assert domains.DP_INIT > 10**9
    assert sorted(domains.GIBBS_SLICE_PARTS.values()) == list(range(8))


def test_no_module_numbers_its_own_stream_domain():
    """Every derive(seed, <domain>, ...) in the package names a domain of the table."""
    import pathlib

    root = pathlib.Path(dscir.__file__).parent
    literal = re.compile(r"derive\((?:cfg\.|config\.|self\.)?seed,\s*\d")
    offenders = [str(p.relative_to(root)) for p in root.rglob("*.py")
                 if literal.search(p.read_text())]
    assert offenders == []


def test_samplers_are_typed_objects_with_their_own_options():
    theta = np.full((2, 5), 0.5)
    counts = np.arange(10.0).reshape(2, 5)
    for name, sampler in SAMPLERS.items():
        state = sampler.init(theta)
        assert isinstance(state, sampler.State), name
        moved = sampler.step(state, 0.5, counts, 0.01, 7)
        assert set(sampler.arrays(moved)) == set(sampler.State._fields), name
        back = sampler.from_arrays(sampler.arrays(moved), theta.shape)
        for f in sampler.State._fields:
            np.testing.assert_array_equal(getattr(back, f), getattr(moved, f))
    # SGHMC's friction reaches its step (a friction that did nothing would pass).
    a = get_sampler("sghmc").step(get_sampler("sghmc").init(theta), 0.5, counts, 0.01, 7)
    b = get_sampler("sghmc", friction=5.0).step(get_sampler("sghmc").init(theta), 0.5, counts,
                                                0.01, 7)
    assert not np.array_equal(a.r, b.r)
    with pytest.raises(DscirError, match="has no option friction"):
        get_sampler("scir", friction=1.0)
    with pytest.raises(DscirError, match="friction must be a positive number"):
        get_sampler("sghmc", friction=-1.0)


def test_concat_and_head_keep_every_field():
    """A momentum state grown and cut by rows keeps its momentum (not only field 0)."""
    s = get_sampler("gsgrhmc")
    a = s.init(np.ones((2, 3)), np.full((2, 3), 2.0))
    grown = s.concat(a, s.init(np.ones((1, 3))))
    assert grown.r.shape == (3, 3) and np.all(grown.r[:2] == 2.0) and np.all(grown.r[2] == 0.0)
    assert s.head(grown, 2).r.shape == (2, 3)


def test_lda_sampler_options_reach_the_model(tmp_path):
    cfg = dscir.LDA(sampler="sghmc", sampler_options={"friction": 3.0},
                    policy="reference").chain_config()
    assert cfg.sampler_options == {"friction": 3.0, "integrator": "splitting"}  # default recorded
    with pytest.raises(DscirError, match="has no option"):
        dscir.LDA(sampler="scir", sampler_options={"friction": 3.0},
                  policy="reference").chain_config()
    assert LDAModel.minibatch and LDAModel.name == "lda"


def test_the_dp_mixture_refuses_a_momentum_sampler(dpmm_store):
    from dscir.engine.inprocess import InProcessExecutor
    from dscir.models.base import Data

    path, _ = dpmm_store
    cfg = DPMMConfig(sampler="gsgrhmc", a0=0.5, alpha_shape=1.0, alpha_rate=1.0, batch_size=10,
                     step_theta=0.1, step_sticks=0.1, n_init=3, seed=0, init="random",
                     split_merge=0)
    with pytest.raises(DscirError, match="runs without momenta"):
        DPMMModel(cfg, Data.open(path), InProcessExecutor(path, "dpmm"))
    with pytest.raises(DscirError, match="sampler must be one of"):
        dscir.DPMixture(sampler="gsgrhmc").chain_config()


def test_topics_evaluate_and_info_read_a_dp_run(dpmm_store, two_workers, tmp_path, capsys):
    path, _ = dpmm_store
    model = dscir.DPMixture(batch_size=100, n_iter=8, burn_in=2, thin=2, seed=2,
                            progress=False).fit(path, client=two_workers, out=tmp_path / "run")
    loaded = dscir.api.load(tmp_path / "run")
    assert isinstance(loaded, dscir.DPMixture) and loaded.n_iter_ == 8
    assert loaded.score() == pytest.approx(model.score(), rel=1e-12)
    np.testing.assert_array_equal(loaded.predict(_heldout(path)), model.predict(_heldout(path)))
    assert main(["topics", str(tmp_path / "run"), "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("cluster") and len(out.splitlines()) == model.n_clusters_
    assert main(["evaluate", str(tmp_path / "run")]) == 0
    line = capsys.readouterr().out
    assert "held-out log predictive" in line and f"{model.score():.4f}" in line
    assert main(["evaluate", str(tmp_path / "run"), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["metric"] == "log_predictive"
    assert answer["value"] == pytest.approx(model.score(), rel=1e-12)
    assert main(["evaluate", str(tmp_path / "run"), "--sweeps", "5"]) == 2
    assert "applies to LDA runs" in capsys.readouterr().err
    assert main(["info", str(tmp_path / "run")]) == 0
    info = capsys.readouterr().out
    assert "dpmm" in info and "iterations:  8" in info


def test_a_round_with_large_arguments_for_one_worker_only_is_sent(dpmm_store, two_workers,
                                                                   monkeypatch):
    """Arrays are scattered ahead of a round only where they are large: with one
    worker's parts carrying a large array and the other's none, the large one is
    sent to its worker and the small one stays in the graph. Guards against a
    scatter of nothing to the other worker, which distributed refuses (a DP
    mixture fit failed so when its columns were large for some parts only)."""
    from types import SimpleNamespace

    from dscir.engine import sending
    from dscir.engine.dask import DaskExecutor

    executor = DaskExecutor(two_workers, dpmm_store[0], "dpmm")
    workers = sorted(two_workers.scheduler_info()["workers"])
    monkeypatch.setattr(executor, "holders", lambda batches: workers[:len(batches)])
    monkeypatch.setattr(sending, "SCATTER_BYTES", 1000)
    big, small = np.arange(1000.0), np.arange(10.0)
    args, sent = executor._send(SimpleNamespace(batches=[None, None]), [(big, 1), (small, 2)])
    assert len(sent) == 1 and args[1][0] is small and args[1][1] == 2
    assert args[0][1] == 1 and args[0][0] is sent[0]
    np.testing.assert_array_equal(sent[0].result(), big)
    assert set(two_workers.who_has([sent[0]])[sent[0].key]) == {workers[0]}


def _heldout(path):
    from dscir.corpus import Corpus

    c = Corpus.open(path)
    return c.read(c.heldout_docs())
