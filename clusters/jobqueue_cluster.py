"""Run a dscir command on Dask workers submitted as SLURM or PBS jobs (dask-jobqueue).

    python clusters/jobqueue_cluster.py slurm --jobs 4 -- fit lda /shared/corpus.zarr --out run.zarr
    python clusters/jobqueue_cluster.py pbs --jobs 4 -- fit lda /shared/corpus.zarr --out run.zarr

starts a Dask scheduler in this process (a login node or a small job), submits
``--jobs`` worker jobs with the settings of ``clusters/SYSTEM/jobqueue.yaml``
(``jobqueue.slurm`` or ``jobqueue.pbs``),
waits until ``--min-workers`` workers have joined, runs the dscir command
after ``--`` against them (``--address`` is added) and cancels the jobs at
the end. ``--dry-run`` prints the batch script of one worker job and submits
nothing. Needs ``pip install dask-jobqueue``; the store and the run must be
on a filesystem every node sees.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import dask
import yaml
from dask_jobqueue import PBSCluster, SLURMCluster
from distributed import Client

from dscir.cli import main as dscir


#: The batch system's dask-jobqueue cluster and the command that lists its jobs.
SYSTEMS = {"slurm": (SLURMCluster, "squeue -u $USER"), "pbs": (PBSCluster, "qstat -u $USER")}


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("system", choices=sorted(SYSTEMS), help="the batch system")
    p.add_argument("--jobs", type=int, default=2, help="worker jobs to submit")
    p.add_argument("--min-workers", type=int, help="start once this many workers have "
                   "joined (default: all of them)")
    p.add_argument("--config", help="dask-jobqueue settings "
                   "(default: clusters/SYSTEM/jobqueue.yaml)")
    p.add_argument("--dry-run", action="store_true", help="print one job's script only")
    split = argv.index("--") if "--" in argv else len(argv)
    return p.parse_args(argv[:split]), argv[split + 1:]


def main(argv: list[str]) -> int:
    args, command = parse(argv)
    config = args.config or Path(__file__).parent / args.system / "jobqueue.yaml"
    with open(config) as f:
        dask.config.update(dask.config.config, yaml.safe_load(f), priority="new")
    cluster_class, list_jobs = SYSTEMS[args.system]
    with cluster_class() as cluster:
        if args.dry_run:
            print(cluster.job_script())
            return 0
        if not command:
            sys.exit("give the dscir command after --, e.g. -- fit lda STORE --out RUN")
        cluster.scale(jobs=args.jobs)
        with Client(cluster) as client:
            n = args.min_workers or args.jobs * dask.config.get(
                f"jobqueue.{args.system}.processes")
            print(f"waiting for {n} workers ({list_jobs} shows the jobs); "
                  f"dashboard {cluster.dashboard_link}", file=sys.stderr)
            client.wait_for_workers(n)
            return dscir([*command, "--address", cluster.scheduler_address])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
