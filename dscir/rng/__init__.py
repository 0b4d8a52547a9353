"""Counter-based random streams for numba kernels.

Every random number in dscir comes from a stream named by a tuple of integers,
for example ``(seed, iteration, document_id)`` or ``(seed, iteration, row)``.
A stream key is a 64-bit hash of that tuple (SplitMix64 finaliser); a stream
state is four 64-bit words of xoshiro256** seeded from the key. Because streams
are named by what they are for, never by which worker or thread draws them, a
run gives the same numbers whatever the number of workers or threads and
whatever order tasks finish in.

All functions here are ``numba.njit`` and can be called from other kernels;
``derive`` is also usable from Python.

Draws from a state ``s``: ``uniform`` (``uniform_regs`` on a state held in
scalars), ``normal`` (Box-Muller), ``ziggurat_normal``
(faster), ``exponential``, ``gamma`` / ``log_gamma`` (any shape > 0; the log form
stays finite where the value underflows), ``gamma_mt`` (one shape, constants
precomputed), ``log_beta`` and ``poisson`` (any lam >= 0). The draw functions
that call other draw functions are compiled without numba's reference counting
(``_nrt=False``: they never allocate): passing the state array to a compiled
call otherwise costs two atomic refcount updates, more than a ziggurat draw.
Hot loops do best the same way: allocate the state per row, then hand it to an
``_nrt=False`` row function (``dscir.samplers.cir`` does this).
"""

from dscir.rng.core import (derive, exponential, gamma, gamma_mt, log_beta, log_gamma, mix_in,
                            new_state, next_u64, normal, uniform, uniform_regs, ziggurat_normal)
from dscir.rng.poisson import poisson

__all__ = ["derive", "exponential", "gamma", "gamma_mt", "log_beta", "log_gamma", "mix_in",
           "new_state", "next_u64", "normal", "poisson", "uniform", "uniform_regs",
           "ziggurat_normal"]
