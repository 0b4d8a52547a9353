"""gSGRHMC with the Euler and the splitting integrator beside SGRLD on ap (short run).

The shared ap corpus (empty documents dropped, 12.5 % of the documents held
out, seed 0), K = 50, LDA's default policy (minibatch, sweeps, priors; gSGRHMC's
step: the reference 0.02 with the splitting integrator, the Euler bound with
``integrator="euler"``), through ``dscir.LDA(...).fit`` on one 2-worker
LocalCluster, scored every ``--eval-every`` iterations (held-out perplexity by
document completion). Also the Euler step at the papers' 0.02 without the
policy's bound. A short comparison, not Ma et al.'s Fig. 3: a few hundred
iterations, one seed by default; the seconds are contended (the machine's two
cores were shared with other work) and are recorded only as such.

    python benchmarks/gsgrhmc_splitting.py [--iterations 200] [--seeds 1]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from _common import cpu_model, shared_data

RESULTS = Path(__file__).resolve().parent / "results"
RUNS = {
    "sgrld": ("sgrld", {}, None),
    "gsgrhmc euler (policy's bound)": ("gsgrhmc", {"integrator": "euler"}, None),
    "gsgrhmc euler eps 0.02": ("gsgrhmc", {"integrator": "euler"}, 0.02),
    "gsgrhmc splitting": ("gsgrhmc", {"integrator": "splitting"}, None),
}


def make_store(path: Path) -> Path:
    from dscir.corpus import ingest_ldac, split_heldout

    data = shared_data() / "ap"
    ingest_ldac(data / "ap.dat", data / "vocab.txt", path, drop_empty=True)
    split_heldout(path, fraction=0.125, seed=0)
    return path


def fit(client, store: Path, label: str, seed: int, args) -> dict:
    from dscir.api import LDA
    from dscir.errors import DscirError

    sampler, options, step = RUNS[label]
    model = LDA(n_topics=50, sampler=sampler, sampler_options=options, step_size=step,
                n_iter=args.iterations, eval_every=args.eval_every, seed=seed,
                policy="default", progress=False)
    start, load = time.perf_counter(), os.getloadavg()
    row = {"label": label, "seed": seed, "load_before": load}
    try:
        model.fit(str(store), client=client)
    except DscirError as e:
        return {**row, "error": str(e)}
    cfg = model.config_
    return {**row, "step_size": cfg.step_size, "batch_size": cfg.batch_size,
            "sweeps": cfg.sweeps, "sampler_options": cfg.sampler_options,
            "curve": [{"iteration": e.iteration, "perplexity": e.perplexity}
                      for e in model.evaluations_],
            "seconds_contended": time.perf_counter() - start, "load_after": os.getloadavg()}


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, r in enumerate(x for x in results if "curve" in x):
        c = r["curve"]
        ax.plot([p["iteration"] for p in c], [p["perplexity"] for p in c], marker="o",
                color=f"C{list(RUNS).index(r['label'])}", alpha=0.8,
                label=f"{r['label']} (eps {r['step_size']:.3g})" if r["seed"] == 0 else None)
    ax.set(xlabel="iteration (default policy's minibatch)", yscale="log",
           ylabel="held-out perplexity (document completion)",
           title="ap, K = 50: gSGRHMC Euler vs splitting, SGRLD")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=int, default=200)
    p.add_argument("--eval-every", type=int, default=25)
    p.add_argument("--seeds", type=int, default=1)
    args = p.parse_args()
    from distributed import Client, LocalCluster

    RESULTS.mkdir(exist_ok=True)
    out = {"command": "python " + " ".join(sys.argv), "args": vars(args),
           "machine": {"cpu": cpu_model(), "cores": os.cpu_count()},
           "timing": "contended: two cores shared with other developers' work", "runs": []}
    with tempfile.TemporaryDirectory() as tmp, \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                         dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client:
        store = make_store(Path(tmp) / "ap.zarr")
        for seed in range(args.seeds):
            for label in RUNS:
                out["runs"].append(fit(client, store, label, seed, args))
                last = out["runs"][-1]
                print(label, seed, last.get("error") or [round(c["perplexity"])
                                                         for c in last["curve"]], flush=True)
                (RESULTS / "gsgrhmc_splitting.json").write_text(json.dumps(out, indent=1))
    plot(out["runs"], RESULTS / "gsgrhmc_splitting.png")


if __name__ == "__main__":
    main()
