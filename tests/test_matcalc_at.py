"""``derive.diff(..., at=)`` and ``seqgrad diff --at``: the derivative at a point, and a clear refusal where the
expression is undefined or not differentiable there.  The oracle of a value is a central difference of the
expression evaluated by mpmath at 40 digits (through the registry's mpmath namespace), not SymPy's derivative."""

from __future__ import annotations

import subprocess
import sys

import mpmath
import pytest
import sympy as sp

from seqgrad.derive import diff
from seqgrad.errors import ParseError, SeqgradTypeError, UndefinedError


def _central(text, wrt, point, h="1e-15"):
    """A central difference of ``text`` (a scalar expression of the point's names) at ``point``, in mpmath."""
    from seqgrad.derive.operations import evaluator, mpmath_namespace
    from seqgrad.derive.safe_parse import parse_expression

    names = list(point)
    e = parse_expression(text, variables=names)
    syms = {s.name: s for s in e.free_symbols}
    definition = evaluator(sp.Lambda(tuple(syms.get(n, sp.Symbol(n)) for n in names), e))  # each op by its mpmath side
    f = lambda *a: definition(mpmath_namespace(), *a)  # noqa: E731
    with mpmath.workdps(40):
        args = [mpmath.mpmathify(str(sp.N(sp.sympify(point[n]), 45))) for n in names]
        k = names.index(wrt)
        hi, lo = list(args), list(args)
        hi[k] += mpmath.mpf(h)
        lo[k] -= mpmath.mpf(h)
        return (f(*hi) - f(*lo)) / (2 * mpmath.mpf(h))


@pytest.mark.parametrize("text, wrt, point", [
    ("x**3*y + sin(y)", "y", {"x": "2", "y": "pi"}),
    ("x**3*y", "x", {"x": "2", "y": "1/2"}),
    ("gelu(x)*erf(y)", "x", {"x": "0", "y": "1"}),
    ("softplus(x) + relu(x - 1)", "x", {"x": "3"}),
    ("abs(x**2)", "x", {"x": "0"}),            # abs at 0, but its argument does not move: differentiable
    ("log(x*y)/sqrt(y)", "y", {"x": "1/3", "y": "4"}),
    ("atan(x/y) + tanh(x*y)", "x", {"x": "-1/2", "y": "2"}),
    ("leaky_relu(x) + sigmoid(x)", "x", {"x": "-2"}),
])
def test_the_value_at_a_point_is_exact_and_agrees_with_a_central_difference(text, wrt, point):
    d = diff(text, wrt, variables=list(point), at=", ".join(f"{k}={v}" for k, v in point.items()))
    assert d.value_at.is_number and not d.value_at.has(sp.Float), d.value_at  # exact, not a float
    assert abs(float(d.value_at) - float(_central(text, wrt, point))) < 1e-12 * (1 + abs(float(d.value_at)))


@pytest.mark.parametrize("text, at, names", [
    ("relu(x)", "x=0", ["relu(x)", "kink", "relu'(0) = 0"]),
    ("relu(x - 1)*y", "x=1, y=2", ["relu(x - 1)", "x = 1, y = 2"]),
    ("leaky_relu(x)", "x=0", ["leaky_relu(x)", "kink"]),
    ("abs(x)", "x=0", ["abs(x)", "abs'(0) = 0"]),
    ("abs(sin(x))", "x=pi", ["abs(sin(x))", "x = pi"]),
    ("sign(x)", "x=0", ["sign(x)", "jump"]),
    ("floor(x)", "x=-2", ["floor(x)", "jump"]),
    ("1/x", "x=0", ["division by zero", "x = 0"]),
    ("1/(x - y)", "x=1, y=1", ["division by zero", "x - y"]),
    ("log(x)", "x=0", ["log(x)", "positive"]),
    ("log(x)", "x=-1", ["log(x)", "x = -1"]),
    ("sqrt(x)", "x=-1", ["sqrt(x)", "negative"]),
    ("sqrt(x)", "x=0", ["sqrt(x)", "infinite"]),
    ("x**(1/3)", "x=0", ["x**(1/3)", "infinite"]),
    ("asin(x)", "x=1", ["asin(x)", "infinite"]),
    ("asin(x)", "x=2", ["asin(x)", "x = 2"]),
    ("tan(x)", "x=pi/2", ["tan(x)", "x = pi/2"]),
    ("x*log(x)", "x=0", ["log(x)"]),            # the innermost failure is named (the whole tends to 0)
])
def test_an_undefined_or_non_differentiable_point_is_refused_naming_function_and_point(text, at, names):
    with pytest.raises(UndefinedError) as exc:
        diff(text, "x", variables="x y", at=at)
    for name in names:
        assert name in str(exc.value), (name, str(exc.value))


