"""The DP mixture's text policy chosen by leaving one corpus out (issue 33).

The four labelled corpora of ``mixtures_text.py`` (20 Newsgroups, Reuters R8,
fortunes, Rotten Tomatoes, ingested by ``dscir ingest tsv`` at its defaults;
obtained and cached as that script says). Each candidate is
``dscir.DPMixture()`` at its default policy on the store with its text a0,
SGRLD steps and start replaced:

* ``previous``: a0 = 0.01, epsilon (0.03, 0.005), 100 k-means++ seeds (the
  policy's text settings);
* ``share<s>``: a0 = s x tokens / (n_init W), the finite mixture's rule with the
  truncation's n_init components as K (a0 W is s times the tokens of a
  component if the tokens were spread over all of them), the same steps;
* ``sticks<e>``: the previous policy with the sticks' SGRLD epsilon e instead of
  0.005 (emptied components lose their weight faster);
* ``n<n>``: n initial components (k-means++ seeds) instead of 100.

Leave-one-corpus-out, the rule fixed before the runs: for each corpus, among the
candidates that kept between half and four times as many clusters as labels
on every other corpus (all candidates if none did), the best mean NMI on the
others; its NMI and clusters on the corpus left out. KMeans on tf-idf is read
from ``results/mixtures_text.json`` (the same stores and seed). Chains run in
this process (``LocalExecutor``, the chain a cluster runs) for fewer
iterations than the estimator's 1000, to keep the run short on a shared machine
(seconds contended; the load average is recorded).

    for c in reuters8 tomatoes fortunes newsgroups; do
        nice -n 5 python benchmarks/dpmixture_text.py --corpora $c --iterations 60 --tag $c
    done
    python benchmarks/dpmixture_text.py --combine reuters8 tomatoes fortunes newsgroups

Writes results/dpmixture_text[_<tag>].json and .png.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cpu_model  # noqa: E402
from mixtures_text import CORPORA, RESULTS, ingest, load, run_chain  # noqa: E402

#: name: (a0 share of tokens / (n_init W), or None for a0 = 0.01; n_init; SGRLD's
#: epsilon of the sticks)
CANDIDATES = {"previous": (None, 100, 0.005), "share0.3": (0.3, 100, 0.005),
              "sticks0.05": (None, 100, 0.05), "n30": (None, 30, 0.005),
              "n30/sticks0.05": (None, 30, 0.05)}


def candidate_config(store: str, candidate: str, seed: int, tokens: int, n_words: int):
    from dscir import DPMixture

    share, n_init, sticks = CANDIDATES[candidate]
    cfg = DPMixture("sgrld", burn_in=10**9, seed=seed, n_init=n_init).chain_config(store)
    a0 = 0.01 if share is None else share * tokens / (n_init * n_words)
    return dataclasses.replace(cfg, a0=a0, step_theta=0.03, step_sticks=sticks,
                               init="kmeans++")


def corpus_runs(name: str, args, kmeans: dict) -> dict:
    store = ingest(name)
    truth, x, corpus = load(store)
    info = {"n_docs": int(corpus.n_docs), "n_words": int(corpus.n_words),
            "n_tokens": int(corpus.n_tokens), "labels": int(truth.max()) + 1}
    runs = {"kmeans": kmeans[name]}
    for cand in CANDIDATES:
        cfg = candidate_config(store, cand, args.seed, corpus.n_tokens, corpus.n_words)
        runs[cand] = run_chain(store, "dpmm", cfg, args.iterations, truth)
        print(name, cand, runs[cand], flush=True)
    return {**info, "runs": runs, "load": os.getloadavg()}


def leave_one_out(results: dict) -> dict:
    """The candidate chosen on the other corpora and its score on each (see the module)."""
    table = {}
    for out in results:
        others = [n for n in results if n != out]

        def fits(c):
            return all(results[n]["labels"] <= 2 * results[n]["runs"][c]["clusters"]
                       <= 8 * results[n]["labels"] for n in others)

        mean = {c: float(np.mean([results[n]["runs"][c]["nmi"] for n in others]))
                for c in CANDIDATES}
        chosen = max([c for c in CANDIDATES if fits(c)] or list(CANDIDATES), key=mean.get)
        left = results[out]["runs"]
        table[out] = {"chosen": chosen, "mean_nmi_others": mean[chosen],
                      "nmi": left[chosen]["nmi"], "ari": left[chosen]["ari"],
                      "clusters": left[chosen]["clusters"], "labels": results[out]["labels"],
                      "previous_nmi": left["previous"]["nmi"],
                      "previous_clusters": left["previous"]["clusters"],
                      "kmeans_nmi": left["kmeans"]["nmi"]}
    return table


def plot(results: dict, table: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    methods = ["kmeans", *CANDIDATES]
    width = 0.8 / len(methods)
    x = np.arange(len(results))
    for j, m in enumerate(methods):
        a.bar(x + j * width, [results[n]["runs"][m]["nmi"] for n in results], width, label=m)
        b.bar(x + j * width, [results[n]["runs"][m]["clusters"] / results[n]["labels"]
                              for n in results], width, label=m)
    a.scatter(x + 0.4, [table[n]["nmi"] for n in results], marker="*", color="k", s=80,
              zorder=3, label="chosen on the other corpora")
    names = [f"{n}\n({results[n]['labels']} labels)" for n in results]
    a.set_xticks(x + 0.4, names)
    b.set_xticks(x + 0.4, names)
    a.set_ylabel("NMI against the labels")
    b.set_ylabel("clusters / labels")
    b.set_yscale("log")
    a.legend(fontsize=7)
    fig.suptitle("DPMixture on labelled text: text policy candidates, leave one corpus out")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpora", nargs="+", default=list(CORPORA), choices=list(CORPORA))
    ap.add_argument("--iterations", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tag", default="")
    ap.add_argument("--combine", nargs="+", metavar="TAG",
                    help="no runs: the corpora of results/dpmixture_text_<TAG>.json together")
    args = ap.parse_args()
    if args.combine:
        parts = [json.loads((RESULTS / f"dpmixture_text_{t}.json").read_text())
                 for t in args.combine]
        results = {n: r for part in parts for n, r in part["corpora"].items()}
        args.settings = [part["settings"] for part in parts]
    else:
        reference = json.loads((RESULTS / "mixtures_text.json").read_text())["corpora"]
        kmeans = {n: {**r["runs"]["kmeans"], "from": "results/mixtures_text.json"}
                  for n, r in reference.items()}
        results = {name: corpus_runs(name, args, kmeans) for name in args.corpora}
    table = leave_one_out(results) if len(results) > 1 else {}
    for name, row in table.items():
        print(name, row, flush=True)
    stem = "dpmixture_text" + (f"_{args.tag}" if args.tag else "")
    out = {"settings": vars(args), "corpora": results, "leave_one_out": table,
           "candidates": {c: {"share": s, "n_init": n, "step_sticks": e}
                          for c, (s, n, e) in CANDIDATES.items()},
           "command": " ".join(["python", "benchmarks/dpmixture_text.py", *sys.argv[1:]]),
           "cpu": cpu_model(),
           "note": "seconds on a 2-core machine shared with other jobs (contended)"}
    (RESULTS / f"{stem}.json").write_text(json.dumps(out, indent=1))
    if table:
        plot(results, table, RESULTS / f"{stem}.png")


if __name__ == "__main__":
    main()
