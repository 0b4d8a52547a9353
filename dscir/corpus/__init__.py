"""Corpora as chunked Zarr stores: format, ingestion, reading."""

from dscir.corpus.store import CSRBatch, Corpus, completion_split, split_heldout, write_corpus
from dscir.corpus.ingest import ingest_ldac, ingest_uci

__all__ = ["CSRBatch", "Corpus", "completion_split", "ingest_ldac", "ingest_uci",
           "split_heldout", "write_corpus"]
