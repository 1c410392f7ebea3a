"""derive.diff / seqgrad diff: matrix calculus at symbolic size through the rule table, checked against autograd."""

import json
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp

from seqgrad import derive
from seqgrad.crosscheck.cli import main
from seqgrad.crosscheck.matcalc import check, compile_derivative, generated_source
from seqgrad.derive.matcalc import evaluate, numpy_ops
from seqgrad.derive.matrix_text import ShapeMismatch, parse_matrix
from seqgrad.derive.program_text import pretty
from seqgrad.errors import ParseError, SeqgradError, SeqgradValueError

# (expression, wrt, shapes, the textbook result as pretty prints it)
TEXTBOOK = [
    ("x.T*A*x", "x", "A:n,n x:n", "dx = (A + Aᵀ) x"),
    ("dot(x, A*x)", "x", "A:n,n x:n", "dx = (A + Aᵀ) x"),
    ("trace(A*X)", "X", "A:n,n X:n,n", "dX = Aᵀ"),
    ("trace(A*X*B)", "X", "A:n,n X:n,n B:n,n", "dX = Aᵀ Bᵀ"),
    ("trace(X.T*A*X)", "X", "A:n,n X:n,m", "dX = (A + Aᵀ) X"),
    ("log(det(X))", "X", "X:n,n", "dX = X⁻ᵀ"),
    ("det(X)", "X", "X:n,n", "dX = det(X) X⁻ᵀ"),
    ("trace(inv(X)*A)", "X", "X:n,n A:n,n", "dX = −X⁻ᵀ Aᵀ X⁻ᵀ"),
    ("x.T*x", "x", "x:n", "dx = 2 x"),
    ("dot(a, x)", "x", "a:n x:n", "dx = a"),
    ("A*x", "x", "A:m,n x:n", "dx = Aᵀ G\nJ = A"),
    ("inv(X)", "X", "X:n,n", "dX = −X⁻ᵀ G X⁻ᵀ"),
    ("exp(x)", "x", "x:n", "dx = exp(x) ∘ G\nJ = diag(exp(x))"),
]


def test_softmax_jacobian_is_diag_p_minus_p_p_transposed():
    """The textbook's J = diag(p) − p pᵀ (p = softmax(x), written through the row softmax(xᵀ)), read off the
    pullback of the rule table, and checked entry by entry against torch.autograd.functional.jacobian."""
    d = derive.diff("softmax(x)", "x", "x:n")
    assert d.pretty().splitlines()[1] == "J = diag(softmax(x)) − softmax(x) softmax(x)ᵀ"  # softmax(x), not softmax(xᵀ)ᵀ
    result = check(d, trials=4)
    assert result.passed and all(t["jacobian_abs"] < 1e-12 for t in result.trials)
    ln = derive.diff("layernorm(x)", "x", "x:n")
    assert ln.jacobian is not None and check(ln, trials=4).passed


def test_a_wrong_jacobian_fails_the_check():
    d = derive.diff("softmax(x)", "x", "x:n")
    d.jacobian = d.jacobian.args[0] if isinstance(d.jacobian, sp.MatAdd) else d.jacobian  # diag(p) only: the −p pᵀ lost
    assert not check(d, trials=3).passed


@pytest.mark.parametrize("expr,wrt,shapes,expected", TEXTBOOK)
def test_textbook_form(expr, wrt, shapes, expected):
    d = derive.diff(expr, wrt, shapes)
    shown = [line for line in d.pretty().splitlines() if not line.startswith("∂vec(")]  # the vec form: its own tests
    assert "\n".join(shown) == expected


