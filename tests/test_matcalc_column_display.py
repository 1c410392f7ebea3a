"""``seqgrad diff`` of column vectors in textbook form: the display pass (:func:`derive.matcalc.shown`) shows the
row statistics of a transposed column as scalars, and the form it shows is the same expression as the derived one,
checked numerically at n = 1, 3, 17."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from seqgrad import derive
from seqgrad.derive.matcalc import Divided, OfColumn, OfColumnStat, evaluate, numpy_ops, shown

CASES = [  # (expression, wrt, shapes): the row-wise rules on a column, a sum, a quadratic form, and two not designed for
    ("softmax(x)", "x", "x:n"),
    ("layernorm(x)", "x", "x:n"),
    ("layernorm(x, 1/10)", "x", "x:n"),
    ("mean(x)", "x", "x:n"),
    ("sum(x)", "x", "x:n"),
    ("sum(softmax(x)*x.T)", "x", "x:n"),
    ("x.T*A*x", "x", "x:n A:n,n"),
    ("softmax(A*x)", "x", "x:n A:n,n"),
    ("layernorm(W*x + b)", "W", "W:n,n x:n b:n"),
    ("hadamard(layernorm(x), softmax(x))", "x", "x:n"),
    ("mean(hadamard(layernorm(x), x))", "x", "x:n"),
]


def _value_of_display(e):
    """The shown form with its display nodes replaced by their values (their ``doit``), for the evaluator."""
    return e.replace(lambda x: isinstance(x, (OfColumn, OfColumnStat, Divided)), lambda x: x.doit(deep=False))


def _env(d, size, rng):
    symbols = set().union(*(r.free_symbols for r in (d.expr, d.value, d.jacobian) if r is not None))
    matrices = [s for s in symbols if isinstance(s, sp.MatrixSymbol)]
    sizes = {k: size for m in matrices for k in sp.Tuple(*m.shape).free_symbols}
    env = dict(sizes)
    for s in symbols:
        if isinstance(s, sp.MatrixSymbol):
            env[s] = rng.standard_normal(tuple(int(sp.sympify(k).subs(sizes)) for k in s.shape))
        elif isinstance(s, sp.Symbol) and s not in env:
            env[s] = 1e-5  # eps
    return env


@pytest.mark.parametrize("text, wrt, shapes", CASES)
def test_the_shown_form_is_the_derived_expression(text, wrt, shapes):
    d = derive.diff(text, wrt, shapes)
    rng = np.random.default_rng(26)
    for size in (1, 3, 17):
        env = _env(d, size, rng)
        for derived in (d.value, d.jacobian):
            if derived is None:
                continue
            want = np.asarray(evaluate(derived, env, numpy_ops()), dtype=float)
            got = np.asarray(evaluate(_value_of_display(shown(derived)), env, numpy_ops()), dtype=float)
            assert got.shape == want.shape or got.size == want.size == 1, (text, size)
            err = np.max(np.abs(got.reshape(want.shape) - want)) / (1 + np.max(np.abs(want)))
            assert err < 1e-12, (text, size, err)


def test_softmax_of_a_column_in_textbook_form():
    d = derive.diff("softmax(x)", "x", "x:n")
    assert d.pretty() == "dx = (G − (softmax(x)ᵀ G) 𝟏) ∘ softmax(x)\nJ = diag(softmax(x)) − softmax(x) softmax(x)ᵀ"
    tex = d.latex()
    assert "rowsum" not in tex and r"+ -" not in tex, tex
    assert r"\operatorname{softmax}(\mathbf{x})^{\top}" in tex, tex  # a call transposed without brackets


def test_layernorm_of_a_column_in_textbook_form():
    d = derive.diff("layernorm(x)", "x", "x:n")
    text = d.pretty()
    assert text == ("dx = 1/std(x) (G − mean(normalize(x) ∘ G) normalize(x) − mean(G) 𝟏)\n"
                    "J = 1/std(x) (I − normalize(x) normalize(x)ᵀ/n − 𝟏 𝟏ᵀ/n)"), text
    tex = d.latex()
    assert r"\sigma_{\epsilon}(\mathbf{x})" in tex and "std" not in tex and r"+ -" not in tex, tex


def test_a_row_statistic_of_a_genuine_row_is_left_alone():
    """A declared row r (1 x n) is not a transposed column: softmax(r) prints as softmax(r)."""
    d = derive.diff("softmax(r)", "r", "r:1,n")
    assert "softmax(r)" in d.pretty() and "softmax(rᵀ)" not in d.pretty(), d.pretty()
