"""Raw text ingestion, kept importable here: the code is in
``dscir.corpus.formats.text`` and ``dscir.corpus.formats.delimited``."""

from dscir.corpus.formats.delimited import csv_source, tsv_source
from dscir.corpus.formats.text import (ENGLISH_STOP_WORDS, Source, Tokenizer, build_vocabulary,
                                       directory_source, ingest_text, jsonl_source, trec_source)

__all__ = ["ENGLISH_STOP_WORDS", "Source", "Tokenizer", "build_vocabulary", "csv_source",
           "directory_source", "ingest_text", "jsonl_source", "trec_source", "tsv_source"]
