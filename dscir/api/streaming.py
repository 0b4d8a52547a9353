"""``partial_fit``: LDA's topics and the mixtures' components learned from a
stream of new documents.

The stochastic samplers move the parameters by a minibatch's counts scaled by
D / |S|, so new documents are new minibatches. Each ``partial_fit(X_new)``
continues the chain (its parameters, and the iteration count that sets the
step-size schedule and names the random streams) on X_new: one pass over
X_new's documents in minibatches of ``batch_size`` (at most X_new's rows), or
``n_iter`` iterations. The first call, on an unfitted estimator, starts the
chain on X_new as ``fit`` would and runs that pass.

Vocabulary: fixed by the first fit. A matrix must have the fitted columns in
the fitted order (``vocabulary=``, or a DataFrame's columns, must then be the
fitted words), as scikit-learn's estimators require: map new text with the
CountVectorizer fitted before, which drops the words it has not seen. A store
must have the fitted vocabulary, word for word. A new word is an error.

D: the documents seen so far, ``n_documents_seen_`` (the first fit's training
documents plus every ``partial_fit``'s, X_new's included), so the chain aims
at the posterior given all of them, X_new's minibatches standing for the
whole stream (as scikit-learn's online LDA scales by ``total_samples``).

Parameters: ``topic_word_`` (LDA) after a call is the mean of the phi samples
that call keeps (every ``thin`` iterations of the chain's count past
``burn_in``), or the chain's current phi if it keeps none: the topics follow
the stream rather than averaging in samples drawn before X_new came. A
mixture's ``components_`` and ``weights_`` are the chain's state after the
call, its held-out score averages only the call's kept samples, and
``labels_`` are X_new's documents' allocations.

Mixtures' allocations: each new document starts allocated uniformly at random
over the current components (the stream ``STREAM_START`` at the chain's
iteration), as ``fit``'s documents start over the initial ones; the first
visit redraws it. The number of components: the finite mixture keeps its K;
the DP mixture continues from its current components and, as in ``fit``,
adds sticks where a slice asks for them and drops the components past the
last one a document of the current call holds (the earlier documents'
allocations are not kept, so a component only they held fades: its minibatch
counts are zero, scaled to D). The exact Gibbs samplers sample the posterior
of the documents one fit holds and take no stream (one clear error).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dscir.rng import domains
from dscir.api.inputs import check_y, column_names, count_matrix, is_store
from dscir.api.session import new_executor, on_a_cluster, runs_in_process, session
from dscir.corpus import Corpus
from dscir.corpus.temporary import corpus_store, store_path
from dscir.errors import DscirError
from dscir.rng import derive


class Streaming:
    """``partial_fit`` of an estimator of a stochastic chain (see the module); the
    model's side is ``_stream_refusal``, ``_stream_reset`` and ``_stream_adopted``."""

    def partial_fit(self, X, y=None, *, client=None, vocabulary=None,
                    n_iter: int | None = None, **cluster):
        """Learn from new documents ``X`` (a matrix or a store): one pass over them in
        minibatches (``n_iter`` iterations if given), continuing the chain; the first
        call starts it on X. The vocabulary stays the fitted one (a new word is an
        error) and D, the minibatch scale's corpus size, is the documents seen so far:
        ``dscir.api.streaming`` states the rules."""
        check_y(y)
        return partial_fit(self, X, client, vocabulary, n_iter, cluster)

    def _keep_chain(self, chain) -> dict:
        return {"_stream_state": stream_checkpoint(chain)}

    def _stream_refusal(self, config) -> str | None:
        """Why a chain of ``config`` cannot take new documents (None: it can)."""
        return None

    def _stream_reset(self, ckpt):
        """``ckpt`` without the kept samples of the calls before."""
        raise NotImplementedError

    def _stream_adopted(self, chain) -> None:
        """What the model needs on the new documents once ``chain`` adopted the state."""


class MixtureStreaming(Streaming):
    """The mixtures' side of ``partial_fit`` (see the module)."""

    def _stream_refusal(self, config) -> str | None:
        if config.sampler == "gibbs":
            return ("the exact Gibbs sampler samples the posterior of the documents one fit "
                    "holds; partial_fit needs a stochastic sampler (scir or sgrld)")
        return None

    def _stream_reset(self, ckpt):
        arrays = {**ckpt.arrays, "average_log_sum": np.zeros(0)}
        values = {**ckpt.values, "average_n": 0}
        if "sample_components" in values:
            values["sample_components"] = 0
        return dataclasses.replace(ckpt, arrays=arrays, values=values, n_samples=0)

    def _stream_adopted(self, chain) -> None:
        model, train = chain.model, chain.data.train
        k = model.sample().log_phi.shape[0]
        rng = np.random.Generator(np.random.PCG64(
            derive(chain.config.seed, domains.STREAM_START, chain.iteration)))
        z = np.full(chain.data.n_docs, -1, dtype=np.int32)
        z[train] = rng.integers(0, k, size=train.size)
        model.z = z


