"""The driver's part of an LDA iteration (issue 30): where its milliseconds go.

One chain of ``dscir.LDA(n_topics=K)`` under the default policy (SCIR, the
policy's minibatch, 10 sweeps; topics on the driver) on a 2-worker
LocalCluster, kept samples every ``thin`` iterations from the start (burn-in
0, so the keeps after burn-in are in the figure). Per iteration after
``--warmup``:

* the split of ``dscir.engine.parts.Timing`` (compute, transfer, queue and
  ``update``: the driver's own wall time, not blocked on the workers);
* the driver process's CPU seconds (``time.process_time``, all its threads:
  numba's and the client's too), less sensitive to the load than wall time;
* a cProfile of the driver (self time per function, the waits on the
  workers left out): the breakdown of ``update``, and the topics' part of it
  (the SCIR transition, the rest of the step, the phi columns, the divergence
  check, the kept samples; cumulative);
* CPU ms of the topics' parts (``cpu_counts``): the transition, and the
  driver's bookkeeping around it in the main thread's CPU time;
* load-immune counts in-process (``tracemalloc``): the driver's peak of
  transient memory in an iteration above what it held before, in units of
  K x W float64 arrays, and the number of K x W float64 arrays' worth of bytes
  allocated and freed (allocations of at least one K x W array are counted).

The package that runs is the one on ``PYTHONPATH``: run it once on main and
once on a branch, each under its ``--label``; both land in one JSON (with the
load averages of each run) and one PNG. The sum of the final log theta shows
both ran the same chain. The machine is shared: wall figures are contended.

    PYTHONPATH=/work/main python benchmarks/driver_update.py --label main
    python benchmarks/driver_update.py --label branch
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import json
import os
import pstats
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from _common import cpu_model

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
SPLIT = ("wall", "compute", "transfer", "queue", "update")
WAITS = ("acquire", "wait", "sleep", "select", "poll")


def profile_rows(pr: cProfile.Profile, n: int, top: int) -> list[dict]:
    """The driver's self time per function (ms per iteration), waits left out."""
    rows = []
    for (file, line, name), (_, ncalls, tt, _, _) in pstats.Stats(pr).stats.items():
        if any(w in name for w in WAITS):
            continue
        rows.append({"function": f"{Path(file).name}:{line}({name})",
                     "calls_per_iteration": ncalls / n, "ms_per_iteration": 1e3 * tt / n})
    rows.sort(key=lambda r: -r["ms_per_iteration"])
    return rows[:top]


def breakdown(pr: cProfile.Profile, n: int) -> dict[str, float]:
    """Cumulative ms per iteration of the topics' parts of the driver's update
    (names common to main and the branch): the SCIR transition kernel, the rest
    of ``DriverTopics.step`` (counts, scale), the phi columns, the divergence
    check and the kept samples."""
    out = dict.fromkeys(("transition", "step_without_transition", "columns", "finite",
                         "keep"), 0.0)
    for (file, _, name), (_, _, _, ct, _) in pstats.Stats(pr).stats.items():
        base = Path(file).name
        if base == "cir.py" and name.startswith("_transition_"):
            out["transition"] += ct
        elif base == "topics.py" and name in ("step", "columns", "finite", "keep"):
            out["step_without_transition" if name == "step" else name] += ct
    out["step_without_transition"] -= out["transition"]
    return {k: 1e3 * v / n for k, v in out.items()}


def cpu_counts(chain, n: int) -> dict[str, float]:
    """CPU ms per iteration of the topics' parts, by wrapping them on this chain
    (the same names in both trees): the transition (``cir._run``, process CPU:
    numba's threads too) and the driver's bookkeeping around it (the rest of
    ``step``, ``columns``, ``finite``, ``keep``; the main thread's CPU, which
    other processes' load does not add to)."""
    from dscir.samplers import cir

    topics, spent = chain.model.topics, dict.fromkeys(("transition", "bookkeeping"), 0.0)
    run = cir._run

    def timed_run(*a, **kw):
        start, thread = time.process_time(), time.thread_time()
        try:
            return run(*a, **kw)
        finally:
            spent["transition"] += time.process_time() - start
            spent["bookkeeping"] -= time.thread_time() - thread

    def wrap(method):
        def timed(*a, **kw):
            start = time.thread_time()
            try:
                return method(*a, **kw)
            finally:
                spent["bookkeeping"] += time.thread_time() - start
        return timed

    cir._run = timed_run
    for name in ("step", "columns", "finite", "keep"):
        setattr(topics, name, wrap(getattr(topics, name)))
    try:
        for _ in range(n):
            chain.step()
    finally:
        cir._run = run
        for name in ("step", "columns", "finite", "keep"):
            delattr(topics, name)
    return {k: 1e3 * v / n for k, v in spent.items()}


