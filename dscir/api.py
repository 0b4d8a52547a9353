"""Estimators in the scikit-learn style.

Hyperparameters are stored unchanged by ``__init__`` and validated at ``fit``;
learned attributes end in an underscore. ``None`` for a sampler-specific
hyperparameter means the reference setting of the papers for that sampler
(``LDA_DEFAULTS``).
"""

from __future__ import annotations

import html
import numbers
from pathlib import Path
from typing import Any

import numpy as np

from dscir.errors import DscirError

# Reference settings (Baker et al. 2018; Patterson & Teh 2013; Ma et al. 2015).
# SGLD and SGHMC are baselines without published LDA settings: their values
# are ours, chosen to be stable, not tuned.
LDA_DEFAULTS: dict[str, dict[str, Any]] = {
    "scir": {"alpha": 0.1, "beta": 0.5, "step_size": 0.5, "tau": 10.0, "kappa": 0.33},
    "sgrld": {"alpha": 0.01, "beta": 1e-4, "step_size": 0.01, "tau": 1000.0, "kappa": 0.6},
    "gsgrhmc": {"alpha": 0.01, "beta": 1e-4, "step_size": 0.02, "tau": None, "kappa": 0.0},
    "sgld": {"alpha": 0.1, "beta": 0.5, "step_size": 1e-4, "tau": None, "kappa": 0.0},
    "sghmc": {"alpha": 0.1, "beta": 0.5, "step_size": 1e-4, "tau": None, "kappa": 0.0},
}


def _check(name: str, value: Any, *, kind: type | tuple, low=None, high=None,
           low_open: bool = False, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, kind):
        raise DscirError(f"{name} must be {_kind_name(kind)}, got {value!r}")
    if low is not None and (value < low or (low_open and value == low)):
        bound = f"> {low}" if low_open else f">= {low}"
        raise DscirError(f"{name} must be {bound}, got {value!r}")
    if high is not None and value > high:
        raise DscirError(f"{name} must be <= {high}, got {value!r}")


def _kind_name(kind: type | tuple) -> str:
    return "an integer" if kind is numbers.Integral else "a number"


