r"""Matrix calculus from one line: ``derive.diff("x.T*A*x", "x", shapes="A:n,n x:n")`` gives ``(A + Aᵀ) x``.

The derivative of a matrix or vector expression at **symbolic size**, through the one rule table
(:mod:`derive.rules`): every matrix node is differentiated by its rule's pullback (matmul, transpose,
sum, Hadamard, elementwise functions, row softmax, LayerNorm, trace, det, inverse, diag, a 1 x 1 product
read as a scalar), and a scalar built from matrix values (``log(det(X))``, ``trace(A*X)**2``) by the
scalar chain rule (``sympy.diff`` of the scalar in the matrix values, which are plain symbols there).
SymPy's own ``MatrixSymbol.diff`` is never called (it loses the −ppᵀ term of softmax and returns 0 for
functions of traces: the design notes' known pitfalls).

* a scalar result gives the **gradient**, of the shape of the variable (the Matrix Cookbook's layout:
  d trace(A X)/dX = Aᵀ);
* a matrix or vector result gives the **pullback** ``dX`` for an upstream sensitivity ``G`` of the
  result's shape (``dL/dX`` when ``dL/dF = G``); when it is ``M G`` for vectors, the Jacobian ``Mᵀ``.

>>> d = diff("x.T*A*x", "x", shapes="A:n,n x:n")
>>> print(d.pretty())
dx = (A + Aᵀ) x
>>> print(diff("log(det(X))", "X", shapes="X:n,n").pretty())
dX = X⁻ᵀ
>>> print(diff("A*x", "x", shapes="A:m,n x:n").pretty())
dx = Aᵀ G
J = A
>>> d.rules
['scalar', 'matmul', 'transpose']
"""

from __future__ import annotations

import functools
import operator
from contextlib import contextmanager
from dataclasses import dataclass, field

import sympy as sp

from seqgrad.errors import ParseError, SeqgradTypeError, SeqgradValueError

from .matrix_text import Declared, is_matrix, parse_matrix
from .operations import diff as registry_diff
from .safe_parse import as_sympy
from .rules import RULES, AsScalar, Diag, _constant, _latex_call, _others, _RowMap, _str_call, proved, rule_for

__all__ = ["diff", "MatrixDerivative", "derivative_of", "textbook", "evaluate", "numpy_ops"]

#: scalar-valued matrix functions: the leaves of the scalar chain rule
_SCALAR_NODES = (sp.Trace, sp.Determinant, AsScalar)


def _depends(e, wrt) -> bool:
    return wrt in e.free_symbols


def _backprop(e, seed, wrt, out: list, used: dict) -> None:
    """Reverse mode: add to ``out`` the contributions of ``e`` (with sensitivity ``seed``) to d/d``wrt``."""
    if not _depends(e, wrt):
        return
    if e == wrt:
        out.append(seed)
        return
    if is_matrix(e):
        if isinstance(e, sp.MatrixSymbol) or _constant(e):
            return
        if isinstance(e, sp.MatMul):
            coeff, mats = e.as_coeff_matrices()
            if _depends(coeff, wrt):  # c(X) M(X): dc = <G, M> = trace(Gᵀ M), dM = c G (the product rule)
                M = sp.MatMul(*mats) if len(mats) > 1 else mats[0]
                used["scaling"] = None
                _backprop(coeff, sp.Trace(sp.MatMul(seed.T, M)), wrt, out, used)
                _backprop(M, sp.MatMul(coeff, seed), wrt, out, used)
                return
        _by_rule(e, seed, wrt, out, used)
        return
    if isinstance(e, _SCALAR_NODES):
        _by_rule(e, seed, wrt, out, used)
        return
    if isinstance(e, sp.Symbol):
        return
    # a scalar of scalar-valued matrix functions (and of wrt itself when it is a scalar): the chain rule
    atoms = _scalar_atoms(e, wrt)
    names = {a: sp.Dummy("s") for a in atoms}
    flat = e.xreplace(names)
    back = {v: k for k, v in names.items()}
    for atom, s in names.items():
        partial = registry_diff(flat, s).xreplace(back)
        if partial != 0:
            _backprop(atom, seed * partial if seed != 1 else partial, wrt, out, used)
    if isinstance(wrt, sp.Symbol) and wrt in flat.free_symbols:
        out.append(seed * registry_diff(flat, wrt))  # relu'(0) = 0 as the registry declares, not SymPy's 1/2


def _scalar_atoms(e, wrt) -> list:
    found: dict = {}

    def walk(x):
        if isinstance(x, _SCALAR_NODES):
            if _depends(x, wrt):
                found[x] = None
            return
        for a in x.args:
            walk(a)

    walk(e)
    return list(found)


def _by_rule(e, seed, wrt, out, used) -> None:
    try:
        rule = rule_for(e)
    except SeqgradTypeError:
        raise SeqgradValueError("expression", sp.sstr(e), "an expression of the rule table's operations ("
                                + ", ".join(RULES) + "); this one has no rule") from None
    used[rule.name] = None
    for child, contribution in rule.pull(e, seed, None):
        _backprop(child, contribution, wrt, out, used)


def _sum(terms):
    if not terms:
        return None
    if all(is_matrix(t) for t in terms):
        return (sp.MatAdd(*terms) if len(terms) > 1 else terms[0]).doit()
    return sp.Add(*terms)


def _factors(t):
    if isinstance(t, sp.MatMul):
        coeff, mats = t.as_coeff_matrices()
        return coeff, list(mats)
    return sp.Integer(1), [t]


def _product(coeff, mats):
    if not mats:
        return None
    body = sp.MatMul(*mats) if len(mats) > 1 else mats[0]
    return body if coeff == 1 else sp.MatMul(coeff, body)


