"""The Python printer of compiled code: SymPy expressions -> numpy or torch source text.

Every function application is an operation of the registry (:mod:`seqgrad.operations`), printed as
``_op_NAME(...)`` and bound to the backend's implementation (:func:`operation_namespace`); one that is not
an operation, or has no implementation in the backend, is refused when the source is printed, naming it and
the backend.  The IR's emitter (:mod:`crosscheck.loop_ir`) prints every compiled function through it: the
straight-line programs of :func:`crosscheck.lambdify.lambdify` and the cell loops.
"""

from __future__ import annotations

import keyword
import re
from typing import Mapping

import sympy as sp
from sympy.matrices.expressions.matexpr import MatrixExpr
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.precedence import PRECEDENCE

from seqgrad.derive.operations import operation_of
from seqgrad.errors import SeqgradValueError

__all__ = ["identifier", "operation_backend", "operation_namespace"]

def identifier(name: str, taken: set[str]) -> str:
    """A Python identifier for a SymPy name (``h_{-1}`` -> ``h_m1``, ``g_0^z`` -> ``g_0_z``)."""
    text = name.replace("-", "m").replace("^", "_")
    text = re.sub(r"[^0-9A-Za-z_]", "", text) or "v"
    if text[0].isdigit() or keyword.iskeyword(text) or text.startswith("_"):
        text = "v" + text
    base, i = text, 1
    while text in taken:
        i += 1
        text = f"{base}_{i}"
    taken.add(text)
    return text


