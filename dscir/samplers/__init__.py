"""Samplers on positive (expanded-mean / Gamma) parameters: pure array code, no Dask, no I/O.

Each sampler module (``cir`` for SCIR, ``sgrld``, ``sgrhmc`` for gSGRHMC,
``sgld``, ``sghmc``) has a small ``State`` named tuple exposing ``log_theta``,
``init(theta0)`` and ``step(state, prior, counts, step_size, key)``, where
``prior`` is the Gamma/Dirichlet prior shape, ``counts`` the minibatch
statistics scaled to the full data (so SCIR's a_hat = prior + counts), the
simplex is the last axis, and ``key`` names the random stream
(``dscir.rng.derive``). ``base.SAMPLERS`` registers them as typed objects.
"""

from dscir.samplers.base import SAMPLERS, Sampler, get_sampler

__all__ = ["SAMPLERS", "Sampler", "get_sampler"]
