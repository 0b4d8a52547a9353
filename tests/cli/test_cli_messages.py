"""What the command line says when something is wrong: nonsense values are one
clear error naming the flag before any cluster starts (a test per option
family), bad data is exit status 3 quoting at most one line, a path of the
wrong kind says what it is, and library messages go through ``logging``."""

from __future__ import annotations

import ast
import logging
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import dscir
from dscir.cli import convention, main
from dscir.corpus import write_corpus
from dscir.errors import EXIT_DATA, EXIT_USAGE, DscirError


@pytest.fixture
def no_cluster(monkeypatch):
    """Fails the test if a command starts (or connects to) a cluster."""
    def refuse(*args, **kwargs):
        raise AssertionError("a cluster was started")

    monkeypatch.setattr(sys.modules["dscir.api.session"], "session", refuse)


@pytest.fixture
def store(tmp_path) -> str:
    rng = np.random.default_rng(0)
    path = tmp_path / "c.zarr"
    write_corpus(path, sp.csr_matrix(rng.integers(0, 3, (20, 8))),
                 vocabulary=[f"w{i}" for i in range(8)])
    return str(path)


def error_of(argv, capsys) -> tuple[int, str]:
    code = main(argv)
    return code, capsys.readouterr().err


# One nonsense value per option family; each must name its flag, exit 2 and
# start no cluster. The store need not exist: the values are checked first.
FAMILIES = {
    "workers": (["fit", "lda", "S", "--workers", "0"], "--workers"),
    "top": (["topics", "RUN", "--top", "0"], "--top"),
    "top-coherence": (["coherence", "RUN", "--top", "1"], "--top"),
    "top-diagnose": (["diagnose", "RUN", "--top", "0"], "--top"),
    "top-fit": (["fit", "dpmm", "S", "--top", "-1"], "--top"),
    "sweeps": (["evaluate", "RUN", "--sweeps", "0"], "--sweeps"),
    "sweeps-transform": (["transform", "RUN", "S", "-o", "T", "--sweeps", "1"], "--sweeps"),
    "sweeps-fit": (["fit", "lda", "S", "--sweeps", "0"], "--sweeps"),
    "thin": (["fit", "lda", "S", "--thin", "0"], "--thin"),
    "thin-mixture": (["fit", "mixture", "S", "--clusters", "3", "--thin", "0"], "--thin"),
    "every-checkpoint": (["fit", "lda", "S", "--checkpoint-every", "-1"], "--checkpoint-every"),
    "every-eval": (["fit", "dpmm", "S", "--eval-every", "-2"], "--eval-every"),
    "every-heldout": (["ingest", "ldac", "I", "S", "--heldout-every", "1"], "--heldout-every"),
    "size-chunk": (["ingest", "ldac", "I", "S", "--chunk-docs", "0"], "--chunk-docs"),
    "size-shard": (["ingest", "uci", "I", "S", "--shard-chunks", "0"], "--shard-chunks"),
    "size-batch": (["fit", "lda", "S", "--batch-size", "0"], "--batch-size"),
    "size-fraction": (["ingest", "ldac", "I", "S", "--heldout-fraction", "1.5"],
                      "--heldout-fraction"),
    "size-ksd": (["diagnose", "RUN", "--ksd-words", "0"], "--ksd-words"),
    "chains": (["fit", "lda", "S", "--chains", "0"], "--chains"),
    "seed": (["quickstart", "--seed", "-1"], "--seed"),
    "iterations": (["quickstart", "--iterations", "-1"], "--iterations"),
    "topics": (["fit", "lda", "S", "--topics", "-3"], "--topics"),
}


@pytest.mark.parametrize("family", FAMILIES)
def test_a_nonsense_value_is_one_error_before_any_cluster(family, capsys, no_cluster):
    argv, flag = FAMILIES[family]
    code, err = error_of(argv, capsys)
    assert code == EXIT_USAGE
    last = err.strip().splitlines()[-1]
    assert flag in last and "error" in last, err
    assert "n_topics" not in err and "n_workers" not in err  # the Python names


