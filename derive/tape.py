"""SymPy expressions evaluated with ``mpmath`` through a tape: no code generation, every shared subexpression once.

The numeric checks of the catalogue evaluate both sides of an identity at a few random points.
``sympy.lambdify`` does that by printing the expression as Python source (after a common-subexpression
pass) and compiling it: for the small expressions of the checks, the printing and the common-subexpression
search cost far more than the evaluation.  A :class:`Tape` walks each expression once instead: every
distinct node (SymPy builds equal subexpressions as equal objects, so a repeated subexpression is one
node) becomes one step ``slot = op(earlier slots)``, and a call runs the steps in order with the ``mpmath``
functions the lambdified code would call, at the caller's working precision (sums by ``fsum``, products by
``fprod``; rationals as ``mpf(p) / q`` at that precision).

An expression with a node the tape does not know (a ``Piecewise``, a special function not in
:func:`function_of`) is evaluated by ``sympy.lambdify`` instead (:func:`mpmath_function`), so nothing is
refused that lambdify accepts.

>>> import mpmath, sympy as sp
>>> x, y = sp.symbols("x y")
>>> f = mpmath_function([x, y], [sp.exp(x) * y + sp.Rational(1, 3), sp.sqrt(x ** 2 + 1)])
>>> with mpmath.workdps(30):
...     [mpmath.nstr(v, 12) for v in f(mpmath.mpf(0), mpmath.mpf(2))]
['2.33333333333', '1.0']
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Sequence

import mpmath  # SymPy's own dependency, loaded with it
import sympy as sp
from sympy.core.function import AppliedUndef

from . import operations

__all__ = ["Tape", "Unsupported", "mpmath_function", "free_symbols", "FUNCTIONS"]


class Unsupported(Exception):
    """A node the tape cannot evaluate (the caller falls back to ``sympy.lambdify``)."""


#: SymPy function classes the tape evaluates besides the registry's operations (:func:`function_of`):
#: functions SymPy itself writes when it simplifies (cot, atan2, ...), with their ``mpmath`` counterparts
FUNCTIONS: dict = {
    sp.cot: mpmath.cot, sp.sec: mpmath.sec, sp.csc: mpmath.csc, sp.atan2: mpmath.atan2, sp.asinh: mpmath.asinh,
    sp.acosh: mpmath.acosh, sp.atanh: mpmath.atanh, sp.ceiling: mpmath.ceil, sp.gamma: mpmath.gamma,
    sp.Max: max, sp.Min: min,
}


def function_of(node) -> Callable | None:
    """The ``mpmath`` function of a SymPy function application: its operation's (:mod:`seqgrad.operations`,
    through :func:`derive.operations.mpmath_namespace`), else :data:`FUNCTIONS`'s, else None."""
    op = operations.operation_of(node)
    if op is not None:
        return getattr(operations.mpmath_namespace(), op.name)
    return FUNCTIONS.get(node.func)


def _constant(node):
    """A step computing the number ``node`` at the working precision of the call (a Rational as p/q in mpmath)."""
    if node.is_Integer:
        value = int(node)
        return lambda _: value
    if node.is_Rational:
        p, q = int(node.p), int(node.q)
        return lambda _: mpmath.mpf(p) / q
    if node.is_Float:
        exact = node._mpf_
        return lambda _: mpmath.mpf(exact)
    named = {sp.pi: lambda _: +mpmath.pi, sp.E: lambda _: +mpmath.e, sp.oo: lambda _: mpmath.inf,
             -sp.oo: lambda _: -mpmath.inf}
    if node in named:
        return named[node]
    raise Unsupported(node)


def _power(node) -> tuple[Callable, tuple]:
    """The step of ``base ** exponent`` and the nodes it reads: an integer power exactly and square roots by
    ``sqrt`` (reading the base alone), else ``power`` (reading base and exponent)."""
    exponent = node.exp
    if exponent.is_Integer:
        n = int(exponent)
        return (lambda xs: xs[0] ** n), (node.base,)
    if exponent == sp.S.Half:
        return (lambda xs: mpmath.sqrt(xs[0])), (node.base,)
    if exponent == -sp.S.Half:
        return (lambda xs: 1 / mpmath.sqrt(xs[0])), (node.base,)
    return (lambda xs: mpmath.power(xs[0], xs[1])), node.args


