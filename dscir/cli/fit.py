"""``dscir fit MODEL``: one subcommand per model, each defined beside its other commands."""

from __future__ import annotations

import argparse

from dscir.cli import dpmm, lda, mixture

FIT_MODELS = (lda, dpmm, mixture)


def register(sub: argparse._SubParsersAction) -> None:
    fit = sub.add_parser("fit", help="fit a model on a corpus store")
    models = fit.add_subparsers(dest="model", metavar="MODEL", required=True)
    for module in FIT_MODELS:
        module.add_fit_parser(models)
