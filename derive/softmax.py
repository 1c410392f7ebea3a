"""Softmax over one row of scores: its Jacobian diag(a) - a a^T, shift invariance, the max-subtracted form.

Seed 000 L700-706 (row softmax and the stable form exp(S - m) / sum exp(S - m)).
"""

from __future__ import annotations

import sympy as sp

from seqgrad import validate
from seqgrad.errors import NonFiniteError, SeqgradValueError

from .catalogue import Derivation, Identity, numeric_sides, proof_by, rational_zero
from .safe_parse import as_sympy


def scores(n: int, name: str = "z") -> list[sp.Symbol]:
    """n real score symbols z_0 ... z_{n-1}."""
    n = validate.integer("n", n, minimum=1)
    return list(sp.symbols(f"{name}_0:{n}", real=True))


def softmax(z) -> sp.Matrix:
    """a_i = exp(z_i) / sum_j exp(z_j), as a column."""
    z = _entries(z)
    e = [sp.exp(zi) for zi in z]
    total = sp.Add(*e)
    return sp.Matrix([ei / total for ei in e])


def stable_softmax(z) -> sp.Matrix:
    """The max-subtracted form exp(z_i - m) / sum_j exp(z_j - m) with m = max_j z_j (seed 000 L704)."""
    z = _entries(z)
    m = sp.Max(*z)
    return softmax([zi - m for zi in z])


def jacobian(z) -> sp.Matrix:
    """d a_i / d z_j by direct differentiation (the scores must be symbols)."""
    z = _entries(z)
    if not all(isinstance(v, sp.Symbol) for v in z):
        raise SeqgradValueError("z", z, "symbols to differentiate with respect to (see scores(n)); "
                                        "substitute numbers into the result instead")
    return softmax(z).jacobian(z)


def jacobian_closed_form(a) -> sp.Matrix:
    """diag(a) - a a^T for the softmax output a (a column)."""
    a = sp.Matrix(_entries(a))
    return sp.diag(*a) - a * a.T


def _entries(z) -> list:
    if isinstance(z, sp.MatrixBase):
        z = list(z)
    z = list(z)
    if not z:
        raise SeqgradValueError("z", z, "at least one score")
    z = [as_sympy(v, "z") for v in z]
    for i, v in enumerate(z):  # exp(oo)/(exp(oo) + e) is nan in SymPy: an infinite score has no softmax
        if v.has(sp.oo, -sp.oo, sp.zoo, sp.nan):
            raise NonFiniteError(f"z[{i}]", v)
    return z


class SoftmaxJacobian(Derivation):
    """The softmax Jacobian for n scores: direct derivative, closed form, and their difference."""

    def __init__(self, n: int):
        self.z = scores(n)
        self.a = softmax(self.z)
        self.direct = jacobian(self.z)
        self.closed = jacobian_closed_form(self.a)

    def residual(self) -> sp.Matrix:
        return self.direct - self.closed

    def prove(self) -> bool:
        return all(rational_zero(e) == 0 for e in self.residual())

    def latex(self) -> str:
        return (r"\frac{\partial \mathbf a}{\partial \mathbf z} = \operatorname{diag}(\mathbf a) - \mathbf a\mathbf a^{\top} = "
                + sp.latex(self.closed.subs({e: sp.Symbol(f"a_{i}") for i, e in enumerate(self.a)})))

    def __repr__(self) -> str:
        return f"SoftmaxJacobian(n={len(self.z)})"


def identities() -> list[Identity]:
    out = []
    sj = SoftmaxJacobian(3)
    out.append(Identity(
        "softmax-jacobian", "seed 000 L700 (row softmax); derived Jacobian",
        "d softmax(z) / dz = diag(a) - a a^T (n = 3)", sj.direct, sj.closed, "simplify",
        proof_by(sj.residual, rational_zero, "cancel exponentials"),
        lambda rng: numeric_sides(sj.direct, sj.closed, rng, low=-4, high=4), simplifier="cancel exponentials"))
    z = scores(4)
    c = sp.Symbol("c", real=True)
    lhs, rhs = softmax([zi + c for zi in z]), softmax(z)
    out.append(Identity(
        "softmax-shift-invariance", "seed 000 L704; seed 001 l.170",
        "softmax(z + c 1) = softmax(z) for every constant c (n = 4)", lhs, rhs, "simplify",
        proof_by(lambda: lhs - rhs, rational_zero, "cancel exponentials"),
        lambda rng: numeric_sides(lhs, rhs, rng, low=-30, high=30), simplifier="cancel exponentials"))
    z3 = scores(3)
    lhs3, rhs3 = stable_softmax(z3), softmax(z3)
    out.append(Identity(
        "softmax-max-subtracted", "seed 000 L704-706",
        "exp(z_i - max z) / sum_j exp(z_j - max z) = softmax(z)_i (n = 3)", lhs3, rhs3, "simplify",
        proof_by(lambda: lhs3 - rhs3, rational_zero, "cancel exponentials"),
        lambda rng: numeric_sides(lhs3, rhs3, rng, low=-30, high=30), simplifier="cancel exponentials"))
    total = sp.Add(*softmax(z))
    out.append(Identity(
        "softmax-sums-to-one", "seed 000 L700 (every row of A sums to 1)", "sum_i softmax(z)_i = 1 (n = 4)",
        total, sp.Integer(1), "simplify", proof_by(lambda: total - 1, rational_zero, "cancel exponentials"),
        lambda rng: numeric_sides(total, sp.Integer(1), rng, low=-5, high=5), simplifier="cancel exponentials"))
    return out
