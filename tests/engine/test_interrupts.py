"""Ctrl-C and SIGTERM during a fit, with real signals on real processes.

A fit on the packaged Reuters sample, in a process group of its own as a shell
job is, checkpointing every 2 iterations, gets the signal once its first
checkpoint is in the run store: to the whole group, as a terminal's Ctrl-C and
a batch system's cancel (Slurm's ``scancel``) deliver it, so the embedded
cluster's worker processes get it too. It must end with exit status 130 (SIGINT)
or 143 (SIGTERM), one line on stderr and no traceback from any process (the
driver, the nannies in it, the workers), leave no process behind, and leave
its last checkpoint intact: resumed, the run equals the uninterrupted one bit
for bit. Guards against the worker processes' ``KeyboardInterrupt``
tracebacks, the driver's ``RuntimeError: release unlocked lock``, a SIGTERM
that kills the driver without cleaning up (status -15, leaked semaphores) or
exits 0 or 1, and a checkpoint left half written.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from dscir.api import LDA
from dscir.cli import main
from dscir.cli.quickstart import quickstart_store
from dscir.runs import Run, read_checkpoint
from dscir.runs import store as runstore
from dscir.runs.checkpoint import latest_checkpoint
from support.runs import assert_same_run

ITERATIONS = 30
PARAMS = dict(n_topics=4, n_iter=ITERATIONS, batch_size=40, sweeps=5, eval_sweeps=5,
              eval_every=10, thin=5, seed=5, progress=False)
FIT = ["fit", "lda", "STORE", "--topics", "4", "--iterations", str(ITERATIONS),
       "--batch-size", "40", "--sweeps", "5", "--eval-sweeps", "5", "--eval-every", "10",
       "--thin", "5", "--seed", "5", "--no-progress", "--workers", "1"]
ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))

LOGGED = """\
import json, logging, sys
handler = logging.StreamHandler()
handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
logging.getLogger("dscir").addHandler(handler)
"""
SCRIPT = """\
import json, sys
from dscir.api import LDA

if __name__ == "__main__":
    store, run, params = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    try:
        LDA(**params).fit(store, out=run, checkpoint_every=2, n_workers=1)
    except KeyboardInterrupt as exc:
        print(type(exc).__name__)
        sys.exit(130)
"""

UNGUARDED = """\
import json, sys
from dscir.api import LDA

store, run, params = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
try:
    LDA(**params).fit(store, out=run, checkpoint_every=2)
except KeyboardInterrupt as exc:
    print(type(exc).__name__)
    sys.exit(130)
"""


@pytest.fixture(scope="module")
def reuters(tmp_path_factory):
    return str(quickstart_store(tmp_path_factory.mktemp("reuters") / "reuters.zarr"))


@pytest.fixture(scope="module")
def reference(reuters, two_workers, tmp_path_factory):
    """The uninterrupted run (the chain does not depend on the number of workers)."""
    path = tmp_path_factory.mktemp("reference") / "run"
    LDA(**PARAMS).fit(reuters, client=two_workers, out=path)
    return Run.open(path)


def cli(store: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "dscir", *(store if a == "STORE" else a for a in FIT), *args]


def interrupt(argv: list[str], run: Path, sig: int, tmp: Path,
              ready=None, spawns: bool = True) -> tuple[int, str, str]:
    """Run ``argv`` in a new process group; once ``run`` has a checkpoint (or
    ``ready(stderr so far)``), send ``sig`` to the group. Returns the exit status,
    stdout and stderr, after checking that every process the run started (some, if
    it ``spawns`` workers) is gone."""
    out, err = tmp / "stdout", tmp / "stderr"
    if ready is None:
        ready = lambda _: latest_checkpoint(run) is not None  # noqa: E731
    # A command started with SIGINT ignored (a shell's background job, nohup) keeps
    # ignoring it, as it should: start this one as a terminal's foreground job is.
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with open(out, "w") as o, open(err, "w") as e:
            proc = subprocess.Popen(argv, stdout=o, stderr=e, env=ENV, start_new_session=True)
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        deadline = time.monotonic() + 600
        while not ready(err.read_text()):
            assert proc.poll() is None, f"exited {proc.returncode}: {err.read_text()}"
            assert time.monotonic() < deadline, "not ready to interrupt in 600 s"
            time.sleep(0.02)
        started = psutil.Process(proc.pid).children(recursive=True)
        assert started or not spawns, "the fit started no process (its cluster has workers)"
        os.killpg(proc.pid, sig)
        status = proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    _, alive = psutil.wait_procs(started, timeout=60)
    assert alive == [], f"left behind: {alive}"
    return status, out.read_text(), err.read_text()


def lines_but_the_dashboard(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "Dask dashboard:" not in line]


def assert_intact(run: Path) -> int:
    """The run is unfinished, its latest checkpoint complete and every chunk sound;
    returns the checkpoint's iteration."""
    ok, problems = runstore.verify(run)
    assert problems == [] and ok
    at = read_checkpoint(run).iteration
    assert 2 <= at < ITERATIONS
    return at


