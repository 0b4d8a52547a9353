"""LDA's topics: where the K x W state lives and how it moves, behind one interface.

``TopicState`` is what ``model.LDAModel`` asks of its topics; the placement
(``placement.resolve_placement``) picks the implementation once:
``DriverTopics`` (one dense state on the driver, here) or
``topics_blocked.WorkerTopics`` (vocabulary blocks held by the workers). The
two are different chains of the same posterior (their noise streams differ).

On the driver, iteration ``m``: each part gets the phi columns of its words
(K x U, rescaled per word by the column maximum, which leaves the Gibbs
conditional unchanged and keeps beta = 1e-4 topics from underflowing) and
runs the Gibbs kernel on its worker; the returned integer counts are added
into a K x W matrix (exact in any order, so the result does not depend on the
number of workers or on which task finishes first), scaled by D / |S| /
n_kept, and the sampler steps with a_hat = beta + counts. The driver's own
work beside the step's K x W transition: the counts go into one reused buffer
cleared entry by entry (O(minibatch)), SCIR forms a_hat inside its transition
(``Sampler.step_scaled``), and the columns are cut from log theta and the K row
normalisers (log phi over all W words is formed only for a kept sample), in
the float operations of the plain computation, so the chain is unchanged bit
for bit. With ``warm_start``
the tasks start each document from its assignments at its last visit
(``dscir.models.lda.warm``; the engine stores them); with
``control_variates`` a_hat is ``control_variate``'s estimate from those
stored assignments instead.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

import numpy as np

from dscir.rng import domains
from dscir.errors import DscirError
from dscir.models.lda._kernels import add_entries
from dscir.models.lda.kernels import phi_columns_of_state
from dscir.models.lda.tasks import GibbsResult, SparseCounts, gibbs_sparse_counts
from dscir.models.lda.topics_blocked import WorkerTopics
from dscir.models.lda.warm import warm_gibbs_counts
from dscir.rng import derive


class TopicState(Protocol):
    """LDA's topics as the model sees them, wherever they live.

    Built as ``cls(config, n_words, sampler, kernel, executor)`` (the sampler
    and the Gibbs kernel resolved once, by the model). ``executor`` arguments run tasks (``dscir.models.base.Executor``); columns
    and Gibbs results are arrays on the driver or futures on the workers, as
    the state keeps them.
    """

    placement: ClassVar[str]  # "driver" or "workers"
    kept_rows: ClassVar[tuple[str, ...]]  # the run's samples/ arrays a kept sample adds to
    n_samples: int  # kept samples in the running mean

    def columns(self, words, near=None) -> list[Any]:
        """The phi columns of each ``words`` (sorted), rescaled per column."""

    def gibbs(self, executor, m: int, parts, words, local=None) -> list[Any]:
        """Iteration ``m``'s Gibbs tasks of ``parts`` on these topics' columns."""

    def step(self, executor, m: int, results: list[Any], words, scale: float,
             h: float) -> dict[str, Any]:
        """The sampler step of step size ``h`` from the tasks' counts x ``scale``
        (D / |S|); returns the iteration's statistics (``n_tokens``, ...)."""

    def finite(self) -> bool:
        """Whether the topics are still finite numbers."""

    def keep(self) -> dict[str, np.ndarray]:
        """Add the current phi to the running mean; the rows of ``kept_rows``."""

    def mean_log_columns(self, words) -> list[Any]:
        """The log columns of the kept samples' mean phi (held-out scoring)."""

    def log_phi(self) -> np.ndarray: ...

    def mean_phi(self) -> np.ndarray: ...

    def arrays(self) -> dict[str, np.ndarray]:
        """The checkpoint arrays the driver writes."""

    def held(self) -> Any | None:
        """The checkpoint arrays their holders write (``runs.checkpoint.HeldState``)."""

    def restore(self, arrays: dict[str, Any], n_samples: int) -> None: ...

    def run_arrays(self) -> dict[str, np.ndarray]: ...

    def write_run_arrays(self, root: str) -> dict[str, np.ndarray]: ...


def add_counts(counts: np.ndarray, results: list[GibbsResult]) -> np.ndarray:
    """Add tasks' K x U integer counts into the K x W total (exact in any order)."""
    for r in results:
        counts[:, r.words] += r.topic_word
    return counts


def add_sparse_counts(counts: np.ndarray, results: list[SparseCounts]) -> np.ndarray:
    """Add tasks' nonzero integer counts into the K x W total (exact in any order):
    O(nonzero entries), numba."""
    for r in results:
        _entries(counts, r.topics, r.word_ids, r.values)
    return counts


