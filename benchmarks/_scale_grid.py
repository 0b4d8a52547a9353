"""The scale grid (``python benchmarks/scale.py --grid``): speed as cores are added.

Two cells (default K = 100, W = 10^4, minibatch 4,000 and K = 1,000, W = 10^5,
minibatch 2,000) on ``scale.make_corpus`` Zipf corpora, each over 1, 2, 4,
... cores (default: powers of two up to this machine's count, and the count)
in two layouts: ``workers`` (n single-threaded worker processes: n parts, each
with its copy of its words' columns) and ``threads`` (one worker process of n
threads: one part on n threads), each with the rounds through the workers'
runners (``--controls runners``, the default) and as task graphs (``tasks``,
today's fallback), alternating. Each run is ``scale.py --cell`` in its own
process. Beside it, the Gibbs kernel alone on a minibatch of the cell's
documents on the same number of threads (its capacity, token-sweeps/s).

Per run: seconds per iteration (median), speed-up and efficiency against the
1-core run; CPU-s per iteration (workers' and driver's processes: all the
compute, overheads included) and its ratio to the 1-core run's; the serial
share, (wall - critical-path compute) / wall (``dscir.engine.parts.Timing``:
the driver step, the graph, transfers and waits); the per-part overhead,
the CPU-s each part beyond the first adds, (cpu(n) - cpu(1)) / (parts - 1);
and the chain's token-sweeps/s over the kernel's. First, the latency of an empty
round by each control path (``control_latency``). Writes ``--out`` (JSON) and
its PNG.
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
from scale import RESULTS, make_corpus

HERE = Path(__file__).resolve().parent


def default_cores() -> list[int]:
    n = os.cpu_count() or 1
    return sorted({*(2 ** i for i in range(n.bit_length()) if 2 ** i <= n), n})


def kernel_capacity(store: Path, k: int, batch: int, sweeps: int, threads: int,
                    kernel: str) -> float:
    """Token-sweeps/s of the Gibbs kernel alone on ``threads`` threads, on the
    store's first ``batch`` training documents (phi drawn once; best of two)."""
    import numba

    from dscir.corpus import Corpus
    from dscir.models.lda.gibbs import gibbs_expectations

    corpus = Corpus.open(str(store))
    b = corpus.read(np.arange(min(batch, corpus.n_docs)))
    words = np.unique(b.indices)
    local = np.searchsorted(words, b.indices)
    phi = np.random.default_rng(0).gamma(0.1, size=(k, words.size)) + 1e-9
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    best = np.inf
    for _ in range(2):
        start = time.perf_counter()
        gibbs_expectations(b.indptr, b.indices, b.data, b.docs, phi, local, 0.1, sweeps, 0, 0,
                           kernel)
        best = min(best, time.perf_counter() - start)
    return float(b.data.sum()) * sweeps / best


class _Echo:
    """An actor whose call returns its argument: a runner's round trip, no work."""

    def call(self, x):
        return x


def _echo(x):
    return x