class Tape:
    """``args`` (SymPy symbols) -> the values of ``exprs`` (SymPy scalars), one step per distinct node.

    Raises :class:`Unsupported` for a node it cannot evaluate (see :func:`mpmath_function`).
    """

    def __init__(self, args: Sequence, exprs: Sequence):
        self.args = list(args)
        if not all(isinstance(a, sp.Symbol) for a in self.args) or len(set(self.args)) != len(self.args):
            raise Unsupported(self.args)
        slots: dict = {a: k for k, a in enumerate(self.args)}
        self.steps: list[tuple[Callable, tuple]] = []

        def step(fn, children=()) -> int:
            self.steps.append((fn, tuple(children)))
            return len(self.args) + len(self.steps) - 1

        for root in exprs:  # an explicit stack: deep sums nest further than Python's recursion allows
            todo = [(root, None)]  # (node, None) on the way down; (node, (power step, children)) once they are queued
            while todo:
                node, ready = todo.pop()
                if node in slots:
                    continue
                if node.is_Number or node.is_NumberSymbol:  # oo and -oo are Numbers too
                    slots[node] = step(_constant(node))
                    continue
                if node.is_Symbol:
                    raise Unsupported(node)  # a free symbol that is not an argument
                if ready is None:
                    ready = _power(node) if node.is_Pow else (None, node.args)
                    todo.append((node, ready))
                    todo.extend((k, None) for k in reversed(ready[1]) if k not in slots)
                    continue
                power, kids = ready
                children = [slots[k] for k in kids]
                if node.is_Add:
                    slots[node] = step(mpmath.fsum, children)
                elif node.is_Mul:
                    slots[node] = step(mpmath.fprod, children)
                elif node.is_Pow:
                    slots[node] = step(power, children)
                elif isinstance(node, AppliedUndef) and hasattr(node, "_imp_"):
                    imp = node._imp_
                    slots[node] = step(lambda xs, imp=imp: imp(*xs), children)
                else:
                    fn = function_of(node)
                    if fn is None:
                        raise Unsupported(node)
                    slots[node] = step(lambda xs, fn=fn: fn(*xs), children)
        self.outputs = [slots[root] for root in exprs]

    def __call__(self, *values) -> list:
        if len(values) != len(self.args):
            raise TypeError(f"the tape takes {len(self.args)} values, got {len(values)}")
        memory = list(values)
        for fn, children in self.steps:
            memory.append(fn([memory[c] for c in children]))
        return [memory[k] for k in self.outputs]


def mpmath_function(args, expr) -> Callable:
    """A function of the values of ``args`` returning ``expr`` evaluated with ``mpmath`` at the working precision:
    a scalar for a scalar, a list for a list, a tuple for a tuple, an ``mpmath.matrix`` for a SymPy matrix (as
    ``sympy.lambdify(args, expr, "mpmath")`` returns them).  Through a :class:`Tape`; an expression the tape
    cannot evaluate goes through ``sympy.lambdify`` (common subexpressions shared, no docstring)."""
    args = list(args)
    if isinstance(expr, sp.MatrixBase):
        rows, cols = expr.shape
        flat = list(expr)
        shape = lambda values: mpmath.matrix([values[r * cols:(r + 1) * cols] for r in range(rows)])
    elif isinstance(expr, (list, tuple)):
        flat, shape = list(expr), (tuple if isinstance(expr, tuple) else list)
    else:
        flat, shape = [expr], lambda values: values[0]
    try:
        if any(not isinstance(e, sp.Expr) for e in flat):  # a Python number, a boolean: lambdify's business
            raise Unsupported(expr)
        tape = Tape(args, flat)
    except Unsupported:
        return _lambdify(args, expr)
    return lambda *values: shape(tape(*values))


def _lambdify(args, expr) -> Callable:
    return sp.lambdify(args, expr, modules=["mpmath"], cse=True, **_lambdify_options())


@lru_cache(maxsize=1)
def _lambdify_options() -> dict:
    """No docstring for the generated function where this SymPy can be told so (printing it costs time)."""
    import inspect

    return {"docstring_limit": 0} if "docstring_limit" in inspect.signature(sp.lambdify).parameters else {}


def free_symbols(exprs: Sequence) -> set:
    """The free symbols of ``exprs`` together, each distinct subexpression visited once (SymPy's own
    ``free_symbols`` walks a shared subexpression again wherever it occurs, and is not cached).  A node that
    binds variables (a ``Sum``, a ``Lambda``...) answers for itself."""
    found: set = set()
    seen: set = set()
    todo = list(exprs)
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        if node.is_Symbol:
            found.add(node)
        elif node.is_Add or node.is_Mul or node.is_Pow or node.is_Number or isinstance(node, sp.Function):
            todo.extend(node.args)
        else:
            found |= node.free_symbols
    return found
