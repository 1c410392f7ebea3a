"""A sum over the general step t of a cell's derivation, ``sum_{t=lo}^{hi} term``, scalar or matrix.

Not SymPy's ``Sum``: its terms hold the step in their values' indices (``g_t^z h_{t-1}``, nodes of
:mod:`derive.sequence`), so ``.at(T)`` writes it out for a concrete length through the derivation's own
instantiation; under ``subs(T, 3)`` and ``doit()``
it behaves as SymPy's ``Sum`` does.
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions.matexpr import MatrixExpr

from .safe_parse import as_sympy

from .sequence import T, t  # the symbolic step and length of the general derivation


class _StepSumMixin:
    """``sum_{t=lo}^{hi} term`` over a general step t; ``.at(T)`` instantiates it for a concrete length."""

    @property
    def term(self):
        return self.args[0]

    def _bounds(self):
        return self.args[1], self.args[2]

    def _latex(self, printer, exp=None):
        lo, hi = self._bounds()
        return r"\sum_{%s=%s}^{%s} %s" % (printer._print(t), printer._print(lo), printer._print(hi),
                                          printer.parenthesize(self.term, 45))

    def _sympystr(self, printer):
        lo, hi = self._bounds()
        return "Sum_{%s=%s}^{%s} %s" % (printer._print(t), printer._print(lo), printer._print(hi).replace(" ", ""),
                                        printer._print(self.term))

    # As SymPy's Sum: ``.subs(T, 3)`` bounds the sum (the step count is kept) and ``.doit()`` writes it out;
    # substitution and pickling keep the instantiation the sum was made with.
    def _eval_subs(self, old, new):
        args = [a._subs(old, new) for a in self.args]
        steps = int(new) if old == T and getattr(new, "is_Integer", False) else self._steps
        return self._rebuilt(args, steps)

    def _rebuilt(self, args, steps):
        out = type(self)(*args, instantiate=self.instantiate)
        out._steps = steps
        return out

    @property
    def _steps(self):
        return self.__dict__.get("steps")

    @_steps.setter
    def _steps(self, value):
        self.__dict__["steps"] = value

    def doit(self, **hints):
        if self._steps is None:
            return self
        return self.at(self._steps).doit(**hints) if hints.get("deep", True) else self.at(self._steps)

    def __getstate__(self):
        return {"instantiate": self.instantiate, "steps": self._steps}

    def __setstate__(self, state):
        self.__dict__.update(state)

    def at(self, steps: int, instantiate=None):
        """The sum written out for ``T = steps`` (``instantiate(term, k, steps)`` maps the step symbols)."""
        inst = instantiate or self.instantiate
        lo, hi = (int(b.subs(T, steps)) for b in self._bounds())
        terms = [inst(self.term, k, steps) for k in range(lo, hi + 1)]
        terms = [x for x in terms if not _is_zero(x)]
        if not terms:
            return sp.ZeroMatrix(*self.shape) if isinstance(self, MatrixExpr) else sp.Integer(0)
        return sp.Add(*terms) if not isinstance(self, MatrixExpr) else sp.MatAdd(*terms)


class StepSum(_StepSumMixin, sp.Expr):
    """A scalar sum over the general step t (not SymPy's ``Sum``: its terms name t in their symbols)."""

    is_commutative = True

    def __new__(cls, term, lo, hi, instantiate=None):
        obj = sp.Expr.__new__(cls, term, as_sympy(lo), as_sympy(hi))
        obj.instantiate = instantiate
        return obj


class MatStepSum(_StepSumMixin, MatrixExpr):
    """A matrix sum over the general step t."""

    def __new__(cls, term, lo, hi, instantiate=None):
        obj = MatrixExpr.__new__(cls, term, as_sympy(lo), as_sympy(hi))
        obj.instantiate = instantiate
        return obj

    @property
    def shape(self):
        return self.term.shape


def _is_zero(x) -> bool:
    return (x == 0) is True or isinstance(x, sp.ZeroMatrix)


def _make_sum(term, lo, hi, gen):
    cls = MatStepSum if isinstance(term, MatrixExpr) else StepSum
    return cls(term, lo, hi, instantiate=gen.instantiate)  # a bound method: the sum pickles with its derivation
