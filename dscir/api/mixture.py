"""``dscir.Mixture``: a finite mixture of multinomials (K clusters of documents)."""

from __future__ import annotations


import numpy as np

from dscir.api.base import Estimator
from dscir.api.inputs import check_y, count_matrix
from dscir.api.heldout import HeldoutPredictive
from dscir.api.streaming import MixtureStreaming
from dscir.api.mixture_params import MIXTURE
from dscir.api.params import config_values, declare
from dscir.corpus import Corpus
from dscir.corpus.temporary import csr_arrays
from dscir.models.mixtures.finite import (REFERENCE, MixtureConfig, allocation_log_weights,
                                  final_sample, model_type, predictive_score,
                                  samples_from_arrays)
from dscir.models.mixtures.policy import corpus_shape, corpus_tokens, mixture_settings

MIXTURE_DEFAULTS = REFERENCE  # the reference settings per sampler, by their documented name

@declare
class Mixture(MixtureStreaming, HeldoutPredictive, Estimator):
    """Finite mixture of K multinomials by stochastic-gradient MCMC on Dask, or exact Gibbs.

    x_i | z_i ~ Multinomial(n_i, phi_{z_i}), z_i ~ Categorical(pi),
    phi_k ~ Dirichlet(a0), pi ~ Dirichlet(gamma). See ``dscir.models.mixtures.finite``.
    Each parameter is declared once in ``dscir.api.mixture_params``.

    Learned attributes: ``weights_`` (K), ``components_`` (K x W) of the final
    state (NumPy, or with the components on the workers above
    ``dscir.api.fitted.DENSE_MAX_ENTRIES`` entries a dask array over the run
    store; ``materialize_components()``),
    ``labels_`` (every document's last cluster, -1 if held out),
    ``n_occupied_``, ``n_iter_``, ``n_samples_``, ``history_``, ``evaluations_``,
    ``vocabulary_``, ``n_documents_seen_``. ``partial_fit(X_new)`` learns from new
    documents (``dscir.api.streaming``). By default (``n_iter="auto"``) the fit stops
    where its held-out score stops improving (``dscir.engine.stopping``);
    ``stop_reason_`` says why it stopped ("plateau", "max_passes", or "n_iter" for
    an explicit ``n_iter``), ``stopping_`` the rule and where it ended burn-in.
    """

    _model_name = "mixture"
    _shown = ("n_clusters", "sampler", "gamma", "a0", "batch_size", "seed")
    _sklearn_kind = "clusterer"
    _params = MIXTURE

    def _make_config(self, store: str | None = None) -> MixtureConfig:
        shape = (None, None) if store is None else corpus_shape(store)
        tokens = None if store is None else corpus_tokens(store)
        values = self._resolved(mixture_settings(self.policy, self.sampler, *shape,
                                                 n_clusters=int(self.n_clusters),
                                                 n_tokens=tokens))
        for step in ("step_weights", "step_components"):  # an exact Gibbs chain takes none
            values[step] = 1.0 if values[step] is None else values[step]
        return MixtureConfig(**config_values(MIXTURE, values), burn_in=self._burn_in())

    def _model_type(self, config):
        return model_type(config.sampler)

    _rows = "n_clusters"

    def _parameter_rows(self, config) -> int:
        return config.n_clusters

    def _collect(self, chain) -> None:
        super()._collect(chain)
        model = chain.model
        self._collect_samples(model)
        self.weights_ = np.exp(self._final.log_pi)
        self.labels_ = model.labels()
        self.n_documents_seen_ = model.n_documents
        self.vocabulary_ = np.asarray(Corpus.open(chain.store).vocabulary)
        self.n_occupied_ = model.n_occupied
        self._label_set_aside(chain.store)

    def _load(self, run) -> None:
        cfg = dict(run.config)
        self.config_ = MixtureConfig(**cfg)
        if not self._load_params(run):
            self.set_params(**{k: cfg[k] for k in self._param_names() if k in cfg})
        self.store_, self.n_iter_, self.n_samples_ = run.store, run.iteration, run.n_samples
        self.history_ = run.history
        ev = run.evaluations
        evaluation = model_type(self.config_.sampler).Evaluation
        self.evaluations_ = [evaluation(int(i), float(s), int(n)) for i, s, n in zip(
            *(ev.get(f, []) for f in evaluation._fields))]
        self._load_components(run, lambda phi: final_sample(self.config_, run.state, phi))
        self._samples = samples_from_arrays(run.samples())
        self._average = None
        self.weights_, self.labels_ = run.weights, run.labels
        self.vocabulary_ = run.vocabulary
        self.n_occupied_ = int(np.count_nonzero(np.bincount(
            self.labels_[self.labels_ >= 0], minlength=self.weights_.size)))
        self._label_set_aside(run.store)

    # -- using the fit -------------------------------------------------------

    def predict_log_proba(self, docs) -> np.ndarray:
        """log p(z = k | x, pi, phi) of each document (rows of a scipy.sparse
        document-term matrix or a ``CSRBatch``) under the final sample (n x K)."""
        self._fitted("weights_")
        indptr, indices, data = csr_arrays(
            count_matrix(docs, "Mixture", self.n_features_in_), self.n_features_in_)
        columns, log_phi = self._columns(indices)
        return allocation_log_weights(indptr, columns, data, self._final.log_pi, log_phi)

    def predict_proba(self, docs) -> np.ndarray:
        """p(z = k | x, pi, phi) of each document under the final sample (n x K)."""
        return np.exp(self.predict_log_proba(docs))

    def predict(self, docs) -> np.ndarray:
        """Cluster of each document: argmax_k pi_k Mult(x | phi_k) under the final sample."""
        return np.argmax(self.predict_log_proba(docs), axis=1)

    def score(self, X=None, y=None, *, client=None, **cluster) -> float:
        """Average log predictive probability of held-out documents (natural log).

        For each held-out document x (the store's held-out flag), log p(x) =
        log (1/S) sum_s sum_k pi_k^s Mult(x | phi_k^s) over the S kept posterior
        samples (the final state if none is kept), multinomial coefficient
        included; the mean over held-out documents. ``X``: another store with the
        same vocabulary, or an in-memory matrix whose every row is scored (in this
        process unless a cluster is named).
        """
        check_y(y)
        return self._score(X, client, cluster)

    def _predictive(self, executor, docs, samples, columns) -> float:
        return predictive_score(executor, docs, samples, columns)

    def cluster_sizes(self) -> np.ndarray:
        """Training documents in each cluster (by their last allocation)."""
        self._fitted("weights_")
        return np.bincount(self.labels_[self.labels_ >= 0], minlength=self.weights_.size)

    def top_words_table(self, n: int = 10, vocabulary=None):
        """The ``n`` most probable words of each occupied cluster, largest cluster
        first, as a ``dscir.display.TopicTable``; ``vocabulary`` defaults to the
        corpus store's."""
        self._fitted("weights_")
        return self._top_words_table(n, vocabulary, self.cluster_sizes())

    def top_words(self, n: int = 10) -> list[list[str]]:
        """The ``n`` most probable words of each occupied cluster, largest first."""
        return [[str(w) for w, _ in words] for _, words in self.top_words_table(n).rows]

    def _fitted_repr(self) -> str:
        if not hasattr(self, "n_iter_"):
            return ""
        return f" fitted: {self.n_iter_} iterations, {self.n_occupied_} occupied clusters"
