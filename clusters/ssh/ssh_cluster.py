"""Run a dscir command on Dask workers started over SSH (distributed.SSHCluster).

    python ssh_cluster.py --hosts hosts.txt -- \\
        fit lda /shared/corpus.zarr --topics 100 --out /shared/run.zarr

starts the scheduler on the first host of ``--hosts`` (one host a line, as for
``dask ssh --hostfile``) and a worker process with a thread per core on every
host, the first included (over SSH, with your keys and ~/.ssh/config; needs
``pip install asyncssh`` here), runs the dscir command after ``--`` against
them (``--address`` is added) and stops the cluster at the end. Every host
needs the same Python environment with dscir (``--remote-python``, default:
this interpreter's path) and must see the store and the run at the same paths.

A worker of several threads needs numba's threading layer to be thread-safe
on the hosts (TBB: ``pip install tbb``, or OpenMP); without it run
single-threaded workers, one per core: ``--workers-per-host 8
--threads-per-worker 1``. With ``--threads-per-worker T`` the workers' numba
runs T threads (``NUMBA_NUM_THREADS``); by default numba's own default, the
host's cores, matches the worker's threads.
"""

from __future__ import annotations

import argparse
import sys

from distributed import Client, SSHCluster

from dscir.cli import main as dscir


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hosts", default="hosts.txt", help="host file, scheduler's first")
    p.add_argument("--workers-per-host", type=int, default=1)
    p.add_argument("--threads-per-worker", type=int,
                   help="threads per worker (default: the host's cores; give it with "
                   "more than one worker per host)")
    p.add_argument("--remote-python", default=sys.executable,
                   help="Python of the dscir environment on the hosts")
    p.add_argument("--port", type=int, default=8786, help="scheduler port")
    split = argv.index("--") if "--" in argv else len(argv)
    args, command = p.parse_args(argv[:split]), argv[split + 1:]
    if not command:
        p.error("give the dscir command after --, e.g. -- fit lda STORE --out RUN")
    threads = args.threads_per_worker
    if threads is None and args.workers_per_host > 1:
        p.error("give --threads-per-worker with --workers-per-host above 1 (e.g. "
                "--threads-per-worker 1: single-threaded workers)")
    with open(args.hosts) as f:
        hosts = f.read().split()
    if not hosts:
        p.error(f"{args.hosts} lists no host")
    with SSHCluster(
        [hosts[0], *hosts],  # the scheduler's host, then one entry per worker host
        worker_options={"n_workers": args.workers_per_host, "death_timeout": 120,
                        **({} if threads is None else {"nthreads": threads, "env": {
                            "NUMBA_NUM_THREADS": str(threads),
                            "OMP_NUM_THREADS": str(threads)}})},
        scheduler_options={"port": args.port, "dashboard_address": ":8787"},
        remote_python=args.remote_python,
    ) as cluster, Client(cluster) as client:
        client.wait_for_workers(args.workers_per_host * len(hosts))
        return dscir([*command, "--address", cluster.scheduler_address])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
