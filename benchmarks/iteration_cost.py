"""The fixed cost of an LDA iteration on a 2-worker LocalCluster, and where it goes.

A one-document minibatch (K = 20, W = 200, 10 sweeps) costs the machinery,
not the Gibbs work: this runs ``--iterations`` such iterations through the
chain (``Chain.step``, reads prefetched as in a fit) on dscir's embedded
LocalCluster of 2 single-threaded workers, ``--repeats`` times, and splits
each iteration's wall time as seen from the driver:

* ``read_submit``: submitting the minibatch's reads (``executor.read``);
* ``words_wait``: gathering the parts' distinct words (``executor.words``),
  which waits for the read and words tasks;
* ``gibbs_round``: submitting the Gibbs tasks and gathering their counts
  (``executor.run``), itself split into ``gibbs_compute`` (the Gibbs task's
  own work on the critical path) and ``gibbs_wait`` (the rest: scheduler
  assignment, transfers, results);
* ``driver``: the rest of the wall time, the driver's own work (phi columns,
  adding counts, the SCIR step, keeping samples).

It also counts the tasks each iteration ran on the workers, by kind
(``read``, ``words``, ``gibbs``, from the scheduler's task stream), with
their summed compute. Every run is stored; the machine is shared, so the
figures are contended: compare their ranges, and the task counts, which are
exact.

With ``--reads tasks`` each minibatch is read by tasks (read and words tasks
per part, as before documents were resident on the workers); the default,
``resident``, is LDA's default placement (``dscir.engine.shards``). Run them
alternating:

    python benchmarks/iteration_cost.py --reads tasks --tag _before
    python benchmarks/iteration_cost.py --tag _after
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from _common import cpu_model

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
PARTS = ("read_submit", "words_wait", "gibbs_round", "gibbs_compute", "gibbs_wait", "driver",
         "wall")


def make_store(path: Path, n_docs: int, n_words: int, K: int) -> str:
    """Documents of 60 tokens from K sparse topics over ``n_words`` words, 10% held out."""
    from dscir.corpus import split_heldout, write_corpus

    rng = np.random.default_rng(0)
    topics = rng.dirichlet(np.full(n_words, 0.05), K)
    docs = [rng.multinomial(60, rng.dirichlet(np.full(K, 0.1)) @ topics) for _ in range(n_docs)]
    write_corpus(path, sp.csr_matrix(np.array(docs)),
                 vocabulary=[f"w{i}" for i in range(n_words)], chunk_docs=64)
    split_heldout(path, every=10)
    return str(path)


class Stopwatch:
    """Wraps an executor's methods to time the driver's calls to them."""

    def __init__(self, executor):
        self.seconds: dict[str, float] = defaultdict(float)
        for name, part in (("read", "read_submit"), ("words", "words_wait"),
                           ("run", "gibbs_round")):
            original = getattr(executor, name, None)
            if original is not None:
                setattr(executor, name, self._timed(original, part))

    def _timed(self, fn, part):
        def call(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[part] += time.perf_counter() - start
        return call


def _kind(key) -> str:
    name = key[0] if isinstance(key, tuple) else str(key)
    name = name.strip("('\"")
    for kind in ("gibbs", "words", "read", "shard"):
        if f"-{kind}" in name:
            return kind
    return "other"


def task_counts(stream: list[dict], n_iter: int) -> dict[str, dict[str, float]]:
    """Tasks per iteration by kind, and their mean compute (ms) per iteration."""
    count, compute = defaultdict(int), defaultdict(float)
    for t in stream:
        kind = _kind(t["key"])
        count[kind] += 1
        compute[kind] += sum(s["stop"] - s["start"] for s in t["startstops"]
                             if s["action"] == "compute")
    return {k: {"tasks_per_iteration": count[k] / n_iter,
                "compute_ms_per_iteration": 1e3 * compute[k] / n_iter} for k in count}


def run(store: str, args) -> dict:
    from distributed import get_task_stream

    from dscir.api import LDA
    from dscir.engine.chain import Chain
    from dscir.engine.cluster import dask_client
    from dscir.engine.dask import DaskExecutor
    from dscir.models.lda import LDAModel

    n = args.warmup + args.iterations
    cfg = LDA(n_topics=args.K, batch_size=args.batch_size, sweeps=10, n_iter=n, seed=0,
              progress=False).chain_config(store)
    per_iteration = []
    with dask_client(n_workers=2, dashboard_address=None) as client:
        # Numba compiles the kernels once per worker process: a chain with large
        # minibatches runs on both workers first, so no compilation is measured.
        wide = LDA(n_topics=args.K, batch_size=200, sweeps=10, n_iter=2, seed=0,
                   progress=False).chain_config(store)
        warm = Chain(LDAModel, wide, store, DaskExecutor(client, store, "lda", resident=False))
        for _ in range(2):
            warm.step(prefetch=False)
        warm.close()
        executor = DaskExecutor(client, store, "lda", resident=args.reads == "resident")
        watch = Stopwatch(executor)
        chain = Chain(LDAModel, cfg, store, executor)
        for i in range(args.warmup):
            chain.step(prefetch=True)
        with get_task_stream(client) as ts:
            for i in range(args.iterations):
                watch.seconds.clear()
                record = chain.step(prefetch=i + 1 < args.iterations)
                s = dict(watch.seconds)
                s["gibbs_compute"] = record["compute"]
                s["gibbs_wait"] = s.get("gibbs_round", 0.0) - record["compute"]
                s["wall"] = record["wall"]
                s["driver"] = s["wall"] - sum(s.get(p, 0.0) for p in PARTS[:3])
                per_iteration.append(s)
        digest = float(chain.model.topics.state_.log_theta.sum())
        chain.close()
    ms = {p: 1e3 * float(np.mean([s.get(p, 0.0) for s in per_iteration])) for p in PARTS}
    return {"per_iteration_ms": ms, "tasks": task_counts(ts.data, args.iterations),
            "state_digest": digest, "load_after": os.getloadavg()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--iterations", type=int, default=40)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--K", type=int, default=20)
    p.add_argument("--n-words", type=int, default=200)
    p.add_argument("--n-docs", type=int, default=1000)
    p.add_argument("--tag", default="_before")
    p.add_argument("--reads", choices=("resident", "tasks"), default="resident",
                   help="documents resident on the workers (dscir.engine.shards), or "
                        "read by tasks every iteration")
    args = p.parse_args()
    out = {"machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                       "load_before": os.getloadavg(), "contended": True},
           "command": "python benchmarks/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
           "settings": {k: v for k, v in vars(args).items() if k != "tag"} | {"workers": 2},
           "runs": []}
    with tempfile.TemporaryDirectory() as tmp:
        store = make_store(Path(tmp) / "small.zarr", args.n_docs, args.n_words, args.K)
        for rep in range(args.repeats):
            r = run(store, args)
            print(rep, {k: round(v, 1) for k, v in r["per_iteration_ms"].items()},
                  {k: v["tasks_per_iteration"] for k, v in r["tasks"].items()}, flush=True)
            out["runs"].append(r)
    walls = [r["per_iteration_ms"] for r in out["runs"]]
    out["range_ms"] = {p: [min(w[p] for w in walls), max(w[p] for w in walls)] for p in PARTS}
    out["machine"]["load_after"] = os.getloadavg()
    path = RESULTS / f"iteration_cost{args.tag}.json"
    path.write_text(json.dumps(out, indent=1))
    print(f"wrote {path}; range (ms):", {k: [round(a, 1), round(b, 1)]
                                         for k, (a, b) in out["range_ms"].items()})


if __name__ == "__main__":
    main()
