"""LDA iterations with the dense and the lazy SCIR step (scir_step), topics on the
driver or on the workers.

Seconds per iteration (the whole iteration: minibatch read, Gibbs tasks on a
2-worker LocalCluster, the SCIR step, a kept sample every ``--thin``
iterations) at K = 1000 for W = 10^4 and 10^5, minibatch 200 documents, 2
sweeps, on a synthetic corpus (1000 documents of 100 tokens, words drawn
Zipf(1.07) over the W words in a random order). Dense and lazy alternate, one
chain each per W and ``--repeats`` rounds; the first iteration of a chain
(numba compilation, first touches) is recorded but not in the median. Also
per lazy iteration the state's entries visited, K x U and K x W. A contended
figure: the 2-core machine is shared with other work while this runs, so the
seconds are labelled so; the entry counts are not affected.

``--placement driver`` (``results/lda_lazy.json``) steps ``Chain.step``
directly; ``--placement workers`` (``results/lda_lazy_workers.json``) goes
through the public API, ``dscir.LDA(...).fit(store, client)``, and reads the
iterations from the fit's ``history_`` (``wall``, ``lazy_entries``).

    python benchmarks/lda_lazy.py [--iterations 6] [--words 10000 100000]
    python benchmarks/lda_lazy.py --placement workers --repeats 2

``--heldout`` (``results/lda_lazy_heldout.json`` and ``.png``) compares the two
steps where the default would choose between them: K = 100, W = 10^5 (K x W =
10^7), a corpus drawn from LDA (``defaults.make_gen``: 50 topics over W words,
3,000 documents of about 150 tokens, 12.5 % held out), minibatch 100 documents,
every other setting at its default (placement "auto"), ``--iterations``
iterations (half burn-in) per chain, dense and lazy alternating for each of
``--seeds`` seeds; the held-out perplexity of the kept mean at the end (the
fit's own evaluator) and the median seconds per iteration (contended).

    nice -n 5 python benchmarks/lda_lazy.py --heldout --seeds 0 1 2 --iterations 150
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from distributed import Client, LocalCluster

import dscir
from dscir.corpus import split_heldout, write_corpus
from dscir.engine.chain import Chain
from dscir.engine.dask import DaskExecutor
from dscir.models import lda
from dscir.models.lda import LDAConfig

from _common import cpu_model

RESULTS = Path(__file__).resolve().parent / "results"
K, BATCH, SWEEPS, DOCS, LENGTH = 1000, 200, 2, 1000, 100


def corpus(path: Path, n_words: int, seed: int = 0) -> str:
    """DOCS documents of LENGTH tokens, words Zipf(1.07) over n_words in a random order."""
    rng = np.random.default_rng(seed)
    p = np.arange(1, n_words + 1) ** -1.07
    p = p[rng.permutation(n_words)] / p.sum()
    rows = np.repeat(np.arange(DOCS), LENGTH)
    cols = rng.choice(n_words, size=DOCS * LENGTH, p=p)
    m = sp.csr_matrix((np.ones(rows.size, np.int64), (rows, cols)), shape=(DOCS, n_words))
    write_corpus(path, m, vocabulary=[f"w{i}" for i in range(n_words)])
    split_heldout(path, every=10)
    return str(path)


def config(step: str, thin: int) -> LDAConfig:
    return LDAConfig(n_topics=K, sampler="scir", alpha=0.1, beta=0.5, batch_size=BATCH,
                     step_size=0.5, tau=10.0, kappa=0.33, sweeps=SWEEPS, seed=0, burn_in=0,
                     thin=thin, placement="driver", scir_step=step)


def run(client, store: str, step: str, iterations: int, thin: int, n_words: int) -> dict:
    chain = Chain(lda.LDAModel, config(step, thin), store, DaskExecutor(client, store, "lda"))
    records = []
    for _ in range(iterations):
        topics = chain.model.topics
        before = topics.entries() if step == "lazy" else None
        record = chain.step()
        if step == "lazy":
            record["entries"] = int(topics.entries() - before)
            record["k_u"] = int(K * topics._u.size)
        records.append({k: (float(v) if isinstance(v, (float, np.floating)) else v)
                        for k, v in record.items()})
    chain.close()
    return summarise(step, n_words, records)


def summarise(step: str, n_words: int, records: list[dict]) -> dict:
    walls = [r["wall"] for r in records[1:]]
    return {"step": step, "n_words": n_words, "k_w": K * n_words,
            "median_seconds_per_iteration": float(np.median(walls)),
            "iterations": records}


def run_api(client, store: str, step: str, iterations: int, thin: int, n_words: int) -> dict:
    """One fit through the public API with the topics on the workers."""
    settings = {k: v for k, v in config(step, thin).to_dict().items()
                if k in ("n_topics", "sampler", "alpha", "beta", "batch_size", "step_size",
                         "tau", "kappa", "sweeps", "seed", "burn_in", "thin")}
    est = dscir.LDA(**settings, placement="workers", scir_step=step, n_iter=iterations,
                    progress=False)
    est.fit(store, client=client)
    h = {k: np.asarray(v) for k, v in est.history_.items()}
    records = [{k: h[k][i].item() for k in h} for i in range(iterations)]
    if step == "lazy":
        entries = np.diff(np.concatenate([[0], h["lazy_entries"]]))
        for r, e in zip(records, entries):
            r["entries"] = int(e)
    return summarise(step, n_words, records)


def heldout_run(store: str, step: str, seed: int, iterations: int) -> dict:
    """One default fit at K = 100 with ``scir_step=step``: final held-out perplexity,
    median seconds per iteration and the share of K x W the lazy step touched."""
    est = dscir.LDA(n_topics=100, batch_size=100, scir_step=step, n_iter=iterations,
                    eval_every=iterations, seed=seed, progress=False)
    est.fit(store)
    h = {k: np.asarray(v) for k, v in est.history_.items()}
    out = {"step": step, "seed": seed, "placement": est.config_.placement,
           "perplexity": float(est.evaluations_[-1][1]),
           "median_seconds_per_iteration": float(np.median(h["wall"][1:]))}
    if "lazy_entries" in h:
        n_words = est.n_features_in_
        out["touched_share_of_kw"] = float(np.median(np.diff(h["lazy_entries"]))
                                           / (100 * n_words))
    return out


def heldout(args, save) -> dict:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from defaults import make_gen

    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        store = str(make_gen(Path(tmp) / "gen.zarr", 0, n_words=args.words[-1], n_docs=3000)[0])
        for seed in args.seeds:
            for step in ("dense", "lazy"):
                runs.append(heldout_run(store, step, seed, args.iterations))
                print(runs[-1], flush=True)
                save(heldout_summary(runs))
    return heldout_summary(runs)


def heldout_summary(runs: list[dict]) -> dict:
    """The runs so far and, per step, the mean perplexity and median seconds."""
    summary = {}
    for step in ("dense", "lazy"):
        mine = [r for r in runs if r["step"] == step]
        if not mine:
            return {"runs": runs, "summary": summary}
        summary[step] = {"mean_perplexity": float(np.mean([r["perplexity"] for r in mine])),
                         "median_seconds_per_iteration": float(np.median(
                             [r["median_seconds_per_iteration"] for r in mine]))}
    d = [lz["perplexity"] / de["perplexity"] for de, lz in zip(runs[::2], runs[1::2])]
    summary["lazy_over_dense_perplexity"] = d
    summary["lazy_over_dense_seconds"] = (summary["lazy"]["median_seconds_per_iteration"]
                                          / summary["dense"]["median_seconds_per_iteration"])
    return {"runs": runs, "summary": summary}


def plot_heldout(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(8, 3.5))
    for step, color in (("dense", "C0"), ("lazy", "C1")):
        mine = [r for r in result["runs"] if r["step"] == step]
        axes[0].scatter([r["seed"] for r in mine], [r["perplexity"] for r in mine],
                        color=color, label=step)
        axes[1].scatter([r["seed"] for r in mine],
                        [r["median_seconds_per_iteration"] for r in mine], color=color,
                        label=step)
    axes[0].set(xlabel="seed", ylabel="held-out perplexity (kept mean)")
    axes[1].set(xlabel="seed", ylabel="median s / iteration (contended)")
    for ax in axes:
        ax.legend()
    fig.suptitle("K = 100, W = 10^5, minibatch 100")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=6)
    parser.add_argument("--thin", type=int, default=2)
    parser.add_argument("--words", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--placement", choices=("driver", "workers"), default="driver")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--heldout", action="store_true",
                        help="dense against lazy in held-out perplexity at K = 100")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    if args.heldout:
        def save(result: dict) -> None:  # after every run: a partial study is kept
            result.update(command="nice -n 5 python benchmarks/lda_lazy.py --heldout --seeds "
                                  + " ".join(map(str, args.seeds))
                                  + f" --iterations {args.iterations} --words {args.words[-1]}",
                          machine={"cpu": cpu_model(), "cores": os.cpu_count(),
                                   "note": "contended: 2-core machine shared with other work"})
            (RESULTS / "lda_lazy_heldout.json").write_text(json.dumps(result, indent=1))
            plot_heldout(result, RESULTS / "lda_lazy_heldout.png")

        print(json.dumps(heldout(args, save)["summary"], indent=1))
        return
    RESULTS.mkdir(exist_ok=True)
    runner = run if args.placement == "driver" else run_api
    runs = []
    with tempfile.TemporaryDirectory() as tmp, \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                         dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client:
        for w in args.words:
            store = corpus(Path(tmp) / f"w{w}.zarr", w)
            for _ in range(args.repeats):
                for step in ("dense", "lazy"):
                    runs.append(runner(client, store, step, args.iterations, args.thin, w))
                    print(step, w, runs[-1]["median_seconds_per_iteration"], flush=True)
    out = {"command": "python benchmarks/lda_lazy.py " + " ".join(
               f"--{k.replace('_', '-')} {' '.join(map(str, v)) if isinstance(v, list) else v}"
               for k, v in vars(args).items()),
           "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                       "python": platform.python_version()},
           "settings": {"K": K, "batch_size": BATCH, "sweeps": SWEEPS, "documents": DOCS,
                        "tokens_per_document": LENGTH, **vars(args),
                        "note": "contended: 2-core machine shared with other developers' "
                                "work while this ran; median excludes the first iteration"},
           "summary": [{k: r[k] for k in ("step", "n_words", "k_w",
                                          "median_seconds_per_iteration")} for r in runs],
           "runs": runs}
    name = "lda_lazy.json" if args.placement == "driver" else "lda_lazy_workers.json"
    (RESULTS / name).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