def textbook(expr):
    """Common factors of a matrix sum pulled out, right then left: ``A x + Aᵀ x`` -> ``(A + Aᵀ) x``."""
    if not isinstance(expr, sp.MatAdd):
        return expr
    terms = list(expr.args)
    for side in (-1, 0):
        groups: dict = {}
        for t in terms:
            coeff, mats = _factors(t)
            key = mats[side] if len(mats) >= 2 else None
            groups.setdefault(key, []).append((coeff, mats))
        new = []
        for key, members in groups.items():
            if key is None or len(members) < 2:
                new.extend(_product(c, m) for c, m in members)
                continue
            rest = [_product(c, m[:-1] if side == -1 else m[1:]) for c, m in members]
            inner = textbook(sp.MatAdd(*rest).doit())
            new.append(sp.MatMul(inner, key) if side == -1 else sp.MatMul(key, inner))
        terms = new
    return terms[0] if len(terms) == 1 else sp.MatAdd(*terms)


class _NotLinear(Exception):
    pass


def _the_varying(args, G) -> int:
    """The position of the one argument that depends on ``G``; :class:`_NotLinear` when none or several do."""
    varying = [k for k, a in enumerate(args) if G in a.free_symbols]
    if len(varying) != 1:
        raise _NotLinear
    return varying[0]


def _hadamard_split(e, G):
    """``(k, A)`` of a Hadamard product linear in ``G``: its argument ``k`` depends on ``G``, ``A`` is the rest."""
    k = _the_varying(e.args, G)
    return k, _others(e.args, k)


def _linear_map(e, G):
    """The matrix of the pullback ``e``, linear in the column ``G``: ``M`` with ``e = M G`` (a column ``e``), or
    ``N`` with ``e = Gᵀ N`` (a row ``e``).  Read off the factors, as :func:`derive.rules.jacobian` does for
    tangents: no derivative is taken here.  ``rowsum`` of a row is ``r 1 1ᵀ``, ``mean`` ``r 1 1ᵀ / n``, ``a ∘ r``
    is ``r diag(a)`` (``diag(a) c`` for a column)."""
    from .rules import RowMean, RowSum

    column = e.shape[1] == 1 and e.shape[0] != 1 or e.shape == G.shape
    if e == G:
        return sp.Identity(G.shape[0])
    if e == G.T:
        return sp.Identity(G.shape[0])
    if G not in e.free_symbols:
        raise _NotLinear
    if isinstance(e, sp.MatAdd):
        return sp.MatAdd(*[_linear_map(a, G) for a in e.args if G in a.free_symbols])
    if isinstance(e, sp.Transpose):
        return sp.Transpose(_linear_map(e.arg, G))
    if isinstance(e, sp.MatMul):
        coeff, mats = e.as_coeff_matrices()
        k = _the_varying(mats, G)
        inner = _linear_map(mats[k], G)
        left, right = list(mats[:k]), list(mats[k + 1:])
        if column and not right:
            return _product(coeff, left + [inner])
        if not column and not left:
            return _product(coeff, [inner] + right)
        raise _NotLinear
    if isinstance(e, sp.HadamardProduct):
        k, a = _hadamard_split(e, G)
        inner = _linear_map(e.args[k], G)
        return sp.MatMul(Diag(a), inner) if column else sp.MatMul(inner, Diag(a))
    if isinstance(e, (RowSum, RowMean)) and e.shape[0] == 1:
        n = e.shape[1]
        ones = sp.MatMul(sp.OneMatrix(n, 1), sp.OneMatrix(1, n))
        out = sp.MatMul(_linear_map(e.arg, G), ones)
        return out if isinstance(e, RowSum) else sp.MatMul(1 / n, out)
    raise _NotLinear


def _tidy(e):
    """``diag(a) 1`` -> ``aᵀ`` (or ``a``), ``1ᵀ diag(a)`` -> ``a`` (or ``aᵀ``): a diagonal matrix against ones."""
    def one(m):
        return isinstance(m, sp.OneMatrix)

    def fold(m):
        if not isinstance(m, sp.MatMul):
            return m
        coeff, mats = m.as_coeff_matrices()
        split = []
        for x in mats:  # an n x n block of ones is 1 1ᵀ, so a diagonal beside it can take its half
            split += [sp.OneMatrix(x.shape[0], 1), sp.OneMatrix(1, x.shape[1])] if one(x) and 1 not in x.shape else [x]
        mats, changed = split, True
        while changed:
            changed = False
            for k in range(len(mats) - 1):
                a, b = mats[k], mats[k + 1]
                if isinstance(a, sp.DiagMatrix) and one(b) and b.shape[1] == 1:
                    v = a.args[0]
                    mats[k:k + 2] = [v if v.shape[1] == 1 else v.T]
                    changed = True
                    break
                if one(a) and a.shape[0] == 1 and isinstance(b, sp.DiagMatrix):
                    v = b.args[0]
                    mats[k:k + 2] = [v if v.shape[0] == 1 else v.T]
                    changed = True
                    break
        merged = []
        for x in mats:  # what is left of 1 1ᵀ is the block of ones again
            if merged and one(merged[-1]) and one(x) and merged[-1].shape[1] == 1 and x.shape[0] == 1:
                merged[-1] = sp.OneMatrix(merged[-1].shape[0], x.shape[1])
            else:
                merged.append(x)
        return _product(coeff, merged)

    return e.replace(lambda x: isinstance(x, sp.MatMul), fold)


def _jacobian(pullback, G):
    """The Jacobian ``J = Mᵀ`` when the pullback is ``M G`` for a column ``G`` (vectors in, vectors out); else None."""
    if G is None or G.shape[1] != 1 or G.shape[0] == 1 or pullback.shape[1] != 1:
        return None  # a column of a column only (a matrix's Jacobian has four indices)
    try:
        M = _linear_map(pullback, G)
    except _NotLinear:
        return None
    return _tidy(sp.expand(sp.Transpose(M).doit()))