class _Printer(NumPyPrinter):
    """Shared rules for both backends; ``names`` maps symbols to identifiers.

    Every function application is an operation of the registry (:mod:`seqgrad.operations`), printed as
    ``_op_NAME(...)`` and bound to the backend's implementation (:func:`operation_namespace`); a function
    that is not one, or has no implementation in the backend, is refused here, when the code is generated,
    naming it (SymPy's own numpy/math mappings are never used, so torch code cannot call numpy).  A number
    that is not rational (``sqrt(2)``, ``pi``) is printed as its float."""

    _module = "numpy"
    _own = ("Heaviside", "phi", "dphi")  # printed by this class's own methods

    def __init__(self, names: Mapping[sp.Basic, str]):
        super().__init__({"fully_qualified_modules": True, "inline": True, "allow_unknown_functions": False})
        self.names = names
        self.used: dict[str, object] = {}

    def _print(self, expr, **kwargs):
        if isinstance(expr, sp.Expr) and not isinstance(expr, MatrixExpr) and expr.is_number and not expr.is_Rational:
            return _float_text(expr)  # erf(1/2) and sqrt(2) too: a number, never a call on a Python number
        if isinstance(expr, sp.Function) and type(expr).__name__ not in self._own:
            return self._print_operation(expr)
        return super()._print(expr, **kwargs)

    def _print_operation(self, expr, arg_text=None) -> str:
        op = operation_of(expr)
        if op is None:
            raise SeqgradValueError("expression", str(expr.func), "operations of the registry (seqgrad.operations) only, "
                                    f"to compile for {self._module}; register it (docs/adding-an-operation.md)")
        key = "_op_" + op.name
        if key not in self.used:
            self.used[key] = operation_backend(self._module, op).function(op.name)  # refused here if it has none
        args = ", ".join((arg_text or self._print)(a) for a in expr.args)
        return f"{key}({args})"

    def _print_Symbol(self, expr):
        if expr in self.names:
            return self.names[expr]
        return super()._print_Symbol(expr)

    _print_Dummy = _print_Symbol

    def _print_MatrixSymbol(self, expr):
        return self.names.get(expr) or str(expr.name)

    def _print_MatMul(self, expr):
        coeff, mats = expr.as_coeff_matrices()
        if len(mats) > 1 and isinstance(mats[0], sp.OneMatrix):
            # 1 v (a row broadcast over the rows) and 1^T M (column sums): derive.blocks' gamma, beta
            rest = sp.MatMul(*mats[1:]) if len(mats) > 2 else mats[1]
            inner = self._print(rest)
            text = f"_colsum({inner})" if mats[0].shape[0] == 1 else f"({inner})"
            return text if coeff == 1 else f"{self.parenthesize(coeff, PRECEDENCE['Mul'])}*{text}"
        # a factor of Mul precedence (a Hadamard product a*b, a scaled matrix) is parenthesised: @ and * bind
        # alike in Python, so W @ a*b would be (W @ a)*b
        text = " @ ".join(self.parenthesize(m, PRECEDENCE["Mul"], strict=False) for m in mats)
        return text if coeff == 1 else f"{self.parenthesize(coeff, PRECEDENCE['Mul'])}*{text}"

    def _print_MatAdd(self, expr):
        outer = [a.args for a in expr.args if isinstance(a, sp.MatMul) and len(a.args) == 2 and isinstance(a.args[0], sp.Transpose)]
        if len(outer) == len(expr.args) > 2:
            # sum_t a_t^T b_t (the text's outer products) as one product of the stacked rows
            left = ", ".join(self._print(a.arg) for a, _ in outer)
            right = ", ".join(self._print(b) for _, b in outer)
            return f"_cat(({left})).T @ _cat(({right}))"
        return " + ".join(self.parenthesize(a, PRECEDENCE["Add"]) for a in expr.args)

    def _print_HadamardProduct(self, expr):  # a factor A @ B parenthesised, as above: a*(A @ B), not (a*A) @ B
        return "*".join(self.parenthesize(a, PRECEDENCE["Mul"], strict=not isinstance(a, sp.MatMul)) for a in expr.args)

    def _print_Transpose(self, expr):
        return f"{self.parenthesize(expr.arg, PRECEDENCE['Atom'], strict=True)}.T"

    def _print_ZeroMatrix(self, expr):
        rows = "_B" if expr.shape[0] == 1 else expr.shape[0]  # a zero row vector gets one row per sequence
        return f"_zeros({rows}, {expr.shape[1]})"

    def _print_OneMatrix(self, expr):
        return "1.0"

    def _print_Elementwise(self, expr):
        var = expr.function.variables[0]
        inner = self._print(expr.expr)
        marker = sp.Symbol("ELEMENTWISEARG")
        body = self._print(expr.function.expr.xreplace({var: marker}))
        return "(" + body.replace("ELEMENTWISEARG", f"({inner})") + ")"

    # the row-wise primitives of derive.rules (Transformer programs, derive.blocks)
    def _print_RowSoftmax(self, expr):
        return f"_softmax({self._print(expr.arg)})"

    def _print_RowSum(self, expr):
        return f"_rowsum({self._print(expr.arg)})"

    def _print_RowMean(self, expr):
        return f"_rowmean({self._print(expr.arg)})"

    def _print__RowMap(self, expr):
        """A row map without an implementation of its own (LayerNorm's std and normalize, RMSNorm's rms and
        rmsnormalize): its ``definition()`` over the table's primitives, so its numeric code is written once, in
        derive.rules, for every backend."""
        definition = getattr(expr, "definition", None)
        if definition is None:
            raise SeqgradValueError("expression", type(expr).__name__, "a row map with a numeric implementation or a definition()")
        return "(" + self._print(definition()) + ")"  # bracketed: printed where a call (an atom) would stand

    def _print_Masked(self, expr):
        return f"({self._print(expr.args[0])} + {self._print(expr.args[1])})"

    def _print_HConcat(self, expr):
        return "_cat((" + ", ".join(self._print(b) for b in expr.args) + ",), -1)"

    def _print_ColumnBlock(self, expr):
        start, width = expr.args[1], expr.args[2]
        return f"{self.parenthesize(expr.args[0], PRECEDENCE['Atom'], strict=True)}[:, int({self._print(start)}):int({self._print(start + width)})]"

    def _print_DiagMatrix(self, expr):
        return f"_diag({self._print(expr.args[0])})"

    def _print_DiagonalOf(self, expr):
        return f"_diagonal({self._print(expr.arg)})"

    def _print_SquaredNorm(self, expr):
        return f"_sumsq({self._print(expr.arg)})"

    def _print_Heaviside(self, expr):
        h0 = expr.args[1] if len(expr.args) > 1 else sp.Rational(1, 2)
        return f"_heaviside({self._print(expr.args[0])}, {float(h0)!r})"

    def _print_Max(self, expr):
        return self._fold("_maximum", expr.args)

    def _print_Min(self, expr):
        return self._fold("_minimum", expr.args)

    def _fold(self, fn, args):
        text = self._print(args[0])
        for a in args[1:]:
            text = f"{fn}({text}, {self._print(a)})"
        return text

    def _print_phi(self, expr):
        raise SeqgradValueError("activation", "phi", "a concrete activation (tanh, sigmoid, relu, identity) "
                                "to evaluate numerically; the generic phi has no numeric value")

    _print_dphi = _print_phi


