"""A short end-to-end LDA fit on ap with documents resident on the workers, against reads by tasks.

``dscir ingest ldac --heldout-fraction 0.1`` the ap corpus (../shared/data/ap),
then, on one 2-worker LocalCluster, ``dscir.LDA(n_topics=20, n_iter=N,
eval_every=N).fit(store, client=client)`` with every other setting at its default,
alternating: ``tasks`` reads each minibatch by tasks every iteration (the
engine before residency was LDA's default: ``dscir.engine.dask.RESIDENT_MODELS``
emptied for the run), ``resident`` is the default (``dscir.engine.shards``).
Both runs must be the same chain: the mean topics' SHA-256 is stored and
compared. Seconds are wall-clock on a shared machine (contended); the
held-out perplexity is the fit's final document-completion score. Writes
benchmarks/results/resident_fit.json.

    python benchmarks/resident_fit.py [--n-iter 100] [--rounds 2]

With ``--warm CORPUS`` (ap or kos), warm local chains against cold ones on
that corpus instead: ``dscir.LDA(n_topics=20, n_iter=N, eval_every=E)`` at
the policy's 10 cold sweeps per visit, and with ``warm_start=True`` at 1, 2
and 5 sweeps per visit (no burn-in sweep: a visit starts from the document's
last assignments), everything else at its default, settings alternating in
order round by round. Held-out perplexity (document completion) against the
chain's own wall time (the history's ``wall``, scoring excluded), and the
mean split of an iteration's wall time (``dscir.engine.parts.Timing``). Writes
benchmarks/results/warm_fit_CORPUS.json and .png.

    python benchmarks/resident_fit.py --warm ap [--n-iter 200] [--eval-every 20]
    python benchmarks/resident_fit.py --summarise ap   # summary of a stored study
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import cpu_model, shared_data

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def ingest(path: Path, corpus: str = "ap") -> str:
    data = shared_data() / corpus
    source = {"ap": ["ldac", str(data / "ap.dat"), str(path), "--vocab", str(data / "vocab.txt")],
              "kos": ["uci", str(data / "docword.kos.txt.gz"), str(path)]}[corpus]
    subprocess.run([sys.executable, "-m", "dscir", "ingest", *source,
                    "--heldout-fraction", "0.1", "--quiet"], check=True)
    return str(path)


WARM_SETTINGS = {"cold-10": {}, **{f"warm-{s}": dict(sweeps=s, burn_sweeps=0, warm_start=True)
                                   for s in (1, 2, 5)}}


def warm_fit(store: str, client, name: str, n_iter: int, eval_every: int) -> dict:
    """One fit of a ``WARM_SETTINGS`` entry: its perplexity curve against chain seconds."""
    import dscir

    start = time.perf_counter()
    model = dscir.LDA(n_topics=20, n_iter=n_iter, eval_every=eval_every, progress=False,
                      **WARM_SETTINGS[name]).fit(store, client=client)
    seconds = time.perf_counter() - start
    wall = np.cumsum(np.asarray(model.history_["wall"]))
    curve = [{"iteration": int(e.iteration), "seconds": float(wall[e.iteration - 1]),
              "perplexity": float(e.perplexity)} for e in model.evaluations_]
    split = {f: float(np.mean(model.history_[f]))
             for f in ("wall", "compute", "compute_sum", "transfer", "queue", "update")}
    return {"setting": name, "fit_seconds": seconds, "curve": curve,
            "sweeps": model.config_.sweeps, "batch_size": model.config_.batch_size,
            "mean_iteration_seconds": split, "load_after": os.getloadavg()}


def plot_warm(out: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for i, run in enumerate(out["runs"]):
        c = run["curve"]
        ax.plot([p["seconds"] for p in c], [p["perplexity"] for p in c], marker="o", ms=3,
                color=f"C{list(WARM_SETTINGS).index(run['setting'])}",
                label=run["setting"] if run["round"] == 0 else None)
    ax.set(xlabel="chain seconds, scoring excluded (contended, 2 shared cores)",
           ylabel="held-out perplexity",
           title=f"{out['settings']['corpus']}, K = 20: warm vs cold local chains")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def summarise(out: dict) -> dict:
    """Per setting: its final perplexity, chain seconds to its end, and chain
    seconds to the first score at or below cold-10's final perplexity (None:
    never reached), per round."""
    target = min(r["curve"][-1]["perplexity"] for r in out["runs"] if r["setting"] == "cold-10")
    summary = {"target_perplexity": target}
    for name in WARM_SETTINGS:
        runs = [r for r in out["runs"] if r["setting"] == name]
        summary[name] = {
            "final_perplexity": [r["curve"][-1]["perplexity"] for r in runs],
            "chain_seconds": [r["curve"][-1]["seconds"] for r in runs],
            "seconds_to_target": [next((p["seconds"] for p in r["curve"]
                                        if p["perplexity"] <= target), None) for r in runs]}
    return summary


def warm_study(args, client, tmp: str) -> None:
    out = {"machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                       "load_before": os.getloadavg(), "contended": True},
           "command": "python benchmarks/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
           "settings": {"corpus": args.warm, "n_topics": 20, "n_iter": args.n_iter,
                        "eval_every": args.eval_every, "workers": 2, "rounds": args.rounds},
           "runs": []}
    store = ingest(Path(tmp) / f"{args.warm}.zarr", args.warm)
    names = list(WARM_SETTINGS)
    for r in range(args.rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            run = warm_fit(store, client, name, args.n_iter, args.eval_every) | {"round": r}
            print({k: run[k] for k in ("setting", "fit_seconds")}, run["curve"][-1], flush=True)
            out["runs"].append(run)
            RESULTS.mkdir(exist_ok=True)
            (RESULTS / f"warm_fit_{args.warm}.json").write_text(json.dumps(out, indent=1) + "\n")
    out["summary"] = summarise(out)
    (RESULTS / f"warm_fit_{args.warm}.json").write_text(json.dumps(out, indent=1) + "\n")
    plot_warm(out, RESULTS / f"warm_fit_{args.warm}.png")


def fit(store: str, client, reads: str, n_iter: int) -> dict:
    import dscir
    from dscir.engine import dask

    saved = dask.RESIDENT_MODELS
    dask.RESIDENT_MODELS = saved if reads == "resident" else frozenset()
    try:
        start = time.perf_counter()
        model = dscir.LDA(n_topics=20, n_iter=n_iter, eval_every=n_iter,
                          progress=False).fit(store, client=client)
        seconds = time.perf_counter() - start
    finally:
        dask.RESIDENT_MODELS = saved
    topics = np.ascontiguousarray(model.topic_word_)
    return {"reads": reads, "seconds": seconds,
            "perplexity": float(model.evaluations_[-1].perplexity),
            "topics_sha256": hashlib.sha256(topics.tobytes()).hexdigest(),
            "load_after": os.getloadavg()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n-iter", type=int, default=100)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--warm", choices=("ap", "kos"), help="the warm-start study on this corpus")
    p.add_argument("--eval-every", type=int, default=20)
    p.add_argument("--summarise", choices=("ap", "kos"),
                   help="only add the summary and figure to results/warm_fit_CORPUS.json")
    args = p.parse_args()
    if args.summarise:
        path = RESULTS / f"warm_fit_{args.summarise}.json"
        out = json.loads(path.read_text())
        out["summary"] = summarise(out)
        path.write_text(json.dumps(out, indent=1) + "\n")
        plot_warm(out, path.with_suffix(".png"))
        return
    from dscir.engine.cluster import dask_client

    if args.warm:
        with tempfile.TemporaryDirectory() as tmp, dask_client(
                n_workers=2, dashboard_address=None) as client:
            warm_study(args, client, tmp)
        return

    out = {"machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                       "load_before": os.getloadavg(), "contended": True},
           "command": "python benchmarks/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
           "settings": {"corpus": "ap", "n_topics": 20, "n_iter": args.n_iter,
                        "workers": 2, "rounds": args.rounds}, "runs": []}
    with tempfile.TemporaryDirectory() as tmp, dask_client(n_workers=2,
                                                           dashboard_address=None) as client:
        store = ingest(Path(tmp) / "ap.zarr")
        for r in range(args.rounds):
            order = ("tasks", "resident") if r % 2 == 0 else ("resident", "tasks")
            for reads in order:
                run = fit(store, client, reads, args.n_iter) | {"round": r}
                print(run, flush=True)
                out["runs"].append(run)
    out["same_chain"] = len({r["topics_sha256"] for r in out["runs"]}) == 1
    for reads in ("tasks", "resident"):
        s = [r["seconds"] for r in out["runs"] if r["reads"] == reads]
        out[f"{reads}_seconds"] = [min(s), max(s)]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "resident_fit.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: out[k] for k in ("same_chain", "tasks_seconds", "resident_seconds")}))


if __name__ == "__main__":
    main()
