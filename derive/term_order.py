"""The textbook's order of terms and factors, for every printer (LaTeX, plain text, unicode).

SymPy sorts the arguments of a sum or product by its own key, which prints
``z_0 = h_{-1}*w_h + w_x*x_0`` and ``L = (-y + yhat)**2/2``.  The course text
writes ``z_t = w_x x_t + w_h h_{t-1}`` and ``L = (yhat - y)^2/2``:

* in a sum, the positive terms come first (``yhat - y``, ``1 - h^2``), then the
  input term, the recurrent term, the other terms and a bias last, indices in
  counting order (``g_2`` before ``g_10``), a variable before a function of it
  (``x + F(x)``); in a sum of integers (an index) the number last (``2 j + 1``),
  and in a sum of sizes a bare term before a multiple (``W + 2 p - K``);
* in a sum of vectors or matrices (``MatAdd``, or non-commuting symbols), the
  shorter path comes first: the shortcut before the branch (``y = h + F(h)``,
  ``U = H + MHA(X)``, ``dH = dZ + dQ W_Q + ...``), the identity before the
  paths through one layer, then two (``I + J_1 + J_2 + J_2 J_1``); a bias
  still last; among paths of one length, the scalar order above, and Q before
  K before V (the text's order of attention's three maps);
* a sum that carries its own order (``written_order``, e.g. the LayerNorm rule's
  ``dx̂ - mean(dx̂) - x̂ ∘ mean(dx̂ ∘ x̂)``) keeps it;
* in a product, a number first, then a sensitivity (``g``, ``e``, ``delta``),
  then a weight (``w``, ``W``), then the other symbols, then bracketed and
  function factors.

:func:`textbook_order` rebuilds an expression with its arguments in this order,
unevaluated; a printer with ``order="none"`` then prints them as they stand.
Nothing is evaluated, so the value is unchanged:

>>> import sympy as sp
>>> from seqgrad.derive.term_order import textbook_order
>>> w_x, x_0, w_h, h, y, yhat = sp.symbols("w_x x_0 w_h h_-1 y yhat")
>>> sp.sstr(textbook_order(w_x * x_0 + w_h * h), order="none")
'w_x*x_0 + w_h*h_-1'
>>> sp.sstr(textbook_order((yhat - y) ** 2 / 2), order="none")
'(yhat - y)**2/2'
>>> sp.expand(textbook_order(w_x * x_0 + w_h * h) - (w_x * x_0 + w_h * h))
0
"""

from __future__ import annotations

import functools
import re

import sympy as sp
from sympy.matrices.expressions.matexpr import MatrixExpr

__all__ = ["textbook_order", "base_letter", "negated", "drop_zero_state"]

_BASE = re.compile(r"\\?([A-Za-z]+)")
_SENSITIVITY = {"g", "e", "delta", "G", "E"}
_WEIGHT = {"w", "W"}
_INPUT = {"x", "X", "pos"}
_STATE = {"h", "H", "c", "C", "s", "S"}
_GATE = {"f", "i", "o", "u", "r"}  # the gates of the LSTM and the GRU (forget, input, output; update, reset)
_BIAS = {"b", "beta"}  # a bias; LayerNorm's shift beta


def base_letter(symbol) -> str:
    """The base name of a symbol (``w`` of ``w_x``, ``h`` of ``h_{t-1}``, ``yhat`` of ``yhat``)."""
    m = _BASE.match(getattr(symbol, "name", str(symbol)))
    return m.group(1) if m else ""


def _natural(expr) -> list:
    text = sp.sstr(expr, order="none")
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", text)]


def _symbols(expr) -> list:
    """The named quantities in ``expr``: its symbols, not the integer sizes and indices (``T``, ``d``, ``i``)
    that shapes and subscripts bring in."""
    return [s for s in getattr(expr, "free_symbols", ()) if isinstance(s, sp.MatrixSymbol)
            or (isinstance(s, sp.Symbol) and not s.is_integer)]


def _role(term) -> int:
    """0 a number, 1 a term about the inputs, 2 about the states, 3 anything else, 4 a bias (written last)."""
    bases = {base_letter(s) for s in _symbols(term)}
    if term.is_Number:
        return 0
    if bases and bases <= _BIAS:
        return 4
    if bases & _INPUT:
        return 1
    return 2 if bases & _STATE else 3


