"""KSD and ESS of SGLD against the step size: Fig. 1 of Nemeth & Fearnhead (2021).

Target: the 2-D Gaussian N(0, Sigma), Sigma = P D P^T, D = diag(2, 1), P the
rotation by pi/4; score grad log pi(theta) = -Sigma^{-1} theta. SGLD (plain
numpy) theta' = theta + h * g + sqrt(2h) xi, xi ~ N(0, I), where g is the exact
score plus gradient noise N(0, 0.01 I) (variance 0.01, sd 0.1); 10,000
iterations from (0, 0) (the mode, so no burn-in is dropped, as in the review),
h in {1e-3, 1e-2, 1e-1, 1}, one fixed seed per h.

- KSD (``dscir.diagnostics.ksd.ksd``, IMQ kernel c = 1, beta = -1/2) of the
  chain thinned to 2,000 points (every 5th iterate; the cost is quadratic in
  the number of points), with the exact scores. For scale, the KSD of 2,000
  exact independent draws from pi is also reported.
- ESS: Geyer's initial positive sequence estimator per coordinate on the whole
  10,000-iterate chain (autocorrelations by FFT; sums of adjacent pairs
  rho_{2m} + rho_{2m+1} are added while positive; ESS = n / (-1 + 2 sum)).
  ESS assumes an exact kernel: it rewards large h and does not see the bias.

Command: ``cd benchmarks && python ksd_sgld.py`` (a few seconds) ->
``results/ksd_sgld.json``, ``results/ksd_sgld.png``.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import cpu_model  # noqa: E402

from dscir.diagnostics.ksd import ksd  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
STEPS = (1e-3, 1e-2, 1e-1, 1.0)
N_ITER = 10_000
KSD_POINTS = 2_000
GRAD_NOISE_VAR = 0.01
SEED = 2021

_ANGLE = np.pi / 4
P = np.array([[np.cos(_ANGLE), -np.sin(_ANGLE)], [np.sin(_ANGLE), np.cos(_ANGLE)]])
SIGMA = P @ np.diag([2.0, 1.0]) @ P.T
PRECISION = np.linalg.inv(SIGMA)


def score(theta: np.ndarray) -> np.ndarray:
    """grad log pi for rows of theta."""
    return -theta @ PRECISION  # PRECISION is symmetric


def sgld(h: float, n_iter: int, rng: np.random.Generator) -> np.ndarray:
    theta = np.zeros(2)
    chain = np.empty((n_iter, 2))
    grad_noise = np.sqrt(GRAD_NOISE_VAR) * rng.standard_normal((n_iter, 2))
    xi = rng.standard_normal((n_iter, 2))
    for t in range(n_iter):
        g = -PRECISION @ theta + grad_noise[t]
        theta = theta + h * g + np.sqrt(2.0 * h) * xi[t]
        chain[t] = theta
    return chain


def geyer_ess(x: np.ndarray) -> float:
    """Effective sample size of a 1-D chain by Geyer's initial positive sequence."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    y = x - x.mean()
    f = np.fft.rfft(y, 2 * n)
    acov = np.fft.irfft(f * np.conj(f))[:n] / n
    if acov[0] <= 0:
        return float("nan")
    rho = acov / acov[0]
    total = 0.0
    for m in range(n // 2):
        pair = rho[2 * m] + rho[2 * m + 1]
        if pair <= 0:
            break
        total += pair
    tau = -1.0 + 2.0 * total
    return float(n / max(tau, 1e-12))


def plot(rows: list[dict], exact_ksd: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hs = [r["h"] for r in rows]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.6))
    a1.loglog(hs, [r["ksd"] for r in rows], "o-", label="SGLD chain (thinned to 2,000)")
    a1.axhline(exact_ksd, color="grey", ls="--", label="2,000 exact draws")
    a1.set_ylim(bottom=exact_ksd / 1.5)
    a1.set_xlabel("step size h")
    a1.set_ylabel("KSD (IMQ, c = 1, beta = -1/2)")
    a1.legend(fontsize=8)
    a2.loglog(hs, [r["ess"][0] for r in rows], "o-", label="theta_1")
    a2.loglog(hs, [r["ess"][1] for r in rows], "s--", label="theta_2")
    a2.set_xlabel("step size h")
    a2.set_ylabel("ESS (Geyer IPS, 10,000 iterations)")
    a2.legend(fontsize=8)
    fig.suptitle("SGLD on a correlated 2-D Gaussian (Nemeth & Fearnhead 2021, Fig. 1)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    t0 = time.perf_counter()
    rows = []
    thin = N_ITER // KSD_POINTS
    for i, h in enumerate(STEPS):
        rng = np.random.default_rng([SEED, i])
        chain = sgld(h, N_ITER, rng)
        kept = chain[thin - 1 :: thin]
        rows.append({
            "h": h,
            "ksd": ksd(kept, score(kept)),
            "ess": [geyer_ess(chain[:, 0]), geyer_ess(chain[:, 1])],
            "mean": chain.mean(axis=0).tolist(),
            "cov": np.cov(chain.T).tolist(),
        })
    exact = np.random.default_rng([SEED, 99]).multivariate_normal(np.zeros(2), SIGMA, KSD_POINTS)
    exact_ksd = ksd(exact, score(exact))
    seconds = time.perf_counter() - t0
    best_ksd = min(rows, key=lambda r: r["ksd"])["h"]
    best_ess = max(rows, key=lambda r: min(r["ess"]))["h"]
    report = {
        "what": "SGLD on N(0, P diag(2,1) P^T), P = rotation by pi/4; KSD and ESS against h",
        "settings": {"iterations": N_ITER, "start": [0.0, 0.0], "grad_noise_var": GRAD_NOISE_VAR,
                     "ksd_points": KSD_POINTS, "thin": thin, "kernel": {"c": 1.0, "beta": -0.5},
                     "ess": "Geyer initial positive sequence, per coordinate, whole chain",
                     "seed": SEED},
        "sigma": SIGMA.tolist(),
        "rows": rows,
        "exact_draws_ksd": exact_ksd,
        "lowest_ksd_h": best_ksd,
        "largest_ess_h": best_ess,
        "seconds": seconds,
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                    "python": platform.python_version(), "numpy": np.__version__},
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "ksd_sgld.json").write_text(json.dumps(report, indent=2) + "\n")
    plot(rows, exact_ksd, RESULTS / "ksd_sgld.png")
    print(f"{'h':>7} {'KSD':>8} {'ESS theta_1':>12} {'ESS theta_2':>12}")
    for r in rows:
        print(f"{r['h']:>7g} {r['ksd']:8.4f} {r['ess'][0]:12.0f} {r['ess'][1]:12.0f}")
    print(f"exact draws KSD {exact_ksd:.4f}; lowest KSD at h = {best_ksd:g}, "
          f"largest ESS at h = {best_ess:g}; {seconds:.1f} s")


if __name__ == "__main__":
    main()
