"""Finite mixture of multinomials (K fixed clusters of documents): allocations, worker
tasks, the exact Gibbs sampler and the models the engine runs. Written only
against the model protocol (``dscir.models.base``), with the engine untouched."""

from dscir.models.mixtures.finite.collapsed import CollapsedMixtureGibbs
from dscir.models.mixtures.finite.config import INITS, REFERENCE, MixtureConfig
from dscir.models.mixtures.finite.gibbs import FiniteGibbs, global_step, initial_state, step_keys
from dscir.models.mixtures.finite.allocation import (PredictiveAverage, Sample, allocate,
                                          allocation_log_weights, cluster_log_likelihood,
                                          component_counts, log_predictive)
from dscir.models.mixtures.finite.model import (MixtureGibbsModel, MixtureModel, final_sample,
                                        model_type, predictive_score, sample_arrays,
                                        samples_from_arrays)

__all__ = ["CollapsedMixtureGibbs", "FiniteGibbs", "INITS", "MixtureConfig", "MixtureGibbsModel", "MixtureModel",
           "PredictiveAverage", "REFERENCE", "Sample", "allocate", "allocation_log_weights",
           "cluster_log_likelihood", "component_counts", "final_sample", "global_step",
           "initial_state", "log_predictive", "model_type", "predictive_score",
           "sample_arrays", "samples_from_arrays", "step_keys"]
