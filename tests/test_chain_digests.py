"""Chain digests: what every sampler's chain computes, pinned bit for bit.

Recorded on main before the engine redesign (issue 13) and kept unchanged
after it: a refactor that reorders a random stream, drops a state field
(a momentum), changes a minibatch scale, the thinning or the checkpointed
state changes a digest. Each chain runs through burn-in, thinning, held-out
scoring and a checkpoint, on a small synthetic corpus with a fixed seed. Only
what the chain computes enters a digest; timings do not.

The digests are pinned per numeric platform. numpy's exp, log, log1p, expm1
and power take AVX-512 code paths where the CPU has them, and those round some
results differently in the last bit from the AVX2 paths; a chain's digest
follows. ``numeric_platform()`` names the paths this process takes by a digest
of numpy's exp and log on a fixed grid. "x86-64-v3" (AVX2): recorded on
main's first machines, and reproduced bit for bit on an AVX-512 machine with
numpy's AVX-512 paths switched off and numba compiling for an AVX2 CPU in a
cache of its own (``NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL"
NUMBA_CPU_NAME=haswell NUMBA_CACHE_DIR=<empty dir>``; without the numba
settings the LDA digests differ). "x86-64-v4" (AVX-512): recorded on that machine (AMD EPYC,
2026-11-24) from the last commit that had landed with the v3 digests passing
(5a502e1), so no change of the code enters them. The splitting integrator's
digests (issue 34) were recorded on that machine, v3 by the recipe above, in
the same run in which every Euler digest held; gSGRHMC's again when its
position move became the exact log flow (dscir/samplers/_log_flow.py), with
its Euler digests and SGHMC's holding; gSGRHMC's splitting digests again when
the flow's erfc inversion began from Giles' approximation and ended with a Halley
step (the same roots to rounding, other last bits; the laws' tests passing), v3
by the recipe, which reproduced the previous v3 digests from main's code. On a platform with no digests
pinned the tests fail and say so: record its digests from the last landed
commit (not from a change under test) and add them under its fingerprint.
"""

from __future__ import annotations


import numpy as np
import pytest
import scipy.sparse as sp

import dscir
from dscir.corpus import split_heldout, write_corpus
from support.digests import digest, run_digest

# Fields of the per-iteration history that are measurements, not the chain.
# numeric_platform() fingerprints -> platform names (see the module docstring).
PLATFORMS = {"b7f814999d3179a2": "x86-64-v3", "afa9aceb582e0c6b": "x86-64-v4"}

# gSGRHMC and SGHMC here run integrator="euler" (the papers' step, the chains these
# were recorded from); their default "splitting" integrator is pinned below.
EULER = {"integrator": "euler"}
# The driver placement's LDA chains (these, the splitting and the warm ones) changed
# once, v3 only, when their dense topics became the workers' vocabulary blocks held in
# this process (issue 43: models/lda/topics.py, one class on either form of the
# blocks): per-block initial and noise streams (seed, INIT/SAMPLER, ..., block), the
# row normalisers combined from the blocks' log-sum-exps, float32 columns, a kept
# sample summed per block; the workers' digest held. Their v4 ones await a v4 machine.
LDA_DIGESTS = {
    "x86-64-v3": {"scir": "6aa722ef6cdefa63", "sgrld": "b3f1f8826cff4d4b",
                  "gsgrhmc": "e97cbdffb76e921a", "sgld": "64a031c7c9689101",
                  "sghmc": "90d3fb4b7934e4f6"},
    "x86-64-v4": {"scir": "3400e08aca4aad7b", "sgrld": "611200c72e9b4644",
                  "gsgrhmc": "928761837d7ffcf0", "sgld": "206b1dca9d15eab2",
                  "sghmc": "01677b2787a8d747"},
}
LDA_SPLITTING_DIGESTS = {
    "x86-64-v3": {"gsgrhmc": "d6afc898fb764f48", "sghmc": "55e59b5069d7f270"},
    "x86-64-v4": {"gsgrhmc": "f9d5b2495e1be7de", "sghmc": "30700a840bd5ce41"},
}
# Warm-started local chains with control variates (issue 16). The run's local
# state store (local/) is a resume aid whose layout changed with issue 30 (one
# chunk per shard): these digests leave it out, recorded from main before that
# change (380d719, v3 by the recipe above); the state itself enters through
# what the chain computes from it. The warm splitting gSGRHMC digest was recorded
# again when its position move became the exact log flow.
LDA_WARM_DIGESTS = {
    "x86-64-v3": {"scir": "fd2882068a7b94bc", "sgrld": "70feb6a970b3ac17",
                  "gsgrhmc": "ad1849510d6503a4"},
    "x86-64-v4": {"scir": "12463f5e03184237", "sgrld": "14c6cfa5a268c899",
                  "gsgrhmc": "c87613a6bce702a1"},
}
LDA_WARM_SPLITTING_DIGESTS = {"x86-64-v3": {"gsgrhmc": "98db3d26db9f7cc5"},
                              "x86-64-v4": {"gsgrhmc": "030b742932eea271"}}
