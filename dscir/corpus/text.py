"""Raw text ingestion, kept importable here: the code is in
``dscir.corpus.formats.text``."""

from dscir.corpus.formats.text import (ENGLISH_STOP_WORDS, Source, Tokenizer, build_vocabulary,
                                       csv_source, directory_source, ingest_text, jsonl_source,
                                       trec_source)

__all__ = ["ENGLISH_STOP_WORDS", "Source", "Tokenizer", "build_vocabulary", "csv_source",
           "directory_source", "ingest_text", "jsonl_source", "trec_source"]
