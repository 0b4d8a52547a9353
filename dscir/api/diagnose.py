"""Convergence diagnostics of a run's chains, and its kept samples as ArviZ data.

``diagnose(RUN)`` reads every chain of a run (``dscir.runs.chains``), matches
LDA topics across chains onto chain 0's (``dscir.diagnostics.matching``) and
gives R-hat and bulk ESS (``dscir.diagnostics.convergence``) of:

- every model: the held-out score of each kept sample (LDA: per-token log
  likelihood by document completion, -log perplexity, under that sample's phi;
  DP mixture: the mean log predictive of the held-out users under that
  sample), computed here on the cluster from the stored samples, so the
  chains' traces are of samples, not of the running mean a fit scores;
- LDA: each matched topic's ``top`` most probable words (by the pooled mean):
  the worst R-hat and the smallest ESS over them;
- DP mixture: alpha and the number of clusters of each kept sample.

With ``ksd``, also each chain's kernel Stein discrepancy (``dscir.api.stein``;
LDA: over every topic x the most frequent words; DP mixture: over the logits of
the leading stick breaks): R-hat and ESS assume an exact kernel; the KSD sees
the bias of a stochastic-gradient chain.

Nothing K x W is held here: LDA's kept samples are read from the run a block
of columns at a time and each sample's columns for scoring on the workers
(``dscir.api.kept_samples``), and the KSD reads one sample at a time (its
score needs that sample's full-data counts, K x W). Only the ArviZ export
(``inference_data``) holds every sample.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from dscir.api import kept_samples
from dscir.api.registry import estimator_class
from dscir.api.stein import KSDResult, check_options, run_ksd
from dscir.diagnostics import convergence as cv
from dscir.errors import DscirError
from dscir.runs.chains import open_chains

class Row(NamedTuple):
    quantity: str
    rhat: float
    ess: float
    note: str


class Diagnosis(NamedTuple):
    """The diagnostics of a run: one row per quantity, and the chains' labellings."""

    model: str
    n_chains: int
    n_draws: int
    rows: list[Row]
    perms: list[np.ndarray] | None  # LDA: chain c's topic perm[k] is chain 0's topic k
    scores: np.ndarray | None  # [chain, draw] held-out score of each kept sample
    ksd: KSDResult | None = None  # with ksd=True: each chain's KSD

    def table(self) -> str:
        """The rows as a plain-text table."""
        head = f"{self.model} run: {self.n_chains} chains x {self.n_draws} kept samples"
        width = max([len("quantity")] + [len(r.quantity) for r in self.rows])
        lines = [head, f"{'quantity':<{width}}  {'R-hat':>7}  {'ESS':>8}  note"]
        lines += [f"{r.quantity:<{width}}  {r.rhat:7.3f}  {r.ess:8.1f}  {r.note}"
                  for r in self.rows]
        if self.ksd is not None:
            lines.append(self.ksd.describe())
            lines += [f"  chain {c}: {v:.4g}" for c, v in enumerate(self.ksd.values)]
        return "\n".join(lines)


def lda_phi(runs) -> tuple[np.ndarray, list[np.ndarray]]:
    """The kept phi samples [chain, draw, K, W] with topics matched onto chain 0's,
    and each chain's labelling (the ArviZ export: every sample in this process)."""
    perms = kept_samples.align(runs)
    phi = kept_samples.stack(runs, "phi")
    return np.stack([phi[c][:, p] for c, p in enumerate(perms)]), perms


def row(quantity: str, draws: np.ndarray, note: str = "") -> Row:
    return Row(quantity, float(np.max(cv.rhat(draws))), float(np.min(cv.ess(draws))), note)


def topic_rows(runs, top: int) -> tuple[list[Row], list[np.ndarray]]:
    """A row per topic: its ``top`` words' worst R-hat and smallest ESS (the kept
    samples read a block of columns at a time, ``dscir.api.kept_samples``)."""
    perms = kept_samples.align(runs)
    draws, ids = kept_samples.topic_draws(runs, perms, top)
    rhats, esss = cv.rhat(draws), cv.ess(draws)
    vocab = runs[0].vocabulary
    rows = [Row(f"topic {k}", float(np.max(rhats[k])), float(np.min(esss[k])),
                " ".join(str(vocab[w]) for w in ids[k]))
            for k in range(ids.shape[0])]
    return rows, perms