class Vec(sp.MatrixExpr):
    """``vec(A)``: the columns of A stacked into one column (column-major, the Matrix Cookbook's vec)."""

    def __new__(cls, arg):
        return sp.MatrixExpr.__new__(cls, arg)

    @property
    def arg(self):
        return self.args[0]

    @property
    def shape(self):
        return self.arg.shape[0] * self.arg.shape[1], sp.Integer(1)

    def _inner(self, printer) -> str:
        text = printer._print(self.arg)
        for left, right in (("(", ")"), (r"\left(", r"\right)")):  # vec(1 - h²), not vec((1 - h²))
            if text.startswith(left) and text.endswith(right) and _one_group(text[len(left):-len(right)]):
                return text[len(left):-len(right)]
        return text

    def _latex(self, printer):
        return r"\operatorname{vec}\left(%s\right)" % self._inner(printer)

    def _sympystr(self, printer):
        return "vec(%s)" % self._inner(printer)


def _one_group(text: str) -> bool:
    """True when the brackets of ``text`` balance without closing below level 0 (so outer ones can be dropped)."""
    depth = 0
    for c in text:
        depth += {"(": 1, ")": -1}.get(c, 0)
        if depth < 0:
            return False
    return depth == 0


class Commutation(sp.MatrixExpr):
    """The commutation matrix ``K_(p,q)`` (pq x pq): ``K vec(A) = vec(Aᵀ)`` for every p x q matrix A."""

    def __new__(cls, p, q):
        return sp.MatrixExpr.__new__(cls, as_sympy(p, "p"), as_sympy(q, "q"))

    @property
    def shape(self):
        p, q = self.args
        return p * q, p * q

    def _eval_transpose(self):
        p, q = self.args
        return Commutation(q, p)

    def _latex(self, printer):
        return r"\mathbf{K}_{%s,%s}" % tuple(printer._print(a) for a in self.args)

    def _sympystr(self, printer):
        return "K_(%s,%s)" % tuple(printer._print(a) for a in self.args)


class VecPartial(sp.Expr):
    """The label ``∂vec(F)/∂vec(X)`` of a matrix-by-matrix Jacobian (rows: the entries of vec F)."""

    def __new__(cls, of, wrt):
        return sp.Expr.__new__(cls, of, wrt)

    def _latex(self, printer):
        from .latex_settings import derivative_tex

        return derivative_tex(printer, *(r"\operatorname{vec}(%s)" % printer._print(a) for a in self.args))

    def _sympystr(self, printer):
        return "∂vec(%s)/∂vec(%s)" % tuple(printer._print(a) for a in self.args)


def _vec_map(e, G):
    """``M`` with ``vec(e) = M vec(G)`` for ``e`` linear in ``G`` (products, sums, transposes, Hadamard products by a
    constant), by ``vec(L Y R) = (Rᵀ ⊗ L) vec(Y)``, ``vec(Yᵀ) = K vec(Y)`` and ``vec(A ∘ Y) = diag(vec A) vec(Y)``;
    raises :class:`_NotLinear` otherwise."""
    if e == G:
        return sp.Identity(G.shape[0] * G.shape[1])
    if G not in e.free_symbols:
        raise _NotLinear
    if isinstance(e, sp.Transpose):
        inner = e.arg
        return sp.MatMul(Commutation(*inner.shape), _vec_map(inner, G))
    if isinstance(e, sp.MatAdd):
        return sp.MatAdd(*[_vec_map(a, G) for a in e.args if G in a.free_symbols])
    if isinstance(e, sp.MatMul):
        coeff, mats = e.as_coeff_matrices()
        k = _the_varying(mats, G)
        if G in coeff.free_symbols:
            raise _NotLinear
        left, right = mats[:k], mats[k + 1:]
        L = sp.MatMul(*left) if len(left) > 1 else (left[0] if left else sp.Identity(mats[k].shape[0]))
        R = sp.MatMul(*right) if len(right) > 1 else (right[0] if right else sp.Identity(mats[k].shape[1]))
        out = sp.MatMul(sp.KroneckerProduct(R.T, L), _vec_map(mats[k], G))
        return out if coeff == 1 else sp.MatMul(coeff, out)
    if isinstance(e, sp.HadamardProduct):
        k, A = _hadamard_split(e, G)
        return sp.MatMul(Diag(Vec(A)), _vec_map(e.args[k], G))
    raise _NotLinear


def _vec_jacobian(pullback, G):
    """``∂vec(F)/∂vec(X)`` when the pullback ``dX`` is linear in ``G`` by :func:`_vec_map`: ``vec(dX) = Jᵀ vec(G)``,
    so ``J`` is the transpose of the map (``A X``: ``I ⊗ A``); None otherwise."""
    if G is None:
        return None
    try:
        M = _vec_map(pullback, G)
    except _NotLinear:
        return None
    return _tidy_kronecker(sp.Transpose(M).doit())


def _tidy_kronecker(e):
    """``I ⊗ I`` as one identity, ``(A ⊗ B) I`` as ``A ⊗ B``: the textbook's forms."""
    def fold(k):
        if all(isinstance(a, sp.Identity) for a in k.args):
            return sp.Identity(k.shape[0])
        return k

    e = e.replace(lambda x: isinstance(x, sp.KroneckerProduct), fold)
    return e.doit() if isinstance(e, (sp.MatMul, sp.MatAdd)) else e


