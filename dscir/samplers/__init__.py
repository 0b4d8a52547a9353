"""Samplers on positive (expanded-mean / Gamma) parameters: pure array code, no Dask, no I/O.

Every sampler module follows one contract (BlackJAX style): a small ``State``
named tuple exposing ``log_theta``, ``init(theta0) -> State`` and
``step(state, prior, counts, step_size, key) -> State``, where ``prior`` is the
Gamma/Dirichlet prior shape, ``counts`` the minibatch sufficient statistics
scaled to the full data (so SCIR's a_hat = prior + counts), the simplex is the
last axis, and ``key`` names the random stream (``dscir.rng.derive``).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from dscir.errors import DscirError

SAMPLERS: dict[str, str] = {
    "scir": "dscir.samplers.cir",
    "sgrld": "dscir.samplers.sgrld",
    "gsgrhmc": "dscir.samplers.sgrhmc",
    "sgld": "dscir.samplers.sgld",
    "sghmc": "dscir.samplers.sghmc",
}


def get_sampler(name: str) -> ModuleType:
    """The module implementing sampler ``name`` (one of ``SAMPLERS``)."""
    try:
        module = SAMPLERS[name]
    except KeyError:
        raise DscirError(
            f"unknown sampler {name!r}; choose one of {', '.join(SAMPLERS)}"
        ) from None
    return importlib.import_module(module)
