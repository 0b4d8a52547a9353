"""Worker memory (issue 36): each worker's resident memory per topic-word entry,
with the topics on the workers, and its projection to K = 1,000 x W = 10^6.

Each cell (K, W) runs in its own process against a new 2-worker embedded
LocalCluster (``dscir.engine.cluster.dask_client``, as ``LDA.fit(n_workers=2)``
starts): ``LDA.fit`` (SCIR, dense step, ``placement="workers"``, every
iteration kept: burn_in 0, thin 1, so the kept-sample sums are resident as in
a long run), then ``top_words(10)``, ``transform`` of ``--transform-docs``
documents and ``score`` on the same cluster. Per phase, each worker's peak
resident set (VmHWM, reset on the worker's pid before the phase); during the
fit, polled every 0.2 s, the largest number of bytes Dask holds on a worker
(``sizeof`` of its keys in memory) and the most topic blocks (keys named
``block``) a worker holds at once. Per cell also the peak of the pure block
functions (``block_accounting``: tracemalloc of one K x width block's start,
step, keep and outputs, in words of 8 bytes per entry of the block).

The projection (``projections``) of the largest per-worker peak over all
phases to K x W = 10^9 over 2 workers: a least-squares line against the
entries each worker holds (K x W / workers; slope / 8 = words per entry,
intercept = fixed overhead), and a two-term model that separates the blocks'
2 words per entry from a Gibbs task's K x U columns. ``--label`` names the
code measured (e.g. "before", "after"); a run adds its sizes to that label's
cells (replacing a size measured again), other labels are kept.

    nice -n 10 python benchmarks/worker_memory.py --label after [--words 20000 50000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, cpu_model  # noqa: E402
from scale import DOC_TOKENS, ZIPF, make_corpus  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "worker_memory.json"
TARGET_ENTRIES = 1000 * 10**6  # K = 1,000 x W = 10^6
TARGET_WORKERS = 2


def worker_hwm_mb(pid: int) -> float:
    """A process's peak resident set since its last reset (VmHWM), MB."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(x.split()[1]) for x in f if x.startswith("VmHWM")) / 1024


def reset_hwm(pid: int) -> None:
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def held(dask_worker) -> tuple[int, int]:
    """(bytes Dask holds on this worker, topic blocks among its keys)."""
    from dask.sizeof import sizeof

    data = dask_worker.data
    keys = list(data.keys())
    n_bytes = sum(sizeof(data[k]) for k in keys if k in data)
    return n_bytes, sum("block" in str(k[0] if isinstance(k, tuple) else k) for k in keys)


