"""A mixture's K x W components: one class on either form of the engine's column blocks.

``Components`` holds the components' sampler state as the column blocks of
``mixtures.blocks`` in the form the resolved placement gives
(``dscir.engine.blocks.blocks_for``): plain values in this process
(``"driver"``) or futures held by the workers (``"workers"``). The same block
functions run on either, in the same order, so the two placements run one
chain bit for bit, on any number of workers. The driver keeps the row
normalisers (the blocks' row sums combined in block order, O(K) per block);
each part's log phi columns are cut where the blocks live (met by its task
worker to worker on the workers); each block adds the integer counts of its
own words from the allocation results and steps with its own stream (one
block, the whole array, with the iteration's: ``blocks.block_stream``); the
driver gathers only each task's allocations and the blocks' O(K) summaries.
The placement rule is the one of ``dscir.models.placement``; for ``"auto"``
on a cluster the mixtures' components are placed by measured cost
(``resolve_placement``, ``PlacementTrial``): both placements run one chain, so
the first iterations time whole iterations in each and the rest run in the
faster.

The DP and finite mixtures' step is written once for either form:
``columns`` (log phi columns of given words, arrays or futures), ``allocate``
(the parts' tasks), ``advance`` (write the allocations, step the components,
return the occupancy), ``extend``, ``head``, ``permute`` and ``replace`` (the
DP's new, dropped, relabelled and redrawn components), ``log_phi`` and ``fields`` (dense, for
samples and checkpoints), ``load`` (from a checkpoint's fields). On the
workers the blocks also write the run's components and state themselves
(``write_run_arrays``: never gathered to the driver).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from dscir.models import placement as rule
from dscir.models.column_blocks import combine, join_columns
from dscir.models.mixtures.blocks import (allocation_summary, block_columns, block_fields,
                                         block_from_arrays, block_log_phi, block_lse,
                                         block_outputs, extend_block, head_block,
                                         permute_block, replace_block, row_totals, sparse,
                                         sparse_allocation, step_block)

PLACEMENTS = rule.PLACEMENTS

log = logging.getLogger(__name__)

#: Under ``placement="auto"`` on a cluster, components of up to this many
#: parameters (K x W at the start: 256 MiB a field of float64) are placed by
#: measured cost (``PlacementTrial``); larger ones live on the workers, so the
#: driver's memory stays small.
MEASURED_UP_TO = 1 << 25

#: Whole iterations timed in each placement by ``PlacementTrial``, after one
#: untimed iteration in each (numba's compiled kernels load, the blocks settle).
TRIAL = 4

#: The size of a column block, in parameters (K x words at the start; 8 MiB of
#: float64 a field, under Dask's 10 MB graph warning): a block's load from dense
#: arrays travels in one task, and an iteration costs a few tasks per block.
BLOCK_ENTRIES = 1 << 20


def resolve_placement(placement: str, n_rows: int, n_words: int, executor) -> str:
    """``"driver"``, ``"workers"`` or ``"measured"``: the one rule
    (``dscir.models.placement``) with the mixtures' bound. ``"auto"`` on an
    executor with workers gives ``"measured"`` (``PlacementTrial``) up to
    ``MEASURED_UP_TO`` parameters (K x W) and ``"workers"`` beyond; without
    workers, ``"driver"``."""
    resolved = rule.resolve_placement(placement, int(n_rows) * int(n_words), executor,
                                      MEASURED_UP_TO + 1, held="the components")
    if placement == "auto" and resolved == "driver" and hasattr(executor, "blocked"):
        return "measured"
    return resolved


class PlacementTrial:
    """Placement by measured cost: whole iterations timed in each placement in turn
    (``TRIAL`` each, after an untimed one), per component held (a DP's
    components come and go, and an iteration's work grows with them), then the
    faster by its quickest iteration (the work an iteration must do; the
    held-out scoring of some iterations and a busy machine only add to it).
    The workers go first: their blocks load from the start's K rows, under
    Dask's large-graph warning. Both placements run one chain bit for bit, so
    the trial changes only the time."""

    ORDER = ("workers", "driver")

    def __init__(self, n: int | None = None):
        self.n = TRIAL if n is None else n
        self.seconds: dict[str, list[float]] = {p: [] for p in self.ORDER}
        self.last: float | None = None  # when the last iteration ended (None: untimed)
        self.choice: str | None = None

    def tick(self, placement: str, now: float, rows: int = 1) -> str | None:
        """An iteration in ``placement`` holding ``rows`` components ended at ``now``:
        the placement to move to (None: stay), and after the last timed one the
        faster (``choice``)."""
        if self.last is not None:
            self.seconds[placement].append((now - self.last) / rows)
        self.last = now
        if len(self.seconds[placement]) < self.n:
            return None
        rest = [p for p in self.ORDER if len(self.seconds[p]) < self.n]
        if rest:
            self.last = None  # the first iteration after a move is not timed
            return rest[0]
        self.choice = min(self.ORDER, key=lambda p: min(self.seconds[p]))
        return self.choice

    def summary(self) -> str:
        times = ", ".join(f"{1e3 * min(v):.3g} ms on the {p}" for p, v in self.seconds.items())
        return (f"the components: an iteration took {times} per component held (the "
                f"quickest of {self.n}): they stay on the {self.choice}")


class Components:
    """The components' sampler state in column blocks held where ``placement``
    says (``"driver"`` or ``"workers"``); the driver holds the row normalisers
    ``norm``. Block bounds are set by the starting K and W (``BLOCK_ENTRIES``),
    never by the cluster or the placement."""

    def __init__(self, executor, sampler, state, placement: str = "driver"):
        self.sampler, self.executor = sampler, executor
        self.trial = PlacementTrial() if placement == "measured" else None
        self.placement = self.trial.ORDER[0] if self.trial else placement
        self.shape = np.shape(state[0])  # the blocks' bounds: the start's K and W
        self.blocks = rule.held_blocks(executor, self.placement, *self.shape, BLOCK_ENTRIES,
                                       "the components")
        self.norm = np.zeros(0)
        self.load(sampler.arrays(state))

    @property
    def n_rows(self) -> int:
        return int(self.norm.size)

    def normalise(self, extra=()) -> list[Any]:
        """Gather the blocks' row sums with ``extra`` timed results in one round;
        set the row normalisers; returns the values of ``extra``."""
        lses, values = self.blocks.summarise("block-lse", block_lse, extra=extra)
        self.norm = combine(lses)
        return values

    def log_phi(self) -> np.ndarray:
        """log phi of the current state, on the driver (K x W)."""
        return join_columns(*self.blocks.gather("block-log-phi", block_log_phi, self.norm))

    def columns(self, words: list[np.ndarray]) -> list[Any]:
        """The log phi columns of each ``words`` (sorted), cut where the blocks live
        (futures on the workers)."""
        return self.blocks.cut("columns", block_columns, words, (self.norm,))

    def allocate(self, executor, fn, parts, args) -> list[Any]:
        """The parts' tasks ``fn(batch, words, *args[j])`` as timed results with their
        counts kept sparse (``SparseAllocation``): run by the executor for blocks
        in this process, futures left on the workers for theirs."""
        if self.blocks.in_process:
            return [(sparse(r), None) for r in executor.run("allocation", fn, parts, args)]
        return [executor.submit("allocation", sparse_allocation, fn, b, w, *a, j=j, timed=True)
                for j, (b, w, a) in enumerate(zip(parts.batches, parts.words, args))]

    def advance(self, results, words, z: np.ndarray, *, a0: float, scale: float, h: float,
                key: int) -> tuple[np.ndarray, int]:
        """Step every block with the counts of its words, then gather the new
        normalisers with the tasks' allocations in one round; write those into
        ``z``; returns (rows per component, tokens)."""
        submit, n_blocks = self.blocks.executor.submit, self.blocks.n_blocks
        summaries = [submit("allocation-summary", allocation_summary, r, j=j)
                     for j, r in enumerate(results)]
        totals = None
        if self.sampler.row_totals and n_blocks > 1:  # one block holds the whole rows
            totals = submit("row-totals", row_totals, self.norm, scale, *summaries)
        step = (self.sampler, a0, scale, h, key, n_blocks, totals)
        self.blocks.update("block-step", step_block, step, self.blocks.route(results, words))
        occupancy, tokens = np.zeros(self.n_rows, np.int64), 0
        for rows, z_rows, components, n_rows, n_tokens in self.normalise(summaries):
            z[rows] = z_rows
            occupancy[components] += n_rows
            tokens += int(n_tokens.sum())
        if self.trial is not None:
            self._measure()
        return occupancy, tokens

    def _measure(self) -> None:
        """One iteration of the placement trial ended: move the blocks where it says."""
        move = self.trial.tick(self.placement, time.perf_counter(), self.n_rows)
        if move is not None and move != self.placement:
            self.move(move)
        if self.trial.choice is not None:
            log.info("%s", self.trial.summary())
            self.trial = None

    def move(self, placement: str) -> None:
        """Hold the blocks in ``placement`` (``"driver"`` or ``"workers"``): the same
        bounds and the same state, so the chain goes on unchanged."""
        fields = self.fields()
        self.placement = placement
        self.blocks = rule.held_blocks(self.executor, placement, *self.shape, BLOCK_ENTRIES,
                                       "the components")
        self.load(fields)

    def extend(self, n_new: int, a0: float, key: int) -> None:
        """Append ``n_new`` prior components (each block its columns)."""
        self.blocks.map("block-extend", extend_block, self.sampler, n_new, a0, key,
                        self.blocks.n_blocks)
        self.normalise()

    def replace(self, rows: np.ndarray, log_rows: np.ndarray) -> None:
        """Set the components ``rows`` to theta = exp(``log_rows``) (R x W): each block
        gets only its columns of them."""
        inputs = [[np.ascontiguousarray(log_rows[:, lo:hi])] for _, lo, hi in self.blocks.spans()]
        self.blocks.update("block-replace", replace_block, (self.sampler, rows), inputs)
        self.normalise()

    def head(self, n_rows: int) -> None:
        """Keep the first ``n_rows`` components."""
        if n_rows < self.n_rows:
            self.blocks.map("block-head", head_block, self.sampler, n_rows)
            self.norm = self.norm[:n_rows]

    def permute(self, order: np.ndarray) -> None:
        """Row i becomes old row ``order[i]`` (rows not named are dropped)."""
        self.blocks.map("block-permute", permute_block, self.sampler, order)
        self.norm = self.norm[order]

    def fields(self) -> dict[str, np.ndarray]:
        """The state's fields as dense K x W arrays on the driver."""
        parts = self.blocks.gather("block-fields", block_fields)
        return {k: np.concatenate([p[k] for p in parts], axis=1) for k in parts[0]}

    def write_run_arrays(self, root: str, state_group: str | None) -> None:
        """Write phi (``components``) and, given ``state_group``, the state's fields
        (``state/<state_group>/<field>``) into the Zarr group ``root`` from the
        blocks: one checksummed chunk per block."""
        names = {"components": "components"}
        if state_group is not None:
            names.update({f"state/{f}": f"state/{state_group}/{f}"
                          for f in self.sampler.State._fields})
        self.blocks.write("block-write", root, names, self.n_rows, block_outputs, self.norm)

    def load(self, fields: dict[str, Any]) -> None:
        """Blocks from the state's fields: each task carries its columns of dense
        arrays or reads its part of ``HeldArray`` ones on its worker."""
        self.sampler.check_arrays(fields)
        self.blocks.load("block-load", block_from_arrays, fields, self.sampler.State)
        self.normalise()