def _chain_length(term) -> int:
    """How many derivative labels a term multiplies (``dc_1/dh_0 dh_0/dc_0``: 2): a chain through an intermediate is
    written after the direct term (``dc_1/dc_0 = f_1 + dc_1/dh_0 dh_0/dc_0``, the carry first)."""
    factors = term.args if isinstance(term, sp.Mul) else (term,)
    return sum(1 for f in factors if getattr(f, "is_derivative_label", False))


def _term_key(term):
    negative = bool(term.could_extract_minus_sign()) if hasattr(term, "could_extract_minus_sign") else False
    role = _role(term)
    index = _index(term, _INPUT if role == 1 else _STATE if role == 2 else ())
    return (negative, _chain_length(term), role, index, isinstance(term, sp.Function), _natural(term))


def _linear(terms) -> bool:
    """Whether a sum's ``terms`` are each a number, a symbol or a number times one (``2 p``, ``2 (K - 1)``): a sum of
    sizes, not a polynomial (``2 d_ff d_model + d_ff`` keeps the higher degree first)."""
    return all(a.is_Number or isinstance(a.as_coeff_Mul()[1], (sp.Symbol, sp.Add)) for a in terms)


def _scaled(term) -> bool:
    """Whether a term carries a number as a factor (``2 p``, ``2 (K - 1)``): in a size it comes after the bare terms,
    as a size is written from the quantity it changes (``W + 2 p - K``, ``H_o + 2 (K - 1)``)."""
    return isinstance(term, sp.Mul) and term.args[0].is_Number and abs(term.args[0]) != 1


def _matrix_term_key(term):
    """A term of a sum of vectors or matrices: sign, bias last, then the path's length (the shortcut ``h``
    before the branch ``F(h)``), then the scalar order (:func:`_term_key`) with Q, K, V in the text's order."""
    negative, _, role, index, _, natural = _term_key(term)
    return (negative, _offset(term), _path_length(term), role, index, _qkv(term), natural)


def _offset(term) -> bool:
    """A bias, or a bracketed sum holding one (the ``W_2 b_1 + b_2`` of an affine map): written last."""
    if isinstance(term, (sp.Add, sp.MatAdd)):
        return any(_offset(a) for a in term.args)
    return _role(term) == 4


def _path_length(term) -> int:
    """How many maps a term passes through: a symbol (or ``I``) 1, a product the sum of its non-scalar factors,
    a function application (a branch, ``F(h)``, ``MHA(X)``) one more than its argument."""
    if isinstance(term, (sp.Symbol, sp.MatrixSymbol, sp.Identity)) or term.is_Number:
        return 0 if term.is_Number else 1
    if isinstance(term, (sp.Transpose, sp.Inverse)) or (term.is_Pow and term.exp.is_Number):
        return _path_length(term.args[0])
    if isinstance(term, (sp.Mul, sp.MatMul, sp.HadamardProduct)):
        return sum(_path_length(a) for a in term.args if not a.is_Number) or 1
    if isinstance(term, (sp.Add, sp.MatAdd)):
        return max((_path_length(a) for a in term.args), default=1)
    if isinstance(term, sp.Function):
        return 1 + max((_path_length(a) for a in term.args), default=0)
    return 1


_QKV = re.compile(r"(?<![A-Za-z])d?([QKV])(?![A-Za-z])|_\{?([QKV])\b")


def _qkv(term) -> int:
    """0, 1, 2 for a term about the queries, keys or values (``dQ W_Q``), 3 otherwise."""
    found = ["QKV".index(m.group(1) or m.group(2)) for s in _symbols(term) for m in [_QKV.search(s.name)] if m]
    return min(found) if found else 3


def _vector_sum(expr) -> bool:
    return isinstance(expr, sp.MatAdd) or (isinstance(expr, sp.Add) and not expr.is_commutative)


def _index(term, bases) -> int:
    """The time index of the input (or state) symbol in a term: the x_t term for t = 0 comes first."""
    found = [int(m.group(1)) for s in _symbols(term) if base_letter(s) in bases
             for m in [re.search(r"_\{?(-?\d+)", s.name)] if m]
    return min(found) if found else 0


