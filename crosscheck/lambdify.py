"""Turn derivation programs into numpy or torch functions.

The program *is* the common-subexpression elimination: every definition
``z_t := ...``, ``g_t^z := ...`` becomes one assignment of the generated
function, in program order, so a quantity used many times is computed once.
Vector cells keep the text's matrix form: one matrix product per step, and
a weight gradient ``sum_t (g_t^z)^T x_t`` becomes one product of the stacked
rows; a batch of B sequences is B rows, so the same code runs a whole batch.

The printers are our own small subclasses of SymPy's ``NumPyPrinter`` with an
explicit module mapping; in particular ``Max`` becomes ``numpy.maximum`` /
``torch.clamp`` (SymPy 1.14 prints it as ``torch.max``, which is not the
elementwise maximum ReLU needs) and ReLU's slope ``Heaviside(z, 0)`` keeps its
value at 0.

>>> import numpy as np
>>> from seqgrad.derive import rnn
>>> net = rnn.unroll(steps=3, activation="tanh")
>>> f = lambdify(net.program, [net.L, net.grad("w_h")], net.program.leaves())
>>> [str(a) for a in f.args]
['w_h', 'w_x', 'x_0', 'x_1', 'x_2', 'w_o', 'y']
>>> L, dw_h = f(0.5, 1.0, 0.2, -0.1, 0.4, 2.0, 0.3)
>>> round(float(L), 6), round(float(dw_h), 6)
(0.105237, 0.076486)
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np
import sympy as sp
from sympy.matrices.expressions.matexpr import MatrixExpr
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.precedence import PRECEDENCE

from seqgrad.derive.operations import operation_of
from seqgrad.derive.program import Program
from seqgrad.errors import NonFiniteError, SeqgradValueError

__all__ = ["lambdify", "Compiled", "RNNFunction", "BACKENDS", "identifier"]

BACKENDS = ("numpy", "torch")


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


def _numpy_namespace() -> dict:
    return {
        "numpy": np, "math": __import__("math"),
        "_heaviside": np.heaviside, "_maximum": np.maximum, "_minimum": np.minimum,
        "_sumsq": lambda m: np.sum(np.square(m)), "_cat": np.concatenate,
        "_softmax": _np_softmax, "_rowsum": lambda m: np.sum(m, -1, keepdims=True),
        "_rowmean": lambda m: np.mean(m, -1, keepdims=True),
        "_colsum": lambda m: np.sum(m, -2, keepdims=True), "_diag": lambda v: np.diag(np.ravel(v)),
        "_diagonal": lambda m: np.diagonal(m).reshape(-1, 1),
    }


def _np_softmax(S):
    """Row softmax, max-subtracted (masked entries -inf give exactly 0)."""
    e = np.exp(S - np.max(S, -1, keepdims=True))
    return e / np.sum(e, -1, keepdims=True)


def _torch_namespace() -> dict:
    import math

    import torch

    from seqgrad.numeric.activations import namespace

    ops = namespace("torch")  # the registry's structural helpers: max/min of a tensor and a number, Heaviside

    return {
        "torch": torch, "math": math, "_heaviside": ops.heaviside,
        "_maximum": ops.maximum, "_minimum": ops.minimum, "_sumsq": lambda m: torch.sum(torch.square(m)), "_cat": torch.cat,
        "_softmax": lambda S: torch.softmax(S, -1), "_rowsum": lambda m: torch.sum(m, -1, keepdim=True),
        "_rowmean": lambda m: torch.mean(m, -1, keepdim=True),
        "_colsum": lambda m: torch.sum(m, -2, keepdim=True), "_diag": lambda v: torch.diag(v.reshape(-1)),
        "_diagonal": lambda m: torch.diagonal(m).reshape(-1, 1),
    }


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
        if expr.is_Add:
            return "(" + " + ".join(self(a) for a in expr.args) + ")"
        if expr.is_Mul:
            return "*".join(self(a) for a in expr.args)
        if expr.is_Pow:
            return f"({self._base(expr.base)}**{self(expr.exp)})"
        if isinstance(expr, sp.Function) and type(expr).__name__ not in self.printer._own:
            return self.printer._print_operation(expr, self)
        return "(" + self.printer.doprint(expr) + ")"

    def _base(self, base) -> str:
        text = self(base)
        return f"({text})" if base.is_Mul else text


@dataclass
class Compiled:
    """A generated function with its source, argument symbols and outputs."""

    fn: Callable
    source: str
    args: tuple
    outputs: tuple
    backend: str
    check_finite: bool = True

    def __call__(self, *values):
        results = self.fn(*values)
        if self.check_finite and not all(_all_finite(r) for r in results):
            # the inputs were finite (checked on entry): the formula itself overflowed, e.g. exp of a large score
            raise SeqgradValueError(
                "inputs", "<finite values>",
                "values for which the compiled formula stays finite: it overflowed to NaN or inf here; rescale "
                "the inputs or derive a numerically stable form (e.g. derive.softmax.stable_softmax, max-subtracted)")
        return results


def _all_finite(value) -> bool:
    if hasattr(value, "isfinite") or type(value).__module__.startswith("torch"):
        import torch

        return bool(torch.isfinite(torch.as_tensor(value)).all())
    return bool(np.all(np.isfinite(np.asarray(value, dtype=float))))


def lambdify(program: Program | None, outputs: Sequence, args: Sequence, backend: str = "numpy",
             reduce: Iterable[int] | None = None, check_finite: bool = True, data: Iterable | None = None) -> Compiled:
    """A numpy or torch function ``f(*args) -> tuple(outputs)`` evaluating ``outputs`` through ``program``
    (``None`` for expressions that need no program).

    Only the definitions the outputs need are emitted, once each, in program
    order.  Row-vector arguments (``MatrixSymbol`` of shape 1 x n) may carry a
    batch of B rows; scalar arguments may be arrays of shape (B,).  Outputs
    listed in ``reduce`` (indices) are summed over the batch down to their
    declared shape, which is what autograd reports for a loss summed over the
    batch.  ``data`` names the arguments whose first axis is the batch (by
    default every row-vector argument).  Non-finite inputs raise :class:`~seqgrad.errors.NonFiniteError`.
    """
    if backend not in BACKENDS:
        raise SeqgradValueError("backend", backend, "one of " + ", ".join(BACKENDS))
    if program is None:  # a bare expression: an empty program
        program = Program("expression")
    outputs = tuple(outputs)
    args = tuple(args)
    taken: set[str] = set()
    names: dict = {}
    for a in args:
        names[a] = identifier(_name(a), taken)
    defs = program.needed(outputs, stop=set(args))
    for d in defs:
        names[d.target] = identifier(_name(d.target), taken)
    missing = {s for o in outputs for s in _free(o)} | {s for d in defs for s in _free(d.value)}
    missing -= set(names)
    if missing:
        raise SeqgradValueError("args", sorted(map(str, missing)), "every leaf the outputs need must be an argument")
    printer = (_TorchPrinter if backend == "torch" else _Printer)(names)
    rows = list(data) if data is not None else [a for a in args if isinstance(a, sp.MatrixSymbol) and a.shape[0] == 1]
    lines = [f"def _generated({', '.join(names[a] for a in args)}):"]
    if check_finite:
        lines.append(f"    _finite({', '.join(names[a] for a in args)})")
    lines.append(f"    _B = _batch({', '.join(names[a] for a in rows)})")
    code = _Code(printer, backend)
    for d in defs:
        lines.append(f"    {names[d.target]} = {code(d.value)}")
    reduce = set(reduce or ())
    outs = []
    for i, o in enumerate(outputs):
        text = code(o)
        shape = tuple(o.shape) if isinstance(o, MatrixExpr) else ()
        outs.append(f"_reduce({text}, {shape!r})" if i in reduce else text)
    lines.append(f"    return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
    source = "\n".join(lines) + "\n"
    namespace = _numpy_namespace() if backend == "numpy" else _torch_namespace()
    namespace.update(printer.used)
    namespace.update(_helpers(backend, [names[a] for a in args]))
    fn = run_generated(source, f"<seqgrad:{program.name}>", namespace, "_generated")
    return Compiled(fn, source, args, outputs, backend, check_finite)


def run_generated(source: str, filename: str, namespace: dict, name: str):
    """Define the function ``name`` of ``source`` in ``namespace`` and return it.  ``source`` is always code
    that seqgrad's own printers generated from a derivation, never a user's text (which reaches SymPy only
    through :mod:`derive.safe_parse`)."""
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


def _name(symbol) -> str:
    return symbol.name if isinstance(symbol, (sp.Symbol, sp.MatrixSymbol)) else str(symbol)


def _free(expr) -> set:
    return {s for s in getattr(expr, "free_symbols", ()) if isinstance(s, (sp.Symbol, sp.MatrixSymbol))}


def _helpers(backend: str, arg_names: list[str]) -> dict:
    if backend == "numpy":
        def finite(*values):
            for name, v in zip(arg_names, values):
                if not np.all(np.isfinite(v)):
                    raise NonFiniteError(name)

        def zeros(r, c):
            return np.zeros((r, c))

        def batch(*rows):
            return next((v.shape[0] for v in rows if np.ndim(v) == 2), 1)

        def reduce(value, shape):
            value = np.asarray(value)
            if shape == ():
                return value.sum() if value.ndim else value
            return value.sum(axis=0, keepdims=True) if value.shape[0] != shape[0] else value

        return {"_finite": finite, "_batch": batch, "_reduce": reduce, "_zeros": zeros}
    import torch

    state = {"like": None}

    def finite(*values):
        for name, v in zip(arg_names, values):
            if isinstance(v, torch.Tensor):
                state["like"] = v
                if not bool(torch.isfinite(v).all()):
                    raise NonFiniteError(name)
            elif not np.all(np.isfinite(v)):
                raise NonFiniteError(name)

    def batch(*rows):
        for v in rows:
            if isinstance(v, torch.Tensor):
                state["like"] = v
                if v.ndim == 2:
                    return v.shape[0]
        return 1

    def zeros(r, c):
        like = state["like"]
        kw = {} if like is None else {"dtype": like.dtype, "device": like.device}
        return torch.zeros((r, c), **kw)

    def reduce(value, shape):
        if not isinstance(value, torch.Tensor):
            return value
        if shape == ():
            return value.sum() if value.ndim else value
        return value.sum(dim=0, keepdim=True) if value.shape[0] != shape[0] else value

    return {"_finite": finite, "_batch": batch, "_reduce": reduce, "_zeros": zeros}
