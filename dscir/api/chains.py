"""Several chains of one estimator side by side on one cluster (``fit(..., n_chains=N)``).

Chain c runs the estimator's configuration with seed ``streams.chain_seed(seed,
c)``: chain 0 is the single chain of ``seed``, and every chain is a function of
(seed, c) alone, whatever the workers or the order their tasks finish in. The
chains run in driver threads, each with its own executor (its own task keys
and timings) on the one client, so their tasks share the cluster. They are
written under one run directory (``dscir.runs.chains``).
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from dscir import streams
from dscir.errors import DscirError


def check_chains(n_chains, out, checkpoint_every: int, resume) -> int:
    """``n_chains`` as an int >= 1; several chains need ``out`` and no checkpoints."""
    import numbers

    from dscir.api.params import Interval

    Interval(numbers.Integral, 1).check("n_chains", n_chains)
    if n_chains > 1:
        if out is None:
            raise DscirError("n_chains > 1 (--chains) needs out (--out): the chains are "
                             "written to a run directory that diagnose reads")
        if checkpoint_every or resume is not None:
            raise DscirError("n_chains > 1 (--chains) cannot be checkpointed or resumed yet; "
                             "fit without checkpoint_every / resume")
    return int(n_chains)


def fit_chains(estimator, store: str, n_chains: int, client, *, out: str | Path,
               overwrite: bool = False, **cluster):
    """Fit ``n_chains`` chains of ``estimator`` on ``store`` and write them to ``out``;
    the estimator's learned attributes are then chain 0's and ``run_path_`` is ``out``."""
    from dscir.api.session import executor_for, new_executor
    from dscir.engine.chain import Chain, run_chain
    from dscir.runs.chains import ChainsWriter

    config = estimator.chain_config(store)
    model_type = estimator._model_type(config)
    seeds = [streams.chain_seed(config.seed, c) for c in range(n_chains)]
    writer = ChainsWriter(out, model=model_type.name, n_chains=n_chains, overwrite=overwrite)
    local = not model_type.minibatch
    try:
        with executor_for(model_type.name, store, client, local=local, **cluster) as executor:
            chains = [Chain(model_type, dataclasses.replace(config, seed=s), store,
                            new_executor(model_type.name, store,
                                         getattr(executor, "client", None)))
                      for s in seeds]

            def run(c: int) -> None:
                run_chain(chains[c], estimator.n_iter, eval_every=estimator.eval_every,
                          on_sample=writer.writers[c].append, progress=estimator.progress,
                          chain_index=c)
                estimator._commit(chains[c], writer.writers[c], 0)

            with ThreadPoolExecutor(n_chains, thread_name_prefix="dscir-chain") as pool:
                for future in [pool.submit(run, c) for c in range(n_chains)]:
                    future.result()
        estimator._collect(chains[0])
        estimator.run_path_ = str(writer.commit(config.seed, seeds))
        estimator.n_chains_ = n_chains
    except BaseException:
        writer.abort()
        raise
    return estimator