class Differential(sp.Expr):
    """``dX``, the name of a derivative as a structured node (the d of what), never text inside a symbol's name:
    printed ``dX``, in LaTeX ``\\mathrm{d}`` before the variable as the notation prints it (``\\mathrm{d}\\mathbf{x}``)."""

    def __new__(cls, wrt):
        return sp.Expr.__new__(cls, wrt)

    @property
    def of(self):
        return self.args[0]

    def _latex(self, printer):
        return r"\mathrm{d}" + printer._print(self.of)

    def _sympystr(self, printer):
        return "d" + printer._print(self.of)


class OfColumn(sp.MatrixExpr):
    """A row map of a transposed column vector, transposed back (``softmax(xᵀ)ᵀ``: how the parser reads
    ``softmax(x)`` of a column), shown as the map of the column: ``softmax(x)``.  A display node of
    :func:`display_form`; its value is ``Transpose(rowmap)``."""

    prints_as_call = True  # transposed without brackets: softmax(x)ᵀ

    def __new__(cls, rowmap):
        return sp.MatrixExpr.__new__(cls, rowmap)

    @property
    def shape(self):
        rows, cols = self.args[0].shape
        return cols, rows

    def _call(self, printer, call):
        inner = self.args[0]
        return call(printer, inner._name, _column_of(inner.arg))

    def _latex(self, printer):
        return self._call(printer, _latex_call)

    def _sympystr(self, printer):
        return self._call(printer, _str_call)

    def doit(self, **hints):
        return sp.Transpose(self.args[0]).doit(**hints)


def _column_map(e) -> bool:
    """A row map (printed by the row map's own printer) of the transpose of a column vector."""
    return (isinstance(e, _RowMap) and type(e)._latex is _RowMap._latex and _row_of_column(e.arg)
            and _transposes(_column_of(e.arg)) < _transposes(e.arg))


def _transposes(e) -> int:
    return sum(isinstance(x, sp.Transpose) for x in sp.preorder_traversal(e))


def display_form(expr):
    """``expr`` as the textbook writes it, for the printers: a row map of a transposed column shown as the map of
    the column (``softmax(xᵀ)ᵀ`` -> ``softmax(x)``, the row ``softmax(xᵀ)`` -> ``softmax(x)ᵀ``), and the diagonal
    matrix of a transposed vector as that of the vector (``diag(pᵀ) = diag(p)``).  The value is unchanged."""
    if not isinstance(expr, sp.Basic) or not expr.args:
        return expr
    if isinstance(expr, OfColumnStat):
        return expr.func(display_form(expr.args[0]), expr.args[1])
    if isinstance(expr, sp.Transpose) and _column_map(expr.arg):
        return OfColumn(expr.arg)
    if _column_map(expr):
        return sp.Transpose(OfColumn(expr))
    args = [display_form(a) for a in expr.args]
    if isinstance(expr, sp.DiagMatrix) and isinstance(args[0], sp.Transpose) and 1 in args[0].arg.shape:
        return expr.func(args[0].arg)
    if all(a is b for a, b in zip(args, expr.args)):
        return expr
    return expr.func(*args)


class OfColumnStat(sp.Expr):
    """The scalar a row statistic of a transposed column vector holds in every entry (``mean(Gᵀ)``: the row
    ``mean(G) 𝟏ᵀ``), shown as the statistic of the column: ``mean(G)``, ``std(x)``.  A display node of
    :func:`column_scalars`; its value (``doit``) is the mean of the row's entries, ``rowstat 𝟏 / n``."""

    is_commutative = True
    precedence = 70  # a call: no brackets as a factor

    def __new__(cls, column, rowstat):
        return sp.Expr.__new__(cls, column, rowstat)

    @property
    def column(self):
        return self.args[0]

    def _latex(self, printer, exp=None):
        stat = self.args[1]
        if type(stat)._latex is not _RowMap._latex:  # std prints its letter: σ_ε(x)
            body = type(stat)._latex(stat.func(self.column, *stat.args[1:]), printer)
        else:
            body = _latex_call(printer, stat._name, self.column)
        return body if exp is None else r"%s^{%s}" % (body, exp)

    def _sympystr(self, printer):
        return _str_call(printer, self.args[1]._name, self.column)

    def _eval_is_real(self):
        return None

    def doit(self, **hints):
        stat = self.args[1]
        n = stat.shape[1]
        return AsScalar(sp.MatMul(stat, sp.OneMatrix(n, 1))) / n


def _column_of(row):
    """The column of a row expression: ``(xᵀ Aᵀ)ᵀ`` -> ``A x``."""
    return sp.Transpose(row).doit()


def _row_of_column(e) -> bool:
    return getattr(e, "is_Matrix", False) and e.shape[0] == 1 and e.shape[1] != 1


def _stat_scalar(stat):
    """The scalar of the row statistic ``stat`` of a row (every entry holds it): ``rowsum(aᵀ ∘ Gᵀ)`` -> ``aᵀ G``,
    ``rowsum(yᵀ)`` -> ``𝟏ᵀ y``, ``mean(yᵀ)`` -> ``mean(y)``, ``std(xᵀ)`` -> ``std(x)``."""
    from .rules import RowSum

    if isinstance(stat, RowSum):
        arg = stat.arg
        if isinstance(arg, sp.HadamardProduct) and len(arg.args) == 2:
            return AsScalar(sp.MatMul(arg.args[0], _column_of(arg.args[1])))
        return AsScalar(sp.MatMul(sp.OneMatrix(1, arg.shape[1]), _column_of(arg)))
    return OfColumnStat(_column_of(stat.arg), stat)


def _scaled(*factors):
    """The product of scalars and matrices with the scalars collected in front: ``(s 𝟏) 𝟏ᵀ`` -> ``s 𝟏 𝟏ᵀ``."""
    coeff, mats = sp.S.One, []
    for f in factors:
        if getattr(f, "is_Matrix", False):
            c, ms = f.as_coeff_matrices() if isinstance(f, sp.MatMul) else (sp.S.One, [f])
            coeff, mats = coeff * c, mats + list(ms)
        else:
            coeff = coeff * f
    if coeff == 0:
        return sp.ZeroMatrix(*sp.MatMul(*mats).shape)
    mats = [m for m in mats if not isinstance(m, sp.Identity)] or mats[:1]  # A I = A
    if not mats:
        return coeff
    return sp.MatMul(coeff, *mats) if coeff != 1 else (sp.MatMul(*mats) if len(mats) > 1 else mats[0])


