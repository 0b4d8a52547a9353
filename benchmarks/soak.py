"""Soak run: an LDA fit on wiki that survives worker kills and a driver kill + resume.

A 2-worker LocalCluster (process workers under nannies, 1 thread each) serves
two fits of the same chain, each driven by a `dscir fit lda --address ...`
subprocess:

1. undisturbed: one driver process, no failures;
2. disturbed: the driver checkpoints every ``--checkpoint-every`` iterations;
   every few seconds (uniform in ``--kill-every``) one worker process, picked
   at random, is killed with SIGKILL (its nanny starts a new one); once the
   run has a checkpoint past half of the iterations, the driver itself is
   SIGKILLed at a random moment and restarted with ``--resume``, and the worker
   kills go on.

Reports iterations completed, kills survived, iterations redone after the
driver kill, and whether the disturbed run equals the undisturbed one (held-out
perplexities, mean phi, final state and stored samples, compared exactly).
Writes benchmarks/results/<out>.json and .png (``--out``, default soak).

    python benchmarks/soak.py [--iterations 200] [--topics 50] [--sweeps 50]
        [--placement workers --block-entries 25000 --out soak_workers]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import RESULTS, cpu_model, shared_data

DATA = shared_data() / "wiki"


def make_store(data: Path, path: Path, n_heldout: int) -> Path:
    from dscir.corpus import ingest_ldac, split_heldout

    ingest_ldac(data / "wiki.ldac.gz", data / "vocab.txt", path)
    split_heldout(path, n_heldout=n_heldout, seed=0)
    return path


def fit_command(store: Path, address: str, args, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "dscir", "fit", "lda", str(store), "--address", address,
        "--topics", str(args.topics), "--iterations", str(args.iterations),
        "--batch-size", "50", "--sweeps", str(args.sweeps), "--eval-sweeps",
        str(args.eval_sweeps), "--eval-every", str(args.eval_every), "--thin", "5",
        "--seed", str(args.seed), "--top", "8", "--placement", args.placement,
        *(["--block-entries", str(args.block_entries)] if args.block_entries else []), *extra,
    ]


def progress(log: Path, total: int) -> int:
    """The last iteration the driver's progress bar reported in ``log``."""
    found = re.findall(rf"(\d+)/{total} ", log.read_text(errors="replace")) if log.exists() else []
    return int(found[-1]) if found else 0


def last_checkpoint(run: Path) -> int:
    """The iteration of the run's latest complete checkpoint (0: none yet)."""
    root = run / "checkpoints"
    names = [int(e) for e in os.listdir(root) if e.isdigit()] if root.exists() else []
    return max(names, default=0)


def undisturbed(store: Path, address: str, args, out: Path, log: Path) -> dict:
    start = time.perf_counter()
    with open(log, "w") as err:
        done = subprocess.run(fit_command(store, address, args, "--out", str(out)),
                              stdout=subprocess.PIPE, stderr=err, text=True)
    if done.returncode:
        raise RuntimeError(log.read_text())
    return {"seconds": time.perf_counter() - start, "stdout": done.stdout}


