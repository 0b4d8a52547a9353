"""LDA's Gibbs step on a CUDA device against the CPU worker.

1. Token-sweeps per second of the Gibbs step on a synthetic part (W = 10^5 words,
   Zipf-like, K = 100 and 1,000): the CUDA kernel alone (inputs on the device),
   the whole GPU task (uploads, sampling, sparse counts back), and the CPU kernel
   on every core (one part per core in threads: the nogil kernel, as a worker's
   threads run it).
2. Whole chains on ap and wiki (``LDA(device="cuda")`` on one Dask worker with
   ``--resources GPU=1`` against the CPU worker of every core), several seeds:
   held-out perplexity (the spread across seeds is the run-to-run spread) and
   the chain's token-sweeps per second.

Writes ``gpu.json`` and ``gpu.png`` under ``--out`` (default ``$OUT``, else
benchmarks/results). ``--small`` runs tiny sizes (here: under numba's simulator,
``NUMBA_ENABLE_CUDASIM=1``, to know the script starts).

On the accelerator machine (../shared/device/README.md; the corpora copied into
``.data``, an ignored folder that travels, and the wheels into ``.whl``)::

    echo /.whl/ >> .git/info/exclude; echo /.data/ >> .git/info/exclude
    ../shared/device/fetch-wheels.sh .whl
    mkdir -p .data && cp -r ../shared/data/ap ../shared/data/wiki .data/

then the device command (the ``run`` tool's ``carry``: ``[".whl", ".data"]``, about
50 MB; ``timeout_s`` 600: the chains stop starting after ``--budget`` seconds and
the results so far are written after each)::

    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
      --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD \
      PYTHONUNBUFFERED=1 DSCIR_SHARED_DATA=$PWD/.data && \
      timeout 560 python3 benchmarks/gpu.py --out $OUT --budget 420
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cpu_model


def synthetic_part(n_docs: int, doc_len: int, n_words: int, n_topics: int, seed: int):
    """A part's CSR arrays over W words (Zipf-like) and the phi columns of its words."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, n_words + 1)
    words = rng.choice(n_words, size=(n_docs, doc_len), p=p / p.sum())
    indptr, indices, data = [0], [], []
    for row in words:
        u, c = np.unique(row, return_counts=True)
        indices.append(u)
        data.append(c)
        indptr.append(indptr[-1] + u.size)
    indices, data = np.concatenate(indices), np.concatenate(data).astype(np.int32)
    used = np.unique(indices)
    phi = rng.gamma(0.1, size=(n_topics, used.size)) + 1e-12
    return (np.array(indptr, np.int64), indices, data, np.arange(n_docs, dtype=np.int64),
            phi, np.searchsorted(used, indices).astype(np.int32))


def kernel_rates(k: int, args, sweeps: int, repeats: int) -> list[dict]:
    """Token-sweeps/s of the GPU kernel, the GPU task and the CPU kernel on every core."""
    from dscir.models.lda import gibbs, gibbs_cuda

    indptr, indices, data, docs, phi, local = synthetic_part(*args, k, seed=k)
    work = float(data.sum()) * (sweeps + 1)
    rows = []
    for form in ("dense", "sparse"):
        if form == "dense" and k > gibbs_cuda.DENSE_MAX_TOPICS:
            continue
        for r in range(repeats):
            timing, t0 = {}, time.perf_counter()
            gibbs_cuda.topic_word_counts(indptr, indices, data, docs, phi, local, 0.1, sweeps,
                                           1, r, form, timing=timing)
            wall = time.perf_counter() - t0
            rows.append({"K": k, "where": "gpu", "form": form, "repeat": r,
                         "kernel_rate": work / timing["kernel_s"], "task_rate": work / wall})
        cores = os.cpu_count() or 1
        bounds = np.linspace(0, docs.size, cores + 1).astype(int)

        def part(j, form=form, bounds=bounds):
            lo, hi = bounds[j], bounds[j + 1]
            e0, e1 = indptr[lo], indptr[hi]
            gibbs.gibbs_expectations(indptr[lo:hi + 1] - e0, indices[e0:e1], data[e0:e1],
                                       docs[lo:hi], phi, local[e0:e1], 0.1, sweeps, 1, 0, form)

        part(0)  # compiled before the clock
        for r in range(repeats):
            t0 = time.perf_counter()
            with ThreadPoolExecutor(cores) as pool:
                list(pool.map(part, range(cores)))
            rows.append({"K": k, "where": f"cpu x{cores}", "form": form, "repeat": r,
                         "task_rate": work / (time.perf_counter() - t0)})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def make_store(corpus: str, path: Path, small: bool) -> Path:
    from _common import shared_data

    from dscir.corpus import ingest_ldac, split_heldout
    from dscir.corpus.synthetic import write_lda_corpus

    data = shared_data()
    if small:
        write_lda_corpus(path, n_docs=30, n_words=50, n_topics=3, doc_length=30, seed=1)
        return path
    if corpus == "ap":
        ingest_ldac(data / "ap" / "ap.dat", data / "ap" / "vocab.txt", path, drop_empty=True)
        split_heldout(path, fraction=0.125, seed=0)
    else:
        ingest_ldac(data / "wiki" / "wiki.ldac.gz", data / "wiki" / "vocab.txt", path)
        split_heldout(path, n_heldout=1000, seed=0)
    return path


