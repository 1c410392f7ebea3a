r"""The rule table: every matrix primitive's pullback and forward (JVP) rule, each proved at symbolic size.

One table (:data:`RULES`), one walker (:func:`pullback`, :func:`jvp`), an
unknown primitive is a clear error (the style of tinygrad's ``gradient.py``).
:class:`~derive.program.Program` reaches every matrix rule through
:func:`pullback`, and the recurrent cells' step Jacobians (``J_t``, the GRU and
LSTM carry splits) come from :func:`jvp`, read off as a matrix by
:func:`jacobian`, so every derivative is a composition of the rules below.

========================  ==============================================  ===========================================
primitive                 pullback (G = dL/d output)                      forward (tangent of the output)
========================  ==============================================  ===========================================
``A B`` (matmul)          ``dA = G B^T``, ``dB = A^T G``                  ``Ȧ B + A Ḃ``
``c X`` (scaling)         ``dX = c G`` (c any scalar, e.g. ``1/sqrt(d_k)``)  ``c Ẋ``
``X^T`` (transpose)       ``dX = G^T``                                    ``Ẋ^T``
``X + Y`` (sum)           ``dX = G``, ``dY = G``                           ``Ẋ + Ẏ``
``X o Y`` (Hadamard)      ``dX = G o Y``                                  ``Ẋ o Y + X o Ẏ``
``f(X)`` (elementwise)    ``dX = G o f'(X)``                              ``f'(X) o Ẋ``
``diag(v)``               ``dv = diagonal(G)``                            ``diag(v̇)``
``softmax(S)`` (rows)     ``dS = A o (G - rowsum(G o A))``                ``A o (Ṡ - rowsum(Ṡ o A))``
``S + M`` (mask)          ``dS = G`` (M is data: 0 or -oo)                ``Ṡ``
``rowsum(X)``             ``dX = rowsum(G)``                              ``rowsum(Ẋ)``
``mean(X)`` (rows)        ``dX = mean(G)``                                ``mean(Ẋ)``
``std(X)`` (rows, eps)    ``dX = mean(G) o x̂``                            ``mean(Ẋ o x̂)``
``normalize(X)`` = x̂      ``dX = (G - mean(G) - x̂ o mean(G o x̂)) / σ``    the same form in Ẋ (the Jacobian is symmetric)
``rms(X)`` = r (eps)      ``dX = mean(G) o x̂`` (x̂ = X / r)                ``mean(Ẋ o x̂)``
``rmsnormalize(X)`` = x̂   ``dX = (G - x̂ o mean(G o x̂)) / r``             the same form in Ẋ (the Jacobian is symmetric)
``[X | Y]`` (concat)      ``dX = G[:, :a]``, ``dY = G[:, a:]``            ``[Ẋ | Ẏ]``
========================  ==============================================  ===========================================

``rowsum``, ``mean``, ``std`` and ``rms`` are broadcast over the row (the same value
in every column), as ``keepdims=True`` would give, so ``G - rowsum(G o A)``
is the text's ``dA - rowsum(dA o A)``.

Each :class:`Rule` carries its proof at **symbolic size** (:meth:`Rule.prove`):
the rule's own matrix output (the code that runs in every derivation) is
translated into index notation (``IndexedBase`` entries, ``KroneckerDelta``,
``Sum`` with symbolic bounds such as ``(k, 0, n - 1)``) and compared with the
derivative of ``L = sum_ij G_ij F_ij`` (pullback) or of ``F(X + t Ẋ)`` at
``t = 0`` (forward) taken by SymPy in that notation.  The residual is reduced
exactly by :func:`index_zero` (sums over a Kronecker delta evaluated, factors
free of the summation index pulled out, dummy indices named canonically,
radicals named, the polynomial remainder taken).  The proofs hold for every
size because no size is ever substituted.

>>> import sympy as sp
>>> from seqgrad.derive.program_text import sstr
>>> T, n = sp.symbols("T n", integer=True, positive=True)
>>> S, G = sp.MatrixSymbol("S", T, n), sp.MatrixSymbol("G", T, n)
>>> A = sp.MatrixSymbol("A", T, n)
>>> [(leaf, sstr(dS)) for leaf, dS in pullback(RowSoftmax(S), G, output=A)]
[(S, 'A ∘ (G - rowsum(G ∘ A))')]
>>> RULES["softmax"].prove().holds
True
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Mapping

import sympy as sp
from sympy.matrices.expressions.matexpr import MatrixElement, MatrixExpr

from seqgrad.errors import SeqgradTypeError, SeqgradValueError

from . import norm_rows
from .proof import Proof
from .safe_parse import as_sympy

__all__ = [
    "Rule", "RULES", "rule_for", "pullback", "jvp", "jacobian", "Diag", "RowSoftmax", "RowSum", "RowMean", "RowStd", "Normalize",
    "RowRMS", "RMSNormalize", "Masked", "HConcat", "ColumnBlock", "index_form", "directional", "index_zero", "index_proof", "expand_indexed", "prove_all",
    "proved", "EPS", "AsScalar", "rectangular_order",
]

EPS = sp.Symbol("epsilon", positive=True)


# --------------------------------------------------------------------------------------------- nodes

def _latex_call(printer, name: str, *args) -> str:
    return r"\operatorname{%s}\left(%s\right)" % (name, ", ".join(printer._print(a) for a in args))


def _str_call(printer, name: str, *args) -> str:
    return "%s(%s)" % (name, ", ".join(printer._print(a) for a in args))


#: The summation index of every row statistic.  One index for all of them: a nested row sum binds its own
#: (an inner Sum shadows the outer index), and equal row statistics are then equal expressions, which SymPy
#: builds once and whose assumptions it answers once (a fresh index per sum made every rebuild start over).
_ROW_INDEX = sp.Dummy("k", integer=True)


class _RowMap(MatrixExpr):
    """A map applied to every row of its argument, result of the same shape (broadcast over the row)."""

    _name = ""
    _tex = ""

    def __new__(cls, arg, *rest):
        if not getattr(arg, "is_Matrix", False):
            raise SeqgradTypeError("arg", arg, "a matrix expression")
        return MatrixExpr.__new__(cls, arg, *rest)

    @property
    def arg(self):
        return self.args[0]

    @property
    def shape(self):
        return self.arg.shape

    def _row_sum(self, term: Callable, n=None):
        """``sum_k term(k)`` over the row: a ``Sum`` with symbolic bounds at a symbolic width (index notation,
        the proofs), the explicit sum of the terms at a concrete width (an explicit matrix: no ``Sum`` to
        evaluate afterwards, which costs SymPy far more than the terms)."""
        n = self.shape[1] if n is None else n
        n = sp.Integer(n) if isinstance(n, int) else n
        if n.is_Integer:
            return sp.Add(*[term(sp.Integer(k)) for k in range(int(n))])
        return sp.Sum(term(_ROW_INDEX), (_ROW_INDEX, 0, n - 1))

    def _latex(self, printer):
        return _latex_call(printer, self._tex or self._name, self.arg)

    def _sympystr(self, printer):
        return _str_call(printer, self._name, self.arg)

    def doit(self, **hints):
        arg = self.arg.doit(**hints) if hints.get("deep", True) else self.arg
        if isinstance(arg, sp.MatrixBase):
            return sp.Matrix(*arg.shape, lambda i, j: self.func(arg, *self.args[1:])._entry(i, j))
        return self.func(arg, *self.args[1:])


class RowSoftmax(_RowMap):
    """``softmax(S)`` over every row: ``A_ij = exp(S_ij) / sum_k exp(S_ik)``."""

    _name = "softmax"

    def _entry(self, i, j, **kwargs):
        return sp.exp(self.arg[i, j]) / self._row_sum(lambda k: sp.exp(self.arg[i, k]))


class RowSum(_RowMap):
    """``rowsum(X)``: every entry of row i is ``sum_k X_ik`` (keepdims, broadcast over the row)."""

    _name = "rowsum"

    def _entry(self, i, j, **kwargs):
        return self._row_sum(lambda k: self.arg[i, k])


class RowMean(_RowMap):
    """``mean(X)``: every entry of row i is ``(1/n) sum_k X_ik`` (the LayerNorm mean, broadcast)."""

    _name = "mean"

    def _entry(self, i, j, **kwargs):
        return self._row_sum(lambda k: self.arg[i, k]) / self.shape[1]


def _centred(X):
    """``X - mean(X)``: every row less its mean."""
    return sp.MatAdd(X, sp.MatMul(-1, RowMean(X)))


def _root_of_mean_square(C, eps):
    """``sqrt(mean(C o C) + eps)`` entrywise: the scale of a row (std for a centred C, rms for X itself)."""
    from .elementwise import Elementwise

    u = sp.Dummy("u")
    return Elementwise(sp.Lambda(u, sp.sqrt(u + eps)), RowMean(sp.HadamardProduct(C, C)))


def _divided(C, scale):
    """``C o (1 / scale)`` entrywise."""
    from .elementwise import Elementwise

    u = sp.Dummy("u")
    return sp.HadamardProduct(C, Elementwise(sp.Lambda(u, 1 / u), scale))


class _EpsRowMap(_RowMap):
    """A row map with an ``eps`` inside its square root (the second argument; default the symbol epsilon).  Each one
    is a composite: ``definition()`` writes it over the table's primitives (mean, Hadamard, an elementwise root
    and reciprocal), which is what numeric code evaluates (``crosscheck.lambdify``, the evaluator of
    ``seqgrad diff``), so none has numeric code of its own; its rule is proved on ``_entry``, and the two are
    proved equal at symbolic size (``tests/test_norms.py``)."""

    def __new__(cls, arg, eps=EPS):
        return _RowMap.__new__(cls, arg, as_sympy(eps, "eps"))

    @property
    def eps(self):
        return self.args[1]


class RowStd(_EpsRowMap):
    """``std(X)`` = σ: every entry of row i is ``sqrt(mean_k (X_ik - mu_i)^2 + eps)`` (population variance)."""

    _name = "std"

    def definition(self):
        """``sqrt(mean(C o C) + eps)`` entrywise, ``C = X - mean(X)``, over the table's primitives."""
        return _root_of_mean_square(_centred(self.arg), self.eps)

    def _entry(self, i, j, **kwargs):
        return norm_rows.std(lambda k: self.arg[i, k], self.shape[1], self._row_sum, self.eps)

    def _latex(self, printer):
        # the standard deviation's letter as a symbol, so that a notation can rename it (the notes write s, keeping
        # sigma for the sigmoid)
        return r"%s\left(%s\right)" % (printer._print(sp.Symbol(r"sigma_{\epsilon}")), printer._print(self.arg))


