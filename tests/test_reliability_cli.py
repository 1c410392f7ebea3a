"""The command line and its standard streams (issue 18): a broken pipe, a closed stdout, an
ASCII-only encoding and repeated ``--only``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from seqgrad.crosscheck.cli import main

ROOT = Path(__file__).resolve().parent.parent


def _env(**extra):
    return dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg", **extra)


def test_broken_pipe_exits_0_and_prints_nothing():
    """``seqgrad identities --list | head -1``: the reader goes away after one line."""
    proc = subprocess.Popen([sys.executable, "-m", "seqgrad", "identities", "--list"], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()  # like head -1
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 0
    assert first and err == b""


def test_closed_stdout_is_not_an_internal_error(tmp_path):
    """``seqgrad check ... >&-``: the report is written and the run ends normally."""
    out = tmp_path / "rep"
    proc = subprocess.run([sys.executable, "-m", "seqgrad", "check", "--only", "claims.b_att_60", "--out", str(out)],
                          env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=300,
                          preexec_fn=lambda: os.close(1))
    assert proc.returncode == 0, proc.stderr
    assert "internal error" not in proc.stderr
    assert (out / "report.json").is_file()


def test_ascii_only_encoding_falls_back_to_ascii_symbols():
    proc = subprocess.run([sys.executable, "-m", "seqgrad", "claim", "sin(1) = 0.841"], env=_env(PYTHONIOENCODING="ascii"),
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.decode("ascii")  # nothing but ASCII
    assert "+/-5e-04" in text  # issue-16 wording: "rounded at the 3 decimals written: +/-5e-04"


def test_repeated_only_accumulates(capsys):
    assert main(["check", "--list", "--only", "claims.b_att_60", "--only", "claims.contribution_A60_v0"]) == 0
    names = [line.split("\t")[0] for line in capsys.readouterr().out.splitlines()]
    assert names == ["claims.b_att_60", "claims.contribution_A60_v0"]


def test_each_only_pattern_must_match(capsys):
    assert main(["check", "--list", "--only", "claims.b_att_60", "--only", "no-such-check"]) == 2
    assert "--only='no-such-check'" in capsys.readouterr().err
