"""One estimator base for every model (scikit-learn conventions).

Hyperparameters are stored unchanged by ``__init__`` and read back from its
signature (``get_params``/``set_params``); they are validated at ``fit``
from one constraint table per estimator; learned attributes end in an
underscore. ``fit``, resume and the run store's commit are written once
here (scikit-learn's side in ``dscir.api.sklearn_compat``; LDA's
``partial_fit`` on new documents in ``dscir.api.streaming``), and one chain
or several (``dscir.api.chains``) run through the same steps: a ``Plan``
checked before any cluster starts, ``_start`` a chain, ``_advance`` it (run,
collect, commit). A subclass names its model and turns validated parameters
into the model's configuration.

Where the corpus comes from is ``dscir.corpus.temporary`` (a matrix becomes a temporary
store), where the tasks run ``dscir.api.session``, the memory checks ``dscir.api.memory``.
"""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import numpy as np

from dscir.api.chains import check_chains, fit_chains
from dscir.api.checkpoints import check_run_options, new_run
from dscir.api.diagnose import ChainDiagnostics
from dscir.api.memory import check_driver_memory, warn_rows
from dscir.api.params import validate
from dscir.params import AUTO
from dscir.api.registry import register
from dscir.api.inputs import check_y, is_store
from dscir.api.interrupted import report_interrupt
from dscir.api.session import lost_scheduler, new_executor, on_a_cluster, runs_in_process, session
from dscir.api.sklearn_compat import ScikitLearn
from dscir.api.stopping import STOPPING_ATTR, AutoStop, load_stopping, note_unscored, stop_record
from dscir.corpus.temporary import store_path
from dscir.errors import ClusterError, DscirError, not_fitted, spell

__all__ = ["Estimator", "Plan", "STOPPING_ATTR"]


class Plan(NamedTuple):
    """What a fit runs, checked before any cluster starts: the configuration on
    the store, the model class and the checkpoint to resume (or None)."""

    config: Any
    store: str
    model_type: type
    checkpoint: Any = None
    local: bool = False  # the chain runs in this process (no cluster)


