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


def _table(text: str) -> tuple[Domain, ...]:
    """The domains of ``text``: a row ``NAME number used_by | key`` each; a line that
    starts with ``|`` continues the key above; a number may be a power ``2**n``."""
    rows: list[list[str]] = []
    for line in text.strip().splitlines():
        head, key = line.split("|")
        if head.strip():
            name, number, used_by = head.split(maxsplit=2)
            rows.append([name, number, used_by.strip(), key.strip()])
        else:
            rows[-1][3] += " " + key.strip()
    return tuple(Domain(name, _number(number), key, used_by)
                 for name, number, used_by, key in rows)


def _number(text: str) -> int:
    base, _, power = text.partition("**")
    return int(base) ** int(power) if power else int(base)


#  name            number  used by          | the parts after (seed, number)
DOMAINS: tuple[Domain, ...] = _table("""
GIBBS                  0  lda             | then (iteration, document) inside the kernel
SAMPLER                1  lda             | (iteration), then row inside the sampler
MINIBATCH              2  engine          | (epoch): the epoch's visiting order
EVALUATION             3  lda             | then document inside the kernel
INIT                   4  lda, mixture    | (): the initial parameters
TRANSFORM              5  lda             | then (0, document) inside the kernel
HELDOUT                7  corpus          | (): the random held-out split of a store
CHAINS                 8  engine          | (chain): the seed of chain c >= 1 of a
                                          | multi-chain fit
STOPPING_ASIDE         6  engine          | (): the documents the stopping rule sets aside
                                          | on a store without held-out ones
KSD                    9  diagnostics     | (sample): the scoring minibatch and T of a kept
                                          | sample; then (sample, document) inside the
                                          | kernel; (sample, 1): a DP sample's completing
                                          | sticks and components
DIRICHLET_DATA        10  dirichlet study | (): minibatch labels of the study
DIRICHLET_INIT        11  dirichlet study | (): the starting point
DIRICHLET_SAMPLER     12  dirichlet study | (iteration)
DIRICHLET_EXACT       13  dirichlet study | (): exact posterior draws
DIRICHLET_KSD         14  dirichlet study | (): the totals T completing kept phi samples for
                                          | the KSD
DP_SLICE              20  dpmm            | (iteration), then user
DP_EXTEND             21  dpmm            | (iteration), then block
DP_ALLOCATE           22  dpmm, mixture   | (iteration), then user
DP_STICKS             23  dpmm            | (iteration), then row
DP_COMPONENTS         24  dpmm, mixture   | (iteration), then row
DP_ALPHA              25  dpmm            | (iteration)
DP_NEW_COMPONENTS     26  dpmm            | (iteration), then row
DP_RELABEL            27  dpmm            | (iteration): the relabelling move; (iteration,
                                          | 1): its fresh components (then block)
DP_SPLIT_MERGE        28  dpmm            | (iteration): the split-merge proposals, then
                                          | proposal
MIXTURE_WEIGHTS       30  mixture         | (iteration), then row
MIXTURE_INIT          31  mixture         | (): initial allocations
MIXTURE_COLLAPSED     32  mixture         | (): the start; (sweep), then document
STREAM_START          33  mixture, dpmm   | (iteration): the allocations partial_fit's
                                          | new documents start from
SYNTHETIC             40  corpus          | (): a generated corpus's topics; (block): its
                                          | documents block by block
DP_INIT            2**31  dpmm            | (): allocations; (1): sticks; (2): k-means++
                                          | seeds
""")

# The exact baselines' start is sweep 0: (seed, EXACT_START) (CollapsedGibbs).
EXACT_START = 0
# The parts of one sweep of the exact DP Gibbs slice sampler: (seed, sweep, part).
GIBBS_SLICE_PARTS = {"SLICE": 0, "EXTEND": 1, "ALLOCATE": 2, "STICKS": 3, "COMPONENTS": 4,
                     "ALPHA": 5, "RELABEL": 6, "SPLIT_MERGE": 7}

# Each domain's number by its name, in the table's order (tests/engine/test_engine.py checks
# every name against the table).
(GIBBS, SAMPLER, MINIBATCH, EVALUATION, INIT, TRANSFORM, HELDOUT, CHAINS, STOPPING_ASIDE,
 KSD, DIRICHLET_DATA, DIRICHLET_INIT, DIRICHLET_SAMPLER, DIRICHLET_EXACT, DIRICHLET_KSD,
 DP_SLICE, DP_EXTEND, DP_ALLOCATE, DP_STICKS, DP_COMPONENTS, DP_ALPHA, DP_NEW_COMPONENTS,
 DP_RELABEL, DP_SPLIT_MERGE, MIXTURE_WEIGHTS, MIXTURE_INIT, MIXTURE_COLLAPSED, STREAM_START,
 SYNTHETIC, DP_INIT) = (
    d.number for d in DOMAINS)


def chain_seed(seed: int, chain: int) -> int:
    """The seed of chain ``chain`` of a multi-chain fit of ``seed``: ``seed`` itself for
    chain 0 (so chain 0 is the single chain of that seed), else ``derive(seed, CHAINS,
    chain)`` shifted right by one bit (a non-negative int64). Every stream of chain c is
    then the single-chain stream of that seed, so chains share none."""
    from dscir.rng import derive

    if chain < 0 or seed < 0:
        raise ValueError(f"seed and chain must be non-negative, got {seed}, {chain}")
    return int(seed) if chain == 0 else derive(int(seed), CHAINS, int(chain)) >> 1
