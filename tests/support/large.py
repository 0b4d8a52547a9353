"""A store larger than a small worker's memory, written fast (for the out-of-core tests).

Document d holds the words start_d .. start_d + n_d - 1 (a contiguous range, so
already ascending) with counts 1 to 3: no sampling per token, so a store of a
gigabyte of entries is written in seconds, block by block through the store's
own writer; nothing the size of the corpus is ever in memory.
"""

from __future__ import annotations

import numpy as np

from dscir.corpus import CorpusWriter


def ranges_store(path, n_docs: int, n_words: int, mean_entries: int, *,
                 chunk_docs: int = 256, block_docs: int = 1 << 16, seed: int = 0):
    """Write the store (no held-out documents) and return it open."""
    rng = np.random.default_rng(seed)
    with CorpusWriter(path, chunk_docs=chunk_docs) as writer:
        for lo in range(0, n_docs, block_docs):
            n = min(block_docs, n_docs - lo)
            lengths = rng.integers(mean_entries // 2, 3 * mean_entries // 2 + 1, size=n)
            starts = rng.integers(0, n_words - lengths + 1)
            first = np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
            words = first + np.arange(int(lengths.sum()))
            counts = 1 + words % 3
            writer.add(lengths, words, counts, np.arange(lo, lo + n).astype(str))
        return writer.finish([f"w{i}" for i in range(n_words)])
