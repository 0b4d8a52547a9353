"""Where LDA's topics live: LDA's threshold and rules on the one placement rule.

``"driver"``: the topics' vocabulary blocks are held in this process;
``"workers"``: by the workers, the driver keeping O(K) per block. Each SCIR
step's topics are one class on either form of the engine's blocks
(``topics.Topics``, ``topics_lazy.LazyTopics``), so both placements run one
chain. ``model.LDAModel`` builds its blocks by ``resolve_placement``: the shared
rule (``dscir.models.placement``) with LDA's measured threshold and its own
rules (warm starts cannot go to the workers; the lazy step stays on the driver
under ``"auto"``).
"""

from __future__ import annotations

from dscir.models import placement as rule

PLACEMENTS = rule.PLACEMENTS

#: From this many topic-word parameters (K x W) on, ``placement="auto"`` keeps them
#: on the workers: the issue-14 measurements had the driver's dense update at 60 %
#: of an iteration at K x W = 10^7 (K = 100, W = 10^5) and 67 % at 10^8.
WORKERS_FROM_ENTRIES = 10**7

#: Why a warm-started chain cannot run on the workers, and what to use.
WARM_REFUSED = ("placement='workers' does not support warm starts or control variates; "
                "use placement='driver' with warm_start=True")


def check_placement(placement: str, warm_start: bool) -> None:
    """One clear error for a placement this chain cannot run."""
    rule.check_placement(placement, WARM_REFUSED if warm_start else None, PLACEMENTS)


def resolve_placement(config, n_words: int) -> str:
    """``"driver"`` or ``"workers"``: the setting itself, or for ``"auto"`` the
    workers when K x W >= WORKERS_FROM_ENTRIES and the chain can run there (not
    with warm starts; the lazy SCIR step stays on the driver, O(K U) per step).
    Resolved on the corpus, before the executor: the topics' blocks refuse one
    without workers."""
    lazy = getattr(config, "scir_step", "dense") == "lazy"  # O(K x minibatch words) here
    return rule.resolve_placement(
        config.placement, config.n_topics * n_words, None,
        None if lazy else WORKERS_FROM_ENTRIES,
        refused=WARM_REFUSED if config.warm_start else None, held="the topics",
        placements=PLACEMENTS)
