"""The KSD of DP-mixture runs on msweb: exact Gibbs against SCIR and SGRLD.

For each seed, one chain of each sampler (the reference settings of
``benchmarks/dpmm_msweb.py``: minibatch n = 1000 users for SCIR and SGRLD on a
2-worker LocalCluster, the exact Gibbs slice sampler on all training users),
``--iterations`` iterations, samples kept every ``--thin`` after half of them;
then each run's KSD over the logits of its 10 leading stick breaks
(``dscir diagnose RUN --ksd``), with scores from all training users
(``--ksd-batch-size all``: the exact score) and from 1000-user minibatches, in
this process. The store holds out every 6th user. Writes
benchmarks/results/ksd_dp_msweb.json.

    python benchmarks/ksd_dp_msweb.py [--iterations 400] [--thin 10] [--seeds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from _common import cpu_model
from dpmm_msweb import METHODS, make_store

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> None:
    from dscir.api import DPMixture
    from dscir.api.diagnose import diagnose
    from dscir.engine.cluster import dask_client

    p = argparse.ArgumentParser()
    p.add_argument("--iterations", type=int, default=400)
    p.add_argument("--thin", type=int, default=10)
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--sticks", type=int, default=10)
    args = p.parse_args()
    load_start = os.getloadavg()
    rows, t0 = [], time.time()
    with tempfile.TemporaryDirectory() as tmp, dask_client(n_workers=2) as client:
        store = make_store(Path(tmp) / "msweb.zarr")
        for seed in range(args.seeds):
            for method, params in METHODS.items():
                params = dict(params)
                steps = params.pop("step_sizes", None)
                extra = {"step_sizes": steps, "batch_size": 1000} if steps else {}
                model = DPMixture(**params, **extra, policy="reference", n_iter=args.iterations,
                                  burn_in=args.iterations // 2, thin=args.thin,
                                  seed=seed,
                                  progress=False)
                run = Path(tmp) / f"{method}{seed}"
                t = time.time()
                model.fit(str(store), client, out=run)
                fit_seconds = time.time() - t
                row = {"method": method, "seed": seed, "fit_seconds": fit_seconds,
                       "alpha": float(model.alpha_), "n_clusters": int(model.n_clusters_)}
                for name, batch in (("all", "all"), ("minibatch", 1000)):
                    t = time.time()
                    d = diagnose(run, score=False, ksd=True, ksd_batch_size=batch,
                                 ksd_sticks=args.sticks, local=True)
                    row[f"ksd_{name}"] = d.ksd.values[0]
                    row[f"ksd_{name}_seconds"] = time.time() - t
                    row["n_samples"] = d.ksd.n_samples
                print(json.dumps(row))
                rows.append(row)
    doc = {"what": "KSD over the logits of the leading stick breaks of DP-mixture runs on "
                   "msweb (every 6th user held out): exact Gibbs, SCIR and SGRLD at the "
                   "reference settings, scores from all training users and from 1000-user "
                   "minibatches",
           "command": "python benchmarks/ksd_dp_msweb.py " + " ".join(
               f"--{k} {v}" for k, v in vars(args).items()),
           "settings": vars(args), "methods": METHODS, "rows": rows,
           "seconds_total": time.time() - t0,
           "machine": {"cpu": cpu_model(), "python": platform.python_version(),
                       "workers": 2, "loadavg_start": list(load_start),
                       "loadavg_end": list(os.getloadavg())}}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "ksd_dp_msweb.json").write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
