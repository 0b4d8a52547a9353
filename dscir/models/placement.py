"""Where a model's K x W state lives: the one rule that resolves a placement setting.

A model's parameters are held in column blocks (``column_blocks``) either in
this process (``"driver"``) or by the workers of a Dask cluster
(``"workers"``); the engine gives a model its blocks for a resolved placement
(``dscir.engine.blocks.blocks_for``, reached through the executor:
``held_blocks``), so a model writes its column maths once. ``"auto"`` is
resolved here by one rule for every model: the workers from the model's own
measured ``workers_from`` entries on (LDA's ``lda.placement``, the mixtures'
``mixtures.components``), when the executor has workers and the chain can run
there. The clear errors of a setting that cannot run are here too.
"""

from __future__ import annotations

from dscir.errors import DscirError

PLACEMENTS = ("auto", "driver", "workers")


def no_workers(held: str = "the state") -> DscirError:
    """The error of placement='workers' without workers to hold ``held``."""
    return DscirError(f"placement='workers' needs a Dask cluster ({held} live on its "
                      f"workers); use placement='driver' here")


def check_placement(setting: str, refused: str | None = None,
                    placements: tuple[str, ...] = PLACEMENTS) -> None:
    """One clear error for a setting that is none of ``placements``, or for
    ``"workers"`` when the chain cannot run there (``refused``: why, and what to use)."""
    if setting not in placements:
        raise DscirError(f"placement must be one of {', '.join(placements)}, got {setting!r}")
    if setting == "workers" and refused:
        raise DscirError(refused)


def resolve_placement(setting: str, entries: int, executor, workers_from: int | None, *,
                      refused: str | None = None, held: str = "the state",
                      placements: tuple[str, ...] = PLACEMENTS) -> str:
    """The placement that runs: the setting itself, or for ``"auto"`` ``"workers"``
    when the state's ``entries`` (K x W) reach ``workers_from`` (None: never), the
    executor has workers to hold the blocks and nothing ``refused`` the workers;
    else ``"driver"``. ``executor`` None: resolved before there is one (on the
    corpus), by size alone; the blocks then refuse an executor without workers
    (``held_blocks``). One clear error for a setting that cannot run."""
    check_placement(setting, refused, placements)
    on_workers = executor is None or hasattr(executor, "blocked")
    if setting == "workers" and not on_workers:
        raise no_workers(held)
    if setting != "auto":
        return setting
    big = workers_from is not None and int(entries) >= workers_from
    return "workers" if big and on_workers and not refused else "driver"


def held_blocks(executor, placement: str, n_rows: int, n_cols: int, block_entries: int,
                held: str = "the state"):
    """The blocks (``dscir.engine.blocks.BlockedState``) of a model's n_rows x n_cols
    state for its resolved ``placement``, from the executor (``blocks_for``): held by
    its workers or in this process."""
    if not hasattr(executor, "blocks"):  # None, or an executor of another kind
        if placement == "workers":
            raise no_workers(held)
        raise DscirError(f"{held} are held in blocks: they need a dscir executor, got "
                         f"{type(executor).__name__}")
    return executor.blocks(placement, n_rows, n_cols, block_entries, held)
