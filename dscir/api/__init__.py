"""Estimators in the scikit-learn style, one per model, on one base (``base.Estimator``).

Hyperparameters are stored unchanged by ``__init__`` and validated at ``fit``
from each estimator's constraint table; learned attributes end in an
underscore. ``None`` for a sampler-specific hyperparameter means the reference
setting of the papers for that sampler (``DPMM_DEFAULTS``, ``MIXTURE_DEFAULTS``;
for LDA the value its ``policy`` chooses, ``LDA_DEFAULTS`` with
``policy="reference"``).
"""

from dscir.api import registry
from dscir.api.dpmm import DPMM_DEFAULTS, DPMixture
from dscir.api.lda import LDA, LDA_DEFAULTS
from dscir.api.mixture import MIXTURE_DEFAULTS, Mixture
from dscir.api.session import session
from dscir.api.tune import tune

__all__ = ["DPMM_DEFAULTS", "DPMixture", "ESTIMATORS", "LDA", "LDA_DEFAULTS", "MIXTURE_DEFAULTS",
           "Mixture", "load", "session", "tune"]

#: The estimator of each model, by the name its runs carry (every ``Estimator``
#: subclass with a ``_model_name`` registers itself: ``dscir.api.registry``).
ESTIMATORS = registry.ESTIMATORS


def load(run):
    """The fitted estimator of a finished run store, whatever its model."""
    from dscir.errors import DscirError
    from dscir.runs.store import Run

    model = Run.open(run).model
    if model not in registry.ESTIMATORS:
        raise DscirError(f"{run} is a run of {model!r}, which this dscir does not know")
    return registry.ESTIMATORS[model].load(run)
