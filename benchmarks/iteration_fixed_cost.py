"""The fixed cost of an LDA iteration on 2 workers: tasks, bytes and time (issue 30, item 3).

An LDA chain (K = 20, the default policy's 10 sweeps) on the ap store, driven
through the engine's public chain API (``Chain(LDAModel, config, store,
DaskExecutor)``, ``chain.step``) on dscir's embedded LocalCluster of 2
single-threaded worker processes, with:

* ``warm-2``: warm starts, a near-empty minibatch of 2 documents (the fixed
  cost: what an iteration costs beyond its Gibbs work);
* ``warm-197``: warm starts at the policy's minibatch (197 documents);
* ``cold-2``: cold visits (the default), 2 documents.

Each configuration runs under two versions of the package, alternating in
the same session, each in a fresh process (the workers inherit its
PYTHONPATH): ``before``, a copy of the base commit's tree (``--before``), and
``after``, this worktree. Per measured iteration (after ``--warmup``) it
records, counted in-process (not spoiled by the machine's load):

* tasks run, by kind (the key's ``what``), from the scheduler's transitions
  processing -> memory, and the graphs the driver sent (messages the
  scheduler handles: ``update_graph``), by a plugin on the in-process scheduler;
* bytes sent by the driver inside tasks (each task's function and arguments
  pickled, as ``CountingClient`` sees them) and bytes the workers sent to the driver and to
  each other (the workers' ``transfer_outgoing_log``, Dask's size estimates);

and, contended (2 shared cores: the load average is recorded), the chain's
own split of the wall time (``dscir.engine.parts.Timing``: compute on the
critical path, transfer, queue, the driver's update). The final state's
digest shows both versions ran the same chain. Writes
results/iteration_fixed_cost.json and .png.

    git archive BASE dscir | tar -x -C /tmp/base
    python benchmarks/iteration_fixed_cost.py --before /tmp/base --before-commit BASE [--iterations 30]
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
STORE = "/tmp/pu/ap/ap.zarr"
SPLIT = ("wall", "compute", "transfer", "queue", "update")
CONFIGS = {"warm-2": (True, 2), "warm-197": (True, 197), "cold-2": (False, 2)}


def task_counter():
    """A scheduler plugin counting tasks that ran (processing -> memory) by kind,
    and the graphs clients sent (a ``submit`` is one, a ``get`` of many tasks one)."""
    from distributed.diagnostics.plugin import SchedulerPlugin

    class TaskCounter(SchedulerPlugin):
        name = "dscir-task-counter"

        def __init__(self):
            self.kinds: Counter = Counter()
            self.graphs = 0

        def update_graph(self, scheduler, **kwargs):
            self.graphs += 1

        def transition(self, key, start, finish, *args, **kwargs):
            if start == "processing" and finish == "memory":
                name = str(key[0] if isinstance(key, tuple) else key)
                self.kinds[name.split("-")[2] if name.startswith("dscir-") else name] += 1

    return TaskCounter()


def _outgoing(dask_worker=None) -> list[tuple[str, int]]:
    return [(str(t["who"]), int(t["total"])) for t in dask_worker.transfer_outgoing_log]


class CountingClient:
    """The client, with the pickled bytes of every task it sends added up
    (``submit``, or ``get`` of a graph of tasks; futures pickle as their keys)."""

    def __init__(self, client):
        self._client, self.sent = client, 0

    def submit(self, fn, *args, **kwargs):
        import cloudpickle

        self.sent += len(cloudpickle.dumps((fn, args)))
        return self._client.submit(fn, *args, **kwargs)

    def get(self, graph, keys, **kwargs):
        import cloudpickle

        tasks = graph.operand("dsk") if hasattr(graph, "operand") else graph
        self.sent += len(cloudpickle.dumps(tasks))
        return self._client.get(graph, keys, **kwargs)

    def __getattr__(self, name):
        return getattr(self._client, name)


def one_run(config: str, iterations: int, warmup: int) -> dict:
    """In this process (the package on PYTHONPATH): one chain, measured."""
    from dscir.api import LDA
    from dscir.engine.chain import Chain
    from dscir.engine.cluster import dask_client
    from dscir.engine.dask import DaskExecutor
    from dscir.models.lda import LDAModel

    warm, batch = CONFIGS[config]
    n = warmup + iterations
    cfg = LDA(n_topics=20, n_iter=n, seed=0, progress=False, warm_start=warm,
              batch_size=batch).chain_config(STORE)
    load_before = os.getloadavg()
    with dask_client(n_workers=2, dashboard_address=None) as client:
        counter = task_counter()
        client.cluster.scheduler.add_plugin(counter)
        counting = CountingClient(client)
        executor = DaskExecutor(counting, STORE, "lda")
        chain = Chain(LDAModel, cfg, STORE, executor)
        for i in range(warmup):
            chain.step(prefetch=True)
        kinds0, sent0, graphs0 = Counter(counter.kinds), counting.sent, counter.graphs
        logs0 = {w: len(v) for w, v in client.run(_outgoing).items()}
        for i in range(iterations):
            chain.step(prefetch=i + 1 < iterations)
        kinds = counter.kinds - kinds0
        workers = set(client.nthreads())
        moved = {"to_driver": 0, "between_workers": 0}
        for w, log in client.run(_outgoing).items():
            for who, total in log[logs0[w]:]:
                moved["between_workers" if who in workers else "to_driver"] += total
        digest = hashlib.sha256(chain.model.topics.state_.log_theta.tobytes()).hexdigest()[:16]
        chain.close()
    h = chain.history[warmup:]
    return {"config": config, "load_before": load_before, "load_after": os.getloadavg(),
            "state_digest": digest,
            "tasks_per_iteration": {k: v / iterations for k, v in sorted(kinds.items())},
            "tasks_per_iteration_total": sum(kinds.values()) / iterations,
            "graphs_per_iteration": (counter.graphs - graphs0) / iterations,
            "bytes_per_iteration": {"driver_to_workers": (counting.sent - sent0) / iterations,
                                    **{k: v / iterations for k, v in moved.items()}},
            "ms_per_iteration": {f: 1e3 * float(np.mean([s[f] for s in h])) for f in SPLIT},
            "ms_per_iteration_median": {f: 1e3 * float(np.median([s[f] for s in h]))
                                        for f in SPLIT}}


def run_version(code: str, config: str, args) -> dict:
    """``one_run`` in a fresh process with ``code`` first on the path."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        env = {**os.environ, "PYTHONPATH": code}
        subprocess.run([sys.executable, __file__, "--one", config, "--out", out.name,
                        "--iterations", str(args.iterations), "--warmup", str(args.warmup)],
                       check=True, env=env, cwd=code)
        return json.loads(Path(out.name).read_text())


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    configs = list(result["runs"])
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    colors = {"compute": "#4c72b0", "transfer": "#dd8452", "queue": "#8c8c8c",
              "update": "#55a868"}
    labels, x = [], 0
    for config in configs:
        for version in ("before", "after"):
            runs = [r for r in result["runs"][config] if r["version"] == version]
            bottom = 0.0
            for part, color in colors.items():
                v = float(np.median([r["ms_per_iteration_median"][part] for r in runs]))
                axes[0].bar(x, v, bottom=bottom, color=color,
                            label=part if x == 0 else None)
                bottom += v
            axes[1].bar(x, runs[0]["tasks_per_iteration_total"],
                        color="#4c72b0" if version == "before" else "#55a868")
            labels.append(f"{config}\n{version}")
            x += 1
    for ax in axes:
        ax.set_xticks(range(x), labels, fontsize=7)
    axes[0].set_ylabel("ms per iteration (median; contended, 2 shared cores)")
    axes[0].legend(fontsize=8)
    axes[1].set_ylabel("tasks per iteration (counted)")
    fig.suptitle("LDA on ap, K = 20, 2 workers: an iteration's fixed cost before and after",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--before", help="a tree of the base commit (git archive)")
    p.add_argument("--before-commit", default="")
    p.add_argument("--after", default=str(HERE.parent), help="the tree measured as 'after'")
    p.add_argument("--after-commit", default="")
    p.add_argument("--configs", default=",".join(CONFIGS))
    p.add_argument("--iterations", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--tag", default="", help="suffix of the result files' names")
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        Path(args.out).write_text(json.dumps(one_run(args.one, args.iterations, args.warmup)))
        return
    sys.path.insert(0, str(HERE))
    from _common import cpu_model

    versions = {"before": args.before, "after": args.after}
    out = {"machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                       "load_before": os.getloadavg(),
                       "note": "timings contended: 2 cores shared with other developers"},
           "command": "python benchmarks/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
           "before_commit": args.before_commit, "after_commit": args.after_commit,
           "settings": {"store": STORE, "n_topics": 20, "iterations": args.iterations,
                        "warmup": args.warmup, "repeats": args.repeats, "workers": 2},
           "runs": {}}
    for config in args.configs.split(","):
        out["runs"][config] = []
        for rep in range(args.repeats):
            for version, code in versions.items():
                r = {"version": version, **run_version(code, config, args)}
                print(config, rep, version, r["tasks_per_iteration"],
                      {k: round(v) for k, v in r["bytes_per_iteration"].items()},
                      {k: round(v, 1) for k, v in r["ms_per_iteration_median"].items()},
                      flush=True)
                out["runs"][config].append(r)
    out["machine"]["load_after"] = os.getloadavg()
    base = RESULTS / f"iteration_fixed_cost{args.tag}"
    base.with_suffix(".json").write_text(json.dumps(out, indent=1))
    plot(out, base.with_suffix(".png"))
    print(f"wrote {base}.json and .png")


if __name__ == "__main__":
    main()
