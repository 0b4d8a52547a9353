"""Samplers on positive (expanded-mean / Gamma) parameters: pure array code, no Dask, no I/O."""
