"""The exact Gibbs slice sampler for the DP mixture: the full-data baseline."""

from __future__ import annotations

import math

import numpy as np

from dscir.errors import DscirError
from dscir.models.mixtures.dp.allocation import Sample, allocate, component_counts, slice_log_u
from dscir.models.mixtures.dp.relabel import new_labels, relabel
from dscir.models.mixtures.dp.split_merge import split_merge
from dscir.models.mixtures.dp.sticks import (global_step, initial_state, log_weights, new_sticks,
                                      occupied_by_size, prior_components, start_gamma)
from dscir.models.mixtures.seeding import seed_csr
from dscir.rng import derive
from dscir.samplers import get_sampler
from dscir.samplers.simplex import normalize_log
from dscir.rng.domains import DP_INIT, GIBBS_SLICE_PARTS as P

_SCIR = get_sampler("scir")


class GibbsSlice:
    """The exact Gibbs slice sampler (Walker 2007; Kalli, Griffin & Walker 2011).

    Single machine, full data: every sweep draws u_i | v, z for all users,
    extends the sticks, allocates all users, relabels the clusters (keeping the
    labels up to the last occupied one; ``dscir.models.mixtures.dp.relabel``), then
    v | z, alpha and theta | z exactly, alpha | v (``global_step`` with SCIR,
    the full-data statistics and infinite steps: fresh Gamma draws).
    Users are the CSR rows; ``user_ids`` (default 0..N-1) name their streams.
    Sweep t draws from streams derive(seed, t, step) so ``run(a); run(b)`` equals
    ``run(a + b)``. ``init="kmeans++"`` seeds the initial components on users
    (``dscir.models.mixtures.seeding``) instead of drawing them from Gamma(1, 1);
    ``init="collapsed"`` starts from the occupied clusters of the finite
    collapsed start with ``n_init`` clusters (``dscir.models.mixtures.finite.collapsed``).
    With ``split_merge`` > 0 every sweep makes that many split-merge proposals
    (``dscir.models.mixtures.dp.split_merge``) after the allocations; theta and
    v are then drawn given the new partition, as always.
    """


    def __init__(self, indptr, indices, data, n_words: int, *, a0: float,
                 alpha_prior: tuple[float, float], n_init: int, seed: int, user_ids=None,
                 init: str = "random", split_merge: int = 0):
        self.indptr = np.asarray(indptr, np.int64)
        self.indices = np.asarray(indices, np.int64)
        self.data = np.asarray(data, np.int64)
        self.n_words = int(n_words)
        if self.indices.size and (self.indices.min() < 0 or self.indices.max() >= n_words):
            raise DscirError(f"area ids must lie in 0..{n_words - 1}")
        self.n_users = self.indptr.size - 1
        self.user_ids = (np.arange(self.n_users, dtype=np.int64) if user_ids is None
                         else np.asarray(user_ids, np.int64))
        self.a0 = float(a0)
        self.alpha_prior = (float(alpha_prior[0]), float(alpha_prior[1]))
        self.seed = int(seed)
        log_theta = None
        if init == "kmeans++":
            log_theta = seed_csr(self.indptr, self.indices, self.data, n_words, n_init,
                                 self.a0, derive(seed, DP_INIT, 2))
        elif init == "collapsed":
            # imported here: the finite mixture's modules import the DP's
            from dscir.models.mixtures.finite.collapsed import collapsed_start_csr
            gamma = start_gamma(n_init, self.alpha_prior)
            log_theta = occupied_by_size(*collapsed_start_csr(
                self.indptr, self.indices, self.data, n_words, key=derive(seed, DP_INIT, 2),
                n_clusters=n_init, gamma=gamma, a0=self.a0), gamma)
        n_start = n_init if log_theta is None else len(log_theta)
        start = initial_state(self.n_users, n_words, n_start, self.alpha_prior, seed)
        self.z, self.log_sticks, self.log_theta, self.alpha = start
        if log_theta is not None:
            self.log_theta = log_theta
        self.iteration = 0
        self.n_proposed = self.log_sticks.shape[0]
        self.split_merge = int(split_merge)

    @property
    def n_components(self) -> int:
        return int(self.log_sticks.shape[0])

    @property
    def n_clusters(self) -> int:
        return int(np.unique(self.z).size)

    def sample(self) -> Sample:
        log_w, log_rest = log_weights(self.log_sticks)
        return Sample(log_w, normalize_log(self.log_theta, axis=1), log_rest, self.alpha)

    def step(self) -> None:
        t = self.iteration + 1
        key = lambda part: derive(self.seed, t, P[part])  # noqa: E731
        log_w, log_rest = log_weights(self.log_sticks)
        log_u = slice_log_u(log_w, self.z, self.user_ids, key("SLICE"))
        extra = new_sticks(log_rest, float(log_u.min()), self.alpha, key("EXTEND"))
        if extra.shape[0]:
            self.log_sticks = np.concatenate([self.log_sticks, extra])
            self.log_theta = np.concatenate([self.log_theta, prior_components(
                extra.shape[0], self.n_words, self.a0, derive(key("EXTEND"), 2**32))])
            log_w, log_rest = log_weights(self.log_sticks)
        self.n_proposed = self.n_components
        self.z = allocate(self.indptr, self.indices, self.data, self.user_ids, log_u, log_w,
                          normalize_log(self.log_theta, axis=1), key("ALLOCATE"))
        if self.split_merge:
            self._split_merge(key("SPLIT_MERGE"))
        self._relabel(key("RELABEL"))
        k = self.n_components
        cc = component_counts(self.indptr, self.indices, self.data, self.z, self.n_words)
        m = np.zeros(k)
        m[cc.components] = cc.users
        counts = np.zeros((k, self.n_words))
        counts[cc.components] = cc.counts
        sticks, theta, self.alpha = global_step(
            _SCIR, _SCIR.State(self.log_sticks), _SCIR.State(self.log_theta), self.alpha, m, counts,
            a0=self.a0, alpha_prior=self.alpha_prior, step_sizes=(math.inf, math.inf),
            keys=(key("STICKS"), key("COMPONENTS"), key("ALPHA")))
        self.log_sticks, self.log_theta = sticks.log_theta, theta.log_theta
        self.iteration = t

    def _split_merge(self, key: int) -> None:
        """Split-merge proposals on z; new labels get prior rows (theta and the sticks
        are drawn given z next)."""
        z, _, _ = split_merge(self.indptr, self.indices, self.data, self.z, self.n_words,
                              a0=self.a0, alpha=self.alpha, n_proposals=self.split_merge,
                              key=key)
        grow = int(z.max()) + 1 - self.n_components
        if grow > 0:
            self.log_sticks = np.concatenate([self.log_sticks, np.zeros((grow, 2))])
            self.log_theta = np.concatenate([self.log_theta, prior_components(
                grow, self.n_words, self.a0, derive(key, 1))])
        self.z = z.astype(self.z.dtype)

    def _relabel(self, key: int) -> None:
        """The relabelling move (``dscir.models.mixtures.dp.relabel``) on (z, theta); the
        sticks follow their labels and are redrawn next. Keeps labels up to the last
        occupied one."""
        order, fresh = relabel(np.bincount(self.z, minlength=self.n_components), self.alpha,
                               key)
        if fresh:
            self.log_sticks = np.concatenate([self.log_sticks, np.zeros((fresh, 2))])
            self.log_theta = np.concatenate([self.log_theta, prior_components(
                fresh, self.n_words, self.a0, derive(key, 1))])
        self.z = new_labels(order, self.n_components)[self.z]
        self.log_sticks, self.log_theta = self.log_sticks[order], self.log_theta[order]