def small_ldac(tmp_path) -> tuple[str, str]:
    ldac = tmp_path / "c.ldac"
    ldac.write_text("2 0:1 1:2\n1 1:1\n2 0:3 2:1\n")
    vocab = tmp_path / "v.txt"
    vocab.write_text("a\nb\nc\n")
    return str(ldac), str(vocab)


def test_python_names_the_parameter_and_the_command_line_the_flag(store, tmp_path, capsys):
    """Guards against a message that names the other world's spelling."""
    with pytest.raises(DscirError, match=r"pass overwrite=True to"):
        write_corpus(store, sp.csr_matrix(np.ones((2, 2), int)))
    with pytest.raises(DscirError, match=r"^n_topics must be >= 2, got -3"):
        dscir.LDA(n_topics=-3).chain_config()
    ldac, vocab = small_ldac(tmp_path)
    code, err = error_of(["ingest", "ldac", ldac, store, "--vocab", vocab], capsys)
    assert code == EXIT_USAGE and "pass --overwrite to" in err and "overwrite=" not in err


def test_bad_data_is_status_3_quoting_one_line(tmp_path, capsys):
    """`ingest uci` on an LDA-C file printed ~3 KB of it; a line quoted is cut."""
    ldac = tmp_path / "c.ldac"
    ldac.write_text("\n".join("300 " + " ".join(f"{w}:1" for w in range(300))
                              for _ in range(3)) + "\n")
    vocab = tmp_path / "v.txt"
    vocab.write_text("\n".join(f"w{i}" for i in range(300)) + "\n")
    code, err = error_of(["ingest", "uci", str(ldac), str(tmp_path / "s"), "--vocab",
                          str(vocab)], capsys)
    assert code == EXIT_DATA and len(err.splitlines()) == 1 and len(err) < 300, err
    assert "c.ldac:1:" in err and "'300 0:1 1:1" in err


def test_a_damaged_store_is_status_3(store, capsys):
    chunk = next(p for p in sorted(Path(store, "indices").rglob("*")) if p.is_file()
                 and p.name != "zarr.json")
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0xFF
    chunk.write_bytes(bytes(data))
    code, err = error_of(["verify", store], capsys)
    assert code == EXIT_DATA and "is damaged" in err


def test_a_path_of_the_wrong_kind_says_what_it_is(store, tmp_path, capsys):
    code, err = error_of(["topics", store], capsys)
    assert code == EXIT_USAGE and "is a corpus store, not a run" in err
    code, err = error_of(["evaluate", str(tmp_path)], capsys)
    assert code == EXIT_USAGE and "is a directory, not a dscir run" in err
    assert "No group found" not in err
    code, err = error_of(["info", str(tmp_path)], capsys)
    assert code == EXIT_USAGE and "is a directory, not a corpus store" in err


def test_a_run_passed_as_a_corpus_is_named_as_a_run(store, tmp_path, capsys):
    from dscir.corpus.store import RUN_ATTRS
    from dscir.errors import CorpusError
    from dscir.runs import store as runs

    assert RUN_ATTRS == (runs.ATTR, runs.RESUMABLE, runs.CHAINS)
    run = str(tmp_path / "run")
    assert main(["fit", "dpmm", store, "--sampler", "gibbs", "--iterations", "2",
                 "--thin", "1", "-o", run, "-q"]) == 0
    capsys.readouterr()
    said = (f"{run} is a dscir run (a fitted model), not a corpus store: pass the corpus "
            f"store it was fitted on (this one was fitted on {store}), or read the run with ")
    for argv in (["fit", "lda", run], ["fit", "mixture", run, "--clusters", "2"]):
        code, err = error_of(argv, capsys)
        assert code == EXIT_USAGE and err == f"dscir: error: {said}`dscir info RUN` or " \
            "`dscir topics RUN`\n"
    with pytest.raises(CorpusError, match=re.escape(f"{said}an estimator's load(RUN)")):
        dscir.LDA(n_topics=2).fit(run)


