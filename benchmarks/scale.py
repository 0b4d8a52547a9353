"""Scale: an LDA iteration's cost and memory by K x W, driver vs workers, and as cores are added.

A generated corpus: documents of 300 tokens, words drawn from a Zipf law
(p_w proportional to (w + 1)^-1.07 over W words), written to a Zarr store.
Each cell (K, W, minibatch, placement, workers) runs in its own process (so
peak RSS is the cell's own) on a LocalCluster of single-threaded worker
processes: SCIR, ``--sweeps`` Gibbs sweeps, ``--warmup`` iterations not
timed, then ``--iterations`` timed. Reported per cell: median seconds per
iteration, token-sweeps per second (tokens x sweeps / s), the median time
split (``dscir.engine.parts.Timing``), driver peak RSS and the largest
worker peak RSS (ru_maxrss), the load average before and after. A cell that
fails (e.g. out of memory) is recorded with its error. Writes
benchmarks/results/scale.json and scale.png.

That driver figure is the chain's alone (``Chain.step`` driven directly), not
what a user runs: the older result files (scale*.json without
``chain_only_driver_peak_rss_mb``) call it ``driver_peak_rss_mb``, and it
leaves out building the fitted topics. With ``--api`` every cell also runs
what a user runs, each in its own process: ``LDA.fit(store, n_workers=...)``
(the same settings; its embedded LocalCluster's scheduler is in the driver
process), then ``top_words(10)`` + ``transform`` of ``--transform-docs``
documents + ``score``, with the driver's peak RSS (VmHWM, reset before each
call) over the fit (``api_fit_driver_peak_rss_mb``), over each call after it
(``api_top_words_...``, ``api_transform_...``, ``api_score_driver_peak_rss_mb``)
and their maximum (``api_use_driver_peak_rss_mb``), beside its resident set
after the imports (``api_baseline_rss_mb``) and after the fit;
and ``dscir fit lda ... --out RUN`` end to end, its process's peak RSS polled
every 0.1 s (``cli_driver_peak_rss_mb``). The chain-only figure stays beside
them as ``chain_only_driver_peak_rss_mb``.

    python benchmarks/scale.py [--topics 100 1000] [--words 10000 100000]
        [--batches 50 1000] [--workers 1 2] [--docs 2000] [--api]

With ``--grid`` it runs the scale grid over cores instead (``_scale_grid``): both
cells over 1, 2, 4, ... cores as workers and as threads of one worker, with
the serial share and the per-part overhead of each; ``--grid --help`` for
its flags; it writes ``results/scale_cores.json`` and its PNG.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import ROOT, cpu_model

RESULTS = ROOT / "benchmarks" / "results"
SPLIT = ("wall", "compute", "transfer", "queue", "update", "compute_sum")
DOC_TOKENS = 300
RAM_SHARE = 0.6  # a cell whose K x W state needs more of the machine's RAM is not run


def machine_ram_gb() -> float:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9
ZIPF = 1.07


def make_corpus(path: Path, n_docs: int, n_words: int, seed: int = 0) -> None:
    """``n_docs`` documents of DOC_TOKENS Zipf-distributed words (10 % held out)."""
    import scipy.sparse as sp

    from dscir.corpus import split_heldout, write_corpus

    rng = np.random.default_rng(seed)
    p = (np.arange(n_words) + 1.0) ** -ZIPF
    tokens = rng.choice(n_words, size=(n_docs, DOC_TOKENS), p=p / p.sum())
    rows = np.repeat(np.arange(n_docs), DOC_TOKENS)
    counts = sp.csr_matrix((np.ones(rows.size, np.int32), (rows, tokens.ravel())),
                           shape=(n_docs, n_words))
    counts.sum_duplicates()
    write_corpus(path, counts, vocabulary=[f"w{i}" for i in range(n_words)], chunk_docs=256)
    split_heldout(path, every=10)


def _cpu_s() -> float:
    """This process's CPU seconds so far (user + system, all its threads)."""
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def run_cell(store: str, k: int, batch: int, placement: str, n_workers: int, args) -> dict:
    """One cell, in this process: the timed iterations' medians, the CPU seconds
    of the workers and the driver per timed iteration, and the peaks."""
    from distributed import Client, LocalCluster

    from dscir.api import LDA
    from dscir.engine.chain import Chain
    from dscir.engine.dask import DaskExecutor
    from dscir.models.lda import LDAModel

    cfg = LDA(n_topics=k, sampler="scir", sweeps=args.sweeps, batch_size=batch, seed=0,
              placement=placement, kernel=args.kernel, scir_step=args.scir_step,
              policy="reference").chain_config(store)
    threads = getattr(args, "threads", 1)
    with LocalCluster(n_workers=n_workers, threads_per_worker=threads, dashboard_address=None,
                      memory_limit=0) as cluster, Client(cluster) as client:
        chain = Chain(LDAModel, cfg, store, DaskExecutor(client, store, "lda",
                                                  model_resident=True))
        chain.executor.runners = getattr(args, "control", "runners") == "runners"
        total = args.warmup + args.iterations
        for i in range(total):
            if i == args.warmup:
                cpu = (sum(client.run(_cpu_s).values()), _cpu_s())
            chain.step(prefetch=i + 1 < total)
        cpu = (sum(client.run(_cpu_s).values()) - cpu[0], _cpu_s() - cpu[1])
        chain.close()
        worker_rss = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    h = chain.history[args.warmup:]
    med = {f: float(np.median([s[f] for s in h])) for f in SPLIT}
    tokens = float(np.median([s["n_tokens"] for s in h]))
    return {"placement": chain.model.placement, "kernel": chain.model.kernel,
            "scir_step": cfg.scir_step, "s_per_iteration": med["wall"],
            "control": "runners" if chain.executor.runners else "tasks",
            "token_sweeps_per_s": tokens * args.sweeps / med["wall"],
            "docs_per_s": batch / med["wall"], "split": med,
            "worker_cpu_s_per_iteration": cpu[0] / args.iterations,
            "driver_cpu_s_per_iteration": cpu[1] / args.iterations,
            "chain_only_driver_peak_rss_mb":
                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "worker_peak_rss_mb": max(worker_rss.values()) / 1024}