class Normalize(_EpsRowMap):
    """``normalize(X)`` = x̂: ``(X_ij - mu_i) / σ_i`` (LayerNorm before its gain and bias, eps inside the root)."""

    _name = "normalize"

    def definition(self):
        """``C o (1 / std(X))``, ``C = X - mean(X)``, over the table's primitives."""
        return _divided(_centred(self.arg), RowStd(self.arg, self.eps).definition())

    def _entry(self, i, j, **kwargs):
        return norm_rows.normalized(lambda k: self.arg[i, k], j, self.shape[1], self._row_sum, self.eps)


class RowRMS(_EpsRowMap):
    """``rms(X)`` = r: every entry of row i is ``sqrt(mean_k X_ik^2 + eps)`` (RMSNorm's scale, Zhang & Sennrich
    2019: no mean subtracted)."""

    _name = "rms"

    def definition(self):
        """``sqrt(mean(X o X) + eps)`` entrywise, over the table's primitives."""
        return _root_of_mean_square(self.arg, self.eps)

    def _entry(self, i, j, **kwargs):
        return norm_rows.rms(lambda k: self.arg[i, k], self.shape[1], self._row_sum, self.eps)


class RMSNormalize(_EpsRowMap):
    """``rmsnormalize(X)`` = x̂: ``X_ij / r_i``, r = rms(X) (RMSNorm before its gain; no mean, no shift)."""

    _name = "rmsnormalize"

    def definition(self):
        """``X o (1 / rms(X))``, over the table's primitives."""
        return _divided(self.arg, RowRMS(self.arg, self.eps).definition())

    def _entry(self, i, j, **kwargs):
        return norm_rows.rms_normalized(lambda k: self.arg[i, k], j, self.shape[1], self._row_sum, self.eps)


#: a scale statistic's normalisation and a normalisation's scale (the LayerNorm and RMSNorm rules read them), and
#: whether the normalisation subtracts the row mean
RowStd.normalized, RowRMS.normalized = Normalize, RMSNormalize
Normalize.scale, Normalize.centred = RowStd, True
RMSNormalize.scale, RMSNormalize.centred = RowRMS, False


class Masked(MatrixExpr):
    """``S + M`` for an additive mask M of 0 (visible) and -oo (masked): M is data, only S is differentiated."""

    def __new__(cls, S, M):
        if not getattr(S, "is_Matrix", False) or not getattr(M, "is_Matrix", False):
            raise SeqgradTypeError("S, M", (S, M), "two matrix expressions of one shape")
        return MatrixExpr.__new__(cls, S, M)

    @property
    def shape(self):
        return self.args[0].shape

    def _entry(self, i, j, **kwargs):
        return self.args[0][i, j] + self.args[1][i, j]

    def _latex(self, printer):
        return "%s + %s" % (printer._print(self.args[0]), printer._print(self.args[1]))

    def _sympystr(self, printer):
        return "%s + %s" % (printer._print(self.args[0]), printer._print(self.args[1]))


class Diag(sp.DiagMatrix):
    """``diag(v)`` of a row (or column) vector, printed as the text prints it."""

    def _latex(self, printer):
        return r"\operatorname{diag}\left(%s\right)" % printer._print(self.args[0])

    def _sympystr(self, printer):
        from .elementwise import Elementwise

        inner = printer._print(self.args[0])
        if inner.startswith("(") and inner.endswith(")") and isinstance(self.args[0], Elementwise):
            inner = inner[1:-1]  # diag(1 - h_2**2), not diag((1 - h_2**2))
        return "diag(%s)" % inner


class HConcat(MatrixExpr):
    """``[X | Y | ...]``: the blocks side by side (the concatenation of attention heads)."""

    def __new__(cls, *blocks):
        if not blocks or not all(getattr(b, "is_Matrix", False) for b in blocks):
            raise SeqgradTypeError("blocks", blocks, "one or more matrix expressions with the same number of rows")
        return MatrixExpr.__new__(cls, *blocks)

    @property
    def shape(self):
        return self.args[0].shape[0], sp.Add(*[b.shape[1] for b in self.args])

    def offsets(self) -> list:
        out, start = [], sp.Integer(0)
        for b in self.args:
            out.append(start)
            start = start + b.shape[1]
        return out

    def _entry(self, i, j, **kwargs):
        offsets = self.offsets()
        if getattr(j, "is_Integer", False) and all(o.is_Integer for o in offsets):  # an explicit column: its block's
            k = max(n for n, o in enumerate(offsets) if o <= j)                         # (a Piecewise would index them all)
            return self.args[k][i, j - offsets[k]]
        pieces = []
        for b, start in zip(self.args, offsets):
            pieces.append((b[i, j - start], (j >= start) & (j < start + b.shape[1])) if start != 0 or len(self.args) > 1
                          else (b[i, j], True))
        return sp.Piecewise(*pieces)

    def _latex(self, printer):
        return r"\left[%s\right]" % r"\;\middle|\;".join(printer._print(b) for b in self.args)

    def _sympystr(self, printer):
        return "[%s]" % " | ".join(printer._print(b) for b in self.args)


class ColumnBlock(MatrixExpr):
    """``G[:, a:a+w]``: the columns a .. a+w-1 (the pullback of a concatenation to one block).

    Printed in LaTeX as math, not as a slice: ``(G)_{\\bullet,\\,a \\ldots a+w-1}``, every row (the bullet) and the
    columns a to a + w - 1, counted from 0 as every index of entries is (the first w columns: ``0 \\ldots w - 1``);
    a text defines it where it first uses one (the notes' appendix:
    :func:`crosscheck.latex_parts.column_block_definition`).

    >>> from seqgrad.derive.latex_settings import Notation
    >>> a, b = sp.symbols("a b", integer=True, positive=True)
    >>> W = sp.MatrixSymbol("W_O", 3, a + b)
    >>> Notation().latex(ColumnBlock(W, 0, a)), Notation().latex(ColumnBlock(W, a, b))
    ('(\\\\mathbf{W}_{O})_{\\\\bullet,\\\\,0 \\\\ldots a - 1}', '(\\\\mathbf{W}_{O})_{\\\\bullet,\\\\,a \\\\ldots a + b - 1}')
    """

    def __new__(cls, arg, start, width):
        return MatrixExpr.__new__(cls, arg, as_sympy(start, "start"), as_sympy(width, "width"))

    @property
    def shape(self):
        return self.args[0].shape[0], self.args[2]

    def _entry(self, i, j, **kwargs):
        return self.args[0][i, j + self.args[1]]

    def _latex(self, printer):
        from .sequence import index_order

        a, w = self.args[1], self.args[2]
        # the last column, d_v h - 1, not d_v (h - 1) + d_v - 1
        return r"\left(%s\right)_{\bullet,\,%s \ldots %s}" % (printer._print(self.args[0]), printer._print(index_order(a)),
                                                              printer._print(index_order(sp.factor(a + w) - 1)))

    def _sympystr(self, printer):
        a, w = self.args[1], self.args[2]
        return "%s[:, %s:%s]" % (printer._print(self.args[0]), printer._print(a), printer._print(a + w))


