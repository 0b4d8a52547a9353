"""LDA's default policy (dscir.models.lda.policy): its rules, and how the
estimator and the command line use it. Pure configuration: no cluster runs."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import dscir
from dscir.cli import main
from dscir.corpus import split_heldout, write_corpus
from dscir.errors import DscirError
from dscir.models.lda import REFERENCE
from dscir.models.lda.policy import (BATCH_CAP, BETA_FLOOR, LAZY_COVERAGE,
                                     LAZY_FROM_ENTRIES, PASS_ITERATIONS, POLICIES,
                                     POLICY_SWEEPS, PRIOR_SHARE, REFERENCE_BATCH, CorpusSize,
                                     choose, choose_batch, choose_scir_step, choose_sweeps)
from dscir.samplers.schedules import polynomial

# (training documents, vocabulary, training tokens): wiki, ap, kos, reuters, a
# raw-text newsgroup corpus with a large vocabulary, a long-document corpus.
SIZES = [CorpusSize(6961, 6130, 2_487_000), CorpusSize(1965, 10_473, 380_648),
         CorpusSize(3001, 6906, 409_000), CorpusSize(346, 4258, 73_500),
         CorpusSize(9800, 61_000, 1_450_000), CorpusSize(500, 2000, 5_000_000)]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("k", [10, 50, 100, 1000])
@pytest.mark.parametrize("sampler", sorted(REFERENCE))
def test_the_topic_prior_never_swamps_the_tokens_a_topic_gets(size, k, sampler):
    """beta x W (the prior's pseudo-counts per topic) is at most PRIOR_SHARE of the
    tokens a topic gets on average, N / K, unless beta is at its floor; and beta
    never exceeds the sampler's reference. Guards against a prior not scaled by W
    (or by the tokens per topic): SCIR's 0.5 on 61,000 words is 30,500 per topic."""
    beta = choose("default", sampler, k, 50, size)["beta"]
    assert BETA_FLOOR <= beta <= REFERENCE[sampler]["beta"]
    if beta > BETA_FLOOR:
        assert beta * size.n_words <= PRIOR_SHARE * size.n_tokens / k * (1 + 1e-12)
    # Where the reference already respects the share, it is kept.
    if REFERENCE[sampler]["beta"] * size.n_words <= PRIOR_SHARE * size.n_tokens / k:
        assert beta == REFERENCE[sampler]["beta"]


def test_the_prior_share_is_reached_when_the_reference_swamps():
    """Not merely bounded: where the reference's beta is too large, beta x W is the
    share itself (so the rule cannot pass by returning the floor everywhere)."""
    news = SIZES[4]
    beta = choose("default", "scir", 50, 50, news)["beta"]
    assert beta * news.n_words == pytest.approx(PRIOR_SHARE * news.n_tokens / 50)
    assert beta < REFERENCE["scir"]["beta"] / 10


@pytest.mark.parametrize("sampler", sorted(REFERENCE))
def test_alpha_keeps_the_reference_prior_mass_per_document(sampler):
    for k in (10, 50, 100, 400):
        alpha = choose("default", sampler, k, 50, SIZES[0])["alpha"]
        assert alpha * k == pytest.approx(REFERENCE[sampler]["alpha"] * 100)


def test_scir_step_per_document_seen_does_not_depend_on_the_minibatch():
    """h_m / |S| after n documents (m = n / |S| iterations) is one function of n for
    every minibatch size, the papers' at |S| = 50; and D does not enter the step.
    Guards against a step scaled the wrong way, or a schedule left in iterations."""
    ref = REFERENCE["scir"]
    papers = polynomial(ref["step_size"], ref["tau"], ref["kappa"])
    documents = np.arange(0, 200_001, 2000)
    for batch in (10, 25, 50, 200, 1000):
        for size in SIZES:
            c = choose("default", "scir", 50, batch, size)
            assert c["kappa"] == ref["kappa"]
            h = polynomial(c["step_size"], c["tau"], c["kappa"])
            per_doc = np.array([h(int(n // batch)) / batch for n in documents])
            want = np.array([papers(int(n // REFERENCE_BATCH)) / REFERENCE_BATCH
                             for n in documents])
            np.testing.assert_allclose(per_doc, want, rtol=1e-12)


@pytest.mark.parametrize("n_docs", [30, 346, 1720, 2626, 6961, 8646, 9800, 60_000, 10**6])
def test_an_unset_minibatch_makes_one_pass_in_pass_iterations(n_docs):
    """The default minibatch passes over the D training documents in
    PASS_ITERATIONS iterations where that needs between REFERENCE_BATCH and
    BATCH_CAP documents; else it is the nearer bound (and never more than D).
    Guards against the papers' 50 kept on every corpus (one pass over 20
    Newsgroups was 198 iterations), a pass rounded to more iterations, or a
    minibatch no corpus can hold."""
    size = CorpusSize(n_docs, 5000, 150 * n_docs)
    batch = choose_batch("default", size)
    passes = -(-n_docs // batch)  # iterations per pass
    if REFERENCE_BATCH * PASS_ITERATIONS <= n_docs <= BATCH_CAP * PASS_ITERATIONS:
        assert passes == PASS_ITERATIONS
        assert -(-n_docs // (batch - 1)) > PASS_ITERATIONS  # the smallest that does
    elif n_docs > BATCH_CAP * PASS_ITERATIONS:
        assert batch == BATCH_CAP
    else:
        assert batch == min(REFERENCE_BATCH, n_docs)
    assert choose_batch("reference", size) == REFERENCE_BATCH


@pytest.mark.parametrize("sampler", sorted(REFERENCE))
def test_reference_policy_is_the_reference_exactly(sampler, small_store):
    for store in (None, small_store):
        cfg = dscir.LDA(n_topics=7, sampler=sampler, batch_size=13,
                        policy="reference").chain_config(store)
        got = {k: getattr(cfg, k) for k in ("alpha", "beta", "step_size", "tau", "kappa")}
        assert got == REFERENCE[sampler]
        assert cfg.to_dict()["policy"] == "reference"
    assert choose("reference", sampler, 7, 13, SIZES[4]) == REFERENCE[sampler]


@pytest.fixture(scope="module")
def small_store(tmp_path_factory):
    rng = np.random.default_rng(3)
    counts = rng.poisson(0.3, size=(60, 400))
    path = tmp_path_factory.mktemp("policy") / "corpus.zarr"
    write_corpus(path, sp.csr_matrix(counts), vocabulary=[f"w{i}" for i in range(400)])
    split_heldout(path, every=6)
    return str(path)


def test_the_estimator_reads_the_corpus_and_records_the_policy(small_store):
    from dscir.api.lda import corpus_size

    size = corpus_size(small_store)
    assert (size.n_docs, size.n_words) == (50, 400)
    cfg = dscir.LDA(n_topics=20, batch_size=10).chain_config(small_store)
    want = choose("default", "scir", 20, 10, size)
    assert {k: getattr(cfg, k) for k in want} == want
    assert cfg.to_dict()["policy"] == "default"
    assert cfg.beta < REFERENCE["scir"]["beta"]  # 0.5 x 400 words > 10 % of ~300 tokens


@pytest.fixture(scope="module")
def larger_store(tmp_path_factory):
    """1,200 short documents (1,050 training): the default minibatch is 105."""
    rng = np.random.default_rng(4)
    counts = rng.poisson(0.05, size=(1200, 300))
    counts[:, 0] += 1  # no empty document
    path = tmp_path_factory.mktemp("policy") / "larger.zarr"
    write_corpus(path, sp.csr_matrix(counts), vocabulary=[f"w{i}" for i in range(300)])
    split_heldout(path, every=8)
    return str(path)


def test_the_estimator_chooses_the_minibatch_when_it_is_unset(larger_store):
    """LDA() on 1,050 training documents runs minibatches of 105 (one pass in 10
    iterations) with SCIR's step scaled to them; policy="reference" and an
    explicit batch_size keep theirs."""
    cfg = dscir.LDA(n_topics=20).chain_config(larger_store)
    assert cfg.batch_size == 105
    assert (cfg.step_size, cfg.tau) == pytest.approx((0.5 * 105 / 50, 10 * 50 / 105))
    assert dscir.LDA(n_topics=20, policy="reference").chain_config(larger_store).batch_size == 50
    given = dscir.LDA(n_topics=20, batch_size=30).chain_config(larger_store)
    assert (given.batch_size, given.step_size) == (30, pytest.approx(0.5 * 30 / 50))
    assert dscir.LDA(n_topics=20, policy="reference").chain_config().batch_size == 50


def test_unset_sweeps_are_the_policys(larger_store):
    """LDA() runs POLICY_SWEEPS Gibbs sweeps per visit (half of them burn-in) under
    "default", where the minibatch rule makes a pass every 10 iterations; policy
    "reference" keeps the 200 it ran before the rule, and explicit sweeps win
    under both. Guards against the old 200 under every policy."""
    assert (choose_sweeps("default"), choose_sweeps("reference")) == (POLICY_SWEEPS, 200)
    cfg = dscir.LDA(n_topics=20).chain_config(larger_store)
    assert POLICY_SWEEPS < 200 and (cfg.sweeps, cfg.burn) == (POLICY_SWEEPS, POLICY_SWEEPS // 2)
    ref = dscir.LDA(n_topics=20, policy="reference").chain_config(larger_store)
    assert (ref.sweeps, ref.burn) == (200, 100)
    assert dscir.LDA(policy="reference").chain_config().sweeps == 200
    for policy in POLICIES:
        assert dscir.LDA(n_topics=20, sweeps=40, policy=policy
                         ).chain_config(larger_store).sweeps == 40
    with pytest.raises(DscirError, match="must be in 0..sweeps-1"):
        dscir.LDA(n_topics=20, burn_sweeps=POLICY_SWEEPS, warm_start=True
                  ).chain_config(larger_store)


def test_explicit_arguments_always_win(small_store):
    given = {"alpha": 0.37, "beta": 0.021, "step_size": 0.9, "tau": 3.0, "kappa": 0.5}
    for policy in ("default", "reference"):
        cfg = dscir.LDA(n_topics=20, batch_size=10, policy=policy, **given
                        ).chain_config(small_store)
        assert {k: getattr(cfg, k) for k in given} == given
    cfg = dscir.LDA(n_topics=20, batch_size=10, tau=None).chain_config(small_store)
    assert cfg.tau is None  # a constant step, asked for, is kept


def test_bad_policy_names_and_a_missing_corpus_are_one_clear_error(small_store, capsys):
    with pytest.raises(DscirError, match="policy must be one of default, reference"):
        dscir.LDA(policy="tuned").chain_config(small_store)
    with pytest.raises(DscirError, match="chooses settings from the corpus"):
        dscir.LDA().chain_config()
    assert main(["fit", "lda", small_store, "--policy", "tuned"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'tuned'" in err and "Traceback" not in err


def _zipf_row(n_words: int, tokens: int) -> np.ndarray:
    """One topic's counts: a Zipf(1.1) draw of ``tokens`` over ``n_words`` words."""
    p = 1.0 / np.arange(1, n_words + 1) ** 1.1
    return np.random.default_rng(0).multinomial(tokens, p / p.sum())[None].astype(float)


def _gsgrhmc_edge(counts: np.ndarray, eps: float, integrator: str,
                  steps: int = 600) -> tuple[float, float]:
    """(max eps x theta, L1 of phi to the posterior mean) over the second half of a
    gSGRHMC chain on one topic row from theta ~ Gamma(1, 1); (inf, inf) once the
    state stops being finite."""
    from dscir.rng import derive
    from dscir.samplers import get_sampler

    sampler = get_sampler("gsgrhmc", integrator=integrator)
    state = sampler.init(np.random.default_rng(1).gamma(1.0, 1.0, size=counts.shape))
    top = 0.0
    for m in range(steps):
        with np.errstate(all="ignore"):
            state = sampler.step(state, 1e-4, counts, eps, derive(3, m))
        if not (np.all(np.isfinite(state.theta)) and np.all(np.isfinite(state.r))):
            return np.inf, np.inf
        if m >= steps // 2:
            top = max(top, eps * float(state.theta.max()))
    phi = state.theta[0] / state.theta.sum()
    post = (1e-4 + counts[0]) / (1e-4 + counts[0]).sum()
    return top, float(np.abs(phi - post).sum())


def test_gsgrhmc_euler_step_leaves_the_euler_friction_a_margin():
    """gSGRHMC's Euler friction step r - eps theta r is unstable beyond eps theta = 2;
    at the papers' eps = 0.02 a topic row at ap's scale (K = 50) sits at that edge,
    where ap's LDA chain diverged by chance, and at the policy's Euler step well
    inside it. Guards against the reference step kept, or a rule too weak for ap."""
    size = SIZES[1]
    counts = _zipf_row(size.n_words, round(size.n_tokens / 50))
    assert _gsgrhmc_edge(counts, REFERENCE["gsgrhmc"]["step_size"], "euler")[0] >= 2.0
    eps = choose("default", "gsgrhmc", 50, 50, size, "euler")["step_size"]
    assert eps < REFERENCE["gsgrhmc"]["step_size"]
    assert _gsgrhmc_edge(counts, eps, "euler")[0] < 1.0


def test_gsgrhmc_splitting_runs_the_reference_step():
    """With the default splitting integrator the policy keeps the papers' eps = 0.02:
    at ap's scale (K = 50) that chain stays finite with eps theta beyond the Euler
    edge (measured 3.9); on a row with c_k. / theta_k. = 10^5 at the start (100
    words, 10^7 tokens) the Euler step diverges at 0.02 and the splitting chain's
    phi is within L1 0.0026 of the posterior mean. Guards against the Euler bound
    applied to the default, or a splitting step that is not stable there."""
    size = SIZES[1]
    eps = choose("default", "gsgrhmc", 50, 50, size)["step_size"]
    assert eps == REFERENCE["gsgrhmc"]["step_size"]
    counts = _zipf_row(size.n_words, round(size.n_tokens / 50))
    assert 2.0 < _gsgrhmc_edge(counts, eps, "splitting")[0] < np.inf
    stiff = _zipf_row(100, 10**7)
    assert _gsgrhmc_edge(stiff, eps, "euler", 50)[0] == np.inf
    assert _gsgrhmc_edge(stiff, eps, "splitting")[1] < 0.01


def test_auto_scir_step_is_lazy_only_where_k_w_is_large_and_the_minibatch_sparse():
    """scir_step="auto" takes the lazy step at K x W >= LAZY_FROM_ENTRIES with a
    minibatch of fewer tokens than LAZY_COVERAGE x W, the dense one elsewhere (and
    always for the other samplers or with control variates, which lazy cannot
    run); an explicit step is kept. Guards against either bound dropped or
    reversed (a lazy step on a small state, or on a minibatch touching most words)."""
    size = CorpusSize(20_000, 100_000, 2_000_000)  # 100 tokens a document
    edge = LAZY_FROM_ENTRIES // size.n_words  # K at the entries bound: 100
    batch = int(LAZY_COVERAGE * size.n_words / size.mean_length)  # at the coverage bound: 100
    assert choose_scir_step("auto", "scir", False, edge, batch - 1, size) == "lazy"
    assert choose_scir_step("auto", "scir", False, edge - 1, batch - 1, size) == "dense"
    assert choose_scir_step("auto", "scir", False, edge, batch, size) == "dense"
    assert choose_scir_step("auto", "scir", False, 1000, 10 * batch, size) == "dense"
    assert choose_scir_step("auto", "sgrld", False, 1000, 10, size) == "dense"
    assert choose_scir_step("auto", "scir", True, 1000, 10, size) == "dense"
    assert choose_scir_step("lazy", "scir", False, 2, 10**6, size) == "lazy"
    assert choose_scir_step("dense", "scir", False, 1000, 10, size) == "dense"


def test_the_estimator_records_the_scir_step_that_runs(tmp_path):
    """The run records "dense" or "lazy", never "auto"; a configuration that still
    says "auto" is one clear error where a chain is built from it."""
    from dataclasses import replace

    from dscir.models.base import Data
    from dscir.models.lda import LDAModel

    w = 20_000  # 40 documents of 5 tokens: a minibatch of 10 touches 50 words at most
    rows = np.repeat(np.arange(40), 5)
    counts = sp.csr_matrix((np.ones(rows.size, np.int64), (rows, np.arange(rows.size) * 97)),
                           shape=(40, w))
    store = str(tmp_path / "wide.zarr")
    write_corpus(store, counts, vocabulary=[f"w{i}" for i in range(w)])
    dense = dscir.LDA(n_topics=20, batch_size=10, scir_step="auto").chain_config(store)
    lazy = dscir.LDA(n_topics=500, batch_size=10, scir_step="auto").chain_config(store)
    assert (dense.scir_step, lazy.scir_step, lazy.placement) == ("dense", "lazy", "driver")
    with pytest.raises(DscirError, match="scir_step='auto' is chosen on the corpus"):
        LDAModel(replace(dense, scir_step="auto"), Data.open(store), None)
