"""Documents per second of ``LDA.transform`` of a whole store on 1 and 2 workers.

On the shared wiki corpus (7,961 documents, ~357 tokens each): fit a short
LDA run (SCIR, K = 50, 30 iterations), then transform every document of the
store on LocalClusters of 1 and 2 single-threaded worker processes (one task
per 256-document store chunk, ``--sweeps`` Gibbs sweeps per document, the
first half burn-in), timing the transform only (the numba kernels are
compiled on each worker first). Writes benchmarks/results/transform.json and
.png. ``--generated N`` instead transforms a generated corpus of N documents of
300 Zipf-distributed words (``scale.make_corpus``; 33,334 documents are 10 M
tokens), written to transform_generated.json and .png.

    python benchmarks/transform.py [--store /tmp/wiki.zarr] [--sweeps 100]
    python benchmarks/transform.py --generated 33334 [--words 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from _common import cpu_model, shared_data

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def warm_up() -> None:
    """Compile the kernel on this worker (a tiny batch)."""
    import numpy as np

    from dscir.corpus import CSRBatch
    from dscir.models.lda.tasks import block_topics

    batch = CSRBatch(np.array([0, 2], np.int64), np.array([0, 1], np.int32),
                     np.array([1, 2], np.int32), np.array([0], np.int64))
    block_topics(batch, np.array([0, 1]), np.ones((2, 2)), 0.1, 4, 0)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--store", help="the wiki corpus store (default: ingest it to a temp dir)")
    p.add_argument("--topics", type=int, default=50)
    p.add_argument("--iterations", type=int, default=30)
    p.add_argument("--sweeps", type=int, default=100, help="transform sweeps per document")
    p.add_argument("--generated", type=int, default=0,
                   help="documents of a generated Zipf corpus instead of wiki (0: wiki)")
    p.add_argument("--words", type=int, default=10_000, help="vocabulary of --generated")
    args = p.parse_args()

    from distributed import Client, LocalCluster

    from dscir.api import LDA
    from dscir.corpus import Corpus, ingest_ldac

    tmp = Path(tempfile.mkdtemp(prefix="dscir-transform-bench-"))
    name = "transform_generated" if args.generated else "transform"
    if args.generated:
        from scale import make_corpus

        store = tmp / "generated.zarr"
        make_corpus(store, args.generated, args.words)
    else:
        store = Path(args.store) if args.store else tmp / "wiki.zarr"
    if not store.exists():
        data = shared_data() / "wiki"
        ingest_ldac(data / "wiki.ldac.gz", data / "vocab.txt", store)
    corpus = Corpus.open(store)
    model = LDA(n_topics=args.topics, sampler="scir", batch_size=50, sweeps=100,
                n_iter=args.iterations, seed=0, progress=False)
    results = []
    for n_workers in (2, 1):
        with LocalCluster(n_workers=n_workers, threads_per_worker=1,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            if not hasattr(model, "topic_word_"):
                model.fit(store, client=client)
            client.run(warm_up)
            load_before = os.getloadavg()[0]
            start = time.perf_counter()
            topics = model.transform(store, client, out=tmp / f"topics-{n_workers}",
                                     sweeps=args.sweeps)
            seconds = time.perf_counter() - start
            results.append({
                "workers": n_workers, "seconds": seconds,
                "docs_per_s": corpus.n_docs / seconds,
                "token_sweeps_per_s": corpus.n_tokens * args.sweeps / seconds,
                "load_average_before": load_before, "load_average_after": os.getloadavg()[0],
                "shape": list(topics.shape)})
            print(results[-1], flush=True)
    results.sort(key=lambda r: r["workers"])
    out = {"machine": {"cpu": cpu_model(), "cores": os.cpu_count()},
           "corpus": {"n_docs": corpus.n_docs, "n_tokens": corpus.n_tokens,
                      "chunk_docs": corpus.chunk_docs},
           "args": vars(args), "results": results}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(out, indent=1))
    plot(results, RESULTS / f"{name}.png", args)


def plot(results, path: Path, args) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 3))
    ax.bar([str(r["workers"]) for r in results], [r["docs_per_s"] for r in results])
    ax.set_xlabel("worker processes (1 thread each)")
    ax.set_ylabel("documents / s")
    corpus = f"generated ({args.generated} docs)" if args.generated else "wiki"
    ax.set_title(f"LDA.transform, {corpus}, K={args.topics}, {args.sweeps} sweeps", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    main()
