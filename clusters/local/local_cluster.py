"""A Dask LocalCluster that outlives one command, for several dscir runs to share.

    python local_cluster.py [--workers N] [--port 8786] [--scheduler-file FILE]

starts a scheduler and N single-threaded worker processes on this machine
(127.0.0.1), writes the scheduler file and serves until Ctrl-C or SIGTERM.
Then, in another shell: ``dscir fit lda STORE --scheduler-file FILE``.
(For a single run, ``dscir fit lda STORE --workers N`` starts its own
LocalCluster and closes it at the end; nothing to start by hand.)
"""

from __future__ import annotations

import argparse
import os
import signal
import threading

from distributed import Client, LocalCluster


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=max(1, min(os.cpu_count() or 1, 4)))
    p.add_argument("--port", type=int, default=8786, help="scheduler port (0: any free)")
    p.add_argument("--dashboard", default=":8787", help='dashboard address, "none" for none')
    p.add_argument("--scheduler-file", default="scheduler.json")
    args = p.parse_args()

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    dashboard = None if args.dashboard == "none" else args.dashboard
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      host="127.0.0.1", scheduler_port=args.port,
                      dashboard_address=dashboard) as cluster, Client(cluster) as client:
        client.write_scheduler_file(args.scheduler_file)
        print(f"scheduler {cluster.scheduler_address} with {args.workers} workers; "
              f"scheduler file {args.scheduler_file}; Ctrl-C stops it", flush=True)
        try:
            stop.wait()
        finally:
            os.remove(args.scheduler_file)


if __name__ == "__main__":
    main()
