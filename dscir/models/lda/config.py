"""LDA's configuration and the papers' reference settings per sampler."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from dscir.errors import DscirError
from dscir.samplers.schedules import constant, polynomial

# Reference settings (Baker et al. 2018; Patterson & Teh 2013; Ma et al. 2015).
# SGLD and SGHMC are baselines without published LDA settings: their values
# are ours, chosen to be stable, not tuned.
REFERENCE: dict[str, dict[str, Any]] = {
    "scir": {"alpha": 0.1, "beta": 0.5, "step_size": 0.5, "tau": 10.0, "kappa": 0.33},
    "sgrld": {"alpha": 0.01, "beta": 1e-4, "step_size": 0.01, "tau": 1000.0, "kappa": 0.6},
    "gsgrhmc": {"alpha": 0.01, "beta": 1e-4, "step_size": 0.02, "tau": None, "kappa": 0.0},
    "sgld": {"alpha": 0.1, "beta": 0.5, "step_size": 1e-4, "tau": None, "kappa": 0.0},
    "sghmc": {"alpha": 0.1, "beta": 0.5, "step_size": 1e-4, "tau": None, "kappa": 0.0},
}


# The default size of a vocabulary block in the workers placement, in parameters
# (K x words): 2^22 float64, 32 MB a field.
BLOCK_ENTRIES = 1 << 22


@dataclass(frozen=True)
class LDAConfig:
    """Everything that determines an LDA chain (with the corpus and the seed)."""

    # Settings added after checkpoint format 2, at the value a chain had before
    # they existed: what an older checkpoint that lacks them was written with.
    PREDATED: ClassVar[dict[str, Any]] = {"warm_start": False, "burn_sweeps": None,
                                          "control_variates": False, "kernel": "dense",
                                          "placement": "driver", "block_entries": BLOCK_ENTRIES,
                                          "policy": "reference", "stopping": None,
                                          "scir_step": "dense",
                                          "device": "cpu"}

    n_topics: int
    sampler: str
    alpha: float
    beta: float
    batch_size: int
    step_size: float
    tau: float | None  # None: constant step size; else h (1 + m / tau) ** -kappa
    kappa: float
    sweeps: int
    seed: int
    burn_in: int = 0  # iterations before posterior samples are kept
    thin: int = 10  # keep every thin-th iteration after burn_in
    eval_sweeps: int = 100
    completion_every: int = 10
    sampler_options: dict[str, float | str] = field(default_factory=dict)  # friction, integrator
    # Warm starts: each document's chain starts from its assignments at the end of
    # its last visit (dscir.models.lda.warm); the first burn_sweeps of the
    # sweeps per visit are discarded (None: sweeps // 2, as a cold visit always;
    # the estimator refuses burn_sweeps without warm_start, dscir.api.lda_params).
    warm_start: bool = False
    burn_sweeps: int | None = None
    # Control variates on a_hat (Dubey et al. 2016), from the stored assignments;
    # needs warm_start (checked with the estimator's parameters).
    control_variates: bool = False
    # The Gibbs kernel: "dense", "sparse" or "auto" (by K; kernels.py), resolved to
    # the one that runs on construction. Warm-started visits run the dense kernel.
    kernel: str = "auto"
    # The default policy that chose the settings not given explicitly
    # (dscir.models.lda.policy); the values above are the ones that ran.
    policy: str = "reference"
    # Where the topics live: "driver", "workers" (in vocabulary blocks of about
    # block_entries parameters; models/lda/topics.py) or "auto" (by K x W;
    # models/lda/placement.py).
    placement: str = "auto"
    block_entries: int = BLOCK_ENTRIES
    # SCIR's step: "dense" (every K x W entry each iteration) or "lazy" (only the
    # minibatch's columns, the others caught up exactly when next touched;
    # dscir/samplers/cir_lazy.py, docs/lazy_scir.md), in either placement.
    scir_step: str = "dense"
    # The stopping rule of a chain of unknown length (n_iter="auto"): the fields
    # of dscir.engine.stopping.Plateau and eval_every; None: a fixed length.
    stopping: dict[str, Any] | None = None
    # Where the minibatch Gibbs tasks run: "cpu" or "cuda" (cuda_kernels: another
    # chain than the CPU's, the same law; Dask workers with a GPU resource).
    device: str = "cpu"

    def schedule(self) -> Callable[[int], float]:
        if self.tau is None:
            return constant(self.step_size)
        return polynomial(self.step_size, self.tau, self.kappa)

    def __post_init__(self):
        # The parameters' own constraints are checked once, with the estimator's
        # (dscir.api.lda_params); here those between values the policy resolves.
        if self.burn_sweeps is not None and self.burn_sweeps >= self.sweeps:
            raise DscirError(f"burn_sweeps={self.burn_sweeps} must be in 0..sweeps-1 "
                             f"(sweeps={self.sweeps})")
        if self.warm_start and self.kernel == "sparse":
            raise DscirError("warm starts run the dense Gibbs kernel; use kernel='dense' "
                             "or 'auto' with warm_start=True")
        _check_scir_step(self)
        _check_device(self)
        from dscir.models.lda.placement import check_placement

        check_placement(self.placement, self.warm_start)
        # The chain is determined by the kernel that runs, so "auto" is resolved here
        # (and recorded so in runs and checkpoints).
        from dscir.models.lda.kernels import resolve_kernel

        kernel = "dense" if self.warm_start else resolve_kernel(self.kernel, self.n_topics)
        object.__setattr__(self, "kernel", kernel)

    @property
    def burn(self) -> int:
        """Sweeps discarded per visit."""
        return self.sweeps // 2 if self.burn_sweeps is None else self.burn_sweeps

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


SCIR_STEPS = ("auto", "dense", "lazy")  # "auto": policy.choose_scir_step on the corpus


def _check_device(config: LDAConfig) -> None:
    """One clear error for a device this chain cannot run on."""
    from dscir.models.lda.cuda_kernels import DEVICES

    if config.device not in DEVICES:
        raise DscirError(f"device must be one of {', '.join(DEVICES)}, got {config.device!r}")
    if config.device == "cuda" and config.warm_start:
        raise DscirError("device='cuda' runs cold-started visits only; use warm_start=False "
                         "or device='cpu'")


def _check_scir_step(config: LDAConfig) -> None:
    """One clear error for a scir_step this chain cannot run."""
    if config.scir_step != "lazy":
        return
    if config.sampler != "scir":
        raise DscirError(f"scir_step='lazy' needs sampler='scir' (the only sampler whose "
                         f"steps compose exactly), got sampler={config.sampler!r}")
    if config.control_variates:
        raise DscirError("scir_step='lazy' does not support control_variates (their stored "
                         "counts touch every word each iteration); use scir_step='dense'")
