"""The iteration model projected to PubMed- and Wikipedia-size corpora on 16-256 workers.

Arithmetic over ``_iteration_model`` (its one read: the kernel's rate from
``results/lda_kernel_large_k.json``): the fitted constants, a 10 Gb/s link,
8 cores per worker, the Gibbs kernel's measured rate at K = 1,000 (the sparse
kernel ``kernel="auto"`` takes from K = 400, ``lda_kernel_large_k.json``) and
the Dask scheduler's cost per task from its documentation; the workers' cores
are their own (``parallel`` unlimited). Two placements:
``driver`` (the validated form: SCIR on the driver's one core, every column
through the driver's link) and ``workers`` (an extrapolation, not validated
here: SCIR over the vocabulary blocks, one core each, columns cut where the
blocks live, so bytes spread over the workers' links, and the blocks' tasks added).
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np

import _iteration_model as im

RESULTS = Path(__file__).resolve().parent / "results"
CORES = 8  # per worker
LINK = 10e9 / 8  # bytes per second, 10 Gb/s
DELAY_MS = 0.05  # one-way, within a data centre (assumed)
DOCS_PER_CORE = 64  # minibatch: this many documents per core (assumed)
BLOCK_ENTRIES = 1 << 22  # placement="workers": parameters per vocabulary block (the default)
#: "Each task suffers about 1ms of overhead" (https://distributed.dask.org/en/latest/,
#: "Motivation: Low latency"): the central scheduler handles a round's tasks one by one.
SCHEDULER_S_PER_TASK = 1e-3
CORPORA = {
    "PubMed": {"docs": 8.2e6, "tokens": 730e6, "W": 141_043, "K": 1000},
    # assumed: the 4.5 M articles of Databricks' Spark LDA post, ~440 tokens each after
    # stop words, vocabulary cut at 100k words
    "Wikipedia (assumed)": {"docs": 4.5e6, "tokens": 2.0e9, "W": 100_000, "K": 1000},
}
#: Published figures, as found with the search tool; None where no figure was found.
PUBLISHED = [
    {"system": "WarpLDA (Chen et al., PVLDB 2016, abstract)",
     "figure": "1 M topics on ClueWeb12 (639 M documents) in five hours at 11 billion "
               "tokens per second", "tokens_per_s_per_core": None,
     "note": "5-15x faster than LightLDA (same abstract); cluster size per core: not "
             "found here"},
    {"system": "LightLDA (Yuan et al., WWW 2015, abstract)",
     "figure": "1 M topics x 1 M words on 200 billion tokens with as few as 8 machines",
     "tokens_per_s_per_core": None,
     "note": "tokens/s figure: not found here; WarpLDA's abstract reports itself 5-15x faster"},
    {"system": "Spark MLlib online LDA (Databricks blog, 2015-09-22)",
     "figure": "online variational LDA on 4.5 M Wikipedia articles",
     "tokens_per_s_per_core": None, "note": "time or throughput: not found here"},
    {"system": "BigARTM (Frei & Apishev, 2015)",
     "figure": "compares favourably with Vowpal Wabbit and Gensim",
     "tokens_per_s_per_core": None, "note": "tokens/s or time: not found here"},
]


def sparse_kernel_seconds(k: int = 1000) -> float:
    """Seconds per token-sweep of the sparse Gibbs kernel at ``k`` topics (CPU time,
    median of the replicates in lda_kernel_large_k.json)."""
    data = json.loads((RESULTS / "lda_kernel_large_k.json").read_text())
    row = next(r for r in data["kernels"] if r["K"] == k)
    return 1.0 / float(np.median([r["cpu_rate"] for r in row["sparse"]]))


def tasks(c: im.Config, placement: str) -> int:
    """Tasks per iteration: a Gibbs task per part; with the workers placement also a
    columns task per worker, a step and an lse task per block and a summary per part."""
    parts = im.parts(c)
    if placement == "driver":
        return parts
    blocks = math.ceil(c.K * c.W / BLOCK_ENTRIES)
    return 2 * parts + c.workers + 2 * blocks


def project_one(c: im.Config, k: im.Constants, placement: str) -> dict:
    """Seconds per iteration of ``c`` and its terms, in ``placement``: the driver
    placement as validated; the workers placement with the SCIR step over the blocks
    (at most one core each), the columns cut and serialised on each worker."""
    n = im.counts(c)
    spread = 1 if placement == "driver" else c.workers
    blocks = math.ceil(c.K * c.W / BLOCK_ENTRIES)
    t = im.predict(replace(c, scir_parallel=1 if placement == "driver"
                           else min(c.workers * c.threads, blocks)), k)
    terms = {"compute": t["compute"],
             "update": t["update"] - k.u_col * n["column_entries"] * (1 - 1 / spread),
             "bytes": n["bytes"] / spread * (1 / LINK + 1 / k.bandwidth),
             "latency": t["latency"],
             "scheduler": k.o0 + tasks(c, placement) * SCHEDULER_S_PER_TASK}
    return {**terms, "total": sum(terms.values()), "tasks": tasks(c, placement),
            "wall": max(terms, key=terms.get)}


def projection(k: im.Constants) -> dict:
    """The projection table: each corpus x workers x placement."""
    g = sparse_kernel_seconds()
    k = replace(k, g0=g, g1=0.0, parallel=math.inf)  # dedicated cores
    rows = []
    for name, s in CORPORA.items():
        for workers in (16, 64, 256):
            batch = DOCS_PER_CORE * CORES * workers
            c = im.Config(K=s["K"], W=s["W"], batch=batch, doc_length=s["tokens"] / s["docs"],
                          workers=workers, threads=CORES, delay_ms=DELAY_MS, hosts=True)
            for placement in ("driver", "workers"):
                p = project_one(c, k, placement)
                per_pass = s["docs"] / batch * p["total"]
                rows.append({
                    "corpus": name, "workers": workers, "cores": workers * CORES,
                    "placement": placement, "batch_docs": batch, "tasks": p["tasks"],
                    **{f"{term}_s": p[term] for term in
                       ("compute", "update", "bytes", "latency", "scheduler")},
                    "s_per_iteration": p["total"], "hours_per_pass": per_pass / 3600,
                    "token_sweeps_per_s_per_core":
                        s["tokens"] * c.sweeps / per_pass / (workers * CORES),
                    "token_sweeps_per_s": s["tokens"] * c.sweeps / per_pass,
                    "wall": p["wall"]})
    return {"projection": rows, "published": PUBLISHED,
            "projection_assumptions": {
                "cores_per_worker": CORES, "link_bytes_per_s": LINK,
                "one_way_delay_ms": DELAY_MS, "docs_per_core_per_minibatch": DOCS_PER_CORE,
                "gibbs_s_per_token_sweep_sparse_K1000": g,
                "scheduler_s_per_task": SCHEDULER_S_PER_TASK,
                "scheduler_note": "the documented 1 ms, not the fitted o_task (from 1-2 tasks "
                                  "per round on a loaded 2-core machine, weakly identified; "
                                  "with it the scheduler term would be o_task / 1 ms times "
                                  "larger)",
                "scheduler_source": "https://distributed.dask.org/en/latest/ (Motivation: "
                                    "'Each task suffers about 1ms of overhead')",
                "serialisation_bytes_per_s": k.bandwidth,
                "bytes": "over the link and serialised at the rate fitted here (the local "
                         "bandwidth constant, measured under contention)",
                "distinct_words": "uniform draws: an upper bound for Zipfian text, so bytes "
                                  "and column work are upper bounds",
                "sweeps": 10}}