def _entries(counts: np.ndarray, rows, cols, values) -> None:
    """``_kernels.add_entries`` with one clear error for entries outside ``counts``."""
    bad = add_entries(counts, rows, cols, values)
    if bad:
        raise DscirError(f"{bad} Gibbs count entries lie outside the {counts.shape[0]} x "
                         f"{counts.shape[1]} topic-word matrix")


def clear_counts(counts: np.ndarray, results: list[Any]) -> None:
    """Zero the entries of ``counts`` that ``results`` (``GibbsResult`` or
    ``SparseCounts``) were added to: O(their size), not O(K x W)."""
    for r in results:
        if isinstance(r, SparseCounts):  # entries outside were never added
            add_entries(counts, r.topics, r.word_ids, None)
        else:
            counts[:, r.words] = 0


def control_variate(stored: np.ndarray, minibatch: np.ndarray, minibatch_stored: np.ndarray,
                    scale: float) -> np.ndarray:
    """Dubey et al.'s estimate of the full-data expected counts: ``stored`` (every
    training document's stored-assignment counts, summed) + ``scale`` (D/|S|) x
    (the minibatch's expected counts - its documents' stored counts). Over a
    uniformly drawn minibatch its mean is the full-data sum whatever is stored;
    its variance falls as the stored assignments approach the new ones."""
    return stored + scale * (minibatch - minibatch_stored)


