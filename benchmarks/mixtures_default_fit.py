"""The mixtures as a user fits them (issue 33's goals): ``dscir.DPMixture().fit(store)``
and ``dscir.Mixture(n_clusters=K).fit(store)``, every other setting at its default
(the embedded LocalCluster, one worker per core), on labelled collections ingested
with ``dscir ingest tsv`` at its defaults (``mixtures_text.py``'s corpora and
cache), beside scikit-learn's KMeans on l2-normalised tf-idf.

Per fit: the seconds of the whole call (cluster start-up included), NMI and ARI
against the labels, the occupied clusters, and how many of distributed's
"Sending large graph" warnings the call raised. K is the number of labels.
With ``--split N``, also ``DPMixture(n_iter=N, placement=P)`` for P = driver
and workers: the median split of an iteration after the first two (the
engine's timing: compute, transfer, queue, the driver's update).

    python benchmarks/mixtures_default_fit.py --corpora newsgroups reuters8
    python benchmarks/mixtures_default_fit.py --corpora newsgroups --split 40 --tag split

Writes results/mixtures_default_fit[_<tag>].json and .png.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import mixtures_text as mt
from _common import cpu_model

RESULTS = Path(__file__).resolve().parent / "results"


def fit(estimator, store: str, truth) -> dict:
    """One default fit: seconds, scores against the labels, large-graph warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        estimator.fit(store)
        seconds = time.perf_counter() - start
    large = sum("Sending large graph" in str(w.message) for w in caught)
    return {**mt.scores(truth, np.asarray(estimator.labels_), seconds),
            "large_graph_warnings": int(large), "iterations": int(estimator.n_iter_)}


SPLIT = ("wall", "compute", "transfer", "queue", "update")


def placement_split(store: str, n_iter: int, seed: int) -> dict:
    """The DP mixture's default chain, ``n_iter`` iterations on each placement:
    seconds of the call, median split of an iteration after the first two."""
    import dscir

    out = {}
    for placement in ("driver", "workers"):
        est = dscir.DPMixture(n_iter=n_iter, placement=placement, seed=seed, progress=False)
        start = time.perf_counter()
        est.fit(store)
        h = est.history_
        out[placement] = {"seconds": time.perf_counter() - start, "n_iter": n_iter,
                          "median_components": float(np.median(h["n_components"])),
                          **{f"median_{f}_s": float(np.median(h[f][2:])) for f in SPLIT}}
        print(placement, out[placement], flush=True)
    return out


def corpus_runs(name: str, seed: int, split: int = 0) -> dict:
    import dscir

    store = mt.ingest(name)
    truth, x, corpus = mt.load(store)
    k = int(np.unique(truth).size)
    if split:
        return {"n_docs": corpus.n_docs, "n_words": corpus.n_words, "labels": k,
                "load_after": os.getloadavg(), "split": placement_split(store, split, seed)}
    runs = {"kmeans": mt.kmeans(x, truth, k, seed)}
    print(name, "kmeans", runs["kmeans"], flush=True)
    for label, est in (("dpmixture", dscir.DPMixture(seed=seed, progress=False)),
                       ("mixture", dscir.Mixture(n_clusters=k, seed=seed, progress=False))):
        runs[label] = fit(est, store, truth)
        print(name, label, runs[label], flush=True)
    return {"n_docs": corpus.n_docs, "n_words": corpus.n_words,
            "n_tokens": int(corpus.meta["n_tokens"]), "labels": k,
            "load_after": os.getloadavg(), "runs": runs}


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results["corpora"])
    methods = ["kmeans", "dpmixture", "mixture"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    width = 0.8 / len(methods)
    for j, m in enumerate(methods):
        x = np.arange(len(names)) + j * width
        runs = [results["corpora"][n]["runs"][m] for n in names]
        axes[0].bar(x, [r["nmi"] for r in runs], width, label=m)
        axes[1].bar(x, [r["seconds"] for r in runs], width, label=m)
    axes[0].set(ylabel="NMI against the labels", title="default fits")
    axes[1].set(ylabel="seconds of the whole call", yscale="log",
                title="seconds (2-core machine)")
    for ax in axes:
        ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2, names)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpora", nargs="+", choices=list(mt.CORPORA), default=["newsgroups"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tag", default="")
    p.add_argument("--split", type=int, default=0, metavar="N",
                   help="instead: N iterations of the DP mixture on each placement")
    args = p.parse_args()
    load_before = os.getloadavg()
    corpora = {name: corpus_runs(name, args.seed, args.split) for name in args.corpora}
    import dscir

    out = {"command": "python benchmarks/mixtures_default_fit.py " + " ".join(sys.argv[1:]),
           "cpu": cpu_model(), "cores": os.cpu_count(), "versions": {"dscir": dscir.__version__},
           "load_before": load_before, "corpora": corpora}
    stem = "mixtures_default_fit" + (f"_{args.tag}" if args.tag else "")
    (RESULTS / f"{stem}.json").write_text(json.dumps(out, indent=1))
    if not args.split:
        plot(out, RESULTS / f"{stem}.png")


if __name__ == "__main__":
    main()
