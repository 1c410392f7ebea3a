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


def test_cell_check_judges_a_growing_gradient_by_the_tolerance_policy(capsys, monkeypatch):
    """A cell whose gradients grow to ~1e9 over 25 steps: rounding alone gives absolute errors of 1e-6 at relative
    1e-15; the check must say they agree (it said MISMATCH under an absolute 1e-9), and must still catch a wrong
    gradient of that size."""
    args = ["derive", "cell", "z = w_x*x + w_h*h_prev; h = mygelu(z) + abs(z)/sqrt(2)", "--states", "h",
            "--params", "w_x w_h w_o", "--head", "w_o*h", "--function", "mygelu(u) = u*(1+erf(u/sqrt(2)))/2",
            "--general", "--check"]
    code, out = main(args), capsys.readouterr().out
    rows = {line.split()[0]: float(line.split()[3]) for line in out.splitlines() if "max abs" in line}
    assert max(rows.values()) > 1e-9  # the case is one the absolute threshold got wrong
    assert code == 0 and "all gradients agree" in out and "MISMATCH" not in out

    from seqgrad.crosscheck import cells

    real = cells.against_autograd

    def off_by_a_millionth(*a, **kw):  # the largest gradient entry off by 1e-6 relative: a wrong result
        return [(T_, n, err + 1e-6 * (err / rel if rel else 1.0), rel + 1e-6) if n == "w_h" else (T_, n, err, rel)
                for T_, n, err, rel in real(*a, **kw)]

    monkeypatch.setattr(cells, "against_autograd", off_by_a_millionth)
    code, out = main(args), capsys.readouterr().out
    assert code == 1 and "MISMATCH" in out and "w_h" in [line.split()[0] for line in out.splitlines() if line.endswith("MISMATCH")]
