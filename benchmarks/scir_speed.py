"""Speed of the SCIR update (``dscir.samplers.cir.step``) on a K x W matrix.

The driver's dense update of LDA topics: one exact CIR transition per entry
of a 100 x 100,000 matrix with a_hat = prior + counts, h = 0.5. Four regimes,
because the per-entry algorithm depends on the shape a (see cir.py):

- ``beta=0.5``: the SCIR LDA reference prior; counts are sparse (0.2% of the
  entries, values (D/|S|) x averaged Gibbs counts ~ 160 x Gamma(1, 2)); the
  empty entries have a = 1/2 exactly.
- ``beta=0.1``: the same counts, a < 1/2 on the empty entries (Poisson route).
- ``beta=1e-4``: the SGRLD LDA prior under SCIR: tiny shapes, log-scale draws.
- ``dense``: a = 0.5 + 100 on every entry (every entry draws a gamma).

The chain runs a few warm-up steps first so the state sits in its regime. The
rate is element updates per second of the whole ``step`` call (validation and
the output allocation included), the median of several steps, on one thread
(``numba.set_num_threads(1)``) and on all cores. A second sweep varies the
matrix size for the reference regime. Writes benchmarks/results/scir_speed.json
and .png.

    python benchmarks/scir_speed.py [--steps 7]
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

from dscir.rng import derive
from dscir.samplers import cir

from _common import cpu_model

RESULTS = Path(__file__).resolve().parent / "results"
TARGET = 15e6  # element updates per second per core
H = 0.5


def sparse_counts(shape, rng) -> np.ndarray:
    """(D/|S|) x averaged minibatch counts: 0.2% of entries, 160 x Gamma(1, 2)."""
    counts = np.zeros(shape)
    hit = rng.random(shape) < 0.002
    counts[hit] = 160.0 * rng.gamma(1.0, 2.0, hit.sum())
    return counts


def regimes(shape, rng) -> dict:
    counts = sparse_counts(shape, rng)
    return {
        "beta=0.5": (0.5, counts),
        "beta=0.1": (0.1, counts),
        "beta=1e-4": (1e-4, counts),
        "dense": (0.5, np.full(shape, 100.0)),
    }


def time_steps(prior, counts, threads: int, steps: int, seed: int) -> float:
    """Median seconds per SCIR step on ``threads`` threads, after warm-up."""
    numba.set_num_threads(threads)
    rng = np.random.default_rng(seed)
    state = cir.init(rng.gamma(1.0, 1.0, counts.shape))
    for m in range(3):  # compile (first time) and reach the regime
        state = cir.step(state, prior, counts, H, derive(seed, m))
    seconds = []
    for m in range(steps):
        t = time.perf_counter()
        state = cir.step(state, prior, counts, H, derive(seed, 100 + m))
        seconds.append(time.perf_counter() - t)
    assert np.all(np.isfinite(state.log_theta))
    return float(np.median(seconds))


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    rows = report["regimes"]
    names = list(dict.fromkeys(r["regime"] for r in rows))
    threads = sorted({r["threads"] for r in rows})
    x = np.arange(len(names))
    width = 0.8 / len(threads)
    for i, t in enumerate(threads):
        rate = [next(r["updates_per_s"] for r in rows if r["regime"] == n and r["threads"] == t)
                for n in names]
        left.bar(x + (i - (len(threads) - 1) / 2) * width, np.array(rate) / 1e6, width,
                 label=f"{t} thread{'s' if t > 1 else ''}")
    left.axhline(TARGET / 1e6, color="k", ls="--", lw=1, label="target 15 M / core")
    left.set_xticks(x, names)
    left.set_ylabel("million element updates / s")
    left.set_title(f"SCIR step, {report['settings']['K']} x {report['settings']['W']:,}, h = {H}")
    left.legend(fontsize=8)
    left.grid(axis="y", alpha=0.3)
    for t in threads:
        pts = [r for r in report["sizes"] if r["threads"] == t]
        right.plot([r["elements"] for r in pts], [r["updates_per_s"] / 1e6 for r in pts], "o-",
                   label=f"{t} thread{'s' if t > 1 else ''}")
    right.axhline(TARGET / 1e6, color="k", ls="--", lw=1)
    right.set_xscale("log")
    right.set_xlabel("matrix entries (K = 100)")
    right.set_ylabel("million element updates / s")
    right.set_title("beta = 0.5 regime vs matrix size")
    right.legend(fontsize=8)
    right.grid(alpha=0.3)
    fig.suptitle(report["machine"]["cpu"], fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=7, help="timed steps per setting (median)")
    p.add_argument("--K", type=int, default=100)
    p.add_argument("--W", type=int, default=100_000)
    args = p.parse_args()
    all_threads = numba.config.NUMBA_NUM_THREADS
    thread_counts = sorted({1, all_threads})
    report = {
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "numba_threads": all_threads,
                    "numba": numba.__version__, "numpy": np.__version__,
                    "python": platform.python_version()},
        "settings": vars(args) | {"h": H, "target_updates_per_s_per_core": TARGET},
        "regimes": [], "sizes": [],
    }
    rng = np.random.default_rng(0)
    n = args.K * args.W
    for name, (prior, counts) in regimes((args.K, args.W), rng).items():
        for t in thread_counts:
            sec = time_steps(prior, counts, t, args.steps, seed=1)
            report["regimes"].append({"regime": name, "prior": prior, "threads": t,
                                      "seconds_per_step": sec, "steps_per_s": 1 / sec,
                                      "updates_per_s": n / sec})
            print(f"{name:>10} {t} thread(s): {1 / sec:6.2f} steps/s, "
                  f"{n / sec / 1e6:6.1f} M updates/s", flush=True)
    for w in (100, 1_000, 10_000, 100_000):
        counts = sparse_counts((args.K, w), rng)
        steps = max(args.steps, int(3e7 // (args.K * w)))  # ~1 s of steps for small sizes
        for t in thread_counts:
            sec = time_steps(0.5, counts, t, steps, seed=2)
            report["sizes"].append({"elements": args.K * w, "threads": t, "seconds_per_step": sec,
                                    "updates_per_s": args.K * w / sec})
            print(f"size {args.K} x {w:>7} {t} thread(s): {args.K * w / sec / 1e6:6.1f} M/s",
                  flush=True)
    numba.set_num_threads(all_threads)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "scir_speed.json").write_text(json.dumps(report, indent=2) + "\n")
    plot(report, RESULTS / "scir_speed.png")


if __name__ == "__main__":
    main()
