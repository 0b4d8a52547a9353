"""Warm-started local chains and control variates on wiki (issue 16, items 1, 2 and 5).

SCIR with its reference settings (K = 100, minibatch 50, 1,000 held-out
documents) on a 2-worker LocalCluster, once per setting: cold starts with
200 sweeps (the reference, 100 burn-in) and with 20, warm starts with a few
sweeps per visit, and warm starts with control variates. Held-out perplexity
(the current phi until burn-in ends at half the run, then the mean of the
kept samples) against iterations and against the chain's own wall time
(scoring excluded). At the end of each warm run, the variance of a_hat over
30 random minibatches drawn at the final state, with and without control
variates (same Gibbs output for both), measures the variance reduction.

    python benchmarks/warm_start.py [--iterations 420] [--eval-every 70] [--out NAME]
    python benchmarks/warm_start.py --plot NAME NAME ...   # one figure from stored runs

Writes benchmarks/results/NAME.json (after each setting) and NAME.png.
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

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"

SETTINGS = {
    "cold-200": dict(sweeps=200),
    "cold-20": dict(sweeps=20),
    "warm-10": dict(sweeps=10, burn_sweeps=2, warm_start=True),
    "warm-4": dict(sweeps=4, burn_sweeps=1, warm_start=True),
    "warm-10-cv": dict(sweeps=10, burn_sweeps=2, warm_start=True, control_variates=True),
}


def a_hat_variance(chain, n_draws: int, seed: int) -> dict:
    """Variance over random minibatches (at the chain's final state) of the plain
    and the control-variate estimate of the full-data counts, summed over entries."""
    from dscir.corpus import Corpus
    from dscir.engine.local_state import rows_of
    from dscir.models.lda.kernels import phi_columns
    from dscir.models.lda.topics import control_variate
    from dscir.models.lda.warm import warm_gibbs_counts

    model, cfg, local = chain.model, chain.config, chain.local
    corpus, train = Corpus.open(chain.store), chain.data.train
    lphi = model.log_phi()
    states = chain.executor.local_values(local)
    stored = np.zeros((cfg.n_topics, chain.data.n_words), np.int64)
    for block in np.array_split(train, max(1, train.size // 500)):  # sum of stored counts
        b = corpus.read(block)
        z, _ = rows_of(local, states, block)
        np.add.at(stored, (z[z >= 0], np.repeat(b.indices, b.data)[z >= 0]), 1)
    rng = np.random.default_rng(seed)
    plain, cv = [], []
    for _ in range(n_draws):
        docs = np.sort(rng.choice(train, cfg.batch_size, replace=False))
        batch = corpus.read(docs)
        words = np.unique(batch.indices).astype(np.int64)
        z, warm = rows_of(local, states, docs)
        r, _ = warm_gibbs_counts(batch, words, np.maximum(z, 0), warm,
                                 phi_columns(lphi, words), cfg.alpha, cfg.sweeps, cfg.burn,
                                 cfg.seed, 10**6, True)
        scale = train.size / docs.size
        mean = np.zeros_like(stored, dtype=np.float64)
        mean[:, words] = r.topic_word / r.n_kept
        before = np.zeros_like(stored)
        before[:, words] = r.stored_before
        plain.append(scale * mean)
        cv.append(control_variate(stored, mean, before, scale))
    v_plain = float(np.var(np.array(plain), axis=0, ddof=1).sum())
    v_cv = float(np.var(np.array(cv), axis=0, ddof=1).sum())
    return {"draws": n_draws, "variance_plain": v_plain, "variance_cv": v_cv,
            "reduction": v_plain / v_cv}


def run_setting(client, store, name: str, args) -> dict:
    from dscir.api import LDA
    from dscir.engine.chain import Chain
    from dscir.engine.dask import DaskExecutor
    from dscir.models.lda import LDAModel

    cfg = LDA(n_topics=args.topics, sampler="scir", batch_size=50, n_iter=args.iterations,
              eval_sweeps=args.eval_sweeps, seed=args.seed, policy="reference",
              **SETTINGS[name]).chain_config()
    chain = Chain(LDAModel, cfg, str(store), DaskExecutor(client, str(store), "lda"))
    load = [os.getloadavg()]
    curve, wall = [], 0.0
    for i in range(args.iterations):
        t = time.perf_counter()
        chain.step(prefetch=i + 1 < args.iterations)
        wall += time.perf_counter() - t
        if (i + 1) % args.eval_every == 0:
            p = chain.model.score()
            curve.append({"iteration": i + 1, "seconds": wall, "perplexity": p})
            print(f"{name:11s} it {i + 1:5d}  {wall:8.1f}s  perplexity {p:8.1f}", flush=True)
    chain.close()
    load.append(os.getloadavg())
    h = chain.history
    out = {"setting": name, "config": cfg.to_dict(), "curve": curve, "loadavg": load,
           "mean_seconds": {f: float(np.mean([s[f] for s in h]))
                            for f in ("wall", "compute", "transfer", "queue", "update")}}
    if cfg.control_variates:
        out["cv_clipped_mean"] = float(np.mean([s["cv_clipped"] for s in h]))
    if cfg.warm_start:
        out["a_hat_variance"] = a_hat_variance(chain, args.variance_draws, args.seed)
        print(name, out["a_hat_variance"], flush=True)
    return out


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for r in results:
        c = r["curve"]
        ax1.plot([p["iteration"] for p in c], [p["perplexity"] for p in c], marker="o",
                 label=r["setting"])
        ax2.plot([p["seconds"] for p in c], [p["perplexity"] for p in c], marker="o",
                 label=r["setting"])
    ax1.set(xlabel="iteration (minibatch of 50 documents; 139 per epoch)",
            ylabel="held-out perplexity", title="wiki, K = 100, SCIR: cold vs warm starts")
    ax2.set(xlabel="chain seconds, scoring excluded (loaded, shared 2 cores)",
            ylabel="held-out perplexity", xscale="log", title="against time")
    for ax in (ax1, ax2):
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=int, default=420)
    p.add_argument("--eval-every", type=int, default=70)
    p.add_argument("--topics", type=int, default=100)
    p.add_argument("--eval-sweeps", type=int, default=50)
    p.add_argument("--variance-draws", type=int, default=30)
    p.add_argument("--settings", default=",".join(SETTINGS))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="warm_start")
    p.add_argument("--plot", nargs="+", metavar="NAME",
                   help="only draw results/<out>.png from the stored results/NAME.json")
    args = p.parse_args()
    if args.plot:
        stored = [json.loads((RESULTS / f"{n}.json").read_text())["results"] for n in args.plot]
        plot([r for results in stored for r in results], RESULTS / f"{args.out}.png")
        return

    from distributed import Client, LocalCluster

    RESULTS.mkdir(exist_ok=True)
    results = []
    with tempfile.TemporaryDirectory() as tmp, \
            LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        store = make_store(Path(tmp) / "wiki.zarr")
        for name in args.settings.split(","):
            results.append(run_setting(client, store, name, args))
            out = {"machine": {"cpu": cpu_model(), "cores": 2,
                               "note": "shared with other jobs; see loadavg per setting"},
                   "command": " ".join([Path(sys.executable).name] + sys.argv),
                   "args": vars(args), "results": results}
            (RESULTS / f"{args.out}.json").write_text(json.dumps(out, indent=1))
    plot(results, RESULTS / f"{args.out}.png")


if __name__ == "__main__":
    main()
