"""``LDA.transform`` of a whole corpus store on the cluster, restartable.

One worker task per block of ``chunk_docs`` documents (a chunk of the
store's document axis): it reads its block on the worker and gets only the
phi columns of the block's words. The proportions go to a Zarr group ``out``::

    OUT/   attrs: dscir_transform {model, run, config, store, sweeps, seed,
                  n_topics, n_docs, chunk_docs, phi_sha256, spread, n_samples}
      topics     float32 [n_docs, K]  chunked like the store's documents (checksummed)
      topics_sd  float32 [n_docs, K]  with spread: the standard deviation of the
                                      proportions across the run's kept phi samples
      done       bool    [n_blocks]   set after each block's rows are written

A block whose ``done`` flag is set is skipped, so a killed transform resumes
where it stopped. Document d's stream is (seed, TRANSFORM, 0, d), as in the
in-process ``LDA.transform``: the result does not depend on the workers.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import zarr

from dscir import integrity
from dscir.errors import DscirError, spell

ATTR = "dscir_transform"


def check_transform(model, store: str) -> None:
    """The errors a store transform raises before any cluster starts."""
    from dscir.corpus import Corpus

    model._fitted("topic_word_")
    c = Corpus.open(store)
    if c.n_words != model.topic_word_.shape[1]:
        raise DscirError(f"{store} has {c.n_words} words, the topics have "
                         f"{model.topic_word_.shape[1]}")


def phi_samples(model) -> np.ndarray:
    """The run's kept phi samples float64 [S, K, W] (``spread``)."""
    from dscir.runs.store import read_arrays

    run = getattr(model, "run_path_", None)
    phi = read_arrays(run, "samples").get("phi") if run is not None else None
    if phi is None or phi.shape[0] == 0:
        raise DscirError(f"{spell('spread=True', '--spread')} needs the kept phi samples of a "
                         f"run (samples/phi): fit with {spell('out=...', '--out')} or load a "
                         "run that kept samples")
    if phi.shape[1:] != model.topic_word_.shape:
        raise DscirError(f"the run's phi samples have shape {list(phi.shape[1:])}, the "
                         f"topics {list(model.topic_word_.shape)}")
    return np.asarray(phi, np.float64)


def settings(model, store: str, sweeps: int, seed: int, n_samples: int = 0) -> dict:
    """What the ``dscir_transform`` attribute records (as JSON reads it back)."""
    from dscir.corpus import Corpus

    c = Corpus.open(store)
    run = getattr(model, "run_path_", None)
    out = {"model": "lda", "run": None if run is None else str(Path(run).resolve()),
           "config": model.config_.to_dict(), "store": _absolute(store), "sweeps": int(sweeps),
           "seed": int(seed), "n_topics": int(model.topic_word_.shape[0]), "n_docs": c.n_docs,
           "chunk_docs": c.chunk_docs, "phi_sha256": phi_digest(model.topic_word_),
           "spread": bool(n_samples), "n_samples": int(n_samples)}
    return json.loads(json.dumps(out))


def phi_digest(topics) -> str:
    """SHA-256 of the topics' float64 bytes: row-major for a NumPy array, one stored
    chunk of columns after another for lazy ones (never the whole array at once)."""
    from dscir.api import fitted

    if not fitted.is_lazy(topics):
        return hashlib.sha256(np.ascontiguousarray(topics, np.float64).tobytes()).hexdigest()
    h, stored = hashlib.sha256(), fitted.source(topics)
    for lo, hi in fitted.spans(topics):
        h.update(np.ascontiguousarray(stored[:, lo:hi], np.float64).tobytes())
    return h.hexdigest()


def _absolute(store: str) -> str:
    return store if "://" in store else str(Path(store).resolve())


