"""``dscir.tune``: choose an LDA step size by the kernel Stein discrepancy.

One short chain per step size of a grid runs on one cluster, side by side (driver
threads, each its own executor, as ``n_chains`` chains do); each chain is
written under ``out/h<i>`` and scored by the KSD of its kept samples
(``dscir.api.stein``), with the held-out perplexity of its mean topics beside
it. The choice is the step size of smallest KSD (Nemeth & Fearnhead 2021,
Sec. 4): held-out perplexity rewards topics that predict well, not a chain that
samples its posterior, and a biased chain can predict well. A chain whose
samples are not finite (a step size that explodes) gets KSD = inf and is never
chosen while a finite one exists.

The default grid is the sampler's reference step size times 10^-2, 10^-1, 1, 10.
"""

from __future__ import annotations

import json
import math
import os
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import NamedTuple

import numpy as np

from dscir.errors import DscirError

DEFAULT_FACTORS = (0.01, 0.1, 1.0, 10.0)


class TuneRow(NamedTuple):
    step_size: float
    ksd: float  # inf: the chain's samples are not finite
    perplexity: float  # held-out, of the chain's mean topics (nan if not finite)
    run: str


class TuneResult(NamedTuple):
    rows: list[TuneRow]
    best: float  # the step size of smallest KSD
    best_perplexity: float  # the step size of smallest held-out perplexity
    ksd_words: int
    settings: dict

    def table(self) -> str:
        """The grid as a plain-text table, the choice marked."""
        lines = [f"{'step size':>10}  {'KSD':>10}  {'perplexity':>10}"]
        for r in self.rows:
            mark = "  <- smallest KSD" if r.step_size == self.best else ""
            lines.append(f"{r.step_size:10.4g}  {r.ksd:10.4g}  {r.perplexity:10.1f}{mark}")
        lines.append(f"chosen step size: {self.best:.4g} (smallest KSD over all topics x "
                     f"{self.ksd_words} most frequent words); smallest held-out perplexity "
                     f"at {self.best_perplexity:.4g}")
        return "\n".join(lines)

    def to_json(self, path: str | Path) -> None:
        """The table and the choice as JSON (inf and nan written as null)."""
        def num(x: float):
            return x if math.isfinite(x) else None

        doc = {"best_step_size": self.best, "best_perplexity_step_size": self.best_perplexity,
               "ksd_words": self.ksd_words, "settings": self.settings,
               "rows": [{"step_size": r.step_size, "ksd": num(r.ksd),
                         "perplexity": num(r.perplexity), "run": r.run} for r in self.rows],
               "loadavg": list(os.getloadavg())}
        Path(path).write_text(json.dumps(doc, indent=2) + "\n")


def check_grid(grid, reference: float) -> list[float]:
    """The grid as sorted distinct positive floats (None: ``DEFAULT_FACTORS`` x
    ``reference``); empty, non-numeric or non-positive is one clear error."""
    if grid is None:
        return [reference * f for f in DEFAULT_FACTORS]
    try:
        values = [float(h) for h in grid]
    except (TypeError, ValueError):
        raise DscirError(f"the step-size grid must be numbers, got {grid!r}") from None
    if not values:
        raise DscirError("the step-size grid is empty")
    bad = [h for h in values if not (math.isfinite(h) and h > 0)]
    if bad:
        raise DscirError(f"step sizes must be finite and > 0, got {bad}")
    return sorted(set(values))


def choose(rows: list[TuneRow]) -> tuple[float, float]:
    """(the step size of smallest KSD, that of smallest finite held-out perplexity,
    nan if none); ties go to the smaller step size."""
    best = min(rows, key=lambda r: (r.ksd, r.step_size)).step_size
    finite = [r for r in rows if math.isfinite(r.perplexity)]
    best_pp = min(finite, key=lambda r: r.perplexity).step_size if finite else math.nan
    return best, best_pp


def _fit_one(estimator, store: str, client, out: Path, i: int, h: float):
    model = estimator.__class__(**{**estimator.get_params(), "step_size": h,
                                   "progress": False})
    model.fit(store, client=client, out=out / f"h{i}", overwrite=True)
    return model


def _score(model, executor, words: np.ndarray,
           batch_size: int | str | None) -> tuple[float, float]:
    from dscir.api.stein import run_ksd
    from dscir.runs.chains import open_chains

    runs = open_chains(model.run_path_)
    if not np.all(np.isfinite(runs[0].samples()["phi"])):
        return math.inf, math.nan
    value = run_ksd(runs, executor, words=words, batch_size=batch_size).values[0]
    return value, float(model.perplexity(client=getattr(executor, "client", None)))


def tune(estimator, store, client=None, *, out: str | Path, grid=None, ksd_words: int = 10,
         ksd_batch_size: int | str | None = None, progress: bool = True, **cluster) -> TuneResult:
    """Fit ``estimator`` (an unfitted ``LDA``, with n_iter / burn_in / thin of a short
    chain) at each step size of ``grid`` on ``store`` and choose by KSD (see the
    module); the runs are written under ``out`` (as h0, h1, ...; runs already there
    are replaced). ``ksd_batch_size``: documents per
    score estimate, or "all" (default the chains' batch size; larger is less noisy)."""
    from dscir.progress import tqdm

    from dscir.api.lda import LDA
    from dscir.api.session import executor_for
    from dscir.api.stein import frequent_words
    from dscir.corpus import Corpus
    from dscir.corpus.temporary import store_path

    if not isinstance(estimator, LDA):
        raise DscirError(f"tune chooses LDA step sizes, got a {type(estimator).__name__}")
    store = store_path(store)
    Corpus.open(store)  # a missing store is one error before any cluster starts
    grid = check_grid(grid, estimator.chain_config(store).step_size)
    if not (isinstance(ksd_words, int) and ksd_words >= 1):
        raise DscirError(f"ksd_words must be an int >= 1, got {ksd_words!r}")
    if ksd_batch_size not in (None, "all") and not (isinstance(ksd_batch_size, int)
                                                    and ksd_batch_size >= 1):
        raise DscirError(f"ksd_batch_size must be an int >= 1 or 'all', got {ksd_batch_size!r}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    with executor_for("lda", store, client, resident=True, **cluster) as executor:
        c = executor.client
        words = frequent_words(executor, store, ksd_words)
        bar = tqdm(total=len(grid), desc="step sizes", disable=not progress)
        with ThreadPoolExecutor(len(grid), thread_name_prefix="dscir-tune") as pool:
            futures = {pool.submit(_fit_one, estimator, store, c, out, i, h): h
                       for i, h in enumerate(grid)}
            for future in as_completed(futures):
                model = future.result()
                ksd, perplexity = _score(model, executor, words, ksd_batch_size)
                rows.append(TuneRow(futures[future], ksd, perplexity, str(model.run_path_)))
                bar.update()
        bar.close()
    rows.sort(key=lambda r: r.step_size)
    settings = {k: v for k, v in estimator.get_params().items() if k != "progress"}
    settings["ksd_batch_size"] = ksd_batch_size or estimator.batch_size
    return TuneResult(rows, *choose(rows), ksd_words, settings)
