"""Default settings of the mixtures from the corpus's shape.

The papers' reference settings (``REFERENCE``: 20 or 30 components drawn from
Gamma(1, 1), minibatch 1000) were chosen on msweb (285 areas). On text
(thousands of words) they fail: a random component's likelihood of a document
is noise, the first allocation merges true clusters, and no allocation move
(Gibbs or slice, one document at a time) splits a merged cluster again; with
minibatch statistics the stochastic chains merge more. What works is a start
from clusters of documents with more clusters than the labels (the DP prior
empties the surplus as the chain runs) and moves that split what was merged.

``policy="auto"`` (the default) therefore gives, for W >= ``TEXT_WORDS``:

* the sampler ``TEXT_SAMPLER`` (SGRLD) where the user names none: on 20
  Newsgroups (21,537 words) seeded SGRLD beat k-means on tf-idf and exact
  Gibbs (benchmarks/dpmm_text.py at commit 36c1d4f) where seeded SCIR stops at NMI 0.471;
  SCIR with a0 = 0.001 collapses onto one cluster (its unseen words fall to
  Gamma(0.001) draws, ~e^-1000, within a few steps of h = 0.1);
* ``init=TEXT_DP_INIT`` ("collapsed") with ``n_init = TEXT_COMPONENTS`` (60):
  the clusters that collapsed Gibbs sweeps on a sample of documents keep
  occupied, under Dirichlet(alpha / 60) weights, the finite approximation of
  the DP prior (``dscir.models.mixtures.finite.collapsed``; the largest
  first; 60 chosen leaving each labelled corpus out, ``benchmarks/mixtures.py
  --loo n_init``). Each starting cluster is built from many documents, not
  one seed, and the chain holds the clusters in use from its first iteration
  instead of emptying 100 seeded components over several passes;
* ``split_merge = TEXT_SPLIT_MERGE`` proposals a pass
  (``dscir.models.mixtures.dp.split_merge``): exact moves that split a merged
  cluster, which allocation moves, one document at a time, never do;
* for SGRLD, ``TEXT_SGRLD``: a0 = 0.1 and epsilon_theta = 0.03 instead of
  its msweb reference 0.001 and 0.001 (a model change: the Dirichlet(a0)
  base measure; at the reference values the start's clusters merge). a0 was
  chosen leaving each labelled corpus out (``benchmarks/mixtures.py
  --loo a0``; docs/guide/policy.md). The other samplers keep their
  reference a0 and steps (SCIR and exact Gibbs: a0 = 0.5);
* a minibatch of min(1000, N / 4) documents (at most a quarter of the data,
  so small corpora still get a stochastic minibatch);

and below ``TEXT_WORDS`` (msweb-like data) SCIR with the reference settings
and the same minibatch rule, without split-merge moves. ``policy="reference"``
gives SCIR (unless named) with the reference settings whatever the corpus
(minibatch 1000), as the papers' figures ran. Explicit arguments override
either (``DPMixture("sgrld")`` on text is the default chain). Each chain is a
correct sampler of the model its a0 defines.

The finite mixture (``mixture_settings``) has its K fixed by the user, so a
larger minibatch cannot keep more clusters; under ``policy="auto"`` its
minibatch (``mixture_batch_size``) holds at least ``BATCH_TOKENS_PER_WORD``
tokens per vocabulary word, at least 1000 documents and at most N / 4. Every
iteration pays a component step of K W transitions whatever the minibatch,
and the allocations cost K per token; on 20 Newsgroups one step entry costs
as much as 7-8 allocation token-components (the driver's update per K W
against the tasks' summed compute per K x token, 6 on Reuters R8:
results/mixtures_batch_rule.json), so at 8 tokens per word the allocation
work is about the step's. On text it gets two changes more, each needed
(tests/models/mixture/test_mixture_text.py; either alone still collapses):

* a0 = min(reference, ``TEXT_PRIOR_SHARE`` x tokens / (K W)): the prior's mass
  a0 W per component a tenth of a cluster's tokens. At the reference a0 = 0.5
  over 10^4-10^5 words a0 W is comparable to a cluster's token count, and then
  the model itself prefers one cluster: a small cluster's predictive spreads
  a0 W / (a0 W + n_k) of its mass over words it never saw, the merged one
  hardly any, so even the exact collapsed sampler merges every cluster;
* ``init="collapsed"``: the components start from ``START_SWEEPS`` collapsed
  Gibbs sweeps on the seeding candidates (``dscir.models.mixtures.finite.collapsed``)
  instead of K documents. A k-means++ seed document of 20-200 tokens over 10^4
  words attracts documents by their common words, the first allocation is
  lopsided, and neither uncollapsed sampler splits what it merged.

``TEXT_PRIOR_SHARE`` and the start were chosen leaving one corpus out
(benchmarks/mixtures_text.py at commit 36c1d4f: 20 Newsgroups, Reuters R8, fortunes, Rotten
Tomatoes at the ingest defaults): every corpus, left out, got 0.1 with the
collapsed start from the other three (docs/guide/policy.md).
"""

from __future__ import annotations

