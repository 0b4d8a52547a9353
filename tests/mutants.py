"""Mutation check: every plausible bug below must make its guarding tests fail.

    PYTHONPATH=. python tests/mutants.py            # the whole table (about 50 minutes on 2 cores)
    PYTHONPATH=. python tests/mutants.py lda-scale-dropped dp-scale-dropped   # some
    PYTHONPATH=. python tests/mutants.py --ci --list    # what CI runs here, and its estimated time
    PYTHONPATH=. python tests/mutants.py --ci --no-baseline  # CI: after the tests passed

CI runs ``CI_MUTANTS`` mutants, a fixed number so its time does not grow with the
table: first those a change touches (the mutated module, a guarding test's file
or the mutant itself changed since the base), then a sample of the others drawn
by the commit's hash, so every mutant runs over successive commits. The base is
``--since REV`` if given, else the merge-base with ``origin/main`` when HEAD is
not on it, else the state ``CI_COMMITS`` commits back (a fresh clone of main:
the last landing's commits); with no git history, only the sample runs. Touched
mutants beyond the budget wait for a later commit's sample: a change to a
guarded module runs the whole table (the first command) before it lands, and
its closing note says so.

For each mutant the package, the tests, docs/ and pyproject.toml are copied to a
temporary directory, the mutant's exact original text is replaced (it must
occur exactly once, or the script stops: the table has gone stale; checked for
the whole table whatever runs), and the guarding tests run there (cwd and
PYTHONPATH at the copy, so the mutated package is the one imported, also by
Dask workers; ``-m ""``: a guarding test runs even if marked ``slow``). A
mutant is killed when the tests fail. First the guarding tests run on an
unmutated copy and must pass (otherwise a failing test would "kill"
everything). Exit status 0 only if the baseline passes and every mutant is
killed.

numba's cache files are copied with the package: unmutated modules load their
compiled kernels; a mutated module and every module importing it, directly or
not, are compiled again (a cached kernel holds what it inlined from others).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent


class Mutant(NamedTuple):
    name: str
    path: str  # relative to the repository root
    original: str  # exact text; must occur exactly once
    replacement: str
    tests: tuple[str, ...]  # pytest node ids that must fail


LAWS = "tests/samplers/test_sampler_laws.py"
GAMMA = LAWS + "::test_stationary_law_on_a_gamma_target"
DIRICHLET = LAWS + "::test_stationary_law_on_a_dirichlet_posterior"
SCALE = "tests/models/test_minibatch_scale.py"
CONTROL = "tests/engine/test_control.py"
MIXBLOCKS = "tests/models/test_mixture_components.py"
PLACEMENT = "tests/engine/test_placement.py"
MIX_STREAM = "tests/api/test_mixture_streaming.py"
AUTO_STOP = "tests/engine/test_auto_stop.py"
STUDY = "tests/diagnostics/test_dirichlet_study.py::test_scir_beats_sgrld_on_the_sparse_posterior"
GSGRHMC = "tests/samplers/test_gsgrhmc.py"
GSGRHMC_DRIFT = GSGRHMC + "::test_drift_is_the_recipe_drift_with_the_finite_difference_gradient"
GSGRHMC_NOISE = GSGRHMC + "::test_noise_is_normal_with_variance_2_eps_theta"
GSGRHMC_JOINT = GSGRHMC + "::test_joint_stationary_law_gamma_position_and_normal_momentum"
GSGRHMC_POSITION = GSGRHMC + "::test_position_moves_with_the_new_momentum_scaled_by_sqrt_theta"
GSGRHMC_REFLECTION = GSGRHMC + "::test_reflection_at_zero_flips_position_and_momentum"
INTEGRATORS = "tests/samplers/test_integrators.py"
TEXT_DP = "tests/models/dpmm/test_dpmm_text.py"
PARAMS_TESTS = "tests/api/test_params.py"
RECIPES = "tests/test_recipes.py"
INTEGRATORS_BIASED = INTEGRATORS + "::test_gsgrhmc_joint_law_where_euler_is_biased"
RELABEL = "tests/models/dpmm/test_relabel.py"
RELABEL_LAW = RELABEL + "::test_move_keeps_the_exact_law_of_labellings"
SPLIT_MERGE = "tests/models/dpmm/test_split_merge.py"
SPLIT_MERGE_LAW = SPLIT_MERGE + "::test_split_merge_samples_the_enumerated_partition_posterior"
SPLIT_MERGE_SCAN = SPLIT_MERGE + "::test_restricted_scan_weighs_each_user_by_its_exact_conditional"
INTEGRATORS_DIVERGES = INTEGRATORS + "::test_gsgrhmc_joint_law_where_euler_diverges"
INTEGRATORS_DIRICHLET = INTEGRATORS + "::test_gsgrhmc_dirichlet_posterior_at_a_large_step"
INTEGRATORS_SINGULAR = INTEGRATORS + "::test_gsgrhmc_keeps_a_singular_gamma_law"
LOG_FLOW = "tests/samplers/test_log_flow.py"
RESUME_INTEGRATOR = "tests/api/test_resume_integrator.py"
KSD_BRUTE = "tests/diagnostics/test_ksd.py::test_matches_a_brute_force_double_loop"
KSD_NORMAL = "tests/diagnostics/test_ksd.py::test_standard_normal_target"
STEIN = "tests/diagnostics/test_stein.py"
FITTED = "tests/api/test_fitted_topics.py"
FITTED_MIX = "tests/api/test_fitted_components.py"
DIAG = "tests/api/test_diagnose_stored.py"
DIAG_DENSE = DIAG + "::test_lda_diagnosis_is_the_dense_one"
DIAG_BUDGET = DIAG + "::test_diagnose_never_holds_k_by_w"
PYLDAVIS = "tests/api/test_pyldavis.py"
STEIN_GRADIENT = STEIN + "::test_score_is_the_gradient_of_the_exact_log_posterior"
STEIN_CONJUGATE = (STEIN + "::test_exact_samples_of_a_conjugate_posterior_give_a_small_ksd_"
                   "biased_a_large_one")
TUNE = "tests/api/test_tune.py::test_the_choice_is_the_smallest_ksd_and_not_the_stuck_chain"
DIRICHLET_KSD = "tests/diagnostics/test_dirichlet_ksd.py"
CUDA = "tests/models/lda/test_gibbs_cuda.py"
DP_STEIN = "tests/diagnostics/test_dp_stein.py"
DP_GRADIENT = DP_STEIN + "::test_score_is_the_gradient_of_the_log_posterior"
DP_CONJUGATE = (DP_STEIN + "::test_exact_conjugate_draws_give_a_small_ksd_biased_ones_a_"
                "large_one")
DP_RESPONSIBILITIES = DP_STEIN + "::test_responsibilities_are_the_users_exact_ones"
DP_MINIBATCH = (DP_STEIN + "::test_minibatch_estimate_averages_to_the_full_data_and_all_is_"
                "exact")
DP_CHAIN = DP_STEIN + "::test_chain_ksd_of_all_users_is_the_exact_scores_ksd"
DP_COMPLETION = DP_STEIN + "::test_a_sample_with_few_sticks_is_completed_by_prior_draws"
DP_DIAGNOSE = DP_STEIN + "::test_diagnose_gives_each_dp_chains_ksd"
TUNE_CHOOSE = "tests/api/test_tune.py::test_choose_takes_the_ksd_column_and_never_an_exploded_chain"
STEIN_UNBIASED = STEIN + "::test_minibatch_count_estimate_is_unbiased_for_the_full_data_counts"
WARM = "tests/models/lda/test_warm_start.py"
SHARDS = "tests/engine/test_shards.py"
LOCAL = "tests/engine/test_local_state.py"
OUT_OF_CORE = "tests/engine/test_out_of_core.py"
OUT_OF_CORE_FIT = (OUT_OF_CORE + "::test_a_store_larger_than_the_workers_memory_is_streamed"
                   "_and_the_chain_unchanged")
CV = "tests/models/lda/test_control_variates.py"
PRIVATE = "tests/engine/test_private_cluster.py"
UNFINISHED = "tests/runs/test_unfinished_runs.py"
INTERRUPTS = "tests/engine/test_interrupts.py"
CONVERGENCE = "tests/diagnostics/test_convergence.py"
REPORT = "tests/report/test_report.py"
SPARSE = "tests/models/lda/test_lda_sparse_kernel.py"
BLOCKED = "tests/models/lda/test_blocked.py"
BLOCK_MEMORY = "tests/models/lda/test_block_memory.py"
SPARSE_TOKEN = SPARSE + "::test_token_transition_leaves_its_conditional_invariant"
LAZY = "tests/samplers/test_lazy_cir.py"
LAZY_COMPOSE = LAZY + "::test_lazy_gaps_compose_to_the_dense_chain_in_law"
LAZY_TOUCH = LAZY + "::test_a_touch_after_a_gap_is_the_exact_transition_over_the_summed_steps"
LAZY_STATIONARY = LAZY + "::test_stationary_law_is_gamma_prior_with_zero_counts"
LAZY_MOMENTS = LAZY + "::test_moments_are_the_conditional_mean_and_variance_of_the_row_totals"
LAZY_DRAWN = LAZY + "::test_drawn_totals_have_the_moments_and_nearly_the_law_of_the_realized_ones"
LAZY_KEPT = LAZY + "::test_kept_mean_is_the_sum_of_the_conditional_expectations_over_r"
LAZY_STREAMS = LAZY + "::test_streams_are_named_by_word_not_by_block"
LAZY_LDA = LAZY + "::test_lda_chains_with_the_lazy_step_score_like_the_dense_ones"
LAZY_KERNELS = "dscir/samplers/_cir_lazy.py"
LDA_LAZY = "tests/models/lda/test_lda_lazy.py"
LDA_LAZY_TOPICS = "dscir/models/lda/topics_lazy.py"
LAZY_BLOCKS = "dscir/models/lda/lazy_blocks.py"
LDA_LAZY_SAME = LDA_LAZY + "::test_same_chain_in_both_placements_on_one_and_two_workers"
LDA_LAZY_STEP = LDA_LAZY + "::test_step_moves_the_minibatch_columns_with_the_scaled_counts"
LDA_LAZY_RESUME = LDA_LAZY + "::test_resumed_chain_equals_uninterrupted"
SPARSE_JOINT = SPARSE + "::test_joint_topics_of_a_tiny_document_match_brute_force"
SPARSE_WORD = SPARSE + "::test_word_proposal_draws_the_word_row"
POLICY = "tests/models/lda/test_lda_policy.py"
MIX_BATCH = ("tests/models/test_dpmm_policy.py::"
             "test_finite_mixture_minibatch_holds_tokens_per_word_up_to_a_quarter")
DIVERGED = "tests/models/lda/test_lda_driver.py::test_a_diverged_chain_is_one_clear_error"
SCALED = "tests/samplers/test_cir_scaled.py"
DRIVER_TOPICS = "tests/models/lda/test_driver_topics.py"
LAYERS = "tests/test_layers.py"
SESSION = "tests/api/test_session.py"

CONVENTION = "tests/cli/test_cli_convention.py"
MESSAGES = "tests/cli/test_cli_messages.py"

MUTANTS = [
    # -- scikit-learn estimators (issue 31, deliverable 1) --
    Mutant("load-ignores-the-recorded-parameters", "dscir/api/sklearn_compat.py",
           "        if run.params is None:\n            return False\n",
           "        if True:\n            return False\n",
           ("tests/api/test_sklearn.py::test_load_gives_back_the_parameters_the_run_used",
            "tests/api/test_sklearn.py::test_load_gives_back_a_dp_mixtures_pair_parameters")),
    Mutant("run-records-no-parameters", "dscir/api/base.py",
           "arrays=arrays, params=self._recorded_params())", "arrays=arrays, params=None)",
           ("tests/api/test_sklearn.py::test_load_gives_back_the_parameters_the_run_used",)),
    Mutant("partial-fit-averages-in-old-samples", "dscir/api/streaming.py",
           "return dataclasses.replace(ckpt, arrays=arrays, n_samples=0)", "return ckpt",
           ("tests/api/test_sklearn.py::test_partial_fit_topics_are_the_calls_own_samples",)),
    Mutant("partial-fit-does-not-move-the-topics", "dscir/api/streaming.py",
           "    est._advance(chain, n_iter, eval_every=", "    est._advance(chain, 0, eval_every=",
           ("tests/api/test_sklearn.py::test_partial_fit_moves_the_topics_to_the_new_documents",
            MIX_STREAM + "::test_partial_fit_moves_the_components_to_the_second_halfs_clusters")),
    Mutant("partial-fit-d-is-the-new-rows-alone", "dscir/api/streaming.py",
           "seen = est.n_documents_seen_ + int(", "seen = 0 + int(",
           ("tests/api/test_sklearn.py::test_partial_fit_moves_the_topics_to_the_new_documents",
            MIX_STREAM + "::test_partial_fit_moves_the_components_to_the_second_halfs_clusters")),
    Mutant("partial-fit-keeps-the-first-fits-d", "dscir/api/streaming.py",
           "        chain.model.n_documents = seen\n", "",
           ("tests/api/test_sklearn.py::test_partial_fit_moves_the_topics_to_the_new_documents",
            MIX_STREAM + "::test_partial_fit_moves_the_components_to_the_second_halfs_clusters")),
    Mutant("mixture-partial-fit-keeps-old-samples", "dscir/api/streaming.py",
           "return dataclasses.replace(ckpt, arrays=arrays, values=values, n_samples=0)",
           "return ckpt",
           (MIX_STREAM + "::test_a_call_keeps_only_its_own_samples",)),
    Mutant("dp-scale-ignores-the-documents-seen", "dscir/models/mixtures/dp/model.py",
           "scale = self.n_documents / users.size", "scale = self.data.train.size / users.size",
           (SCALE + "::test_dp_statistics_are_scaled_by_n_over_minibatch",)),
    Mutant("mixture-scale-ignores-the-documents-seen", "dscir/models/mixtures/finite/model.py",
           "scale = self.n_documents / docs.size", "scale = self.data.train.size / docs.size",
           (SCALE + "::test_mixture_statistics_are_scaled_by_n_over_minibatch",)),
    Mutant("lda-scale-ignores-the-documents-seen", "dscir/models/lda/model.py",
           "scale = self.n_documents / parts.docs.size\n",
           "scale = self.data.train.size / parts.docs.size\n",
           ("tests/api/test_sklearn.py::test_a_streams_minibatch_is_scaled_by_the_documents_seen",)),
    Mutant("pickle-drops-the-kept-mean", "dscir/api/sklearn_compat.py",
           '        chain = state.pop("_chain", None)\n',
           '        chain = state.pop("_chain", None)\n        state.pop("_average", None)\n',
           ("tests/api/test_sklearn.py::test_a_pickled_mixture_keeps_the_kept_mean_of_its_held_out_score",)),
    Mutant("pickle-drops-the-stream-state", "dscir/api/streaming.py",
           'return {"_stream_state": stream_checkpoint(chain)}', "return {}",
           ("tests/api/test_sklearn.py::test_partial_fit_continues_after_a_pickle_round_trip",
            MIX_STREAM + "::test_partial_fit_is_a_function_of_the_seed")),
    Mutant("interrupted-checkpoint-write-leaves-its-partial-entry", "dscir/runs/checkpoint.py",
           "            integrity.remove_unfinished(tmp)\n            raise\n",
           "            raise\n",
           ("tests/runs/test_resume.py::test_a_checkpoint_write_interrupted_by_ctrl_c_leaves_"
            "no_partial_entry",)),
    Mutant("unfinished-store-removed-before-zarrs-writes-end", "dscir/integrity.py",
           "    _settle_writes(timeout)\n    shutil.rmtree(", "    shutil.rmtree(",
           ("tests/runs/test_integrity.py::test_an_unfinished_store_is_removed_after_zarrs_"
            "writes_in_flight",)),
    Mutant("python-interrupt-logs-nothing", "dscir/api/interrupted.py",
           "    if not isinstance(exc, (KeyboardInterrupt, Terminated)) or on_command_line():",
           "    if True:",
           ("tests/engine/test_interrupts.py::test_ctrl_c_in_python_is_one_warning_of_the_"
            "dscir_logger",)),
    Mutant("python-interrupt-printed-not-logged", "dscir/api/interrupted.py",
           '    log.warning("%s at iteration %d of %d; %s", what, chain.iteration, end,\n'
           "                _where(writer))",
           '    print("%s at iteration %d of %d; %s" % (what, chain.iteration, end,\n'
           "          _where(writer)), file=__import__('sys').stderr)",
           ("tests/engine/test_interrupts.py::test_ctrl_c_in_python_is_one_warning_of_the_"
            "dscir_logger",)),
    Mutant("small-fits-start-a-cluster", "dscir/api/session.py",
           'return int(c.meta["n_tokens"]) * train <= IN_PROCESS_TOKENS * max(c.n_docs, 1)',
           "return False",
           ("tests/api/test_sklearn.py::test_a_matrix_runs_here_and_a_store_goes_to_a_cluster",)),
    Mutant("a-store-runs-here", "dscir/api/session.py",
           "return is_store(X) or cluster_named(client, cluster)",
           "return cluster_named(client, cluster)",
           ("tests/api/test_sklearn.py::test_a_matrix_runs_here_and_a_store_goes_to_a_cluster",)),
    Mutant("dscir-error-not-a-value-error", "dscir/errors.py",
           "class DscirError(ValueError):", "class DscirError(Exception):",
           ("tests/api/test_sklearn.py::test_invalid_parameters_raise_a_value_error",)),
    Mutant("score-of-a-matrix-fit-reads-a-removed-store", "dscir/api/base.py",
           "            self.store_ = None  # the temporary store is gone\n", "            pass\n",
           ("tests/api/test_sklearn.py::test_score_takes_sparse_and_dense_matrices_and_says_what_to_pass_without",)),
    # -- the review's table (issue 15) --
    # (the default "splitting" integrator's force; the Euler step's is gsgrhmc-naive-drift)
    Mutant("gsgrhmc-naive", "dscir/samplers/sgrhmc.py",
           "counts[i, w] - 0.5  # a - 1/2", "counts[i, w] - 1.0  # a - 1/2",
           (GAMMA + "[gsgrhmc-1.0-0.05-2000-0.05]",
            DIRICHLET + "[gsgrhmc-0.05-2000-1000-0.08]", INTEGRATORS_BIASED,
            INTEGRATORS_DIVERGES, INTEGRATORS_DIRICHLET, INTEGRATORS_SINGULAR)),
    Mutant("lda-scale-off-by-one", "dscir/models/lda/model.py",
           "scale = self.n_documents / parts.docs.size\n",
           "scale = self.n_documents / (parts.docs.size + 1)\n",
           (SCALE + "::test_lda_counts_are_scaled_by_d_over_minibatch_over_kept_sweeps",)),
    Mutant("lda-scale-dropped", "dscir/models/lda/topics.py",
           "factor = scale / kept_sweeps(cfg)\n",
           "factor = 1 / kept_sweeps(cfg)\n",
           (SCALE + "::test_lda_counts_are_scaled_by_d_over_minibatch_over_kept_sweeps",)),
    Mutant("dp-scale-dropped", "dscir/models/mixtures/dp/model.py",
           "scale = self.n_documents / users.size", "scale = 1.0",
           (SCALE + "::test_dp_statistics_are_scaled_by_n_over_minibatch",)),
    Mutant("dp-policy-ignores-words", "dscir/models/mixtures/policy.py",
           "if n_words >= TEXT_WORDS:\n        out.update(",
           "if n_docs >= 0:\n        out.update(",
           ("tests/models/test_dpmm_policy.py::test_auto_policy_depends_on_the_vocabulary",)),
    Mutant("dp-policy-unseeded", "dscir/models/mixtures/policy.py",
           "out.update(init=TEXT_DP_INIT, n_init=TEXT_COMPONENTS,",
           "out.update(n_init=TEXT_COMPONENTS,",
           ("tests/models/test_dpmm_policy.py::test_auto_policy_depends_on_the_vocabulary",
            "tests/models/test_dpmm_policy.py::test_estimator_resolves_the_policy_on_the_corpus")),
    Mutant("dp-policy-scir-on-text", "dscir/models/mixtures/policy.py",
           "        return TEXT_SAMPLER\n", "        return DEFAULT_SAMPLER\n",
           ("tests/models/test_dpmm_policy.py::"
            "test_auto_policy_runs_sgrld_on_text_unless_a_sampler_is_named",
            "tests/models/test_dpmm_policy.py::test_estimator_resolves_the_policy_on_the_corpus")),
    Mutant("dp-policy-sgrld-reference-on-text", "dscir/models/mixtures/policy.py",
           'TEXT_SGRLD = {"a0": 0.1, "step_sizes": (0.03, 0.005)}',
           'TEXT_SGRLD = {"a0": 0.001, "step_sizes": (0.001, 0.005)}',
           ("tests/models/test_dpmm_policy.py::test_default_sgrld_recovers_the_clusters_over_a_wide_vocabulary",
            "tests/models/test_dpmm_policy.py::"
            "test_default_samplers_recover_the_clusters_the_reference_merges")),
    Mutant("dp-policy-sgrld-a0-kept", "dscir/models/mixtures/policy.py",
           'TEXT_SGRLD = {"a0": 0.1, "step_sizes": (0.03, 0.005)}',
           'TEXT_SGRLD = {"a0": 0.001, "step_sizes": (0.03, 0.005)}',
           ("tests/models/test_dpmm_policy.py::"
            "test_default_samplers_recover_the_clusters_the_reference_merges",)),
    Mutant("dp-policy-sgrld-step-kept", "dscir/models/mixtures/policy.py",
           'TEXT_SGRLD = {"a0": 0.1, "step_sizes": (0.03, 0.005)}',
           'TEXT_SGRLD = {"a0": 0.1, "step_sizes": (0.001, 0.005)}',
           ("tests/models/test_dpmm_policy.py::test_estimator_resolves_the_policy_on_the_corpus",)),
    Mutant("dp-full-conditional-a0-fixed", "dscir/models/mixtures/dp/sticks.py",
           "theta = sampler.step(theta, a0, counts, step_sizes[0], keys[1])",
           "theta = sampler.step(theta, 0.5, counts, step_sizes[0], keys[1])",
           ("tests/models/dpmm/test_dpmm.py::test_global_step_with_infinite_steps_is_the_exact_gibbs_update",)),
    Mutant("dp-sgrld-settings-on-scir", "dscir/api/dpmm.py",
           'values.update(sampler=sampler, ', 'values.update(sampler="scir", ',
           ("tests/models/test_dpmm_policy.py::test_estimator_resolves_the_policy_on_the_corpus",)),
    Mutant("mixture-policy-unseeded", "dscir/models/mixtures/policy.py",
           'MIXTURE_TEXT_INIT = "collapsed"', 'MIXTURE_TEXT_INIT = "random"',
           ("tests/models/test_dpmm_policy.py::test_seeded_finite_mixture_beats_the_random_start",)),
    Mutant("mixture-policy-kmeans-start", "dscir/models/mixtures/policy.py",
           'MIXTURE_TEXT_INIT = "collapsed"', 'MIXTURE_TEXT_INIT = "kmeans++"',
           ("tests/models/mixture/test_mixture_text.py::"
            "test_default_recovers_the_clusters_the_previous_defaults_collapse",)),
    Mutant("mixture-policy-reference-a0", "dscir/models/mixtures/policy.py",
           'out["a0"] = min(out["a0"], share)', 'out["a0"] = out["a0"]',
           ("tests/models/mixture/test_mixture_text.py::"
            "test_default_recovers_the_clusters_the_previous_defaults_collapse",
            "tests/models/mixture/test_mixture_text.py::"
            "test_at_the_reference_a0_the_model_itself_prefers_merged_clusters")),
    Mutant("collapsed-mixture-rising-one-short", "dscir/models/mixtures/dp/allocation.py",
           "    for j in range(1, n):", "    for j in range(1, n - 1):",
           ("tests/models/mixture/test_mixture_collapsed.py::test_a_count_scores_as_the_lgamma"
            "_difference",
            "tests/models/mixture/test_mixture_collapsed.py::test_conditional_is_the_ratio_of"
            "_enumerated_joints")),
    Mutant("collapsed-mixture-weights-dropped", "dscir/models/mixtures/finite/collapsed.py",
           "score[k] = (math.log(m[k] + gamma) + math.lgamma",
           "score[k] = (0.0 + math.lgamma",
           ("tests/models/mixture/test_mixture_collapsed.py::test_conditional_is_the_ratio_of_enumerated_joints",
            "tests/models/mixture/test_mixture_collapsed.py::test_chain_visits_the_enumerated_posterior")),
    Mutant("collapsed-mixture-document-not-removed", "dscir/models/mixtures/finite/collapsed.py",
           "        _move(indptr, indices, data, i, z[i], -1, m, n, ct)\n"
           "        top = _doc_scores(indptr, indices, data, i, m, n, ct, gamma, a0, a0w, score)",
           "        top = _doc_scores(indptr, indices, data, i, m, n, ct, gamma, a0, a0w, score)\n"
           "        _move(indptr, indices, data, i, z[i], -1, m, n, ct)",
           ("tests/models/mixture/test_mixture_collapsed.py::test_chain_visits_the_enumerated_posterior",)),
    Mutant("collapsed-mixture-prior-mass-not-w", "dscir/models/mixtures/finite/collapsed.py",
           "self.a0 * self.n_words, np.uint64(key))", "self.a0, np.uint64(key))",
           ("tests/models/mixture/test_mixture_collapsed.py::test_chain_visits_the_enumerated_posterior",)),
    Mutant("mixture-collapsed-start-ignored", "dscir/models/mixtures/finite/model.py",
           'elif config.init == "collapsed":', 'elif config.init == "never":',
           ("tests/models/mixture/test_mixture_text.py::"
            "test_default_recovers_the_clusters_the_previous_defaults_collapse",)),
    Mutant("dp-alpha-from-prior", "dscir/models/mixtures/dp/sticks.py",
           "log_g = sample_stationary(np.array([shape + n_sticks]), key)[0]\n"
           "    return float(np.exp(log_g) / (rate - log_rest))",
           "log_g = sample_stationary(np.array([shape]), key)[0]\n"
           "    return float(np.exp(log_g) / rate)",
           ("tests/models/dpmm/test_dp_alpha.py",)),
    Mutant("study-scir-grid-too-small", "dscir/experiments/dirichlet.py",
           '"scir": [1, 0.5, 0.1, 0.05, 0.01, 0.005, 0.001]',
           '"scir": [1e-3, 5e-4, 1e-4, 5e-5, 1e-5, 5e-6, 1e-6]',
           (STUDY,)),
    Mutant("dirichlet-ksd-score-without-counts", "dscir/diagnostics/stein.py",
           "return eta, alpha + counts - np.exp(eta)", "return eta, alpha - np.exp(eta)",
           (DIRICHLET_KSD + "::test_score_is_the_gradient_of_the_log_density_of_eta",)),
    Mutant("dirichlet-ksd-totals-from-the-prior", "dscir/diagnostics/stein.py",
           "rng.gamma(counts.size * alpha + counts.sum(), 1.0, size=size)",
           "rng.gamma(counts.size * alpha, 1.0, size=size)",
           (DIRICHLET_KSD + "::test_completion_gives_the_exact_gamma_totals_and_gamma_thetas",
            DIRICHLET_KSD + "::test_exact_draws_get_a_smaller_ksd_than_biased_ones")),
    Mutant("dirichlet-ksd-of-the-last-step-size", "dscir/experiments/dirichlet.py",
           '"ksd": best[3]', '"ksd": d',
           (DIRICHLET_KSD + "::test_study_reports_the_ksd_of_the_chosen_chain_and_the_grids_"
            "smallest",)),
    # -- more --
    Mutant("mixture-scale-dropped", "dscir/models/mixtures/finite/model.py",
           "scale = self.n_documents / docs.size", "scale = 1.0",
           (SCALE + "::test_mixture_statistics_are_scaled_by_n_over_minibatch",)),
    Mutant("scir-poisson-mean-without-1/(1-e^-h)", "dscir/samplers/cir.py",
           "log_ratio = -h - log_scale", "log_ratio = -h",
           ("tests/samplers/test_cir.py::test_one_step_is_the_noncentral_chi_square",)),
    Mutant("scir-without-(1-e^-h)-scale", "dscir/samplers/cir.py",
           "out[j] = log_scale + _log_poisson_gamma(", "out[j] = _log_poisson_gamma(",
           ("tests/samplers/test_cir.py::test_one_step_is_the_noncentral_chi_square",)),
    Mutant("sgrld-drift-without-total-term", "dscir/samplers/sgrld.py",
           "drift = a - t - total_c * t / total_t",
           "drift = a - t",
           (DIRICHLET + "[sgrld-0.01-3000-1500-0.07]",)),
    Mutant("sgrld-noise-halved", "dscir/samplers/sgrld.py",
           "np.sqrt(2.0 * eps * t)", "np.sqrt(eps * t)",
           (GAMMA + "[sgrld-1.0-0.01-3000-0.05]",)),
    Mutant("sgld-noise-halved", "dscir/samplers/sgld.py",
           "noise = np.sqrt(2.0 * eps)", "noise = np.sqrt(eps)",
           (GAMMA + "[sgld-5.0-0.01-3000-0.055]",)),
    Mutant("sghmc-without-friction", "dscir/samplers/sghmc.py",
           "decay = np.exp(-eps * friction)\n    noise = np.sqrt(-np.expm1(-2.0 * eps * friction))",
           "decay = 1.0\n    noise = 0.0",
           (GAMMA + "[sghmc-5.0-0.05-1500-0.05]",)),
    # -- the splitting integrator (issue 34) --
    Mutant("gsgrhmc-splitting-o-variance", "dscir/samplers/sgrhmc.py",
           "np.sqrt(-np.expm1(-2.0 * eps * v))", "np.sqrt(-np.expm1(-eps * v))",
           (INTEGRATORS + "::test_gsgrhmc_o_step_is_the_exact_ou_transition",
            INTEGRATORS_BIASED)),
    Mutant("gsgrhmc-splitting-asymmetric", "dscir/samplers/sgrhmc.py",
           "lead = 0.5 * eps  #", "lead = eps  #",
           (INTEGRATORS_BIASED, INTEGRATORS_DIVERGES)),
    Mutant("gsgrhmc-log-flow-rate", "dscir/samplers/_log_flow.py",
           "math.sqrt(2.0 * c / math.pi) * t", "math.sqrt(c / math.pi) * t",
           (LOG_FLOW + "::test_flow_is_the_ode_solution", INTEGRATORS_SINGULAR)),
    Mutant("gsgrhmc-log-flow-wraps-rising", "dscir/samplers/_log_flow.py",
           "return _on_orbit(log_m, -inv_log_erfc(math.log(2.0 - x), math.nan), k)",
           "return _on_orbit(log_m, inv_log_erfc(math.log(2.0 - x), math.nan), k)",
           (LOG_FLOW + "::test_reflected_flow_keeps_the_energy_and_is_reversible",)),
    Mutant("log-flow-newton-instead-of-halley", "dscir/samplers/_log_flow.py",
           "return max(p + step / (1.0 + 0.5 * step * (1.0 / inv_g - 2.0 * p)), 0.0)",
           "return max(p + step, 0.0)",
           (LOG_FLOW + "::test_the_inverse_is_the_root_to_rounding",)),
    Mutant("log-flow-halley-sign", "dscir/samplers/_log_flow.py",
           "(1.0 + 0.5 * step * (1.0 / inv_g", "(1.0 - 0.5 * step * (1.0 / inv_g",
           (LOG_FLOW + "::test_the_inverse_is_the_root_to_rounding",)),
    Mutant("gsgrhmc-splitting-flow-above-one-half", "dscir/samplers/sgrhmc.py",
           "if half < 0.0:  # singular", "if half < 1e9:  # singular",
           (INTEGRATORS_DIRICHLET,)),
    Mutant("sghmc-splitting-o-variance", "dscir/samplers/sghmc.py",
           "noise = np.sqrt(-np.expm1(-2.0 * eps * friction))",
           "noise = np.sqrt(-np.expm1(-eps * friction))",
           (INTEGRATORS + "::test_sghmc_o_step_is_the_exact_ou_transition",
            INTEGRATORS + "::test_sghmc_joint_law_where_euler_diverges")),
    Mutant("sghmc-splitting-asymmetric", "dscir/samplers/sghmc.py",
           "lead = 0.5 * eps  #", "lead = eps  #",
           (INTEGRATORS + "::test_sghmc_joint_law_where_euler_diverges",)),
    Mutant("integrator-not-recorded", "dscir/api/lda.py",
           'if k in options or k == "integrator"}', "if k in options}",
           (RESUME_INTEGRATOR + "::test_a_resume_keeps_the_default_it_ran_when_the_default_"
            "changes",)),
    Mutant("resume-ignores-the-recorded-integrator", "dscir/api/lda.py",
           "options = resumed_options(self.sampler, self.sampler_options, resume)",
           "options = self.sampler_options",
           (RESUME_INTEGRATOR + "::test_a_resume_continues_with_the_recorded_integrator",)),
    # -- gSGRHMC piece by piece (issue 20) --
    Mutant("gsgrhmc-naive-drift", "dscir/samplers/sgrhmc.py",
           "drift = (a - 0.5) / st", "drift = (a - 1.0) / st", (GSGRHMC_DRIFT,)),
    Mutant("gsgrhmc-gradient-without-total-term", "dscir/samplers/sgrhmc.py",
           "drift = (a - 0.5) / st - st * (1.0 + ratio)", "drift = (a - 0.5) / st - st",
           (GSGRHMC_DRIFT,)),
    Mutant("gsgrhmc-identity-friction", "dscir/samplers/sgrhmc.py",
           "- t * r[i, w]", "- r[i, w]", (GSGRHMC_DRIFT, GSGRHMC_JOINT)),
    Mutant("gsgrhmc-noise-halved", "dscir/samplers/sgrhmc.py",
           "np.sqrt(2.0 * eps * t)", "np.sqrt(eps * t)", (GSGRHMC_NOISE, GSGRHMC_JOINT)),
    Mutant("gsgrhmc-position-old-momentum", "dscir/samplers/sgrhmc.py",
           "v = t + eps * st * m", "v = t + eps * st * r[i, w]", (GSGRHMC_POSITION,)),
    Mutant("gsgrhmc-reflection-keeps-momentum", "dscir/samplers/_expanded.py",
           "return -v, -m", "return -v, m",
           (GSGRHMC_REFLECTION,)),
    # -- kernel Stein discrepancy (issue 17, part 3) --
    Mutant("ksd-cross-term-dropped", "dscir/diagnostics/ksd.py",
           "term -= (2.0 * b) * delta * (sx - sy) * ub1\n", "\n",
           (KSD_BRUTE, KSD_NORMAL)),
    Mutant("ksd-dxk-sign", "dscir/diagnostics/ksd.py",
           "(sx - sy) * ub1", "(sx + sy) * ub1", (KSD_BRUTE, KSD_NORMAL)),
    Mutant("ksd-dxdyk-sign", "dscir/diagnostics/ksd.py",
           "term -= (4.0 * b * (b - 1.0))", "term += (4.0 * b * (b - 1.0))",
           (KSD_BRUTE, KSD_NORMAL)),
    Mutant("ksd-dxdyk-constant-dropped", "dscir/diagnostics/ksd.py",
           "totals[j] += term.sum() + const", "totals[j] += term.sum()",
           (KSD_BRUTE, KSD_NORMAL)),
    # -- the KSD of LDA runs: the score in eta = log theta and its estimate --
    Mutant("stein-jacobian-dropped", "dscir/diagnostics/stein.py",
           "score = beta + counts[:, words]", "score = beta - 1.0 + counts[:, words]",
           (STEIN_GRADIENT, STEIN_CONJUGATE)),
    Mutant("stein-prior-term-dropped", "dscir/diagnostics/stein.py",
           "counts[:, words] - theta - phi", "counts[:, words] - phi",
           (STEIN_GRADIENT, STEIN_CONJUGATE)),
    Mutant("stein-normaliser-term-dropped", "dscir/diagnostics/stein.py",
           " - phi[:, words] * n_k", "", (STEIN_GRADIENT, STEIN_CONJUGATE)),
    Mutant("stein-minibatch-scale-dropped", "dscir/api/stein.py",
           "counts * (train.size / batch.size / results[0].n_kept)",
           "counts / results[0].n_kept", (STEIN_UNBIASED,)),
    # -- the KSD of DP-mixture runs: the sticks' score in logit v and its estimate --
    Mutant("dp-stein-jacobian-dropped", "dscir/diagnostics/dp_stein.py",
           "return 1.0 + m - (1.0 + float(alpha) + tail) * v",
           "return m - (float(alpha) - 1.0 + tail) * v", (DP_GRADIENT, DP_CONJUGATE)),
    Mutant("dp-stein-tail-after-j", "dscir/diagnostics/dp_stein.py",
           "tail = scale * np.cumsum(r[::-1])[::-1][: u.size]",
           "tail = scale * (np.cumsum(r[::-1])[::-1] - r)[: u.size]",
           (DP_GRADIENT, DP_CONJUGATE)),
    Mutant("dp-stein-rest-column-dropped", "dscir/models/mixtures/dp/allocation.py",
           "rest[:, None]], axis=1)", "rest[:, None] - np.inf], axis=1)",
           (DP_RESPONSIBILITIES, DP_GRADIENT)),
    Mutant("dp-stein-minibatch-scale-dropped", "dscir/api/stein.py",
           "return sums * (train.size / batch.size)", "return sums",
           (DP_MINIBATCH,)),
    Mutant("dp-stein-alpha-not-the-samples", "dscir/api/stein.py",
           "stick_score(u, sample.alpha, sums)", "stick_score(u, 1.0, sums)", (DP_CHAIN,)),
    Mutant("dp-stein-completion-weights", "dscir/api/stein.py",
           "log_rest + log_v + before", "log_rest + log_v", (DP_COMPLETION,)),
    Mutant("ksd-batch-all-ignored", "dscir/api/stein.py",
           "if batch_size == ALL:\n        return n_train",
           "if batch_size == ALL:\n        batch_size = default", (DP_DIAGNOSE, TUNE)),
    Mutant("tune-picks-the-largest-ksd", "dscir/api/tune.py",
           "best = min(rows, key=lambda r: (r.ksd, r.step_size))",
           "best = max(rows, key=lambda r: (r.ksd, r.step_size))", (TUNE, TUNE_CHOOSE)),
    Mutant("tune-picks-by-perplexity", "dscir/api/tune.py",
           "best = min(rows, key=lambda r: (r.ksd, r.step_size))",
           "best = min(rows, key=lambda r: (r.perplexity, r.step_size))", (TUNE_CHOOSE,)),
    # -- the DP mixture on text (issue 19) --
    Mutant("dp-seeding-ignored", "dscir/models/mixtures/dp/model.py",
           'if cfg.init == "kmeans++":\n            return seed_on_workers(',
           'if False:\n            return seed_on_workers(',
           ("tests/models/dpmm/test_dpmm_text.py::test_scir_recovers_text_clusters_only_when_seeded",)),
    Mutant("dp-collapsed-start-keeps-empty-clusters", "dscir/models/mixtures/dp/sticks.py",
           "return log_theta[order[log_weights[order] > math.log(gamma)]]",
           "return log_theta[order]",
           (TEXT_DP + "::test_collapsed_start_keeps_the_occupied_clusters_largest_first",
            TEXT_DP + "::test_collapsed_start_finds_the_text_clusters")),
    Mutant("dp-collapsed-start-weights-of-alpha", "dscir/models/mixtures/dp/sticks.py",
           "return float(alpha_prior[0] / alpha_prior[1]) / n_init",
           "return float(alpha_prior[0] / alpha_prior[1])",
           (TEXT_DP + "::test_collapsed_start_weights_approximate_the_dp_prior",)),
    Mutant("dp-collapsed-start-other-stream-in-memory", "dscir/models/mixtures/dp/gibbs.py",
           "n_words, key=derive(seed, DP_INIT, 2),",
           "n_words, key=derive(seed, DP_INIT, 3),",
           (TEXT_DP + "::test_collapsed_start_is_the_same_on_workers_and_in_memory",)),
    Mutant("seeds-uniform", "dscir/models/mixtures/seeding.py",
           "seeds.append(int(rng.choice(n_docs, p=cost / cost.sum())))",
           "seeds.append(int(rng.choice(n_docs)))",
           ("tests/models/dpmm/test_dpmm_text.py::test_seeds_never_repeat_a_document_already_seeded",)),
    Mutant("seeds-from-empty-documents", "dscir/models/mixtures/seeding.py",
           "seeds = [int(words[rng.integers(words.size)])]",
           "seeds = [int(rng.integers(n_docs))]",
           ("tests/models/dpmm/test_dpmm_text.py::test_empty_documents_are_never_seeds",)),
    # -- warm starts and control variates (issue 16) --
    Mutant("warm-flush-overwrites-the-checkpoint", "dscir/engine/local_state.py",
           "if k not in (self.base[s], self.protected[s]))", "if k != self.base[s])",
           (LOCAL + "::test_a_flush_never_overwrites_a_lineage_root_or_the_checkpoint",
            WARM + "::test_a_resumed_warm_run_is_the_uninterrupted_one")),
    Mutant("warm-flush-overwrites-a-lineage-root", "dscir/engine/local_state.py",
           "if k not in (self.base[s], self.protected[s]))", "if k != self.protected[s])",
           (LOCAL + "::test_a_flush_never_overwrites_a_lineage_root_or_the_checkpoint",)),
    Mutant("warm-state-modified-in-place", "dscir/engine/local_state.py",
           "else np.array(state, dtype=dtype))", "else np.asarray(state, dtype=dtype))",
           (LOCAL + "::test_a_visit_places_states_by_shard_and_never_modifies_its_inputs",)),
    Mutant("warm-resumed-states-dropped", "dscir/engine/local_state.py",
           "self.refs = [None if k < 0 else Stored(int(k)) for k in slot]",
           "self.refs = [None] * self.n_shards",
           (WARM + "::test_a_resumed_warm_run_is_the_uninterrupted_one",)),
    Mutant("warm-flags-every-document-warm", "dscir/engine/local_state.py",
           "warm[n > 0] = current[(np.cumsum(n) - n)[n > 0]] >= 0", "warm[:] = True",
           (LOCAL + "::test_a_visit_places_states_by_shard_and_never_modifies_its_inputs",
            WARM + "::test_warm_chain_is_the_same_on_one_or_two_workers_or_in_process")),
    Mutant("warm-shards-split-between-parts", "dscir/engine/shards.py",
           "            piece = np.flatnonzero(holder == i)\n",
           "            piece = np.flatnonzero(holder == i)\n"
           "            out.append(ResidentBatch([self._futures[int(s)] for s in np.unique("
           "shard[piece[:1]])], docs[piece[:1]], names[i] or None))\n"
           "            piece = piece[1:]\n",
           (SHARDS + "::test_parts_are_the_documents_in_order_with_their_words",)),
    Mutant("warm-states-task-per-part", "dscir/engine/dask.py",
           "        futures = self._submit(tasks)\n",
           "        futures = self._submit(tasks)\n        futures[0::2] = [self.client.submit("
           "lambda t: t, f, key=self._key('states')(i)) for i, f in enumerate(futures[0::2])]\n",
           (LOCAL + "::test_a_warm_iteration_is_a_visit_and_its_results_task_per_part",)),
    Mutant("round-submitted-task-by-task", "dscir/engine/dask.py",
           "        return self.client.get(graph, [t.key for t in spec], sync=False, resources=resources)",
           "        return [self.client.get({t.key: t}, t.key, sync=False, resources=resources)\n"
           "                for t in spec]",
           (LOCAL + "::test_a_warm_iteration_is_one_message_to_the_scheduler",)),
    Mutant("warm-results-not-in-lineage", "dscir/engine/dask.py",
           "        local.lineage += sum(sizeof(o[0]) for o in out)\n", "",
           (LOCAL + "::test_the_results_kept_with_the_states_count_towards_the_lineage_budget",)),
    Mutant("warm-counts-sent-dense", "dscir/engine/dask.py",
           "tasks += [self._beside(b, key(j), COMPACT_VISIT, w, *targs),",
           "tasks += [self._beside(b, key(j), local_state.visit, w, *targs),",
           (LOCAL + "::test_a_warm_iteration_is_a_visit_and_its_results_task_per_part",)),
    Mutant("nonzeros-never-chosen", "dscir/engine/worker.py",
           "return out if out.nbytes < a.nbytes else a", "return a",
           ("tests/engine/test_worker.py::test_nonzeros_only_where_they_take_fewer_bytes",)),
    Mutant("nonzeros-narrowed-too-far", "dscir/engine/worker.py",
           "if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max)",
           "if hi <= np.iinfo(t).max)",
           ("tests/engine/test_worker.py::test_nonzeros_rebuild_the_array_exactly_with_its_dtype",)),
    Mutant("nonzeros-dtype-lost", "dscir/engine/worker.py",
           "out = np.zeros(a.shape, np.dtype(a.dtype))", "out = np.zeros(a.shape, a.values.dtype)",
           ("tests/engine/test_worker.py::test_nonzeros_rebuild_the_array_exactly_with_its_dtype",)),
    Mutant("warm-lineage-never-cut", "dscir/engine/dask.py",
           "if local.lineage > local_state.LINEAGE_BYTES:", "if False:",
           (LOCAL + "::test_states_lost_with_their_worker_are_rebuilt_and_the_chain_is_unchanged",)),
    Mutant("warm-start-counts-not-set", "dscir/models/lda/_warm.py",
           "        ndk[k] += 1.0\n\n\n@nb.njit", "\n\n@nb.njit",
           (WARM + "::test_one_sweep_from_an_exact_draw_stays_exact",)),
    Mutant("warm-start-ignored", "dscir/models/lda/_warm.py",
           "        if warm:\n", "        if False:\n",
           (WARM + "::test_one_sweep_from_an_exact_draw_stays_exact",)),
    Mutant("cv-scale-dropped", "dscir/models/lda/vocabulary_blocks.py",
           "return stored + scale * (minibatch - minibatch_stored)",
           "return stored + (minibatch - minibatch_stored)",
           (CV + "::test_estimate_is_unbiased_over_all_minibatches",)),
    Mutant("cv-stored-sum-stale", "dscir/models/lda/vocabulary_blocks.py",
           "block.stored + (after - before)", "block.stored",
           (CV + "::test_stored_sum_is_the_counts_of_the_stored_assignments",)),
    # -- several chains (issue 17) --
    Mutant("matching-transposed", "dscir/diagnostics/matching.py",
           "return assignment(hellinger(reference, other))",
           "return assignment(hellinger(other, reference))",
           (CONVERGENCE + "::test_matching_recovers_a_known_permutation",
            CONVERGENCE + "::test_rhat_of_top_words_large_without_matching_near_one_with")),
    Mutant("matching-greedy", "dscir/diagnostics/matching.py",
           "rows, cols = linear_sum_assignment(distances)",
           "rows, cols = np.arange(len(distances)), distances.argmin(1)",
           (CONVERGENCE + "::test_match_topics_is_one_to_one_where_greedy_is_not",)),
    Mutant("chain-seed-additive", "dscir/rng/domains.py",
           "derive(int(seed), CHAINS, int(chain)) >> 1", "int(seed) + int(chain)",
           (CONVERGENCE + "::test_chain_seeds_chain_zero_is_the_seed_and_no_two_collide",)),
    Mutant("pyldavis-term-counts-distinct", "dscir/models/lda/tasks.py",
           "np.add.at(counts, np.searchsorted(words, batch.indices), data)",
           "np.add.at(counts, np.searchsorted(words, batch.indices), 1)",
           (REPORT + "::test_pyldavis_arrays_equal_in_memory_counts_and_transform",)),
    Mutant("pyldavis-lengths-misplaced", "dscir/api/pyldavis.py",
           "lengths[block] = n", "lengths[block - block[0]] = n",
           (REPORT + "::test_pyldavis_arrays_equal_in_memory_counts_and_transform",)),
    Mutant("report-script-never-runs", "dscir/report/page.py",
           'input.addEventListener("input", show);\n  show();',
           'input.addEventListener("input", show);',
           (REPORT + "::test_report_page_in_headless_chromium",)),
    # -- across hosts (issue 18): the Gibbs stream keyed by the part, i.e. by
    # how many workers split the minibatch (skipped, so not killed, without root) --
    Mutant("gibbs-stream-per-part", "dscir/models/lda/topics.py",
           "args = [(c, cfg.alpha, cfg.sweeps, key, m, self.kernel) for c in cols]",
           "args = [(c, cfg.alpha, cfg.sweeps, derive(key, j), m, self.kernel)"
           " for j, c in enumerate(cols)]",
           ("tests/engine/test_netns.py::test_three_hosts_give_the_one_host_chain",)),
    # -- the honest time split (issue 14, part 4) --
    Mutant("time-split-slowest-task-as-critical-path", "dscir/engine/parts.py",
           "per_thread[t.thread] = per_thread.get(t.thread, 0.0) + t.seconds",
           "per_thread[t.thread] = max(per_thread.get(t.thread, 0.0), t.seconds)",
           ("tests/engine/test_time_split.py",)),
    # -- the large-K Gibbs kernel (issue 14, part 2) --
    Mutant("sparse-word-acceptance-dropped", "dscir/models/lda/_sparse.py",
           "if unif[i, a] * (alpha + ndk[s]) < alpha + ndk[t]:", "if True:",
           (SPARSE_TOKEN, SPARSE_JOINT)),
    Mutant("sparse-doc-acceptance-dropped", "dscir/models/lda/_sparse.py",
           "if unif[i, a + 1] * phi_s < phi_t:", "if phi_t > 0.0:",
           (SPARSE_TOKEN, SPARSE_JOINT)),
    Mutant("sparse-doc-proposal-includes-the-token", "dscir/models/lda/_sparse.py",
           "                if j >= i:\n                    j += 1\n", "",
           (SPARSE_TOKEN, SPARSE_JOINT)),
    Mutant("sparse-doc-proposal-uniform-weight", "dscir/models/lda/_sparse.py",
           "k_alpha = n_topics * alpha", "k_alpha = alpha",
           (SPARSE_TOKEN, SPARSE_JOINT)),
    Mutant("sparse-alias-leftover-kept-at-zero", "dscir/models/lda/_sparse.py",
           "table[g, 0] = (table[g, 0] + table[s, 0]) - 1.0", "table[g, 0] = table[g, 0] - 1.0",
           (SPARSE + "::test_alias_table_draws_exactly_the_weights", SPARSE_JOINT)),
    # -- the large-K kernel's block word proposal (issue 14, kernel speed) --
    Mutant("sparse-word-proposal-skips-the-block-alias", "dscir/models/lda/_sparse.py",
           "                b = int(table[w, b, 1])\n", "",
           (SPARSE_WORD, SPARSE_TOKEN)),
    Mutant("sparse-in-block-target-not-scaled-by-the-block-sum", "dscir/models/lda/_sparse.py",
           "k = _in_block(rows, w, b, unif[i, 2 * c + 1] * sums[w, b])",
           "k = _in_block(rows, w, b, unif[i, 2 * c + 1])",
           (SPARSE_WORD, SPARSE_TOKEN)),
    Mutant("sparse-stale-phi-after-a-word-move", "dscir/models/lda/_sparse.py",
           "                s = t\n                phi_s = phis[i, 1 + c]\n",
           "                s = t\n",
           (SPARSE_TOKEN, SPARSE_JOINT)),
    Mutant("sparse-doc-proposal-phi-of-the-current-topic", "dscir/models/lda/_sparse.py",
           "                t = z[-1 - t]\n                phi_t = rows[w, t]\n",
           "                t = z[-1 - t]\n                phi_t = rows[w, s]\n",
           (SPARSE_TOKEN, SPARSE_JOINT)),
    # -- LDA's default policy (issue 16, item 3) --
    Mutant("auto-scir-step-ignores-the-coverage", "dscir/models/lda/policy.py",
           'return "lazy" if big and sparse else "dense"', 'return "lazy" if big else "dense"',
           (POLICY + "::test_auto_scir_step_is_lazy_only_where_k_w_is_large_and_the_minibatch_"
                     "sparse",)),
    Mutant("auto-scir-step-on-small-states", "dscir/models/lda/policy.py",
           "big = n_topics * size.n_words >= LAZY_FROM_ENTRIES",
           "big = n_topics * size.n_words >= 0",
           (POLICY + "::test_auto_scir_step_is_lazy_only_where_k_w_is_large_and_the_minibatch_"
                     "sparse",)),
    Mutant("policy-prior-not-scaled-by-w", "dscir/models/lda/policy.py",
           "PRIOR_SHARE * per_topic / size.n_words", "PRIOR_SHARE * per_topic",
           (POLICY + "::test_the_topic_prior_never_swamps_the_tokens_a_topic_gets",
            POLICY + "::test_the_prior_share_is_reached_when_the_reference_swamps")),
    Mutant("policy-scir-step-not-per-document", "dscir/models/lda/policy.py",
           'out["tau"] = None if ref["tau"] is None else ref["tau"] / scale',
           'out["tau"] = ref["tau"]',
           (POLICY + "::test_scir_step_per_document_seen_does_not_depend_on_the_minibatch",)),
    Mutant("policy-gsgrhmc-step-not-bounded", "dscir/models/lda/policy.py",
           'out["step_size"] = min(ref["step_size"],', 'out["step_size"] = max(ref["step_size"],',
           (POLICY + "::test_gsgrhmc_euler_step_leaves_the_euler_friction_a_margin",)),
    Mutant("policy-gsgrhmc-euler-bound-on-splitting", "dscir/models/lda/policy.py",
           'if sampler == "gsgrhmc" and integrator == "euler":', 'if sampler == "gsgrhmc":',
           (POLICY + "::test_gsgrhmc_splitting_runs_the_reference_step",)),
    Mutant("policy-batch-kept-at-reference", "dscir/models/lda/policy.py",
           "batch = min(BATCH_CAP, max(REFERENCE_BATCH, -(-size.n_docs // PASS_ITERATIONS)))",
           "batch = REFERENCE_BATCH",
           (POLICY + "::test_an_unset_minibatch_makes_one_pass_in_pass_iterations",
            POLICY + "::test_the_estimator_chooses_the_minibatch_when_it_is_unset")),
    Mutant("policy-batch-rounded-down", "dscir/models/lda/policy.py",
           "-(-size.n_docs // PASS_ITERATIONS)", "size.n_docs // PASS_ITERATIONS",
           (POLICY + "::test_an_unset_minibatch_makes_one_pass_in_pass_iterations",)),
    Mutant("lda-estimator-batch-not-from-policy", "dscir/api/lda.py",
           'values["batch_size"] = choose_batch(self.policy, policy_size)',
           'values["batch_size"] = 50',
           (POLICY + "::test_the_estimator_chooses_the_minibatch_when_it_is_unset",)),
    Mutant("policy-sweeps-kept-at-reference", "dscir/models/lda/policy.py",
           'return REFERENCE_SWEEPS if policy == "reference" else POLICY_SWEEPS',
           "return REFERENCE_SWEEPS",
           (POLICY + "::test_unset_sweeps_are_the_policys",)),
    Mutant("lda-estimator-sweeps-not-from-policy", "dscir/api/lda.py",
           'chosen["sweeps"] = choose_sweeps(self.policy)', 'chosen["sweeps"] = 200',
           (POLICY + "::test_unset_sweeps_are_the_policys",)),
    # -- each parameter declared once (issue 29, deliverable 4) --
    Mutant("declared-positional-lost", "dscir/api/params.py",
           "kind.POSITIONAL_OR_KEYWORD if p.positional else kind.KEYWORD_ONLY",
           "kind.KEYWORD_ONLY",
           ("tests/api/test_params.py::test_the_signature_is_the_declarations",)),
    Mutant("cli-error-names-python-name", "dscir/api/params.py",
           "p.check(p.option if cli and p.option else p.name, values[p.name])",
           "p.check(p.name, values[p.name])",
           ("tests/api/test_params.py::test_an_error_names_what_the_user_typed",
            "tests/api/test_params.py::test_the_command_line_names_the_flag")),
    Mutant("cli-none-not-parsed", "dscir/cli/params.py",
           'if p.constraint.none and text.lower() in ("none", "constant"):',
           'if False:',
           ("tests/api/test_params.py::test_every_flag_reads_back_into_the_estimator",)),
    Mutant("registry-no-capability-check", "dscir/api/registry.py",
           "if needs is not None and not getattr(cls, needs):", "if False:",
           ("tests/api/test_registry.py::test_an_unsupported_run_is_one_clear_error",)),
    Mutant("tolerance-not-in-the-rule", "dscir/api/stopping.py",
           "getattr(est, k)) for k in Plateau._fields}",
           'getattr(est, k)) for k in Plateau._fields if k != "tolerance"}',
           ("tests/engine/test_auto_stop.py::test_the_tolerance_decides_where_the_chain_stops",)),
    # -- the rule in a user's units (issue 45) --
    Mutant("stopping-window-one-score-long", "dscir/engine/stopping.py",
           "return max(1, math.ceil(self.window / passes_per_score - 1e-9))",
           "return max(1, math.ceil(self.window / passes_per_score - 1e-9)) + 1",
           ("tests/engine/test_stopping.py::test_the_window_is_exactly_window_passes",)),
    Mutant("stopping-window-one-score-short", "dscir/engine/stopping.py",
           "return max(1, math.ceil(self.window / passes_per_score - 1e-9))",
           "return max(1, math.ceil(self.window / passes_per_score - 1e-9) - 1)",
           ("tests/engine/test_stopping.py::test_the_window_is_exactly_window_passes",)),
    Mutant("stopping-tolerance-per-score", "dscir/engine/stopping.py",
           "return gain / max(abs(best_before), 1e-300) / (k * passes_per_score)",
           "return gain / max(abs(best_before), 1e-300) / k",
           ("tests/engine/test_stopping.py::test_the_tolerance_is_per_pass_whatever_the_scoring"
            "_cadence",)),
    Mutant("stopping-tolerance-per-iteration", "dscir/engine/stopping.py",
           "return self.eval_every / self.iters_per_pass",
           "return float(self.eval_every)",
           ("tests/engine/test_stopping.py::test_a_chain_reads_its_scores_per_pass",)),
    Mutant("stopping-minimum-ignored", "dscir/engine/stopping.py",
           "elif reached and iteration >= self.min_iter:", "elif reached:",
           ("tests/engine/test_stopping.py::test_the_chain_runs_min_passes_before_it_stops",)),
    Mutant("stopping-mixture-direction-swapped", "dscir/models/mixtures/common.py",
           "return math.exp(-score * self.data.heldout.size",
           "return math.exp(score * self.data.heldout.size",
           ("tests/engine/test_auto_stop.py::test_a_mixture_stops_where_its_held_out_log"
            "_predictive_plateaus",)),
    Mutant("stopping-mixture-read-per-document", "dscir/models/mixtures/common.py",
           "return math.exp(-score * self.data.heldout.size / max(self._heldout_tokens, 1))",
           "return -score",
           ("tests/engine/test_auto_stop.py::test_a_mixture_stops_where_its_held_out_log"
            "_predictive_plateaus",)),
    Mutant("stopping-not-on-the-progress-bar", "dscir/engine/chain.py",
           'postfix["stop"] = stopping.progress()', "pass",
           ("tests/engine/test_auto_stop.py::test_the_progress_bar_shows_the_score_and_the_rules"
            "_state",)),
    Mutant("stopping-sets-nothing-aside", "dscir/engine/stopping.py",
           "n = min(SET_ASIDE, train.size // 10)", "n = 0",
           (AUTO_STOP + "::test_auto_on_a_store_without_held_out_documents_scores_documents_it"
            "_set_aside",)),
    Mutant("stopping-aside-noted-twice", "dscir/api/base.py",
           "        if note:  # once nothing refuses the fit", "        if True:  # once",
           (AUTO_STOP + "::test_auto_on_a_store_without_held_out_documents_scores_documents_it"
            "_set_aside",)),
    Mutant("stopping-aside-trained-on", "dscir/engine/chain.py",
           "if stopping is not None and stopping.aside.size:", "if False:",
           (AUTO_STOP + "::test_auto_on_a_store_without_held_out_documents_scores_documents_it"
            "_set_aside",)),
    Mutant("stopping-aside-left-unlabelled", "dscir/api/heldout.py",
           'if not (getattr(self, "stopping_", None) or {}).get("set_aside"):', "if True:",
           (AUTO_STOP + "::test_auto_on_a_store_without_held_out_documents_scores_documents_it"
            "_set_aside",)),
    Mutant("stop-reason-not-loaded", "dscir/api/base.py",
           "load_stopping(self, run)", "None",
           ("tests/engine/test_auto_stop.py::test_auto_fit_keeps_samples_after_the_burn_in_plateau",)),
    Mutant("dp-pair-flag-not-tupled", "dscir/cli/params.py",
           "tuple(v) if isinstance(v, list) else v", "v",
           ("tests/api/test_params.py::test_pairs_and_auto_choices_on_the_command_line",)),
    Mutant("stopping-phases-share-scores", "dscir/engine/stopping.py",
           "scores = self.burn_scores if self.burn_end is None else self.kept_scores",
           "scores = self.burn_scores",
           ("tests/engine/test_auto_stop.py::test_burn_in_ends_at_the_first_plateau_then_the_kept_mean"
            "_stops_the_chain",)),
    Mutant("stopping-state-fit-reads-kept-mean", "dscir/engine/stopping.py",
           "if self.burn_end is None and self.kept_mean:", "if self.burn_end is None:",
           ("tests/engine/test_auto_stop.py::test_a_fit_that_is_its_final_state_stops_at_the"
            "_current_states_plateau",)),
    Mutant("stopping-mixture-fit-read-as-a-mean", "dscir/models/mixtures/common.py",
           "    fit_is_state = True", "    fit_is_state = False",
           ("tests/engine/test_auto_stop.py::test_a_mixture_stops_where_its_held_out_log"
            "_predictive_plateaus",)),
    Mutant("stopping-forgotten-on-resume", "dscir/engine/chain.py",
           'self.stopping.restore(ckpt.values["stopping"])', "None",
           ("tests/engine/test_auto_stop.py::test_an_auto_run_resumes_the_same_decision",)),
    Mutant("auto-keeps-samples-while-burning-in", "dscir/engine/chain.py",
           "burn_in = cfg.burn_in if self.stopping is None else self.stopping.burn_in",
           "burn_in = cfg.burn_in",
           ("tests/engine/test_auto_stop.py::test_auto_fit_keeps_samples_after_the_burn_in_plateau",)),
    # -- the topics on the workers (issue 14, part 1) --
    Mutant("blocked-counts-overwritten", "dscir/models/lda/_gibbs.py",
           "            counts[r, c] += values[i]", "            counts[r, c] = values[i]",
           (BLOCKED + "::test_blocked_step_is_the_dense_step_on_the_block_columns",)),
    Mutant("sparse-counts-presence-not-value", "dscir/models/lda/_gibbs.py",
           "cols[i], rows[i], values[i] = c, r, v", "cols[i], rows[i], values[i] = c, r, 1",
           (BLOCKED + "::test_blocked_step_is_the_dense_step_on_the_block_columns",)),
    Mutant("seed-documents-by-candidate-position", "dscir/models/mixtures/seeding.py",
           "    return ids[choose_seeds(*csr, n_words, n_seeds, a0, derive(key, 1))]",
           "    return choose_seeds(*csr, n_words, n_seeds, a0, derive(key, 1))",
           ("tests/models/dpmm/test_dpmm_text.py::test_seeds_read_by_workers_equal_the_in_memory_seeds",)),
    Mutant("lda-sparse-counts-overwritten", "dscir/models/lda/_gibbs.py",
           "counts[r, c] += values[i]", "counts[r, c] = values[i]",
           ("tests/models/lda/test_lda_driver.py::test_sparse_reduction_is_the_dense_one",)),
    Mutant("blocked-mean-columns-not-divided", "dscir/models/lda/vocabulary_blocks.py",
           "np.log(block.phi_sum[:, words - block.lo] / n_samples)",
           "np.log(block.phi_sum[:, words - block.lo])",
           (BLOCKED + "::test_mean_log_columns_from_blocks_are_the_dense_ones",)),
    Mutant("blocked-normaliser-missing-block", "dscir/models/column_blocks.py",
           "for x in lses[1:]:", "for x in lses[1:-1]:",
           (BLOCKED + "::test_columns_from_blocks_are_the_dense_phi_columns",)),
    Mutant("blocked-noise-shared-by-blocks", "dscir/models/lda/vocabulary_blocks.py",
           "return derive(seed, domains.SAMPLER, m, block.index)",
           "return derive(seed, domains.SAMPLER, m)",
           (BLOCKED + "::test_blocked_step_is_the_dense_step_on_the_block_columns",)),
    Mutant("blocked-run-mean-not-divided", "dscir/models/lda/vocabulary_blocks.py",
           'out["phi_mean"] = (block.phi_sum / n_samples if n_samples else',
           'out["phi_mean"] = (block.phi_sum if n_samples else',
           (BLOCKED + "::test_the_blocks_write_the_runs_arrays",)),
    # -- fitted topics that stay where the workers wrote them (issue 36) --
    Mutant("fitted-topics-gathered", "dscir/api/fitted.py",
           "    if write is None or n_entries <= DENSE_MAX_ENTRIES:\n",
           "    if True:\n",
           (FITTED + "::test_the_driver_never_holds_k_by_w",)),
    Mutant("mixture-components-gathered", "dscir/api/heldout.py",
           "        if model.workers_hold_components:\n",
           "        if False:\n",
           (FITTED_MIX + "::test_lazy_components_are_the_dense_ones[mixture]",
            FITTED_MIX + "::test_the_driver_keeps_no_k_by_w")),
    Mutant("mixture-columns-read-whole", "dscir/api/heldout.py",
           "fitted.topic_columns(self._theta, words)) - \\\n",
           "fitted.materialize(self._theta)[:, words]) - \\\n",
           (FITTED_MIX + "::test_the_driver_keeps_no_k_by_w",)),
    Mutant("mixture-columns-from-stored-phi", "dscir/api/heldout.py",
           "        return log_theta(self._theta, fitted.topic_columns(self._theta, words)) - \\\n"
           "            self._norm[:, None]\n",
           "        return np.log(fitted.topic_columns(self.components_, words))\n",
           (FITTED_MIX + "::test_the_driver_keeps_no_k_by_w",)),
    Mutant("mixture-top-words-gathered", "dscir/api/heldout.py",
           "TopicTable.from_top(*fitted.top_entries(self.components_, n),",
           "TopicTable.from_top(*fitted.top_entries(fitted.materialize(self.components_), n),",
           (FITTED_MIX + "::test_the_driver_keeps_no_k_by_w",)),
    Mutant("mixture-final-sample-gathered", "dscir/api/heldout.py",
           "        self._final = final_sample(not lazy)\n",
           "        self._final = final_sample(True)\n",
           (FITTED_MIX + "::test_lazy_components_are_the_dense_ones[dpmm]",)),
    Mutant("mixture-block-components-unnormalised", "dscir/models/mixtures/blocks.py",
           'out["components"] = np.exp(block_log_phi(block, norm))',
           'out["components"] = np.exp(np.asarray(block.state.log_theta))',
           (FITTED_MIX + "::test_lazy_components_are_the_dense_ones[dpmm]",)),
    Mutant("fitted-topics-read-whole", "dscir/api/fitted.py",
           "    if not is_lazy(topics):\n        return np.asarray(topics)[:, words]\n",
           "    if True:\n        return np.asarray(topics)[:, words]\n",
           (FITTED + "::test_the_driver_never_holds_k_by_w",)),
    Mutant("fitted-top-words-gathered", "dscir/api/fitted.py",
           "    if not is_lazy(topics):\n        return np.argsort(",
           "    if True:\n        return np.argsort(",
           (FITTED + "::test_the_driver_never_holds_k_by_w",)),
    Mutant("fitted-transform-gathered", "dscir/api/fitted.py",
           "        cols = topic_columns(topics, words)\n",
           "        cols = materialize(topics)[:, words]\n",
           (FITTED + "::test_the_driver_never_holds_k_by_w",)),
    Mutant("fitted-score-gathered", "dscir/api/lda.py",
           "docs, topics = np.sort(np.asarray(c.heldout_docs(), np.int64)), self.topic_word_",
           "docs, topics = np.sort(np.asarray(c.heldout_docs(), np.int64)), "
           "np.asarray(self.topic_word_)",
           (FITTED + "::test_the_driver_never_holds_k_by_w",)),
    Mutant("pyldavis-every-word", "dscir/api/pyldavis.py",
           "    if n >= w:\n", "    if True:\n",
           (FITTED + "::test_the_driver_never_holds_k_by_w",
            PYLDAVIS + "::test_view_words_rank_by_rank_then_by_frequency")),
    Mutant("pyldavis-topics-gathered", "dscir/api/pyldavis.py",
           "    phi = fitted.topic_columns(topics, words)\n",
           "    phi = fitted.materialize(topics)[:, words]\n",
           (FITTED + "::test_the_driver_never_holds_k_by_w",)),
    Mutant("pyldavis-by-frequency-only", "dscir/api/pyldavis.py",
           "candidates = np.concatenate([ranked, np.argsort(-freq, kind=\"stable\")])",
           "candidates = np.argsort(-freq, kind=\"stable\")",
           (PYLDAVIS + "::test_view_words_rank_by_rank_then_by_frequency",)),
    Mutant("pyldavis-rows-not-renormalised", "dscir/api/pyldavis.py",
           "    phi /= phi.sum(axis=1, keepdims=True)\n", "",
           (PYLDAVIS + "::test_topic_term_rows_are_the_columns_renormalised",)),
    Mutant("heap-threshold-not-fixed", "dscir/api/fitted.py",
           "        release_large_buffers()  # its column blocks are freed back to the system\n",
           "",
           ("tests/api/test_heap.py::test_reading_stored_topics_returns_freed_blocks_to_the_system",)),
    # -- diagnose from the stored kept samples (issue 36) --
    Mutant("diagnose-samples-stacked-whole", "dscir/api/diagnose.py",
           "    draws, ids = kept_samples.topic_draws(runs, perms, top)\n",
           "    phi = lda_phi(runs)[0]\n    ids = cv.top_word_ids(phi.mean(axis=(0, 1)), top)\n"
           "    draws = cv.topic_draws(phi, ids)\n",
           (DIAG_BUDGET,)),
    Mutant("diagnose-mean-topics-read-whole", "dscir/api/kept_samples.py",
           "for lo, hi in spans(w, max(1, BLOCK_ENTRIES // (2 * k))):",
           "for lo, hi in [(0, w)]:",
           (DIAG_BUDGET,)),
    Mutant("diagnose-one-block-of-all-columns", "dscir/api/kept_samples.py",
           "blocks = spans(w, max(1, BLOCK_ENTRIES // (n_chains * n_samples * k)))",
           "blocks = [(0, w)]",
           (DIAG_BUDGET,)),
    Mutant("diagnose-scores-read-every-sample", "dscir/api/lda.py",
           "for s in range(kept.shape[0])])",
           "for s in range(len(r.samples()[\"phi\"]))])",
           (DIAG_BUDGET,)),
    Mutant("kept-rows-not-chunked-by-columns", "dscir/runs/store.py",
           "    return (1,) + row[:-1] + (max(1, 2**20 // (row_bytes // row[-1])),)",
           "    return (1,) + row",
           (DIAG_BUDGET, DIAG + "::test_long_rows_are_stored_in_column_chunks")),
    Mutant("diagnose-block-first-column-dropped", "dscir/api/kept_samples.py",
           "np.nonzero((ids >= lo) & (ids < hi))", "np.nonzero((ids > lo) & (ids < hi))",
           (DIAG_DENSE,)),
    Mutant("diagnose-block-not-aligned", "dscir/api/kept_samples.py",
           "out[c, rows] = band[:, p]", "out[c, rows] = band",
           (DIAG_DENSE,)),
    Mutant("diagnose-affinity-of-the-last-block", "dscir/api/kept_samples.py",
           "            bc += p @ q.T\n", "            bc = p @ q.T\n",
           (DIAG_DENSE,)),
    Mutant("diagnose-scores-of-the-first-sample", "dscir/api/lda.py",
           'column_reader(executor, array_path(r, "phi"), s,',
           'column_reader(executor, array_path(r, "phi"), 0,',
           (DIAG_DENSE,)),
    Mutant("dp-scores-rows-from-zero", "dscir/api/dpmm.py",
           "slice(int(a), int(b))", "slice(0, int(b - a))",
           (DIAG + "::test_dp_scores_are_the_dense_ones",)),
    Mutant("fitted-top-merge-ties-to-higher-id", "dscir/models/lda/top_words.py",
           "order = np.lexsort((ids, -values), axis=1)[:, :n]",
           "order = np.lexsort((-ids, -values), axis=1)[:, :n]",
           (FITTED + "::test_top_entries_of_blocks_are_the_rows_stable_top",)),
    Mutant("fitted-transform-dense-log-phi", "dscir/api/fitted.py",
           "    k, w = topics.shape\n    out = np.empty((indptr.size - 1, k))\n",
           "    k, w = topics.shape\n"
           "    if not is_lazy(topics):\n"
           "        with np.errstate(divide=\"ignore\"):\n"
           "            return gibbs.document_topics(indptr, indices, data, np.log(topics),\n"
           "                                           alpha, sweeps, key)\n"
           "    out = np.empty((indptr.size - 1, k))\n",
           (FITTED + "::test_the_transform_of_numpy_topics_never_takes_log_phi_over_all_words",)),
    Mutant("fitted-transform-groups-share-streams", "dscir/api/fitted.py",
           "indptr[lo:hi + 1] - a, indices[a:b], data[a:b], np.arange(lo, hi, dtype=np.int64),",
           "indptr[lo:hi + 1] - a, indices[a:b], data[a:b], np.arange(hi - lo, dtype=np.int64),",
           (FITTED + "::test_lazy_topics_are_the_dense_ones",)),
    Mutant("blocked-steps-without-the-rows-totals", "dscir/models/lda/topics.py",
           "        if self.sampler.row_totals:\n", "        if False:\n",
           (BLOCKED + "::test_gsgrhmc_on_the_workers_is_the_same_chain_on_one_and_two_workers",)),
    Mutant("sgrld-totals-swapped", "dscir/samplers/_expanded.py",
           "new_state(mix_in(key, i)), totals[1, i], totals[0, i]",
           "new_state(mix_in(key, i)), totals[0, i], totals[1, i]",
           (DIRICHLET + "[sgrld-0.01-3000-1500-0.07]",)),
    Mutant("blocks-routed-to-every-block", "dscir/engine/blocks.py",
           "return [[x for x, h in zip(items, held) if j in h] for j in range(self.n_blocks)]",
           "return [list(items) for j in range(self.n_blocks)]",
           (BLOCKED + "::test_blocked_state_holds_any_array",)),
    Mutant("row-totals-of-the-first-result", "dscir/models/lda/vocabulary_blocks.py",
           "    for r, _ in results:\n        np.add.at(counts, r.topics, r.values)",
           "    for r, _ in results[:1]:\n        np.add.at(counts, r.topics, r.values)",
           (BLOCKED + "::test_row_totals_are_the_dense_rows_totals",)),
    # -- what a worker allocates per topic-word entry (issue 36, worker memory) --
    Mutant("sgrld-fused-factor-dropped", "dscir/samplers/sgrld.py",
           "prior + counts[r, w] * factor, total_c", "prior + counts[r, w], total_c",
           ("tests/samplers/test_cir_scaled.py::test_sgrld_fused_step_is_its_step_on_the_product",)),
    Mutant("sgrld-fused-totals-unscaled", "dscir/samplers/sgrld.py",
           "            acc += counts[i, j] * factor", "            acc += counts[i, j]",
           ("tests/samplers/test_cir_scaled.py::test_sgrld_fused_step_is_its_step_on_the_product",)),
    Mutant("block-step-counts-times-factor", "dscir/models/lda/vocabulary_blocks.py",
           "    state = sampler.step_scaled(block.state, beta, counts, factor, h,",
           "    state = sampler.step(block.state, beta, counts * factor, h,",
           (BLOCK_MEMORY + "::test_a_block_step_adds_only_the_new_state_and_its_counts",)),
    Mutant("row-lse-whole-block", "dscir/models/column_blocks.py",
           "    for rows in row_chunks(log_theta.shape[0]):\n        part = log_theta[rows]",
           "    for rows in [slice(None)]:\n        part = log_theta[rows]",
           (BLOCK_MEMORY + "::test_a_blocks_row_sums_take_a_chunk_of_rows_at_a_time",)),
    Mutant("keep-whole-block-phi", "dscir/models/lda/vocabulary_blocks.py",
           "    for rows in row_chunks(phi_sum.shape[0]):\n        np.exp(",
           "    for rows in [slice(None)]:\n        np.exp(",
           (BLOCK_MEMORY + "::test_a_kept_sample_adds_only_the_new_sum",)),
    Mutant("block-start-holds-a-zero-sum", "dscir/models/lda/vocabulary_blocks.py",
           "    return new_block(index, lo, state, None, zeros)",
           "    return new_block(index, lo, state, np.zeros(np.shape(state.log_theta)), zeros)",
           (BLOCK_MEMORY + "::test_a_block_holds_no_kept_sum_before_its_first_keep",)),
    Mutant("block-load-keeps-a-zero-sum", "dscir/models/lda/vocabulary_blocks.py",
           "phi_sum if phi_sum.any() else None,", "phi_sum,",
           (BLOCK_MEMORY + "::test_a_block_holds_no_kept_sum_before_its_first_keep",)),
    Mutant("row-chunks-skip-a-row", "dscir/models/column_blocks.py",
           "return [slice(r, r + ROWS) for r in range(0, n_rows, ROWS)]",
           "return [slice(r, r + ROWS - 1) for r in range(0, n_rows, ROWS)]",
           (BLOCK_MEMORY + "::test_row_chunked_forms_are_the_whole_block_expressions_bit_for_bit",)),
    Mutant("sparse-gibbs-float64-columns", "dscir/models/lda/gibbs.py",
           'phi_cols = _matrix(phi_cols, "phi_cols", float32=True)',
           'phi_cols = _matrix(phi_cols, "phi_cols", float32=False)',
           (BLOCK_MEMORY + "::test_a_sparse_gibbs_task_adds_two_words_per_column_entry",)),
    Mutant("gibbs-part-columns-copied", "dscir/models/lda/vocabulary_blocks.py",
           "    same = words.size == cut_words.size", "    same = False",
           (BLOCK_MEMORY + "::test_a_sparse_gibbs_task_adds_two_words_per_column_entry",)),
    Mutant("held-arrays-written-after-the-rename", "dscir/runs/checkpoint.py",
           "            if ckpt.held is not None:\n                ckpt.held.write(str(tmp))\n"
           "            g.attrs[ATTR] = {\"format_version\": FORMAT_VERSION, **meta}\n"
           "            tmp.rename(final)\n",
           "            g.attrs[ATTR] = {\"format_version\": FORMAT_VERSION, **meta}\n"
           "            tmp.rename(final)\n"
           "            if ckpt.held is not None:\n"
           "                ckpt.held.write(str(final))\n",
           (BLOCKED + "::test_a_failed_held_write_leaves_the_previous_checkpoint",)),
    Mutant("blocks-not-restarted-from-the-checkpoint", "dscir/runs/checkpoint.py",
           "        ckpt.held.restart(held_arrays(final, ckpt.held.names))\n", "        pass\n",
           (BLOCKED + "::test_checkpoint_written_by_the_blocks_resumes_the_uninterrupted_chain",)),
    Mutant("held-block-written-at-block-zero", "dscir/engine/blocks.py",
           "zarr.open_array(f\"{root}/{path}\", mode=\"r+\")[:, lo:lo + width] = out[key]",
           "zarr.open_array(f\"{root}/{path}\", mode=\"r+\")[:, :width] = out[key]",
           (BLOCKED + "::test_checkpoint_written_by_the_blocks_resumes_the_uninterrupted_chain",)),
    # -- a diverged chain is one clear error --
    Mutant("divergence-unchecked", "dscir/models/lda/model.py",
           "        check_finite(self.topics.finite(), cfg.sampler, m)\n",
           "", (DIVERGED + "[driver]", DIVERGED + "[workers]")),
    Mutant("divergence-unseen", "dscir/models/lda/topics.py",
           "        return bool(np.isfinite(self.norm).all())\n", "        return True\n",
           (DIVERGED + "[driver]", DIVERGED + "[workers]")),
    # -- the embedded cluster's workers (issue 14, 2-worker efficiency) --
    Mutant("embedded-workers-numba-threads-uncapped", "dscir/engine/cluster.py",
           '**({"env": _worker_env(form["threads_per_worker"])} if processes else {}),', "",
           ("tests/engine/test_clusters.py::test_embedded_workers_cap_numba_threads_at_their_own",)),
    # -- one-way layers, no import circle (issue 29) --
    Mutant("engine-imports-api-in-a-function", "dscir/engine/minibatch.py",
           '    """The visiting order of ``docs`` in one epoch."""\n',
           '    """The visiting order of ``docs`` in one epoch."""\n'
           "    import dscir.api  # noqa: F401\n",
           (LAYERS + "::test_no_import_goes_up_a_layer",)),
    Mutant("run-store-imports-its-chains-back", "dscir/runs/store.py",
           '        """The kept samples\' arrays by name ({} if none were kept)."""\n',
           '        """The kept samples\' arrays by name ({} if none were kept)."""\n'
           "        from dscir.runs.chains import open_chains  # noqa: F401\n",
           (LAYERS + "::test_no_import_circle_between_modules",)),
    Mutant("monitor-metrics-type-checks-the-plugin", "dscir/monitor/metrics.py",
           "from typing import Any, Protocol\n",
           "from typing import TYPE_CHECKING, Any, Protocol\n\nif TYPE_CHECKING:\n"
           "    from dscir.monitor.plugin import DscirMonitor  # noqa: F401\n",
           (LAYERS + "::test_no_import_circle_between_modules",)),
    Mutant("runs-import-the-engine-sideways", "dscir/runs/checkpoint.py",
           '    """Groups of arrays as ``group/name`` arrays."""\n',
           '    """Groups of arrays as ``group/name`` arrays."""\n'
           "    from dscir.engine.cluster import dask_client  # noqa: F401\n",
           (LAYERS + "::test_no_import_circle_between_packages",)),
    # -- one Dask client per call chain (issue 29) --
    Mutant("session-ignores-the-running-client", "dscir/api/session.py",
           "            client = current_client()\n", "            pass\n",
           (SESSION + "::test_calls_inside_a_session_share_its_one_cluster",)),
    Mutant("session-reuses-despite-cluster-keywords", "dscir/api/session.py",
           "if client is None and not cluster:", "if client is None:",
           (SESSION + "::test_cluster_keywords_start_the_cluster_they_name",)),
    Mutant("cluster-without-workers-started", "dscir/engine/cluster.py",
           "if n_workers is not None and not n_workers >= 1:", "if False:",
           ("tests/engine/test_clusters.py::test_a_cluster_without_workers_is_refused_before_it_starts",)),
    Mutant("lost-client-taken-for-the-running-one", "dscir/engine/cluster.py",
           'return client if client.status == "running" else None', "return client",
           (SESSION + "::test_a_client_that_lost_its_scheduler_is_not_the_running_one",)),
    # -- interrupts, unfinished runs, a private embedded cluster (issue 31) --
    Mutant("embedded-dashboard-on-every-interface", "dscir/engine/cluster.py",
           'PRIVATE_DASHBOARD = f"{PRIVATE_HOST}:0"', 'PRIVATE_DASHBOARD = ":0"',
           (PRIVATE + "::test_every_socket_of_the_embedded_cluster_is_on_loopback",
            PRIVATE + "::test_another_host_cannot_reach_the_embedded_cluster")),
    Mutant("resume-recomputes-the-burn-in", "dscir/api/base.py",
           'burn_in = started_with(resume, "burn_in")', "burn_in = None",
           (UNFINISHED + "::test_an_interrupted_run_resumed_with_more_iterations_is_the_"
            "longer_run",
            UNFINISHED + "::test_cli_resume_with_more_iterations_extends_a_finished_run")),
    Mutant("info-refuses-an-unfinished-run", "dscir/cli/corpus.py",
           "    if unfinished(path):\n        return print_progress(path)\n", "",
           (UNFINISHED + "::test_info_reports_an_unfinished_runs_progress",)),
    Mutant("cli-sigterm-exits-1", "dscir/engine/interrupts.py",
           "    if isinstance(exc, Terminated):\n        return 128 + signal.SIGTERM\n",
           "    if isinstance(exc, Terminated):\n        return 1\n",
           (INTERRUPTS + "::test_sigterm_to_every_process_of_a_cli_fit_exits_143",)),
    Mutant("python-sigterm-exits-0", "dscir/engine/interrupts.py",
           "        super().__init__(128 + signal.SIGTERM)", "        super().__init__(0)",
           (INTERRUPTS + "::test_python_fit_gets_one_exception_and_no_traceback_from_any_"
            "process[15-143-]",)),
    Mutant("sigterm-not-handled", "dscir/engine/interrupts.py",
           "    ours = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}",
           "    ours = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: None}",
           (INTERRUPTS + "::test_sigterm_to_every_process_of_a_cli_fit_exits_143",)),
    Mutant("workers-take-ctrl-c", "dscir/engine/interrupts.py",
           "signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})",
           "signal.SIG_BLOCK, {signal.SIGTERM})",
           (INTERRUPTS + "::test_ctrl_c_ends_a_cli_fit_with_one_line_and_a_resumable_"
            "checkpoint",)),
    # -- the lazy SCIR step (issue 30) --
    Mutant("lazy-catch-up-over-one-step-only", LAZY_KERNELS,
           "lt[w], prior, counts, i, 0.0, gap)",
           "lt[w], prior, counts, i, 0.0, h if h > 0 else gap)", (LAZY_COMPOSE,)),
    Mutant("lazy-catch-up-with-the-counts-shape", LAZY_KERNELS,
           "lt[w], prior, counts, i, 0.0, gap)", "lt[w], prior, counts, i, scale, gap)",
           (LAZY_COMPOSE,)),
    Mutant("lazy-catch-up-skipped", LAZY_KERNELS, "if gap > 0.0:", "if gap > 1e300:",
           (LAZY_COMPOSE, LAZY_TOUCH)),
    Mutant("lazy-clock-not-advanced", "dscir/samplers/cir_lazy.py",
           "clock = state.clock + h", "clock = state.clock", (LAZY_TOUCH, LAZY_STATIONARY)),
    Mutant("lazy-row-sums-not-decayed", LAZY_KERNELS, "sums[0, k] *= eh", "sums[0, k] *= 1.0",
           (LAZY_MOMENTS,)),
    Mutant("lazy-drawn-total-shape-not-squared", LAZY_KERNELS, "mu * mu / m[1, k]",
           "mu / m[1, k]", (LAZY_DRAWN,)),
    Mutant("lazy-kept-later-windows-dropped", LAZY_KERNELS, "fb = np.exp(f)", "fb = 0.0",
           (LAZY_KEPT,)),
    Mutant("lazy-kept-own-window-unscaled", LAZY_KERNELS, "fa = np.exp(t_w - base[a])",
           "fa = 1.0", (LAZY_KEPT,)),
    Mutant("lazy-row-total-without-the-lazy-prior-mass", "dscir/samplers/cir_lazy.py",
           "mean = a1 + prior * (w - b1)", "mean = a1", (LAZY_MOMENTS,)),
    Mutant("lazy-row-total-of-the-realized-columns-only", "dscir/samplers/cir_lazy.py",
           "np.stack([np.maximum(mean, fresh), var, fresh])", "np.stack([fresh, var, fresh])",
           (LAZY_LDA,)),
    Mutant("lazy-streams-by-column-not-word", LAZY_KERNELS, "word = np.uint64(first + w)",
           "word = np.uint64(w)", (LAZY_STREAMS,)),
    # -- documents resident on the workers (issue 30) --
    Mutant("resident-rows-misplaced", "dscir/engine/shards.py",
           "np.repeat(starts - offsets, n)", "np.repeat(starts, n)",
           (SHARDS + "::test_take_is_the_store_read_of_the_same_documents",
            SHARDS + "::test_parts_are_the_documents_in_order_with_their_words")),
    Mutant("resident-shard-reads-restricted", "dscir/engine/shards.py",
           "key=self._key(s)))",
           "key=self._key(s), workers=[sorted(self.client.nthreads())[s % 2]],"
           " allow_other_workers=True))",
           (SHARDS + "::test_every_worker_lost_at_once_costs_a_rebuild_not_the_chain",)),
    Mutant("resident-shards-unused", "dscir/engine/dask.py",
           "lambda s: (shard_key, s)) if resident else None",
           "lambda s: (shard_key, s)) if False else None",
           (SHARDS + "::test_an_iteration_is_one_gibbs_call_per_worker_and_shards_are_read_once[runners]",)),
    Mutant("distinct-mask-drops-the-first-id", "dscir/engine/shards.py",
           "    mask[ids] = True\n", "    mask[ids[1:]] = True\n",
           (SHARDS + "::test_distinct_is_numpys_unique_in_both_regimes",)),
    Mutant("runner-drops-a-document", "dscir/engine/worker.py",
           "batch = take([data[k] for k in keys], docs)",
           "batch = take([data[k] for k in keys], docs[: max(1, docs.size - 1)])",
           (CONTROL + "::test_runners_tasks_and_submits_give_one_chain[cold]",)),
    Mutant("submit-fallback-drops-references", "dscir/engine/dask.py",
           "args = [futures[a.key] if isinstance(a, Ref) else a for a in t.args]",
           "args = list(t.args)",
           (CONTROL + "::test_runners_tasks_and_submits_give_one_chain[warm-start]",)),
    Mutant("runner-wait-never-looks", "dscir/engine/runners.py",
           "                    if not self.held(address):",
           "                    if False:",
           (CONTROL + "::test_a_round_on_a_lost_runner_ends_instead_of_waiting_forever",)),
    Mutant("runner-wait-without-timeout", "dscir/engine/runners.py",
           "out.append(call.result(timeout=CHECK_SECONDS))", "out.append(call.result())",
           (CONTROL + "::test_a_round_on_a_lost_runner_ends_instead_of_waiting_forever",)),
    Mutant("runner-calls-never-made", "dscir/engine/dask.py",
           "        if _resident(parts) and self.runners and not self.resources.get(what):",
           "        if False:",
           (SHARDS + "::test_an_iteration_is_one_gibbs_call_per_worker_and_shards_are_read_once[runners]",)),
    # -- a store larger than the workers' memory is streamed (issue 35) --
    Mutant("out-of-core-resident-regardless", "dscir/engine/shards.py",
           '"resident" if need <= RESIDENT_SHARE * have else "streamed"',
           '"resident" if True else "streamed"', (OUT_OF_CORE_FIT,)),
    Mutant("out-of-core-host-memory-not-the-workers", "dscir/engine/shards.py",
           "shards_bytes(Corpus.open(store, cache_bytes=0)), workers_memory(client)",
           "shards_bytes(Corpus.open(store, cache_bytes=0)), _host_memory()",
           (OUT_OF_CORE_FIT,)),
    Mutant("out-of-core-one-workers-memory", "dscir/engine/shards.py",
           'return sum(int(w.get("memory_limit") or host[a])',
           'return max(int(w.get("memory_limit") or host[a])', (OUT_OF_CORE_FIT,)),
    Mutant("out-of-core-word-ids-only", "dscir/engine/shards.py",
           "return 8 * corpus.nnz + 16 * corpus.n_docs",
           "return 4 * corpus.nnz + 16 * corpus.n_docs",
           (OUT_OF_CORE + "::test_shards_bytes_is_what_the_shards_hold",)),
    Mutant("lda-lazy-catch-up-skipped", LDA_LAZY_TOPICS,
           'self.blocks.update_holding("lazy-touch", touch_block, self._u,',
           'self.blocks.update_holding("lazy-touch", touch_block, self._u[:0],',
           (LDA_LAZY_STEP,)),
    Mutant("lda-lazy-kept-with-the-draw-normaliser", LAZY_BLOCKS,
           'return cir_lazy.normaliser(summed_moments(moments), "mean")',
           'return cir_lazy.normaliser(summed_moments(moments), "draw", 1)',
           (LDA_LAZY + "::test_kept_mean_rows_sum_to_one",)),
    Mutant("lda-lazy-scale-dropped", LDA_LAZY_TOPICS,
           "factor = scale / kept_sweeps(cfg)", "factor = 1.0 / kept_sweeps(cfg)",
           (LDA_LAZY_STEP, LDA_LAZY + "::test_held_out_perplexity_within_the_dense_seed_spread")),
    Mutant("lda-lazy-kept-sweeps-ignore-the-warm-burn-in", "dscir/models/lda/topics.py",
           "config.burn if config.warm_start else config.sweeps // 2", "config.sweeps // 2",
           (LDA_LAZY + "::test_the_scale_divides_by_the_sweeps_the_tasks_kept",)),
    Mutant("lda-lazy-normaliser-before-the-touch", LDA_LAZY_TOPICS,
           "moments = [fresh.get(b, m) for b, m in enumerate(self.moments)]",
           "moments = list(self.moments)", (LDA_LAZY_STEP,)),
    Mutant("lda-lazy-untouched-block-left-behind", LAZY_BLOCKS,
           "state = cir_lazy.step(block.state, own, counts, beta, h, key, factor)",
           "state = (cir_lazy.step(block.state, own, counts, beta, h, key, factor) "
           "if own.size else block.state)", (LDA_LAZY_STEP,)),
    Mutant("lda-lazy-resume-forgets-the-pending-gaps", LAZY_BLOCKS,
           '"last": rows[2 * k].copy()',
           '"last": np.full(rows.shape[1], float(blocks_small["clock"]))',
           (LDA_LAZY_RESUME + "[driver]", LDA_LAZY_RESUME + "[workers]")),
    Mutant("lda-lazy-resume-forgets-the-pending-kept-terms", LAZY_BLOCKS,
           '"kept/at": rows[2 * k + 1].astype(np.int64)',
           '"kept/at": np.full(rows.shape[1], int(blocks_small["kept/n"]))',
           (LDA_LAZY_RESUME + "[driver]", LDA_LAZY_RESUME + "[workers]")),
    Mutant("lda-lazy-resume-forgets-the-iteration", LDA_LAZY_TOPICS,
           'self.iteration = int(np.asarray(arrays["lazy_iteration"]))', "pass",
           (LDA_LAZY + "::test_resumed_chain_equals_uninterrupted",)),

    # -- each parameter declared once; the recipes done once (issue 29) --
    Mutant("pair-config-fields-dropped", "dscir/api/params.py",
           "out.update(zip(p.config, p.coerce(values[p.name])))",
           "out.update(zip(p.config, (1.0, 1.0)))",
           (PARAMS_TESTS + "::test_a_declaration_reaches_every_place_it_is_used",
            "tests/models/test_dpmm_policy.py::test_estimator_resolves_the_policy_on_the_corpus")),
    Mutant("declared-entry-flag-dropped", "dscir/cli/command.py",
           "    add_params(p, entries)\n", "",
           (PARAMS_TESTS + "::test_a_declaration_reaches_every_place_it_is_used",
            "tests/samplers/test_integrators.py::test_cli_flags_fill_the_sampler_options")),
    Mutant("entry-flag-unchecked", "dscir/cli/params.py",
           "            p.check(p.option, value)\n", "",
           ("tests/samplers/test_integrators.py::test_cli_flags_fill_the_sampler_options",)),
    Mutant("command-default-ignored", "dscir/cli/params.py",
           "default=defaults.get(p.name, p.default)", "default=p.default",
           (PARAMS_TESTS + "::test_tune_and_quickstart_flags_are_the_declarations_with_their_"
            "own_defaults",)),
    Mutant("docs-table-drops-a-row", "dscir/api/params.py",
           '"|---|---|---|---|", *rows])', '"|---|---|---|---|", *rows[:-1]])',
           (PARAMS_TESTS + "::test_a_declaration_reaches_every_place_it_is_used",)),
    Mutant("load-knows-only-its-own-models", "dscir/api/__init__.py",
           "    if model not in registry.ESTIMATORS:",
           '    if model not in ("lda", "dpmm", "mixture"):',
           (RECIPES + "::test_a_model_added_as_the_recipe_says_fits_loads_and_has_a_command",)),
    Mutant("topic-state-by-name", "dscir/models/lda/model.py",
           "topics = TOPIC_STATES[config.scir_step]",
           'topics = TOPIC_STATES["lazy" if config.scir_step == "lazy" else "dense"]',
           (RECIPES + "::test_a_topic_state_added_as_the_recipe_says_holds_the_topics",)),
    Mutant("sampler-options-dropped", "dscir/models/lda/model.py",
           "get_sampler(config.sampler, **(config.sampler_options or {}))",
           "get_sampler(config.sampler)",
           (RECIPES + "::test_a_sampler_registered_as_the_recipe_says_runs_in_an_lda_chain",)),
    Mutant("mixture-allocation-ignores-weights", "dscir/models/mixtures/finite/allocation.py",
           "np.full(len(docs), np.finfo(np.float64).min), log_pi, log_pi,",
           "np.full(len(docs), np.finfo(np.float64).min), log_pi, np.zeros_like(log_pi),",
           ("tests/models/mixture/test_mixture.py::test_gibbs_allocation_draws_from_the_exact_conditional",)),
    # -- malformed input is one clear error (issue 31, deliverable 2) --
    Mutant("csv-open-quote-swallows-the-file", "dscir/corpus/formats/delimited.py",
           "delimiter=delimiter, strict=True)", "delimiter=delimiter)",
           ("tests/corpus/test_corpus.py::test_bad_text_is_rejected_and_leaves_nothing",)),
    Mutant("forgotten-gathers-hide-other-failures", "dscir/engine/cluster.py",
           'all(s == "forgotten" for s in states.values())',
           'any(s == "forgotten" for s in states.values())',
           ("tests/engine/test_clusters.py::test_the_schedulers_forgotten_gathers_are_dropped"
            "_and_no_other_error",)),
    # -- one command-line convention (issue 31, deliverables 2, 4 and 5) --
    Mutant("cli-option-without-help", "dscir/cli/runs.py",
           """                    help="words per topic (or cluster)")""", ")",
           (CONVENTION + "::test_every_option_has_help_showing_its_default",)),
    Mutant("cli-default-not-shown", "dscir/cli/convention.py",
           'return f"{text} (default: %(default)s)"', "return text",
           (CONVENTION + "::test_every_option_has_help_showing_its_default",)),
    Mutant("cli-long-command-without-progress", "dscir/cli/convention.py",
           "if command in LONG:\n", "if command in LONG and command != \"transform\":\n",
           (CONVENTION + "::test_messages_progress_json_and_out_options",)),
    Mutant("cli-positional-named-by-dest", "dscir/cli/convention.py",
           "p.add_argument(dest, metavar=KINDS[kind], help=help, **kw)",
           "p.add_argument(dest, help=help, **kw)",
           (CONVENTION + "::test_positionals_are_named_by_kind",)),
    Mutant("cli-bad-data-exits-2", "dscir/errors.py",
           "    exit_code = EXIT_DATA\n", "",
           (MESSAGES + "::test_bad_data_is_status_3_quoting_one_line",)),
    Mutant("cli-damaged-store-exits-2", "dscir/integrity.py",
           "    exit_code = EXIT_DATA\n", "",
           (MESSAGES + "::test_a_damaged_store_is_status_3",)),
    Mutant("cli-lost-cluster-exits-2", "dscir/errors.py",
           "    exit_code = EXIT_FAILURE\n", "",
           ("tests/engine/test_cluster_tcp.py::test_unreachable_scheduler_is_a_clean_error",)),
    Mutant("cli-runtime-failure-exits-2", "dscir/cli/__init__.py",
           "def _error(message: str, status: int = EXIT_FAILURE) -> int:",
           "def _error(message: str, status: int = 2) -> int:",
           (CONVENTION + "::test_a_runtime_failure_and_an_interrupt_have_their_statuses",)),
    Mutant("cli-message-names-the-python-name", "dscir/errors.py",
           "return flag if on_command_line() else python", "return python",
           (MESSAGES + "::test_python_names_the_parameter_and_the_command_line_the_flag",)),
    Mutant("cli-errors-outside-the-command-line-context", "dscir/cli/__init__.py",
           'getattr(args, "quiet", False)), \\\n            command_line():',
           'getattr(args, "quiet", False)):',
           (MESSAGES + "::test_python_names_the_parameter_and_the_command_line_the_flag",)),
    Mutant("cli-parse-error-quotes-the-whole-line", "dscir/corpus/ingest.py",
           "    if len(line) <= limit:\n", "    if True:\n",
           (MESSAGES + "::test_bad_data_is_status_3_quoting_one_line",)),
    Mutant("cli-top-zero-accepted", "dscir/cli/runs.py",
           """tp.add_argument("--top", type=convention.count(1), default=10,""",
           """tp.add_argument("--top", type=int, default=10,""",
           (MESSAGES + "::test_a_nonsense_value_is_one_error_before_any_cluster",)),
    Mutant("cli-workers-zero-reaches-the-cluster", "dscir/cli/options.py",
           'g.add_argument("--workers", type=convention.count(1), metavar="N",',
           'g.add_argument("--workers", type=int, metavar="N",',
           (MESSAGES + "::test_a_nonsense_value_is_one_error_before_any_cluster",)),
    Mutant("cli-corpus-store-taken-for-a-run", "dscir/runs/store.py",
           "    if CORPUS_ATTR in group.attrs:\n", "    if False:\n",
           (MESSAGES + "::test_a_path_of_the_wrong_kind_says_what_it_is",)),
    Mutant("cli-bars-in-redirected-logs", "dscir/cli/convention.py",
           "return sys.stderr.isatty() if chosen is None else chosen",
           "return True if chosen is None else chosen",
           (CONVENTION + "::test_progress_bars_only_on_a_terminal",
            MESSAGES + "::test_a_redirected_ingest_writes_no_carriage_return")),
    Mutant("cli-dask-warnings-shown", "dscir/cli/convention.py",
           "if verbose >= 2 or not from_dask(message, filename):", "if True:",
           (MESSAGES + "::test_log_levels_and_dask_warnings",)),
    Mutant("cli-quiet-keeps-info", "dscir/cli/convention.py",
           "root.setLevel(logging.WARNING if quiet else", "root.setLevel(logging.INFO if quiet else",
           (MESSAGES + "::test_log_levels_and_dask_warnings",)),
    Mutant("mixture-block-counts-window", "dscir/models/mixtures/blocks.py",
           "a, b = np.searchsorted(r.word_ids, (block.lo, block.lo + width))",
           "a, b = np.searchsorted(r.word_ids, (0, width))",
           (MIXBLOCKS + "::test_block_step_is_each_blocks_own_step[scir-driver]",)),
    Mutant("mixture-block-stale-after-step", "dscir/models/mixtures/blocks.py",
           "    return new_block(block.index, block.lo, state)\n\n\ndef extend_block",
           "    return block._replace(state=state)\n\n\ndef extend_block",
           (MIXBLOCKS + "::test_block_step_is_each_blocks_own_step[scir-driver]",)),
    Mutant("mixture-block-shared-stream", "dscir/models/mixtures/blocks.py",
           "return key if n_blocks == 1 else derive(key, index)", "return key",
           (MIXBLOCKS + "::test_block_step_is_each_blocks_own_step[scir-driver]",)),
    Mutant("mixture-one-block-its-own-stream", "dscir/models/mixtures/blocks.py",
           "return key if n_blocks == 1 else derive(key, index)", "return derive(key, index)",
           ("tests/models/mixture/test_mixture.py::"
            "test_stochastic_sampler_with_every_document_and_infinite_steps_is_exact_gibbs",)),
    Mutant("mixture-one-block-given-totals", "dscir/models/mixtures/components.py",
           "if self.sampler.row_totals and n_blocks > 1:", "if self.sampler.row_totals:",
           ("tests/test_chain_digests.py::test_dpmm_chain_digest[sgrld]",)),
    Mutant("mixture-extend-stale-normalisers", "dscir/models/mixtures/components.py",
           "self.blocks.n_blocks)\n        self.normalise()", "self.blocks.n_blocks)",
           (MIXBLOCKS + "::test_grow_and_shrink_per_block[driver]",)),
    Mutant("mixture-auto-never-beyond-the-bound", "dscir/models/mixtures/components.py",
           'MEASURED_UP_TO + 1, held="the components")', 'None, held="the components")',
           (MIXBLOCKS + "::test_auto_placement_is_measured_up_to_its_bound",)),
    Mutant("mixture-columns-from-the-driver", "dscir/models/mixtures/components.py",
           'return self.blocks.cut("columns", block_columns, words, (self.norm,))',
           "return [np.ascontiguousarray(self.log_phi()[:, w]) for w in words]",
           ("tests/api/test_mixture_graphs.py::"
            "test_iteration_bytes_do_not_grow_with_the_vocabulary",)),
    # -- the driver's update at the cost of its minibatch (issue 30) --
    Mutant("scir-scaled-step-factor-dropped", "dscir/samplers/cir.py",
           "aj = prior + counts[j] * factor", "aj = prior + counts[j]",
           (SCALED + "::test_scaled_step_is_the_step_on_the_product_bit_for_bit",)),
    Mutant("driver-keeps-no-phi-rows", "dscir/models/lda/topics.py",
           'self.kept_rows = ("samples/phi",) if self.blocks.in_process else ()',
           "self.kept_rows = ()",
           ("tests/models/lda/test_lda_driver.py::test_estimator_fit_writes_a_run_and_transforms",)),
    Mutant("driver-kept-row-is-the-running-mean", "dscir/models/lda/topics.py",
           'phi = self._dense(block_output, "phi_mean", 0, self.norm)',
           'phi = self._dense(block_output, "phi_mean", self.n_samples, self.norm)',
           ("tests/models/lda/test_lda_driver.py::test_estimator_fit_writes_a_run_and_transforms",)),
    Mutant("block-counts-at-the-first-blocks-offset", "dscir/models/lda/vocabulary_blocks.py",
           "r.word_ids[a:b] - block.lo, r.values[a:b]", "r.word_ids[a:b], r.values[a:b]",
           (DRIVER_TOPICS + "::test_steps_are_each_blocks_sampler_step_on_fresh_counts_each_time",)),
    Mutant("lda-columns-without-row-normaliser", "dscir/models/lda/_gibbs.py",
           "v = row[words[i]] - lk", "v = row[words[i]]",
           (DRIVER_TOPICS + "::test_columns_and_log_phi_are_the_plain_ones_bit_for_bit",)),
    Mutant("lda-columns-nan-dropped", "dscir/models/lda/_gibbs.py",
           "if v > top[i] or np.isnan(v):", "if v > top[i]:",
           (DRIVER_TOPICS + "::test_shifted_columns_follow_numpy_at_infinities_and_nan",)),
    # -- the DP's relabelling move (issue 46) --
    Mutant("dp-relabel-holes-dropped", "dscir/models/mixtures/dp/relabel.py",
           "return rng.geometric(after / (alpha + after)) - 1",
           "return 0 * rng.geometric(after / (alpha + after))", (RELABEL_LAW,)),
    Mutant("dp-relabel-swap-ratio-without-holes", "dscir/models/mixtures/dp/relabel.py",
           "log_r = (holes[k + 1] + 1) * (", "log_r = (", (RELABEL_LAW,)),
    Mutant("dp-relabel-gibbs-components-stay", "dscir/models/mixtures/dp/gibbs.py",
           "self.log_sticks[order], self.log_theta[order]",
           "self.log_sticks[order], self.log_theta[:order.size]",
           (RELABEL + "::test_gibbs_slice_relabels_allocations_and_components_together",)),
    Mutant("dp-relabel-held-components-stay", "dscir/models/mixtures/dp/model.py",
           "self.held.permute(order)", "self.held.head(order.size)",
           (RELABEL + "::test_stochastic_sampler_moves_sticks_components_and_counts_with_"
            "the_labels",)),
    Mutant("dp-relabel-sticks-by-old-labels", "dscir/models/mixtures/dp/model.py",
           "conditional_sticks(users[order], self.alpha",
           "conditional_sticks(users[:order.size], self.alpha",
           (RELABEL + "::test_stochastic_sampler_moves_sticks_components_and_counts_with_"
            "the_labels",)),
    Mutant("tsv-csv-quoting-by-default", "dscir/corpus/formats/text.py",
           'default="none",', 'default="csv",',
           ("tests/corpus/test_corpus.py::test_tsv_is_iana_tsv_unless_quoting_csv",)),
    Mutant("tsv-carriage-return-kept", "dscir/corpus/formats/delimited.py",
           'line[:-1] if line.endswith("\\r") else line', "line",
           ("tests/corpus/test_corpus.py::test_tsv_is_iana_tsv_unless_quoting_csv",)),
    Mutant("encoding-ignored-by-the-line-reader", "dscir/corpus/ingest.py",
           "decode_text(block, path, lineno, offset, encoding)",
           "decode_text(block, path, lineno, offset)",
           ("tests/corpus/test_corpus.py::test_encoding_reads_latin1_and_a_decode_error_names_the_option",)),
    Mutant("utf-16-accepted-as-an-encoding", "dscir/corpus/ingest.py",
           "len(two) - len(one) != 1", "len(two) - len(one) < 1",
           ("tests/corpus/test_corpus.py::test_an_encoding_the_readers_cannot_use_is_a_usage_error",)),
    Mutant("run-store-called-not-a-corpus", "dscir/corpus/store.py",
           "if meta is None and any(mark in group.attrs for mark in RUN_ATTRS):",
           "if meta is None and False:",
           ("tests/cli/test_cli_messages.py::test_a_run_passed_as_a_corpus_is_named_as_a_run",)),
    Mutant("memory-check-skipped-for-the-workers-placement", "dscir/api/lda.py",
           "check_worker_memory(config.n_topics, n_words,",
           "(lambda *a: None)(config.n_topics, n_words,",
           ("tests/api/test_memory.py::test_the_workers_placement_is_refused_before_the_cluster_starts",)),
    Mutant("worker-memory-limits-not-summed", "dscir/api/memory.py",
           "return sum(limits), sum(disks.values())", "return max(limits), sum(disks.values())",
           ("tests/api/test_memory.py::test_a_running_cluster_counts_its_workers_limits_and_spill",)),
    Mutant("more-topics-than-words-not-warned", "dscir/api/memory.py",
           "        if rows > size:", "        if rows > 2 * size:",
           ("tests/api/test_memory.py::test_more_topics_than_words_or_documents_is_a_warning",)),
    Mutant("broken-pipe-an-error", "dscir/cli/__init__.py",
           "    except BrokenPipeError as exc:", "    except ZeroDivisionError as exc:",
           ("tests/cli/test_cli_messages.py::test_a_reader_gone_early_is_a_quiet_exit",)),
    Mutant("plot-empty-score-panel-silent", "dscir/display.py",
           "axes[0].text(0.5, 0.5, NO_SCORE,", "(lambda *a, **k: None)(0.5, 0.5, NO_SCORE,",
           ("tests/api/test_display.py::test_a_fit_without_held_out_scores_says_how_to_get_them",)),
    Mutant("progress-tqdm-auto-without-ipywidgets", "dscir/progress.py",
           "    if _has_widgets():", "    if True:",
           ("tests/test_progress.py::test_without_ipywidgets_the_text_bar_and_no_warning",)),
    Mutant("absurd-perplexity-not-warned", "dscir/models/lda/evaluation.py",
           "not value > (n_words := Corpus.open(store).n_words)",
           "not value > 10 * (n_words := Corpus.open(store).n_words)",
           ("tests/models/lda/test_evaluation.py::test_an_absurd_perplexity_names_the_share_of_unseen_words",)),
    Mutant("unseen-share-counts-held-out-words-as-training", "dscir/models/lda/evaluation.py",
           "ids = np.asarray(train.train_docs(), np.int64)", "ids = np.arange(train.n_docs)",
           ("tests/models/lda/test_evaluation.py::test_an_absurd_perplexity_names_the_share_of_unseen_words",)),
    Mutant("compare-tomotopy-memory-read-from-dscir", "docs/gen_compare.py",
           'read.cell(name, "systems", "system=tomotopy", "peak_pss_mb")',
           'read.cell(name, "systems", "system=dscir-fit", "peak_pss_mb")',
           ("tests/test_docs.py::test_a_comparison_row_shows_its_file_s_numbers",)),
    Mutant("compare-numbers-truncated", "docs/gen_compare.py",
           'return f"{self.value:,.{self.decimals}f}"', 'return f"{int(self.value):,}"',
           ("tests/test_docs.py::test_a_comparison_row_shows_its_file_s_numbers",)),
    # -- imports that load only what they use (issue 43) --
    Mutant("package-reexports-the-api-eagerly", "dscir/__init__.py",
           "from dscir.errors import CorpusError, DscirError\n",
           "from dscir.errors import CorpusError, DscirError\nfrom dscir.api import LDA\n",
           (LAYERS + "::test_a_lower_package_loads_nothing_above_it",)),
    # -- one burn rule, each constraint checked once (issue 43) --
    Mutant("burn-sweeps-accepted-without-warm-start", "dscir/models/lda/config.py",
           'always discards half); needs warm_start.", needs="warm_start"),',
           'always discards half); needs warm_start."),',
           (PARAMS_TESTS + "::test_what_only_a_warm_start_uses_is_refused_without_one"
            "[burn_sweeps]",)),
    Mutant("module-without-its-idea", "dscir/__main__.py",
           '"""``python -m dscir``: the command line (``dscir.cli.main``)."""\n', "",
           ("tests/test_code_shape.py::test_every_module_opens_with_its_idea",)),
    Mutant("configuration-defaults-what-the-policy-chooses", "dscir/params.py",
           "            if p.auto:\n                required", "            if False:\n                required",
           (PARAMS_TESTS + "::test_a_configuration_is_made_from_its_declarations",)),
    Mutant("configuration-default-not-the-declared-one", "dscir/params.py",
           "            value = p.coerce(p.default)", "            value = p.coerce(p.default) if p.config is not True else None",
           (PARAMS_TESTS + "::test_a_configuration_is_made_from_its_declarations",)),
    Mutant("needs-never-checked", "dscir/api/params.py",
           "if p.needs is not None and values[p.name] != p.default and not values[p.needs]:",
           "if False:",
           (PARAMS_TESTS + "::test_what_only_a_warm_start_uses_is_refused_without_one",)),
    Mutant("checkpoint-interval-ignored", "dscir/engine/chain.py",
           "or \\\n            (self.interval > 0 and time.monotonic() - self.since >= self.interval)",
           "", ("tests/runs/test_resume.py::test_checkpoints_by_wall_time_leave_the_chain_"
                "unchanged",)),
    Mutant("ctrl-c-checkpoint-dropped", "dscir/engine/chain.py",
           "due = interrupted or (self.every", "due = (self.every",
           ("tests/runs/test_resume.py::test_ctrl_c_mid_iteration_checkpoints_at_its_end_then_"
            "raises", INTERRUPTS + "::test_ctrl_c_with_default_options_leaves_a_checkpoint")),
    Mutant("checkpoints-off-by-default", "dscir/api/checkpoints.py",
           "seconds = DEFAULT_INTERVAL if checkpoint_interval is None else checkpoint_interval",
           "seconds = checkpoint_interval or 0.0",
           ("tests/runs/test_resume.py::test_a_fit_with_out_checkpoints_by_default_and_not_"
            "with_checkpoint_every_0", INTERRUPTS + "::test_ctrl_c_with_default_options_leaves_a_"
            "checkpoint")),
    Mutant("fitted-matrix-score-all-columns", "dscir/api/fitted.py",
           "    if docs.size == 0:\n        return log_columns, None\n",
           "    return log_columns, None\n",
           (FITTED + "::test_the_score_of_a_matrix_never_takes_log_phi_over_all_words",
            FITTED + "::test_the_driver_never_holds_k_by_w")),
    # -- a part per worker on all its threads (issue 44) --
    Mutant("parts-per-worker-thread", "dscir/engine/shards.py",
           "            futures = [self._futures[int(s)] for s in np.unique(shard[piece])]\n"
           "            out.append(ResidentBatch(futures, docs[piece], names[i] or None))\n",
           "            for piece in np.array_split(piece, min(2, piece.size)):\n"
           "                futures = [self._futures[int(s)] for s in np.unique(shard[piece])]\n"
           "                out.append(ResidentBatch(futures, docs[piece], names[i] or None))\n",
           ("tests/engine/test_threads.py::"
            "test_the_chain_is_the_same_on_any_number_of_workers_and_threads",)),
    Mutant("cuda-dense-alpha-prior-dropped", "dscir/models/lda/_gibbs_cuda.py",
           "s += (alpha + (ndk[k] - (k == old))) * rows[w, k]",
           "s += (ndk[k] - (k == old)) * rows[w, k]",
           (CUDA + "::test_single_token_document_follows_alpha_phi[dense]",)),
    Mutant("cuda-dense-own-token-counted", "dscir/models/lda/_gibbs_cuda.py",
           "s += (alpha + (ndk[k] - (k == old))) * rows[w, k]",
           "s += (alpha + ndk[k]) * rows[w, k]",
           (CUDA + "::test_two_token_document_follows_the_chains_exact_law[dense]",)),
    Mutant("cuda-sparse-smoothing-without-alpha", "dscir/models/lda/_gibbs_cuda.py",
           "smooth = alpha * cum[w, n_topics - 1]", "smooth = cum[w, n_topics - 1]",
           (CUDA + "::test_two_token_document_follows_the_chains_exact_law[sparse]",)),
    Mutant("cuda-sparse-own-token-counted", "dscir/models/lda/_gibbs_cuda.py",
           "                    if j != i:\n                        s += rows[w, z[j]]",
           "                    s += rows[w, z[j]]",
           (CUDA + "::test_two_token_document_follows_the_chains_exact_law[sparse]",)),
    Mutant("cuda-burn-in-kept", "dscir/models/lda/gibbs_cuda.py",
           "rest = (float(alpha), sweeps, sweeps // 2, key, z, counts)",
           "rest = (float(alpha), sweeps, 0, key, z, counts)",
           (CUDA + "::test_counts_conserve_tokens_in_the_cpu_order",)),
    Mutant("cuda-stream-keyed-by-block", "dscir/models/lda/_gibbs_cuda.py",
           "        _seed(state, key, docs[d])\n        lo, hi = tok_ptr[d], tok_ptr[d + 1]\n"
           "        for k in",
           "        _seed(state, key, cuda.blockIdx.x)\n        lo, hi = tok_ptr[d], tok_ptr[d + 1]\n"
           "        for k in",
           (CUDA + "::test_streams_by_document_whatever_the_grid[dense]",)),
    Mutant("cuda-stream-without-iteration", "dscir/models/lda/gibbs_cuda.py",
           "key = np.uint64(derive(_check_int(seed, \"seed\", 0), _check_int(iteration, "
           "\"iteration\", 0)))",
           "key = np.uint64(derive(_check_int(seed, \"seed\", 0)))",
           (CUDA + "::test_streams_by_document_whatever_the_grid",)),
    Mutant("cuda-device-never-checked", "dscir/models/lda/gibbs_cuda.py",
           "    if not found:\n        raise DscirError", "    if False:\n        raise DscirError",
           (CUDA + "::test_fit_on_cuda_without_a_device_is_one_clear_error",)),
    Mutant("cuda-dense-walk-counts-own-token", "dscir/models/lda/_gibbs_cuda.py",
           "q = (alpha + (ndk[k] - (k == old))) * rows[w, k]", "q = (alpha + ndk[k]) * rows[w, k]",
           (CUDA + "::test_single_token_document_follows_alpha_phi[dense]",)),
    Mutant("embedded-cluster-not-reused", "dscir/engine/cluster.py",
           "        yield embedded_client()\n        return\n",
           "        with _embedded(_form(None, None, None), dashboard_address, None) as c:\n"
           "            yield c\n        return\n",
           ("tests/api/test_session.py::test_fits_without_a_client_share_one_embedded_cluster",)),
    Mutant("embedded-default-spawns-processes", "dscir/engine/cluster.py",
           "processes = n_workers is not None or not numba_threadsafe()", "processes = True",
           ("tests/api/test_session.py::test_fits_without_a_client_share_one_embedded_cluster",
            "tests/engine/test_private_cluster.py::"
            "test_the_default_in_process_cluster_listens_on_loopback_only")),
    # -- placement as an engine service (issue 43): blocks in this process or on the workers --
    Mutant("in-process-blocks-gathered-out-of-order", "dscir/engine/blocks.py",
           "        return list(values)\n", "        return list(values)[::-1]\n",
           (PLACEMENT + "::test_a_column_model_runs_one_chain_in_process_and_on_the_workers",)),
    Mutant("auto-placement-ignores-missing-workers", "dscir/models/placement.py",
           'return "workers" if big and on_workers and not refused else "driver"',
           'return "workers" if big and not refused else "driver"',
           (PLACEMENT + "::test_one_rule_resolves_every_models_placement",
            MIXBLOCKS + "::test_auto_placement_is_measured_up_to_its_bound")),
    Mutant("auto-placement-ignores-refusal", "dscir/models/placement.py",
           'return "workers" if big and on_workers and not refused else "driver"',
           'return "workers" if big and on_workers else "driver"',
           (PLACEMENT + "::test_one_rule_resolves_every_models_placement",)),
    Mutant("in-process-dashboard-link-names-the-machine", "dscir/engine/cluster.py",
           "host = _DASHBOARD_HOSTS.get(cluster) if cluster is not None else None",
           "host = None",
           ("tests/engine/test_private_cluster.py::"
            "test_the_default_in_process_cluster_listens_on_loopback_only",)),
    Mutant("in-process-worker-http-on-every-interface", "dscir/engine/cluster.py",
           'else {"worker_dashboard_address": PRIVATE_DASHBOARD}', "else {}",
           ("tests/engine/test_private_cluster.py::"
            "test_the_default_in_process_cluster_listens_on_loopback_only",)),
    Mutant("sent-round-not-sent-again", "dscir/engine/sending.py",
           "RESENDS = 3", "RESENDS = 0",
           ("tests/engine/test_worker_failure.py::"
            "test_arguments_sent_ahead_and_lost_with_a_worker_are_sent_again",)),
    Mutant("columns-not-sent-ahead", "dscir/engine/sending.py",
           "SCATTER_BYTES = 1 << 20", "SCATTER_BYTES = 1 << 40",
           ("tests/api/test_mixture_graphs.py::test_fits_send_no_large_graph",)),
    Mutant("placement-trial-keeps-the-slower", "dscir/models/mixtures/components.py",
           "self.choice = min(self.ORDER,", "self.choice = max(self.ORDER,",
           (MIXBLOCKS + "::test_the_trial_times_each_placement_then_keeps_the_faster",)),
    Mutant("appended-rows-unfloored", "dscir/samplers/base.py",
           "np.maximum(np.exp(log_rows, out=new), TINY, out=new)", "np.exp(log_rows, out=new)",
           (MIXBLOCKS + "::test_appended_prior_rows_are_init_logs_values",)),
    Mutant("mixture-batch-beyond-the-quarter", "dscir/models/mixtures/policy.py",
           "return batch_size(n_docs, wanted)", "return max(1, wanted)", (MIX_BATCH,)),
    Mutant("mixture-batch-documents-per-word", "dscir/models/mixtures/policy.py",
           "BATCH_TOKENS_PER_WORD * n_words * n_docs / n_tokens",
           "BATCH_TOKENS_PER_WORD * n_words", (MIX_BATCH,)),
    Mutant("mixture-batch-without-the-floor", "dscir/models/mixtures/policy.py",
           "    wanted = REFERENCE_BATCH\n    if n_tokens:\n        wanted = max(wanted, ",
           "    wanted = REFERENCE_BATCH\n    if n_tokens:\n        wanted = (", (MIX_BATCH,)),
    Mutant("scatter-of-nothing-to-a-worker", "dscir/engine/sending.py",
           "            if places:  # a worker with nothing large",
           "            if True:  # a worker with nothing large",
           ("tests/engine/test_engine.py::"
            "test_a_round_with_large_arguments_for_one_worker_only_is_sent",)),
    # -- the DP's split-merge moves (issue 46) --
    Mutant("split-merge-without-the-proposal", "dscir/models/mixtures/dp/split_merge.py",
           "if math.log(uniform(s)) < log_r - log_q:", "if math.log(uniform(s)) < log_r:",
           (SPLIT_MERGE_LAW,)),
    Mutant("split-merge-without-alpha", "dscir/models/mixtures/dp/split_merge.py",
           "log_r = (math.log(alpha) + math.lgamma(nm[2])", "log_r = (math.lgamma(nm[2])",
           (SPLIT_MERGE_LAW,)),
    Mutant("split-merge-without-the-sizes", "dscir/models/mixtures/dp/split_merge.py",
           "log_r = (math.log(alpha) + math.lgamma(nm[2]) + math.lgamma(nm[3])",
           "log_r = (math.log(alpha)", (SPLIT_MERGE_LAW,)),
    Mutant("split-merge-likelihood-of-one-side", "dscir/models/mixtures/dp/split_merge.py",
           "out += (math.lgamma(ca[w] + a0) + math.lgamma(cb[w] + a0)",
           "out += (2 * math.lgamma(ca[w] + a0)", (SPLIT_MERGE_LAW,)),
    Mutant("split-merge-scores-a-user-with-its-own-words", "dscir/models/mixtures/dp/split_merge.py",
           "xa = ca[w] - x * out_a + a0", "xa = ca[w] + a0", (SPLIT_MERGE_SCAN,)),
    Mutant("split-merge-product-tail-dropped", "dscir/models/mixtures/dp/split_merge.py",
           "    la += math.log(pa)\n    lb += math.log(pb)\n    if length:", "    if length:",
           (SPLIT_MERGE_SCAN,)),
    Mutant("split-merge-move-keeps-the-sizes", "dscir/models/mixtures/dp/split_merge.py",
           "    nm[2] -= sign\n    nm[3] += sign\n", "", (SPLIT_MERGE_SCAN,)),
    Mutant("split-merge-components-not-redrawn", "dscir/models/mixtures/dp/model.py",
           "        self.held.replace(out.changed, ", "        (out.changed, ",
           (SPLIT_MERGE + "::test_stochastic_chain_splits_a_merged_start",)),
    Mutant("split-merge-task-counts-of-the-old-allocation", "dscir/models/mixtures/dp/tasks.py",
           "component_counts(batch.indptr, batch.indices, batch.data, new, n_words)",
           "component_counts(batch.indptr, batch.indices, batch.data, z, n_words)",
           (SPLIT_MERGE + "::test_stochastic_chain_splits_a_merged_start",)),
]