class LDA:
    """Latent Dirichlet allocation fitted by stochastic-gradient MCMC on Dask.

    Parameters
    ----------
    n_topics : number of topics K.
    sampler : "scir" (default), "sgrld", "gsgrhmc", "sgld" or "sghmc".
    alpha : document-topic Dirichlet concentration (None: the sampler's reference value).
    beta : topic-word Dirichlet concentration (None: the sampler's reference value).
    batch_size : documents per minibatch.
    step_size : h (SCIR) or epsilon; with ``tau`` set, h_m = h (1 + m/tau)^-kappa.
    tau, kappa : the step-size schedule; ``tau=None`` keeps the step constant.
    sweeps : Gibbs sweeps per minibatch document (the first half is burn-in).
    n_iter : iterations of ``fit``.
    burn_in, thin : posterior samples of phi are kept every ``thin`` iterations
        after ``burn_in`` (None: half of ``n_iter``); ``topic_word_`` is their mean.
    eval_every : score the held-out documents every this many iterations (0: never).
    eval_sweeps : Gibbs sweeps for document completion when scoring.
    seed : the whole chain is a function of the seed (and the corpus).
    progress : show a progress bar.
    """

    def __init__(
        self,
        n_topics: int = 100,
        sampler: str = "scir",
        *,
        alpha: float | None = None,
        beta: float | None = None,
        batch_size: int = 50,
        step_size: float | None = None,
        tau: float | None | str = "default",
        kappa: float | None = None,
        sweeps: int = 200,
        n_iter: int = 1000,
        burn_in: int | None = None,
        thin: int = 10,
        eval_every: int = 0,
        eval_sweeps: int = 100,
        seed: int = 0,
        progress: bool = True,
    ):
        self.n_topics = n_topics
        self.sampler = sampler
        self.alpha = alpha
        self.beta = beta
        self.batch_size = batch_size
        self.step_size = step_size
        self.tau = tau
        self.kappa = kappa
        self.sweeps = sweeps
        self.n_iter = n_iter
        self.burn_in = burn_in
        self.thin = thin
        self.eval_every = eval_every
        self.eval_sweeps = eval_sweeps
        self.seed = seed
        self.progress = progress

    # -- configuration -------------------------------------------------------

    def get_params(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in (
            "n_topics", "sampler", "alpha", "beta", "batch_size", "step_size", "tau",
            "kappa", "sweeps", "n_iter", "burn_in", "thin", "eval_every", "eval_sweeps",
            "seed", "progress")}

    def _config(self):
        from dscir.distributed.lda import LDAConfig

        if self.sampler not in LDA_DEFAULTS:
            raise DscirError(
                f"sampler must be one of {', '.join(LDA_DEFAULTS)}, got {self.sampler!r}"
            )
        ref = LDA_DEFAULTS[self.sampler]
        pick = lambda name: ref[name] if getattr(self, name) is None else getattr(self, name)  # noqa: E731
        alpha, beta, step, kappa = pick("alpha"), pick("beta"), pick("step_size"), pick("kappa")
        tau = ref["tau"] if self.tau == "default" else self.tau
        _check("n_topics", self.n_topics, kind=numbers.Integral, low=2)
        _check("alpha", alpha, kind=numbers.Real, low=0, low_open=True)
        _check("beta", beta, kind=numbers.Real, low=0, low_open=True)
        _check("batch_size", self.batch_size, kind=numbers.Integral, low=1)
        _check("step_size", step, kind=numbers.Real, low=0, low_open=True)
        _check("tau", tau, kind=numbers.Real, low=0, low_open=True, allow_none=True)
        _check("kappa", kappa, kind=numbers.Real, low=0, high=1)
        _check("sweeps", self.sweeps, kind=numbers.Integral, low=2)
        _check("n_iter", self.n_iter, kind=numbers.Integral, low=0)
        _check("burn_in", self.burn_in, kind=numbers.Integral, low=0, allow_none=True)
        _check("thin", self.thin, kind=numbers.Integral, low=1)
        _check("eval_every", self.eval_every, kind=numbers.Integral, low=0)
        _check("eval_sweeps", self.eval_sweeps, kind=numbers.Integral, low=2)
        _check("seed", self.seed, kind=numbers.Integral, low=0)
        burn_in = self.n_iter // 2 if self.burn_in is None else self.burn_in
        return LDAConfig(
            n_topics=int(self.n_topics), sampler=self.sampler, alpha=float(alpha),
            beta=float(beta), batch_size=int(self.batch_size), step_size=float(step),
            tau=None if tau is None else float(tau), kappa=float(kappa),
            sweeps=int(self.sweeps), seed=int(self.seed), burn_in=int(burn_in),
            thin=int(self.thin), eval_sweeps=int(self.eval_sweeps),
        )

    # -- fitting -------------------------------------------------------------

    def fit(
        self,
        corpus,
        client=None,
        *,
        address: str | None = None,
        scheduler_file: str | None = None,
        n_workers: int | None = None,
        security=None,
        out: str | Path | None = None,
        overwrite: bool = False,
        checkpoint_every: int = 0,
        resume: str | Path | None = None,
    ) -> LDA:
        """Run ``n_iter`` iterations from a fresh chain on a corpus store.

        ``corpus`` is a store path/URL or an open ``dscir.corpus.Corpus``. The
        cluster is ``client``, or the scheduler at ``address`` /
        ``scheduler_file``, or else an embedded LocalCluster of ``n_workers``
        processes; ``security`` (a ``distributed.Security`` or ``{"ca_file",
        "cert", "key"}``) connects with mutual TLS. With ``out``, the run
        (configuration, thinned samples, final state, history) is written
        there as a Zarr run store.

        With ``checkpoint_every`` = N (and ``out``) the whole chain is
        checkpointed into the run every N iterations. ``resume=RUN`` continues
        such a run from its latest checkpoint up to ``n_iter`` iterations in
        all and writes it back to RUN; the hyperparameters and corpus must be
        the run's, and the chain is then bit for bit the uninterrupted one.
        """
        from dscir.distributed.cluster import dask_client
        from dscir.distributed.lda import LDADriver
        from dscir.distributed.runstore import RunWriter, checkpoint_to_resume

        config = self._config()
        _check("checkpoint_every", checkpoint_every, kind=numbers.Integral, low=0)
        if resume is not None and out is not None and Path(out) != Path(resume):
            raise DscirError(f"a resumed run is written back to {resume}, not to out={out}")
        if checkpoint_every and out is None and resume is None:
            raise DscirError("checkpoint_every needs out, the run store to checkpoint into")
        store = _store_path(corpus)
        with dask_client(client, address=address, scheduler_file=scheduler_file,
                         n_workers=n_workers, security=security) as c:
            self._driver = LDADriver(c, store, config)
            n_iter, writer = self.n_iter, None
            if resume is not None:
                ckpt = checkpoint_to_resume(resume, "lda", config, store)
                self._driver.restore(ckpt)
                if ckpt.iteration > self.n_iter:
                    raise DscirError(
                        f"{resume} is at iteration {ckpt.iteration}, past n_iter={self.n_iter}"
                    )
                n_iter -= ckpt.iteration
                writer = RunWriter.resume(resume, ckpt,
                                          checkpoint_every=checkpoint_every or None)
            elif out is not None:
                writer = RunWriter(out, overwrite=overwrite, checkpoint_every=checkpoint_every)
            self._advance(n_iter, writer)
            if client is None:
                self._driver.client = None
        return self

    def partial_fit(self, corpus=None, client=None, *, n_iter: int = 1, **cluster) -> LDA:
        """Continue the chain by ``n_iter`` iterations (start one if there is none)."""
        from dscir.distributed.cluster import dask_client
        from dscir.distributed.lda import LDADriver

        driver = getattr(self, "_driver", None)
        if driver is None:
            if corpus is None:
                raise DscirError("partial_fit needs a corpus for the first call")
            config = self._config()
            with dask_client(client, **cluster) as c:
                self._driver = LDADriver(c, _store_path(corpus), config)
                self._advance(n_iter)
                if client is None:
                    self._driver.client = None
            return self
        if corpus is not None and _store_path(corpus) != driver.store:
            raise DscirError("partial_fit continues the chain on the corpus it started with")
        with dask_client(client, **cluster) as c:
            driver.client = c
            self._advance(n_iter)
            if client is None:
                driver.client = None
        return self

    def _advance(self, n_iter: int, writer=None) -> None:
        from dscir.corpus import Corpus
        from dscir.distributed.lda import run_chain

        d = self._driver
        every = writer.checkpoint_every if writer is not None else 0

        def checkpoint(driver) -> None:
            writer.checkpoint(driver.checkpoint())

        try:
            run_chain(
                d, n_iter, eval_every=self.eval_every,
                on_sample=writer.add_sample if writer else None,
                checkpoint=checkpoint if every else None,
                checkpoint_every=every, progress=self.progress,
            )
            self.evaluations_ = list(d.evaluations)
            self._collect(Corpus.open(d.store).vocabulary)
            if writer is not None:
                ckpt = d.checkpoint()
                if every:
                    writer.checkpoint(ckpt)  # so a finished run can be extended
                arrays = {"vocabulary": np.array([str(v) for v in self.vocabulary_]),
                          "phi_mean": self.topic_word_}
                arrays.update({f"state/{k}": v for k, v in ckpt.state.items()})
                arrays.update({f"history/{k}": v for k, v in self.history_.items()})
                arrays.update({f"evaluations/{k}": v for k, v in ckpt.evaluations.items()})
                self.run_path_ = writer.commit(
                    model="lda", config=d.config.to_dict(), store=d.store,
                    iteration=d.iteration, n_samples=d.n_samples, arrays=arrays)
        except BaseException:
            if writer is not None:
                writer.abort()
            raise

    def _collect(self, vocabulary: np.ndarray) -> None:
        d = self._driver
        self.topic_word_ = d.mean_phi()
        self.vocabulary_ = np.asarray(vocabulary)
        self.n_iter_ = d.iteration
        self.n_samples_ = d.n_samples
        self.history_ = {
            f: np.array([getattr(s, f) for s in d.history]) for f in d.history[0]._fields
        } if d.history else {}

    # -- using the fit -------------------------------------------------------

    def _fitted(self) -> None:
        if not hasattr(self, "topic_word_"):
            raise DscirError("this LDA is not fitted yet; call fit() first")

    def top_words(self, n: int = 10) -> list[list[str]]:
        """The ``n`` most probable words of each topic."""
        self._fitted()
        order = np.argsort(-self.topic_word_, axis=1)[:, :n]
        return [[str(self.vocabulary_[w]) for w in row] for row in order]

    def top_words_table(self, n: int = 10):
        """The ``n`` most probable words of each topic with their probabilities, as a
        ``dscir.display.TopicTable`` (an HTML table in Jupyter; ``.to_pandas()``)."""
        from dscir.display import TopicTable

        self._fitted()
        return TopicTable.from_matrix(self.topic_word_, self.vocabulary_, n)

    def plot(self, ax=None):
        """Traces of the fit (matplotlib): held-out perplexity, documents/s and
        tokens/s, and the time per iteration split into Gibbs, waiting and update.
        ``ax``: three axes to draw on (default: a new figure). Returns the figure."""
        from dscir.display import plot_lda

        self._fitted()
        if not self.history_:
            raise DscirError("this LDA ran no iteration; there is nothing to plot")
        return plot_lda(self.history_, self.evaluations_, repr(self), ax)

    def transform(self, docs, *, sweeps: int | None = None, seed: int | None = None) -> np.ndarray:
        """Topic proportions (n_docs x K) of new documents under the fitted topics.

        ``docs`` is a scipy.sparse document-term matrix over this model's
        vocabulary, or a ``CSRBatch``. Runs in this process (no cluster).
        """
        from dscir.models.lda import gibbs_expectations
        from dscir.rng import derive

        self._fitted()
        indptr, indices, data = _csr_arrays(docs, self.topic_word_.shape[1])
        n = indptr.size - 1
        words = np.unique(indices)
        cols = self.topic_word_[:, words]
        cols = cols / cols.max(axis=0, keepdims=True)
        local = np.searchsorted(words, indices).astype(np.int32)
        cfg = self._driver.config
        _, doc_topic, n_kept = gibbs_expectations(
            indptr, indices, data, np.arange(n, dtype=np.int64), np.ascontiguousarray(cols),
            local, cfg.alpha, sweeps or cfg.eval_sweeps,
            derive(cfg.seed if seed is None else seed, 5), 0,
        )
        theta = doc_topic / n_kept + cfg.alpha
        return theta / theta.sum(axis=1, keepdims=True)

    def perplexity(self, corpus=None, client=None, **cluster) -> float:
        """Document-completion perplexity of the held-out documents of a store.

        Every 10th token of each held-out document is a test token; topic
        weights are estimated by Gibbs sampling on the other tokens with phi =
        ``topic_word_`` fixed; the result is exp(-mean natural-log probability
        of the test tokens) over all test tokens of all held-out documents.
        """
        from dscir.corpus import Corpus
        from dscir.distributed.cluster import dask_client
        from dscir.distributed.lda import evaluate_perplexity

        self._fitted()
        cfg = self._driver.config
        store = self._driver.store if corpus is None else _store_path(corpus)
        docs = np.asarray(Corpus.open(store).heldout_docs(), dtype=np.int64)
        with dask_client(client, **cluster) as c:
            return evaluate_perplexity(
                c, store, docs, self.topic_word_, cfg.alpha, cfg.eval_sweeps, cfg.seed,
                cfg.completion_every, max(2 * sum(c.nthreads().values()), 1),
            )

    # -- display -------------------------------------------------------------

    def __repr__(self) -> str:
        params = self.get_params()
        shown = ", ".join(f"{k}={v!r}" for k, v in params.items()
                          if v is not None and k in ("n_topics", "sampler", "alpha", "beta",
                                                     "batch_size", "step_size", "seed"))
        state = f" fitted: {self.n_iter_} iterations" if hasattr(self, "n_iter_") else ""
        return f"LDA({shown}){state}"

    def _repr_html_(self) -> str:
        head = f"<p><code>{html.escape(repr(self))}</code></p>"
        if not hasattr(self, "topic_word_"):
            return head
        from dscir.display import TopicTable

        table = TopicTable.from_matrix(self.topic_word_, self.vocabulary_, 8,
                                       order=range(min(20, self.topic_word_.shape[0])))
        return head + table._repr_html_()