def test_a_reader_gone_early_is_a_quiet_exit(store):
    """`dscir info S | head -1`: the reader closes the pipe before dscir writes (it
    is still importing), as `head` does once it has its lines; exit 0, nothing said."""
    import subprocess

    proc = subprocess.Popen([sys.executable, "-m", "dscir", "info", store],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait() == 0 and err == ""


def test_info_and_verify_answer_in_json(store, capsys):
    import json

    assert main(["info", store, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["kind"], info["n_docs"], info["n_words"]) == ("corpus store", 20, 8)
    assert main(["verify", store, "--json"]) == 0
    checked = json.loads(capsys.readouterr().out)
    assert checked["problems"] == [] and "indices" in checked["ok"]


def test_no_print_in_the_library():
    """Library messages go through logging (the ``dscir`` loggers); only the
    command line prints."""
    package = Path(dscir.__file__).parent
    found = [f"{path.relative_to(package)}:{node.lineno}"
             for path in package.rglob("*.py") if "cli" not in path.relative_to(package).parts
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print"]
    assert not found, found


def test_log_levels_and_dask_warnings(capsys):
    """INFO shown by default, hidden by -q, DEBUG by -v; a warning from Dask's code
    is hidden unless -vv, one from dscir is a `dscir: warning:` line."""
    log = logging.getLogger("dscir.engine.chain")

    def emit(**levels) -> str:
        with convention.logs(**levels):
            log.info("scored")
            log.debug("detail")
            warnings.warn_explicit("Sending large graph of size 10 MiB", UserWarning,
                                   "/site-packages/distributed/client.py", 1)
            warnings.warn_explicit("merged 2 duplicate entries", UserWarning,
                                   "/site-packages/dscir/corpus/writer.py", 1)
        return capsys.readouterr().err

    default = emit()
    assert "scored" in default and "detail" not in default and "large graph" not in default
    assert "dscir: warning: merged 2 duplicate entries" in default
    assert "scored" not in emit(quiet=True)
    assert "dscir: debug: dscir.engine.chain: detail" in emit(verbose=1)
    assert "Sending large graph" in emit(verbose=2)
    assert logging.getLogger("dscir").handlers == []  # restored after the command


def test_a_redirected_ingest_writes_no_carriage_return(tmp_path, capsys):
    ldac, vocab = small_ldac(tmp_path)
    assert main(["ingest", "ldac", ldac, str(tmp_path / "s"), "--vocab", vocab]) == 0
    assert "\r" not in capsys.readouterr().err


def test_a_run_answers_in_json(store, tmp_path, capsys):
    """topics, info, verify and diagnose of a (Gibbs, in-process) DP mixture run
    as one JSON object each, agreeing with the text output."""
    import json

    run = str(tmp_path / "run")
    assert main(["fit", "dpmm", store, "--sampler", "gibbs", "--iterations", "16",
                 "--thin", "1", "-o", run, "-q"]) == 0
    capsys.readouterr()
    assert main(["topics", run, "--top", "3"]) == 0
    text = capsys.readouterr().out.splitlines()

    def answer(*argv):
        assert main([*argv, "--json"]) == 0
        return json.loads(capsys.readouterr().out)

    topics = answer("topics", run, "--top", "3")
    assert [f"{topics['label']} {t['id']}: " + " ".join(t["words"])
            for t in topics["topics"]] == text
    info = answer("info", run)
    assert (info["kind"], info["iteration"]) == ("run", 16)
    assert answer("verify", run)["problems"] == []
    diagnosis = answer("diagnose", run, "--no-score")
    assert diagnosis["n_chains"] == 1 and diagnosis["rows"]
    assert {"quantity", "rhat", "ess"} <= set(diagnosis["rows"][0])