class _TorchPrinter(_Printer):
    _module = "torch"


def _float_text(expr) -> str:
    try:
        return f"({float(expr)!r})"
    except TypeError:
        raise SeqgradValueError("expression", str(expr), "real numbers (this one is not real)") from None


def operation_backend(backend: str, op):
    """The namespace of ``backend`` in which ``op`` resolves: the registry's (:func:`numeric.activations.namespace`),
    or, for a cell's own operation, one that holds it too."""
    from seqgrad import operations as registry
    from seqgrad.numeric.activations import namespace

    ns = namespace(backend)
    if registry.find(op.name) is op:
        return ns
    return registry.Namespace(backend, ns._module, {h: getattr(ns, h) for h in registry.HELPERS}, wrap=ns._wrap,
                              extra={op.name: op})


def operation_namespace(backend: str, functions=None) -> dict:
    """``_op_NAME`` -> implementation in ``backend`` for every operation of the registry and of ``functions``
    (a cell's own, name -> SymPy node); an operation without an implementation in the backend is left out
    (the printer refuses it by name if the code would call it)."""
    from seqgrad import operations as registry

    ops = list(registry.operations())
    ops += [n._operation for n in (functions or {}).values() if getattr(n, "_operation", None) is not None]
    out = {}
    for op in ops:
        try:
            out["_op_" + op.name] = operation_backend(backend, op).function(op.name)
        except SeqgradValueError:
            pass
    return out


def _negated(term) -> bool:
    """Whether ``term`` is a product whose numeric factor is -1 (``-u``, ``-x*y``)."""
    return term.is_Mul and term.args[0] is sp.S.NegativeOne


class _Code:
    """Python source for scalar expressions, fast: the common nodes (symbols,
    numbers, sums, products, integer powers, known functions) are written
    directly, everything else goes through the SymPy printer."""

    def __init__(self, printer: _Printer, module: str):
        self.printer, self.module = printer, module
        self.memo: dict = {}

    def __call__(self, expr) -> str:
        try:
            return self.memo[expr]
        except KeyError:
            pass
        text = self._code(expr)
        self.memo[expr] = text
        return text

    def _code(self, expr) -> str:
        names = self.printer.names
        if expr in names:
            return names[expr]
        if isinstance(expr, MatrixExpr):
            return self.printer.doprint(expr)
        if expr.is_Integer:
            return f"({int(expr)})" if expr < 0 else str(int(expr))
        if expr.is_Rational:
            return f"({expr.p}/{expr.q})"
        if expr.is_Float:
            return f"({float(expr)!r})"
        if expr.is_number and not isinstance(expr, MatrixExpr):  # sqrt(2), pi, erf(1/2): its float
            return _float_text(expr)
        if expr.is_Add:  # a term with the factor -1 subtracted: a - b (the same number as a + (-1)*b)
            first, *rest = expr.args
            return "(" + self(first) + "".join(f" - {self._minus_of(a)}" if _negated(a) else f" + {self(a)}"
                                               for a in rest) + ")"
        if expr.is_Mul:
            if _negated(expr):  # -u, not (-1)*u
                return f"(-{self._minus_of(expr)})"
            return "*".join(self(a) for a in expr.args)
        if expr.is_Pow:
            return f"({self._base(expr.base)}**{self(expr.exp)})"
        if isinstance(expr, sp.Function) and type(expr).__name__ not in self.printer._own:
            return self.printer._print_operation(expr, self)
        return "(" + self.printer.doprint(expr) + ")"

    def _minus_of(self, term) -> str:
        """The code of ``-term`` for a product with the factor -1 (its other factors)."""
        return "*".join(self(a) for a in term.args[1:])

    def _base(self, base) -> str:
        text = self(base)
        return f"({text})" if base.is_Mul else text
