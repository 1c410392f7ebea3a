r"""Values of a sequence as SymPy nodes: a value at a step, the adjoint of a value, the step and the length.

A recurrent derivation speaks of ``h_{t-1}``, ``z_t^r`` and ``g_t^h = dL/dh_t``.  Each is a node, never text
inside a symbol's name:

* :func:`stepped` ``(base, index)``: the user's value ``base`` (``"h"``, ``"z^r"``) at the step ``index``, a SymPy
  expression in the step :data:`t` and the length :data:`T` (``t - 1``, ``t + 1``, ``T - 1``, ``3``);
* :func:`adjoint` ``(of)``: the gradient of the loss with respect to the value ``of`` (a :class:`Sensitivity`;
  not SymPy's ``Adjoint``, the conjugate transpose).

Both are atoms for the calculus (``diff``, ``free_symbols``, the compiled code see one symbol each); their
index is structure, so instantiation is substitution and the printers set the index with the notation's
letters:

>>> import sympy as sp
>>> from seqgrad.derive.sequence import stepped, adjoint, t, T
>>> h = stepped("h", t - 1)
>>> h, h.base, h.index
(h_{t-1}, 'h', t - 1)
>>> (adjoint(stepped("z", t + 1)) * h).subs(t, 2)
g_3^z*h_1
>>> stepped("h", t).subs(t, T - 1) == stepped("h", T - 1)
True
>>> from seqgrad.derive.latex_settings import Notation
>>> Notation(letters={"t": "k", "T": "N", "g": r"\delta"}).latex(adjoint(stepped("h", T - 1)) * h)
'\\delta^{h}_{N-1} h_{k-1}'

A user value may be called ``g`` or ``dh``: a value of the user and an adjoint are different nodes, whatever
their names print as.
"""

from __future__ import annotations

import sympy as sp
from sympy.core.symbol import Str

from .safe_parse import as_sympy

__all__ = ["t", "T", "Stepped", "SteppedMatrix", "Sensitivity", "SensitivityMatrix", "stepped", "adjoint", "is_sequence_value",
           "index_text", "base_parts"]

#: the symbolic step and length of the general derivation
t, T = sp.Symbol("t", integer=True, nonnegative=True), sp.Symbol("T", integer=True, positive=True)


def index_order(index):
    """An index sum rebuilt (unevaluated) with its positive terms first, then the negative ones, the number last
    (``t - 1``, ``m + u - k + 1``; SymPy's own order is ``-1 + t``)."""
    if not isinstance(index, sp.Add):
        return index
    terms = sorted(index.args, key=lambda a: (a.is_Number, a.could_extract_minus_sign()))
    return sp.Add(*terms, evaluate=False)


def index_text(i) -> str:
    """A step index as the plain text writes it in a subscript: ``0``, ``{-1}``, ``t``, ``{t-1}``, ``{T-1}``
    (the name a node prints as in plain text; the LaTeX printer sets the index itself)."""
    text = sp.sstr(index_order(as_sympy(i)), order="none").replace(" ", "")
    return text if len(text) == 1 else "{%s}" % text


def base_parts(base: str) -> tuple[str, str]:
    """``"z^r"`` -> (``"z"``, ``"r"``): a display name's letter and its one superscript (``Cell(display=)``)."""
    stem, _, sup = base.partition("^")
    return stem, sup


def _stepped_name(base: str, index) -> str:
    stem, sup = base_parts(base)
    return f"{stem}_{index_text(index)}" + (f"^{sup}" if sup else "")


def _adjoint_name(of) -> str:
    stem, sup = base_parts(of.base)
    return f"g_{index_text(of.index)}^" + (stem if not sup else "{%s^%s}" % (stem, sup))


class _StepParts:
    """``base`` (the user's name) and ``index`` (the step) of a value at a step, read from its parts."""

    @property
    def base(self) -> str:
        return getattr(self._parts[0], "name", self._parts[0])

    @property
    def index(self):
        return self._parts[1]


