"""Soak across hosts: an LDA fit on wiki that survives whole hosts killed, and its driver's.

The soak of ``soak.py`` on the cluster of clusters/netns/ (network namespaces
as hosts): a scheduler host, ``--worker-hosts`` hosts of ``--workers-per-host``
workers, the driver on a host of its own. Two fits of the same chain:

1. undisturbed: no failures;
2. disturbed: the driver checkpoints every ``--checkpoint-every`` iterations;
   every few seconds (uniform in ``--kill-every``) one worker host, picked at
   random, loses every process at once (its dask-worker, nannies and workers,
   SIGKILL) and is brought back ``--down-for`` seconds later, as a resource
   manager would replace a lost node; once the run has a checkpoint past half
   of the iterations, the driver's host is killed the same way and the driver
   restarted there with ``--resume``.

Reports kills survived and whether the disturbed run equals the undisturbed
one (held-out perplexities, mean phi, final state, stored samples; exactly).
Writes benchmarks/results/netns_soak.json and .png. Needs root.

    cd benchmarks && python netns_soak.py [--iterations 60] [--topics 20] [--sweeps 20]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import ROOT, cpu_model
from soak import DATA, compare, last_checkpoint, make_store, plot, progress

sys.path.insert(0, str(ROOT / "clusters" / "netns"))
from netns_cluster import NetnsCluster  # noqa: E402
from netns_hosts import exit_on_sigterm  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def fit_args(store: Path, args) -> list[str]:
    return ["fit", "lda", str(store), "--topics", str(args.topics), "--iterations",
            str(args.iterations), "--batch-size", "50", "--sweeps", str(args.sweeps),
            "--eval-sweeps", str(args.eval_sweeps), "--eval-every", str(args.eval_every),
            "--thin", "5", "--seed", str(args.seed), "--top", "8",
            "--checkpoint-every", str(args.checkpoint_every)]


def start(cluster: NetnsCluster, argv: list[str], log: Path) -> subprocess.Popen:
    with open(log, "w") as err:
        return cluster.dscir(argv, stdout=subprocess.PIPE, stderr=err, text=True)


def disturbed(cluster: NetnsCluster, store: Path, args, out: Path, tmp: Path) -> dict:
    """The disturbed fit: returns its wall time and the kills it survived."""
    rng = np.random.default_rng(args.seed)
    lo, hi = args.kill_every
    events: list[dict] = []
    logs = [tmp / "driver-0.log"]
    t0 = time.perf_counter()
    proc = start(cluster, [*fit_args(store, args), "--out", str(out)], logs[-1])
    next_kill, down, base = t0 + rng.uniform(lo, hi), {}, 0
    driver_kill_at = None
    while proc.poll() is None:
        now = time.perf_counter()
        at = max(base, progress(logs[-1], args.iterations))
        for host, since in list(down.items()):  # replace lost hosts
            if now - since >= args.down_for:
                cluster.start_workers(host)
                del down[host]
        if driver_kill_at is None and last_checkpoint(out) >= args.iterations // 2:
            driver_kill_at = now + rng.uniform(0.5, 3.0)
        if driver_kill_at is not None and now >= driver_kill_at and not any(
                e["kind"] == "driver" for e in events):
            cluster.hosts.kill(cluster.driver_host)
            proc.wait()
            ckpt = last_checkpoint(out)
            events.append({"kind": "driver", "seconds": now - t0, "iteration": at,
                           "resumed_from": ckpt})
            print(f"killed the driver's host at iteration ~{at}; resuming from {ckpt}",
                  flush=True)
            logs.append(tmp / f"driver-{len(logs)}.log")
            proc = start(cluster, [*fit_args(store, args), "--resume", str(out)], logs[-1])
            base = ckpt
            continue
        if now >= next_kill and not down:
            host = int(rng.integers(1, cluster.worker_hosts + 1))
            pids = cluster.hosts.kill(host)
            down[host] = now
            events.append({"kind": "host", "seconds": now - t0, "iteration": at,
                           "host": host, "processes": len(pids)})
            print(f"killed host {host} ({len(pids)} processes) at iteration ~{at}", flush=True)
            next_kill = now + rng.uniform(lo, hi)
        time.sleep(0.05)
    if proc.returncode:
        raise RuntimeError(logs[-1].read_text())
    for host in down:
        cluster.start_workers(host)
    return {"seconds": time.perf_counter() - t0, "stdout": proc.stdout.read(), "events": events}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=int, default=60)
    p.add_argument("--topics", type=int, default=20)
    p.add_argument("--sweeps", type=int, default=20)
    p.add_argument("--eval-sweeps", type=int, default=20)
    p.add_argument("--eval-every", type=int, default=20)
    p.add_argument("--checkpoint-every", type=int, default=5)
    p.add_argument("--kill-every", type=float, nargs=2, default=(8.0, 15.0),
                   metavar=("MIN", "MAX"), help="seconds between host kills (uniform)")
    p.add_argument("--down-for", type=float, default=5.0,
                   help="seconds a killed host stays down before its workers restart")
    p.add_argument("--worker-hosts", type=int, default=3)
    p.add_argument("--workers-per-host", type=int, default=2)
    p.add_argument("--heldout", type=int, default=1000, help="held-out documents")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", type=Path, default=DATA, help="folder of wiki.ldac.gz, vocab.txt")
    args = p.parse_args()
    exit_on_sigterm()
    RESULTS.mkdir(exist_ok=True)
    load = [os.getloadavg()]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        store = make_store(args.data, tmp / "wiki.zarr", args.heldout)
        with NetnsCluster(tmp / "cluster", args.worker_hosts, args.workers_per_host) as c:
            print("undisturbed run ...", flush=True)
            t0 = time.perf_counter()
            ref = start(c, [*fit_args(store, args), "--out", str(tmp / "ref")], tmp / "ref.log")
            ref_stdout = ref.communicate()[0]
            if ref.returncode:
                raise RuntimeError((tmp / "ref.log").read_text())
            ref_seconds = time.perf_counter() - t0
            load.append(os.getloadavg())
            print(f"  {ref_seconds:.0f} s; disturbed run ...", flush=True)
            hit = disturbed(c, store, args, tmp / "run", tmp)
            load.append(os.getloadavg())
        match = compare(tmp / "ref", tmp / "run")
    kills = hit["events"]
    driver = [e for e in kills if e["kind"] == "driver"]
    result = {
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                    "note": "shared with other work while measured",
                    "loadavg_start_between_end": load},
        "args": {k: list(v) if isinstance(v, tuple) else str(v) if isinstance(v, Path) else v
                 for k, v in vars(args).items()},
        "command": "cd benchmarks && python netns_soak.py " + " ".join(sys.argv[1:]),
        "undisturbed": {"seconds": ref_seconds, "stdout": ref_stdout},
        "disturbed": {
            "seconds": hit["seconds"], "stdout": hit["stdout"], "events": kills,
            "host_kills": sum(e["kind"] == "host" for e in kills),
            "driver_kills": len(driver),
            "iterations_redone": sum(e["iteration"] - e["resumed_from"] for e in driver),
        },
        "iterations_completed": match["iterations"][1],
        "same_stdout": ref_stdout == hit["stdout"],
        "match": match,
    }
    (RESULTS / "netns_soak.json").write_text(json.dumps(result, indent=1))
    plot(result, RESULTS / "netns_soak.png", lost="host")
    d = result["disturbed"]
    print(f"iterations completed {result['iterations_completed']}; survived "
          f"{d['host_kills']} host kills and {d['driver_kills']} driver host kill(s) "
          f"({d['iterations_redone']} iterations redone); undisturbed {ref_seconds:.0f} s, "
          f"disturbed {hit['seconds']:.0f} s; equal: perplexities {match['perplexity_equal']}, "
          f"phi {match['phi_mean_equal']}, state {match['state_equal']}, "
          f"samples {match['samples_equal']}")


if __name__ == "__main__":
    main()