def disturbed(client, store: Path, address: str, args, out: Path, tmp: Path) -> dict:
    """The disturbed fit: returns its wall time and the kills it survived."""
    rng = np.random.default_rng(args.seed)
    lo, hi = args.kill_every
    command = fit_command(store, address, args)
    events: list[dict] = []
    logs = [tmp / "driver-0.log"]
    start = time.perf_counter()
    err = open(logs[-1], "w")
    proc = subprocess.Popen([*command, "--checkpoint-every", str(args.checkpoint_every),
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=err, text=True)
    next_worker_kill = start + rng.uniform(lo, hi)
    driver_kill_at = None
    base = 0  # iterations before the current driver's progress bar starts
    while True:
        code = proc.poll()
        if code is not None:
            err.close()
            if code != 0:
                raise RuntimeError(logs[-1].read_text())
            stdout = proc.stdout.read()
            break
        now = time.perf_counter()
        at = max(base, progress(logs[-1], args.iterations))
        if driver_kill_at is None and last_checkpoint(out) >= args.iterations // 2:
            driver_kill_at = now + rng.uniform(0.5, 3.0)  # somewhere between checkpoints
        if driver_kill_at is not None and now >= driver_kill_at and not any(
                e["kind"] == "driver" for e in events):
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            err.close()
            ckpt = last_checkpoint(out)
            events.append({"kind": "driver", "seconds": now - start, "iteration": at,
                           "resumed_from": ckpt})
            print(f"killed the driver at iteration ~{at}; resuming from {ckpt}", flush=True)
            logs.append(tmp / f"driver-{len(logs)}.log")
            err = open(logs[-1], "w")
            proc = subprocess.Popen([*command, "--resume", str(out)], stdout=subprocess.PIPE,
                                    stderr=err, text=True)
            base = ckpt
            continue
        if now >= next_worker_kill and len(client.scheduler_info()["workers"]) == 2:
            try:
                pids = client.run(os.getpid)
            except (OSError, TimeoutError):
                pids = {}
            if len(pids) == 2:
                addr = sorted(pids)[rng.integers(2)]
                os.kill(pids[addr], signal.SIGKILL)
                events.append({"kind": "worker", "seconds": now - start, "iteration": at,
                               "pid": pids[addr]})
                print(f"killed worker pid {pids[addr]} at iteration ~{at}", flush=True)
                next_worker_kill = now + rng.uniform(lo, hi)
        time.sleep(0.05)
    return {"seconds": time.perf_counter() - start, "stdout": stdout, "events": events}


def compare(a_path: Path, b_path: Path) -> dict:
    from dscir.runs import Run

    a, b = Run.open(a_path), Run.open(b_path)
    sa, sb = a.samples(), b.samples()
    return {
        "iterations": [a.iteration, b.iteration],
        "phi_mean_equal": bool(np.array_equal(a.phi_mean, b.phi_mean)),
        "phi_mean_max_abs_diff": float(np.abs(a.phi_mean - b.phi_mean).max()),
        "state_equal": all(np.array_equal(a.state[k], b.state[k]) for k in a.state),
        "samples_equal": sa.keys() == sb.keys() and all(
            np.array_equal(sa[k], sb[k]) for k in sa),  # iteration, phi
        "perplexity_equal": bool(
            np.array_equal(a.evaluations["iteration"], b.evaluations["iteration"])
            and np.array_equal(a.evaluations["perplexity"], b.evaluations["perplexity"])),
        "evaluations": {"iteration": a.evaluations["iteration"].tolist(),
                        "undisturbed": a.evaluations["perplexity"].tolist(),
                        "disturbed": b.evaluations["perplexity"].tolist()},
        "iteration_seconds": {"undisturbed": a.history["wall"].tolist(),
                              "disturbed": b.history["wall"].tolist()},
    }


def plot(result: dict, path: Path, lost: str = "worker") -> None:
    """Perplexities of both runs, and iteration times with the ``lost`` kills marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    m = result["match"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    ev = m["evaluations"]
    ax1.plot(ev["iteration"], ev["undisturbed"], marker="o", label="undisturbed")
    ax1.plot(ev["iteration"], ev["disturbed"], marker="x", linestyle="--",
             label=f"{lost} kills + driver kill/resume")
    ax1.set(xlabel="iteration", ylabel="held-out perplexity",
            title=f"wiki, K = {result['args']['topics']}: the same chain")
    secs = m["iteration_seconds"]
    ax2.plot(np.arange(1, len(secs["undisturbed"]) + 1), secs["undisturbed"], lw=0.8,
             label="undisturbed")
    ax2.plot(np.arange(1, len(secs["disturbed"]) + 1), secs["disturbed"], lw=0.8,
             label="disturbed")
    for e in result["disturbed"]["events"]:
        if e["kind"] != "driver":
            ax2.axvline(e["iteration"], color="grey", ls=":", lw=0.8)
        else:
            ax2.axvline(e["resumed_from"], color="red", lw=1.2, label="driver resumed from")
    ax2.set(xlabel=f"iteration (dotted: a {lost} killed near here)", ylabel="seconds",
            yscale="log", title="time per iteration")
    for ax in (ax1, ax2):
        ax.legend()
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=int, default=200)
    p.add_argument("--topics", type=int, default=50)
    p.add_argument("--sweeps", type=int, default=50)
    p.add_argument("--eval-sweeps", type=int, default=50)
    p.add_argument("--eval-every", type=int, default=25)
    p.add_argument("--checkpoint-every", type=int, default=10)
    p.add_argument("--kill-every", type=float, nargs=2, default=(4.0, 10.0),
                   metavar=("MIN", "MAX"), help="seconds between worker kills (uniform)")
    p.add_argument("--heldout", type=int, default=1000, help="held-out documents")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", type=Path, default=DATA, help="folder of wiki.ldac.gz, vocab.txt")
    p.add_argument("--placement", choices=["auto", "driver", "workers"], default="auto",
                   help="where the topics live (auto: the driver at this size)")
    p.add_argument("--block-entries", type=int, default=None,
                   help="parameters per vocabulary block with --placement workers")
    p.add_argument("--out", default="soak", help="result name in benchmarks/results")
    args = p.parse_args()

    import dask
    from distributed import Client, LocalCluster

    RESULTS.mkdir(exist_ok=True)
    load_before = os.getloadavg()
    # A LocalCluster closes a nanny whose worker has been gone for this long
    # (default 15 s); with a kill every few seconds one may be gone at that
    # moment, so the cluster would shrink for good. Keep both nannies.
    dask.config.set({"distributed.deploy.lost-worker-timeout": "1h"})
    with tempfile.TemporaryDirectory() as tmp, \
            LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None,
                         silence_logs=50) as cluster, Client(cluster) as client:
        tmp = Path(tmp)
        store = make_store(args.data, tmp / "wiki.zarr", args.heldout)
        print("undisturbed run ...", flush=True)
        ref = undisturbed(store, cluster.scheduler_address, args, tmp / "ref", tmp / "ref.log")
        print(f"  {ref['seconds']:.0f} s; disturbed run ...", flush=True)
        hit = disturbed(client, store, cluster.scheduler_address, args, tmp / "run", tmp)
        match = compare(tmp / "ref", tmp / "run")
    kills = hit["events"]
    driver = [e for e in kills if e["kind"] == "driver"]
    result = {
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count()},
        "args": {k: list(v) if isinstance(v, tuple) else str(v) if isinstance(v, Path) else v
                 for k, v in vars(args).items()},
        "command": "cd benchmarks && python soak.py " + " ".join(sys.argv[1:]),
        "load": {"before": load_before, "after": os.getloadavg()},
        "undisturbed": {"seconds": ref["seconds"], "stdout": ref["stdout"]},
        "disturbed": {
            "seconds": hit["seconds"], "stdout": hit["stdout"], "events": kills,
            "worker_kills": sum(e["kind"] == "worker" for e in kills),
            "driver_kills": len(driver),
            "iterations_redone": sum(e["iteration"] - e["resumed_from"] for e in driver),
        },
        "iterations_completed": match["iterations"][1],
        "same_stdout": ref["stdout"] == hit["stdout"],
        "match": match,
    }
    (RESULTS / f"{args.out}.json").write_text(json.dumps(result, indent=1))
    plot(result, RESULTS / f"{args.out}.png")
    d = result["disturbed"]
    print(f"iterations completed {result['iterations_completed']}; survived "
          f"{d['worker_kills']} worker kills and {d['driver_kills']} driver kill(s) "
          f"({d['iterations_redone']} iterations redone); undisturbed {ref['seconds']:.0f} s, "
          f"disturbed {hit['seconds']:.0f} s")
    print(f"final perplexity {match['evaluations']['undisturbed'][-1]:.2f} vs "
          f"{match['evaluations']['disturbed'][-1]:.2f}; equal: perplexities "
          f"{match['perplexity_equal']}, phi {match['phi_mean_equal']}, state "
          f"{match['state_equal']}, samples {match['samples_equal']}")


if __name__ == "__main__":
    main()
