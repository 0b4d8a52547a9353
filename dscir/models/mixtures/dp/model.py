"""The DP mixture on the engine: the stochastic slice sampler and the exact one.

One iteration ``m`` of the stochastic slice sampler (Baker et al. 2018, App. D):

1. the engine has read the minibatch S of training users on the workers;
2. slice variables u_i ~ U(0, w_{z_i}) for i in S, from each user's last
   allocation (all training users start uniform over ``n_init`` components);
3. add prior sticks and components until sum_j w_j > 1 - min u;
4. workers allocate their users over {j : w_j > u_i} given log phi (only the
   columns of their areas, cut where the components' column blocks live, in
   this process or on the workers: ``dscir.models.mixtures.components``) and return
   integer user counts and area counts per component; they are added exactly,
   in any order (by each block, its areas);
5. with m_hat = (N / |S|) x users per component and c_hat = (N / |S|) x area
   counts, the sampler moves the stick gammas towards Beta(1 + m_hat_j,
   alpha + sum_{l>j} m_hat_l) and the component gammas towards Gamma(a0 + c_hat);
6. before 5, the clusters are relabelled by every training user's allocation
   (``dscir.models.mixtures.dp.relabel``: holes left by emptied components are
   closed, labels past the last occupied one dropped), the components moving
   with their labels and the sticks drawn from v | z given every training
   user's allocation (O(K)); after 5, alpha | v;
7. with ``split_merge`` > 0, once a pass (before 6): that many split-merge
   proposals on every training user's allocation, in one task that reads them
   all (``dscir.models.mixtures.dp.split_merge``), then the components of the
   clusters that gained or lost users drawn from their full conditionals
   Gamma(a0 + c_k) given every training user's allocation, as the sticks are
   in 6.

Every draw comes from a stream (seed, DP_*, m, ...) of ``dscir.rng.domains``, per
user where it belongs to a user, so a run is the same on any number of workers.
Both samplers keep their samples' held-out log predictive as a running
log-space average (``dscir.models.mixtures.predictive``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from dscir.rng import domains
from dscir.models.base import Data
from dscir.models.mixtures.common import MixtureBase, group
from dscir.models.mixtures.predictive import PredictiveAverage
from dscir.models.mixtures.dp.config import DPMMConfig
from dscir.models.mixtures.dp.gibbs import GibbsSlice
from dscir.models.mixtures.dp.allocation import Sample
from dscir.models.mixtures.dp.allocation import slice_log_u
from dscir.models.mixtures.dp.relabel import conditional_sticks, new_labels, relabel
from dscir.models.mixtures.dp.sticks import (initial_state, log_weights, new_sticks,
                                           occupied_by_size, start_gamma, sticks_step)
from dscir.models.mixtures.dp.tasks import (allocate_users, split_merge_users,
                                           user_log_predictive)
from dscir.models.mixtures.components import Components, resolve_placement
from dscir.models.mixtures.seeding import seed_on_workers
from dscir.rng import derive
from dscir.samplers import get_sampler
from dscir.samplers.cir import sample_stationary
from dscir.samplers.simplex import normalize_log


def sample_arrays(iteration: int, sample: Sample) -> dict[str, np.ndarray]:
    """One kept sample as rows of the run's ``samples/`` arrays (components stacked)."""
    return {"samples/iteration": np.array([iteration], np.int64),
            "samples/alpha": np.array([sample.alpha], np.float64),
            "samples/log_rest": np.array([sample.log_rest], np.float64),
            "samples/n_components": np.array([sample.log_w.size], np.int64),
            "samples/log_w": np.asarray(sample.log_w, np.float64),
            "samples/log_phi": np.asarray(sample.log_phi, np.float64)}


def samples_from_arrays(arrays: dict[str, np.ndarray]) -> list[Sample]:
    """The kept samples back from the run's ``samples/`` arrays."""
    if "n_components" not in arrays:
        return []
    ends = np.cumsum(arrays["n_components"])
    starts = ends - arrays["n_components"]
    return [Sample(arrays["log_w"][a:b], arrays["log_phi"][a:b], float(rest), float(alpha))
            for a, b, rest, alpha in zip(starts, ends, arrays["log_rest"], arrays["alpha"])]


class DPEvaluation(NamedTuple):
    iteration: int
    log_predictive: float
    n_clusters: int


