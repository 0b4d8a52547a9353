"""The kernel Stein discrepancy of a run's kept samples, scored on the cluster.

LDA. For each kept phi sample s of a chain: a minibatch of ``batch_size``
training documents and the totals T (``complete_totals``) are drawn from the
stream (chain seed, KSD, s); the model's own Gibbs task (``gibbs_counts``)
gives the minibatch's expected topic-word counts given phi, scaled by D / |S|
(the samplers' estimator, unbiased for the full-data counts); ``lda_score``
turns them into the score in eta = log theta at every topic x the ``n_words``
most frequent words of the store (``dscir.diagnostics.stein`` derives it), and
``ksd`` measures the samples against it.

DP mixture. For each kept sample s: the logits of its leading ``n_sticks``
stick breaks (a sample with fewer represented sticks is completed by prior
draws of sticks and components from (chain seed, KSD, s, 1) and (.., 2)); the
responsibilities of a minibatch of users from (chain seed, KSD, s), summed per
component by the model's task (``user_responsibilities``) and scaled by N / |S|;
``stick_score`` (``dscir.diagnostics.dp_stein`` derives it) with the sample's
alpha.

``batch_size="all"`` takes every training document (user), scale 1: the DP's
scores are then exact, LDA's have no minibatch noise (the expected counts
within each document are still the Gibbs task's estimate). Every number is a
function of the run, the store and the options alone, whatever the workers.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dscir import integrity
from dscir.rng import domains
from dscir.api.registry import estimator_class
from dscir.diagnostics.dp_stein import stick_logits, stick_score
from dscir.diagnostics.ksd import ksd
from dscir.diagnostics.stein import complete_totals, lda_score
from dscir.errors import DscirError
from dscir.rng import derive

ALL = "all"  # batch_size: every training document (user)


class KSDResult(NamedTuple):
    """The KSD of each chain of a run, and what it was taken over."""

    values: list[float]  # one per chain
    words: np.ndarray | None  # LDA: the word ids of the subset (all topics of each)
    n_samples: int  # kept samples per chain
    batch_size: int  # documents (users) per score estimate
    full: bool = False  # the scores are from all training documents (users)
    sticks: int = 0  # DP mixture: the leading sticks (logit v_j, j < sticks)

    def describe(self) -> str:
        """What the KSD is over, for a table's heading."""
        unit = "users" if self.words is None else "documents"
        source = (f"the full data ({self.batch_size} {unit})" if self.full
                  else f"{self.batch_size}-{unit[:-1]} minibatches")
        if self.words is None:
            return f"KSD over the {self.sticks} leading sticks (logit v_j; scores from {source}):"
        return (f"KSD over {len(self.words)} most frequent words x all topics "
                f"(log theta; scores from {source}):")


def check_batch_size(batch_size, default: int, n_train: int, unit: str) -> int:
    """The number of documents (users) per score estimate: ``batch_size`` an int in
    1..n_train or "all" (n_train), None for ``default``."""
    if batch_size is None:
        batch_size = default
    if batch_size == ALL:
        return n_train
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
            or not 1 <= batch_size <= n_train:
        raise DscirError(f"the KSD's batch_size must be an int in 1..{n_train} (the training "
                         f"{unit}) or 'all', got {batch_size!r}")
    return int(batch_size)


def parse_batch_size(text: str | None) -> int | str | None:
    """A ``--ksd-batch-size`` value: a whole number or "all"."""
    if text is None or text == ALL:
        return text
    try:
        return int(text)
    except ValueError:
        raise DscirError(f"--ksd-batch-size must be a whole number or 'all', got {text!r}") \
            from None


def _batch(seed: int, s: int, train: np.ndarray, batch_size: int):
    """The scoring minibatch of kept sample s, and the generator that drew it."""
    rng = np.random.Generator(np.random.PCG64(derive(seed, domains.KSD, s)))
    if batch_size == train.size:
        return train, rng
    return np.sort(rng.choice(train, batch_size, replace=False)), rng