def control_latency(rounds: int = 200) -> list[dict]:
    """Median seconds of an empty round (a 1 kB array there and back) on a
    one-worker cluster, in-process and as a worker process, by each control
    path: ``Client.submit`` (a task), ``Client.get`` of a one-task graph (a
    round as today's tasks), and an actor call (the workers' runners). A
    long-lived task per worker would need a channel back to the driver, and
    Dask's (``Queue``, ``Variable``, pub-sub) pass through the scheduler: two
    of the task round's hops, so it is not measured."""
    from distributed import Client, LocalCluster

    x = np.zeros(128)
    out = []
    for processes in (False, True):
        with LocalCluster(n_workers=1, threads_per_worker=2, processes=processes,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            actor = client.submit(_Echo, actor=True).result()
            paths = {"task": lambda i: client.submit(_echo, x, key=f"echo-{i}").result(),
                     "graph": lambda i: client.get({f"graph-{i}": (_echo, x)}, f"graph-{i}"),
                     "runner": lambda i: actor.call(x).result()}
            for name, call in paths.items():
                seconds = []
                for i in range(rounds):
                    start = time.perf_counter()
                    call(i)
                    seconds.append(time.perf_counter() - start)
                out.append({"worker": "process" if processes else "in-process", "path": name,
                            "median_s": float(np.median(seconds[rounds // 10:])),
                            "rounds": rounds, "load_after": os.getloadavg()})
                print(json.dumps(out[-1]), flush=True)
    return out


def run(store: Path, k: int, batch: int, workers: int, threads: int, control: str,
        args) -> dict:
    cmd = [sys.executable, str(HERE / "scale.py"), "--cell", str(store), f"--topics={k}",
           f"--batch={batch}", f"--workers={workers}", f"--threads={threads}",
           f"--sweeps={args.sweeps}", f"--warmup={args.warmup}",
           f"--iterations={args.iterations}", f"--placement={args.placement}",
           f"--kernel={args.kernel}", f"--scir_step={args.scir_step}", "--mode=chain",
           f"--control={control}",
           "--transform_docs=0"]
    start = time.time()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
        out = (json.loads(lines[-1][7:]) if lines else
               {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1][-300:]})
    except subprocess.TimeoutExpired:
        out = {"error": f"did not finish in {args.timeout:.0f} s"}
    return {**out, "seconds": time.time() - start}


def derived(runs: list[dict]) -> None:
    """Each run's figures against the 1-core run of its cell (in place)."""
    for r in runs:
        if "s_per_iteration" not in r:
            continue
        split = r["split"]
        r["cpu_s_per_iteration"] = r["worker_cpu_s_per_iteration"] + r["driver_cpu_s_per_iteration"]
        r["serial_share"] = max(split["wall"] - split["compute"], 0.0) / split["wall"]
        r["chain_over_kernel"] = r["token_sweeps_per_s"] / r["kernel_token_sweeps_per_s"]
    for r in runs:
        base = next((b for b in runs if b["cell"] == r["cell"] and b["cores"] == 1
                     and b["control"] == r["control"] and "s_per_iteration" in b), None)
        if base is None or "s_per_iteration" not in r:
            continue
        r["speedup"] = base["s_per_iteration"] / r["s_per_iteration"]
        r["efficiency"] = r["speedup"] / r["cores"]
        r["cpu_over_one_core"] = r["cpu_s_per_iteration"] / base["cpu_s_per_iteration"]
        extra = r["cpu_s_per_iteration"] - base["cpu_s_per_iteration"]
        r["per_part_overhead_cpu_s"] = extra / (r["parts"] - 1) if r["parts"] > 1 else None
        r["extra_cpu_s"] = extra


def grid_main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(prog="scale.py --grid", description=__doc__.split("\n")[0])
    p.add_argument("--cells", nargs="+", default=["100:10000:4000", "1000:100000:2000"],
                   help="K:W:minibatch of each cell")
    p.add_argument("--cores", type=int, nargs="+", default=default_cores())
    p.add_argument("--layouts", nargs="+", choices=("workers", "threads"),
                   default=["workers", "threads"])
    p.add_argument("--docs", type=int, default=10_000)
    p.add_argument("--sweeps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--latency-only", action="store_true",
                   help="only the empty rounds' latency by control path (no cells)")
    p.add_argument("--controls", nargs="+", choices=("runners", "tasks"),
                   default=["runners", "tasks"])
    p.add_argument("--placement", default="auto")
    p.add_argument("--kernel", default="auto", choices=("auto", "dense", "sparse"))
    p.add_argument("--scir-step", default="dense", choices=("auto", "dense", "lazy"))
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    p.add_argument("--out", default=str(RESULTS / "scale_cores.json"))
    args = p.parse_args(argv)
    from dscir.models.lda.gibbs import resolve_kernel

    cells = [tuple(int(x) for x in c.split(":")) for c in args.cells]
    runs = []
    latency = control_latency()
    with tempfile.TemporaryDirectory() as tmp:
        for w in sorted({c[1] for c in cells}) if not args.latency_only else ():
            store = Path(tmp) / f"zipf-{w}.zarr"
            make_corpus(store, args.docs, w)
            for k, _, batch in (c for c in cells if c[1] == w):
                for n in args.cores:
                    cap = kernel_capacity(store, k, batch, args.sweeps, n,
                                          resolve_kernel(args.kernel, k))
                    for layout in args.layouts if n > 1 else ["workers"]:
                        shape = (n, 1) if layout == "workers" else (1, n)
                        for control in args.controls:
                            r = {"cell": f"K{k} W{w} B{batch}", "topics": k, "words": w,
                                 "batch": batch, "cores": n, "layout": layout,
                                 "workers": shape[0], "threads": shape[1], "parts": shape[0],
                                 "control": control, "kernel_token_sweeps_per_s": cap,
                                 "load_before": os.getloadavg(),
                                 **run(store, k, batch, *shape, control, args)}
                            runs.append(r)
                            print(json.dumps(r), flush=True)
    derived(runs)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    result = {"command": " ".join([Path(sys.executable).name, "benchmarks/scale.py", "--grid",
                                   *argv]), "commit": commit, "cpu": cpu_model(),
              "n_cpus": os.cpu_count(), "docs": args.docs, "sweeps": args.sweeps,
              "warmup": args.warmup, "iterations": args.iterations,
              "placement": args.placement, "control_latency": latency, "runs": runs}
    Path(args.out).write_text(json.dumps(result, indent=1))
    if runs:
        plot(result, Path(args.out).with_suffix(".png"))


def plot(result: dict, path: Path) -> None:
    """Seconds per iteration by cores (the ideal 1/n dotted), the serial share,
    and CPU-s per iteration against the 1-core run's, per cell and layout."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in result["runs"] if "s_per_iteration" in r]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for cell in sorted({r["cell"] for r in ok}):
        one = [r for r in ok if r["cell"] == cell and r["cores"] == 1]
        for (layout, control), style in (
                (("workers", "runners"), "o-"), (("threads", "runners"), "s--"),
                (("workers", "tasks"), "o:"), (("threads", "tasks"), "s-.")):
            rs = sorted((r for r in ok if r["cell"] == cell and r.get("control") == control
                         and (r["layout"] == layout or r["cores"] == 1)),
                        key=lambda r: r["cores"])
            if not rs:
                continue
            n = [r["cores"] for r in rs]
            label = f"{cell} {layout} {control}"
            axes[0].plot(n, [r["s_per_iteration"] for r in rs], style, label=label)
            axes[1].plot(n, [r["serial_share"] for r in rs], style, label=label)
            axes[2].plot(n, [r.get("cpu_over_one_core", 1.0) for r in rs], style, label=label)
        if one:
            n = sorted({r["cores"] for r in ok})
            axes[0].plot(n, [one[0]["s_per_iteration"] / c for c in n], ":", color="grey")
    for ax, label in zip(axes, ("seconds per iteration", "serial share of an iteration",
                                "CPU-s per iteration / 1 core's")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("cores")
        ax.set_ylabel(label)
        ax.legend(fontsize=6)
    axes[0].set_yscale("log")
    fig.suptitle(f"LDA SCIR scale grid, {result['n_cpus']}-CPU {result['cpu']} "
                 f"({result['sweeps']} sweeps, commit {result['commit']})", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
