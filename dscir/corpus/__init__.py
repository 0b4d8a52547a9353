"""Corpora as chunked Zarr stores: format, ingestion, reading."""

from dscir.corpus.split import heldout_flag, split_heldout
from dscir.corpus.store import CSRBatch, Corpus
from dscir.corpus.writer import CorpusWriter, write_corpus
from dscir.corpus.ingest import ingest_bow, read_vocabulary
from dscir.corpus.formats.ldac import ingest_ldac
from dscir.corpus.formats.text import Tokenizer, ingest_text
from dscir.corpus.formats.uci import ingest_uci

__all__ = ["CSRBatch", "Corpus", "CorpusWriter", "Tokenizer",
           "heldout_flag", "ingest_bow", "ingest_ldac", "ingest_text", "ingest_uci",
           "read_vocabulary", "split_heldout", "write_corpus"]
