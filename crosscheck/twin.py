r"""The autograd twin of a cell: its forward program evaluated node by node with torch, no code printed.

:class:`TorchTwin` walks the SymPy expressions of a cell's step definitions (the ones the compiled loop
of :mod:`crosscheck.cells` is printed from) and evaluates every node with torch directly: sums, products
and powers, numbers and symbols; the matrix nodes of a vector cell (``x_t W^T`` as a ``MatMul`` with a
``Transpose``, ``MatAdd``, ``HadamardProduct``, ``Elementwise``, ``RowSoftmax``); and every function
through the torch implementation the operation registry declares (:mod:`seqgrad.operations`; a composite
such as GELU or a cell's own function by its definition over those implementations, evaluated by
:func:`derive.operations.evaluator`).  It loops over t with every state starting at 0 (``h_{-1} = 0``),
adds the cell's loss at the loss positions (squared error or cross-entropy, with the loss's reduction
and batch mean) and returns ``L``; torch autograd differentiates that (:func:`crosscheck.cells.autograd_gradients`).

No printer takes part, so a fault of the printer that writes the compiled gradient code cannot sit on
both sides of :func:`crosscheck.cells.against_autograd`.  An operation without a torch implementation, or
a node this evaluator has no rule for, is one error naming it when the twin is built, before any value is
computed.

>>> import torch
>>> from seqgrad.derive.cell import Cell
>>> cell = Cell("z = w_x*x + w_h*h_prev; h = tanh(z)", states="h", params="w_x w_h w_o", head="w_o*h")
>>> twin = TorchTwin(cell)
>>> w = [torch.tensor(v, dtype=torch.float64) for v in (1.0, 0.5, 2.0)]
>>> X, y = torch.tensor([[0.2, -0.1, 0.4]], dtype=torch.float64), torch.tensor([0.3], dtype=torch.float64)
>>> (L,) = twin.fn(*w, X, y, [-1, -1, 0], 1)
>>> round(float(L), 6)
0.105237
"""

from __future__ import annotations

import functools
import operator

import sympy as sp
from sympy.matrices.expressions.matexpr import MatrixExpr

from seqgrad import operations as registry
from seqgrad.derive.cell import Cell
from seqgrad.derive.cell_loss import B as batch_size
from seqgrad.derive.operations import evaluator, operation_of, sympy_namespace
from seqgrad.derive.elementwise import Elementwise
from seqgrad.derive.rules import RowSoftmax
from seqgrad.errors import SeqgradTypeError, SeqgradValueError

__all__ = ["TorchTwin"]

#: scalar nodes the registry's evaluator reads without an operation (its structural helpers)
_STRUCTURAL = (sp.Max, sp.Min, sp.Heaviside)


def _product(values):
    return functools.reduce(operator.mul, values)


def _matmul(values):
    return functools.reduce(operator.matmul, values)


