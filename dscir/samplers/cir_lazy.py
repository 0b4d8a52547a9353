"""Lazy SCIR: a K x W SCIR state whose untouched word columns are not stepped.

Each entry theta_kw of the expanded mean is a CIR process (``dscir.samplers.cir``):
over a step of size h it takes the exact transition with shape
a_kw = prior + scale * counts_kw. A word absent from the minibatch has counts 0
in every row, so its column's transitions all have shape ``prior``, and CIR
transitions with one shape compose exactly: n steps h_1..h_n are one transition
over h_1 + ... + h_n. So a column whose word is not in the minibatch keeps its
last realized values x_w and the clock T_w at which they were realized; when it
is next touched it first advances by one exact transition with shape ``prior``
over the gap T - T_w (the catch-up), then takes this step with its counts.

What is exact: every realized column, at every clock, has exactly the law it
has under the dense step (same transitions, composed), jointly with every other
realized column (the columns are independent given the counts). The theta
chain of the lazy step *is* the dense chain in law; its noise is drawn per
column from stream ``mix_in(mix_in(key, tag), w)``, so it does not depend on
how the columns are split into blocks or workers, nor on the order of words.

What is approximated: the row totals R_k = sum_w theta_kw that turn theta into
phi. Their touched part is exact; the lazy part S_k = sum of the lazy columns'
current (unrealized) values is replaced by (``totals="mean"``) its conditional
expectation given the lazy columns' last values, or (``totals="draw"``) a draw
from the Gamma law with its exact conditional mean and variance (the exact
conditional law, a sum of independent noncentral chi-squares of different
scales, has no O(1) form). Either way R_k is not jointly consistent with the
later realizations of the lazy columns, and in ``draw`` mode successive
iterations' lazy parts are independent. docs/lazy_scir.md says why an exact
joint scheme costs as much as the dense step, and measures the approximation.

Bookkeeping: per row the sums a1 = sum_w x_kw e^{-(T - T_w)} and a2 = sum_w
x_kw e^{-2(T - T_w)}, the fresh sum of the columns realized at T, and per state
b1 = sum_w e^{-(T - T_w)}, b2 = sum_w e^{-2(T - T_w)}; all decay by e^{-h},
e^{-2h} at a step (O(K)) and change by one term per touched entry, so
E[R_k | x] = a1 + prior (W - b1) and Var[R_k | x] = 2 (a1 - a2) +
prior (W - 2 b1 + b2). The sums are additive over column blocks (``moments``).

Kept samples (Rao-Blackwellised, no realization): a kept sample at clock t adds
E[theta_kw(t) | x_w] / R_k(t) = (prior + (x_kw - prior) e^{-(t - T_w)}) / R_k(t)
for every column, in closed form when the column is next touched (the prefix
sums are in ``_cir_lazy``). ``mean_phi`` reads the mean without changing the state,
so checkpoints and scoring never alter the chain.

The state's arrays are updated in place and shared with the returned state
(as with JAX's donated buffers): use only the state a function returns.
Layout: ``log_theta`` is W x K (a column is contiguous); ``log_theta_kw``
gives K x W (after ``realize``, the state at the clock). Checkpoints:
``to_arrays`` / ``from_arrays`` (docs/lazy_scir.md has the model's wiring).
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np

from dscir.errors import DscirError
from dscir.samplers._cir_lazy import (
    TAG_NORM,
    advance,
    draw_normaliser,
    flush_all,
    record_keep,
)

TOTALS = ("mean", "draw")
_HISTORY0 = 16


class Kept(NamedTuple):
    """Rao-Blackwellised kept-sample accumulators (see ``_cir_lazy``):
    phi_sum (W x K, None before the first keep), per column the first kept index
    not yet added, per kept index the clock, the prefix sums c0 (of 1/R) and c1
    (of e^{-(t - base)}/R within its window) and its window; per window its base
    clock and running total."""

    phi_sum: np.ndarray | None
    at: np.ndarray
    clock: np.ndarray
    c0: np.ndarray
    c1: np.ndarray
    window: np.ndarray
    base: np.ndarray
    total: np.ndarray
    n: int
    n_windows: int


class State(NamedTuple):
    """Lazy SCIR state: log theta (W x K), each column's realization clock, the
    clock, the row sums [a1, a2, fresh] (3 x K), [b1, b2], the last step size,
    the kept accumulators, the number of entries visited so far (cost) and the
    word id of column 0 (a block of a larger vocabulary: streams are named by it)."""

    log_theta: np.ndarray
    last: np.ndarray
    clock: float
    sums: np.ndarray
    col_sums: np.ndarray
    step_size: float
    kept: Kept
    entries: int
    first_word: int


def init(theta0: np.ndarray, first_word: int = 0) -> State:
    """State at ``theta0`` (K x W, positive and finite), clock 0; its columns are
    the words first_word, first_word + 1, ... (a block of a vocabulary)."""
    theta0 = np.asarray(theta0, dtype=np.float64)
    if theta0.ndim != 2 or not np.all(np.isfinite(theta0) & (theta0 > 0)):
        raise DscirError("lazy SCIR theta0 must be a K x W array, positive and finite")
    return init_log(np.log(theta0), first_word)


def init_log(log_theta0: np.ndarray, first_word: int = 0) -> State:
    """State at theta = exp(``log_theta0``) (K x W, finite), clock 0 (``init``)."""
    lt = np.asarray(log_theta0, dtype=np.float64)
    if lt.ndim != 2 or not np.all(np.isfinite(lt)):
        raise DscirError("lazy SCIR log_theta0 must be a finite K x W array")
    k, w = lt.shape
    lt = np.ascontiguousarray(lt.T)
    x = np.exp(lt).sum(axis=0)
    kept = Kept(None, np.zeros(w, np.int64), np.zeros(_HISTORY0), np.zeros((_HISTORY0 + 1, k)),
                np.zeros((_HISTORY0, k)), np.zeros(_HISTORY0, np.int64), np.zeros(_HISTORY0),
                np.zeros((_HISTORY0, k)), 0, 0)
    return State(lt, np.zeros(w), 0.0, np.stack([x, x, x.copy()]), np.array([w, w], float),
                 0.0, kept, 0, _check_key(first_word))


def touch(state: State, words, prior: float, key: int) -> State:
    """Realize the columns ``words`` (sorted distinct column indices) at the current clock:
    each lazy one advances by one exact transition with shape ``prior`` over its
    gap (stream mix_in(mix_in(key, TAG_CATCH), w)); a column already at the clock is left
    as it is, so touching twice is touching once."""
    words = _check_words(words, state)
    prior, key = _check_prior(prior), _check_key(key)
    empty = np.zeros((state.log_theta.shape[1], 0))
    return _advance(state, words, empty, prior, 0.0, 0.0, key)


def step(state: State, words, counts, prior: float, h: float, key: int,
         scale: float = 1.0) -> State:
    """One SCIR step: the columns of ``words`` (sorted distinct ids) catch up to
    the clock (as ``touch``) and take the exact transition over ``h`` with shape
    ``prior + scale * counts`` (K x len(words), >= 0; stream
    mix_in(mix_in(key, TAG_STEP), w)); every other column stays lazy. The clock
    advances by ``h``."""
    words = _check_words(words, state)
    prior, key = _check_prior(prior), _check_key(key)
    h = _check_positive(h, "step_size")
    scale = _check_positive(scale, "scale")
    counts = np.asarray(counts, dtype=np.float64)
    if counts.shape != (state.log_theta.shape[1], words.size):
        raise DscirError(f"lazy SCIR counts have shape {counts.shape}, expected "
                         f"{(state.log_theta.shape[1], words.size)} (K x words)")
    if not np.all(np.isfinite(counts) & (counts >= 0)):
        raise DscirError("lazy SCIR counts must be finite and >= 0")
    return _advance(state, words, np.ascontiguousarray(counts), prior, scale, h, key)


def _advance(state, words, counts, prior, scale, h, key) -> State:
    clock = state.clock + h
    kept = state.kept
    phi_sum = kept.phi_sum if kept.phi_sum is not None else np.zeros((0, 0))
    visited = advance(state.log_theta, state.last, state.sums, state.col_sums, words, counts,
                      prior, scale, state.clock, h, np.uint64(key), state.first_word, kept.at,
                      phi_sum, kept.c0, kept.c1, kept.window, kept.base, kept.total, kept.n,
                      kept.n_windows, kept.phi_sum is not None)
    return state._replace(clock=clock, step_size=h if h > 0 else state.step_size,
                          entries=state.entries + visited)


def moments(state: State, prior: float) -> np.ndarray:
    """[3, K]: E[R_k | x], Var[R_k | x] and the sum of the columns realized at the
    clock, for this state's columns; additive over column blocks of one chain."""
    prior = _check_prior(prior)
    a1, a2, fresh = (np.maximum(s, 0.0) for s in state.sums)
    b1, b2 = np.minimum(state.col_sums, state.log_theta.shape[0])
    w = state.log_theta.shape[0]
    mean = a1 + prior * (w - b1)
    var = np.maximum(2.0 * (a1 - a2) + prior * max(w - 2.0 * b1 + b2, 0.0), 0.0)
    return np.stack([np.maximum(mean, fresh), var, fresh])


