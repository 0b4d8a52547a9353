"""What the models' fit commands share: a command's parser, built from its
estimator's declarations, and a mixture's fit from the parsed flags."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from dscir.params import Param
from dscir.cli import convention, options
from dscir.cli.params import add_params, check_flags, estimator_kwargs


def add_fit_command(models: argparse._SubParsersAction, name: str, params: tuple[Param, ...],
                    func: Callable, *, help: str, description: str, top: int, top_help: str,
                    entries: tuple[Param, ...] = ()) -> argparse.ArgumentParser:
    """``dscir fit NAME``: the store, one option per declared parameter (and dict
    entry), the run options, ``--top`` and the cluster options."""
    p = models.add_parser(name, help=help, description=description)
    convention.positional(p, "store", "corpus store (see `dscir ingest`)")
    add_params(p, params)
    add_params(p, entries)
    options.run_options(p)
    p.add_argument("--top", type=convention.count(1), default=top, help=top_help)
    options.cluster_options(p)
    p.set_defaults(func=func)
    return p


def fit_from_flags(cls, params: tuple[Param, ...], args: argparse.Namespace,
                   summary: Callable[[object], str]):
    """Fit a ``cls`` of the parsed flags (a bad value named by its flag) on
    ``args.store``; print ``summary(model)`` and, when the store holds out rows,
    the held-out report. Returns the model and the corpus."""
    model = cls(**estimator_kwargs(args, params), progress=convention.progress(args))
    check_flags(model)
    corpus = options.fit(model, args.store, args, **options.run_kwargs(args))
    print(summary(model))
    print(model.stop_summary())
    if corpus.heldout_docs().size:
        print(model.heldout_report())
    return model, corpus
