r"""The derivative at a point: ``diff("x**2*y", "x", variables="x y", at="x=1, y=2")`` is exactly 4.

The point gives a value to each scalar variable of the expression (``--vars``); the derivative is the
symbolic one (:func:`derive.matcalc.diff`) with the values put in, exactly (rationals, ``sqrt(2)``, ``pi``).
Before that, every scalar subexpression is taken at the point, innermost first, and the first one that fails
is refused with one clear error naming it and the point (:class:`~seqgrad.errors.UndefinedError`):

* **undefined**: a division by zero, ``log`` of a number <= 0, ``sqrt`` of a negative number, ``asin`` outside
  [-1, 1], a pole of ``tan`` -- any value that is not a finite real number;
* **not differentiable**: a kink (``abs`` where its argument is 0 and moves, ``max``/``min`` where two arguments
  with different slopes tie -- ``relu`` and ``leaky_relu`` at 0), a jump (``sign`` and ``Heaviside`` at 0,
  ``floor`` and ``ceiling`` at an integer), or an infinite slope (``sqrt`` at 0, ``asin`` at ±1).

The registry (:mod:`seqgrad.operations`) declares a convention at each kink (``relu'(0) = 0, as torch.relu``),
which compiled code and autograd use; the refusal quotes it, but the derivative itself does not exist there,
so no number is given for it.

>>> from seqgrad.derive import diff
>>> print(diff("x**2*y", "x", variables="x y", at="x=1, y=2").pretty())
dx = 2 x y
dx|(x = 1, y = 2) = 4
>>> diff("relu(x)", "x", variables="x", at="x=0")
Traceback (most recent call last):
...
seqgrad.errors.UndefinedError: at='x = 0' is not allowed: relu(x) is not differentiable at x = 0 (a kink: max(0, x) switches there; the derivative does not exist there, whatever the convention that compiled code and autograd use: relu'(0) = 0, as torch.relu)
"""

from __future__ import annotations

from typing import Mapping

import sympy as sp

from seqgrad import operations as registry
from seqgrad.errors import ParseError, SeqgradTypeError, UndefinedError

from .matrix_text import Declared, is_matrix
from .whitelist import name_value_pairs

__all__ = ["parse_point", "check_point", "value_at"]


def _split(text: str) -> list[tuple[str, str]]:
    """``"x=0, y=1/2"`` -> ``[("x", "0"), ("y", "1/2")]`` (commas inside brackets stay: ``log(8, 2)``)."""
    return name_value_pairs(text, lambda t, i: t[i] == ",",
                            lambda: ParseError("at", text, 'NAME=VALUE pairs separated by commas, e.g. "x=0, y=1"'))


def parse_point(at, declared: Declared, expr) -> dict:
    """The point ``at`` (text ``"x=0, y=1"`` or a mapping name -> number) as {Symbol: exact real number}; every
    name a declared scalar variable, every scalar variable of ``expr`` given a value."""
    from .safe_parse import as_sympy, parse_expression

    if isinstance(at, str):
        items = _split(at)
    elif isinstance(at, Mapping):
        items = list(at.items())
    else:
        raise SeqgradTypeError("at", at, 'a point as text ("x=0, y=1") or a mapping name -> number')
    point = {}
    for name, value in items:
        symbol = declared.scalars.get(name) if isinstance(name, str) else None
        if symbol is None:
            raise ParseError("at", str(name), "a declared scalar variable (variables / --vars); declared: "
                             + (", ".join(declared.scalars) or "none"))
        if symbol in point:
            raise ParseError("at", name, "each variable given once")
        v = parse_expression(value, argument=f"at {name}") if isinstance(value, str) else as_sympy(value, f"at {name}")
        if not v.is_number or v.has(sp.zoo, sp.oo, -sp.oo, sp.nan) or v.is_extended_real is not True:
            raise UndefinedError(f"at {name}", str(value), "a finite real number")
        point[symbol] = v
    missing = sorted(s.name for s in expr.free_symbols if isinstance(s, sp.Symbol) and s in declared.scalars.values()
                     and s not in point)
    if missing:
        raise ParseError("at", _where(point), "a value for every scalar variable of the expression (missing: "
                         + ", ".join(missing) + ")")
    return point


def _where(point: dict) -> str:
    from .program_text import sstr

    return ", ".join(f"{s} = {sstr(v)}" for s, v in point.items())


def _finite_real(v) -> bool:
    return bool(v.is_number and not v.has(sp.zoo, sp.oo, -sp.oo, sp.nan) and v.is_extended_real is True)


