"""Topics matched across chains: an assignment on the Hellinger distance.

Topic labels are arbitrary: two chains of one LDA posterior find the same
topics in different orders (the posterior is invariant under relabelling),
so their samples can be compared topic by topic only after relabelling one
chain onto the other. The labelling minimises the summed Hellinger distance
H(p, q) = sqrt(1 - sum_w sqrt(p_w q_w)) between matched topic-word
distributions over all one-to-one assignments (the Hungarian method,
``scipy.optimize.linear_sum_assignment``).
"""

from __future__ import annotations

import numpy as np


def hellinger(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Hellinger distances [K, J] between the rows of ``p`` [K, W] and ``q`` [J, W]
    (each row a distribution), in [0, 1]."""
    return from_affinity(np.sqrt(np.asarray(p, np.float64)) @ np.sqrt(np.asarray(q, np.float64)).T)


def from_affinity(bc: np.ndarray) -> np.ndarray:
    """Hellinger distances from the Bhattacharyya affinities ``bc`` [K, J] =
    sum_w sqrt(p_w q_w) (summable over blocks of words)."""
    return np.sqrt(np.clip(1.0 - bc, 0.0, 1.0))


def match_topics(reference: np.ndarray, other: np.ndarray) -> np.ndarray:
    """The labelling of ``other`` [K, W] onto ``reference`` [K, W]: ``perm`` with
    ``other[perm[k]]`` matched to ``reference[k]``, minimising the summed Hellinger
    distance over one-to-one assignments."""
    return assignment(hellinger(reference, other))


def assignment(distances: np.ndarray) -> np.ndarray:
    """``perm`` [K] minimising sum_k distances[k, perm[k]] over one-to-one labellings."""
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(distances)
    perm = np.empty(len(rows), np.int64)
    perm[rows] = cols
    return perm


def align_chains(means: list[np.ndarray]) -> list[np.ndarray]:
    """Per chain, the labelling onto chain 0 of its topic means [K, W] (chain 0's is
    the identity): index a chain's topic axis with it to align the chain."""
    return [match_topics(means[0], m) for m in means]
