"""The constants of an LDA iteration's cost model (issue 35), measured on 1 and 2 workers.

The model: an iteration's seconds = Gibbs work (tokens x sweeps x g on the
busiest worker) + the SCIR step (K x W entries x s, on the driver) + per task
a scheduler overhead o + bytes per task over the link. This script measures
g, s, o and the bytes, nothing more; it predicts nothing and validates
nothing. On a LocalCluster of 1 and 2 single-threaded worker processes
(``--workers``), for each (K, minibatch) cell, a generated LDA corpus
(``dscir.corpus.synthetic``) and a chain driven directly (``Chain.step``,
topics on the driver):

* ``gibbs_s_per_token_sweep`` g: the Gibbs tasks' own compute (stamped on the
  workers, ``compute_sum``) over the tokens x sweeps they did (in-process counts);
* ``scir_s_per_entry`` s: the sampler's step on a K x W state, timed in
  this process (median of ``--repeats``), over K x W;
* ``overhead_s_per_task`` o: per Gibbs task, the iteration's wall time less
  its critical-path compute and the driver's update (``engine.parts.Timing``),
  and the round trip of a no-op task (submit and gather, one at a time);
* ``bytes_in_per_task``: the phi columns a Gibbs task is sent (the topics'
  ``columns``, counted as they are cut); ``bytes_out_per_task``: its result
  (the scheduler's task stream ``nbytes``).

The machine is shared: every second here is contended, the byte and task
counts are exact. Writes benchmarks/results/iteration_model.json.

    nice -n 5 python benchmarks/iteration_model.py [--topics 20 100] [--batches 200 2000]
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

from _common import ROOT, cpu_model

RESULTS = ROOT / "benchmarks" / "results"


def scir_seconds(k: int, n_words: int, repeats: int) -> float:
    """Median seconds of one SCIR step on a K x W state, in this process."""
    from dscir.samplers.base import get_sampler

    sampler = get_sampler("scir")
    rng = np.random.default_rng(0)
    state = sampler.init(rng.gamma(1.0, size=(k, n_words)))
    counts = rng.poisson(2.0, size=(k, n_words)).astype(np.float64)
    times = []
    for r in range(repeats):
        start = time.perf_counter()
        state = sampler.step(state, 0.01, counts, 0.1, r)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def no_op_round_trip(client, n: int) -> float:
    """Median seconds to submit one no-op task and gather its result."""
    times = []
    for i in range(n):
        start = time.perf_counter()
        client.submit(int, i, pure=False).result()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def cell(store: str, n_workers: int, k: int, batch: int, args) -> dict:
    """One (workers, K, minibatch) cell: the constants from ``--iterations`` iterations."""
    from distributed import Client, LocalCluster, get_task_stream

    from dscir.api import LDA
    from dscir.corpus import Corpus
    from dscir.engine.chain import Chain
    from dscir.engine.dask import DaskExecutor
    from dscir.models.lda import LDAModel

    cfg = LDA(n_topics=k, batch_size=batch, seed=0, placement="driver",
              sweeps=args.sweeps).chain_config(store)
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, dashboard_address=None,
                      memory_limit="1GiB", host="127.0.0.1") as cluster, \
            Client(cluster) as client:
        client.wait_for_workers(n_workers, timeout=300)
        chain = Chain(LDAModel, cfg, store, DaskExecutor(client, store, "lda"))
        topics, sent = chain.model.topics, []
        cut = topics.columns
        topics.columns = lambda words: sent.append([c.nbytes for c in cut(words)]) or cut(words)
        for _ in range(args.warmup):
            chain.step()
        sent.clear()
        with get_task_stream(client) as ts:
            for i in range(args.iterations):
                chain.step(prefetch=i + 1 < args.iterations)
        chain.close()
        round_trip = no_op_round_trip(client, args.repeats * 10)
    gibbs = [t for t in ts.data if "gibbs" in str(t["key"])]
    n_words = Corpus.open(store).n_words
    h = chain.history[args.warmup:]
    tasks = len(gibbs) / len(h)
    token_sweeps = sum(r["n_tokens"] for r in h) * cfg.sweeps
    overhead = [(r["wall"] - r["compute"] - r["update"]) / tasks for r in h]
    return {"workers": n_workers, "K": k, "W": n_words, "batch": batch,
            "sweeps": cfg.sweeps, "iterations": len(h), "gibbs_tasks_per_iteration": tasks,
            "s_per_iteration_median": float(np.median([r["wall"] for r in h])),
            "gibbs_s_per_token_sweep": sum(r["compute_sum"] for r in h) / token_sweeps,
            "overhead_s_per_task_median": float(np.median(overhead)),
            "no_op_round_trip_s": round_trip,
            "update_s_median": float(np.median([r["update"] for r in h])),
            "bytes_in_per_task": float(np.mean([b for it in sent for b in it])),
            "bytes_out_per_task": float(np.mean([t.get("nbytes", 0) for t in gibbs])),
            "scir_s_per_entry": scir_seconds(k, n_words, args.repeats) / (k * n_words)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--topics", type=int, nargs="+", default=[20, 100])
    p.add_argument("--batches", type=int, nargs="+", default=[200, 2000])
    p.add_argument("--words", type=int, default=5000)
    p.add_argument("--docs", type=int, default=20_000)
    p.add_argument("--sweeps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--iterations", type=int, default=6)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    from dscir.corpus.synthetic import write_lda_corpus

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        store = str(Path(tmp) / "corpus.zarr")
        write_lda_corpus(store, n_docs=args.docs, n_words=args.words, n_topics=20,
                         doc_length=100.0, seed=0)
        for n in args.workers:
            for k in args.topics:
                for b in args.batches:
                    rows.append(cell(store, n, k, b, args))
                    print(json.dumps(rows[-1]), flush=True)
    out = RESULTS / "iteration_model.json"
    out.write_text(json.dumps({
        "command": " ".join(["nice -n 5 python benchmarks/iteration_model.py", *sys.argv[1:]]),
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                    "contended": "shared with other developers' jobs: seconds are contended"},
        "validated": "no: constants only, no prediction was checked",
        "args": vars(args), "rows": rows}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