def peak_rss_mb(pid: int | str = "self") -> float:
    """A process's peak resident set (VmHWM: since it started or the last reset), MB."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(x.split()[1]) for x in f if x.startswith("VmHWM")) / 1024


def rss_mb() -> float:
    """This process's resident set now (VmRSS), MB."""
    with open("/proc/self/status") as f:
        return next(int(x.split()[1]) for x in f if x.startswith("VmRSS")) / 1024


def reset_peak_rss() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def lda(k: int, batch: int, placement: str, args):
    from dscir.api import LDA

    return LDA(n_topics=k, sampler="scir", sweeps=args.sweeps, batch_size=batch,
               n_iter=args.warmup + args.iterations, seed=0, placement=placement,
               kernel=args.kernel, scir_step=args.scir_step, policy="reference",
               progress=False)


def run_api_cell(store: str, k: int, batch: int, placement: str, n_workers: int,
                 args) -> dict:
    """``LDA.fit`` as a user runs it, then top words, a transform and the score: the
    driver's resident memory after the imports (the baseline) and after the fit,
    its peak over the fit and over each call after it (and their maximum)."""
    from dscir.api import fitted
    from dscir.corpus import Corpus

    est = lda(k, batch, placement, args)
    out = {"api_baseline_rss_mb": rss_mb()}
    reset_peak_rss()
    start = time.time()
    est.fit(store, n_workers=n_workers)
    out.update(api_fit_s=time.time() - start, api_fit_driver_peak_rss_mb=peak_rss_mb(),
               api_after_fit_rss_mb=rss_mb(), api_topic_word_lazy=fitted.is_lazy(est.topic_word_))
    c = Corpus.open(store)
    docs = c.read(np.arange(min(args.transform_docs, c.n_docs)))
    calls = {"top_words": lambda: est.top_words(10), "transform": lambda: est.transform(docs),
             "score": lambda: est.score(n_workers=n_workers)}
    start, values = time.time(), {}
    for name, call in calls.items():
        reset_peak_rss()
        values[name] = call()
        out[f"api_{name}_driver_peak_rss_mb"] = peak_rss_mb()
    out["api_use_driver_peak_rss_mb"] = max(out[f"api_{n}_driver_peak_rss_mb"] for n in calls)
    return {**out, "api_use_s": time.time() - start,
            "api_transform_docs": int(values["transform"].shape[0]),
            "api_score": values["score"]}


