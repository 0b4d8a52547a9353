"""The README's install and test lines are the ones CI runs in a fresh venv."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _command(section: str) -> str:
    text = (ROOT / "README.md").read_text("utf-8").split(f"\n## {section}\n", 1)[1]
    return next(line.strip() for line in text.splitlines() if line.startswith("    "))


def test_ci_runs_the_readme_install_and_test_lines():
    install, test = _command("Install"), _command("Run the tests")
    assert install == 'pip install ".[test]"' and test == "python -m pytest -q"
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    at = lines.index(install)
    assert lines[at:at + 2] == [install, test]  # checks that follow (mutants) come after
    assert "python3 -m venv" in (ROOT / ".ci" / "run").read_text()
