"""Exact proofs: the outcome of one (:class:`Proof`) and the exact simplifiers that reduce a residual
``lhs - rhs`` to zero, shared by the identity catalogue (:mod:`derive.identity`), the rule table
(:mod:`derive.rules`) and :func:`derive.verify`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import sympy as sp


@dataclass
class Proof:
    """The outcome of an exact proof: ``holds`` and the reduced residual."""

    holds: bool
    method: str
    residual: object
    detail: str = ""
    seconds: float = 0.0

    def __bool__(self) -> bool:
        return self.holds

    def summary(self) -> str:
        """What was shown, without the timing (stable between runs)."""
        state = "proved" if self.holds else "NOT proved"
        return f"{state} by {self.method}" + (f": {self.detail}" if self.detail else "")

    def __str__(self) -> str:
        state = "proved" if self.holds else "NOT proved"
        return f"{state} by {self.method} in {self.seconds:.3g} s" + (f": {self.detail}" if self.detail else "")


# --- exact simplifiers shared by the entries ---------------------------------------------------

def pythagorean(expr):
    """Exact trigonometric reduction: expand sums of angles, then replace sin(x)^2 by 1 - cos(x)^2."""
    expr = sp.expand(sp.expand_trig(sp.expand_mul(expr)))
    expr = expr.replace(lambda e: e.is_Pow and e.exp.is_Integer and e.exp >= 2 and isinstance(e.base, sp.sin),
                        lambda e: (1 - sp.cos(e.base.args[0]) ** 2) ** (e.exp // 2) * sp.sin(e.base.args[0]) ** (e.exp % 2))
    return sp.expand(expr)


def angle_addition(expr):
    """Exact: expand sines and cosines of sums of angles, then (if needed) the polynomial."""
    reduced = sp.expand_trig(expr)
    return reduced if reduced == 0 else sp.expand(reduced)


def rational_zero(expr):
    """Exact reduction of a rational function of exponentials: expand exponentials, cancel."""
    return sp.cancel(sp.together(sp.expand(sp.powsimp(expr, combine="exp"), power_base=False, mul=True, log=False)))


def reduce_all(residual, simplifier: Callable) -> tuple[bool, object]:
    """Apply ``simplifier`` to every entry of ``residual``; True when every entry is exactly 0."""
    if isinstance(residual, (sp.MatrixBase, list, tuple)):
        entries = list(sp.Matrix(residual)) if not isinstance(residual, sp.MatrixBase) else list(residual)
        reduced = [simplifier(e) for e in entries]
        holds = all(r == 0 for r in reduced)
        shape = residual.shape if isinstance(residual, sp.MatrixBase) else (len(entries), 1)
        return holds, sp.Matrix(*shape, reduced) if not holds else sp.zeros(*shape)
    reduced = simplifier(residual)
    return reduced == 0, reduced


def proof_by(residual_fn: Callable[[], object], simplifier: Callable, name: str) -> Callable[[], Proof]:
    """A prover: build the residual lhs - rhs, reduce every entry with ``simplifier``."""

    def prove() -> Proof:
        holds, reduced = reduce_all(residual_fn(), simplifier)
        return Proof(holds, f"simplification to zero ({name})", reduced)

    return prove