class HeldPoller:
    """Polls every worker's ``held`` figures from a thread; keeps their maxima."""

    def __init__(self, client, every: float = 0.2):
        self.client, self.every = client, every
        self.peak: dict[str, list[int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                for addr, (b, n) in self.client.run(held).items():
                    old = self.peak.get(addr, [0, 0])
                    self.peak[addr] = [max(old[0], b), max(old[1], n)]
            except Exception:  # the cluster closing under the poll
                return
            self._stop.wait(self.every)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def estimator(k: int, args):
    from dscir.api import LDA

    return LDA(n_topics=k, sampler="scir", sweeps=args.sweeps, batch_size=args.batch,
               n_iter=args.iterations, burn_in=0, thin=1, seed=0, placement="workers",
               scir_step="dense", policy="reference", progress=False)


def run_cell(store: str, k: int, w: int, args) -> dict:
    """One cell in this process: each worker's peak per phase (MB)."""
    from dscir.corpus import Corpus
    from dscir.engine.cluster import dask_client
    from dscir.models.column_blocks import block_bounds
    from dscir.models.lda.config import BLOCK_ENTRIES

    est = estimator(k, args)
    docs = Corpus.open(store).read(np.arange(args.transform_docs))
    calls = {"fit": lambda c: est.fit(store, client=c),
             "top_words": lambda c: est.top_words(10),
             "transform": lambda c: est.transform(docs, client=c),
             "score": lambda c: est.score(client=c)}
    out: dict = {"phases": {}}
    with dask_client(n_workers=args.workers, dashboard_address=None) as client:
        pids = client.run(os.getpid)
        pids = dict(sorted(pids.items()))  # figures per worker: lists in address order
        out["start_rss_mb"] = [worker_hwm_mb(p) for p in pids.values()]
        for name, call in calls.items():
            for p in pids.values():
                reset_hwm(p)
            start = time.time()
            with HeldPoller(client) as poll:
                call(client)
            out["phases"][name] = {"s": time.time() - start, "worker_peak_rss_mb":
                                   [worker_hwm_mb(p) for p in pids.values()]}
            if name == "fit":
                peak = [poll.peak.get(a, [0, 0]) for a in pids]
                out["phases"][name]["dask_held_peak_mb"] = [v[0] / 2**20 for v in peak]
                out["phases"][name]["blocks_held_peak"] = [v[1] for v in peak]
    out["worker_peak_rss_mb"] = max(max(p["worker_peak_rss_mb"])
                                    for p in out["phases"].values())
    out["n_blocks"] = int(block_bounds(k, w, BLOCK_ENTRIES).size - 1)
    return out


def traced_words(fn, *args, entries: int) -> tuple[float, object]:
    """``fn(*args)`` and its peak of new traced bytes (beside what its arguments
    already hold) in words of 8 bytes per entry."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    value = fn(*args)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak / 8 / entries, value


def block_accounting(k: int, width: int, seed: int = 0) -> dict:
    """Peak new memory of the pure block functions on one K x ``width`` block, in
    words per entry: start, a step with counts on every tenth column, a keep,
    the fitted mean's output (what a worker computes per block)."""
    import functools

    from dscir.models.lda import vocabulary_blocks as vb
    from dscir.models.lda.tasks import SparseCounts
    from dscir.samplers import get_sampler

    sampler, n = get_sampler("scir"), k * width
    init = functools.partial(vb.init_block, seed, k, sampler)
    out = {}
    out["start"], block = traced_words(vb.start_block, 0, 0, width, init, entries=n)
    rng = np.random.default_rng(seed)
    words = np.arange(0, width, 10, dtype=np.int32)
    topics = rng.integers(0, k, words.size).astype(np.int32)
    counts = SparseCounts(words, topics, np.ones(words.size, np.int64), 1, int(words.size))
    step = (sampler, 0.5, 1.0, 0.5, seed, 1, None, (counts, None))
    out["step"], block = traced_words(vb.step_block, block, *step, entries=n)
    norm = vb.combine([block.lse])
    out["keep"], block = traced_words(vb.keep_block, block, norm, entries=n)
    out["phi_mean"], _ = traced_words(vb.block_output, block, "phi_mean", 1, norm, entries=n)
    return out


def gibbs_accounting(store: str, k: int, n_docs: int, sweeps: int) -> dict:
    """Peak new memory of one worker's Gibbs task (``gibbs_from_columns``, sparse
    kernel, float32 columns as cut) on the store's first ``n_docs`` documents,
    beside its columns, in words of 8 bytes per K x U entry."""
    from dscir.corpus import Corpus
    from dscir.models.lda.vocabulary_blocks import gibbs_from_columns

    batch = Corpus.open(store).read(np.arange(n_docs))
    words = np.unique(batch.indices).astype(np.int64)
    cols = np.random.default_rng(0).random((k, words.size)).astype(np.float32)
    args = (batch, words, words, cols, 0.1, sweeps, 1, 0, "sparse")
    gibbs_from_columns(*args)  # compiled
    peak, _ = traced_words(gibbs_from_columns, *args, entries=k * words.size)
    return {"part_docs": n_docs, "part_words": int(words.size), "words_per_k_u_entry": peak}


def account(args) -> None:
    """``--account``: only the in-process accounting (blocks and a Gibbs task) of
    the code on PYTHONPATH, stored as ``accounting`` of ``--label``."""
    out = {"block_words_per_entry": block_accounting(args.topics, args.block_width),
           "gibbs": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for w in args.words:
            store = Path(tmp) / f"zipf-{w}.zarr"
            make_corpus(store, args.docs, w)
            out["gibbs"][str(w)] = gibbs_accounting(str(store), args.topics,
                                                    args.batch // args.workers, args.sweeps)
    path = Path(args.out)
    result = json.loads(path.read_text()) if path.exists() else {}
    result.setdefault("runs", {}).setdefault(args.label, {})["accounting"] = out
    path.write_text(json.dumps(result, indent=1))


def part_words(n_words: int, n_docs: int, seed: int = 0) -> int:
    """Distinct words U of ``n_docs`` documents of the benchmark's Zipf law: the
    columns of one worker's Gibbs task (a minibatch / workers documents)."""
    rng = np.random.default_rng(seed)
    p = (np.arange(n_words) + 1.0) ** -ZIPF
    return int(np.unique(rng.choice(n_words, size=(n_docs, DOC_TOKENS), p=p / p.sum())).size)


def projections(cells: list[dict], workers: int, batch: int) -> dict:
    """The largest per-worker peak at K x W = 10^9 over 2 workers, two ways.

    ``linear``: peak = fixed + slope x entries per worker (least squares), as if
    every byte grew with W: an upper bound, since a Gibbs task's K x U columns
    grow with the part's distinct words U, which grow slower than W.
    ``two_terms``: peak = fixed + 16 bytes x entries per worker (the blocks' log
    theta and kept phi sum, what Dask holds) + g x K x U (a Gibbs task's
    columns, U of ``part_words``), fixed and g by least squares."""
    target, n_docs = TARGET_ENTRIES / TARGET_WORKERS, batch // workers
    entries = np.array([c["topics"] * c["words"] / workers for c in cells], float)
    ku = np.array([c["topics"] * part_words(c["words"], n_docs) for c in cells], float)
    peak = np.array([c["worker_peak_rss_mb"] for c in cells], float) * 2**20
    slope, fixed = np.polyfit(entries, peak, 1)
    g, fixed2 = np.polyfit(ku, peak - 16.0 * entries, 1)
    ku_target = cells[0]["topics"] * part_words(TARGET_ENTRIES // cells[0]["topics"], n_docs)
    return {"linear": {"bytes_per_entry": slope, "words_per_entry": slope / 8,
                       "fixed_mb": fixed / 2**20,
                       "worker_peak_gb": (fixed + slope * target) / 1e9},
            "two_terms": {"part_words": [int(x) for x in ku / cells[0]["topics"]],
                          "part_words_at_target": int(ku_target / cells[0]["topics"]),
                          "bytes_per_k_u_entry": g, "fixed_mb": fixed2 / 2**20,
                          "worker_peak_gb": (fixed2 + 16.0 * target + g * ku_target) / 1e9},
            "target": "K = 1,000 x W = 10^6 over 2 workers: 5 x 10^8 entries a worker"}


def cell_main(argv: list[str]) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("store")
    for name in ("topics", "words", "workers", "batch", "sweeps", "iterations",
                 "transform_docs"):
        p.add_argument(f"--{name.replace('_', '-')}", type=int, required=True)
    a = p.parse_args(argv)
    out = run_cell(a.store, a.topics, a.words, a)
    print("RESULT " + json.dumps(out))


def one_cell(store: Path, k: int, w: int, args) -> dict:
    cmd = [sys.executable, __file__, "--cell", str(store), f"--topics={k}", f"--words={w}",
           f"--workers={args.workers}", f"--batch={args.batch}", f"--sweeps={args.sweeps}",
           f"--iterations={args.iterations}", f"--transform-docs={args.transform_docs}"]
    cell = {"topics": k, "words": w, "workers": args.workers, "load_before": os.getloadavg()}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    if proc.returncode or not lines:
        raise RuntimeError(f"cell K={k} W={w} failed: {proc.stderr[-2000:]}")
    cell.update(json.loads(lines[-1][7:]))
    cell["block_words_per_entry"] = block_accounting(k, args.block_width)
    cell["load_after"] = os.getloadavg()
    return cell


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--cell":
        return cell_main(sys.argv[2:])
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--label", required=True, help="the code measured, e.g. before / after")
    p.add_argument("--topics", type=int, default=1000)
    p.add_argument("--words", type=int, nargs="+", default=[20_000, 50_000])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--docs", type=int, default=2000)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--sweeps", type=int, default=10)
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--transform-docs", type=int, default=1000)
    p.add_argument("--block-width", type=int, default=4194, help="of block_accounting")
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--commit", default="", help="the code measured, when ROOT is a copy")
    p.add_argument("--account", action="store_true", help="only the in-process accounting")
    args = p.parse_args()
    if args.account:
        return account(args)
    cells = []
    with tempfile.TemporaryDirectory() as tmp:
        for w in args.words:
            store = Path(tmp) / f"zipf-{w}.zarr"
            make_corpus(store, args.docs, w)
            cells.append(one_cell(store, args.topics, w, args))
            print(json.dumps(cells[-1]), flush=True)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    path = Path(args.out)
    result = json.loads(path.read_text()) if path.exists() else {}
    run = result.setdefault("runs", {}).get(args.label, {})
    cells = sorted([c for c in run.get("cells", []) if c["words"] not in args.words] + cells,
                   key=lambda c: c["words"])  # a rerun of a size replaces it
    command = " ".join([Path(sys.executable).name, *sys.argv])
    result["runs"][args.label] = {
        **run, "commands": run.get("commands", []) + [command],
        "commit": args.commit or commit, "cpu": cpu_model(), "n_cpus": os.cpu_count(),
        "note": "shared machine, contended (see each cell's load): seconds are not "
                "comparable; the memory figures are the workers' own",
        "cells": cells, "projection": projections(cells, args.workers, args.batch)}
    path.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
