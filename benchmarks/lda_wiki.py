"""The SCIR paper's LDA experiment on the shared wiki corpus.

Held-out perplexity against iterations and wall time for SCIR, SGRLD and
gSGRHMC (reference settings, K = 100, minibatch 50, 1,000 held-out documents)
on a 2-worker LocalCluster, and for the collapsed Gibbs baseline on the
training documents in this process. Writes benchmarks/results/lda_wiki.json
and lda_wiki.png.

    python benchmarks/lda_wiki.py [--iterations 1000] [--sweeps 200] [--eval-every 100]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import cpu_model, shared_data

HERE = Path(__file__).resolve().parent
DATA = shared_data() / "wiki"
RESULTS = HERE / "results"


def make_store(path: Path) -> Path:
    from dscir.corpus import Corpus, ingest_ldac, split_heldout

    ingest_ldac(DATA / "wiki.ldac.gz", DATA / "vocab.txt", path)
    split_heldout(path, n_heldout=1000, seed=0)
    assert Corpus.open(path).heldout_docs().size == 1000
    return path


def run_sampler(client, store, name: str, args) -> dict:
    from dscir.api import LDA
    from dscir.engine.chain import Chain
    from dscir.engine.dask import DaskExecutor
    from dscir.models.lda import LDAModel

    cfg = LDA(n_topics=args.topics, sampler=name, batch_size=50, sweeps=args.sweeps,
              n_iter=args.iterations, thin=args.thin,
              eval_sweeps=args.eval_sweeps, seed=args.seed, policy="reference").chain_config()
    chain = Chain(LDAModel, cfg, str(store), DaskExecutor(client, str(store), "lda"))
    curve, wall = [], 0.0
    for i in range(args.iterations):
        t = time.perf_counter()
        chain.step(prefetch=i + 1 < args.iterations)
        wall += time.perf_counter() - t
        if (i + 1) % args.eval_every == 0:
            # The current phi until burn-in (half the run) ends, then the mean of the kept samples.
            p = chain.model.score()
            curve.append({"iteration": i + 1, "seconds": wall, "perplexity": p})
            print(f"{name:8s} it {i + 1:5d}  {wall:8.1f}s  perplexity {p:8.1f}", flush=True)
    chain.close()
    h = chain.history
    return {
        "sampler": name, "config": cfg.to_dict(), "curve": curve,
        "mean_seconds": {f: float(np.mean([s[f] for s in h])) for f in
                         ("wall", "compute", "transfer", "queue", "update", "compute_sum")},
    }


def run_collapsed(client, store, args) -> dict:
    from dscir.corpus import Corpus
    from dscir.engine.dask import DaskExecutor
    from dscir.models.lda import CollapsedGibbs, perplexity

    executor = DaskExecutor(client, str(store), "lda")  # 2 parts per worker thread: 4 here
    corpus = Corpus.open(store)
    train = corpus.read(corpus.train_docs())
    model = CollapsedGibbs(train.indptr, train.indices, train.data, args.topics,
                           alpha=0.1, beta=0.01, seed=args.seed, n_words=corpus.n_words)
    curve, wall = [], 0.0
    for sweep_block in range(args.gibbs_sweeps // args.gibbs_eval_every):
        t = time.perf_counter()
        model.run(args.gibbs_eval_every)
        wall += time.perf_counter() - t
        p = perplexity(executor, corpus.heldout_docs(), model.topic_word(), 0.1,
                       args.eval_sweeps, args.seed, 10)
        it = (sweep_block + 1) * args.gibbs_eval_every
        curve.append({"iteration": it, "seconds": wall, "perplexity": p})
        print(f"gibbs    sweep {it:4d}  {wall:8.1f}s  perplexity {p:8.1f}", flush=True)
    return {"sampler": "collapsed-gibbs", "config": {"alpha": 0.1, "beta": 0.01}, "curve": curve}


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for r in results:
        c = r["curve"]
        if r["sampler"] != "collapsed-gibbs":
            ax1.plot([p["iteration"] for p in c], [p["perplexity"] for p in c],
                     marker="o", label=r["sampler"])
        ax2.plot([p["seconds"] for p in c], [p["perplexity"] for p in c], marker="o",
                 label=r["sampler"])
    ax1.set(xlabel="iteration (minibatch of 50 documents)", ylabel="held-out perplexity",
            title="wiki, K = 100")
    ax2.set(xlabel="wall-clock seconds", ylabel="held-out perplexity", xscale="log",
            title="against time (Gibbs: full sweeps)")
    for ax in (ax1, ax2):
        ax.legend()
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=int, default=1000)
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--topics", type=int, default=100)
    p.add_argument("--sweeps", type=int, default=200)
    p.add_argument("--eval-sweeps", type=int, default=100)
    p.add_argument("--thin", type=int, default=10)
    p.add_argument("--gibbs-sweeps", type=int, default=100)
    p.add_argument("--gibbs-eval-every", type=int, default=10)
    p.add_argument("--samplers", default="scir,sgrld,gsgrhmc")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    from distributed import Client, LocalCluster

    RESULTS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, \
            LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        store = make_store(Path(tmp) / "wiki.zarr")
        results = [run_sampler(client, store, s, args) for s in args.samplers.split(",")]
        if args.gibbs_sweeps:
            results.append(run_collapsed(client, store, args))
    out = {"machine": {"cpu": cpu_model(), "cores": 2}, "args": vars(args), "results": results}
    (RESULTS / "lda_wiki.json").write_text(json.dumps(out, indent=1))
    plot(results, RESULTS / "lda_wiki.png")


if __name__ == "__main__":
    main()
