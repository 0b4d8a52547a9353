"""Several chains of one estimator side by side on one cluster (``fit(..., n_chains=N)``).

Chain c runs the estimator's configuration with seed ``domains.chain_seed(seed,
c)``: chain 0 is the single chain of ``seed``, and every chain is a function of
(seed, c) alone, whatever the workers or the order their tasks finish in. The
chains run in driver threads, each with its own executor (its own task keys
and timings) on the one client, so their tasks share the cluster; each is
started, run and committed by the same steps as a single chain. They are
written under one run directory (``dscir.runs.chains``).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from dscir.rng import domains
from dscir.errors import DscirError, spell


def check_chains(n_chains, out, checkpoint_every: int, resume) -> int:
    """``n_chains`` as an int >= 1; several chains need ``out`` and no checkpoints."""
    import numbers

    from dscir.params import Interval

    Interval(numbers.Integral, 1).check("n_chains", n_chains)
    if n_chains > 1:
        if out is None:
            raise DscirError(f"{spell('n_chains > 1', '--chains N > 1')} needs "
                             f"{spell('out', '--out')}: the chains are "
                             "written to a run directory that diagnose reads")
        if checkpoint_every or resume is not None:
            raise DscirError(f"{spell('n_chains > 1', '--chains N > 1')} cannot be "
                             "checkpointed or resumed yet; fit without "
                             f"{spell('checkpoint_every / resume', '--checkpoint-every / --resume')}")
    return int(n_chains)


def fit_chains(estimator, plan, client, n_chains: int, *, out: str | Path,
               overwrite: bool = False):
    """Fit ``n_chains`` chains of ``estimator``'s ``plan`` (a ``dscir.api.base.Plan``)
    on ``client`` and write them to ``out``, each started and advanced as a single
    chain is (``Estimator._start``, ``Estimator._advance``); the estimator's
    learned attributes are then chain 0's and ``run_path_`` is ``out``."""
    from dscir.runs.chains import ChainsWriter

    seeds = [domains.chain_seed(plan.config.seed, c) for c in range(n_chains)]
    writer = ChainsWriter(out, model=plan.model_type.name, n_chains=n_chains,
                          overwrite=overwrite)
    try:
        chains = [estimator._start(plan, client, seed=s) for s in seeds]

        def run(c: int) -> None:
            estimator._advance(chains[c], estimator._iterations(plan.config, plan.store),
                               writer.writers[c], chain_index=c,
                               collect=False)

        with ThreadPoolExecutor(n_chains, thread_name_prefix="dscir-chain") as pool:
            for future in [pool.submit(run, c) for c in range(n_chains)]:
                future.result()
        estimator._collect(chains[0])
        estimator.run_path_ = str(writer.commit(plan.config.seed, seeds))
        estimator.n_chains_ = n_chains
    except BaseException:
        writer.abort()
        raise
    return estimator
