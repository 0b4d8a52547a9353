"""The scaling model of one LDA iteration: numbers in, seconds out (pure code).

An iteration (docs/architecture.md, topics on the driver) is one round: the
driver cuts each part's phi columns, one Gibbs task per worker thread runs on
its part, the counts come back, the driver adds them and steps SCIR on K x W.
Its seconds are the sum of five terms:

* ``compute``: the busiest part's Gibbs work, tokens per part x sweeps x
  (g0 + g1 K) (the dense kernel is O(K) per token), plus a fixed c0 per round;
  parts share cores when there are more of them than ``parallel``, the cores
  the workers really have to themselves (all of them on a dedicated cluster;
  on a shared machine fewer, fitted);
* ``update``: the driver's work, u_kw per entry of K x W (the dense SCIR
  step), u_col per column entry cut and added (K x distinct words of every
  part), plus a fixed u0;
* ``bytes``: the round's bytes (float32 columns in, sparse counts out, all
  through the driver) over the bandwidth;
* ``latency``: ``trips`` one-way network delays that nothing overlaps;
* ``overhead``: o_task per task and a fixed o0 per round (scheduler,
  serialisation, the driver's own Python), plus o_hosts when driver,
  scheduler and workers are separate hosts.

``fit`` finds the constants by non-negative least squares, each term on the
part of the measured iteration it models (compute on the critical-path
compute of ``engine.parts.Timing``, update on its update, the rest on wall
less both), so no constant can hide another's error.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

COLUMN_BYTES = 4  # a phi column entry sent to a Gibbs task (float32)
COUNT_BYTES = 12  # a nonzero count sent back (int32 row, int32 column, int32 count)
TERMS = ("compute", "update", "bytes", "latency", "overhead")


@dataclass(frozen=True)
class Config:
    """One LDA iteration's shape: topics, vocabulary, minibatch, cluster."""
    K: int
    W: int
    batch: int  # documents per minibatch
    doc_length: float  # mean tokens per document
    workers: int
    threads: int = 1  # per worker: one Gibbs part each
    sweeps: int = 10
    delay_ms: float = 0.0  # one-way delay added between hosts
    scir_parallel: int = 1  # cores the SCIR step is spread over (1: the driver alone)
    hosts: bool = False  # driver, scheduler and workers on separate hosts (not one machine)

    def __post_init__(self):
        for name in ("K", "W", "batch", "workers", "threads", "sweeps", "scir_parallel"):
            if getattr(self, name) < 1:
                raise ValueError(f"Config.{name} must be >= 1, got {getattr(self, name)}")
        if self.doc_length <= 0 or self.delay_ms < 0:
            raise ValueError("Config.doc_length must be > 0 and delay_ms >= 0")


@dataclass(frozen=True)
class Constants:
    """The model's constants, in seconds (bandwidth in bytes per second)."""
    g0: float = 0.0  # per token-sweep
    g1: float = 0.0  # per token-sweep per topic
    c0: float = 0.0  # per round, in compute
    u_kw: float = 0.0  # per K x W entry stepped
    u_col: float = 0.0  # per column entry cut and added
    u0: float = 0.0  # per round, in the update
    o0: float = 0.0  # per round, the rest
    o_task: float = 0.0  # per task
    o_hosts: float = 0.0  # per round, when the processes are on separate hosts
    trips: float = 0.0  # one-way delays per round that nothing overlaps
    bandwidth: float = math.inf  # bytes per second through the driver's link
    parallel: float = math.inf  # cores the parts run on at once


def parts(c: Config) -> int:
    """Gibbs tasks per iteration: one per worker thread (at most one per document)."""
    return min(c.workers * c.threads, c.batch)


def distinct_words(tokens: float, n_words: int) -> float:
    """Expected distinct words among ``tokens`` uniform draws from ``n_words`` (an upper
    bound for skewed word frequencies)."""
    return n_words * -math.expm1(-tokens / n_words)