def _scalar_times_ones(e):
    """``(s, 𝟏)`` when ``e`` is a scalar times a ones block ``s 𝟏`` (every entry s), else None."""
    if isinstance(e, sp.OneMatrix):
        return sp.S.One, e
    if isinstance(e, sp.MatMul):
        c, mats = e.as_coeff_matrices()
        if len(mats) == 1 and isinstance(mats[0], sp.OneMatrix):
            return c, mats[0]
    return None


def _common_factor(terms):
    """The symbolic scalar factor common to every term's coefficient (``1/σ`` of ``G/σ − x̂ x̂ᵀ/(n σ)``), or 1."""
    coeffs = [t.as_coeff_matrices()[0] if isinstance(t, sp.MatMul) else sp.S.One for t in terms]
    shared = None
    for c in coeffs:
        factors = {f for f in sp.Mul.make_args(c) if not f.is_number}
        shared = factors if shared is None else shared & factors
    return sp.Mul(*shared) if shared else sp.S.One


def column_scalars(expr):
    """``expr`` with the row statistics of transposed column vectors as the scalars they hold, for the printers:
    the row ``rowsum(aᵀ ∘ Gᵀ)`` (every entry aᵀ G) as ``(aᵀ G) 𝟏ᵀ``, ``std(xᵀ)ᵀ`` as ``std(x) 𝟏``; an entrywise
    function of ``s 𝟏`` as ``f(s) 𝟏``, a Hadamard factor ``s 𝟏`` as the scalar s, ``diag(s 𝟏)`` as ``s I``, and a scalar
    common to every term of a sum in front of it.  The value is unchanged (a display pass, like :func:`display_form`)."""
    from .elementwise import Elementwise
    from .rules import RowMean, RowSum, is_row_statistic

    if not isinstance(expr, sp.Basic) or not expr.args or isinstance(expr, OfColumnStat):
        return expr
    if is_row_statistic(expr) and _row_of_column(expr.arg):
        arg = column_scalars(expr.arg)
        coeff, body = sp.S.One, arg
        if isinstance(arg, sp.MatMul) and isinstance(expr, (RowSum, RowMean)):  # rowsum(c Y) = c rowsum(Y); not std, rms (|c|)
            coeff, mats = arg.as_coeff_matrices()
            body = sp.MatMul(*mats) if len(mats) > 1 else mats[0]
        return _scaled(coeff, _stat_scalar(expr.func(body, *expr.args[1:])), sp.OneMatrix(*expr.shape))
    args = [column_scalars(a) for a in expr.args]
    if isinstance(expr, sp.Transpose) and _scalar_times_ones(args[0]):
        c, ones = _scalar_times_ones(args[0])
        return _scaled(c, sp.OneMatrix(ones.shape[1], ones.shape[0]))
    if isinstance(expr, Elementwise) and _scalar_times_ones(args[1]) and not args[1].is_square:
        c, ones = _scalar_times_ones(args[1])
        return _scaled(expr.function(c), ones)
    if isinstance(expr, sp.DiagMatrix) and _scalar_times_ones(args[0]):
        c, ones = _scalar_times_ones(args[0])
        return _scaled(c, sp.Identity(max(ones.shape, key=lambda s: s != 1)))
    if isinstance(expr, sp.HadamardProduct):
        scalars = [_scalar_times_ones(a) for a in args]
        if any(scalars):
            rest = [a for a, s in zip(args, scalars) if not s]
            coeff = sp.Mul(*[s[0] for s in scalars if s])
            body = (sp.HadamardProduct(*rest) if len(rest) > 1 else rest[0]) if rest else sp.OneMatrix(*expr.shape)
            return _scaled(coeff, body)
    if isinstance(expr, sp.MatMul):
        return _scaled(*args)
    if isinstance(expr, sp.MatAdd):
        common = _common_factor(args)
        if common != 1:
            return _scaled(common, sp.MatAdd(*[_scaled(1 / common, a) for a in args]))
    if all(a is b for a, b in zip(args, expr.args)):
        return expr
    return expr.func(*args)


class Divided(sp.MatrixExpr):
    """A product of matrices divided by a scalar, ``𝟏 𝟏ᵀ/n`` (a display node of :func:`shown`: in text the division
    the textbook writes; in LaTeX, and in value (``doit``), the product ``(1/n) 𝟏 𝟏ᵀ``)."""

    def __new__(cls, product, denominator):
        return sp.MatrixExpr.__new__(cls, product, denominator)

    @property
    def shape(self):
        return self.args[0].shape

    def doit(self, **hints):
        return _scaled(1 / self.args[1], self.args[0])

    def _latex(self, printer):
        return printer._print(self.doit())

    def _sympystr(self, printer):
        from sympy.printing.precedence import PRECEDENCE

        product, denominator = self.args
        return "%s/%s" % (printer.parenthesize(product, PRECEDENCE["Mul"], strict=True),
                          printer.parenthesize(denominator, PRECEDENCE["Mul"]))


