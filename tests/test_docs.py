"""The documentation: benchmark pages regenerated from benchmarks/results/ are
the committed ones, and the site builds in strict mode (no warning, no broken
link, every API reference resolved)."""

from __future__ import annotations

import html
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))
import gen_architecture  # noqa: E402
import gen_benchmarks  # noqa: E402
import gen_compare  # noqa: E402

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
    page = (tmp_path / "site" / "api" / "estimators.html").read_text()
    lda = html.unescape(re.sub(r"<[^>]+>", "", page[page.index('id="dscir.LDA"'):]))
    # the constructor's signature, wrapped a parameter a line, then its parameters,
    # then the methods' summary, before the first method
    assert re.search(r"LDA\(\n\s+n_topics=100,\n\s+sampler=", lda), \
        "no wrapped LDA signature (mkdocstrings wraps it with ruff: pip install '.[docs]')"
    assert lda.index("n_topics") < lda.index("number of topics K") < lda.index("Methods:") \
        < lda.index("Run n_iter iterations")
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


def test_the_comparison_page_is_generated_from_the_results():
    assert (ROOT / "docs" / "compare.md").read_text() == gen_compare.page()[0], \
        "docs/compare.md is stale: run python docs/gen_compare.py"


def _numbers(markdown: str) -> list[str]:
    """The numbers a reader sees: outside code spans and link targets."""
    text = re.sub(r"`[^`]*`|\]\([^)]*\)|<!--.*?-->", " ", markdown)
    return re.findall(r"(?<![A-Za-z_\d])\d+(?:,\d{3})*(?:\.\d+)?", text)


def test_every_number_on_the_comparison_page_is_read_from_a_result_file():
    """Each cell is its file's number at its path, rounded as shown; and the page
    holds no number that is not a cell or part of a text read from a result."""
    markdown, read = gen_compare.page()
    assert len(read.cells) > 50
    for cell in read.cells:
        value = gen_compare.walk(json.loads((gen_compare.RESULTS / cell.source).read_text()),
                                 cell.path)
        shown = float(cell.text.replace(",", ""))
        assert abs(shown - value) <= 0.5 * 10 ** -cell.decimals + 1e-9, (cell, value)
    allowed = {c.text for c in read.cells}
    allowed |= {n for text in read.strings for n in _numbers(text)}
    stray = [n for n in _numbers(markdown) if n not in allowed]
    assert not stray, f"numbers on docs/compare.md not read from a result file: {stray}"


def test_a_comparison_row_shows_its_file_s_numbers(tmp_path):
    """dscir's default fit and tomotopy's run, each from its own record of the file."""
    result = {
        "corpus": {"n_docs": 10}, "machine": {"cpu": "Z80", "cores": 3},
        "versions": {"tomotopy": "9.9"}, "settings": {"K": 4, "tomotopy_budgets": [7]},
        "summary": {"tomotopy_200_seconds": 1.26, "tomotopy_200_perplexity": 1000.6,
                    "time_to_tomotopy_200": None,
                    "default_fit": {"seconds": 12.34, "perplexity": 999.4, "iterations": 50,
                                    "seconds_ratio": 9.87, "perplexity_ratio": 0.99}},
        "systems": [{"system": "dscir-fit", "peak_pss_mb": 500.4},
                    {"system": "tomotopy", "peak_pss_mb": 100.6},
                    {"system": "dscir-scir", "points": [{"budget": 40, "seconds": 3.21}]}]}
    (tmp_path / "x.json").write_text(json.dumps(result))
    read = gen_compare.Reader(tmp_path)
    text = "\n".join(gen_compare.user_section(read, {"x": "x.json"}))
    assert ("| x (10 docs) | 12.3 | 999 | 500 | 1.3 | 1,001 | 101 | "
            "not reached in 3.2 (40 iterations) | `x.json` |") in text
    assert "K = 4, 7 iterations" in text and "tomotopy 9.9" in text and "Z80, 3 cores" in text
    assert "ends below tomotopy's perplexity on every corpus, and takes 9.9 to 9.9" in text
    assert {c.source for c in read.cells} == {"x.json"}


def test_the_architecture_diagram_is_the_layer_table():
    """docs/architecture.svg is drawn from tests/test_layers.py's LAYERS: every package
    has its line, and the committed picture is the one drawn from today's table."""
    packages = {p for _, names in gen_architecture.LAYERS for p in names}
    assert set(gen_architecture.ROLES) == packages, \
        "add or remove the package's line in docs/gen_architecture.py: ROLES"
    assert (ROOT / "docs" / "architecture.svg").read_text() == gen_architecture.svg(), \
        "docs/architecture.svg is stale: run python docs/gen_architecture.py"


def test_the_home_page_example_runs(tmp_path, monkeypatch, capsys, one_worker):
    """docs/index.md's opening example, as written but for a short chain: the ingest
    line, then the Python block with no ``client=`` (here it finds the running
    client of the process, the shared test cluster, rather than starting one)."""
    from dscir.cli import main
    from test_readme import _reuters_inputs

    home = (ROOT / "docs" / "index.md").read_text()
    command = next(line.strip() for line in home.splitlines()
                   if line.startswith("    dscir ingest"))
    code = home.split("```python\n", 1)[1].split("```", 1)[0]
    assert "client" not in code and "__main__" not in code and len(code.splitlines()) <= 10
    monkeypatch.chdir(tmp_path)
    _reuters_inputs(tmp_path)
    assert main(command.split()[1:]) == 0
    capsys.readouterr()
    short = code.replace("seed=0)", "seed=0, n_iter=4, eval_sweeps=4, progress=False)")
    assert short != code
    exec(compile(short, "docs/index.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 21 and all(len(line.split()) == 8 for line in out[:20])
    assert float(out[20]) > 1.0


def test_a_left_out_study_marker_becomes_its_file_s_tables():
    """The policy guide's ``<!-- dscir-loo: FILE -->`` is filled from the file at build
    time: guards a table pasted by hand going stale, or a row read from the wrong
    corpus or seed."""
    marker = "<!-- dscir-loo: mixtures_n_init_loo.json -->"
    assert marker in (ROOT / "docs" / "guide" / "policy.md").read_text()
    result = json.loads((gen_compare.RESULTS / "mixtures_n_init_loo.json").read_text())
    text = gen_compare.loo_tables("mixtures_n_init_loo.json")
    for corpus, loo in result["loo"].items():
        mean = result["corpora"][corpus]["mean_nmi"]
        row = next(line for line in text.splitlines()
                   if line.startswith(f"| {gen_compare.CORPUS_NAMES[corpus]} | ")
                   and f"| {loo['value']:g} |" in line)
        assert all(f"| {mean[f'{v:g}']:.3f} |" in row for v in result["values"])
        assert row.endswith(f"| {loo['margin']:+.3f} |")
        for seed, runs in result["corpora"][corpus]["seeds"].items():
            fit = runs[f"n_init={result['values'][-1]:g}"]
            assert (f"| {gen_compare.CORPUS_NAMES[corpus]} | {seed} | " in text
                    and f"{fit['nmi']:.3f} ({fit['clusters']}), {fit['seconds']:.1f} s" in text)
