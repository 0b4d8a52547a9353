"""A scaling model of one LDA iteration (issue 35): fitted, then checked on configurations it never saw.

The model is ``benchmarks/_iteration_model.py`` (pure code): seconds per
iteration = compute on the busiest Gibbs part (tokens per part x sweeps x
(g0 + g1 K), parts sharing cores past ``parallel``) + the driver's update
(K x W entries of the dense SCIR step, column entries cut and added) + bytes
over the bandwidth + one-way delays x trips + overhead (per task, per round,
per separate host). Each term's constants are fitted by non-negative least
squares on its own measured part of the iteration (``engine.parts.Timing``:
compute on the critical path, update; the rest of the wall time for the
others).

How it was measured: every run is ``dscir.LDA(...).fit`` on a generated
corpus (``dscir.corpus.synthetic``, 10,000 documents of mean length 100, W
words), topics on the driver, dense SCIR step and dense Gibbs kernel, 10
sweeps, on a fresh LocalCluster of 1 or 2 single-threaded workers, or (rows
with a delay) ``dscir fit lda`` on the netns cluster (``clusters/netns``:
scheduler, 2 worker hosts and the driver in separate network namespaces,
every link between hosts delayed). A run's seconds per iteration is the
median over its iterations after the first ``SKIP`` (``history_``). Order:
the 8 calibration configurations run once, the constants are fitted and the
validation configurations predicted and written to
``iteration_model_predictions.json`` (committed before they ran); then
``--repeats`` rounds run calibration and validation configurations
interleaved, in alternating order, each run recording ``os.getloadavg()``.
Predictions are never refitted. The machine has 2 cores shared with other
developers' jobs and a niced benchmark: every second here is contended.

What the result files hold (their tables below): ``validation``, each unseen
configuration's prediction against its measured median; ``calibration_fit``,
the fitted constants; ``projection``, seconds per iteration and per pass for
PubMed- and Wikipedia-size corpora on 16, 64 and 256 workers of 8 cores over
10 Gb/s, term by term, with the topics on the driver (the validated form) and
on the workers (extrapolated); ``published``, the throughput figures found for
other systems (``_iteration_projection.py``). ``iteration_model_first.json``
is the model without ``parallel`` (parts always on cores of their own), kept
because its misses are why ``parallel`` exists.

Reading the projection term by term says where the next wall is: with the
topics on the driver, its column work per part and its O(K x W) step; with
the topics on the workers, first the column entries cut and serialised per
part, then, at hundreds of workers, the scheduler's per-task overhead (the
Gibbs tasks and the blocks' step and normaliser tasks); not the network.

    python benchmarks/iteration_model.py [--repeats 2] [--iterations 12]
    python benchmarks/iteration_model.py --analyse-only   # tables, projection
    python benchmarks/iteration_model.py --tag _quiet --machine-note '...'  # a rerun
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from _common import ROOT, cpu_model
import _iteration_model as im

RESULTS = ROOT / "benchmarks" / "results"
SKIP = 3  # warm-up iterations left out (numba loads, first reads)
N_DOCS, DOC_LENGTH = 10_000, 100.0
FIELDS = ("wall", "compute", "update", "transfer", "queue")

_C = im.Config
CALIBRATION = (
    _C(K=20, W=2000, batch=200, doc_length=DOC_LENGTH, workers=1),
    _C(K=20, W=2000, batch=200, doc_length=DOC_LENGTH, workers=2),
    _C(K=100, W=10000, batch=1000, doc_length=DOC_LENGTH, workers=1),
    _C(K=100, W=10000, batch=1000, doc_length=DOC_LENGTH, workers=2),
    _C(K=50, W=2000, batch=2000, doc_length=DOC_LENGTH, workers=2),
    _C(K=200, W=10000, batch=100, doc_length=DOC_LENGTH, workers=1),
    _C(K=20, W=2000, batch=200, doc_length=DOC_LENGTH, workers=2, hosts=True),
    _C(K=20, W=2000, batch=200, doc_length=DOC_LENGTH, workers=2, hosts=True, delay_ms=10),
)
#: the second validation set (model v2), none of them run before its predictions were
#: written; the first set (model v1) is in iteration_model_first.json
VALIDATION = (
    _C(K=80, W=5000, batch=800, doc_length=DOC_LENGTH, workers=1),
    _C(K=80, W=5000, batch=800, doc_length=DOC_LENGTH, workers=2),
    _C(K=40, W=20000, batch=1000, doc_length=DOC_LENGTH, workers=2),
    _C(K=120, W=10000, batch=600, doc_length=DOC_LENGTH, workers=1),
    _C(K=250, W=2000, batch=200, doc_length=DOC_LENGTH, workers=2),
    _C(K=15, W=10000, batch=1500, doc_length=DOC_LENGTH, workers=1),
    _C(K=30, W=10000, batch=500, doc_length=DOC_LENGTH, workers=2, hosts=True, delay_ms=2),
    _C(K=60, W=5000, batch=1000, doc_length=DOC_LENGTH, workers=2, hosts=True, delay_ms=15),
)


NOTE = (
    "Noise floor: the 1-minute load average was {lo:.0f}-{hi:.0f} on 2 cores, and the "
    "calibration configurations re-measured in the interleaved rounds moved by {dlo:+.0%} to "
    "{dhi:+.0%} from their own round-0 seconds, so a 25 % goal is finer than this machine "
    "resolved during the run. Every miss is an under-prediction of a configuration measured "
    "while the load was above round 0's: the three local 2-worker configurations (the fitted "
    "parallel = 1.6 cores credits the second worker with more than it got later in the run) "
    "and K=15 W=10000 batch=1500 on 1 worker. same_rounds_s refits the constants on the "
    "calibration runs of the same interleaved rounds (no validation run used): 4 of 8 within "
    "25 % again, but not the same 4, which points at load rather than a missing term (this "
    "run cannot prove it). The two netns rows (2 and 15 ms one-way delay) are within 4 %: "
    "the delay term, trips one-way delays per iteration, held.")
#: The note of a run with ``--tag`` (a rerun on another day's machine): the numbers only.
NOTE_TAGGED = (
    "Noise floor: the 1-minute load average was {lo:.1f}-{hi:.1f} on 2 cores, and the "
    "calibration configurations re-measured in the interleaved rounds moved by {dlo:+.0%} to "
    "{dhi:+.0%} from their own round-0 seconds.")


def label(c: im.Config) -> str:
    where = f"netns {c.delay_ms:g} ms" if c.hosts else "local"
    return f"K={c.K} W={c.W} batch={c.batch} workers={c.workers} {where}"


def corpus(work: Path, n_words: int) -> str:
    """The generated corpus of ``n_words`` words (written once per run of this script)."""
    from dscir.corpus.synthetic import write_lda_corpus

    path = work / f"corpus_w{n_words}.zarr"
    if not path.exists():
        write_lda_corpus(path, n_docs=N_DOCS, n_words=n_words, n_topics=20,
                         doc_length=DOC_LENGTH, seed=0)
    return str(path)


def summary(history: dict) -> dict:
    """Medians of an iteration's parts after the warm-up, and the walls themselves."""
    h = {k: np.asarray(history[k][SKIP:], float) for k in FIELDS}
    return {"median": {k: float(np.median(v)) for k, v in h.items()},
            "wall_per_iteration": h["wall"].tolist()}


