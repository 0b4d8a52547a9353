"""When a chain of unknown length stops: its held-out score has reached a plateau.

The rule, in a user's units. A chain fitted with ``n_iter="auto"`` (the default)
scores its held-out documents every few iterations. ``Plateau`` says it has
converged once the held-out score has improved by less than ``tolerance``
*per pass over the training documents* over the last ``window`` passes: the
best score of the last ``window`` passes against the best before them, relative
to the latter's magnitude, divided by the passes the window spans. A pass is
``n_train / batch_size`` iterations, so the same tolerance means the same thing
for a minibatch of 50 documents and one of 1,000. The score the rule reads is
a held-out perplexity per token (``Model.stopping_score``: LDA's own score; the
mixtures' mean log predictive per document over the documents' tokens, so a
tolerance of 0.1 % is the same change in nats per token for every model). The
chain runs at least ``min_passes`` passes and at most ``max_passes``.

Why this rule. It is the criterion users of the peers already accept:
scikit-learn's ``LatentDirichletAllocation`` stops when the perplexity scored
every ``evaluate_every`` passes changes by less than ``perp_tol``, and MADlib's
LDA when the relative perplexity change is below ``perplexity_tol``; both read
a held-out (or training) perplexity's change between evaluations. Ours is the
same family with three changes a stochastic chain needs: the change is per
pass (not per evaluation, whose length depends on how often one scores), it
is the best score over a window (one evaluation's noise neither stops nor
prolongs the chain), and it is read on what the fit delivers: twice for a
mean over kept samples, once for a final state (``Stopping``). A Pflug-type test on
successive stochastic gradients answers whether a step size should shrink,
not whether the fit is good enough; a Stein discrepancy measures the sample's
quality but needs per-word gradients over the whole posterior and has no
threshold a user can read. A plateau of the held-out score is what a user
accepts as "no longer getting better", and it costs one document-completion
score every few iterations, on the workers, with the current topics.

The rule sees only the scores, never the clock, so the same chain stops at the
same iteration on any cluster.

What it scores. The store's held-out documents; on a store without any (a
corpus ingested at the defaults), the chain sets aside ``SET_ASIDE`` of its
documents itself (``set_aside``: at most a tenth of them, the same for every
seed and chain, as a split of the store would be), trains on the rest and
scores those. A chain too small to spare
``SET_ASIDE_MIN`` documents scores nothing and runs ``max_passes`` passes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from dscir.errors import DscirError
from dscir.rng import derive, domains

#: Why a chain stopped: its held-out score reached the plateau, the rule's maximum,
#: or the number of iterations asked for (``n_iter=N``).
STOP_REASONS = ("plateau", "max_passes", "n_iter")


class Plateau(NamedTuple):
    # Chosen on ap, kos and reuters by benchmarks/stopping.py (results/stopping_loo.json,
    # "chosen_on_all", with SCORE_EVERY_PASSES); see docs/guide/fitting.md.
    tolerance: float = 0.001  # relative held-out change per pass that still counts as progress
    window: float = 3.0  # passes over which the change is read
    min_passes: float = 15.0  # passes at the least before the chain may stop
    max_passes: float = 100.0  # passes at the most

    def check(self) -> Plateau:
        if not self.tolerance >= 0:
            raise DscirError(f"the stopping tolerance must be >= 0, got {self.tolerance!r}")
        if not self.window > 0:
            raise DscirError(f"the stopping window must be a positive number of passes, "
                             f"got {self.window!r}")
        if not self.min_passes >= 0:
            raise DscirError(f"min_passes must be >= 0, got {self.min_passes!r}")
        if not self.max_passes > 0:
            raise DscirError(f"max_passes must be a positive number of passes, "
                             f"got {self.max_passes!r}")
        if self.min_passes > self.max_passes:
            raise DscirError(f"min_passes={self.min_passes!r} exceeds "
                             f"max_passes={self.max_passes!r}")
        return self

    def evaluations(self, passes_per_score: float) -> int:
        """The scores the window holds when one is taken every ``passes_per_score``
        passes (at least one)."""
        return max(1, math.ceil(self.window / passes_per_score - 1e-9))

    def rate(self, scores: Sequence[float], lower_is_better: bool,
             passes_per_score: float) -> float | None:
        """The relative improvement per pass of the best of the window's scores on the
        best one before them (None while there are too few scores to say)."""
        k = self.evaluations(passes_per_score)
        if len(scores) <= k:
            return None
        before, recent = scores[:-k], scores[-k:]
        best_before = min(before) if lower_is_better else max(before)
        best_recent = min(recent) if lower_is_better else max(recent)
        gain = best_before - best_recent if lower_is_better else best_recent - best_before
        return gain / max(abs(best_before), 1e-300) / (k * passes_per_score)

    def reached(self, scores: Sequence[float], lower_is_better: bool,
                passes_per_score: float = 1.0) -> bool:
        """Whether the held-out scores so far, one every ``passes_per_score`` passes,
        have reached the plateau (the minimum is ``Stopping``'s to apply)."""
        r = self.rate(scores, lower_is_better, passes_per_score)
        return r is not None and r <= self.tolerance


#: Held-out scores every this many passes under the rule when no ``eval_every`` is
#: asked for (at least every iteration): scoring costs the fit's time, and three
#: passes between scores were as good as one on every corpus of the study.
SCORE_EVERY_PASSES = 3.0


#: Documents a chain sets aside to score on a store without held-out ones (at most
#: a tenth of its documents), and the fewest worth scoring: a few hundred documents
#: give a score whose noise is well under the tolerance per pass.
SET_ASIDE = 500
SET_ASIDE_MIN = 20


def set_aside(train: np.ndarray) -> np.ndarray:
    """The documents (sorted ids among ``train``) a chain sets aside to score when
    its store holds no held-out ones: min(``SET_ASIDE``, a tenth of ``train``)
    drawn without replacement from the stream (0, STOPPING_ASIDE), whatever the
    chain's seed; none when that is fewer than ``SET_ASIDE_MIN``."""
    train = np.asarray(train, np.int64)
    n = min(SET_ASIDE, train.size // 10)
    if n < SET_ASIDE_MIN:
        return np.zeros(0, np.int64)
    rng = np.random.Generator(np.random.PCG64(derive(0, domains.STOPPING_ASIDE)))
    return np.sort(rng.choice(train, size=n, replace=False))


class Stopping:
    """The decision of a chain of unknown length, in two plateaus (one for a fit that
    is the chain's final state).

    Every ``eval_every`` iterations the chain scores its held-out documents (0: every
    ``SCORE_EVERY_PASSES`` passes); a pass over the training documents is
    ``iters_per_pass`` iterations. While burning in
    (no sample kept), the score is the current state's; burn-in ends at the first
    iteration where those scores reach a plateau, or at half of the maximum
    (``burn_end``), so samples are always kept. Then samples are kept and the score
    is the kept samples' mean's; the chain stops at that score's plateau once
    ``min_passes`` passes have run (``stopped``, reason "plateau"), or at
    ``max_passes`` whatever the scores do (reason "max_passes"). The scores seen
    so far are part of the chain's state: a resumed chain continues the same
    decision (``state``/``restore``).

    ``kept_mean=False``, for a model whose fit is its final state
    (``Model.fit_is_state``: the mixtures' labels and components), reads one
    plateau: the score is the current state's throughout, no sample is kept, and
    the chain stops at that score's plateau once ``min_passes`` passes have run.
    The kept samples' mean would only improve a score the fit does not deliver.

    ``aside``: the documents the chain set aside to score (``set_aside``; none when
    the store holds held-out documents). ``scored=False`` (nothing to score): the
    chain runs ``max_passes`` passes, the first half of them burn-in.
    """

    def __init__(self, rule: Plateau, eval_every: int, lower_is_better: bool,
                 iters_per_pass: float = 1.0, scored: bool = True,
                 aside: np.ndarray | None = None, kept_mean: bool = True):
        self.scored, self.kept_mean = scored, kept_mean
        self.aside = np.zeros(0, np.int64) if aside is None else np.asarray(aside, np.int64)
        self.rule = rule.check()
        if not iters_per_pass > 0:
            raise DscirError(f"a pass must be a positive number of iterations, "
                             f"got {iters_per_pass!r}")
        self.iters_per_pass = float(iters_per_pass)
        self.eval_every = int(eval_every) or max(1, round(SCORE_EVERY_PASSES * iters_per_pass))
        self.lower_is_better = lower_is_better
        self.max_iter = max(1, math.ceil(rule.max_passes * self.iters_per_pass - 1e-9))
        self.min_iter = math.ceil(rule.min_passes * self.iters_per_pass - 1e-9)
        self.burn_scores: list[float] = []
        self.kept_scores: list[float] = []
        self.burn_end: int | None = None
        self.stopped: int | None = None
        self.last_rate: float | None = None

    @property
    def passes_per_score(self) -> float:
        return self.eval_every / self.iters_per_pass

    @property
    def burn_in(self) -> int:
        """Iterations before samples are kept (all of them while burning in)."""
        if not self.scored:
            return self.max_iter // 2
        return self.max_iter if self.burn_end is None else self.burn_end

    def due(self, iteration: int) -> bool:
        """Whether the chain scores its held-out documents after ``iteration``."""
        if not self.scored:
            return False
        return iteration % self.eval_every == 0 or iteration >= self.max_iter

    def observe(self, iteration: int, score: float) -> None:
        """Take the held-out score after ``iteration``; ends burn-in or the chain."""
        scores = self.burn_scores if self.burn_end is None else self.kept_scores
        scores.append(float(score))
        self.last_rate = self.rule.rate(scores, self.lower_is_better, self.passes_per_score)
        reached = self.last_rate is not None and self.last_rate <= self.rule.tolerance
        if self.burn_end is None and self.kept_mean:
            if reached or iteration >= self.max_iter // 2:
                self.burn_end = iteration
        elif reached and iteration >= self.min_iter:
            self.stopped = iteration
        if self.stopped is None and iteration >= self.max_iter:
            self.stopped = iteration

    def done(self, iteration: int) -> bool:
        return self.stopped is not None or iteration >= self.max_iter

    @property
    def reason(self) -> str | None:
        if self.stopped is None:
            return "max_passes" if not self.scored else None
        return "plateau" if self.stopped < self.max_iter else "max_passes"

    def progress(self) -> str:
        """The rule's state for a progress bar: "burn-in"/"keeping", the last change
        per pass and the tolerance."""
        phase = ("state" if not self.kept_mean else
                 "burn-in" if self.burn_end is None else "kept mean")
        if self.last_rate is None:
            return f"{phase}, Δ/pass – (stop < {self.rule.tolerance:.2%})"
        return f"{phase}, Δ/pass {self.last_rate:.2%} (stop < {self.rule.tolerance:.2%})"

    def summary(self) -> dict:
        """The rule and where it ended burn-in and the chain (for the run store)."""
        stopped, burn_end = self.stopped, self.burn_end
        if not self.scored:  # no held-out documents: the whole length, half burn-in
            stopped, burn_end = self.max_iter, self.burn_in
        return {**self.rule._asdict(), "eval_every": self.eval_every,
                "iters_per_pass": self.iters_per_pass, "max_iter": self.max_iter,
                "scored": self.scored, "set_aside": int(self.aside.size),
                "reads": "kept mean" if self.kept_mean or not self.scored else "state",
                "burn_end": burn_end, "stopped": stopped,
                "passes": None if stopped is None else stopped / self.iters_per_pass,
                "last_rate": self.last_rate, "reason": self.reason or "max_passes"}

    def state(self) -> dict:
        return {"burn_scores": list(self.burn_scores), "kept_scores": list(self.kept_scores),
                "burn_end": self.burn_end, "stopped": self.stopped,
                "last_rate": self.last_rate}

    def restore(self, state: dict) -> None:
        self.burn_scores = [float(s) for s in state["burn_scores"]]
        self.kept_scores = [float(s) for s in state["kept_scores"]]
        self.burn_end, self.stopped = state["burn_end"], state["stopped"]
        self.last_rate = state.get("last_rate")
