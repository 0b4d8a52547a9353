"""Corpus ingestion: time and peak memory, and read throughput of the store.

Ingests the shared wiki corpus (LDA-C, gzip) and generated UCI docword files
of 5, 20 and 50 million tokens, each in a fresh child process that reports its
own peak resident set size (``getrusage(RUSAGE_SELF).ru_maxrss`` at exit) and
its RSS after imports (the baseline). Then reads random 50-document batches
(the driver's minibatch) and scans the whole store block by block.

The generated files go to a temporary directory (``--workdir``), never the
repository: 100,000 documents per 50M tokens, ~250 distinct words a document
drawn from a skewed distribution over 50,000 words, counts 1 + Geometric.

    cd benchmarks && python ingest.py            # ~10 minutes on 2 cores
    -> results/ingest.json, results/ingest.png
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WIKI = next((p / "shared" / "data" / "wiki" for p in ROOT.parents
             if (p / "shared" / "data" / "wiki").is_dir()),
            ROOT.parent / "shared" / "data" / "wiki")
N_WORDS = 50_000
DOC_DISTINCT = 250


def generate_uci(path: Path, n_tokens: int, seed: int = 0) -> dict:
    """A UCI docword file with at least ``n_tokens`` tokens, sorted by document."""
    rng = np.random.default_rng(seed)
    body = path.with_suffix(".body")
    D = nnz = tokens = 0
    with open(body, "w") as f:
        while tokens < n_tokens:
            n = 1000
            lengths = rng.poisson(DOC_DISTINCT, n)
            doc = np.repeat(np.arange(n), lengths)
            word = (N_WORDS * rng.random(doc.size) ** 2).astype(np.int64)
            key = np.unique(doc * N_WORDS + word)
            doc, word = key // N_WORDS, key % N_WORDS
            count = rng.geometric(0.5, key.size)
            rows = np.column_stack([doc + D + 1, word + 1, count])
            f.write(("%d %d %d\n" * rows.shape[0]) % tuple(rows.ravel().tolist()))
            D, nnz, tokens = D + n, nnz + key.size, tokens + int(count.sum())
    with open(path, "w") as out, open(body) as f:
        out.write(f"{D}\n{N_WORDS}\n{nnz}\n")
        shutil.copyfileobj(f, out, 1 << 24)
    body.unlink()
    return {"docs": D, "words": N_WORDS, "nnz": nnz, "tokens": tokens,
            "bytes": path.stat().st_size}


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def child(fmt: str, src: str, out: str, vocab: str | None) -> None:
    """Run one ingestion and print its time and memory as JSON."""
    from dscir.corpus import ingest_ldac, ingest_uci

    if os.environ.get("DSCIR_TRACEMALLOC"):
        tracemalloc.start()
    base = rss_mb()
    start = time.perf_counter()
    if fmt == "ldac":
        c = ingest_ldac(src, vocab, out)
    else:
        c = ingest_uci(src, out)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    traced = tracemalloc.get_traced_memory()[1] / 2**20 if tracemalloc.is_tracing() else None
    print(json.dumps({"seconds": seconds, "peak_rss_mb": peak, "baseline_rss_mb": base,
                      "traced_peak_mb": traced,
                      "docs": c.n_docs, "words": c.n_words, "tokens": c.n_tokens,
                      "nnz": c.nnz}))


def ingest(fmt, src, out, vocab=None) -> dict:
    """Ingest in a child process three times: as is (time, peak RSS); with one
    malloc arena (MALLOC_ARENA_MAX=1: how much of the peak RSS is glibc's
    per-thread arenas keeping freed buffers, zarr encoding in threads); under
    tracemalloc (the peak of live Python and numpy allocations)."""
    cmd = [sys.executable, __file__, "--child", fmt, str(src), str(out)]
    if vocab:
        cmd.append(str(vocab))
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    row = json.loads(res.stdout.strip().splitlines()[-1])
    row["store_bytes"] = sum(p.stat().st_size for p in Path(out).rglob("*") if p.is_file())
    shutil.rmtree(out)
    env = dict(os.environ, MALLOC_ARENA_MAX="1")
    res = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
    row["peak_rss_mb_one_arena"] = json.loads(res.stdout.strip().splitlines()[-1])["peak_rss_mb"]
    shutil.rmtree(out)
    env = dict(os.environ, DSCIR_TRACEMALLOC="1")
    res = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
    row["traced_peak_mb"] = json.loads(res.stdout.strip().splitlines()[-1])["traced_peak_mb"]
    return row


def read_throughput(store, n_batches: int = 300, batch: int = 50, seed: int = 0) -> dict:
    """Reads with the shard cache off and at its default size."""
    from dscir.corpus.store import DEFAULT_CACHE_BYTES

    return {"cache_off": _reads(store, 0, n_batches, batch, seed),
            f"cache_{DEFAULT_CACHE_BYTES >> 20}MiB":
                _reads(store, DEFAULT_CACHE_BYTES, n_batches, batch, seed)}


def _reads(store, cache_bytes, n_batches, batch, seed) -> dict:
    from dscir.corpus import Corpus

    c = Corpus.open(store, cache_bytes=cache_bytes)
    rng = np.random.default_rng(seed)
    batches = [rng.choice(c.n_docs, batch, replace=False) for _ in range(n_batches)]
    c.read(batches[0])
    start = time.perf_counter()
    tokens = 0
    for docs in batches:
        tokens += int(c.read(docs).data.sum())
    rand = time.perf_counter() - start
    start = time.perf_counter()
    scanned = sum(int(b.data.sum()) for _, b in c.iter_blocks())
    scan = time.perf_counter() - start
    assert scanned == c.n_tokens
    return {"random_batch_docs": batch, "n_batches": n_batches,
            "random_docs_per_s": n_batches * batch / rand,
            "random_tokens_per_s": tokens / rand,
            "random_ms_per_batch": 1000 * rand / n_batches,
            "scan_docs_per_s": c.n_docs / scan, "scan_tokens_per_s": c.n_tokens / scan}


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = results["ingest"]
    gen = [r for r in rows if r["input"].startswith("uci")]
    fig, ax = plt.subplots(1, 3, figsize=(13, 3.8))
    x = [r["tokens"] / 1e6 for r in gen]
    ax[0].plot(x, [r["peak_rss_mb"] for r in gen], "o-", label="peak RSS")
    ax[0].plot(x, [r["peak_rss_mb_one_arena"] for r in gen], "o-",
               label="peak RSS, MALLOC_ARENA_MAX=1")
    ax[0].plot(x, [r["traced_peak_mb"] for r in gen], "d-", label="peak traced (tracemalloc)")
    ax[0].plot(x, [r["baseline_rss_mb"] for r in gen], "s--", label="RSS after imports")
    ax[0].plot(x, [r["nnz"] * 8 / 2**20 for r in gen], "^:", label="the corpus in memory "
               "(indices + data)")
    ax[0].set(xlabel="input tokens (millions)", ylabel="MB",
              title="UCI ingestion: memory vs input size")
    ax[0].legend(fontsize=8)
    names = [r["input"] for r in rows]
    ax[1].bar(names, [r["tokens"] / r["seconds"] / 1e6 for r in rows])
    ax[1].set(ylabel="M tokens / s", title="ingestion throughput")
    reads = results["read"]
    modes = list(next(iter(reads.values())))
    pos = np.arange(len(reads))
    for k, mode in enumerate(modes):
        ax[2].bar(pos + 0.4 * k, [v[mode]["random_docs_per_s"] for v in reads.values()],
                  width=0.4, label=mode.replace("_", " "))
    ax[2].set_xticks(pos + 0.2, list(reads))
    ax[2].set(ylabel="documents / s", yscale="log", title="random 50-document batches")
    ax[2].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="5,20,50", help="generated UCI sizes, M tokens")
    ap.add_argument("--workdir", help="where generated files and stores go (default: a temp dir)")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child, *([None] * (4 - len(args.child))))
        return
    if not WIKI.is_dir():
        raise SystemExit(f"the wiki corpus is not at {WIKI} (see ../shared/data/README.md)")
    work = Path(args.workdir or tempfile.mkdtemp(prefix="dscir-ingest-"))
    work.mkdir(parents=True, exist_ok=True)
    results = {"machine": f"{platform.processor() or platform.machine()}, 2 cores, shared",
               "python": platform.python_version(), "ingest": [], "read": {}, "generated": {}}
    try:
        row = ingest("ldac", WIKI / "wiki.ldac.gz", work / "wiki.zarr", WIKI / "vocab.txt")
        row.update(input="wiki", input_bytes=(WIKI / "wiki.ldac.gz").stat().st_size)
        results["ingest"].append(row)
        print(row, flush=True)
        results["read"]["wiki"] = read_throughput(work / "wiki.zarr")
        print(results["read"]["wiki"], flush=True)
        for size in (int(s) for s in args.sizes.split(",")):
            src = work / f"docword.gen{size}M.txt"
            start = time.perf_counter()
            info = generate_uci(src, size * 1_000_000)
            info["seconds"] = time.perf_counter() - start
            results["generated"][f"uci-{size}M"] = info
            print("generated", info, flush=True)
            store = work / f"gen{size}M.zarr"
            row = ingest("uci", src, store)
            row.update(input=f"uci-{size}M", input_bytes=info["bytes"])
            results["ingest"].append(row)
            print(row, flush=True)
            src.unlink()
            if size == max(int(s) for s in args.sizes.split(",")):
                results["read"][f"uci-{size}M"] = read_throughput(store)
                print(results["read"][f"uci-{size}M"], flush=True)
            shutil.rmtree(store)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "ingest.json").write_text(json.dumps(results, indent=1))
    plot(results, out / "ingest.png")


if __name__ == "__main__":
    main()
