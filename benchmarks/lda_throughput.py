"""Where an LDA iteration's time goes, and how it scales from 1 to 2 workers.

On the shared wiki corpus (K = 100, minibatch 50, SCIR), run a fixed number of
iterations on LocalClusters of 1 and 2 single-threaded worker processes and
report documents/s, tokens/s and the per-iteration split as measured
(``dscir.engine.parts.Timing``): compute on the critical path (the busiest
worker thread's tasks), transfer (before the first task starts, after the last
stops), queueing and idle otherwise, and the driver's update (phi columns,
exact reduction, the K x W sampler step); and the compute summed over tasks.
Writes benchmarks/results/lda_throughput.json and .png.

    python benchmarks/lda_throughput.py [--iterations 60] [--sweeps 200]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from lda_wiki import RESULTS, cpu_model, make_store


SPLIT = ("wall", "compute", "transfer", "queue", "update", "compute_sum")


def measure(store: Path, n_workers: int, args) -> dict:
    from distributed import Client, LocalCluster

    from dscir.api import LDA
    from dscir.engine.chain import Chain
    from dscir.engine.dask import DaskExecutor
    from dscir.models.lda import LDAModel

    cfg = LDA(n_topics=args.topics, sampler="scir", sweeps=args.sweeps, seed=0,
              policy="reference").chain_config()
    with LocalCluster(n_workers=n_workers, threads_per_worker=1,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        chain = Chain(LDAModel, cfg, str(store), DaskExecutor(client, str(store), "lda"))
        for i in range(args.warmup + args.iterations):
            chain.step(prefetch=i + 1 < args.warmup + args.iterations)
        chain.close()
    h = chain.history[args.warmup:]
    wall = sum(s["wall"] for s in h)
    return {
        "workers": n_workers,
        "iterations": len(h),
        "docs_per_s": sum(s["n_docs"] for s in h) / wall,
        "tokens_per_s": sum(s["n_tokens"] for s in h) / wall,
        "token_sweeps_per_s": sum(s["n_tokens"] for s in h) * args.sweeps / wall,
        "mean_seconds": {f: float(np.mean([s[f] for s in h]))
                         for f in SPLIT},
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=int, default=60)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--topics", type=int, default=100)
    p.add_argument("--sweeps", type=int, default=200)
    args = p.parse_args()
    RESULTS.mkdir(exist_ok=True)
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        store = make_store(Path(tmp) / "wiki.zarr")
        rows = [measure(store, n, args) for n in (1, 2)]
    rows[1]["parallel_efficiency"] = rows[1]["docs_per_s"] / (2 * rows[0]["docs_per_s"])
    for r in rows:
        print(json.dumps(r))
    out = {"command": "python " + " ".join(sys.argv),
           "machine": {"cpu": cpu_model(), "cores": 2, "loadavg_start": load_start,
                       "loadavg_end": os.getloadavg()},
           "args": vars(args), "results": rows}
    (RESULTS / "lda_throughput.json").write_text(json.dumps(out, indent=1))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    parts = ("compute", "transfer", "queue", "update")
    bottom = np.zeros(len(rows))
    for part in parts:
        vals = np.array([r["mean_seconds"][part] for r in rows])
        ax.bar([f"{r['workers']} worker(s)" for r in rows], vals, bottom=bottom, label=part)
        bottom += vals
    ax.set(ylabel="seconds per iteration (mean)",
           title=f"LDA iteration time split (wiki, K={args.topics}, n=50), shared machine")
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "lda_throughput.png", dpi=120)


if __name__ == "__main__":
    main()
