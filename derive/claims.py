"""Printed numeric claims and their verification: verified or contradicted.

A textbook claim is an expression (or an operation whose value a function
provides), its inputs, the printed result and the precision the result is
printed to.  :func:`parse_claim` reads one the way the text writes it::

    sin(1)*cos(2) + cos(1)*sin(2) = 0.1411
    u*h + (1 - u)*c = 0.410 where u = 0.9, h = 0.5, c = -0.4

and :meth:`Claim.verify` evaluates the left side exactly (SymPy ``evalf`` at
50 significant digits by default), then compares it with the printed number:

* by default at the decimals written: "0.1411" stands for every value within
  half a unit of its 4th decimal, ±5e-05 (:func:`seqgrad.sigfig.decimals_tolerance`);
* with ``figures=N`` at N significant figures, as the course tables print
  (:func:`seqgrad.sigfig.half_unit`; "0.65" at 3 figures stands for 0.650);
* with ``exact=True``, or when the right side is an expression rather than a
  plain number (``1/4``, ``10000**(-2/5)``), the two sides must agree to the
  evaluation precision less 10 digits.

The comparison is done at the evaluation precision, not in float64, so a value
that sits next to a rounding boundary (cos(0.01) = 0.99995000042 is 4.2e-13
past the boundary between 0.9999 and 1.0000) gets the right verdict.

Text reaches SymPy only through :mod:`derive.safe_parse` (a whitelist, never
``eval`` or ``sympify``).

>>> from derive.claims import parse_claim
>>> parse_claim("sin(1)*cos(2) + cos(1)*sin(2) = 0.1411").verify().line()
'verified: sin(1)*cos(2) + cos(1)*sin(2) = 0.1411200081 (printed 0.1411; tolerance ±5e-05 at the 4 decimals written; discrepancy 2.0e-05)'
>>> parse_claim("u*h + (1 - u)*c = 0.410 where u = 0.9, h = 0.5, c = -0.4").verify().status
'verified'
>>> parse_claim("cos(0.01) = 0.9999").verify().line()
'contradicted: cos(0.01) = 0.9999500004 (printed 0.9999; tolerance ±5e-05 at the 4 decimals written; discrepancy 5.00004e-05)'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

import mpmath
import sympy

from seqgrad.errors import NonFiniteError, ParseError, SeqgradTypeError
from seqgrad.sigfig import decimals_tolerance, half_unit
from seqgrad.validate import integer

from .safe_parse import MAX_LENGTH, check_variable_names, parse_expression, parse_number, parse_value, vector_entries

DIGITS = 50          # significant digits of every evaluation
EXACT_MARGIN = 10    # an exact claim must agree to DIGITS - EXACT_MARGIN digits

_SIGN = re.compile(r"≈|~=|(?<![=<>!])=(?!=)")
_WHERE = re.compile(r"\bwhere\b")
_PLAIN_NUMBER = re.compile(r"\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*\Z")


@dataclass(frozen=True)
class Claim:
    """One printed claim: what is computed, the printed result, and its precision.

    Exactly one of ``expression`` (SymPy, built by the safe parser) and
    ``provider`` (a function returning the value, for claims whose value comes
    from a computation such as the numeric encoder) is set.  ``printed`` is the
    result exactly as written; ``figures`` selects significant figures instead
    of the decimals written; ``exact`` asks for equality.
    """

    text: str
    printed: str
    lhs: str = ""
    expression: sympy.Expr | None = None
    provider: Callable[[], Any] | None = field(default=None, compare=False)
    inputs: tuple[tuple[str, str], ...] = ()
    figures: int | None = None
    exact: bool = False
    printed_value: sympy.Expr = field(default=sympy.Integer(0), compare=False)
    value_expression: sympy.Expr | None = field(default=None, compare=False)
    source: str = ""

    @classmethod
    def from_provider(cls, text: str, provider: Callable[[], Any], printed: str, *, figures: int | None = None,
                      exact: bool = False, source: str = "") -> "Claim":
        """A claim whose computed value ``provider()`` returns (a number, or a SymPy number)."""
        if not callable(provider):
            raise SeqgradTypeError("provider", provider, "a function returning the computed value")
        printed_value = _printed(printed, figures, exact)
        return cls(text=text, printed=printed.strip(), lhs=text, provider=provider, figures=_figures(figures), exact=exact or not _is_plain(printed),
                   printed_value=printed_value, source=source)

    def value(self) -> sympy.Expr:
        """The claim's left side as an exact SymPy number (inputs substituted), or the provider's value."""
        if self.provider is None:
            return self.value_expression
        raw = self.provider()
        return raw if isinstance(raw, sympy.Basic) else _from_number(raw)

    def computed(self, digits: int = DIGITS, value: sympy.Expr | None = None) -> sympy.Float:
        """The claim's left side evaluated to ``digits`` significant digits (a real SymPy Float)."""
        value = self.value() if value is None else value
        approx = sympy.N(value, digits)
        if approx.has(sympy.nan, sympy.zoo, sympy.oo, -sympy.oo) or not approx.is_number:
            raise NonFiniteError("claim", self.text)
        re_part, im_part = approx.as_real_imag()
        if abs(im_part) > abs(re_part) * sympy.Float(10) ** (EXACT_MARGIN - digits) and im_part != 0:
            raise ParseError("claim", self.text, f"its value {approx} is not a real number")
        return sympy.Float(re_part, digits)

    def tolerance(self, digits: int = DIGITS) -> sympy.Rational | sympy.Float:
        """Half a unit of the printed precision (or the exact-claim margin)."""
        if self.exact:
            scale = max(abs(sympy.N(self.printed_value, digits)), 1)
            return sympy.Float(10, digits) ** (EXACT_MARGIN - digits) * scale
        # a half unit is 5 x 10^k: read it back from one significant digit so that it is exact
        if self.figures is not None:
            return sympy.Rational(f"{half_unit(float(self.printed_value), self.figures):.1e}")
        return sympy.Rational(f"{decimals_tolerance(self.printed):.1e}")

    def precision(self) -> str:
        """The precision in words: 'the 4 decimals written', '3 significant figures', 'exact'."""
        if self.exact:
            return "exact"
        if self.figures is not None:
            return f"{self.figures} significant figure{'s' if self.figures != 1 else ''}"
        mantissa = self.printed.lstrip("+-").split("e")[0].split("E")[0]
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        if decimals and "e" not in self.printed.lower():
            return f"the {decimals} decimal{'s' if decimals != 1 else ''} written"
        return "the last digit written"

    def verify(self, digits: int = DIGITS) -> "Verdict":
        """Evaluate the claim at ``digits`` significant digits and compare with the printed result."""
        digits = integer("digits", digits, minimum=EXACT_MARGIN + 5, maximum=1000)
        with mpmath.workdps(digits + 10):
            value = self.value()
            computed = self.computed(digits, value)
            # the difference is evaluated as one expression, so SymPy raises the working
            # precision through any cancellation instead of subtracting two rounded numbers
            discrepancy = sympy.Float(abs(sympy.N(value - self.printed_value, digits)), digits)
            tol = self.tolerance(digits)
            verified = bool(discrepancy <= tol)
        return Verdict(self, verified, computed, discrepancy, tol)


