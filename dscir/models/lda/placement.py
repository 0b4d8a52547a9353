"""Where LDA's topics live: on the driver (one K x W state) or on the workers (in blocks).

``"driver"``: the driver holds the sampler state, ships each task its phi
columns and steps the whole matrix (``topics.DriverTopics``). ``"workers"``: the
state lives in vocabulary blocks on the workers and the driver keeps O(K) per
block (``topics_blocked.WorkerTopics``). The two are different chains of the
same posterior (their noise streams differ). ``model.LDAModel`` holds either,
by ``resolve_placement``.
"""

from __future__ import annotations

from dscir.errors import DscirError

PLACEMENTS = ("auto", "driver", "workers")

#: From this many topic-word parameters (K x W) on, ``placement="auto"`` keeps them
#: on the workers: the issue-14 measurements had the driver's dense update at 60 %
#: of an iteration at K x W = 10^7 (K = 100, W = 10^5) and 67 % at 10^8.
WORKERS_FROM_ENTRIES = 10**7


def check_placement(placement: str, warm_start: bool) -> None:
    """One clear error for a placement this chain cannot run."""
    if placement not in PLACEMENTS:
        raise DscirError(f"placement must be one of {', '.join(PLACEMENTS)}, got {placement!r}")
    if placement == "workers" and warm_start:
        raise DscirError("placement='workers' does not support warm starts or control "
                         "variates; use placement='driver' with warm_start=True")


def resolve_placement(config, n_words: int) -> str:
    """``"driver"`` or ``"workers"``: the setting itself, or for ``"auto"`` the
    workers when K x W >= WORKERS_FROM_ENTRIES and the chain can run there (not
    with warm starts; the lazy SCIR step stays on the driver, O(K U) per step)."""
    check_placement(config.placement, config.warm_start)
    if config.placement != "auto":
        return config.placement
    if getattr(config, "scir_step", "dense") == "lazy":  # O(K x minibatch words) on the driver
        return "driver"
    big = config.n_topics * n_words >= WORKERS_FROM_ENTRIES
    return "workers" if big and not config.warm_start else "driver"
