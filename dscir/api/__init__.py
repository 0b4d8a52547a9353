"""Estimators in the scikit-learn style, one per model, on one base (``base.Estimator``).

Hyperparameters are stored unchanged by ``__init__`` and validated at ``fit``
from each estimator's constraint table; learned attributes end in an
underscore. ``None`` for a sampler-specific hyperparameter means the reference
setting of the papers for that sampler (``LDA_DEFAULTS``, ``DPMM_DEFAULTS``).
"""

from dscir.api.dpmm import DPMM_DEFAULTS, DPMixture
from dscir.api.lda import LDA, LDA_DEFAULTS

__all__ = ["DPMM_DEFAULTS", "DPMixture", "LDA", "LDA_DEFAULTS"]
