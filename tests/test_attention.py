"""Softmax, masks, one head and several heads, gradients, permutation equivariance, Var(q.k) = d_k, bad input."""

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings, strategies as st

from seqgrad.derive import attention as A
from seqgrad.derive import softmax as Sm
from seqgrad.derive.catalogue import rational_zero
from seqgrad.errors import SeqgradTypeError, SeqgradValueError, ShapeError

oo = sp.oo


def test_softmax_jacobian_and_invariances():
    assert Sm.SoftmaxJacobian(4).prove()
    z = Sm.scores(3)
    c = sp.Symbol("c", real=True)
    assert all(rational_zero(e) == 0 for e in Sm.softmax([x + c for x in z]) - Sm.softmax(z))
    assert all(rational_zero(e) == 0 for e in Sm.stable_softmax(z) - Sm.softmax(z))


def test_softmax_jacobian_against_torch():
    z = Sm.scores(4)
    J = sp.lambdify(z, list(Sm.jacobian_closed_form(Sm.softmax(z))), "math")
    x = torch.tensor([0.3, -1.2, 2.0, 0.5], dtype=torch.float64)
    ref = torch.autograd.functional.jacobian(lambda v: torch.softmax(v, 0), x).numpy()
    assert np.allclose(np.array(J(*x.tolist()), dtype=float).reshape(4, 4), ref, atol=1e-12)


def test_masks():
    assert A.causal_mask(3) == sp.Matrix([[0, -oo, -oo], [0, 0, -oo], [0, 0, 0]])
    pad = A.padding_mask([True, True, False])
    assert list(pad.col(2)) == [-oo] * 3
    both = A.combine_masks(A.causal_mask(3), pad)
    assert both[2, 2] == -oo and both[2, 1] == 0


def test_mask_errors():
    with pytest.raises(ShapeError, match="3 x 3"):
        A.SelfAttention(3, 2, 1, mask=A.causal_mask(2))
    with pytest.raises(SeqgradValueError, match="every source masked"):
        A.SelfAttention(2, 2, 1, mask=[[0, -oo], [-oo, -oo]])
    with pytest.raises(SeqgradValueError, match="every source masked"):  # padding + causal leaves row 0 empty
        A.combine_masks(A.causal_mask(2), A.padding_mask([False, True]))
    with pytest.raises(SeqgradValueError, match="0 \\(visible\\) or -oo"):
        A.check_mask([[0, 5], [0, 0]], (2, 2))
    with pytest.raises(SeqgradValueError):
        A.padding_mask([1, 0])


def test_exercise_3_mask_before_softmax():
    S = sp.Matrix([[0, sp.log(2), sp.log(3)]])
    v = sp.Matrix([2, -1, 4])
    assert (A.softmax_rows(S) * v)[0] == 2
    masked = A.softmax_rows(S, sp.Matrix([[0, 0, -oo]]))
    assert list(masked) == [sp.Rational(1, 3), sp.Rational(2, 3), 0] and (masked * v)[0] == 0


def test_causal_row_of_course_example_journey():
    """Seed 000 Table 16: journey's causal weights (0.389, 0.611, 0, ...) from H0 rows 0 and 1 (head 1)."""
    H = sp.Matrix([[0.2, 0.9, 0.4, 1, -0.2], [1.341471, 0.840302, -0.174884, 1.099685, 0.400631]]).applyfunc(sp.nsimplify)
    WQ = sp.Matrix([[1, 0, 0, 0, 0], [0, 1, 0, 0, 0], [0, 0, 1, 0, 0]])
    WK = sp.Matrix([[.5, 0, 0, .5, 0], [0, 1, 0, 0, 0], [0, 0, .5, 0, .5]]).applyfunc(sp.nsimplify)
    WV = sp.Matrix([[1, 0, 0, 0, 0], [0, 0, 1, 0, 0], [0, 0, 0, .5, .5]]).applyfunc(sp.nsimplify)
    head = A.SelfAttention(2, 5, 3, X=H, W_Q=WQ, W_K=WK, W_V=WV, mask=A.causal_mask(2))
    assert [round(float(x), 3) for x in head.A.row(1)] == [0.389, 0.611]
    assert head.A[0, 1] == 0


