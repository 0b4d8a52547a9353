"""``dscir.LDA``'s parameters, each declared once (``dscir.api.params.Param``).

The estimator's signature, constraint table and docstring, and ``dscir fit lda``'s
options are built from ``PARAMS``; ``config=True`` parameters are fields of
``LDAConfig`` (``AUTO`` resolved by the policy), ``config="stopping"`` ones the
stopping rule of ``n_iter="auto"`` (``LDAConfig.stopping``, the fields of
``dscir.engine.stopping.Plateau``); the others drive the run. ``SAMPLER_OPTIONS``
are entries of ``sampler_options``, each with its command-line flag.
"""

from __future__ import annotations

import numbers

from dscir.api.params import AUTO, Interval, Mapping, Options, Param
from dscir.engine.stopping import EVAL_EVERY, Plateau
from dscir.errors import DscirError
from dscir.models.lda import REFERENCE
from dscir.models.lda.config import BLOCK_ENTRIES, SCIR_STEPS
from dscir.models.lda.cuda_kernels import DEVICES
from dscir.models.lda.kernels import KERNELS, SPARSE_FROM_K
from dscir.models.lda.placement import PLACEMENTS, WORKERS_FROM_ENTRIES
from dscir.models.lda.policy import POLICIES
from dscir.samplers.base import INTEGRATORS

Int, Real = numbers.Integral, numbers.Real
BOOL = Options((False, True))

#: The parameters the policy chooses when they are ``AUTO``.
POLICY_CHOSEN = ("alpha", "beta", "batch_size", "step_size", "tau", "kappa", "sweeps")

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
    Param("n_iter", Interval(Int, 0), 1000,
          "iterations of fit; 'auto': until the held-out score stops improving "
          "(dscir.engine.stopping): burn-in ends at the plateau of the current state's "
          "score, the run at the plateau of the kept samples' mean's (or max_iter); "
          "needs held-out documents.", flag="--iterations", config=False, auto=True),
    Param("max_iter", Interval(Int, 1), 5000,
          "iterations at the most with n_iter='auto'.", config="stopping"),
    Param("tolerance", Interval(Real, 0), Plateau._field_defaults["tolerance"],
          "with n_iter='auto', the relative improvement of the held-out score over its "
          "last window of scores that still counts as progress.", config="stopping"),
    Param("burn_in", Interval(Int, 0, none=True), None,
          "samples of phi are kept every thin iterations after burn_in (None: half of "
          "n_iter; with n_iter='auto' the stopping rule's); topic_word_ is their mean.",
          config=False),
    Param("thin", Interval(Int, 1), 10, "keep a sample every this many iterations."),
    Param("eval_every", Interval(Int, 0), 0,
          "score the held-out documents every this many iterations (0: never, or every "
          f"{EVAL_EVERY} with n_iter='auto'; on the command line, at the end when the store "
          "has held-out documents).", config=False),
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
    Param("progress", BOOL, True, "show a progress bar (on the command line: --progress, "
          "--no-progress, -q; by default only on a terminal).", flag=None, config=False),
)

#: The samplers' own hyperparameters, entries of ``sampler_options`` (None: unset,
#: the sampler's default); ``dscir fit lda`` has a flag for each.
SAMPLER_OPTIONS: tuple[Param, ...] = (
    Param("friction", Interval(Real, 0, open_low=True), None,
          "SGHMC's friction C (default 1).", config="sampler_options"),
    Param("integrator", Options(INTEGRATORS), None,
          "gSGRHMC's and SGHMC's integrator: 'splitting' (default, exact friction) or "
          "'euler' (the papers' step; docs/integrators.md).", config="sampler_options"),
)


def resumed_options(sampler: str, options, run) -> dict | None:
    """``options`` (``sampler_options``) for a fit resuming ``run``: the integrator the
    run recorded where none is given, so a resumed chain keeps its integrator whatever
    dscir's default; one clear error for a different explicit one, or for a run
    checkpointed before the integrator was recorded (which one ran is unknown)."""
    from dscir.runs.checkpoint import started_with
    from dscir.samplers.base import SAMPLERS

    chosen = SAMPLERS.get(sampler)
    if run is None or chosen is None or "integrator" not in chosen.hyperparameters or \
            not isinstance(options, (dict, type(None))) or started_with(run, "sampler") != sampler:
        return options  # nothing to continue, or one the configuration's check refuses
    ran = (started_with(run, "sampler_options") or {}).get("integrator")
    given = (options or {}).get("integrator")
    if ran is None:
        raise DscirError(f"{run} was checkpointed before dscir recorded {sampler}'s "
                         f"integrator, so which one ran is unknown; fit it again")
    if given is not None and given != ran:
        raise DscirError(f"{run} ran {sampler} with integrator={ran!r}, this fit asks for "
                         f"integrator={given!r}; resume with integrator={ran!r} or unset")
    return {**(options or {}), "integrator": ran}
