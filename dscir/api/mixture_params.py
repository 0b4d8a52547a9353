"""``dscir.DPMixture``'s and ``dscir.Mixture``'s parameters, each declared once
(``dscir.params.Param``).

Their signatures, constraint tables and docstrings, and ``dscir fit dpmm`` /
``dscir fit mixture``'s options are built from these tuples: each mixture's
configuration parameters (``dscir.models.mixtures.dp.config``,
``dscir.models.mixtures.finite.config``, from which its configuration is made;
``AUTO`` settings are the policy's, ``dscir.models.mixtures.policy``), then the
parameters that drive a run, declared here.
"""

from __future__ import annotations

import numbers

from dscir.api.stopping_params import n_iter_param, stopping_params
from dscir.engine.stopping import SCORE_EVERY_PASSES
from dscir.models.mixtures.dp import config as dp_config
from dscir.models.mixtures.finite import config as finite_config
from dscir.params import Interval, Options, Param

Int = numbers.Integral

#: The run's length, kept samples, scores and progress bar.
RUN: tuple[Param, ...] = (
    n_iter_param("log predictive"),
    *stopping_params(False),
    Param("burn_in", Interval(Int, 0, none=True), None,
          "samples are kept every thin iterations after burn_in (None: half of n_iter; "
          "with n_iter='auto' the stopping rule's); "
          "score averages the held-out predictive over them (held in memory, K x W "
          "floats each, to score other stores).", config=False),
    Param("eval_every", Interval(Int, 0), 0,
          "score the held-out rows every this many iterations (0: never, or every "
          f"{SCORE_EVERY_PASSES:g} passes with n_iter='auto'; on the command line, at the end).",
          config=False),
    Param("progress", Options((False, True)), True, "show a progress bar (on the command "
          "line: --progress, --no-progress, -q; by default only on a terminal).", flag=None,
          config=False),
)

DPMM: tuple[Param, ...] = (*dp_config.PARAMS, *RUN)
MIXTURE: tuple[Param, ...] = (*finite_config.PARAMS, *RUN)