def test_backward_equals_differentiation():
    head = A.SelfAttention(2, 2, 1, 1)
    back = head.backward()
    for name in ("W_V", "W_K"):
        diff = back[name] - head.gradient_by_differentiation(name)
        assert all(rational_zero(e) == 0 for e in diff)


def test_gradients_against_torch_autograd():
    rng = np.random.default_rng(0)
    X, WQ, WK, WV, G = (rng.normal(size=s) for s in [(3, 2), (2, 2), (2, 2), (1, 2), (3, 1)])
    head = A.SelfAttention(3, 2, 2, 1, mask=A.causal_mask(3))
    syms = list(head.X) + list(head.W_Q) + list(head.W_K) + list(head.W_V) + list(head.upstream())
    back = head.backward()
    f = sp.lambdify(syms, list(back["X"]) + list(back["W_Q"]), "math")
    vals = list(X.ravel()) + list(WQ.ravel()) + list(WK.ravel()) + list(WV.ravel()) + list(G.ravel())
    flat = np.array(f(*vals), dtype=float)
    dX, dWQ = flat[:6].reshape(3, 2), flat[6:].reshape(2, 2)
    t = [torch.tensor(a, requires_grad=True) for a in (X, WQ, WK, WV)]
    S = (t[0] @ t[1].T) @ (t[0] @ t[2].T).T / np.sqrt(2) + torch.triu(torch.full((3, 3), float("-inf"), dtype=torch.float64), 1)
    O = torch.softmax(S, 1) @ (t[0] @ t[3].T)
    (O * torch.tensor(G)).sum().backward()
    assert np.allclose(dX, t[0].grad.numpy(), atol=1e-12) and np.allclose(dWQ, t[1].grad.numpy(), atol=1e-12)


def test_multihead_arbitrary_widths_and_errors():
    mha = A.MultiHeadAttention(2, 5, [(3, 3), (2, 4)])
    assert mha.C.shape == (2, 7) and mha.W_O.shape == (5, 7) and mha.B.shape == (2, 5)
    assert A.head_widths(6, 3) == [(2, 2)] * 3
    with pytest.raises(SeqgradValueError, match="divisor of d_model=5"):
        A.head_widths(5, 2)
    with pytest.raises(SeqgradValueError):
        A.head_widths(5, 0)
    with pytest.raises(SeqgradTypeError):
        A.head_widths(5, "two")
    with pytest.raises(ShapeError, match="5 x 7"):
        A.MultiHeadAttention(2, 5, [(3, 3), (2, 4)], W_O=sp.zeros(5, 6))
    with pytest.raises(ShapeError):
        A.SelfAttention(2, 5, 3, W_Q=sp.zeros(5, 3))


def _reversed_concat(monkeypatch, factor=1):
    """derive.blocks' concatenation with the heads in reverse order (and B scaled by ``factor``): a wrong program."""
    from seqgrad.derive import blocks

    def wrong(prog, outs, W_O):
        rows = outs[0].shape[0]
        C = prog.define(sp.MatrixSymbol("C", rows, W_O.shape[1]), A_rules().HConcat(*reversed(outs)))
        return prog.define(sp.MatrixSymbol("B", rows, W_O.shape[0]), factor * C * W_O.T)

    monkeypatch.setattr(blocks, "_concat_project", wrong)


def A_rules():
    from seqgrad.derive import rules

    return rules


def test_multihead_concatenation_is_a_view_of_the_program(monkeypatch):
    """MultiHeadAttention's C and B are the program's lines (derive.blocks.concat_program) at the heads' outputs:
    a changed program (heads in reverse order) reaches them.  The old class typed hstack and C W_O^T by hand."""
    heads = A.MultiHeadAttention(2, 4, 2).heads
    _reversed_concat(monkeypatch)
    mha = A.MultiHeadAttention(2, 4, 2)
    assert mha.C == sp.Matrix.hstack(heads[1].O, heads[0].O)


def test_the_concatenation_statement_is_proved_against_the_program(monkeypatch):
    from seqgrad.derive import catalogue

    assert catalogue.get("attention-multihead-concat").prover().holds
    _reversed_concat(monkeypatch, factor=2)
    assert not catalogue.get("attention-multihead-concat").prover().holds


