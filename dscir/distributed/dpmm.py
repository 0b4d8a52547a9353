"""The Dirichlet-process mixture drivers: the stochastic slice sampler on Dask
and the exact Gibbs slice sampler in this process, behind one interface.

One iteration ``m`` of the stochastic slice sampler (Baker et al. 2018, App. D):

1. take the next minibatch S of training users (``minibatch``); workers read
   them from the Zarr store (prefetched during the previous iteration) and
   report the areas they use;
2. slice variables u_i ~ U(0, w_{z_i}) for i in S, from each user's last
   allocation (all training users start uniform over ``n_init`` components);
3. add prior sticks and components until sum_j w_j > 1 - min u;
4. workers allocate their users over {j : w_j > u_i} given log phi (only the
   columns of their areas) and return integer user counts and area counts per
   component; the driver adds them (exact in any order);
5. with m_hat = (N / |S|) x users per component and c_hat = (N / |S|) x area
   counts: the stick gammas take one sampler step towards Beta(1 + m_hat_j,
   alpha + sum_{l>j} m_hat_l), the component gammas one towards Gamma(a0 +
   c_hat), by SCIR (or SGRLD);
6. alpha | v from its Gamma conditional; components past the last label any
   training user holds are dropped (emptied components keep their index).

Every random draw comes from a stream derive(seed, DOMAIN, m, ...) with the
domains below, per user where a draw belongs to a user, so a run is the same
whatever the number of workers.
"""

from __future__ import annotations

import dataclasses
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from distributed import Client

from dscir.corpus import Corpus, CSRBatch
from dscir.distributed import monitor, tasks
from dscir.distributed.minibatch import EpochPosition, next_minibatch
from dscir.distributed.runstore import absolute_store, check_continues, flat, nested
from dscir.errors import DscirError
from dscir.models import dpmm
from dscir.rng import derive
from dscir.samplers import cir, get_sampler, sgrld
from dscir.samplers._expanded import TINY
from dscir.samplers.simplex import normalize_log

# Stream domains of the DP mixture: derive(seed, DOMAIN, iteration, ...).
SLICE = 20
EXTEND = 21
ALLOCATE = 22
STICKS = 23
COMPONENTS = 24
ALPHA = 25
NEW_COMPONENTS = 26

SAMPLERS = ("scir", "sgrld", "gibbs")


@dataclass(frozen=True)
class DPMMConfig:
    """Everything that determines a DP-mixture chain (with the corpus and the seed)."""

    sampler: str  # "scir" or "sgrld" (stochastic, on Dask) or "gibbs" (exact)
    a0: float  # Dirichlet(a0) base measure of the components
    alpha_shape: float  # Gamma(shape, rate) prior of the DP concentration
    alpha_rate: float
    batch_size: int  # users per minibatch (ignored by "gibbs")
    step_theta: float  # h (SCIR) or epsilon (SGRLD) of the components
    step_sticks: float  # the same for the stick gammas
    n_init: int  # components at the start
    seed: int
    burn_in: int = 0  # iterations before posterior samples are kept
    thin: int = 10  # keep every thin-th iteration after burn_in

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class IterationStats(NamedTuple):
    iteration: int
    n_clusters: int  # components holding at least one training user's label
    n_components: int  # components represented in the iteration (after the slice extension)
    alpha: float
    wall: float  # seconds for the whole iteration
    n_docs: int  # users allocated in the iteration


class AllocationResult(NamedTuple):
    users: np.ndarray  # int64 [n] the task's users
    z: np.ndarray  # int32 [n] their new allocations
    components: np.ndarray  # int64 [C] components they occupy
    n_users: np.ndarray  # int64 [C] users in each
    words: np.ndarray  # int64 [U] areas the users visit
    counts: np.ndarray  # int64 [C, U] summed counts


def allocate_users(batch: CSRBatch, words: np.ndarray, log_phi_cols: np.ndarray,
                   log_u: np.ndarray, log_w: np.ndarray, key: int) -> AllocationResult:
    """Worker task: allocate a batch of users given their slices and log phi
    of their areas, and return integer statistics per component."""
    local = np.searchsorted(words, batch.indices)
    z = dpmm.allocate(batch.indptr, local, batch.data, batch.docs, log_u, log_w,
                      log_phi_cols, key)
    cc = dpmm.component_counts(batch.indptr, local, batch.data, z, words.size)
    return AllocationResult(np.asarray(batch.docs, np.int64), z, cc.components, cc.users,
                            words, cc.counts)


