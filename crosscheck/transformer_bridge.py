"""Glue between the Transformer derivations of ``derive/`` and torch: compile a SymPy matrix to a torch function.

:func:`compile_matrix` turns the entries of a SymPy matrix into a straight-line
program (``sympy.cse`` names the shared subexpressions ``c_0, c_1, ...``) and
hands it to :func:`crosscheck.lambdify.lambdify`, the one lambdify mechanism of
the project; the result evaluates on any device and on a batch: every argument
may be a tensor of shape (B,), the output is (B, rows, cols).

:func:`branch_inputs` makes the generic branches of :mod:`derive.residual`
numeric: the identities there hold for *every* branch F, so their closed forms
contain ``F(x)`` and ``dF_i/du_j`` evaluated at some point; each such term is
replaced by a symbol whose value the caller supplies from the numeric encoder's
own branch (its output and its Jacobian).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import sympy as sp
import torch
from sympy.core.function import AppliedUndef

from seqgrad.derive.program import Program
from seqgrad.errors import SeqgradValueError

from .lambdify import lambdify


@dataclass
class MatrixFunction:
    """A compiled ``f(*args) -> (B, rows, cols)`` tensor function of a SymPy matrix."""

    compiled: object
    args: tuple
    shape: tuple[int, int]

    def __call__(self, *values: torch.Tensor) -> torch.Tensor:
        if len(values) != len(self.args):
            raise SeqgradValueError("values", len(values), f"{len(self.args)} arguments ({', '.join(map(str, self.args[:4]))}, ...)")
        like = values[0]
        B = like.shape[0] if like.dim() else 1
        out = self.compiled(*values)
        entries = [torch.as_tensor(e, dtype=like.dtype, device=like.device).expand(B) for e in out]
        return torch.stack(entries, -1).reshape(B, *self.shape)


def compile_matrix(M, args: Sequence[sp.Symbol], name: str = "transformer") -> MatrixFunction:
    """Compile the entries of ``M`` (row by row) as a function of ``args`` through :func:`crosscheck.lambdify.lambdify`."""
    M = sp.Matrix(M)
    replacements, reduced = sp.cse(list(M), symbols=sp.numbered_symbols("c_"), optimizations=None)
    program = Program(name)
    for symbol, value in replacements:
        program.define(symbol, value)
    compiled = lambdify(program, reduced, list(args), backend="torch", check_finite=True, data=[])
    return MatrixFunction(compiled, tuple(args), M.shape)


def columns(values: torch.Tensor) -> list[torch.Tensor]:
    """A (B, n) or (B, r, c) tensor as n (or r*c) tensors of shape (B,), row by row: the argument order of compile_matrix."""
    return list(values.reshape(values.shape[0], -1).unbind(-1))


# ----------------------------------------------------------------------------- generic branches made numeric

@dataclass
class BranchSymbols:
    """The closed form with every branch term replaced: ``F[i]`` stands for F_i(x), ``J[i][j]`` for dF_i/du_j at x."""

    expr: sp.Matrix
    F: list[sp.Symbol]
    J: list[list[sp.Symbol]]


def branch_inputs(expr, branch) -> BranchSymbols:
    """Replace the branch values and first derivatives in ``expr`` (a closed form of :mod:`derive.residual`) by symbols."""
    n_out, n_in = branch.n_out, branch.n_in
    F = [sp.Symbol(f"F_{i}", real=True) for i in range(n_out)]
    J = [[sp.Symbol(f"JF_{i}_{j}", real=True) for j in range(n_in)] for i in range(n_out)]
    index = {f: i for i, f in enumerate(branch.f)}

    def derivative_symbol(deriv: sp.Derivative):
        call = deriv.expr
        if not isinstance(call, AppliedUndef) or call.func not in index or len(deriv.variable_count) != 1 or deriv.variable_count[0][1] != 1:
            raise SeqgradValueError("expr", str(deriv)[:80], "first derivatives of the branch functions only")
        var = deriv.variable_count[0][0]
        return J[index[call.func]][list(call.args).index(var)]

    def replace(e):
        if isinstance(e, sp.Subs) and isinstance(e.expr, sp.Derivative):
            return derivative_symbol(e.expr)
        if isinstance(e, sp.Derivative):
            return derivative_symbol(e)
        if isinstance(e, AppliedUndef) and e.func in index:
            return F[index[e.func]]
        if not e.args:
            return e
        return e.func(*[replace(a) for a in e.args])

    out = sp.Matrix(expr).applyfunc(replace)
    leftover = [a for a in out.atoms(sp.Subs, sp.Derivative, AppliedUndef)]
    if leftover:
        raise SeqgradValueError("expr", str(leftover[0])[:80], "a closed form whose branch terms are all first derivatives or values")
    return BranchSymbols(out, F, J)