def _symbol_role(symbol) -> int:
    """1 a sensitivity, 2 a weight, 3 a gate (``f_t c_{t-1}``, ``i_t c̃_t``: the gate before what it scales), 4 other."""
    base = base_letter(symbol)
    if base in _SENSITIVITY:
        return 1
    if base in _WEIGHT:
        return 2
    return 3 if base in _GATE and not getattr(symbol, "is_integer", False) else 4


def _factor_key(factor):
    if factor.is_Number:
        role = 0
    elif isinstance(factor, (sp.Symbol, sp.MatrixSymbol)):
        role = _symbol_role(factor)
    elif factor.is_Pow and isinstance(factor.base, sp.Symbol):
        role = _symbol_role(factor.base)
    elif isinstance(factor, sp.Indexed):  # an entry a_i: as its array (a_i (delta_ij - a_j), the bracket after it)
        role = _symbol_role(factor.base.label)
    else:
        role = 5
    return (role, _natural(factor))


def _complement(factor):
    """``x`` for a factor ``1 - x`` (a gate's complement, a sigmoid's slope ``sigma (1 - sigma)``), else None."""
    if isinstance(factor, sp.Add) and len(factor.args) == 2 and sp.Integer(1) in factor.args:
        rest = next(a for a in factor.args if a != 1)
        if rest.could_extract_minus_sign():
            x = -rest
            if isinstance(x, (sp.Symbol, sp.Indexed)) or (isinstance(x, sp.Function) and len(x.args) == 1):
                return x
    return None


def _factors_in_order(args) -> list:
    """The factors of a product in the text's order (:func:`_factor_key`), with ``1 - x`` right after ``x`` when both
    are factors (``f_t (1 - f_t)``, ``a_0 (1 - a_0)``: a sigmoid's or a softmax's slope, written together), and the
    complement ``1 - g`` of a gate ``g`` before what it scales, as the gate is (``(1 - u_t) h~_t``)."""
    present = set(args)

    def key(factor):
        x = _complement(factor)
        if x is not None and x in present:
            return _factor_key(x) + (1,)
        if x is not None and isinstance(x, sp.Symbol) and _symbol_role(x) == 3:
            return (3, _natural(x), 1)
        return _factor_key(factor) + (0,)

    return sorted(args, key=key)


def textbook_order(expr):
    """``expr`` with every commutative sum and product rebuilt (unevaluated) in the text's order."""
    if not isinstance(expr, sp.Basic) or expr.is_Atom or not expr.args:
        return expr
    if isinstance(expr, (sp.Symbol, sp.MatrixSymbol)):
        return expr
    return _ordered(expr)


@functools.lru_cache(maxsize=8192)  # a display prints each row whole and again piece by piece while it lays it out
def _ordered(expr):
    args = [textbook_order(a) for a in expr.args]
    if getattr(expr, "written_order", False):  # a sum a rule wrote in the text's order (derive.rules.Written) keeps it
        return expr.func(*args, evaluate=False)
    if _vector_sum(expr):
        return expr.func(*sorted(args, key=_matrix_term_key), evaluate=False)
    if isinstance(expr, (sp.MatMul, sp.HadamardProduct)):
        return expr.func(*args, evaluate=False)
    if isinstance(expr, sp.Sum) and isinstance(args[0], MatrixExpr):  # a sum of matrices as written: Sum's
        out = sp.Expr.__new__(sp.Sum, *args)  # constructor folds its term again ((A B)^T -> B^T A^T)
        out.is_commutative = False
        return out
    if isinstance(expr, sp.Add):
        linear = _linear(args)  # a size (W + 2 p - K): written from the quantity it changes, a multiple after it
        if expr.is_integer and any(a.is_Number for a in args):  # index arithmetic: s + 1, 2 j + 1, T - 1 (the number last)
            return sp.Add(*sorted(args, key=lambda a: (a.is_Number, is_negative(a), linear and _scaled(a), _term_key(a))),
                          evaluate=False)
        return sp.Add(*sorted(args, key=lambda a: (is_negative(a), linear and _scaled(a), _term_key(a))), evaluate=False)
    if isinstance(expr, sp.Mul) and expr.is_commutative:
        return sp.Mul(*_factors_in_order(args), evaluate=False)
    if all(a is b for a, b in zip(args, expr.args)):
        return expr
    if isinstance(expr, sp.Pow):
        return sp.Pow(*args, evaluate=False)
    try:
        if isinstance(expr, MatrixExpr) or (getattr(type(expr), "__module__", None) or "").startswith("seqgrad.derive"):
            return expr.func(*args)
        try:
            return expr.func(*args, evaluate=False)
        except TypeError:
            return expr.func(*args)
    except (TypeError, ValueError, AttributeError):  # a class that cannot be rebuilt keeps SymPy's order inside
        return expr


