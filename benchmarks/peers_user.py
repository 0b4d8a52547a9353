"""dscir as a user runs it against tomotopy: time to tomotopy's 200-iteration
perplexity, dscir's perplexity at each of tomotopy's times, and the default
fit against tomotopy's 200 iterations.

On one corpus per run, with ``peers.py``'s machinery (one subprocess per run,
the same store, the same document-completion scorer for every topic matrix,
after all training): four runs alternating dscir and tomotopy in one session,

* ``dscir-fit``: ``dscir.LDA(n_topics=K, seed=0).fit(store)``, every other
  setting at its default (the clock covers the whole call, embedded cluster
  start-up included);
* ``tomotopy``: 200 iterations (alpha 0.1, eta 0.01, all cores: 2 threads),
  snapshots at 25, 50, 100, 200;
* ``dscir-scir``: the default policy's chain (``LDA(n_topics=K,
  n_iter=N).chain_config``, N the last budget, half burn-in: what
  ``LDA(n_iter=N)`` hands back at each snapshot), stepped on a 2-worker
  cluster with its topics snapshotted at ``--budgets`` iterations (training
  time only);
* ``tomotopy@2``: tomotopy again (its times are the mean of both runs).

``--workdir DIR --systems a,b`` runs only those (the store and their snapshots
kept in DIR); a later call with the same DIR runs the rest, and the call that
completes the four scores them all.

dscir's perplexity at a tomotopy time t is that of its last snapshot taken by
t (a step function of its training time). Writes
``results/peers_user_{corpus}.json`` and ``.png``.

    nice -n 5 python benchmarks/peers_user.py --corpus ap     # also kos, wiki, news
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import peers
from _common import cpu_model

RESULTS = Path(__file__).resolve().parent / "results"
K = 20
TOMOTOPY = [25, 50, 100, 200]
BUDGETS = {"ap": [5, 10, 15, 20, 30, 40, 60, 80, 120, 160, 240],
           "kos": [5, 10, 15, 20, 30, 40, 60, 80, 120, 160, 240],
           "news": [5, 10, 15, 20, 30, 40, 60, 80, 120, 160],
           "wiki": [5, 10, 15, 20, 30, 40, 60, 80, 120, 160]}
ORDER = ["dscir-fit", "tomotopy", "dscir-scir", "tomotopy@2"]


def at_time(points: list[dict], t: float) -> float | None:
    """The perplexity of the last snapshot taken by training time ``t``."""
    done = [p for p in points if p["seconds"] <= t]
    return done[-1]["perplexity"] if done else None


def summarise(metas: dict[str, dict]) -> dict:
    tomo = [metas["tomotopy"]["points"], metas["tomotopy@2"]["points"]]
    times = {b: float(np.mean([[p["seconds"] for p in run if p["budget"] == b][0]
                               for run in tomo])) for b in TOMOTOPY}
    perp = {b: float(np.mean([[p["perplexity"] for p in run if p["budget"] == b][0]
                              for run in tomo])) for b in TOMOTOPY}
    curve = metas["dscir-scir"]["points"]
    target = perp[200]
    hit = [p for p in curve if p["perplexity"] <= target]
    at = []
    for b in TOMOTOPY:
        mine = at_time(curve, times[b])
        at.append({"tomotopy_iterations": b, "tomotopy_seconds": times[b],
                   "tomotopy_perplexity": perp[b], "dscir_perplexity": mine,
                   "ratio": None if mine is None else mine / perp[b]})
    fit = metas["dscir-fit"]
    fit_p = fit["points"][-1]
    return {
        "tomotopy_200_seconds": times[200], "tomotopy_200_perplexity": target,
        "time_to_tomotopy_200": hit[0]["seconds"] if hit else None,
        "time_to_tomotopy_200_iteration": hit[0]["budget"] if hit else None,
        "time_ratio": hit[0]["seconds"] / times[200] if hit else None,
        "time_ratio_bound": "=" if hit else f"> {curve[-1]['seconds'] / times[200]:.2f}",
        "at_tomotopy_times": at,
        "default_fit": {"seconds": fit_p["seconds"], "iterations": fit.get("iterations"),
                        "iteration_seconds": fit.get("iteration_seconds"),
                        "perplexity": fit_p["perplexity"], "stopping": fit.get("stopping"),
                        "seconds_ratio": fit_p["seconds"] / times[200],
                        "perplexity_ratio": fit_p["perplexity"] / target}}


def plot(metas: dict, summary: dict, corpus: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, m in metas.items():
        pts = m["points"]
        ax.plot([p["seconds"] for p in pts], [p["perplexity"] for p in pts],
                marker="*" if name == "dscir-fit" else "o", ms=12 if name == "dscir-fit" else 5,
                label=name if name != "dscir-scir" else "dscir default chain (snapshots)")
    ax.axhline(summary["tomotopy_200_perplexity"], color="grey", ls=":", lw=0.8,
               label="tomotopy, 200 iterations")
    ax.set(xscale="log", xlabel="training seconds (dscir-fit: the whole fit call)",
           ylabel="held-out perplexity (document completion)",
           title=f"{corpus}, K = {K} (contended 2-core machine)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", choices=list(BUDGETS), default="ap")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--budgets", default="", help="dscir-scir's snapshot iterations")
    p.add_argument("--tag", default="", help="suffix of the result files")
    p.add_argument("--workdir", default=None, help="keep the store and runs here")
    p.add_argument("--systems", default=",".join(ORDER), help="the runs to do now")
    cli = p.parse_args()
    budgets = [int(x) for x in cli.budgets.split(",") if x] or BUDGETS[cli.corpus]
    args = argparse.Namespace(corpus=cli.corpus, topics=K, seed=cli.seed, policy="default",
                              quick=False, sweeps=None, warm_start=False, dscir_budgets=budgets,
                              tomotopy_budgets=TOMOTOPY)
    with tempfile.TemporaryDirectory(prefix="dscir-peers-user-") as tmp:
        work = Path(cli.workdir or tmp)
        work.mkdir(parents=True, exist_ok=True)
        store = work / f"{cli.corpus}.zarr"
        if not store.exists():
            peers.make_store(cli.corpus, store, cli.seed)
        from dscir.corpus import Corpus

        c = Corpus.open(store)
        info = {"name": cli.corpus, "n_docs": c.n_docs, "n_words": c.n_words,
                "n_tokens": int(c.meta["n_tokens"]), "n_train": int(c.train_docs().size),
                "n_heldout": int(c.heldout_docs().size)}
        loads = work / "loads.json"
        load = json.loads(loads.read_text()) if loads.exists() else {}
        for s in cli.systems.split(","):
            load[f"before {s}"] = os.getloadavg()
            meta = peers.run_system(s, args, store, work)
            (work / f"{s}.meta.json").write_text(json.dumps(meta))
        load["after_training"] = os.getloadavg()
        loads.write_text(json.dumps(load))
        if not all((work / f"{s}.meta.json").exists() for s in ORDER):
            return
        metas = [json.loads((work / f"{s}.meta.json").read_text()) for s in ORDER]
        peers.score_all(metas, store, work)
        (work / "scored.json").write_text(json.dumps(metas))
    by_name = {m["system"]: m for m in metas}
    summary = summarise(by_name)
    import dscir, tomotopy  # noqa: E401

    out = {"command": "nice -n 5 python benchmarks/peers_user.py " + " ".join(sys.argv[1:]),
           "runs_in_order_of": ("the calls of this --workdir: " + str(list(load)))
           if cli.workdir else ORDER,
           "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                       "load_average_1_5_15_min": load,
                       "note": "contended: a 2-core machine shared with other developers' "
                               "work; the ratios within this alternating session count"},
           "versions": {"dscir": dscir.__version__, "tomotopy": tomotopy.__version__},
           "corpus": info,
           "settings": {"K": K, "order": ORDER, "dscir_budgets": budgets,
                        "tomotopy_budgets": TOMOTOPY, "tomotopy_alpha": peers.ALPHA,
                        "tomotopy_eta": peers.ETA,
                        "score": {"alpha": peers.SCORE_ALPHA, "sweeps": peers.SCORE_SWEEPS,
                                  "every": peers.SCORE_EVERY, "seed": peers.SCORE_SEED}},
           "summary": summary, "systems": metas}
    (RESULTS / f"peers_user_{cli.corpus}{cli.tag}.json").write_text(json.dumps(out, indent=1))
    plot(by_name, summary, cli.corpus, RESULTS / f"peers_user_{cli.corpus}{cli.tag}.png")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"{time.perf_counter() - t0:.0f} s")
