"""The minibatch scale of every stochastic model, checked exactly on one iteration.

Each model turns a minibatch's integer statistics into full-data estimates by a
scale factor before the sampler steps (LDA: D / |S| / n_kept; the DP mixture
and the finite mixture: N / |S|). A wrong factor still gives chains that run
and, on easy synthetic data, still recover the truth (the recovery tests in
test_lda_driver.py, test_dpmm_driver.py and test_mixture.py passed with the
factor dropped or off by one), so these tests run ONE iteration in process
(``InProcessExecutor``), record the integer statistics the tasks returned and the
statistics handed on to the sampler, and compare them exactly.

Plausible bugs guarded against (see tests/mutants.py): LDA's D / |S| replaced
by D / (|S| + 1) or by 1 (``scale = 1 / n_kept``); the DP mixture's and the
finite mixture's N / |S| dropped (``scale = 1.0``).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import dscir.models.mixtures.dp.model as dpmm_model
from dscir.corpus import split_heldout, write_corpus
from dscir.models.base import Data
from dscir.models.mixtures.dp import DPMMConfig
from dscir.models.lda import LDAConfig
from dscir.models.lda.model import LDAModel
from dscir.models.mixtures.finite import MixtureConfig, MixtureModel
from support.recording import RecordingExecutor, RecordingSampler, minibatch


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    rng = np.random.default_rng(4)
    x = sp.csr_matrix(rng.poisson(0.4, size=(90, 25)) + (rng.random((90, 25)) < 0.05))
    path = tmp_path_factory.mktemp("scale") / "scale.zarr"
    write_corpus(path, x, vocabulary=[f"w{i}" for i in range(25)], chunk_docs=16)
    split_heldout(path, every=10)
    return str(path)


@pytest.mark.parametrize("size, sampler, beta, step, tau",
                         [(7, "scir", 0.5, 0.5, 10.0), (20, "scir", 0.5, 0.5, 10.0),
                          (20, "gsgrhmc", 1e-4, 0.02, None)])
def test_lda_counts_are_scaled_by_d_over_minibatch_over_kept_sweeps(store, size, sampler, beta,
                                                                     step, tau):
    """a_hat - beta = D / |S| / n_kept x the Gibbs tasks' integer topic-word counts,
    whichever sampler steps (SCIR, and gSGRHMC whose counts enter its gradient).
    Guards against D / (|S| + 1) and against the D / |S| factor dropped."""
    data = Data.open(store)
    cfg = LDAConfig(n_topics=3, sampler=sampler, alpha=0.1, beta=beta, batch_size=size,
                    step_size=step, tau=tau, kappa=0.33, sweeps=6, seed=3, burn_in=0,
                    thin=1, eval_sweeps=5)
    executor = RecordingExecutor(store, "lda")
    model = LDAModel(cfg, data, executor)
    model.topics.sampler = RecordingSampler(model.topics.sampler)
    parts = executor.read(minibatch(data, size))
    model.step(0, parts)
    ints = np.zeros((cfg.n_topics, data.n_words), np.int64)
    for r in executor.results:
        np.add.at(ints, (r.topics, r.word_ids), r.values)
    n_kept = executor.results[0].n_kept
    assert ints.sum() > 0 and n_kept >= 1
    (counts,) = model.topics.sampler.counts
    expected = ints * (data.train.size / size / n_kept)
    np.testing.assert_allclose(counts, expected, rtol=1e-12)
    # the scaled counts estimate the full data's tokens per kept sweep
    assert counts.sum() == pytest.approx(ints.sum() * data.train.size / size / n_kept)


def capture_global_step(model):
    """Record the (occupancy, counts) the model's global step receives: the weights'
    (or sticks') sampler sees the occupancy, the components' sampler the counts."""
    weights, components = RecordingSampler(model.sampler), RecordingSampler(model.held.sampler)
    model.sampler, model.held.sampler = weights, components

    def seen():
        (w,), (c,) = weights.counts, components.counts
        return [(w[:, 0] if w.ndim == 2 else w, c)]  # the sticks' counts: (m_j, sum_{l>j} m_l)

    return seen


def integer_statistics(results, n_components, n_words):
    occupancy = np.zeros(n_components, np.int64)
    counts = np.zeros((n_components, n_words), np.int64)
    for r in results:
        occupancy[r.components] += r.n_rows
        counts[np.ix_(r.components, r.words)] += r.counts
    return occupancy, counts


@pytest.mark.parametrize("size", [9, 30])
@pytest.mark.parametrize("d_seen", [None, 1000])
def test_dp_statistics_are_scaled_by_n_over_minibatch(store, size, d_seen):
    """m_hat = N / |S| x users per component, c_hat = N / |S| x area counts, N the
    training users or (``d_seen``) the documents a stream has seen (partial_fit).
    Guards against the N / |S| factor dropped (scale = 1), or N always the store's."""
    data = Data.open(store)
    cfg = DPMMConfig(sampler="scir", a0=0.5, alpha_shape=1.0, alpha_rate=1.0,
                     batch_size=size, step_theta=0.1, step_sticks=0.1, n_init=5, seed=3,
                     burn_in=0, thin=1, init="random", split_merge=0)
    executor = RecordingExecutor(store, "dpmm")
    model = dpmm_model.DPMMModel(cfg, data, executor)
    if d_seen is not None:
        model.n_documents = d_seen
    seen = capture_global_step(model)
    model.step(0, executor.read(minibatch(data, size)))
    (occupancy, counts), = seen()
    ints = integer_statistics(executor.results, counts.shape[0], data.n_words)
    assert ints[0].sum() == size and ints[1].sum() > 0
    scale = (data.train.size if d_seen is None else d_seen) / size
    # the components step by the allocations' labels, the sticks after the relabelling
    # move (dscir.models.mixtures.dp.relabel): the occupancy by each user's new label
    relabelled = np.zeros(occupancy.size, np.int64)
    for r in executor.results:
        new = model.z[r.rows]
        for c, n in zip(r.components, r.n_rows):
            assert np.unique(new[r.z == c]).size == 1
            relabelled[new[r.z == c][0]] += n
    np.testing.assert_allclose(occupancy, relabelled * scale, rtol=1e-12)
    np.testing.assert_allclose(counts, ints[1] * scale, rtol=1e-12)
    assert occupancy.sum() == pytest.approx(scale * size)  # every user, estimated


@pytest.mark.parametrize("size", [9, 30])
@pytest.mark.parametrize("d_seen", [None, 1000])
def test_mixture_statistics_are_scaled_by_n_over_minibatch(store, size, d_seen):
    """The finite mixture's occupancy and counts are N / |S| x the integer ones (N as
    in the DP's test). Guards against the N / |S| factor dropped (scale = 1), or N
    always the store's."""
    data = Data.open(store)
    cfg = MixtureConfig(sampler="scir", n_clusters=3, gamma=1.0, a0=0.5, batch_size=size,
                        step_weights=0.1, step_components=0.1, seed=3, init="random")
    executor = RecordingExecutor(store, "mixture")
    model = MixtureModel(cfg, data, executor)
    if d_seen is not None:
        model.n_documents = d_seen
    seen = capture_global_step(model)
    model.step(0, executor.read(minibatch(data, size)))
    (occupancy, counts), = seen()
    ints = integer_statistics(executor.results, cfg.n_clusters, data.n_words)
    assert ints[0].sum() == size and ints[1].sum() > 0
    scale = (data.train.size if d_seen is None else d_seen) / size
    np.testing.assert_allclose(occupancy, ints[0] * scale, rtol=1e-12)
    np.testing.assert_allclose(counts, ints[1] * scale, rtol=1e-12)
    assert occupancy.sum() == pytest.approx(scale * size)
