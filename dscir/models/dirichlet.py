"""The synthetic Dirichlet study of Baker et al. (2018, Sec. 3.2).

N categorical observations over d categories with a Dirichlet(alpha) prior:
the posterior is Dirichlet(alpha + counts). A sampler sees only a minibatch of
n observations per step, through the unbiased estimate (N / n) * minibatch
counts.
"""

from __future__ import annotations

import numpy as np

from dscir.errors import DscirError

D, N, ALPHA = 10, 1000, 0.1
SPARSE = np.array([800, 100, 100, 0, 0, 0, 0, 0, 0, 0])
DENSE = np.full(D, 100)  # 1000 points spread evenly over the ten categories


def observations(counts: np.ndarray) -> np.ndarray:
    """The category label of each of the N observations."""
    return np.repeat(np.arange(counts.size), counts)


def minibatch_counts(labels: np.ndarray, n: int, d: int, rng: np.random.Generator
                     ) -> np.ndarray:
    """(N / n) x counts of a minibatch of n observations drawn without replacement."""
    if not 1 <= n <= labels.size:
        raise DscirError(f"minibatch size must be between 1 and {labels.size}, got {n}")
    pick = rng.choice(labels.size, size=n, replace=False)
    return np.bincount(labels[pick], minlength=d) * (labels.size / n)
