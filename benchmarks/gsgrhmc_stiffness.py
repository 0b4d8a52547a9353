"""Why gSGRHMC trails SGRLD on LDA: one topic with exact counts, no minibatch noise.

One row of W = 6,130 words (wiki's vocabulary size), prior 1e-4, counts a
Zipf(1.1) multinomial draw of 50,000 tokens (the scale of one topic's counts
after the D / |S| factor), from theta0 ~ Gamma(1, 1) as dscir's LDA starts.
The exact posterior of phi is Dirichlet(prior + counts); with no gradient noise
any gap to it is the integrator's. Recorded per sampler: the L1 distance of phi
to the posterior mean (exact draws are ~0.135 away), phi / posterior mean for
the five most frequent words, the total theta and max eps * theta (the explicit
Euler friction step r - eps theta r is unstable beyond 2).

Samplers: dscir's SGRLD (reference schedule), dscir's gSGRHMC with
``integrator="euler"`` (Ma et al. Eq. (17)) at several constant step sizes,
and, as a diagnosis only, the same gSGRHMC with its friction and noise integrated exactly as an
Ornstein-Uhlenbeck step (r -> e^{-eps theta} r + sqrt(1 - e^{-2 eps theta}) xi).

    python benchmarks/gsgrhmc_stiffness.py [--steps 2000]

``--policy`` checks LDA's default policy's gSGRHMC step instead
(``dscir.models.lda.policy``): one row per corpus of ``defaults.py`` (its
stored sizes) and K = 50, 100, counts a Zipf(1.1) draw of N / K tokens over W
words, the reference eps = 0.02 against the policy's; recorded: max eps x
theta over the second half of the steps (or the step where theta stopped being
finite) and the L1 to the posterior mean. Writes gsgrhmc_policy.json.

    python benchmarks/gsgrhmc_stiffness.py --policy --steps 3000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

from _common import cpu_model

RESULTS = Path(__file__).resolve().parent / "results"
W, TOKENS, PRIOR = 6130, 50_000, 1e-4


def topic_counts(n_words: int = W, tokens: int = TOKENS) -> np.ndarray:
    p = 1.0 / np.arange(1, n_words + 1) ** 1.1
    return np.random.default_rng(0).multinomial(tokens, p / p.sum()).astype(np.float64)


def edge(counts: np.ndarray, eps: float, steps: int) -> dict:
    """gSGRHMC at a constant eps on one row: max eps x theta over the second half,
    or the step at which theta stopped being finite."""
    from dscir.rng import derive
    from dscir.samplers import get_sampler

    sampler = get_sampler("gsgrhmc", integrator="euler")
    state = sampler.init(np.random.default_rng(1).gamma(1.0, 1.0, size=(1, counts.size)))
    top = 0.0
    for m in range(steps):
        state = sampler.step(state, PRIOR, counts[None], eps, derive(3, m))
        if not np.all(np.isfinite(state.theta)):
            return {"eps": eps, "diverged_at": m + 1}
        if m >= steps // 2:
            top = max(top, eps * float(state.theta.max()))
    phi = state.theta[0] / state.theta.sum()
    post = (PRIOR + counts) / (PRIOR + counts).sum()
    return {"eps": eps, "max_eps_theta": top, "l1": float(np.abs(phi - post).sum())}


def policy_check(steps: int) -> list[dict]:
    """The reference step against the default policy's on each corpus's scale."""
    from dscir.models.lda.policy import CorpusSize, choose

    rows = []
    for corpus in ("wiki", "ap", "kos", "reuters", "news"):
        c = json.loads((RESULTS / f"defaults_{corpus}.json").read_text())["corpus"]
        size = CorpusSize(c["n_train"], c["n_words"], c["train_tokens"])
        for k in (50, 100):
            counts = topic_counts(size.n_words, round(size.n_tokens / k))
            eps = choose("default", "gsgrhmc", k, 50, size, "euler")["step_size"]
            row = {"corpus": corpus, "K": k, "W": size.n_words, "tokens": int(counts.sum()),
                   "reference": edge(counts, 0.02, steps), "policy": edge(counts, eps, steps)}
            print(row, flush=True)
            rows.append(row)
    return rows


def ou_friction_step(theta, r, counts, eps, rng):
    """gSGRHMC with the friction/noise part as an exact OU step (diagnosis only)."""
    st = np.sqrt(theta)
    force = (PRIOR + counts - 0.5) / st - st * (1.0 + counts.sum() / theta.sum())
    decay = np.exp(-eps * theta)
    r = decay * r + np.sqrt(1.0 - decay**2) * rng.standard_normal(theta.size) + eps * force
    v = theta + eps * st * r
    r = np.where(v < 0, -r, r)
    v = np.abs(v)
    return np.where(v > 0, v, 5e-324), r


def run(kind: str, eps, counts: np.ndarray, steps: int, record) -> dict:
    from dscir.rng import derive
    from dscir.samplers import get_sampler

    phi_star = (PRIOR + counts) / (PRIOR + counts).sum()
    top = np.argsort(-counts)[:5]
    theta = np.random.default_rng(1).gamma(1.0, 1.0, size=(1, W))
    options = {"integrator": "euler"} if kind == "gsgrhmc" else {}
    sampler = None if kind == "gsgrhmc-ou" else get_sampler(kind, **options)
    state = sampler.init(theta) if sampler else None
    r, rng = np.zeros(W), np.random.default_rng(3)
    curve = []
    for m in range(steps):
        h = eps(m)
        if sampler:
            state = sampler.step(state, PRIOR, counts[None], h, derive(3, m))
            theta = state.theta[0]
        else:
            theta, r = ou_friction_step(theta.ravel(), r, counts, h, rng)
        if m + 1 in record:
            phi = theta / theta.sum()
            curve.append({"step": m + 1, "l1": float(np.abs(phi - phi_star).sum()),
                          "top5_ratio": (phi[top] / phi_star[top]).round(3).tolist(),
                          "total_theta": float(theta.sum()),
                          "max_eps_theta": float(h * theta.max())})
    return {"sampler": kind, "step_size_at_0": eps(0), "curve": curve}


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for r in results:
        c = r["curve"]
        ax.plot([p["step"] for p in c], [p["l1"] for p in c], marker="o",
                label=f"{r['sampler']} eps={r['step_size_at_0']:g}")
    ax.axhline(results[0]["exact_l1"], color="k", ls="--", label="exact posterior draws")
    ax.set(xscale="log", xlabel="step (exact counts, one topic, W = 6,130)",
           ylabel="L1(phi, posterior mean of phi)", title="gSGRHMC vs SGRLD without gradient noise")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--policy", action="store_true",
                   help="the default policy's gSGRHMC step against the reference's")
    args = p.parse_args()
    if args.policy:
        load = os.getloadavg()
        out = {"command": "python " + " ".join(sys.argv), "load_before": load,
               "machine": {"cpu": cpu_model(), "cores": os.cpu_count()}, "args": vars(args),
               "rows": policy_check(args.steps), "load_after": os.getloadavg()}
        (RESULTS / "gsgrhmc_policy.json").write_text(json.dumps(out, indent=1))
        return
    from dscir.samplers.schedules import polynomial

    counts = topic_counts()
    draws = np.random.default_rng(2).gamma(PRIOR + counts, size=(50, W))
    draws /= draws.sum(axis=1, keepdims=True)
    exact_l1 = float(np.abs(draws - (PRIOR + counts) / (PRIOR + counts).sum()).sum(1).mean())
    record = {s for s in (1, 5, 20, 50, 100, 200, 500, 1000, 2000, 5000) if s <= args.steps}
    runs = [("sgrld", polynomial(0.01, 1000.0, 0.6))]
    runs += [("gsgrhmc", (lambda e: lambda m: e)(e)) for e in (0.002, 0.02, 0.05)]
    runs += [("gsgrhmc-ou", (lambda e: lambda m: e)(e)) for e in (0.02, 0.05)]
    results = [{**run(kind, eps, counts, args.steps, record), "exact_l1": exact_l1}
               for kind, eps in runs]
    for r in results:
        last = r["curve"][-1]
        print(f"{r['sampler']:11s} eps {r['step_size_at_0']:<6g} L1 {last['l1']:.3f} "
              f"top5 {last['top5_ratio']} T {last['total_theta']:.0f} "
              f"max eps*theta {last['max_eps_theta']:.2f}")
    RESULTS.mkdir(exist_ok=True)
    out = {"command": "python " + " ".join(sys.argv), "load": os.getloadavg(),
           "machine": {"cpu": cpu_model(), "cores": os.cpu_count()}, "args": vars(args),
           "exact_l1": exact_l1, "results": results}
    (RESULTS / "gsgrhmc_stiffness.json").write_text(json.dumps(out, indent=1))
    plot(results, RESULTS / "gsgrhmc_stiffness.png")


if __name__ == "__main__":
    main()
