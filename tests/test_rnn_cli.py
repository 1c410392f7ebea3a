"""seqgrad derive rnn: output and one-line errors (in-process through crosscheck.cli.main, one subprocess run)."""

from __future__ import annotations

import pytest

from seqgrad.crosscheck.cli import main


def _run(capsys, *args):
    code = main(["derive", "rnn", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_recurrences_by_default(capsys):
    code, out, err = _run(capsys, "--steps", "3")
    assert code == 0, err
    assert "g_1^h = g_2^z*w_h" in out
    assert "dL/dw_h = g_1^z*h_0 + g_2^z*h_1" in out  # the text's order, h_{-1} = 0 dropped
    assert "z_0 = w_x*x_0\n" in out and "z_1 = w_x*x_1 + w_h*h_0" in out and "L = (yhat - y)**2/2" in out


def test_expand_and_latex(capsys):
    code, out, err = _run(capsys, "--steps", "3", "--activation", "phi", "--expand")
    assert code == 0, err
    assert "g_2^z = e*w_o*phi'(z_2)" in out
    code, out, err = _run(capsys, "--steps", "2", "--inputs", "2", "--hidden", "3", "--outputs", "1", "--latex")
    assert code == 0, err
    assert out.startswith("\\begin{align*}") and "\\mathbf{W}_{h}" in out  # a display that pastes into a document
    code, out, err = _run(capsys, "--steps", "3", "--expand", "--latex")
    assert code == 0 and "\\frac{\\partial \\mathcal{L}}{\\partial w_{x}}" in out


def test_table_and_dot(capsys):
    code, out, _ = _run(capsys, "--steps", "3", "--table")
    assert code == 0 and "g_2^h = e*w_o" in out
    code, out, _ = _run(capsys, "--steps", "2", "--dot")
    assert code == 0 and out.startswith("digraph")


@pytest.mark.parametrize("args, words", [
    (["--steps", "0"], "steps=0"),
    (["--steps", "two"], "--steps"),
    (["--steps", "3", "--activation", "swish"], "activation='swish'"),
    (["--steps", "3", "--hidden", "0"], "hidden=0"),
    (["--steps", "3", "--loss", "all"], "--loss"),
    (["--steps", "60", "--expand"], "size guard"),
    (["--steps", "3", "--expand", "--max-terms", "0"], "--max-terms"),
])
def test_bad_input_is_one_line_exit_2(capsys, args, words):
    code, _, err = _run(capsys, *args)
    assert code == 2
    assert words in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_console_script_exit_status(cli):
    proc = cli("derive", "rnn", "--steps", "-1")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "steps=-1" in proc.stderr
