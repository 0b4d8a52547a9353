"""Placement on a Dask cluster: documents resident on the workers, tasks beside them, keys.

The driver owns the chain; workers own data. With ``resident`` (LDA's
default when the store's shards fit a share of the workers' memory limits,
``shards.choose_reads``: a larger store is streamed; the choice is logged and
kept in ``reads``) the corpus is held on the workers in shards, each read from the Zarr
store once (``dscir.engine.shards``), and ``read`` groups documents by the
worker holding their shards into parts, one per worker (each task costs
milliseconds of scheduler round trip, and each part gets a copy of the
parameter columns of its words: on Zipf text the columns of a part barely
shrink with it), whose task runs on all the worker's threads (numba's,
``worker.with_threads``), and computes each part's distinct words on the
driver, so an iteration is one round of tasks, each run beside its shards
with only the parameter columns of its words. A resident round goes through
each worker's runner (``worker.PartRunner``, a Dask actor): one call per part
straight to the worker holding its shards, without the scheduler's two
batched hops each way, so such rounds show on the dashboard's task stream
only as the runners' creation. A failed call (a worker lost, a shard moved)
drops the runners and reruns the round as tasks, which Dask carries through
the loss to the same result. Without resident documents, and always in
``read_blocks``, each part is read by a task of its own, which reports the
part's words: one part per worker thread, each task on one thread. Every
task's input is either computed from the store or sent by the driver, which
keeps it: inside the task, or for a large array (a part's parameter columns
cut on the driver) scattered ahead of the round, so graphs stay small; a
round that loses sent arguments with a worker is sent again. A lost worker
costs a recomputation, not the chain.

Keys are ``(f"dscir-{model}-{what}-{token}", iteration, serial, part)``: the
dashboard shows ``dscir-lda-gibbs`` and friends, a key names the chain's
iteration it belongs to, and no two submissions share a key.
"""

from __future__ import annotations

import functools
import itertools
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from dask.sizeof import sizeof
from distributed import Client

from dscir.engine import blocks, local_state, worker
from dscir.engine.parts import Parts, TaskTime, Timing, split
from dscir.engine.runners import Runners
from dscir.engine.sending import SendsAhead
from dscir.engine.shards import ResidentBatch, Shards, choose_reads, packed
from dscir.errors import DscirError
from dscir.models import column_blocks
from dscir.runs.checkpoint import absolute_store

try:  # a round as one graph: dask's task spec (private modules, tested up to pyproject's bound)
    from dask._expr import LLGExpr
    from dask._task_spec import Task, TaskRef, parse_input
    GRAPHS = True
except ImportError:  # a dask without them: one ``Client.submit`` per task
    GRAPHS = False


class Call(NamedTuple):
    """A task of a round: ``fn(*args)`` under ``key``; an argument that is a
    ``Ref`` is the value of the round's task of that key."""

    key: tuple
    fn: Callable
    args: tuple


class Ref(NamedTuple):
    key: tuple


#: A local-state visit whose result's count matrices are kept and sent as nonzeros.
COMPACT_VISIT = functools.partial(worker.compact_visit, local_state.visit)
#: How long an interrupted driver waits for its tasks in flight to end.
SETTLE_SECONDS = 60.0

log = logging.getLogger(__name__)


def _resident(parts: Parts) -> bool:
    return bool(parts.batches) and isinstance(parts.batches[0], ResidentBatch)


def _why(reads: dict) -> str:
    """The figures ``choose_reads`` compared, as one phrase."""
    sign = "<=" if reads["reads"] == "resident" else ">"
    mib = {k: f"{reads[k] / 2**20:,.0f} MiB" for k in ("shards_bytes", "workers_memory_bytes")}
    return (f"its shards would take {mib['shards_bytes']}, {sign} {reads['resident_share']:g}"
            f" x the workers' memory limits together, {mib['workers_memory_bytes']}")