CHECKED = [e[:3] for e in TEXTBOOK] + [
    ("softmax(Q*K.T/sqrt(d))*V", "Q", "Q:T,d K:T,d V:T,e"),
    ("softmax(Q*K.T/sqrt(d))*V", "K", "Q:T,d K:T,d V:T,e"),
    ("softmax(Q*K.T/sqrt(d))*V", "V", "Q:T,d K:T,d V:T,e"),
    ("softmax(x)", "x", "x:n"),
    ("layernorm(X)", "X", "X:T,d"),
    ("layernorm(x)", "x", "x:n"),
    ("tanh(W*x)", "W", "W:m,n x:n"),
    ("sigmoid(x.T*w)", "w", "x:n w:n"),
    ("norm(x)", "x", "x:n"),
    ("norm(X)", "X", "X:n,m"),
    ("trace(X)*trace(X)", "X", "X:n,n"),
    ("trace(X)*A", "X", "X:n,n A:n,n"),
    ("exp(trace(X))", "X", "X:n,n"),
    ("sum(hadamard(X, X))", "X", "X:n,m"),
    ("mean(X, 1)", "X", "X:n,m"),
    ("sum(X, 0)", "X", "X:n,m"),
    ("mean(X)", "X", "X:n,m"),
    ("diag(X)", "X", "X:n,n"),
    ("diag(x)", "x", "x:n"),
    ("outer(x, y)", "x", "x:n y:m"),
    ("X.T*X", "X", "X:n,m"),
    ("trace(X*X*X)", "X", "X:n,n"),
    ("x.T*inv(A)*x", "A", "A:n,n x:n"),
    ("log(det(X.T*X))", "X", "X:n,m"),
]


@pytest.mark.parametrize("expr,wrt,shapes", CHECKED)
def test_against_torch_autograd(expr, wrt, shapes):
    d = derive.diff(expr, wrt, shapes)
    result = check(d, trials=4, seed=1)
    assert result.passed, result.trials
    assert {v for t in result.trials for v in t["sizes"].values()} >= {1, 2}  # size 1 and small sizes both checked


def test_the_check_fails_on_a_wrong_formula():
    """A derivative whose formula is wrong (softmax without its −p pᵀ term, SymPy's own fault) disagrees."""
    d = derive.diff("softmax(x)", "x", "x:n")
    p = parse_matrix("softmax(x)", "x:n")
    d.value = sp.HadamardProduct(p, d.G)  # diag(p) G only
    assert not check(d, trials=3).passed
    d = derive.diff("x.T*A*x", "x", "A:n,n x:n")
    A = next(s for s in d.expr.free_symbols if getattr(s, "name", "") == "A")
    d.value = sp.MatMul(2, A, d.wrt)  # 2 A x: right only for a symmetric A
    assert not check(d, trials=3).passed


def test_generated_numpy_function_matches_the_expression():
    d = derive.diff("x.T*A*x", "x", "A:n,n x:n")
    source, leaves = generated_source(d, "numpy")
    assert source.splitlines()[-1].strip() == "return (A + A.T) @ x"
    fn, _ = compile_derivative(d, "numpy")
    rng = np.random.default_rng(0)
    A, x = rng.standard_normal((4, 4)), rng.standard_normal((4, 1))
    assert np.allclose(fn(A, x), (A + A.T) @ x)
    assert "torch" not in generated_source(d, "numpy")[0]


def test_rules_used_are_proved():
    d = derive.diff("trace(A*X)", "X", "A:n,n X:n,n")
    assert d.rules == ["trace", "matmul"]
    assert all(p.holds for p in d.proofs().values())


def test_latex_through_the_printer():
    tex = derive.diff("x.T*A*x", "x", "A:n,n x:n").latex()
    assert tex.startswith("\\begin{align*}") and r"(\mathbf{A} + \mathbf{A}^{\top}) \mathbf{x}" in tex


def test_no_silent_zero_and_a_true_zero():
    d = derive.diff("trace(A)", "X", "A:n,n X:n,n")
    assert isinstance(d.value, sp.ZeroMatrix)  # really independent of X: the structural zero, said as such
    try:  # floor: refused (no derivative), or, where the operation registry declares floor' = 0, its jumps said
        jumped = derive.diff("floor(c)", "c", variables="c").jumps()
        assert [str(j) for j in jumped] == ["c"]
    except SeqgradValueError as exc:
        assert "floor" in str(exc)


def test_kinks_are_reported():
    d = derive.diff("sum(abs(X))", "X", "X:n,m")
    assert [str(k) for k in d.kinks()] == ["X"]