def fit_local(c: im.Config, store: str, iterations: int) -> dict:
    """``dscir.LDA(...).fit`` on a fresh LocalCluster of ``c.workers`` workers."""
    import dscir
    from dscir.engine.cluster import dask_client

    with dask_client(n_workers=c.workers, threads_per_worker=c.threads) as client:
        est = dscir.LDA(n_topics=c.K, batch_size=c.batch, sweeps=c.sweeps, n_iter=iterations,
                        placement="driver", kernel="dense", scir_step="dense",
                        eval_every=0, progress=False, seed=1)
        est.fit(store, client=client)
    return summary(est.history_)


def fit_netns(c: im.Config, store: str, iterations: int, work: Path) -> dict:
    """``dscir fit lda`` on the netns cluster: 2 worker hosts, links delayed by ``c.delay_ms``."""
    sys.path.insert(0, str(ROOT / "clusters" / "netns"))
    from netns_cluster import NetnsCluster

    from dscir.runs import Run

    run = work / f"run-{time.monotonic_ns()}"
    with NetnsCluster(work / f"hosts-{time.monotonic_ns()}", c.workers, 1,
                      delay_ms=c.delay_ms) as cluster, open(work / "driver.log", "w") as log:
        code = cluster.dscir(
            ["fit", "lda", store, "--topics", str(c.K), "--iterations", str(iterations),
             "--batch-size", str(c.batch), "--sweeps", str(c.sweeps), "--placement", "driver",
             "--kernel", "dense", "--scir-step", "dense", "--eval-every", "0", "--seed", "1",
             "--no-progress", "--out", str(run)], stdout=log, stderr=log).wait()
    if code:
        raise RuntimeError((work / "driver.log").read_text())
    return summary(Run.open(run).history)


