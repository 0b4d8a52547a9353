"""``dscir quickstart``: the packaged Reuters sample, ingested and fitted on a LocalCluster."""

from __future__ import annotations

import argparse
import tempfile
from importlib import resources
from pathlib import Path

from dscir.api.lda_params import PARAMS
from dscir.cli import convention, lda, options
from dscir.cli.params import add_params, estimator_kwargs


def quickstart_store(path: Path, *, progress: bool = False) -> Path:
    """Ingest the packaged Reuters sample (395 documents) into ``path`` with every
    10th document held out."""
    from dscir.corpus import ingest_ldac, split_heldout

    data = resources.files("dscir") / "data"
    with resources.as_file(data / "reuters.ldac.gz") as ldac, \
            resources.as_file(data / "reuters.tokens") as vocab:
        ingest_ldac(ldac, vocab, path, progress=progress)
    split_heldout(path, every=10)
    return path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "quickstart",
        help="fit LDA with SCIR on the packaged Reuters sample on a LocalCluster",
        description="Ingest the packaged Reuters sample (395 newswire documents, MPL-2.0, "
        "from the `lda` package) into a temporary store, hold out every 10th document, "
        "fit LDA with SCIR on an embedded LocalCluster and print the topics.",
    )
    add_params(p, PARAMS, names=("n_topics", "n_iter", "sweeps", "seed"),
               defaults={"n_topics": 12, "n_iter": 300, "sweeps": 50})
    convention.out_option(p, "also write the run here (default: not kept)")
    options.cluster_options(p)
    p.set_defaults(func=_quickstart)


def _quickstart(args: argparse.Namespace) -> int:
    from dscir.api import LDA

    with tempfile.TemporaryDirectory(prefix="dscir-quickstart-") as tmp:
        store = str(quickstart_store(Path(tmp) / "reuters.zarr"))
        model = LDA(**estimator_kwargs(args, PARAMS), sampler="scir", eval_sweeps=args.sweeps,
                    thin=5, eval_every=max(args.n_iter // 5, 1),
                    progress=convention.progress(args))
        return lda.fit_and_report(model, store, args, top=8, out=args.out)
