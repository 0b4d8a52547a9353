"""The default of ``n_iter="auto"``: the rule's (tolerance, window, min_passes)
chosen by leaving one corpus out, then checked by real fits on the corpus left out.

``--record CORPUS`` fits one long chain through the public API as a user would
(``dscir.LDA(n_topics=K, n_iter=N, burn_in=N // 2, eval_every=E)``, every
other setting at its default, a 2-worker LocalCluster) and stores its held-out
perplexity every E iterations: the current state's up to N / 2 (what the rule's
first plateau, the end of burn-in, reads), the kept samples' mean's after (what
the second plateau, the end of the run, reads), the iteration and scoring times,
and the final topics' perplexity under peers.py's scorer (alpha 0.1, 50 sweeps:
the number tomotopy's is measured by in ``results/peers_user_{corpus}.json``).
Writes ``results/stopping_trace_{corpus}.json``.

``--table`` (no fitting) replays ``dscir.engine.stopping.Stopping`` on the stored
traces for every candidate rule. Burn-in is replayed exactly on the current-state
scores; the kept mean's scores after the replayed burn-in end b are the trace's
kept-mean scores from N / 2, shifted to start at b (exact when the chain is
stationary by b, which is what the first plateau asserts; the real fits of
``--check`` measure the difference). A candidate is *good* on a corpus when its
stop's perplexity is <= ``GOOD_RATIO`` (1.02) x the N-iteration fit's and its time
(iterations plus held-out scores, at the trace's measured costs) <= ``GOOD_TIME``
(0.35) x the N-iteration fit's (which scores once). A candidate is (tolerance,
window, min_passes, every): it scores every ``every``-th of the trace's scores
(``eval_every`` = every x E). For each corpus left out, the candidate chosen on
the others is the one good with a margin (ratio <= 1.01) on the most of them,
then good on the most, then with the smallest mean time (among rules that stop
alike, the most cautious: ``tie``); it is then replayed on the corpus left out. Writes ``results/stopping_loo.json`` and ``.png``.

``--check CORPUS`` fits ``dscir.LDA(n_topics=K)`` with n_iter="auto" and the rule
``--table`` chose with CORPUS left out (or ``--tolerance/--window/--min-passes``;
``--default``: every setting at its default, ``results/stopping_check_{corpus}_default.json``),
and compares its passes, time and perplexity (dscir's and peers.py's scorer) with
the stored N-iteration fit and with tomotopy's 200 iterations where
``results/peers_user_{corpus}.json`` has them (peers.py's scorer on both). Writes
``results/stopping_check_{corpus}.json``; ``--table`` gathers the checks into
the left-out table (``checks``): passes, iterations, time (measured, and priced at
the long chain's measured costs per iteration and per score), perplexity against
the long chain and tomotopy.

    nice -n 19 python benchmarks/stopping.py --record reuters   # ap kos wiki news reuters
    python benchmarks/stopping.py --table
    nice -n 19 python benchmarks/stopping.py --check kos
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import RESULTS, cpu_model

HERE = Path(__file__).resolve().parent
CORPORA = ("reuters", "kos", "ap", "wiki", "news", "big")
K, N_ITER, EVAL_EVERY = 20, 1000, 10
GOOD_RATIO, MARGIN_RATIO, GOOD_TIME = 1.02, 1.01, 0.35
TOLERANCES = (0.0005, 0.001, 0.002, 0.003, 0.005, 0.01)
WINDOWS = (1.0, 2.0, 3.0, 5.0, 8.0)
MIN_PASSES = (3.0, 5.0, 10.0, 15.0)
EVERY = (1, 2, 3)  # a candidate scores every this many of the trace's scores
BEST = 15  # candidates kept in the results, the best on all corpora
MAX_PASSES = 100.0


def make_store(corpus: str, path: Path, seed: int) -> Path:
    """peers.py's stores (the same held-out documents as its runs), and reuters (12.5 %
    held out)."""
    if corpus == "reuters":
        from _common import shared_data

        from dscir.corpus import ingest_ldac, split_heldout

        data = shared_data() / "reuters"
        ingest_ldac(data / "reuters.ldac", data / "reuters.tokens", path, drop_empty=True)
        split_heldout(path, fraction=0.125, seed=seed)
        return path
    sys.path.insert(0, str(HERE))
    from peers import make_store as peers_store

    return peers_store(corpus, path, seed)


def peers_score(client, store: Path, phi: np.ndarray) -> float:
    """The held-out perplexity of ``phi`` under peers.py's one scorer."""
    from peers import SCORE_ALPHA, SCORE_EVERY, SCORE_SEED, SCORE_SWEEPS

    from dscir.corpus import Corpus
    from dscir.engine.dask import DaskExecutor
    from dscir.models.lda import perplexity

    heldout = np.asarray(Corpus.open(store).heldout_docs(), np.int64)
    executor = DaskExecutor(client, str(store), "lda", model_resident=True)
    return float(perplexity(executor, heldout, np.asarray(phi), SCORE_ALPHA, SCORE_SWEEPS,
                            SCORE_SEED, SCORE_EVERY))


