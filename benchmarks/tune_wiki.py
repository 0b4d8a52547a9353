"""KSD choice against held-out-perplexity choice of SCIR's step size on wiki.

``dscir.tune``: one short SCIR LDA chain per step size of the grid (the
reference h = 0.5 x 0.01, 0.1, 1, 10; tau = 10, kappa = 0.33 as the reference
schedule), side by side on a 2-worker LocalCluster; each scored by the KSD of
its kept samples over all topics x the 10 most frequent words (scores from
minibatches of ``--ksd-batch-size`` documents, default 50, ``dscir.api.stein``)
and by the held-out perplexity of its mean topics (document completion). Writes
benchmarks/results/tune_wiki_seed<seed>[_ksdbatch<n>].json and .png: one file per run.

    python benchmarks/tune_wiki.py [--topics 50] [--iterations 100] [--thin 5] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from _common import cpu_model, shared_data

RESULTS = Path(__file__).resolve().parent / "results"


def make_store(path: Path, n_heldout: int) -> Path:
    from dscir.corpus import ingest_ldac, split_heldout

    data = shared_data() / "wiki"
    ingest_ldac(data / "wiki.ldac.gz", data / "vocab.txt", path)
    split_heldout(path, n_heldout=n_heldout, seed=0)
    return path


def plot(doc: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = doc["rows"]
    h = [r["step_size"] for r in rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    a.plot(h, [r["ksd"] for r in rows], marker="o")
    a.axvline(doc["best_step_size"], color="C1", ls="--", label="smallest KSD")
    xlabel = "SCIR initial step size h (schedule h (1 + m/10)^-0.33)"
    a.set(xscale="log", xlabel=xlabel,
          ylabel=f"KSD (log theta, {doc['settings']['n_topics']} topics x 10 words)",
          title="KSD of the kept samples, scores from "
                f"{doc['settings'].get('ksd_batch_size', 50)}-document minibatches")
    b.plot(h, [r["perplexity"] for r in rows], marker="o", color="C2")
    b.axvline(doc["best_perplexity_step_size"], color="C3", ls="--",
              label="smallest perplexity")
    b.set(xscale="log", xlabel=xlabel,
          ylabel=f"held-out perplexity ({doc['heldout_docs']} documents)",
          title="held-out perplexity of the mean topics")
    for ax in (a, b):
        ax.legend(fontsize=8)
    fig.suptitle(f"wiki, K = {doc['settings']['n_topics']}, {doc['settings']['n_iter']} "
                 f"iterations per step size, seed {doc['settings']['seed']} (shared machine)",
                 fontsize=10)
    fig.savefig(path, dpi=110)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--topics", type=int, default=50)
    p.add_argument("--iterations", type=int, default=100)
    p.add_argument("--thin", type=int, default=5)
    p.add_argument("--sweeps", type=int, default=20)
    p.add_argument("--eval-sweeps", type=int, default=20)
    p.add_argument("--heldout", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ksd-batch-size", type=int, default=50,
                   help="documents per score estimate (files get _ksdbatchN when not 50)")
    p.add_argument("--replot", action="store_true",
                   help="only redraw every results/tune_wiki_seed*.png from its JSON")
    args = p.parse_args()
    if args.replot:
        for path in sorted(RESULTS.glob("tune_wiki_seed*.json")):
            plot(json.loads(path.read_text()), path.with_suffix(".png"))
        return
    from distributed import Client, LocalCluster

    from dscir.api import LDA, tune

    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        store = make_store(Path(tmp) / "wiki.zarr", args.heldout)
        model = LDA(n_topics=args.topics, batch_size=50, sweeps=args.sweeps,
                    n_iter=args.iterations, thin=args.thin, eval_sweeps=args.eval_sweeps,
                    seed=args.seed, progress=False)
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=":0") as cluster, Client(cluster) as client:
            start = time.perf_counter()
            result = tune(model, store, client, out=Path(tmp) / "runs",
                          ksd_batch_size=args.ksd_batch_size, progress=True)
            wall = time.perf_counter() - start
        print(result.table())
        RESULTS.mkdir(exist_ok=True)
        extra = "" if args.ksd_batch_size == 50 else f"_ksdbatch{args.ksd_batch_size}"
        out = RESULTS / f"tune_wiki_seed{args.seed}{extra}.json"
        result.to_json(out)
    doc = json.loads(out.read_text())
    for r in doc["rows"]:
        r.pop("run")  # a temporary directory
    doc.update(command="cd benchmarks && python tune_wiki.py " + " ".join(sys.argv[1:]),
               loadavg_start=list(load_start), loadavg_end=list(os.getloadavg()),
               wall_seconds=wall, cpu=cpu_model(), n_workers=2, heldout_docs=args.heldout,
               agree=doc["best_step_size"] == doc["best_perplexity_step_size"])
    doc.pop("loadavg")
    out.write_text(json.dumps(doc, indent=2) + "\n")
    plot(doc, out.with_suffix(".png"))


if __name__ == "__main__":
    main()
