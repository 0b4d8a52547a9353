"""Four SCIR LDA chains on the shared wiki corpus, side by side on one cluster, and
their convergence diagnostics (R-hat, bulk ESS; topics matched across chains).

SCIR's reference settings (``dscir.api.LDA_DEFAULTS``), K = 100, minibatch 50,
1,000 held-out documents (seeded), on a 2-worker LocalCluster; then
``diagnose``: the held-out score (-log perplexity) of every kept sample, and the
top words of every matched topic. Timing baseline in the same run: one chain of
the same settings alone. Writes benchmarks/results/chains_wiki.json and .png.

    python benchmarks/chains_wiki.py [--chains 4] [--iterations 300] [--thin 5]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import cpu_model
from lda_wiki import make_store

RESULTS = Path(__file__).resolve().parent / "results"


def fit(client, store, out, args, n_chains: int) -> float:
    from dscir.api import LDA

    model = LDA(n_topics=args.topics, batch_size=50, sweeps=args.sweeps, n_iter=args.iterations,
                thin=args.thin, eval_sweeps=args.eval_sweeps, seed=args.seed, progress=False)
    start = time.perf_counter()
    model.fit(store, client=client, out=out, n_chains=n_chains)
    return time.perf_counter() - start


def plot(d, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dscir.display import plot_diagnosis

    fig = plt.figure(figsize=(13, 0.18 * len(d.rows) + 4), layout="constrained")
    left, right = fig.subfigures(1, 2, width_ratios=[2, 1])
    plot_diagnosis(d, left.subplots(1, 2))
    ax = right.subplots()
    for c, s in enumerate(d.scores):
        ax.plot(s, marker=".", label=f"chain {c}")
    ax.set(xlabel="kept sample (every --thin iterations after burn-in)",
           ylabel="held-out log likelihood per token",
           title="held-out score of each kept phi sample")
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=110)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--chains", type=int, default=4)
    p.add_argument("--iterations", type=int, default=300)
    p.add_argument("--thin", type=int, default=5)
    p.add_argument("--topics", type=int, default=100)
    p.add_argument("--sweeps", type=int, default=50)
    p.add_argument("--eval-sweeps", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args()

    from distributed import Client, LocalCluster

    from dscir.api.diagnose import diagnose

    load = [os.getloadavg()]
    with tempfile.TemporaryDirectory() as tmp, \
            LocalCluster(n_workers=args.workers, threads_per_worker=1,
                         dashboard_address=None) as cluster, Client(cluster) as client:
        store = make_store(Path(tmp) / "wiki.zarr")
        one = fit(client, store, Path(tmp) / "one", args, 1)
        load.append(os.getloadavg())
        many = fit(client, store, Path(tmp) / "chains", args, args.chains)
        load.append(os.getloadavg())
        start = time.perf_counter()
        d = diagnose(Path(tmp) / "chains", client, top=5)
        diag_seconds = time.perf_counter() - start
        load.append(os.getloadavg())
    topics = [r for r in d.rows if r.quantity.startswith("topic")]
    rh = np.array([r.rhat for r in topics])
    result = {
        "command": "python " + " ".join(sys.argv), "cpu": cpu_model(), "cores": os.cpu_count(),
        "loadavg": load, "settings": vars(args),
        "seconds": {"one_chain": one, f"{args.chains}_chains": many, "diagnose": diag_seconds},
        "rows": [r._asdict() for r in d.rows], "scores": d.scores.tolist(),
        "summary": {"heldout_rhat": d.rows[0].rhat, "heldout_ess": d.rows[0].ess,
                    "topics": len(topics), "topic_rhat_median": float(np.median(rh)),
                    "topic_rhat_max": float(rh.max()),
                    "topics_rhat_below_1.1": int(np.sum(rh < 1.1)),
                    "topic_ess_median": float(np.median([r.ess for r in topics]))},
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "chains_wiki.json").write_text(json.dumps(result, indent=1))
    plot(d, RESULTS / "chains_wiki.png")
    print(d.table())
    print(json.dumps(result["summary"], indent=1), result["seconds"])


if __name__ == "__main__":
    main()
