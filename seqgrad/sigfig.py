"""Compare computed numbers with numbers printed to a few significant figures.

The course tables print three significant figures with trailing zeros
stripped ("0.65" stands for 0.650).  A computed value reproduces a printed one
when it lies within half a unit of the last significant figure the printing
rule allows: ``|computed - printed| <= 0.5 * 10**(e - figures + 1)`` where
``e = floor(log10(|printed|))``.  Never compare by string.
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation

from .errors import ParseError, SeqgradValueError


def half_unit(printed: float, figures: int = 3) -> float:
    """Half a unit in the ``figures``-th significant figure of ``printed``."""
    if figures < 1:
        raise SeqgradValueError("figures", figures, "an integer >= 1")
    if printed == 0:
        return 0.5 * 10.0 ** (-figures)
    exponent = math.floor(math.log10(abs(printed)))
    return 0.5 * 10.0 ** (exponent - figures + 1)


def matches(computed: float, printed: float, figures: int = 3) -> bool:
    """True when ``computed`` rounds to ``printed`` at ``figures`` significant figures."""
    # a relative slack of 1e-9 absorbs the binary representation of the bound itself
    tol = half_unit(printed, figures)
    return abs(computed - printed) <= tol * (1 + 1e-9)


def decimals_tolerance(text: str) -> float:
    """Half a unit in the last written decimal place of ``text`` ("0.1411" -> 5e-5).

    Used for claims that are verified "at the decimals written".
    """
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise ParseError("number", text, "a decimal number such as 0.1411 or -2.5e-3") from None
    if not value.is_finite():
        raise ParseError("number", text, "a finite decimal number")
    exponent = value.as_tuple().exponent
    return 0.5 * 10.0 ** int(exponent)
