"""``dscir.LDA``: latent Dirichlet allocation by stochastic-gradient MCMC on Dask."""

from __future__ import annotations

import copy
import html

import numpy as np

from dscir.api import fitted
from dscir.api.base import Estimator
from dscir.api.memory import check_driver_memory, check_worker_memory
from dscir.api.streaming import LDAScikitLearn
from dscir.api.inputs import check_y, count_matrix, is_store
from dscir.api.lda_corpus import corpus_size, on_corpus
from dscir.api.lda_params import PARAMS, POLICY_CHOSEN, resumed_options
from dscir.api.params import declare
from dscir.params import AUTO
from dscir.api.session import executor_for
from dscir.corpus.temporary import csr_arrays, store_path
from dscir.errors import DscirError
from dscir.models.lda import REFERENCE, LDAConfig, LDAModel
from dscir.models.lda.policy import choose, choose_batch, choose_sweeps, needs_corpus

LDA_DEFAULTS = REFERENCE  # the reference settings per sampler, by their documented name


@declare
class LDA(LDAScikitLearn, Estimator):
    """Latent Dirichlet allocation fitted by stochastic-gradient MCMC on Dask.

    The parameters left ``"auto"`` (alpha, beta, the minibatch, the step schedule
    and the sweeps) are chosen by ``policy``: "default" from the corpus's size, K
    and the minibatch, "reference" the papers' settings; explicit values always
    win and the run records the values that ran. Each parameter is declared once
    in ``dscir.api.lda_params``. The fitted ``topic_word_`` is a NumPy array, or
    for topics held by the workers above ``dscir.api.fitted.DENSE_MAX_ENTRIES``
    entries a dask array over the stored mean (``materialize_topic_word()``
    reads it whole onto the driver). By default (``n_iter="auto"``) the fit stops where its held-out score stops
    improving (``dscir.engine.stopping``); ``n_iter_`` is the iterations it ran,
    ``stop_reason_`` why it stopped ("plateau", "max_passes", or "n_iter" for an
    explicit ``n_iter``), ``stopping_`` the rule and where it ended burn-in.
    """

    _model_name = "lda"
    _resident = LDAModel.resident
    _sklearn_kind = "transformer"
    _shown = ("n_topics", "sampler", "alpha", "beta", "batch_size", "step_size", "seed")
    _params = PARAMS
    _diagnosable = _reportable = True
    _score_note = "per-token log likelihood"
    _ksd_count, _ksd_unit = "n_words", "documents"

    def needs_cluster(self) -> bool:
        """The command line runs LDA on Dask (its settings need no corpus to know
        that); from Python a small corpus runs in this process (``Plan.local``)."""
        from dscir.api.params import validate

        validate(self._parameter_constraints, self.get_params())
        return True

    def _make_config(self, store: str | None = None) -> LDAConfig:
        from dscir.samplers import get_sampler

        options = dict(self.sampler_options or {})
        sampler = get_sampler(self.sampler, **options)  # unknown options: one clear error
        size = corpus_size(store) if store is not None else None
        policy_size = size if needs_corpus(self.policy) else None
        values = {p.name: p.coerce(getattr(self, p.name)) for p in PARAMS if p.config is True}
        if values["batch_size"] == AUTO:
            values["batch_size"] = choose_batch(self.policy, policy_size)
        chosen = choose(self.policy, self.sampler, values["n_topics"], values["batch_size"],
                        policy_size, sampler.hyperparameters.get("integrator"))
        chosen["sweeps"] = choose_sweeps(self.policy)
        declared = self._parameter_constraints
        values.update({k: declared[k].coerce(chosen[k]) for k in POLICY_CHOSEN
                       if values[k] == AUTO})
        # The integrator is recorded even when unset, so a resume keeps it (resumed_options).
        ran = {k: v for k, v in sampler.hyperparameters.items() if k in options or k == "integrator"}
        values.update(burn_in=self._burn_in(), stopping=self._stopping_rule(),
                      sampler_options={k: v if isinstance(v, str) else float(v)
                                       for k, v in ran.items()})
        config = LDAConfig(**values)
        return config if store is None else on_corpus(config, store, size)

    def _prepare(self, corpus, out, checkpoints, resume, overwrite=False, **keywords):
        """Resuming, the sampler options are completed by the run's (``resumed_options``)."""
        options = resumed_options(self.sampler, self.sampler_options, resume)
        est = self if options is self.sampler_options else copy.copy(self)
        est.sampler_options = options
        return super(LDA, est)._prepare(corpus, out, checkpoints, resume, overwrite,
                                        **keywords)

    def _rule(self, config) -> dict | None:
        return config.stopping

    def _model_type(self, config):
        return LDAModel

    def _may_run_here(self, config) -> bool:
        """Topics held by the workers need workers."""
        return config.placement != "workers"

    # -- reading runs of several chains (dscir.api.diagnose, dscir.api.stein) --

    @classmethod
    def _sample_scores(cls, runs, executor, heldout) -> np.ndarray:
        """-log perplexity of the held-out documents under each kept phi [chain, draw],
        each part's log columns read from the stored sample on the workers."""
        from dscir.api.kept_samples import array_path, column_reader, kept_arrays
        from dscir.models.lda import perplexity

        out = []
        for r, kept in zip(runs, kept_arrays(runs, "phi")):
            cfg = LDAConfig(**r.config)
            out.append([-np.log(perplexity(executor, heldout, None, cfg.alpha, cfg.eval_sweeps,
                                           cfg.seed, cfg.completion_every,
                                           column_reader(executor, array_path(r, "phi"), s,
                                                         log=True)))
                        for s in range(kept.shape[0])])
        return np.array(out)

    @classmethod
    def _diagnostic_rows(cls, runs, top: int):
        from dscir.api.diagnose import topic_rows

        return topic_rows(runs, top)

    @classmethod
    def _posterior(cls, runs):
        from dscir.api.diagnose import lda_phi

        phi, _ = lda_phi(runs)
        coords = dict(topic=np.arange(phi.shape[2]),
                      word=np.array([str(v) for v in runs[0].vocabulary]))
        return {"phi": phi}, {"phi": ["topic", "word"]}, coords

    @classmethod
    def _ksd_full_data(cls, config) -> bool:
        return False

    @classmethod
    def _run_ksd(cls, runs, executor, train, batch_size, *, n_words, words, n_sticks):
        from dscir.api.stein import KSDResult, chain_ksd, frequent_words, kept

        if words is None:
            words = frequent_words(executor, runs[0].store, n_words)
        values = [chain_ksd(executor, train, LDAConfig(**r.config), kept(r, "phi"), words,
                            batch_size) for r in runs]
        return KSDResult(values, words, kept(runs[0], "phi").shape[0], batch_size,
                         batch_size == train.size)

    def _parameter_rows(self, config) -> int:
        return config.n_topics

    def _driver_arrays(self, config) -> list[str]:
        """With the topics on the workers the driver holds K x W only to build the
        fitted ``topic_word_`` from the blocks' parts."""
        if config.placement == "workers":
            return ["fitted topics", "their blocks' parts"]
        return super()._driver_arrays(config)

    def _check_memory(self, config, n_words: int, cluster: dict | None) -> None:
        """Topics on the workers: the workers hold the sampler's arrays; those larger
        than ``fitted.DENSE_MAX_ENTRIES`` stay in the store they are written to, so the
        driver then holds no K x W array, only K values."""
        if config.placement == "workers":
            check_worker_memory(config.n_topics, n_words, super()._driver_arrays(config),
                                cluster)
            if config.n_topics * n_words > fitted.DENSE_MAX_ENTRIES:
                return check_driver_memory(config.n_topics, 1, ["the topics' row normalisers"])
        super()._check_memory(config, n_words, cluster)

    def _collect(self, chain) -> None:
        from dscir.corpus import Corpus

        super()._collect(chain)
        self.topic_word_ = fitted.collect_topics(chain.model, getattr(self, "_fit_run", None))
        self.vocabulary_ = np.asarray(Corpus.open(chain.store).vocabulary)
        self.n_documents_seen_ = chain.model.n_documents

    def _load(self, run) -> None:
        cfg = dict(run.config)
        if not self._load_params(run):
            self.set_params(**{k: cfg[k] for k in self._param_names() if k in cfg})
        self.config_ = LDAConfig(**cfg)
        self.store_, self.n_iter_, self.n_samples_ = run.store, run.iteration, run.n_samples
        self.run_path_ = str(run.path)
        self.topic_word_ = fitted.read_topics(f"{run.path}/{fitted.NAME}")
        self.vocabulary_ = run.vocabulary
        self.history_ = run.history
        ev = run.evaluations
        self.evaluations_ = [LDAModel.Evaluation(int(i), float(p))
                             for i, p in zip(ev.get("iteration", []), ev.get("perplexity", []))]

    # -- using the fit -------------------------------------------------------

    def top_words(self, n: int = 10, vocabulary=None) -> list[list[str]]:
        """The ``n`` most probable words of each topic; ``vocabulary``: the columns' words
        where the fit had column numbers only (``ScikitLearn._words``)."""
        self._fitted("topic_word_")
        words = self._words(vocabulary)
        return [[str(words[w]) for w in row] for row in fitted.top_ids(self.topic_word_, n)]

    def materialize_topic_word(self) -> np.ndarray:
        """``topic_word_`` as a NumPy array, K x W float64 on the driver (large
        fitted topics are a dask array over the run store, ``dscir.api.fitted``)."""
        self._fitted("topic_word_")
        return fitted.materialize(self.topic_word_)

    def top_words_table(self, n: int = 10, vocabulary=None):
        """The ``n`` most probable words of each topic with their probabilities, as a
        ``dscir.display.TopicTable`` (an HTML table in Jupyter; ``.to_pandas()``)."""
        from dscir.display import TopicTable

        self._fitted("topic_word_")
        return TopicTable.from_top(*fitted.top_entries(self.topic_word_, n),
                                   self._words(vocabulary))

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

        ``docs`` is a document-term matrix over this model's vocabulary (scipy.sparse
        or dense, as ``fit`` takes it) or a ``CSRBatch``: computed in this process (no cluster),
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
        from dscir.rng import domains
        from dscir.rng import derive

        self._fitted("topic_word_")
        if is_store(docs):
            from dscir.api.transform import transform_store

            return transform_store(self, store_path(docs), client, out=out, sweeps=sweeps,
                                   seed=seed, spread=spread, **cluster)
        if spread:
            raise DscirError("spread=True is for the transform of a corpus store")
        cfg = self.config_
        indptr, indices, data = csr_arrays(count_matrix(docs, "LDA", self.n_features_in_),
                                           self.n_features_in_)
        key = derive(cfg.seed if seed is None else seed, domains.TRANSFORM)
        return fitted.document_topics(self.topic_word_, indptr, indices, data, cfg.alpha,
                                      sweeps or cfg.eval_sweeps, key)

    def to_pyldavis(self, corpus, client=None, *, out, sweeps: int | None = None, **cluster):
        """The arrays ``pyLDAvis.prepare`` asks for over every document of a store, on
        the cluster (``dscir.api.pyldavis``): a ``PyLDAvisData`` whose ``prepare()``
        gives pyLDAvis's view. ``out``: the Zarr group of the store's transform
        (resumed if it is there). Above ``pyldavis.MAX_ENTRIES`` entries the view has
        that many / K words, the topics renormalised over them (``view_words``)."""
        from dscir.api.pyldavis import pyldavis_data

        self._fitted("topic_word_")
        return pyldavis_data(self, store_path(corpus), client, out=out, sweeps=sweeps,
                             **cluster)

    def perplexity(self, X=None, *, client=None, sweeps: int | None = None,
                   **cluster) -> float:
        """Document-completion perplexity of documents: the held-out documents of a
        store (default the fit's own), or every row of an in-memory matrix.

        Every 10th token of each document is a test token; topic weights are estimated
        by Gibbs sampling on the other tokens with phi = ``topic_word_`` fixed (``sweeps``
        sweeps, default ``eval_sweeps``); the result is exp(-mean natural-log probability
        of the test tokens) over all test tokens of all the documents. A matrix, and a
        small store with no cluster named or running, are scored in this process.
        """
        from dscir.corpus import Corpus
        from dscir.models.lda import perplexity

        self._fitted("topic_word_")
        cfg = self.config_
        with self._scored(X, client, cluster) as (store, local):
            c = Corpus.open(store)
            if c.n_words != self.topic_word_.shape[1]:
                raise DscirError(f"{store} has {c.n_words} words, the topics have "
                                 f"{self.topic_word_.shape[1]}")
            docs, topics = np.sort(np.asarray(c.heldout_docs(), np.int64)), self.topic_word_
            with executor_for("lda", store, client, local=local, resident=True,
                              **cluster) as executor:
                # In this process: by groups of documents, their columns cut or read here.
                columns, groups = fitted.local_log_columns(topics, c, docs) if local else \
                    (fitted.worker_log_columns(topics, executor), None)
                return perplexity(executor, docs, None if columns else topics, cfg.alpha,
                                  sweeps or cfg.eval_sweeps, cfg.seed, cfg.completion_every,
                                  columns, groups, trained_on=self.store_ or "")

    def score(self, X=None, y=None, *, client=None, **cluster) -> float:
        """Per-token held-out log likelihood (natural log) by document completion:
        -log ``perplexity(X)``, so that higher is better, as scikit-learn's ``score``."""
        check_y(y)
        return float(-np.log(self.perplexity(X, client=client, **cluster)))

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
        with executor_for("lda", store, client, resident=True, **cluster) as executor:
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
        coh.check_top(top, self.topic_word_.shape[1])
        top_ids = fitted.top_ids(self.topic_word_, top)
        store = self._own_store() if corpus is None else store_path(corpus)
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

        store = self._own_store() if corpus is None else store_path(corpus)
        value = self.perplexity(store, client=client, sweeps=sweeps, **cluster)
        n = Corpus.open(store).heldout_docs().size
        return (f"held-out perplexity: {value:.2f} ({n} documents of {store}, every "
                f"{self.config_.completion_every}th token tested, natural log)")

    def _repr_html_(self) -> str:
        head = f"<p><code>{html.escape(repr(self))}</code></p>"
        if not hasattr(self, "topic_word_"):
            return head
        from dscir.display import TopicTable

        shown = range(min(20, self.topic_word_.shape[0]))
        table = TopicTable.from_top(*fitted.top_entries(self.topic_word_, 8), self.vocabulary_,
                                    order=shown)
        return head + self._convergence_html() + table._repr_html_()

    def _convergence_html(self) -> str:
        """Where and why the fit stopped, and its held-out score by pass and by second
        (``dscir.api.convergence``), for a notebook."""
        from dscir.api.convergence import convergence_svgs

        n_train = getattr(getattr(self, "config_", None), "batch_size", 1) or 1
        try:
            from dscir.corpus import Corpus

            n_train = int(Corpus.open(self.store_).train_docs().size)
        except Exception:  # noqa: BLE001 -- the store is gone: passes from the rule alone
            pass
        svgs, _ = convergence_svgs(self, n_train)
        return (f"<p>{html.escape(self.stop_summary())}</p>"
                + "".join(f'<div style="display:inline-block">{s}</div>' for s in svgs))
