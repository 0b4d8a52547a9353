"""Every random-stream domain of dscir, in one table.

A stream key is ``derive(seed, DOMAIN, ...)`` (``dscir.rng.derive``): the
domain keeps, say, document 7's Gibbs stream apart from row 7 of the
sampler's noise, and the remaining parts (iteration, document, epoch, row)
name one stream inside it. Nothing is drawn from worker identity or task
order, so a chain is the same whatever the number of workers.

Two families are named by sweep instead of domain, because their chains were
published that way and their digests are pinned (``tests/test_chain_digests``):
the exact baselines (``CollapsedGibbs``: ``(seed, 0)`` to start, ``(seed, t)``
for sweep t >= 1; the exact DP Gibbs slice sampler: ``(seed, t, part)`` with
``part`` in ``GIBBS_SLICE_PARTS``). They never share a chain with the domains
below, and the DP chains' start ``DP_INIT`` lies above any sweep number.
"""

from __future__ import annotations

from typing import NamedTuple


class Domain(NamedTuple):
    name: str
    number: int
    key: str  # the parts after (seed, number)
    used_by: str


DOMAINS: tuple[Domain, ...] = (
    Domain("GIBBS", 0, "then (iteration, document) inside the kernel", "lda"),
    Domain("SAMPLER", 1, "(iteration), then row inside the sampler", "lda"),
    Domain("MINIBATCH", 2, "(epoch): the epoch's visiting order", "engine"),
    Domain("EVALUATION", 3, "then document inside the kernel", "lda"),
    Domain("INIT", 4, "(): the initial parameters", "lda, mixture"),
    Domain("TRANSFORM", 5, "then (0, document) inside the kernel", "lda"),
    Domain("HELDOUT", 7, "(): the random held-out split of a store", "corpus"),
    Domain("CHAINS", 8, "(chain): the seed of chain c >= 1 of a multi-chain fit", "engine"),
    Domain("KSD", 9, "(sample): the scoring minibatch and T of a kept sample; then "
           "(sample, document) inside the kernel; (sample, 1): a DP sample's completing "
           "sticks and components", "diagnostics"),
    Domain("DIRICHLET_DATA", 10, "(): minibatch labels of the study", "dirichlet study"),
    Domain("DIRICHLET_INIT", 11, "(): the starting point", "dirichlet study"),
    Domain("DIRICHLET_SAMPLER", 12, "(iteration)", "dirichlet study"),
    Domain("DIRICHLET_EXACT", 13, "(): exact posterior draws", "dirichlet study"),
    Domain("DIRICHLET_KSD", 14, "(): the totals T completing kept phi samples for the KSD",
           "dirichlet study"),
    Domain("DP_SLICE", 20, "(iteration), then user", "dpmm"),
    Domain("DP_EXTEND", 21, "(iteration), then block", "dpmm"),
    Domain("DP_ALLOCATE", 22, "(iteration), then user", "dpmm, mixture"),
    Domain("DP_STICKS", 23, "(iteration), then row", "dpmm"),
    Domain("DP_COMPONENTS", 24, "(iteration), then row", "dpmm, mixture"),
    Domain("DP_ALPHA", 25, "(iteration)", "dpmm"),
    Domain("DP_NEW_COMPONENTS", 26, "(iteration), then row", "dpmm"),
    Domain("MIXTURE_WEIGHTS", 30, "(iteration), then row", "mixture"),
    Domain("MIXTURE_INIT", 31, "(): initial allocations", "mixture"),
    Domain("MIXTURE_COLLAPSED", 32, "(): the start; (sweep), then document", "mixture"),
    Domain("DP_INIT", 2**31, "(): allocations; (1): sticks; (2): k-means++ seeds", "dpmm"),
)

# The exact baselines' start is sweep 0: (seed, EXACT_START) (CollapsedGibbs).
EXACT_START = 0
# The parts of one sweep of the exact DP Gibbs slice sampler: (seed, sweep, part).
GIBBS_SLICE_PARTS = {"SLICE": 0, "EXTEND": 1, "ALLOCATE": 2, "STICKS": 3, "COMPONENTS": 4,
                     "ALPHA": 5}

_BY_NAME = {d.name: d.number for d in DOMAINS}

GIBBS = _BY_NAME["GIBBS"]
SAMPLER = _BY_NAME["SAMPLER"]
MINIBATCH = _BY_NAME["MINIBATCH"]
EVALUATION = _BY_NAME["EVALUATION"]
INIT = _BY_NAME["INIT"]
TRANSFORM = _BY_NAME["TRANSFORM"]
HELDOUT = _BY_NAME["HELDOUT"]
CHAINS = _BY_NAME["CHAINS"]
KSD = _BY_NAME["KSD"]
DIRICHLET_DATA = _BY_NAME["DIRICHLET_DATA"]
DIRICHLET_INIT = _BY_NAME["DIRICHLET_INIT"]
DIRICHLET_SAMPLER = _BY_NAME["DIRICHLET_SAMPLER"]
DIRICHLET_EXACT = _BY_NAME["DIRICHLET_EXACT"]
DIRICHLET_KSD = _BY_NAME["DIRICHLET_KSD"]
DP_SLICE = _BY_NAME["DP_SLICE"]
DP_EXTEND = _BY_NAME["DP_EXTEND"]
DP_ALLOCATE = _BY_NAME["DP_ALLOCATE"]
DP_STICKS = _BY_NAME["DP_STICKS"]
DP_COMPONENTS = _BY_NAME["DP_COMPONENTS"]
DP_ALPHA = _BY_NAME["DP_ALPHA"]
DP_NEW_COMPONENTS = _BY_NAME["DP_NEW_COMPONENTS"]
MIXTURE_WEIGHTS = _BY_NAME["MIXTURE_WEIGHTS"]
MIXTURE_INIT = _BY_NAME["MIXTURE_INIT"]
MIXTURE_COLLAPSED = _BY_NAME["MIXTURE_COLLAPSED"]
DP_INIT = _BY_NAME["DP_INIT"]


def chain_seed(seed: int, chain: int) -> int:
    """The seed of chain ``chain`` of a multi-chain fit of ``seed``: ``seed`` itself for
    chain 0 (so chain 0 is the single chain of that seed), else ``derive(seed, CHAINS,
    chain)`` shifted right by one bit (a non-negative int64). Every stream of chain c is
    then the single-chain stream of that seed, so chains share none."""
    from dscir.rng import derive

    if chain < 0 or seed < 0:
        raise ValueError(f"seed and chain must be non-negative, got {seed}, {chain}")
    return int(seed) if chain == 0 else derive(int(seed), CHAINS, int(chain)) >> 1
