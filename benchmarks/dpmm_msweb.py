"""Figure 3b of the SCIR paper: the DP mixture of multinomials on msweb.

Held-out log predictive against iterations for the stochastic slice sampler
with SCIR and with SGRLD steps (reference settings, minibatch n = 1000 users,
on a 2-worker LocalCluster) and for the exact Gibbs slice sampler (all
training users, this process), five seeds each, and the number of occupied
clusters (and of represented components) over the iterations. The store holds
out every 6th user (users 6, 12, ...: 5,451 of 32,710). Writes
benchmarks/results/dpmm_msweb.json and dpmm_msweb.png.

    python benchmarks/dpmm_msweb.py [--iterations 1000] [--eval-every 25] [--seeds 5]
    python benchmarks/dpmm_msweb.py --policy auto --tag policy   # DPMixture's defaults

``--policy reference`` (default) runs the settings below; ``--policy auto`` the
settings ``DPMixture(sampler=...)`` resolves on the store by default (its
policy; the JSON records each run's configuration). ``--tag`` names the
result files dpmm_msweb_<tag>.json / .png, keeping the earlier ones.

Score: at each evaluation, the mean over held-out users of log p(x) under the
current sample ("current"), and the same with p(x) averaged over the samples
kept so far (every 10th iteration after burn-in = half the run; "averaged").
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import RESULTS, cpu_model, shared_data

DATA = shared_data() / "msweb"
METHODS = {
    "scir": dict(sampler="scir", a0=0.5, step_sizes=(0.1, 0.1), n_init=20),
    "sgrld": dict(sampler="sgrld", a0=0.001, step_sizes=(0.001, 0.005), n_init=30),
    "gibbs": dict(sampler="gibbs", a0=0.5, n_init=20),
}


def make_store(path: Path) -> Path:
    from dscir.corpus import Corpus, ingest_uci, split_heldout

    ingest_uci(DATA / "docword.msweb.txt.gz", path, DATA / "vocab.msweb.txt")
    split_heldout(path, every=6)
    assert Corpus.open(path).heldout_docs().size == 5451
    return path


def run(client, store: Path, method: str, seed: int, args) -> dict:
    from dscir.api import DPMixture
    from dscir.engine.chain import Chain
    from dscir.engine.dask import DaskExecutor
    from dscir.engine.inprocess import InProcessExecutor
    from dscir.models.mixtures.dp import model_type

    params = METHODS[method] if args.policy == "reference" else {"sampler": method}
    cfg = DPMixture(**params, policy=args.policy, batch_size=1000 if args.policy ==
                    "reference" else "auto", n_iter=args.iterations,
                    thin=10, seed=seed).chain_config(str(store))
    executor = (InProcessExecutor(str(store), "dpmm") if method == "gibbs"
                else DaskExecutor(client, str(store), "dpmm"))
    chain = Chain(model_type(cfg.sampler), cfg, str(store), executor, keep_samples=False)
    model = chain.model
    curve, wall = [], 0.0
    clusters, components, alpha = [], [], []
    for i in range(args.iterations):
        t = time.perf_counter()
        stats = chain.step()
        wall += time.perf_counter() - t
        clusters.append(stats["n_clusters"])
        components.append(stats["n_components"])
        alpha.append(stats["alpha"])
        if (i + 1) % args.eval_every == 0:
            current = float(np.mean(model.score_sample(model.sample())))
            averaged = model.kept.average.mean() if model.kept.average.n_samples else current
            curve.append({"iteration": i + 1, "seconds": wall, "current": current,
                          "averaged": averaged, "n_clusters": stats["n_clusters"]})
    chain.close()
    last = curve[-1]
    print(f"{method:6s} seed {seed}  {wall:7.1f}s  log predictive {last['averaged']:.4f} "
          f"(current {last['current']:.4f})  clusters {clusters[-1]}  "
          f"components {max(components)} max", flush=True)
    return {"method": method, "seed": seed, "config": cfg.to_dict(), "curve": curve,
            "n_clusters": clusters, "n_components": components, "alpha": alpha,
            "seconds_per_iteration": wall / args.iterations,
            "n_samples": model.kept.average.n_samples}


def summarise(runs: list[dict]) -> dict:
    out = {}
    for method in METHODS:
        rs = [r for r in runs if r["method"] == method]
        if not rs:
            continue
        final = np.array([r["curve"][-1]["averaged"] for r in rs])
        current = np.array([r["curve"][-1]["current"] for r in rs])
        clusters = np.array([r["n_clusters"][-1] for r in rs])
        comps = np.array([np.mean(r["n_components"][len(r["n_components"]) // 2:]) for r in rs])
        out[method] = {
            "final_log_predictive_mean": float(final.mean()),
            "final_log_predictive_sd": float(final.std(ddof=1)) if final.size > 1 else 0.0,
            "final_current_mean": float(current.mean()),
            "final_current_sd": float(current.std(ddof=1)) if current.size > 1 else 0.0,
            "final_clusters": clusters.tolist(),
            "mean_components_second_half": comps.tolist(),
            "seconds_per_iteration": float(np.mean([r["seconds_per_iteration"] for r in rs])),
        }
    return out


def plot(runs: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"scir": "tab:blue", "sgrld": "tab:orange", "gibbs": "tab:green"}
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(15, 4.2))
    for r in runs:
        col = colours[r["method"]]
        label = r["method"].upper() if r["seed"] == 0 else None
        it = [p["iteration"] for p in r["curve"]]
        a.plot(it, [p["current"] for p in r["curve"]], color=col, alpha=0.5, label=label)
        b.plot(it, [p["averaged"] for p in r["curve"]], color=col, alpha=0.7, label=label)
        c.plot(np.arange(1, len(r["n_clusters"]) + 1), r["n_clusters"], color=col,
               alpha=0.6, label=label)
    a.set(xlabel="iteration", ylabel="held-out log predictive (nats/user)",
          title="current sample")
    b.set(xlabel="iteration", title="averaged over kept samples (after burn-in)")
    n_seeds = len({r["seed"] for r in runs})
    c.set(xlabel="iteration", ylabel="occupied clusters",
          title=f"clusters ({n_seeds} seed{'s' if n_seeds > 1 else ''} each)")
    lo = min(p["current"] for r in runs for p in r["curve"][len(r["curve"]) // 5:])
    hi = max(p["averaged"] for r in runs for p in r["curve"])
    for ax in (a, b):
        ax.set_ylim(lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo))
    for ax in (a, b, c):
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    from distributed import Client, LocalCluster

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--eval-every", type=int, default=25)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--policy", choices=["reference", "auto"], default="reference")
    ap.add_argument("--tag", help="suffix of the result files (keeps earlier results)")
    args = ap.parse_args()
    name = "dpmm_msweb" + (f"_{args.tag}" if args.tag else "")
    RESULTS.mkdir(exist_ok=True)
    runs: list[dict] = []
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp, \
            LocalCluster(n_workers=args.workers, threads_per_worker=1,
                         dashboard_address=":0") as cluster, Client(cluster) as client:
        store = make_store(Path(tmp) / "msweb.zarr")
        for seed in range(args.seeds):
            for method in args.methods:
                runs.append(run(client, store, method, seed, args))
                result = {
                    "what": "DP mixture of multinomials on msweb (SCIR paper Fig. 3b)",
                    "command": "python benchmarks/dpmm_msweb.py " + " ".join(
                        f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()
                        if not isinstance(v, list) and v is not None),
                    "machine": {"cpu": cpu_model(), "python": platform.python_version(),
                                "workers": args.workers, "load": os.getloadavg()},
                    "heldout_rule": "every 6th user (5,451 of 32,710)",
                    "iterations": args.iterations, "eval_every": args.eval_every,
                    "seconds_total": time.time() - started,
                    "summary": summarise(runs), "runs": runs,
                }
                (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=1))
    plot(runs, RESULTS / f"{name}.png")
    print(json.dumps(result["summary"], indent=1))


if __name__ == "__main__":
    main()
