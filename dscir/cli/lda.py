"""``dscir fit lda``."""

from __future__ import annotations

import argparse

from dscir.api import LDA_DEFAULTS
from dscir.api.lda_params import PARAMS, SAMPLER_OPTIONS
from dscir.params import AUTO
from dscir.cli import convention, options
from dscir.cli.command import add_fit_command
from dscir.cli.params import check_flags, estimator_kwargs


def reference_values(table: dict) -> str:
    """A sampler -> settings table as prose: ``scir: alpha 0.1, beta 0.5; ...``."""
    return "; ".join(f"{sampler}: " + ", ".join(f"{k} {'none' if v is None else v}" for k, v in values.items())
                     for sampler, values in table.items())


def add_fit_parser(models: argparse._SubParsersAction) -> None:
    """``dscir fit lda``."""
    add_fit_command(
        models, "lda", PARAMS, _fit_lda, entries=SAMPLER_OPTIONS, top=10,
        top_help="top words printed per topic",
        help="latent Dirichlet allocation by SG-MCMC on Dask",
        description="Fit LDA on a corpus store. Unset alpha, beta and step schedule "
        "come from --policy: 'default' chooses them from the corpus's size, K and the "
        "minibatch (dscir.models.lda.policy); 'reference' takes the papers' values of "
        "the chosen sampler: " + reference_values(LDA_DEFAULTS),
    )


def fit_and_report(model, store: str, args: argparse.Namespace, top: int, **run) -> int:
    """Fit an LDA on the cluster ``args`` names (held-out perplexity at least at the
    end, when the store has held-out documents); print the score and the topics.
    ``run``: the run store keywords of ``fit``."""
    from dscir.corpus import Corpus

    check_flags(model)  # a bad value is named by its flag
    model.chain_config(store)  # a bad parameter is named before the store is read
    if model.eval_every == 0 and model.n_iter != AUTO and Corpus.open(store).heldout_docs().size:
        model.set_params(eval_every=max(model.n_iter, 1))
    options.fit(model, store, args, **run)
    print(model.stop_summary())
    if model.evaluations_:
        last = model.evaluations_[-1]
        print(f"held-out perplexity at iteration {last.iteration}: {last.perplexity:.1f}")
    print_topics(model, top)
    return 0


def print_topics(model, n: int) -> None:
    """The ``n`` most probable words of each topic (LDA) or occupied cluster (mixtures)."""
    table = model.top_words_table(n)
    width = len(str(max((k for k, _ in table.rows), default=0)))
    for k, words in table.rows:
        print(f"{table.label} {k:>{width}}: " + " ".join(str(w) for w, _ in words))


def _fit_lda(args: argparse.Namespace) -> int:
    from dscir.api import LDA

    model = LDA(**estimator_kwargs(args, PARAMS, entries=SAMPLER_OPTIONS),
                progress=convention.progress(args))
    return fit_and_report(model, args.store, args, args.top, **options.run_kwargs(args))
