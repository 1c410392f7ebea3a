"""Softmax over one row of scores: its Jacobian diag(a) - a a^T, shift invariance, the max-subtracted form.

Seed 000 L700-706 (row softmax and the stable form exp(S - m) / sum exp(S - m)).
"""

from __future__ import annotations

import sympy as sp

from seqgrad import validate
from seqgrad.errors import NonFiniteError, SeqgradValueError

from .identity import Derivation, Identity, numeric_sides
from .proof import proof_by, rational_zero
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

    def rows(self) -> list:
        """da/dz = diag(a) - a^T a for a row of scores z (1 x n, the text's convention: a vector is a row), and
        the matrix it is for these n scores (entries in a_i)."""
        from .latex_settings import Partial

        n_ = len(self.z)
        a_, z_ = sp.MatrixSymbol("a", 1, n_), sp.MatrixSymbol("z", 1, n_)
        closed = self.closed.subs({e: sp.Symbol(f"a_{i}") for i, e in enumerate(self.a)})
        return [(Partial(z_, of=a_), [sp.MatAdd(sp.DiagMatrix(a_), -a_.T * a_, evaluate=False), sp.ImmutableMatrix(closed)])]

    def __repr__(self) -> str:
        return f"SoftmaxJacobian(n={len(self.z)})"


# --- index notation at symbolic n ----------------------------------------------------------------

n = sp.Symbol("n", integer=True, positive=True)
i, j, k = sp.symbols("i j k", integer=True, nonnegative=True)
z = sp.IndexedBase("z", real=True)
a = sp.IndexedBase("a")
c = sp.Symbol("c", real=True)


def softmax_entry(idx, scores=z, size=n, shift=0):
    """a_idx = exp(z_idx + shift) / sum_{k=0}^{n-1} exp(z_k + shift), for symbolic n."""
    return sp.exp(scores[idx] + shift) / sp.Sum(sp.exp(scores[k] + shift), (k, 0, size - 1))


def _a(expr):
    """The statement's a_i replaced by the softmax of z (for the proof)."""
    from .rules import expand_indexed

    return expand_indexed(expr, {a: lambda idx: softmax_entry(idx)})


def identities() -> list[Identity]:
    from .rules import index_proof

    out = []
    sj = SoftmaxJacobian(3)
    instance = lambda rng: numeric_sides(sj.direct, sj.closed, rng, low=-4, high=4)
    jac_lhs = sp.Derivative(a[i], z[j])
    jac_rhs = a[i] * (sp.KroneckerDelta(i, j) - a[j])
    out.append(Identity(
        "softmax-jacobian", "seed 000 L700 (row softmax); derived Jacobian",
        "d a_i / d z_j = a_i (delta_ij - a_j) for a = softmax(z), every n",
        jac_lhs, jac_rhs, "simplify",
        index_proof(lambda: sp.diff(softmax_entry(i), z[j]) - _a(jac_rhs), "a_i = exp(z_i) / sum_k exp(z_k), symbolic n"),
        instance, simplifier="index notation, symbolic n", scope="all n >= 1",
        assumptions=("z real",), symbols_note="Numeric evidence: the direct 3 x 3 Jacobian against diag(a) - a a^T at random points."))
    zero_rows = sp.Sum(a[i] * (sp.KroneckerDelta(i, j) - a[j]), (j, 0, n - 1))
    out.append(Identity(
        "softmax-jacobian-rows-sum-to-zero", "seed 000 L700 (shifting a row's scores leaves softmax unchanged, so the Jacobian's rows sum to 0)",
        "sum_j d a_i / d z_j = 0: the softmax Jacobian's rows sum to zero, every n",
        zero_rows, sp.Integer(0), "simplify",
        index_proof(lambda: sp.Sum(sp.diff(softmax_entry(i), z[j]), (j, 0, n - 1)), "sum over j of d a_i / d z_j at symbolic n (the derivative of a_i(z + c 1) in c: zero by shift invariance)"),
        lambda rng: numeric_sides(sj.direct * sp.ones(3, 1), sp.zeros(3, 1), rng, low=-4, high=4),
        simplifier="index notation, symbolic n", scope="all n >= 1", assumptions=("z real",)))
    z4 = scores(4)
    lhs, rhs = softmax([zi + c for zi in z4]), softmax(z4)
    out.append(Identity(
        "softmax-shift-invariance", "seed 000 L704; seed 001 l.170",
        "softmax(z + c 1) = softmax(z) for every constant c, every n",
        softmax_entry(i, shift=c), softmax_entry(i), "simplify",
        index_proof(lambda: softmax_entry(i, shift=c) - softmax_entry(i), "exp(z_k + c) = exp(c) exp(z_k), symbolic n"),
        lambda rng: numeric_sides(lhs, rhs, rng, low=-30, high=30), simplifier="index notation, symbolic n",
        scope="all n >= 1", assumptions=("z real", "c real")))
    m = sp.Symbol("m", real=True)
    z3 = scores(3)
    lhs3, rhs3 = stable_softmax(z3), softmax(z3)
    out.append(Identity(
        "softmax-max-subtracted", "seed 000 L704-706",
        "exp(z_i - m) / sum_j exp(z_j - m) = softmax(z)_i for m = max_j z_j (the shift c = -m), every n",
        softmax_entry(i, shift=-m), softmax_entry(i), "simplify",
        index_proof(lambda: softmax_entry(i, shift=-m) - softmax_entry(i), "the shift invariance at c = -m"),
        lambda rng: numeric_sides(lhs3, rhs3, rng, low=-30, high=30), simplifier="index notation, symbolic n",
        scope="all n >= 1", assumptions=("z real", "m = max_j z_j (any real m)"),
        symbols_note="Numeric evidence: the literal max-subtracted form with Max at n = 3."))
    total = sp.Add(*softmax(z4))
    out.append(Identity(
        "softmax-sums-to-one", "seed 000 L700 (every row of `A` sums to 1)", "sum_i softmax(z)_i = 1, every n",
        sp.Sum(a[i], (i, 0, n - 1)), sp.Integer(1), "simplify",
        index_proof(lambda: sp.Sum(softmax_entry(i), (i, 0, n - 1)) - 1, "sum_i exp(z_i) / sum_k exp(z_k)"),
        lambda rng: numeric_sides(total, sp.Integer(1), rng, low=-5, high=5), simplifier="index notation, symbolic n",
        scope="all n >= 1", assumptions=("z real",)))
    return out