def _store_path(corpus) -> str:
    from dscir.corpus import Corpus

    if isinstance(corpus, Corpus):
        return str(corpus.path)
    if isinstance(corpus, (str, Path)):
        return str(corpus)
    raise DscirError(
        f"corpus must be a store path or a dscir.corpus.Corpus, got {type(corpus).__name__}"
    )


def _csr_arrays(docs, n_words: int):
    from dscir.corpus import CSRBatch

    if isinstance(docs, CSRBatch):
        indptr, indices, data = docs.indptr, docs.indices, docs.data
    else:
        import scipy.sparse as sp

        if not sp.issparse(docs):
            raise DscirError("docs must be a scipy.sparse document-term matrix or a CSRBatch")
        m = sp.csr_matrix(docs)
        if m.shape[1] != n_words:
            raise DscirError(
                f"docs have {m.shape[1]} vocabulary columns, the model has {n_words}"
            )
        m.sum_duplicates()
        indptr, indices, data = m.indptr, m.indices, m.data
    return (np.asarray(indptr, np.int64), np.asarray(indices, np.int32),
            np.asarray(data, np.int32))


# Reference settings of the DP mixture on msweb (Baker et al. 2018, Section 5.2):
# step sizes are (h_theta, h_DP) for the components and the sticks.
DPMM_DEFAULTS: dict[str, dict[str, Any]] = {
    "scir": {"a0": 0.5, "step_sizes": (0.1, 0.1), "n_init": 20},
    "sgrld": {"a0": 0.001, "step_sizes": (0.001, 0.005), "n_init": 30},
    "gibbs": {"a0": 0.5, "step_sizes": None, "n_init": 20},
}


