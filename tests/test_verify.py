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
    assert tex.startswith("\\begin{align*}\n\\frac{\\mathrm{d}}{\\mathrm{d} x}") and tex.rstrip().endswith("\\end{align*}")
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


#: sum_j u_j d(a . rmsnorm(x, y, z))/d x_j = a^T J u for the direction u given by the three placeholders
JACOBIAN_TIMES = " + ".join("{%d}*diff(dot(rmsnorm((x, y, z){eps}), (a, b, c)), %s)" % (k, v) for k, v in enumerate("xyz")) + " = 0"


@pytest.mark.parametrize("argv,code", [
    # RMSNorm is scale-invariant at eps = 0 (c > 0 and c < 0 alike) ...
    (["verify", "rmsnorm((c*x, c*y, c*z)) = rmsnorm((x, y, z))", "--vars", "c,x,y,z", "--assume", "c > 0"], 0),
    # ... and only up to eps otherwise; unlike LayerNorm it is not shift-invariant
    (["verify", "rmsnorm((3*x, 3*y), 1/10) = rmsnorm((x, y), 1/10)", "--vars", "x,y"], 1),
    (["verify", "rmsnorm((x + 1, y + 1, z + 1)) = rmsnorm((x, y, z))", "--vars", "x,y,z"], 1),
    (["verify", "layernorm((x + 1, y + 1, z + 1), 1/10) = layernorm((x, y, z), 1/10)", "--vars", "x,y,z"], 0),
    # the mean square of its output is 1 at eps = 0: dot(r, r) = n
    (["verify", "dot(rmsnorm((x, y, z)), rmsnorm((x, y, z))) = 3", "--vars", "x,y,z"], 0),
    (["verify", "rmsnorm((0, 0)) = (0, 0)"], 2),
    # its Jacobian J (a^T J through dot with a free row a) kills the x direction at eps = 0, J x = 0, but not
    # for eps > 0, and unlike LayerNorm's it does not kill the ones direction, J 1 != 0
    (["verify", JACOBIAN_TIMES.format(*"xyz", eps=""), "--vars", "x,y,z,a,b,c"], 0),
    (["verify", JACOBIAN_TIMES.format(*"xyz", eps=", 1/10"), "--vars", "x,y,z,a,b,c"], 1),
    (["verify", JACOBIAN_TIMES.format(*"111", eps=""), "--vars", "x,y,z,a,b,c"], 1),
    # a false derivative of a vector operation is refuted at a point (the numeric check once kept d/dx unevaluated,
    # found no point it could evaluate and said "undecided")
    (["verify", "diff(dot(layernorm((x, y), 1/10), (a, b)), x) = 0", "--vars", "x,y,a,b"], 1),
])
def test_cli_rmsnorm_in_the_vector_language(argv, code, capsys):
    """rmsnorm(v[, eps]) has layernorm's door in seqgrad verify: identities proved, false ones refuted, the zero
    vector refused in one line (the old parser refused the name, exit 2 for all)."""
    assert main(argv) == code
    out = capsys.readouterr()
    assert (out.err if code == 2 else out.out).strip()
    if code == 2:
        assert "rmsnorm() of the zero vector divides by zero" in out.err


def test_the_vector_norms_are_the_programs():
    """The vector language's layernorm and rmsnorm are the one definitions' forward lines (derive.blocks.norm_row)."""
    from seqgrad.derive import blocks
    from seqgrad.derive.safe_parse import VECTOR_FUNCTIONS

    x = sp.symbols("x_0:3", real=True)
    for name in ("layernorm", "rmsnorm"):
        assert VECTOR_FUNCTIONS[name][0](x, sp.Rational(1, 7)) == tuple(
            blocks.norm_row(name, x, {"gamma": 1, "beta": 0}, sp.Rational(1, 7)))