class DriverTopics:
    """LDA's topics as one sampler state over K x W on the driver, with the
    running sum of the kept phi samples (and, with control variates, the
    stored assignments' counts)."""

    placement: ClassVar[str] = "driver"
    kept_rows: ClassVar[tuple[str, ...]] = ("samples/phi",)

    def __init__(self, config, n_words: int, sampler, kernel: str, executor=None):
        # ``executor`` is every TopicState's argument; these topics hold nothing on
        # the cluster, so they use the executor each call is given.
        self.config, self.sampler, self.kernel = config, sampler, kernel
        rng = np.random.Generator(np.random.PCG64(derive(config.seed, domains.INIT)))
        self.state_ = sampler.init(rng.gamma(1.0, 1.0, size=(config.n_topics, n_words)))
        self.phi_sum = np.zeros((config.n_topics, n_words))
        self.n_samples = 0
        self.stored = self._zeros() if config.control_variates else None
        self._log_phi, self._log_phi_of = None, None
        # The minibatch's counts, zero between steps (only the entries a step added
        # to are reset), and scratch space for the row normalisers.
        self._counts = self._zeros()
        self._scratch = np.empty(self.phi_sum.shape)
        self._rows, self._rows_of = None, None

    def _zeros(self) -> np.ndarray:
        return np.zeros(self.phi_sum.shape, np.int64)

    def _row_stats(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(log theta, its row maxima, log sum_w theta_kw per row) of the current
        state, computed once per state in ``simplex.normalize_log``'s float
        operations (so log phi = log theta - the last, bit for bit)."""
        if self._rows_of is not self.state_:
            log_theta = self.state_.log_theta
            top = log_theta.max(axis=1, keepdims=True)
            shifted = np.subtract(log_theta, top, out=self._scratch)
            total = np.exp(shifted, out=shifted).sum(axis=1, keepdims=True)
            self._rows = (log_theta, top, top + np.log(total))
            self._rows_of = self.state_
        return self._rows

    def log_phi(self) -> np.ndarray:
        """log phi of the current state over all W words (read-only; computed once
        per state: a kept sample, the mean's fallback). The next step's columns
        come from the row normalisers alone (``columns``)."""
        if self._log_phi_of is not self.state_:
            log_theta, _, log_norm = self._row_stats()
            self._log_phi = log_theta - log_norm
            self._log_phi.flags.writeable = False
            self._log_phi_of = self.state_
        return self._log_phi

    def mean_phi(self) -> np.ndarray:
        """Average of the kept phi samples (the current phi if none is kept yet)."""
        if self.n_samples == 0:
            return np.exp(self.log_phi())
        return self.phi_sum / self.n_samples

    def columns(self, words, near=None) -> list[np.ndarray]:
        log_theta, _, log_norm = self._row_stats()
        return [phi_columns_of_state(log_theta, log_norm, w) for w in words]

    def gibbs(self, executor, m: int, parts, words, local=None) -> list[Any]:
        """The parts' Gibbs results on the driver: sparse counts, or with warm
        starts dense counts from the documents' stored assignments (``local``)."""
        cfg = self.config
        key = derive(cfg.seed, domains.GIBBS)
        cols = self.columns(words)
        if cfg.warm_start:
            args = [(c, cfg.alpha, cfg.sweeps, cfg.burn, key, m, cfg.control_variates)
                    for c in cols]
            return executor.run("gibbs", warm_gibbs_counts, parts, args, local=local)
        args = [(c, cfg.alpha, cfg.sweeps, key, m, self.kernel) for c in cols]
        return executor.run("gibbs", gibbs_sparse_counts, parts, args)

    def step(self, executor, m: int, results: list[Any], words, scale: float,
             h: float) -> dict[str, Any]:
        cfg = self.config
        # Integer sums: exact whatever order the tasks finished or are added in.
        add = add_counts if cfg.warm_start else add_sparse_counts
        stats = {"n_tokens": int(sum(r.n_tokens for r in results))}
        key = derive(cfg.seed, domains.SAMPLER, m)
        try:
            counts = add(self._counts, results)
            if cfg.control_variates:
                a_hat, stats["cv_clipped"] = self._control_variate(counts, results, scale)
                self.state_ = self.sampler.step(self.state_, cfg.beta, a_hat, h, key)
            else:  # a_hat = beta + counts x (scale / n_kept), formed inside the step
                self.state_ = self.sampler.step_scaled(self.state_, cfg.beta, counts,
                                                       scale / results[0].n_kept, h, key)
        finally:
            clear_counts(self._counts, results)
        return stats

    def _control_variate(self, counts, results, scale) -> tuple[np.ndarray, float]:
        """a_hat - beta by ``control_variate``, then ``stored`` takes the
        minibatch's new assignments; negative entries are clipped to 0 (the
        samplers need a_hat >= beta) and the clipped share is returned."""
        before = add_counts(self._zeros(), [r._replace(topic_word=r.stored_before)
                                            for r in results])
        after = add_counts(self._zeros(), [r._replace(topic_word=r.stored_after)
                                           for r in results])
        estimate = control_variate(self.stored, counts / results[0].n_kept, before, scale)
        self.stored += after - before
        clipped = estimate < 0
        return np.where(clipped, 0.0, estimate), float(clipped.mean())

    def finite(self) -> bool:
        """From log max_w theta_kw per row: O(K W) compares and only K logs for a
        linear-scale state (its ``log_theta`` would take K W)."""
        if self.sampler.log_scale:
            row_max = self._row_stats()[1]
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                row_max = np.log(self.state_.theta.max(axis=1))
        return bool(np.isfinite(row_max).all())

    def keep(self) -> dict[str, np.ndarray]:
        phi = np.exp(self.log_phi())
        self.phi_sum += phi
        self.n_samples += 1
        return {"samples/phi": phi.astype(np.float32)[None]}

    def mean_log_columns(self, words) -> list[np.ndarray]:
        with np.errstate(divide="ignore"):
            lphi = np.log(self.mean_phi())
        return [np.ascontiguousarray(lphi[:, w]) for w in words]

    def arrays(self) -> dict[str, np.ndarray]:
        arrays = {f"sampler/{k}": v for k, v in self.sampler.arrays(self.state_).items()}
        arrays["phi_sum"] = self.phi_sum
        if self.stored is not None:
            arrays["stored_counts"] = self.stored
        return arrays

    def held(self) -> None:
        return None

    def restore(self, arrays: dict[str, Any], n_samples: int) -> None:
        fields = {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith("sampler/")}
        self.state_ = self.sampler.from_arrays(fields, self.phi_sum.shape)
        self.phi_sum = np.array(arrays["phi_sum"], dtype=np.float64)
        self.n_samples = int(n_samples)
        if self.stored is not None:
            self.stored = np.array(arrays["stored_counts"], dtype=np.int64)

    def run_arrays(self) -> dict[str, np.ndarray]:
        out = {f"state/{k}": v for k, v in self.sampler.arrays(self.state_).items()}
        out["phi_mean"] = self.mean_phi()
        return out

    def write_run_arrays(self, root: str) -> dict[str, np.ndarray]:
        """The run's arrays, for the driver to write."""
        return self.run_arrays()


#: The ``TopicState`` class of each resolved placement.
TOPIC_STATES: dict[str, type] = {"driver": DriverTopics, "workers": WorkerTopics}