def normaliser(moments_: np.ndarray, totals: str, key: int = 0) -> np.ndarray:
    """R_k (K values) from summed ``moments``: the conditional mean (``"mean"``), or
    the fresh sum plus a Gamma draw with the lazy part's conditional mean and
    variance (``"draw"``, stream mix_in(key, TAG_NORM)). Use ``"draw"`` for the
    step's reads (the lazy part's exact conditional mean and variance) and
    ``"mean"`` at kept samples (each kept phi row then sums to one);
    docs/lazy_scir.md measures both."""
    if totals not in TOTALS:
        raise DscirError(f"lazy SCIR totals must be one of {TOTALS}, got {totals!r}")
    moments_ = np.asarray(moments_, dtype=np.float64)
    if totals == "mean":
        return moments_[0].copy()
    return draw_normaliser(moments_, np.uint64(_check_key(key)), TAG_NORM)


def columns(state: State, words, norm: np.ndarray) -> np.ndarray:
    """log phi of the columns of ``words`` (K x len(words)) with row totals ``norm``;
    the columns must have been realized at the clock (``touch``)."""
    words = _check_words(words, state)
    if np.any(state.last[words] != state.clock):
        raise DscirError("lazy SCIR columns were read before they were touched at this clock")
    return state.log_theta[words].T - np.log(norm)[:, None]


