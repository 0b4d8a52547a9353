"""``dscir.LDA``: latent Dirichlet allocation by stochastic-gradient MCMC on Dask."""

from __future__ import annotations

import dataclasses
import html
import numbers
from pathlib import Path

import numpy as np

from dscir.api.base import Estimator
from dscir.api.params import Interval, Mapping, Options
from dscir.api.session import executor_for
from dscir.corpus.temporary import csr_arrays, store_path
from dscir.errors import DscirError
from dscir.models.lda import REFERENCE, LDAConfig, LDAModel
from dscir.models.lda.config import BLOCK_ENTRIES
from dscir.models.lda.kernels import KERNELS
from dscir.models.lda.policy import (POLICIES, CorpusSize, choose, choose_batch, choose_sweeps,
                                     needs_corpus)
from dscir.models.lda.placement import PLACEMENTS, resolve_placement

LDA_DEFAULTS = REFERENCE  # the reference settings per sampler, by their documented name


def corpus_size(store: str) -> CorpusSize:
    """The default policy's view of a store: training documents, words and the
    training tokens (the store's tokens times the training documents' share)."""
    from dscir.corpus import Corpus

    c = Corpus.open(store)
    train = int(c.train_docs().size)
    return CorpusSize(train, int(c.n_words), round(int(c.meta["n_tokens"]) * train / c.n_docs))


