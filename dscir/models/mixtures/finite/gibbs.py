"""The exact full-data Gibbs sampler of the finite mixture, and the global step
it shares with the stochastic samplers.

One sweep ``m``: z_i | pi, phi for every training document (``allocate``),
then pi | z ~ Dirichlet(gamma + m) and phi_k | z ~ Dirichlet(a0 + c_k) exactly,
with m_k the documents and c_kw the word counts in component k. The exact
draws are the SCIR step over an infinite time (``global_step`` with h = inf:
fresh Gamma(prior + counts) variables, normalised), so the stochastic model
with SCIR, a minibatch of every training document and h = inf is this sampler
draw for draw.

Random streams (``dscir.rng.domains``), the stochastic model's too: allocations
(seed, DP_ALLOCATE, m) then the document id; weights (seed, MIXTURE_WEIGHTS,
m) then row; components (seed, DP_COMPONENTS, m) then row; the initial
components (seed, INIT), or (seed, INIT, 2) when seeded or collapsed, and allocations
(seed, MIXTURE_INIT).
"""

from __future__ import annotations

import math

import numpy as np

from dscir.rng import domains
from dscir.errors import DscirError
from dscir.models.mixtures.finite.collapsed import collapsed_start_csr
from dscir.models.mixtures.finite.allocation import Sample, allocate, component_counts
from dscir.models.mixtures.seeding import seed_csr
from dscir.rng import derive
from dscir.samplers import get_sampler
from dscir.samplers.cir import sample_stationary
from dscir.samplers.simplex import normalize_log

_SCIR = get_sampler("scir")


def initial_state(n_docs: int, n_words: int, n_clusters: int, seed: int):
    """(z, log weight gammas [K], log component gammas [K, W]) to start a chain:
    equal weights, components ~ Gamma(1, 1) (spread out, as LDA starts), the
    ``n_docs`` documents uniform over the K clusters (their labels until first allocated)."""
    rng = np.random.Generator(np.random.PCG64(derive(seed, domains.MIXTURE_INIT)))
    z = rng.integers(0, n_clusters, size=n_docs).astype(np.int32)
    log_weights = np.zeros(n_clusters)
    log_components = sample_stationary(np.ones((n_clusters, n_words)),
                                       derive(seed, domains.INIT))
    return z, log_weights, log_components


def seeding_key(seed: int) -> int:
    """The stream of the seeded or collapsed start (``init="kmeans++"`` or ``"collapsed"``)."""
    return derive(seed, domains.INIT, 2)


def step_keys(seed: int, m: int) -> tuple[int, int, int]:
    """Stream keys of iteration ``m``: (allocations, weights, components)."""
    return tuple(derive(seed, d, m) for d in (domains.DP_ALLOCATE, domains.MIXTURE_WEIGHTS,
                                              domains.DP_COMPONENTS))


def statistics(cc, n_clusters: int, n_words: int) -> tuple[np.ndarray, np.ndarray]:
    """Dense occupancy (K) and counts (K x W) from ``component_counts`` over all W words."""
    occupancy = np.zeros(n_clusters, dtype=np.int64)
    counts = np.zeros((n_clusters, n_words), dtype=np.int64)
    occupancy[cc.components] = cc.users
    counts[cc.components] = cc.counts
    return occupancy, counts


def weights_step(sampler, weights, occupancy, *, gamma: float, step_size: float, key: int):
    """Move the K weight gammas towards Gamma(gamma + m), given ``occupancy`` m (K)
    already scaled to the full data (``global_step``'s first half)."""
    return sampler.step(weights, gamma, np.asarray(occupancy, np.float64), step_size, key)


def global_step(sampler, weights, components, occupancy, counts, *, gamma: float, a0: float,
                step_sizes: tuple[float, float], keys: tuple[int, int]):
    """Move the K weight gammas towards Gamma(gamma + m) and the K x W component
    gammas towards Gamma(a0 + c), given ``occupancy`` m (K) and ``counts`` c
    (K x W) already scaled to the full data; ``step_sizes`` = (weights,
    components), ``keys`` their streams. With SCIR and h = inf, exact draws of
    pi ~ Dirichlet(gamma + m) and phi_k ~ Dirichlet(a0 + c_k). Returns
    (weights, components)."""
    weights = weights_step(sampler, weights, occupancy, gamma=gamma, step_size=step_sizes[0],
                           key=keys[0])
    components = sampler.step(components, a0, np.asarray(counts, np.float64), step_sizes[1],
                              keys[1])
    return weights, components


class FiniteGibbs:
    """The exact Gibbs sampler of the finite mixture on all its documents.

    Documents are the CSR rows; ``doc_ids`` (default 0..N-1) name their
    streams. ``step(m)`` is sweep m (see the module notes); ``step()`` the next.
    ``init="kmeans++"`` seeds the K components on documents (``dscir.models.mixtures.seeding``);
    ``init="collapsed"`` starts from collapsed sweeps on them (``collapsed``).
    """

    def __init__(self, indptr, indices, data, n_words: int, *, n_clusters: int, gamma: float,
                 a0: float, seed: int, doc_ids=None, init: str = "random"):
        self.indptr = np.asarray(indptr, np.int64)
        self.indices = np.asarray(indices, np.int64)
        self.data = np.asarray(data, np.int64)
        self.n_words = int(n_words)
        if self.indices.size and (self.indices.min() < 0 or self.indices.max() >= n_words):
            raise DscirError(f"word ids must lie in 0..{n_words - 1}")
        if n_clusters < 1:
            raise DscirError(f"n_clusters must be >= 1, got {n_clusters}")
        self.n_docs = self.indptr.size - 1
        self.doc_ids = (np.arange(self.n_docs, dtype=np.int64) if doc_ids is None
                        else np.asarray(doc_ids, np.int64))
        self.n_clusters, self.gamma, self.a0 = int(n_clusters), float(gamma), float(a0)
        self.seed = int(seed)
        z, log_weights, log_components = initial_state(self.n_docs, n_words, n_clusters, seed)
        self.z = z
        if init == "kmeans++":
            log_components = seed_csr(self.indptr, self.indices, self.data, n_words,
                                      n_clusters, a0, seeding_key(seed))
        elif init == "collapsed":
            log_weights, log_components = collapsed_start_csr(
                self.indptr, self.indices, self.data, n_words, key=seeding_key(seed),
                n_clusters=n_clusters, gamma=gamma, a0=a0)
        self.weights = _SCIR.init_log(log_weights)
        self.components = _SCIR.init_log(log_components)
        self.iteration = 0

    @property
    def n_occupied(self) -> int:
        return int(np.count_nonzero(np.bincount(self.z, minlength=self.n_clusters)))

    def sample(self) -> Sample:
        return Sample(normalize_log(self.weights.log_theta),
                      normalize_log(self.components.log_theta, axis=1))

    def step(self, m: int | None = None) -> None:
        m = self.iteration if m is None else int(m)
        k_alloc, k_weights, k_components = step_keys(self.seed, m)
        s = self.sample()
        self.z = allocate(self.indptr, self.indices, self.data, self.doc_ids, s.log_pi,
                          s.log_phi, k_alloc)
        cc = component_counts(self.indptr, self.indices, self.data, self.z, self.n_words)
        occupancy, counts = statistics(cc, self.n_clusters, self.n_words)
        self.weights, self.components = global_step(
            _SCIR, self.weights, self.components, occupancy, counts, gamma=self.gamma,
            a0=self.a0, step_sizes=(math.inf, math.inf), keys=(k_weights, k_components))
        self.iteration = m + 1