def memory_counts(chain, n: int, kw_bytes: int) -> dict:
    """Peak transient driver memory per iteration (in K x W float64 arrays) and the
    number of allocations of at least one K x W array, by tracemalloc."""
    tracemalloc.start()
    peaks, big = [], []
    try:
        for _ in range(n):
            before = tracemalloc.take_snapshot()
            base, _ = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            chain.step()
            _, peak = tracemalloc.get_traced_memory()
            peaks.append((peak - base) / kw_bytes)
            after = tracemalloc.take_snapshot()
            diff = after.compare_to(before, "traceback")
            big.append(sum(1 for d in diff if d.size_diff >= kw_bytes))
    finally:
        tracemalloc.stop()
    return {"peak_transient_KxW_arrays": float(np.mean(peaks)),
            "retained_KxW_allocations": float(np.mean(big))}


def run(args) -> dict:
    import dscir
    from dscir.engine.chain import Chain
    from dscir.engine.cluster import dask_client
    from dscir.engine.dask import DaskExecutor
    from dscir.models.lda import LDAModel

    cfg = dscir.LDA(n_topics=args.K, seed=0, progress=False).chain_config(args.store)
    cfg = dataclasses.replace(cfg, burn_in=0)
    out = {"package": dscir.__file__, "config": cfg.to_dict(), "load_before": os.getloadavg()}
    with dask_client(n_workers=2, dashboard_address=None) as client:
        chain = Chain(LDAModel, cfg, args.store, DaskExecutor(client, args.store, "lda"))
        for _ in range(args.warmup):
            chain.step()
        cpu, start = time.process_time(), len(chain.history)
        for _ in range(args.iterations):
            chain.step()
        cpu = (time.process_time() - cpu) / args.iterations
        h = chain.history[start:]
        out["per_iteration_ms"] = {f: 1e3 * float(np.mean([r[f] for r in h])) for f in SPLIT}
        out["per_iteration_ms"]["update_median"] = 1e3 * float(np.median([r["update"]
                                                                            for r in h]))
        out["driver_cpu_ms_per_iteration"] = 1e3 * cpu
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(args.profiled):
            chain.step()
        pr.disable()
        out["profile"] = profile_rows(pr, args.profiled, args.top)
        out["topics_breakdown_ms"] = breakdown(pr, args.profiled)
        out["topics_cpu_ms"] = cpu_counts(chain, args.iterations)
        kw = cfg.n_topics * chain.data.n_words * 8
        out["memory"] = memory_counts(chain, args.counted, kw)
        out["iterations_run"] = chain.iteration
        out["state_digest"] = float(chain.model.topics.state_.log_theta.sum())
        chain.close()
    out["load_after"] = os.getloadavg()
    return out


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(result["runs"])
    fig, (a1, a2, a3) = plt.subplots(1, 3, figsize=(14, 4))
    colors = {"compute": "#4c72b0", "transfer": "#dd8452", "queue": "#8c8c8c",
              "update": "#55a868"}
    for j, label in enumerate(labels):
        r, bottom = result["runs"][label], 0.0
        for part, c in colors.items():
            v = r["per_iteration_ms"][part]
            a1.bar(j, v, bottom=bottom, color=c, label=part if j == 0 else None)
            bottom += v
        cpu = r["topics_cpu_ms"]
        a2.bar(j - 0.2, cpu["transition"], 0.4, color="#c44e52",
               label="transition (process CPU)" if j == 0 else None)
        a2.bar(j + 0.2, cpu["bookkeeping"], 0.4, color="#55a868",
               label="bookkeeping (main thread CPU)" if j == 0 else None)
        a3.bar(j, r["memory"]["peak_transient_KxW_arrays"], color="#55a868")
    tick = [f"{k}\nload {result['runs'][k]['load_before'][0]:.1f}" for k in labels]
    a1.set_xticks(range(len(labels)), tick, fontsize=8)
    a1.set_ylabel("ms per iteration (mean, contended)")
    a1.legend(fontsize=8)
    a2.set_xticks(range(len(labels)), labels, fontsize=8)
    a2.set_ylabel("topics' CPU ms per iteration")
    a2.legend(fontsize=8)
    a3.set_xticks(range(len(labels)), labels, fontsize=8)
    a3.set_ylabel("driver's peak transient memory (K x W arrays)")
    fig.suptitle("LDA on ap, default policy, 2 workers: the driver's update", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--label", required=True)
    p.add_argument("--store", default="/tmp/pu/ap/ap.zarr")
    p.add_argument("--K", type=int, default=20)
    p.add_argument("--iterations", type=int, default=100)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--profiled", type=int, default=50)
    p.add_argument("--counted", type=int, default=10)
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--output", default="driver_update")
    args = p.parse_args()
    r = run(args)
    r["command"] = "python benchmarks/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])
    keys = ("per_iteration_ms", "driver_cpu_ms_per_iteration", "topics_breakdown_ms",
            "topics_cpu_ms", "memory", "state_digest", "load_before")
    print(args.label, json.dumps({k: r[k] for k in keys}))
    base = RESULTS / args.output
    path = base.with_suffix(".json")
    result = json.loads(path.read_text()) if path.exists() else {
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count()}, "runs": {}}
    result["command"] = ("python benchmarks/driver_update.py --label LABEL, once per tree "
                         "measured (PYTHONPATH; each run records its package and command)")
    result["runs"][args.label] = r
    path.write_text(json.dumps(result, indent=1))
    plot(result, base.with_suffix(".png"))
    print(f"wrote {path} and .png")


if __name__ == "__main__":
    main()
