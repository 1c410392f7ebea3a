"""derive.verify and seqgrad verify: the four verdicts, bad input, exit codes."""

import json

import pytest
import sympy as sp

from seqgrad import derive
from seqgrad.crosscheck.cli import main
from seqgrad.errors import ParseError, SeqgradError, SeqgradValueError


def test_proved():
    v = derive.verify("sum(i, i, 1, n) = n*(n + 1)/2", sizes="n")
    assert v.status == "proved" and v.exit_code == 0 and v
    x = sp.Symbol("x", real=True)
    assert derive.verify(sp.sin(x) ** 2 + sp.cos(x) ** 2, 1).status == "proved"
    assert derive.verify("softmax((a + c, b + c)) = softmax((a, b))", variables="a b c").status == "proved"


def test_holds_numerically():
    v = derive.verify("max(a, b) + min(a, b) = a + b", variables="a, b", points=8)
    assert v.status == "holds" and v.points == 8 and v.exit_code == 0
    assert "not proved" in v.line()


def test_refuted_with_counterexample():
    v = derive.verify("sin(x)**2 = sin(x)", variables="x")
    assert v.status == "refuted" and v.exit_code == 1 and not v
    x = v.counterexample["x"]
    assert abs(float(sp.sin(x) ** 2 - sp.sin(x))) > 1e-6
    assert derive.verify("sum(1/i**2, i, 1, n) = pi**2/6", sizes="n").status == "refuted"


def test_undecided_on_the_time_limit():
    v = derive.verify("max(a, b) + min(a, b) = a + b", variables="a b", points=10000, time_limit=0.3)
    assert v.status == "undecided" and v.exit_code == 3
    assert "time limit" in v.detail


def test_latex_line():
    v = derive.verify("diff(tanh(x), x) = 1 - tanh(x)**2", variables="x")
    tex = v.latex()  # a complete display, the verdict beside the statement
    assert tex.startswith("\\begin{align*}\n\\frac{d}{d x}") and tex.rstrip().endswith("\\end{align*}")
    assert r"\text{(proved)}" in tex and v._repr_latex_() == tex


@pytest.mark.parametrize("text,kwargs,error", [
    ("sin(x) = y", {"variables": "x"}, ParseError),
    ("x + 1", {"variables": "x"}, ParseError),
    ("x == 1", {"variables": "x"}, ParseError),
    ("__import__('os') = 1", {}, ParseError),
    ("sum(i, i, 1, n) = 1", {"variables": "x"}, ParseError),
    ("(a, b) = (a,)", {"variables": "a b"}, SeqgradValueError),
])
def test_bad_input_is_one_clear_error(text, kwargs, error):
    with pytest.raises(error):
        derive.verify(text, **kwargs)


def test_sympy_input_with_undeclared_or_bad_size():
    x, y = sp.symbols("x y")
    with pytest.raises(SeqgradValueError, match="declared"):
        derive.verify(x, y, variables="x")
    m = sp.Symbol("m")
    with pytest.raises(SeqgradValueError, match="positive integer"):
        derive.verify(m, m, sizes="m")
    with pytest.raises(SeqgradError):
        derive.verify("x = x", variables="x", time_limit=0)


@pytest.mark.parametrize("argv,code", [
    (["verify", "sin(x)**2 + cos(x)**2 = 1", "--vars", "x"], 0),
    (["verify", "sin(x) = x", "--vars", "x"], 1),
    (["verify", "sin(x) = y", "--vars", "x"], 2),
    (["verify", "max(a, b) + min(a, b) = a + b", "--vars", "a,b", "--points", "10000", "--time-limit", "0.3"], 3),
])
def test_cli_exit_codes(argv, code, capsys):
    assert main(argv) == code
    out = capsys.readouterr()
    assert (out.err if code == 2 else out.out).strip()


def test_cli_json(capsys):
    assert main(["verify", "sum(i, i, 1, n) = n*(n + 1)/2", "--sizes", "n", "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["status"] == "proved" and verdict["exit_code"] == 0