class LDAScikitLearn(Streaming):
    """``LDA``'s scikit-learn names and its side of ``partial_fit`` (see the module)."""

    @property
    def components_(self):
        """The topics, scikit-learn's name for ``topic_word_`` (the same object)."""
        return self.topic_word_

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """The names of ``transform``'s columns: "lda0", "lda1", ... (one per topic)."""
        self._fitted("topic_word_")
        if input_features is not None and len(input_features) != self.n_features_in_:
            raise DscirError(f"input_features has {len(input_features)} names, the model "
                             f"{self.n_features_in_} words")
        return np.array([f"lda{k}" for k in range(self.topic_word_.shape[0])], dtype=object)

    def fit_transform(self, X, y=None, **fit_options) -> np.ndarray:
        """``fit(X)`` then the topic proportions of X's documents (an in-memory matrix)."""
        return self.fit(X, y, **fit_options).transform(X)

    def _stream_refusal(self, config) -> str | None:
        if config.control_variates:
            return ("control_variates estimate from every training document's stored "
                    "assignments, which a stream of new documents does not have; "
                    "partial_fit needs control_variates=False")
        return None

    def _stream_reset(self, ckpt):
        arrays = {**ckpt.arrays, "phi_sum": np.zeros_like(ckpt.arrays["phi_sum"])}
        return dataclasses.replace(ckpt, arrays=arrays, n_samples=0)


def stream_checkpoint(chain):
    """The chain's checkpoint a fitted estimator keeps to continue on new documents
    (None where the chain's state is not all on the driver: topics held by the
    workers, or documents' warm-start assignments)."""
    if chain.local is not None or chain.model.held_state() is not None:
        return None
    return chain.checkpoint()


def partial_fit(est, X, client, vocabulary, n_iter: int | None, cluster: dict):
    """Learn ``est``'s parameters from the new documents ``X`` (see the module)."""
    if n_iter is not None and (isinstance(n_iter, bool) or not isinstance(n_iter, int)
                               or n_iter < 1):
        raise DscirError(f"n_iter must be an integer >= 1, got {n_iter!r}")
    first = not hasattr(est, "config_")
    ckpt = None if first else _continued(est)
    with _new_documents(est, X, vocabulary, first) as store:
        named = on_a_cluster(X, client, cluster)
        if first:
            plan = est._prepare(store, None, (None, None), None, named=named,
                                cluster=dict(cluster, client=client))
            _refuse(est, plan.config)
            config, local, seen = plan.config, plan.local, None
        else:
            config, local = _config(est, store), not named and runs_in_process(store)
            seen = est.n_documents_seen_ + int(Corpus.open(store).train_docs().size)
        with session(client, local=local, **cluster) as c:
            _run(est, config, store, c, ckpt, seen, n_iter)
    if not is_store(X):
        est.store_ = None  # the temporary store is gone
    return est


def _run(est, config, store, client, ckpt, seen, n_iter) -> None:
    from dscir.engine.chain import Chain

    model_type = est._model_type(config)
    if ckpt is None:
        executor = new_executor(model_type.name, store, client, resident=model_type.resident)
        chain = Chain(model_type, config, store, executor)
    else:
        # The state is adopted: the model starts without its seeding work on X_new.
        start = dataclasses.replace(config, init="random") if hasattr(config, "init") \
            else config
        executor = new_executor(model_type.name, store, client, resident=model_type.resident)
        chain = Chain(model_type, start, store, executor)
        chain.config = chain.model.config = config
        chain.model.n_documents = seen
        chain.adopt(ckpt)
        est._stream_adopted(chain)
    est._chain = chain
    if n_iter is None:
        n_iter = math.ceil(chain.data.train.size / config.batch_size)
    est._advance(chain, n_iter, eval_every=est.eval_every if chain.data.heldout.size else 0)


def _refuse(est, config) -> None:
    why = est._stream_refusal(config)
    if why is not None:
        raise DscirError(why)


def _continued(est):
    """The fitted chain's checkpoint with no kept samples (see the module)."""
    _refuse(est, est.config_)
    chain = getattr(est, "_chain", None)
    ckpt = stream_checkpoint(chain) if chain is not None else getattr(est, "_stream_state", None)
    if ckpt is None:
        raise DscirError(f"partial_fit continues a chain whose state is on the driver, "
                         f"fitted in this process or pickled from one; this "
                         f"{type(est).__name__}'s (placement='workers', warm_start, or loaded "
                         f"from a run) cannot take new documents: fit it with resume=RUN "
                         f"instead")
    return est._stream_reset(ckpt)


def _config(est, store: str):
    """The fitted configuration, its minibatch at most the new training documents."""
    train = int(Corpus.open(store).train_docs().size)
    if train == 0:
        raise DscirError(f"{store} has no training documents to learn from")
    return dataclasses.replace(est.config_, batch_size=min(est.config_.batch_size, train))


def _new_documents(est, X, vocabulary, first: bool):
    """The store of ``X``, checked against the fitted vocabulary (see the module)."""
    if is_store(X):
        if vocabulary is not None:
            raise DscirError("vocabulary= names the columns of a matrix; a corpus store has "
                             "its own vocabulary")
        if not first:
            _same_words(est, Corpus.open(store_path(X)).vocabulary, store_path(X))
        return corpus_store(store_path(X))
    n_features = None if first else est.n_features_in_
    matrix = count_matrix(X, type(est).__name__, n_features)
    words = vocabulary if vocabulary is not None else column_names(X)
    if not first:
        if words is not None:
            _same_words(est, words, "the new documents")
        words = est.vocabulary_
    return corpus_store(matrix, words)


def _same_words(est, words, where: str) -> None:
    theirs, ours = [str(w) for w in words], [str(w) for w in est.vocabulary_]
    if theirs != ours:
        new = sorted(set(theirs) - set(ours))[:5]
        why = f"new words {new}" if new else "the same words in another order"
        raise DscirError(f"{where} have another vocabulary than the fitted one ({why}); "
                         "partial_fit keeps the fitted vocabulary: give the documents in "
                         "its columns (e.g. with the fitted CountVectorizer's transform)")
