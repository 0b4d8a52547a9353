"""The package diagram of docs/architecture.md (docs/architecture.svg), drawn from
the layer table that tests/test_layers.py enforces, so the picture cannot
disagree with the imports.

    python docs/gen_architecture.py     # rewrites docs/architecture.svg

One band per layer, top to bottom, each holding its packages with a line on
what they hold; an arrow between bands: a layer imports only from the layers
below it. tests/test_docs.py checks that the committed SVG is this one.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from xml.sax.saxutils import escape

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "architecture.svg"
sys.path.insert(0, str(ROOT / "tests"))
from test_layers import LAYERS  # noqa: E402

#: what each package of LAYERS holds, in a few words
ROLES = {
    "dscir.cli": "the dscir commands: flags to API calls",
    "dscir.__main__": "python -m dscir",
    "dscir.report": "the HTML report of a run",
    "dscir": "the front door: LDA, DPMixture, Mixture, tune",
    "dscir.api": "estimators: parameters, fit, score, transform, sessions, loading runs",
    "dscir.experiments": "the papers' studies",
    "dscir.engine": "the chain loop; tasks on Dask or in process; column blocks",
    "dscir.runs": "run stores and checkpoints",
    "dscir.monitor": "dashboard page, events, metrics",
    "dscir.diagnostics": "KS, KSD, R-hat and ESS on arrays",
    "dscir.display": "plots and tables in a notebook",
    "dscir.models": "lda/, mixtures/ (finite, dp): each model's maths and worker tasks, on arrays",
    "dscir.samplers": "SCIR, SGRLD, gSGRHMC, SGLD, SGHMC steps",
    "dscir.corpus": "the Zarr corpus store and its input formats",
    "dscir.rng": "keyed random draws and the table of their domains",
    "dscir.errors": "the error types",
    "dscir.params": "declared parameters",
    "dscir.integrity": "chunk checksums",
    "dscir.progress": "progress bars: a widget where ipywidgets is, else text",
}

WIDTH, LABEL, BAND, GAP, PAD = 960, 190, 84, 30, 10
MAX_BOX = 380  # a layer of one package does not stretch it across the page
COLOURS = ("#e8f0fe", "#fef7e0", "#e6f4ea", "#fce8e6", "#f3e8fd", "#e0f7fa", "#f1f3f4")


def box(x: float, y: float, w: float, package: str) -> list[str]:
    """One package: its name and its role wrapped to the box."""
    name = "dscir (__init__)" if package == "dscir" else package.removeprefix("dscir.")
    lines = textwrap.wrap(ROLES[package], max(8, int(w / 6.3)))[:3]
    out = [f'<rect x="{x:.0f}" y="{y:.0f}" width="{w:.0f}" height="{BAND - 2 * PAD}" '
           'rx="5" fill="#ffffff" stroke="#5f6368"/>',
           f'<text x="{x + 6:.0f}" y="{y + 16:.0f}" font-family="monospace" font-size="13" '
           f'font-weight="bold">{escape(name)}</text>']
    out += [f'<text x="{x + 6:.0f}" y="{y + 30 + 12 * i:.0f}" font-size="11">'
            f'{escape(line)}</text>' for i, line in enumerate(lines)]
    return out


def band(i: int, title: str, packages: tuple[str, ...]) -> list[str]:
    """One layer: a band with its name on the left and its packages."""
    y = PAD + i * (BAND + GAP)
    out = [f'<rect x="{PAD}" y="{y}" width="{WIDTH - 2 * PAD}" height="{BAND}" rx="8" '
           f'fill="{COLOURS[i % len(COLOURS)]}" stroke="#9aa0a6"/>']
    for j, line in enumerate(textwrap.wrap(title, 18)):
        out.append(f'<text x="{2 * PAD}" y="{y + 26 + 16 * j}" font-size="14" '
                   f'font-weight="bold">{escape(line)}</text>')
    inner = WIDTH - LABEL - 2 * PAD
    w = min(MAX_BOX, (inner - PAD * (len(packages) - 1)) / len(packages))
    for j, package in enumerate(packages):
        out += box(LABEL + j * (w + PAD), y + PAD, w, package)
    return out


def arrow(i: int) -> list[str]:
    """From layer i down to layer i + 1: imports point down only."""
    top = PAD + i * (BAND + GAP) + BAND
    x = LABEL / 2
    return [f'<line x1="{x:.0f}" y1="{top + 2}" x2="{x:.0f}" y2="{top + GAP - 4}" '
            'stroke="#3c4043" stroke-width="2" marker-end="url(#head)"/>',
            f'<text x="{x + 10:.0f}" y="{top + GAP / 2 + 4:.0f}" font-size="11" '
            'fill="#3c4043">imports</text>']


def svg() -> str:
    height = 2 * PAD + len(LAYERS) * BAND + (len(LAYERS) - 1) * GAP
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" fill="#202124">',
           "<title>dscir's packages in layers: each imports only from the layers below "
           "(tests/test_layers.py)</title>",
           '<defs><marker id="head" markerWidth="8" markerHeight="8" refX="6" refY="4" '
           'orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#3c4043"/></marker></defs>']
    for i, (title, packages) in enumerate(LAYERS):
        out += band(i, title, packages)
        if i + 1 < len(LAYERS):
            out += arrow(i)
    return "\n".join(out + ["</svg>"]) + "\n"


def main() -> int:
    OUT.write_text(svg())
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