class _DPMixture(MixtureBase):
    """What both DP samplers share: kept samples (and how many components they
    hold) and their held-out score."""

    name = "dpmm"
    resident = False  # its allocations are written in document order
    unit = "users"
    Evaluation = DPEvaluation
    sample_arrays = staticmethod(sample_arrays)

    def __init__(self, config: DPMMConfig, data: Data, executor, keep_samples: bool = True):
        super().__init__(config, data, executor, keep_samples)
        self.sample_components = 0

    @staticmethod
    def log_weights_of(sample: Sample) -> np.ndarray:
        return sample.log_w

    def score_sample(self, sample: Sample) -> np.ndarray:
        """Per-user log predictive of the held-out users under one sample."""
        return user_scores(self.executor, self.data.heldout, sample, self.config.a0,
                           self.data.n_words)

    def _on_keep(self, sample: Sample) -> None:
        self.sample_components += sample.log_w.size

    def evaluation_extras(self) -> dict[str, Any]:
        return {"n_clusters": self.n_clusters}

    def state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        arrays, values = self.kept.state()
        arrays.update(self.parameters())
        return arrays, {**values, "sample_components": self.sample_components,
                        "alpha": float(self.alpha)}

    def _restore_bookkeeping(self, arrays, values, samples) -> None:
        self.sample_components = int(values["sample_components"])
        self.kept.restore(arrays, values, samples_from_arrays(samples) if self.kept.keep else [])

    def sample_rows(self) -> dict[str, int]:
        rows = {f"samples/{k}": self.kept.n_samples
                for k in ("iteration", "alpha", "log_rest", "n_components")}
        rows.update({"samples/log_w": self.sample_components,
                     "samples/log_phi": self.sample_components})
        return rows

    def progress(self, stats: dict[str, Any]) -> dict[str, Any]:
        return {"clusters": stats["n_clusters"], "K": stats["n_components"],
                "alpha": f"{stats['alpha']:.3g}"}