class _AdjointParts:
    """``of`` (the value at a step), and its ``base`` and ``index``, of an adjoint, read from its parts."""

    @property
    def of(self):
        return self._parts[0]

    @property
    def base(self) -> str:
        return self.of.base

    @property
    def index(self):
        return self.of.index


class _SequenceScalar(sp.Symbol):
    """A scalar atom with structure (see :class:`Stepped`, :class:`Sensitivity`): named by its structure,
    equal only to a node of its own kind with the same structure, substituted through its index."""

    def __new__(cls, *structure):
        obj = sp.Symbol.__new__(cls, cls._name(*structure))
        obj._structure = structure
        return obj

    @property
    def _parts(self) -> tuple:
        return self._structure

    def __getnewargs_ex__(self):
        return (self._structure, {})

    @classmethod
    def class_key(cls):
        return sp.Symbol.class_key()  # ordered among symbols by name, as the text's plain symbols are

    def _hashable_content(self):
        return (type(self).__name__,) + self._structure

    def _eval_subs(self, old, new):
        structure = tuple(s._subs(old, new) if isinstance(s, sp.Basic) else s for s in self._structure)
        return None if structure == self._structure else type(self)(*structure)


class Stepped(_StepParts, _SequenceScalar):
    """The scalar value ``base`` at step ``index`` (``h_{t-1}``): see :func:`stepped`."""

    @staticmethod
    def _name(base, index):
        return _stepped_name(base, index)

    def __new__(cls, base: str, index):
        return super().__new__(cls, base, as_sympy(index))


class Sensitivity(_AdjointParts, _SequenceScalar):
    """The gradient of the loss with respect to the scalar value ``of`` (``g_t^h``): see :func:`adjoint`."""

    @staticmethod
    def _name(of):
        return _adjoint_name(of)

    def __new__(cls, of: Stepped):
        return super().__new__(cls, of)


class _SequenceMatrix(sp.MatrixSymbol):
    """A matrix atom with structure: ``args`` are the structure and the shape, the name is made from them."""

    @property
    def _parts(self) -> tuple:
        return self.args[:-2]

    @property
    def name(self) -> str:
        return self._name(*self._parts)

    @property
    def shape(self):
        return self.args[-2], self.args[-1]

    def sort_key(self, order=None):
        return sp.MatrixSymbol(self.name, *self.shape).sort_key(order)  # ordered by name, as a MatrixSymbol

    def _eval_subs(self, old, new):
        args = tuple(a._subs(old, new) for a in self.args)
        return None if args == self.args else self.func(*args)


class SteppedMatrix(_StepParts, _SequenceMatrix):
    """The row value ``base`` at step ``index`` (``\\mathbf{h}_{t-1}``, shape ``(1, H)``): see :func:`stepped`."""

    _name = staticmethod(lambda base, index: _stepped_name(base.name, index))

    def __new__(cls, base, index, rows, cols):
        base = base if isinstance(base, Str) else Str(base)
        return sp.Basic.__new__(cls, base, as_sympy(index), sp.Integer(rows), sp.Integer(cols))


class SensitivityMatrix(_AdjointParts, _SequenceMatrix):
    """The gradient of the loss with respect to the row value ``of`` (``\\mathbf{g}_t^h``)."""

    _name = staticmethod(_adjoint_name)

    def __new__(cls, of, rows=None, cols=None):
        rows, cols = of.shape if rows is None else (rows, cols)
        return sp.Basic.__new__(cls, of, sp.Integer(rows), sp.Integer(cols))


def stepped(base: str, index, shape=None):
    """The value ``base`` at step ``index``: a scalar (``shape`` None) or a matrix of ``shape`` (a row)."""
    return SteppedMatrix(base, index, *shape) if shape else Stepped(base, index)


def adjoint(of):
    """``dL/d of`` for a value at a step (:func:`stepped`), of its shape."""
    return SensitivityMatrix(of) if isinstance(of, SteppedMatrix) else Sensitivity(of)


def is_sequence_value(s) -> bool:
    """Whether ``s`` is a value at a step or an adjoint (a node that carries a step index)."""
    return isinstance(s, (Stepped, SteppedMatrix, Sensitivity, SensitivityMatrix))
