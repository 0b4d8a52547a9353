"""Less waiting per LDA iteration (issue 16, item 4): the engine before and after.

One LDA chain under the default policy (SCIR, the policy's minibatch and 10
sweeps) on ap (K = 50) and wiki (K = 100), on dscir's embedded LocalCluster of
2 single-threaded workers, in two engine variants that give the same chain:

* ``before``: the engine as it was: two parts per worker thread, and every
  Gibbs task returning its dense int64 K x U counts (``tasks.gibbs_counts``,
  added by ``topics.add_counts``). Rebuilt here by replacing those two names;
* ``after``: the engine now: one part per worker thread, and the tasks'
  nonzero counts only (``tasks.gibbs_sparse_counts``, ``add_sparse_counts``).

The variants alternate, ``--repeats`` runs each, so both see the same load.
Each run's iterations after ``--warmup`` are split as measured
(``dscir.engine.parts.Timing``: compute on the critical path, transfer,
queue, the driver's update; they add up to the wall time), and the sum of
the final state's log theta shows that both variants ran the same chain.
Writes results/round_trip.json and .png.

    python benchmarks/round_trip.py [--iterations 60] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from _common import cpu_model
from dscir.engine.dask import DaskExecutor
from peers import make_store

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
SPLIT = ("wall", "compute", "transfer", "queue", "update")
CORPORA = {"ap": 50, "wiki": 100}


class TwoPartsPerThread(DaskExecutor):
    """``DaskExecutor`` with two parts per worker thread (the engine before)."""

    @property
    def n_parts(self) -> int:
        return max(2 * sum(self.client.nthreads().values()), 1)


def run(store: str, K: int, variant: str, args) -> dict:
    from dscir.api import LDA
    from dscir.engine.chain import Chain
    from dscir.engine.cluster import dask_client
    from dscir.models.lda import LDAModel, tasks, topics

    n = args.warmup + args.iterations
    cfg = LDA(n_topics=K, n_iter=n, seed=0, progress=False).chain_config(store)
    saved = topics.gibbs_sparse_counts, topics.add_sparse_counts
    if variant == "before":
        topics.gibbs_sparse_counts, topics.add_sparse_counts = tasks.gibbs_counts, topics.add_counts
    try:
        with dask_client(n_workers=2, dashboard_address=None) as client:
            kind = TwoPartsPerThread if variant == "before" else DaskExecutor
            executor = kind(client, store, "lda")
            chain = Chain(LDAModel, cfg, store, executor)
            for i in range(n):
                chain.step(prefetch=i + 1 < n)
            digest = float(chain.model.topics.state_.log_theta.sum())
            chain.close()
    finally:
        topics.gibbs_sparse_counts, topics.add_sparse_counts = saved
    h = chain.history[args.warmup:]
    return {"variant": variant, "load_after": os.getloadavg(), "state_digest": digest,
            "per_iteration_ms": {f: 1e3 * float(np.mean([s[f] for s in h])) for f in SPLIT}}


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(result["corpora"]), figsize=(5 * len(result["corpora"]), 4))
    colors = {"compute": "#4c72b0", "transfer": "#dd8452", "queue": "#8c8c8c",
              "update": "#55a868"}
    for ax, (name, runs) in zip(np.atleast_1d(axes), result["corpora"].items()):
        labels = []
        for j, r in enumerate(runs):
            bottom = 0.0
            for part in colors:
                v = r["per_iteration_ms"][part]
                ax.bar(j, v, bottom=bottom, color=colors[part],
                       label=part if j == 0 else None)
                bottom += v
            labels.append(f"{r['variant']}\n#{j // 2 + 1}")
        ax.set_xticks(range(len(runs)), labels, fontsize=8)
        ax.set_ylabel("ms per iteration (mean after warm-up)")
        ax.set_title(f"{name}, K = {CORPORA[name]}: the same chain, two engines")
        ax.legend(fontsize=8)
    fig.suptitle("LDA iteration split on 2 workers: compute on the critical path, "
                 "transfer, queue, driver update", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpora", default="ap,wiki")
    p.add_argument("--iterations", type=int, default=60)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--tag", default="")
    args = p.parse_args()
    out = {"machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                       "load_before": os.getloadavg()},
           "command": "python benchmarks/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
           "settings": {"iterations": args.iterations, "warmup": args.warmup,
                        "repeats": args.repeats, "workers": 2, "policy": "default"},
           "corpora": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.corpora.split(","):
            store = str(make_store(name, Path(tmp) / f"{name}.zarr", 0))
            runs = []
            for rep in range(args.repeats):
                for variant in ("before", "after"):
                    r = run(store, CORPORA[name], variant, args)
                    print(name, rep, variant, {k: round(v, 1)
                                               for k, v in r["per_iteration_ms"].items()},
                          flush=True)
                    runs.append(r)
            out["corpora"][name] = runs
    out["machine"]["load_after"] = os.getloadavg()
    base = RESULTS / f"round_trip{args.tag}"
    base.with_suffix(".json").write_text(json.dumps(out, indent=1))
    plot(out, base.with_suffix(".png"))
    print(f"wrote {base}.json and .png")


if __name__ == "__main__":
    main()