def test_ctrl_c_ends_a_cli_fit_with_one_line_and_a_resumable_checkpoint(
        reuters, reference, tmp_path, capsys):
    run = tmp_path / "run"
    status, _, stderr = interrupt(cli(reuters, "--checkpoint-every", "2", "--out", str(run)),
                                  run, signal.SIGINT, tmp_path)
    at = assert_intact(run)
    assert status == 130, stderr
    assert lines_but_the_dashboard(stderr) == [
        f"dscir: interrupted; {run} keeps its checkpoint at iteration {at}: continue with "
        f"the same command and --resume {run}"]

    assert main(["info", str(run)]) == 0  # the progress of the interrupted run
    shown = capsys.readouterr().out
    assert "unfinished" in shown and f"{at} of {ITERATIONS} at the latest checkpoint" in shown

    resumed = subprocess.run(cli(reuters, "--resume", str(run)), capture_output=True,
                             text=True, env=ENV, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert_same_run(reference, Run.open(run))


@pytest.mark.slow  # runs with its mutants; the CLI's Ctrl-C test runs by default
def test_ctrl_c_with_default_options_leaves_a_checkpoint(reuters, reference, tmp_path):
    """A CLI fit with ``--out`` and no checkpoint option gets Ctrl-C after its first
    held-out score (iteration 10; the default interval, 300 s, has not passed): the
    signal waits for the end of the iteration under way, which is checkpointed, so
    ``--resume`` continues to the uninterrupted run. Guards against a default fit
    that Ctrl-C loses whole (no checkpoints by default, or none at the interrupt)."""
    run = tmp_path / "run"
    status, _, stderr = interrupt(cli(reuters, "--out", str(run)), run, signal.SIGINT,
                                  tmp_path, ready=lambda err: "iteration 10:" in err)
    at = assert_intact(run)
    assert status == 130 and at >= 10, stderr
    assert lines_but_the_dashboard(stderr)[-1] == (
        f"dscir: interrupted; {run} keeps its checkpoint at iteration {at}: continue with "
        f"the same command and --resume {run}")
    resumed = subprocess.run(cli(reuters, "--resume", str(run)), capture_output=True,
                             text=True, env=ENV, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert_same_run(reference, Run.open(run))


def test_sigterm_to_every_process_of_a_cli_fit_exits_143(reuters, reference, two_workers,
                                                         tmp_path):
    run = tmp_path / "run"
    status, _, stderr = interrupt(cli(reuters, "--checkpoint-every", "2", "--out", str(run)),
                                  run, signal.SIGTERM, tmp_path)
    at = assert_intact(run)
    assert status == 143, stderr
    assert lines_but_the_dashboard(stderr) == [
        f"dscir: terminated (SIGTERM); {run} keeps its checkpoint at iteration {at}: "
        f"continue with the same command and --resume {run}"]
    LDA(**PARAMS).fit(reuters, client=two_workers, resume=run)
    assert_same_run(reference, Run.open(run))


def interrupted_line(what: str, run: Path, at: int) -> str:
    """The line an interrupted Python fit logs (``dscir.api.interrupted``), as a regex
    of the iteration reached (at or past the checkpoint's)."""
    return (rf"{re.escape(what)} at iteration (\d+) of {ITERATIONS}; checkpoint at "
            rf"{re.escape(str(run))} \(iteration {at}\), resumable with "
            rf"fit\(\.\.\., resume='{re.escape(str(run))}'\)")


@pytest.mark.parametrize("sig, status, printed", [
    (signal.SIGINT, 130, "KeyboardInterrupt\n"),
    # runs with its mutant; the CLI's SIGTERM test runs by default
    pytest.param(signal.SIGTERM, 143, "", marks=pytest.mark.slow)])
def test_python_fit_gets_one_exception_and_no_traceback_from_any_process(
        reuters, reference, two_workers, tmp_path, sig, status, printed):
    """Ctrl-C raises ``KeyboardInterrupt`` from ``fit`` (caught here) after one line on
    stderr (logging not configured: Python's last resort writes it); SIGTERM raises
    ``Terminated``, a ``SystemExit``: uncaught, the script exits 143 after that line,
    as one killed by SIGTERM, but after the cluster was closed."""
    script = tmp_path / "fit.py"
    script.write_text(SCRIPT)
    run = tmp_path / "run"
    code, stdout, stderr = interrupt(
        [sys.executable, str(script), reuters, str(run), json.dumps(PARAMS)], run, sig,
        tmp_path)
    at = assert_intact(run)
    assert (code, stdout) == (status, printed), stderr
    what = "interrupted" if sig == signal.SIGINT else "terminated (SIGTERM)"
    reached = re.fullmatch(interrupted_line(what, run, at) + "\n", stderr)
    assert reached and at <= int(reached[1]) < ITERATIONS, stderr
    LDA(**PARAMS).fit(reuters, client=two_workers, resume=run)
    assert_same_run(reference, Run.open(run))


def test_ctrl_c_stops_a_default_fit_of_an_unguarded_script(reuters, reference, two_workers,
                                                          tmp_path):
    """The default embedded cluster (an in-process worker, so a script needs no
    ``__main__`` guard): Ctrl-C gives the same one exception and one line, and the
    checkpoint resumes, on worker processes, to the uninterrupted chain."""
    script = tmp_path / "fit.py"
    script.write_text(UNGUARDED)
    run = tmp_path / "run"
    code, stdout, stderr = interrupt(
        [sys.executable, str(script), reuters, str(run), json.dumps(PARAMS)], run,
        signal.SIGINT, tmp_path, spawns=False)
    at = assert_intact(run)
    assert (code, stdout) == (130, "KeyboardInterrupt\n"), stderr
    reached = re.fullmatch(interrupted_line("interrupted", run, at) + "\n", stderr)
    assert reached and at <= int(reached[1]) < ITERATIONS, stderr
    LDA(**PARAMS).fit(reuters, client=two_workers, resume=run)
    assert_same_run(reference, Run.open(run))


def test_ctrl_c_in_python_is_one_warning_of_the_dscir_logger(reuters, tmp_path):
    """With a handler on the ``dscir`` logger, the line is a WARNING record of
    ``dscir.api``, and still the only output besides the script's own. Guards
    against the line printed (not logged), logged at another level or twice, or
    not at all."""
    script = tmp_path / "fit.py"
    script.write_text(SCRIPT.replace("import json, sys\n", LOGGED))
    run = tmp_path / "run"
    code, stdout, stderr = interrupt(
        [sys.executable, str(script), reuters, str(run), json.dumps(PARAMS)], run,
        signal.SIGINT, tmp_path)
    at = assert_intact(run)
    assert (code, stdout) == (130, "KeyboardInterrupt\n"), stderr
    assert re.fullmatch("WARNING dscir.api: " + interrupted_line("interrupted", run, at)
                        + "\n", stderr), stderr
