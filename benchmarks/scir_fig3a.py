"""The SCIR paper's Fig. 3a (Baker et al. 2018) as long as a time budget allows.

SCIR and SGRLD at their reference settings (``dscir.models.lda.config.REFERENCE``:
SCIR h = 0.5, tau = 10, kappa = 0.33, alpha = 0.1, beta = 0.5; SGRLD h = 0.01,
tau = 1000, kappa = 0.6, alpha = 0.01, beta = 1e-4), K = 100, minibatch 50, on
the shared wiki corpus with 1,000 held-out documents, several seeds, all chains
in lockstep on one 2-worker LocalCluster. Held-out perplexity (document
completion, current phi) against iterations and wall time. The JSON is
rewritten after every scoring round, so a run stopped by ``--minutes`` (or
killed) still holds every chain's curve up to the same iteration.

    python benchmarks/scir_fig3a.py [--iterations 5000] [--minutes 60] [--seeds 5]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _common import RESULTS, make_wiki_store, run_lockstep, write_json

COLORS = {"scir": "C0", "sgrld": "C1"}


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for r in results:
        c, name = r["curve"], r["label"]
        kw = {"color": COLORS.get(name), "alpha": 0.8, "marker": ".",
              "label": name if r["seed"] == 0 else None}
        ax1.plot([p["iteration"] for p in c], [p["perplexity"] for p in c], **kw)
        ax2.plot([p["seconds"] for p in c], [p["perplexity"] for p in c], **kw)
    ax1.set(xlabel="iteration (minibatch of 50 documents)",
            ylabel="held-out perplexity (current phi)", title="wiki, K = 100, one line per seed")
    ax2.set(xlabel="wall-clock seconds of sampling (scoring excluded; shared machine)",
            ylabel="held-out perplexity (current phi)", title="against time")
    for ax in (ax1, ax2):
        ax.legend()
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=int, default=5000)
    p.add_argument("--minutes", type=float, default=60.0,
                   help="stop at the first scoring round past this wall time (0: none)")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--sweeps", type=int, default=200)
    p.add_argument("--eval-sweeps", type=int, default=100)
    p.add_argument("--heldout", type=int, default=1000)
    p.add_argument("--samplers", default="scir,sgrld")
    p.add_argument("--out", default="scir_fig3a")
    args = p.parse_args()

    from distributed import Client, LocalCluster

    specs = [{"label": s, "seed": seed,
              "params": {"n_topics": 100, "sampler": s, "sweeps": args.sweeps,
                         "eval_sweeps": args.eval_sweeps}}
             for s in args.samplers.split(",") for seed in range(args.seeds)]
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"{args.out}.json"

    def on_round(results):
        write_json(out, args, results)
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
