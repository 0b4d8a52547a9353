"""Issue 30's scale goals, read from ``scale.py``'s result files: token-sweeps per
second against another engine's at the same cell, seconds per iteration across
the vocabulary at a fixed minibatch, and the 2-worker efficiency.

Each ``--runs`` entry is ``LABEL=FILE`` (a ``scale.py`` result, e.g. one SCIR
step on main, or the engine of an earlier commit run from its own tree);
a label given twice merges its files' cells. ``--baseline LABEL`` names the
one the speed-ups are taken against. Per label
and K: seconds per iteration at each W (minibatch and workers fixed) with their
largest-to-smallest ratio; at each (K, W) with both worker counts the
efficiency t(1 worker) / (2 t(2 workers)); at each cell the baseline also ran,
the ratio of token-sweeps per second. Nothing is run here.

    python benchmarks/scale_goals.py --runs c158e45=results/scale_s34_before_w1e5.json \
        dense=results/scale_s34_dense_w1e5.json ... --baseline c158e45 --out scale_goals_s34

Writes results/OUT.json and .png.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
KEY = ("topics", "words", "batch", "workers")


def cells(runs: list[tuple[str, str]]) -> dict[str, dict[tuple, dict]]:
    """Each label's cells that ran, by (K, W, minibatch, workers)."""
    out = {}
    for label, path in runs:
        found = out.setdefault(label, {})
        for c in json.loads(Path(path).read_text())["cells"]:
            if "s_per_iteration" in c:
                found[tuple(c[k] for k in KEY)] = c
    return out


def summarise(by_label: dict[str, dict[tuple, dict]], baseline: str) -> dict:
    speedups, across_w, efficiency = [], [], []
    for label, found in by_label.items():
        for key, c in sorted(found.items()):
            base = by_label.get(baseline, {}).get(key)
            if base is not None and label != baseline:
                speedups.append({"label": label, **dict(zip(KEY, key)),
                                 "token_sweeps_per_s": c["token_sweeps_per_s"],
                                 "baseline_token_sweeps_per_s": base["token_sweeps_per_s"],
                                 "ratio": c["token_sweeps_per_s"] / base["token_sweeps_per_s"]})
            one = found.get(key[:3] + (1,))
            if key[3] == 2 and one is not None:
                efficiency.append({"label": label, **dict(zip(KEY[:3], key[:3])),
                                   "s_1_worker": one["s_per_iteration"],
                                   "s_2_workers": c["s_per_iteration"],
                                   "efficiency": one["s_per_iteration"]
                                   / (2 * c["s_per_iteration"])})
        groups: dict[tuple, list] = {}
        for (k, w, b, n), c in found.items():
            groups.setdefault((k, b, n), []).append((w, c))
        for (k, b, n), row in sorted(groups.items()):
            if len(row) < 2:
                continue
            row.sort(key=lambda x: x[0])
            s = [c["s_per_iteration"] for _, c in row]
            across_w.append({"label": label, "topics": k, "batch": b, "workers": n,
                             "words": [w for w, _ in row], "s_per_iteration": s,
                             "step": [c.get("scir_step", "dense") for _, c in row],
                             "placement": [c["placement"] for _, c in row],
                             "largest_over_smallest": max(s) / min(s)})
    return {"token_sweeps_vs_baseline": speedups, "seconds_across_words": across_w,
            "two_worker_efficiency": efficiency}


def plot(summary: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for row in summary["seconds_across_words"]:
        axes[0].plot(row["words"], row["s_per_iteration"], "o-",
                     label=f"{row['label']}, K = {row['topics']}")
    axes[0].set(xscale="log", yscale="log", xlabel="vocabulary W",
                ylabel="median seconds per iteration (whole iteration)",
                title="minibatch and workers fixed")
    eff = summary["two_worker_efficiency"]
    x = np.arange(len(eff))
    axes[1].bar(x, [e["efficiency"] for e in eff])
    axes[1].axhline(0.85, color="grey", ls=":", label="goal 0.85")
    axes[1].set_xticks(x, [f"{e['label']}\nK {e['topics']}\nW {e['words']:.0e}" for e in eff],
                       fontsize=7)
    axes[1].set(ylabel="t(1 worker) / (2 t(2 workers))", title="2-worker efficiency")
    for ax in axes:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", nargs="+", required=True, metavar="LABEL=FILE")
    p.add_argument("--baseline", required=True)
    p.add_argument("--out", default="scale_goals")
    args = p.parse_args()
    runs = [tuple(r.split("=", 1)) for r in args.runs]
    if args.baseline not in {label for label, _ in runs}:
        raise SystemExit(f"--baseline {args.baseline!r} is not one of the runs' labels")
    summary = summarise(cells(runs), args.baseline)
    first = json.loads(Path(runs[0][1]).read_text())
    out = {"command": "python benchmarks/scale_goals.py " + " ".join(sys.argv[1:]),
           "cpu": first.get("cpu"), "n_cpus": first.get("n_cpus"),
           "note": "read from the runs' files, which record each cell's load",
           "runs": runs, "baseline": args.baseline,
           "goals": {"token_sweeps_ratio": 5.0, "largest_over_smallest": 1.5,
                     "efficiency": 0.85}, **summary}
    (RESULTS / f"{args.out}.json").write_text(json.dumps(out, indent=1))
    plot(summary, RESULTS / f"{args.out}.png")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