def chain(store: Path, device: str, seed: int, k: int, n_iter: int, sweeps: int) -> dict:
    """One fit on its own LocalCluster: the GPU one worker with GPU=1, the CPU one a
    single-threaded worker per core."""
    from distributed import Client, LocalCluster

    import dscir

    cores = os.cpu_count() or 1
    spec = (dict(n_workers=1, threads_per_worker=1, resources={"GPU": 1}) if device == "cuda"
            else dict(n_workers=cores, threads_per_worker=1))
    with LocalCluster(processes=True, dashboard_address=None, **spec) as cluster, \
            Client(cluster) as client:
        est = dscir.LDA(k, device=device, seed=seed, n_iter=n_iter, sweeps=sweeps,
                        progress=False)
        t0 = time.perf_counter()
        est.fit(str(store), client=client)
        wall = time.perf_counter() - t0
        tokens = float(np.sum(est.history_.get("n_tokens", np.zeros(0))))
        return {"device": device, "seed": seed, "K": k, "fit_s": wall,
                "chain_rate": tokens * (sweeps + 1) / wall, "placement": est.config_.placement,
                "perplexity": float(est.perplexity(client=client))}


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for row in result["kernel"]:
        for what, marker in (("kernel_rate", "o"), ("task_rate", "s")):
            if what in row:
                a.scatter(f"K={row['K']} {row['form']}", row[what], marker=marker,
                          label=f"{row['where']} {what}")
    a.set_yscale("log")
    a.set_ylabel("token-sweeps / s")
    handles, labels = a.get_legend_handles_labels()
    a.legend(dict(zip(labels, handles)).values(), dict(zip(labels, handles)).keys(), fontsize=7)
    for row in result["chains"]:
        if "perplexity" in row:
            b.scatter(f"{row['corpus']} {row['device']}", row["perplexity"])
    b.set_ylabel("held-out perplexity (one point a seed)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _write(result: dict, out: Path) -> None:
    """The results so far (a run cut short by the machine's time keeps them)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu.json").write_text(json.dumps(result, indent=1))


def chains(result: dict, args, sweeps: int, out: Path, deadline: float) -> None:
    """Part 2: the chains, GPU and CPU alternating by seed, until ``deadline``."""
    small = args.small
    with tempfile.TemporaryDirectory() as tmp:
        for corpus in ("ap",) if small else ("ap", "wiki"):
            store = make_store(corpus, Path(tmp) / f"{corpus}.zarr", small)
            for seed in range(1 if small else args.seeds):
                for device in ("cuda", "cpu"):
                    if time.monotonic() > deadline:
                        result["skipped"].append(f"{corpus} {device} seed {seed}")
                        continue
                    try:
                        row = chain(store, device, seed, 3 if small else 100,
                                    2 if small else args.iterations, sweeps)
                        result["chains"].append({"corpus": corpus, **row})
                        print(json.dumps(result["chains"][-1]), flush=True)
                    except Exception:
                        result["errors"].append(traceback.format_exc())
                    _write(result, out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or
                    str(Path(__file__).resolve().parent / "results"))
    ap.add_argument("--small", action="store_true", help="tiny sizes (a start check)")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=100, help="of each chain")
    ap.add_argument("--budget", type=float, default=480.0,
                    help="seconds; chains not started by then are skipped (and listed)")
    args = ap.parse_args()
    deadline = time.monotonic() + args.budget
    small, out = args.small, Path(args.out)
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":  # device threads are Python threads:
        sys.setswitchinterval(1e-4)  # let the simulator's barriers pass without 5 ms waits
    part = (8, 6, 200) if small else (20_000, 100, 100_000)  # docs, tokens each, W
    sweeps = 2 if small else 10
    result = {"machine": cpu_model(), "cores": os.cpu_count(), "small": small,
              "part": dict(zip(("docs", "doc_length", "W"), part)), "sweeps": sweeps,
              "kernel": [], "chains": [], "errors": [], "skipped": []}
    for k in (4,) if small else (100, 1000):
        try:
            result["kernel"] += kernel_rates(k, part, sweeps, 1 if small else 3)
        except Exception:
            result["errors"].append(traceback.format_exc())
        _write(result, out)
    try:
        chains(result, args, sweeps, out, deadline)
    finally:
        _write(result, out)
        plot(result, out / "gpu.png")
    print(f"wrote {out / 'gpu.json'}; errors: {len(result['errors'])}, skipped: "
          f"{len(result['skipped'])}")


if __name__ == "__main__":
    main()