def copy_tree(dest: Path) -> None:
    shutil.copytree(ROOT / "dscir", dest / "dscir")
    shutil.copytree(ROOT / "tests", dest / "tests",
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    shutil.copytree(ROOT / "clusters", dest / "clusters",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "docs", dest / "docs")  # the reference pages tests read
    shutil.copy2(ROOT / "pyproject.toml", dest / "pyproject.toml")


def apply(dest: Path, m: Mutant) -> None:
    path = dest / m.path
    text = path.read_text()
    n = text.count(m.original)
    if n != 1:
        raise SystemExit(f"mutant {m.name}: the original text occurs {n} times in {m.path} "
                         f"(expected once); update tests/mutants.py:\n{m.original}")
    path.write_text(text.replace(m.original, m.replacement))
    drop_dependent_caches(dest, m.path)


def drop_dependent_caches(dest: Path, mutated: str) -> None:
    """Remove the copied numba caches of the mutated module and of every numba module
    importing it through numba modules: a cached kernel holds the compiled code of
    the kernels it calls or inlines from other modules, and numba checks only its
    own module's source."""
    numba = {f: [ln for ln in f.read_text().splitlines() if "import" in ln]
             for f in (dest / "dscir").rglob("*.py") if "njit" in f.read_text()}
    changed, todo = set(), [dest / mutated]
    while todo:
        f = todo.pop()
        if f in changed:
            continue
        changed.add(f)
        if f not in numba:
            continue
        dotted = ".".join(f.relative_to(dest).with_suffix("").parts).removesuffix(".__init__")
        parent, _, stem = dotted.rpartition(".")
        todo += [g for g, lines in numba.items() if any(
            dotted in ln or (f"from {parent} import" in ln and
                             stem in ln.replace(",", " ").split()) for ln in lines)]
    for f in changed:
        for cached in (f.parent / "__pycache__").glob(f"{f.stem}.*.nb[ic]"):
            cached.unlink()


def run_tests(dest: Path, tests: tuple[str, ...], log: Path, marks: str = ""
              ) -> tuple[int, str]:
    """pytest's exit status on ``tests`` in the copy at ``dest`` (those of them
    ``marks`` selects; "": all, whatever pyproject.toml deselects), and its last line."""
    env = {**os.environ, "PYTHONPATH": str(dest)}
    with open(log, "w") as out:
        rc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "-m", marks, *tests], cwd=dest, env=env, stdout=out,
                            stderr=subprocess.STDOUT).returncode
    lines = [x for x in log.read_text().splitlines() if x.strip()]
    return rc, (lines[-1].strip("= ") if lines else "")