def test_multihead_backward_against_differentiation():
    mha = A.MultiHeadAttention(2, 3, [(1, 2), (2, 1)])
    G = sp.Matrix(2, 3, lambda r, c: sp.Rational(r - 2 * c + 1, 3))
    grads = mha.backward(G)
    loss = sum(G[r, c] * mha.B[r, c] for r in range(2) for c in range(3))
    assert all(sp.expand(e) == 0 for e in grads["W_O"] - mha.W_O.applyfunc(lambda w: sp.diff(loss, w)))
    O = sp.Matrix.hstack(*[sp.Matrix(2, dv, lambda r, c, n=n: sp.Symbol(f"o{n}_{r}{c}")) for n, (_, dv) in enumerate(mha.widths)])
    flat = sum(G[r, c] * (O * mha.W_O.T)[r, c] for r in range(2) for c in range(3))
    assert all(sp.expand(e) == 0 for e in sp.Matrix.hstack(grads["O^[1]"], grads["O^[2]"]) - O.applyfunc(lambda o: sp.diff(flat, o)))


def test_permutation_equivariance_and_its_failures():
    eq = A.Equivariance(3, 2, 1, 1)
    for perm in eq.permutations():
        rA, rO = eq.residuals(perm)
        assert all(sp.expand(e) == 0 for e in list(rA) + list(rO))
    point = {s: sp.Rational((n % 5) - 2, 3) for n, s in enumerate(list(eq.H) + [x for W in eq.W.values() for x in W])}
    causal = A.Equivariance(3, 2, 1, 1, causal=True, values=point)
    rA, _ = causal.residuals((1, 0, 2))
    assert max(abs(float(e)) for e in rA) > 1e-3
    with pytest.raises(SeqgradValueError):
        A.permutation_matrix([0, 0, 1])


def test_dot_product_variance():
    for d in (1, 3, 64):
        assert A.dot_product_variance(d)[0] == d


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 6), data=st.data())
def test_property_softmax_jacobian_numeric(n, data):
    """Random sizes (1..6) and scores in [-30, 30]: diag(a) - a a^T matches torch autograd."""
    z = np.array(data.draw(st.lists(st.floats(-30, 30), min_size=n, max_size=n)))
    sym = Sm.scores(n)
    J = np.array(sp.lambdify(sym, list(Sm.jacobian_closed_form(Sm.softmax(sym))), "mpmath")(*z), dtype=float).reshape(n, n)
    ref = torch.autograd.functional.jacobian(lambda v: torch.softmax(v, 0), torch.tensor(z)).numpy()
    assert np.allclose(J, ref, atol=1e-12)


@settings(max_examples=10, deadline=None)
@given(T=st.integers(1, 3), d_model=st.integers(1, 3), d_k=st.integers(1, 2), seed=st.integers(0, 1000))
def test_property_attention_output_against_torch(T, d_model, d_k, seed):
    rng = np.random.default_rng(seed)
    X, WQ, WK, WV = (rng.normal(size=s) for s in [(T, d_model), (d_k, d_model), (d_k, d_model), (2, d_model)])
    head = A.SelfAttention(T, d_model, d_k, 2, X=X.tolist(), W_Q=WQ.tolist(), W_K=WK.tolist(), W_V=WV.tolist(), mask=A.causal_mask(T))
    ref = torch.nn.functional.scaled_dot_product_attention(torch.tensor(X @ WQ.T), torch.tensor(X @ WK.T), torch.tensor(X @ WV.T),
                                                           is_causal=True)
    assert np.allclose(np.array(head.O.evalf(), dtype=float), ref.numpy(), atol=1e-12)


def test_symbolic_equivariance_proof_refutes_a_wrong_permutation():
    from seqgrad.derive import attention as At
    from seqgrad.derive.rules import index_form, index_zero

    assert [index_zero(r) for r in At.equivariance_residuals()] == [0, 0]
    A, _ = At._symbolic_head()
    A_ts = index_form(A, At._t, At._s)
    wrong = At._reindex(At._permuted(A_ts) - A_ts.xreplace({At._t: At._pi(At._t)}))  # the column left unpermuted
    assert index_zero(wrong) != 0
