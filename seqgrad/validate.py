"""Argument checks shared by every layer; each raises a seqgrad error naming
the argument, its value and what is allowed."""

from __future__ import annotations

import math
import numbers
from typing import Iterable

from .errors import NonFiniteError, SeqgradTypeError, SeqgradValueError


def integer(argument: str, value: object, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as an ``int``; refuse bools, floats and out-of-range values."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise SeqgradTypeError(argument, value, "an integer" + _range_text(minimum, maximum))
    value = int(value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise SeqgradValueError(argument, value, "an integer" + _range_text(minimum, maximum))
    return value


def _range_text(minimum: int | None, maximum: int | None) -> str:
    if minimum is not None and maximum is not None:
        return f" from {minimum} to {maximum}"
    if minimum is not None:
        return f" >= {minimum}"
    if maximum is not None:
        return f" <= {maximum}"
    return ""


#: the largest seed: every random generator seqgrad seeds takes it (numpy's wants >= 0, torch's < 2**64)
MAX_SEED = 2**63 - 1


def seed(argument: str, value: object) -> int:
    """A seed of a random generator: an integer from 0 to :data:`MAX_SEED`."""
    return integer(argument, value, minimum=0, maximum=MAX_SEED)


def real(argument: str, value: object, *, positive: bool = False, nonnegative: bool = False,
         maximum: float | None = None) -> float:
    """Return ``value`` as a finite float; refuse NaN, inf, bools, non-numbers and values over ``maximum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise SeqgradTypeError(argument, value, "a real number")
    value = float(value)
    if not math.isfinite(value):
        raise NonFiniteError(argument, value)
    if positive and value <= 0:
        raise SeqgradValueError(argument, value, "a number > 0")
    if nonnegative and value < 0:
        raise SeqgradValueError(argument, value, "a number >= 0")
    if maximum is not None and value > maximum:
        raise SeqgradValueError(argument, value, f"a number <= {maximum:g}")
    return value


def choice(argument: str, value: object, allowed: Iterable[str]) -> str:
    """Return ``value`` if it is one of the ``allowed`` names (compared as text)."""
    allowed = tuple(allowed)
    if not isinstance(value, str) or value not in allowed:
        raise SeqgradValueError(argument, value, "one of " + ", ".join(allowed))
    return value
