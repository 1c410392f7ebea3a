"""How ``seqgrad diff`` results print: the textbook's forms, rendered by the printers from expressions."""

from __future__ import annotations

import numpy as np
import sympy as sp

from seqgrad import derive
from seqgrad.derive.matcalc import OfColumn, display_form, evaluate, numpy_ops


def test_softmax_of_a_column_prints_as_softmax_of_the_column():
    d = derive.diff("softmax(x)", "x", "x:n")
    text = d.pretty()
    assert "xᵀ" not in text and "softmax(x)" in text, text
    assert "softmax(x.T)" not in str(d)
    assert r"\operatorname{softmax}(\mathbf{x}^{\top})" not in d.latex()


def test_display_form_keeps_the_value():
    """The display node is only a way of printing: its value (doit) is the original expression's."""
    d = derive.diff("softmax(x)", "x", "x:n")
    n = d.expr.shape[0].free_symbols.pop()
    rng = np.random.default_rng(0)
    for e in (d.expr, d.jacobian):
        shown = display_form(e)
        assert shown != e
        env = {d.wrt: rng.standard_normal((5, 1)), n: 5}
        value = shown.replace(lambda x: isinstance(x, OfColumn), lambda x: x.doit(deep=False))
        assert np.allclose(evaluate(value, env, numpy_ops()), evaluate(e, env, numpy_ops()))


def test_the_result_name_is_an_upright_d_before_the_bold_variable():
    tex = derive.diff("x.T*A*x", "x", shapes="A:n,n x:n").latex()
    assert r"\mathrm{d}\mathbf{x}" in tex and r"\mathbf{dx}" not in tex
    assert r"\mathrm{d}w" in derive.diff("w**2", "w", variables="w").latex()


def test_sum_prints_as_ones_transposed_x_ones():
    d = derive.diff("sum(X)", "X", "X:n,m")
    assert d.pretty() == "dX = 𝟏 𝟏ᵀ"
    assert derive.diff("sum(X)**2", "X", "X:n,m").latex().count(r"\left(") == 0
    tex = derive.diff("sum(X)**2", "X", "X:n,m").latex()
    assert r"2 (\mathbf{1}^{\top} \mathbf{X} \mathbf{1}) \mathbf{1} \mathbf{1}^{\top}" in tex, tex
    from seqgrad.derive.program_text import pretty

    assert pretty(d.expr) == "𝟏ᵀ X 𝟏"