def frequent_words(executor, store: str, n_words: int) -> np.ndarray:
    """The ``n_words`` most frequent words of the store (all its documents; ties by
    word id), sorted."""
    from dscir.api.pyldavis import corpus_counts
    from dscir.corpus import Corpus

    corpus = Corpus.open(store)
    n_docs, vocab = corpus.doc_lengths.size, len(corpus.vocabulary)
    _, freq = corpus_counts(executor, n_docs, 512, vocab)
    order = np.lexsort((np.arange(vocab), -freq))
    return np.sort(order[: min(n_words, vocab)])


def estimated_counts(executor, train: np.ndarray, config, phi: np.ndarray, batch: np.ndarray,
                     index: int) -> np.ndarray:
    """Patterson & Teh's estimate [K, W] of the full-data expected topic-word
    counts given ``phi``: the Gibbs expectations of the documents ``batch`` (one
    kept sample's minibatch) times D / |S|."""
    from dscir.models.lda.gibbs import phi_columns
    from dscir.models.lda.tasks import add_counts, gibbs_counts

    parts = executor.read(batch, "ksd-read", iteration=index)
    lphi = np.log(np.asarray(phi, np.float64))
    key = derive(config.seed, domains.KSD)
    args = [(phi_columns(lphi, w), config.alpha, config.sweeps, key, index, config.kernel)
            for w in executor.words(parts)]
    results = executor.run("ksd-gibbs", gibbs_counts, parts, args)
    counts = add_counts(np.zeros(phi.shape, np.int64), results)
    return counts * (train.size / batch.size / results[0].n_kept)


def chain_ksd(executor, train: np.ndarray, config, phi_samples: np.ndarray,
              words: np.ndarray, batch_size: int) -> float:
    """The KSD of one chain's kept phi samples [S, K, W] (see the module), read one
    at a time (each sample's score needs its full-data counts, K x W here)."""
    eta, score = [], []
    for s in range(phi_samples.shape[0]):
        phi = np.asarray(integrity.read(phi_samples, s), np.float64)
        phi = phi / phi.sum(axis=1, keepdims=True)  # kept as float32
        batch, rng = _batch(config.seed, s, train, batch_size)
        totals = complete_totals(rng, *phi.shape, config.beta)
        counts = estimated_counts(executor, train, config, phi, batch, s)
        e, g = lda_score(phi, totals, counts, config.beta, words)
        eta.append(e)
        score.append(g)
    return ksd(np.array(eta), np.array(score))


def complete_sticks(sample, n_sticks: int, a0: float, key: int):
    """A DP sample (``Sample``) with at least ``n_sticks`` represented components:
    the missing ones are prior draws, v ~ Beta(1, alpha) and phi ~ Dirichlet(a0),
    from the streams (key, 0) and (key, 1). Returns (log w, log phi, log rest)."""
    from dscir.models.mixtures.dp.sticks import prior_components, stick_prior
    from dscir.samplers.cir import sample_stationary
    from dscir.samplers.simplex import beta_from_log_gammas, normalize_log

    log_w, log_phi, log_rest = sample.log_w, sample.log_phi, sample.log_rest
    extra = n_sticks - log_w.size
    if extra <= 0:
        return log_w, log_phi, log_rest
    g = sample_stationary(stick_prior(extra, sample.alpha), derive(key, 0))
    log_v, log_1mv = beta_from_log_gammas(g[:, 0], g[:, 1])
    before = np.concatenate([[0.0], np.cumsum(log_1mv)[:-1]])
    new_phi = normalize_log(prior_components(extra, log_phi.shape[1], a0, derive(key, 1)),
                            axis=1)
    return (np.concatenate([log_w, log_rest + log_v + before]),
            np.concatenate([log_phi, new_phi]), log_rest + float(np.sum(log_1mv)))


