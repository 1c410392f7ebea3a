"""A size guard on every user-sized input of the commands (docs/limits.md), one by one: exit 2 and one
line that names the argument and its limit, at once (before any large allocation or long work).
OS errors name their path, and a failed ``seqgrad plot`` leaves no empty directory behind."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from seqgrad.crosscheck.cli import main

ROOT = Path(__file__).resolve().parent.parent
HUGE = "1000000000"
THIRTY_DIGITS = "1" * 30

CELL = ["derive", "cell", "h = tanh(W*h + U*x)", "--states", "h", "--head", "w_o*h", "--steps", "2"]

#: argv, the argument the line names, the limit it states
GUARDS = [
    (["generate", "--text", "i " * 50_000], "--text=", "at most 256 words (16384 characters)"),
    (["generate", "--text", "i " * 300], "--text='300 words'", "at most 256 words"),
    (["generate", "--max-len", HUGE], "--max-len=", "from 1 to 1000"),
    (["generate", "--train-steps", HUGE], "--train-steps=", "from 1 to 5000"),
    (["generate", "--seed", THIRTY_DIGITS], "--seed=", "from 0 to 9223372036854775807"),
    (["generate", "--seed", "-1"], "--seed=", "from 0 to 9223372036854775807"),
    (["generate", "--seed", "1e400"], "--seed", "invalid int value"),
    (["verify", "x = x", "--vars", "x", "--seed", THIRTY_DIGITS], "--seed=", "from 0 to 9223372036854775807"),
    (["verify", "x = x", "--vars", "x", "--points", HUGE], "--points=", "from 1 to 10000"),
    (["verify", "x = x", "--vars", "x", "--time-limit", "1e300"], "--time-limit=", "from 0.1 to 600"),
    (["latex", "notes.tex", "--proof-seconds", "1e300"], "--proof-seconds=", "<= 3600"),
    (["latex", "notes.tex", "--digits", HUGE], "--digits=", "from 1 to 15"),
    (["claim", "1 = 1", "--digits", HUGE], "--digits=", "from 20 to 10000"),
    (["claim", "0.5 = 0.5", "--figures", HUGE], "--figures=", "from 1 to 30"),
    (["derive", "rnn", "--steps", "100000"], "--steps=", "10000"),
    (["derive", "rnn", "--steps", "3", "--hidden", HUGE], "--hidden=", "from 1 to 256"),
    (["derive", "rnn", "--general", "--check", "--inputs", HUGE], "--inputs=", "from 1 to 256"),
    (["derive", "gru", "--general", "--check", "--hidden", "100000"], "--hidden=", "from 1 to 256"),
    (["derive", "lstm", "--general", "--outputs", HUGE], "--outputs=", "from 1 to 256"),
    (CELL + ["--params", "W:H,H U:H,D w_o:C,H", "--sizes", f"D=3,H={HUGE},C=1"], "--sizes H=", "from 1 to 256"),
    (["derive", "rnn", "--steps", "3", "--expand", "--max-terms", HUGE], "--max-terms=", "from 1 to 1000000"),
    (["derive", "conv", "--size", HUGE, "--kernel", "3"], "--size=", "from 1 to 12"),
    (["derive", "conv", "--size", "8", "--kernel", "3", "--padding", HUGE], "--padding=", "from 0 to 12"),
    (["derive", "conv", "--receptive", *["3"] * 100_000], "--receptive='100000 kernel sizes'", "at most 100 layers"),
    (["derive", "decoder", "--part", "causal", "--positions", HUGE], "--positions=", "from 1 to 8"),
    (["encoder", "--text", "a " * 300], "text=", "at most 256 words"),
    (["check", "--jobs", "0"], "--jobs=", ">= 1"),
]


@pytest.mark.parametrize("argv, argument, limit", GUARDS, ids=[" ".join(g[0])[:60] for g in GUARDS])
def test_each_size_guard_is_one_line_naming_the_argument_and_its_limit(argv, argument, limit, capsys, tmp_path,
                                                                       monkeypatch):
    monkeypatch.chdir(tmp_path)
    start = time.perf_counter()
    code = main(argv)
    seconds = time.perf_counter() - start
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == "" and err.count("\n") == 1, err
    assert argument in err and limit in err, err
    assert seconds < 30  # refused before the work, not after it
    assert list(tmp_path.iterdir()) == []


def test_the_guards_are_listed_in_limits_md():
    text = (ROOT / "docs" / "limits.md").read_text(encoding="utf-8")
    for flag in ("generate --text", "generate --max-len", "--seed", "--inputs", "--hidden", "--outputs", "--sizes",
                 "--max-terms", "--padding", "--receptive", "--proof-seconds", "--jobs"):
        assert flag in text, flag


def test_small_messages_show_the_value_given(capsys):
    assert main(["derive", "rnn", "--steps", "3", "--on", "nan"]) == 2
    assert "--on='nan' is not allowed: final, every, or positions such as 0,3,5" in capsys.readouterr().err
    assert main(CELL + ["--params", "W:H,H U w_o:C,H", "--sizes", "D=3,H=2,C=1"]) == 2
    assert "--params='U' is not allowed: a shape for every parameter of the vector cell" in capsys.readouterr().err


def _limited(*argv: str, cwd: Path, limit: int = 2000) -> subprocess.CompletedProcess:
    """The seqgrad program with files limited to ``limit`` bytes (a write past it fails as on a full disk)."""
    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = dict(os.environ, MPLBACKEND="Agg")
    return subprocess.run([sys.executable, "-m", "seqgrad", *argv], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300, preexec_fn=small_files)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_an_os_error_while_writing_names_the_file(jobs, tmp_path):
    """The handout's first figure is written in a worker (or, with --jobs 1, in the process) into a hidden fresh
    folder: the error is one line, exit 2, naming the file where it was going, and nothing is left behind (it
    used to be "internal error", exit 1, naming the hidden folder)."""
    proc = _limited("latex", "notes.tex", "--sections", "positional", "--standalone", "--jobs", jobs, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    figure = tmp_path / "notes-figures" / "positional" / "positional_encoding_d128.pdf"
    assert proc.stderr == f"seqgrad: error: [Errno 27] File too large: '{figure}'\n"
    assert list(tmp_path.iterdir()) == []  # no temporary file either


def test_a_failed_plot_leaves_no_empty_directory(tmp_path):
    proc = _limited("plot", "paths", "--out", "figures/paths", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("seqgrad: error: [Errno 27] File too large: ") and str(tmp_path / "figures" / "paths") in proc.stderr
    assert proc.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []
