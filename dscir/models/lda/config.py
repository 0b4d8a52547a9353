"""LDA's configuration: the parameters that determine a chain, each declared once.

``PARAMS`` declares them (``dscir.params.Param``: constraint, default, help,
command-line flag) and ``LDAConfig`` is made from them (``configuration``): the
estimator ``dscir.LDA`` takes them with the parameters that drive a run
(``dscir.api.lda_params``), checks each constraint once, resolves the ``AUTO``
ones by the policy (``dscir.models.lda.policy``) and builds the configuration;
``LDAConfig`` itself checks only what holds between resolved values.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Callable
from typing import Any, ClassVar

from dscir.errors import DscirError
from dscir.models.lda.gibbs_cuda import DEVICES
from dscir.models.lda.gibbs import KERNELS, SPARSE_FROM_K, resolve_kernel
from dscir.models.lda.placement import PLACEMENTS, WORKERS_FROM_ENTRIES, check_placement
from dscir.models.lda.policy import POLICIES, REFERENCE
from dscir.params import AUTO, Interval, Mapping, Options, Param, configuration
from dscir.samplers.schedules import constant, polynomial

Int, Real = numbers.Integral, numbers.Real
BOOL = Options((False, True))

# The default size of a vocabulary block in the workers placement, in parameters
# (K x words): 2^22 float64, 32 MB a field.
BLOCK_ENTRIES = 1 << 22
SCIR_STEPS = ("auto", "dense", "lazy")  # "auto": policy.choose_scir_step on the corpus

#: The parameters that make up an LDA chain's configuration, in the estimator's order.
PARAMS: tuple[Param, ...] = (
    Param("n_topics", Interval(Int, 2), 100, "number of topics K.", flag="--topics",
          positional=True),
    Param("sampler", Options(tuple(REFERENCE)), "scir",
          "the SG-MCMC sampler: " + ", ".join(REFERENCE) + ".", positional=True),
    Param("alpha", Interval(Real, 0, open_low=True), AUTO,
          "document-topic Dirichlet concentration ('auto': the policy's).", auto=True),
    Param("beta", Interval(Real, 0, open_low=True), AUTO,
          "topic-word Dirichlet concentration ('auto': the policy's).", auto=True),
    Param("batch_size", Interval(Int, 1), AUTO,
          "documents per minibatch ('auto': the policy's; 'default' makes one pass over "
          "the training documents in 10 iterations, 50 to 1,000 documents).", auto=True),
    Param("step_size", Interval(Real, 0, open_low=True), AUTO,
          "h (SCIR) or epsilon; with tau set, h_m = h (1 + m/tau)^-kappa ('auto': the "
          "policy's).", auto=True),
    Param("tau", Interval(Real, 0, open_low=True, none=True), AUTO,
          "the step-size schedule's tau; None ('none' on the command line) keeps the step "
          "constant ('auto': the policy's).", auto=True),
    Param("kappa", Interval(Real, 0, 1), AUTO,
          "the step-size schedule's decay ('auto': the policy's).", auto=True),
    Param("policy", Options(POLICIES), "default",
          "who chooses the parameters left 'auto': 'default' (from the corpus's size, K "
          "and the minibatch; dscir.models.lda.policy) or 'reference' (the papers' "
          "settings, LDA_DEFAULTS). The run records the policy."),
    Param("sweeps", Interval(Int, 1), AUTO,
          "Gibbs sweeps per minibatch document and visit ('auto': the policy's; "
          "'default' 10, 'reference' 200); one is enough for a warm start with "
          "burn_sweeps=0.", auto=True),
    Param("burn_sweeps", Interval(Int, 0, none=True), None,
          "the first this many sweeps of a warm-started visit are discarded (None: half; "
          "a cold visit always discards half); needs warm_start.", needs="warm_start"),
    Param("warm_start", BOOL, False,
          "each document's chain starts from its topic assignments at the end of its last "
          "visit (kept in the run, or a temporary directory the workers must see)."),
    Param("control_variates", BOOL, False,
          "a_hat from the stored assignments' counts plus the scaled minibatch correction "
          "(Dubey et al. 2016); needs warm_start.", needs="warm_start"),
    Param("thin", Interval(Int, 1), 10, "keep a sample every this many iterations."),
    Param("eval_sweeps", Interval(Int, 2), 100,
          "Gibbs sweeps for document completion when scoring."),
    Param("sampler_options", Mapping(none=True), None,
          "the sampler's own hyperparameters, e.g. {'friction': 1.0} for SGHMC, "
          "{'integrator': 'euler'} for gSGRHMC or SGHMC (docs/integrators.md); None: the "
          "defaults. On the command line: --friction, --integrator.", flag=None),
    Param("seed", Interval(Int, 0), 0,
          "the whole chain is a function of the seed (and the corpus)."),
    Param("kernel", Options(KERNELS), "auto",
          "the minibatch Gibbs kernel: 'dense' (exact draws, O(K) per token), 'sparse' "
          "(Metropolis-Hastings with alias tables, O(1) per token) or 'auto' (sparse from "
          f"K = {SPARSE_FROM_K})."),
    Param("device", Options(DEVICES), "cpu",
          "where the minibatch Gibbs tasks run: 'cpu' or 'cuda' (an NVIDIA GPU through "
          "numba-cuda, pip install 'dscir[gpu]'; on a Dask cluster, workers started with "
          "--resources GPU=1, one per device; the same law as the CPU chain, not its "
          "numbers; not with warm starts)."),
    Param("placement", Options(PLACEMENTS), "auto",
          "where the topics live: 'driver', 'workers' (vocabulary blocks held and stepped "
          "by the workers; not with warm starts) or 'auto' (workers from K x W = "
          f"{WORKERS_FROM_ENTRIES:.0e}). The run records the placement that ran."),
    Param("scir_step", Options(SCIR_STEPS), "dense",
          "SCIR's step: 'dense' (every K x W entry each iteration), 'lazy' (only the "
          "minibatch's words; the others caught up exactly when next touched: O(K x "
          "minibatch words) per iteration; sampler='scir' only, not with control "
          "variates; either placement; docs/lazy_scir.md) or 'auto' (lazy from K x W = "
          "1e7 when a minibatch's tokens are under a tenth of W, else dense; "
          "dscir.models.lda.policy.choose_scir_step). The run records the step that ran."),
    Param("block_entries", Interval(Int, 1), BLOCK_ENTRIES,
          "parameters per vocabulary block with placement='workers' (and of the lazy "
          "SCIR step's blocks in either placement)."),
)


@configuration(PARAMS)
class LDAConfig:
    """Everything that determines an LDA chain (with the corpus): ``PARAMS``,
    resolved, then the settings the estimator derives."""

    # Settings added after checkpoint format 2, at the value a chain had before
    # they existed: what an older checkpoint that lacks them was written with.
    PREDATED: ClassVar[dict[str, Any]] = {"warm_start": False, "burn_sweeps": None,
                                          "control_variates": False, "kernel": "dense",
                                          "placement": "driver", "block_entries": BLOCK_ENTRIES,
                                          "policy": "reference", "stopping": None,
                                          "scir_step": "dense",
                                          "device": "cpu"}

    burn_in: int = 0  # iterations before posterior samples are kept (the estimator's burn_in)
    completion_every: int = 10  # document completion: every this many held-out tokens
    # The stopping rule of a chain of unknown length (n_iter="auto"): the fields
    # of dscir.engine.stopping.Plateau and eval_every; None: a fixed length.
    stopping: dict[str, Any] | None = None

    def schedule(self) -> Callable[[int], float]:
        if self.tau is None:
            return constant(self.step_size)
        return polynomial(self.step_size, self.tau, self.kappa)

    def __post_init__(self):
        # Each parameter's own constraint is checked once, by the estimator; here
        # those between values the policy resolves.
        if self.burn_sweeps is not None and self.burn_sweeps >= self.sweeps:
            raise DscirError(f"burn_sweeps={self.burn_sweeps} must be in 0..sweeps-1 "
                             f"(sweeps={self.sweeps})")
        if self.warm_start and self.kernel == "sparse":
            raise DscirError("warm starts run the dense Gibbs kernel; use kernel='dense' "
                             "or 'auto' with warm_start=True")
        _check_scir_step(self)
        _check_device(self)
        check_placement(self.placement, self.warm_start)
        # The chain is determined by the kernel that runs, so "auto" is resolved here
        # (and recorded so in runs and checkpoints).
        kernel = "dense" if self.warm_start else resolve_kernel(self.kernel, self.n_topics)
        object.__setattr__(self, "kernel", kernel)

    @property
    def burn(self) -> int:
        """Sweeps discarded per visit."""
        return self.sweeps // 2 if self.burn_sweeps is None else self.burn_sweeps

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _check_device(config: LDAConfig) -> None:
    """One clear error for a device that cannot run this chain."""
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
