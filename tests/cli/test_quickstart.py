"""The README's main command, on the packaged Reuters sample (no shared data needed)."""

from dscir.cli import main


def test_quickstart_fits_and_prints_topics(capsys):
    code = main(["quickstart", "--iterations", "20", "--topics", "5", "--sweeps", "10",
                 "--workers", "1", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0
    assert "held-out perplexity at iteration 20" in out
    lines = [line for line in out.splitlines() if line.startswith("topic ")]
    assert len(lines) == 5 and all(len(line.split(":")[1].split()) == 8 for line in lines)


def test_wrong_arguments_exit_2(capsys):
    assert main(["fit", "lda", "/nonexistent/store", "--topics", "5"]) == 2
    assert "no corpus store" in capsys.readouterr().err
    assert main(["fit", "lda", "/nonexistent/store", "--topics", "1"]) == 2
    assert "--topics must be >= 2, got 1" in capsys.readouterr().err  # the flag typed