def _fractions(expr):
    """Every product with a fraction in front, of matrices without a sum, as a :class:`Divided`: ``𝟏 𝟏ᵀ/n``."""
    if not isinstance(expr, sp.Basic) or not expr.args or isinstance(expr, (OfColumnStat, AsScalar)):
        return expr
    if isinstance(expr, sp.MatMul):
        coeff, mats = expr.as_coeff_matrices()
        numerator, denominator = sp.fraction(coeff)
        if denominator != 1 and not denominator.is_Add and not any(m.has(sp.MatAdd) for m in mats):
            sign = -1 if numerator.could_extract_minus_sign() else 1  # −𝟏 𝟏ᵀ/n: the sign before the division
            divided = Divided(_scaled(sign * numerator, *mats), denominator)
            return divided if sign == 1 else sp.MatMul(-1, divided)
    args = [_fractions(a) for a in expr.args]
    return sp.MatAdd(*args, evaluate=False) if isinstance(expr, sp.MatAdd) else expr.func(*args)


def shown(expr):
    """``expr`` as the printers show it: :func:`column_scalars` (and, where it changed something, a fraction in front
    of a product as a division, :class:`Divided`), then :func:`display_form`."""
    scalars = column_scalars(expr)
    return display_form(scalars if scalars == expr else _fractions(scalars))


@dataclass
class MatrixDerivative:
    """The derivative of ``expr`` with respect to ``wrt``: the gradient (scalar ``expr``) or the pullback
    ``dX`` for the upstream ``G`` (matrix ``expr``), the Jacobian where it was read off, the rules used."""

    expr: object
    wrt: object
    value: object
    G: object = None
    jacobian: object = None
    rules: list = field(default_factory=list)
    declared: Declared | None = None
    at: dict | None = None        # the point (Symbol -> number) asked for with at=, and the derivative there
    value_at: object = None
    vec_jacobian: object = None   # ∂vec(F)/∂vec(X) of a matrix F by a matrix X, read off the pullback (A X: I ⊗ A)

    def kinks(self) -> list:
        """Where the derivative does not exist: the arguments of the sign and step functions it uses (|u|' = sign(u))."""
        from .elementwise import Elementwise

        found = set()
        for node in sp.preorder_traversal(self.value):
            bound = any(isinstance(s, sp.Dummy) for s in node.args[0].free_symbols) if node.args else False
            if isinstance(node, (sp.sign, sp.Heaviside)) and not bound:  # (an entrywise function's own variable: below)
                found.add(node.args[0])
            if isinstance(node, Elementwise):  # entrywise: the kink of f at the matrix argument's entries
                u = node.function.variables[0]
                for f in node.function.expr.atoms(sp.sign, sp.Heaviside):
                    if f.args[0] == u:
                        found.add(node.expr)
        return sorted(found, key=sp.default_sort_key)

    def jumps(self) -> list:
        """Where the expression jumps (the arguments of floor and ceiling): not differentiable where they are integers,
        whatever derivative (0) the operation declares between them."""
        found = {f.args[0] for f in sp.preorder_traversal(self.expr) if isinstance(f, (sp.floor, sp.ceiling))}
        return sorted(found, key=sp.default_sort_key)

    @property
    def kind(self) -> str:
        return "gradient" if self.G is None else "pullback"

    @property
    def target(self):
        """The name of the result: ``dX`` (a :class:`Differential` of the variable)."""
        return Differential(self.wrt)

    def rows(self) -> list:
        """(lhs, rhs) pairs for the printers: the result, and the Jacobian where there is one, each in
        :func:`display_form`."""
        rows = [(self.target, shown(self.value))]
        if self.jacobian is not None:
            rows.append((sp.MatrixSymbol("J", *self.jacobian.shape), shown(self.jacobian)))
        if self.vec_jacobian is not None:
            rows.append((VecPartial(display_form(self.expr), self.wrt), display_form(self.vec_jacobian)))
        if self.at:
            rows.append((sp.Subs(self.target, tuple(self.at), tuple(self.at.values())), display_form(self.value_at)))
        return rows

    def pretty(self) -> str:
        from .program_text import pretty

        return "\n".join(f"{pretty(a)} = {pretty(b)}" for a, b in self.rows())

    def __str__(self) -> str:
        from .program_text import sstr

        return "\n".join(f"{sstr(a)} = {sstr(b)}" for a, b in self.rows())

    def latex(self) -> str:
        """A complete display (``align*``) through the project's LaTeX printer."""
        from .latex_layout import display

        return display(self.rows())

    def _repr_latex_(self) -> str:
        return self.latex()

    def proofs(self) -> dict:
        """Each rule used, proved (at symbolic size in index notation, or as its scope says)."""
        return {name: proved(name) for name in self.rules if name in RULES}

    def as_dict(self) -> dict:
        from .program_text import sstr

        return {"expression": sstr(self.expr), "wrt": str(self.wrt), "kind": self.kind, "result": sstr(self.value),
                "upstream": None if self.G is None else str(self.G),
                "jacobian": None if self.jacobian is None else sstr(self.jacobian),
                "vec_jacobian": None if self.vec_jacobian is None else sstr(self.vec_jacobian), "rules": list(self.rules),
                "scopes": {n: RULES[n].scope for n in self.rules if n in RULES},
                "not_differentiable_where_zero": [sstr(k) for k in self.kinks()],
                "not_differentiable_where_integer": [sstr(k) for k in self.jumps()],
                "at": None if not self.at else {str(k): sstr(v) for k, v in self.at.items()},
                "value_at": None if not self.at else sstr(self.value_at)}


_COLLECTORS: list[dict] = []  # the open rules_used() blocks, innermost last


def derivative_of(expr, wrt):
    """The gradient of the scalar ``expr`` with respect to ``wrt`` (a MatrixSymbol or Symbol), by the rule table;
    the pullback for the upstream ``G`` when ``expr`` is a matrix.  Used by ``diff(f, X)`` inside ``verify``; the
    rules it used are added to every open :func:`rules_used` block."""
    d = _differentiate(expr, wrt)
    for collector in _COLLECTORS:
        collector.update(dict.fromkeys(d.rules))
    return d.value


