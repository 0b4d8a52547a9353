"""Out of core: an LDA fit on a corpus larger than the workers' memory.

A corpus drawn from LDA (``dscir.corpus.synthetic``: K_true topics over W
words, documents of Poisson(length) tokens) is written block by block to a
Zarr store whose decoded entries (what resident shards would hold: 8 bytes an
entry) are ``--ratio`` times the workers' memory limits together. A
LocalCluster of ``--workers`` single-threaded worker processes, each started
with Dask's ``memory_limit`` (the nanny kills a worker past 95 % of it; no
cgroup: see the JSON's ``cgroup`` note), fits LDA through the public API with
the default policy except the minibatch (``--batch``, so that a pass is a
manageable number of iterations), for ``--passes`` passes, scoring held-out
perplexity every ``--eval-every`` iterations. The same settings then fit a
small sample of the same corpus (the store's first ``--sample-docs``
documents: the generator draws block by block, so it is the big store's
prefix) for the same number of iterations.

Recorded: how the fit chose to read the documents (``LDA``'s executor's
``reads``), whether any worker died or was restarted (worker pids and
addresses before and after; the nannies' and scheduler's logs searched for
restarts, kills and pauses), Dask's spilled bytes and managed memory (each
worker's metrics, polled every second), worker peak RSS (VmHWM of each worker
process, polled) and the driver's peak RSS, seconds per pass and per
iteration (contended: the machine is shared; labelled so), the held-out
perplexity at each evaluation for both fits, and the stores' decoded and
on-disk sizes. Writes benchmarks/results/out_of_core.json and .png.

    nice -n 5 python benchmarks/out_of_core.py [--worker-mib 512] [--ratio 2.1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import threading
import time
from pathlib import Path

import numpy as np

from _common import RESULTS, cpu_model

MIB = 2 ** 20
LOG_SIGNS = ("restart", "kill", "terminat", "pausing worker", "remove worker", "lost")


def vm_kb(pid: int | str, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(x.split()[1]) for x in f if x.startswith(field))


def du_bytes(path: Path) -> int:
    return int(subprocess.run(["du", "-sb", str(path)], capture_output=True,
                              text=True).stdout.split()[0])


def make_store(path: Path, n_docs: int, args, chunk_docs: int = 256) -> dict:
    """The LDA corpus at ``path`` (kept from an earlier run with the same settings)."""
    from dscir.corpus import Corpus
    from dscir.corpus.synthetic import write_lda_corpus

    settings = dict(n_docs=n_docs, n_words=args.words, n_topics=args.true_topics,
                    doc_length=args.length, seed=0, heldout_every=args.heldout_every,
                    chunk_docs=chunk_docs)
    seconds = None
    try:
        corpus = Corpus.open(path)
        made = corpus.meta["ingest"]
        same = (corpus.n_docs, corpus.n_words, made["n_topics"], made["doc_length"],
                corpus.chunk_docs) == (n_docs, args.words, args.true_topics, args.length,
                                       chunk_docs)
        same = same and corpus.heldout_docs().size == n_docs // args.heldout_every
    except Exception:  # noqa: BLE001 - absent or unreadable: written anew
        same = False
    if not same:
        start = time.perf_counter()
        corpus, _ = write_lda_corpus(path, overwrite=True, **settings)
        seconds = time.perf_counter() - start
    return {"path": str(path), **settings, "nnz": corpus.nnz, "n_tokens": corpus.n_tokens,
            "decoded_bytes": 8 * corpus.nnz + 16 * corpus.n_docs,
            "on_disk_bytes": du_bytes(path), "write_seconds": seconds}


class Poller:
    """Polls each worker's Dask metrics and its process's peak RSS every second."""

    def __init__(self, client, pids: dict[str, int]):
        self.client, self.pids, self.samples = client, pids, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        t0 = time.time()
        while not self._stop.wait(1.0):
            try:
                info = self.client.scheduler_info(n_workers=-1)["workers"]
            except Exception:  # noqa: BLE001 - the cluster is closing
                return
            row = {"t": time.time() - t0}
            for addr, w in info.items():
                m = w.get("metrics", {})
                spilled = m.get("spilled_bytes", {})
                rss = None
                if addr in self.pids:
                    try:
                        rss = vm_kb(self.pids[addr], "VmRSS") * 1024
                    except (OSError, StopIteration):
                        pass
                row[addr] = {"managed": m.get("managed_bytes"), "process": m.get("memory"),
                             "spilled_memory": spilled.get("memory", 0),
                             "spilled_disk": spilled.get("disk", 0), "rss": rss,
                             "status": str(w.get("status"))}
            self.samples.append(row)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def log_lines(client) -> dict[str, list[str]]:
    """Scheduler, worker and nanny log lines that speak of restarts, kills or pauses."""
    out = {}
    sources = {"scheduler": lambda: {"scheduler": client.get_scheduler_logs(n=10_000)},
               "workers": lambda: client.get_worker_logs(n=10_000),
               "nannies": lambda: client.get_worker_logs(n=10_000, nanny=True)}
    for name, get in sources.items():
        lines = []
        for who, logs in get().items():
            lines += [f"{who}: {msg}" for _, msg in logs
                      if any(s in msg.lower() for s in LOG_SIGNS)]
        out[name] = lines
    return out


def worker_peaks(pids: dict[str, int]) -> dict[str, float]:
    out = {}
    for addr, pid in pids.items():
        try:
            out[addr] = vm_kb(pid, "VmHWM") / 1024
        except (OSError, StopIteration):
            out[addr] = None
    return out


def fit(store: str, args, n_iter: int) -> dict:
    """One fit on a new cluster of memory-limited workers, with what it recorded."""
    from distributed import Client, LocalCluster

    from dscir.api import LDA

    limit = args.worker_mib * MIB
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, memory_limit=limit,
                      dashboard_address=None, host="127.0.0.1") as cluster, \
            Client(cluster) as client:
        client.wait_for_workers(args.workers, timeout=300)
        pids = client.run(os.getpid)
        model = LDA(n_topics=args.topics, batch_size=args.batch, n_iter=n_iter, seed=0,
                    eval_every=args.eval_every, progress=False)
        start = time.perf_counter()
        with Poller(client, pids) as poll:
            model.fit(store, client=client)
        seconds = time.perf_counter() - start
        peaks = worker_peaks(pids)
        pids_after = client.run(os.getpid)
        logs = log_lines(client)
    reads = model._chain.executor.reads if getattr(model, "_chain", None) else None
    hist = model.history_
    return {"reads": reads, "seconds": seconds, "n_iter": n_iter,
            "s_per_iteration": [float(x) for x in hist["wall"]],
            "docs_per_iteration": args.batch,
            "evaluations": [[int(e[0]), float(e[1])] for e in model.evaluations_],
            "workers_before": pids, "workers_after": pids_after,
            "same_workers": pids == pids_after, "logs": logs,
            "worker_peak_rss_mib": peaks, "worker_memory_limit_mib": args.worker_mib,
            "samples": poll.samples,
            "config": {k: v for k, v in model.config_.to_dict().items()
                       if isinstance(v, (int, float, str, bool, type(None)))}}


def summary(run: dict) -> dict:
    """The largest spill and managed memory any worker reported, and its peak RSS."""
    rows = [v for s in run["samples"] for k, v in s.items() if k != "t"]
    return {"max_spilled_disk_bytes": max((r["spilled_disk"] or 0 for r in rows), default=0),
            "max_spilled_memory_bytes": max((r["spilled_memory"] or 0 for r in rows),
                                            default=0),
            "max_managed_bytes": max((r["managed"] or 0 for r in rows), default=0),
            "max_polled_rss_mib": max((r["rss"] or 0 for r in rows), default=0) / MIB,
            "paused_samples": sum("paus" in r["status"] for r in rows)}


def columns(samples: list[dict]) -> dict:
    """The polled samples as one list per worker and figure (rows -> columns)."""
    if not isinstance(samples, list) or not samples or "t" not in samples[0]:
        return samples
    workers = sorted({k for row in samples for k in row if k != "t"})
    out = {"t": [round(row["t"], 1) for row in samples]}
    for addr in workers:
        rows = [row.get(addr, {}) for row in samples]
        out[addr] = {key: [r.get(key) for r in rows]
                     for key in ("rss", "managed", "spilled_disk", "spilled_memory")}
        out[addr]["paused"] = sum("paus" in str(r.get("status")) for r in rows)
    return out


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for name, run in (("full store", result["full"]), ("small sample", result["sample"])):
        if run is None:
            continue
        ev = np.array(run["evaluations"])
        if ev.size:
            a.plot(ev[:, 0], ev[:, 1], "o-", label=f"{name} ({run['reads']['reads']})")
    a.set_xlabel("iteration")
    a.set_ylabel("held-out perplexity")
    a.set_title("LDA, default policy, same settings")
    a.legend()
    run = result["full"]
    for addr in run["workers_before"]:
        rss = [(x or 0) / MIB for x in run["samples"][addr]["rss"]]
        b.plot(run["samples"]["t"], rss, label=f"worker {addr.rsplit(':', 1)[-1]} RSS")
    b.axhline(result["worker_mib"], color="k", ls="--", label="memory_limit")
    b.axhline(result["store"]["decoded_bytes"] / MIB / len(run["workers_before"]),
              color="r", ls=":", label="store / workers")
    b.set_xlabel("seconds into the fit (contended)")
    b.set_ylabel("MiB")
    b.set_yscale("log")
    b.set_title(f"store {result['store']['decoded_bytes'] / 2**30:.2f} GiB decoded, "
                f"{result['ratio_to_workers_memory']:.2f}x the workers' memory")
    b.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--worker-mib", type=int, default=512)
    p.add_argument("--ratio", type=float, default=2.1, help="store / workers' memory")
    p.add_argument("--words", type=int, default=10_000)
    p.add_argument("--true-topics", type=int, default=10)
    p.add_argument("--topics", type=int, default=10)
    p.add_argument("--length", type=float, default=300.0)
    p.add_argument("--heldout-every", type=int, default=1000)
    p.add_argument("--batch", type=int, default=20_000)
    p.add_argument("--passes", type=float, default=1.0)
    p.add_argument("--eval-every", type=int, default=11)
    p.add_argument("--sample-docs", type=int, default=100_000)
    p.add_argument("--chunk-docs", type=int, default=16,
                   help="the full store's chunk: a random minibatch reads the chunks it touches")
    p.add_argument("--dir", default="/tmp/dscir-out-of-core")
    p.add_argument("--tag", default="")
    p.add_argument("--only-sample", action="store_true",
                   help="fit the small sample only (out_of_core_sample.json)")
    p.add_argument("--combine", action="store_true",
                   help="samples as columns, the sample fit beside, and the figure")
    args = p.parse_args()
    if args.combine:
        return combine(args)
    where = Path(args.dir)
    where.mkdir(parents=True, exist_ok=True)
    sample = make_store(where / "sample.zarr", args.sample_docs, args)
    per_doc = sample["decoded_bytes"] / args.sample_docs
    memory = args.workers * args.worker_mib * MIB
    n_docs = int(np.ceil(args.ratio * memory / per_doc / 4096)) * 4096
    train = n_docs - n_docs // args.heldout_every
    n_iter = int(round(args.passes * train / args.batch))
    if args.only_sample:
        small = fit(sample["path"], args, n_iter)
        small["samples"] = columns(small["samples"])
        out = RESULTS / f"out_of_core_sample{args.tag}.json"
        out.write_text(json.dumps({"command": COMMAND + " --only-sample",
                                   "machine": {"cpu": cpu_model(), "cores": os.cpu_count()},
                                   "sample": {**small, "summary": summary_columns(small)},
                                   "sample_store": sample, "args": vars(args)},
                                  indent=1, default=str))
        return None
    store = make_store(where / "full.zarr", n_docs, args, args.chunk_docs)
    print(json.dumps({k: store[k] for k in ("n_docs", "nnz", "decoded_bytes",
                                            "on_disk_bytes", "write_seconds")}), flush=True)
    full = fit(store["path"], args, n_iter)
    print(json.dumps({"full_seconds": full["seconds"], "evals": full["evaluations"]}),
          flush=True)
    record(args, store, sample, memory, train, n_iter, full, None)
    small = fit(sample["path"], args, n_iter)
    record(args, store, sample, memory, train, n_iter, full, small)


def record(args, store, sample, memory, train, n_iter, full, small) -> dict:
    """Write the JSON (and the PNG once both fits ran)."""
    result = {"machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                          "contended": "shared with other developers' jobs; run under nice "
                                       "-n 5; seconds are contended",
                          "load_average_after": os.getloadavg()},
              "cgroup": "not used: cgroup v1 here, and the session's memory cgroup belongs "
                        "to the machinery that runs it; limits are Dask's memory_limit "
                        "(the nanny terminates a worker past 95 %)",
              "worker_mib": args.worker_mib, "workers": args.workers,
              "store": store, "sample_store": sample,
              "ratio_to_workers_memory": store["decoded_bytes"] / memory,
              "pass_iterations": train / args.batch,
              "seconds_per_pass": full["seconds"] / (n_iter * args.batch / train),
              "iteration_seconds_per_pass": sum(full["s_per_iteration"]) / (
                  n_iter * args.batch / train),
              "driver_peak_rss_mib": vm_kb("self", "VmHWM") / 1024,
              "full": {**full, "summary": summary(full)},
              "sample": small and {**small, "summary": summary(small)}, "args": vars(args)}
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"out_of_core{args.tag}.json"
    out.write_text(json.dumps(result, indent=1, default=str))
    if small is not None:
        plot(result, out.with_suffix(".png"))
    print(f"wrote {out}", flush=True)
    return result


COMMAND = "nice -n 5 python benchmarks/out_of_core.py"


def summary_columns(run: dict) -> dict:
    """``summary`` of a run whose samples are columns."""
    workers = [v for a, v in run["samples"].items() if a != "t"]

    def worst(key: str) -> float:
        return max((x or 0 for v in workers for x in v[key]), default=0)

    return {"max_spilled_disk_bytes": worst("spilled_disk"),
            "max_spilled_memory_bytes": worst("spilled_memory"),
            "max_managed_bytes": worst("managed"), "max_polled_rss_mib": worst("rss") / MIB,
            "paused_samples": sum(v["paused"] for v in workers)}


def combine(args) -> None:
    """out_of_core.json with its samples as columns, the sample fit of
    out_of_core_sample.json beside it (when the sample ran on its own), and the figure."""
    out = RESULTS / f"out_of_core{args.tag}.json"
    result = json.loads(out.read_text())
    a = result["args"]
    result["command"] = (f"{COMMAND} --passes {a['passes']:g} --eval-every {a['eval_every']}"
                         f" --batch {a['batch']} --worker-mib {a['worker_mib']} --ratio "
                         f"{a['ratio']:g}; then {COMMAND} --combine")
    result["full"]["samples"] = columns(result["full"]["samples"])
    alone = RESULTS / f"out_of_core_sample{args.tag}.json"
    if result.get("sample") is None and alone.exists():
        result["sample"] = json.loads(alone.read_text())["sample"]
        result["sample_ran"] = f"on its own ({COMMAND} --only-sample), beside the full fit"
    elif result.get("sample") is not None:
        result["sample"]["samples"] = columns(result["sample"]["samples"])
    if result.get("sample") is None:
        result["sample_ran"] = "no: stopped at the session's deadline before it finished"
    out.write_text(json.dumps(result, indent=1, default=str))
    plot(result, out.with_suffix(".png"))


if __name__ == "__main__":
    main()