def user_log_predictive(path: str, users: np.ndarray, sample: dpmm.Sample,
                        a0: float) -> np.ndarray:
    """Worker task: per-user log predictive of users read from the store."""
    b = tasks.open_store(path).read(users)
    return dpmm.log_predictive(b.indptr, b.indices, b.data, sample.log_w, sample.log_phi,
                               sample.log_rest, a0, sample.log_phi.shape[1])


def _from_log(sampler: str, log_values: np.ndarray):
    """A sampler state holding exp(log_values): SCIR keeps logs, SGRLD linear
    values (floored at the smallest double so that they stay positive)."""
    if sampler == "scir":
        return cir.init_log(log_values)
    return sgrld.init(np.maximum(np.exp(log_values), TINY))


def _concat(state, more):
    return type(state)(np.concatenate([state[0], more[0]]))


def _head(state, n: int):
    return type(state)(state[0][:n])


@dataclass
class Checkpoint:
    """A DP-mixture chain at one iteration, as arrays and JSON values (no pickle).

    ``state`` holds the driver's own arrays (sticks, components, every training
    user's allocation); the random streams are named by (seed, iteration), so
    these, the minibatch position and alpha continue the chain exactly.
    """

    config: dict[str, Any]  # DPMMConfig.to_dict()
    store: str
    iteration: int
    position: EpochPosition
    alpha: float
    state: dict[str, np.ndarray]
    n_samples: int  # posterior samples kept so far
    sample_components: int  # their components in all (rows of samples/log_phi)
    average_log_sum: np.ndarray  # PredictiveAverage.log_sum ([0] while none is scored)
    average_n: int
    history: dict[str, np.ndarray]  # IterationStats fields
    evaluations: dict[str, np.ndarray]  # iteration, log_predictive, n_clusters

    def to_stored(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        arrays = flat(state=self.state, history=self.history, evaluations=self.evaluations)
        arrays["average_log_sum"] = self.average_log_sum
        epoch, offset = self.position
        meta = {"config": self.config, "store": self.store, "iteration": int(self.iteration),
                "epoch": int(epoch), "offset": int(offset), "alpha": float(self.alpha),
                "n_samples": int(self.n_samples),
                "sample_components": int(self.sample_components),
                "average_n": int(self.average_n)}
        return meta, arrays

    @classmethod
    def from_stored(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> Checkpoint:
        return cls(
            config=dict(meta["config"]), store=meta["store"], iteration=int(meta["iteration"]),
            position=EpochPosition(int(meta["epoch"]), int(meta["offset"])),
            alpha=float(meta["alpha"]), state=nested(arrays, "state"), n_samples=int(meta["n_samples"]),
            sample_components=int(meta["sample_components"]),
            average_log_sum=arrays["average_log_sum"], average_n=int(meta["average_n"]),
            history=nested(arrays, "history"),
            evaluations=nested(arrays, "evaluations"))

    def sample_rows(self) -> dict[str, int]:
        rows = {f"samples/{k}": self.n_samples for k in ("iteration", "alpha", "log_rest",
                                                         "n_components")}
        rows.update({"samples/log_w": self.sample_components,
                     "samples/log_phi": self.sample_components})
        return rows

    def check(self, config: DPMMConfig, store: str) -> None:
        """Raise unless this checkpoint continues a chain of ``config`` on ``store``."""
        check_continues(self.config, self.store, config, store)


def sample_arrays(iteration: int, sample: dpmm.Sample) -> dict[str, np.ndarray]:
    """One kept sample as rows of the run's ``samples/`` arrays (components stacked)."""
    return {"samples/iteration": np.array([iteration], np.int64),
            "samples/alpha": np.array([sample.alpha], np.float64),
            "samples/log_rest": np.array([sample.log_rest], np.float64),
            "samples/n_components": np.array([sample.log_w.size], np.int64),
            "samples/log_w": np.asarray(sample.log_w, np.float64),
            "samples/log_phi": np.asarray(sample.log_phi, np.float64)}


def samples_from_arrays(arrays: dict[str, np.ndarray]) -> list[dpmm.Sample]:
    """The kept samples back from the run's ``samples/`` arrays."""
    if "n_components" not in arrays:
        return []
    ends = np.cumsum(arrays["n_components"])
    starts = ends - arrays["n_components"]
    return [dpmm.Sample(arrays["log_w"][a:b], arrays["log_phi"][a:b], float(rest), float(alpha))
            for a, b, rest, alpha in zip(starts, ends, arrays["log_rest"], arrays["alpha"])]


class _Chain:
    """Bookkeeping shared by both drivers: kept samples and the held-out score.

    After ``burn_in`` every ``thin``-th iteration's sample is kept; its held-out
    log predictive per user enters a running log-space average
    (``dscir.models.dpmm.PredictiveAverage``)."""

    def __init__(self, config: DPMMConfig, store: str, store_samples: bool):
        self.config = config
        self.store = str(store)
        corpus = Corpus.open(self.store)
        self.n_users_total = corpus.n_docs
        self.n_words = corpus.n_words
        self.train_users = np.asarray(corpus.train_docs(), dtype=np.int64)
        self.heldout_users = np.asarray(corpus.heldout_docs(), dtype=np.int64)
        if self.train_users.size == 0:
            raise DscirError(f"{self.store} has no training users")
        self.iteration = 0
        self.history: list[IterationStats] = []
        self.average = dpmm.PredictiveAverage()
        self.store_samples = store_samples
        self.samples: list[dpmm.Sample] = []
        self.n_samples = 0
        self.sample_components = 0
        self.last_sample: dpmm.Sample | None = None  # when the last step kept one
        self.evaluations: list[Evaluation] = []
        self.position = EpochPosition()

    # subclasses: _advance() -> n_components, sample(), n_clusters, alpha,
    # _score_sample(sample) -> per-user log predictive of the held-out users,
    # _state() -> arrays, _restore(state, alpha)

    def step(self) -> IterationStats:
        start = time.perf_counter()
        n_components = self._advance()
        self.iteration += 1
        cfg = self.config
        self.last_sample = None
        if self.iteration > cfg.burn_in and (self.iteration - cfg.burn_in) % cfg.thin == 0:
            sample = self.last_sample = self.sample()
            self.n_samples += 1
            self.sample_components += sample.log_w.size
            if self.store_samples:
                self.samples.append(sample)
            if self.heldout_users.size:
                self.average.add(self._score_sample(sample))
        stats = IterationStats(self.iteration, self.n_clusters, n_components, self.alpha,
                               time.perf_counter() - start, self.users_per_iteration)
        self.history.append(stats)
        return stats

    def score(self) -> float:
        """Average held-out log predictive: over the kept samples, or under the
        current state while none is kept."""
        if self.heldout_users.size == 0:
            raise DscirError(
                f"{self.store} has no held-out users to score; split it first "
                "(dscir ingest --heldout-every, or dscir.corpus.split_heldout)")
        if self.average.n_samples:
            return self.average.mean()
        return float(np.mean(self._score_sample(self.sample())))

    @property
    def users_per_iteration(self) -> int:
        return int(self.train_users.size)

    def checkpoint(self) -> Checkpoint:
        """The whole chain now, as arrays and JSON values (copies)."""
        return Checkpoint(
            config=self.config.to_dict(), store=absolute_store(self.store),
            iteration=self.iteration, position=self.position, alpha=float(self.alpha),
            state={k: np.array(v) for k, v in self._state().items()},
            n_samples=self.n_samples, sample_components=self.sample_components,
            average_log_sum=(np.zeros(0) if self.average.log_sum is None
                             else self.average.log_sum.copy()),
            average_n=self.average.n_samples,
            history={f: np.array([getattr(s, f) for s in self.history],
                                 dtype=np.float64 if f in ("alpha", "wall") else np.int64)
                     for f in IterationStats._fields},
            evaluations={
                "iteration": np.array([e.iteration for e in self.evaluations], np.int64),
                "log_predictive": np.array([e.log_predictive for e in self.evaluations]),
                "n_clusters": np.array([e.n_clusters for e in self.evaluations], np.int64)})

    def restore(self, ckpt: Checkpoint, samples: list[dpmm.Sample] | None = None) -> None:
        """Continue from ``ckpt`` (of this configuration and corpus); ``samples``
        are the kept samples up to it, when the chain keeps them."""
        ckpt.check(self.config, self.store)
        self.iteration = ckpt.iteration
        self._restore(ckpt.state, ckpt.alpha)
        self.position = EpochPosition(*ckpt.position)
        self.n_samples, self.sample_components = ckpt.n_samples, ckpt.sample_components
        self.average = dpmm.PredictiveAverage()
        if ckpt.average_n:
            self.average.log_sum = np.array(ckpt.average_log_sum, dtype=np.float64)
            self.average.n_samples = ckpt.average_n
        self.history = [IterationStats(*(t.item() for t in row))
                        for row in zip(*(ckpt.history[f] for f in IterationStats._fields))]
        ev = ckpt.evaluations
        self.evaluations = [Evaluation(int(i), float(p), int(c)) for i, p, c in
                            zip(ev["iteration"], ev["log_predictive"], ev["n_clusters"])]
        self.samples = list(samples or []) if self.store_samples else []
        if self.store_samples and len(self.samples) != self.n_samples:
            raise DscirError(f"the run holds {len(self.samples)} samples, its checkpoint "
                             f"{self.n_samples}")
        self.last_sample = None

    def close(self) -> None:
        pass


class DPMMDriver(_Chain):
    """The stochastic slice sampler (SCIR or SGRLD steps) on a Dask cluster.

    The driver owns the chain (sticks, components, alpha, every training
    user's last allocation); workers own the data.
    """

    def __init__(self, client: Client, store: str, config: DPMMConfig,
                 store_samples: bool = True):
        super().__init__(config, store, store_samples)
        if config.sampler not in ("scir", "sgrld"):
            raise DscirError(f"DPMMDriver runs 'scir' or 'sgrld', got {config.sampler!r}")
        if config.batch_size > self.train_users.size:
            raise DscirError(f"batch_size={config.batch_size} exceeds the "
                             f"{self.train_users.size} training users of {self.store}")
        self.client = client
        self.sampler = get_sampler(config.sampler)
        z0, log_sticks, log_theta, self.alpha = dpmm.initial_state(
            self.train_users.size, self.n_words, config.n_init,
            (config.alpha_shape, config.alpha_rate), config.seed)
        self.z = np.full(self.n_users_total, -1, dtype=np.int32)
        self.z[self.train_users] = z0
        self.sticks = _from_log(config.sampler, log_sticks)
        self.theta = _from_log(config.sampler, log_theta)
        self._token = uuid.uuid4().hex[:8]
        self._pending = None

    @property
    def n_components(self) -> int:
        return int(self.sticks[0].shape[0])

    @property
    def n_clusters(self) -> int:
        return int(np.count_nonzero(np.bincount(self.z[self.train_users])))

    def sample(self) -> dpmm.Sample:
        log_w, log_rest = dpmm.log_weights(self.sticks.log_theta)
        return dpmm.Sample(log_w, normalize_log(self.theta.log_theta, axis=1), log_rest,
                           self.alpha)

    @property
    def users_per_iteration(self) -> int:
        return self.config.batch_size

    def _state(self) -> dict[str, np.ndarray]:
        state = {f"sticks/{k}": v for k, v in self.sticks._asdict().items()}
        state.update({f"theta/{k}": v for k, v in self.theta._asdict().items()})
        state["z"] = self.z
        return state

    def _restore(self, state: dict[str, np.ndarray], alpha: float) -> None:
        pick = lambda prefix: {k.split("/", 1)[1]: np.array(v) for k, v in state.items()  # noqa: E731
                               if k.startswith(prefix + "/")}
        self.sticks = self.sampler.State(**pick("sticks"))
        self.theta = self.sampler.State(**pick("theta"))
        self.z = np.array(state["z"], dtype=np.int32)
        self.alpha = float(alpha)
        self._pending = None

    @property
    def _n_parts(self) -> int:
        return max(2 * sum(self.client.nthreads().values()), 1)

    def _submit_reads(self, iteration: int, position: EpochPosition):
        users, after = next_minibatch(self.train_users, self.config.batch_size,
                                      self.config.seed, position)
        parts = []
        for j, part in enumerate(np.array_split(users, min(self._n_parts, users.size))):
            batch = self.client.submit(tasks.read_batch, self.store, part,
                                       key=(f"dscir-dpmm-read-{self._token}", iteration, j))
            words = self.client.submit(tasks.batch_words, batch,
                                       key=(f"dscir-dpmm-words-{self._token}", iteration, j))
            parts.append((part, batch, words))
        return iteration, users, after, parts

    def _advance(self, prefetch: bool = True) -> int:
        cfg, m = self.config, self.iteration
        pending = self._pending
        if pending is None or pending[0] != m:
            pending = self._submit_reads(m, self.position)
        self._pending = self._submit_reads(m + 1, pending[2]) if prefetch else None
        _, users, after, parts = pending

        log_w, log_rest = dpmm.log_weights(self.sticks.log_theta)
        log_u = dpmm.slice_log_u(log_w, self.z[users], users, derive(cfg.seed, SLICE, m))
        extra = dpmm.new_sticks(log_rest, float(log_u.min()), self.alpha,
                                derive(cfg.seed, EXTEND, m))
        if extra.shape[0]:
            self.sticks = _concat(self.sticks, _from_log(cfg.sampler, extra))
            new = dpmm.prior_components(extra.shape[0], self.n_words, cfg.a0,
                                        derive(cfg.seed, NEW_COMPONENTS, m))
            self.theta = _concat(self.theta, _from_log(cfg.sampler, new))
            log_w, log_rest = dpmm.log_weights(self.sticks.log_theta)
        k = self.n_components

        log_phi = normalize_log(self.theta.log_theta, axis=1)
        words = self.client.gather([p[2] for p in parts])
        key = derive(cfg.seed, ALLOCATE, m)
        futures, offset = [], 0
        for j, ((part, batch, _), w) in enumerate(zip(parts, words)):
            futures.append(self.client.submit(
                allocate_users, batch, w, np.ascontiguousarray(log_phi[:, w]),
                log_u[offset : offset + part.size], log_w, key,
                key=(f"dscir-dpmm-allocation-{self._token}", m, j)))
            offset += part.size
        results: list[AllocationResult] = self.client.gather(futures)

        occupancy = np.zeros(k, dtype=np.int64)
        counts = np.zeros((k, self.n_words), dtype=np.int64)
        for r in results:  # integer sums: exact in any order
            self.z[r.users] = r.z
            occupancy[r.components] += r.n_users
            counts[np.ix_(r.components, r.words)] += r.counts
        scale = self.train_users.size / users.size
        self.sticks, self.theta, self.alpha = dpmm.global_step(
            self.sampler, self.sticks, self.theta, self.alpha, occupancy * scale,
            counts * scale, a0=cfg.a0, alpha_prior=(cfg.alpha_shape, cfg.alpha_rate),
            step_sizes=(cfg.step_theta, cfg.step_sticks),
            keys=[derive(cfg.seed, d, m) for d in (STICKS, COMPONENTS, ALPHA)])
        keep = int(self.z.max()) + 1
        self.sticks, self.theta = _head(self.sticks, keep), _head(self.theta, keep)
        self.position = after
        return k

    def _score_sample(self, sample: dpmm.Sample) -> np.ndarray:
        return heldout_log_predictive(self.client, self.store, self.heldout_users, sample,
                                      self.config.a0, self._n_parts)

    def close(self) -> None:
        """Release prefetched reads still held on the workers."""
        self._pending = None


def heldout_log_predictive(client: Client, store: str, users: np.ndarray,
                           sample: dpmm.Sample, a0: float, n_parts: int) -> np.ndarray:
    """Per-user log predictive of ``users`` of ``store`` under one sample, on workers."""
    users = np.asarray(users, dtype=np.int64)
    # The sample travels inside each task (it is small), never as scattered data
    # that a lost worker would take with it.
    token = uuid.uuid4().hex[:8]
    parts = np.array_split(users, min(n_parts, users.size))
    futures = [client.submit(user_log_predictive, store, part, sample, a0,
                             key=(f"dscir-dpmm-score-{token}", j))
               for j, part in enumerate(parts)]
    return np.concatenate(client.gather(futures))


class GibbsDriver(_Chain):
    """The exact Gibbs slice sampler on all training users, in this process."""

    def __init__(self, store: str, config: DPMMConfig, store_samples: bool = True):
        super().__init__(config, store, store_samples)
        corpus = Corpus.open(self.store)
        train = corpus.read(self.train_users)
        self.gibbs = dpmm.GibbsSlice(
            train.indptr, train.indices, train.data, self.n_words, a0=config.a0,
            alpha_prior=(config.alpha_shape, config.alpha_rate), n_init=config.n_init,
            seed=config.seed, user_ids=self.train_users)
        self._heldout: CSRBatch | None = (corpus.read(self.heldout_users)
                                          if self.heldout_users.size else None)

    alpha = property(lambda self: self.gibbs.alpha)
    n_clusters = property(lambda self: self.gibbs.n_clusters)
    n_components = property(lambda self: self.gibbs.n_components)

    @property
    def z(self) -> np.ndarray:
        z = np.full(self.n_users_total, -1, dtype=np.int32)
        z[self.train_users] = self.gibbs.z
        return z

    def sample(self) -> dpmm.Sample:
        return self.gibbs.sample()

    def _state(self) -> dict[str, np.ndarray]:
        g = self.gibbs
        return {"z": g.z, "log_sticks": g.log_sticks, "log_theta": g.log_theta,
                "n_proposed": np.array([g.n_proposed], np.int64)}

    def _restore(self, state: dict[str, np.ndarray], alpha: float) -> None:
        g = self.gibbs
        g.z = np.array(state["z"], dtype=g.z.dtype)
        g.log_sticks, g.log_theta = np.array(state["log_sticks"]), np.array(state["log_theta"])
        g.n_proposed = int(state["n_proposed"][0])
        g.alpha = float(alpha)
        g.iteration = self.iteration  # names the sweeps' random streams

    def _advance(self) -> int:
        self.gibbs.step()
        return self.gibbs.n_proposed

    def _score_sample(self, sample: dpmm.Sample) -> np.ndarray:
        h = self._heldout
        return dpmm.log_predictive(h.indptr, h.indices, h.data, sample.log_w, sample.log_phi,
                                   sample.log_rest, self.config.a0, self.n_words)


@dataclass
class Evaluation:
    iteration: int
    log_predictive: float
    n_clusters: int


def run_chain(driver: _Chain, n_iter: int, *, eval_every: int = 0, progress: bool = True,
              on_step: Callable[[IterationStats], None] | None = None,
              on_sample: Callable[[int, dpmm.Sample], None] | None = None,
              checkpoint: Callable[[_Chain], None] | None = None,
              checkpoint_every: int = 0) -> list[Evaluation]:
    """Advance ``driver`` by ``n_iter`` iterations, scoring the held-out users at
    every iteration that is a multiple of ``eval_every`` (and at the end) when
    ``eval_every > 0``; returns the new scores (also in ``driver.evaluations``).

    ``on_sample(iteration, sample)`` receives each kept sample; ``checkpoint(driver)``
    is called at every multiple of ``checkpoint_every``, after that iteration's
    sample and score, so a resumed chain scores and checkpoints where an
    uninterrupted one does.
    """
    from tqdm.auto import tqdm

    cfg = driver.config
    client = getattr(driver, "client", None)
    report = monitor.RunReporter(
        client, "dpmm", metric="log_predictive", sampler=cfg.sampler,
        store=os.path.basename(driver.store.rstrip("/")), batch_size=cfg.batch_size,
        seed=cfg.seed,
    )
    if client is not None:
        monitor.ensure_monitor(client)
    report.start(driver.iteration, driver.iteration + n_iter)
    evaluations: list[Evaluation] = []
    bar = tqdm(total=driver.iteration + n_iter, initial=driver.iteration, disable=not progress,
               unit="it", desc=f"dscir dpmm ({cfg.sampler})")
    status = "failed"
    try:
        for i in range(n_iter):
            stats = driver.step()
            m = driver.iteration
            report.iteration(**stats._asdict())
            if on_step is not None:
                on_step(stats)
            if on_sample is not None and driver.last_sample is not None:
                on_sample(m, driver.last_sample)
            postfix = {"clusters": stats.n_clusters, "K": stats.n_components,
                       "alpha": f"{stats.alpha:.3g}"}
            if eval_every > 0 and (m % eval_every == 0 or i + 1 == n_iter):
                evaluations.append(Evaluation(m, driver.score(), stats.n_clusters))
                driver.evaluations.append(evaluations[-1])
                report.evaluation(m, evaluations[-1].log_predictive,
                                  n_clusters=stats.n_clusters)
            if checkpoint is not None and checkpoint_every > 0 and m % checkpoint_every == 0:
                checkpoint(driver)
            if driver.evaluations:
                postfix["log pred"] = f"{driver.evaluations[-1].log_predictive:.4g}"
            bar.set_postfix(postfix, refresh=False)
            bar.update(1)
        status = "finished"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        bar.close()
        driver.close()
        report.finish(driver.iteration, status)
    return evaluations
