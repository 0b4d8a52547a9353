"""The mixtures' components on the driver or on the workers: time per iteration and
graph bytes at W = 7 x 10^4 (issues 31, 33, 36).

A generated corpus (Zipf word frequencies over 70,000 words, documents of
about 150 tokens), a 2-worker LocalCluster of one thread each; for each mixture
(``DPMixture`` at its defaults, ``Mixture(20)`` with a random start) and each
placement, short fits (alternated, ``--repeats`` each): the median wall time of an iteration (the first two
aside), the bytes of the task graphs each iteration sends the scheduler, the
"Sending large graph" warnings and the components at the end. The seconds are
contended (a shared 2-core machine; run under ``nice -n 5``; the load average
is recorded); the bytes are not.

    nice -n 5 python benchmarks/mixture_placement.py --docs 4000 --iterations 12
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
import scipy.sparse as sp

RESULTS = Path(__file__).parent / "results"


def zipf_corpus(path: str, n_docs: int, n_words: int, length: int, seed: int) -> None:
    from dscir.corpus import write_corpus

    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, n_words + 1) ** 1.05
    p /= p.sum()
    lengths = rng.poisson(length, size=n_docs) + 1
    ids = rng.choice(n_words, size=lengths.sum(), p=p)
    rows = np.repeat(np.arange(n_docs), lengths)
    x = sp.csr_matrix((np.ones(ids.size, np.int64), (rows, ids)), shape=(n_docs, n_words))
    x.sum_duplicates()
    write_corpus(path, x, chunk_docs=500)


def recording(client, sizes):
    """Wrap the client's graph submission to add each graph's bytes to ``sizes``
    under the chain iteration its keys name."""
    from distributed.protocol import serialize, to_serialize

    real = client._graph_to_futures

    def wrapped(expr, keys, *args, **kwargs):
        _, frames = serialize(to_serialize(expr), on_error="raise")
        key = next(iter(keys))
        if isinstance(key, tuple) and len(key) > 1 and isinstance(key[1], int):
            sizes[key[1]] += sum(memoryview(f).nbytes for f in frames)
        return real(expr, keys, *args, **kwargs)

    client._graph_to_futures = wrapped
    return real


def one_fit(client, store: str, model: str, placement: str, iterations: int) -> dict:
    import dscir

    est = (dscir.DPMixture(n_iter=iterations, placement=placement, progress=False)
           if model == "dpmixture" else
           dscir.Mixture(20, init="random", n_iter=iterations, placement=placement,
                         progress=False))
    sizes: dict[int, int] = defaultdict(int)
    real = recording(client, sizes)
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(store, client=client)
    total = time.perf_counter() - start
    client._graph_to_futures = real
    walls = np.asarray(est.history_["wall"])[2:]
    per_iter = [v for k, v in sorted(sizes.items()) if k > 0]
    return {"model": model, "placement": placement,
            "resolved": est._chain.model.held.placement, "iterations": iterations,
            "seconds_per_iteration_median": float(np.median(walls)),
            "seconds_per_iteration": [float(w) for w in walls], "fit_seconds": total,
            "graph_bytes_per_iteration_median": float(np.median(per_iter)),
            "graph_bytes_per_iteration_max": int(max(per_iter)),
            "large_graph_warnings": sum("Sending large graph" in str(w.message)
                                        for w in caught),
            "components_K": int(est.components_.shape[0]),
            "sampler": est.config_.sampler, "batch_size": int(est.config_.batch_size)}


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    labels = [f"{r['model']}\n{r['placement']}" for r in rows]
    axes[0].bar(labels, [r["seconds_per_iteration_median"] for r in rows], color="C0")
    axes[0].set_ylabel("s / iteration (median, contended)")
    axes[1].bar(labels, [r["graph_bytes_per_iteration_max"] / 2**20 for r in rows], color="C1")
    axes[1].set_ylabel("graph MiB / iteration (max)")
    fig.suptitle("mixtures at W = 7e4: components on the driver or on the workers")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    from distributed import Client, LocalCluster

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=4000)
    ap.add_argument("--words", type=int, default=70_000)
    ap.add_argument("--length", type=int, default=150)
    ap.add_argument("--iterations", type=int, default=12)
    ap.add_argument("--repeats", type=int, default=1,
                    help="fits of each placement, alternated (the load varies)")
    ap.add_argument("--tag", default="w7e4")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="mixture-placement-")
    store = os.path.join(tmp, "corpus.zarr")
    try:
        zipf_corpus(store, args.docs, args.words, args.length, seed=3)
        rows = []
        with LocalCluster(n_workers=2, threads_per_worker=1,
                          dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client:
            for model in ("dpmixture", "mixture"):
                for placement in ("driver", "workers") * args.repeats:
                    rows.append(one_fit(client, store, model, placement, args.iterations))
                    print(json.dumps({k: v for k, v in rows[-1].items()
                                      if k != "seconds_per_iteration"}), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = {"corpus": {"docs": args.docs, "words": args.words, "mean_length": args.length,
                      "zipf_exponent": 1.05},
           "contended": True, "nice": os.nice(0), "load_average": os.getloadavg(),
           "cluster": "LocalCluster, 2 workers x 1 thread", "runs": rows}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"mixture_placement_{args.tag}.json").write_text(json.dumps(out, indent=1))
    plot(rows, RESULTS / f"mixture_placement_{args.tag}.png")


if __name__ == "__main__":
    main()
