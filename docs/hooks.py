"""MkDocs hooks: serve the benchmark figures from benchmarks/results/ under
benchmarks/figures/ without copying them into docs/ (one copy in git), and
replace ``<!-- dscir-parameters: module:NAME -->`` with the table of the
parameter declarations ``NAME`` of that module (``dscir.api.params``)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def on_files(files, config):
    # imported here: the parameter tables below are tested without the docs extra
    from mkdocs.structure.files import File

    for png in sorted(RESULTS.glob("*.png")):
        files.append(File.generated(config, f"benchmarks/figures/{png.name}",
                                    abs_src_path=str(png)))
    return files


PARAMETERS = re.compile(r"<!-- dscir-parameters: ([\w.]+):(\w+) -->")


def on_page_markdown(markdown, page, config, files):
    from dscir.api.params import markdown_table

    def table(match):
        return markdown_table(getattr(importlib.import_module(match[1]), match[2]))

    return PARAMETERS.sub(table, markdown)
