"""LDA's minibatch rule (one pass over the training documents every P
iterations, at most CAP documents: ``PASS_ITERATIONS`` and ``BATCH_CAP``) chosen
by leaving one corpus out: the default fit's time and held-out perplexity at
each candidate (P, CAP).

For each corpus, candidate and seed, ``dscir.LDA(n_topics=20, seed=s,
batch_size=B).fit(store)`` runs with every other setting at its default
(n_iter="auto"; SCIR's step and tau follow B as the policy sets them), B the
minibatch the policy gives with the candidate's constants (``choose_batch``),
on the embedded cluster a fit gets by default (started once, before the first
fit). The clock covers the fit call. Its topics are scored by peers.py's one
scorer on peers.py's stores (the held-out documents of its runs; reuters:
stopping.py's store). Candidates that give a corpus the same minibatch share
its fits (the same chain).

Leaving each corpus out, the candidate is chosen on the others: the one with
the smallest mean time ratio to today's (10, 1000) among those whose mean
perplexity ratio to it is at most ``WORSE`` on every other corpus; then the
chosen candidate is read on the corpus left out. Writes
``results/batch_rule.json`` and ``.png``.

    python benchmarks/batch_rule.py --corpora ap kos reuters wiki news \
        --candidates 10:1000 5:1000 5:2000 4:2000 --seeds 0 1
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from _common import RESULTS, cpu_model

HERE = Path(__file__).resolve().parent
BASE = "10:1000"  # today's (PASS_ITERATIONS, BATCH_CAP)
WORSE = 1.01  # a candidate's perplexity may be at most this x today's, on average over seeds


def store_of(corpus: str, work: Path, seed: int) -> Path:
    sys.path.insert(0, str(HERE))
    from stopping import make_store

    path = work / corpus / f"{corpus}.zarr"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        make_store(corpus, path, seed)
    return path


def batch_for(store: Path, candidate: str) -> int:
    """The minibatch ``choose_batch`` gives the store with the candidate "P:CAP"."""
    from dscir.corpus import Corpus
    from dscir.models.lda import policy

    train = int(Corpus.open(str(store)).train_docs().size)
    saved = policy.PASS_ITERATIONS, policy.BATCH_CAP
    policy.PASS_ITERATIONS, policy.BATCH_CAP = map(int, candidate.split(":"))
    try:
        return policy.choose_batch("default", policy.CorpusSize(train, 1, 1))
    finally:
        policy.PASS_ITERATIONS, policy.BATCH_CAP = saved


def one_fit(client, store: Path, batch: int, seed: int) -> dict:
    import dscir

    est = dscir.LDA(n_topics=20, seed=seed, batch_size=batch, progress=False)
    t = time.perf_counter()
    est.fit(str(store))
    seconds = time.perf_counter() - t
    stop = getattr(est, "stopping_", None) or {}
    return {"seconds": seconds, "iterations": int(est.n_iter_), "passes": stop.get("passes"),
            "reason": est.stop_reason_,
            "perplexity": scored(client, store, est.materialize_topic_word())}


def scored(client, store: Path, phi: np.ndarray) -> float:
    """peers.py's score of ``phi`` on the embedded cluster (its client current)."""
    from stopping import peers_score

    with client.as_current():
        return peers_score(client, store, phi)


def choose(runs: dict, corpora: list[str], candidates: list[str]) -> str:
    """The candidate with the smallest mean time ratio to BASE over ``corpora``,
    among those at most WORSE x its mean perplexity on each."""
    def ratios(c, p, key):
        mine = np.mean([r[key] for r in runs[c][p]])
        return mine / np.mean([r[key] for r in runs[c][BASE]])

    ok = [p for p in candidates if all(ratios(c, p, "perplexity") <= WORSE for c in corpora)]
    return min(ok or [BASE], key=lambda p: np.mean([ratios(c, p, "seconds") for c in corpora]))


def summary(runs: dict, candidates: list[str]) -> dict:
    corpora = list(runs)
    table = {c: {p: {k: float(np.mean([r[k] for r in runs[c][p]]))
                     for k in ("seconds", "perplexity", "passes", "batch_size")}
                 for p in candidates} for c in corpora}
    for c in corpora:
        for p in candidates:
            row = table[c][p]
            row["time_ratio"] = row["seconds"] / table[c][BASE]["seconds"]
            row["perplexity_ratio"] = row["perplexity"] / table[c][BASE]["perplexity"]
    folds = []
    for left in corpora:
        chosen = choose(runs, [c for c in corpora if c != left], candidates)
        folds.append({"left_out": left, "chosen": chosen, **table[left][chosen]})
    return {"means": table, "folds": folds, "chosen_on_all": choose(runs, corpora, candidates)}


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for corpus, rows in result["runs"].items():
        for p, runs in rows.items():
            ax.scatter([r["seconds"] for r in runs], [r["perplexity"] for r in runs], s=25,
                       marker="o" if p == BASE else "^")
            ax.annotate(f"{corpus} {p}", (np.mean([r["seconds"] for r in runs]),
                                            np.mean([r["perplexity"] for r in runs])),
                        fontsize=7)
    ax.set(xscale="log", yscale="log", xlabel="seconds of the fit call",
           ylabel="held-out perplexity (peers.py's scorer)",
           title="LDA(n_topics=20).fit, minibatch rule P:CAP (circles: today's 10:1000)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpora", nargs="+", default=["ap", "kos", "reuters", "wiki"])
    p.add_argument("--candidates", nargs="+", default=[BASE, "5:1000", "5:2000", "4:2000"],
                   help="P:CAP pairs, today's first")
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    p.add_argument("--work", default="/tmp/dscir-batch-rule", help="keeps the stores")
    args = p.parse_args()
    from dscir.engine.cluster import embedded_client
    import os

    t = time.perf_counter()
    client = embedded_client()
    startup = time.perf_counter() - t
    runs: dict = {}
    for corpus in args.corpora:
        store = store_of(corpus, Path(args.work), 0)
        runs[corpus] = {}
        by_batch: dict[int, list] = {}  # candidates with the same minibatch: one chain
        for cand in args.candidates:
            batch = batch_for(store, cand)
            if batch in by_batch:
                runs[corpus][cand] = by_batch[batch]
                continue
            runs[corpus][cand] = by_batch[batch] = []
            for seed in args.seeds:
                r = {"batch_size": batch, "seed": seed, **one_fit(client, store, batch, seed)}
                runs[corpus][cand].append(r)
                print(corpus, cand, json.dumps(r), flush=True)
    result = {"command": "python benchmarks/batch_rule.py " + " ".join(sys.argv[1:]),
              "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                          "load_average_after": os.getloadavg()},
              "cluster_startup_seconds": startup, "base": BASE,
              "worse": WORSE, **summary(runs, args.candidates), "runs": runs}
    (RESULTS / "batch_rule.json").write_text(json.dumps(result, indent=1))
    plot(result, RESULTS / "batch_rule.png")
    print(json.dumps({k: result[k] for k in ("folds", "chosen_on_all")}, indent=1))


if __name__ == "__main__":
    main()
