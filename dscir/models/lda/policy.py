"""LDA's default policy: the settings a user gets without setting them, from the
corpus's size, K and the minibatch (pure code: numbers in, numbers out).

The papers' settings (``REFERENCE``) were tuned on one Wikipedia corpus (W =
6,130 words, K = 100). Policy ``"default"`` keeps what they mean on other
corpora, rule by rule:

* **minibatch |S|.** An iteration costs about the same whatever its Gibbs work
  at the papers' 50 documents (the cluster's fixed cost per iteration), so a
  pass over a large corpus at |S| = 50 takes too many iterations. An unset
  minibatch makes one pass ``PASS_ITERATIONS`` iterations: |S| =
  ceil(D / PASS_ITERATIONS), at least ``REFERENCE_BATCH`` (the papers', for
  small corpora), at most ``BATCH_CAP`` (a minibatch's Gibbs task stays a few
  seconds) and never more than D.
* **Gibbs sweeps per visit.** ``POLICY_SWEEPS`` (half burn-in) instead of the
  reference's 200: with the minibatch rule every document is revisited every
  ``PASS_ITERATIONS`` iterations, and the kept phi averages over the visits,
  so fewer sweeps per visit cost little perplexity for much less time.
* **topic prior beta.** Every topic gets beta x W pseudo-counts against about
  N / K tokens (N training tokens); on a large vocabulary the reference beta
  swamps the topics that get few tokens. So beta = min(reference beta,
  ``PRIOR_SHARE`` x N / (K W)), never below ``BETA_FLOOR``.
* **document prior alpha.** alpha x K, the prior's pseudo-counts per document,
  stays at its reference value at the papers' K (``REFERENCE_K``): alpha =
  reference alpha x REFERENCE_K / K.
* **SCIR's step size.** a_hat's relative noise depends on |S|, not on D, so
  the schedule h_m = h (1 + m / tau)^-kappa is set per document seen: h =
  reference h x |S| / REFERENCE_BATCH, tau = reference tau x REFERENCE_BATCH /
  |S|, the papers' decay per document at every minibatch size.
* **gSGRHMC's step size.** With the default "splitting" integrator (an exact
  OU friction step, stable at any eps theta) the reference step. With
  ``integrator="euler"`` (the paper's step) the friction r - eps theta r is
  unstable once eps theta > 2, and the most frequent word's theta on a topic
  row settles near ``TOP_SHARE`` x H, H = (N/K) W / (N/K + W); so eps =
  min(reference, ``GSGRHMC_MARGIN`` / (TOP_SHARE x H)), at the price of slower
  mixing (docs/integrators.md). SGRLD, SGLD and SGHMC keep their reference steps.

Policy ``"reference"`` is ``REFERENCE`` unchanged (minibatch 50, 200 sweeps).
An explicit argument always wins over either; a run records the policy's
name and the values it ran with. The rules were chosen by benchmarks/defaults.py
at commit 36c1d4f (against the reference settings and tomotopy); what they give
against the peers: docs/benchmarks/peers.md. The minibatch rule was checked
again under ``n_iter="auto"`` by leaving one corpus out (benchmarks/batch_rule.py
at commit 64ae4e1, ``results/stopping_batch_rule.json``): one pass in 5 or 4
iterations, at most 1,000 or 2,000 documents, was slower than today's on the
corpus left out in three of five folds, so the rule stays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dscir.errors import DscirError

# Reference settings (Baker et al. 2018; Patterson & Teh 2013; Ma et al. 2015).
# SGLD and SGHMC are baselines without published LDA settings: their values
# are ours, chosen to be stable, not tuned.
REFERENCE: dict[str, dict[str, Any]] = {
    "scir": {"alpha": 0.1, "beta": 0.5, "step_size": 0.5, "tau": 10.0, "kappa": 0.33},
    "sgrld": {"alpha": 0.01, "beta": 1e-4, "step_size": 0.01, "tau": 1000.0, "kappa": 0.6},
    "gsgrhmc": {"alpha": 0.01, "beta": 1e-4, "step_size": 0.02, "tau": None, "kappa": 0.0},
    "sgld": {"alpha": 0.1, "beta": 0.5, "step_size": 1e-4, "tau": None, "kappa": 0.0},
    "sghmc": {"alpha": 0.1, "beta": 0.5, "step_size": 1e-4, "tau": None, "kappa": 0.0},
}

POLICIES = ("default", "reference")
PRIOR_SHARE = 0.1  # beta x W / (N / K) at most this (wiki at the reference: 0.12)
BETA_FLOOR = 1e-4  # the smallest topic prior of the papers (SGRLD, gSGRHMC)
REFERENCE_K = 100  # the papers' number of topics
REFERENCE_BATCH = 50  # the papers' minibatch (documents)
PASS_ITERATIONS = 10  # iterations per pass over the training documents (unset minibatch)
BATCH_CAP = 1000  # the largest minibatch the policy chooses (documents)
REFERENCE_SWEEPS = 200  # Gibbs sweeps per visit before the sweeps rule (half burn-in)
POLICY_SWEEPS = 10  # Gibbs sweeps per visit under "default" (half burn-in)
TOP_SHARE = 0.05  # a topic's most frequent word's share of its tokens (gSGRHMC's rule)
GSGRHMC_MARGIN = 1.0  # eps x theta of that word; the Euler friction is unstable beyond 2
LAZY_FROM_ENTRIES = 10**7  # K x W from which scir_step="auto" may take the lazy step
LAZY_COVERAGE = 0.1  # ... when a minibatch's tokens are fewer than this share of W


@dataclass(frozen=True)
class CorpusSize:
    """What the policy reads of a corpus: its training documents D, vocabulary W
    and training tokens N."""

    n_docs: int
    n_words: int
    n_tokens: int

    @property
    def mean_length(self) -> float:
        return self.n_tokens / max(self.n_docs, 1)


def check_policy(policy: str) -> None:
    if policy not in POLICIES:
        raise DscirError(f"policy={policy!r} is not one of {', '.join(POLICIES)}")


def needs_corpus(policy: str) -> bool:
    """Whether the policy's choice depends on the corpus."""
    check_policy(policy)
    return policy != "reference"


