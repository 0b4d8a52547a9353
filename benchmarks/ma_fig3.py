"""Ma, Chen & Fox (2015) Fig. 3: online LDA, perplexity against documents processed.

The paper's four samplers at its settings, and SCIR at its own reference setting
beside them, K = 50, minibatch 50, on the shared wiki corpus (1,000 seeded
held-out documents), several seeds, all chains in lockstep on one 2-worker
LocalCluster. The paper writes gamma for the document-topic and alpha for the
topic-word Dirichlet parameter; dscir calls them ``alpha`` and ``beta``:

    SGLD     gamma 0.1,  alpha 0.01 -> alpha 0.1,  beta 0.01, constant eps 0.01
    SGHMC    gamma 0.1,  alpha 0.01 -> alpha 0.1,  beta 0.01, constant eps 0.1, C = M = I
    SGRLD    gamma 0.01, alpha 1e-4 -> alpha 0.01, beta 1e-4, eps 0.01 (1 + t/1000)^-0.6
    gSGRHMC  gamma 0.01, alpha 1e-4 -> alpha 0.01, beta 1e-4, constant eps 0.02
    SCIR     (Baker et al.)         -> alpha 0.1,  beta 0.5,  h 0.5 (1 + t/10)^-0.33

SGHMC and gSGRHMC run the papers' Euler step (``integrator="euler"``; dscir's
default is the splitting integrator, docs/integrators.md); the labels
"sghmc splitting" and "gsgrhmc splitting" run them at the same settings with it.

``--gsgrhmc-steps 0.005,0.05,...`` adds gSGRHMC chains (first seed only) at
other constant step sizes (``--sweep-integrator``: the paper's Euler step or the
splitting), run in the same lockstep (a step-size sweep, drawn in the figure's
second panel). The JSON is rewritten after every scoring round.

    python benchmarks/ma_fig3.py [--iterations 200] [--seeds 3]

One table and figure of stored runs (no fitting), results/ma_fig3_integrators.json/.png:

    python benchmarks/ma_fig3.py --compare ma_fig3_200 ma_fig3_200_splitting_full --out ma_fig3_integrators
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np

from _common import RESULTS, make_wiki_store, run_lockstep, write_json

PAPER = {
    "sgld": {"alpha": 0.1, "beta": 0.01, "step_size": 0.01, "tau": None},
    "sghmc": {"alpha": 0.1, "beta": 0.01, "step_size": 0.1, "tau": None,
              "sampler_options": {"friction": 1.0, "integrator": "euler"}},
    "sgrld": {"alpha": 0.01, "beta": 1e-4, "step_size": 0.01, "tau": 1000.0, "kappa": 0.6},
    "gsgrhmc": {"alpha": 0.01, "beta": 1e-4, "step_size": 0.02, "tau": None,
                "sampler_options": {"integrator": "euler"}},
    "scir": {"alpha": 0.1, "beta": 0.5, "step_size": 0.5, "tau": 10.0, "kappa": 0.33},
}
# The Hamiltonian samplers at the paper's settings with dscir's splitting integrator.
VARIANTS_OF = ("sghmc", "gsgrhmc")  # the samplers that run either integrator
VARIANTS = {f"{s} splitting": (s, {**PAPER[s], "sampler_options": {
    **PAPER[s]["sampler_options"], "integrator": "splitting"}}) for s in VARIANTS_OF}


def make_specs(args) -> list[dict]:
    common = {"n_topics": args.topics, "sweeps": args.sweeps, "eval_sweeps": args.eval_sweeps}
    named = {**{s: (s, PAPER[s]) for s in PAPER}, **VARIANTS}
    runs = [(s, *named[s], range(args.seeds)) for s in args.samplers.split(",")]
    sweep = {**PAPER["gsgrhmc"], "sampler_options": {"integrator": args.sweep_integrator}}
    tag = "" if args.sweep_integrator == "euler" else f" {args.sweep_integrator}"
    runs += [(f"gsgrhmc{tag} eps={e:g}", "gsgrhmc", {**sweep, "step_size": e}, [0])
             for e in map(float, filter(None, args.gsgrhmc_steps.split(",")))]
    return [{"label": label, "seed": seed, "params": {**common, "sampler": s, **params}}
            for label, s, params, seeds in runs for seed in seeds]


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(dict.fromkeys(r["label"] for r in results))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for r in results:
        sweep = "eps=" in r["label"]
        pair = ("sgrld", "gsgrhmc", "gsgrhmc splitting")
        panels = [ax2] if sweep else [ax1, ax2] if r["label"] in pair else [ax1]
        for ax in panels:
            if ax is ax2 and not sweep and r["seed"] != 0:
                continue
            c = r["curve"]
            ax.plot([p["documents"] for p in c], [p["perplexity"] for p in c], marker=".",
                    color=f"C{labels.index(r['label'])}", alpha=0.8,
                    label=r["label"] if r["seed"] == 0 else None)
    ax1.set(title="Ma et al. Fig. 3 settings, wiki, K = 50, one line per seed")
    ax2.set(title="gSGRHMC constant step sizes (seed 0; gsgrhmc = eps 0.02)")
    for ax in (ax1, ax2):
        ax.set(xlabel="documents processed (minibatches of 50)",
               ylabel="held-out perplexity (document completion, current phi)", yscale="log")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)  # redrawn after every scoring round


def stored_runs(names: list[str]) -> dict[str, list[list[dict]]]:
    """Each sampler's curves (one per seed) in the stored runs ``results/NAME.json``
    (step-size sweeps left out); the papers' step is named "euler"."""
    runs: dict[str, list[list[dict]]] = {}
    for n in names:
        for r in json.loads((RESULTS / f"{n}.json").read_text())["results"]:
            if "eps=" not in r["label"]:
                label = r["label"] + (" euler" if r["label"] in VARIANTS_OF else "")
                runs.setdefault(label, []).append(r["curve"])
    return runs


