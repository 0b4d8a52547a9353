"""Throughput of LDA's Gibbs kernels on one core, on real minibatches.

Batches of 50 documents are drawn from the shared wiki corpus (read straight
from ../shared/data/wiki/wiki.ldac.gz). For K in {50, 100} and the two
reference alphas (0.1 for SCIR, 0.01 for SGRLD), ``gibbs_expectations`` runs
200 sweeps per document under two kinds of topics: a draw from a symmetric
Dirichlet(0.5) prior (the start of a chain) and the topics of a collapsed Gibbs
fit of the whole corpus (late in a chain, documents concentrate on few topics).
The rate is token-sweeps per second: tokens in the batch x sweeps / seconds.
Also measured: the same kernel on two threads at once (it releases the GIL),
document completion, and collapsed Gibbs sweeps over the whole corpus.
Writes benchmarks/results/lda_kernel.json and .png.

    python benchmarks/lda_kernel.py [--batches 5] [--gibbs-sweeps 50]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import threading
import time
from pathlib import Path

import numba
import numpy as np

from dscir.models.lda import CollapsedGibbs, completion_log_likelihood, gibbs_expectations

from _common import RESULTS, cpu_model, shared_data

WIKI = shared_data() / "wiki" / "wiki.ldac.gz"
TARGET = 5e6


def read_ldac(path: Path):
    """CSR arrays (indptr, indices, data) of a gzipped LDA-C file."""
    indptr, indices, data = [0], [], []
    with gzip.open(path, "rt") as f:
        for line in f:
            for pair in line.split()[1:]:
                w, c = pair.split(":")
                indices.append(int(w))
                data.append(int(c))
            indptr.append(len(indices))
    return (np.array(indptr, dtype=np.int64), np.array(indices, dtype=np.int32),
            np.array(data, dtype=np.int32))


def take(corpus, docs):
    """The CSR batch of documents ``docs``."""
    indptr, indices, data = corpus
    parts = [np.arange(indptr[d], indptr[d + 1]) for d in docs]
    entries = np.concatenate(parts)
    sizes = np.array([p.size for p in parts])
    return np.concatenate(([0], np.cumsum(sizes))), indices[entries], data[entries]


def gibbs_args(batch, docs, phi, alpha, sweeps, iteration):
    """Arguments of gibbs_expectations as the driver builds them."""
    indptr, indices, data = batch
    words = np.unique(indices)
    cols = phi[:, words]
    cols = np.ascontiguousarray(cols / cols.max(axis=0))
    local = np.searchsorted(words, indices).astype(np.int32)
    return (indptr, indices, data, docs, cols, local, alpha, sweeps, 0, iteration)


def time_gibbs(corpus, phi, alpha, args, rng) -> dict:
    d = corpus[0].size - 1
    tokens, seconds, two_thread = 0, 0.0, []
    for i in range(args.batches):
        docs = rng.choice(d, args.batch_size, replace=False)
        batch = take(corpus, docs)
        call = gibbs_args(batch, docs, phi, alpha, args.sweeps, i)
        t = time.perf_counter()
        gibbs_expectations(*call)
        seconds += time.perf_counter() - t
        tokens += int(batch[2].sum())
        # The same batch on two threads at once: the aggregate rate of 2 cores.
        threads = [threading.Thread(target=gibbs_expectations, args=call) for _ in range(2)]
        t = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        two_thread.append(2 * int(batch[2].sum()) * args.sweeps / (time.perf_counter() - t))
    return {"token_sweeps_per_s": tokens * args.sweeps / seconds,
            "two_threads_token_sweeps_per_s": float(np.mean(two_thread)),
            "tokens_per_batch": tokens / args.batches, "seconds_per_batch": seconds / args.batches}


def time_completion(corpus, phi, alpha, args, rng) -> dict:
    """Document completion on held-out-style splits (every 10th token tested)."""
    d = corpus[0].size - 1
    docs = rng.choice(d, args.batch_size, replace=False)
    indptr, indices, data = take(corpus, docs)
    words = np.unique(indices)
    log_phi = np.log(phi[:, words])
    obs_rows, test_rows = [], []
    for j in range(docs.size):
        tok = np.repeat(indices[indptr[j]:indptr[j + 1]], data[indptr[j]:indptr[j + 1]])
        test = np.zeros(tok.size, dtype=bool)
        test[9::10] = True
        obs_rows.append(np.unique(tok[~test], return_counts=True))
        test_rows.append(np.unique(tok[test], return_counts=True))

    def csr(rows):
        ptr = np.concatenate(([0], np.cumsum([r[0].size for r in rows])))
        ind = np.concatenate([r[0] for r in rows]).astype(np.int32)
        return ptr, ind, np.concatenate([r[1] for r in rows]).astype(np.int32)

    (oi, ox, od), (ti, tx, td) = csr(obs_rows), csr(test_rows)
    call = (oi, ox, od, ti, tx, td, docs, log_phi, np.searchsorted(words, ox).astype(np.int32),
            np.searchsorted(words, tx).astype(np.int32), alpha, args.sweeps, 0)
    completion_log_likelihood(*call[:11], 2, 0)  # compiles
    t = time.perf_counter()
    completion_log_likelihood(*call)
    seconds = time.perf_counter() - t
    return {"token_sweeps_per_s": int(od.sum()) * args.sweeps / seconds}


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report["gibbs_expectations"]
    labels = [f"K={r['K']}\n{r['topics']}\nα={r['alpha']}" for r in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(11, 4.5))
    ax.bar(x - 0.2, [r["token_sweeps_per_s"] / 1e6 for r in rows], 0.4, label="1 thread")
    ax.bar(x + 0.2, [r["two_threads_token_sweeps_per_s"] / 1e6 for r in rows], 0.4,
           label="2 threads (aggregate)")
    cg = report["collapsed_gibbs"]
    xc = len(rows) + np.arange(len(cg))
    ax.bar(xc, [r["tokens_per_s"] / 1e6 for r in cg], 0.4, color="tab:green",
           label="collapsed Gibbs (1 thread)")
    ax.axhline(TARGET / 1e6, color="k", ls="--", lw=1, label="target 5 M / core")
    ax.set_xticks(np.concatenate((x, xc)),
                  labels + [f"K={r['K']}\nwhole corpus\ncollapsed" for r in cg], fontsize=8)
    ax.set_ylabel("million token-sweeps / s")
    ax.set_title(f"LDA kernels on wiki batches of {report['settings']['batch_size']} documents, "
                 f"{report['settings']['sweeps']} sweeps ({report['machine']['cpu']})")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batches", type=int, default=5, help="batches per setting")
    p.add_argument("--batch-size", type=int, default=50)
    p.add_argument("--sweeps", type=int, default=200)
    p.add_argument("--gibbs-sweeps", type=int, default=50,
                   help="collapsed Gibbs sweeps over the corpus (fits the 'fitted' topics)")
    args = p.parse_args()
    if not WIKI.exists():
        raise SystemExit(f"the wiki corpus is not at {WIKI} (see ../shared/data/README.md)")
    corpus = read_ldac(WIKI)
    n_words = int(corpus[1].max()) + 1
    rng = np.random.default_rng(0)
    report = {
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "numba": numba.__version__,
                    "python": platform.python_version()},
        "settings": vars(args) | {"corpus": "wiki", "documents": corpus[0].size - 1,
                                  "tokens": int(corpus[2].sum())},
        "gibbs_expectations": [], "completion": [], "collapsed_gibbs": [],
    }
    warm = take(corpus, [0])
    for n_topics in (50, 100):
        model = CollapsedGibbs(*corpus, n_topics, alpha=0.1, beta=0.01, seed=0, n_words=n_words)
        model.run(1)  # compiles
        t = time.perf_counter()
        model.run(args.gibbs_sweeps)
        seconds = time.perf_counter() - t
        rate = model.n_tokens * args.gibbs_sweeps / seconds
        report["collapsed_gibbs"].append({"K": n_topics, "sweeps": args.gibbs_sweeps,
                                          "seconds": seconds, "tokens_per_s": rate})
        print(f"collapsed Gibbs K={n_topics}: {rate / 1e6:.2f} M tokens/s", flush=True)
        topics = {"prior": rng.dirichlet(np.full(n_words, 0.5), size=n_topics),
                  "fitted": model.topic_word()}
        for name, phi in topics.items():
            for alpha in (0.1, 0.01):
                gibbs_expectations(*gibbs_args(warm, np.array([0]), phi, alpha, 2, 0))
                r = time_gibbs(corpus, phi, alpha, args, rng)
                report["gibbs_expectations"].append({"K": n_topics, "topics": name,
                                                     "alpha": alpha} | r)
                print(f"gibbs_expectations K={n_topics} {name:6s} alpha={alpha}: "
                      f"{r['token_sweeps_per_s'] / 1e6:.2f} M token-sweeps/s "
                      f"(2 threads {r['two_threads_token_sweeps_per_s'] / 1e6:.2f})", flush=True)
        c = time_completion(corpus, topics["fitted"], 0.1, args, rng)
        report["completion"].append({"K": n_topics, "topics": "fitted", "alpha": 0.1} | c)
        print(f"completion K={n_topics}: {c['token_sweeps_per_s'] / 1e6:.2f} M token-sweeps/s",
              flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "lda_kernel.json").write_text(json.dumps(report, indent=2) + "\n")
    plot(report, RESULTS / "lda_kernel.png")


if __name__ == "__main__":
    main()