def estimated_responsibilities(executor, train: np.ndarray, a0: float, log_w: np.ndarray,
                               log_phi: np.ndarray, log_rest: float, batch: np.ndarray,
                               index: int) -> np.ndarray:
    """The estimate [K + 1] of the full-data responsibility sums of a DP sample's
    components and its rest (``responsibility_sums``): the users ``batch`` times
    N / |S|."""
    from dscir.models.mixtures.dp.tasks import user_responsibilities

    parts = executor.read(batch, "ksd-read", iteration=index)
    args = [(np.ascontiguousarray(log_phi[:, w]), log_w, log_rest, a0, log_phi.shape[1])
            for w in executor.words(parts)]
    sums = np.sum(executor.run("ksd-responsibilities", user_responsibilities, parts, args),
                  axis=0)
    return sums * (train.size / batch.size)


def dp_chain_ksd(executor, train: np.ndarray, config, samples, n_sticks: int,
                 batch_size: int) -> float:
    """The KSD of one DP chain's kept samples (``Sample`` list) over the logits of
    their leading ``n_sticks`` stick breaks (see the module)."""
    logits, scores = [], []
    for s, sample in enumerate(samples):
        batch, _ = _batch(config.seed, s, train, batch_size)
        log_w, log_phi, log_rest = complete_sticks(sample, n_sticks, config.a0,
                                                   derive(config.seed, domains.KSD, s, 1))
        sums = estimated_responsibilities(executor, train, config.a0, log_w, log_phi, log_rest,
                                          batch, s)
        u = stick_logits(log_w, log_rest)[:n_sticks]
        logits.append(u)
        scores.append(stick_score(u, sample.alpha, sums))
    return ksd(np.array(logits), np.array(scores))


def kept(r, name: str):
    """The stored kept ``samples/<name>`` of run ``r`` (nothing read: ``chain_ksd``
    reads one sample at a time)."""
    from dscir.api.kept_samples import sample_array

    values = sample_array(r, name)
    if values is None or values.shape[0] < 2:
        raise DscirError(f"{r.path} kept fewer than 2 samples; the KSD needs several "
                         "(more iterations after burn_in, or a smaller thin)")
    return values


def check_options(runs, batch_size=None, n_words: int = 10, n_sticks: int = 10) -> int:
    """Check a run's KSD options before any cluster work; returns the documents
    (users) per score estimate (see ``run_ksd``)."""
    from dscir.corpus import Corpus

    kind = estimator_class(runs[0].model, "_ksd_count", "the KSD")
    n_train = Corpus.open(runs[0].store).train_docs().size
    count = {"n_words": n_words, "n_sticks": n_sticks}[kind._ksd_count]
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
        raise DscirError(f"the KSD's {kind._ksd_count} must be an int >= 1, got {count!r}")
    config = runs[0].config
    default = ALL if kind._ksd_full_data(config) else config["batch_size"]
    return check_batch_size(batch_size, default, n_train, kind._ksd_unit)


def run_ksd(runs, executor, *, n_words: int = 10, batch_size: int | str | None = None,
            words: np.ndarray | None = None, n_sticks: int = 10) -> KSDResult:
    """The KSD of every chain of an LDA run (``runs`` from ``open_chains``) over all
    topics x ``words`` (default: ``frequent_words``), or of a DP-mixture run over its
    leading ``n_sticks`` sticks; ``batch_size`` (an int, or "all" for every training
    document or user) defaults to the run's own (a Gibbs DP run's: "all")."""
    from dscir.corpus import Corpus

    batch_size = check_options(runs, batch_size, n_words, n_sticks)
    train = np.asarray(Corpus.open(runs[0].store).train_docs(), np.int64)
    return estimator_class(runs[0].model)._run_ksd(
        runs, executor, train, batch_size, n_words=n_words, words=words, n_sticks=n_sticks)