def compare_table(runs: dict[str, list[list[dict]]], at=(10_000, 20_000, 30_000)) -> list[dict]:
    """Per sampler, the lowest and highest perplexity over its seeds at ``at``
    documents, and the largest rise between successive scores after 2,000."""
    rows = []
    for label, curves in runs.items():
        by_docs = [{p["documents"]: p["perplexity"] for p in c} for c in curves]
        row = {"sampler": label, "seeds": len(curves)}
        for d in at:
            values = [c[d] for c in by_docs if d in c]
            row[f"at {d:,}"] = f"{min(values):,.0f}-{max(values):,.0f}" if values else "-"
        rises = [max(b["perplexity"] - a["perplexity"] for a, b in zip(c, c[1:])
                     if a["documents"] >= 2000) for c in curves]
        row["largest rise after 2,000"] = f"{min(rises):,.0f}-{max(rises):,.0f}"
        rows.append(row)
    return rows


def compare(names: list[str], out: str) -> None:
    """``results/OUT.json`` (the table of ``compare_table``) and ``.png``: each
    sampler's seeds as a band (lowest to highest) around their median."""
    import sys

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = stored_runs(names)
    (RESULTS / f"{out}.json").write_text(json.dumps(
        {"command": "python " + " ".join(sys.argv), "sources": names,
         "perplexity_over_seeds": compare_table(runs)}, indent=1))
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, (label, curves) in enumerate(runs.items()):
        n = min(len(c) for c in curves)
        docs = [p["documents"] for p in curves[0][:n]]
        y = np.array([[p["perplexity"] for p in c[:n]] for c in curves])
        ax.fill_between(docs, y.min(axis=0), y.max(axis=0), color=f"C{i}", alpha=0.25)
        ax.plot(docs, np.median(y, axis=0), color=f"C{i}", label=f"{label} ({len(curves)} seeds)")
    ax.set(title="Ma et al. Fig. 3 settings, wiki, K = 50: median and range over seeds",
           xlabel="documents processed (minibatches of 50)", yscale="log",
           ylabel="held-out perplexity (document completion, current phi)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(RESULTS / f"{out}.png", dpi=120)
    plt.close(fig)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=int, default=200)
    p.add_argument("--minutes", type=float, default=0.0,
                   help="stop at the first scoring round past this wall time (0: none)")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--eval-every", type=int, default=20)
    p.add_argument("--topics", type=int, default=50)
    p.add_argument("--sweeps", type=int, default=200)
    p.add_argument("--eval-sweeps", type=int, default=100)
    p.add_argument("--heldout", type=int, default=1000)
    p.add_argument("--samplers", default="sgld,sghmc,sgrld,gsgrhmc,scir",
                   help="labels of PAPER, or 'sghmc splitting', 'gsgrhmc splitting'")
    p.add_argument("--gsgrhmc-steps", default="",
                   help="comma-separated extra constant step sizes for gSGRHMC (seed 0)")
    p.add_argument("--sweep-integrator", choices=("euler", "splitting"), default="euler",
                   help="the integrator of the --gsgrhmc-steps chains")
    p.add_argument("--out", default="ma_fig3")
    p.add_argument("--compare", nargs="+", metavar="NAME",
                   help="no run: the stored runs NAME ... in one table and figure, results/OUT.json/.png")
    args = p.parse_args()
    if args.compare:
        return compare(args.compare, args.out)

    from distributed import Client, LocalCluster

    specs = make_specs(args)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"{args.out}.json"

    def on_round(results):
        write_json(out, args, results, paper_settings=PAPER)
        plot(results, RESULTS / f"{args.out}.png")

    with tempfile.TemporaryDirectory() as tmp, \
            LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        store = make_wiki_store(Path(tmp) / "wiki.zarr", args.heldout)
        run_lockstep(client, store, specs, iterations=args.iterations,
                     eval_every=args.eval_every, budget_seconds=60 * args.minutes,
                     on_round=on_round)


if __name__ == "__main__":
    main()