class Estimator(AutoStop, ScikitLearn, ChainDiagnostics):
    """Fit a model's chain on a corpus store; see ``LDA`` and ``DPMixture``."""

    _parameter_constraints: ClassVar[dict[str, Any]] = {}
    _shown: ClassVar[tuple[str, ...]] = ()  # parameters in repr()
    # What the run readers support for this model (``dscir.api.registry``): R-hat,
    # ESS and held-out scores of the kept samples (``dscir diagnose``), the KSD,
    # an HTML report.
    _diagnosable: ClassVar[bool] = False
    _reportable: ClassVar[bool] = False
    _ksd_count: ClassVar[str] = ""  # the KSD's size option ("n_words"); "": no KSD
    _rows: ClassVar[str] = "n_topics"  # the parameter of ``_parameter_rows``
    _resident: ClassVar[bool] = False  # its model's ``resident`` (the executor's reads)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "_model_name" in cls.__dict__:
            register(cls)

    # -- parameters ----------------------------------------------------------

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values() if p.name != "self"]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The parameters by name (none is an estimator, so ``deep`` adds nothing)."""
        return {k: getattr(self, k) for k in self._param_names()}

    def set_params(self, **params: Any) -> Estimator:
        unknown = set(params) - set(self._param_names())
        if unknown:
            raise DscirError(f"{type(self).__name__} has no parameter "
                             f"{', '.join(sorted(unknown))}")
        for k, v in params.items():
            setattr(self, k, v)
        return self

    def chain_config(self, corpus=None):
        """The model configuration these parameters give on ``corpus`` (a store path
        or ``Corpus``; a default policy may read its size), validated (one clear
        error naming a bad parameter); the engine runs a chain of it."""
        validate(self._parameter_constraints, self.get_params())
        return self._make_config(None if corpus is None else store_path(corpus))

    def _make_config(self, store: str | None):
        raise NotImplementedError

    def _reference(self, reference: dict, name: str):
        """Parameter ``name``, or the policy's value where it is ``AUTO``."""
        value = getattr(self, name)
        return reference[name] if isinstance(value, str) and value == AUTO else value

    def _resolved(self, reference: dict) -> dict[str, Any]:
        """Every parameter's value, the policy's (``reference``) where it is ``AUTO``."""
        return {**self.get_params(), **{k: self._reference(reference, k) for k in reference}}

    def _model_type(self, config):
        raise NotImplementedError

    def needs_cluster(self) -> bool:
        """Whether the command line starts a cluster for ``fit`` (the exact samplers
        run in this process)."""
        return self._model_type(self.chain_config()).minibatch

    # -- fitting -------------------------------------------------------------

    def fit(self, X, y=None, *, client=None, vocabulary=None, address: str | None = None,
            scheduler_file: str | None = None, n_workers: int | None = None, security=None,
            dashboard_address: str | None = None, out: str | Path | None = None,
            overwrite: bool = False, checkpoint_every: int | None = None,
            checkpoint_interval: float | None = None, resume: str | Path | None = None,
            n_chains: int = 1):
        """Run ``n_iter`` iterations from a fresh chain on a corpus.

        ``X`` is a store path/URL or an open ``dscir.corpus.Corpus``, or an in-memory
        document-term matrix of whole-number counts (scipy.sparse, e.g. scikit-learn's
        CountVectorizer output, or dense: a numpy array, a pandas DataFrame) with its
        column names in ``vocabulary`` (default a DataFrame's columns, else "0", "1", ...):
        it is written to a temporary store (no held-out documents) that the tasks read,
        removed after the fit, so ``store_`` is then None: pass documents to ``score``, and
        use a store to ``resume``. ``y`` is ignored (scikit-learn's convention for
        unsupervised estimators). The cluster is ``client``, or the scheduler at
        ``address`` / ``scheduler_file``, or else (without these keywords) the running
        client of this process, or else the process's shared embedded cluster (one
        in-process worker with a thread per core, reused by later calls), or with
        ``n_workers`` a LocalCluster of that many worker processes for this call
        (``dscir.api.session``), every socket on 127.0.0.1 unless ``dashboard_address``
        ("HOST:PORT", ":PORT" for every interface) serves the dashboard elsewhere;
        ``security`` (a ``distributed.Security`` or ``{"ca_file", "cert", "key"}``)
        connects with mutual TLS. Exact samplers run in this process, and so does a
        stochastic chain on a small in-memory matrix when no cluster is named or running
        (``dscir.api.session.runs_in_process``): the same chain; a corpus store always goes
        to a cluster. With ``out``, the run (configuration, parameters, kept samples, final
        state, history, scores) is a Zarr run store.

        With ``out`` the whole chain is checkpointed into the run every
        ``checkpoint_interval`` seconds (default 300; 0: not by time), every
        ``checkpoint_every`` = N iterations if given, and at Ctrl-C or SIGTERM (after the
        iteration under way; ``dscir.api.checkpoints``); ``checkpoint_every=0`` turns
        checkpoints off. ``resume=RUN`` continues such a run from its latest checkpoint up
        to ``n_iter`` iterations in all and writes it back to RUN; the hyperparameters and
        corpus must be the run's, and the chain is then bit for bit the uninterrupted one.

        ``n_chains`` > 1 runs that many chains side by side on the cluster, chain c with
        seed ``dscir.rng.domains.chain_seed(seed, c)`` (chain 0: ``seed``), and writes them to
        the run directory ``out`` (``dscir.runs.chains``; no checkpoints); the learned
        attributes are chain 0's. ``dscir diagnose`` and ``to_inference_data`` compare the
        chains.
        """
        check_y(y)
        n_chains = check_chains(n_chains, out, checkpoint_every or checkpoint_interval, resume)
        cluster = dict(address=address, scheduler_file=scheduler_file, n_workers=n_workers,
                       security=security, dashboard_address=dashboard_address)
        with self._documents(X, vocabulary) as store:
            plan = self._prepare(store, out, (checkpoint_every, checkpoint_interval), resume,
                                 overwrite, named=on_a_cluster(X, client, cluster),
                                 cluster=dict(cluster, client=client))
            with session(client, local=plan.local, **cluster) as c:
                if n_chains > 1:
                    fit_chains(self, plan, c, n_chains, out=out, overwrite=overwrite)
                else:
                    self._fit(plan, c, out=out, overwrite=overwrite, resume=resume,
                              checkpoints=(checkpoint_every, checkpoint_interval))
        if not is_store(X):
            self.store_ = None  # the temporary store is gone
        return self

    def _fit(self, plan: Plan, client, *, out, overwrite: bool, resume,
             checkpoints: tuple[int | None, float | None]) -> None:
        """One chain of ``plan`` on ``client``, written to ``out`` or resumed from and
        written back to ``resume``; ``checkpoints``: ``fit``'s (every, interval)."""
        from dscir.runs.store import RunWriter, read_arrays

        every, interval = new_run(*checkpoints)
        # A checkpointed run keeps the chain's local state, so it can resume.
        run = resume if resume is not None else out if every or interval else None
        self._chain = chain = self._start(plan, client, local_dir=None if run is None
                                          else str(Path(run) / "local"))
        writer, n_iter = None, self._iterations(plan.config, plan.store)
        if plan.checkpoint is not None:
            writer = RunWriter.resume(resume, plan.checkpoint, checkpoint_every=checkpoints[0],
                                      checkpoint_interval=checkpoints[1], n_iter=n_iter)
            chain.restore(plan.checkpoint, read_arrays(resume, "samples"))
        elif out is not None:
            writer = RunWriter(out, model=plan.model_type.name, overwrite=overwrite,
                               checkpoint_every=every, checkpoint_interval=interval,
                               n_iter=n_iter)
        self._advance(chain, n_iter - chain.iteration, writer)

    def _start(self, plan: Plan, client, *, seed: int | None = None,
               local_dir: str | None = None):
        """A new chain of ``plan`` (with ``seed`` instead of the configuration's, for
        one of several chains) on its own executor on ``client``."""
        from dscir.engine.chain import Chain

        config = plan.config if seed is None else dataclasses.replace(plan.config, seed=seed)
        executor = new_executor(plan.model_type.name, plan.store, client,
                                resident=plan.model_type.resident)
        return Chain(plan.model_type, config, plan.store, executor, local_dir=local_dir,
                     stopping=self._stopping(config, plan.store))

    def check_run(self, corpus, *, out: str | Path | None = None,
                  checkpoint_every: int | None = None, checkpoint_interval: float | None = None,
                  resume: str | Path | None = None, overwrite: bool = False,
                  cluster: dict | None = None) -> None:
        """Raise the error ``fit`` would raise for these parameters, run options and ``fit``
        keywords ``cluster``, before any cluster starts (the command line calls it first)."""
        self._prepare(corpus, out, (checkpoint_every, checkpoint_interval), resume, overwrite,
                      cluster=cluster, note=False)

    def _prepare(self, corpus, out, checkpoints, resume, overwrite=False, *,
                 named: bool = True, cluster: dict | None = None, note: bool = True) -> Plan:
        from dscir.runs.checkpoint import started_with
        from dscir.runs.store import checkpoint_to_resume

        config = self.chain_config(corpus)
        if resume is not None and self.burn_in is None and self.n_iter != AUTO:
            # The run's burn-in: the default, half of n_iter, changes when n_iter grows.
            burn_in = started_with(resume, "burn_in")
            config = config if burn_in is None else dataclasses.replace(config, burn_in=burn_in)
        store, model_type = store_path(corpus), self._model_type(config)
        from dscir.models.base import Data

        data = Data.open(store)
        if model_type.minibatch:
            train = data.train.size
            if config.batch_size > train:
                raise DscirError(f"batch_size={config.batch_size} exceeds the {train} training "
                                 f"documents of {store}")
        n_iter = self._iterations(config, store)
        check_run_options(out, resume, checkpoints, n_iter, overwrite)
        self._check_memory(config, data.n_words, cluster)
        warn_rows(self._parameter_rows(config), data.n_words, data.train.size, self._rows)
        ckpt = None
        if resume is not None:
            ckpt = checkpoint_to_resume(resume, model_type.name, config.to_dict(), store,
                                        getattr(config, "PREDATED", None))
            if ckpt.iteration > n_iter:
                raise DscirError(f"{resume} is at iteration {ckpt.iteration}, past "
                                 f"n_iter={n_iter}")
        if note:  # once nothing refuses the fit (not for check_run, which a fit follows)
            note_unscored(self, config, store, n_iter)
        local = not model_type.minibatch or (not named and self._may_run_here(config) and
                                              runs_in_process(store))
        return Plan(config, store, model_type, ckpt, local)

    def _may_run_here(self, config) -> bool:
        """Whether a stochastic chain of ``config`` can run in this process."""
        return True

    def _parameter_rows(self, config) -> int | None:
        """K of the K x W parameter arrays the driver holds (None: not known ahead)."""
        return None

    def _driver_arrays(self, config) -> list[str]:
        """The float64 K x W arrays the driver holds at once: the sampler state (and its
        momentum), the kept samples' running mean and the per-iteration counts."""
        from dscir.samplers.base import SAMPLERS

        momentum = bool(getattr(SAMPLERS.get(config.sampler), "momentum", False))
        return ["state", "running mean", "counts"] + (["momentum"] if momentum else [])

    def _check_memory(self, config, n_words: int, cluster: dict | None) -> None:
        """Refuse a fit whose K x W driver arrays (``_driver_arrays``) would not fit
        in the memory available now (``cluster``: the ``fit`` keywords)."""
        check_driver_memory(self._parameter_rows(config), n_words, self._driver_arrays(config))

    def _advance(self, chain, n_iter: int, writer=None, *, chain_index: int | None = None,
                 collect: bool = True, eval_every: int | None = None) -> None:
        """Run ``chain`` ``n_iter`` iterations, commit it to ``writer``, then take the
        learned attributes from it (``collect``); a failure aborts the writer, and a
        lost scheduler is one clear error."""
        from dscir.engine.chain import run_chain

        every = writer is not None and writer.checkpoints
        end = chain.iteration + n_iter
        try:
            run_chain(chain, n_iter,
                      eval_every=self.eval_every if eval_every is None else eval_every,
                      on_sample=writer.append if writer else None,
                      checkpoint=(lambda c: writer.checkpoint(c.checkpoint())) if every else None,
                      checkpoint_every=writer.checkpoint_every if every else 0,
                      checkpoint_interval=writer.checkpoint_interval if every else 0.0,
                      progress=self.progress, chain_index=chain_index)
            if writer is not None:
                self._commit(chain, writer, every)
            # The committed run holds what the workers wrote (LDA's topics): read from there.
            self._fit_run = self.run_path_ if writer is not None and collect else None
            if collect:
                self._collect(chain)
        except BaseException as exc:
            report_interrupt(exc, chain, writer, end)
            if writer is not None:
                writer.abort()
            if lost_scheduler(chain.executor, exc):
                resume = ("; continue it from its last checkpoint with "
                          f"{spell('resume=RUN', '--resume RUN')}") if every else ""
                raise ClusterError(f"lost the connection to the Dask scheduler at iteration "
                                   f"{chain.iteration} ({' '.join(str(exc).split())}){resume}"
                                   ) from exc
            raise

    def _commit(self, chain, writer, every: bool) -> None:
        from dscir.corpus import Corpus
        from dscir.runs.checkpoint import absolute_store

        if every:
            writer.checkpoint(chain.checkpoint())  # so a finished run can be extended
        arrays = {"vocabulary": np.array([str(v) for v in Corpus.open(chain.store).vocabulary])}
        # A model whose parameters live on the workers writes its arrays from there.
        arrays.update(chain.model.write_run_arrays(str(writer.tmp)))
        arrays.update({f"history/{k}": v for k, v in chain.history_arrays().items()})
        arrays.update({f"evaluations/{k}": v for k, v in chain.evaluation_arrays().items()})
        self.run_path_ = writer.commit(
            model=chain.model.name, metric=chain.model.metric, config=chain.config.to_dict(),
            store=absolute_store(chain.store), iteration=chain.iteration,
            n_samples=chain.n_samples, arrays=arrays, params=self._recorded_params())
        import zarr

        zarr.open_group(str(self.run_path_), mode="r+").attrs[STOPPING_ATTR] = \
            stop_record(chain)

    def _collect(self, chain) -> None:
        """Learned attributes from the chain (every estimator's, then the model's own)."""
        self.config_, self.store_ = chain.config, chain.store
        self.n_iter_, self.n_samples_ = chain.iteration, chain.n_samples
        self.evaluations_ = list(chain.evaluations)
        self.history_ = chain.history_arrays()
        self.n_features_in_ = int(chain.data.n_words)
        record = stop_record(chain)
        self.stop_reason_ = record["reason"]
        if chain.stopping is not None:
            self.stopping_ = record

    def _fitted(self, attribute: str) -> None:
        if not hasattr(self, attribute):
            raise not_fitted(f"this {type(self).__name__} is not fitted yet; call fit() first")

    # -- reading a run back -------------------------------------------------

    @classmethod
    def load(cls, run: str | Path):
        """A fitted estimator from a finished run store (``dscir topics``/``evaluate``)."""
        from dscir.runs.store import Run

        r = Run.open(run)
        if r.model != cls._model_name:
            raise DscirError(f"{run} is a {r.model} run, not a {cls._model_name} run")
        self = cls()
        load_stopping(self, run)
        self.n_features_in_ = int(len(r.vocabulary))
        self._load(r)
        from dscir.runs.chains import chains_meta

        meta = chains_meta(run)
        if meta is not None:  # several chains: the estimator is chain 0's
            self.run_path_, self.n_chains_ = str(run), int(meta["n_chains"])
        return self

    def _load(self, run) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        params = self.get_params()
        shown = ", ".join(f"{k}={params[k]!r}" for k in self._shown
                          if k in params and params[k] is not None and params[k] != AUTO)
        return f"{type(self).__name__}({shown}){self._fitted_repr()}"

    def _fitted_repr(self) -> str:
        return f" fitted: {self.n_iter_} iterations" if hasattr(self, "n_iter_") else ""

