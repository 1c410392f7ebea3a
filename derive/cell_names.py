"""How a cell's values are named: a value of one step (``h_{t-1}``, ``z_t^r``), an adjoint (``g_t^h``), the
names the engine keeps for itself, and the check of the names a user gives."""

from __future__ import annotations

import re

import sympy as sp

from seqgrad.errors import SeqgradTypeError, SeqgradValueError

from .safe_parse import as_sympy


class CellError(SeqgradValueError):
    """A cell definition that cannot be derived (named argument, value, what is allowed)."""


#: names the engine gives its own symbols (step and length, batch size, loss, error, prediction)
RESERVED = ("t", "T", "B", "L", "e", "yhat")


def index_text(i) -> str:
    """A step index as the text writes it in a subscript: ``0``, ``{-1}``, ``t``, ``{t-1}``, ``{T-1}``."""
    if isinstance(i, int):
        return str(i) if i >= 0 else "{%d}" % i
    text = str(i).replace(" ", "")
    return text if len(text) == 1 else "{%s}" % text


def _indexed_name(base: str, i) -> str:
    """``h`` at 2 -> ``h_2``; ``z^r`` at t -> ``z_t^r`` (the superscript after the step, as the text)."""
    stem, _, sup = base.partition("^")
    return f"{stem}_{index_text(i)}" + (f"^{sup}" if sup else "")


def _adjoint_base(base: str) -> str:
    stem, _, sup = base.partition("^")
    return stem if not sup else "{%s^%s}" % (stem, sup)


def _adjoint_name(base: str, i) -> str:
    """``g_t^h``, ``g_{t+1}^z``, ``g_3^{z^r}``."""
    return f"g_{index_text(i)}^{_adjoint_base(base)}"


def _index(i):
    """The step index a symbol was made with, as a SymPy integer expression (None: no index)."""
    return None if i is None else as_sympy(i)


class _Symbols:
    """The symbols of one instance of a cell (scalar or row vector), named as the text names them."""

    def __init__(self, cell: "Cell"):
        self.cell = cell
        self.cache: dict = {}

    def seq(self, base: str, i, shape=None):
        """The symbol of sequence ``base`` at step ``i`` (an int or a symbolic index)."""
        base = self.cell.display.get(base, base)
        key = ("seq", base, i, shape)  # the kind first: a state may be called g (the adjoints' letter)
        if key not in self.cache:
            name = base if i is None else _indexed_name(base, i)
            self.cache[key] = sp.MatrixSymbol(name, *shape) if shape else sp.Symbol(name)
        return self.cache[key]

    def adjoint(self, base: str, i, shape=None):
        base = self.cell.display.get(base, base)
        key = ("adj", base, i, shape)
        if key not in self.cache:
            name = _adjoint_name(base, i)
            self.cache[key] = sp.MatrixSymbol(name, *shape) if shape else sp.Symbol(name)
        return self.cache[key]


def validate_name(argument: str, name) -> str:
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name) or name in RESERVED:
        raise CellError(argument, name, "a plain identifier such as h, z or w_x (not " + ", ".join(RESERVED)
                        + ": the derivation's own names)")
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