class DaskExecutor(blocks.HoldsBlocks, SendsAhead):
    """Runs a model's reads and tasks on the workers of ``client``."""

    def __init__(self, client: Client, store: str, model: str, resident: bool | None = None,
                 *, model_resident: bool = False):
        """``resident``: the documents resident on the workers; None: if they fit
        (``shards.choose_reads``) when ``model_resident`` (the model's), else not."""
        self.client = client
        self.store = absolute_store(str(store))  # the workers' cwd is not the driver's
        self.model = model
        self.timing = Timing()
        self.iteration = 0  # the chain's, named in task keys
        self._token = uuid.uuid4().hex[:8]
        self._serial = itertools.count()
        shard_key = f"dscir-{model}-shard-{self._token}"
        #: how the documents reach the tasks, and why (``shards.choose_reads``)
        self.reads: dict = {"reads": "resident" if resident else "streamed",
                            "given": resident is not None}
        if resident is None and model_resident:
            self.reads = choose_reads(client, self.store)
            # the usual case is a debug message; streaming (slower) is worth telling
            level = logging.DEBUG if self.reads["reads"] == "resident" else logging.INFO
            log.log(level, "%s: documents %s (%s)", self.store, self.reads["reads"],
                    _why(self.reads))
        resident = self.reads["reads"] == "resident"
        self.shards = Shards(client, self.store, lambda s: (shard_key, s)) if resident else None
        self.resources: dict[str, dict[str, float]] = {}  # by task name (``require``)
        #: resident rounds through the workers' runners (False: as tasks, the fallback)
        self.runners = True
        self._runners = Runners(client, f"dscir-{model}-runner-{self._token}")

    @property
    def n_parts(self) -> int:
        """Parts of a read without resident shards: one per worker thread."""
        return max(sum(self.client.nthreads().values()), 1)

    def _key(self, what: str, iteration: int | None = None) -> Callable[[int], tuple]:
        name, serial = f"dscir-{self.model}-{what}-{self._token}", next(self._serial)
        it = self.iteration if iteration is None else iteration
        return lambda j: (name, it, serial, j)

    def read(self, docs: np.ndarray, what: str = "read", iteration: int | None = None) -> Parts:
        """``docs`` (sorted) in parts, for ``iteration`` (default the current one):
        grouped by the workers holding their shards (``Parts.docs`` is then the
        parts' concatenation, worker by worker), or without resident shards
        read by tasks submitted now; returns at once."""
        docs = np.asarray(docs, dtype=np.int64)
        if self.shards is not None:
            batches = self.shards.group(docs)
            parts = [b.docs for b in batches]
            return Parts(np.concatenate(parts) if parts else docs, parts, batches,
                         [self.shards.words(p) for p in parts])
        return self.read_blocks(split(docs, self.n_parts), what, iteration, docs)

    def read_blocks(self, blocks: Sequence[np.ndarray], what: str = "read",
                    iteration: int | None = None, docs: np.ndarray | None = None) -> Parts:
        """Submit reads of ``blocks`` (each sorted document ids), one part each."""
        parts = [np.asarray(p, dtype=np.int64) for p in blocks]
        if docs is None:
            docs = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        read_key, words_key = self._key(what, iteration), self._key("words", iteration)
        batches = [self.client.submit(worker.read_batch, self.store, p, key=read_key(j))
                   for j, p in enumerate(parts)]
        words = [self.client.submit(worker.batch_words, b, key=words_key(j))
                 for j, b in enumerate(batches)]
        return Parts(docs, parts, batches, words)

    def words(self, parts: Parts) -> list[np.ndarray]:
        """The distinct word ids of each part."""
        if _resident(parts):
            return list(parts.words)
        start = time.perf_counter()
        out = self.client.gather(parts.words)
        self.timing.add_wait(time.perf_counter() - start)
        return out

    def require(self, what: str, resources: dict[str, float], check: Callable) -> None:
        """Tasks ``what`` run only on workers with ``resources`` (e.g. ``{"GPU": 1}``,
        workers started with ``--resources GPU=1``); one clear error now where no
        worker has them, or where ``check`` raises on one that has."""
        have = {a: w.get("resources", {}) for a, w in
                self.client.scheduler_info()["workers"].items()}
        able = [a for a, r in have.items() if all(r.get(k, 0) >= v for k, v in resources.items())]
        if not able:
            need = ",".join(f"{k}={v:g}" for k, v in resources.items())
            raise DscirError(f"the {what} tasks need workers with the resources {need}, and "
                             f"none of the cluster's {len(have)} workers has them: start "
                             f"them with `dask worker --resources {need}` (one per device)")
        self.client.run(check, workers=able[:1])
        self.resources[what] = dict(resources)

    def submit(self, what: str, fn: Callable, *args: Any, j: int = 0, timed: bool = False,
               near: str | None = None) -> Any:
        """``fn(*args)`` as one task (futures among ``args`` are its dependencies, met
        worker to worker); its key names ``what``, the iteration and ``j``. With
        ``timed`` its result is ``(value, TaskTime)`` (``worker.timed``); ``near``
        (a worker address) is where it should run if that worker is still there."""
        fn, args = packed(fn, args)
        if timed:
            fn, args = worker.timed, (fn, *args)
        where = {} if near is None else {"workers": [near], "allow_other_workers": True}
        return self.client.submit(fn, *args, key=self._key(what)(j), **where,
                                  resources=self.resources.get(what))

    def settle(self, futures: Sequence[Any], timeout: float = SETTLE_SECONDS) -> None:
        """Wait (at most ``timeout`` s) until ``futures`` are no longer running, whatever
        their outcome: after an interrupt, so that no task writes into what the driver
        then removes (an interrupted checkpoint's directory)."""
        from distributed import wait

        try:
            wait(list(futures), timeout=timeout)
        except Exception:  # a timeout, a lost scheduler: nothing more to wait for
            pass

    def holders(self, futures: Sequence[Any]) -> list[str | None]:
        """The worker holding each future's result now (None: not in memory)."""
        if futures and isinstance(futures[0], ResidentBatch):
            return [b.holder for b in futures]
        held = self.client.who_has(list(futures))
        return [next(iter(held.get(f.key, ())), None) for f in futures]

    def gather(self, futures: Sequence[Any],
               tasks_of: Callable[[list[Any]], list[TaskTime]] | None = None) -> list[Any]:
        """The values of ``futures``: a round timed by ``tasks_of(values)`` (the
        tasks' own stamps), or without it a wait counted as queueing."""
        start, clock = time.time(), time.perf_counter()
        out = self.client.gather(list(futures))
        if tasks_of is None:
            self.timing.add_wait(time.perf_counter() - clock)
        else:
            self.timing.add_round(start, time.time(), tasks_of(out))
        return out

    @staticmethod
    def _beside(batch: ResidentBatch, key, fn: Callable, *args: Any) -> Call:
        """The task ``worker.timed_at(fn, batch, *args)``, drawn to the worker holding
        ``batch``'s shards by its dependencies on them (no restriction: see
        ``dscir.engine.shards``), ``fn`` on all that worker's threads; submitted
        with others by ``_submit``."""
        fn, args = packed(fn, (batch, *args))
        fn = functools.partial(worker.with_threads, None, fn)
        return Call(key, worker.timed_at, (fn, *args))

    def _submit(self, tasks: Sequence[Call], resources: dict | None = None) -> list[Any]:
        """The futures of ``tasks`` (one may depend on another by ``Ref``), sent to the
        scheduler as one graph: one message for a round, not one per task (without
        dask's task spec, ``GRAPHS``: one ``Client.submit`` each, the same tasks)."""
        if not tasks:
            return []
        if not GRAPHS:
            futures: dict[tuple, Any] = {}
            for t in tasks:
                args = [futures[a.key] if isinstance(a, Ref) else a for a in t.args]
                futures[t.key] = self.client.submit(t.fn, *args, key=t.key, pure=False,
                                                    resources=resources)
            return list(futures.values())
        spec = [Task(t.key, t.fn, *(TaskRef(a.key) if isinstance(a, Ref) else parse_input(a)
                                     for a in t.args)) for t in tasks]
        # a graph of a fresh token, as ``Client.submit`` makes: a plain dict would be
        # tokenized, hashing the columns inside the tasks on every round
        graph = LLGExpr({t.key: t for t in spec}, _determ_token=uuid.uuid4().hex)
        return self.client.get(graph, [t.key for t in spec], sync=False, resources=resources)

    def blocked(self, n_rows: int, n_cols: int, block_entries: int) -> blocks.BlockedState:
        """A handle on an n_rows x n_cols state to be held by the workers in blocks of
        about ``block_entries`` entries (``dscir.engine.blocks``)."""
        # Not yet with resident shards: this executor's reads are tasks again.
        self.shards = None
        self.reads = {**self.reads, "reads": "streamed", "placement": "workers"}
        return blocks.BlockedState(self, column_blocks.block_bounds(n_rows, n_cols, block_entries))

    def run(self, what: str, fn: Callable, parts: Parts, args: Sequence[tuple],
            local: local_state.LocalState | None = None) -> list[Any]:
        """``fn(batch_j, words_j, *args[j])`` for every part j, on the part's worker;
        with ``local``, ``fn`` also gets and returns its documents' local state."""
        if local is not None:
            return self._run_local(what, fn, parts, args, local)
        if _resident(parts) and self.runners and not self.resources.get(what):
            out = self._call_runners(what, fn, parts, args)
            if out is not None:
                return out
        if not _resident(parts):
            return self._run_sent(what, fn, parts, args)
        key = self._key(what)
        futures = self._submit([self._beside(b, key(j), fn, w, *a) for j, (b, w, a)
                                in enumerate(zip(parts.batches, parts.words, args))],
                               self.resources.get(what))
        start = time.time()
        out = self.client.gather(futures)
        self.timing.add_round(start, time.time(), [o[1] for o in out])
        self._ran_on(parts, [o[2] for o in out])
        return [o[0] for o in out]

    def _call_runners(self, what: str, fn: Callable, parts: Parts,
                      args: Sequence[tuple]) -> list | None:
        """A resident round through the workers' runners (``worker.PartRunner``): one
        call per part, straight to the worker holding its shards. None where a part
        has no holder or a call failed (a worker lost or replaced, a shard moved):
        the runners are dropped, the holders asked for again, and the caller runs
        the round as tasks, which Dask carries through the loss."""
        start, key = time.time(), self._key(what)
        try:
            if any(b.holder is None for b in parts.batches):
                return None
            calls = [self._runners.on(b.holder).run(key(j), fn, [f.key for f in b.shards],
                                                    b.docs, w, *a)
                     for j, (b, w, a) in enumerate(zip(parts.batches, parts.words, args))]
            out = self._runners.results(calls, [b.holder for b in parts.batches])
        except Exception as e:  # the tasks give the same result, or the same error
            log.info("%s: a round runs as tasks (%s: %s)", self.store, type(e).__name__, e)
            self._runners.drop()
            self.shards.stale = True
            return None
        self.timing.add_round(start, time.time(), [o[1] for o in out])
        self._ran_on(parts, [o[2] for o in out])
        return [o[0] for o in out]

    def _ran_on(self, parts: Parts, workers: list[str]) -> None:
        """A resident round's tasks ran on ``workers``: counted (the parts, so the
        copies of their columns, one worker got) and compared with the plan."""
        self.timing.add_parts(workers)
        self.shards.ran_on([b.holder for b in parts.batches], workers)

    def _state(self, local: local_state.LocalState, s: int) -> Any:
        """Shard s's state as a task argument: None, a read of its flushed chunk
        (beside the shard's documents, submitted once), or ``[states future, i]``."""
        s, ref = int(s), local.refs[s]
        if isinstance(ref, local_state.Stored):
            if ref.held is None:
                n = int(local.offsets[s][-1])
                ref = local.refs[s] = ref._replace(held=self.client.submit(
                    local_state.read_state, local.path, ref.slot, s, n, self.shards.futures[s],
                    key=self._key("load")(s)))
            return ref.held
        return None if ref is None else [ref.states, ref.index]

    def _run_local(self, what: str, fn: Callable, parts: Parts, args: Sequence[tuple],
                   local: local_state.LocalState) -> list[Any]:
        """``run`` with local state: each part's task (``local_state.visit``) takes
        its shards' states and returns their new ones beside its result; that
        future stays on its worker as the shards' state (``local_state.ShardRef``)
        and the driver gathers only the results, through one small task per part
        (Dask fetches a task's whole value: the states would travel with it).
        The visit's value keeps its result too until the shards' next visits,
        so the results count towards the lineage budget with the columns."""
        if not _resident(parts):
            raise DscirError("local state (warm starts) needs the documents resident on "
                             "the workers")
        local.create()
        key, results = self._key(what), self._key("result")
        tasks, shards = [], []
        for j, (b, w, a) in enumerate(zip(parts.batches, parts.words, args)):
            held, targs = local_state.part_args(
                local, b.docs, [self._state(local, s) for s in local.shards(b.docs)], fn, a)
            tasks += [self._beside(b, key(j), COMPACT_VISIT, w, *targs),
                      Call(results(j), worker.result_of, (Ref(key(j)),))]
            shards.append(held)
            local.lineage += local_state.args_bytes(a)
        futures = self._submit(tasks)
        start = time.time()
        out = self.client.gather(futures[1::2])
        self.timing.add_round(start, time.time(), [o[1] for o in out])
        self._ran_on(parts, [o[2] for o in out])
        local.lineage += sum(sizeof(o[0]) for o in out)
        for held, task in zip(shards, futures[0::2]):
            for i, s in enumerate(held):
                local.refs[s] = local_state.ShardRef(task, i)
        if local.lineage > local_state.LINEAGE_BYTES:
            self.flush(local)
        return [worker.expand(o[0]) for o in out]

    def flush(self, local: local_state.LocalState) -> None:
        """Write every shard's state changed since the last flush as one chunk (one
        task per shard, beside its state) and cut its lineage there."""
        slots = {s: local.slot_for(s) for s in local.changed()}
        key = self._key("flush")
        futures = [self.client.submit(local_state.write_state, local.path, k, s,
                                      self._state(local, s), key=key(s))
                   for s, k in slots.items()]
        self.gather(futures)
        local.flushed(slots)

    def local_values(self, local: local_state.LocalState) -> list[np.ndarray | None]:
        """Every shard's local state now, here (for inspection: tests, benchmarks)."""
        return local_state.values(local, self.client.gather)
