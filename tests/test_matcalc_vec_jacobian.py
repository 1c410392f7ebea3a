"""Matrix-by-matrix Jacobians in the vec (Kronecker) form, ∂vec(F)/∂vec(X), read off the pullback and checked
against torch autograd's Jacobian of vec F (column-major) -- cases from the Matrix Cookbook (eqs. on vec and
Kronecker products) and ones not designed for."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import sympy as sp

from seqgrad import derive
from seqgrad.derive.matcalc import evaluate, numpy_ops

CASES = [
    ("A*X", "A:n,n X:n,n", "I ⊗ A", r"\mathbf{I} \otimes \mathbf{A}"),
    ("X*B", "B:m,m X:n,m", "Bᵀ ⊗ I", None),
    ("A*X*B", "A:p,n X:n,m B:m,q", "Bᵀ ⊗ A", None),
    ("X.T", "X:n,m", "K_(n,m)", r"\mathbf{K}_{n,m}"),
    ("inv(X)", "X:n,n", "−(X⁻ᵀ ⊗ X⁻¹)", None),
    ("X*X", "X:n,n", "I ⊗ X + Xᵀ ⊗ I", None),
    ("hadamard(A, X)", "A:n,m X:n,m", "diag(vec(A))", None),
    ("A*x", "A:m,n x:n", "xᵀ ⊗ I", None),
    ("2*X.T*A + X", "A:n,n X:n,n", None, None),           # not designed for: a transpose and a sum
    ("tanh(A*X)", "A:n,n X:n,n", None, None),              # an entrywise function of a product
]


@pytest.mark.parametrize("expr, shapes, text, tex", CASES, ids=[c[0] for c in CASES])
def test_vec_jacobian_prints_in_textbook_form_and_agrees_with_autograd(expr, shapes, text, tex):
    pytest.importorskip("torch")
    from seqgrad.crosscheck.matcalc import check

    wrt = "A" if expr == "A*x" else "X"
    d = derive.diff(expr, wrt, shapes=shapes)
    assert d.vec_jacobian is not None, expr
    line = d.pretty().splitlines()[1]
    assert line.startswith(f"∂vec(") and f"/∂vec({wrt}) = " in line, line
    if text is not None:
        assert line.endswith(" = " + text), line
    if tex is not None:
        assert tex in d.latex()
    result = check(d, trials=4, seed=3)
    assert result.passed and all(t["vec_jacobian_abs"] < 1e-12 for t in result.trials), result.line()


def test_a_wrong_vec_jacobian_is_caught_by_the_check():
    pytest.importorskip("torch")
    from seqgrad.crosscheck.matcalc import check

    d = derive.diff("A*X", "X", shapes="A:n,m X:m,k")
    A = d.expr.args[0]
    wrong = dataclasses.replace(d, vec_jacobian=sp.KroneckerProduct(sp.Identity(d.wrt.shape[1]), A.T.T * 1.0001))
    assert not check(wrong, trials=3).passed


def test_the_vec_map_matches_a_dense_jacobian_by_finite_differences():
    """Independent of torch: central differences of vec F in numpy at a fixed size."""
    d = derive.diff("A*X*B", "X", shapes="A:p,n X:n,m B:m,q")
    named = {s.name: s for s in d.expr.free_symbols}
    A, X, B = named["A"], named["X"], named["B"]
    sizes = {s: v for s, v in zip(sorted({dim for M in (A, X, B) for dim in M.shape}, key=str), (3, 2, 4, 5))}
    rng = np.random.default_rng(1)
    env = {M: rng.standard_normal(tuple(int(dim.subs(sizes)) for dim in M.shape)) for M in (A, X, B)}
    env.update(sizes)
    ops = numpy_ops()
    J = np.asarray(evaluate(d.vec_jacobian, env, ops), dtype=float)
    x0 = env[X].reshape(-1, order="F")
    cols = []
    for k in range(x0.size):
        e = np.zeros_like(x0)
        e[k] = 1e-6
        hi = evaluate(d.expr, {**env, X: (x0 + e).reshape(env[X].shape, order="F")}, ops)
        lo = evaluate(d.expr, {**env, X: (x0 - e).reshape(env[X].shape, order="F")}, ops)
        cols.append(((hi - lo) / 2e-6).reshape(-1, order="F"))
    assert np.allclose(J, np.stack(cols, 1), atol=1e-8)


def test_json_has_the_vec_jacobian_and_vectors_keep_their_jacobian():
    d = derive.diff("A*X", "X", shapes="A:n,n X:n,n")
    assert d.as_dict()["vec_jacobian"] == "I ⊗ A"
    v = derive.diff("A*x", "x", shapes="A:m,n x:n")
    assert v.jacobian is not None and v.vec_jacobian is None  # a vector's J = A, as before


def test_a_zero_derivative_compiles_and_checks():
    """X X⁻¹ = I: the pullback is the zero matrix, which the generated code must build (it raised NameError)."""
    pytest.importorskip("torch")
    from seqgrad.crosscheck.matcalc import check, generated_source

    d = derive.diff("X*inv(X)", "X", shapes="X:n,n")
    assert isinstance(d.value, sp.ZeroMatrix)
    assert "zeros((n, n)" in generated_source(d, "numpy")[0]
    assert check(d, trials=3).passed