#: CI's mutants per run: 40 took 833 s in a clean clone's ``.ci/run`` (with the
#: baseline of the slow tests among their guards), whose whole run took 3,044 s
#: here and 2,996 s on CI's machine; 24 keep that run under 45 of CI's 90 minutes.
CI_MUTANTS = 24
#: Of those, at least this many from the sample, whatever the change touches.
CI_SAMPLE_AT_LEAST = 8
#: Without an ``origin/main`` to compare with, a change is the last this many commits.
CI_COMMITS = 50
#: The tests ``python -m pytest -q`` deselects (pyproject.toml's addopts).
DESELECTED = "benchmark or slow"
#: A mutant's mean time on CI's 2 cores: CI's 40, with their slow guards' baseline,
#: took 833 s in a clean clone's ``.ci/run``.
MEAN_SECONDS = 833 / 40


def git(*args: str) -> str | None:
    """The output of ``git args`` in the repository, or None where git cannot answer."""
    try:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    except OSError:
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def ci_base(since: str | None) -> tuple[str | None, str]:
    """The commit a change is measured from, and how it was found."""
    if since is not None:
        if git("rev-parse", "--verify", f"{since}^{{commit}}") is None:
            raise SystemExit(f"--since {since}: not a commit of this repository")
        return since, f"--since {since}"
    if git("rev-parse", "HEAD") is None:
        return None, "no git history: the sample alone"
    fork = git("merge-base", "HEAD", "origin/main")
    if fork and fork != git("rev-parse", "HEAD"):
        return fork, f"merge-base with origin/main ({fork[:10]})"
    back = git("rev-parse", "--verify", f"HEAD~{CI_COMMITS}^{{commit}}")
    if back:
        return back, f"the last {CI_COMMITS} commits (since {back[:10]})"
    empty = git("hash-object", "-t", "tree", "/dev/null")  # a short history: all of it
    return empty, f"the whole history (under {CI_COMMITS} commits)"


