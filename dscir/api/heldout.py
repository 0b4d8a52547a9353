"""What the mixture estimators share: kept samples, the fitted components where
they are stored (``dscir.api.fitted``), the held-out score and its report."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import ClassVar

import numpy as np

from dscir.api import fitted
from dscir.api.session import executor_for
from dscir.corpus.temporary import store_path
from dscir.errors import DscirError, spell


#: The run's array of the final sample's components (phi, K x W).
COMPONENTS = "components"


class HeldoutPredictive:
    """Held-out log predictive of a mixture estimator (``DPMixture``, ``Mixture``),
    averaged over its kept samples; scored in this process unless a cluster is named."""

    _unit: ClassVar[str] = "documents"
    #: The group of a run's ``state/`` arrays holding the components' sampler state.
    _state_group: ClassVar[str] = "components"

    def _collect_samples(self, model) -> None:
        """The kept samples, the final one and ``components_``: NumPy, or with the
        components on the workers above ``fitted.DENSE_MAX_ENTRIES`` entries a dask
        array over what the blocks wrote (the final sample then without its phi)."""
        self._samples = list(model.kept.samples)
        self._average = model.kept.average
        self._final = model.weights_sample()

        def dense() -> np.ndarray:
            self._final = model.sample()
            return np.exp(self._final.log_phi)

        write, n_entries = None, 0
        if model.workers_hold_components:
            n_entries = model.held.n_rows * model.data.n_words
            write = functools.partial(write_components, model)
        self.components_ = fitted.collect_stored(dense, write, n_entries,
                                                 getattr(self, "_fit_run", None), COMPONENTS)
        if fitted.is_lazy(self.components_):
            stored = fitted.source(self.components_)
            self._theta = fitted.lazy(state_field(Path(stored.path).parent, model.state_group),
                                      stored.holder)
            self._norm = model.held.norm.copy()

    def _load_components(self, run, final_sample) -> None:
        """``components_`` and the final sample of a run: lazy as ``fitted.read_topics``
        (the final sample's log phi then read from the stored state by columns)."""
        self.components_ = fitted.read_topics(f"{run.path}/{COMPONENTS}")
        theta = state_field(run.path, self._state_group)  # None: a Gibbs run's layout
        lazy = fitted.is_lazy(self.components_) and theta is not None
        self._final = final_sample(not lazy)
        if lazy:
            self._theta = fitted.lazy(theta)
            self._norm = row_normalisers(self._theta)

    def _label_set_aside(self, store: str) -> None:
        """Label the documents the stopping rule set aside to score (held out of
        training on a store without held-out ones): ``predict`` under the final
        sample, so ``labels_`` covers every document of such a store."""
        if not (getattr(self, "stopping_", None) or {}).get("set_aside"):
            return
        from dscir.corpus import Corpus
        from dscir.engine.stopping import set_aside
        from dscir.models.base import Data

        docs = set_aside(Data.open(store).train)
        self.labels_ = np.array(self.labels_)
        self.labels_[docs] = self.predict(Corpus.open(store).read(docs))

    def materialize_components(self) -> np.ndarray:
        """``components_`` as a NumPy array, K x W float64 on the driver (large
        fitted components are a dask array over the run store)."""
        self._fitted("components_")
        return fitted.materialize(self.components_)

    def _log_phi_columns(self, words: np.ndarray) -> np.ndarray:
        """float64 [K, len(words)]: the final sample's log phi columns of ``words``
        (sorted, distinct) from the stored state, as the blocks cut them."""
        return log_theta(self._theta, fitted.topic_columns(self._theta, words)) - \
            self._norm[:, None]

    def _columns(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(column of each entry, log phi columns) of documents' word ids
        ``indices``: the final sample's log phi, or for lazy components the
        columns of the words used, read a stored chunk at a time."""
        if self._final.log_phi is not None:
            return indices, self._final.log_phi
        words = np.unique(indices)
        return np.searchsorted(words, indices), self._log_phi_columns(words)

    def _score_columns(self):
        """Where the final sample's log phi columns come from for scoring: None (from
        it), or for lazy components each task's columns (K x its words) read here
        by stored chunks."""
        if self._final.log_phi is not None:
            return None
        return lambda words: [self._log_phi_columns(w) for w in words]

    def _top_words_table(self, n: int, vocabulary, sizes: np.ndarray):
        """The ``n`` most probable words of each occupied cluster, largest first
        (``fitted.top_entries``: lazy components a stored chunk at a time)."""
        from dscir.corpus import Corpus
        from dscir.display import TopicTable

        if vocabulary is None:
            vocabulary = Corpus.open(self._own_store()).vocabulary
        order = [int(k) for k in np.argsort(-sizes, kind="stable") if sizes[k] > 0]
        return TopicTable.from_top(*fitted.top_entries(self.components_, n), vocabulary,
                                   order=order, label="cluster")

    def _predictive(self, executor, docs, samples, columns) -> float:
        raise NotImplementedError

    def _score(self, X, client, cluster) -> float:
        from dscir.corpus import Corpus

        self._fitted("components_")
        average = getattr(self, "_average", None)
        if X is None and self.store_ is not None and average is not None and average.n_samples:
            return average.mean()
        with self._scored(X, client, cluster) as (store, local):
            c = Corpus.open(store)
            if c.n_words != self.components_.shape[1]:
                raise DscirError(f"{c.path} has {c.n_words} words (columns), the model "
                                 f"{self.components_.shape[1]}")
            docs = c.heldout_docs()
            if docs.size == 0:
                raise DscirError(f"{c.path} has no held-out {self._unit} to score")
            local = local or (client is None and not cluster)
            with executor_for(self._model_name, store, client, local=local,
                              resident=self._resident, **cluster) as executor:
                if self._samples:
                    return self._predictive(executor, docs, self._samples, None)
                return self._predictive(executor, docs, [self._final], self._score_columns())

    def heldout_report(self, corpus=None, client=None, *, sweeps: int | None = None,
                       **cluster) -> str:
        """One line: the held-out log predictive of a store and what was computed."""
        from dscir.corpus import Corpus

        if sweeps is not None:
            raise DscirError(f"{spell('sweeps', '--sweeps')} applies to LDA runs; a mixture's "
                             "score has none")
        store = self._own_store() if corpus is None else store_path(corpus)
        value = self.score(store, client=client, **cluster)
        n = Corpus.open(store).heldout_docs().size
        unit = self._unit.rstrip("s")
        return (f"held-out log predictive: {value:.4f} nats per {unit} (mean over {n} held-out "
                f"{self._unit} of {store}, {max(len(self._samples), 1)} posterior samples)")


def write_components(model, root: str) -> None:
    """Have ``model``'s blocks write phi (``components``) and their state
    (``state/<group>/<field>``) into the Zarr group ``root`` from the workers."""
    import zarr

    zarr.open_group(root, mode="r+").require_group(f"state/{model.state_group}")
    model.held.write_run_arrays(root, model.state_group)


def state_field(root, group: str) -> str | None:
    """The path of the components' stored state under ``root``: ``log_theta``
    (SCIR) or ``theta`` (SGRLD's positions), None if neither is stored."""
    for name in ("log_theta", "theta"):
        if (path := Path(root) / "state" / group / name).exists():
            return str(path)
    return None


def log_theta(theta, columns: np.ndarray) -> np.ndarray:
    """Columns of the lazy state ``theta`` as log theta (the sampler's ``log_theta``)."""
    return columns if fitted.source(theta).path.endswith("log_theta") else np.log(columns)


def row_normalisers(theta) -> np.ndarray:
    """float64 [K]: the blocks' row normalisers of a stored state (chunks of one
    block's columns): each chunk's row log-sum-exp of log theta combined in
    block order, as ``mixtures.components.Components`` has them."""
    from dscir.models.column_blocks import combine, row_lse

    stored = fitted.source(theta)
    return combine([row_lse(log_theta(theta, stored[:, lo:hi]))
                    for lo, hi in fitted.spans(theta)])