@contextmanager
def rules_used():
    """``with rules_used() as used:`` -- ``used`` collects the names of the rules every :func:`derivative_of` in the
    block used (``verify`` says what a proof through ``diff(f, X)`` rests on)."""
    collector: dict = {}
    _COLLECTORS.append(collector)
    try:
        yield collector
    finally:
        _COLLECTORS.remove(collector)


def _differentiate(expr, wrt, upstream: str = "G") -> MatrixDerivative:
    if not _depends(expr, wrt):
        shape = wrt.shape if isinstance(wrt, sp.MatrixSymbol) else None
        zero = sp.ZeroMatrix(*shape) if shape else sp.Integer(0)
        return MatrixDerivative(expr, wrt, zero)
    G = sp.MatrixSymbol(upstream, *expr.shape) if is_matrix(expr) else None
    if G is not None and G in expr.free_symbols:
        raise SeqgradValueError("upstream", upstream, "a name that the expression does not use")
    out: list = []
    used: dict = {}
    _backprop(expr, G if G is not None else sp.Integer(1), wrt, out, used)
    value = _sum(out)
    if value is None:  # depends on wrt, yet no contribution: never a silent zero
        raise SeqgradValueError("expression", str(expr), f"an expression whose dependence on {wrt} the rule table reaches")
    if value.has(sp.Derivative):
        f = next(iter(value.atoms(sp.Derivative))).expr
        raise SeqgradValueError("expression", str(expr), f"differentiable functions: {sp.sstr(f)} has no derivative "
                                "(floor is constant between integers and jumps at them)")
    if is_matrix(value):
        value = textbook(value)
    else:
        value = sp.factor_terms(value)
    jacobian = _jacobian(value, G) if is_matrix(value) else None
    vec = _vec_jacobian(value, G) if is_matrix(value) and jacobian is None else None
    return MatrixDerivative(expr, wrt, value, G, jacobian, list(used), vec_jacobian=vec)


def diff(expr, wrt, shapes=None, variables=None, *, upstream: str = "G", at=None) -> MatrixDerivative:
    """The derivative of ``expr`` (text or a SymPy matrix expression) with respect to the name ``wrt``.

    ``shapes`` declares the matrices and vectors (``"A:n,n x:n"`` or ``{"A": "n,n", "x": "n"}``), ``variables``
    the real scalars.  Returns a :class:`MatrixDerivative` (gradient for a scalar expression, pullback for the
    upstream ``G`` otherwise).  Undeclared names, shape mismatches and operations without a rule are one clear
    error (:class:`~seqgrad.errors.ParseError` / :class:`~seqgrad.errors.SeqgradValueError`).

    ``at`` (``"x=0, y=1"`` or a mapping) also gives the derivative at that point of the scalar variables,
    exactly; a point where the expression is undefined or not differentiable is refused naming the function
    (:mod:`derive.matcalc_point`).
    """
    declared = Declared(shapes, variables)
    if isinstance(expr, str):
        e = parse_matrix(expr, declared=declared)
    elif isinstance(expr, sp.Basic):
        e = expr
    else:
        raise SeqgradTypeError("expr", expr, "an expression as text or a SymPy (matrix) expression")
    name = wrt.name if isinstance(wrt, (sp.Symbol, sp.MatrixSymbol)) else wrt
    if not isinstance(name, str):
        raise SeqgradTypeError("wrt", wrt, "the name of a declared matrix, vector or scalar")
    target = declared.lookup(name) if isinstance(wrt, str) else wrt
    if target is None or name in declared.sizes:
        raise ParseError("wrt", name, "a declared matrix or vector (shapes) or scalar (variables); declared: "
                         + (", ".join([*declared.matrices, *declared.scalars]) or "none"))
    if upstream in declared.names():
        upstream = "G_" if "G_" not in declared.names() else "G_up"
    point = None
    if at is not None:
        from .matcalc_point import check_point, parse_point

        point = parse_point(at, declared, e)
        check_point(e, point)
    d = _differentiate(e, target, upstream)
    d.declared = declared
    if point is not None:
        from .matcalc_point import value_at

        d.at, d.value_at = point, value_at(d.value, point)
    return d


# --------------------------------------------------------------------------------------------- evaluation

def evaluate(expr, env: dict, ops):
    """The value of a (matrix) expression at ``env`` (MatrixSymbol / Symbol -> array / number) with the
    operations of a backend (``ops``: :func:`numpy_ops`, or the torch one in :mod:`crosscheck.matcalc`).
    One walker for every backend, so the numeric sides of a check differ only in their backend."""
    return _Evaluator(env, ops).value(expr)


