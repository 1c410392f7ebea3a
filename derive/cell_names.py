"""How a cell's values are named: a value of one step (``h_{t-1}``, ``z_t^r``), an adjoint (``g_t^h``), the
names the engine keeps for itself, and the check of the names a user gives."""

from __future__ import annotations

import re

import sympy as sp

from seqgrad.errors import SeqgradTypeError, SeqgradValueError

from .sequence import adjoint, stepped


class CellError(SeqgradValueError):
    """A cell definition that cannot be derived (named argument, value, what is allowed)."""


#: the names the engine gives its own values, and what each is (a user's name is any other identifier)
RESERVED = {"t": "the step", "T": "the length of the sequence", "B": "the batch size", "L": "the loss",
            "e": "the error yhat - y", "y": "the target", "yhat": "the prediction"}


class _Symbols:
    """The values of one instance of a cell (scalar or row vector) by the user's names: a value at a step
    (:func:`derive.sequence.stepped`, the display name of ``Cell(display=)``), its adjoint, or a value without a
    step (the final ``yhat``, ``y``, ``e``)."""

    def __init__(self, cell: "Cell"):
        self.cell = cell

    def seq(self, base: str, i, shape=None):
        """The value ``base`` at step ``i`` (an int or a symbolic index; None: a value without a step)."""
        if i is None:
            return sp.MatrixSymbol(base, *shape) if shape else sp.Symbol(base)
        return stepped(self.cell.display.get(base, base), i, shape)

    def adjoint(self, base: str, i, shape=None):
        """``g_i^base``: the adjoint of the value ``base`` at step ``i``."""
        return adjoint(self.seq(base, i, shape))


def validate_name(argument: str, name) -> str:
    if isinstance(name, str) and name in RESERVED:
        raise CellError(argument, name, f"a name other than {name!r}: the derivation's own name for {RESERVED[name]} "
                        "(the derivation's names: " + ", ".join(RESERVED) + ")")
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name):
        raise CellError(argument, name, "a plain identifier such as h, z or w_x")
    return name


def _names(argument: str, names, empty: bool = False) -> list[str]:
    if isinstance(names, str):
        names = names.replace(",", " ").split()
    try:
        out = [validate_name(argument, n) for n in names]
    except TypeError:
        raise SeqgradTypeError(argument, names, "names as text or a list") from None
    repeated = sorted({n for n in out if out.count(n) > 1})
    if repeated:
        raise CellError(argument, repeated[0], "each name once")
    if not out and not empty:
        raise CellError(argument, names, "at least one name")
    return out
