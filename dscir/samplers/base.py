"""Samplers as typed objects in one registry (BlackJAX's ``SamplingAlgorithm``).

A ``Sampler`` names its state type and closes its own hyperparameters (such
as SGHMC's friction, or the Hamiltonian samplers' integrator) over ``step``;
models call ``init``/``init_log``/``step`` and ``concat``/``head`` and never
branch on a sampler's name or touch a state's fields by position. ``SAMPLERS`` is the registry a reader follows to
the ``step`` that runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np

from dscir.errors import DscirError
from dscir.samplers import cir, sghmc, sgld, sgrhmc, sgrld
from dscir.samplers._expanded import INTEGRATORS, TINY

# The options that take a name, and the names they take (the others are positive numbers).
CHOICES = {"integrator": INTEGRATORS}


@dataclass(frozen=True)
class Sampler:
    """One sampler: its state type, how to start it and its step.

    ``step(state, prior, counts, step_size, key) -> state`` with ``counts``
    the minibatch statistics scaled to the full data; ``hyperparameters`` are
    bound into the step (``with_options`` changes them). ``momentum`` says
    whether the state carries a momentum next to the position; ``row_totals``
    whether the step reads its rows' totals (theta_k., c_k.), which a state
    holding only some columns of its rows must be given.
    """

    name: str
    description: str
    State: type[NamedTuple]
    init: Callable[[np.ndarray], Any]
    _step: Callable[..., Any]
    momentum: bool = False
    log_scale: bool = False  # the state holds log theta (values below a double's range)
    row_totals: bool = True
    hyperparameters: Mapping[str, float | str] = field(default_factory=dict)
    # step(..., counts x factor, ...) with the product formed inside the step (None:
    # formed first); for samplers without hyperparameters.
    _step_scaled: Callable[..., Any] | None = None

    def step(self, state, prior, counts: np.ndarray, step_size: float, key: int,
             totals: np.ndarray | None = None):
        """One step; ``totals`` [2, rows]: the whole rows' theta and count sums when
        ``state`` holds only some columns of them (ignored without ``row_totals``)."""
        extra = {"totals": totals} if totals is not None and self.row_totals else {}
        return self._step(state, prior, counts, step_size, key, **extra,
                          **self.hyperparameters)

    def step_scaled(self, state, prior, counts: np.ndarray, factor: float, step_size: float,
                    key: int, totals=None):
        """``step`` with counts = ``counts`` x ``factor`` (integer minibatch counts and
        their scale to the full data): the same state bit for bit; a sampler with
        a fused step (SCIR, SGRLD; a number as ``prior``) forms the product entry by
        entry instead of as a K x W array."""
        fused = self._step_scaled is not None and not self.hyperparameters
        if fused and np.ndim(prior) == 0:
            extra = {"totals": totals} if totals is not None and self.row_totals else {}
            return self._step_scaled(state, prior, counts, factor, step_size, key, **extra)
        return self.step(state, prior, counts * factor, step_size, key, totals)

    def init_log(self, log_theta0: np.ndarray):
        """A state at theta = exp(``log_theta0``); a linear-scale sampler floors
        values below the smallest double at that value (so they stay positive)."""
        if self.log_scale:
            return cir.init_log(log_theta0)
        return self.init(np.maximum(np.exp(log_theta0), TINY))

    def with_options(self, **hyperparameters: float | str) -> Sampler:
        unknown = set(hyperparameters) - set(self.hyperparameters)
        if unknown:
            known = ", ".join(self.hyperparameters) or "none"
            raise DscirError(f"sampler {self.name!r} has no option {', '.join(sorted(unknown))}"
                             f" (its options: {known})")
        for k, v in hyperparameters.items():
            if k in CHOICES:
                if v not in CHOICES[k]:
                    raise DscirError(f"{self.name} {k} must be one of {', '.join(CHOICES[k])}, "
                                     f"got {v!r}")
            elif not (isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
                    and np.isfinite(v)):
                raise DscirError(f"{self.name} {k} must be a positive number, got {v!r}")
        return replace(self, hyperparameters={**self.hyperparameters, **hyperparameters})

    @staticmethod
    def concat(state, more):
        """The rows of ``more`` appended to ``state`` (every field, momenta too)."""
        return type(state)(*(np.concatenate([a, b]) for a, b in zip(state, more)))

    def append_log(self, state, log_rows: np.ndarray):
        """``concat(state, init_log(log_rows))``, the same values: for a state of one
        linear-scale field (SGRLD, SGLD) the new rows are written into the grown
        array in one pass (no temporaries of their size)."""
        if self.log_scale or len(state) != 1:
            return self.concat(state, self.init_log(log_rows))
        theta = np.asarray(state[0])
        out = np.empty((theta.shape[0] + len(log_rows),) + theta.shape[1:])
        out[:theta.shape[0]] = theta
        new = out[theta.shape[0]:]
        np.maximum(np.exp(log_rows, out=new), TINY, out=new)
        if new.size and not (new.min() > 0 and new.max() < np.inf):
            raise DscirError(f"{self.name} theta0 must be positive and finite everywhere")
        return type(state)(out)

    @staticmethod
    def head(state, n: int):
        """The first ``n`` rows of every field of ``state``."""
        return type(state)(*(a[:n] for a in state))

    @staticmethod
    def arrays(state) -> dict[str, np.ndarray]:
        """The state's fields by name (for checkpoints and run stores)."""
        return {k: np.asarray(v) for k, v in state._asdict().items()}

    def from_arrays(self, arrays: Mapping[str, np.ndarray], shape: tuple[int, ...] | None = None):
        """A state from ``arrays`` (its fields by name), checked against this sampler."""
        self.check_arrays(arrays, shape)
        return self.State(**{k: np.array(v) for k, v in arrays.items()})

    def check_arrays(self, arrays: Mapping[str, Any], shape: tuple[int, ...] | None = None):
        """One clear error unless ``arrays`` (anything with a shape) are this
        sampler's state fields, of ``shape`` when given."""
        fields = set(self.State._fields)
        if set(arrays) != fields or (shape is not None and
                                     any(np.shape(v) != shape for v in arrays.values())):
            got = {k: np.shape(v) for k, v in arrays.items()}
            raise DscirError(f"the saved sampler state {got} does not fit a {self.name} chain"
                             + (f" of shape {shape}" if shape is not None else ""))