def fit(corpus: str, seed: int, **params) -> tuple[dict, object]:
    """One fit of ``dscir.LDA(**params)`` on a 2-worker LocalCluster; its record."""
    import dscir
    from dscir.engine.cluster import dask_client

    sys.path.insert(0, str(HERE))
    with tempfile.TemporaryDirectory(prefix="dscir-stop-") as tmp:
        store = make_store(corpus, Path(tmp) / f"{corpus}.zarr", seed)
        with dask_client(n_workers=2, dashboard_address=None) as client:
            est = dscir.LDA(seed=seed, progress=False, **params)
            t = time.perf_counter()
            est.fit(str(store), client=client)
            wall = time.perf_counter() - t
            peers = peers_score(client, store, est.materialize_topic_word())
        from dscir.corpus import Corpus

        c = Corpus.open(str(store))
        shape = {"n_docs": int(c.n_docs), "n_words": int(c.n_words),
                 "n_tokens": int(c.meta["n_tokens"]), "n_train": int(c.train_docs().size)}
    iteration_walls = np.asarray(est.history_["wall"], float)
    ev = est.evaluations_
    out = {"corpus": corpus, "shape": shape, "K": params.get("n_topics"), "seed": seed,
           "fit_seconds": wall, "iteration_seconds": float(iteration_walls.sum()),
           "n_evaluations": len(ev),
           "eval_seconds": (wall - float(iteration_walls.sum())) / max(len(ev), 1),
           "settings": {k: getattr(est.config_, k) for k in ("batch_size", "sweeps", "policy",
                                                             "eval_sweeps")},
           "iters_per_pass": shape["n_train"] / est.config_.batch_size,
           "n_iter": int(est.n_iter_), "stop_reason": est.stop_reason_,
           "stopping": getattr(est, "stopping_", None),
           "iterations": [int(e[0]) for e in ev], "perplexity": [float(e[1]) for e in ev],
           "final_perplexity": float(ev[-1][1]), "peers_perplexity": peers}
    return out, est