# --------------------------------------------------------------------------------------------- the table

@dataclass(frozen=True)
class Rule:
    """One primitive: its pullback ``(expr, G, output) -> [(child, contribution)]``, its forward rule
    ``(expr, tangents) -> tangent of expr`` (``tangents`` maps children to their tangents; a missing child is
    constant), the example its proof runs on (symbolic sizes), and the statement in words."""

    name: str
    nodes: tuple
    pull: Callable
    forward: Callable
    example: Callable[[], tuple]
    statement: str
    scope: str = "all sizes >= 1 (symbolic)"

    def prove(self) -> Proof:
        """The rule at symbolic size in index notation: pullback and forward rule against SymPy's derivative."""
        start = time.perf_counter()
        expr, G, leaves = self.example()
        residuals = _rule_residuals(self, expr, G, leaves)
        reduced = [index_zero(r) for r in residuals]
        holds = all(r == 0 for r in reduced)
        proof = Proof(holds, "index notation at symbolic size (KroneckerDelta sums, canonical dummies, exact cancel)",
                      sp.Integer(0) if holds else next(r for r in reduced if r != 0), self.statement)
        proof.seconds = time.perf_counter() - start
        return proof


def _child_args(expr):
    return [a for a in expr.args if getattr(a, "is_Matrix", False)]


def _others(args, k):
    rest = [a for j, a in enumerate(args) if j != k]
    return rest[0] if len(rest) == 1 else sp.HadamardProduct(*rest)


def _elementwise_slope(expr):
    from .elementwise import Elementwise

    from .operations import diff

    f = expr.function
    u = f.variables[0]
    return Elementwise(sp.Lambda(u, diff(f.expr, u)), expr.expr)  # the registry's derivative at a kink (relu'(0) = 0)


def _matmul_pull(expr, G, out):
    coeff, mats = expr.as_coeff_matrices()
    pairs = []
    for i, factor in enumerate(mats):
        parts = []
        if i > 0:
            parts.append(sp.MatMul(*mats[:i]).T)
        parts.append(G)
        if i < len(mats) - 1:
            parts.append(sp.MatMul(*mats[i + 1:]).T)
        local = sp.MatMul(*parts).doit() if len(parts) > 1 else G
        pairs.append((factor, local if coeff == 1 else sp.MatMul(coeff, local).doit()))
    return pairs


def _matmul_forward(expr, tangents):
    coeff, mats = expr.as_coeff_matrices()
    terms = []
    for i, factor in enumerate(mats):
        if factor in tangents:
            terms.append(sp.MatMul(*(list(mats[:i]) + [tangents[factor]] + list(mats[i + 1:]))))
    total = _add(terms)
    return None if total is None else (total if coeff == 1 else sp.MatMul(coeff, total))


def _add(terms):
    terms = [t for t in terms if t is not None]
    if not terms:
        return None
    return terms[0] if len(terms) == 1 else sp.MatAdd(*terms)


def _hadamard_pull(expr, G, out):
    return [(a, sp.HadamardProduct(G, _others(expr.args, k))) for k, a in enumerate(expr.args)]


def _hadamard_forward(expr, tangents):
    return _add([sp.HadamardProduct(tangents[a], _others(expr.args, k)) for k, a in enumerate(expr.args) if a in tangents])


def _softmax_pull(expr, G, out):
    A = expr if out is None else out
    return [(expr.arg, sp.HadamardProduct(A, _minus(G, RowSum(sp.HadamardProduct(G, A, evaluate=False))), evaluate=False))]


class Written(sp.MatAdd):
    """A matrix sum printed in the order the rule wrote it (``G - rowsum(G o A)``, not SymPy's sorted order);
    :func:`derive.term_order.textbook_order` keeps it (``written_order``)."""

    written_order = True

    def _sympystr(self, printer):
        """``first - second - ...``: a negated term prints as ``- term`` (no bracket around a product such as
        ``x̂ ∘ mean(G ∘ x̂)``; a sum inside keeps its brackets)."""
        from sympy.printing.precedence import PRECEDENCE

        out = []
        for k, term in enumerate(self.args):
            negative = isinstance(term, sp.MatMul) and term.args[0] == -1
            body = (term.args[1] if len(term.args) == 2 else sp.MatMul(*term.args[1:], evaluate=False)) if negative else term
            text = printer.parenthesize(body, PRECEDENCE["Add"], strict=False)
            out.append(("-" if negative else "") + text if k == 0 else (" - " if negative else " + ") + text)
        return "".join(out)

    def _latex(self, printer):
        return printer._print_Add(self, order="none")


class WrittenSum(sp.Add):
    """A scalar sum printed in the order it was written (``f_1 + o_0 (1 - tanh^2(c_0)) (...)``: the carry first, the
    path through the gates after it); :func:`derive.term_order.textbook_order` keeps it (``written_order``).

    >>> f, g = sp.symbols("f g")
    >>> from seqgrad.derive.latex_settings import Notation
    >>> Notation().latex(WrittenSum(g, f, evaluate=False))
    'g + f'
    """

    written_order = True

    def _latex(self, printer):
        return printer._print_Add(self, order="none")


def _minus(first, *rest):
    """``first - rest...`` in the order written (the text's order, not SymPy's canonical one)."""
    return Written(first, *[sp.MatMul(-1, r) for r in rest], evaluate=False)


def _softmax_forward(expr, tangents):
    if expr.arg not in tangents:
        return None
    Sdot = tangents[expr.arg]
    return sp.HadamardProduct(expr, _minus(Sdot, RowSum(sp.HadamardProduct(Sdot, expr, evaluate=False))), evaluate=False)


def _normalized_pull(expr, G, out):
    """x̂ = normalize(X) or rmsnormalize(X), s its scale (std, rms): ``dX = (1/s) ∘ (G [- mean(G)] - x̂ ∘ mean(G ∘ x̂))``,
    the mean term where the map subtracts the row mean (LayerNorm), not for RMSNorm."""
    xhat = expr if out is None else out
    from .elementwise import Elementwise

    u = sp.Dummy("u")
    inv = Elementwise(sp.Lambda(u, 1 / u), expr.scale(expr.arg, expr.eps))
    terms = [G] + ([RowMean(G)] if expr.centred else [])
    centred = _minus(*terms, sp.HadamardProduct(xhat, RowMean(sp.HadamardProduct(G, xhat, evaluate=False)), evaluate=False))
    return [(expr.arg, sp.HadamardProduct(inv, centred, evaluate=False))]


def _normalized_forward(expr, tangents):
    """The same form in Ẋ: the Jacobian of a normalisation is symmetric."""
    if expr.arg not in tangents:
        return None
    return _normalized_pull(expr, tangents[expr.arg], None)[0][1]


def _scale_pull(expr, G, out):
    """s = std(X) or rms(X) (broadcast over the row): ``dX = mean(G) ∘ x̂``, x̂ the map's normalisation."""
    return [(expr.arg, sp.HadamardProduct(RowMean(G), expr.normalized(expr.arg, expr.eps)))]


def _scale_forward(expr, tangents):
    if expr.arg not in tangents:
        return None
    return RowMean(sp.HadamardProduct(tangents[expr.arg], expr.normalized(expr.arg, expr.eps)))


def _concat_pull(expr, G, out):
    return [(b, ColumnBlock(G, start, b.shape[1])) for b, start in zip(expr.args, expr.offsets())]


def _concat_forward(expr, tangents):
    if not any(b in tangents for b in expr.args):
        return None
    return HConcat(*[tangents.get(b, sp.ZeroMatrix(*b.shape)) for b in expr.args])


def _diag_pull(expr, G, out):
    v = expr.args[0]
    d = sp.DiagonalOf(G)
    return [(v, d.T if v.shape[0] == 1 else d)]


def _sizes(*names):
    return sp.symbols(names, integer=True, positive=True)


def _ex_matmul():
    T, n, m = _sizes("T", "n", "m")
    A, B, G = sp.MatrixSymbol("A", T, n), sp.MatrixSymbol("B", n, m), sp.MatrixSymbol("G", T, m)
    return A * B, G, [A, B]


def _ex_scale():
    T, n = _sizes("T", "n")
    c = sp.Symbol("c", positive=True)
    X, G = sp.MatrixSymbol("X", T, n), sp.MatrixSymbol("G", T, n)
    return sp.MatMul(c, X), G, [X]


def _ex_transpose():
    T, n = _sizes("T", "n")
    X, G = sp.MatrixSymbol("X", T, n), sp.MatrixSymbol("G", n, T)
    return sp.Transpose(X), G, [X]


