"""One engine for every model: minibatches, placement on Dask, the chain loop.

``chain.Chain`` runs any model of ``dscir.models.base.Model``; a
``dask.DaskExecutor`` places its worker tasks on a cluster, a
``inprocess.InProcessExecutor`` runs the same tasks in this process (the exact
full-data baselines); ``blocks.BlockedState`` holds an array of a model's in
column blocks on the workers and submits the model's functions to them.
Models know nothing of Dask; the engine knows nothing of any model's
mathematics.
"""