def touched(mutants: list[Mutant], base: str | None) -> list[Mutant]:
    """The mutants whose module, a guarding test's file or table entry changed since
    ``base`` (in the working tree too)."""
    if base is None:
        return []
    changed = set((git("diff", "--name-only", base) or "").split())
    before = git("show", f"{base}:tests/mutants.py") or ""
    return [m for m in mutants
            if m.path in changed or f'"{m.name}"' not in before
            or any(test.split("::")[0] in changed for test in m.tests)]


def ci_selection(mutants: list[Mutant], since: str | None, budget: int
                 ) -> tuple[list[tuple[Mutant, str]], str]:
    """CI's mutants, each with why it runs ("touched" or "sample"), and the base's
    description: the touched ones first, up to ``budget - CI_SAMPLE_AT_LEAST``,
    then the others in an order drawn by the commit's hash, to ``budget``."""
    base, how = ci_base(since)
    seed = git("rev-parse", "HEAD") or hashlib.sha256(Path(__file__).read_bytes()).hexdigest()

    def drawn(m: Mutant) -> str:
        return hashlib.sha256(f"{seed}:{m.name}".encode()).hexdigest()

    changed = sorted(touched(mutants, base), key=drawn)
    first = changed[:max(budget - CI_SAMPLE_AT_LEAST, 0)]
    rest = sorted((m for m in mutants if m not in first), key=drawn)
    chosen = [(m, "touched") for m in first]
    chosen += [(m, "touched" if m in changed else "sample") for m in rest[:budget - len(first)]]
    order = {m.name: i for i, m in enumerate(mutants)}
    chosen.sort(key=lambda c: order[c[0].name])  # table order
    left = len([m for m in changed if m not in {c[0] for c in chosen}])
    note = f"base: {how}; {len(changed)} touched" + (
        f", {left} of them left to a later commit's sample" if left else "")
    return chosen, note