class DPMMModel(_DPMixture):
    """The stochastic slice sampler (SCIR or SGRLD steps): sticks, alpha and every
    training user's last allocation on the driver, the components in column
    blocks there or on the workers (``held``, by ``config.placement``); users on
    the workers."""

    minibatch = True
    state_group = "theta"

    def __init__(self, config: DPMMConfig, data: Data, executor, keep_samples: bool = True):
        super().__init__(config, data, executor, keep_samples)
        start = self._start_components()
        z0, log_sticks, log_theta, self.alpha = initial_state(
            data.train.size, data.n_words, config.n_init if start is None else len(start),
            (config.alpha_shape, config.alpha_rate), config.seed)
        self._start_stochastic(z0, "the DP mixture adds and drops components every "
                               "iteration and runs without momenta")
        if start is not None:
            log_theta = start
        self.sticks = self.sampler.init_log(log_sticks)
        placement = resolve_placement(config.placement, len(log_theta), data.n_words, executor)
        self.held = Components(executor, self.sampler, self.sampler.init_log(log_theta),
                               placement)

    def _start_components(self) -> np.ndarray | None:
        """The seeded (``init="kmeans++"``) or collapsed start's log components, read
        from training users on the workers; None for the random start."""
        cfg, data = self.config, self.data
        key = derive(cfg.seed, domains.DP_INIT, 2)
        if cfg.init == "kmeans++":
            return seed_on_workers(self.executor, data.train, data.n_words, cfg.n_init, cfg.a0,
                                   key)
        if cfg.init == "collapsed":
            # imported here: the finite mixture's modules import the DP's
            from dscir.models.mixtures.finite.collapsed import collapsed_start_on_workers
            gamma = start_gamma(cfg.n_init, (cfg.alpha_shape, cfg.alpha_rate))
            start = collapsed_start_on_workers(self.executor, data.train, data.n_words, key=key,
                                               n_clusters=cfg.n_init, gamma=gamma, a0=cfg.a0)
            return occupied_by_size(*start, gamma)
        return None

    @property
    def theta(self):
        """The components' sampler state (dense, on the driver)."""
        return self.sampler.State(**self.held.fields())

    @property
    def n_components(self) -> int:
        return int(self.sticks.log_theta.shape[0])

    @property
    def n_clusters(self) -> int:
        return int(np.count_nonzero(np.bincount(self.z[self.data.train])))

    def sample(self) -> Sample:
        return self.weights_sample()._replace(log_phi=self.held.log_phi())

    def weights_sample(self) -> Sample:
        log_w, log_rest = log_weights(self.sticks.log_theta)
        return Sample(log_w, None, log_rest, self.alpha)

    def score_current(self) -> np.ndarray:
        return user_scores(self.executor, self.data.heldout, self.weights_sample(),
                           self.config.a0, self.data.n_words, self.held.columns)

    def labels(self) -> np.ndarray:
        return self.z

    def _extend(self, m: int, log_u: np.ndarray) -> None:
        """Add prior sticks and components until sum_j w_j > 1 - min u."""
        cfg, s = self.config, self.sampler
        _, log_rest = log_weights(self.sticks.log_theta)
        extra = new_sticks(log_rest, float(log_u.min()), self.alpha,
                           derive(cfg.seed, domains.DP_EXTEND, m))
        if extra.shape[0]:
            self.sticks = s.concat(self.sticks, s.init_log(extra))
            self.held.extend(extra.shape[0], cfg.a0,
                             derive(cfg.seed, domains.DP_NEW_COMPONENTS, m))

    def _relabel(self, m: int, occupancy: np.ndarray) -> np.ndarray:
        """The relabelling move (``dscir.models.mixtures.dp.relabel``) by every training
        user's allocation: components, allocations and the minibatch's
        ``occupancy`` follow their labels, the sticks are drawn from v | z given
        every training user's allocation (``conditional_sticks``); labels past
        the last occupied one are dropped.
        Returns the occupancy by new label."""
        cfg, s, k = self.config, self.sampler, self.n_components
        train = self.data.train
        key = derive(cfg.seed, domains.DP_RELABEL, m)
        users = np.bincount(self.z[train], minlength=k)
        order, fresh = relabel(users, self.alpha, key)
        if fresh:
            self.held.extend(fresh, cfg.a0, derive(key, 1))
            occupancy = np.concatenate([occupancy, np.zeros(fresh, occupancy.dtype)])
            users = np.concatenate([users, np.zeros(fresh, users.dtype)])
        self.sticks = s.init_log(conditional_sticks(users[order], self.alpha, derive(key, 2)))
        if not np.array_equal(order, np.arange(order.size)):
            self.held.permute(order)
        elif order.size < k + fresh:
            self.held.head(order.size)
        self.z[train] = new_labels(order, k + fresh)[self.z[train]]
        return occupancy[order]

    @property
    def split_merge_every(self) -> int:
        """Iterations between split-merge moves: one pass over the training users."""
        return max(1, round(self.data.train.size / self.config.batch_size))

    def _split_merge(self, m: int) -> None:
        """Split-merge moves on every training user's allocation, then the components
        of the clusters whose users changed drawn from Gamma(a0 + their counts)
        (new labels get rows first)."""
        cfg, s, train = self.config, self.sampler, self.data.train
        key = derive(cfg.seed, domains.DP_SPLIT_MERGE, m)
        parts = self.executor.read_blocks([train], "read-split-merge")
        args = (self.z[train].astype(np.int64), self.data.n_words, cfg.a0, self.alpha,
                cfg.split_merge, key)
        [out] = self.executor.run("split-merge", split_merge_users, parts, [args])
        if out.changed.size == 0:
            return
        grow = int(out.changed[-1]) + 1 - self.n_components
        if grow > 0:
            self.sticks = s.concat(self.sticks, s.init_log(np.zeros((grow, 2))))
            self.held.extend(grow, cfg.a0, derive(key, 1))
        self.held.replace(out.changed, sample_stationary(cfg.a0 + out.counts, derive(key, 2)))
        self.z[train] = out.z

    def step(self, m: int, parts) -> dict[str, Any]:
        cfg, users = self.config, parts.docs
        log_w, _ = log_weights(self.sticks.log_theta)
        log_u = slice_log_u(log_w, self.z[users], users, derive(cfg.seed, domains.DP_SLICE, m))
        self._extend(m, log_u)
        log_w, _ = log_weights(self.sticks.log_theta)
        k = self.n_components
        key = derive(cfg.seed, domains.DP_ALLOCATE, m)
        ends = np.cumsum([p.size for p in parts.parts])
        words = self.executor.words(parts)
        args = [(c, log_u[e - p.size:e], log_w, key)
                for p, c, e in zip(parts.parts, self.held.columns(words), ends)]
        results = self.held.allocate(self.executor, allocate_users, parts, args)
        scale = self.n_documents / users.size
        occupancy, _ = self.held.advance(results, words, self.z, a0=cfg.a0, scale=scale,
                                         h=cfg.step_theta,
                                         key=derive(cfg.seed, domains.DP_COMPONENTS, m))
        if cfg.split_merge and m % self.split_merge_every == 0:
            self._split_merge(m)
            occupancy = np.bincount(self.z[users], minlength=self.n_components)
        occupancy = self._relabel(m, occupancy)
        self.sticks, self.alpha = sticks_step(
            self.sampler, self.sticks, self.alpha, occupancy * scale,
            alpha_prior=(cfg.alpha_shape, cfg.alpha_rate), step_size=cfg.step_sticks,
            keys=[derive(cfg.seed, d, m) for d in (domains.DP_STICKS, domains.DP_ALPHA)])
        return {"n_clusters": self.n_clusters, "n_components": k, "alpha": self.alpha,
                "n_docs": int(cfg.batch_size)}

    def driver_parameters(self) -> dict[str, np.ndarray]:
        state = {f"sticks/{k}": v for k, v in self.sampler.arrays(self.sticks).items()}
        state["z"] = self.z
        return state

    def component_fields(self) -> dict[str, np.ndarray]:
        return self.held.fields()

    def restore(self, arrays, values, samples) -> None:
        self.sticks = self.sampler.from_arrays(group(arrays, "sticks"))
        self.held.load(group(arrays, "theta"))
        self.z = np.array(arrays["z"], dtype=np.int32)
        self.alpha = float(values["alpha"])
        self._restore_bookkeeping(arrays, values, samples)