class TorchTwin:
    """The forward program of ``cell`` in torch, float64, on ``device`` (see the module docstring).

    ``fn(*params, X, Y, index, npos)`` takes the arguments :meth:`crosscheck.cells.CellFunction.prepare`
    gives for the torch backend (the parameters in the order of ``cell.parameter_names``, ``X`` (B, T) or
    (B, T, D), the targets, ``index[t]`` the loss position of step t or -1, the number of positions) and
    returns ``(L,)``, a tensor torch autograd can differentiate.  It computes where those arguments live
    (``prepare`` puts them on ``device``), in their dtype (float64); call one twin from one thread at a time."""

    def __init__(self, cell: Cell, device: str = "cpu"):
        import torch

        from seqgrad.numeric.activations import namespace

        if not isinstance(cell, Cell):
            raise SeqgradTypeError("cell", cell, "a derive.cell.Cell")
        self.cell, self.device, self.torch = cell, device, torch
        self.gen = gen = cell.general()
        self.names = cell.parameter_names
        self.params = [gen.params[p] for p in cell.param_shapes]
        self.forward = gen.step.definitions("forward")
        self.head = gen.head.definitions("forward")[0].value
        # the registry's torch namespace, with the cell's own functions beside the registered operations
        torch_ops = namespace("torch")
        own = {n._operation.name: n._operation for n in cell.functions.values() if getattr(n, "_operation", None)}
        self.ops = registry.Namespace("torch", torch, {h: getattr(torch_ops, h) for h in registry.HELPERS},
                                      wrap=torch_ops._wrap, extra=own)
        self._scalar_code: dict = {}  # Lambda -> its evaluator
        self._lambdas: dict = {}  # scalar expression -> Lambda of its symbols
        self._matrix_rules = {
            sp.MatAdd: lambda e, v: functools.reduce(operator.add, [v(a) for a in e.args]),
            sp.MatMul: self._matrix_product,
            sp.Transpose: lambda e, v: v(e.arg).T,
            sp.HadamardProduct: lambda e, v: _product([v(a) for a in e.args]),
            sp.HadamardPower: lambda e, v: v(e.base) ** self._scalar(e.exp, {}),
            Elementwise: lambda e, v: self._function(e.function)(self.ops, v(e.expr)),
            RowSoftmax: lambda e, v: torch.softmax(v(e.arg), -1),
            sp.OneMatrix: lambda e, v: torch.ones(tuple(int(n) for n in e.shape), **self._like),
            sp.ZeroMatrix: lambda e, v: self._zero(e.shape),
        }
        for d in self.forward:
            self._require(d.value, f"equation {d.target}")
        self._require(self.head, "head")

    # -- refusals, before any value is computed ------------------------------------------------------
    def _require(self, expr, argument: str) -> None:
        """Refuse a node without a rule here, or an operation without a torch implementation, naming it."""
        for node in sp.preorder_traversal(expr):
            if isinstance(node, MatrixExpr) and not isinstance(node, sp.MatrixSymbol) and type(node) not in self._matrix_rules:
                raise SeqgradValueError(argument, type(node).__name__, "matrix nodes the torch twin evaluates: " +
                                        ", ".join(t.__name__ for t in self._matrix_rules))
            if isinstance(node, sp.Function) and not isinstance(node, _STRUCTURAL):
                self._require_operation(operation_of(node), node, argument)

    def _require_operation(self, op, node, argument: str) -> None:
        if op is None:
            raise SeqgradValueError(argument, str(node.func), "operations of the registry (seqgrad.operations) only, "
                                    "for the torch twin; register it (docs/adding-an-operation.md)")
        if op.torch is not None:
            return
        if op.primitive:
            raise SeqgradValueError(argument, op.name, "operations with a torch implementation, for the autograd twin "
                                    f"(the {op.name!r} operation has none: declare its torch=)")
        u = sp.Dummy("u")
        self._require(op.definition(sympy_namespace(), *[u] * op.arity[0]), f"{argument}: operation {op.name!r}")

    # -- evaluation ----------------------------------------------------------------------------------
    def _function(self, lam: sp.Lambda):
        """The registry's evaluator of ``lam`` (built once): ``f(ops, *args)`` over the torch namespace."""
        code = self._scalar_code.get(lam)
        if code is None:
            code = self._scalar_code[lam] = evaluator(lam, "torch twin")
        return code

    def _scalar(self, expr, env: dict):
        """A scalar expression: a number is its float; otherwise the registry's evaluator over its symbols."""
        if expr.is_number:
            value = complex(expr)
            if value.imag:
                raise SeqgradValueError("expression", str(expr), "real numbers (this one is not real)")
            return value.real
        lam = self._lambdas.get(expr)
        if lam is None:
            lam = self._lambdas[expr] = sp.Lambda(tuple(sorted(expr.free_symbols, key=sp.default_sort_key)), expr)
        return self._function(lam)(self.ops, *[env[s] for s in lam.variables])

    def _matrix_product(self, e, value):
        coeff, mats = e.as_coeff_matrices()
        product = _matmul([value(m) for m in mats])
        return product if coeff == 1 else value(coeff) * product

    def _zero(self, shape):
        rows = self._batch if int(shape[0]) == 1 else int(shape[0])  # a zero row: one per sequence
        return self.torch.zeros((rows, int(shape[1])), **self._like)

    def value(self, expr, env: dict):
        """``expr`` at the current step: ``env`` maps the step's symbols (and each matrix node already
        evaluated at this step) to tensors."""
        if expr in env:
            return env[expr]
        if not isinstance(expr, MatrixExpr):
            return self._scalar(expr, env)
        if isinstance(expr, sp.MatrixSymbol):
            raise SeqgradValueError("expression", str(expr), "symbols of the cell's step")
        env[expr] = self._matrix_rules[type(expr)](expr, lambda a: self.value(a, env))
        return env[expr]

    def loss_term(self, yhat, y):
        """One position's loss: ``(yhat - y)^2 / 2`` summed, or ``-sum_c y_c log softmax(yhat)_c``."""
        if self.cell.loss.kind == "squared":
            return 0.5 * ((yhat - y) ** 2).sum()
        return -(y * self.torch.log_softmax(yhat, -1)).sum()

    def fn(self, *args):
        torch = self.torch
        n = len(self.params)
        values, (X, Y, index, npos) = args[:n], args[n:]
        cell, gen = self.cell, self.gen
        self._batch, steps = X.shape[0], X.shape[1]
        self._like = {"dtype": X.dtype, "device": X.device}
        scale = float(cell.loss.scale(npos).subs(batch_size, self._batch))
        width = {s: cell.shape_of(s)[1] for s in cell.states} if cell.vector else {}
        state = {s: torch.zeros((self._batch, width[s]) if cell.vector else (self._batch,), **self._like)
                 for s in cell.states}  # h_{-1} = 0
        L = torch.zeros((), **self._like)
        for t_ in range(steps):
            env = dict(zip(self.params, values))
            env[gen.x] = X[:, t_]
            env.update({gen.prev[s]: state[s] for s in cell.states})
            for d in self.forward:
                env[d.target] = self.value(d.value, env)
            if index[t_] >= 0:
                y = Y if npos == 1 and Y.ndim == X.ndim - 1 else Y[index[t_]]
                L = L + scale * self.loss_term(self.value(self.head, env), y)
            state = {s: env[gen.at_t[s]] for s in cell.states}
        return (L,)