def _ex_add():
    T, n = _sizes("T", "n")
    X, Y, G = sp.MatrixSymbol("X", T, n), sp.MatrixSymbol("Y", T, n), sp.MatrixSymbol("G", T, n)
    return sp.MatAdd(X, Y), G, [X, Y]


def _ex_hadamard():
    T, n = _sizes("T", "n")
    X, Y, G = sp.MatrixSymbol("X", T, n), sp.MatrixSymbol("Y", T, n), sp.MatrixSymbol("G", T, n)
    return sp.HadamardProduct(X, Y), G, [X, Y]


def _ex_elementwise():
    from .elementwise import Elementwise

    T, n = _sizes("T", "n")
    u = sp.Symbol("u")
    X, G = sp.MatrixSymbol("X", T, n), sp.MatrixSymbol("G", T, n)
    return Elementwise(sp.Lambda(u, sp.Function("f")(u)), X), G, [X]


def _ex_diag():
    n, = _sizes("n")
    v, G = sp.MatrixSymbol("v", 1, n), sp.MatrixSymbol("G", n, n)
    return Diag(v), G, [v]


def _ex_softmax():
    T, n = _sizes("T", "n")
    S, G = sp.MatrixSymbol("S", T, n), sp.MatrixSymbol("G", T, n)
    return RowSoftmax(S), G, [S]


def _ex_masked_softmax():
    T, n = _sizes("T", "n")
    S, M, G = sp.MatrixSymbol("S", T, n), sp.MatrixSymbol("M", T, n), sp.MatrixSymbol("G", T, n)
    return RowSoftmax(Masked(S, M)), G, [S]  # the mask inside the softmax, as attention uses it


def _ex_rowsum():
    T, n = _sizes("T", "n")
    X, G = sp.MatrixSymbol("X", T, n), sp.MatrixSymbol("G", T, n)
    return RowSum(X), G, [X]


def _row_example(node, *args):
    """The example a row map's rule is proved on: ``node(X, *args)`` for X of symbolic size T x d, G of its shape."""

    def example():
        T, d = _sizes("T", "d")
        X, G = sp.MatrixSymbol("X", T, d), sp.MatrixSymbol("G", T, d)
        return node(X, *args), G, [X]

    return example


def _ex_concat():
    T, a, b = _sizes("T", "a", "b")
    X, Y, G = sp.MatrixSymbol("X", T, a), sp.MatrixSymbol("Y", T, b), sp.MatrixSymbol("G", T, a + b)
    return HConcat(X, Y), G, [X, Y]


_TABLE = [
    Rule("matmul", (sp.MatMul,), _matmul_pull, _matmul_forward, _ex_matmul,
         "d(A B): dA = G B^T, dB = A^T G; forward Ȧ B + A Ḃ", "all T, n, m >= 1"),
    Rule("scaling", (), _matmul_pull, _matmul_forward, _ex_scale,
         "d(c X): dX = c G for any scalar c (e.g. 1/sqrt(d_k)); forward c Ẋ", "all T, n >= 1, any scalar c"),
    Rule("transpose", (sp.Transpose,), lambda e, G, out: [(e.arg, G.T)],
         lambda e, t: t[e.arg].T if e.arg in t else None, _ex_transpose, "d(X^T): dX = G^T", "all T, n >= 1"),
    Rule("sum", (sp.MatAdd,), lambda e, G, out: [(a, G) for a in e.args],
         lambda e, t: _add([t.get(a) for a in e.args]), _ex_add, "d(X + Y): dX = dY = G", "all T, n >= 1"),
    Rule("hadamard", (sp.HadamardProduct,), _hadamard_pull, _hadamard_forward, _ex_hadamard,
         "d(X o Y): dX = G o Y, dY = G o X; forward Ẋ o Y + X o Ẏ", "all T, n >= 1"),
    Rule("elementwise", (), lambda e, G, out: [(e.expr, sp.HadamardProduct(G, _elementwise_slope(e)))],
         lambda e, t: sp.HadamardProduct(_elementwise_slope(e), t[e.expr]) if e.expr in t else None, _ex_elementwise,
         "d f(X) entrywise: dX = G o f'(X) for any differentiable f", "all T, n >= 1, every differentiable f"),
    Rule("diag", (sp.DiagMatrix,), _diag_pull, lambda e, t: Diag(t[e.args[0]]) if e.args[0] in t else None, _ex_diag,
         "d diag(v): dv = diagonal(G); forward diag(v̇)", "all n >= 1"),
    Rule("softmax", (RowSoftmax,), _softmax_pull, _softmax_forward, _ex_softmax,
         "row softmax A = softmax(S): dA_i/dS_j = A_i (delta_ij - A_j), so dS = A o (G - rowsum(G o A))", "all T, n >= 1"),
    Rule("mask", (Masked,), lambda e, G, out: [(e.args[0], G)],
         lambda e, t: t.get(e.args[0]), _ex_masked_softmax,
         "S + M with the mask M as data: dS = G; through softmax(S + M): dS = A o (G - rowsum(G o A)), "
         "A = 0 where M = -oo (proved for every real M, exp(M) -> 0 is the limit)", "all T, n >= 1"),
    Rule("rowsum", (RowSum,), lambda e, G, out: [(e.arg, RowSum(G))],
         lambda e, t: RowSum(t[e.arg]) if e.arg in t else None, _ex_rowsum, "d rowsum(X): dX = rowsum(G)", "all T, n >= 1"),
    Rule("mean", (RowMean,), lambda e, G, out: [(e.arg, RowMean(G))],
         lambda e, t: RowMean(t[e.arg]) if e.arg in t else None, _row_example(RowMean), "d mean(X): dX = mean(G)", "all T, d >= 1"),
    Rule("std", (RowStd,), _scale_pull, _scale_forward, _row_example(RowStd, EPS),
         "d σ(X), σ = sqrt(var + eps): dX = mean(G) o x̂", "all T, d >= 1, eps > 0"),
    Rule("layernorm", (Normalize,), _normalized_pull, _normalized_forward, _row_example(Normalize, EPS),
         "x̂ = (X - mu)/σ: dx̂_i/dx_j = (delta_ij - 1/d - x̂_i x̂_j / d)/σ, so dX = (G - mean(G) - x̂ o mean(G o x̂))/σ",
         "all T, d >= 1, eps > 0"),
    Rule("rms", (RowRMS,), _scale_pull, _scale_forward, _row_example(RowRMS, EPS),
         "d r(X), r = sqrt(mean(X o X) + eps): dX = mean(G) o x̂, x̂ = X / r", "all T, d >= 1, eps > 0"),
    Rule("rmsnorm", (RMSNormalize,), _normalized_pull, _normalized_forward, _row_example(RMSNormalize, EPS),
         "x̂ = X / r: dx̂_i/dx_j = (delta_ij - x̂_i x̂_j / d)/r, so dX = (G - x̂ o mean(G o x̂))/r", "all T, d >= 1, eps > 0"),
    Rule("concat", (HConcat,), _concat_pull, _concat_forward, _ex_concat,
         "[X | Y]: dX = G[:, :a], dY = G[:, a:a+b]", "all T, a, b >= 1"),
]


# --------------------------------------------------------------------------------------------- scalar-valued primitives
# trace, det, the inverse, a 1 x 1 product read as a scalar, the diagonal of a square matrix (derive.matcalc).
# A scalar-valued node's upstream sensitivity is a scalar g = dL/d value.

class AsScalar(sp.Expr):
    """A 1 x 1 matrix expression read as the scalar it holds: ``xᵀ A x``, ``xᵀ y`` (printed as the product)."""

    is_commutative = True
    #: between a sum and a product: bracketed as a factor (``2 (1ᵀ X 1) 1 1ᵀ``), not as a term or alone
    precedence = 45

    def __new__(cls, arg):
        if not getattr(arg, "is_Matrix", False) or tuple(arg.shape) != (1, 1):
            raise SeqgradTypeError("arg", arg, "a 1 x 1 matrix expression")
        return sp.Expr.__new__(cls, arg)

    @property
    def arg(self):
        return self.args[0]

    def _eval_is_real(self):
        return None

    def doit(self, **hints):
        arg = self.arg.doit(**hints) if hints.get("deep", True) else self.arg
        return arg[0, 0] if isinstance(arg, sp.MatrixBase) else self.func(arg)

    def _latex(self, printer, exp=None):
        body = printer._print(self.arg)
        return body if exp is None else r"\left(%s\right)^{%s}" % (body, exp)

    def _sympystr(self, printer):
        return printer._print(self.arg)


def _one_by_one(g):
    """The scalar sensitivity g as the 1 x 1 matrix g I."""
    return sp.Identity(1) if g == 1 else sp.MatMul(g, sp.Identity(1))


def _scaled_identity(g, n):
    return sp.Identity(n) if g == 1 else sp.MatMul(g, sp.Identity(n))


