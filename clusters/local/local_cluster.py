"""A Dask LocalCluster that outlives one command, for several dscir runs to share.

    python local_cluster.py [--workers N] [--threads T] [--port 8786] [--scheduler-file FILE]

starts a scheduler and a worker process with a thread per core on this machine
(127.0.0.1), or N worker processes of T threads each (numba's threads capped at
T), writes the scheduler file and serves until Ctrl-C or SIGTERM. A worker of
several threads needs numba's threading layer to be thread-safe (TBB: ``pip
install tbb``, or OpenMP); where it is not, the default is single-threaded
workers, one per core (at most 4), as ``--threads 1`` asks.
Then, in another shell: ``dscir fit lda STORE --scheduler-file FILE``.
(For a single run, ``dscir fit lda STORE --workers N`` starts its own
LocalCluster and closes it at the end; nothing to start by hand.)
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading

from distributed import Client, LocalCluster

from dscir.engine.cluster import numba_threadsafe


def cores() -> int:
    """The cores this process may run on (as ``nproc`` counts them)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def workers_and_threads(workers: int | None, threads: int | None) -> tuple[int, int]:
    """Worker processes and threads per worker for the options given: by default
    one worker with a thread per core, or (numba's threading layer not
    thread-safe) single-threaded workers, one per core, at most 4."""
    n = cores()
    if threads is None:
        logging.disable(logging.WARNING)  # its warning is about the embedded cluster
        try:
            safe = numba_threadsafe()
        finally:
            logging.disable(logging.NOTSET)
        if not safe:
            print("numba's threading layer is not thread-safe here (no TBB or OpenMP: "
                  "pip install tbb): single-threaded workers", file=sys.stderr)
            threads, workers = 1, workers or max(1, min(n, 4))
    if workers is None:
        workers = max(1, n // threads) if threads else 1
    return workers, threads or max(1, n // workers)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, help="worker processes (default: 1, or "
                   "cores / --threads)")
    p.add_argument("--threads", type=int, help="threads per worker (default: cores / "
                   "--workers; 1 where numba's threading layer is not thread-safe)")
    p.add_argument("--port", type=int, default=8786, help="scheduler port (0: any free)")
    p.add_argument("--dashboard", default=":8787", help='dashboard address, "none" for none')
    p.add_argument("--scheduler-file", default="scheduler.json")
    args = p.parse_args()

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    dashboard = None if args.dashboard == "none" else args.dashboard
    workers, threads = workers_and_threads(args.workers, args.threads)
    numba_env = {"NUMBA_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    with LocalCluster(n_workers=workers, threads_per_worker=threads, processes=True,
                      env=numba_env, host="127.0.0.1", scheduler_port=args.port,
                      dashboard_address=dashboard) as cluster, Client(cluster) as client:
        client.write_scheduler_file(args.scheduler_file)
        print(f"scheduler {cluster.scheduler_address} with {workers} worker(s) of "
              f"{threads} thread(s); "
              f"scheduler file {args.scheduler_file}; Ctrl-C stops it", flush=True)
        try:
            stop.wait()
        finally:
            os.remove(args.scheduler_file)


if __name__ == "__main__":
    main()
