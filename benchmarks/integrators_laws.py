"""gSGRHMC's and SGHMC's integrators ("euler", "splitting") against exact laws.

1-D Gamma(a, 1) targets (one column, no counts), 2,000 independent chains from
theta = 2, 60 / eps + 200 steps: the KS distance of the final theta to Gamma(a)
(1 % critical value 0.036), theta's mean, and the final momentum's variance
(exactly 1); "diverged" when a chain left the doubles. SGHMC with friction 5 on
Gamma(5) (its Euler step is unstable once eps C > 2).

One topic row without gradient noise (as ``gsgrhmc_stiffness.py``: W = 6,130,
prior 1e-4, a Zipf(1.1) draw of 50,000 tokens, theta0 ~ Gamma(1, 1)), 2,000
steps at a constant eps: the L1 distance of phi to the posterior mean (exact
draws are ~0.135 away), the total theta and the mean theta of the words
without counts (the exact posterior's is 1e-4). As a diagnosis only, the same
splitting with the exact position flow theta' = (sqrt(theta) + eps r / 4)^2
(``exact-flow``, numpy): why dscir moves theta linearly (docs/integrators.md).

    python benchmarks/integrators_laws.py          # about a minute; writes
    results/integrators_laws.json
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
from scipy import stats

from _common import cpu_model

RESULTS = Path(__file__).resolve().parent / "results"
INTEGRATORS = ("euler", "splitting")


def gamma_case(name: str, integrator: str, a: float, eps: float, **options) -> dict:
    from dscir.rng import derive
    from dscir.samplers import get_sampler

    sampler = get_sampler(name, integrator=integrator, **options)
    state = sampler.init(np.full((2000, 1), 2.0))
    zeros = np.zeros((2000, 1))
    with np.errstate(all="ignore"):
        for m in range(int(60 / eps) + 200):
            state = sampler.step(state, a, zeros, eps, derive(0, m))
    theta, r = state.theta[:, 0], state.r[:, 0]
    row = {"sampler": name, "integrator": integrator, "a": a, "eps": eps, **options}
    if not (np.all(np.isfinite(r)) and np.all(np.abs(theta) < 1e6)):
        return {**row, "diverged": True}
    return {**row, "diverged": False, "ks": float(stats.kstest(theta, stats.gamma(a).cdf)
                                                  .statistic),
            "mean": float(theta.mean()), "var_r": float(r.var())}


def exact_flow_step(theta, r, prior, counts, eps, rng):
    """The splitting step with the exact A flow in s = 2 sqrt(theta) (diagnosis)."""
    st = np.sqrt(theta)
    m = r + eps * ((prior + counts - 0.5) / st - st * (1.0 + counts.sum() / theta.sum()))
    u = st + 0.25 * eps * m
    m, u = np.where(u < 0, -m, m), np.abs(u)
    decay = np.exp(-eps * u * u)
    m = decay * m + np.sqrt(1.0 - decay**2) * rng.standard_normal(theta.size)
    u = u + 0.25 * eps * m
    m, u = np.where(u < 0, -m, m), np.abs(u)
    return np.maximum(u * u, 5e-324), m


def topic_row(integrator: str, eps: float, steps: int = 2000) -> dict:
    from dscir.rng import derive
    from dscir.samplers import get_sampler

    w = 6130
    p = 1.0 / np.arange(1, w + 1) ** 1.1
    counts = np.random.default_rng(0).multinomial(50_000, p / p.sum()).astype(np.float64)
    post = (1e-4 + counts) / (1e-4 + counts).sum()
    theta, r = np.random.default_rng(1).gamma(1.0, 1.0, size=w), np.zeros(w)
    sampler = None if integrator == "exact-flow" else get_sampler("gsgrhmc",
                                                                   integrator=integrator)
    state, rng = sampler.init(theta[None]) if sampler else None, np.random.default_rng(3)
    with np.errstate(all="ignore"):
        for m in range(steps):
            if sampler:
                state = sampler.step(state, 1e-4, counts[None], eps, derive(3, m))
            else:
                theta, r = exact_flow_step(theta, r, 1e-4, counts, eps, rng)
    theta, r = (state.theta[0], state.r[0]) if sampler else (theta, r)
    row = {"integrator": integrator, "eps": eps, "steps": steps}
    if not np.all(np.isfinite(r)):
        return {**row, "diverged": True}
    return {**row, "diverged": False,
            "l1": float(np.abs(theta / theta.sum() - post).sum()),
            "total_theta": float(theta.sum()),
            "mean_theta_without_counts": float(theta[counts == 0].mean())}


def main() -> None:
    load = os.getloadavg()
    gammas = [gamma_case("gsgrhmc", i, a, eps) for a in (0.3, 1.0, 3.0, 10.0)
              for eps in (0.05, 0.2, 0.5) for i in INTEGRATORS]
    gammas += [gamma_case("sghmc", i, 5.0, eps, friction=5.0) for eps in (0.1, 0.3, 0.5)
               for i in INTEGRATORS]
    rows = [topic_row(i, eps) for eps in (0.02, 0.05) for i in INTEGRATORS]
    rows.append(topic_row("exact-flow", 0.02))
    for r in gammas + rows:
        print(r, flush=True)
    RESULTS.mkdir(exist_ok=True)
    out = {"command": "python " + " ".join(sys.argv), "load": [load, os.getloadavg()],
           "machine": {"cpu": cpu_model(), "cores": os.cpu_count()},
           "gamma_targets": gammas, "topic_row": rows}
    (RESULTS / "integrators_laws.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