def _det_pull(expr, g, out):
    X = expr.arg
    return [(X, sp.MatMul(g, expr, sp.Inverse(X).T) if g != 1 else sp.MatMul(expr, sp.Inverse(X).T))]


def _inverse_pull(expr, G, out):
    Xinv_T = sp.Inverse(expr.arg).T
    return [(expr.arg, sp.MatMul(-1, Xinv_T, G, Xinv_T))]


def _explicit_rule_proof(rule: "Rule", sizes=(1, 2, 3)) -> Proof:
    """A rule at explicit sizes with symbolic entries (det and inverse have no index form at symbolic size):
    the pullback against SymPy's derivative of ``<G, F(X)>``, exactly, for every entry, at each size."""
    start = time.perf_counter()
    bad = sp.Integer(0)
    for n in sizes:
        expr, G, (X,) = rule.example(n)
        E = sp.Matrix(n, n, lambda i, j: sp.Symbol(f"x_{i}{j}"))
        scalar = not getattr(expr, "is_Matrix", False)
        Gm = sp.Symbol("g") if scalar else sp.Matrix(n, n, lambda i, j: sp.Symbol(f"g_{i}{j}"))
        env = {X: E}
        value = expr.xreplace(env).doit()
        loss = Gm * value if scalar else sum((Gm[i, j] * value[i, j] for i in range(n) for j in range(n)), sp.Integer(0))
        (leaf, claimed), = rule.pull(expr, G if not scalar else sp.Symbol("g"), None)
        claimed = claimed.xreplace({**env, **({} if scalar else {G: Gm})}).doit()
        claimed = sp.Matrix(claimed) if not isinstance(claimed, sp.MatrixBase) else claimed
        for i in range(n):
            for j in range(n):
                r = sp.cancel(sp.together(sp.diff(loss, E[i, j]) - claimed[i, j]))
                if r != 0:
                    bad = r
        if bad != 0:
            break
    proof = Proof(bad == 0, f"explicit symbolic entries at n = {', '.join(map(str, sizes))} (exact cancel)", bad, rule.statement)
    proof.seconds = time.perf_counter() - start
    return proof


def _adjoint_residual(rule: "Rule"):
    """``<G, Ḟ(Ẋ)> - <pullback(G), Ẋ>`` in index notation at symbolic size, with X⁻¹ a free matrix Y and det X a
    free scalar D: the pullback is the adjoint of the forward rule for every n."""
    n, = _sizes("n")
    X, Xdot = sp.MatrixSymbol("X", n, n), sp.MatrixSymbol("Xdot", n, n)
    expr = rule.nodes[0](X)
    Y, D = sp.MatrixSymbol("Y", n, n), sp.Symbol("D")
    opaque = lambda e: e.replace(lambda x: isinstance(x, sp.Inverse), lambda x: Y if x.arg == X else Y.T).xreplace({sp.Determinant(X): D})
    scalar = not expr.is_Matrix
    G = sp.Symbol("g") if scalar else sp.MatrixSymbol("G", n, n)
    tangent = opaque(rule.forward(expr, {X: Xdot}))
    (_, back), = rule.pull(expr, G, None)
    back = opaque(back.doit())
    i, j, p, q, k = sp.symbols("i j p q k", integer=True, nonnegative=True)
    if scalar:  # g D trace(Y Ẋ)
        coeff, mats = tangent.as_coeff_Mul()[0], tangent
        inner = tangent.atoms(sp.Trace).pop()
        left = g_pair = G * (tangent / inner) * sp.Sum(index_form(inner.arg, k, k), (k, 0, n - 1))
    else:
        left = sp.Sum(_indexed(G[i, j]) * index_form(tangent, i, j), (i, 0, n - 1), (j, 0, n - 1))
    right = sp.Sum(index_form(back, p, q) * sp.IndexedBase("Xdot")[p, q], (p, 0, n - 1), (q, 0, n - 1))
    return left - right


def _flat_sum(s):
    """A sum of products of sums as one sum over all the indices (the inner indices made fresh), or None when a
    sum sits elsewhere than as a factor (inside a root, a function) or has bounds that depend on an index."""
    function, limits = s.function, list(s.limits)
    while True:
        factors = sp.Mul.make_args(sp.expand(function)) if not isinstance(function, sp.Sum) else (function,)
        if len(sp.Add.make_args(sp.expand(function))) > 1:
            return None  # a sum of terms inside: expanded by the caller first
        inner = [f for f in factors if isinstance(f, sp.Sum)]
        if not inner:
            break
        rest = [f for f in factors if not isinstance(f, sp.Sum)]
        for f in inner:
            fresh = {c: sp.Dummy(str(c)) for c, _, _ in f.limits}
            rest.append(f.function.xreplace(fresh))
            limits = [(fresh[c], a, b) for c, a, b in f.limits] + limits
        function = sp.Mul(*rest)
    if function.has(sp.Sum):
        return None
    dummies = {c for c, _, _ in limits}
    if len(limits) > 6 or any(dummies & (a.free_symbols | b.free_symbols) for _, a, b in limits):
        return None
    return function, limits


def rectangular_order(expr):
    """Every sum of products of rectangular sums (bounds free of the indices) as one sum in its least index order
    (SymPy's sort key over the orders, indices renamed by position), so that equal sums written with their
    indices in two orders compare equal: ``sum_k sum_l A_kl B_lk`` and ``sum_l sum_k B_lk A_kl``."""
    import itertools

    def canon(s):
        flat = _flat_sum(s)
        if flat is None:
            return s
        function, limits = flat
        names = [sp.Symbol(f"_rect_{p}", integer=True) for p in range(len(limits))]
        best = None
        for perm in itertools.permutations(range(len(limits))):
            ordered = [limits[p] for p in perm]
            ren = {c: names[m] for m, (c, _, _) in enumerate(ordered)}
            cand = sp.Sum(function.xreplace(ren), *[(ren[c], a, b) for c, a, b in ordered])
            if best is None or sp.default_sort_key(cand) < sp.default_sort_key(best):
                best = cand
        return best

    expr = sp.expand(expr)
    return sp.expand(sp.Add(*[t.replace(lambda e: isinstance(e, sp.Sum), canon) if isinstance(t, sp.Sum) or t.has(sp.Sum) else t
                              for t in sp.Add.make_args(expr)]))


def _inverse_forward_residual():
    """d(X Y) with Y = X⁻¹ and Ẏ from the inverse's forward rule, by the (proved) matmul rule, X Y = I used:
    ``Ẋ Y + X Ẏ`` must vanish (the derivative of the constant I), at symbolic size."""
    n, = _sizes("n")
    X, Xdot = sp.MatrixSymbol("X", n, n), sp.MatrixSymbol("Xdot", n, n)
    Y = sp.Inverse(X)
    Ydot = RULES["inverse"].forward(Y, {X: Xdot})
    total = RULES["matmul"].forward(sp.MatMul(X, Y), {X: Xdot, Y: Ydot}).doit()
    return total.doit()


#: what Jacobi's formula at symbolic size rests on: two lemmas of the Laplace (cofactor) expansion, stated, not
#: derived here (they are the definition of the determinant's cofactors; any linear-algebra text proves them)
JACOBI_LEMMAS = ("Laplace: det X = sum_k X_pk C_pk for every row p, the cofactor C_pk free of row p of X",
                 "alien cofactors: sum_k X_jk C_pk = delta_jp det X (row j against the cofactors of row p: "
                 "the determinant of X with row p replaced by row j, 0 for j != p, two equal rows)")


