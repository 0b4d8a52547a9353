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

With ``--before TREE --before-commit SHA`` the two dscir runs are also made
with the engine of another commit (a copy of its tree, put first on the
subprocess's PYTHONPATH), alternating with today's: ``dscir-fit``,
``dscir-fit@before``, ``tomotopy``, ``dscir-scir@before``, ``dscir-scir``,
``tomotopy@2``; the other engine's summary is under ``before``.

``--summary CORPUS ...`` (with the runs' ``--tag``) gathers their files into
``results/peers_user_summary{tag}.json`` and ``.png``: per corpus and engine,
the issue's goals (time to tomotopy's 200-iteration perplexity, perplexity at
tomotopy's times, the default fit) and whether each is met.

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
ORDER_BEFORE = ["dscir-fit", "dscir-fit@before", "tomotopy", "dscir-scir@before", "dscir-scir",
                "tomotopy@2"]


def engine(metas: dict[str, dict], suffix: str) -> dict[str, dict]:
    """The four runs of one engine: its ``dscir-*{suffix}`` runs and both tomotopy runs."""
    return {name: metas[name + suffix if name.startswith("dscir") else name] for name in ORDER}


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


def plot(metas: dict, summary: dict, corpus: str, path: Path, before: str = "") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, m in metas.items():
        pts = m["points"]
        ax.plot([p["seconds"] for p in pts], [p["perplexity"] for p in pts],
                marker="*" if name.startswith("dscir-fit") else "o",
                ms=12 if name.startswith("dscir-fit") else 5,
                label=name.replace("dscir-scir", "dscir default chain (snapshots)").replace(
                    "@before", f" at {before}" if before else "@before"))
    ax.axhline(summary["tomotopy_200_perplexity"], color="grey", ls=":", lw=0.8,
               label="tomotopy, 200 iterations")
    ax.set(xscale="log", xlabel="training seconds (dscir-fit: the whole fit call)",
           ylabel="held-out perplexity (document completion)",
           title=f"{corpus}, K = {K} (contended 2-core machine)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


GOALS = {"time_ratio": 1.0, "time_ratio_wiki": 0.5, "ratio_at_times": 1.0,
         "default_seconds_ratio": 2.0, "default_perplexity_ratio": 1.0}


def goal_row(corpus: str, engine: str, s: dict, loads: list[float]) -> dict:
    """One corpus and engine against the goals (None where nothing was measured)."""
    limit = GOALS["time_ratio_wiki"] if corpus == "wiki" else GOALS["time_ratio"]
    ratios = [a["ratio"] for a in s["at_tomotopy_times"]]
    fit = s["default_fit"]
    return {"corpus": corpus, "engine": engine,
            "tomotopy_200_seconds": s["tomotopy_200_seconds"],
            "time_ratio": s["time_ratio"] if s["time_ratio"] is not None
            else s["time_ratio_bound"],
            "time_goal": limit, "time_met": s["time_ratio"] is not None
            and s["time_ratio"] <= limit,
            **{f"ratio_at_{a['tomotopy_iterations']}": a["ratio"]
               for a in s["at_tomotopy_times"]},
            "at_times_met": all(r is not None and r <= GOALS["ratio_at_times"] for r in ratios),
            "default_seconds_ratio": fit["seconds_ratio"],
            "default_perplexity_ratio": fit["perplexity_ratio"],
            "default_met": fit["seconds_ratio"] <= GOALS["default_seconds_ratio"]
            and fit["perplexity_ratio"] <= GOALS["default_perplexity_ratio"],
            "load_1min_range": [min(loads), max(loads)]}


def work_rates(run: dict, s: dict, suffix: str) -> dict:
    """Token-sweeps per second of the default chain (its whole iterations' wall:
    Gibbs work, transfers and the driver's step, over its last snapshot's
    training seconds) and of tomotopy's 200 iterations, and the Gibbs sweeps per
    training token each needed to reach tomotopy's 200-iteration perplexity.
    ``s``: the engine's summary, ``suffix``: its runs' suffix. Tokens per
    document: the mean over all the corpus's documents."""
    from dscir.models.lda.policy import CorpusSize, choose_batch, choose_sweeps

    info = run["corpus"]
    mean = info["n_tokens"] / info["n_docs"]
    batch = choose_batch("default", CorpusSize(info["n_train"], info["n_words"],
                                               round(mean * info["n_train"])))
    chain = next(m for m in run["systems"] if m["system"] == "dscir-scir" + suffix)
    last = chain["points"][-1]
    sweeps = choose_sweeps("default")
    dscir = batch * mean * sweeps * last["budget"] / last["seconds"]
    tomo = info["n_train"] * mean * 200 / s["tomotopy_200_seconds"]
    it = s["time_to_tomotopy_200_iteration"]
    return {"minibatch": batch, "dscir_token_sweeps_per_s": dscir,
            "tomotopy_token_sweeps_per_s": tomo, "throughput_ratio": tomo / dscir,
            "dscir_sweeps_per_token_to_target":
            None if it is None else it * batch * sweeps / info["n_train"],
            "tomotopy_sweeps_per_token_to_target": 200}


def gather(corpora: list[str], tag: str) -> None:
    """The runs' files, one row per corpus and engine, with a figure."""
    rows = []
    for corpus in corpora:
        run = json.loads((RESULTS / f"peers_user_{corpus}{tag}.json").read_text())
        loads = [v[0] for v in run["machine"]["load_average_1_5_15_min"].values()]
        engines = [("main", run["summary"], "")]
        if "before" in run:
            engines.append((f"before ({run['before']['commit'][:7]})",
                            run["before"]["summary"], "@before"))
        for name, summary, suffix in engines:
            rows.append({**goal_row(corpus, name, summary, loads),
                         **work_rates(run, summary, suffix)})
    out = {"command": "python benchmarks/peers_user.py --summary " + " ".join(corpora)
           + (f" --tag {tag}" if tag else ""),
           "cpu": cpu_model(), "cores": os.cpu_count(), "goals": GOALS,
           "note": "each row's ratios are to tomotopy's runs of the same session and "
                   "corpus; time_ratio is a string ('> x') where dscir's snapshots "
                   "never reached tomotopy's 200-iteration perplexity",
           "rows": rows}
    (RESULTS / f"peers_user_summary{tag}.json").write_text(json.dumps(out, indent=1))
    plot_goals(rows, RESULTS / f"peers_user_summary{tag}.png")
    print(json.dumps(rows, indent=1))


def plot_goals(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    corpora = list(dict.fromkeys(r["corpus"] for r in rows))
    engines = list(dict.fromkeys(r["engine"] for r in rows))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.8 / len(engines)
    for j, engine in enumerate(engines):
        mine = {r["corpus"]: r for r in rows if r["engine"] == engine}
        x = np.arange(len(corpora)) + j * width
        time = [mine[c]["time_ratio"] if isinstance(mine[c]["time_ratio"], float)
                else float(mine[c]["time_ratio"][2:]) for c in corpora]
        bars = axes[0].bar(x, time, width, label=engine)
        for b, c in zip(bars, corpora):
            if isinstance(mine[c]["time_ratio"], str):
                b.set_hatch("//")
        axes[1].bar(x, [mine[c]["default_seconds_ratio"] for c in corpora], width,
                    label=engine)
    for ax, goal, title in ((axes[0], GOALS["time_ratio"],
                             "time to tomotopy's 200-iteration perplexity\n"
                             "(x tomotopy's time; hatched: not reached, a lower bound)"),
                            (axes[1], GOALS["default_seconds_ratio"],
                             "default fit's seconds (x tomotopy's 200 iterations)")):
        ax.axhline(goal, color="grey", ls=":", lw=1, label=f"goal {goal:g}x")
        ax.set(yscale="log", xticks=np.arange(len(corpora)) + 0.4 - width / 2,
               xticklabels=corpora, title=title)
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
    p.add_argument("--systems", default=None, help="the runs to do now (default: all)")
    p.add_argument("--before", default=None, help="a tree of another commit (git archive)")
    p.add_argument("--before-commit", default="", help="that commit, recorded")
    p.add_argument("--summary", nargs="+", default=None, metavar="CORPUS",
                   help="gather these corpora's result files (of --tag) instead of running")
    cli = p.parse_args()
    if cli.summary:
        return gather(cli.summary, cli.tag)
    order = ORDER_BEFORE if cli.before else ORDER
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
        for s in (cli.systems or ",".join(order)).split(","):
            load[f"before {s}"] = os.getloadavg()
            code = cli.before if s.endswith("@before") else None
            meta = peers.run_system(s, args, store, work, code)
            (work / f"{s}.meta.json").write_text(json.dumps(meta))
        load["after_training"] = os.getloadavg()
        loads.write_text(json.dumps(load))
        if not all((work / f"{s}.meta.json").exists() for s in order):
            return
        metas = [json.loads((work / f"{s}.meta.json").read_text()) for s in order]
        peers.score_all(metas, store, work)
        (work / "scored.json").write_text(json.dumps(metas))
    by_name = {m["system"]: m for m in metas}
    summary = summarise(engine(by_name, ""))
    before = {"before": {"commit": cli.before_commit,
                         "summary": summarise(engine(by_name, "@before"))}} if cli.before else {}
    import dscir, tomotopy  # noqa: E401

    out = {"command": "nice -n 5 python benchmarks/peers_user.py " + " ".join(sys.argv[1:]),
           "runs_in_order_of": ("the calls of this --workdir: " + str(list(load)))
           if cli.workdir else order,
           "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                       "load_average_1_5_15_min": load,
                       "note": "contended: a 2-core machine shared with other developers' "
                               "work; the ratios within this alternating session count"},
           "versions": {"dscir": dscir.__version__, "tomotopy": tomotopy.__version__},
           "corpus": info,
           "settings": {"K": K, "order": order, "dscir_budgets": budgets,
                        "tomotopy_budgets": TOMOTOPY, "tomotopy_alpha": peers.ALPHA,
                        "tomotopy_eta": peers.ETA,
                        "score": {"alpha": peers.SCORE_ALPHA, "sweeps": peers.SCORE_SWEEPS,
                                  "every": peers.SCORE_EVERY, "seed": peers.SCORE_SEED}},
           "summary": summary, **before, "systems": metas}
    (RESULTS / f"peers_user_{cli.corpus}{cli.tag}.json").write_text(json.dumps(out, indent=1))
    plot(by_name, summary, cli.corpus, RESULTS / f"peers_user_{cli.corpus}{cli.tag}.png",
         cli.before_commit[:7])
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"{time.perf_counter() - t0:.0f} s")