def _named(node):
    """How the refusal names ``node``: its registry operation and argument where it is one (``relu(x)``)."""
    from .operations import operation_of
    from .program_text import sstr

    from .operations import inline_operation

    inline = inline_operation(node)
    if inline is not None:
        op, arg = inline
        return f"{op.name}({sstr(arg)})", op
    op = operation_of(node)
    if op is None and isinstance(node, sp.Abs):
        op = registry.find("abs")
    if op is not None and isinstance(node, sp.Function):
        return f"{op.name}({', '.join(sstr(a) for a in node.args)})", op
    return sstr(node), op


def _convention(op) -> str:
    if op is None or not op.kink:
        return ""
    return f"; the derivative does not exist there, whatever the convention that compiled code and autograd use: {op.kink}"


def check_point(expr, point: dict, argument: str = "at") -> None:
    """Refuse the point if a scalar subexpression of ``expr`` is undefined or not differentiable there."""
    from .operations import derivative, operation_of
    from .program_text import sstr

    where = _where(point)
    symbols = set(point)

    def slopes(e):
        return [sp.simplify(sp.diff(e, s).subs(point)) for s in sorted(symbols, key=str)]

    for node in sp.postorder_traversal(expr):
        if is_matrix(node) or not isinstance(node, sp.Expr) or node.is_Atom:
            continue
        if any(isinstance(s, sp.MatrixSymbol) for s in node.free_symbols) or not node.free_symbols <= symbols:
            continue  # a scalar of matrices (trace, det): not taken at a scalar point
        value = node.subs(point)
        args = [a.subs(point) for a in node.args]
        if not _finite_real(value):
            if isinstance(node, sp.Pow) and args[0] == 0 and (node.exp.is_negative or args[1].is_negative):
                reason = f"division by zero: {sstr(node.base)} is 0 at {where}"
            elif isinstance(node, sp.log):
                reason = f"{sstr(node)} is undefined at {where} (its argument is {sstr(args[0])}, log needs a positive number)"
            elif isinstance(node, sp.Pow) and node.exp == sp.S.Half:
                reason = f"{sstr(node)} is undefined at {where} (the square root of the negative number {sstr(args[0])})"
            else:
                reason = f"{sstr(node)} is undefined at {where} (its value {sstr(value)} is not a finite real number)"
            raise UndefinedError(argument, where, reason)
        name, op = _named(node)
        if isinstance(node, (sp.Max, sp.Min)):
            tied = [a for a, v in zip(node.args, args) if v == value]
            if len(tied) > 1 and len({tuple(slopes(a)) for a in tied}) > 1:
                raise UndefinedError(argument, where, f"{name} is not differentiable at {where} (a kink: {sstr(node).replace('Max', 'max').replace('Min', 'min')} "
                                     f"switches there{_convention(op)})")
            continue
        if isinstance(node, sp.Abs):
            if args[0] == 0 and any(s != 0 for s in slopes(node.args[0])):
                raise UndefinedError(argument, where, f"{name} is not differentiable at {where} (a kink: its argument is 0 "
                                     f"there{_convention(op)})")
            continue
        if isinstance(node, (sp.sign, sp.Heaviside)) and args[0] == 0 or isinstance(node, (sp.floor, sp.ceiling)) and args[0].is_integer:
            at = "0" if isinstance(node, (sp.sign, sp.Heaviside)) else "an integer"
            raise UndefinedError(argument, where, f"{name} is not differentiable at {where} (a jump: its argument is {at} "
                                 f"there{_convention(op)})")
        slope = None
        if isinstance(node, sp.Pow) and not node.exp.is_Integer:
            slope = (node.exp * node.base ** (node.exp - 1)).subs(point)
        elif isinstance(node, sp.Function) and len(node.args) == 1:
            fop = operation_of(node)
            if fop is not None:
                u = sp.Dummy("u")
                slope = derivative(fop, u).subs(u, args[0])
        if slope is not None and not _finite_real(sp.simplify(slope)):
            slope = sp.simplify(slope)
            what = "infinite" if slope.has(sp.zoo, sp.oo, -sp.oo) else f"{sstr(slope)}, not a finite real number"
            raise UndefinedError(argument, where, f"{name} is not differentiable at {where} (its slope there is {what})")


def value_at(value, point: dict, argument: str = "at"):
    """The derivative ``value`` at ``point``, exactly where SymPy can (a matrix formula keeps its matrices)."""
    out = value.subs(point) if point else value
    if not is_matrix(out):
        out = sp.simplify(out)
        if out.is_number and not _finite_real(out):
            raise UndefinedError(argument, _where(point), f"a point where the derivative is finite (it is {out} there)")
    return out