def measure(c: im.Config, work: Path, iterations: int, phase: str, repeat: int) -> dict:
    """One run of ``c``, with the load average before and after."""
    store = corpus(work, c.W)
    load, start = os.getloadavg(), time.time()
    r = (fit_netns(c, store, iterations, work) if c.hosts
         else fit_local(c, store, iterations))
    row = {"config": label(c), **asdict(c), "phase": phase, "repeat": repeat,
           "started_utc": time.strftime("%H:%M:%S", time.gmtime(start)),
           "load_before": list(load), "load_after": list(os.getloadavg()), **r}
    print(f"{phase} {repeat} {label(c)}: {r['median']['wall']:.3f} s/iteration, "
          f"load {load[0]:.2f}", flush=True)
    return row


def fit_rows(runs: list[dict]) -> list[tuple[im.Config, dict]]:
    return [(config_of(r), r["median"]) for r in runs]


def config_of(row: dict) -> im.Config:
    return im.Config(**{f: row[f] for f in im.Config.__dataclass_fields__})


def validation_table(predictions: dict, same_rounds: im.Constants, runs: list[dict]) -> list[dict]:
    """Predicted vs measured (range over repeats) of every validation configuration;
    beside it the prediction of constants fitted on the calibration runs of the same
    interleaved rounds (no validation run), which takes the load drift out."""
    table = []
    for name, p in predictions.items():
        walls = [r["median"]["wall"] for r in runs if r["config"] == name]
        mid = float(np.median(walls))
        c = config_of(next(r for r in runs if r["config"] == name))
        again = im.predict(c, same_rounds)["total"]
        table.append({"config": name, "predicted_s": p["total"],
                      "measured_min_s": min(walls), "measured_max_s": max(walls),
                      "runs": len(walls), "error": p["total"] / mid - 1,
                      "within_25pct": abs(p["total"] / mid - 1) <= 0.25,
                      "load_1min": [r["load_before"][0] for r in runs if r["config"] == name],
                      "same_rounds_s": again, "same_rounds_error": again / mid - 1})
    return table


