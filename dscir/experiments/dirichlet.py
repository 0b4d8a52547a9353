"""The sparse/dense Dirichlet study (Baker et al. 2018, Sec. 3.2, Figs. 1-2).

For each posterior (sparse, dense), minibatch fraction, seed and method, run
the chain for ``burn_in + kept`` steps at every step size of the method's grid,
keep the step size with the smallest KS distance (Rosenblatt transform) of the
kept samples to the true Dirichlet posterior, and record that distance. Exact
posterior draws of the same number give the KS floor.

Next to it, the kernel Stein discrepancy with the posterior's exact score
(``ksd_of``): of the chain the KS distance chose, and the smallest over the grid
with its step size (the step a KSD-tuned run would take), for every kept sample
(no thinning). It needs no exact samples, only the score, so it is the
diagnostic that carries over to models without an exact posterior.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from dscir.rng import domains
from dscir.diagnostics.ks import rosenblatt_ks
from dscir.diagnostics.ksd import ksd
from dscir.diagnostics.stein import dirichlet_score, dirichlet_totals
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
    rng = np.random.Generator(np.random.PCG64(derive(seed, domains.DIRICHLET_DATA)))
    state = sampler.init(np.random.Generator(np.random.PCG64(derive(seed, domains.DIRICHLET_INIT)))
                         .gamma(1.0, 1.0, size=counts.size))
    out = np.empty((kept, counts.size))
    for m in range(burn_in + kept):
        est = model.minibatch_counts(labels, n, counts.size, rng)
        state = sampler.step(state, model.ALPHA, est, h, derive(seed, domains.DIRICHLET_SAMPLER, m))
        if m >= burn_in:
            out[m - burn_in] = normalize_log(state.log_theta)
    return out


def exact_log_phi(counts: np.ndarray, size: int, seed: int) -> np.ndarray:
    a = np.broadcast_to(model.ALPHA + counts, (size, counts.size))
    return normalize_log(cir.sample_stationary(a, derive(seed, domains.DIRICHLET_EXACT)))


def ksd_of(log_phi: np.ndarray, counts: np.ndarray, seed: int) -> float:
    """KSD (IMQ kernel, c = 1, beta = -1/2) of kept phi samples with the exact score of
    Dirichlet(alpha + counts) in eta = log theta, each sample completed by an exact
    total T from stream (seed, DIRICHLET_KSD) (``dscir.diagnostics.stein``). Every
    chain of a seed gets the same totals: common random numbers for the comparison."""
    rng = np.random.Generator(np.random.PCG64(derive(seed, domains.DIRICHLET_KSD)))
    totals = dirichlet_totals(rng, log_phi.shape[0], model.ALPHA, counts)
    return ksd(*dirichlet_score(log_phi, totals, model.ALPHA, counts))


def study(*, seeds: int = 5, fractions=FRACTIONS, burn_in: int = 1000, kept: int = 1000,
          progress: bool = False) -> dict:
    """All distances, with the chosen step size per seed, and the 5th component's
    samples at the first fraction (for the boxplots)."""
    for f in fractions:
        if not 0 < f <= 1:
            raise DscirError(f"minibatch fractions must be in (0, 1], got {f}")
    if seeds < 1 or burn_in < 0 or kept < 2:
        raise DscirError("need seeds >= 1, burn_in >= 0 and kept >= 2")
    from dscir.progress import tqdm

    rows, fifth = [], {}
    total = len(POSTERIORS) * len(fractions) * seeds
    bar = tqdm(total=total, disable=not progress, desc="dirichlet study")
    for kind, counts in POSTERIORS.items():
        post = model.ALPHA + counts
        fifth[kind] = {"exact": exact_log_phi(counts, kept, 0)[:, 4].tolist()}
        for f in fractions:
            n = max(1, int(round(f * model.N)))
            for seed in range(seeds):
                draws = exact_log_phi(counts, kept, seed)
                exact = rosenblatt_ks(draws, post)
                exact_ksd = ksd_of(draws, counts, seed)
                for method, grid in GRIDS.items():
                    best, by_ksd = None, None
                    for h in grid:
                        lp = run_chain(method, counts, n, h, seed, burn_in, kept)
                        ks = rosenblatt_ks(lp, post)
                        d = ksd_of(lp, counts, seed)
                        if best is None or ks < best[0]:
                            best = (ks, h, lp, d)
                        if by_ksd is None or d < by_ksd[0]:
                            by_ksd = (d, h)
                    rows.append({"posterior": kind, "fraction": f, "minibatch": n,
                                 "seed": seed, "method": method, "ks": best[0],
                                 "step_size": best[1], "exact_ks": exact,
                                 "ksd": best[3], "ksd_best": by_ksd[0],
                                 "ksd_step_size": by_ksd[1], "exact_ksd": exact_ksd})
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
    """Median KS per posterior, fraction and method (and the exact floor); the same
    for the KSD of the KS-chosen chain (``<method>_ksd``, ``exact_ksd``) and the
    grid's smallest KSD (``<method>_ksd_best``)."""
    out = []
    rows = result["distances"]
    for kind in POSTERIORS:
        for f in result["settings"]["fractions"]:
            sel = [r for r in rows if r["posterior"] == kind and r["fraction"] == f]
            row = {"posterior": kind, "fraction": f}
            for method in GRIDS:
                row[method] = float(np.median([r["ks"] for r in sel if r["method"] == method]))
            row["exact"] = float(np.median([r["exact_ks"] for r in sel]))
            for method in GRIDS:
                for key in ("ksd", "ksd_best"):
                    row[f"{method}_{key}"] = float(np.median(
                        [r[key] for r in sel if r["method"] == method]))
            row["exact_ksd"] = float(np.median([r["exact_ksd"] for r in sel]))
            out.append(row)
    return out


def write(result: dict, out: Path) -> list[Path]:
    """JSON of the distances and the three figures, written into ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "dirichlet_study.json", out / "dirichlet_boxplots.png",
             out / "dirichlet_ks.png", out / "dirichlet_ksd.png"]
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

    summ = summary(result)
    for path, suffix, label, yscale in ((paths[2], "", "KS distance", "linear"),
                                        (paths[3], "_ksd", "KSD, exact score", "log")):
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for ax, kind in zip(axes, POSTERIORS):
            sel = [r for r in summ if r["posterior"] == kind]
            for method in (*GRIDS, "exact"):
                ax.plot([r["fraction"] for r in sel], [r[method + suffix] for r in sel],
                        marker="o", label=method, linestyle="--" if method == "exact" else "-")
            ax.set(xscale="log", yscale=yscale, title=kind, xlabel="minibatch fraction",
                   ylabel=f"{label} (median over seeds)")
            ax.legend()
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return paths
