"""Corpora as chunked Zarr stores: format, ingestion, reading."""