def counts(c: Config) -> dict:
    """What an iteration moves: tokens, parts, column entries, bytes."""
    p = parts(c)
    per_part = c.batch * c.doc_length / p
    columns = p * c.K * distinct_words(per_part, c.W)
    nonzero = p * min(c.K * distinct_words(per_part, c.W), per_part)
    return {"tokens": c.batch * c.doc_length, "parts": p, "tokens_per_part": per_part,
            "column_entries": columns,
            "bytes": columns * COLUMN_BYTES + nonzero * COUNT_BYTES}


def features(c: Config, parallel: float = math.inf) -> dict:
    """Each term's regressors (the constants multiply them)."""
    n = counts(c)
    sweeps = n["tokens_per_part"] * c.sweeps * max(1.0, n["parts"] / parallel)
    return {"compute": {"g0": sweeps, "g1": sweeps * c.K, "c0": 1.0},
            "update": {"u_kw": c.K * c.W / c.scir_parallel, "u_col": n["column_entries"],
                       "u0": 1.0},
            "rest": {"o0": 1.0, "o_task": n["parts"], "o_hosts": float(c.hosts),
                     "trips": c.delay_ms / 1000.0, "inverse_bandwidth": n["bytes"]}}


def predict(c: Config, k: Constants) -> dict:
    """Seconds per iteration of ``c`` with constants ``k``: each term and their total."""
    f, n = features(c, k.parallel), counts(c)
    terms = {
        "compute": k.g0 * f["compute"]["g0"] + k.g1 * f["compute"]["g1"] + k.c0,
        "update": sum(getattr(k, name) * x for name, x in f["update"].items()),
        "bytes": n["bytes"] / k.bandwidth,
        "latency": k.trips * c.delay_ms / 1000.0,
        "overhead": k.o0 + k.o_task * n["parts"] + k.o_hosts * c.hosts,
    }
    return {**terms, "total": sum(terms.values())}


def _nnls(rows: list[tuple[Config, dict]], term: str, parallel: float,
          drop: tuple[str, ...] = ()) -> tuple[dict, float]:
    """One term's constants by non-negative least squares, and the residual norm."""
    from scipy.optimize import nnls

    names = [n for n in features(rows[0][0])[term] if n not in drop]
    a = np.array([[features(c, parallel)[term][n] for n in names] for c, _ in rows])
    y = np.array([m[term] for _, m in rows])
    scale = np.maximum(np.abs(a).max(axis=0), 1e-300)  # columns of one size
    x, residual = nnls(a / scale, y)
    return dict(zip(names, (x / scale).tolist())), residual


def fit(rows: list[tuple[Config, dict]], bandwidth: float | None = None) -> Constants:
    """Constants from measured iterations: ``rows`` of (config, {"compute", "update",
    "wall"} seconds). The rest (wall less compute and update) is fitted by o0,
    o_task, o_hosts, trips and the bytes over the bandwidth (given, or fitted);
    ``parallel`` is the number of cores (on a grid up to the most parts measured,
    or unlimited) that fits the compute best."""
    known = math.inf if bandwidth is None else bandwidth
    rows = [(c, {**m, "rest": m["wall"] - m["compute"] - m["update"]
                 - counts(c)["bytes"] / known}) for c, m in rows]
    most = max(parts(c) for c, _ in rows)
    grid = [*np.linspace(1.0, most, 10 * (most - 1) + 1).tolist(), math.inf]
    fits = [(_nnls(rows, "compute", p), p) for p in grid]
    (compute, _), parallel = min(fits, key=lambda f: f[0][1])
    rest = _nnls(rows, "rest", math.inf, () if bandwidth is None else ("inverse_bandwidth",))[0]
    inverse = rest.pop("inverse_bandwidth", 0.0)
    return Constants(**compute, **_nnls(rows, "update", math.inf)[0], **rest,
                     bandwidth=bandwidth if bandwidth is not None
                     else (1.0 / inverse if inverse > 0 else math.inf), parallel=parallel)


def as_dict(k: Constants) -> dict:
    return {name: (None if v == math.inf else v) for name, v in asdict(k).items()}


def from_dict(d: dict) -> Constants:
    return Constants(**{n: (math.inf if v is None else v) for n, v in d.items()})