def keep(state: State, norm: np.ndarray) -> State:
    """Record a kept sample at the clock with row totals ``norm`` (K values): its
    phi is added to each column's sum, in closed form, when the column is next
    touched (or read by ``mean_phi``)."""
    norm = np.asarray(norm, dtype=np.float64)
    if norm.shape != (state.log_theta.shape[1],) or not np.all(np.isfinite(norm) & (norm > 0)):
        raise DscirError("lazy SCIR keep needs K positive finite row totals")
    kept = _room(state.kept, state.log_theta.shape)
    n_windows = record_keep(kept.clock, kept.c0, kept.c1, kept.window, kept.base, kept.total,
                            kept.n, kept.n_windows, state.clock, 1.0 / norm)
    return state._replace(kept=kept._replace(n=kept.n + 1, n_windows=n_windows),
                          entries=state.entries + norm.size)


def _room(kept: Kept, shape) -> Kept:
    """The accumulators with room for one more kept sample and window."""
    w, k = shape
    if kept.phi_sum is None:  # written now, so no step pays for its first-touch page faults
        phi_sum = np.empty((w, k))
        phi_sum.fill(0.0)
        kept = kept._replace(phi_sum=phi_sum)
    cap = kept.clock.size
    if kept.n < cap and kept.n_windows < kept.base.size:
        return kept
    def grow(a, rows):
        return np.concatenate([a, np.zeros((rows,) + a.shape[1:], a.dtype)])

    return kept._replace(clock=grow(kept.clock, cap), c0=grow(kept.c0, cap), c1=grow(kept.c1, cap),
                         window=grow(kept.window, cap), base=grow(kept.base, cap),
                         total=grow(kept.total, cap))


