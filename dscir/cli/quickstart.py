"""``dscir quickstart``: the packaged Reuters sample, ingested and fitted on a LocalCluster."""

from __future__ import annotations

import argparse
import tempfile
from importlib import resources
from pathlib import Path

from dscir.cli.lda import _fit_lda


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
    p.add_argument("--topics", type=int, default=12)
    p.add_argument("--iterations", type=int, default=300)
    p.add_argument("--sweeps", type=int, default=50)
    p.add_argument("--workers", type=int, help="LocalCluster worker processes")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="also write the run here")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_quickstart)


def _quickstart(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="dscir-quickstart-") as tmp:
        store = quickstart_store(Path(tmp) / "reuters.zarr")
        fit_args = argparse.Namespace(
            store=str(store), topics=args.topics, sampler="scir",
            iterations=args.iterations, eval_every=max(args.iterations // 5, 1),
            out=args.out, overwrite=False, checkpoint_every=0, resume=None,
            alpha=None, beta=None, batch_size=50,
            step_size=None, tau="default", kappa=None, sweeps=args.sweeps,
            eval_sweeps=args.sweeps, burn_in=None, thin=5, seed=args.seed, top=8,
            no_progress=args.no_progress, address=None, scheduler_file=None,
            workers=args.workers, tls_ca_file=None, tls_cert=None, tls_key=None,
        )
        return _fit_lda(fit_args)