SAMPLERS: dict[str, Sampler] = {
    s.name: s for s in (
        Sampler("scir", "stochastic CIR: exact Gamma transitions (Baker et al. 2018)",
                cir.State, cir.init, cir.step, log_scale=True, row_totals=False,
                _step_scaled=cir.step_scaled),
        Sampler("sgrld", "Riemannian Langevin, expanded mean (Patterson & Teh 2013)",
                sgrld.State, sgrld.init, sgrld.step, _step_scaled=sgrld.step_scaled),
        Sampler("gsgrhmc", "Riemannian HMC from the complete recipe (Ma et al. 2015)",
                sgrhmc.State, sgrhmc.init, sgrhmc.step, momentum=True,
                hyperparameters={"integrator": "splitting"}),
        Sampler("sgld", "Langevin baseline (Welling & Teh 2011)",
                sgld.State, sgld.init, sgld.step),
        Sampler("sghmc", "Hamiltonian baseline with friction C (Chen et al. 2014)",
                sghmc.State, sghmc.init, sghmc.step, momentum=True,
                hyperparameters={"friction": 1.0, "integrator": "splitting"}),
    )
}


def get_sampler(name: str, **hyperparameters: float | str) -> Sampler:
    """The registered sampler ``name``, with ``hyperparameters`` (e.g. friction,
    integrator) set."""
    try:
        sampler = SAMPLERS[name]
    except KeyError:
        raise DscirError(f"unknown sampler {name!r}; choose one of {', '.join(SAMPLERS)}") \
            from None
    return sampler.with_options(**hyperparameters) if hyperparameters else sampler

