"""Turn derivation programs into numpy or torch functions.

The program *is* the common-subexpression elimination: every definition
``z_t := ...``, ``g_t^z := ...`` becomes one assignment of the generated
function, in program order, so a quantity used many times is computed once.
Vector cells keep the text's matrix form: one matrix product per step, and
a weight gradient ``sum_t (g_t^z)^T x_t`` becomes one product of the stacked
rows; a batch of B sequences is B rows, so the same code runs a whole batch.

The program is the IR of :mod:`crosscheck.loop_ir` without a loop
(:func:`~crosscheck.loop_ir.straight_line`), printed by the emitter that prints
the cell loops too.  Its printer (:mod:`crosscheck.code_printer`) is our own
small subclass of SymPy's ``NumPyPrinter`` with an explicit module mapping; in
particular ``Max`` becomes ``numpy.maximum`` /
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

from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np
import sympy as sp

from seqgrad.derive.program import Program
from seqgrad.errors import NonFiniteError, SeqgradValueError

from .code_printer import identifier
from .loop_ir import Emitter, straight_line

__all__ = ["lambdify", "Compiled", "BACKENDS", "run_generated"]

BACKENDS = ("numpy", "torch")


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
    rows = list(data) if data is not None else [a for a in args if isinstance(a, sp.MatrixSymbol) and a.shape[0] == 1]
    fn = straight_line(program.name, args, names, taken, defs, outputs, rows, reduce or (), check_finite)
    emitter = Emitter(backend, names)
    source = emitter.source(fn)
    namespace = _numpy_namespace() if backend == "numpy" else _torch_namespace()
    namespace.update(emitter.used)
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