def open_output(out, meta: dict) -> zarr.Group:
    """The output group: created, or an interrupted transform of the same settings."""
    out = Path(out)
    if out.exists():
        try:
            g = integrity.open_group(out, "transform output", mode="r+")
        except (FileNotFoundError, zarr.errors.GroupNotFoundError):
            raise DscirError(f"{out} exists and is not a dscir transform output") from None
        old = g.attrs.get(ATTR)
        if old is None:
            raise DscirError(f"{out} exists and is not a dscir transform output")
        if old != meta:
            keys = sorted(k for k in set(old) | set(meta) if old.get(k) != meta.get(k))
            raise DscirError(f"{out} holds a transform with other settings "
                             f"({', '.join(keys)}); choose another output path")
        return g
    n_docs, k, step = meta["n_docs"], meta["n_topics"], meta["chunk_docs"]
    n_blocks = -(-n_docs // step)
    g = zarr.open_group(str(out), mode="w-")
    for name in ("topics", "topics_sd") if meta["spread"] else ("topics",):
        g.create_array(name, shape=(n_docs, k), dtype="float32", chunks=(step, k),
                       **integrity.array_options())
    g.create_array("done", shape=(n_blocks,), dtype="bool", chunks=(1,),
                   **integrity.array_options())[...] = False
    g.attrs[ATTR] = meta
    return g


def _write_block(g: zarr.Group, block: int, lo: int, result) -> int:
    """One block's rows (and their spread), then its ``done`` flag (a kill between
    the two costs a redo). Returns the number of rows."""
    theta, sd = result if isinstance(result, tuple) else (result, None)
    g["topics"][lo : lo + theta.shape[0]] = theta
    if sd is not None:
        g["topics_sd"][lo : lo + sd.shape[0]] = sd
    g["done"][block] = True
    return theta.shape[0]


def transform_store(model, store: str, client=None, *, out, sweeps: int | None = None,
                    seed: int | None = None, spread: bool = False, **cluster):
    """Topic proportions of every document of ``store`` into ``out``; a dask array."""
    import dask.array as da
    from dscir.progress import tqdm

    from dscir.rng import domains
    from dscir.api import fitted
    from dscir.api.session import executor_for
    from dscir.models.lda.gibbs import phi_columns
    from dscir.models.lda.tasks import block_topics, block_topics_spread
    from dscir.rng import derive

    if out is None:
        raise DscirError(f"the transform of a corpus store needs {spell('out=', '--out')}, the "
                         "Zarr path its topics are written to")
    check_transform(model, store)
    cfg = model.config_
    sweeps = int(sweeps or cfg.eval_sweeps)
    seed = int(cfg.seed if seed is None else seed)
    if sweeps < 2:
        raise DscirError(f"sweeps must be >= 2, got {sweeps}")
    samples = phi_samples(model) if spread else None
    meta = settings(model, store, sweeps, seed, 0 if samples is None else samples.shape[0])
    g = open_output(out, meta)
    flags = integrity.read(g["done"])
    n_docs, step = meta["n_docs"], meta["chunk_docs"]
    todo = [int(b) for b in np.flatnonzero(~flags)]
    if todo:
        columns = fitted.phi_columns_of(model.topic_word_)
        with np.errstate(divide="ignore"):
            log_samples = None if samples is None else np.log(samples)
        task = block_topics if samples is None else block_topics_spread
        key = derive(seed, domains.TRANSFORM)
        alpha = float(cfg.alpha)
        bounds = {b: (b * step, min((b + 1) * step, n_docs)) for b in todo}
        bar = tqdm(total=n_docs, initial=n_docs - sum(hi - lo for lo, hi in bounds.values()),
                   unit="doc", desc="transform", disable=not model.progress)
        with bar, executor_for("lda", store, client, resident=True, **cluster) as ex:
            width = ex.n_parts
            windows = [todo[i : i + width] for i in range(0, len(todo), width)]

            def submit(window):
                return ex.read_blocks([np.arange(*bounds[b]) for b in window], "read-transform")

            pending = submit(windows[0])
            for i, window in enumerate(windows):
                parts = pending
                words = ex.words(parts)
                if i + 1 < len(windows):  # the next reads overlap this round's tasks
                    pending = submit(windows[i + 1])
                args = [(columns(ex, j, w),)
                        + (() if samples is None else
                           (np.stack([phi_columns(s, w) for s in log_samples]),))
                        + (alpha, sweeps, key) for j, w in enumerate(words)]
                for b, result in zip(window, ex.run("transform", task, parts, args)):
                    bar.update(_write_block(g, b, bounds[b][0], result))
    return da.from_zarr(g["topics"])