class _Evaluator:
    def __init__(self, env, ops):
        self.env, self.ops, self.memo = env, ops, {}

    def value(self, e):
        if e in self.memo:
            return self.memo[e]
        v = self._value(e)
        self.memo[e] = v
        return v

    def size(self, s):
        return int(self.value(s)) if not isinstance(s, int) else s

    def _value(self, e):
        from .elementwise import Elementwise
        from .rules import Diag, RowMean, RowSoftmax, RowSum

        o, v = self.ops, self.value
        if e in self.env:
            return self.env[e]
        if isinstance(e, (sp.MatrixSymbol, sp.Symbol)):
            raise SeqgradValueError("values", str(e), "a value for every name of the expression")
        if e.is_Number:
            return float(e)
        if isinstance(e, sp.NumberSymbol):
            return float(e)
        if isinstance(e, sp.MatMul):
            coeff, mats = e.as_coeff_matrices()
            out = v(mats[0])
            for m in mats[1:]:
                out = o.matmul(out, v(m))
            return out if coeff == 1 else v(coeff) * out
        if isinstance(e, (sp.MatAdd, sp.Add)):
            return functools.reduce(operator.add, [v(a) for a in e.args])
        if isinstance(e, (sp.HadamardProduct, sp.Mul)):  # entrywise, and scalars
            return functools.reduce(operator.mul, [v(a) for a in e.args])
        if isinstance(e, sp.Transpose):
            return o.transpose(v(e.arg))
        if isinstance(e, sp.Inverse):
            return o.inv(v(e.arg))
        if isinstance(e, sp.MatPow) and e.exp.is_Integer:
            base = v(e.base) if e.exp > 0 else o.inv(v(e.base))
            out = base
            for _ in range(abs(int(e.exp)) - 1):
                out = o.matmul(out, base)
            return out
        if isinstance(e, sp.Identity):
            return o.eye(self.size(e.shape[0]))
        if isinstance(e, sp.OneMatrix):
            return o.ones(self.size(e.shape[0]), self.size(e.shape[1]))
        if isinstance(e, sp.ZeroMatrix):
            return o.zeros(self.size(e.shape[0]), self.size(e.shape[1]))
        if isinstance(e, Elementwise):
            x = v(e.expr)
            return _Evaluator({**self.env, e.function.variables[0]: x}, o).value(e.function.expr) + 0 * x
        if isinstance(e, RowSoftmax):
            return o.softmax(v(e.arg))
        if isinstance(e, RowSum):
            return o.rowsum(v(e.arg))
        if isinstance(e, RowMean):
            return o.rowmean(v(e.arg))
        if isinstance(e, _RowMap) and callable(getattr(e, "definition", None)):  # a composite row map (std, rms):
            return v(e.definition())                                               # through its definition
        if isinstance(e, (Diag, sp.DiagMatrix)):
            return o.diag(v(e.args[0]))
        if isinstance(e, sp.DiagonalOf):
            return o.diagonal(v(e.arg))
        if isinstance(e, sp.KroneckerProduct):
            return functools.reduce(o.kron, [v(a) for a in e.args])
        if isinstance(e, Vec):
            return o.vec(v(e.arg))
        if isinstance(e, Commutation):
            return o.commutation(self.size(e.args[0]), self.size(e.args[1]))
        if isinstance(e, sp.Trace):
            return o.trace(v(e.arg))
        if isinstance(e, sp.Determinant):
            return o.det(v(e.arg))
        if isinstance(e, AsScalar):
            return o.item(v(e.arg))
        if isinstance(e, sp.Pow):
            base, exp = v(e.base), e.exp
            if exp == sp.Rational(1, 2):
                return o.fn("sqrt")(base)
            return base ** (int(exp) if exp.is_Integer else v(exp))
        if isinstance(e, (sp.Max, sp.Min)):
            return functools.reduce(o.fn(type(e).__name__), [v(a) for a in e.args])
        if isinstance(e, sp.Heaviside):  # a step: its value at 0 as written (relu'(0) = 0: Heaviside(z, 0))
            return o.heaviside(v(e.args[0]), float(e.args[1]) if len(e.args) > 1 else 0.5)
        if isinstance(e, sp.Function) and o.has(type(e).__name__):
            return o.fn(type(e).__name__)(*[v(a) for a in e.args])
        if isinstance(e, sp.Function):  # a composite operation of the registry: evaluated through its definition
            definition = e.rewrite("definition")
            if definition != e:
                return v(definition)
        raise SeqgradValueError("expression", sp.sstr(e), f"an operation with a numeric implementation ({type(e).__name__} has none)")


def _np_erf(x):
    import math

    import numpy as np

    return np.vectorize(math.erf, otypes=[float])(x)


class _NumpyOps:
    def __init__(self):
        import numpy as np

        self.np = np
        self.functions = {"sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
                          "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "exp": np.exp,
                          "log": np.log, "sqrt": np.sqrt, "Abs": np.abs, "floor": np.floor, "sign": np.sign,
                          "Max": np.maximum, "Min": np.minimum, "erf": _np_erf}

    def has(self, name):
        return name in self.functions

    def fn(self, name):
        return self.functions[name]

    def matmul(self, a, b):
        return a @ b

    def transpose(self, a):
        return a.T

    def inv(self, a):
        return self.np.linalg.inv(a)

    def det(self, a):
        return self.np.linalg.det(a)

    def trace(self, a):
        return self.np.trace(a)

    def eye(self, n):
        return self.np.eye(n)

    def ones(self, r, c):
        return self.np.ones((r, c))

    def zeros(self, r, c):
        return self.np.zeros((r, c))

    def softmax(self, S):
        e = self.np.exp(S - self.np.max(S, -1, keepdims=True))
        return e / self.np.sum(e, -1, keepdims=True)

    def rowsum(self, X):
        return self.np.sum(X, -1, keepdims=True) + 0 * X

    def rowmean(self, X):
        return self.np.mean(X, -1, keepdims=True) + 0 * X

    def diag(self, v):
        return self.np.diag(self.np.ravel(v))

    def diagonal(self, X):
        return self.np.diagonal(X).reshape(-1, 1).copy()

    def item(self, M):
        return M[0, 0]

    def kron(self, a, b):
        return self.np.kron(a, b)

    def heaviside(self, x, h0):
        return self.np.heaviside(x, h0)

    def vec(self, A):
        return A.reshape(-1, order="F").reshape(-1, 1)

    def commutation(self, p, q):
        """K with K vec(A) = vec(Aᵀ) for A p x q: vec(A)[i + p j] = A[i, j] goes to vec(Aᵀ)[j + q i]."""
        K = self.np.zeros((p * q, p * q))
        for i in range(p):
            for j in range(q):
                K[j + q * i, i + p * j] = 1.0
        return K


def numpy_ops():
    """The numpy backend of :func:`evaluate` (numpy imported on the first call, not with ``seqgrad.derive``)."""
    return _NumpyOps()