class DPGibbsModel(_DPMixture):
    """The exact Gibbs slice sampler on all training users, in the driver's process."""

    minibatch = False

    def __init__(self, config: DPMMConfig, data: Data, executor, keep_samples: bool = True):
        super().__init__(config, data, executor, keep_samples)
        train = executor.read(data.train).batches[0]
        self.gibbs = GibbsSlice(
            train.indptr, train.indices, train.data, data.n_words, a0=config.a0,
            alpha_prior=(config.alpha_shape, config.alpha_rate), n_init=config.n_init,
            seed=config.seed, user_ids=data.train, init=config.init,
            split_merge=config.split_merge)

    alpha = property(lambda self: self.gibbs.alpha)
    n_clusters = property(lambda self: self.gibbs.n_clusters)
    n_components = property(lambda self: self.gibbs.n_components)

    def sample(self) -> Sample:
        return self.gibbs.sample()

    def weights_sample(self) -> Sample:
        return self.sample()._replace(log_phi=None)

    def labels(self) -> np.ndarray:
        z = np.full(self.data.n_docs, -1, dtype=np.int32)
        z[self.data.train] = self.gibbs.z
        return z

    def step(self, m: int, parts) -> dict[str, Any]:
        self.gibbs.iteration = m  # names the sweep's random streams
        self.gibbs.step()
        return {"n_clusters": self.n_clusters, "n_components": self.gibbs.n_proposed,
                "alpha": self.alpha, "n_docs": int(self.data.train.size)}

    def parameters(self) -> dict[str, np.ndarray]:
        g = self.gibbs
        return {"z": g.z, "log_sticks": g.log_sticks, "log_theta": g.log_theta,
                "n_proposed": np.array([g.n_proposed], np.int64)}

    def restore(self, arrays, values, samples) -> None:
        g = self.gibbs
        g.z = np.array(arrays["z"], dtype=g.z.dtype)
        g.log_sticks, g.log_theta = np.array(arrays["log_sticks"]), np.array(arrays["log_theta"])
        g.n_proposed = int(arrays["n_proposed"][0])
        g.alpha = float(values["alpha"])
        self._restore_bookkeeping(arrays, values, samples)


def model_type(sampler: str) -> type[_DPMixture]:
    """The DP model class a sampler runs: exact Gibbs in process, or the stochastic one."""
    return DPGibbsModel if sampler == "gibbs" else DPMMModel


def predictive_score(executor, users: np.ndarray, samples: list[Sample], a0: float,
                     n_words: int, columns=None) -> float:
    """Held-out log predictive of ``users`` averaged over ``samples`` (in log space
    per user, then the mean over users), by ``executor``'s tasks (``columns``:
    where the one sample's log phi columns come from when not from it)."""
    average = PredictiveAverage()
    for sample in samples:
        average.add(user_scores(executor, users, sample, a0, n_words, columns))
    return average.mean()


def user_scores(executor, users: np.ndarray, sample: Sample, a0: float, n_words: int,
                columns=None) -> np.ndarray:
    """Per-user log predictive of ``users`` (sorted) under one sample, by tasks that
    get only the columns of log phi of their areas (``columns(words)``: where
    they come from when not from ``sample``)."""
    parts = executor.read(np.asarray(users, np.int64), "read-heldout")
    words = executor.words(parts)
    cols = (columns(words) if columns is not None else
            [np.ascontiguousarray(sample.log_phi[:, w]) for w in words])
    args = [(c, sample.log_w, sample.log_rest, a0, n_words) for c in cols]
    return np.concatenate(executor.run("score", user_log_predictive, parts, args))


def final_sample(config: DPMMConfig, state: dict[str, np.ndarray], alpha: float,
                 with_phi: bool = True) -> Sample:
    """The sample of a run's final ``state/`` arrays (either sampler's layout);
    without its K x W log phi (None, not read) unless ``with_phi``."""
    gibbs = config.sampler == "gibbs"
    s = None if gibbs else get_sampler(config.sampler)
    log_sticks = (state["log_sticks"] if gibbs else
                  s.from_arrays({k: state[f"sticks/{k}"] for k in s.State._fields}).log_theta)
    log_w, log_rest = log_weights(log_sticks)
    if not with_phi:
        return Sample(log_w, None, log_rest, alpha)
    log_theta = state["log_theta"] if gibbs else s.from_arrays(group(state, "theta")).log_theta
    return Sample(log_w, normalize_log(log_theta, axis=1), log_rest, alpha)
