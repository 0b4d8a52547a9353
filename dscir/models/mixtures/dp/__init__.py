"""Dirichlet-process mixture of multinomials: sticks, per-user allocations, worker
tasks, the exact Gibbs slice sampler and the models the engine runs."""

from dscir.models.mixtures.dp.config import INITS, REFERENCE, DPMMConfig
from dscir.models.mixtures.dp.gibbs import GibbsSlice
from dscir.models.mixtures.predictive import PredictiveAverage
from dscir.models.mixtures.dp.allocation import (ComponentCounts, Sample, allocate,
                                       cluster_log_likelihood, component_counts, log_predictive,
                                       slice_log_u)
from dscir.models.mixtures.dp.model import (DPGibbsModel, DPMMModel, model_type, sample_arrays,
                                     samples_from_arrays)
from dscir.models.mixtures.dp.sticks import (MAX_COMPONENTS, global_step, initial_state, log_weights,
                                      new_sticks, prior_components, sample_alpha, stick_counts,
                                      stick_prior)

__all__ = ["ComponentCounts", "DPGibbsModel", "DPMMConfig", "DPMMModel", "GibbsSlice", "INITS",
           "MAX_COMPONENTS", "PredictiveAverage", "REFERENCE", "Sample", "allocate",
           "cluster_log_likelihood", "component_counts", "global_step", "initial_state",
           "log_predictive", "log_weights", "model_type", "new_sticks", "prior_components",
           "sample_alpha", "sample_arrays", "samples_from_arrays", "slice_log_u",
           "stick_counts", "stick_prior"]