def sample_scores(runs, executor) -> np.ndarray:
    """The held-out score [chain, draw] of every kept sample of every chain."""
    from dscir.corpus import Corpus

    heldout = np.asarray(Corpus.open(runs[0].store).heldout_docs(), np.int64)
    return estimator_class(runs[0].model)._sample_scores(runs, executor, heldout)


def diagnose(run: str | Path, client=None, *, top: int = 5, score: bool = True,
             ksd: bool = False, ksd_words: int = 10, ksd_batch_size: int | str | None = None,
             ksd_sticks: int = 10, local: bool = False, **cluster) -> Diagnosis:
    """R-hat and ESS of the run's chains (see the module); ``score`` computes the
    held-out score of every kept sample on the cluster (``client`` or the
    ``cluster`` keywords of ``fit``; ``local``: in this process); ``ksd`` each
    chain's KSD over all topics x the ``ksd_words`` most frequent words (LDA) or the
    logits of the ``ksd_sticks`` leading stick breaks (DP mixture), scores from
    ``ksd_batch_size`` documents or users (an int, or "all" for the full data;
    default the run's batch size, a Gibbs DP run's "all")."""
    from dscir.api.session import executor_for

    runs = open_chains(run)
    model = runs[0].model
    kind = estimator_class(model, "_diagnosable", "diagnose")
    if runs[0].n_samples < 4:
        raise DscirError(f"{run} kept {runs[0].n_samples} samples per chain; R-hat and ESS "
                         "need at least 4 (more iterations after burn_in, or a smaller thin)")
    if ksd:
        check_options(runs, ksd_batch_size, ksd_words, ksd_sticks)
    rows, perms, scores, stein = [], None, None, None
    if score or ksd:
        with executor_for(model, runs[0].store, client, local=local,
                          resident=kind._resident, **cluster) as executor:
            scores = sample_scores(runs, executor) if score else None
            stein = (run_ksd(runs, executor, n_words=ksd_words, batch_size=ksd_batch_size,
                             n_sticks=ksd_sticks) if ksd else None)
    if score:
        rows.append(row("held-out score", scores, kind._score_note))
    model_rows, perms = kind._diagnostic_rows(runs, top)
    return Diagnosis(model, len(runs), runs[0].n_samples, rows + model_rows, perms, scores,
                     stein)


def inference_data(run: str | Path, scores: np.ndarray | None = None):
    """The kept samples of every chain of ``run`` as ArviZ ``InferenceData``.

    LDA: ``posterior.phi`` (chain, draw, topic, word), topics matched onto chain
    0's, words labelled by the vocabulary. DP mixture: ``posterior.alpha`` and
    ``posterior.n_clusters`` (chain, draw). ``scores`` [chain, draw] (from
    ``diagnose``) becomes ``sample_stats.heldout_score``. Draws are labelled by
    the iteration that kept them.
    """
    az = cv.arviz()
    runs = open_chains(run)
    iterations = runs[0].samples().get("iteration")
    if iterations is None:
        raise DscirError(f"{run} kept no samples")
    kind = estimator_class(runs[0].model, "_diagnosable", "the ArviZ export")
    posterior, dims, coords = kind._posterior(runs)
    coords = {"draw": np.asarray(iterations), **coords}
    stats = None if scores is None else {"heldout_score": np.asarray(scores)}
    return az.from_dict(posterior=posterior, sample_stats=stats, coords=coords, dims=dims)


class ChainDiagnostics:
    """What an estimator with a run store offers over its chains (``Estimator``'s)."""

    def _run_path(self) -> str:
        path = getattr(self, "run_path_", None)
        if path is None:
            raise DscirError(f"this {type(self).__name__} has no run store; fit with out= "
                             "or load a run")
        return path

    def diagnose(self, client=None, **options) -> Diagnosis:
        """R-hat and ESS of the fit's chains (``diagnose`` above)."""
        return diagnose(self._run_path(), client, **options)

    def to_inference_data(self, scores=None):
        """The kept samples of every chain as ArviZ ``InferenceData`` with named
        dimensions (``inference_data`` above)."""
        return inference_data(self._run_path(), scores)

    def plot_diagnostics(self, diagnosis: Diagnosis | None = None, ax=None):
        """R-hat and ESS of each diagnosed quantity (matplotlib); ``diagnosis`` from
        ``diagnose()`` (computed without held-out scores if None). Returns the figure."""
        from dscir.display import plot_diagnosis

        return plot_diagnosis(diagnosis or self.diagnose(score=False), ax)
