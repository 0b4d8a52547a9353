"""MkDocs hook: serve the benchmark figures from benchmarks/results/ under
benchmarks/figures/ without copying them into docs/ (one copy in git)."""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def on_files(files, config):
    for png in sorted(RESULTS.glob("*.png")):
        files.append(File.generated(config, f"benchmarks/figures/{png.name}",
                                    abs_src_path=str(png)))
    return files
