"""The README's commands run as written: CI's install and test lines, the
"Your own text" commands on inputs made from the packaged Reuters sample, and
the "From Python" block."""

from __future__ import annotations

import csv
import gzip
import json
import os
import re
import shlex
import subprocess
import sys
from importlib import resources
from pathlib import Path

from dscir.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text("utf-8")


def _section(title: str) -> str:
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _blocks(title: str) -> list[list[str]]:
    """The indented code blocks of a section, each as its lines (indent removed)."""
    blocks, current = [], []
    for line in _section(title).splitlines():
        if line.startswith("    "):
            current.append(line[4:])
        elif line.strip() or not current:
            if current:
                blocks.append(current)
            current = []
    return blocks + ([current] if current else [])


def _command(section: str) -> str:
    return _blocks(section)[0][0].strip()


def test_readme_is_short():
    assert len(README.splitlines()) <= 250
    assert "../shared" not in README


def test_ci_runs_the_readme_install_and_test_lines():
    install, test = _command("Install"), _command("Run the tests")
    assert install == 'pip install ".[test]"' and test == "python -m pytest -q"
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    at = lines.index(install)
    assert lines[at:at + 2] == [install, test]  # checks that follow (mutants) come after
    assert "python3 -m venv" in (ROOT / ".ci" / "run").read_text()


def test_ci_builds_the_documentation_as_the_readme_says():
    install, build = _blocks("Documentation")[0]
    assert (install, build) == ('pip install ".[docs]"', "mkdocs build --strict")
    run = (ROOT / ".ci" / "run").read_text()
    assert install in run and build in run


def _reuters_inputs(folder: Path) -> None:
    """articles.csv, articles.jsonl, docs.ldac and vocab.txt holding the packaged
    Reuters sample (a document's text is its words, each repeated by its count)."""
    data = resources.files("dscir") / "data"
    words = (data / "reuters.tokens").read_text().split("\n")
    (folder / "vocab.txt").write_text("\n".join(words))
    with gzip.open(data / "reuters.ldac.gz", "rt") as f:
        ldac = f.read()
    (folder / "docs.ldac").write_text(ldac)
    texts = [" ".join(words[int(w)] for pair in line.split()[1:]
                      for w, c in [pair.split(":")] for _ in range(int(c)))
             for line in ldac.splitlines()]
    with open(folder / "articles.csv", "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["id", "text"])
        writer.writerows([i, text] for i, text in enumerate(texts))
    (folder / "articles.jsonl").write_text(
        "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)))


def test_readme_own_text_commands_and_python_block_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _reuters_inputs(tmp_path)
    commands = [line for block in _blocks("Your own text") for line in block]
    assert [c.split()[:3] for c in commands[:3]] == [
        ["dscir", "ingest", "csv"], ["dscir", "ingest", "jsonl"], ["dscir", "ingest", "ldac"]]
    for line in commands:
        argv = shlex.split(line)
        assert argv[0] == "dscir"
        assert main(argv[1:]) == 0, line
    out = capsys.readouterr().out
    assert "held-out perplexity" in out and "topic 9:" in out
    _python_block_runs_as_a_saved_script(tmp_path)


def _python_block_runs_as_a_saved_script(folder: Path) -> None:
    """The "From Python" block saved as a script, unguarded (no ``if __name__ ==
    "__main__":``), as a user would run it: it works, with nothing on stderr (a
    spawned worker process re-importing the script fails there)."""
    script = folder / "snippet.py"
    script.write_text("\n".join(_blocks("From Python")[0]) + "\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(script)], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stderr == "", done.stderr[-3000:]
    out = done.stdout.splitlines()
    assert len(eval(out[0])) == 5 and float(out[1]) > 1.0
    assert out[2] == "(395, 10)" and len(eval(out[3])) == 5


def test_readme_links_point_at_files_of_the_checkout():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    assert links and all(not link.startswith("http") for link in links)
    missing = [link for link in links if not (ROOT / link).exists()]
    assert not missing, missing