def probe_all(work: Path) -> None:
    """Every mutant's original text found once: a stale table fails before any test runs."""
    for i, m in enumerate(MUTANTS):
        probe = work / f"probe{i}"
        (probe / Path(m.path).parent).mkdir(parents=True)
        shutil.copy2(ROOT / m.path, probe / m.path)
        apply(probe, m)


def run_baseline(work: Path, mutants: list[Mutant], marks: str = "") -> bool:
    """The guarding tests (those ``marks`` selects) pass on an unmutated copy."""
    base = work / "baseline"
    copy_tree(base)
    tests = tuple(dict.fromkeys(t for m in mutants for t in m.tests))
    t0 = time.perf_counter()
    rc, last = run_tests(base, tests, work / "baseline.log", marks)
    ok = rc == 0 or (marks and rc == 5)  # 5: none of them carries the marks
    print(f"{'baseline':40s} {'pass' if ok else 'FAIL':9s} "
          f"{time.perf_counter() - t0:6.0f} s  {last}", flush=True)
    if not ok:
        print((work / "baseline.log").read_text()[-3000:])
    return ok


def run_mutant(work: Path, i: int, m: Mutant, keep: bool) -> bool:
    """The mutant is killed: its guarding tests fail on the mutated copy."""
    dest = work / f"m{i}"
    copy_tree(dest)
    apply(dest, m)
    t0 = time.perf_counter()
    # exit status 1: tests failed (killed); 0: all passed (survived); anything
    # else (collection error, interrupted, no tests) is not a kill either
    rc, last = run_tests(dest, m.tests, work / f"m{i}.log")
    verdict = {0: "SURVIVED", 1: "killed"}.get(rc, f"ERROR {rc}")
    print(f"{m.name:40s} {verdict:9s} {time.perf_counter() - t0:6.0f} s  {last}", flush=True)
    if not keep:
        shutil.rmtree(dest)
    return rc == 1


