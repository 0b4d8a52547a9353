"""``dscir fit dpmm``: the Dirichlet-process mixture of multinomials."""

from __future__ import annotations

import argparse

import numpy as np

from dscir.api import DPMM_DEFAULTS
from dscir.api.mixture_params import DPMM
from dscir.cli import convention, options
from dscir.cli.lda import reference_values
from dscir.cli.params import add_params, check_flags, estimator_kwargs


def add_fit_parser(models: argparse._SubParsersAction) -> None:
    """``dscir fit dpmm``."""
    p = models.add_parser(
        "dpmm", help="Dirichlet-process mixture of multinomials (stochastic slice sampler)",
        description="Fit a DP mixture of multinomials on a corpus store (rows = users, "
        "columns = areas) by the stochastic slice sampler with SCIR or SGRLD steps on "
        "Dask, or by the exact Gibbs slice sampler in this process. Unset settings come "
        "from --policy: 'auto' (default) runs SGRLD (unless --sampler names one; SGRLD with "
        "a0 0.01 and step sizes 0.03 0.005) and seeds 100 components by k-means++ on "
        "corpora of 1000 words or more (else SCIR), with a "
        "minibatch of min(1000, N/4) users; 'reference' keeps the papers' values of the "
        "chosen sampler (default SCIR): "
        + reference_values(DPMM_DEFAULTS),
    )
    convention.positional(p, "store", "corpus store (see `dscir ingest`)")
    add_params(p, DPMM)
    options.run_options(p)
    p.add_argument("--top", type=convention.count(1), default=5,
                   help="areas printed per cluster")
    p.add_argument("--clusters", type=convention.count(1), default=10, metavar="N",
                   help="largest clusters printed")
    options.cluster_options(p)
    p.set_defaults(func=_fit_dpmm)


def _fit_dpmm(args: argparse.Namespace) -> int:
    from dscir.api import DPMixture

    model = DPMixture(**estimator_kwargs(args, DPMM), progress=convention.progress(args))
    check_flags(model)
    corpus = options.fit(model, args.store, args, **options.run_kwargs(args))
    print(f"{model.n_iter_} iterations ({model.config_.sampler}): {model.n_clusters_} occupied "
          f"clusters, {model.n_components_} components represented, alpha = "
          f"{model.alpha_:.3g}, {model.n_samples_} posterior samples kept")
    if corpus.heldout_docs().size:
        print(model.heldout_report())
    _print_clusters(model, corpus.vocabulary, args.clusters, args.top)
    return 0


def _print_clusters(model, vocabulary: np.ndarray, n: int, top: int) -> None:
    labels = model.labels_[model.labels_ >= 0]
    sizes = np.bincount(labels, minlength=model.weights_.size)
    for j in np.argsort(-sizes, kind="stable")[:n]:
        if sizes[j] == 0:
            break
        areas = np.argsort(-model.components_[j])[:top]
        print(f"cluster {j:>4} ({sizes[j]:>6} users): "
              + "; ".join(str(vocabulary[a]) for a in areas))
