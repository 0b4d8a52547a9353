"""``dscir experiment dirichlet``: the SCIR paper's sparse/dense Dirichlet study."""

from __future__ import annotations

import argparse
from pathlib import Path

from dscir.cli import convention


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("experiment", help="reproduce a study of the papers")
    which = p.add_subparsers(dest="experiment", metavar="EXPERIMENT", required=True)
    d = which.add_parser("dirichlet", help="SCIR vs SGRLD on sparse and dense Dirichlet posteriors")
    convention.out_option(d, "directory for JSON and PNGs", default="dirichlet-study")
    d.add_argument("--seeds", type=convention.count(1), default=5,
                   help="independent repetitions of each posterior and fraction")
    d.add_argument("--burn-in", type=convention.count(0), default=1000,
                   help="iterations discarded before samples are kept")
    d.add_argument("--kept", type=convention.count(1), default=1000,
                   help="samples kept per chain")
    d.add_argument("--fractions", type=float, nargs="+",
                   default=[0.001, 0.005, 0.01, 0.05, 0.1, 0.5],
                   help="minibatch fractions of the data, each in (0, 1]")
    d.set_defaults(func=_dirichlet)


def _dirichlet(args: argparse.Namespace) -> int:
    from dscir.experiments import dirichlet

    result = dirichlet.study(seeds=args.seeds, fractions=args.fractions,
                             burn_in=args.burn_in, kept=args.kept,
                             progress=convention.progress(args))
    for path in dirichlet.write(result, Path(args.out)):
        print(f"wrote {path}")
    for row in dirichlet.summary(result):
        print(f"{row['posterior']:6s} fraction {row['fraction']:<6g} KS scir {row['scir']:.3f}"
              f"  sgrld {row['sgrld']:.3f}  exact {row['exact']:.3f}  |  KSD scir "
              f"{row['scir_ksd']:.3g}  sgrld {row['sgrld_ksd']:.3g}  exact {row['exact_ksd']:.3g}")
    return 0
