"""MkDocs hooks: serve the benchmark figures from benchmarks/results/ under
benchmarks/figures/ without copying them into docs/ (one copy in git),
replace ``<!-- dscir-parameters: module:NAME -->`` with the table of the
parameter declarations ``NAME`` of that module (``dscir.api.params``),
``<!-- dscir-loo: FILE -->`` with the tables of that left-out study
(``gen_compare.loo_tables``), and
write the comparison page (compare.md) again from the results
(docs/gen_compare.py), so the site never shows a stale number."""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
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
LOO = re.compile(r"<!-- dscir-loo: ([\w.]+) -->")


def _gen_compare():
    """docs/gen_compare.py, freshly loaded (``mkdocs serve`` rebuilds after a result
    changes)."""
    spec = importlib.util.spec_from_file_location(
        "gen_compare", Path(__file__).with_name("gen_compare.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_compare"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def on_page_markdown(markdown, page, config, files):
    from dscir.api.params import markdown_table

    if page is not None and page.file.src_uri == "compare.md":
        markdown = _gen_compare().page()[0]

    def table(match):
        return markdown_table(getattr(importlib.import_module(match[1]), match[2]))

    markdown = LOO.sub(lambda match: _gen_compare().loo_tables(match[1]), markdown)
    return PARAMETERS.sub(table, markdown)
