"""Latent Dirichlet allocation: configuration, per-document Gibbs sampling, worker tasks, evaluation,
the collapsed Gibbs baseline and the model the engine runs."""

from dscir.models.lda.collapsed import CollapsedGibbs
from dscir.models.lda.config import LDAConfig
from dscir.models.lda.evaluation import completion_split, perplexity
from dscir.models.lda.gibbs import completion_log_likelihood, gibbs_expectations
from dscir.models.lda.model import LDAModel
from dscir.models.lda.policy import REFERENCE

__all__ = ["CollapsedGibbs", "LDAConfig", "LDAModel", "REFERENCE", "completion_log_likelihood",
           "completion_split", "gibbs_expectations", "perplexity"]