class DPMixture:
    """Dirichlet-process mixture of multinomials by the (stochastic) slice sampler.

    x_i | z_i ~ Multinomial(n_i, phi_{z_i}), phi ~ DP(Dirichlet(a0), alpha),
    alpha ~ Gamma(alpha_prior[0], rate=alpha_prior[1]). See
    ``dscir.models.dpmm`` and ``dscir.distributed.dpmm``.

    Parameters
    ----------
    sampler : "scir" (default) or "sgrld": the stochastic slice sampler on a
        Dask cluster with SCIR or SGRLD steps; "gibbs": the exact Gibbs slice
        sampler on all training users in this process (no cluster).
    a0 : Dirichlet concentration of the components (None: the sampler's reference value).
    alpha_prior : (shape, rate) of the Gamma prior on the DP concentration.
    batch_size : users per minibatch (stochastic samplers).
    step_sizes : (h_theta, h_DP) for components and sticks (None: reference values).
    n_init : components at the start (None: reference value).
    n_iter : iterations of ``fit``.
    burn_in, thin : samples are kept every ``thin`` iterations after ``burn_in``
        (None: half of ``n_iter``); ``score`` averages the held-out predictive over them
        (they are held in memory, K x W floats each, to score other stores).
    eval_every : score the held-out users every this many iterations (0: never).
    seed : the whole chain is a function of the seed (and the corpus).
    progress : show a progress bar.
    """

    def __init__(
        self,
        sampler: str = "scir",
        *,
        a0: float | None = None,
        alpha_prior: tuple[float, float] = (1.0, 1.0),
        batch_size: int = 1000,
        step_sizes: tuple[float, float] | None = None,
        n_init: int | None = None,
        n_iter: int = 1000,
        burn_in: int | None = None,
        thin: int = 10,
        eval_every: int = 0,
        seed: int = 0,
        progress: bool = True,
    ):
        self.sampler = sampler
        self.a0 = a0
        self.alpha_prior = alpha_prior
        self.batch_size = batch_size
        self.step_sizes = step_sizes
        self.n_init = n_init
        self.n_iter = n_iter
        self.burn_in = burn_in
        self.thin = thin
        self.eval_every = eval_every
        self.seed = seed
        self.progress = progress

    def get_params(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in (
            "sampler", "a0", "alpha_prior", "batch_size", "step_sizes", "n_init", "n_iter",
            "burn_in", "thin", "eval_every", "seed", "progress")}

    def _config(self):
        from dscir.distributed.dpmm import DPMMConfig

        if self.sampler not in DPMM_DEFAULTS:
            raise DscirError(
                f"sampler must be one of {', '.join(DPMM_DEFAULTS)}, got {self.sampler!r}")
        ref = DPMM_DEFAULTS[self.sampler]
        a0 = ref["a0"] if self.a0 is None else self.a0
        n_init = ref["n_init"] if self.n_init is None else self.n_init
        steps = ref["step_sizes"] if self.step_sizes is None else self.step_sizes
        _check("a0", a0, kind=numbers.Real, low=0, low_open=True)
        try:
            shape, rate = self.alpha_prior
        except (TypeError, ValueError):
            raise DscirError(
                f"alpha_prior must be a (shape, rate) pair, got {self.alpha_prior!r}") from None
        _check("alpha_prior shape", shape, kind=numbers.Real, low=0, low_open=True)
        _check("alpha_prior rate", rate, kind=numbers.Real, low=0, low_open=True)
        if steps is None:
            steps = (1.0, 1.0)  # unused by the exact sampler
        try:
            h_theta, h_dp = steps
        except (TypeError, ValueError):
            raise DscirError(
                f"step_sizes must be a pair (h_theta, h_DP), got {self.step_sizes!r}") from None
        _check("step_sizes[0] (h_theta)", h_theta, kind=numbers.Real, low=0, low_open=True)
        _check("step_sizes[1] (h_DP)", h_dp, kind=numbers.Real, low=0, low_open=True)
        _check("batch_size", self.batch_size, kind=numbers.Integral, low=1)
        _check("n_init", n_init, kind=numbers.Integral, low=1)
        _check("n_iter", self.n_iter, kind=numbers.Integral, low=0)
        _check("burn_in", self.burn_in, kind=numbers.Integral, low=0, allow_none=True)
        _check("thin", self.thin, kind=numbers.Integral, low=1)
        _check("eval_every", self.eval_every, kind=numbers.Integral, low=0)
        _check("seed", self.seed, kind=numbers.Integral, low=0)
        for name, value in (("a0", a0), ("alpha_prior", shape), ("alpha_prior", rate),
                            ("step_sizes", h_theta), ("step_sizes", h_dp)):
            if not np.isfinite(value):
                raise DscirError(f"{name} must be finite, got {value!r}")
        burn_in = self.n_iter // 2 if self.burn_in is None else self.burn_in
        return DPMMConfig(
            sampler=self.sampler, a0=float(a0), alpha_shape=float(shape),
            alpha_rate=float(rate), batch_size=int(self.batch_size),
            step_theta=float(h_theta), step_sticks=float(h_dp), n_init=int(n_init),
            seed=int(self.seed), burn_in=int(burn_in), thin=int(self.thin))

    def fit(self, corpus, client=None, *, address: str | None = None,
            scheduler_file: str | None = None, n_workers: int | None = None,
            security=None, out: str | Path | None = None, overwrite: bool = False,
            checkpoint_every: int = 0, resume: str | Path | None = None) -> DPMixture:
        """Run ``n_iter`` iterations from a fresh chain on a corpus store (users x areas).

        ``corpus`` is a store path or an open ``dscir.corpus.Corpus``. The
        stochastic samplers run on ``client``, the scheduler at ``address`` /
        ``scheduler_file``, or else an embedded LocalCluster of ``n_workers``
        processes (``security``: TLS, as in ``LDA.fit``); ``sampler="gibbs"``
        runs in this process.

        ``out``, ``checkpoint_every`` and ``resume`` work as for ``LDA.fit``: the
        run (kept samples, final state, history, scores) is written to ``out``;
        with ``checkpoint_every`` = N the whole chain is checkpointed there
        every N iterations, and ``resume=RUN`` continues it up to ``n_iter``
        iterations in all, bit for bit the uninterrupted chain.
        """
        from dscir.distributed.cluster import dask_client

        config = self._config()
        _check("checkpoint_every", checkpoint_every, kind=numbers.Integral, low=0)
        if resume is not None and out is not None and Path(out) != Path(resume):
            raise DscirError(f"a resumed run is written back to {resume}, not to out={out}")
        if checkpoint_every and out is None and resume is None:
            raise DscirError("checkpoint_every needs out, the run store to checkpoint into")
        store = _store_path(corpus)
        if config.sampler == "gibbs":
            self._run(None, store, config, out, overwrite, checkpoint_every, resume)
        else:
            with dask_client(client, address=address, scheduler_file=scheduler_file,
                             n_workers=n_workers, security=security) as c:
                self._run(c, store, config, out, overwrite, checkpoint_every, resume)
                if client is None:
                    self._driver.client = None
        return self

    def _run(self, client, store, config, out, overwrite, checkpoint_every, resume) -> None:
        from dscir.corpus import Corpus
        from dscir.distributed.dpmm import (DPMMDriver, GibbsDriver, run_chain, sample_arrays,
                                            samples_from_arrays)
        from dscir.distributed.runstore import RunWriter, checkpoint_to_resume, read_arrays

        d = self._driver = (GibbsDriver(store, config) if client is None
                            else DPMMDriver(client, store, config))
        n_iter, writer = self.n_iter, None
        if resume is not None:
            ckpt = checkpoint_to_resume(resume, "dpmm", config, store)
            if ckpt.iteration > self.n_iter:
                raise DscirError(
                    f"{resume} is at iteration {ckpt.iteration}, past n_iter={self.n_iter}")
            writer = RunWriter.resume(resume, ckpt, model="dpmm",
                                      checkpoint_every=checkpoint_every or None)
            d.restore(ckpt, samples_from_arrays(read_arrays(resume, "samples")))
            n_iter -= ckpt.iteration
        elif out is not None:
            writer = RunWriter(out, overwrite=overwrite, model="dpmm",
                               checkpoint_every=checkpoint_every)
        every = writer.checkpoint_every if writer is not None else 0
        try:
            run_chain(d, n_iter, eval_every=self.eval_every, progress=self.progress,
                      on_sample=(lambda m, s: writer.append(sample_arrays(m, s)))
                      if writer else None,
                      checkpoint=(lambda drv: writer.checkpoint(drv.checkpoint()))
                      if every else None,
                      checkpoint_every=every)
            self._collect()
            if writer is not None:
                ckpt = d.checkpoint()
                if every:
                    writer.checkpoint(ckpt)  # so a finished run can be extended
                arrays = {"vocabulary": np.array([str(v) for v in
                                                  Corpus.open(store).vocabulary]),
                          "weights": self.weights_, "components": self.components_,
                          "labels": self.labels_}
                arrays.update({f"state/{k}": v for k, v in ckpt.state.items()})
                arrays.update({f"history/{k}": v for k, v in ckpt.history.items()})
                arrays.update({f"evaluations/{k}": v for k, v in ckpt.evaluations.items()})
                self.run_path_ = writer.commit(
                    model="dpmm", config=config.to_dict(), store=ckpt.store,
                    iteration=d.iteration, n_samples=d.n_samples, arrays=arrays)
        except BaseException:
            if writer is not None:
                writer.abort()
            raise

    def _collect(self) -> None:
        d = self._driver
        self.evaluations_ = list(d.evaluations)
        sample = d.sample()
        self.weights_ = np.exp(sample.log_w)
        self.components_ = np.exp(sample.log_phi)
        self.alpha_ = d.alpha
        self.labels_ = d.z
        self.n_clusters_ = d.n_clusters
        self.n_components_ = d.n_components
        self.n_iter_ = d.iteration
        self.n_samples_ = len(d.samples)
        self.history_ = {
            f: np.array([getattr(s, f) for s in d.history]) for f in d.history[0]._fields
        } if d.history else {}

    def _fitted(self) -> None:
        if not hasattr(self, "n_clusters_"):
            raise DscirError("this DPMixture is not fitted yet; call fit() first")

    def predict(self, users) -> np.ndarray:
        """Cluster of each user (rows of a scipy.sparse users x areas matrix or a
        ``CSRBatch``): argmax_j w_j Mult(x | phi_j) under the final sample."""
        self._fitted()
        sample = self._driver.sample()
        indptr, indices, data = _csr_arrays(users, sample.log_phi.shape[1])
        rows = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
        loglik = np.zeros((indptr.size - 1, sample.log_w.size))
        np.add.at(loglik, rows, data[:, None] * sample.log_phi[:, indices].T)
        return np.argmax(loglik + sample.log_w, axis=1)

    def score(self, corpus=None, client=None, **cluster) -> float:
        """Average log predictive probability of held-out users (natural log).

        For each held-out user x (the store's held-out flag, e.g. every 6th
        user), log p(x) = log (1/S) sum_s [sum_k w_k^s Mult(x | phi_k^s) +
        w_rest^s DirMult(x | a0)] over the S kept posterior samples (the final
        state if none is kept), multinomial coefficient included; the mean
        over held-out users. ``corpus``: another store with the same areas.
        """
        from dscir.corpus import Corpus
        from dscir.models.dpmm import PredictiveAverage, log_predictive

        self._fitted()
        d = self._driver
        if corpus is None or _store_path(corpus) == d.store:
            if d.average.n_samples:
                return d.average.mean()
            corpus = d.store
        c = Corpus.open(_store_path(corpus))
        if c.n_words != d.n_words:
            raise DscirError(f"{c.path} has {c.n_words} areas, the model {d.n_words}")
        users = c.heldout_docs()
        if users.size == 0:
            raise DscirError(f"{c.path} has no held-out users to score")
        batch = c.read(users)
        average = PredictiveAverage()
        for s in d.samples or [d.sample()]:
            average.add(log_predictive(batch.indptr, batch.indices, batch.data, s.log_w,
                                       s.log_phi, s.log_rest, d.config.a0, d.n_words))
        return average.mean()

    def top_words_table(self, n: int = 10, vocabulary=None):
        """The ``n`` most probable areas (words) of each occupied cluster, largest
        cluster first, as a ``dscir.display.TopicTable``; ``vocabulary`` defaults to
        the corpus store's."""
        from dscir.corpus import Corpus
        from dscir.display import TopicTable

        self._fitted()
        if vocabulary is None:
            vocabulary = Corpus.open(self._driver.store).vocabulary
        sizes = np.bincount(self.labels_[self.labels_ >= 0], minlength=self.weights_.size)
        order = [int(j) for j in np.argsort(-sizes, kind="stable") if sizes[j] > 0]
        return TopicTable.from_matrix(self.components_, vocabulary, n, order=order,
                                      label="cluster")

    def plot(self, ax=None):
        """Traces of the fit (matplotlib): held-out log predictive, occupied and
        represented clusters, and alpha. Returns the figure."""
        from dscir.display import plot_dpmm

        self._fitted()
        if not self.history_:
            raise DscirError("this DPMixture ran no iteration; there is nothing to plot")
        return plot_dpmm(self.history_, self.evaluations_, repr(self), ax)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items()
                          if v is not None and k in ("sampler", "a0", "alpha_prior",
                                                     "batch_size", "step_sizes", "seed"))
        state = (f" fitted: {self.n_iter_} iterations, {self.n_clusters_} clusters"
                 if hasattr(self, "n_iter_") else "")
        return f"DPMixture({shown}){state}"
