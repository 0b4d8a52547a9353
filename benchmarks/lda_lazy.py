"""LDA iterations with the dense and the lazy SCIR step (scir_step), topics on the
driver or on the workers.

Seconds per iteration (the whole iteration: minibatch read, Gibbs tasks on a
2-worker LocalCluster, the SCIR step, a kept sample every ``--thin``
iterations) at K = 1000 for W = 10^4 and 10^5, minibatch 200 documents, 2
sweeps, on a synthetic corpus (1000 documents of 100 tokens, words drawn
Zipf(1.07) over the W words in a random order). Dense and lazy alternate, one
chain each per W and ``--repeats`` rounds; the first iteration of a chain
(numba compilation, first touches) is recorded but not in the median. Also
per lazy iteration the state's entries visited, K x U and K x W. A contended
figure: the 2-core machine is shared with other work while this runs, so the
seconds are labelled so; the entry counts are not affected.

``--placement driver`` (``results/lda_lazy.json``) steps ``Chain.step``
directly; ``--placement workers`` (``results/lda_lazy_workers.json``) goes
through the public API, ``dscir.LDA(...).fit(store, client)``, and reads the
iterations from the fit's ``history_`` (``wall``, ``lazy_entries``).

    python benchmarks/lda_lazy.py [--iterations 6] [--words 10000 100000]
    python benchmarks/lda_lazy.py --placement workers --repeats 2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from distributed import Client, LocalCluster

import dscir
from dscir.corpus import split_heldout, write_corpus
from dscir.engine.chain import Chain
from dscir.engine.dask import DaskExecutor
from dscir.models import lda
from dscir.models.lda import LDAConfig

from _common import cpu_model

RESULTS = Path(__file__).resolve().parent / "results"
K, BATCH, SWEEPS, DOCS, LENGTH = 1000, 200, 2, 1000, 100


def corpus(path: Path, n_words: int, seed: int = 0) -> str:
    """DOCS documents of LENGTH tokens, words Zipf(1.07) over n_words in a random order."""
    rng = np.random.default_rng(seed)
    p = np.arange(1, n_words + 1) ** -1.07
    p = p[rng.permutation(n_words)] / p.sum()
    rows = np.repeat(np.arange(DOCS), LENGTH)
    cols = rng.choice(n_words, size=DOCS * LENGTH, p=p)
    m = sp.csr_matrix((np.ones(rows.size, np.int64), (rows, cols)), shape=(DOCS, n_words))
    write_corpus(path, m, vocabulary=[f"w{i}" for i in range(n_words)])
    split_heldout(path, every=10)
    return str(path)


def config(step: str, thin: int) -> LDAConfig:
    return LDAConfig(n_topics=K, sampler="scir", alpha=0.1, beta=0.5, batch_size=BATCH,
                     step_size=0.5, tau=10.0, kappa=0.33, sweeps=SWEEPS, seed=0, burn_in=0,
                     thin=thin, placement="driver", scir_step=step)


def run(client, store: str, step: str, iterations: int, thin: int, n_words: int) -> dict:
    chain = Chain(lda.LDAModel, config(step, thin), store, DaskExecutor(client, store, "lda"))
    records = []
    for _ in range(iterations):
        topics = chain.model.topics
        before = topics.entries() if step == "lazy" else None
        record = chain.step()
        if step == "lazy":
            record["entries"] = int(topics.entries() - before)
            record["k_u"] = int(K * topics._u.size)
        records.append({k: (float(v) if isinstance(v, (float, np.floating)) else v)
                        for k, v in record.items()})
    chain.close()
    return summarise(step, n_words, records)


def summarise(step: str, n_words: int, records: list[dict]) -> dict:
    walls = [r["wall"] for r in records[1:]]
    return {"step": step, "n_words": n_words, "k_w": K * n_words,
            "median_seconds_per_iteration": float(np.median(walls)),
            "iterations": records}


def run_api(client, store: str, step: str, iterations: int, thin: int, n_words: int) -> dict:
    """One fit through the public API with the topics on the workers."""
    settings = {k: v for k, v in config(step, thin).to_dict().items()
                if k in ("n_topics", "sampler", "alpha", "beta", "batch_size", "step_size",
                         "tau", "kappa", "sweeps", "seed", "burn_in", "thin")}
    est = dscir.LDA(**settings, placement="workers", scir_step=step, n_iter=iterations,
                    progress=False)
    est.fit(store, client=client)
    h = {k: np.asarray(v) for k, v in est.history_.items()}
    records = [{k: h[k][i].item() for k in h} for i in range(iterations)]
    if step == "lazy":
        entries = np.diff(np.concatenate([[0], h["lazy_entries"]]))
        for r, e in zip(records, entries):
            r["entries"] = int(e)
    return summarise(step, n_words, records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=6)
    parser.add_argument("--thin", type=int, default=2)
    parser.add_argument("--words", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--placement", choices=("driver", "workers"), default="driver")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    runner = run if args.placement == "driver" else run_api
    runs = []
    with tempfile.TemporaryDirectory() as tmp, \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                         dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client:
        for w in args.words:
            store = corpus(Path(tmp) / f"w{w}.zarr", w)
            for _ in range(args.repeats):
                for step in ("dense", "lazy"):
                    runs.append(runner(client, store, step, args.iterations, args.thin, w))
                    print(step, w, runs[-1]["median_seconds_per_iteration"], flush=True)
    out = {"command": "python benchmarks/lda_lazy.py " + " ".join(
               f"--{k.replace('_', '-')} {' '.join(map(str, v)) if isinstance(v, list) else v}"
               for k, v in vars(args).items()),
           "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                       "python": platform.python_version()},
           "settings": {"K": K, "batch_size": BATCH, "sweeps": SWEEPS, "documents": DOCS,
                        "tokens_per_document": LENGTH, **vars(args),
                        "note": "contended: 2-core machine shared with other developers' "
                                "work while this ran; median excludes the first iteration"},
           "summary": [{k: r[k] for k in ("step", "n_words", "k_w",
                                          "median_seconds_per_iteration")} for r in runs],
           "runs": runs}
    name = "lda_lazy.json" if args.placement == "driver" else "lda_lazy_workers.json"
    (RESULTS / name).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
