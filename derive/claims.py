"""Printed numeric claims and a verdict that says why.

A textbook claim is an expression (or an operation whose value a function
provides), its inputs, the printed result and what the printed result means.
:func:`parse_claim` reads one the way the text writes it::

    sin(1)*cos(2) + cos(1)*sin(2) = 0.1411
    u*h + (1 - u)*c = 0.410 where u = 0.9, h = 0.5, c = -0.4
    softmax(1.2, 0.5, 2.0, -inf) = (0.2687, 0.1334, 0.5979, 0)

**What a printed number means** (the same in ``seqgrad claim``, this API and
the catalogue of the course texts):

* an integer (``1``, ``0``, ``1943``) or an expression (``1/4``,
  ``10000**(-2/5)``) after ``=`` is exact: ``sigmoid(1) = 1`` is contradicted;
* a decimal (``0.1411``, ``0.50``, ``6.3e-4``) is the value rounded at the
  digits printed, trailing zeros included: ``0.50`` stands for [0.495, 0.505];
* ``≈``, ``figures=N`` (``--figures N``) or ``decimals=N`` (``--decimals N``)
  say that the printed number is rounded: ``sqrt(5) ≈ 2`` rounds at the units
  digit, ``--figures 3`` at the third significant figure, ``--decimals 4`` at
  the fourth decimal; ``exact=True`` (``--exact``) asks for equality instead;
* a tie -- a value exactly half a unit from two printed neighbours -- is
  rounded **half away from zero** (as school arithmetic does): ``0.25 ≈ 0.3``
  is verified, ``0.25 ≈ 0.2`` is contradicted, ``-0.25 ≈ -0.3`` is verified;
* ``−`` is read as ``-``, and ``0,5`` as ``0.5`` (see :mod:`derive.whitelist`
  for decimal commas); ``inf``, ``-inf`` or ``∞`` may be a vector entry (a
  masked score); ``sum``, ``prod``, ``max`` and ``min`` take entries or a vector.

**Deciding.**  The left side is evaluated by :mod:`derive.certified`: exact
rationals while the arithmetic is rational, otherwise rigorous intervals.  The
precision is raised (from 20 to ``digits`` significant digits, 1000 by
default) until the verdict is certain.  A question no precision settles -- is
this subexpression exactly 0? is the value exactly on a rounding tie? -- is
put to SymPy; if SymPy cannot prove it either, the verdict is **undecided**
(never a guess).  An interval too wide to tell whether a limit holds (exp of
a subexpression that cancels to 0) also raises the precision; still open at
``digits``, the verdict is undecided.  *Truncated* is judged on the certified
interval: every point of it cuts off to the printed digits.  Division by zero, an undefined logarithm or square root and
overflow are :class:`~seqgrad.errors.UndefinedError` / ``ParseError``.

**Verdicts** (:attr:`Verdict.status`):

``verified``
    the value rounds to the printed number (or equals it, for an exact claim);
``rounding-consistent``
    it does not, but the printed number follows from intermediates the text
    itself prints or computes with (rounded factors, unrounded weights); the
    claim records them (``intermediates=``) and the reason names them;
``truncated``
    the printed number is the value cut off, not rounded, at the digits printed;
``contradicted``
    none of these; the reason gives the exact value and the printed digit where
    the two depart;
``undecided``
    the evaluation could not settle the verdict (see above).

Text that is not a claim raises :class:`~seqgrad.errors.ParseError` (the
``unparsable`` verdict of ``seqgrad claim --json`` and of the catalogue).

>>> from seqgrad.derive.claims import parse_claim
>>> parse_claim("sin(1)*cos(2) + cos(1)*sin(2) = 0.1411").verify().line()
'verified: sin(1)*cos(2) + cos(1)*sin(2) = 0.1411200081 (printed 0.1411, rounded at the 4 decimals written: ±5e-05; off by 2.0e-05)'
>>> parse_claim("sigmoid(1) = 1").verify().status
'contradicted'
>>> parse_claim("cos(0.01) = 0.9999").verify().status
'truncated'
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from functools import cached_property
from fractions import Fraction
from typing import Any, Callable

import mpmath
from mpmath import mp

from seqgrad.errors import NonFiniteError, ParseError, SeqgradTypeError
from seqgrad.timebox import within
from seqgrad.validate import integer

from . import certified
from .certified import Infinity, Unsettled, interval, sign
from .whitelist import MAX_LENGTH, check_variable_names, is_vector_node, name_value_pairs, normalize, parse_tree

DIGITS = 1000        # the highest precision (significant digits) an evaluation may use
START_DIGITS = 20    # the precision of the first attempt
SYMPY_SECONDS = 0.5  # the CPU time SymPy may take to prove an equality no precision settles (then: undecided)
STATUSES = ("verified", "rounding-consistent", "truncated", "contradicted", "undecided")
#: how bad each verdict is, for the verdict of a vector or of a group of claims (the worst one)
SEVERITY = {"verified": 0, "rounding-consistent": 1, "truncated": 2, "undecided": 3, "contradicted": 4}
_SIGN = re.compile(r"≈|~=|(?<![=<>!])=(?!=)")
_APPROX = re.compile(r"≈|~=")
_WHERE = re.compile(r"\bwhere\b")
_DECIMAL = re.compile(r"\s*([+-]?)(?=\.?\d)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*\Z")  # 0.5, .5, 5., 5e-3
_BINDING_START = re.compile(r"\s*[A-Za-z_][A-Za-z0-9_]*\s*=")


# --------------------------------------------------------------------------- what a printed number means

@dataclass(frozen=True)
class Reading:
    """What a printed number stands for: ``exact``, or rounded at ``unit`` (the last printed digit's place)."""

    exact: bool
    unit: Fraction | None = None
    how: str = "exact"  # in words: 'exact', 'rounded at the 4 decimals written', ...
    figures: int | None = None  # when rounded at significant figures

    @property
    def half(self) -> Fraction:
        return self.unit / 2 if self.unit is not None else Fraction(0)

    @property
    def decimals(self) -> int:
        """Decimals of the unit (negative for tens, hundreds ...)."""
        return -_exponent10(self.unit) if self.unit is not None else 0


def _exponent10(unit: Fraction) -> int:
    """k with unit == 10**k (exactly, for any size)."""
    return len(str(unit.numerator)) - 1 if unit.denominator == 1 else 1 - len(str(unit.denominator))


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def read_printed(printed: str, *, approx: bool = False, figures: int | None = None, decimals: int | None = None,
                 exact: bool = False, argument: str = "printed") -> tuple[Fraction | None, Reading]:
    """``(value, reading)`` of one printed number: its exact value (None for an expression, which is then
    evaluated like the left side) and what it stands for (see the module docstring)."""
    if not isinstance(printed, str):
        raise SeqgradTypeError(argument, printed, "the printed result as text, e.g. '0.1411'")
    source = normalize(printed, argument)
    if not source:
        raise ParseError(argument, printed, "the printed result after '=', e.g. 0.1411")
    m = _DECIMAL.match(source)
    if m is None:
        if figures is not None or decimals is not None or approx:
            raise ParseError(argument, printed, "a plain decimal number when the printed result is rounded "
                                                "(≈, figures or decimals); an expression is compared exactly with '='")
        return None, Reading(True)
    sign_text, whole, frac, exp_text = m.groups()
    frac = frac or ""
    exponent = int(exp_text or 0)
    if len(whole.lstrip("0") + frac) > 60 or abs(exponent) > 300:
        raise ParseError(argument, printed, "a printed number has at most 60 digits and a decimal exponent within ±300")
    value = Fraction(int(whole + frac), 10 ** len(frac)) * Fraction(10) ** exponent * (-1 if sign_text == "-" else 1)
    if exact:
        return value, Reading(True)
    if figures is not None:
        figures = integer("figures", figures, minimum=1, maximum=30)
        lead = _exponent_of(value) if value else -1
        unit = Fraction(10) ** (lead - figures + 1)
        return value, Reading(False, unit, f"rounded at {figures} significant figure{'s' if figures != 1 else ''}", figures)
    if decimals is not None:
        decimals = integer("decimals", decimals, minimum=-30, maximum=300)
        return value, Reading(False, Fraction(10) ** -decimals, f"rounded at {decimals} decimal{'s' if decimals != 1 else ''}")
    written = len(frac) - exponent  # the decimals the last written digit stands at
    is_decimal = bool(m.group(3) is not None or exp_text)
    if not (is_decimal or approx):
        return value, Reading(True)
    unit = Fraction(10) ** -written
    if written > 0 and not exp_text:
        how = f"rounded at the {written} decimal{'s' if written != 1 else ''} written"
    elif written == 0 and not exp_text:
        how = "rounded at the units digit"
    else:
        how = f"rounded at the last digit written (±{_short(unit / 2)})"
    return value, Reading(False, unit, how)


def _exponent_of(value: Fraction) -> int:
    """floor(log10 |value|), exactly."""
    value = abs(value)
    k = math.floor(math.log10(value.numerator) - math.log10(value.denominator))
    while Fraction(10) ** k > value:
        k -= 1
    while Fraction(10) ** (k + 1) <= value:
        k += 1
    return k


# --------------------------------------------------------------------------- claims

@dataclass(frozen=True)
class Intermediates:
    """Values the text itself prints or computes with, which a printed result may have come from:
    ``bindings`` replaces inputs of the claim's ``where`` clause by these (text or a function giving a number)."""

    description: str
    bindings: tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class Claim:
    """One printed claim: what is computed, the printed result, and what the printed result means.

    Exactly one of ``lhs`` (text, read by the whitelist) and ``provider`` (a
    function returning the value, for claims whose value comes from a
    computation such as the numeric encoder) gives the value.  ``index``
    selects one entry of a vector left side.
    """

    text: str
    printed: str
    lhs: str = ""
    reading: Reading = Reading(True)
    printed_value: Fraction | Infinity | None = None
    provider: Callable[[], Any] | None = field(default=None, compare=False)
    inputs: tuple[tuple[str, str], ...] = ()
    index: int | None = None
    intermediates: tuple[Intermediates, ...] = ()
    source: str = ""

    @classmethod
    def from_provider(cls, text: str, provider: Callable[[], Any], printed: str, *, figures: int | None = None,
                      decimals: int | None = None, exact: bool = False, source: str = "",
                      intermediates: tuple[Intermediates, ...] = ()) -> "Claim":
        """A claim whose computed value ``provider()`` returns (a number, or a SymPy number)."""
        if not callable(provider):
            raise SeqgradTypeError("provider", provider, "a function returning the computed value")
        if not isinstance(printed, str):
            raise SeqgradTypeError("printed", printed, "the printed result as text, e.g. '0.1411'")
        fields = _printed_fields(printed, False, figures, decimals, exact)
        if fields["printed_value"] is None:
            raise ParseError("printed", printed, "a number or an expression with a rational value for a computed claim")
        return cls(text=text, printed=printed.strip(), lhs=text, provider=provider, source=source,
                   intermediates=intermediates, **fields)

    # ---------------------------------------------------------------- compatibility views

    @property
    def exact(self) -> bool:
        return self.reading.exact

    @property
    def figures(self) -> int | None:
        return self.reading.figures

    @property
    def expression(self):
        """The left side as a SymPy expression with the inputs as symbols (imports SymPy)."""
        from .safe_parse import parse_value

        value = parse_value(self.lhs, variables=[n for n, _ in self.inputs], argument="claim expression")
        return value[self.index] if self.index is not None else value

    def precision(self) -> str:
        return self.reading.how

    # ---------------------------------------------------------------- deciding

    def verify(self, digits: int = DIGITS) -> "Verdict":
        """Decide the claim, raising the precision up to ``digits`` significant digits (see the module docstring)."""
        digits = integer("digits", digits, minimum=START_DIGITS, maximum=10_000)
        first = _decide(self, self.inputs, digits)
        if first.status == "verified" or first.status == "undecided":
            return first
        for alt in self.intermediates:
            bindings = dict(self.inputs)
            bindings.update(alt.bindings)
            other = _decide(self, tuple(bindings.items()), digits)
            if other.status == "verified":
                return first.but("rounding-consistent", f"the printed {self.printed} follows from {alt.description} "
                                 f"({_bindings_text(alt.bindings)}), which gives {other.computed_text()}; "
                                 + first.reason, alternative=(alt.description, _bindings_text(alt.bindings), other))
        if first.status == "contradicted" and not self.reading.exact and _truncates(self, first, digits):
            return first.but("truncated", f"{first.computed_text()} cut off (not rounded) at the printed digits gives "
                                          f"{self.printed}; rounded it is {_rounded_text(first.shown, self.reading)}")
        return first


def _bindings_text(bindings) -> str:
    return ", ".join(f"{k} = {v if isinstance(v, str) else _value_text(_from_number(v()), 8)}" for k, v in bindings)


def _constant(printed: str, inputs=()):
    """The value of a printed expression (the claim's inputs bound) at the lowest precision that settles it."""
    source, body = parse_tree(printed, "printed")
    try:
        return _Evaluation(source, body, inputs, "printed", printed).value(DIGITS)
    except _Undecided as exc:
        raise ParseError("printed", printed, f"a value that can be decided ({exc})") from None


@dataclass(frozen=True)
class _Evaluation:
    """One text evaluated under one set of bindings, with precision raised as needed."""

    source: str
    body: Any
    bindings: tuple
    argument: str
    text: str
    index: int | None = None

    def at(self, bits: int, settled: dict):
        names = {}
        for name, value in self.bindings:
            if callable(value):
                names[name] = _from_number(value(), name)
            else:
                src, body = parse_tree(value, f"input {name}")
                v = certified.evaluate(body, src, text=value, argument=f"input {name}", bits=bits, settled=settled)
                if isinstance(v, tuple):
                    raise ParseError(f"input {name}", value, "a number, not a vector")
                names[name] = v
        v = certified.evaluate(self.body, self.source, text=self.text, argument=self.argument, bits=bits,
                               names=names, settled=settled)
        if self.index is not None:
            v = v[self.index]
        return v

    def to_sympy(self, expression: str):
        """``expression`` (a subexpression's text) in SymPy, the bindings substituted."""
        from .safe_parse import parse_expression, parse_value

        values = {}
        for name, value in self.bindings:
            values[name] = _sympy_number(value() if callable(value) else parse_expression(value, argument=f"input {name}"))
        return parse_value(expression, values=values, argument=self.argument)

    def settled_at(self, bits: int, settled: dict, ask: bool, last: bool):
        """The value at ``bits``.  A question the intervals leave open is put to SymPy once ``ask`` is set
        (from the second precision on); a proof is passed back, so that the evaluation continues with the
        exact value.  Raises Unsettled to ask for more precision, _Undecided when ``last`` and still open."""
        for _ in range(16):
            try:
                return self.at(bits, settled)
            except Unsettled as exc:
                question = exc.question
                if question is None:  # an interval too wide to tell a limit (certified.Imprecise): only precision helps
                    if not last:
                        raise
                    raise _Undecided(f"at the highest precision, {exc.what} (the interval still reaches past it)") from None
                if ask and question.key not in settled:
                    settled[question.key] = _settle(self, question.expression, question.point)
                    if settled[question.key] is True:
                        continue
                if not last:
                    raise
                raise _Undecided(f"could not decide whether {question.what} {question.expression!r} is exactly "
                                 f"{_fraction_text(question.point)}: intervals at the highest precision contain it "
                                 "and SymPy could not prove it") from None
        raise _Undecided("too many open questions")  # pragma: no cover

    def value(self, digits: int):
        """The value at the lowest precision that leaves no question open."""
        schedule, settled = _schedule(digits), {}
        for i, bits in enumerate(schedule):
            try:
                return self.settled_at(bits, settled, bits == schedule[-1], bits == schedule[-1])
            except Unsettled:
                continue
        raise AssertionError("unreachable")  # pragma: no cover


class _Undecided(Exception):
    pass


def _schedule(digits: int) -> list[int]:
    top = int(digits * math.log2(10)) + 16
    bits, out = int(START_DIGITS * math.log2(10)) + 16, []
    while bits < top:
        out.append(bits)
        bits *= 3
    return out + [top]


def _settle(evaluation: "_Evaluation", expression: str, point, *, index: int | None = None,
            minus: "_Evaluation | None" = None) -> bool | None:
    """SymPy's answer to: is ``expression`` (entry ``index`` of a vector), less the printed expression
    ``minus`` if given, exactly ``point``?  True when proved; None when SymPy cannot tell."""
    import sympy
    import sympy.physics.units  # noqa: F401 - simplify() imports it on first use: not inside the time box

    try:
        expr = evaluation.to_sympy(expression)
        if isinstance(expr, tuple):
            if index is None:
                return None
            expr = expr[index]
        if minus is not None:
            expr = expr - minus.to_sympy(minus.text)
        difference = expr - sympy.Rational(point.numerator, point.denominator)
        if difference == 0:
            return True
        return True if within(SYMPY_SECONDS, lambda: sympy.simplify(difference) == 0, cpu=True) is True else None
    except Exception:  # noqa: BLE001 - SymPy failing to prove (a refused text, MemoryError deep in nsimplify) proves nothing
        return None


def _sympy_number(value):
    import sympy

    if isinstance(value, sympy.Basic):
        return value
    if isinstance(value, Fraction):
        return sympy.Rational(value.numerator, value.denominator)
    return sympy.Rational(Fraction(value))


def _from_number(raw, argument: str = "provider()"):
    """A provider's number as an exact Fraction (a float is the binary value it holds)."""
    if isinstance(raw, (Fraction, Infinity)):
        return raw
    if isinstance(raw, bool):
        raise SeqgradTypeError(argument, raw, "a real number")
    if isinstance(raw, int):
        return Fraction(raw)
    if hasattr(raw, "_mpf_"):  # an mpmath or SymPy Float: its binary value exactly
        man, exp = _mpf_parts(raw._mpf_)
        return Fraction(man) * Fraction(2) ** exp if exp >= 0 else Fraction(man, 2 ** -exp)
    if hasattr(raw, "p") and hasattr(raw, "q"):  # a SymPy Rational
        return Fraction(int(raw.p), int(raw.q))
    if hasattr(raw, "evalf"):  # another SymPy number: evaluated to 60 digits
        return _from_number(raw.evalf(60), argument)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise SeqgradTypeError(argument, raw, "a real number") from None
    if math.isinf(value):
        return Infinity(1 if value > 0 else -1)  # a masked score
    if not math.isfinite(value):
        raise NonFiniteError(argument, raw)
    return Fraction(value)


def _mpf_parts(mpf_tuple):
    sgn, man, exp, _ = mpf_tuple
    if not man and exp:
        raise NonFiniteError("provider()", "a non-finite SymPy/mpmath number")
    return (-man if sgn else man), exp


# --------------------------------------------------------------------------- the comparison

def _decide(claim: Claim, bindings: tuple, digits: int) -> "Verdict":
    """The verdict of ``claim`` with these input bindings: verified, contradicted or undecided."""
    settled: dict = {}
    lhs = _left(claim, bindings)
    rhs = None
    if claim.printed_value is None:  # a printed expression with an irrational value, e.g. 10000**(-2/5)
        p_source, p_body = parse_tree(claim.printed, "printed")
        rhs = _Evaluation(p_source, p_body, bindings, "printed", claim.printed)
    schedule = _schedule(digits)
    value = printed = point = None
    asked = False
    try:
        for i, bits in enumerate(schedule):
            last = bits == schedule[-1]
            try:
                value = lhs.settled_at(bits, settled, last, last)
                printed = rhs.settled_at(bits, settled, last, last) if rhs is not None else claim.printed_value
            except Unsettled:
                continue
            with certified.working_bits(bits):
                outcome = _compare(value, printed, claim.reading)
                point = _open_point(value, printed, claim.reading) if outcome is None else None
            if outcome is not None:
                refine = None
                if not isinstance(value, (Fraction, Infinity)) and bits < _DISPLAY_BITS:
                    refine = (lambda lhs=lhs, value=value: _refined(lhs, value, dict(settled)))
                return Verdict(claim, outcome[0], value, outcome[1], bits, printed, refine)
            # an exact equality, or a value on a rounding tie, never separates: at the last precision
            # ask SymPy whether the value is exactly that point
            if last and not asked and point is not None and isinstance(lhs, _Evaluation):
                asked = True
                if _settle(lhs, lhs.text, point if rhs is None else Fraction(0), index=claim.index, minus=rhs) is True:
                    if claim.reading.exact:
                        exact = printed if isinstance(printed, Fraction) else value
                        return Verdict(claim, "verified", exact, "proved equal by SymPy", bits, printed)
                    status, reason = _tie(point - printed, printed, claim.reading)
                    return Verdict(claim, status, point, reason + " (SymPy proved the value exactly on the tie)", bits, printed)
        raise _Undecided(f"at {digits} digits the value {_value_text(value, 20)} cannot be separated from "
                         + (f"the printed {claim.printed}" if claim.reading.exact else
                            f"the rounding boundary {_fraction_text(point) if point is not None else '?'}")
                         + ", and SymPy could not prove them equal")
    except _Undecided as exc:
        return Verdict(claim, "undecided", None, str(exc), schedule[-1])


def _left(claim: Claim, bindings: tuple):
    """What gives the claim's value: its provider, or its left side under these bindings."""
    if claim.provider is not None:
        return _ProvidedValue(claim.provider, _from_number(claim.provider()))
    source, body = parse_tree(claim.lhs, "claim expression")
    return _Evaluation(source, body, bindings, "claim expression", claim.lhs, claim.index)


_DISPLAY_BITS = int(40 * math.log2(10)) + 16  # a decided value is shown to 40 digits (as_dict gives 30)


def _refined(lhs, value, settled):
    try:
        return lhs.settled_at(_DISPLAY_BITS, settled, False, False)
    except (Unsettled, _Undecided):
        return value


@dataclass(frozen=True)
class _ProvidedValue:
    provider: Callable
    number: Fraction

    def settled_at(self, bits, settled, ask, last):
        return self.number


def _compare(value, printed, reading: Reading):
    """``(status, note)`` when certain at this precision, else None."""
    if isinstance(value, Infinity) or isinstance(printed, Infinity):
        same = isinstance(value, Infinity) and isinstance(printed, Infinity) and value.sign == printed.sign
        return ("verified" if same else "contradicted"), ""
    d = _sub(value, printed)
    if reading.exact:
        s = sign(d)
        return None if s is None else (("verified" if s == 0 else "contradicted"), "")
    above, below = sign(_sub(d, reading.half)), sign(_sub(d, -reading.half))
    if above is None or below is None:
        return None
    if above < 0 < below:
        return "verified", ""
    if above == 0 or below == 0:
        return _tie(d, printed, reading)
    return "contradicted", ""


def _tie(d, printed, reading: Reading):
    """A value exactly half a unit from the printed number: rounded half away from zero."""
    side = 1 if sign(d) > 0 else -1  # the value lies above (1) or below (-1) the printed number
    rounds_here = (printed < 0 and side > 0) or (printed > 0 and side < 0)
    rule = "a tie, rounded half away from zero"
    if rounds_here:
        return "verified", rule
    return "contradicted", f"{rule}, gives {_fraction_text(printed + side * reading.unit, reading.decimals)}"


def _open_point(value, printed, reading: Reading):
    """The point a comparison still open at the highest precision hinges on: the printed value itself
    (exact), or the rounding boundary the value cannot be separated from."""
    if value is None or isinstance(value, Infinity) or printed is None:
        return None
    if reading.exact:
        return Fraction(0) if not isinstance(printed, Fraction) else printed
    for boundary in (printed + reading.half, printed - reading.half):
        if certified.contains(value, boundary):
            return boundary
    return None


def _sub(a, b):
    if isinstance(a, Fraction) and isinstance(b, Fraction):
        return a - b
    return interval(a) - interval(b)


def _truncates(claim: Claim, verdict: "Verdict", digits: int) -> bool:
    """Whether the printed number of a contradicted claim is its value cut off toward zero at the printed unit:
    judged on the certified interval -- every point of it must cut off to the printed digits (none rounds to
    them: the claim is contradicted).  An interval across a cut-off boundary is narrowed at the next
    precisions; one no precision separates (a value exactly on the boundary, sin(pi/6) against 0.49) is not
    truncated."""
    printed, unit = claim.printed_value, claim.reading.unit
    if verdict.value is None or isinstance(verdict.value, Infinity) or not isinstance(printed, Fraction) or unit is None:
        return False
    cut = _cut_off(verdict.value, printed, unit)
    if cut is not None:
        return cut
    lhs, settled = _left(claim, claim.inputs), {}
    schedule = [bits for bits in _schedule(digits) if bits > verdict.bits]
    for bits in schedule:
        last = bits == schedule[-1]
        try:
            cut = _cut_off(lhs.settled_at(bits, settled, last, last), printed, unit)
        except Unsettled:
            continue
        except _Undecided:
            return False
        if cut is not None:
            return cut
    return False


def _cut_off(value, printed: Fraction, unit: Fraction) -> bool | None:
    """Does every point of ``value`` cut off toward zero at ``unit`` to ``printed`` (True), none (False),
    or some but not all (None)?"""
    if isinstance(value, Fraction):
        return _truncate(value, unit) == printed
    a, b = (_from_number(mp.make_mpf(e)) for e in value._mpi_)
    # the points that cut off to the printed number: [p, p + u) above 0, (p - u, p] below, (-u, u) at 0
    low, high = (printed, printed + unit) if printed > 0 else ((printed - unit, printed) if printed < 0 else (-unit, unit))
    closed_low, closed_high = printed > 0, printed < 0

    def inside(x):
        return (low <= x if closed_low else low < x) and (x <= high if closed_high else x < high)

    if inside(a) and inside(b):
        return True
    if b < low or a > high or (b == low and not closed_low) or (a == high and not closed_high):
        return False
    return None


# --------------------------------------------------------------------------- verdicts

@dataclass(frozen=True)
class Verdict:
    """The outcome of :meth:`Claim.verify`: a status from :data:`STATUSES` and the reason."""

    claim: Claim
    status: str
    value: Any  # a Fraction, an mpmath interval, an Infinity, or None (undecided)
    why: str = ""
    bits: int = 0
    printed: Any = None  # the printed side's value (a Fraction, or an interval for an irrational printed expression)
    refine: Callable | None = field(default=None, compare=False, repr=False)  # the value to 40 digits, when asked
    #: a rounding-consistent verdict: (what the text used instead, as words; the verdict with those values)
    alternative: Any = field(default=None, compare=False, repr=False)

    def but(self, status: str, reason: str, alternative=None) -> "Verdict":
        return Verdict(self.claim, status, self.value, reason, self.bits, self.printed, self.refine, alternative)

    def rounded_text(self) -> str:
        """The value as the printed number would show it: rounded at the printed digits (an exact claim: the value)."""
        if self.claim.reading.exact or self.value is None or isinstance(self.value, Infinity):
            return self.computed_text()
        return _rounded_text(self.shown, self.claim.reading)

    @cached_property
    def shown(self):
        """The value to show: refined to 40 certified digits when the verdict was decided at fewer
        (evaluated only when a value is printed)."""
        return self.refine() if self.refine is not None else self.value

    @property
    def verified(self) -> bool:
        return self.status == "verified"

    @property
    def consistent(self) -> bool:
        """Verified, or rounding-consistent with the text's own intermediates."""
        return self.status in ("verified", "rounding-consistent")

    @property
    def computed(self) -> mpmath.mpf:
        """The value (the middle of its certified interval) as an mpmath number."""
        return _mid(self.value)

    @property
    def discrepancy(self) -> mpmath.mpf:
        """|value - printed| (0 when undecided)."""
        printed = self.printed if self.printed is not None else self.claim.printed_value
        if self.value is None or printed is None or isinstance(self.value, Infinity) or isinstance(printed, Infinity):
            return mp.mpf(0) if self.verified else mp.inf
        with mp.workprec(max(self.bits, 64)), certified.working_bits(max(self.bits, 64)):
            return abs(_mid(_sub(self.value, printed)))

    @property
    def tolerance(self) -> Fraction:
        """Half a unit of the printed digits (0 for an exact claim)."""
        return self.claim.reading.half

    @property
    def relative_discrepancy(self) -> float:
        """The discrepancy relative to the printed value (absolute when the printed value is 0)."""
        p = self.claim.printed_value
        d = float(self.discrepancy)
        return d / abs(float(p)) if isinstance(p, Fraction) and p else d

    @property
    def units(self) -> float | None:
        """The discrepancy in units of the last printed digit (None for an exact claim)."""
        unit = self.claim.reading.unit
        return float(self.discrepancy / mp.mpf(unit.numerator) * unit.denominator) if unit is not None else None

    def computed_text(self, figures: int = 10) -> str:
        return _value_text(self.shown, figures)

    @property
    def reason(self) -> str:
        """Why: for a contradiction, the exact value and the printed digit where it departs."""
        c = self.claim
        if self.status == "contradicted":
            where = _departure(self.shown, c.printed_value, c.reading, c.printed)
            extra = f"; {self.why}" if self.why else ""
            shown = self.shown
            size = _exponent_of(_approx_fraction(shown, Fraction(1))) if shown not in (None, 0) and not isinstance(
                shown, Infinity) and _approx_fraction(shown, Fraction(1)) else 0
            return f"the value is {_value_text(shown, max(20, min(60, size + 8)))}; {where}{extra}"
        if self.status == "verified":
            how = c.reading.how
            return f"{self.why}; {how}" if self.why else how
        return self.why

    def line(self) -> str:
        """One line: verdict, computed value, printed value, what it means, and why."""
        c = self.claim
        lhs = c.lhs if c.index is None else f"{c.lhs}[{c.index}]"
        where = f" [{', '.join(f'{k}={v}' for k, v in c.inputs)}]" if c.inputs else ""
        if self.status == "undecided":
            return f"undecided: {lhs}{where} (printed {c.printed}): {self.why}"
        if self.status == "verified":
            tol = f": ±{_short(self.tolerance)}" if not c.reading.exact else ""
            off = f"; off by {_distinct(self.discrepancy, self.tolerance)}" if not c.reading.exact else ""
            tie = f"; {self.why}" if self.why else ""
            return f"verified: {lhs}{where} = {self.computed_text()} (printed {c.printed}, {c.reading.how}{tol}{off}{tie})"
        return f"{self.status}: {lhs}{where} = {self.computed_text()} (printed {c.printed}, {c.reading.how}): {self.reason}"

    def as_dict(self) -> dict:
        """JSON-ready fields: no NaN or Infinity (a non-finite number is a string)."""
        c = self.claim
        return {
            "verdict": self.status,
            "reason": self.reason,
            "claim": c.text,
            "inputs": dict(c.inputs),
            "computed": _json_float(_mid(self.shown)) if self.value is not None else None,
            "computed_digits": _value_text(self.shown, 30) if self.value is not None else None,
            "printed": c.printed,
            "precision": c.reading.how,
            "tolerance": float(self.tolerance),
            "discrepancy": _json_float(self.discrepancy),
            "digits_used": int(self.bits / math.log2(10)),
            "source": c.source,
        }


def _json_float(x) -> float | str:
    try:
        f = float(x)
    except (OverflowError, ValueError):
        f = math.inf
    if not math.isfinite(f):
        return "inf" if f > 0 else ("-inf" if f < 0 else "nan")
    return f


def _mid(x):
    if x is None:
        return mp.nan
    if isinstance(x, Infinity):
        return mp.inf * x.sign
    if isinstance(x, Fraction):
        with mp.workprec(max(64, x.numerator.bit_length() + x.denominator.bit_length() + 64)):
            return mp.mpf(x.numerator) / x.denominator
    a, b = (mp.make_mpf(e) for e in x._mpi_)
    with mp.workprec(max(64, x._mpi_[0][3], x._mpi_[1][3]) + 8):
        return (a + b) / 2


def _value_text(x, figures: int = 10) -> str:
    if x is None:
        return "undecided"
    if isinstance(x, Infinity):
        return str(x)
    if isinstance(x, Fraction) and x.denominator == 1 and abs(x.numerator).bit_length() < 200:
        return str(x.numerator)
    m = _mid(x)
    if m == 0:
        return "0"
    if not isinstance(x, Fraction):  # no more digits than the interval certifies
        a, b = (mp.make_mpf(e) for e in x._mpi_)
        with mp.workprec(max(64, x._mpi_[0][3], x._mpi_[1][3]) + 8):
            width = b - a
        if width:
            figures = max(1, min(figures, int(mp.floor(mp.log10(abs(m) / width)))))
    with mp.workprec(max(64, int(figures * 3.33) + 32)):
        if isinstance(x, Fraction):  # an exact value: its digits at this precision, not those of a 64-bit midpoint
            m = mp.mpf(x.numerator) / x.denominator
        text = mpmath.nstr(m, figures, strip_zeros=True, min_fixed=-5, max_fixed=15)
    return text[:-2] if text.endswith(".0") else text


def _fraction_text(x: Fraction, decimals: int | None = None) -> str:
    if decimals is None:
        return _value_text(x, 20)
    if decimals <= 0:
        return str(int(x))
    scaled = x * 10 ** decimals
    assert scaled.denominator == 1
    n = scaled.numerator
    digits = str(abs(n)).rjust(decimals + 1, "0")
    return ("-" if n < 0 else "") + digits[:-decimals] + "." + digits[-decimals:]


def _round_half_away(x: Fraction, unit: Fraction) -> Fraction:
    q = abs(x) / unit
    n = math.floor(q + Fraction(1, 2))
    return (n if x >= 0 else -n) * unit


def _approx_fraction(value, unit: Fraction) -> Fraction:
    """The value as a Fraction, precise to well below ``unit``."""
    if isinstance(value, Fraction):
        return value
    m = _mid(value)
    man, exp = _mpf_parts(m._mpf_) if m else (0, 0)
    return Fraction(man) * Fraction(2) ** exp


def _rounded_text(value, reading: Reading) -> str:
    return _fraction_text(_round_half_away(_approx_fraction(value, reading.unit), reading.unit), max(reading.decimals, 0))


def _departure(value, printed, reading: Reading, printed_text: str) -> str:
    """Where the value departs from the printed number: the digit, printed and computed."""
    if value is None or not isinstance(printed, Fraction) or isinstance(value, Infinity):
        return "it departs from the printed value"
    if reading.exact:
        # digits of the two until they differ, at most 60 decimals
        v = _approx_fraction(value, Fraction(1, 10 ** 60))
        for decimals in range(-_digits_before(max(abs(v), abs(printed))), 61):
            unit = Fraction(1, 10 ** decimals) if decimals >= 0 else Fraction(10 ** -decimals)
            a, b = _truncate(v, unit), _truncate(printed, unit)
            if a != b:
                shown = (f" ({_fraction_text(b, max(decimals, 0))} vs computed {_fraction_text(a, max(decimals, 0))})"
                         if max(abs(a.numerator).bit_length(), abs(b.numerator).bit_length()) < 130 else "")
                return f"it departs from the printed {printed_text} at {_place(decimals)}{shown}"
        return f"it differs from the printed {printed_text} beyond the 60th decimal"
    rounded = _round_half_away(_approx_fraction(value, reading.unit), reading.unit)
    dec = max(reading.decimals, 0)
    a, b = _fraction_text(rounded, dec), _fraction_text(printed, dec)
    width = max(len(a), len(b))
    a, b = a.rjust(width), b.rjust(width)
    point = a.index(".") if dec else width
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            place = "the sign" if "-" in (x, y) else _place(i - point if i > point else i - point + 1)
            shown = f" it is {a.strip()}, which" if len(a.strip()) <= 40 else ", the value"
            return f"{reading.how}{shown} departs from the printed {printed_text} at {place}"
    return f"{reading.how} it is {a.strip()}"  # pragma: no cover - a contradiction departs somewhere


def _digits_before(x: Fraction) -> int:
    return max(len(str(int(x))), 1)


def _truncate(x: Fraction, unit: Fraction) -> Fraction:
    q = abs(x) / unit
    return (math.floor(q) if x >= 0 else -math.floor(q)) * unit


def _place(decimals: int) -> str:
    """'the 3rd decimal', 'the units digit', 'the tens digit' ... for a digit position (decimals > 0: after the point)."""
    if decimals > 0:
        return f"the {_ordinal(decimals)} decimal"
    names = {0: "units", -1: "tens", -2: "hundreds", -3: "thousands"}
    return f"the {names.get(decimals, f'10^{-decimals}')} digit"


def _distinct(discrepancy, tolerance) -> str:
    """The discrepancy with enough figures to show on which side of the tolerance it lies."""
    text = _short(discrepancy, 2)
    for figures in range(2, 16):
        text = _short(discrepancy, figures)
        if float(discrepancy) == float(tolerance) or text != _short(tolerance, figures):
            return text
    return text


def _short(x, figures: int = 1) -> str:
    if x == 0:
        return "0"
    value = float(x)
    if value == 0 or not math.isfinite(value):  # beyond float range: mpmath writes it
        return mpmath.nstr(_mid(x) if isinstance(x, Fraction) else mp.mpf(x), figures)
    return f"{value:.{figures - 1}e}" if figures > 1 else f"{value:.0e}"


# --------------------------------------------------------------------------- reading a claim

def parse_claim(text: str, *, figures: int | None = None, decimals: int | None = None, exact: bool = False,
                source: str = "", intermediates: tuple[Intermediates, ...] | dict = ()) -> "Claim | VectorClaim":
    """Read a claim ``EXPRESSION = PRINTED [where NAME = VALUE, ...]`` (``≈`` may replace ``=``).

    What ``PRINTED`` means is in the module docstring.  When the expression is a
    vector -- ``(a, b)`` or a vector operation such as ``softmax(...)`` -- the
    printed result is a vector ``(p, q)`` and a :class:`VectorClaim` compares it
    entry by entry.  ``intermediates`` (``{description: "name = value, ..."}``)
    records values the text itself used, for the rounding-consistent verdict.
    Raises :class:`~seqgrad.errors.ParseError` for text that is not a claim and
    :class:`~seqgrad.errors.UndefinedError` for a side without a value.
    """
    if not isinstance(text, str):
        raise SeqgradTypeError("claim", text, "a string such as 'sin(1)*cos(2) + cos(1)*sin(2) = 0.1411'")
    if len(text) > MAX_LENGTH:
        raise ParseError("claim", text, f"at most {MAX_LENGTH} characters (got {len(text)})")
    if exact and (figures is not None or decimals is not None):
        raise ParseError("claim", text, "exact, figures and decimals exclude each other")
    if figures is not None and decimals is not None:
        raise ParseError("claim", text, "figures and decimals exclude each other")
    body, *rest = _WHERE.split(text)
    if len(rest) > 1:
        raise ParseError("claim", text, "at most one 'where' clause")
    inputs = _bindings(rest[0], text) if rest else ()
    parts = _SIGN.split(body)
    if len(parts) == 1:  # no '=': refuse unsafe text for what it is before asking for the '='
        _probe(parse_tree(body, "claim expression"), inputs, body)
    if len(parts) != 2:
        raise ParseError("claim", text, "exactly one '=' between the expression and the printed result "
                         "(for example 'sin(1)*cos(2) + cos(1)*sin(2) = 0.1411'; split a chain a = b = c into two claims)")
    approx = bool(_APPROX.search(body))
    lhs_text, printed = parts[0].strip(), parts[1].strip()
    alternatives = _intermediates(intermediates, text)
    lhs_tree = parse_tree(lhs_text, "claim expression")
    probed = _probe(lhs_tree, inputs, lhs_text)  # refuses what the whitelist or the limits refuse, now
    names = {n for n, _ in inputs}
    used = {n.id for n in _walk(lhs_tree[1])} | {n.id for n in _walk(parse_tree(printed, "printed")[1])} if printed else set()
    unused = names - used
    if unused:
        raise ParseError("claim", text, f"the input(s) {', '.join(sorted(unused))} do not appear in the expression")
    if not printed:
        raise ParseError("printed", printed, "the printed result after '=', e.g. 0.1411")
    p_source, p_body = parse_tree(printed, "printed")
    lhs_vector = is_vector_node(lhs_tree[1])
    printed_vector = isinstance(p_body, (ast.Tuple, ast.List))
    common = dict(lhs=lhs_text, inputs=inputs, intermediates=alternatives, source=source)
    if lhs_vector or printed_vector:
        if not lhs_vector:
            raise ParseError("claim", text, "the printed result is a vector, so the expression must be one too, e.g. softmax(1.2, 0.5, 2.0)")
        if not printed_vector:
            n = len(probed)
            raise ParseError("claim", text, f"the expression is a vector of {n} entries: print them as (a, b, ...)")
        entries = _entries(p_source, p_body)
        n = len(probed)
        if len(entries) != n:
            raise ParseError("claim", text, f"the expression has {n} entries but {len(entries)} are printed")
        components = tuple(
            Claim(text=f"{lhs_text}[{i}] = {p}", printed=p, index=i,
                  **_printed_fields(p, approx, figures, decimals, exact, inputs), **common)
            for i, p in enumerate(entries))
        return VectorClaim(text=text.strip(), printed=printed, lhs=lhs_text, components=components, inputs=inputs, source=source)
    return Claim(text=text.strip(), printed=printed, **_printed_fields(printed, approx, figures, decimals, exact, inputs), **common)


def _printed_fields(printed: str, approx, figures, decimals, exact, inputs=()) -> dict:
    """``reading`` and ``printed_value`` of one printed number (None for an irrational printed expression)."""
    from .whitelist import is_infinity

    _, body = parse_tree(printed, "printed")
    s = is_infinity(body)
    if s:
        return dict(reading=Reading(True), printed_value=Infinity(s))
    value, reading = read_printed(printed, approx=approx, figures=figures, decimals=decimals, exact=exact)
    if value is None:
        value = _constant(printed, inputs)
        if isinstance(value, tuple):
            raise ParseError("printed", printed, "a number")
        if not isinstance(value, Fraction):
            value = None
    return dict(reading=reading, printed_value=value)


def _walk(body):
    return [n for n in ast.walk(body) if isinstance(n, ast.Name)]


def _probe(tree, inputs, text):
    """Evaluate once at the starting precision: refuses what the whitelist or the limits refuse, now.
    Returns the value's entries (one for a scalar)."""
    source, body = tree
    ev = _Evaluation(source, body, inputs, "claim expression", text)
    try:
        value = ev.at(_schedule(START_DIGITS)[0], {})
    except Unsettled:
        try:
            value = ev.value(DIGITS)
        except _Undecided:
            return ()
    return value if isinstance(value, tuple) else (value,)


def _entries(source: str, body) -> list[str]:
    return [ast.get_source_segment(source, e) or "" for e in body.elts]


def _intermediates(intermediates, text) -> tuple[Intermediates, ...]:
    if isinstance(intermediates, dict):
        return tuple(Intermediates(d, b if isinstance(b, tuple) else _bindings(b, text)) for d, b in intermediates.items())
    return tuple(intermediates)


def _bindings(clause: str, text: str) -> tuple[tuple[str, str], ...]:
    """``name = value, name = value`` (or ``;``-separated): a comma starts a new input only before ``name =``."""
    out = name_value_pairs(clause, lambda t, i: t[i] == ";" or (t[i] == "," and bool(_BINDING_START.match(t, i + 1))),
                           lambda: ParseError("claim", text, "inputs are written 'where name = value, name = value'"))
    names = check_variable_names([n for n, _ in out], argument="claim input")
    if len(set(names)) != len(names):
        raise ParseError("claim", text, "each input is given once")
    return tuple(out)


# --------------------------------------------------------------------------- vectors

@dataclass(frozen=True)
class VectorClaim:
    """A printed vector, ``softmax(1.2, 0.5, 2.0) = (0.31, 0.15, 0.54)``: one :class:`Claim` per entry,
    each with its own printed meaning; its verdict is the worst of theirs."""

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
    def status(self) -> str:
        return max((v.status for v in self.entries), key=SEVERITY.__getitem__)

    @property
    def verified(self) -> bool:
        return self.status == "verified"

    @property
    def consistent(self) -> bool:
        return all(v.consistent for v in self.entries)

    @property
    def discrepancy(self):
        return max((v.discrepancy for v in self.entries), key=float)

    @property
    def relative_discrepancy(self) -> float:
        return max(v.relative_discrepancy for v in self.entries)

    @property
    def units(self) -> float | None:
        units = [v.units for v in self.entries if v.units is not None]
        return max(units) if units else None

    @property
    def reason(self) -> str:
        bad = [(i, v) for i, v in enumerate(self.entries) if v.status != "verified"]
        if not bad:
            return "every entry " + "; ".join(sorted({v.claim.reading.how for v in self.entries}))
        return "; ".join(f"entry {i} {v.status}: {v.reason}" for i, v in bad)

    def computed_text(self, figures: int = 10) -> str:
        return "(" + ", ".join(v.computed_text(figures) for v in self.entries) + ")"

    def line(self) -> str:
        c = self.claim
        where = f" [{', '.join(f'{k}={v}' for k, v in c.inputs)}]" if c.inputs else ""
        return f"{self.status}: {c.lhs}{where} = {self.computed_text()} (printed {c.printed}): {self.reason}"

    def as_dict(self) -> dict:
        c = self.claim
        return {
            "verdict": self.status,
            "reason": self.reason,
            "claim": c.text,
            "inputs": dict(c.inputs),
            "computed": [v.as_dict()["computed"] for v in self.entries],
            "computed_digits": [v.as_dict()["computed_digits"] for v in self.entries],
            "printed": c.printed,
            "precision": [v.claim.reading.how for v in self.entries],
            "tolerance": [float(v.tolerance) for v in self.entries],
            "discrepancy": [_json_float(v.discrepancy) for v in self.entries],
            "entries": [v.status for v in self.entries],
            "source": c.source,
        }