@pytest.mark.parametrize("at, error, word", [
    ("z=1", ParseError, "declared scalar"),
    ("x=1", ParseError, "missing: y"),
    ("x=1, x=2, y=0", ParseError, "once"),
    ("x", ParseError, "NAME=VALUE"),
    ("x=__import__('os'), y=1", ParseError, "not allowed"),
    ("x=1/0, y=1", ParseError, "division by zero"),
    (3, SeqgradTypeError, "point"),
])
def test_a_bad_point_is_one_clear_error(at, error, word):
    with pytest.raises(error, match=word.replace("(", r"\(")):
        diff("x*y", "x", variables="x y", at=at)


def test_a_matrix_formula_keeps_its_matrices_at_a_scalar_point():
    d = diff("c*x.T*A*x", "x", shapes="A:n,n x:n", variables="c", at={"c": 3})
    assert str(d.value_at) == "(3*A + 3*A.T)*x"
    assert "dx|(c = 3) = (3 A + 3 Aᵀ) x" in d.pretty()
    assert r"\right|_{\substack{ c=3 }}" in d.latex()


def test_the_cli_prints_the_value_and_refuses_in_one_line_exit_2():
    run = lambda *a: subprocess.run([sys.executable, "-m", "seqgrad", "diff", *a], capture_output=True, text=True)
    ok = run("x**3*y + sin(y)", "--wrt", "y", "--vars", "x,y", "--at", "x=2, y=pi")
    assert ok.returncode == 0 and "dy|(x = 2, y = pi) = 7" in ok.stdout, ok.stdout + ok.stderr
    bad = run("relu(x)", "--wrt", "x", "--vars", "x", "--at", "x=0")
    assert bad.returncode == 2 and bad.stdout == "" and bad.stderr.count("\n") == 1, bad.stderr
    assert "relu(x) is not differentiable at x = 0" in bad.stderr and "Traceback" not in bad.stderr
    js = run("x**3*y", "--wrt", "x", "--vars", "x,y", "--at", "x=2, y=1/2", "--json")
    assert '"value_at": "6"' in js.stdout


def test_compiled_derivatives_keep_the_registry_kink_convention_at_0():
    """relu'(0) = 0 as the registry declares (torch.relu's autograd), not SymPy's Heaviside(0) = 1/2; both for a
    scalar and entrywise on a vector (which --check could not evaluate before: no Heaviside)."""
    torch = pytest.importorskip("torch")
    import numpy as np

    from seqgrad.crosscheck.matcalc import check, compile_derivative

    z = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    torch.relu(z).sum().backward()
    assert z.grad.tolist() == [0.0, 0.0, 0.0]
    d = diff("relu(x)", "x", variables="x")
    fn, _ = compile_derivative(d, "numpy")
    assert float(fn(0.0)) == 0.0 and float(fn(2.0)) == 1.0
    v = diff("relu(x)", "x", shapes="x:n")
    fn, _ = compile_derivative(v, "numpy")
    assert np.asarray(fn(np.zeros((3, 1)), np.ones((3, 1)))).ravel().tolist() == [0.0, 0.0, 0.0]
    assert check(v, trials=3).passed
    assert "Heaviside(x, 0)" in str(d.value)
