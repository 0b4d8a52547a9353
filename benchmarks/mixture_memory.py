"""Driver memory of a finite mixture fitted through the public API, its fitted
components stored by the workers against gathered onto the driver (issue 36).

``Mixture.fit`` with the components on the workers, then predict,
predict_proba, score and top words: the fitted components stored (a dask array
over what the blocks wrote, the default above
``dscir.api.fitted.DENSE_MAX_ENTRIES``) against gathered onto the driver (that
limit raised past K x W: what a fit did before).

Each case runs in its own process (``est.fit(store, n_workers=2)``: the
estimator's own 2-worker LocalCluster, whose scheduler lives in the driver's
process as a user's would): the driver's resident set after the imports, its
peak over the fit (VmHWM) and its resident set after it, and its peak over the
calls after the fit. No posterior sample is kept (burn_in = n_iter): kept
samples are K x W each on the driver, a separate matter. Writes
benchmarks/results/mixture_memory.json.

    PYTHONPATH=. python benchmarks/mixture_memory.py [--clusters 200 --words 200000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cpu_model  # noqa: E402
from scale import make_corpus, peak_rss_mb, reset_peak_rss, rss_mb  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "mixture_memory.json"


def run_case(store: str, case: str, args) -> dict:
    """One case in this process: the driver's resident figures in MB."""
    from dscir import Mixture
    from dscir.api import fitted
    from dscir.corpus import Corpus

    if case == "gathered":
        fitted.DENSE_MAX_ENTRIES = 2**62
    est = Mixture(n_clusters=args.clusters, sampler="scir", batch_size=args.batch,
                  n_iter=args.iterations, burn_in=args.iterations, eval_every=0, seed=0,
                  placement="workers", progress=False)
    out = {"case": case, "baseline_rss_mb": rss_mb()}
    reset_peak_rss()
    start = time.time()
    est.fit(store, n_workers=2)
    out.update(fit_s=time.time() - start, fit_driver_peak_rss_mb=peak_rss_mb(),
               after_fit_rss_mb=rss_mb(), components_lazy=fitted.is_lazy(est.components_))
    docs = Corpus.open(store).read(np.arange(args.docs))
    reset_peak_rss()
    start = time.time()
    labels = est.predict(docs)
    est.predict_proba(docs)
    out["score"] = est.score(n_workers=2)
    est.top_words(10)
    out.update(use_s=time.time() - start, use_driver_peak_rss_mb=peak_rss_mb(),
               predicted=int(labels.size))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clusters", type=int, default=200)
    p.add_argument("--words", type=int, default=200_000)
    p.add_argument("--n-docs", type=int, default=1000)
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--iterations", type=int, default=2)
    p.add_argument("--docs", type=int, default=200, help="documents predicted")
    p.add_argument("--case", help=argparse.SUPPRESS)
    p.add_argument("--store", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.case:
        print(json.dumps(run_case(args.store, args.case, args)))
        return
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        store = str(Path(tmp) / "zipf.zarr")
        make_corpus(Path(store), args.n_docs, args.words)
        cases = []
        for case in ("stored", "gathered"):
            cmd = [sys.executable, __file__, "--case", case, "--store", store,
                   *(f"--{k}={v}" for k, v in [("clusters", args.clusters), ("batch", args.batch),
                                               ("iterations", args.iterations),
                                               ("docs", args.docs)])]
            done = subprocess.run(cmd, capture_output=True, text=True, check=True)
            cases.append(json.loads(done.stdout.strip().splitlines()[-1]))
    result = {"command": " ".join(["python", "benchmarks/mixture_memory.py", *sys.argv[1:]]),
              "cpu": cpu_model(), "n_cpus": os.cpu_count(), "clusters": args.clusters, "words": args.words,
              "components_mb": args.clusters * args.words * 8 / 2**20,
              "n_docs": args.n_docs, "iterations": args.iterations,
              "load_average": [load_before, os.getloadavg()[0]],
              "contended": "shared 2-core machine: RSS is this process's own, times are not "
                           "to be read as speeds",
              "cases": cases}
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
