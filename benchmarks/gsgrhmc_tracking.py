"""How fast gSGRHMC and SGRLD follow a moved target, per entry size (issue 34, part c).

Online LDA moves each topic-word entry's target with every minibatch, so what
decides the perplexity of a short run is how many steps an entry takes to reach a
new target. Here each of ``--chains`` independent entries targets Gamma(a, 1)
(the row's ratio c_k./theta_k. held at 0 through ``totals``) from theta = a / 4
(a stale value), and the script counts the steps until the chains' mean theta has
covered 1 - 1/e of the way to a: SGRLD at its reference step 0.01, gSGRHMC's
splitting at eps 0.02 (the paper's) and 0.05. In u = 2 sqrt(theta) gSGRHMC is
Langevin dynamics with friction theta (its D = G^-1), overdamped once theta > 2,
where its position diffuses with coefficient 1/theta against SGRLD's 1; the
expectation is a relaxation time growing with a for gSGRHMC and not for SGRLD.

    python benchmarks/gsgrhmc_tracking.py [--chains 400] [--max-steps 20000]

Writes benchmarks/results/gsgrhmc_tracking.json. Counts of steps, no timings.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
SIZES = (0.5, 2.0, 10.0, 100.0, 1000.0)
RUNS = {"sgrld eps 0.01": ("sgrld", {}, 0.01),
        "gsgrhmc splitting eps 0.02": ("gsgrhmc", {"integrator": "splitting"}, 0.02),
        "gsgrhmc splitting eps 0.05": ("gsgrhmc", {"integrator": "splitting"}, 0.05)}


def steps_to_relax(name: str, options: dict, eps: float, a: float, chains: int,
                   max_steps: int) -> int | None:
    """Steps until the mean theta of ``chains`` entries started at a / 4 reaches
    a / 4 + (1 - 1/e) (a - a / 4); None if not within ``max_steps``."""
    from dscir.samplers import get_sampler

    sampler = get_sampler(name, **options)
    counts = np.zeros((chains, 1))  # a is the prior: the samplers ask for a positive one
    totals = np.stack([np.ones(chains), np.zeros(chains)])  # ratio c_k./theta_k. = 0
    state = sampler.init(np.full((chains, 1), a / 4))
    goal = a / 4 + (1 - np.exp(-1.0)) * (a - a / 4)
    for k in range(max_steps):
        state = sampler.step(state, a, counts, eps, k + 1, totals)
        if state.theta.mean() >= goal:
            return k + 1
    return None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--chains", type=int, default=400)
    p.add_argument("--max-steps", type=int, default=20_000)
    args = p.parse_args()
    table = {label: {str(a): steps_to_relax(name, options, eps, a, args.chains,
                                            args.max_steps) for a in SIZES}
             for label, (name, options, eps) in RUNS.items()}
    report = {"command": f"python benchmarks/gsgrhmc_tracking.py --chains {args.chains} "
                         f"--max-steps {args.max_steps}",
              "what": "steps until the mean theta of the chains, started at a/4, covers "
                      "1 - 1/e of the way to the target Gamma(a, 1)'s mean a (null: not "
                      "within max_steps)",
              "load_average": os.getloadavg(), "steps_to_relax": table}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "gsgrhmc_tracking.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
