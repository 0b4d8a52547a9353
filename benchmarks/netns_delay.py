"""Slow links: the same LDA fit across hosts with 0, 1, 5 and 20 ms of added one-way delay.

The cluster of clusters/netns/ (network namespaces as hosts): scheduler on
one host, ``--worker-hosts`` hosts of ``--workers-per-host`` workers, the
driver on a host of its own. "direct" has no proxy; the other settings put a
delaying TCP proxy in front of every listening socket between hosts (the
scheduler's and each worker's), so every connection from one host to another
(driver-scheduler, worker-scheduler, scheduler-worker, worker-worker) has the
delay added to each direction; the nannies' control connections do not.

Per setting and repeat: seconds per iteration and their split from the run's
history (``compute`` on the critical path, ``transfer``, ``queue`` and the
driver's ``update``: dscir.engine.parts.Timing), medians over the iterations
after the first two. The slope of ``transfer`` over the one-way delay is the
number of one-way network trips per iteration that nothing overlaps (the
same for the wall time, in ``one_way_delays_per_iteration``).
Writes benchmarks/results/netns_delay.json and .png. Needs root.

    cd benchmarks && python netns_delay.py [--delays 0 1 5 20] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import ROOT, cpu_model, shared_data

sys.path.insert(0, str(ROOT / "clusters" / "netns"))
from netns_cluster import NetnsCluster  # noqa: E402
from netns_hosts import exit_on_sigterm  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
PARTS = ("compute", "transfer", "queue", "update")  # an iteration's split, adding to wall
SKIP = 2  # warm-up iterations left out of the medians (numba loads, first reads)


def make_store(path: Path) -> str:
    from dscir.corpus import ingest_ldac, split_heldout

    data = shared_data() / "reuters"
    ingest_ldac(data / "reuters.ldac", data / "reuters.tokens", path)
    split_heldout(path, n_heldout=50, seed=0)
    return str(path)


def one_fit(store: str, work: Path, delay: float | None, args) -> dict:
    """Start a cluster with ``delay`` (None: no proxies), fit, read the history."""
    from dscir.runs import Run

    load_before = os.getloadavg()
    with NetnsCluster(work, args.worker_hosts, args.workers_per_host,
                      delay_ms=delay) as cluster:
        start = time.perf_counter()
        with open(work / "driver.log", "w") as log:
            code = cluster.dscir(
                ["fit", "lda", store, "--topics", str(args.topics), "--iterations",
                 str(args.iterations), "--batch-size", str(args.batch_size), "--sweeps",
                 str(args.sweeps), "--eval-every", "0", "--seed", "1", "--no-progress",
                 "--out", str(work / "run")], stdout=log, stderr=log).wait()
        seconds = time.perf_counter() - start
    if code:
        raise RuntimeError((work / "driver.log").read_text())
    h = Run.open(work / "run").history
    parts = {k: np.asarray(h[k][SKIP:], float) for k in ("wall", *PARTS)}
    return {"delay_ms": delay, "fit_seconds": seconds, "load_before": load_before,
            "load_after": os.getloadavg(),
            "median": {k: float(np.median(v)) for k, v in parts.items()},
            "per_iteration": {k: v.tolist() for k, v in parts.items()}}


def split_text(median: dict) -> str:
    return ", ".join(f"{k} {median[k]:.3f}" for k in PARTS)


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = result["settings"]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    x = np.arange(len(settings))
    bottom = np.zeros(len(settings))
    for part in PARTS:
        h = np.array([np.median([r["median"][part] for r in result["runs"]
                                 if r["setting"] == s]) for s in settings])
        ax.bar(x, h, 0.6, bottom=bottom, label=part)
        bottom += h
    for i, s in enumerate(settings):
        walls = [r["median"]["wall"] for r in result["runs"] if r["setting"] == s]
        ax.plot([i] * len(walls), walls, "k.", label="median wall, each run" if i == 0 else None)
    ax.set_xticks(x, settings)
    loads = [r[k][0] for r in result["runs"] for k in ("load_before", "load_after")]
    ax.set(xlabel="one-way delay added to every link between hosts (ms)",
           ylabel="seconds per iteration (median of each part)",
           title="reuters LDA across network namespaces: iteration time and its split\n"
                 f"(1-min load average {min(loads):.0f}-{max(loads):.0f} on "
                 f"{result['machine']['cores']} cores while measured)")
    ax.legend()
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--delays", type=float, nargs="+", default=[0, 1, 5, 20])
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--worker-hosts", type=int, default=2)
    p.add_argument("--workers-per-host", type=int, default=1)
    p.add_argument("--topics", type=int, default=20)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=50)
    p.add_argument("--sweeps", type=int, default=10)
    args = p.parse_args()
    exit_on_sigterm()
    RESULTS.mkdir(exist_ok=True)
    settings = ["direct", *(f"{d:g}" for d in args.delays)]
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        store = make_store(Path(tmp) / "reuters.zarr")
        for rep in range(args.repeats):  # interleaved, so load drifts hit every setting
            for s in settings:
                work = Path(tmp) / f"{s}-{rep}"
                r = one_fit(store, work, None if s == "direct" else float(s), args)
                runs.append({"setting": s, "repeat": rep, **r})
                print(f"{s:>6} ms, repeat {rep}: {r['median']['wall']:.3f} s/iteration "
                      f"({split_text(r['median'])}); load {r['load_before'][0]:.1f}",
                      flush=True)
    delayed = [r for r in runs if r["delay_ms"] is not None]
    # seconds per ms of one-way delay, x 1000 = one-way delays per iteration
    trips = {part: float(np.polyfit([r["delay_ms"] for r in delayed],
                                    [r["median"][part] for r in delayed], 1)[0] * 1000)
             for part in ("wall", "transfer")}
    result = {
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                    "note": "shared with other work while measured; see load averages"},
        "command": "cd benchmarks && python netns_delay.py " + " ".join(sys.argv[1:]),
        "args": vars(args), "settings": settings, "runs": runs,
        "one_way_delays_per_iteration": trips,
    }
    (RESULTS / "netns_delay.json").write_text(json.dumps(result, indent=1))
    plot(result, RESULTS / "netns_delay.png")
    print(f"per iteration, wall grows by {trips['wall']:.1f} and transfer by {trips['transfer']:.1f} "
          "one-way delays")


if __name__ == "__main__":
    main()