def record(corpus: str, n_iter: int, eval_every: int, topics: int, seed: int) -> dict:
    out, _ = fit(corpus, seed, n_topics=topics, n_iter=n_iter, burn_in=n_iter // 2,
                 eval_every=eval_every)
    out.update(burn_in=n_iter // 2, eval_every=eval_every)
    return out


def replay(trace: dict, tolerance: float, window: float, min_passes: float,
           every: int = 1) -> dict:
    """The rule replayed on a trace, scoring every ``every``-th of its scores (see the
    module's docstring)."""
    from dscir.engine.stopping import Plateau, Stopping

    E, B, N = trace["eval_every"] * every, trace["burn_in"], trace["n_iter"]
    its, ps = np.asarray(trace["iterations"]), np.asarray(trace["perplexity"])
    keep = its % E == 0
    its, ps = its[keep], ps[keep]
    burn, kept = ps[its <= B], ps[its > B]
    stop = Stopping(Plateau(tolerance, window, min_passes, MAX_PASSES), E, True,
                    trace["iters_per_pass"])
    m = 0
    for s in burn:
        m += E
        stop.observe(m, s)
        if stop.burn_end is not None:
            break
    b = stop.burn_end if stop.burn_end is not None else B
    stop.burn_end, last = b, None
    for j, s in enumerate(kept):
        m = b + (j + 1) * E
        stop.observe(m, s)
        last = s
        if stop.done(m):
            break
    evals = m // E
    seconds_per_iteration = trace["iteration_seconds"] / N
    seconds = m * seconds_per_iteration + evals * trace["eval_seconds"]
    full = N * seconds_per_iteration + trace["eval_seconds"]
    ratio = last / trace["final_perplexity"]
    time_ratio = seconds / full
    return {"burn_end": int(b), "stop": int(m), "passes": m / trace["iters_per_pass"],
            "reason": stop.reason or "end of trace", "perplexity": float(last),
            "ratio": float(ratio), "time_ratio": float(time_ratio),
            "good": bool(ratio <= GOOD_RATIO and time_ratio <= GOOD_TIME),
            "margin": bool(ratio <= MARGIN_RATIO and time_ratio <= GOOD_TIME)}


def tie(c: tuple) -> tuple:
    """Among candidates that stop alike: the smaller tolerance, the longer window and
    minimum, the more frequent scores (the most cautious rule)."""
    return c[0], -c[1], -c[2], c[3]


def table(traces: dict) -> dict:
    cands = list(itertools.product(TOLERANCES, WINDOWS, MIN_PASSES, EVERY))
    scores = {c: {n: replay(t, *c) for n, t in traces.items()} for c in cands}
    folds = []
    for out in traces:
        rest = [n for n in traces if n != out]
        def rank(c, rest=rest):  # most corpora good (with the margin first), then time
            return (-sum(scores[c][n]["margin"] for n in rest),
                    -sum(scores[c][n]["good"] for n in rest),
                    float(np.mean([scores[c][n]["time_ratio"] for n in rest])), tie(c))

        chosen = min(cands, key=rank)
        fold = {"left_out": out, "trained_on": rest,
                "chosen": dict(zip(("tolerance", "window", "min_passes", "every"), chosen)),
                "good_on_all_others": all(scores[chosen][n]["good"] for n in rest),
                "test": scores[chosen][out], "train": {n: scores[chosen][n] for n in rest}}
        folds.append(fold)
    names = list(traces)

    def rank_all(c):
        return (-sum(scores[c][n]["margin"] for n in names),
                -sum(scores[c][n]["good"] for n in names),
                float(np.mean([scores[c][n]["time_ratio"] for n in names])), tie(c))

    on_all = min(cands, key=rank_all)
    default = (*_default_rule().values(), _default_every())
    return {"criterion": f"good: stop's perplexity <= {GOOD_RATIO} x the N-iteration fit's "
                         f"and time <= {GOOD_TIME} x its; chosen: the candidate good (with "
                         f"perplexity <= {MARGIN_RATIO} x) on the most other corpora, then "
                         "good on the most, then the smallest mean time",
            "corpora": list(traces), "folds": folds,
            "all_left_out_good": all(f.get("test", {}).get("good", False) for f in folds),
            "chosen_on_all": dict(zip(("tolerance", "window", "min_passes", "every"), on_all)),
            "default_rule": dict(zip(("tolerance", "window", "min_passes", "every"), default)),
            "default_rule_on_each": {n: scores[default][n] for n in traces}
            if default in scores else None,
            "best_candidates": [
                {"tolerance": c[0], "window": c[1], "min_passes": c[2], "every": c[3],
                 **{n: {k: scores[c][n][k] for k in ("passes", "ratio", "time_ratio", "good")}
                    for n in names}}
                for c in sorted(cands, key=rank_all)[:BEST]]}


def _default_every() -> int:
    """The default cadence in the trace's scores (one every E iterations, a pass at
    the default policy's ten iterations a pass)."""
    from dscir.engine.stopping import SCORE_EVERY_PASSES

    return max(1, round(SCORE_EVERY_PASSES * 10 / EVAL_EVERY))


def _default_rule() -> dict:
    from dscir.engine.stopping import Plateau

    d = Plateau._field_defaults
    return {"tolerance": d["tolerance"], "window": d["window"], "min_passes": d["min_passes"]}


def plot(traces: dict, result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(traces), figsize=(4 * len(traces), 3.6), squeeze=False)
    for ax, (name, t), fold in zip(axes[0], traces.items(), result["folds"]):
        its = np.asarray(t["iterations"]) / t["iters_per_pass"]
        ax.plot(its, t["perplexity"], lw=1, label="held-out perplexity")
        final = t["final_perplexity"]
        ax.axhspan(final, final * GOOD_RATIO, color="green", alpha=0.15,
                   label=f"<= {GOOD_RATIO} x the {t['n_iter']}-iteration fit")
        ax.axvline(t["burn_in"] / t["iters_per_pass"], color="grey", lw=0.6, ls=":")
        c, test = fold["chosen"], fold["test"]
        ax.axvline(test["passes"], color="red", ls="--",
                   label=f"replayed stop: {c['tolerance']:.2%}/pass, window "
                         f"{c['window']:g}, min {c['min_passes']:g}, every {c['every']}")
        ax.set(title=f"{name} (K = {t['K']}) left out", xlabel="passes",
               ylabel="held-out perplexity", ylim=(final * 0.97, final * 1.3))
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def check(corpus: str, rule: dict, topics: int, seed: int) -> dict:
    """A default n_iter='auto' fit with ``rule`` against the stored long chain and
    tomotopy's 200 iterations."""
    trace = json.loads((RESULTS / f"stopping_trace_{corpus}.json").read_text())
    out, _ = fit(corpus, seed, n_topics=topics, **rule)
    full = trace["iteration_seconds"] + trace["eval_seconds"]
    out.update(rule=rule, long_chain={k: trace[k] for k in ("n_iter", "final_perplexity",
                                                             "peers_perplexity")},
               ratio_to_long_chain=out["final_perplexity"] / trace["final_perplexity"],
               peers_ratio_to_long_chain=out["peers_perplexity"] / trace["peers_perplexity"],
               time_ratio_to_long_chain=out["fit_seconds"] / full,
               long_chain_seconds_without_scores=full)
    peers = RESULTS / f"peers_user_{corpus}.json"
    if peers.exists():
        s = json.loads(peers.read_text())["summary"]
        out.update(tomotopy_200_perplexity=s["tomotopy_200_perplexity"],
                   ratio_to_tomotopy_200=out["peers_perplexity"] / s["tomotopy_200_perplexity"],
                   tomotopy_200_seconds_their_session=s["tomotopy_200_seconds"])
    out["passes"] = out["n_iter"] / out["iters_per_pass"]
    out["passed"] = bool(out["ratio_to_long_chain"] <= GOOD_RATIO and
                         out["time_ratio_to_long_chain"] <= GOOD_TIME and
                         out.get("ratio_to_tomotopy_200", 0.0) <= 1.0)
    return out


def checks(traces: dict) -> list[dict]:
    """The real fits of ``--check`` beside their long chains: the left-out table.
    ``time_ratio_at_trace_costs`` prices the fit's iterations and scores at the long
    chain's measured costs (the two ran at different loads of a shared machine)."""
    rows = []
    for path in sorted(RESULTS.glob("stopping_check_*.json")):
        c = json.loads(path.read_text())
        t = traces.get(c["corpus"])
        if t is None:
            continue
        per_it = t["iteration_seconds"] / t["n_iter"]
        full = t["iteration_seconds"] + t["eval_seconds"]
        rows.append({
            "file": path.name, "corpus": c["corpus"], "rule": c["rule"],
            "passes": c["passes"], "iterations": c["n_iter"], "reason": c["stop_reason"],
            "seconds": c["fit_seconds"], "ratio_to_long_chain": c["ratio_to_long_chain"],
            "peers_ratio_to_long_chain": c["peers_ratio_to_long_chain"],
            "ratio_to_tomotopy_200": c.get("ratio_to_tomotopy_200"),
            "time_ratio_measured": c["time_ratio_to_long_chain"],
            "time_ratio_at_trace_costs": (c["n_iter"] * per_it + c["n_evaluations"]
                                          * t["eval_seconds"]) / full})
    for r in rows:
        r["passed"] = bool(r["ratio_to_long_chain"] <= GOOD_RATIO and
                           r["time_ratio_at_trace_costs"] <= GOOD_TIME and
                           (r["ratio_to_tomotopy_200"] or 0.0) <= 1.0)
    return rows


def _machine(argv: list[str]) -> dict:
    return {"command": "nice -n 19 python benchmarks/stopping.py " + " ".join(argv),
            "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                        "load_average_after": os.getloadavg()},
            "note": "contended: a 2-core machine shared with other sessions' work, "
                    "this one at nice 19"}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--record", choices=CORPORA)
    p.add_argument("--table", action="store_true")
    p.add_argument("--check", choices=CORPORA)
    p.add_argument("--iterations", type=int, default=N_ITER)
    p.add_argument("--eval-every", type=int, default=EVAL_EVERY)
    p.add_argument("--topics", type=int, default=K)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tolerance", type=float)
    p.add_argument("--window", type=float)
    p.add_argument("--min-passes", type=float)
    p.add_argument("--default", action="store_true",
                   help="--check the default rule (every setting at its default)")
    args = p.parse_args()
    RESULTS.mkdir(exist_ok=True)
    argv = sys.argv[1:]
    if args.record:
        out = record(args.record, args.iterations, args.eval_every, args.topics, args.seed)
        out.update(_machine(argv))
        (RESULTS / f"stopping_trace_{args.record}.json").write_text(json.dumps(out, indent=1))
        print(f"{args.record}: {out['fit_seconds']:.0f} s, final {out['final_perplexity']:.1f}, "
              f"peers' scorer {out['peers_perplexity']:.1f}")
    if args.table:
        traces = {n: json.loads((RESULTS / f"stopping_trace_{n}.json").read_text())
                  for n in CORPORA if (RESULTS / f"stopping_trace_{n}.json").exists()}
        result = table(traces)
        result.update(command="python benchmarks/stopping.py --table",
                      checks=checks(traces))
        (RESULTS / "stopping_loo.json").write_text(json.dumps(result, indent=1))
        plot(traces, result, RESULTS / "stopping_loo.png")
        for f in result["folds"]:
            print({k: f.get(k) for k in ("left_out", "chosen", "test")})
        print("chosen on all:", result["chosen_on_all"])
        for r in result["checks"]:
            print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()})
        print("default rule:", result["default_rule"], result["default_rule_on_each"])
    if args.check:
        rule = {"n_iter": "auto"}
        given = {k: getattr(args, k) for k in ("tolerance", "window", "min_passes")}
        if args.default:  # dscir.LDA(n_topics=K).fit(store): every setting at its default
            pass
        elif all(v is None for v in given.values()):
            loo = json.loads((RESULTS / "stopping_loo.json").read_text())
            fold = next(f for f in loo["folds"] if f["left_out"] == args.check)
            given = dict(fold["chosen"])
            given["eval_every"] = EVAL_EVERY * given.pop("every")
        elif args.eval_every != EVAL_EVERY:
            given["eval_every"] = args.eval_every
        rule.update({k: v for k, v in given.items() if v is not None})
        out = check(args.check, rule, args.topics, args.seed)
        out.update(_machine(argv))
        name = f"stopping_check_{args.check}{'_default' if args.default else ''}.json"
        (RESULTS / name).write_text(json.dumps(out, indent=1))
        print({k: out.get(k) for k in ("rule", "n_iter", "passes", "stop_reason", "fit_seconds",
                                        "ratio_to_long_chain", "time_ratio_to_long_chain",
                                        "ratio_to_tomotopy_200", "passed")})


if __name__ == "__main__":
    main()