@dataclass(frozen=True)
class Verdict:
    """The outcome of :meth:`Claim.verify`."""

    claim: Claim
    verified: bool
    computed: sympy.Float
    discrepancy: sympy.Float
    tolerance: sympy.Expr

    @property
    def status(self) -> str:
        return "verified" if self.verified else "contradicted"

    def computed_text(self, figures: int = 10) -> str:
        if self.computed.is_zero:
            return "0"
        text = _digits(self.computed, figures)
        return text[:-2] if text.endswith(".0") else text

    @property
    def relative_discrepancy(self) -> float:
        """The discrepancy relative to the printed value (absolute when the printed value is 0)."""
        printed = abs(float(sympy.N(self.claim.printed_value, 17)))
        return float(self.discrepancy) / printed if printed else float(self.discrepancy)

    def tolerance_text(self) -> str:
        c = self.claim
        return f"agreement to {DIGITS - EXACT_MARGIN} digits" if c.exact else f"±{_short(self.tolerance)} at {c.precision()}"

    def line(self) -> str:
        """One line: verdict, computed value, printed value, tolerance and discrepancy."""
        c = self.claim
        lhs = c.lhs or c.text
        where = f" [{', '.join(f'{k}={v}' for k, v in c.inputs)}]" if c.inputs else ""
        tol = self.tolerance_text()
        return (f"{self.status}: {lhs}{where} = {self.computed_text()} (printed {c.printed}; tolerance {tol}; "
                f"discrepancy {_distinct(self.discrepancy, self.tolerance)})")

    def as_dict(self) -> dict:
        """JSON-ready fields (numbers as floats, the exact computed value as a string of 30 digits)."""
        c = self.claim
        return {
            "verdict": self.status,
            "claim": c.text,
            "inputs": dict(c.inputs),
            "computed": float(self.computed),
            "computed_digits": _digits(self.computed, 30),
            "printed": c.printed,
            "precision": c.precision(),
            "tolerance": float(self.tolerance),
            "discrepancy": float(self.discrepancy),
            "source": c.source,
        }


