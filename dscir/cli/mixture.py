"""``dscir fit mixture``: a finite mixture of multinomials (K clusters of documents)."""

from __future__ import annotations

import argparse

from dscir.api.mixture import MIXTURE_DEFAULTS
from dscir.api.mixture_params import MIXTURE
from dscir.cli import convention, options
from dscir.cli.lda import reference_values
from dscir.cli.params import add_params, check_flags, estimator_kwargs


def add_fit_parser(models: argparse._SubParsersAction) -> None:
    """``dscir fit mixture``."""
    p = models.add_parser(
        "mixture", help="finite mixture of multinomials (K clusters of documents)",
        description="Fit a mixture of K multinomials on a corpus store (rows = documents) "
        "by stochastic-gradient MCMC with SCIR or SGRLD steps on Dask, or by the exact "
        "Gibbs sampler in this process. Unset hyperparameters take the reference values "
        "of the chosen sampler: " + reference_values(MIXTURE_DEFAULTS),
    )
    convention.positional(p, "store", "corpus store (see `dscir ingest`)")
    add_params(p, MIXTURE)
    options.run_options(p)
    p.add_argument("--top", type=convention.count(1), default=5,
                   help="words printed per cluster")
    options.cluster_options(p)
    p.set_defaults(func=_fit_mixture)


def _fit_mixture(args: argparse.Namespace) -> int:
    from dscir.api import Mixture

    model = Mixture(**estimator_kwargs(args, MIXTURE), progress=convention.progress(args))
    check_flags(model)
    corpus = options.fit(model, args.store, args, **options.run_kwargs(args))
    print(f"{model.n_iter_} iterations ({model.sampler}): {model.n_occupied_} of "
          f"{model.n_clusters} clusters occupied, {model.n_samples_} posterior samples kept")
    if corpus.heldout_docs().size:
        print(model.heldout_report())
    sizes = model.cluster_sizes()
    for k, words in model.top_words_table(args.top, corpus.vocabulary).rows:
        print(f"cluster {k:>{len(str(model.n_clusters - 1))}} ({sizes[k]:>6} documents, "
              f"weight {model.weights_[k]:.3f}): " + "; ".join(str(w) for w, _ in words))
    return 0
