"""Options and steps shared by the commands that run on a Dask cluster
(``dscir fit lda``, ``dscir fit dpmm``, ``dscir evaluate``)."""

from __future__ import annotations

import argparse
import sys


def cluster_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("cluster (default: an embedded LocalCluster)")
    g.add_argument("--address", help="scheduler address, e.g. tcp://host:8786")
    g.add_argument("--scheduler-file", help="scheduler file written by `dask scheduler`")
    g.add_argument("--workers", type=int, help="LocalCluster worker processes")
    g.add_argument("--tls-ca-file", metavar="PEM", help="CA certificate for mutual TLS "
                   "(with --tls-cert and --tls-key; see clusters/tls)")
    g.add_argument("--tls-cert", metavar="PEM", help="this client's TLS certificate")
    g.add_argument("--tls-key", metavar="PEM", help="this client's TLS private key")


def cluster_kwargs(args: argparse.Namespace) -> dict:
    """The ``dask_client`` keywords of the ``cluster_options``; bad TLS options are
    a ``DscirError`` before any cluster starts."""
    from dscir.distributed.cluster import tls_security

    return dict(address=args.address, scheduler_file=args.scheduler_file,
                n_workers=args.workers,
                security=tls_security(args.tls_ca_file, args.tls_cert, args.tls_key,
                                      names=("--tls-ca-file", "--tls-cert", "--tls-key")))


def announce_dashboard(client) -> None:
    """Print where to watch the run: the Dask dashboard and dscir's page on it."""
    from dscir.distributed.cluster import dashboard_link

    link = dashboard_link(client)
    if link:
        base = link.rsplit("/", 1)[0] if link.endswith("/status") else link.rstrip("/")
        print(f"Dask dashboard: {link}  (dscir run page: {base}/dscir/)", file=sys.stderr)


def run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", help="write the run (samples, state, history) to this Zarr path")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    p.add_argument("--checkpoint-every", type=int, default=0, metavar="N",
                   help="checkpoint the whole chain into --out every N iterations, so "
                   "the run can be continued with --resume")
    p.add_argument("--resume", metavar="RUN",
                   help="continue the checkpointed run RUN from its last checkpoint up to "
                   "--iterations in all (same hyperparameters, seed and store)")


def check_run_options(args: argparse.Namespace, model: str, config) -> None:
    """The run options' errors, before a cluster is started."""
    from dscir.distributed.runstore import checkpoint_to_resume
    from dscir.errors import DscirError

    if args.checkpoint_every and not (args.out or args.resume):
        raise DscirError("--checkpoint-every needs --out (the run to checkpoint into)")
    if args.resume:
        checkpoint_to_resume(args.resume, model, config, args.store)
