"""What the mixture estimators share: kept samples, the held-out score and its report."""

from __future__ import annotations

from typing import ClassVar

from dscir.api.session import executor_for
from dscir.corpus.temporary import store_path
from dscir.errors import DscirError, spell


class HeldoutPredictive:
    """Held-out log predictive of a mixture estimator (``DPMixture``, ``Mixture``),
    averaged over its kept samples; scored in this process unless a cluster is named."""

    _unit: ClassVar[str] = "documents"

    def _collect_samples(self, model) -> None:
        self._final = model.sample()
        self._samples = list(model.kept.samples)
        self._average = model.kept.average

    def _predictive(self, executor, docs, samples) -> float:
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
                              **cluster) as executor:
                return self._predictive(executor, docs, self._samples or [self._final])

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
