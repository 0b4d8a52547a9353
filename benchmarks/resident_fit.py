"""A short end-to-end LDA fit on ap with documents resident on the workers, against reads by tasks.

``dscir ingest ldac --heldout-fraction 0.1`` the ap corpus (../shared/data/ap),
then, on one 2-worker LocalCluster, ``dscir.LDA(n_topics=20, n_iter=N,
eval_every=N).fit(store, client)`` with every other setting at its default,
alternating: ``tasks`` reads each minibatch by tasks every iteration (the
engine before residency was LDA's default: ``dscir.engine.dask.RESIDENT_MODELS``
emptied for the run), ``resident`` is the default (``dscir.engine.shards``).
Both runs must be the same chain: the mean topics' SHA-256 is stored and
compared. Seconds are wall-clock on a shared machine (contended); the
held-out perplexity is the fit's final document-completion score. Writes
benchmarks/results/resident_fit.json.

    python benchmarks/resident_fit.py [--n-iter 100] [--rounds 2]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import cpu_model, shared_data

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def ingest(path: Path) -> str:
    ap = shared_data() / "ap"
    subprocess.run([sys.executable, "-m", "dscir", "ingest", "ldac", str(ap / "ap.dat"),
                    str(path), "--vocab", str(ap / "vocab.txt"), "--heldout-fraction", "0.1",
                    "--quiet"], check=True)
    return str(path)


def fit(store: str, client, reads: str, n_iter: int) -> dict:
    import dscir
    from dscir.engine import dask

    saved = dask.RESIDENT_MODELS
    dask.RESIDENT_MODELS = saved if reads == "resident" else frozenset()
    try:
        start = time.perf_counter()
        model = dscir.LDA(n_topics=20, n_iter=n_iter, eval_every=n_iter,
                          progress=False).fit(store, client)
        seconds = time.perf_counter() - start
    finally:
        dask.RESIDENT_MODELS = saved
    topics = np.ascontiguousarray(model.topic_word_)
    return {"reads": reads, "seconds": seconds,
            "perplexity": float(model.evaluations_[-1].perplexity),
            "topics_sha256": hashlib.sha256(topics.tobytes()).hexdigest(),
            "load_after": os.getloadavg()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n-iter", type=int, default=100)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    from dscir.engine.cluster import dask_client

    out = {"machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                       "load_before": os.getloadavg(), "contended": True},
           "command": "python benchmarks/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
           "settings": {"corpus": "ap", "n_topics": 20, "n_iter": args.n_iter,
                        "workers": 2, "rounds": args.rounds}, "runs": []}
    with tempfile.TemporaryDirectory() as tmp, dask_client(n_workers=2,
                                                           dashboard_address=None) as client:
        store = ingest(Path(tmp) / "ap.zarr")
        for r in range(args.rounds):
            order = ("tasks", "resident") if r % 2 == 0 else ("resident", "tasks")
            for reads in order:
                run = fit(store, client, reads, args.n_iter) | {"round": r}
                print(run, flush=True)
                out["runs"].append(run)
    out["same_chain"] = len({r["topics_sha256"] for r in out["runs"]}) == 1
    for reads in ("tasks", "resident"):
        s = [r["seconds"] for r in out["runs"] if r["reads"] == reads]
        out[f"{reads}_seconds"] = [min(s), max(s)]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "resident_fit.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: out[k] for k in ("same_chain", "tasks_seconds", "resident_seconds")}))


if __name__ == "__main__":
    main()
