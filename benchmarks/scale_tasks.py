"""Where a scale cell's iteration goes, task by task (issue 14): Dask's task stream.

One cell of ``scale.py`` (the same generated Zipf corpus, SCIR, the topics on
the workers), run on a LocalCluster of single-threaded workers: after
``--warmup`` iterations, Dask's task stream records ``--iterations`` more,
and each task's compute and dependency-transfer seconds are summed per task
name (``dscir-lda-gibbs``, ``-block-step``, ``-columns-piece``, ...) and
divided by the iterations. Summed over workers, so on 2 workers the compute
of a name can exceed the wall. Writes benchmarks/results/<out>.json and .png.

    cd benchmarks && python scale_tasks.py [--topics 1000] [--words 100000]
        [--batch 1000] [--workers 2] [--sweeps 200] [--out scale_tasks_k1000]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from _common import cpu_model
from scale import RESULTS, make_corpus


def task_name(key) -> str:
    """``dscir-lda-gibbs`` of a key ``("dscir-lda-gibbs-<run token>", iteration,
    serial, j)`` (``DaskExecutor._key``)."""
    return (key[0] if isinstance(key, tuple) else str(key)).rsplit("-", 1)[0]


def profile(store: str, args) -> dict:
    from distributed import Client, LocalCluster, get_task_stream

    from dscir.api import LDA
    from dscir.engine.chain import Chain
    from dscir.engine.dask import DaskExecutor
    from dscir.models.lda import LDAModel

    cfg = LDA(n_topics=args.topics, sampler="scir", sweeps=args.sweeps, batch_size=args.batch,
              seed=0, placement="workers", policy="reference").chain_config(store)
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, dashboard_address=None,
                      memory_limit=0) as cluster, Client(cluster) as client:
        chain = Chain(LDAModel, cfg, store, DaskExecutor(client, store, "lda"))
        for _ in range(args.warmup):
            chain.step(prefetch=True)
        with get_task_stream(client) as ts:
            start = time.perf_counter()
            for i in range(args.iterations):
                chain.step(prefetch=i + 1 < args.iterations)
            wall = (time.perf_counter() - start) / args.iterations
        chain.close()
    per = collections.defaultdict(lambda: {"tasks": 0, "compute": 0.0, "transfer": 0.0})
    for t in ts.data:
        row = per[task_name(t["key"])]
        row["tasks"] += 1
        for ss in t["startstops"]:
            if ss["action"] in ("compute", "transfer"):
                row[ss["action"]] += (ss["stop"] - ss["start"]) / args.iterations
    return {"wall_per_iteration": wall, "kernel": chain.model.kernel,
            "tasks": dict(sorted(per.items(), key=lambda kv: -kv[1]["compute"]))}


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n, r in result["tasks"].items() if r["compute"] + r["transfer"] > 0.01]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    y = range(len(names))
    comp = [result["tasks"][n]["compute"] for n in names]
    ax.barh(y, comp, label="compute")
    ax.barh(y, [result["tasks"][n]["transfer"] for n in names], left=comp, label="transfer")
    ax.set_yticks(list(y), [n.removeprefix("dscir-lda-") for n in names])
    ax.invert_yaxis()
    ax.set_xlabel("seconds per iteration, summed over the workers' tasks")
    a = result["args"]
    ax.set_title(f"K = {a['topics']}, W = {a['words']}, minibatch {a['batch']}, "
                 f"{a['workers']} workers: wall {result['wall_per_iteration']:.2f} s / it")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--topics", type=int, default=1000)
    p.add_argument("--words", type=int, default=100_000)
    p.add_argument("--docs", type=int, default=2000)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--sweeps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--out", default="scale_tasks_k1000")
    args = p.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        store = str(Path(tmp) / "zipf.zarr")
        make_corpus(Path(store), args.docs, args.words)
        result = profile(store, args)
    result = {"command": " ".join([Path(sys.executable).name, *sys.argv]), "args": vars(args),
              "cpu": cpu_model(), "n_cpus": os.cpu_count(),
              "load": {"before": load_before, "after": os.getloadavg()}, **result}
    out = RESULTS / f"{args.out}.json"
    out.write_text(json.dumps(result, indent=1))
    plot(result, out.with_suffix(".png"))
    for name, row in result["tasks"].items():
        print(f"{name:32s} {row['tasks']:4d} tasks  compute {row['compute']:6.2f} s/it  "
              f"transfer {row['transfer']:5.2f} s/it")


if __name__ == "__main__":
    main()
