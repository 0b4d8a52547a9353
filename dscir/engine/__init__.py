"""One engine for every model: minibatches, placement on Dask, the chain loop.

``chain.Chain`` runs any model of ``dscir.models.base.Model``; a
``dask.DaskExecutor`` places its worker tasks on a cluster, a
``local.LocalExecutor`` runs the same tasks in this process (the exact
full-data baselines). Models know nothing of Dask; the engine knows nothing
of any model's mathematics.
"""
