"""The documentation: benchmark pages regenerated from benchmarks/results/ are
the committed ones, and the site builds in strict mode (no warning, no broken
link, every API reference resolved)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))
import gen_benchmarks  # noqa: E402

COMMITTED = ROOT / "docs" / "benchmarks"


def test_benchmark_pages_are_generated_from_the_results(tmp_path):
    written = {p.name for p in gen_benchmarks.write(tmp_path)}
    assert written == {p.name for p in COMMITTED.glob("*.md")}, \
        "pages differ from the committed ones: run python docs/gen_benchmarks.py"
    for name in sorted(written):
        assert (tmp_path / name).read_text() == (COMMITTED / name).read_text(), \
            f"docs/benchmarks/{name} is stale: run python docs/gen_benchmarks.py"


def test_the_suite_is_at_most_15_benchmarks_each_in_the_navigation():
    """The benchmarks are a suite, not a notebook: at most 15 scripts, and the
    Benchmarks navigation lists exactly the generated pages."""
    import yaml

    assert len(gen_benchmarks.scripts()) <= 15, sorted(gen_benchmarks.scripts())
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text("utf-8"))["nav"]
    section = next(item["Benchmarks"] for item in nav if "Benchmarks" in item)
    listed = [e if isinstance(e, str) else next(iter(e.values())) for e in section]
    assert sorted(listed) == sorted(f"benchmarks/{p.name}" for p in COMMITTED.glob("*.md"))


def test_every_result_and_figure_is_on_a_page():
    text = "".join(p.read_text() for p in COMMITTED.glob("*.md"))
    results = gen_benchmarks.RESULTS
    for json_file in results.glob("*.json"):
        assert f"`benchmarks/results/{json_file.name}`" in text, json_file.name
    for png in results.glob("*.png"):
        assert f"(figures/{png.name})" in text, png.name


def test_a_page_shows_a_result_s_numbers_command_and_machine(tmp_path, monkeypatch):
    """A value changed in a result changes its page: nothing is typed by hand."""
    (tmp_path / "results").mkdir()
    (tmp_path / "peers.py").write_text('"""A study.\n\nIts details."""\n')
    (tmp_path / "results" / "peers_x.json").write_text(
        '{"command": "python benchmarks/peers.py --corpus x", "machine": {"cpu": "Z80"},'
        ' "rows": [{"system": "a", "perplexity": 1234.5678}, {"system": "b", "perplexity": 2}]}')
    monkeypatch.setattr(gen_benchmarks, "BENCHMARKS", tmp_path)
    monkeypatch.setattr(gen_benchmarks, "RESULTS", tmp_path / "results")
    page = gen_benchmarks.pages()["peers.md"]
    assert "python benchmarks/peers.py --corpus x" in page and "cpu Z80" in page
    assert "| system | perplexity |" in page and "| a | 1235 |" in page and "| b | 2 |" in page
    assert "A study." in page


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None
                    or importlib.util.find_spec("mkdocstrings") is None,
                    reason="mkdocs not installed: pip install '.[docs]' to build the site")
def test_site_builds_in_strict_mode(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "api" / "estimators.html").exists()
    assert (tmp_path / "site" / "benchmarks" / "figures" / "peers_ap.png").exists()


def test_prose_parameter_lines_become_descriptions():
    """dscir's ``name : what it means`` lines show as descriptions, real types stay types."""
    from griffe_prose_params import prose_to_description

    doc = ("Summary.\n\nParameters\n----------\nn_topics : number of topics K.\n"
           "alpha : float | None\n    the prior.\nbatch : list[str], optional\n    ids.\n\n"
           "Notes\n-----\nratio : not a parameter here.")
    assert prose_to_description(doc).splitlines()[4:12] == [
        "n_topics", "    number of topics K.", "alpha : float | None", "    the prior.",
        "batch : list[str], optional", "    ids.", "", "Notes"]
    assert prose_to_description(doc).endswith("ratio : not a parameter here.")
