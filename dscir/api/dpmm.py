"""``dscir.DPMixture``: a Dirichlet-process mixture of multinomials by the slice sampler."""

from __future__ import annotations


import numpy as np

from dscir.api.base import Estimator
from dscir.api.inputs import check_y, count_matrix
from dscir.api.heldout import HeldoutPredictive
from dscir.api.streaming import MixtureStreaming
from dscir.api.mixture_params import DPMM
from dscir.api.params import config_values, declare
from dscir.params import AUTO
from dscir.corpus import Corpus
from dscir.corpus.temporary import csr_arrays
from dscir.errors import DscirError
from dscir.models.mixtures.dp import (REFERENCE, DPMMConfig, cluster_log_likelihood, model_type,
                               samples_from_arrays)
from dscir.models.mixtures.policy import corpus_shape, default_settings, dp_sampler
from dscir.models.mixtures.dp.model import final_sample, predictive_score

DPMM_DEFAULTS = REFERENCE  # the reference settings per sampler, by their documented name
UNUSED_STEPS = (1.0, 1.0)  # the step sizes an exact Gibbs chain records (it takes none)

@declare
class DPMixture(MixtureStreaming, HeldoutPredictive, Estimator):
    """Dirichlet-process mixture of multinomials by the (stochastic) slice sampler.

    x_i | z_i ~ Multinomial(n_i, phi_{z_i}), phi ~ DP(Dirichlet(a0), alpha),
    alpha ~ Gamma(alpha_prior[0], rate=alpha_prior[1]). See ``dscir.models.mixtures.dp``.
    Each parameter is declared once in ``dscir.api.mixture_params``.
    ``partial_fit(X_new)`` learns from new documents (``dscir.api.streaming``).
    By default (``n_iter="auto"``) the fit stops where its held-out score stops
    improving (``dscir.engine.stopping``); ``n_iter_`` is the iterations it ran,
    ``stop_reason_`` why it stopped ("plateau", "max_passes", or "n_iter" for an
    explicit ``n_iter``), ``stopping_`` the rule and where it ended burn-in.
    """

    _model_name = "dpmm"
    _unit = "users"
    _state_group = "theta"
    _diagnosable = True
    _score_note = "mean log predictive"
    _ksd_count, _ksd_unit = "n_sticks", "users"
    _shown = ("sampler", "policy", "a0", "alpha_prior", "batch_size", "step_sizes", "seed")
    _sklearn_kind = "clusterer"
    _params = DPMM

    def _make_config(self, store: str | None = None) -> DPMMConfig:
        shape = (None, None) if store is None else corpus_shape(store)
        sampler = dp_sampler(self.policy, None if self.sampler == AUTO else self.sampler,
                             shape[0])
        values = self._resolved(default_settings(self.policy, sampler, *shape))
        values.update(sampler=sampler, step_sizes=values["step_sizes"] or UNUSED_STEPS)
        return DPMMConfig(**config_values(DPMM, values), burn_in=self._burn_in())

    def _model_type(self, config):
        return model_type(config.sampler)

    # -- reading runs of several chains (dscir.api.diagnose, dscir.api.stein) --

    @classmethod
    def _sample_scores(cls, runs, executor, heldout) -> np.ndarray:
        """The held-out users' mean log predictive under each kept sample [chain, draw],
        each part's log phi columns read from the stored sample on the workers."""
        from dscir.api.kept_samples import array_path, column_reader, kept_arrays, stack
        from dscir.models.mixtures.dp.model import Sample, user_scores

        if heldout.size == 0:
            raise DscirError(f"{runs[0].store} has no held-out users to score")
        out = []
        for r in runs:
            small = {name: stack([r], name)[0] for name in
                     ("n_components", "log_w", "log_rest", "alpha")}
            n_words = kept_arrays([r], "log_phi")[0].shape[1]
            ends = np.cumsum(small["n_components"])
            out.append([float(np.mean(user_scores(
                executor, heldout, Sample(small["log_w"][a:b], None, float(rest), float(alpha)),
                r.config["a0"], n_words,
                column_reader(executor, array_path(r, "log_phi"), slice(int(a), int(b))))))
                for a, b, rest, alpha in zip(ends - small["n_components"], ends,
                                             small["log_rest"], small["alpha"])])
        return np.array(out)

    @classmethod
    def _diagnostic_rows(cls, runs, top: int):
        from dscir.api.diagnose import row
        from dscir.api.kept_samples import stack

        return [row("alpha", stack(runs, "alpha")),
                row("clusters", stack(runs, "n_components").astype(np.float64),
                    "components of each kept sample")], None

    @classmethod
    def _posterior(cls, runs):
        from dscir.api.kept_samples import stack

        return {"alpha": stack(runs, "alpha"), "n_clusters": stack(runs, "n_components")}, {}, {}

    @classmethod
    def _ksd_full_data(cls, config) -> bool:
        """An exact Gibbs run scores every training user by default."""
        return config["sampler"] == "gibbs"

    @classmethod
    def _run_ksd(cls, runs, executor, train, batch_size, *, n_words, words, n_sticks):
        from dscir.api.stein import KSDResult, dp_chain_ksd, kept
        from dscir.models.mixtures.dp import DPMMConfig, samples_from_arrays

        values = []
        for r in runs:
            kept(r, "alpha")
            values.append(dp_chain_ksd(executor, train, DPMMConfig(**r.config),
                                       samples_from_arrays(r.samples()), int(n_sticks),
                                       batch_size))
        return KSDResult(values, None, kept(runs[0], "alpha").shape[0], batch_size,
                         batch_size == train.size, int(n_sticks))

    def _collect(self, chain) -> None:
        super()._collect(chain)
        model = chain.model
        self._collect_samples(model)
        self.weights_ = np.exp(self._final.log_w)
        self.alpha_ = model.alpha
        self.labels_ = model.labels()
        self.n_documents_seen_ = model.n_documents
        self.vocabulary_ = np.asarray(Corpus.open(chain.store).vocabulary)
        self.n_clusters_ = model.n_clusters
        self.n_components_ = model.n_components
        self._label_set_aside(chain.store)

    def _load(self, run) -> None:
        cfg = dict(run.config)
        self.config_ = DPMMConfig(**cfg)
        if not self._load_params(run):
            self.set_params(sampler=cfg["sampler"], policy=cfg.get("policy", "reference"),
                            a0=cfg["a0"], seed=cfg["seed"],
                            alpha_prior=(cfg["alpha_shape"], cfg["alpha_rate"]),
                            batch_size=cfg["batch_size"], n_init=cfg["n_init"],
                            init=cfg.get("init", "random"),
                            burn_in=cfg["burn_in"], thin=cfg["thin"])
        self.store_, self.n_iter_, self.n_samples_ = run.store, run.iteration, run.n_samples
        self.history_ = run.history
        ev = run.evaluations
        self.evaluations_ = [self._model_type(self.config_).Evaluation(*row) for row in zip(
            *(ev.get(f, []) for f in ("iteration", "log_predictive", "n_clusters")))]
        alpha = float(run.history["alpha"][-1]) if run.history else cfg["alpha_shape"]
        self._load_components(run, lambda phi: final_sample(self.config_, run.state, alpha, phi))
        self._samples = samples_from_arrays(run.samples())
        self._average = None
        self.weights_, self.labels_ = run.weights, run.labels
        self.vocabulary_ = run.vocabulary
        self.alpha_ = alpha
        self.n_clusters_ = int(np.count_nonzero(np.bincount(self.labels_[self.labels_ >= 0])))
        self.n_components_ = int(self.weights_.size)
        self._label_set_aside(run.store)

    # -- using the fit -------------------------------------------------------

    def predict(self, users) -> np.ndarray:
        """Cluster of each user (rows of a scipy.sparse users x areas matrix or a
        ``CSRBatch``): argmax_j w_j Mult(x | phi_j) under the final sample."""
        self._fitted("n_clusters_")
        indptr, indices, data = csr_arrays(
            count_matrix(users, "DPMixture", self.n_features_in_), self.n_features_in_)
        columns, log_phi = self._columns(indices)
        return np.argmax(cluster_log_likelihood(indptr, columns, data, self._final.log_w,
                                                log_phi), axis=1)

    def score(self, X=None, y=None, *, client=None, **cluster) -> float:
        """Average log predictive probability of held-out users (natural log).

        For each held-out user x (the store's held-out flag, e.g. every 6th
        user), log p(x) = log (1/S) sum_s [sum_k w_k^s Mult(x | phi_k^s) +
        w_rest^s DirMult(x | a0)] over the S kept posterior samples (the final
        state if none is kept), multinomial coefficient included; the mean
        over held-out users. ``X``: another store with the same areas, or an
        in-memory matrix whose every row is scored (in this process).
        """
        check_y(y)
        return self._score(X, client, cluster)

    def _predictive(self, executor, docs, samples, columns) -> float:
        return predictive_score(executor, docs, samples, self.config_.a0,
                                self.components_.shape[1], columns)

    def top_words_table(self, n: int = 10, vocabulary=None):
        """The ``n`` most probable areas (words) of each occupied cluster, largest
        cluster first, as a ``dscir.display.TopicTable``; ``vocabulary`` defaults to
        the corpus store's."""
        self._fitted("n_clusters_")
        sizes = np.bincount(self.labels_[self.labels_ >= 0], minlength=self.weights_.size)
        return self._top_words_table(n, vocabulary, sizes)

    def top_words(self, n: int = 10) -> list[list[str]]:
        """The ``n`` most probable areas of each occupied cluster, largest first."""
        return [[str(w) for w, _ in words] for _, words in self.top_words_table(n).rows]

    def plot(self, ax=None):
        """Traces of the fit (matplotlib): held-out log predictive, occupied and
        represented clusters, and alpha. Returns the figure."""
        from dscir.display import plot_dpmm

        self._fitted("n_clusters_")
        if not self.history_:
            raise DscirError("this DPMixture ran no iteration; there is nothing to plot")
        return plot_dpmm(self.history_, self.evaluations_, repr(self), ax)

    def _fitted_repr(self) -> str:
        if not hasattr(self, "n_iter_"):
            return ""
        return f" fitted: {self.n_iter_} iterations, {self.n_clusters_} clusters"