class LDA(Estimator):
    """Latent Dirichlet allocation fitted by stochastic-gradient MCMC on Dask.

    Parameters
    ----------
    n_topics : number of topics K.
    sampler : "scir" (default), "sgrld", "gsgrhmc", "sgld" or "sghmc".
    alpha : document-topic Dirichlet concentration (None: the policy's value).
    beta : topic-word Dirichlet concentration (None: the policy's value).
    batch_size : documents per minibatch (None: the policy's; "default": one pass
        over the training documents in 10 iterations, 50 to 1,000 documents).
    step_size : h (SCIR) or epsilon; with ``tau`` set, h_m = h (1 + m/tau)^-kappa.
    tau, kappa : the step-size schedule; ``tau=None`` keeps the step constant
        (``"default"`` / None: the policy's).
    policy : who chooses alpha, beta, the minibatch, the step schedule and the
        sweeps where they are not set:
        "default" (from the corpus's size, K and the minibatch;
        ``dscir.models.lda.policy``) or "reference" (the papers' settings,
        ``LDA_DEFAULTS``). Explicit values always win; the run records the policy.
    sweeps : Gibbs sweeps per minibatch document and visit (None: the policy's;
        "default" 10, "reference" 200).
    burn_sweeps : the first this many sweeps of a visit are discarded (None: half).
    warm_start : each document's chain starts from its topic assignments at the
        end of its last visit (kept in the run, or a temporary directory the
        workers must see), not from a fresh draw; then few sweeps suffice.
    control_variates : a_hat from the stored assignments' counts plus the scaled
        minibatch correction (Dubey et al. 2016); needs ``warm_start``.
    n_iter : iterations of ``fit``.
    burn_in, thin : posterior samples of phi are kept every ``thin`` iterations
        after ``burn_in`` (None: half of ``n_iter``); ``topic_word_`` is their mean.
    eval_every : score the held-out documents every this many iterations (0: never).
    eval_sweeps : Gibbs sweeps for document completion when scoring.
    sampler_options : the sampler's own hyperparameters, e.g. ``{"friction": 1.0}``
        for SGHMC, ``{"integrator": "euler"}`` for gSGRHMC or SGHMC (the papers'
        step; default "splitting", docs/integrators.md); None: the defaults.
    kernel : the minibatch Gibbs kernel: "dense" (exact draws, O(K) per token),
        "sparse" (Metropolis-Hastings with alias tables, O(1) per token; the same
        conditional left invariant) or "auto" (default: dense below
        ``dscir.models.lda.kernels.SPARSE_FROM_K`` topics, sparse from it).
    placement : where the topics live: "driver" (one K x W state, stepped on the
        driver), "workers" (vocabulary blocks held and stepped by the workers,
        the driver keeps O(K) per block; a different chain of the same
        posterior; not with warm starts) or "auto" (default: workers from
        K x W = ``dscir.models.lda.placement.WORKERS_FROM_ENTRIES``). The run
        records the placement that ran.
    block_entries : parameters per vocabulary block with ``placement="workers"``
        (blocks of block_entries // K words; part of the chain's definition).
    seed : the whole chain is a function of the seed (and the corpus).
    progress : show a progress bar.
    """

    _model_name = "lda"
    _shown = ("n_topics", "sampler", "alpha", "beta", "batch_size", "step_size", "seed")
    _parameter_constraints = {
        "n_topics": Interval(numbers.Integral, 2),
        "sampler": Options(tuple(REFERENCE)),
        "alpha": Interval(numbers.Real, 0, open_low=True, none=True),
        "beta": Interval(numbers.Real, 0, open_low=True, none=True),
        "batch_size": Interval(numbers.Integral, 1, none=True),
        "step_size": Interval(numbers.Real, 0, open_low=True, none=True),
        "kappa": Interval(numbers.Real, 0, 1, none=True),
        "sweeps": Interval(numbers.Integral, 2, none=True),
        "burn_sweeps": Interval(numbers.Integral, 0, none=True),
        "warm_start": Options((False, True)),
        "control_variates": Options((False, True)),
        "n_iter": Interval(numbers.Integral, 0),
        "burn_in": Interval(numbers.Integral, 0, none=True),
        "thin": Interval(numbers.Integral, 1),
        "eval_every": Interval(numbers.Integral, 0),
        "eval_sweeps": Interval(numbers.Integral, 2),
        "seed": Interval(numbers.Integral, 0),
        "kernel": Options(KERNELS),
        "policy": Options(POLICIES),
        "placement": Options(PLACEMENTS),
        "block_entries": Interval(numbers.Integral, 1),
    }

    def __init__(self, n_topics: int = 100, sampler: str = "scir", *,
                 alpha: float | None = None, beta: float | None = None,
                 batch_size: int | None = None,
                 step_size: float | None = None, tau: float | None | str = "default",
                 kappa: float | None = None, sweeps: int | None = None,
                 burn_sweeps: int | None = None, warm_start: bool = False,
                 control_variates: bool = False, n_iter: int = 1000,
                 burn_in: int | None = None, thin: int = 10, eval_every: int = 0,
                 eval_sweeps: int = 100, sampler_options: dict | None = None, seed: int = 0,
                 kernel: str = "auto", placement: str = "auto",
                 block_entries: int = BLOCK_ENTRIES, policy: str = "default",
                 progress: bool = True):
        self.n_topics = n_topics
        self.sampler = sampler
        self.alpha = alpha
        self.beta = beta
        self.batch_size = batch_size
        self.step_size = step_size
        self.tau = tau
        self.kappa = kappa
        self.sweeps = sweeps
        self.burn_sweeps = burn_sweeps
        self.warm_start = warm_start
        self.control_variates = control_variates
        self.n_iter = n_iter
        self.burn_in = burn_in
        self.thin = thin
        self.eval_every = eval_every
        self.eval_sweeps = eval_sweeps
        self.sampler_options = sampler_options
        self.seed = seed
        self.kernel = kernel
        self.policy = policy
        self.placement = placement
        self.block_entries = block_entries
        self.progress = progress

    def needs_cluster(self) -> bool:
        """LDA always runs on Dask (its settings need no corpus to know that)."""
        from dscir.api.params import validate

        validate(self._parameter_constraints, self.get_params())
        return True

    def _make_config(self, store: str | None = None) -> LDAConfig:
        options = dict(self.sampler_options or {})
        Mapping().check("sampler_options", options)
        from dscir.samplers import get_sampler

        sampler = get_sampler(self.sampler, **options)  # unknown options: one clear error
        size = corpus_size(store) if store is not None else None
        policy_size = size if needs_corpus(self.policy) else None
        batch = int(self.batch_size) if self.batch_size is not None \
            else choose_batch(self.policy, policy_size)
        chosen = choose(self.policy, self.sampler, int(self.n_topics), batch, policy_size,
                        sampler.hyperparameters.get("integrator"))
        pick = lambda name: self._reference(chosen, name)  # noqa: E731
        tau = chosen["tau"] if self.tau == "default" else self.tau
        Interval(numbers.Real, 0, open_low=True, none=True).check("tau", tau)
        config = LDAConfig(
            n_topics=int(self.n_topics), sampler=self.sampler, alpha=float(pick("alpha")),
            beta=float(pick("beta")), batch_size=batch,
            step_size=float(pick("step_size")), tau=None if tau is None else float(tau),
            kappa=float(pick("kappa")), seed=int(self.seed),
            sweeps=int(choose_sweeps(self.policy) if self.sweeps is None else self.sweeps),
            burn_sweeps=None if self.burn_sweeps is None else int(self.burn_sweeps),
            warm_start=bool(self.warm_start), control_variates=bool(self.control_variates),
            burn_in=self._burn_in(),
            thin=int(self.thin), eval_sweeps=int(self.eval_sweeps),
            sampler_options={k: v if isinstance(v, str) else float(v)
                             for k, v in options.items()}, kernel=self.kernel,
            placement=self.placement, block_entries=int(self.block_entries),
            policy=self.policy)
        if store is None:
            return config
        # "auto" is resolved on the corpus, so the run records the placement that ran.
        return dataclasses.replace(config, placement=resolve_placement(config, size.n_words))

    def _model_type(self, config):
        return LDAModel

    def _parameter_rows(self, config) -> int:
        return config.n_topics

    def _driver_arrays(self, config) -> list[str]:
        """With the topics on the workers the driver holds K x W only to build the
        fitted ``topic_word_`` from the blocks' parts."""
        if config.placement == "workers":
            return ["fitted topics", "their blocks' parts"]
        return super()._driver_arrays(config)

    def _collect(self, chain) -> None:
        from dscir.corpus import Corpus

        super()._collect(chain)
        self.topic_word_ = chain.model.mean_phi()
        self.vocabulary_ = np.asarray(Corpus.open(chain.store).vocabulary)

    def _load(self, run) -> None:
        cfg = dict(run.config)
        self.set_params(**{k: cfg[k] for k in self._param_names() if k in cfg})
        self.config_ = LDAConfig(**cfg)
        self.store_, self.n_iter_, self.n_samples_ = run.store, run.iteration, run.n_samples
        self.run_path_ = str(run.path)
        self.topic_word_, self.vocabulary_ = run.phi_mean, run.vocabulary
        self.history_ = run.history
        ev = run.evaluations
        self.evaluations_ = [LDAModel.Evaluation(int(i), float(p))
                             for i, p in zip(ev.get("iteration", []), ev.get("perplexity", []))]

    # -- using the fit -------------------------------------------------------

    def top_words(self, n: int = 10) -> list[list[str]]:
        """The ``n`` most probable words of each topic."""
        self._fitted("topic_word_")
        order = np.argsort(-self.topic_word_, axis=1)[:, :n]
        return [[str(self.vocabulary_[w]) for w in row] for row in order]

    def top_words_table(self, n: int = 10):
        """The ``n`` most probable words of each topic with their probabilities, as a
        ``dscir.display.TopicTable`` (an HTML table in Jupyter; ``.to_pandas()``)."""
        from dscir.display import TopicTable

        self._fitted("topic_word_")
        return TopicTable.from_matrix(self.topic_word_, self.vocabulary_, n)

    def plot(self, ax=None):
        """Traces of the fit (matplotlib): held-out perplexity, documents/s and
        tokens/s, and the time per iteration split into Gibbs, waiting and update.
        ``ax``: three axes to draw on (default: a new figure). Returns the figure."""
        from dscir.display import plot_lda

        self._fitted("topic_word_")
        if not self.history_:
            raise DscirError("this LDA ran no iteration; there is nothing to plot")
        return plot_lda(self.history_, self.evaluations_, repr(self), ax)

    def transform(self, docs, client=None, *, out=None, sweeps: int | None = None,
                  seed: int | None = None, spread: bool = False, **cluster):
        """Topic proportions (n_docs x K) of documents under the fitted topics.

        ``docs`` is a scipy.sparse document-term matrix over this model's
        vocabulary or a ``CSRBatch``: computed in this process (no cluster),
        returned as a numpy array. Or a corpus store path / ``Corpus``: every
        document of the store, by worker tasks on the cluster (``client``, or
        the ``cluster`` keywords of ``fit``) one store chunk at a time, written
        to the Zarr array ``topics`` (float32) of the new group ``out`` and
        returned as a dask array over it. A store transform is restartable:
        rerun it with the same ``out`` and only the blocks not yet written are
        computed. ``spread=True`` (a store, a run's estimator) also writes
        ``topics_sd``: the standard deviation of each document's proportions
        across the run's kept phi samples (``dask.array.from_zarr(out,
        component="topics_sd")``). Either way document d's Gibbs stream is (seed, TRANSFORM, 0,
        d) (d: its row in the matrix or store), so a store's topics equal the
        in-process transform of its whole matrix, whatever the workers.
        """
        from dscir import streams
        from dscir.corpus import Corpus
        from dscir.models.lda.kernels import document_topics
        from dscir.rng import derive

        self._fitted("topic_word_")
        if isinstance(docs, (str, Path, Corpus)):
            from dscir.api.transform import transform_store

            return transform_store(self, store_path(docs), client, out=out, sweeps=sweeps,
                                   seed=seed, spread=spread, **cluster)
        if spread:
            raise DscirError("spread=True is for the transform of a corpus store")
        cfg = self.config_
        indptr, indices, data = csr_arrays(docs, self.topic_word_.shape[1])
        with np.errstate(divide="ignore"):
            log_phi = np.log(self.topic_word_)
        key = derive(cfg.seed if seed is None else seed, streams.TRANSFORM)
        return document_topics(indptr, indices, data, log_phi, cfg.alpha,
                               sweeps or cfg.eval_sweeps, key)

    def to_pyldavis(self, corpus, client=None, *, out, sweeps: int | None = None, **cluster):
        """The arrays ``pyLDAvis.prepare`` asks for over every document of a store, on
        the cluster (``dscir.api.pyldavis``): a ``PyLDAvisData`` whose ``prepare()``
        gives pyLDAvis's view. ``out``: the Zarr group of the store's transform
        (resumed if it is there)."""
        from dscir.api.pyldavis import pyldavis_data

        self._fitted("topic_word_")
        return pyldavis_data(self, store_path(corpus), client, out=out, sweeps=sweeps,
                             **cluster)

    def perplexity(self, corpus=None, client=None, *, sweeps: int | None = None,
                   **cluster) -> float:
        """Document-completion perplexity of the held-out documents of a store.

        Every 10th token of each held-out document is a test token; topic
        weights are estimated by Gibbs sampling on the other tokens with phi =
        ``topic_word_`` fixed (``sweeps`` sweeps, default ``eval_sweeps``); the
        result is exp(-mean natural-log probability of the test tokens) over all
        test tokens of all held-out documents.
        """
        from dscir.corpus import Corpus
        from dscir.models.lda import perplexity

        self._fitted("topic_word_")
        cfg = self.config_
        store = self.store_ if corpus is None else store_path(corpus)
        c = Corpus.open(store)
        if c.n_words != self.topic_word_.shape[1]:
            raise DscirError(f"{store} has {c.n_words} words, the topics have "
                             f"{self.topic_word_.shape[1]}")
        with executor_for("lda", store, client, **cluster) as executor:
            return perplexity(executor, np.asarray(c.heldout_docs(), np.int64),
                              self.topic_word_, cfg.alpha, sweeps or cfg.eval_sweeps,
                              cfg.seed, cfg.completion_every)

    def score(self, corpus=None, client=None, **cluster) -> float:
        """Per-token held-out log likelihood (natural log) by document completion:
        -log ``perplexity(...)``, so that higher is better, as scikit-learn's ``score``."""
        return float(-np.log(self.perplexity(corpus, client, **cluster)))

    def coherence(self, corpus=None, client=None, *, measure: str = "u_mass", top: int = 10,
                  window=None, **cluster):
        """Coherence of each topic's ``top`` words over a reference store (default the
        fit's own), every document of it, counted on the cluster.

        ``measure``: ``u_mass``, ``c_uci``, ``c_npmi`` or ``c_v``, all from
        whole-document co-occurrence (``dscir.models.lda.coherence`` gives the exact
        formulas). A store holds bags of words, not token order, so ``window`` can only
        be None or "document". Returns a ``Coherence`` named tuple: ``per_topic``
        (NaN for a topic with a top word in no reference document), ``mean`` (over the
        defined topics), ``measure``, ``top``, ``n_docs``.
        """
        from dscir.models.lda import coherence as coh

        store, n_docs, top_ids = self.check_coherence(corpus, measure=measure, top=top,
                                                      window=window)
        with executor_for("lda", store, client, **cluster) as executor:
            counts = coh.count(executor, np.arange(n_docs, dtype=np.int64), top_ids)
        return coh.coherence(counts, measure, top)

    def check_coherence(self, corpus=None, *, measure: str = "u_mass", top: int = 10,
                        window=None):
        """Raise the error ``coherence`` would raise for these arguments, before any
        cluster starts; returns the reference store, its number of documents and the
        top word ids [K, top]."""
        from dscir.corpus import Corpus
        from dscir.models.lda import coherence as coh

        self._fitted("topic_word_")
        coh.check_measure(measure)
        coh.check_window(window)
        top_ids = coh.top_word_ids(self.topic_word_, top)
        store = self.store_ if corpus is None else store_path(corpus)
        c = Corpus.open(store)
        theirs, ours = [str(v) for v in c.vocabulary], [str(v) for v in self.vocabulary_]
        if theirs != ours:
            if len(theirs) != len(ours):
                why = f"{len(theirs)} words, the topics have {len(ours)}"
            else:
                i = next(i for i, (a, b) in enumerate(zip(theirs, ours)) if a != b)
                why = f"word {i} is {theirs[i]!r}, the topics' is {ours[i]!r}"
            raise DscirError(f"{store} has another vocabulary than the topics' ({why}); "
                             "coherence needs a reference store with the fit's vocabulary")
        return store, c.n_docs, top_ids

    def heldout_report(self, corpus=None, client=None, *, sweeps: int | None = None,
                       **cluster) -> str:
        """One line: the held-out perplexity of a store and what was computed."""
        from dscir.corpus import Corpus

        store = self.store_ if corpus is None else store_path(corpus)
        value = self.perplexity(store, client, sweeps=sweeps, **cluster)
        n = Corpus.open(store).heldout_docs().size
        return (f"held-out perplexity: {value:.2f} ({n} documents of {store}, every "
                f"{self.config_.completion_every}th token tested, natural log)")

    def _repr_html_(self) -> str:
        head = f"<p><code>{html.escape(repr(self))}</code></p>"
        if not hasattr(self, "topic_word_"):
            return head
        from dscir.display import TopicTable

        table = TopicTable.from_matrix(self.topic_word_, self.vocabulary_, 8,
                                       order=range(min(20, self.topic_word_.shape[0])))
        return head + table._repr_html_()
