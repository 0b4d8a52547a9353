"""``dscir fit lda``."""

from __future__ import annotations

import argparse

from dscir.api import LDA_DEFAULTS
from dscir.cli import options
from dscir.models.lda.config import BLOCK_ENTRIES
from dscir.models.lda.kernels import KERNELS, SPARSE_FROM_K
from dscir.models.lda.policy import POLICIES
from dscir.models.lda.placement import PLACEMENTS, WORKERS_FROM_ENTRIES


def _tau(text: str) -> float | str | None:
    """A number, 'none' (constant step size) or 'default' (the sampler's reference)."""
    if text.lower() in ("none", "constant"):
        return None
    if text.lower() == "default":
        return "default"
    return float(text)


class _SamplerOption(argparse.Action):
    """Adds ``--friction`` / ``--integrator`` to the ``sampler_options`` dict."""

    def __call__(self, parser, namespace, value, option_string=None):
        key = option_string.lstrip("-")
        namespace.sampler_options = {**(namespace.sampler_options or {}), key: value}


def _add_sampler_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--friction", type=float, dest="sampler_options", action=_SamplerOption,
                   help="SGHMC's friction C (default 1)")
    p.add_argument("--integrator", choices=("splitting", "euler"), dest="sampler_options",
                   action=_SamplerOption, help="gSGRHMC's and SGHMC's integrator: "
                   "'splitting' (default, exact friction) or 'euler' (the papers' step)")


def add_fit_parser(models: argparse._SubParsersAction) -> None:
    """``dscir fit lda``."""
    p = models.add_parser(
        "lda", help="latent Dirichlet allocation by SG-MCMC on Dask",
        description="Fit LDA on a corpus store. Unset alpha, beta and step schedule "
        "come from --policy: 'default' chooses them from the corpus's size, K and the "
        "minibatch (dscir.models.lda.policy); 'reference' takes the papers' values of "
        "the chosen sampler: " + "; ".join(f"{k}: {v}" for k, v in LDA_DEFAULTS.items()),
    )
    p.add_argument("store", help="corpus store (see `dscir ingest`)")
    p.add_argument("--topics", type=int, default=100, help="number of topics K (100)")
    p.add_argument("--sampler", default="scir", choices=sorted(LDA_DEFAULTS))
    p.add_argument("--iterations", type=int, default=1000)
    p.add_argument("--eval-every", type=int, default=0,
                   help="held-out perplexity every M iterations (0: only at the end if "
                   "the store has held-out documents)")
    options.run_options(p)
    p.add_argument("--policy", choices=POLICIES, default="default",
                   help="who chooses the unset alpha, beta, minibatch, step schedule and "
                   "sweeps (default: from the corpus's size; reference: the papers' values)")
    p.add_argument("--alpha", type=float)
    p.add_argument("--beta", type=float)
    p.add_argument("--batch-size", type=int,
                   help="documents per minibatch (default: the policy's; 'default' makes "
                   "one pass in 10 iterations, 50 to 1,000 documents)")
    p.add_argument("--step-size", type=float)
    p.add_argument("--tau", type=_tau, default="default",
                   help="schedule h(1+m/tau)^-kappa; 'none' for a constant step")
    p.add_argument("--kappa", type=float)
    _add_sampler_options(p)
    p.add_argument("--sweeps", type=int,
                   help="Gibbs sweeps per document and visit (default: the policy's; "
                   "'default' 10, 'reference' 200)")
    p.add_argument("--burn-sweeps", type=int,
                   help="sweeps discarded per visit (default: half of --sweeps)")
    p.add_argument("--warm-start", action="store_true",
                   help="start each document's chain from its last visit's assignments")
    p.add_argument("--control-variates", action="store_true",
                   help="control variates on the counts from the stored assignments "
                        "(needs --warm-start)")
    p.add_argument("--eval-sweeps", type=int, default=100)
    p.add_argument("--kernel", choices=KERNELS, default="auto",
                   help="Gibbs kernel: dense (exact draws, O(K) per token), sparse "
                   "(Metropolis-Hastings with alias tables, O(1) per token) or auto "
                   f"(sparse from K = {SPARSE_FROM_K}; default)")
    p.add_argument("--placement", choices=PLACEMENTS, default="auto",
                   help="where the topics live: driver, workers (vocabulary blocks on "
                   "the workers) or auto (workers from K x W = "
                   f"{WORKERS_FROM_ENTRIES:.0e}; default)")
    p.add_argument("--block-entries", type=int, default=BLOCK_ENTRIES,
                   help="parameters per vocabulary block with --placement workers")
    p.add_argument("--burn-in", type=int, help="iterations before samples are kept")
    p.add_argument("--thin", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--top", type=int, default=10, help="top words printed per topic")
    p.add_argument("--no-progress", action="store_true")
    options.cluster_options(p)
    p.set_defaults(func=_fit_lda)


def fit_and_report(model, store: str, args: argparse.Namespace, top: int, **run) -> int:
    """Fit an LDA on the cluster ``args`` names (held-out perplexity at least at the
    end, when the store has held-out documents); print the score and the topics.
    ``run``: the run store keywords of ``fit``."""
    from dscir.corpus import Corpus

    model.chain_config(store)  # a bad parameter is named before the store is read
    if model.eval_every == 0 and Corpus.open(store).heldout_docs().size:
        model.set_params(eval_every=max(model.n_iter, 1))
    options.fit(model, store, args, **run)
    if model.evaluations_:
        last = model.evaluations_[-1]
        print(f"held-out perplexity at iteration {last.iteration}: {last.perplexity:.1f}")
    print_topics(model, top)
    return 0


def print_topics(model, n: int) -> None:
    """The ``n`` most probable words of each topic (LDA) or occupied cluster (mixtures)."""
    table = model.top_words_table(n)
    width = len(str(max((k for k, _ in table.rows), default=0)))
    for k, words in table.rows:
        print(f"{table.label} {k:>{width}}: " + " ".join(str(w) for w, _ in words))


def _fit_lda(args: argparse.Namespace) -> int:
    from dscir.api import LDA

    model = LDA(
        n_topics=args.topics, sampler=args.sampler, alpha=args.alpha, beta=args.beta,
        batch_size=args.batch_size, step_size=args.step_size, tau=args.tau,
        kappa=args.kappa, sweeps=args.sweeps, burn_sweeps=args.burn_sweeps,
        warm_start=args.warm_start, control_variates=args.control_variates,
        n_iter=args.iterations, burn_in=args.burn_in, thin=args.thin, eval_every=args.eval_every,
        eval_sweeps=args.eval_sweeps, sampler_options=args.sampler_options, seed=args.seed,
        kernel=args.kernel, placement=args.placement, block_entries=args.block_entries,
        policy=args.policy, progress=not args.no_progress,
    )
    return fit_and_report(model, args.store, args, args.top, **options.run_kwargs(args))