def _jacobi_steps():
    """Jacobi's formula ``d det X / dX_pq = det(X) (X^-T)_pq`` at symbolic n, in index notation, from
    :data:`JACOBI_LEMMAS` and ``Y X = I`` for ``Y = X^-1``: each step an equality SymPy checks exactly
    (KroneckerDelta sums at symbolic bounds, sums compared in one nesting order).  Returns (claim, residual)
    pairs; the formula holds when every residual is 0.  The last step compares with the det rule's own
    pullback (``g = 1``, ``det X`` and ``X^-1`` opaque: ``D`` and ``Y``)."""
    n, = _sizes("n")
    p, q, j, k = sp.symbols("p q j k", integer=True, nonnegative=True)
    X, Y, C = sp.IndexedBase("X"), sp.IndexedBase("Y"), sp.IndexedBase("C")
    D = sp.Symbol("D")  # det X; C_pk a base of its own: the cofactors of row p do not depend on row p of X

    def row_sum(term, index):
        return sp.Sum(term, (index, 0, n - 1))

    steps = []
    # 1. Laplace along row p: d det X / dX_pq = sum_k delta_kq C_pk = C_pq (the cofactors of row p do not
    #    depend on row p, so their own derivative contributes nothing)
    laplace = row_sum(X[p, k] * C[p, k], k)
    grad = sp.diff(laplace, X[p, q]).doit()
    steps.append(("d det X / dX_pq = C_pq (Laplace along row p)", index_zero(grad - C[p, q])))
    # 2. C_pq = sum_k delta_qk C_pk = sum_k (sum_j Y_qj X_jk) C_pk  (Y X = I) = sum_j Y_qj (sum_k X_jk C_pk)
    through_inverse = row_sum(row_sum(Y[q, j] * X[j, k], j) * C[p, k], k)
    reordered = row_sum(Y[q, j] * row_sum(X[j, k] * C[p, k], k), j)
    steps.append(("sum_k (sum_j Y_qj X_jk) C_pk = sum_j Y_qj (sum_k X_jk C_pk) (the sums exchanged)",
                  rectangular_order(index_zero(through_inverse - reordered))))
    identity = row_sum(sp.KroneckerDelta(q, k) * C[p, k], k)
    steps.append(("sum_k delta_qk C_pk = C_pq (Y X = I in the first sum)", index_zero(identity - C[p, q])))
    # 3. the alien-cofactor lemma in the inner sum: sum_j Y_qj delta_jp det X = det(X) Y_qp
    alien = row_sum(Y[q, j] * sp.KroneckerDelta(j, p) * D, j)
    steps.append(("sum_j Y_qj delta_jp det X = det(X) Y_qp (alien cofactors)", index_zero(alien - D * Y[q, p])))
    # 4. det(X) Y_qp is entry (p, q) of the det rule's pullback det(X) X^-T
    Xm = sp.MatrixSymbol("X", n, n)
    (_, back), = RULES["det"].pull(sp.Determinant(Xm), 1, None)
    Ym = sp.MatrixSymbol("Y", n, n)
    back = back.replace(lambda e: isinstance(e, sp.Inverse), lambda e: Ym if e.arg == Xm else Ym.T)
    back = back.xreplace({sp.Determinant(Xm): D})
    steps.append(("det(X) Y_qp = (pullback of the det rule)_pq", index_zero(D * Y[q, p] - index_form(back.doit(), p, q))))
    return steps