def parse_claim(text: str, *, figures: int | None = None, exact: bool = False, source: str = "") -> "Claim | VectorClaim":
    """Read a claim ``EXPRESSION = PRINTED [where NAME = VALUE, ...]`` (``≈`` may replace ``=``).

    ``PRINTED`` is a plain decimal number (compared at the decimals written, or
    at ``figures`` significant figures) or an expression (compared exactly).
    When the expression is a vector -- ``(a, b)`` or a vector operation such as
    ``softmax(...)`` or ``layernorm(...)`` -- the printed result is a vector
    ``(p, q)`` and a :class:`VectorClaim` compares it entry by entry.
    Raises :class:`~seqgrad.errors.ParseError` for text that is not a claim.
    """
    if not isinstance(text, str):
        raise SeqgradTypeError("claim", text, "a string such as 'sin(1)*cos(2) + cos(1)*sin(2) = 0.1411'")
    if len(text) > MAX_LENGTH:
        raise ParseError("claim", text, f"at most {MAX_LENGTH} characters (got {len(text)})")
    body, *rest = _WHERE.split(text)
    if len(rest) > 1:
        raise ParseError("claim", text, "at most one 'where' clause")
    inputs = _bindings(rest[0], text) if rest else ()
    parts = _SIGN.split(body)
    if len(parts) == 1:  # no '=': refuse unsafe text for what it is before asking for the '='
        parse_expression(body, variables=[name for name, _ in inputs], argument="claim expression")
    if len(parts) != 2:
        raise ParseError("claim", text, "exactly one '=' between the expression and the printed result "
                         "(for example 'sin(1)*cos(2) + cos(1)*sin(2) = 0.1411'; split a chain a = b = c into two claims)")
    lhs_text, printed = parts[0].strip(), parts[1].strip()
    names = [name for name, _ in inputs]
    expression = parse_value(lhs_text, variables=names, argument="claim expression")
    values = {name: parse_expression(value, argument=f"input {name}") for name, value in inputs}
    for name, value in values.items():
        if not value.is_number:
            raise ParseError(f"input {name}", dict(inputs)[name], "a number")
    value_expression = parse_value(lhs_text, values=values, argument="claim expression")
    entries = vector_entries(printed, argument="printed") if printed else None
    free = set().union(*[e.free_symbols for e in expression]) if isinstance(expression, tuple) else expression.free_symbols
    unused = set(names) - {s.name for s in free}
    if unused:
        raise ParseError("claim", text, f"the input(s) {', '.join(sorted(unused))} do not appear in the expression")
    if isinstance(expression, tuple) or entries is not None:
        return _vector_claim(text, lhs_text, printed, entries, expression, value_expression, inputs, figures, exact, source)
    printed_value = _printed(printed, figures, exact)
    return Claim(text=text.strip(), printed=printed, lhs=lhs_text, expression=expression, inputs=inputs, figures=_figures(figures),
                 exact=exact or not _is_plain(printed), printed_value=printed_value, value_expression=value_expression,
                 source=source)


def _vector_claim(text, lhs_text, printed, entries, expression, value_expression, inputs, figures, exact, source) -> "VectorClaim":
    if not isinstance(expression, tuple):
        raise ParseError("claim", text, "the printed result is a vector, so the expression must be one too, e.g. softmax(1.2, 0.5, 2.0)")
    if entries is None:
        raise ParseError("claim", text, f"the expression is a vector of {len(expression)} entries: print them as (a, b, ...)")
    if len(entries) != len(expression):
        raise ParseError("claim", text, f"the expression has {len(expression)} entries but {len(entries)} are printed")
    components = tuple(
        Claim(text=f"{lhs_text}[{i}] = {p}", printed=p, lhs=f"{lhs_text}[{i}]", expression=e, inputs=inputs,
              figures=_figures(figures), exact=exact or not _is_plain(p), printed_value=_printed(p, figures, exact),
              value_expression=ve, source=source)
        for i, (e, ve, p) in enumerate(zip(expression, value_expression, entries)))
    return VectorClaim(text=text.strip(), printed=printed, lhs=lhs_text, components=components, inputs=inputs, source=source)


@dataclass(frozen=True)
class VectorClaim:
    """A printed vector, ``softmax(1.2, 0.5, 2.0) = (0.31, 0.15, 0.54)``: one :class:`Claim` per entry,
    each at its own printed precision; verified when every entry is."""

    text: str
    printed: str
    lhs: str
    components: tuple[Claim, ...]
    inputs: tuple[tuple[str, str], ...] = ()
    source: str = ""

    def verify(self, digits: int = DIGITS) -> "VectorVerdict":
        return VectorVerdict(self, tuple(c.verify(digits) for c in self.components))