def parse(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="mutants to run (default: all)")
    parser.add_argument("--ci", action="store_true",
                        help=f"CI's selection: the touched mutants and a sample, {CI_MUTANTS}")
    parser.add_argument("--since", metavar="REV",
                        help="with --ci: the change is the difference from this commit")
    parser.add_argument("--budget", type=int, default=CI_MUTANTS,
                        help=f"with --ci: mutants to run (default {CI_MUTANTS})")
    parser.add_argument("--list", action="store_true",
                        help="print the mutants that would run and their estimated time, only")
    parser.add_argument("--no-baseline", action="store_true",
                        help="after `python -m pytest -q` passed: the baseline runs only "
                             f"the guarding tests it deselects ({DESELECTED})")
    parser.add_argument("--keep", action="store_true", help="keep the copies and logs")
    args = parser.parse_args(argv)
    unknown = set(args.names) - {m.name for m in MUTANTS}
    if unknown:
        parser.error(f"unknown mutants: {', '.join(sorted(unknown))}")
    if args.ci and args.names:
        parser.error("--ci chooses the mutants itself; name none")
    return args


def main(argv=None) -> int:
    args = parse(argv)
    chosen = [(m, "named") for m in MUTANTS if not args.names or m.name in args.names]
    if args.ci:
        chosen, note = ci_selection(MUTANTS, args.since, args.budget)
        print(f"CI's mutants: {note}", flush=True)
    if args.list:
        with tempfile.TemporaryDirectory(prefix="dscir-mutants-") as work:
            probe_all(Path(work))
        for m, why in chosen:
            print(f"{m.name:50s} {why:8s} {m.path}")
        print(f"{len(chosen)} of {len(MUTANTS)} mutants, estimated "
              f"{len(chosen) * MEAN_SECONDS:.0f} s ({MEAN_SECONDS:.1f} s a mutant, the mean of "
              "CI's selection on its 2 cores)")
        return 0
    mutants = [m for m, _ in chosen]
    work = Path(tempfile.mkdtemp(prefix="dscir-mutants-"))
    failed = False
    start = time.perf_counter()
    try:
        probe_all(work)
        failed |= not run_baseline(work, mutants, DESELECTED if args.no_baseline else "")
        for i, m in enumerate(mutants):
            failed |= not run_mutant(work, i, m, args.keep)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"copies and logs kept in {work}")
    print(f"{len(mutants)} mutants in {time.perf_counter() - start:.0f} s: "
          f"{'all killed' if not failed else 'FAILED (a survivor or a failing baseline)'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