def run_cli_cell(store: str, k: int, batch: int, placement: str, n_workers: int, args,
                 tmp: str) -> dict:
    """``dscir fit lda`` end to end (run written to ``tmp``): its peak RSS, polled."""
    cmd = [sys.executable, "-m", "dscir", "fit", "lda", store, f"--topics={k}",
           "--sampler=scir", f"--sweeps={args.sweeps}", f"--batch-size={batch}",
           f"--iterations={args.warmup + args.iterations}", "--seed=0",
           f"--placement={placement}", f"--kernel={args.kernel}",
           f"--scir-step={args.scir_step}", "--policy=reference",
           "--no-progress", f"--workers={n_workers}", "--top=10", f"--out={tmp}/run"]
    start, peak = time.time(), 0.0
    with open(f"{tmp}/stderr", "w+") as err:  # a file: a full pipe would stall the fit
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, text=True)
        while proc.poll() is None:
            try:
                peak = max(peak, peak_rss_mb(proc.pid))
            except (OSError, StopIteration):
                pass
            time.sleep(0.1)
        err.seek(0)
        err = err.read().strip().splitlines()
    out = {"cli_s": time.time() - start, "cli_driver_peak_rss_mb": peak}
    return out if proc.returncode == 0 else {**out, "cli_error": (err or ["?"])[-1][-300:]}


def cell_main(argv: list[str]) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("store")
    for name in ("topics", "batch", "workers", "sweeps", "warmup", "iterations",
                 "transform_docs"):
        p.add_argument(f"--{name}", type=int, required=True)
    p.add_argument("--threads", type=int, default=1, help="threads per worker")
    p.add_argument("--control", choices=("runners", "tasks"), default="runners",
                   help="resident rounds through the workers' runners or as tasks")
    p.add_argument("--placement", required=True)
    p.add_argument("--kernel", required=True)
    p.add_argument("--scir_step", required=True)
    p.add_argument("--mode", choices=("chain", "api", "cli"), required=True)
    a = p.parse_args(argv)
    cell = (a.store, a.topics, a.batch, a.placement, a.workers, a)
    if a.mode == "cli":
        with tempfile.TemporaryDirectory() as tmp:
            out = run_cli_cell(*cell, tmp)
    else:
        out = (run_api_cell if a.mode == "api" else run_cell)(*cell)
    print("RESULT " + json.dumps(out))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--topics", type=int, nargs="+", default=[100, 1000])
    p.add_argument("--words", type=int, nargs="+", default=[10_000, 100_000])
    p.add_argument("--batches", type=int, nargs="+", default=[50, 1000])
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--placements", nargs="+", default=["driver", "workers"])
    p.add_argument("--docs", type=int, default=2000)
    p.add_argument("--sweeps", type=int, default=20)
    p.add_argument("--kernel", default="auto", choices=("auto", "dense", "sparse"),
                   help="the Gibbs kernel of every cell (auto: by K)")
    p.add_argument("--scir-step", default="dense", choices=("auto", "dense", "lazy"),
                   help="the SCIR step of every cell (dense: the library's default)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--iterations", type=int, default=5)
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per cell")
    p.add_argument("--api", action="store_true",
                   help="also run LDA.fit + top_words + transform + score and `dscir fit lda`")
    p.add_argument("--transform-docs", type=int, default=1000)
    p.add_argument("--modes", nargs="+", choices=("chain", "api", "cli"),
                   default=["chain", "api", "cli"], help="what each cell runs, with --api")
    p.add_argument("--out", default=str(RESULTS / "scale.json"))
    p.add_argument("--commit", default="", help="recorded when ROOT is not a git checkout")
    args = p.parse_args()
    cells = []
    with tempfile.TemporaryDirectory() as tmp:
        for w in args.words:
            store = Path(tmp) / f"zipf-{w}.zarr"
            make_corpus(store, args.docs, w)
            for k in args.topics:
                for batch in args.batches:
                    for workers in args.workers:
                        for placement in args.placements:
                            cells.append(one_cell(store, k, w, batch, workers, placement, args))
                            print(json.dumps(cells[-1]), flush=True)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    result = {"command": " ".join([Path(sys.executable).name, *sys.argv]),
              "commit": commit or args.commit,
              "cpu": cpu_model(), "n_cpus": os.cpu_count(),
              "note": "shared machine: other jobs ran beside it (see each cell's load)",
              "doc_tokens": DOC_TOKENS, "zipf": ZIPF, "n_docs": args.docs,
              "sweeps": args.sweeps, "kernel": args.kernel, "scir_step": args.scir_step,
              "warmup": args.warmup,
              "iterations": args.iterations, "transform_docs": args.transform_docs if args.api
              else None, "modes": args.modes if args.api else ["chain"], "cells": cells}
    Path(args.out).write_text(json.dumps(result, indent=1))
    plot(result, Path(args.out).with_suffix(".png"))