def is_negative(term) -> bool:
    """``term`` reads with a minus sign in front: a product of matrices too, whose scalar factor is negative
    (``−(1/n) 𝟏 𝟏ᵀ``; SymPy's ``could_extract_minus_sign`` says no for a matrix product unless it starts with −1)."""
    if isinstance(term, sp.MatMul) and term.args and not term.args[0].is_Matrix:
        return term.args[0].could_extract_minus_sign()
    return term.could_extract_minus_sign()


def negated(term):
    """``-term`` keeping the order of the factors (SymPy's ``-term`` re-sorts them)."""
    if isinstance(term, sp.Mul) and term.args and term.args[0].is_Number:
        coeff, rest = -term.args[0], term.args[1:]
        if coeff == 1:
            return rest[0] if len(rest) == 1 else sp.Mul(*rest, evaluate=False)
        return sp.Mul(coeff, *rest, evaluate=False)
    if isinstance(term, sp.MatMul) and term.args and not term.args[0].is_Matrix:  # a scalar factor in front
        coeff, rest = -term.args[0], term.args[1:]
        if coeff == 1:
            return rest[0] if len(rest) == 1 else sp.MatMul(*rest, evaluate=False)
        return sp.MatMul(coeff, *rest, evaluate=False)
    return -term


def drop_zero_state(rows: list) -> list:
    """``(lhs, [rhs, ...])`` rows with the zero initial state dropped, as the text prints them: every
    ``s = 0`` row whose left side is a symbol goes, ``s`` is set to zero in the other rows, and so are
    the initial states ``h_{-1}``, ``c_{-1}`` wherever they appear (zero by the text's convention)."""
    zeros = {s: (sp.ZeroMatrix(*s.shape) if isinstance(s, sp.MatrixSymbol) else sp.Integer(0))
             for _, chain in rows for side in chain for s in _free_states(side)}
    kept = []
    for lhs, chain in rows:
        if isinstance(lhs, (sp.Symbol, sp.MatrixSymbol)) and len(chain) == 1 and _is_zero(chain[0]):
            zeros[lhs] = chain[0]
            continue
        kept.append((lhs, [_without(r, zeros) for r in chain]) if zeros else (lhs, chain))
    return kept or rows


_INITIAL = re.compile(r"(h|c|H|C)_(\{-1\}|-1)")


def _free_states(expr) -> list:
    """The initial states (``h_{-1}``, ``c_{-1}``: zero by the text's convention) in ``expr``."""
    return [s for s in getattr(expr, "free_symbols", ()) if isinstance(s, (sp.Symbol, sp.MatrixSymbol))
            and _INITIAL.fullmatch(s.name)]


def _is_zero(expr) -> bool:
    return isinstance(expr, sp.ZeroMatrix) or (isinstance(expr, sp.Basic) and expr.is_zero is True and not expr.free_symbols)


def _without(expr, zeros: dict):
    if not isinstance(expr, sp.Basic) or not (expr.free_symbols & set(zeros)):
        return expr
    out = expr.xreplace(zeros)
    if isinstance(out, sp.MatrixExpr):
        out = out.doit(deep=False) if not isinstance(out, sp.MatrixSymbol) else out
        out = _drop_zero_terms(out)
    return out


def _drop_zero_terms(expr):
    """A matrix sum or product with zero matrices in it, simplified only as far as the zeros go."""
    if isinstance(expr, sp.ZeroMatrix) or not expr.args:
        return expr
    if isinstance(expr, sp.MatMul) and any(isinstance(a, sp.ZeroMatrix) for a in expr.args):
        return sp.ZeroMatrix(*expr.shape)
    if isinstance(expr, sp.MatAdd):
        terms = [_drop_zero_terms(a) for a in expr.args]
        terms = [t for t in terms if not isinstance(t, sp.ZeroMatrix)]
        return sp.ZeroMatrix(*expr.shape) if not terms else terms[0] if len(terms) == 1 else sp.MatAdd(*terms)
    return expr
