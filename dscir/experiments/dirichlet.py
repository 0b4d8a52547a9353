"""The sparse/dense Dirichlet study (Baker et al. 2018, Sec. 3.2, Figs. 1-2).

For each posterior (sparse, dense), minibatch fraction, seed and method, run
the chain for ``burn_in + kept`` steps at every step size of the method's grid,
keep the step size with the smallest KS distance (Rosenblatt transform) of the
kept samples to the true Dirichlet posterior, and record that distance. Exact
posterior draws of the same number give the KS floor.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from dscir import streams
from dscir.diagnostics.ks import rosenblatt_ks
from dscir.errors import DscirError
from dscir.models import dirichlet as model
from dscir.rng import derive
from dscir.samplers import cir, sgrld
from dscir.samplers.simplex import normalize_log

GRIDS = {
    "scir": [1, 0.5, 0.1, 0.05, 0.01, 0.005, 0.001],
    "sgrld": [1e-3, 5e-4, 1e-4, 5e-5, 1e-5, 5e-6, 1e-6],
}
SAMPLERS = {"scir": cir, "sgrld": sgrld}
FRACTIONS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5]
POSTERIORS = {"sparse": model.SPARSE, "dense": model.DENSE}


def run_chain(method: str, counts: np.ndarray, n: int, h: float, seed: int,
              burn_in: int, kept: int) -> np.ndarray:
    """log phi of the kept samples (kept x d) of one chain."""
    sampler = SAMPLERS[method]
    labels = model.observations(counts)
    rng = np.random.Generator(np.random.PCG64(derive(seed, streams.DIRICHLET_DATA)))
    state = sampler.init(np.random.Generator(np.random.PCG64(derive(seed, streams.DIRICHLET_INIT)))
                         .gamma(1.0, 1.0, size=counts.size))
    out = np.empty((kept, counts.size))
    for m in range(burn_in + kept):
        est = model.minibatch_counts(labels, n, counts.size, rng)
        state = sampler.step(state, model.ALPHA, est, h, derive(seed, streams.DIRICHLET_SAMPLER, m))
        if m >= burn_in:
            out[m - burn_in] = normalize_log(state.log_theta)
    return out


def exact_log_phi(counts: np.ndarray, size: int, seed: int) -> np.ndarray:
    a = np.broadcast_to(model.ALPHA + counts, (size, counts.size))
    return normalize_log(cir.sample_stationary(a, derive(seed, streams.DIRICHLET_EXACT)))


def study(*, seeds: int = 5, fractions=FRACTIONS, burn_in: int = 1000, kept: int = 1000,
          progress: bool = False) -> dict:
    """All distances, with the chosen step size per seed, and the 5th component's
    samples at the first fraction (for the boxplots)."""
    for f in fractions:
        if not 0 < f <= 1:
            raise DscirError(f"minibatch fractions must be in (0, 1], got {f}")
    if seeds < 1 or burn_in < 0 or kept < 2:
        raise DscirError("need seeds >= 1, burn_in >= 0 and kept >= 2")
    from tqdm.auto import tqdm

    rows, fifth = [], {}
    total = len(POSTERIORS) * len(fractions) * seeds
    bar = tqdm(total=total, disable=not progress, desc="dirichlet study")
    for kind, counts in POSTERIORS.items():
        post = model.ALPHA + counts
        fifth[kind] = {"exact": exact_log_phi(counts, kept, 0)[:, 4].tolist()}
        for f in fractions:
            n = max(1, int(round(f * model.N)))
            for seed in range(seeds):
                exact = rosenblatt_ks(exact_log_phi(counts, kept, seed), post)
                for method, grid in GRIDS.items():
                    best = None
                    for h in grid:
                        lp = run_chain(method, counts, n, h, seed, burn_in, kept)
                        ks = rosenblatt_ks(lp, post)
                        if best is None or ks < best[0]:
                            best = (ks, h, lp)
                    rows.append({"posterior": kind, "fraction": f, "minibatch": n,
                                 "seed": seed, "method": method, "ks": best[0],
                                 "step_size": best[1], "exact_ks": exact})
                    if f == fractions[0] and seed == 0:
                        fifth[kind][method] = best[2][:, 4].tolist()
                bar.update(1)
    bar.close()
    return {"settings": {"d": model.D, "N": model.N, "alpha": model.ALPHA,
                         "sparse": model.SPARSE.tolist(), "dense": model.DENSE.tolist(),
                         "burn_in": burn_in, "kept": kept, "seeds": seeds,
                         "fractions": list(fractions), "grids": GRIDS},
            "distances": rows, "fifth_component_log_phi": fifth}


def summary(result: dict) -> list[dict]:
    """Median KS per posterior, fraction and method (and the exact floor)."""
    out = []
    rows = result["distances"]
    for kind in POSTERIORS:
        for f in result["settings"]["fractions"]:
            sel = [r for r in rows if r["posterior"] == kind and r["fraction"] == f]
            row = {"posterior": kind, "fraction": f}
            for method in GRIDS:
                row[method] = float(np.median([r["ks"] for r in sel if r["method"] == method]))
            row["exact"] = float(np.median([r["exact_ks"] for r in sel]))
            out.append(row)
    return out


def write(result: dict, out: Path) -> list[Path]:
    """JSON of the distances and the two figures, written into ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "dirichlet_study.json", out / "dirichlet_boxplots.png",
             out / "dirichlet_ks.png"]
    paths[0].write_text(json.dumps({**result, "summary": summary(result)}, indent=1))

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, kind in zip(axes, POSTERIORS):
        data = result["fifth_component_log_phi"][kind]
        names = [m for m in ("exact", "scir", "sgrld") if m in data]
        ax.boxplot([np.asarray(data[m]) / np.log(10) for m in names])
        ax.set_xticks(range(1, len(names) + 1), names)
        ax.set(title=f"{kind}: 5th component (fraction {result['settings']['fractions'][0]})",
               ylabel="log10 phi_5")
    fig.tight_layout()
    fig.savefig(paths[1], dpi=120)
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    summ = summary(result)
    for ax, kind in zip(axes, POSTERIORS):
        sel = [r for r in summ if r["posterior"] == kind]
        for method in (*GRIDS, "exact"):
            ax.plot([r["fraction"] for r in sel], [r[method] for r in sel], marker="o",
                    label=method, linestyle="--" if method == "exact" else "-")
        ax.set(xscale="log", title=kind, xlabel="minibatch fraction",
               ylabel="KS distance (median over seeds)")
        ax.legend()
    fig.tight_layout()
    fig.savefig(paths[2], dpi=120)
    plt.close(fig)
    return paths
