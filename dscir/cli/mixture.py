"""``dscir fit mixture``: a finite mixture of multinomials (K clusters of documents)."""

from __future__ import annotations

import argparse

from dscir.api.mixture import MIXTURE_DEFAULTS
from dscir.cli import options


def add_fit_parser(models: argparse._SubParsersAction) -> None:
    """``dscir fit mixture``."""
    p = models.add_parser(
        "mixture", help="finite mixture of multinomials (K clusters of documents)",
        description="Fit a mixture of K multinomials on a corpus store (rows = documents) "
        "by stochastic-gradient MCMC with SCIR or SGRLD steps on Dask, or by the exact "
        "Gibbs sampler in this process. Unset hyperparameters take the reference values "
        "of the chosen sampler: " + "; ".join(f"{k}: {v}" for k, v in MIXTURE_DEFAULTS.items()),
    )
    p.add_argument("store", help="corpus store (see `dscir ingest`)")
    p.add_argument("--clusters", type=int, required=True, metavar="K",
                   help="number of clusters K (>= 2)")
    p.add_argument("--sampler", default="scir", choices=sorted(MIXTURE_DEFAULTS))
    p.add_argument("--iterations", type=int, default=1000)
    p.add_argument("--eval-every", type=int, default=0,
                   help="held-out log predictive every M iterations (0: only at the end)")
    options.run_options(p)
    p.add_argument("--gamma", type=float, default=1.0,
                   help="Dirichlet concentration of the mixture weights")
    p.add_argument("--a0", type=float, help="Dirichlet concentration of the components")
    p.add_argument("--batch-size", type=int, help="documents per minibatch")
    p.add_argument("--policy", default="auto", choices=["auto", "reference"],
                   help="unset settings: 'auto' seeds the components by k-means++ on corpora "
                   "of 1000 words or more and takes min(1000, N/4) documents per minibatch; "
                   "'reference' keeps the reference values")
    p.add_argument("--init", choices=["random", "kmeans++"],
                   help="initial components: Gamma(1, 1) draws or seeded on documents")
    p.add_argument("--step-weights", type=float, help="step size of the weights")
    p.add_argument("--step-components", type=float, help="step size of the components")
    p.add_argument("--burn-in", type=int, help="iterations before samples are kept")
    p.add_argument("--thin", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--top", type=int, default=5, help="words printed per cluster")
    p.add_argument("--no-progress", action="store_true")
    options.cluster_options(p)
    p.set_defaults(func=_fit_mixture)


def _fit_mixture(args: argparse.Namespace) -> int:
    from dscir.api import Mixture

    model = Mixture(
        n_clusters=args.clusters, sampler=args.sampler, gamma=args.gamma, a0=args.a0,
        policy=args.policy, batch_size=args.batch_size, init=args.init,
        step_weights=args.step_weights,
        step_components=args.step_components, n_iter=args.iterations, burn_in=args.burn_in,
        thin=args.thin, eval_every=args.eval_every, seed=args.seed,
        progress=not args.no_progress,
    )
    corpus = options.fit(model, args.store, args, **options.run_kwargs(args))
    print(f"{model.n_iter_} iterations ({args.sampler}): {model.n_occupied_} of "
          f"{args.clusters} clusters occupied, {model.n_samples_} posterior samples kept")
    if corpus.heldout_docs().size:
        print(model.heldout_report())
    sizes = model.cluster_sizes()
    for k, words in model.top_words_table(args.top, corpus.vocabulary).rows:
        print(f"cluster {k:>{len(str(args.clusters - 1))}} ({sizes[k]:>6} documents, "
              f"weight {model.weights_[k]:.3f}): " + "; ".join(str(w) for w, _ in words))
    return 0
