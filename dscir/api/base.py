"""One estimator base for every model (scikit-learn conventions).

Hyperparameters are stored unchanged by ``__init__`` and read back from its
signature (``get_params``/``set_params``); they are validated at ``fit``
from one constraint table per estimator; learned attributes end in an
underscore. ``fit``, ``partial_fit``, resume and the run store's commit are
written once here; a subclass names its model and turns validated
parameters into the model's configuration.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import inspect
import numbers
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from dscir.api.diagnose import ChainDiagnostics
from dscir.api.params import Interval, validate
from dscir.errors import DscirError


def store_path(corpus) -> str:
    """The path of a corpus given as a path or an open ``Corpus``."""
    from dscir.corpus import Corpus

    if isinstance(corpus, Corpus):
        return str(corpus.path)
    if isinstance(corpus, (str, Path)):
        return str(corpus)
    raise DscirError(
        f"corpus must be a store path or a dscir.corpus.Corpus, got {type(corpus).__name__}")


def csr_arrays(docs, n_words: int):
    """(indptr, indices, data) of a scipy.sparse document-term matrix or a CSRBatch."""
    from dscir.corpus import CSRBatch

    if isinstance(docs, CSRBatch):
        indptr, indices, data = docs.indptr, docs.indices, docs.data
    else:
        import scipy.sparse as sp

        if not sp.issparse(docs):
            raise DscirError("docs must be a scipy.sparse document-term matrix or a CSRBatch")
        m = sp.csr_matrix(docs)
        if m.shape[1] != n_words:
            raise DscirError(f"docs have {m.shape[1]} vocabulary columns, the model has {n_words}")
        m.sum_duplicates()
        indptr, indices, data = m.indptr, m.indices, m.data
    return (np.asarray(indptr, np.int64), np.asarray(indices, np.int32),
            np.asarray(data, np.int32))


def is_matrix(corpus) -> bool:
    """Whether ``corpus`` is an in-memory scipy.sparse document-term matrix."""
    import scipy.sparse as sp

    return sp.issparse(corpus)


@contextlib.contextmanager
def corpus_store(corpus, vocabulary=None) -> Iterator:
    """The store ``fit`` reads: ``corpus`` itself (a path or ``Corpus``), or a
    scipy.sparse document-term matrix written to a temporary store (columns
    named by ``vocabulary``, default "0", "1", ...; no held-out documents),
    removed when the block ends."""
    if not is_matrix(corpus):
        if vocabulary is not None:
            raise DscirError("vocabulary= names the columns of a scipy.sparse matrix; a corpus "
                             "store has its own vocabulary")
        yield corpus
        return
    import shutil
    import tempfile

    from dscir.corpus import write_corpus

    tmp = tempfile.mkdtemp(prefix="dscir-fit-")
    try:
        path = os.path.join(tmp, "corpus.zarr")
        write_corpus(path, corpus, vocabulary=vocabulary)
        yield path
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def executor_for(model: str, store: str, client=None, *, local: bool = False,
                 **cluster) -> Iterator:
    """Where a model's tasks run: this process (``local``, the exact samplers) or
    Dask (``client``, or a cluster from the ``dscir.engine.cluster.dask_client``
    keywords in ``cluster``)."""
    from dscir.engine.cluster import dask_client
    from dscir.engine.dask import DaskExecutor
    from dscir.engine.local import LocalExecutor

    if local:
        yield LocalExecutor(store, model)
        return
    with dask_client(client, **cluster) as c:
        yield DaskExecutor(c, store, model)


MEMORY_CHECK_ENV = "DSCIR_MEMORY_CHECK"


def available_memory() -> int | None:
    """Bytes of memory available to this process now: /proc/meminfo's MemAvailable
    (else free pages from sysconf), capped by a cgroup v2 memory limit; None if unknown."""
    have = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    have = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    if have is None:
        try:
            have = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            return None
    try:  # a cgroup v2 limit: what it leaves, counting page cache as free
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
        if limit != "max":
            with open("/sys/fs/cgroup/memory.current") as f:
                used = int(f.read().strip())
            with open("/sys/fs/cgroup/memory.stat") as f:
                stat = dict(line.split()[:2] for line in f if line.strip())
            have = min(have, int(limit) - used + int(stat.get("file", 0)))
    except (OSError, ValueError):
        pass
    return max(have, 0)


def _gb(n: int) -> str:
    return f"{n / 1e9:.1f} GB"


class Estimator(ChainDiagnostics):
    """Fit a model's chain on a corpus store; see ``LDA`` and ``DPMixture``."""

    _parameter_constraints: ClassVar[dict[str, Any]] = {}
    _shown: ClassVar[tuple[str, ...]] = ()  # parameters in repr()

    # -- parameters ----------------------------------------------------------

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values() if p.name != "self"]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
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
        """Parameter ``name``, or the sampler's reference value where it is None."""
        value = getattr(self, name)
        return reference[name] if value is None else value

    def _burn_in(self) -> int:
        """Iterations before samples are kept: ``burn_in``, or half of ``n_iter``."""
        return int(self.n_iter // 2 if self.burn_in is None else self.burn_in)

    def _model_type(self, config):
        raise NotImplementedError

    def needs_cluster(self) -> bool:
        """Whether ``fit`` runs on Dask (the exact samplers run in this process)."""
        return self._model_type(self.chain_config()).minibatch

    # -- fitting -------------------------------------------------------------

    def fit(self, corpus, client=None, *, vocabulary=None, address: str | None = None,
            scheduler_file: str | None = None, n_workers: int | None = None, security=None,
            out: str | Path | None = None, overwrite: bool = False, checkpoint_every: int = 0,
            resume: str | Path | None = None, n_chains: int = 1):
        """Run ``n_iter`` iterations from a fresh chain on a corpus store.

        ``corpus`` is a store path/URL or an open ``dscir.corpus.Corpus``, or a
        scipy.sparse document-term matrix (e.g. scikit-learn's CountVectorizer
        output) with its column names in ``vocabulary``: it is written to a
        temporary store (no held-out documents) that the workers read, which
        must therefore see this machine's temporary directory (a LocalCluster
        does), and removed after the fit. ``store_`` then names a removed
        store: pass a store to ``score``/``perplexity``, and use a store to
        ``resume`` or ``partial_fit``. The
        cluster is ``client``, or the scheduler at ``address`` /
        ``scheduler_file``, or else an embedded LocalCluster of ``n_workers``
        processes; ``security`` (a ``distributed.Security`` or ``{"ca_file",
        "cert", "key"}``) connects with mutual TLS. Exact samplers run in this
        process. With ``out``, the run (configuration, kept samples, final
        state, history, scores) is written there as a Zarr run store.

        With ``checkpoint_every`` = N (and ``out``) the whole chain is
        checkpointed into the run every N iterations. ``resume=RUN`` continues
        such a run from its latest checkpoint up to ``n_iter`` iterations in
        all and writes it back to RUN; the hyperparameters and corpus must be
        the run's, and the chain is then bit for bit the uninterrupted one.

        ``n_chains`` > 1 runs that many chains side by side on the cluster, chain
        c with seed ``dscir.streams.chain_seed(seed, c)`` (chain 0: ``seed``), and
        writes them to the run directory ``out`` (``dscir.runs.chains``; no
        checkpoints); the learned attributes are chain 0's. ``dscir diagnose``
        and ``to_inference_data`` compare the chains.
        """
        from dscir.api.chains import check_chains, fit_chains

        if check_chains(n_chains, out, checkpoint_every, resume) > 1:
            with corpus_store(corpus, vocabulary) as opened:
                store = self._prepare(opened, out, 0, None, overwrite)[1]
                return fit_chains(self, store, n_chains, client, out=out, overwrite=overwrite,
                                  address=address, scheduler_file=scheduler_file,
                                  n_workers=n_workers, security=security)
        with corpus_store(corpus, vocabulary) as store:
            return self._fit(store, client, address=address, scheduler_file=scheduler_file,
                             n_workers=n_workers, security=security, out=out,
                             overwrite=overwrite, checkpoint_every=checkpoint_every,
                             resume=resume)

    def _fit(self, corpus, client, *, address, scheduler_file, n_workers, security, out,
             overwrite, checkpoint_every, resume):
        from dscir.engine.chain import Chain
        from dscir.runs.store import RunWriter, read_arrays

        config, store, model_type, ckpt = self._prepare(corpus, out, checkpoint_every, resume,
                                                        overwrite)
        with executor_for(model_type.name, store, client, local=not model_type.minibatch,
                          address=address, scheduler_file=scheduler_file,
                          n_workers=n_workers, security=security) as executor:
            # A checkpointed run keeps the chain's local state, so it can resume.
            run = resume if resume is not None else out if checkpoint_every else None
            self._chain = Chain(model_type, config, store, executor,
                                local_dir=None if run is None else str(Path(run) / "local"))
            writer = None
            if ckpt is not None:
                writer = RunWriter.resume(resume, ckpt, checkpoint_every=checkpoint_every or None)
                self._chain.restore(ckpt, read_arrays(resume, "samples"))
            elif out is not None:
                writer = RunWriter(out, model=model_type.name, overwrite=overwrite,
                                   checkpoint_every=checkpoint_every)
            self._advance(self.n_iter - self._chain.iteration, writer)
        return self

    def check_run(self, corpus, *, out: str | Path | None = None, checkpoint_every: int = 0,
                  resume: str | Path | None = None, overwrite: bool = False) -> None:
        """Raise the error ``fit`` would raise for these parameters and run options,
        before any cluster starts (the command line calls it first)."""
        self._prepare(corpus, out, checkpoint_every, resume, overwrite)

    def _prepare(self, corpus, out, checkpoint_every, resume, overwrite=False):
        from dscir.runs.store import check_out_path, checkpoint_to_resume

        config = self.chain_config(corpus)
        Interval(numbers.Integral, 0).check("checkpoint_every", checkpoint_every)
        if resume is not None and out is not None and Path(out) != Path(resume):
            raise DscirError(f"a resumed run is written back to {resume}, not to out={out}")
        if checkpoint_every and out is None and resume is None:
            raise DscirError("checkpoint_every (--checkpoint-every) needs out (--out), the run "
                             "store to checkpoint into")
        if out is not None and resume is None:
            if self.n_iter == 0:
                raise DscirError("n_iter=0 (--iterations 0) with out (--out) would write a "
                                 "finished run of the random initial state; ask for at least "
                                 "1 iteration")
            check_out_path(out, overwrite)
        store, model_type = store_path(corpus), self._model_type(config)
        from dscir.models.base import Data

        data = Data.open(store)
        if model_type.minibatch:
            train = data.train.size
            if config.batch_size > train:
                raise DscirError(f"batch_size={config.batch_size} exceeds the {train} training "
                                 f"documents of {store}")
        self._check_memory(config, data.n_words)
        ckpt = None
        if resume is not None:
            ckpt = checkpoint_to_resume(resume, model_type.name, config.to_dict(), store,
                                        getattr(config, "PREDATED", None))
            if ckpt.iteration > self.n_iter:
                raise DscirError(f"{resume} is at iteration {ckpt.iteration}, past "
                                 f"n_iter={self.n_iter}")
        return config, store, model_type, ckpt

    def _parameter_rows(self, config) -> int | None:
        """K of the K x W parameter arrays the driver holds (None: not known ahead)."""
        return None

    def _driver_arrays(self, config) -> list[str]:
        """The float64 K x W arrays the driver holds at once: the sampler state (with
        a momentum if it has one), the running mean of the kept samples and the
        per-iteration counts."""
        from dscir.samplers.base import SAMPLERS

        momentum = bool(getattr(SAMPLERS.get(config.sampler), "momentum", False))
        return ["state", "running mean", "counts"] + (["momentum"] if momentum else [])

    def _check_memory(self, config, n_words: int) -> None:
        """Refuse a fit whose K x W driver arrays (``_driver_arrays``) would not fit
        in the memory available now."""
        rows = self._parameter_rows(config)
        if not rows or os.environ.get(MEMORY_CHECK_ENV, "1").strip().lower() in (
                "0", "off", "no", "false"):
            return
        arrays = self._driver_arrays(config)
        need = 8 * len(arrays) * int(rows) * int(n_words)
        have = available_memory()
        if have is not None and need > have:
            raise DscirError(
                f"{rows:,} x {n_words:,} parameters need about {_gb(need)} of driver memory "
                f"({len(arrays)} float64 K x W arrays: {', '.join(arrays)}), more than the "
                f"{_gb(have)} "
                f"available; use fewer topics/clusters or a smaller vocabulary, or set "
                f"{MEMORY_CHECK_ENV}=0 to skip this check")

    def partial_fit(self, corpus=None, client=None, *, n_iter: int = 1, **cluster):
        """Continue the chain by ``n_iter`` iterations (start one if there is none)."""
        from dscir.engine.chain import Chain

        chain = getattr(self, "_chain", None)
        if chain is None:
            if corpus is None:
                raise DscirError("partial_fit needs a corpus for the first call")
            config = self.chain_config(corpus)
            model_type, store = self._model_type(config), store_path(corpus)
            with executor_for(model_type.name, store, client, local=not model_type.minibatch,
                              **cluster) as executor:
                self._chain = Chain(model_type, config, store, executor)
                self._advance(n_iter)
            return self
        if corpus is not None and store_path(corpus) != chain.store:
            raise DscirError("partial_fit continues the chain on the corpus it started with")
        model = chain.model
        with executor_for(model.name, chain.store, client, local=not model.minibatch,
                          **cluster) as executor:
            chain.attach(executor)
            self._advance(n_iter)
        return self

    def _advance(self, n_iter: int, writer=None) -> None:
        from dscir.engine.chain import run_chain

        chain = self._chain
        every = writer.checkpoint_every if writer is not None else 0
        try:
            run_chain(chain, n_iter, eval_every=self.eval_every,
                      on_sample=writer.append if writer else None,
                      checkpoint=(lambda c: writer.checkpoint(c.checkpoint())) if every else None,
                      checkpoint_every=every, progress=self.progress)
            self._collect(chain)
            if writer is not None:
                self._commit(chain, writer, every)
        except BaseException as exc:
            if writer is not None:
                writer.abort()
            if _lost_scheduler(chain, exc):
                resume = "; continue it from its last checkpoint with --resume (resume=RUN)" \
                    if every else ""
                raise DscirError(f"lost the connection to the Dask scheduler at iteration "
                                 f"{chain.iteration} ({' '.join(str(exc).split())}){resume}"
                                 ) from exc
            raise

    def _commit(self, chain, writer, every: int) -> None:
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
            n_samples=chain.n_samples, arrays=arrays)

    def _collect(self, chain) -> None:
        """Learned attributes from the chain (every estimator's, then the model's own)."""
        self.config_ = chain.config
        self.store_ = chain.store
        self.n_iter_ = chain.iteration
        self.n_samples_ = chain.n_samples
        self.evaluations_ = list(chain.evaluations)
        self.history_ = chain.history_arrays()

    def _fitted(self, attribute: str) -> None:
        if not hasattr(self, attribute):
            raise DscirError(f"this {type(self).__name__} is not fitted yet; call fit() first")

    # -- reading a run back -------------------------------------------------

    @classmethod
    def load(cls, run: str | Path):
        """A fitted estimator from a finished run store (``dscir topics``/``evaluate``)."""
        from dscir.runs.store import Run

        r = Run.open(run)
        if r.model != cls._model_name:
            raise DscirError(f"{run} is a {r.model} run, not a {cls._model_name} run")
        self = cls()
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
                          if k in params and params[k] is not None)
        return f"{type(self).__name__}({shown}){self._fitted_repr()}"

    def _fitted_repr(self) -> str:
        return f" fitted: {self.n_iter_} iterations" if hasattr(self, "n_iter_") else ""


def _lost_scheduler(chain, exc: BaseException) -> bool:
    """Whether ``exc`` is the driver's Dask client losing its scheduler (a cut
    link or a dead scheduler: its calls fail, or its futures are cancelled)."""
    client = getattr(chain.executor, "client", None)
    return (isinstance(exc, (OSError, concurrent.futures.CancelledError))
            and client is not None and client.status != "running")
