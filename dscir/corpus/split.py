"""The held-out split of a store: a flag beside the counts, by a documented rule."""

from __future__ import annotations

import numpy as np
import zarr

from dscir.errors import CorpusError


def heldout_flag(n_docs: int, *, n_heldout=None, fraction=None, every=None,
                 seed: int = 0) -> np.ndarray:
    """The held-out flag: every ``every``-th document (rows every-1, 2*every-1,
    ...), or a seeded random choice of ``n_heldout`` (or ``fraction``) documents."""
    given = sum(x is not None for x in (n_heldout, fraction, every))
    if given != 1:
        raise CorpusError("give exactly one of n_heldout, fraction and every")
    flag = np.zeros(n_docs, dtype=bool)
    if every is not None:
        if every < 2:
            raise CorpusError(f"every must be >= 2, got {every}")
        if every > n_docs:
            raise CorpusError(f"every={every} holds out nothing from {n_docs} documents")
        flag[every - 1 :: every] = True
        return flag
    k = n_heldout if n_heldout is not None else int(round(fraction * n_docs))
    if not 0 < k < n_docs:
        raise CorpusError(f"held-out size must be between 1 and {n_docs - 1}, got {k}")
    from dscir.rng import derive
    from dscir.rng.domains import HELDOUT

    rng = np.random.Generator(np.random.PCG64(derive(seed, HELDOUT)))
    flag[rng.choice(n_docs, size=k, replace=False)] = True
    return flag


def split_heldout(path, *, n_heldout=None, fraction=None, every=None, seed=0) -> np.ndarray:
    """Store a held-out flag beside the counts (see ``heldout_flag``); returns
    the held-out rows."""
    from dscir import integrity
    from dscir.corpus.store import Corpus

    corpus = Corpus.open(path)
    flag = heldout_flag(corpus.n_docs, n_heldout=n_heldout, fraction=fraction, every=every,
                        seed=seed)
    g = zarr.open_group(str(path), mode="r+")
    if "heldout" in g:
        del g["heldout"]
    g.create_array("heldout", shape=flag.shape, dtype="bool",
                   chunks=(corpus.chunk_docs,), **integrity.array_options())[...] = flag
    return np.flatnonzero(flag)