@pytest.mark.parametrize("expr,shapes,error,fragment", [
    ("A*y", "A:n,n x:n", ParseError, "'y' is not declared"),
    ("A*x", "A:n,m x:n", ShapeMismatch, "the product needs m = n"),
    ("A + x", "A:n,n x:n", ShapeMismatch, "a sum needs equal shapes"),
    ("det(B)", "B:n,m", ShapeMismatch, "det() needs a square matrix"),
    ("A**2", "A:n,n", ParseError, "matrix power"),
    ("A.real", "A:n,n", ParseError, "only .T"),
    ("eval(A)", "A:n,n", ParseError, "'eval' are not allowed"),
    ("__import__('os').system('x')", "A:n,n", ParseError, "not allowed"),
    ("frobnicate(A)", "A:n,n", ParseError, "'frobnicate' are not allowed"),
])
def test_bad_input_is_one_clear_error(expr, shapes, error, fragment):
    with pytest.raises(error, match=None) as info:
        derive.diff(expr, "A", shapes)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_every_scalar_function_of_the_parser_reaches_diff():
    """The scalar functions are the parser's own table (the operation registry where it has one: relu, softplus,
    gelu ... then read the same here), entrywise on matrices, checked against autograd."""
    from seqgrad.derive.matrix_text import scalar_functions

    names = [n for n in ("tanh", "sigmoid", "exp", "relu", "softplus", "gelu") if n in scalar_functions()]
    assert {"tanh", "sigmoid", "exp"} <= set(names)
    for name in names:
        d = derive.diff(f"sum({name}(W*x))", "W", "W:m,n x:n")
        assert check(d, trials=3, seed=2).passed, name


def test_bad_wrt_and_shape():
    with pytest.raises(ParseError, match="declared"):
        derive.diff("trace(A)", "B", "A:n,n")
    with pytest.raises(ParseError, match="NAME:n,m"):
        derive.diff("trace(A)", "A", "A")
    with pytest.raises(ParseError, match="not two of them"):
        derive.diff("trace(A)", "A", "A:n,n", variables="n")


def test_evaluate_numpy_backend():
    e = parse_matrix("trace(A*B)", "A:n,m B:m,n")
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((3, 2)), rng.standard_normal((2, 3))
    syms = {s.name: s for s in e.free_symbols}
    assert np.isclose(evaluate(e, {syms["A"]: A, syms["B"]: B}, numpy_ops()), np.trace(A @ B))


@pytest.mark.parametrize("argv,code", [
    (["diff", "x.T*A*x", "--wrt", "x", "--shape", "A:n,n x:n"], 0),
    (["diff", "x.T*A*x", "--wrt", "x", "--shape", "A:n,n x:n", "--check"], 0),
    (["diff", "A*y", "--wrt", "x", "--shape", "A:n,n x:n"], 2),
    (["diff", "A*x", "--wrt", "x", "--shape", "A:n,m x:n"], 2),
    (["diff", "A**2", "--wrt", "A", "--shape", "A:n,n"], 2),
])
def test_cli_exit_codes(argv, code, capsys):
    assert main(argv) == code
    out = capsys.readouterr()
    if code == 2:
        assert len(out.err.strip().splitlines()) == 1 and "Traceback" not in out.err
    else:
        assert "dx = (A + Aᵀ) x" in out.out


def test_cli_json_and_code(capsys):
    assert main(["diff", "trace(A*X)", "--wrt", "X", "--shape", "A:n,n X:n,n", "--json", "--check", "--code", "both"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["result"] == "A.T" and out["kind"] == "gradient" and out["check"]["passed"]
    assert set(out["code"]) == {"numpy", "torch"}


def test_import_derive_matcalc_does_not_import_torch():
    code = "import sys, seqgrad.derive.matcalc, seqgrad.derive.matrix_verify; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_errors_are_seqgrad_errors():
    with pytest.raises(SeqgradError):
        derive.diff(3, "x", "x:n")
    assert pretty(parse_matrix("x.T*A*x", "A:n,n x:n")) == "xᵀ A x"