def one_cell(store: Path, k: int, w: int, batch: int, workers: int, placement: str,
             args) -> dict:
    cell = {"topics": k, "words": w, "batch": batch, "workers": workers,
            "asked_placement": placement, "load_before": os.getloadavg()}
    state_gb, ram_gb = k * w * 8 / 1e9, machine_ram_gb()
    if state_gb > RAM_SHARE * ram_gb:
        cell["error"] = (f"not run: the K x W float64 state alone is {state_gb:.0f} GB, more "
                         f"than {RAM_SHARE:.0%} of this machine's {ram_gb:.0f} GB of RAM (the "
                         f"blocks need {state_gb / workers:.0f} GB per worker on {workers})")
        return cell
    start = time.time()
    for mode in args.modes if args.api else ("chain",):
        cmd = [sys.executable, __file__, "--cell", str(store), f"--topics={k}",
               f"--batch={batch}", f"--workers={workers}", f"--sweeps={args.sweeps}",
               f"--warmup={args.warmup}", f"--iterations={args.iterations}",
               f"--placement={placement}", f"--kernel={args.kernel}",
               f"--scir_step={args.scir_step}", f"--mode={mode}",
               f"--transform_docs={args.transform_docs}"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
            if lines:
                cell.update(json.loads(lines[-1][7:]))
            else:
                cell[f"{mode}_error"] = (proc.stderr.strip().splitlines()
                                         or ["no output"])[-1][-300:]
        except subprocess.TimeoutExpired:
            cell[f"{mode}_error"] = f"did not finish in {args.timeout:.0f} s"
    cell.update(seconds=time.time() - start, load_after=os.getloadavg())
    return cell


def plot(result: dict, path: Path) -> None:
    """Seconds per iteration and driver peak RSS of the cells that ran, in run order:
    the chain's alone and, where measured, a user's ``LDA.fit`` and the calls after it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [c for c in result["cells"] if "s_per_iteration" in c]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    x = np.arange(len(ok))
    for placement, marker in (("driver", "o"), ("workers", "s")):
        at = [i for i, c in enumerate(ok) if c["placement"] == placement]
        axes[0].plot(x[at], [ok[i]["s_per_iteration"] for i in at], marker, label=placement)
        axes[1].plot(x[at], [ok[i].get("chain_only_driver_peak_rss_mb",
                                       ok[i].get("driver_peak_rss_mb")) for i in at],
                     marker, label=f"{placement}: chain only", fillstyle="none")
        for key, m in (("api_fit_driver_peak_rss_mb", "^"), ("api_use_driver_peak_rss_mb", "v"),
                       ("cli_driver_peak_rss_mb", "x")):
            got = [i for i in at if key in ok[i]]
            if got:
                axes[1].plot(x[got], [ok[i][key] for i in got], m,
                             label=f"{placement}: {key.replace('_driver_peak_rss_mb', '')}")
    labels = [f"K{c['topics']} W{c['words']} B{c['batch']} w{c['workers']}" for c in ok]
    for ax in axes:
        ax.set_xticks(x, labels, rotation=90, fontsize=6)
    axes[0].set_ylabel("median seconds per iteration")
    axes[1].set_ylabel("driver peak RSS (MB)")
    axes[0].set_yscale("log")
    for ax in axes:
        ax.legend(fontsize=6)
    fig.suptitle(f"LDA SCIR on Zipf corpora ({result['n_docs']} docs x {DOC_TOKENS} tokens, "
                 f"{result['sweeps']} sweeps), shared 2-core machine")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--cell":
        cell_main(sys.argv[2:])
    elif len(sys.argv) > 1 and sys.argv[1] == "--grid":
        from _scale_grid import grid_main

        grid_main(sys.argv[2:])
    elif len(sys.argv) > 1 and sys.argv[1] == "--plot":
        plot(json.loads(Path(sys.argv[2]).read_text()), Path(sys.argv[2]).with_suffix(".png"))
    else:
        main()
