"""The Gibbs kernel alone at large K: dense against sparse (Metropolis-Hastings
with alias tables), on wiki batches under fitted topics.

For each K, topics are fitted by collapsed Gibbs on the whole wiki corpus
(alpha 0.1, beta 0.01, ``--fit-sweeps`` sweeps from a random start; cached in
``--cache``). Then, on the same random batches of ``--batch-size`` documents,
``gibbs_expectations`` runs with ``kernel="dense"`` and ``kernel="sparse"``
(``--sweeps`` sweeps, half kept, alpha 0.1, columns rescaled as the driver
does). Rates are token-sweeps per second: tokens x sweeps / seconds, both per
wall second and per CPU second of the calling thread (``time.thread_time``:
on a shared machine the CPU rate is the per-core figure; the wall rate also
counts time the thread waited for a core). Every call is a whole call: the
alias tables, validation and output included.

``--prior-ks``: K values measured under topics drawn from a symmetric
Dirichlet(0.5) prior instead (the start of a chain), for when a collapsed
Gibbs fit at that K costs more than the machine can give.

Agreement: on one batch of ``--agree-docs`` documents per K, both kernels'
expected topic-word counts (kept counts / kept sweeps) are averaged over
``--replicates`` independent runs (streams of different iterations), and a
second independent set of dense runs gives the Monte Carlo floor: the relative
L1 distance sparse vs dense beside dense vs dense.
Writes benchmarks/results/lda_kernel_large_k.json and .png.

    python benchmarks/lda_kernel_large_k.py [--ks 100 200 400 1000 5000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numba
import numpy as np

from dscir.models.lda import CollapsedGibbs, gibbs_expectations

from _common import cpu_model
from lda_kernel import RESULTS, WIKI, gibbs_args, read_ldac, take


def fitted_topics(corpus, n_topics: int, sweeps: int, cache: Path) -> np.ndarray:
    path = cache / f"wiki-K{n_topics}-sweeps{sweeps}.npy"
    if path.exists():
        return np.load(path)
    n_words = int(corpus[1].max()) + 1
    model = CollapsedGibbs(*corpus, n_topics, alpha=0.1, beta=0.01, seed=0, n_words=n_words)
    t = time.perf_counter()
    model.run(sweeps)
    print(f"  fitted K={n_topics} in {time.perf_counter() - t:.0f} s", flush=True)
    phi = model.topic_word()
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, phi)
    return phi


def time_call(call, kernel: str) -> tuple[float, float]:
    """(wall seconds, thread CPU seconds) of one call."""
    wall, cpu = time.perf_counter(), time.thread_time()
    gibbs_expectations(*call, kernel)
    return time.perf_counter() - wall, time.thread_time() - cpu


def rates(corpus, phi, batches, sweeps: int) -> dict:
    out = {}
    for kernel in ("dense", "sparse"):
        runs = []
        for i, docs in enumerate(batches):
            batch = take(corpus, docs)
            call = gibbs_args(batch, docs, phi, 0.1, sweeps, i)
            wall, cpu = time_call(call, kernel)
            work = int(batch[2].sum()) * sweeps
            runs.append({"token_sweeps": work, "wall_s": wall, "cpu_s": cpu,
                         "wall_rate": work / wall, "cpu_rate": work / cpu,
                         "loadavg": os.getloadavg()})
        out[kernel] = runs
    return out


def agreement(corpus, phi, docs, sweeps: int, replicates: int) -> dict:
    batch = take(corpus, docs)

    def mean_counts(kernel, first):
        est = []
        for r in range(replicates):
            tw, _, n_kept = gibbs_expectations(
                *gibbs_args(batch, docs, phi, 0.1, sweeps, first + r), kernel)
            est.append(tw / n_kept)
        return np.mean(est, axis=0)

    dense_a, dense_b = mean_counts("dense", 0), mean_counts("dense", 1000)
    sparse = mean_counts("sparse", 2000)
    total = dense_a.sum()
    return {"docs": int(docs.size), "tokens": int(batch[2].sum()), "replicates": replicates,
            "sparse_vs_dense_rel_l1": float(np.abs(sparse - dense_a).sum() / total),
            "dense_vs_dense_rel_l1": float(np.abs(dense_b - dense_a).sum() / total)}


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report["kernels"]
    ks = [r["K"] for r in rows]
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for kernel, color in (("dense", "tab:blue"), ("sparse", "tab:orange")):
        for what, style in (("cpu_rate", "-o"), ("wall_rate", ":x")):
            vals = [[x[what] / 1e6 for x in r[kernel]] for r in rows]
            ax.plot(ks, [np.median(v) for v in vals], style, color=color,
                    label=f"{kernel}, per {'CPU' if what == 'cpu_rate' else 'wall'} second")
            for k, v in zip(ks, vals):
                ax.plot([k, k], [min(v), max(v)], color=color, lw=1)
    base = np.median([x["cpu_rate"] for x in rows[0]["dense"]]) / 1e6 if ks[0] == 100 else None
    if base is not None:
        ax.axhline(base / 2, color="gray", ls="--", lw=1, label="goal at K=1,000: dense K=100 / 2")
        ax.axhline(base / 3, color="gray", ls="-.", lw=1, label="goal at K=5,000: dense K=100 / 3")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("K (topics)")
    ax.set_ylabel("million token-sweeps / s (one thread)")
    s = report["settings"]
    ax.set_title(f"gibbs_expectations on wiki batches of {s['batch_size']} docs, "
                 f"{s['sweeps']} sweeps; topics fitted, prior at K in {s['prior_ks']}\n"
                 f"shared 2-core machine: median and range of {s['batches']} batches",
                 fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ks", type=int, nargs="+", default=[100, 200, 400, 1000, 5000])
    p.add_argument("--prior-ks", type=int, nargs="*", default=[])
    p.add_argument("--batches", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=50)
    p.add_argument("--sweeps", type=int, default=200)
    p.add_argument("--fit-sweeps", type=int, default=10)
    p.add_argument("--agree-docs", type=int, default=10)
    p.add_argument("--replicates", type=int, default=3)
    p.add_argument("--cache", type=Path, default=Path("/tmp/dscir-bench-cache"))
    p.add_argument("--out", default="lda_kernel_large_k")
    args = p.parse_args()
    if not WIKI.exists():
        raise SystemExit(f"the wiki corpus is not at {WIKI} (see ../shared/data/README.md)")
    corpus = read_ldac(WIKI)
    rng = np.random.default_rng(0)
    n_docs = corpus[0].size - 1
    batches = [rng.choice(n_docs, args.batch_size, replace=False) for _ in range(args.batches)]
    agree_docs = rng.choice(n_docs, args.agree_docs, replace=False)
    report = {
        "command": "python benchmarks/lda_kernel_large_k.py " + " ".join(
            f"--{k.replace('_', '-')} {' '.join(map(str, v)) if isinstance(v, list) else v}"
            for k, v in vars(args).items() if k not in ("cache", "out")),
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "numba": numba.__version__,
                    "python": platform.python_version(), "shared": True,
                    "loadavg_start": os.getloadavg()},
        "settings": {k: v for k, v in vars(args).items() if k != "cache"}
        | {"corpus": "wiki", "alpha": 0.1},
        "kernels": [],
    }
    warm = take(corpus, [0])
    n_words = int(corpus[1].max()) + 1
    for n_topics, topics in [(k, "fitted") for k in args.ks] + [(k, "prior") for k in
                                                                args.prior_ks]:
        phi = (fitted_topics(corpus, n_topics, args.fit_sweeps, args.cache)
               if topics == "fitted" else rng.dirichlet(np.full(n_words, 0.5), size=n_topics))
        for kernel in ("dense", "sparse"):  # compile
            gibbs_expectations(*gibbs_args(warm, np.array([0]), phi, 0.1, 2, 0), kernel)
        row = {"K": n_topics, "topics": topics} | rates(corpus, phi, batches, args.sweeps)
        row["agreement"] = agreement(corpus, phi, agree_docs, args.sweeps, args.replicates)
        report["kernels"].append(row)
        med = {k: np.median([x["cpu_rate"] for x in row[k]]) / 1e6 for k in ("dense", "sparse")}
        print(f"K={n_topics} ({topics}): dense {med['dense']:.2f}, sparse {med['sparse']:.2f} M "
              f"token-sweeps per CPU s; agreement {row['agreement']}", flush=True)
    report["machine"]["loadavg_end"] = os.getloadavg()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(report, indent=2) + "\n")
    plot(report, RESULTS / f"{args.out}.png")


if __name__ == "__main__":
    main()
