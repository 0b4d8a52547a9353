"""Per-document local state kept between visits, in memory beside the documents' shards.

A model with local state (LDA with warm starts: each training document's
topic assignments) gets, in a minibatch task, the state its documents had at
the end of their last visit and returns the new state. The state is kept per
shard (one store chunk of ``chunk`` documents, as ``dscir.engine.shards``):
one flat array of the shard's tokens' values in document order, -1 where a
document was never visited. A part holds whole shards (the executors group
them so), and its task returns the new state of each of its shards beside
its result.

On Dask a shard's state is an immutable future (``ShardRef``: the future of
the task that last visited it, and the shard's place in its output), which
the next visit's task takes as a dependency and never modifies: a retried
task reads the same state and computes the same new one, and a state lost
with its worker is recomputed by Dask from its lineage (the earlier visits'
tasks, whose phi columns travel inside them). Lineage stops at the last
flush: a flush writes each state changed since the one before as ONE chunk
of the array ``z`` [N_SLOTS, n_shards, width] under ``path``, and the
shard's state becomes that chunk (``Stored``: read back by the next visit).
Flushes happen at every checkpoint and when the phi columns held by the
lineage since the last flush pass ``LINEAGE_BYTES``; they never change the
chain. A shard's flush writes the lowest slot that is neither the one its
state was last read from (``base``, the root of its live lineage) nor the
one the last checkpoint names (``protected``), so a recomputation and a
resume always find the bytes they need.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import weakref
from typing import Any, NamedTuple

import numpy as np
import zarr

from dscir import integrity
from dscir.engine.shards import row_entries
from dscir.errors import DscirError

N_SLOTS = 3
LINEAGE_BYTES = 256 * 2**20  # phi columns held by the tasks since the last flush


def state_dtype(n_values: int) -> np.dtype:
    """The narrowest signed integer type holding 0..n_values-1 and the fill -1."""
    return np.dtype(np.int16 if n_values <= np.iinfo(np.int16).max else np.int32)


class Stored(NamedTuple):
    """A shard's state as last flushed: chunk (slot, shard) of the array, and the
    executor's handle on it once read back (an array, or a read task's future)."""

    slot: int
    held: Any = None


class ShardRef(NamedTuple):
    """A shard's state on Dask: new state ``index`` of the visit whose future is
    ``states`` (its value is ``worker.timed_at``'s of ``visit``: ((result, new
    states), stamp, worker))."""

    states: Any
    index: int


class LocalState:
    """The driver's side of a chain's per-document state, its flushes in ``path``.

    ``lengths`` [n_docs] are the documents' state sizes (LDA: tokens; 0 for
    documents never visited). With ``path`` None the flushes go to a temporary
    directory removed with this object (workers must see this machine's
    temporary directory, as a LocalCluster's do); a checkpointed run keeps them
    in the run. ``refs[s]`` is shard s's state: None (never visited), a
    ``Stored`` chunk, or what the executor holds (an array, a ``ShardRef``).
    """

    def __init__(self, path: str | None, lengths: np.ndarray, chunk: int, dtype):
        if path is None:
            path = tempfile.mkdtemp(prefix="dscir-local-")
            self._cleanup = weakref.finalize(self, shutil.rmtree, path, True)
        self.path = str(path)
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.chunk = int(chunk)
        self.dtype = np.dtype(dtype)
        self.n_shards = -(-self.lengths.size // self.chunk)
        self.offsets = [np.concatenate([[0], np.cumsum(self.lengths[lo:lo + self.chunk])])
                        for lo in range(0, self.lengths.size, self.chunk)]
        self.width = max([int(o[-1]) for o in self.offsets] + [1])
        self.refs: list[Any] = [None] * self.n_shards
        self.base = np.full(self.n_shards, -1, np.int8)  # slot each Stored state is in
        self.protected = self.base.copy()
        self.lineage = 0  # bytes of task arguments since the last flush
        self._created = False

    def create(self) -> None:
        """Create the array if the store has none yet (an existing one is resumed)."""
        if self._created:
            return
        group = zarr.open_group(self.path, mode="a")
        shape = (N_SLOTS, self.n_shards, self.width)
        if "z" not in group:
            z = group.create_array("z", shape=shape, chunks=(1, 1, self.width),
                                   dtype=self.dtype, fill_value=-1,
                                   chunk_key_encoding={"name": "default", "separator": "."},
                                   **integrity.array_options())
            z.attrs[integrity.WRITTEN_ON_USE] = True
        z = group["z"]
        if z.shape != shape or z.dtype != self.dtype:
            raise DscirError(f"{self.path}/z holds another chain's local state "
                             f"(shape {z.shape}, dtype {z.dtype})")
        self._created = True

    def shards(self, docs: np.ndarray) -> np.ndarray:
        """The distinct shards holding ``docs``."""
        return np.unique(np.asarray(docs, np.int64) // self.chunk)

    def los(self, shards: np.ndarray) -> list[int]:
        """The first document of each of ``shards``."""
        return [int(s) * self.chunk for s in shards]

    def changed(self) -> list[int]:
        """Shards whose state changed since the last flush."""
        return [s for s, r in enumerate(self.refs)
                if r is not None and not isinstance(r, Stored)]

    def slot_for(self, s: int) -> int:
        """Where shard s's next flush goes: neither its lineage root nor its checkpoint."""
        return next(k for k in range(N_SLOTS) if k not in (self.base[s], self.protected[s]))

    def flushed(self, slots: dict[int, int], keep: bool = False) -> None:
        """Shard s's state is now chunk (slots[s], s); with ``keep`` the executor
        keeps its value (in-process: no lineage to cut), else reads it back."""
        for s, k in slots.items():
            self.refs[s], self.base[s] = Stored(k, self.refs[s] if keep else None), k
        self.lineage = 0

    def protect(self) -> None:
        """A checkpoint is being taken (after a flush): keep its chunks until the next."""
        self.protected = self.base.copy()

    def arrays(self) -> dict[str, np.ndarray]:
        if self.changed():
            raise DscirError("the local state must be flushed before it is checkpointed")
        return {"slot": self.base.copy()}

    def restore(self, arrays: dict[str, Any]) -> None:
        if "slot" not in arrays:
            raise DscirError("the checkpoint's local state is in an older layout (one "
                             "chunk per document); start the warm-started run again")
        slot = np.asarray(arrays["slot"], dtype=np.int8)
        if slot.shape != (self.n_shards,):
            raise DscirError(f"the checkpoint's local state covers {slot.size} shards, "
                             f"the corpus has {self.n_shards}")
        self.create()
        self.base, self.protected = slot.copy(), slot.copy()
        self.refs = [None if k < 0 else Stored(int(k)) for k in slot]
        self.lineage = 0


def _open(path: str, mode: str):
    """The state array at ``path``, or one clear error where this worker cannot see it
    (a driver's temporary directory seen from another host)."""
    try:
        return zarr.open_array(os.path.join(path, "z"), mode=mode)
    except FileNotFoundError:
        raise DscirError(
            f"worker on {socket.gethostname()} cannot see the chain's local state at {path}: "
            "warm starts need a directory every worker sees; on a multi-host cluster fit "
            "with out= on a shared filesystem (--out on the command line), whose run "
            "holds it") from None


def write_state(path: str, slot: int, s: int, state: np.ndarray) -> None:
    """Write shard s's state as one chunk (padded with -1)."""
    z, state = _open(path, "r+"), resolve(state)
    row = np.full(z.shape[2], -1, z.dtype)
    row[:state.size] = state
    z[slot, s, :] = row


def read_state(path: str, slot: int, s: int, n_values: int, *placement: Any) -> np.ndarray:
    """Shard s's state from chunk (slot, s); ``placement`` (the shard's documents,
    a dependency) only draws the task to the shard's worker."""
    return np.asarray(_open(path, "r")[slot, s, :n_values])


def _rows(dtype, los: list[int], offsets: list[np.ndarray], states: list[Any],
          docs: np.ndarray) -> tuple[list, list, np.ndarray, np.ndarray]:
    """Copies of the shards' states (None: all -1), where ``docs`` (sorted) lie in
    each, their concatenated state and whether each was visited before."""
    new, where, counts = [], [], []
    for lo, off, state in zip(los, offsets, map(resolve, states)):
        new.append(np.full(int(off[-1]), -1, dtype) if state is None
                   else np.array(state, dtype=dtype))
        w, n = row_entries(off, docs[(docs >= lo) & (docs < lo + off.size - 1)] - lo)
        where.append(w)
        counts.append(n)
    n = np.concatenate(counts) if counts else np.zeros(0, np.int64)
    if n.size != docs.size:
        raise DscirError(f"the part's shards hold {n.size} of its {docs.size} documents")
    current = np.concatenate([st[w] for st, w in zip(new, where)]) if new \
        else np.zeros(0, dtype)
    warm = np.zeros(docs.size, bool)
    warm[n > 0] = current[(np.cumsum(n) - n)[n > 0]] >= 0
    return new, where, current, warm


def visit(batch, words: np.ndarray, fn, dtype, los: list[int], offsets: list[np.ndarray],
          states: list[Any], *args: Any) -> tuple[Any, tuple[np.ndarray, ...]]:
    """On a worker: ``fn(batch, words, state, warm, *args)`` given the batch's
    documents' state, taken from ``states`` (its whole shards' states, at
    ``los`` with token ``offsets``; None: never visited, all -1), ``warm``
    where a document was visited before; ``fn`` returns (result, new state).
    Returns the result and the shards' new states (copies: an input state is
    never modified, so a retried task reads what its first attempt read)."""
    new, where, current, warm = _rows(dtype, los, offsets, states,
                                      np.asarray(batch.docs, np.int64))
    result, values = fn(batch, words, current, warm, *args)
    values, at = np.asarray(values), 0
    for st, w in zip(new, where):
        st[w] = values[at:at + w.size]
        at += w.size
    return result, tuple(new)


def rows_of(local: LocalState, states: list[np.ndarray | None],
            docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The state of ``docs`` (sorted) concatenated, and whether each was visited,
    from every shard's state (``values``)."""
    docs = np.asarray(docs, np.int64)
    shards = [int(s) for s in local.shards(docs)]
    _, _, current, warm = _rows(local.dtype, local.los(shards),
                                [local.offsets[s] for s in shards],
                                [states[s] for s in shards], docs)
    return current, warm


def resolve(state: Any) -> np.ndarray | None:
    """A state argument as it reaches a worker: None, an array, or a timed visit's
    value and this shard's index in its new states (``ShardRef`` travels as a list)."""
    if isinstance(state, list):
        (_, states), *_ = state[0]
        return states[state[1]]
    return state


def part_args(local: LocalState, docs: np.ndarray, states: list[Any], fn,
              args: tuple) -> tuple[list[int], tuple]:
    """The shards of a part of ``docs`` and ``visit``'s arguments after the batch
    and words, given those shards' ``states`` as the executor passes them."""
    shards = [int(s) for s in local.shards(docs)]
    if len(states) != len(shards):
        raise DscirError(f"{len(states)} states for the part's {len(shards)} shards")
    return shards, (fn, local.dtype, local.los(shards), [local.offsets[s] for s in shards],
                    states, *args)


def args_bytes(args) -> int:
    """The bytes of the arrays among a task's arguments (what its lineage holds)."""
    return sum(a.nbytes for a in args if isinstance(a, np.ndarray))


def values(local: LocalState, gather) -> list[np.ndarray | None]:
    """Every shard's state now (None: never visited), on the driver; ``gather``
    turns an executor's handle (a future) into its value."""
    out = []
    for s, ref in enumerate(local.refs):
        if isinstance(ref, Stored):
            ref = ref.held if ref.held is not None else read_state(
                local.path, ref.slot, s, int(local.offsets[s][-1]))
        elif isinstance(ref, ShardRef):
            ref = [ref.states, ref.index]
        out.append(None if ref is None else np.asarray(resolve(gather(ref))))
    return out
