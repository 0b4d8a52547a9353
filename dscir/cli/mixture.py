"""``dscir fit mixture``: a finite mixture of multinomials (K clusters of documents)."""

from __future__ import annotations

import argparse

from dscir.api.mixture import MIXTURE_DEFAULTS
from dscir.api.mixture_params import MIXTURE
from dscir.cli.command import add_fit_command, fit_from_flags
from dscir.cli.lda import reference_values


def add_fit_parser(models: argparse._SubParsersAction) -> None:
    """``dscir fit mixture``."""
    add_fit_command(
        models, "mixture", MIXTURE, _fit_mixture, top=5, top_help="words printed per cluster",
        help="finite mixture of multinomials (K clusters of documents)",
        description="Fit a mixture of K multinomials on a corpus store (rows = documents) "
        "by stochastic-gradient MCMC with SCIR or SGRLD steps on Dask, or by the exact "
        "Gibbs sampler in this process. Unset hyperparameters take the reference values "
        "of the chosen sampler: " + reference_values(MIXTURE_DEFAULTS),
    )


def _fit_mixture(args: argparse.Namespace) -> int:
    from dscir.api import Mixture

    model, corpus = fit_from_flags(Mixture, MIXTURE, args, lambda model: (
        f"{model.n_iter_} iterations ({model.sampler}): {model.n_occupied_} of "
        f"{model.n_clusters} clusters occupied, {model.n_samples_} posterior samples kept"))
    sizes = model.cluster_sizes()
    for k, words in model.top_words_table(args.top, corpus.vocabulary).rows:
        print(f"cluster {k:>{len(str(model.n_clusters - 1))}} ({sizes[k]:>6} documents, "
              f"weight {model.weights_[k]:.3f}): " + "; ".join(str(w) for w, _ in words))
    return 0
