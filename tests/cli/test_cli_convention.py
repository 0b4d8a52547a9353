"""The command line's one convention (``dscir.cli.convention``), checked on every
sub-parser so that a new option or command cannot leave it: help and defaults,
the message and progress options, positional names, ``-o/--out``, ``--json``, and
the documented exit statuses."""

from __future__ import annotations

import argparse
import json

import pytest

from dscir.cli import build_parser, convention, main
from dscir.errors import EXIT_DATA, EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_USAGE


def leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command words, parser) of every parser without sub-commands, ingest's
    formats (built on first use) included."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
    for action in subs:
        action._get_subactions()  # builds ingest's format parsers
        for name, p in action._name_parser_map.items():
            yield from leaves(p, (*path, name))


LEAVES = list(leaves(build_parser()))
IDS = [" ".join(words) for words, _ in LEAVES]


def options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings
            and not isinstance(a, (argparse._HelpAction, argparse._VersionAction))]


def test_every_command_is_walked():
    """Guards against a walk that misses sub-commands (the checks below would pass
    on nothing)."""
    assert {"fit lda", "fit dpmm", "fit mixture", "ingest ldac", "ingest uci", "ingest text",
            "topics", "experiment dirichlet", "quickstart"} <= set(IDS)
    assert len(LEAVES) >= 20


@pytest.mark.parametrize("words, parser", LEAVES, ids=IDS)
def test_every_option_has_help_showing_its_default(words, parser):
    formatter = parser._get_formatter()
    for action in options(parser) + [a for a in parser._actions if not a.option_strings]:
        name = "/".join(action.option_strings) or action.dest
        assert action.help and action.help != argparse.SUPPRESS, f"{name} has no help"
        shown = formatter._expand_help(action)
        default = action.default
        if action.option_strings and default not in (None, argparse.SUPPRESS) \
                and not isinstance(default, bool):
            assert "default" in shown, f"{name}'s help does not show its default {default!r}"


@pytest.mark.parametrize("words, parser", LEAVES, ids=IDS)
def test_messages_progress_json_and_out_options(words, parser):
    flags = {s for a in options(parser) for s in a.option_strings}
    assert {"-q", "--quiet", "-v", "--verbose"} <= flags
    long = words[0] in convention.LONG
    assert ({"--progress", "--no-progress"} <= flags) == long
    assert ("--json" in flags) == (words[0] in convention.JSON or words[0] == "tune")
    assert ("--out" in flags) == ("-o" in flags)


@pytest.mark.parametrize("words, parser", LEAVES, ids=IDS)
def test_positionals_are_named_by_kind(words, parser):
    names = [a.metavar for a in parser._actions if not a.option_strings]
    assert set(names) <= set(convention.KINDS.values()), names


def test_help_documents_the_exit_statuses(capsys):
    assert main(["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for status, kind in ((EXIT_FAILURE, "runtime failure"), (EXIT_USAGE, "usage error"),
                         (EXIT_DATA, "bad or damaged data"), (EXIT_INTERRUPTED, "interrupted")):
        assert f"{status} {kind}" in text
    assert len({EXIT_FAILURE, EXIT_USAGE, EXIT_DATA, EXIT_INTERRUPTED}) == 4


def test_fit_help_shows_its_settings_as_prose(capsys):
    """The description names the reference settings, not Python dicts; --friction
    is named by its own parameter, not by the dict it fills."""
    assert main(["fit", "lda", "--help"]) == 0
    out = capsys.readouterr().out
    assert "{'alpha'" not in out and "scir: alpha 0.1" in " ".join(out.split())
    assert "--friction FRICTION" in out and "SAMPLER_OPTIONS" not in out


class _Stderr:
    def __init__(self, tty: bool):
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_progress_bars_only_on_a_terminal(monkeypatch):
    """Guards against bars (and their \\r) in redirected logs, and against flags
    that do not override the terminal test."""
    def parsed(*argv):
        return build_parser().parse_args(["evaluate", "RUN", *argv])

    monkeypatch.setattr("sys.stderr", _Stderr(False))
    assert [convention.progress(parsed(*a)) for a in ((), ("--progress",), ("--no-progress",),
                                                      ("-q",))] == [False, True, False, False]
    monkeypatch.setattr("sys.stderr", _Stderr(True))
    assert [convention.progress(parsed(*a)) for a in ((), ("--no-progress",), ("-q",))] == \
        [True, False, False]


def test_quiet_and_progress_exclude_each_other(capsys):
    assert main(["evaluate", "RUN", "-q", "--progress"]) == EXIT_USAGE
    assert "not allowed with" in capsys.readouterr().err


def test_a_runtime_failure_and_an_interrupt_have_their_statuses(monkeypatch, capsys):
    def fails(args):
        raise OSError(28, "No space left on device", "/full/disk")

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr("dscir.cli.runs._topics", fails)
    assert main(["topics", "RUN"]) == EXIT_FAILURE
    assert capsys.readouterr().err == "dscir: error: No space left on device: /full/disk\n"
    monkeypatch.setattr("dscir.cli.runs._topics", interrupted)
    assert main(["topics", "RUN"]) == EXIT_INTERRUPTED


def test_json_is_one_object_with_nan_as_null(capsys):
    convention.print_json({"a": float("nan"), "b": [1.5, float("inf")]})
    assert json.loads(capsys.readouterr().out) == {"a": None, "b": [1.5, None]}


def test_the_guide_documents_the_exit_statuses():
    """Guards against the guide and the code disagreeing on a status."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs/guide/cli.md").read_text()
    for status, kind in ((EXIT_FAILURE, "runtime failure"), (EXIT_USAGE, "usage error"),
                         (EXIT_DATA, "bad or damaged data"), (EXIT_INTERRUPTED, "interrupted")):
        assert f"| {status} | {kind} |" in page
    for command in sorted(convention.JSON):
        assert f"`{command}`" in page
