"""``dscir fit dpmm``: the Dirichlet-process mixture of multinomials."""

from __future__ import annotations

import argparse

import numpy as np

from dscir.api import DPMM_DEFAULTS
from dscir.api.mixture_params import DPMM
from dscir.cli import convention
from dscir.cli.command import add_fit_command, fit_from_flags
from dscir.cli.lda import reference_values


def add_fit_parser(models: argparse._SubParsersAction) -> None:
    """``dscir fit dpmm``."""
    p = add_fit_command(
        models, "dpmm", DPMM, _fit_dpmm, top=5, top_help="areas printed per cluster",
        help="Dirichlet-process mixture of multinomials (stochastic slice sampler)",
        description="Fit a DP mixture of multinomials on a corpus store (rows = users, "
        "columns = areas) by the stochastic slice sampler with SCIR or SGRLD steps on "
        "Dask, or by the exact Gibbs slice sampler in this process. Unset settings come "
        "from --policy: 'auto' (default) runs SGRLD (unless --sampler names one; SGRLD with "
        "a0 0.1 and step sizes 0.03 0.005), starts from the clusters of collapsed Gibbs "
        "sweeps with 30 clusters and makes 20 split-merge proposals a pass on "
        "corpora of 1000 words or more (else SCIR), with a "
        "minibatch of min(1000, N/4) users; 'reference' keeps the papers' values of the "
        "chosen sampler (default SCIR): "
        + reference_values(DPMM_DEFAULTS),
    )
    p.add_argument("--clusters", type=convention.count(1), default=10, metavar="N",
                   help="largest clusters printed")


def _fit_dpmm(args: argparse.Namespace) -> int:
    from dscir.api import DPMixture

    model, corpus = fit_from_flags(DPMixture, DPMM, args, lambda model: (
        f"{model.n_iter_} iterations ({model.config_.sampler}): {model.n_clusters_} occupied "
        f"clusters, {model.n_components_} components represented, alpha = "
        f"{model.alpha_:.3g}, {model.n_samples_} posterior samples kept"))
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
