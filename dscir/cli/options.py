"""Options and steps shared by the commands that fit or score on a Dask cluster."""

from __future__ import annotations

import argparse
import contextlib
import logging
import warnings
from collections.abc import Iterator

from dscir.cli import convention

log = logging.getLogger("dscir.cli")


def cluster_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("cluster (default: an embedded LocalCluster)")
    g.add_argument("--address", help="scheduler address, e.g. tcp://host:8786")
    g.add_argument("--scheduler-file", metavar="PATH",
                   help="scheduler file written by `dask scheduler`")
    g.add_argument("--workers", type=convention.count(1), metavar="N",
                   help="start N single-threaded LocalCluster worker processes (default: "
                   "one worker in this process with a thread per core)")
    g.add_argument("--dashboard-address", metavar="HOST:PORT",
                   help="serve the LocalCluster's dashboard here (':8787': every interface, "
                   "readable by anyone who reaches the port; default: 127.0.0.1, a free "
                   "port, like every other socket of the LocalCluster)")
    g.add_argument("--tls-ca-file", metavar="PEM", help="CA certificate for mutual TLS "
                   "(with --tls-cert and --tls-key; see clusters/tls)")
    g.add_argument("--tls-cert", metavar="PEM", help="this client's TLS certificate")
    g.add_argument("--tls-key", metavar="PEM", help="this client's TLS private key")


def cluster_kwargs(args: argparse.Namespace) -> dict:
    """The ``dask_client`` keywords of the ``cluster_options``; bad TLS options are
    a ``DscirError`` before any cluster starts."""
    from dscir.engine.cluster import check_dashboard_address, tls_security

    check_dashboard_address(args.dashboard_address)
    return dict(address=args.address, scheduler_file=args.scheduler_file,
                n_workers=args.workers, dashboard_address=args.dashboard_address,
                security=tls_security(args.tls_ca_file, args.tls_cert, args.tls_key,
                                      names=("--tls-ca-file", "--tls-cert", "--tls-key")))


@contextlib.contextmanager
def cluster(args: argparse.Namespace, needed: bool = True) -> Iterator:
    """A client on the cluster the options name (announcing where to watch it),
    or None when the work runs in this process."""
    from dscir.api.session import session

    if not needed:
        yield None
        return
    with session(**cluster_kwargs(args)) as client:
        announce_dashboard(client)
        yield client


def announce_dashboard(client) -> None:
    """Print where to watch the run: the Dask dashboard and dscir's page on it."""
    from dscir.engine.cluster import dashboard_link

    link = dashboard_link(client)
    if link:
        base = link.rsplit("/", 1)[0] if link.endswith("/status") else link.rstrip("/")
        log.info("Dask dashboard: %s  (dscir run page: %s/dscir/)", link, base)


def run_options(p: argparse.ArgumentParser) -> None:
    convention.out_option(p, "write the run (samples, state, history) to this Zarr path "
                          "(default: not kept)", metavar="RUN")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    p.add_argument("--checkpoint-every", type=convention.count(0), default=None, metavar="N",
                   help="also checkpoint the whole chain into --out every N iterations "
                   "(0: no checkpoints at all; the run is then written when it completes)")
    p.add_argument("--checkpoint-interval", type=convention.seconds, default=None,
                   metavar="SECONDS",
                   help="checkpoint the whole chain into --out every SECONDS of wall time "
                   "(default 300; 0: not by time) and at Ctrl-C, so the run can be "
                   "continued with --resume")
    p.add_argument("--resume", metavar="RUN",
                   help="continue the checkpointed run RUN from its last checkpoint up to "
                   "--iterations in all (same hyperparameters, seed and store)")
    p.add_argument("--chains", type=convention.count(1), default=1, metavar="N",
                   help="run N chains side by side (chain 0 with --seed), written under "
                   "--out for `dscir diagnose`")


def run_kwargs(args: argparse.Namespace) -> dict:
    """The ``fit`` keywords of the ``run_options``."""
    return dict(out=args.out, overwrite=args.overwrite, checkpoint_every=args.checkpoint_every,
                checkpoint_interval=args.checkpoint_interval, resume=args.resume,
                n_chains=args.chains)


def fit(model, store: str, args: argparse.Namespace, *, out=None, overwrite: bool = False,
        checkpoint_every: int | None = None, checkpoint_interval: float | None = None,
        resume=None, n_chains: int = 1):
    """Fit ``model`` on ``store`` on the cluster the ``cluster_options`` in ``args``
    name: every parameter and run option is checked before a cluster starts.
    Returns the corpus."""
    from dscir.api.chains import check_chains
    from dscir.corpus import Corpus

    run = dict(out=out, checkpoint_every=checkpoint_every,
               checkpoint_interval=checkpoint_interval, resume=resume)
    # bad TLS options first: they are the command line's own
    named = cluster_kwargs(args) if model.needs_cluster() else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fit checks again and warns then, once
        model.check_run(store, overwrite=overwrite, cluster=named, **run)
    check_chains(n_chains, out, checkpoint_every or checkpoint_interval, resume)
    corpus = Corpus.open(store)
    with cluster(args, model.needs_cluster()) as client:
        model.fit(corpus, client=client, overwrite=overwrite, n_chains=n_chains, **run)
    if out or resume:
        log.info("run written to %s", model.run_path_)
    return corpus