# SCIR with its topics on the workers, in 3 vocabulary blocks (issue 14): since issue 43
# the driver placement's chain on the same blocks; only the mean of the kept phi is
# kept.
LDA_WORKERS_DIGEST = {"x86-64-v3": "761e126db7f886e6", "x86-64-v4": "6dd243dbe0af5eab"}
# The DP chains' v3 digests changed once with the relabelling move (issue 46:
# dscir/models/mixtures/dp/relabel.py; the stochastic sampler draws its sticks from v | z
# after it, ``conditional_sticks``); their v4 ones await a v4 machine.
# The SGRLD chains' (DP and finite mixture-sgrld) v3 digests changed once more: the
# blocks' row normalisers of a linear-scale state are the log of its row sums
# (dscir.models.mixtures.blocks.state_row_lse), not a log-sum-exp of its logs.
# The DP SGRLD chain's v3 digest changed once more when the driver's components
# became the engine's blocks held in this process (issue 43): its samples' and
# final log phi are normalised by those row normalisers too (they already cut
# the allocations' columns); the chain's draws are unchanged (one block steps as
# the whole array), so its SCIR digest holds. Its v4 one awaits a v4 machine.
DPMM_DIGESTS = {
    "x86-64-v3": {"scir": "9de43d11c18e5942", "sgrld": "778499fc313cd65c",
                  "gibbs": "eaa5a6097ec61850"},
    "x86-64-v4": {"scir": "132a1347b5907629", "sgrld": "e55784b1c61a23ac",
                  "gibbs": "027213ee5300c6f2"},
}
# The mixtures' stochastic samplers with their components on the workers, in 3 column
# blocks (issue 33): other chains of the same posteriors (per-block noise streams).
# Recorded on the x86-64-v4 machine, v3 by the recipe of the module docstring in the
# same run in which every other v3 digest held.
MIXTURE_WORKERS_DIGESTS = {
    "x86-64-v3": {"dpmm-scir": "6d9636b4dddfd81b", "dpmm-sgrld": "a2f6cb0669bd2420",
                  "mixture-scir": "102b05c7f047f656", "mixture-sgrld": "223bd45f2bf33165"},
    "x86-64-v4": {"dpmm-scir": "0f53ddb2e442b8ca", "dpmm-sgrld": "ae3579e6d1834892",
                  "mixture-scir": "6e9268e635a5a6e5", "mixture-sgrld": "50ac679df5d128b5"},
}
# The collapsed Gibbs baseline calls none of the platform-dependent functions.
COLLAPSED_DIGEST = "0e46f72df14d113b"


def numeric_platform() -> str:
    """Fingerprint of the code paths numpy's exp and log take in this process."""
    x = np.linspace(-700.0, 700.0, 10_001)
    return digest({"exp": np.exp(x), "log": np.log(np.abs(x) + 1e-300)})


def pinned(table: dict):
    """This platform's entry of a digest table; fails naming the platform when
    none is pinned for it."""
    fingerprint = numeric_platform()
    if PLATFORMS.get(fingerprint) not in table:
        pytest.fail(f"no chain digests are pinned for this numeric platform (numpy exp/log "
                    f"fingerprint {fingerprint}); record them from the last landed commit "
                    f"(tests/test_chain_digests.py's docstring says how)")
    return table[PLATFORMS[fingerprint]]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    rng = np.random.default_rng(11)
    n_docs, n_words, k = 120, 30, 3
    phi = rng.dirichlet(np.full(n_words, 0.1), size=k)
    theta = rng.dirichlet(np.full(k, 0.3), size=n_docs)
    counts = np.array([rng.multinomial(rng.integers(20, 60), t @ phi) for t in theta])
    path = tmp_path_factory.mktemp("digest") / "corpus.zarr"
    write_corpus(path, sp.csr_matrix(counts), vocabulary=[f"w{i}" for i in range(n_words)],
                 chunk_docs=32)
    split_heldout(path, every=6)
    return str(path), counts


def lda_digest(sampler, options, store, client, tmp_path) -> str:
    path, _ = store
    model = dscir.LDA(n_topics=3, sampler=sampler, batch_size=20, sweeps=8, eval_sweeps=6,
                      n_iter=9, burn_in=3, thin=2, eval_every=4, seed=5, policy="reference",
                      sampler_options=options, progress=False)
    model.fit(path, client=client, out=tmp_path / "run.zarr", checkpoint_every=4)
    return run_digest(tmp_path / "run.zarr")


@pytest.mark.parametrize("sampler", sorted(LDA_DIGESTS["x86-64-v3"]))
def test_lda_chain_digest(sampler, store, two_workers, tmp_path):
    options = EULER if sampler in LDA_SPLITTING_DIGESTS["x86-64-v3"] else None
    assert lda_digest(sampler, options, store, two_workers, tmp_path) == \
        pinned(LDA_DIGESTS)[sampler]