import math
from typing import Any

from dscir.models.mixtures.dp.config import REFERENCE
from dscir.models.mixtures.finite.config import REFERENCE as MIXTURE_REFERENCE
from dscir.models.mixtures.params import POLICIES

TEXT_WORDS = 1000  # vocabulary size from which the text settings apply
TEXT_COMPONENTS = 60  # the DP's collapsed start's clusters on text (more than it keeps)
TEXT_DP_INIT = "collapsed"  # the DP mixture's start on text
TEXT_SPLIT_MERGE = 20  # the DP mixture's split-merge proposals per pass on text
TEXT_SAMPLER = "sgrld"  # the DP mixture's sampler on text where none is named
TEXT_SGRLD = {"a0": 0.1, "step_sizes": (0.03, 0.005)}  # SGRLD's a0 and steps on text
DEFAULT_SAMPLER = "scir"  # elsewhere (the papers' msweb sampler)
REFERENCE_BATCH = 1000
BATCH_TOKENS_PER_WORD = 8  # the finite mixture's minibatch tokens per vocabulary word (at least)
TEXT_PRIOR_SHARE = 0.1  # the finite mixture's a0 W on text, as a share of a cluster's tokens
MIXTURE_TEXT_INIT = "collapsed"  # the finite mixture's start on text


def batch_size(n_docs: int, wanted: int = REFERENCE_BATCH) -> int:
    """The default minibatch: ``wanted`` documents, at most a quarter of ``n_docs`` (>= 1)."""
    return max(1, min(wanted, n_docs // 4))


def mixture_batch_size(n_docs: int, n_words: int, n_tokens: int | None) -> int:
    """The finite mixture's minibatch: enough documents for ``BATCH_TOKENS_PER_WORD``
    x ``n_words`` tokens at the corpus's mean length (``n_tokens`` over ``n_docs``;
    unknown: ``REFERENCE_BATCH``), at least ``REFERENCE_BATCH``, at most a quarter
    of ``n_docs`` (>= 1)."""
    wanted = REFERENCE_BATCH
    if n_tokens:
        wanted = max(wanted, math.ceil(BATCH_TOKENS_PER_WORD * n_words * n_docs / n_tokens))
    return batch_size(n_docs, wanted)


def dp_sampler(policy: str, sampler: str | None, n_words: int | None) -> str:
    """The DP mixture's sampler: ``sampler`` if named, else ``TEXT_SAMPLER`` on text
    under ``policy="auto"`` and ``DEFAULT_SAMPLER`` otherwise (also while the
    corpus is not known)."""
    if sampler is not None:
        return sampler
    if policy == "auto" and n_words is not None and n_words >= TEXT_WORDS:
        return TEXT_SAMPLER
    return DEFAULT_SAMPLER


def default_settings(policy: str, sampler: str, n_words: int | None,
                     n_docs: int | None) -> dict[str, Any]:
    """a0, step_sizes, n_init, init, split_merge and batch_size of ``policy`` for a
    corpus of ``n_words`` words and ``n_docs`` training documents (None: not known
    yet, e.g. while validating parameters; then the reference settings)."""
    ref = REFERENCE[sampler]
    out = {"a0": ref["a0"], "step_sizes": ref["step_sizes"], "n_init": ref["n_init"],
           "init": "random", "split_merge": 0, "batch_size": REFERENCE_BATCH}
    if policy == "reference" or n_words is None or n_docs is None:
        return out
    out["batch_size"] = batch_size(n_docs)
    if n_words >= TEXT_WORDS:
        out.update(init=TEXT_DP_INIT, n_init=TEXT_COMPONENTS, split_merge=TEXT_SPLIT_MERGE)
        if sampler == TEXT_SAMPLER:
            out.update(TEXT_SGRLD)
    return out


def mixture_settings(policy: str, sampler: str, n_words: int | None, n_docs: int | None,
                     n_clusters: int = 1, n_tokens: int | None = None) -> dict[str, Any]:
    """a0, step_weights, step_components, init and batch_size of ``policy`` for the
    finite mixture of ``n_clusters`` components on ``n_tokens`` tokens (see the module)."""
    out = {**MIXTURE_REFERENCE[sampler], "init": "random", "batch_size": REFERENCE_BATCH}
    if policy == "reference" or n_words is None or n_docs is None:
        return out
    out["batch_size"] = mixture_batch_size(n_docs, n_words, n_tokens)
    if n_words >= TEXT_WORDS:
        out["init"] = MIXTURE_TEXT_INIT
        if n_tokens is not None:
            share = TEXT_PRIOR_SHARE * n_tokens / (n_clusters * n_words)
            out["a0"] = min(out["a0"], share)
    return out


def corpus_shape(store: str) -> tuple[int, int]:
    """(words, training documents) of a corpus store, for the policies above."""
    from dscir.models.base import Data

    data = Data.open(store)
    return data.n_words, int(data.train.size)


def corpus_tokens(store: str) -> int:
    """Tokens of a corpus store (every document's)."""
    from dscir.corpus import Corpus

    return Corpus.open(store).n_tokens