@dataclass(frozen=True)
class VectorVerdict:
    """The outcome of :meth:`VectorClaim.verify`: the entries' verdicts."""

    claim: VectorClaim
    entries: tuple[Verdict, ...]

    @property
    def verified(self) -> bool:
        return all(v.verified for v in self.entries)

    @property
    def status(self) -> str:
        return "verified" if self.verified else "contradicted"

    @property
    def discrepancy(self) -> sympy.Float:
        return max((v.discrepancy for v in self.entries), key=float)

    @property
    def relative_discrepancy(self) -> float:
        return max(v.relative_discrepancy for v in self.entries)

    def computed_text(self, figures: int = 10) -> str:
        return "(" + ", ".join(v.computed_text(figures) for v in self.entries) + ")"

    def line(self) -> str:
        c = self.claim
        where = f" [{', '.join(f'{k}={v}' for k, v in c.inputs)}]" if c.inputs else ""
        tolerances = {v.tolerance_text() for v in self.entries}
        tol = tolerances.pop() if len(tolerances) == 1 else "per entry at its printed precision"
        worst = max(self.entries, key=lambda v: float(v.discrepancy))
        bad = [str(i) for i, v in enumerate(self.entries) if not v.verified]
        which = f"; entr{'y' if len(bad) == 1 else 'ies'} {', '.join(bad)} contradicted" if bad else ""
        return (f"{self.status}: {c.lhs}{where} = {self.computed_text()} (printed {c.printed}; tolerance {tol}; "
                f"largest discrepancy {_distinct(worst.discrepancy, worst.tolerance)}{which})")

    def as_dict(self) -> dict:
        c = self.claim
        return {
            "verdict": self.status,
            "claim": c.text,
            "inputs": dict(c.inputs),
            "computed": [float(v.computed) for v in self.entries],
            "computed_digits": [_digits(v.computed, 30) for v in self.entries],
            "printed": c.printed,
            "precision": [v.claim.precision() for v in self.entries],
            "tolerance": [float(v.tolerance) for v in self.entries],
            "discrepancy": [float(v.discrepancy) for v in self.entries],
            "entries": [v.status for v in self.entries],
            "source": c.source,
        }


def _figures(figures):
    return None if figures is None else integer("figures", figures, minimum=1, maximum=30)


def _is_plain(printed: str) -> bool:
    return bool(_PLAIN_NUMBER.match(printed))


def _printed(printed: str, figures: int | None, exact: bool) -> sympy.Expr:
    if not isinstance(printed, str):
        raise SeqgradTypeError("printed", printed, "the printed result as text, e.g. '0.1411'")
    if not printed.strip():
        raise ParseError("printed", printed, "the printed result after '=', e.g. 0.1411")
    if _is_plain(printed):
        decimals_tolerance(printed)  # refuses what is not a finite decimal
        return parse_number(printed.strip(), argument="printed")
    if figures is not None:
        raise ParseError("printed", printed, "a plain decimal number when significant figures are given")
    value = parse_expression(printed, argument="printed")
    if not value.is_number:
        raise ParseError("printed", printed, "a number or a constant expression such as 1/4")
    return value


def _bindings(clause: str, text: str) -> tuple[tuple[str, str], ...]:
    items, depth, start = [], 0, 0
    for i, ch in enumerate(clause):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            items.append(clause[start:i])
            start = i + 1
    items.append(clause[start:])
    out = []
    for item in items:
        name, sign, value = item.partition("=")
        if not sign or not name.strip() or not value.strip():
            raise ParseError("claim", text, "inputs are written 'where name = value, name = value'")
        out.append((name.strip(), value.strip()))
    names = check_variable_names([n for n, _ in out], argument="claim input")
    if len(set(names)) != len(names):
        raise ParseError("claim", text, "each input is given once")
    return tuple(out)


def _from_number(raw) -> sympy.Float:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise SeqgradTypeError("provider()", raw, "a real number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise NonFiniteError("provider()", raw)
    return sympy.Float(value, DIGITS)  # the binary value exactly


def _digits(value: sympy.Float, figures: int) -> str:
    """``value`` to ``figures`` significant digits, at full precision (not through a float)."""
    with mpmath.workdps(max(figures, DIGITS) + 5):
        return mpmath.nstr(mpmath.mpf(value._mpf_), figures)


def _distinct(discrepancy, tolerance) -> str:
    """The discrepancy with enough figures to show on which side of the tolerance it lies."""
    for figures in range(2, 16):
        text = _short(discrepancy, figures)
        if discrepancy == tolerance or text != _short(tolerance, figures):
            return text
    return text


def _short(x, figures: int = 1) -> str:
    value = float(x)
    if value == 0:
        return "0"
    return f"{value:.{figures - 1}e}" if figures > 1 else f"{value:.0e}"