@pytest.mark.parametrize("sampler", sorted(LDA_SPLITTING_DIGESTS["x86-64-v3"]))
def test_lda_splitting_chain_digest(sampler, store, two_workers, tmp_path):
    assert lda_digest(sampler, None, store, two_workers, tmp_path) == \
        pinned(LDA_SPLITTING_DIGESTS)[sampler]


def test_lda_workers_chain_digest(store, two_workers, tmp_path):
    path, _ = store
    model = dscir.LDA(n_topics=3, batch_size=20, sweeps=8, eval_sweeps=6, n_iter=9, burn_in=3,
                      thin=2, eval_every=4, seed=5, placement="workers", block_entries=30,
                      policy="reference", progress=False)
    model.fit(path, client=two_workers, out=tmp_path / "run.zarr", checkpoint_every=4)
    assert model.config_.placement == "workers"
    assert run_digest(tmp_path / "run.zarr") == pinned(LDA_WORKERS_DIGEST)


def lda_warm_digest(sampler, options, store, client, tmp_path) -> str:
    path, _ = store
    model = dscir.LDA(n_topics=3, sampler=sampler, batch_size=20, sweeps=4, burn_sweeps=1,
                      warm_start=True, control_variates=True, eval_sweeps=6, n_iter=13,
                      burn_in=3, thin=2, eval_every=4, seed=5, policy="reference",
                      sampler_options=options, progress=False)
    model.fit(path, client=client, out=tmp_path / "run.zarr", checkpoint_every=4)
    return run_digest(tmp_path / "run.zarr")


@pytest.mark.parametrize("sampler", sorted(LDA_WARM_DIGESTS["x86-64-v3"]))
def test_lda_warm_chain_digest(sampler, store, two_workers, tmp_path):
    options = EULER if sampler in LDA_WARM_SPLITTING_DIGESTS["x86-64-v3"] else None
    assert lda_warm_digest(sampler, options, store, two_workers, tmp_path) == \
        pinned(LDA_WARM_DIGESTS)[sampler]


@pytest.mark.parametrize("sampler", sorted(LDA_WARM_SPLITTING_DIGESTS["x86-64-v3"]))
def test_lda_warm_splitting_chain_digest(sampler, store, two_workers, tmp_path):
    assert lda_warm_digest(sampler, None, store, two_workers, tmp_path) == \
        pinned(LDA_WARM_SPLITTING_DIGESTS)[sampler]


@pytest.mark.parametrize("sampler", sorted(DPMM_DIGESTS["x86-64-v3"]))
def test_dpmm_chain_digest(sampler, store, two_workers, tmp_path):
    path, _ = store
    model = dscir.DPMixture(sampler=sampler, batch_size=40, n_init=4, n_iter=9, burn_in=3,
                            thin=2, eval_every=4, seed=5, progress=False)
    model.fit(path, client=two_workers, out=tmp_path / "run.zarr", checkpoint_every=4)
    assert run_digest(tmp_path / "run.zarr") == pinned(DPMM_DIGESTS)[sampler]


@pytest.mark.parametrize("placement", ["workers", "driver"])
@pytest.mark.parametrize("name", ["dpmm-scir", "dpmm-sgrld", "mixture-scir", "mixture-sgrld"])
def test_mixture_workers_chain_digest(name, placement, store, two_workers, tmp_path,
                                      monkeypatch):
    """The blocks' chain, held by the workers or in this process (one chain)."""
    from dscir.models.mixtures import components as mixture_components

    monkeypatch.setattr(mixture_components, "BLOCK_ENTRIES", 40)  # 3 blocks of 10 words
    path, _ = store
    model, sampler = name.split("-")
    run = dict(batch_size=40, n_iter=9, burn_in=3, thin=2, eval_every=4, seed=5,
               placement=placement, progress=False)
    est = (dscir.DPMixture(sampler=sampler, n_init=4, **run) if model == "dpmm" else
           dscir.Mixture(3, sampler=sampler, **run))
    est.fit(path, client=two_workers, out=tmp_path / "run.zarr", checkpoint_every=4)
    assert est.config_.placement == placement
    assert run_digest(tmp_path / "run.zarr") == pinned(MIXTURE_WORKERS_DIGESTS)[name]


def test_collapsed_gibbs_digest(store):
    from dscir.models.lda import CollapsedGibbs

    _, counts = store
    m = sp.csr_matrix(counts)
    g = CollapsedGibbs(m.indptr, m.indices, m.data, n_topics=3, alpha=0.1, beta=0.5, seed=5)
    g.run(7)
    assert digest({"phi": g.topic_word(), "n_dk": np.array(g.n_dk)}) == COLLAPSED_DIGEST