def choose_batch(policy: str, size: CorpusSize | None = None) -> int:
    """The minibatch ``policy`` gives when none is set: the papers' 50 for
    "reference"; for "default" one pass in PASS_ITERATIONS iterations, within
    [REFERENCE_BATCH, BATCH_CAP] and at most D."""
    check_policy(policy)
    if policy == "reference":
        return REFERENCE_BATCH
    if size is None:
        raise DscirError(f"policy={policy!r} chooses settings from the corpus's size, the "
                         "minibatch too; give the corpus (or policy='reference')")
    batch = min(BATCH_CAP, max(REFERENCE_BATCH, -(-size.n_docs // PASS_ITERATIONS)))
    return max(1, min(batch, size.n_docs))


def choose_sweeps(policy: str) -> int:
    """The Gibbs sweeps per minibatch document and visit ``policy`` gives when none
    are set: REFERENCE_SWEEPS for "reference", POLICY_SWEEPS for "default"."""
    check_policy(policy)
    return REFERENCE_SWEEPS if policy == "reference" else POLICY_SWEEPS


def choose(policy: str, sampler: str, n_topics: int, batch_size: int,
           size: CorpusSize | None = None, integrator: str | None = None) -> dict[str, Any]:
    """The settings ``policy`` gives: alpha, beta, step_size, tau, kappa, for the
    minibatch ``batch_size`` (the user's, or ``choose_batch``'s) and the
    Hamiltonian samplers' ``integrator`` (None: their default, "splitting")."""
    check_policy(policy)
    ref = dict(REFERENCE[sampler])
    if policy == "reference":
        return ref
    if size is None:
        raise DscirError(f"policy={policy!r} chooses settings from the corpus's size; "
                         "give the corpus (or policy='reference')")
    out = dict(ref)
    out["alpha"] = ref["alpha"] * REFERENCE_K / n_topics
    per_topic = size.n_tokens / n_topics
    out["beta"] = max(BETA_FLOOR, min(ref["beta"], PRIOR_SHARE * per_topic / size.n_words))
    if sampler == "scir":
        scale = batch_size / REFERENCE_BATCH
        out["step_size"] = ref["step_size"] * scale
        out["tau"] = None if ref["tau"] is None else ref["tau"] / scale
    if sampler == "gsgrhmc" and integrator == "euler":
        out["step_size"] = min(ref["step_size"],
                               GSGRHMC_MARGIN / (TOP_SHARE * top_scale(size, n_topics)))
    return out


def choose_scir_step(scir_step: str, sampler: str, control_variates: bool, n_topics: int,
                     batch_size: int, size: CorpusSize) -> str:
    """The SCIR step that runs: ``scir_step`` itself, or for ``"auto"`` the lazy step
    where it pays and can run: sampler "scir" without control variates, K x W >=
    LAZY_FROM_ENTRIES, and a minibatch whose tokens (|S| x the mean training
    length, a bound on the words it touches) are fewer than LAZY_COVERAGE x W.
    Elsewhere the dense step, which steps every entry at a cost the lazy step's
    bookkeeping only beats when most entries sit out."""
    if scir_step != "auto":
        return scir_step
    if sampler != "scir" or control_variates:
        return "dense"
    big = n_topics * size.n_words >= LAZY_FROM_ENTRIES
    sparse = batch_size * size.mean_length < LAZY_COVERAGE * size.n_words
    return "lazy" if big and sparse else "dense"


def top_scale(size: CorpusSize, n_topics: int) -> float:
    """H = (N/K) W / (N/K + W): where an expanded-mean gSGRHMC chain's theta for a
    topic's words settles, per unit share of the topic's tokens."""
    per_topic = size.n_tokens / n_topics
    return per_topic * size.n_words / (per_topic + size.n_words)
