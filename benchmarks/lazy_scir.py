"""Lazy SCIR against the dense step: an inner-loop figure and the row-total error.

1. Seconds per step of the sampler alone (an inner-loop figure on a contended
   2-core machine shared with other work; no Gibbs, no engine): the dense step
   (``cir.step`` over K x W, counts given as a K x W array) against the lazy one
   (``cir_lazy``: touch the minibatch's words, the row totals, the phi columns,
   the step; and a kept sample every ``--thin`` steps), at beta = 0.5, h = 0.1, with ``--words``
   distinct words per minibatch and counts 160 x Poisson(1) on their entries.
   The lazy state also counts the entries it visits per step (``State.entries``),
   a figure the contention does not change. Grid: K = 1000 at W = 10^4, 10^5;
   K = 100 at W = 10^4, 10^5, 10^6 (K = 1000 at W = 10^6 needs 8 GB per K x W
   float64 array, more than this shared machine can spare).
2. The size of the ``"mean"`` row totals' error, sd[R | x] / E[R | x] (and as a
   share of R's own stationary sd), from the exact conditional moments, in a
   synthetic LDA-like run (K = 50, W = 5000, 200 Zipf-drawn words per step).
3. The row-total approximation on the Dirichlet study's posteriors
   (``dscir.experiments.lazy_dirichlet``): the median over seeds of the KS distance
   of one category's phi, as a step reads it, from its exact Beta marginal, for
   the dense step and the lazy step's two totals; exact draws give the floor.
4. Chains against the dense step with the normaliser feeding back through
   Gibbs (``dscir.experiments.lazy_lda``: K = 20, W = 5000, 2000 training
   documents of ~60 tokens, minibatch 30, 4 sweeps, the SCIR reference schedule):
   held-out completion perplexity of the kept mean phi and its matched L1
   distance from the true topics, per seed, dense / lazy mean / lazy draw.

Writes benchmarks/results/lazy_scir.json and .png.

    python benchmarks/lazy_scir.py [--steps 3] [--seeds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numba
import numpy as np

from dscir.experiments import lazy_lda
from dscir.experiments.lazy_dirichlet import METHODS, ks_distances, normaliser_spread
from dscir.models import dirichlet as model
from dscir.rng import derive
from dscir.samplers import cir, cir_lazy

from _common import RESULTS, cpu_model
BETA, H = 0.5, 0.1
GRID = [(1000, 10**4), (1000, 10**5), (100, 10**4), (100, 10**5), (100, 10**6)]


def minibatch(rng, k: int, w: int, u: int):
    words = np.sort(rng.choice(w, u, replace=False))
    return words, 160.0 * rng.poisson(1.0, (k, u)).astype(float)


def time_dense(k: int, w: int, u: int, steps: int) -> float:
    rng = np.random.default_rng(0)
    state = cir.init(rng.gamma(1.0, 1.0, (k, w)))
    counts = np.zeros((k, w))
    times = []
    for m in range(steps + 1):
        words, c = minibatch(rng, k, w, u)
        counts[:] = 0.0
        counts[:, words] = c
        t0 = time.perf_counter()
        state = cir.step(state, BETA, counts, H, derive(0, m))
        times.append(time.perf_counter() - t0)
    return float(np.median(times[1:]))  # the first call may compile


def time_lazy(k: int, w: int, u: int, steps: int, thin: int) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    state = cir_lazy.init(rng.gamma(1.0, 1.0, (k, w)))
    times, entries = [], []
    for m in range(steps * thin + 1):
        words, c = minibatch(rng, k, w, u)
        before = state.entries
        t0 = time.perf_counter()
        state = cir_lazy.touch(state, words, BETA, derive(0, m))
        norm = cir_lazy.normaliser(cir_lazy.moments(state, BETA), "draw", derive(1, m))
        cir_lazy.columns(state, words, norm)  # the phi columns a Gibbs step reads
        state = cir_lazy.step(state, words, c, BETA, H, derive(0, m))
        if m % thin == 0:
            state = cir_lazy.keep(state, cir_lazy.normaliser(cir_lazy.moments(state, BETA),
                                                             "mean"))
        times.append(time.perf_counter() - t0)
        entries.append(state.entries - before)
    return float(np.median(times[1:])), float(np.mean(entries[1:]))


def speed(steps: int, u: int, thin: int) -> list[dict]:
    rows = []
    for k, w in GRID:
        lazy, entries = time_lazy(k, w, u, steps, thin)
        dense = time_dense(k, w, u, steps)
        rows.append({"K": k, "W": w, "words": u, "dense_s": dense, "lazy_s": lazy,
                     "lazy_entries_per_step": entries, "dense_entries_per_step": k * w})
        print(rows[-1], flush=True)
    return rows


def row_totals(seeds: int, burn_in: int, kept: int) -> list[dict]:
    rows = []
    for name, counts in (("sparse", model.SPARSE), ("dense", model.DENSE)):
        for n in (10, 100):
            for h in (0.01, 0.1, 1.0):
                ks = [ks_distances(counts, n, h, s, burn_in, kept, 1) for s in range(seeds)]
                row = {"posterior": name, "minibatch": n, "h": h, "component": 1}
                for m in (*METHODS, "exact"):
                    row[m] = float(np.median([d[m] for d in ks]))
                    row[m + "_spread"] = [float(min(d[m] for d in ks)),
                                          float(max(d[m] for d in ks))]
                rows.append(row)
                print(row, flush=True)
    return rows


def spreads(steps: int) -> list[dict]:
    rows = []
    for h in (0.01, 0.1, 0.5):
        rel, share = normaliser_spread(50, 5000, 200, h, steps, 0)[:, steps // 2:]
        rows.append({"K": 50, "W": 5000, "words": 200, "h": h, "steps": steps,
                     "rel_sd_median": float(np.median(rel)),
                     "rel_sd_q99": float(np.quantile(rel, 0.99)),
                     "share_of_stationary_sd_median": float(np.median(share)),
                     "share_of_stationary_sd_q99": float(np.quantile(share, 0.99))})
        print(rows[-1], flush=True)
    return rows


def lda_chains(seeds: int, iters: int) -> list[dict]:
    data = lazy_lda.corpus(20, 5000, 2000, 60, 0.01, 0)
    rows = [{"method": "true topics", "seed": None, "perplexity":
             lazy_lda.perplexity(data["phi"], data["heldout"], 1), "topic_l1": 0.0}]
    for seed in range(seeds):
        for method in METHODS:
            r = lazy_lda.run(method, data, 20, iters, 30, iters // 2, 5, seed)
            rows.append({"method": method, "seed": seed, "iterations": iters,
                         "perplexity": lazy_lda.perplexity(r["phi"], data["heldout"], 1),
                         "topic_l1": lazy_lda.topic_l1(r["phi"], data["phi"]),
                         "sampler_seconds": r["seconds"]})
            print(rows[-1], flush=True)
    return rows


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for k, style in ((1000, "o"), (100, "s")):
        sel = [r for r in rows if r["K"] == k]
        ax.plot([r["W"] for r in sel], [r["dense_s"] for r in sel], marker=style,
                label=f"dense, K={k}")
        ax.plot([r["W"] for r in sel], [r["lazy_s"] for r in sel], marker=style,
                linestyle="--", label=f"lazy, K={k}")
    ax.set(xscale="log", yscale="log", xlabel="W", ylabel="seconds per step (median)",
           title="SCIR step, inner loop only (contended 2-core machine)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def machine() -> dict:
    return {"cpu": cpu_model(), "cores": os.cpu_count(),
            "numba_threads": numba.config.NUMBA_NUM_THREADS, "numba": numba.__version__,
            "numpy": np.__version__, "python": platform.python_version()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--words", type=int, default=200)
    parser.add_argument("--thin", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--burn-in", type=int, default=500)
    parser.add_argument("--kept", type=int, default=2000)
    parser.add_argument("--lda-seeds", type=int, default=3)
    parser.add_argument("--lda-iterations", type=int, default=1000)
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    rows = speed(args.steps, args.words, args.thin)
    spread = spreads(400)
    totals = row_totals(args.seeds, args.burn_in, args.kept)
    chains = lda_chains(args.lda_seeds, args.lda_iterations)
    out = {"command": "python benchmarks/lazy_scir.py " + " ".join(
               f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()),
           "machine": machine(),
           "settings": {**vars(args), "beta": BETA, "h": H,
                        "note": "inner-loop figure, contended machine (2 cores shared)"},
           "speed": rows, "normaliser_spread": spread, "row_totals": totals,
           "lda_chains": chains}
    (RESULTS / "lazy_scir.json").write_text(json.dumps(out, indent=1))
    plot(rows, RESULTS / "lazy_scir.png")


if __name__ == "__main__":
    main()