def mean_phi(state: State, prior: float) -> np.ndarray:
    """Mean of the kept samples' phi (K x W), every pending term added into a
    copy: the state is unchanged. Before the first keep: E[theta | x] / E[R]."""
    prior = _check_prior(prior)
    kept = state.kept
    if kept.n == 0:
        e = np.exp(-(state.clock - state.last))[:, None]
        mean = prior + (np.exp(state.log_theta) - prior) * e
        return (mean / moments(state, prior)[0]).T
    out = kept.phi_sum.copy()
    flush_all(state.log_theta, state.last, kept.at, out, kept.c0, kept.c1, kept.window,
              kept.base, kept.total, kept.n, kept.n_windows, prior)
    return out.T / kept.n


def realize(state: State, prior: float, key: int) -> State:
    """Every column realized at the clock (``touch`` of all words, O(K W))."""
    return touch(state, np.arange(state.log_theta.shape[0]), prior, key)


def log_theta_kw(state: State) -> np.ndarray:
    """K x W log theta as stored (lazy columns at their own clocks; ``realize`` first
    for the state at the clock)."""
    return state.log_theta.T


def copy(state: State) -> State:
    """An independent copy (the other functions update a state's arrays in place)."""
    return from_arrays(to_arrays(state))


_SCALARS = ("clock", "step_size", "entries", "first_word", "kept/n", "kept/n_windows")


def to_arrays(state: State) -> dict[str, np.ndarray]:
    """The whole state as named arrays (copies), for a checkpoint: nothing is
    realized, so a chain resumed by ``from_arrays`` continues bit for bit."""
    out = {f: np.array(getattr(state, f)) for f in State._fields if f != "kept"}
    for f, v in state.kept._asdict().items():
        if v is not None:
            out[f"kept/{f}"] = np.array(v)
    return out


def from_arrays(arrays: dict[str, np.ndarray]) -> State:
    """The state ``to_arrays`` wrote."""
    missing = [f for f in (*State._fields, *(f"kept/{f}" for f in Kept._fields))
               if f not in arrays and f not in ("kept", "kept/phi_sum")]
    if missing:
        raise DscirError(f"lazy SCIR state arrays are missing {', '.join(missing)}")
    get = {f: (arrays[f].item() if f in _SCALARS else np.array(arrays[f])) for f in arrays}
    kept = Kept(**{f: get.get(f"kept/{f}") for f in Kept._fields})
    return State(**{f: get[f] for f in State._fields if f != "kept"}, kept=kept)


def _check_words(words, state: State) -> np.ndarray:
    words = np.asarray(words)
    if words.ndim != 1 or (words.size and not np.issubdtype(words.dtype, np.integer)):
        raise DscirError("lazy SCIR words must be a 1-D array of integer word ids")
    words = words.astype(np.int64)
    w = state.log_theta.shape[0]
    if words.size and (words[0] < 0 or words[-1] >= w or np.any(np.diff(words) <= 0)):
        raise DscirError(f"lazy SCIR words must be sorted distinct ids in [0, {w})")
    return words


def _check_prior(prior) -> float:
    if not isinstance(prior, numbers.Real) or not 0 < float(prior) < np.inf:
        raise DscirError(f"lazy SCIR prior must be a positive finite number, got {prior!r}")
    return float(prior)


def _check_positive(x, name: str) -> float:
    if not isinstance(x, numbers.Real) or not 0 < float(x) < np.inf:
        raise DscirError(f"lazy SCIR {name} must be a positive finite number, got {x!r}")
    return float(x)


def _check_key(key) -> int:
    if not isinstance(key, numbers.Integral) or not 0 <= int(key) < 2**64:
        raise DscirError(f"stream key must be an integer in [0, 2**64), got {key!r}")
    return int(key)
