"""The Dask driver: minibatches, task placement, exact reductions."""