def _jacobi_numeric(sizes=(1, 2, 16, 24), digits: int = 40):
    """Jacobi's formula at random sizes in mpmath (``digits`` digits): the central difference of det along a random
    direction E against ``<det(X) X^-T, E>``.  Returns the largest relative gap."""
    import random

    import mpmath

    pick = random.Random(20240)
    worst = 0.0
    with mpmath.workdps(digits):
        h = mpmath.mpf(10) ** (-digits // 3)
        for n in sizes:
            X = mpmath.matrix(n, n)
            E = mpmath.matrix(n, n)
            for a in range(n):
                for b in range(n):
                    X[a, b] = mpmath.mpf(pick.gauss(0, 1)) / mpmath.sqrt(n) + (2 if a == b else 0)
                    E[a, b] = mpmath.mpf(pick.gauss(0, 1))
            central = (mpmath.det(X + h * E) - mpmath.det(X - h * E)) / (2 * h)
            Xinv_T = mpmath.inverse(X).T
            claimed = mpmath.det(X) * mpmath.fsum(Xinv_T[a, b] * E[a, b] for a in range(n) for b in range(n))
            worst = max(worst, float(abs(central - claimed) / (1 + abs(claimed))))
    return worst


def _det_proof(rule: "Rule") -> Proof:
    """The det rule: its pullback the adjoint of Jacobi's formula (index notation at symbolic size), and Jacobi's
    formula itself at symbolic n from the Laplace lemmas (:func:`_jacobi_steps`), exactly at n = 1, 2 with
    symbolic entries, and numerically at n = 1, 2, 16, 24."""
    start = time.perf_counter()
    adjoint = rectangular_order(index_zero(_adjoint_residual(rule)))
    steps = _jacobi_steps()
    explicit = _explicit_rule_proof(rule, sizes=(1, 2))
    gap = _jacobi_numeric()
    failed = [claim for claim, r in steps if r != 0]
    holds = adjoint == 0 and not failed and explicit.holds and gap < 1e-20
    how = ("Jacobi's formula d det X = det X tr(X^-1 dX) at symbolic n in index notation from the Laplace expansion "
           "(stated lemmas: " + "; ".join(JACOBI_LEMMAS) + "), each index step exact; the pullback its adjoint at "
           f"symbolic size; exact at n = 1, 2 (symbolic entries); numeric at n = 1, 2, 16, 24 (mpmath, 40 digits, "
           f"largest relative gap {gap:.1e})")
    residual = adjoint if adjoint != 0 else (sp.Symbol(failed[0].replace(" ", "_")) if failed else
                                             (sp.Integer(0) if explicit.holds else explicit.residual))
    proof = Proof(holds, how, residual, rule.statement)
    proof.seconds = time.perf_counter() - start
    return proof


def _explicit_or_adjoint_proof(rule: "Rule") -> Proof:
    start = time.perf_counter()
    adjoint = rectangular_order(index_zero(_adjoint_residual(rule)))
    if rule.name == "inverse":
        forward = _inverse_forward_residual()
        forward_ok = isinstance(forward, sp.ZeroMatrix) or forward == 0
        how = ("the forward rule from d(X X^-1) = 0 by the matmul rule at symbolic size; the pullback its adjoint in "
               "index notation at symbolic size")
        explicit = _explicit_rule_proof(rule, sizes=(1, 2))
    else:
        forward_ok = True
        how = ("the pullback the adjoint of Jacobi's formula in index notation at symbolic size; Jacobi's formula "
               "itself exact at n = 1, 2, 3 (explicit symbolic entries)")
        explicit = _explicit_rule_proof(rule)
    holds = adjoint == 0 and forward_ok and explicit.holds
    residual = adjoint if adjoint != 0 else (sp.Integer(0) if explicit.holds else explicit.residual)
    proof = Proof(holds, how, residual, rule.statement)
    proof.seconds = time.perf_counter() - start
    return proof


@dataclass(frozen=True)
class ExplicitRule(Rule):
    """det and the inverse: no index form at symbolic size, so the pullback is proved as the adjoint of the
    forward rule (at symbolic size, X⁻¹ and det X opaque), and the forward rule from its defining identity
    (the inverse) or at explicit sizes (Jacobi's formula); the scope says so."""

    def prove(self) -> Proof:
        return _det_proof(self) if self.name == "det" else _explicit_or_adjoint_proof(self)


def _ex_trace():
    n, = _sizes("n")
    return sp.Trace(sp.MatrixSymbol("X", n, n)), sp.Symbol("g"), [sp.MatrixSymbol("X", n, n)]


def _ex_det(n=None):
    X = sp.MatrixSymbol("X", *(2 * (_sizes("n") if n is None else (n,))))
    return sp.Determinant(X), sp.Symbol("g"), [X]


def _ex_inverse(n=None):
    n = _sizes("n")[0] if n is None else n
    X = sp.MatrixSymbol("X", n, n)
    return sp.Inverse(X), sp.MatrixSymbol("G", n, n), [X]


def _ex_diagonal():
    n, = _sizes("n")
    X, G = sp.MatrixSymbol("X", n, n), sp.MatrixSymbol("G", n, 1)
    return sp.DiagonalOf(X), G, [X]


def _scalar_rule_proof(rule: "Rule") -> Proof:
    """A scalar-valued rule in index notation at symbolic size: d(g F(X))/dX_pq against the claimed entry (p, q)."""
    start = time.perf_counter()
    expr, g, (X,) = rule.example()
    p, q, k = sp.symbols("p q k", integer=True, nonnegative=True)
    if isinstance(expr, sp.Trace):
        value = sp.Sum(sp.IndexedBase(X.name)[k, k], (k, 0, X.shape[0] - 1))
    else:
        value = index_form(expr.arg, 0, 0)
    (leaf, claimed), = rule.pull(expr, g, None)
    residual = sp.diff(g * value, sp.IndexedBase(X.name)[p, q]) - index_form(claimed, p, q)
    residual = residual.subs({q: 0} if X.shape[1] == 1 else {})  # a column vector's only column is 0
    residual = residual.subs({p: 0} if X.shape[0] == 1 else {})
    residual = residual.replace(lambda x: isinstance(x, sp.KroneckerDelta) and len(x.args) == 3,
                                lambda x: sp.KroneckerDelta(*x.args[:2]))  # Identity's entry carries its range
    reduced = index_zero(residual)
    proof = Proof(reduced == 0, "index notation at symbolic size (KroneckerDelta sums, canonical dummies, exact cancel)",
                  reduced, rule.statement)
    proof.seconds = time.perf_counter() - start
    return proof


@dataclass(frozen=True)
class ScalarRule(Rule):
    """A rule whose output is a scalar (its sensitivity g a scalar), proved in index notation at symbolic size."""

    def prove(self) -> Proof:
        return _scalar_rule_proof(self)


def _ex_as_scalar():
    M = sp.MatrixSymbol("M", 1, 1)
    return AsScalar(M), sp.Symbol("g"), [M]


_TABLE += [
    ScalarRule("trace", (sp.Trace,), lambda e, g, out: [(e.arg, _scaled_identity(g, e.arg.shape[0]))],
               lambda e, t: sp.Trace(t[e.arg]) if e.arg in t else None, _ex_trace,
               "d trace(X): dX = g I (tr X = sum_k X_kk)", "all n >= 1 (symbolic)"),
    ScalarRule("scalar", (AsScalar,), lambda e, g, out: [(e.arg, _one_by_one(g))],
               lambda e, t: AsScalar(t[e.arg]) if e.arg in t else None, _ex_as_scalar,
               "a 1 x 1 product read as a scalar: dM = g I_1", "every 1 x 1 matrix"),
    ExplicitRule("det", (sp.Determinant,), _det_pull,
                 lambda e, t: sp.MatMul(e, sp.Trace(sp.MatMul(sp.Inverse(e.arg), t[e.arg]))) if e.arg in t else None,
                 _ex_det, "d det(X): dX = g det(X) X^-T (Jacobi's formula)",
                 "every n >= 1 (symbolic), X invertible: Jacobi's formula derived at symbolic n from the Laplace "
                 "expansion and the alien-cofactor identity (stated lemmas), the index algebra exact; exact at n = 1, 2; "
                 "numeric at n = 1, 2, 16, 24"),
    ExplicitRule("inverse", (sp.Inverse,), _inverse_pull,
                 lambda e, t: sp.MatMul(-1, e, t[e.arg], e) if e.arg in t else None,
                 _ex_inverse, "d X^-1: dX = -X^-T G X^-T",
                 "proved exactly at n = 1, 2, 3; every n from d(X X^-1) = 0: d(X^-1) = -X^-1 dX X^-1, X invertible"),
    Rule("diagonal", (sp.DiagonalOf,), lambda e, G, out: [(e.arg, Diag(G))],
         lambda e, t: sp.DiagonalOf(t[e.arg]) if e.arg in t else None, _ex_diagonal,
         "d diagonal(X) (the column of X_kk): dX = diag(G)", "all n >= 1"),
]

#: name -> :class:`Rule`
RULES: dict[str, Rule] = {r.name: r for r in _TABLE}


def rule_for(expr) -> Rule:
    """The rule of ``expr``'s primitive; an unknown primitive is a clear error."""
    from .elementwise import Elementwise

    if isinstance(expr, Elementwise):
        return RULES["elementwise"]
    if isinstance(expr, sp.MatMul):
        coeff, mats = expr.as_coeff_matrices()
        return RULES["scaling" if len(mats) == 1 else "matmul"]
    for rule in _TABLE:
        if rule.nodes and isinstance(expr, rule.nodes):
            return rule
    raise SeqgradTypeError("value", expr, "a matrix expression of the rule table's primitives: "
                           + ", ".join(RULES) + " (see derive.rules)")


def is_row_statistic(expr) -> bool:
    """A row statistic (``std(X)``, ``rms(X)``, ``mean(X)``, ``rowsum(X)``): a program that names one prints the rules through the name."""
    return isinstance(expr, (RowStd, RowRMS, RowMean, RowSum))


def _constant(expr) -> bool:
    return (isinstance(expr, (sp.ZeroMatrix, sp.OneMatrix, sp.Identity))
            or (getattr(expr, "is_Matrix", False) is True and not expr.free_symbols))


def pullback(expr, G, output=None, _rule: Rule | None = None) -> list[tuple[sp.Basic, sp.Basic]]:
    """Reverse mode through ``expr`` by the table: pairs (leaf ``MatrixSymbol``, contribution to its sensitivity).

    ``G`` is dL/d``expr``; ``output``, when given, is the name the program gave ``expr`` (``A`` for
    ``softmax(S)``, ``x̂`` for ``normalize(X)``), so the rules that reuse their output print through it.
    """
    out: list[tuple[sp.Basic, sp.Basic]] = []
    _pull(expr, G, out, output, _rule)
    return out


def _use(expr, override: Rule | None) -> Rule:
    """The table's rule for ``expr``, or ``override`` for its primitive (a rule under proof is checked as written)."""
    rule = rule_for(expr)
    return override if override is not None and override.name == rule.name else rule


def _pull(expr, G, out, output=None, override=None) -> None:
    if isinstance(expr, sp.MatrixSymbol):
        out.append((expr, G))
        return
    if _constant(expr):
        return
    for child, contribution in _use(expr, override).pull(expr, G, output):
        _pull(child, contribution, out, None, override)


def jvp(expr, tangents: Mapping, _rule: Rule | None = None):
    """Forward mode through ``expr`` by the table: the tangent of ``expr`` given the tangents of its leaves.

    ``tangents`` maps leaf ``MatrixSymbol`` s to tangents of their shape (``Ẋ``); leaves not in it are
    constant.  Returns a matrix expression, or ``None`` when ``expr`` does not depend on any tangent
    (a structural zero, never a silent numeric one).
    """
    if isinstance(expr, sp.MatrixSymbol):
        return tangents.get(expr)
    if _constant(expr):
        return None
    rule = _use(expr, _rule)
    children = {}
    for child in _child_args(expr) if not isinstance(expr, sp.MatMul) else expr.as_coeff_matrices()[1]:
        t = jvp(child, tangents, _rule)
        if t is not None:
            children[child] = t
    if isinstance(expr, sp.DiagMatrix):
        children = {expr.args[0]: t} if (t := jvp(expr.args[0], tangents, _rule)) is not None else {}
    if not children:
        return None
    return rule.forward(expr, children)


def jacobian(tangent, direction):
    """The Jacobian ``J`` of a row-vector expression from its tangent (:func:`jvp`) along the row ``direction``.

    The tangent is linear in ``direction`` (``ẏ = ḣ Jᵀ``), so ``J`` is read off the factors to the right of
    ``ḣ``: ``ḣ → I``, ``L M → Mᵀ J_L``, ``L ∘ a → diag(a) J_L``, ``c L → c J_L``, sums term by term (rows: the
    entries of the expression, columns: those of ``direction``). No derivative is taken here; every one came
    from the table. ``None`` (a structural zero) stays ``None``.
    """
    if tangent is None:
        return None
    if tangent == direction:
        return sp.Identity(direction.shape[1])
    if isinstance(tangent, sp.MatAdd):
        return _add([jacobian(a, direction) for a in tangent.args])
    if isinstance(tangent, sp.MatMul):
        coeff, mats = tangent.as_coeff_matrices()
        first, rest = mats[0], mats[1:]
        if any(direction in m.free_symbols for m in rest):
            raise SeqgradValueError("expr", str(tangent), "a tangent whose only varying factor is the leading row vector "
                                    "(products of fixed matrices to its right)")
        J = jacobian(first, direction)
        if rest:
            M = sp.MatMul(*rest).T.doit()
            J = M if isinstance(J, sp.Identity) else sp.MatMul(M, J)
        return J if coeff == 1 else sp.MatMul(coeff, J)
    if isinstance(tangent, sp.HadamardProduct):
        varying = [k for k, a in enumerate(tangent.args) if direction in a.free_symbols]
        if len(varying) != 1:
            raise SeqgradValueError("expr", str(tangent), "a tangent linear in the direction (one varying factor of a product)")
        k, = varying
        J = jacobian(tangent.args[k], direction)
        D = Diag(_others(tangent.args, k))
        return D if isinstance(J, sp.Identity) else sp.MatMul(D, J)
    raise SeqgradValueError("expr", str(tangent), "a tangent of +, products and Hadamard products")


# --------------------------------------------------------------------------------------------- index notation

def index_form(expr, i, j):
    """Entry (i, j) of a matrix expression in index notation: ``IndexedBase`` entries, ``Sum`` over symbolic bounds."""
    entry = expr._entry(i, j) if not isinstance(expr, sp.MatrixSymbol) else expr[i, j]
    return _indexed(entry)


def _indexed(e):
    return e.replace(lambda x: isinstance(x, MatrixElement), lambda x: sp.IndexedBase(x.parent.name)[x.i, x.j])


def _pairing(expr, G, i, j):
    """``sum_ij G_ij F_ij`` in index notation (a concatenation pairs each block with its columns of G)."""
    if isinstance(expr, HConcat):
        return sp.Add(*[sp.Sum(_indexed(G[i, j + start]) * index_form(b, i, j), (i, 0, b.shape[0] - 1), (j, 0, b.shape[1] - 1))
                         for b, start in zip(expr.args, expr.offsets())])
    rows, cols = expr.shape
    return sp.Sum(_indexed(G[i, j]) * index_form(expr, i, j), (i, 0, rows - 1), (j, 0, cols - 1))


def directional(expr, dots, i, j):
    """d/dt F(X + t Xdot)_ij at t = 0, SymPy's derivative in index notation."""
    t = sp.Symbol("t")
    moved = index_form(expr, i, j)
    for leaf, dot in dots.items():
        base, dbase = sp.IndexedBase(leaf.name), sp.IndexedBase(dot.name)
        moved = moved.replace(lambda x, base=base: isinstance(x, sp.Indexed) and x.base == base,
                              lambda x, dbase=dbase: x + t * dbase[x.indices])
    return sp.diff(moved, t).subs(t, 0)


def _rule_residuals(rule: Rule, expr, G, leaves) -> list:
    i, j, p, q = sp.symbols("i j p q", integer=True, nonnegative=True)
    loss = _pairing(expr, G, i, j)
    contributions: dict = {}
    for leaf, c in pullback(expr, G, _rule=rule):
        contributions[leaf] = contributions.get(leaf, []) + [c]
    residuals = []
    for leaf in leaves:
        claimed = _add(contributions.get(leaf, [])) or sp.ZeroMatrix(*leaf.shape)
        at = {p: 0} if leaf.shape[0] == 1 else {}  # a row vector's only row is 0
        at.update({q: 0} if leaf.shape[1] == 1 else {})
        derivative = sp.diff(loss, sp.IndexedBase(leaf.name)[p, q])
        residuals.append((derivative - index_form(claimed, p, q)).subs(at))
    # forward rule: d/dt F(X + t Xdot) at t = 0
    dots = {leaf: sp.MatrixSymbol(leaf.name + "dot", *leaf.shape) for leaf in leaves}
    tangent = jvp(expr, dots, rule)
    if isinstance(expr, HConcat):  # block by block: the tangent is the concatenation of the blocks' tangents
        if not isinstance(tangent, HConcat) or len(tangent.args) != len(expr.args):
            return residuals + [sp.Symbol("forward_rule_is_not_a_concatenation")]
        return residuals + [directional(b, dots, i, j) - index_form(tb, i, j) for b, tb in zip(expr.args, tangent.args)]
    residuals.append(directional(expr, dots, i, j) - index_form(tangent, i, j))
    return residuals


def _drop_range(e):
    """``Piecewise((value, index in range), (0, True))`` -> value: the indices are in range by construction."""
    return e.replace(lambda x: isinstance(x, sp.Piecewise), lambda x: x.args[0][0])


@lru_cache(maxsize=4096)
def _height(e) -> int:
    return max([_height(a) for a in e.args], default=0) + (len(e.limits) if isinstance(e, sp.Sum) else 0)


def _named(s: sp.Sum) -> sp.Sum:
    """The sum with its dummy indices named by nesting depth, innermost first (SymPy merges a sum of a sum
    into one ``Sum`` of several limits: each limit is named as the nested sum would be)."""
    f, limits = s.function, []
    for c, a, b in s.limits:
        k = sp.Symbol(f"k_{_height(f) + len(limits)}", integer=True)
        f = f.xreplace({c: k})
        limits.append((k, a, b))
    return sp.Sum(f, *limits)


def _solve_delta(delta, c):
    x, y = delta.args[:2]
    diff = sp.expand(x - y)
    slope = sp.diff(diff, c)
    if slope not in (1, -1) or c in (diff - slope * c).free_symbols:
        return None
    return sp.expand(c - diff / slope)


@lru_cache(maxsize=8192)  # a pure function of an expression; a residual repeats its subexpressions (σ, the sums)
def _canonical(e):
    """Sums in canonical form: summands expanded, factors free of the index pulled out, a Kronecker delta
    summed away, dummy indices named by nesting depth (so equal sums compare equal)."""
    if not e.args or isinstance(e, (sp.Indexed, sp.IndexedBase)):
        return e
    if isinstance(e, sp.Sum):
        f = _canonical(e.function)
        for (c, a, b) in e.limits:  # innermost first
            if a == b:  # a sum of one term (a row vector's only column): the term
                f = _canonical(f.xreplace({c: a}))
                continue
            f = sp.expand(f)
            out = []
            for term in sp.Add.make_args(f):
                factors = sp.Mul.make_args(term)
                delta = next((x for x in factors if isinstance(x, sp.KroneckerDelta) and c in x.free_symbols
                              and _solve_delta(x, c) is not None), None)
                if delta is not None:
                    rest = sp.Mul(*[x for x in factors if x is not delta])
                    out.append(_canonical(rest.xreplace({c: _solve_delta(delta, c)})))
                    continue
                dep = [x for x in factors if c in x.free_symbols]
                ind = [x for x in factors if c not in x.free_symbols]
                out.append(sp.Mul(*ind) * (_named(sp.Sum(sp.Mul(*dep), (c, a, b))) if dep else (b - a + 1)))
            f = sp.Add(*out)
        return f
    if isinstance(e, (sp.Subs, sp.Derivative)):
        return e.doit()
    if e.is_Pow and isinstance(e.base, sp.KroneckerDelta) and e.exp.is_Integer and e.exp > 0:
        return e.base  # a delta is 0 or 1
    args = [_canonical(a) for a in e.args]
    return e if all(new is old for new, old in zip(args, e.args)) else e.func(*args)


def index_zero(expr):
    """Exact reduction of an index-notation residual; 0 exactly when the residual vanishes for every size."""
    e = _canonical(_drop_range(as_sympy(expr, "expr")))
    e = _canonical(e)  # once more: evaluating a delta can expose sums that now compare equal
    half = lambda x: x.is_Pow and x.exp.is_Rational and not x.exp.is_Integer and x.exp.q == 2
    e = e.replace(half, lambda x: sp.Pow(sp.expand(_canonical(x.base)), x.exp))
    bases = sorted({p.base for p in e.atoms(sp.Pow) if half(p)}, key=sp.default_sort_key)
    names = {b: sp.Dummy("B", positive=True) for b in bases}
    e = e.replace(lambda x: x.is_Pow and x.base in names and x.exp.is_Rational, lambda x: names[x.base] ** (x.exp * 2))
    numerator, _ = sp.fraction(sp.together(sp.expand(e)))
    numerator = sp.expand(numerator)
    for base, B in names.items():
        if numerator.has(B):
            numerator = _reduce_root(numerator, B, base)
    return numerator


def _reduce_root(numerator, B, base):
    """The remainder of the polynomial ``numerator`` in ``B`` on division by ``B^2 - base``: every ``B^n`` written
    ``base^(n // 2) B^(n % 2)``, expanded (the same remainder ``sympy.rem`` gives, without its polynomial domain
    of expressions, which costs far more).  A ``B`` inside a sum or function is left alone (not proved, never
    "refuted")."""
    if any(B in a.free_symbols for a in numerator.atoms(sp.Sum, sp.Function)):
        return numerator
    even = lambda x: x.is_Pow and x.base == B and x.exp.is_Integer and x.exp >= 2
    return sp.expand(numerator.replace(even, lambda x: base ** (x.exp // 2) * B ** (x.exp % 2)))


def index_proof(residual: Callable[[], object], detail: str = "") -> Callable[[], Proof]:
    """A catalogue prover: the residual (an index-notation expression, or a list of them) reduced by :func:`index_zero`."""

    def prove() -> Proof:
        r = residual()
        items = list(r) if isinstance(r, (list, tuple, sp.MatrixBase)) else [r]
        reduced = [index_zero(e) for e in items]
        bad = [e for e in reduced if e != 0]
        return Proof(not bad, "index notation at symbolic size (KroneckerDelta sums, canonical dummies, exact cancel)",
                     bad[0] if bad else sp.Integer(0), detail)

    return prove


def expand_indexed(expr, definitions: Mapping):
    """Replace ``base[idx]`` by ``definitions[base](idx)`` (and plain symbols by their values), innermost names last:
    the statement's names (a_i, x̂_i, σ) replaced by their definitions for the proof."""
    for base, value in definitions.items():
        if isinstance(base, sp.IndexedBase):
            expr = expr.replace(lambda e, base=base: isinstance(e, sp.Indexed) and e.base == base,
                                lambda e, value=value: value(*e.indices))
        else:
            expr = expr.xreplace({base: value})
    return expr


_PROVED: dict[str, Proof] = {}


def proved(name: str) -> Proof:
    """The proof of rule ``name``, run once per process (a proof is deterministic; programs share it)."""
    if name not in RULES:
        raise SeqgradValueError("name", name, "a rule of the table: " + ", ".join(RULES))
    if name not in _PROVED:
        _PROVED[name] = RULES[name].prove()
    return _PROVED[name]


def prove_all() -> dict[str, Proof]:
    """Every rule's proof at symbolic size."""
    return {name: rule.prove() for name, rule in RULES.items()}
