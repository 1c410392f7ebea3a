"""Matrix-expression nodes of the programs: a scalar function applied entrywise (``tanh(Z)``), and the
squared norm of a matrix expression (``||M||^2``, the squared loss summed over rows and the batch).

The rule table (:mod:`derive.rules`), the programs (:mod:`derive.program`) and the printers
(:mod:`derive.program_text`) all read these nodes; they import nothing of the engine themselves.

>>> import sympy as sp
>>> Z = sp.MatrixSymbol("Z", 1, 3)
>>> print(Elementwise(sp.tanh, Z))
tanh(Z)
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions.applyfunc import ElementwiseApplyFunction
from sympy.matrices.expressions.matexpr import MatrixExpr

from seqgrad.errors import SeqgradTypeError

__all__ = ["Elementwise", "SquaredNorm"]

_PLACEHOLDER = "XPLACEHOLDERX"


class Elementwise(ElementwiseApplyFunction):
    """A scalar function applied entrywise to a matrix expression: ``phi(Z)``.

    Prints as the function applied to the matrix (``tanh(z_0)``), evaluates
    on explicit matrices with ``.doit()``.
    """

    def __new__(cls, function, expr):
        if not isinstance(function, sp.Lambda):
            d = sp.Dummy("d")
            function = sp.Lambda(d, function(d))
        if not getattr(expr, "is_Matrix", False):
            raise SeqgradTypeError("expr", expr, "a matrix expression")
        # (SymPy's constructor would call the function on a 1 x 1 matrix; Max refuses that)
        return MatrixExpr.__new__(cls, function, expr)

    def _apply_printed(self, printer, printed_arg: str) -> str:
        body = self.function.expr.xreplace({self.function.variables[0]: sp.Symbol(_PLACEHOLDER)})
        text = printer._print(body).replace(_PLACEHOLDER, printed_arg)
        if isinstance(body, sp.Add):  # 1 - h**2 inside a product needs its parentheses
            return r"\left(%s\right)" % text if printer.printmethod == "_latex" else f"({text})"
        return text

    def _latex(self, printer):
        if not self.expr.is_symbol:
            return self._apply_printed(printer, printer.parenthesize(self.expr, 1000))
        arg = printer._print(self.expr)
        if "^" in arg and self.function.expr.has(sp.Pow):  # (g^1_t)^2, not the double superscript g^1_t^2
            arg = r"\left(%s\right)" % arg
        return self._apply_printed(printer, arg)

    def _sympystr(self, printer):
        arg = printer._print(self.expr)
        return self._apply_printed(printer, arg if self.expr.is_symbol else f"({arg})")

    def entry(self, i: int, j: int):
        return self.function(self.expr[i, j])


class SquaredNorm(sp.Expr):
    """Sum of the squared entries of a matrix expression: ``||M||^2``.

    For a batch stored as rows it sums over the batch too, which is the loss
    autograd differentiates when per-sequence losses are added.
    """

    is_commutative = True

    def __new__(cls, arg):
        return sp.Expr.__new__(cls, arg)

    @property
    def arg(self):
        return self.args[0]

    def doit(self, **hints):
        arg = self.arg.doit(**hints) if hints.get("deep", True) else self.arg
        if isinstance(arg, sp.MatrixBase):
            return sp.Add(*[entry**2 for entry in arg])
        if isinstance(arg, MatrixExpr) and arg.is_Matrix is False and not arg.free_symbols - {arg}:
            return sp.Add(*[entry**2 for entry in arg.as_explicit()])
        return self.func(arg)

    def _latex(self, printer, exp=None):
        base = r"\left\lVert %s \right\rVert^{2}" % printer._print(self.arg)
        return base if exp is None else r"\left(%s\right)^{%s}" % (base, exp)

    def _sympystr(self, printer):
        return "||%s||**2" % printer._print(self.arg)
