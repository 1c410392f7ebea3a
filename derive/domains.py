"""Where an identity's variables live and the points it is checked at: the bounds of ``--assume`` (``x > 0``),
the variables written through SymPy's assumptions for a proof on a half-line, and the random real values drawn
for the numeric check (several scales, integers, half-integers, near a bound)."""

from __future__ import annotations

import ast
import random
from typing import Iterable

import sympy as sp

from seqgrad.errors import ParseError, SeqgradTypeError, SeqgradValueError

from .safe_parse import parse_expression

#: the magnitudes of the sampled real values (each with both signs, a random mantissa in [1, 10))
SCALES = (1e-3, 1e-2, 0.1, 1, 10, 100, 1000)


_RELATIONS = {ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<="}


def parse_assumptions(text, variables: Iterable[str]) -> dict:
    """``"x > 0, y >= 1"`` -> ``{"x": (">", 0), "y": (">=", 1)}``: one bound per comparison of a declared
    variable with a number (``0 < x`` reads as ``x > 0``); read by :mod:`ast`, the number by the whitelist."""
    if text is None or text == "":
        return {}
    if not isinstance(text, str):
        raise SeqgradTypeError("assume", text, 'text such as "x > 0, y > 0"')
    names = set(variables)
    out: dict = {}
    for piece in [p.strip() for p in text.split(",") if p.strip()]:
        try:
            node = ast.parse(piece, mode="eval").body
        except SyntaxError:
            raise ParseError("assume", piece, 'a comparison NAME > number (>, >=, <, <=), e.g. "x > 0"') from None
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _RELATIONS):
            raise ParseError("assume", piece, 'a comparison NAME > number (>, >=, <, <=), e.g. "x > 0"')
        left, right, op = node.left, node.comparators[0], _RELATIONS[type(node.ops[0])]
        if isinstance(right, ast.Name) and not isinstance(left, ast.Name):
            left, right, op = right, left, {">": "<", ">=": "<=", "<": ">", "<=": ">="}[op]
        if not isinstance(left, ast.Name) or left.id not in names:
            raise ParseError("assume", piece, "a bound on a declared variable (" + (", ".join(sorted(names)) or "none declared") + ")")
        bound = parse_expression(ast.get_source_segment(piece, right) or "", argument="assume")
        if not bound.is_number or not bound.is_real:
            raise ParseError("assume", piece, "a real number as the bound")
        previous = out.get(left.id, [])
        out[left.id] = previous + [(op, bound)]
    return out


def _interval(bounds) -> tuple:
    """(low, low_open, high, high_open) of a variable's bounds (None: unbounded)."""
    low = high = None
    low_open = high_open = True
    for op, b in bounds:
        if op in (">", ">=") and (low is None or b >= low):
            low, low_open = b, op == ">"
        if op in ("<", "<=") and (high is None or b <= high):
            high, high_open = b, op == "<"
    if low is not None and high is not None and (high < low or (high == low and (low_open or high_open))):
        raise SeqgradValueError("assume", f"{low} .. {high}", "bounds that leave some values")
    return low, low_open, high, high_open


def _assumed_symbols(free, domains) -> dict:
    """Each bounded variable written through a new symbol with SymPy's assumptions: x > c is c + t with t > 0."""
    subs, back = {}, {}
    for s in free:
        if s.name not in domains:
            continue
        low, low_open, high, high_open = _interval(domains[s.name])
        if (low is None) == (high is None):
            continue  # a two-sided interval: the points stay inside it, the proof runs over the reals
        t = sp.Symbol(s.name, positive=True) if (low_open if low is not None else high_open) else sp.Symbol(s.name, nonnegative=True)
        subs[s], back[t] = (low + t, s - low) if low is not None else (high - t, high - s)
    return subs, back


def _assumption_text(domains) -> str:
    return ", ".join(f"{name} {op} {sp.sstr(b)}" for name, bounds in domains.items() for op, b in bounds)


def _value(rng: random.Random, kind: str):
    if kind == "scale":
        s = rng.choice(SCALES)
        return sp.Rational(rng.randint(1000, 9999), 1000) * sp.nsimplify(s) * rng.choice((1, -1))
    if kind == "integer":
        return sp.Integer(rng.choice([0, 1, -1, 2, -2, 3, -3, rng.randint(-50, 50)]))
    if kind == "half":
        return sp.Integer(rng.randint(-20, 20)) + sp.Rational(1, 2)
    return sp.Rational(rng.randint(-2000, 2000), 1000)


def _in_domain(x, interval) -> bool:
    low, low_open, high, high_open = interval
    if low is not None and (x < low or (low_open and x == low)):
        return False
    return not (high is not None and (x > high or (high_open and x == high)))


def _near_boundary(rng, interval):
    low, _, high, _ = interval
    bound, sign = (low, 1) if low is not None and (high is None or rng.random() < 0.5) else (high, -1)
    return bound + sign * sp.nsimplify(rng.choice((1e-9, 1e-6, 1e-3, 0.5, 1, 10, 1000)))


def _interval_free(interval) -> bool:
    return interval[0] is None and interval[2] is None


def _draw_real(rng, kind, interval):
    bounded = interval[0] is not None or interval[2] is not None
    for _ in range(50):
        x = _near_boundary(rng, interval) if kind == "boundary" and bounded else _value(rng, "scale" if kind == "boundary" else kind)
        if _in_domain(x, interval):
            return x
    return _near_boundary(rng, interval) if bounded else sp.Integer(0)


_KINDS = ("scale", "integer", "half", "grid", "switch", "boundary", "scale", "switch")