def test_cli_json(capsys):
    assert main(["verify", "sum(i, i, 1, n) = n*(n + 1)/2", "--sizes", "n", "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["status"] == "proved" and verdict["exit_code"] == 0


# --- honest numeric evidence (issue 26): identities that passed before, each false -------------------------

@pytest.mark.parametrize("text,kwargs", [
    ("sqrt((x-2)**2) = 2 - x", {"variables": "x"}),            # true only for x <= 2: points beyond [-2, 2]
    ("min(x, 3) = x", {"variables": "x"}),                     # true only for x <= 3: beyond the switch point
    ("floor(x) + floor(-x) = -1", {"variables": "x"}),         # false at every integer
    ("sum(i, i, 1, n) = n*(n + 1)/2 + (n-1)*(n-2)*(n-3)*(n-4)*(n-5)*(n-6)*(n-7)*(n-8)", {"sizes": "n"}),  # zero for n <= 8
    ("sum(i, i, 1, n) = n*(n + 1)/2 + (n-1)*(n-2)*(n-3)*(n-4)*(n-5)*(n-6)*(n-7)*(n-8)/10**40", {"sizes": "n"}),
    ("x + 10**-30 = x", {"variables": "x"}),                   # a nonzero constant below any tolerance
    ("x**2 + 10**-25*x = x**2", {"variables": "x"}),           # a nonzero polynomial below any tolerance
    ("abs(x - 1/1000) = x - 1/1000", {"variables": "x"}),     # false only in (-oo, 0.001): small scales
    ("max(x, 500) = 500", {"variables": "x"}),                 # false only above 500: large scales
    ("sqrt(x**2) = x", {"variables": "x"}),
    ("abs(x) = x", {"variables": "x", "assume": "x > -1"}),    # false in (-1, 0): near the bound
])
def test_false_identities_that_once_held_are_refuted(text, kwargs):
    v = derive.verify(text, **kwargs)
    assert v.status == "refuted", v.line()
    assert v.counterexample or "reduces" in v.detail


def test_a_nonzero_constant_residual_is_refuted_whatever_its_size():
    v = derive.verify("x + 10**-30 = x", variables="x")
    assert v.status == "refuted" and "reduces" in v.detail and "10000" in v.detail


def test_the_refutation_reason_is_true():
    """var(layernorm(v, eps)) = var / (var + eps), not 1: refuted, but never 'reduces to -9/1000' (a numerator)."""
    v = derive.verify("var(layernorm((a, b, c), 0.001)) = 1", variables="a b c")
    assert v.status == "refuted" and "-9/1000" not in v.detail and v.counterexample


def test_statement_echoed_as_typed_and_the_domain_said():
    v = derive.verify("exp(log(x)) = x", variables="x")
    assert v.status == "proved" and v.line().startswith("exp(log(x)) = x: proved where defined: x > 0")
    assert v.as_dict()["statement"] == "exp(log(x)) = x" and v.domain == ["x > 0"]


def test_assumptions():
    v = derive.verify("log(x*y) = log(x) + log(y)", variables="x,y", assume="x > 0, y > 0")
    assert v.status == "proved" and v.words() == "proved for x > 0, y > 0" and not v.domain
    assert derive.verify("sqrt(x**2) = x", variables="x", assumptions="x >= 0").status == "proved"
    assert derive.verify("abs(x - 1) = x - 1", variables="x", assume="x > 1").status == "proved"
    assert derive.verify("abs(x - 1) = x - 1", variables="x", assume="x > 0").status == "refuted"
    held = derive.verify("log(x*y) = log(x) + log(y)", variables="x,y")  # no assumption: only where defined
    assert held.status in ("holds", "proved") and "x > 0" in held.domain


@pytest.mark.parametrize("assume,fragment", [("z > 0", "declared variable"), ("x", "comparison"), ("x > y", "not on the whitelist"),
                                             ("x > 1, x < 0", "bounds that leave")])
def test_bad_assumptions(assume, fragment):
    with pytest.raises(SeqgradError, match=fragment):
        derive.verify("x = x", variables="x,y", assume=assume)


def test_nan_and_infinite_sides_are_errors():
    with pytest.raises(SeqgradValueError, match="finite"):
        derive.verify(float("nan"), 1)
    with pytest.raises(SeqgradValueError, match="finite"):
        derive.verify(sp.oo, 1)
    with pytest.raises(SeqgradValueError, match="finite"):
        derive.verify(float("inf"), 1)


def test_what_was_sampled_is_said():
    v = derive.verify("max(a, b) + min(a, b) = a + b", variables="a b")
    assert v.status == "holds" and "scales ±1e-3 .. ±1e3" in v.detail and "a - b = 0" in v.detail
    sampled = v.as_dict()["sampled"]
    assert {"scale", "integer", "half", "switch"} <= set(sampled["kinds"])
    sizes = derive.verify("sum(i, i, 1, n) = n*(n + 1)/2 + 0*n", sizes="n", points=30)
    assert sizes.status == "proved"
    s = derive.verify("sum(1/i**3, i, 1, n) = sum(1/i**3, i, 1, n)", sizes="n")
    assert s.status == "proved"


# --- matrix and vector identities at symbolic size -------------------------------------------------------------

@pytest.mark.parametrize("text,shapes", [
    ("trace(A*B) = trace(B*A)", "A:n,m B:m,n"),
    ("trace(A*B*C) = trace(C*A*B)", "A:n,m B:m,k C:k,n"),
    ("diff(trace(A*X), X) = transpose(A)", "A:n,n X:n,n"),
    ("diff(dot(x, A*x), x) = (A + A.T)*x", "A:n,n x:n"),
    ("diff(x.T*A*x, x) = (A + A.T)*x", "A:n,n x:n"),
    ("(A*B).T = B.T*A.T", "A:n,m B:m,k"),
    ("det(A*B) = det(A)*det(B)", "A:n,n B:n,n"),
    ("inv(A*B) = inv(B)*inv(A)", "A:n,n B:n,n"),
    ("diff(log(det(X)), X) = inv(X).T", "X:n,n"),
    ("diff(det(X), X) = det(X)*inv(X).T", "X:n,n"),
    ("diff(trace(X.T*A*X), X) = (A + A.T)*X", "A:n,n X:n,m"),
    ("diff(trace(inv(X)*A), X) = -inv(X).T*A.T*inv(X).T", "X:n,n A:n,n"),
    ("dot(x, y) = dot(y, x)", "x:n y:n"),
    ("trace(X) = sum(diag(X))", "X:n,n"),
])
def test_matrix_identities_proved(text, shapes):
    v = derive.verify(text, shapes=shapes)
    assert v.status == "proved", v.line()
    assert 64 in v.sampled["sizes"] and 1 in v.sampled["sizes"]  # the float64 guard ran at size 1 and at 64


@pytest.mark.parametrize("text,shapes", [
    ("trace(A*B) = trace(A)*trace(B)", "A:n,n B:n,n"),
    ("trace(A*B*C) = trace(B*A*C)", "A:n,n B:n,n C:n,n"),
    ("diff(trace(X*X), X) = 2*X", "X:n,n"),
    ("det(2*X) = 2*det(X)", "X:n,n"),                # true at n = 1 only
    ("sum(X) = trace(X)", "X:n,n"),
    ("diff(x.T*A*x, x) = 2*A*x", "A:n,n x:n"),       # true for symmetric A only
    ("inv(A*B) = inv(A)*inv(B)", "A:n,n B:n,n"),
])
def test_matrix_identities_refuted(text, shapes):
    v = derive.verify(text, shapes=shapes)
    assert v.status == "refuted", v.line()


def test_matrix_cli(capsys):
    assert main(["verify", "trace(A*B) = trace(B*A)", "--shape", "A:n,m B:m,n"]) == 0
    assert capsys.readouterr().out.startswith("trace(A*B) = trace(B*A): proved")
    assert main(["verify", "log(x*y) = log(x) + log(y)", "--vars", "x,y", "--assume", "x > 0, y > 0"]) == 0
    assert "proved for x > 0, y > 0" in capsys.readouterr().out
    assert main(["verify", "trace(A*B) = trace(B*A)", "--shape", "A:n,m B:n,n"]) == 2


@pytest.mark.parametrize("text", ["rmsnorm((a, b), -1) = (a, b)", "layernorm((a, b), -1/2) = (a, b)"])
def test_a_negative_eps_of_a_norm_is_refused_by_name(text, capsys):
    """eps sits under the square root: a negative one gave complex values (the sides 'differ' by 7310 + 0j)."""
    assert main(["verify", text, "--vars", "a,b"]) == 2
    err = capsys.readouterr().err
    assert "eps is -1" in err and "must be a number >= 0" in err and "Traceback" not in err


def test_a_real_difference_is_printed_without_an_imaginary_part(capsys):
    assert main(["verify", "softmax((a, b)) = (a, b)", "--vars", "a,b"]) == 1
    out = capsys.readouterr().out
    assert "refuted" in out and "j," not in out and "0.0j" not in out
