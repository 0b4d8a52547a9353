"""Speed of the expanded-mean samplers' steps (SGLD, SGRLD, SGHMC, gSGRHMC) in two source trees.

One ``step`` of each sampler (both integrators of the Hamiltonian ones) on a
K x W = 100 x 20,000 state (``--setting``: "dense", a_hat = 0.5 + counts with
counts ~ Poisson(1), eps = 1e-3; "lda", gSGRHMC's LDA setting, ``SETTINGS``): the median seconds of ``--steps`` steps after one warm-up step
(compilation), on one thread. Each tree (``--tree LABEL=PATH``, its package on
PYTHONPATH, its own numba cache) runs in a child process, the trees taking
turns for ``--rounds`` rounds so a loaded machine slows them alike; the result
is each case's median over the rounds. Written for the refactor of the
kernels into shared pieces (issue 29): before and after, same conditions.

    python benchmarks/sampler_steps.py --tree main=/path/to/main --tree new=.. [--rounds 5]
        [--setting lda --cases gsgrhmc-splitting --out NAME.json]

Writes benchmarks/results/sampler_steps.json (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import cpu_model

HERE = Path(__file__).resolve().parent
CASES = (("sgld", {}), ("sgrld", {}), ("sghmc", {"integrator": "euler"}), ("sghmc", {}),
         ("gsgrhmc", {"integrator": "euler"}), ("gsgrhmc", {}))


def case_name(name: str, options: dict) -> str:
    return f"{name}-{options.get('integrator', 'splitting')}" if name in ("sghmc", "gsgrhmc") \
        else name


# The settings: "dense" a_hat = 0.5 + Poisson(1) counts (every a >= 1/2); "lda" LDA's
# gSGRHMC at its reference prior 1e-4 and eps 0.02, minibatch counts 10 x Poisson(0.2)
# (82 % zero: a < 1/2, gSGRHMC's exact log flow) from theta ~ Gamma(0.2).
SETTINGS = {"dense": {"prior": 0.5, "eps": 1e-3, "rate": 1.0, "scale": 1.0, "shape": 1.0},
            "lda": {"prior": 1e-4, "eps": 0.02, "rate": 0.2, "scale": 10.0, "shape": 0.2}}


def child(steps: int, setting: str, only: list[str]) -> None:
    """In the tree on PYTHONPATH: each case's median step, as JSON on stdout."""
    import numba

    from dscir.samplers import get_sampler

    numba.set_num_threads(1)
    s = SETTINGS[setting]
    out = {}
    for name, options in CASES:
        if only and case_name(name, options) not in only:
            continue
        rng = np.random.default_rng(0)
        counts = s["scale"] * rng.poisson(s["rate"], (100, 20_000)).astype(np.float64)
        sampler = get_sampler(name, **options)
        state = sampler.step(sampler.init(rng.gamma(s["shape"], 1.0, counts.shape)),
                             s["prior"], counts, s["eps"], 1)
        times = []
        for k in range(steps):
            start = time.perf_counter()
            state = sampler.step(state, s["prior"], counts, s["eps"], 2 + k)
            times.append(time.perf_counter() - start)
        out[case_name(name, options)] = float(np.median(times))
    print(json.dumps(out))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tree", action="append", required="--child" not in sys.argv,
                   help="LABEL=PATH of a source tree (PATH holds the dscir package)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=25)
    p.add_argument("--setting", choices=SETTINGS, default="dense")
    p.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    p.add_argument("--out", default="sampler_steps.json", help="file in benchmarks/results")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    only = [c for c in args.cases.split(",") if c]
    if args.child:
        return child(args.steps, args.setting, only)
    trees = dict(t.split("=", 1) for t in args.tree)
    runs: dict[str, list[dict]] = {label: [] for label in trees}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as caches:
        for _ in range(args.rounds):
            for label, path in trees.items():
                env = {**os.environ, "PYTHONPATH": str(Path(path).resolve()),
                       "NUMBA_CACHE_DIR": str(Path(caches) / label)}
                done = subprocess.run([sys.executable, __file__, "--child", "--steps",
                                       str(args.steps), "--setting", args.setting,
                                       "--cases", args.cases], env=env, cwd=HERE,
                                      check=True, capture_output=True, text=True)
                runs[label].append(json.loads(done.stdout))
    report = {
        "command": "python benchmarks/sampler_steps.py " + " ".join(
            f"--tree {label}=<{label}>" for label in trees) + f" --rounds {args.rounds} "
            f"--steps {args.steps} --setting {args.setting}"
            + (f" --cases {args.cases}" if args.cases else "") + f" --out {args.out}",
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                    "load_average_before": load_before,
                    "load_average": os.getloadavg(), "python": platform.python_version()},
        "settings": {"shape": [100, 20_000], **SETTINGS[args.setting], "threads": 1,
                     "steps": args.steps, "rounds": args.rounds, "setting": args.setting},
        "contended": "the machine's 2 cores were shared with other developers' work; the "
                     "trees take turns each round so the load slows them alike",
        "median_seconds_per_step": {label: {c: float(np.median([r[c] for r in rs]))
                                            for c in rs[0]} for label, rs in runs.items()},
        "runs": runs,
    }
    (HERE / "results" / args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["median_seconds_per_step"], indent=1))


if __name__ == "__main__":
    main()
