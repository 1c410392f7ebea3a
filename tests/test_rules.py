"""derive.rules: every primitive's pullback and forward rule proved at symbolic size; the proofs can fail;
Program's backward pass goes through the table."""

import dataclasses

import pytest
import sympy as sp

from seqgrad.derive import rules
from seqgrad.derive.program import Program
from seqgrad.derive.program_text import sstr
from seqgrad.errors import SeqgradTypeError, SeqgradValueError

T, n = sp.symbols("T n", integer=True, positive=True)


@pytest.mark.parametrize("name", sorted(rules.RULES))
def test_every_rule_is_proved_at_symbolic_size(name):
    proof = rules.RULES[name].prove()
    assert proof.holds, (name, proof.residual)
    assert "symbolic size" in proof.method
    # the proof really is at symbolic size: the example has no numeric dimension other than a row vector's 1
    expr, G, leaves = rules.RULES[name].example()
    shape = expr.shape if getattr(expr, "is_Matrix", False) else leaves[0].shape  # trace, det: a scalar of a matrix
    assert any(not dim.is_number for dim in shape) or name == "scalar"  # a 1 x 1 matrix read as a scalar has size 1


def _broken(name, **changes):
    return dataclasses.replace(rules.RULES[name], **changes)


def test_a_wrong_pullback_is_not_proved():
    # softmax without the -rowsum term: the -p p^T part of the Jacobian that SymPy's MatrixSymbol route loses
    wrong = _broken("softmax", pull=lambda e, G, out: [(e.arg, sp.HadamardProduct(e, G))])
    assert not wrong.prove().holds
    wrong_mm = _broken("matmul", pull=lambda e, G, out: [(e.args[0], G * e.args[1].T), (e.args[1], G.T * e.args[0])])
    assert not wrong_mm.prove().holds


def test_a_wrong_forward_rule_is_not_proved():
    wrong = _broken("transpose", forward=lambda e, t: sp.MatMul(2, t[e.arg].T) if e.arg in t else None)
    assert not wrong.prove().holds
    wrong_ln = _broken("layernorm", forward=lambda e, t: rules.RowMean(t[e.arg]))
    assert not wrong_ln.prove().holds


@pytest.mark.parametrize("drop", ["nothing", "mean", "inner product", "root"])
def test_a_subtly_wrong_layernorm_pullback_is_not_proved(drop):
    """dX = (1/σ)(G - mean(G) - x̂ ∘ mean(G ∘ x̂)) with one piece wrong: without mean(G), with mean(G) for
    mean(G ∘ x̂), or with 1/σ² for 1/σ (the radical's reduction must not make a wrong power vanish); the same
    construction with nothing wrong is proved."""
    from seqgrad.derive.elementwise import Elementwise

    u = sp.Dummy("u")

    def pull(e, G, out):
        xhat = e
        inner = rules.RowMean(G) if drop == "inner product" else rules.RowMean(sp.HadamardProduct(G, xhat))
        terms = [G, rules.RowMean(G), sp.HadamardProduct(xhat, inner)]
        if drop == "mean":
            terms.pop(1)
        inv = Elementwise(sp.Lambda(u, 1 / u ** (2 if drop == "root" else 1)), rules.RowStd(e.arg, e.eps))
        return [(e.arg, sp.HadamardProduct(inv, rules._minus(*terms)))]

    rule = _broken("layernorm", pull=pull, forward=lambda e, t: pull(e, t[e.arg], None)[0][1] if e.arg in t else None)
    assert rule.prove().holds is (drop == "nothing")


def test_index_zero_is_exact():
    i, k = sp.symbols("i k", integer=True)
    z = sp.IndexedBase("z")
    total = sp.Sum(sp.exp(z[k]), (k, 0, n - 1))
    assert rules.index_zero(sp.Sum(sp.exp(z[i]) / total, (i, 0, n - 1)) - 1) == 0
    assert rules.index_zero(sp.Sum(sp.exp(z[i]) / total, (i, 0, n - 1)) - 2) != 0


def test_program_backward_goes_through_the_table():
    S = sp.MatrixSymbol("S", T, n)
    prog = Program("softmax")
    A = prog.define(sp.MatrixSymbol("A", T, n), rules.RowSoftmax(S))
    G = sp.MatrixSymbol("G", T, n)
    grads = prog.backward({A: G}, lambda s: None)
    assert sstr(grads[S]) == "A ∘ (G - rowsum(G ∘ A))"