def calibration_drift(constants: im.Constants, runs: list[dict]) -> list[dict]:
    """The round-0 constants' predictions of the calibration configurations in the
    later, interleaved rounds: how far the load moved between the two phases."""
    out = []
    for c in CALIBRATION:
        walls = [r["median"]["wall"] for r in runs
                 if r["config"] == label(c) and r["phase"] == "interleaved"]
        p = im.predict(c, constants)["total"]
        out.append({"config": label(c), "fitted_s": p, "later_min_s": min(walls),
                    "later_max_s": max(walls), "error": p / float(np.median(walls)) - 1})
    return out


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 6))
    for phase, rows, marker in (("calibration (fitted)", result["calibration_fit"], "s"),
                                ("validation (predicted first)", result["validation"], "o")):
        pred = [r.get("predicted_s", r.get("fitted_s")) for r in rows]
        lo = [r.get("measured_min_s", r.get("later_min_s")) for r in rows]
        hi = [r.get("measured_max_s", r.get("later_max_s")) for r in rows]
        mid = [(a + b) / 2 for a, b in zip(lo, hi)]
        ax.errorbar(pred, mid, yerr=[np.subtract(mid, lo), np.subtract(hi, mid)],
                    fmt=marker, capsize=3, label=phase)
    v = result["validation"]
    ax.plot([r["same_rounds_s"] for r in v],
            [(r["measured_min_s"] + r["measured_max_s"]) / 2 for r in v], "x",
            label="validation, constants refitted on the same rounds' calibration runs")
    top = max(max(r["measured_max_s"], r["predicted_s"]) for r in result["validation"]) * 1.3
    ax.plot([0, top], [0, top], "k-", lw=0.8, label="measured = predicted")
    ax.fill_between([0, top], [0, top * 0.75], [0, top * 1.25], color="grey", alpha=0.15,
                    label="within 25 %")
    loads = [r["load_before"][0] for r in result["runs"]]
    ax.set(xscale="log", yscale="log", xlabel="predicted seconds per iteration",
           ylabel="measured seconds per iteration (range over repeats)",
           title="LDA iteration model: predicted vs measured\n"
                 f"(2 cores, 1-min load {min(loads):.1f}-{max(loads):.1f})")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def run_all(args, work: Path, predictions_path: Path) -> dict:
    """Calibrate, fit, predict (written to disk), then the interleaved rounds."""
    runs = [measure(c, work, args.iterations, "calibration", 0) for c in CALIBRATION]
    constants = im.fit(fit_rows(runs))
    predictions = {label(c): im.predict(c, constants) for c in VALIDATION}
    predictions_path.write_text(json.dumps({
        "command": "python benchmarks/iteration_model.py " + " ".join(sys.argv[1:]),
        "predicted_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
        "constants": im.as_dict(constants), "predictions": predictions}, indent=1))
    print("predicted:", json.dumps({k: round(v["total"], 4) for k, v in predictions.items()}),
          flush=True)
    order = [*VALIDATION, *CALIBRATION]
    for rep in range(1, args.repeats + 1):
        for c in (order if rep % 2 else order[::-1]):  # interleaved, alternating order
            runs.append(measure(c, work, args.iterations,
                                "validation" if c in VALIDATION else "interleaved", rep))
    return {"constants": im.as_dict(constants), "predictions": predictions, "runs": runs}


def analyse(result: dict, note: str = NOTE) -> dict:
    """The validation table and the calibration drift from the stored runs."""
    runs, constants = result["runs"], im.from_dict(result["constants"])
    same = im.fit(fit_rows([r for r in runs if r["phase"] == "interleaved"]))
    errors = [abs(p["total"] / np.median([r["median"]["wall"] for r in runs
                                          if r["config"] == name]) - 1)
              for name, p in result["predictions"].items()]
    first = {r["config"]: r["median"]["wall"] for r in runs if r["phase"] == "calibration"}
    drift = [r["median"]["wall"] / first[r["config"]] - 1 for r in runs
             if r["phase"] == "interleaved"]
    loads = [r["load_before"][0] for r in runs]
    return {"note": note.format(lo=min(loads), hi=max(loads), dlo=min(drift), dhi=max(drift)),
            "validation": validation_table(result["predictions"], same,
                                           [r for r in runs if r["phase"] == "validation"]),
            "calibration_fit": calibration_drift(constants, runs),
            "constants_same_rounds": im.as_dict(same),
            "validated": f"{sum(e <= 0.25 for e in errors)} of {len(errors)} validation "
                         f"configurations within 25 % (max error {max(errors):.0%})"}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--iterations", type=int, default=12)
    p.add_argument("--analyse-only", action="store_true",
                   help="recompute the tables and projection from the stored runs, run nothing")
    p.add_argument("--tag", default="",
                   help="a rerun: writes iteration_model{tag}.json, .png, _predictions.json")
    p.add_argument("--machine-note", default="2 cores shared with other developers' jobs "
                   "and a niced benchmark: seconds are contended; load averages per run in runs")
    args = p.parse_args()
    from _iteration_projection import projection

    out = RESULTS / f"iteration_model{args.tag}.json"
    if args.analyse_only:
        result = json.loads(out.read_text())
    else:
        with tempfile.TemporaryDirectory() as tmp:
            result = {"command": "python benchmarks/iteration_model.py "
                      + " ".join(sys.argv[1:]),
                      "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                                  "note": args.machine_note},
                      "args": vars(args), **run_all(
                          args, Path(tmp), RESULTS / f"iteration_model{args.tag}_predictions.json")}
    result.update(analyse(result, NOTE_TAGGED if args.tag else NOTE))
    result.update(projection(im.from_dict(result["constants"])))
    out.write_text(json.dumps(result, indent=1))
    plot(result, out.with_suffix(".png"))
    print(result["validated"], f"; wrote {out}")


if __name__ == "__main__":
    main()
