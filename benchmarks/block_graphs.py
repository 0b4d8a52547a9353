"""Graphs per iteration with the topics on the workers, before and after (issue 30, item 3).

With ``placement="workers"`` LDA's topics live in column blocks on the
workers (``dscir.engine.blocks``). Before, every call on the blocks sent one
message to the scheduler per block (a ``client.submit`` each); after, each
call is one graph (``DaskExecutor.graph``). This measures, for an LDA chain
(K = 1,000, a generated Zipf corpus of W = 20,000 words: ``scale.make_corpus``,
SCIR dense step, the reference policy's sweeps) on a LocalCluster of 2
single-threaded worker processes, at ``--blocks`` settings of
``block_entries`` (the default's blocks, and smaller ones):

* counted in-process (not timed): the graphs the driver sent per iteration
  (``update_graph`` on the in-process scheduler) and the tasks that ran per
  iteration (both vary a little with how many workers hold the minibatch's
  parts: the columns are cut once for each);
* contended (2 shared cores, load average recorded): the median wall seconds
  per iteration and the chain's split of it (``dscir.engine.parts.Timing``).

Each run is a fresh process with ``--before`` (a tree of main) or ``--after``
(this worktree) first on its path (the workers inherit it), alternating,
``--repeats`` each; the digest of the final row normalisers shows both ran
the same chain. Writes results/block_graphs.json and .png.

    git -C /work/main archive main dscir | tar -x -C /tmp/main-tree
    nice -n 10 python benchmarks/block_graphs.py --before /tmp/main-tree --before-commit SHA
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
SPLIT = ("wall", "compute", "transfer", "queue", "update")
K, W, DOCS, BATCH = 1000, 20_000, 2000, 100


def counter():
    """A scheduler plugin counting graphs received and tasks computed."""
    from distributed.diagnostics.plugin import SchedulerPlugin

    class Counting(SchedulerPlugin):
        name = "dscir-block-graphs"

        def __init__(self):
            self.graphs, self.tasks = 0, Counter()

        def update_graph(self, scheduler, **kwargs):
            self.graphs += 1

        def transition(self, key, start, finish, *args, **kwargs):
            if start == "processing" and finish == "memory":
                name = str(key[0] if isinstance(key, tuple) else key)
                self.tasks[name.rsplit("-", 1)[0].removeprefix("dscir-lda-")] += 1

    return Counting()


def one_run(store: str, block_entries: int, iterations: int, warmup: int) -> dict:
    """In this process (the package on PYTHONPATH): one chain, counted and timed."""
    from distributed import Client, LocalCluster

    from dscir.api import LDA
    from dscir.engine.chain import Chain
    from dscir.engine.dask import DaskExecutor
    from dscir.models.lda import LDAModel

    cfg = LDA(n_topics=K, sampler="scir", scir_step="dense", batch_size=BATCH, seed=0,
              placement="workers", block_entries=block_entries,
              policy="reference").chain_config(store)
    load_before = os.getloadavg()
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None,
                      memory_limit=0) as cluster, Client(cluster) as client:
        chain = Chain(LDAModel, cfg, store, DaskExecutor(client, store, "lda"))
        plugin = counter()
        cluster.scheduler.add_plugin(plugin)
        for _ in range(warmup):
            chain.step()
        graphs0, tasks0 = plugin.graphs, Counter(plugin.tasks)
        for _ in range(iterations):
            chain.step()
        graphs, tasks = plugin.graphs - graphs0, plugin.tasks - tasks0
        n_blocks = chain.model.topics.blocks.n_blocks
        digest = hashlib.sha256(chain.model.topics.norm.tobytes()).hexdigest()[:16]
        chain.close()
    h = chain.history[warmup:]
    return {"block_entries": block_entries, "n_blocks": n_blocks, "norm_digest": digest,
            "load_before": load_before, "load_after": os.getloadavg(),
            "graphs_per_iteration": graphs / iterations,
            "tasks_per_iteration": sum(tasks.values()) / iterations,
            "tasks_per_iteration_by_kind": {k: v / iterations for k, v in sorted(tasks.items())},
            "s_per_iteration_median": {f: float(np.median([s[f] for s in h])) for f in SPLIT}}


def run_version(code: str, store: str, block_entries: int, args) -> dict:
    """``one_run`` in a fresh process with ``code`` first on the path."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        env = {**os.environ, "PYTHONPATH": code}
        subprocess.run([sys.executable, __file__, "--one", store, "--entries",
                        str(block_entries), "--out", out.name, "--iterations",
                        str(args.iterations), "--warmup", str(args.warmup)],
                       check=True, env=env, cwd=code)
        return json.loads(Path(out.name).read_text())


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    labels = []
    for x, (entries, runs) in enumerate(result["runs"].items()):
        for i, (version, color) in enumerate((("before", "#4c72b0"), ("after", "#55a868"))):
            mine = [r for r in runs if r["version"] == version]
            pos = 3 * x + i
            axes[0].bar(pos, mine[0]["graphs_per_iteration"], color=color,
                        label=version if x == 0 else None)
            axes[1].bar(pos, np.median([r["s_per_iteration_median"]["wall"] for r in mine]),
                        color=color, label=version if x == 0 else None)
        labels.append((3 * x + 0.5, f"{runs[0]['n_blocks']} blocks"))
    for ax in axes:
        ax.set_xticks([p for p, _ in labels], [t for _, t in labels])
        ax.legend(fontsize=8)
    axes[0].set_ylabel("graphs sent per iteration (counted)")
    axes[1].set_ylabel("s per iteration (median; contended, 2 shared cores)")
    fig.suptitle(f"LDA, topics on the workers, K = {K:,}, W = {W:,}, 2 workers", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--before", help="a tree of the base commit (git archive)")
    p.add_argument("--before-commit", default="")
    p.add_argument("--after", default=str(HERE.parent), help="the tree measured as 'after'")
    p.add_argument("--after-commit", default="")
    p.add_argument("--blocks", type=int, nargs="+", default=[1 << 22, 500_000],
                   help="block_entries settings (the default's, and smaller blocks)")
    p.add_argument("--iterations", type=int, default=6)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("--entries", type=int, help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        Path(args.out).write_text(json.dumps(one_run(args.one, args.entries, args.iterations,
                                                     args.warmup)))
        return
    sys.path.insert(0, str(HERE))
    from _common import cpu_model
    from scale import make_corpus

    out = {"machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                       "load_before": os.getloadavg(),
                       "note": "timings contended: 2 cores shared with other developers; "
                               "graphs and tasks are counted, not timed: they vary only with "
                               "how many workers hold the minibatch's parts (one cut of "
                               "columns each)"},
           "command": "python benchmarks/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
           "before_commit": args.before_commit, "after_commit": args.after_commit,
           "settings": {"n_topics": K, "n_words": W, "n_docs": DOCS, "batch_size": BATCH,
                        "corpus": "scale.make_corpus (Zipf 1.07, 300 tokens a document)",
                        "iterations": args.iterations, "warmup": args.warmup,
                        "repeats": args.repeats, "workers": 2, "policy": "reference",
                        "scir_step": "dense"},
           "runs": {}}
    versions = {"before": args.before, "after": args.after}
    with tempfile.TemporaryDirectory() as tmp:
        store = str(Path(tmp) / "zipf.zarr")
        make_corpus(Path(store), DOCS, W)
        for entries in args.blocks:
            runs = out["runs"][str(entries)] = []
            for rep in range(args.repeats):
                for version, code in versions.items():
                    r = {"version": version, "repeat": rep,
                         **run_version(code, store, entries, args)}
                    print(entries, rep, version, r["n_blocks"], r["graphs_per_iteration"],
                          r["tasks_per_iteration"], round(r["s_per_iteration_median"]["wall"], 2),
                          r["norm_digest"], flush=True)
                    runs.append(r)
    out["machine"]["load_after"] = os.getloadavg()
    base = RESULTS / "block_graphs"
    base.with_suffix(".json").write_text(json.dumps(out, indent=1))
    plot(out, base.with_suffix(".png"))
    print(f"wrote {base}.json and .png")


if __name__ == "__main__":
    main()