def test_symbolic_scale_is_allowed():
    c = sp.Symbol("c", positive=True)
    X, G = sp.MatrixSymbol("X", T, n), sp.MatrixSymbol("G", T, n)
    assert rules.pullback(sp.MatMul(c, X), G) == [(X, c * G)]


def test_unknown_primitive_is_a_clear_error():
    X = sp.MatrixSymbol("X", 2, 2)
    with pytest.raises(SeqgradTypeError, match="rule table"):
        rules.pullback(sp.MatPow(X, 3), sp.MatrixSymbol("G", 2, 2))  # (the inverse has a rule since derive.matcalc)


def test_forward_rule_has_no_silent_zero():
    X, W = sp.MatrixSymbol("X", T, n), sp.MatrixSymbol("W", n, n)
    Xdot = sp.MatrixSymbol("Xdot", T, n)
    assert rules.jvp(X * W, {}) is None  # a structural zero, said as None
    assert rules.jvp(X * W, {X: Xdot}) == Xdot * W
    v, vdot = sp.MatrixSymbol("v", 1, n), sp.MatrixSymbol("vdot", 1, n)
    assert rules.jvp(rules.Diag(v), {v: vdot}) == rules.Diag(vdot)
    assert str(rules.Diag(v)) == "diag(v)"


def test_jacobian_read_off_a_table_tangent_equals_the_explicit_jacobian():
    """The recurrent cells' step Jacobians come from the table's forward rules: J is read off the tangent."""
    from seqgrad.derive.elementwise import Elementwise

    u = sp.Symbol("u")
    h, W = sp.MatrixSymbol("h", 1, 3), sp.MatrixSymbol("W", 3, 3)
    x, U = sp.MatrixSymbol("x", 1, 2), sp.MatrixSymbol("U", 3, 2)
    y = sp.HadamardProduct(Elementwise(sp.Lambda(u, sp.tanh(u)), h * W.T + x * U.T), h) + 2 * h * W
    hdot = sp.MatrixSymbol("hdot", 1, 3)
    J = rules.jacobian(rules.jvp(y, {h: hdot}), hdot)
    assert "diag(h)" in sstr(J) and "2*W.T" in sstr(J)  # the text's diag(.) form, not an entry table
    explicit = y.as_explicit()
    want = sp.Matrix(3, 3, lambda i, j: sp.diff(explicit[0, i], h[0, j]))
    assert sp.simplify(J.as_explicit() - want) == sp.zeros(3, 3)
    assert rules.jacobian(rules.jvp(x * U.T, {h: hdot}), hdot) is None  # no path from h: a structural zero


def test_jacobian_refuses_a_tangent_it_cannot_read():
    h, hdot = sp.MatrixSymbol("h", 1, 3), sp.MatrixSymbol("hdot", 1, 3)
    with pytest.raises(SeqgradValueError, match="tangent"):
        rules.jacobian(rules.jvp(h.T * h, {h: hdot}), hdot)  # an outer product: not a row vector's Jacobian


def test_a_wrong_matrix_calculus_rule_is_not_proved():
    """The rules of derive.matcalc (trace, det, inverse, diagonal) fail their proofs when they are wrong."""
    assert not _broken("trace", pull=lambda e, g, out: [(e.arg, sp.MatMul(2, g, sp.Identity(e.arg.shape[0])))]).prove().holds
    assert not _broken("det", pull=lambda e, g, out: [(e.arg, sp.MatMul(g, e, sp.Inverse(e.arg)))]).prove().holds  # X^-1, not X^-T
    assert not _broken("inverse", pull=lambda e, G, out: [(e.arg, sp.MatMul(-1, sp.Inverse(e.arg), G, sp.Inverse(e.arg)))]).prove().holds
    assert not _broken("inverse", forward=lambda e, t: sp.MatMul(-1, e, e, t[e.arg]) if e.arg in t else None).prove().holds
    assert not _broken("diagonal", pull=lambda e, G, out: [(e.arg, sp.MatMul(G, G.T))]).prove().holds
