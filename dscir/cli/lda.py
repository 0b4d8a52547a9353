"""``dscir fit lda``, ``dscir evaluate`` and ``dscir topics``."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from dscir.api import LDA_DEFAULTS
from dscir.cli.options import (announce_dashboard, check_run_options, cluster_kwargs,
                               cluster_options, run_options)


def _tau(text: str) -> float | str | None:
    """A number, 'none' (constant step size) or 'default' (the sampler's reference)."""
    if text.lower() in ("none", "constant"):
        return None
    if text.lower() == "default":
        return "default"
    return float(text)


def add_fit_parser(models: argparse._SubParsersAction) -> None:
    """``dscir fit lda``."""
    p = models.add_parser(
        "lda", help="latent Dirichlet allocation by SG-MCMC on Dask",
        description="Fit LDA on a corpus store. Unset hyperparameters take the "
        "reference values of the chosen sampler: "
        + "; ".join(f"{k}: {v}" for k, v in LDA_DEFAULTS.items()),
    )
    p.add_argument("store", help="corpus store (see `dscir ingest`)")
    p.add_argument("--topics", type=int, default=100, help="number of topics K (100)")
    p.add_argument("--sampler", default="scir", choices=sorted(LDA_DEFAULTS))
    p.add_argument("--iterations", type=int, default=1000)
    p.add_argument("--eval-every", type=int, default=0,
                   help="held-out perplexity every M iterations (0: only at the end if "
                   "the store has held-out documents)")
    run_options(p)
    p.add_argument("--alpha", type=float)
    p.add_argument("--beta", type=float)
    p.add_argument("--batch-size", type=int, default=50)
    p.add_argument("--step-size", type=float)
    p.add_argument("--tau", type=_tau, default="default",
                   help="schedule h(1+m/tau)^-kappa; 'none' for a constant step")
    p.add_argument("--kappa", type=float)
    p.add_argument("--sweeps", type=int, default=200, help="Gibbs sweeps per document")
    p.add_argument("--eval-sweeps", type=int, default=100)
    p.add_argument("--burn-in", type=int, help="iterations before samples are kept")
    p.add_argument("--thin", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--top", type=int, default=10, help="top words printed per topic")
    p.add_argument("--no-progress", action="store_true")
    cluster_options(p)
    p.set_defaults(func=_fit_lda)


def register(sub: argparse._SubParsersAction) -> None:
    ev = sub.add_parser("evaluate", help="held-out perplexity of a fitted run on a store")
    ev.add_argument("run")
    ev.add_argument("store", nargs="?", help="corpus store (default: the run's own)")
    ev.add_argument("--sweeps", type=int, help="Gibbs sweeps for document completion")
    cluster_options(ev)
    ev.set_defaults(func=_evaluate)

    tp = sub.add_parser("topics", help="top words of each topic of a fitted run")
    tp.add_argument("run")
    tp.add_argument("--top", type=int, default=10)
    tp.set_defaults(func=_topics)


def _print_topics(topic_word: np.ndarray, vocabulary: np.ndarray, n: int) -> None:
    order = np.argsort(-topic_word, axis=1)[:, :n]
    width = len(str(topic_word.shape[0] - 1))
    for k, row in enumerate(order):
        print(f"topic {k:>{width}}: " + " ".join(str(vocabulary[w]) for w in row))


def _fit_lda(args: argparse.Namespace) -> int:
    from dscir.api import LDA
    from dscir.corpus import Corpus
    from dscir.distributed.cluster import dask_client

    model = LDA(
        n_topics=args.topics, sampler=args.sampler, alpha=args.alpha, beta=args.beta,
        batch_size=args.batch_size, step_size=args.step_size, tau=args.tau,
        kappa=args.kappa, sweeps=args.sweeps, n_iter=args.iterations,
        burn_in=args.burn_in, thin=args.thin, eval_every=args.eval_every,
        eval_sweeps=args.eval_sweeps, seed=args.seed, progress=not args.no_progress,
    )
    check_run_options(args, "lda", model._config())  # before starting a cluster
    cluster = cluster_kwargs(args)
    corpus = Corpus.open(args.store)
    with dask_client(**cluster) as client:
        announce_dashboard(client)
        model.fit(corpus, client=client, out=args.out, overwrite=args.overwrite,
                  checkpoint_every=args.checkpoint_every, resume=args.resume)
        if model.evaluations_:
            last = model.evaluations_[-1]
            print(f"held-out perplexity at iteration {last.iteration}: {last.perplexity:.1f}")
        elif corpus.heldout_docs().size:
            print(f"held-out perplexity: {model.perplexity(client=client):.1f}")
    _print_topics(model.topic_word_, model.vocabulary_, args.top)
    if args.out or args.resume:
        print(f"run written to {model.run_path_}", file=sys.stderr)
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from dscir.corpus import Corpus
    from dscir.distributed.cluster import dask_client
    from dscir.distributed.lda import evaluate_perplexity
    from dscir.distributed.runstore import Run
    from dscir.errors import DscirError

    cluster = cluster_kwargs(args)
    run = Run.open(args.run)
    store = args.store or run.store
    corpus = Corpus.open(store)
    if corpus.n_words != run.phi_mean.shape[1]:
        raise DscirError(
            f"{store} has {corpus.n_words} words, the run's topics have {run.phi_mean.shape[1]}"
        )
    cfg = run.config
    with dask_client(**cluster) as client:
        perplexity = evaluate_perplexity(
            client, store, np.asarray(corpus.heldout_docs(), np.int64), run.phi_mean,
            cfg["alpha"], args.sweeps or cfg["eval_sweeps"], cfg["seed"],
            cfg["completion_every"], max(2 * sum(client.nthreads().values()), 1),
        )
    print(f"held-out perplexity: {perplexity:.2f} "
          f"({corpus.heldout_docs().size} documents of {store}, every "
          f"{cfg['completion_every']}th token tested, natural log)")
    return 0


def _topics(args: argparse.Namespace) -> int:
    from dscir.distributed.runstore import Run

    run = Run.open(args.run)
    _print_topics(run.phi_mean, run.vocabulary, args.top)
    return 0
