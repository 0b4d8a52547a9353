"""LDA's default policy: the settings a user gets without setting them, from the
corpus's size, K and the minibatch (pure code: numbers in, numbers out).

The papers' settings (``REFERENCE``) were tuned on one Wikipedia corpus (W =
6,130 words, K = 100). Policy ``"default"`` keeps what they mean on other
corpora, rule by rule:

* **minibatch |S|.** The papers' 50 documents make one pass over D documents
  D / 50 iterations, and an iteration costs about the same whatever its
  Gibbs work at that size (a fixed per-iteration overhead of the cluster):
  on 20 Newsgroups (D = 9,881) 200 iterations were one pass and 52.8 % worse
  than tomotopy's 200 passes, 1,000 iterations 23 % (``benchmarks/README.md``).
  So an unset minibatch is chosen so that one pass is ``PASS_ITERATIONS``
  iterations: |S| = ceil(D / PASS_ITERATIONS), at least ``REFERENCE_BATCH``
  (the papers', for small corpora) and at most ``BATCH_CAP`` (the Gibbs task
  of a minibatch stays a few seconds; one pass over a large corpus is then
  D / BATCH_CAP iterations), and never more than D. Measured at 40 sweeps
  against tomotopy's 200 passes (``benchmarks/defaults.py --tag _batchrule``):
  200 iterations went from +8.2 / +9.3 / +52.8 % (|S| = 50) to -3.7 / -3.5 /
  +10.8 % on ap / kos / 20 Newsgroups, and wiki from +6.7 % to -1.9 % at 100
  iterations; an iteration costs more, so on ap, kos and wiki dscir still
  takes 2-11x tomotopy's time to reach tomotopy's perplexity.
* **Gibbs sweeps per visit.** An unset ``sweeps`` is ``POLICY_SWEEPS`` = 10
  (half burn-in), not the 200 of the reference. With the minibatch rule
  every document is visited every 10 iterations, so a run of a few hundred
  iterations revisits it tens of times and the kept phi averages over those
  visits; at the rule's minibatches an iteration's time grows with its Gibbs
  work. Measured at 200 iterations against 40 sweeps (``benchmarks/defaults.py
  --sweeps 10``): ap, kos and 20 Newsgroups 1.7-3.5 % worse in perplexity
  (ap and kos still better than tomotopy) in 2.8-4.8x less time; on ap with
  ``benchmarks/peers.py`` against 100 sweeps: time to the target 116.7 s ->
  68.4 s, the final perplexity 2,517 -> 2,576, still the best of dscir,
  lda and tomotopy. With the engine's one task per worker thread and sparse
  counts, the time to target was 0.93x tomotopy's on wiki and 8.5x on ap
  (``benchmarks/README.md``, "Less waiting per iteration"). Warm starts are not part of the rule: on ap, warm starts
  with 4 sweeps took 3.9x the time of cold visits with 10 for 200 iterations
  and ended 3.4 % worse (reading and writing the stored assignments added
  more time than the 6 sweeps saved), and they need the driver placement (the
  workers placement keeps no local state) and a directory the workers share.
* **topic prior beta.** Every topic gets beta x W pseudo-counts from the prior
  against about N / K tokens of the corpus (N training tokens). SCIR's beta =
  0.5 is 3,065 pseudo-counts per topic on wiki, but 25,000 on a 50,000-word
  vocabulary, where it swamps the topics that get few tokens and their top
  words become the prior's noise. So beta x W is held to at most
  ``PRIOR_SHARE`` of the tokens per topic: beta = min(reference beta,
  PRIOR_SHARE x N / (K W)), and never below ``BETA_FLOOR``.
* **document prior alpha.** alpha x K, the prior's pseudo-counts per document,
  stays at its reference value at the papers' K (``REFERENCE_K``): alpha =
  reference alpha x REFERENCE_K / K, so the pull of the prior on a
  document's topic proportions does not grow with K.
* **SCIR's step size.** One SCIR step keeps e^-h of the state and draws the
  rest from the minibatch estimate a_hat = beta + (D/|S|) x counts; a_hat's
  relative noise depends on |S|, not on D, so D needs no rule. The schedule
  h_m = h (1 + m / tau)^-kappa is set per *document seen*: h = reference h x
  |S| / REFERENCE_BATCH and tau = reference tau x REFERENCE_BATCH / |S|, so
  the decay per document (h_m / |S|) after n documents is the same for every
  minibatch size, and equal to the papers' at |S| = 50. Neither a smaller h
  nor a faster decay (kappa 0.6, 1) brings 20 Newsgroups closer to tomotopy
  (``benchmarks/README.md``); more passes over the data do, so the schedule
  stays the papers'. At the large minibatches of the rule above h is large
  (news: |S| = 989, h = 9.89, e^-h = 5e-5, each step nearly a fresh draw
  from one minibatch's estimate); h = 1 there was 1.5 % better in one run,
  far less than the gap to tomotopy, so h is not capped.
* **gSGRHMC's step size.** With its default "splitting" integrator, the
  reference step: the friction is an exact OU step, stable at any eps theta.
  The position and force moves keep a limit, eps sqrt(1 + c_k. / theta_k.) < 2
  (docs/integrators.md), which is 0.06 at wiki's scale (K = 50, c_k. = N/K,
  theta_k. near W from the Gamma(1, 1) start) and self-limiting: a chain
  pushed past it grows theta_k. until it holds (``tests/test_lda_policy.py``
  runs a row at ap's scale and one with c_k. / theta_k. = 10^5 at the start,
  where the Euler step diverges in 7 steps). With ``integrator="euler"``
  (the paper's step) the step is bounded as follows. The Euler friction
  r - eps theta r is unstable once eps theta > 2, and on one topic row the
  chain's theta for the most frequent word settles near its scaled count over 1 + c_k. / theta_k.,
  with theta_k. near W (the reflected kicks of the words without counts):
  about ``TOP_SHARE`` x H, H = (N/K) W / (N/K + W). The papers' eps = 0.02
  sits at the edge (max eps theta 2.2-2.4 on rows at the scale of wiki, ap,
  kos and news), so an LDA chain diverges by chance (ap, K = 50). eps = min(reference, ``GSGRHMC_MARGIN`` / (TOP_SHARE x H)) keeps it at
  0.2-1.2 there (``benchmarks/gsgrhmc_stiffness.py --policy``); not on a
  corpus as small as reuters at K = 50 (2.1), where H underestimates. The
  price is slower mixing. SGRLD, SGLD and SGHMC keep their reference steps
  (no rule measured for them).

Policy ``"reference"`` is ``REFERENCE`` unchanged (minibatch 50, 200 sweeps).
An explicit argument always wins over either; a run records the policy's
name and the values it ran with.
``benchmarks/defaults.py`` measures the policy against the reference settings
and tomotopy on six corpora (``benchmarks/README.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dscir.errors import DscirError
from dscir.models.lda.config import REFERENCE

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


def top_scale(size: CorpusSize, n_topics: int) -> float:
    """H = (N/K) W / (N/K + W): where an expanded-mean gSGRHMC chain's theta for a
    topic's words settles, per unit share of the topic's tokens."""
    per_topic = size.n_tokens / n_topics
    return per_topic * size.n_words / (per_topic + size.n_words)
