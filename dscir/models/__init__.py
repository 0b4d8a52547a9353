"""Model-local kernels (numba): per-document and per-user computations."""
