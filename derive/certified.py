"""Certified evaluation of whitelisted arithmetic: exact rationals first, rigorous intervals otherwise.

:func:`evaluate` walks the syntax tree of :func:`derive.whitelist.parse_tree`
and returns, for every number the text describes,

* a :class:`fractions.Fraction` while the arithmetic stays rational (``0.1*3``
  is exactly 3/10, ``sqrt(9/4)`` is 3/2, ``sin(0)`` is 0, ``0*exp(5)`` is 0),
* otherwise an interval of :mod:`mpmath.iv` at ``bits`` bits that is certain
  to contain the true value (every operation rounds outward).

A question the interval cannot answer at this precision -- is a divisor zero,
a logarithm's argument positive, ``x`` in ``floor(x)`` past an integer? --
raises :class:`Unsettled` naming the question; the caller raises the
precision and asks again (:mod:`derive.claims` does).  A question still open
at the highest precision can be put to SymPy (``Question.sympy``): when SymPy
proves the subexpression equal to the point, the caller passes the answer
back in ``settled`` and the evaluation continues with the exact value (or
stops with the clear error the exact value implies, e.g. division by zero).

A limit the interval may pass -- one end within the magnitude limit (or the
largest exponent, the largest argument of exp), the other beyond -- raises
:class:`Imprecise`, an :class:`Unsettled` without a question: only more
precision settles it (``exp((sin(1)**2 + cos(1)**2 - 1)*10**30)`` at 20
digits); a value certainly beyond a limit is refused.  Increasing functions
of a wide interval (tanh) are taken at its two ends.

Values the text cannot have are errors, never a wrong number:
:class:`seqgrad.errors.UndefinedError` for division by zero, the logarithm or
square root of a negative number or of zero, ``asin`` outside [-1, 1], a
negative number to a non-integer power; :class:`seqgrad.errors.ParseError`
for the limits of :mod:`derive.whitelist` (overflow beyond 10**±1000).

SymPy is not imported here: ``seqgrad claim`` starts fast.
"""

from __future__ import annotations

import ast
import math
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from typing import Mapping

from mpmath import iv, mp

from seqgrad import operations as registry
from seqgrad.errors import UndefinedError

from . import norm_rows
from .whitelist import (ACCEPTS_INFINITY, FUNCTION_ARITY, INFINITY_NAME, MAX_DEPTH, MAX_EXPONENT, MAX_MAGNITUDE,
                        MAX_RESULT_DIGITS, VECTOR_ARITY, Reader, is_infinity, is_vector_node)

_LN10 = math.log(10)
_BITS_PER_DIGIT = math.log2(10)


@dataclass(frozen=True)
class Infinity:
    """``inf`` or ``-inf``: allowed only as a vector entry (a masked score)."""

    sign: int

    def __str__(self) -> str:
        return "inf" if self.sign > 0 else "-inf"


@dataclass(frozen=True)
class Question:
    """Is ``expression`` (whitelisted text, e.g. a subexpression of the claim) exactly ``point``?

    ``what`` says what the expression is (``the divisor``); ``key`` identifies
    the question within one text, for the answer passed back in ``settled``.
    """

    key: tuple
    what: str
    expression: str
    point: Fraction


class Unsettled(Exception):
    """An interval straddles a point that decides what the expression means; more precision may settle it."""

    def __init__(self, question: Question):
        super().__init__(question.what)
        self.question = question


class Imprecise(Unsettled):
    """An interval too wide to tell whether a limit holds (it reaches past the magnitude limit, the
    largest exponent, the largest argument of exp, while its other end is within): more precision
    narrows it.  No point is in question, so SymPy is not asked (``question`` is None)."""

    def __init__(self, what: str):
        Exception.__init__(self, what)
        self.question = None
        self.what = what


Value = "Fraction | iv.mpf | Infinity | tuple"


def evaluate(body: ast.AST, source: str, *, text: str, argument: str, bits: int,
             names: Mapping[str, object] | None = None, settled: Mapping[tuple, bool] | None = None):
    """The value of the tree ``body`` (see the module docstring); ``names`` binds the free names."""
    with working_bits(bits):
        return _Evaluator(source, text, argument, dict(names or {}), dict(settled or {})).top(body)


@contextmanager
def working_bits(bits: int):
    """Interval arithmetic at ``bits`` bits inside the block (mpmath's ``iv`` context is global)."""
    old = iv.prec
    iv.prec = bits
    try:
        yield
    finally:
        iv.prec = old


def interval(x) -> "iv.mpf":
    """A Fraction or interval as an interval at the current precision (outward rounded)."""
    if isinstance(x, Fraction):
        return iv.mpf(x.numerator) / iv.mpf(x.denominator) if x.denominator != 1 else iv.mpf(x.numerator)
    return x


def contains(x, point: Fraction) -> bool:
    """Whether the interval (or exact number) ``x`` contains ``point``."""
    if isinstance(x, Fraction):
        return x == point
    d = x - interval(point)
    return not (d > 0) and not (d < 0)


def sign(x) -> int | None:
    """-1, 0 or 1 when certain, None when the interval straddles 0."""
    if isinstance(x, Fraction):
        return (x > 0) - (x < 0)
    if x > 0:
        return 1
    if x < 0:
        return -1
    if x == 0:
        return 0
    return None


def magnitude_log10(x) -> float | None:
    """log10 of the smallest |value| the interval allows (None when it may be 0)."""
    if isinstance(x, Fraction):
        if x == 0:
            return None
        return (abs(x.numerator).bit_length() - x.denominator.bit_length()) / _BITS_PER_DIGIT
    if sign(x) is None or x == 0:
        return None
    low = min(abs(mp.make_mpf(x._mpi_[0])), abs(mp.make_mpf(x._mpi_[1])))
    return float(mp.log10(low)) if low else None


def abs_range(x) -> tuple:
    """(smallest, largest) |value| of an interval as mpmath numbers (the smallest is 0 when it straddles 0)."""
    a, b = (abs(mp.make_mpf(e)) for e in x._mpi_)
    return (mp.zero if sign(x) is None else min(a, b)), max(a, b)


_BIG = mp.mpf(10) ** (MAX_MAGNITUDE + 1)
_SMALL = mp.mpf(10) ** -(MAX_MAGNITUDE + 1)
_EXP_ARGUMENT = MAX_MAGNITUDE * _LN10  # exp() of more than this (in modulus) lies outside the magnitude limit


def increasing(f, x):
    """f of the interval ``x`` for an increasing f: f at each end (``f`` takes a one-point interval), so that
    an interval straddling a point where f's formula changes (tanh at 0) is not misread."""
    a, b = x._mpi_
    if a == b:
        return f(x)
    low, high = f(iv.mpf([mp.make_mpf(a)] * 2)), f(iv.mpf([mp.make_mpf(b)] * 2))
    return iv.mpf([mp.make_mpf(low._mpi_[0]), mp.make_mpf(high._mpi_[1])])


#: guard bits of a monotone rule's mpmath evaluation; its result is widened by 2**-(working bits) relative
MONOTONE_GUARD_BITS = 64


def monotone(f, x, increasing: bool = True):
    """A monotone primitive ``f`` (an mpmath function, e.g. ``mp.erf``) of the interval ``x``: ``f`` at the two
    ends, each computed with :data:`MONOTONE_GUARD_BITS` guard bits and widened outward by ``2**(8 - bits)`` of its
    size (plus the smallest magnitude the evaluator admits).  mpmath evaluates its functions to within a few
    units in the last place of its working precision, so the margin is about 2**70 times that accuracy; the bound
    rests on this accuracy of mpmath (no interval arithmetic of its own exists for ``erf``)."""
    a, b = (mp.make_mpf(e) for e in x._mpi_)
    bits = iv.prec
    with mp.workprec(bits + MONOTONE_GUARD_BITS):
        ends = [f(a), f(b)] if a != b else [f(a)] * 2
    if not increasing:
        ends = ends[::-1]
    with mp.workprec(bits + MONOTONE_GUARD_BITS):
        margins = [0 if y == 0 and a == b else abs(y) * mp.ldexp(1, 8 - bits) + _SMALL for y in ends]
        low, high = ends[0] - margins[0], ends[1] + margins[1]
    return iv.mpf([low, high])


def _exact(value):
    """A plain number a definition returns (``identity``'s argument, a constant) as an evaluator value."""
    if isinstance(value, bool):
        raise TypeError(value)
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(value)
    return value


class _Inner:
    """A subexpression of an operation's definition, for the messages: it has no text of its own."""

    def __init__(self, text: str, arity: int = 2):
        self.text = text
        self.args = [self] * arity
        self.left = self.right = self


class _Certified:
    """A value inside an operation's definition: the evaluator's arithmetic behind Python's operators."""

    __slots__ = ("ev", "value", "where")

    def __init__(self, ev, value, where):
        self.ev, self.value, self.where = ev, _exact(value.value if isinstance(value, _Certified) else value), where

    def _wrap(self, value):
        return _Certified(self.ev, value, self.where)

    def _of(self, other):
        return other.value if isinstance(other, _Certified) else _exact(other)

    def __add__(self, other):
        return self._wrap(self.ev.add(self.value, self._of(other)))

    __radd__ = __add__

    def __neg__(self):
        return self._wrap(self.ev.negate(self.value))

    def __sub__(self, other):
        return self._wrap(self.ev.add(self.value, self.ev.negate(self._of(other))))

    def __rsub__(self, other):
        return self._wrap(self.ev.add(self._of(other), self.ev.negate(self.value)))

    def __mul__(self, other):
        return self._wrap(self.ev.mul(self.value, self._of(other)))

    __rmul__ = __mul__

    def __truediv__(self, other):
        return self._wrap(self.ev.div(self.value, self._of(other), _Inner(self.where)))

    def __rtruediv__(self, other):
        return self._wrap(self.ev.div(self._of(other), self.value, _Inner(self.where)))

    def __pow__(self, other):
        return self._wrap(self.ev.power(_Inner(self.where), self.value, self._of(other)))

    def __rpow__(self, other):
        return self._wrap(self.ev.power(_Inner(self.where), self._of(other), self.value))


class _CertifiedNamespace:
    """The namespace ``m`` a definition is written over (:mod:`seqgrad.operations`), in certified arithmetic."""

    def __init__(self, ev, where: str):
        self.ev, self.where = ev, where
        self.pi, self.e = _Certified(ev, iv.pi, where), _Certified(ev, iv.e, where)

    def _value(self, x):
        return x.value if isinstance(x, _Certified) else _exact(x)

    def maximum(self, a, b):
        return _Certified(self.ev, self.ev.extreme([self._value(a), self._value(b)], True), self.where)

    def minimum(self, a, b):
        return _Certified(self.ev, self.ev.extreme([self._value(a), self._value(b)], False), self.where)

    def heaviside(self, x, h0):
        s = sign(self._value(x))
        if s is None:
            raise Imprecise(f"the sign of {self.where} may be 0")
        return _Certified(self.ev, Fraction(1) if s > 0 else (Fraction(0) if s < 0 else _exact(h0)), self.where)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        op = registry.get(name)
        if not op.claims:
            self.ev.refuse(f"the definition of {self.where} uses {name!r}, which has no interval rule")

        def call(*args):
            inner = _Inner(self.where, len(args))
            return _Certified(self.ev, self.ev.function(inner, name, [self._value(a) for a in args]), self.where)

        return call


def _log_of(x: Fraction) -> float:
    """The natural logarithm of a positive Fraction of any size, as a float (math.log reads big integers)."""
    return math.log(x.numerator) - math.log(x.denominator)


def _iroot(n: int, k: int) -> int | None:
    """The exact integer k-th root of n >= 0, or None."""
    if n < 2:
        return n
    r = int(round(math.exp(math.log(n) / k))) if n.bit_length() < 1000 else None
    if r is None:
        lo, hi = 0, 1 << (n.bit_length() // k + 1)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if mid ** k <= n:
                lo = mid
            else:
                hi = mid - 1
        r = lo
    for c in (r - 1, r, r + 1):
        if c >= 0 and c ** k == n:
            return c
    return None


def _floor_raw(raw) -> int:
    """floor of a raw mpmath number (sign, mantissa, exponent, bits), exactly, at any size
    (mpmath's own floor rounds its result to the working precision)."""
    sign_bit, man, exp, _ = raw
    man = -man if sign_bit else man
    return man << exp if exp >= 0 else man >> -exp  # >> floors negative numbers too


def _extreme_call(node) -> bool:
    """A call of max() or min(), whose value is ±inf when an entry is."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("max", "min")


class _Evaluator(Reader):
    def __init__(self, source: str, text: str, argument: str, names: dict, settled: dict):
        super().__init__(text, source, argument)
        self.names, self.settled = names, settled
        self.inside = 0  # > 0 while an operation's definition is evaluated (by_definition)

    def segment(self, node) -> str:
        if isinstance(node, _Inner):
            return node.text
        return super().segment(node)

    def declared(self):
        return list(self.names)

    def undefined(self, reason: str):
        raise UndefinedError(self.argument, self.text, reason)

    def ask(self, node, point, what: str, expression: str | None = None) -> bool:
        """Is the value of ``node`` (or of ``expression``, text built from it) exactly ``point``?
        True when settled so; raises :class:`Unsettled` while it is open."""
        if self.inside or isinstance(node, _Inner):  # inside a definition: no text for SymPy, only precision helps
            raise Imprecise(f"{what} ({self.segment(node)}) may be {point}")
        expression = expression or self.segment(node)
        key = (node.lineno, node.col_offset, node.end_col_offset, what, point)
        if self.settled.get(key) is True:
            return True
        raise Unsettled(Question(key, what, expression, Fraction(point)))

    # ------------------------------------------------------------------ walking

    def top(self, node):
        if is_vector_node(node):
            return self.vector(node, 1)
        if _extreme_call(node):  # max/min of masked scores may be ±inf as a whole side: min(62.2, -inf) = -inf
            return self.entry(node, 1)
        return self.visit(node, 1)

    def visit(self, node, depth):
        value = self.build(node, depth)
        if isinstance(value, Infinity):
            self.refuse(f"{self.segment(node)!r} is infinite: inf is allowed only as an entry of a vector given to "
                        + ", ".join(ACCEPTS_INFINITY))
        self.bounded(value, node)
        return value

    def bounded(self, value, node):
        """Refuse a value certainly outside the magnitude limit; ask for more precision (:class:`Imprecise`)
        when its interval reaches past the limit but may lie within."""
        if isinstance(value, Fraction):
            digits = magnitude_log10(value)
            if digits is not None and abs(digits) > MAX_MAGNITUDE + 1:
                self.limit(f"{self.segment(node)!r} lies outside the magnitude limit 10**±{MAX_MAGNITUDE}")
            return
        self.within(abs_range(value), (_SMALL, _BIG), f"{self.segment(node)!r} lies outside the magnitude limit "
                                                      f"10**±{MAX_MAGNITUDE}", zero=True)

    def within(self, ends, limits, reason: str, *, zero: bool = False):
        """|x| of range ``ends`` = (smallest, largest) against ``limits`` = (low or None, high): refused when every
        point is outside, :class:`Imprecise` when some are (0 is within when ``zero``)."""
        lo, hi = ends
        low, high = limits
        if lo > high or (low is not None and hi < low and not (zero and lo == 0)):
            self.limit(reason)
        if not mp.isfinite(hi) or hi > high or (low is not None and lo < low and not (zero and lo == 0)):
            raise Imprecise(reason.replace("lies outside", "may lie outside", 1))

    def chain(self, node, depth):
        first, steps = self.chain_steps(node)
        result = self.visit(first, depth + 1)
        for op, right_node, whole in steps:
            right = self.visit(right_node, depth + 1)
            if isinstance(op, ast.Add):
                result = self.add(result, right)
            elif isinstance(op, ast.Sub):
                result = self.add(result, self.negate(right))
            elif isinstance(op, ast.Mult):
                result = self.mul(result, right)
            else:
                result = self.div(result, right, right_node)
            self.bounded(result, whole)
        return result

    @staticmethod
    def number(value: Fraction):
        return value

    def name(self, name):
        if name in self.names:
            return self.names[name]
        if name == "pi":
            return iv.pi
        if name == "E":
            return iv.e
        if name == INFINITY_NAME:
            return Infinity(1)
        if name in FUNCTION_ARITY or name in VECTOR_ARITY:
            self.refuse(f"the function {name!r} must be called, e.g. {name}(x)")
        self.refuse(f"the name {name!r} is not on the whitelist")

    def function(self, node, fname, args):
        """A scalar function of the registry, bounded as its declaration's ``interval`` says."""
        op = registry.get(fname)
        if op.interval == "rule":
            rule = getattr(self, "f_" + fname, None)
            if rule is None:
                self.refuse(f"the operation {fname!r} declares interval='rule' but derive.certified has no rule f_{fname}")
            return rule(node, *args)
        if op.interval in ("increasing", "decreasing"):
            return monotone(op.mpmath(mp), interval(args[0]), op.interval == "increasing")
        return self.by_definition(op, node, args)

    def by_definition(self, op, node, args):
        """A composite ``op`` by its definition, in this evaluator's exact and interval arithmetic (so
        ``relu(3)`` is exactly 3, ``gelu(0)`` exactly 0, and a domain error inside names the call)."""
        where = f"a subexpression of {self.segment(node)}"
        self.inside += 1
        try:
            value = op.definition(_CertifiedNamespace(self, where), *[_Certified(self, a, where) for a in args])
        finally:
            self.inside -= 1
        return value.value if isinstance(value, _Certified) else _exact(value)

    # ------------------------------------------------------------------ arithmetic

    @staticmethod
    def negate(x):
        return Infinity(-x.sign) if isinstance(x, Infinity) else -x

    @staticmethod
    def add(a, b):
        if isinstance(a, Fraction) and isinstance(b, Fraction):
            return a + b
        return interval(a) + interval(b)

    @staticmethod
    def mul(a, b):
        if isinstance(a, Fraction) and isinstance(b, Fraction):
            return a * b
        if (isinstance(a, Fraction) and a == 0) or (isinstance(b, Fraction) and b == 0):
            return Fraction(0)  # zero times any finite number is exactly zero
        return interval(a) * interval(b)

    def div(self, a, b, b_node):
        s = sign(b)
        if s is None and self.ask(b_node, 0, "the divisor"):
            s = 0
        if s == 0:
            self.undefined(f"division by zero ({self.segment(b_node)!r} is 0)")
        if isinstance(a, Fraction) and isinstance(b, Fraction):
            return a / b
        if isinstance(a, Fraction) and a == 0:
            return Fraction(0)
        return interval(a) / interval(b)

    def power(self, node, base, exponent):
        e_node, b_node = node.right, node.left
        if isinstance(exponent, Fraction):
            if abs(exponent) > MAX_EXPONENT:
                self.limit(f"exponents have modulus at most {MAX_EXPONENT}")
        else:
            self.within(abs_range(exponent), (None, MAX_EXPONENT + 1), f"exponents have modulus at most {MAX_EXPONENT}")
        es = sign(exponent)
        if es is None and self.ask(e_node, 0, "the exponent"):
            exponent, es = Fraction(0), 0
        if es == 0:
            return Fraction(1)  # x**0 = 1 for every x, 0**0 included (as Python and SymPy define it)
        bs = sign(base)
        if bs is None and self.ask(b_node, 0, "the base"):
            base, bs = Fraction(0), 0
        if bs == 0:
            if es < 0:
                self.undefined(f"division by zero (zero to the negative power {self.segment(e_node)!r})")
            return Fraction(0)
        if bs < 0 and not isinstance(exponent, Fraction):
            # a negative base needs an integer exponent: ask whether the exponent is exactly one
            n = int(mp.nint(mp.make_mpf(exponent._mpi_[0])))
            if contains(exponent, Fraction(n)) and self.ask(e_node, n, "the exponent of a negative base"):
                exponent = Fraction(n)
        if isinstance(exponent, Fraction) and exponent.denominator == 1:
            if isinstance(base, Fraction):
                size = abs(exponent) * max(abs(base.numerator).bit_length(), base.denominator.bit_length())
                if size <= MAX_RESULT_DIGITS * _BITS_PER_DIGIT:
                    return base ** int(exponent)
            return interval(base) ** int(exponent)
        if bs < 0:
            self.undefined(f"a negative base {self.segment(b_node)!r} to the non-integer power {self.segment(e_node)!r} "
                           "is not a real number")
        if isinstance(base, Fraction) and isinstance(exponent, Fraction):
            exact = self.rational_power(base, exponent)
            if exact is not None:
                return exact
        return iv.exp(interval(exponent) * iv.log(interval(base)))

    @staticmethod
    def rational_power(base: Fraction, exponent: Fraction) -> Fraction | None:
        """base**(p/q) when base > 0 is a perfect q-th power, else None."""
        q = exponent.denominator
        if q > 64:
            return None
        n, d = _iroot(base.numerator, q), _iroot(base.denominator, q)
        if n is None or d is None:
            return None
        root = Fraction(n, d)
        p = exponent.numerator
        if abs(p) * max(n.bit_length(), d.bit_length()) > MAX_RESULT_DIGITS * _BITS_PER_DIGIT:
            return None
        return root ** p

    # ------------------------------------------------------------------ functions

    def f_sin(self, node, x):
        return Fraction(0) if x == 0 else iv.sin(interval(x))

    def f_cos(self, node, x):
        return Fraction(1) if x == 0 else iv.cos(interval(x))

    def f_tan(self, node, x):
        if x == 0:
            return Fraction(0)
        c = iv.cos(interval(x))
        if sign(c) is None and self.ask(node.args[0], 0, "the cosine of the argument of tan()",
                                        f"cos({self.segment(node.args[0])})"):
            self.undefined(f"tan() has a pole at {self.segment(node.args[0])!r} (its cosine is 0)")
        return iv.sin(interval(x)) / c

    def unit_range(self, node, x, fname):
        """x for asin/acos: exactly ±1 when it is so, an error outside [-1, 1]."""
        for end in (1, -1):
            s = sign(self.add(x, Fraction(-end)))
            if s == 0 or (s is None and self.ask(node.args[0], end, f"the argument of {fname}()")):
                return Fraction(end)
            if s == end:
                self.undefined(f"{fname}() of {self.segment(node.args[0])!r} is outside [-1, 1]")
        return x

    def f_asin(self, node, x):
        if x == 0:
            return Fraction(0)
        x = self.unit_range(node, x, "asin")
        if abs(x) == 1:
            return interval(x) * iv.pi / 2
        x = interval(x)
        return iv.atan2(x, iv.sqrt(1 - x * x))

    def f_acos(self, node, x):
        x = self.unit_range(node, x, "acos")
        if x == 1:
            return Fraction(0)
        if x == -1:
            return iv.pi
        x = interval(x)
        return iv.atan2(iv.sqrt(1 - x * x), x)

    def f_atan(self, node, x):
        return Fraction(0) if x == 0 else iv.atan2(interval(x), iv.mpf(1))

    def exp_argument(self, node, x):
        x = interval(x)
        self.within(abs_range(x), (None, _EXP_ARGUMENT),
                    f"exp() of {self.segment(node.args[0])!r} lies outside the magnitude limit 10**±{MAX_MAGNITUDE}")
        return x

    def f_exp(self, node, x):
        return Fraction(1) if x == 0 else iv.exp(self.exp_argument(node, x))

    def f_sinh(self, node, x):
        if x == 0:
            return Fraction(0)
        x = self.exp_argument(node, x)
        return (iv.exp(x) - iv.exp(-x)) / 2

    def f_cosh(self, node, x):
        if x == 0:
            return Fraction(1)
        x = self.exp_argument(node, x)
        return (iv.exp(x) + iv.exp(-x)) / 2

    def f_tanh(self, node, x):
        if x == 0:
            return Fraction(0)
        return increasing(self.tanh_of_point, interval(x))

    def tanh_of_point(self, x):
        """tanh of a one-point interval (of an interval on one side of 0, or within (-1, 1))."""
        x = self.saturating(x)
        if abs(x) < 1:
            return 1 - 2 / (iv.exp(2 * x) + 1)
        t = iv.exp(-2 * abs(x))  # tanh|x| = (1 - t)/(1 + t): no overflow for large |x|
        return (1 - t) / (1 + t) * (1 if x > 0 else -1)

    def f_sigmoid(self, node, x):
        if x == 0:
            return Fraction(1, 2)
        x = interval(x)
        if x < -_EXP_ARGUMENT:  # sigmoid(x) < e**x: below 10**-1000
            self.limit(f"sigmoid() of {self.segment(node.args[0])!r} lies outside the magnitude limit 10**±{MAX_MAGNITUDE}")
        return 1 / (1 + iv.exp(-self.saturating(x)))

    @staticmethod
    def saturating(x):
        """Clip an argument of tanh/sigmoid to ±5000, where both are within 10**-2000 of their limits
        (the clipped interval is widened to keep the bound certain)."""
        if abs(x) < 5000:
            return x
        return iv.mpf([5000, "+inf"]) if x > 0 else (iv.mpf(["-inf", -5000]) if x < 0 else iv.mpf(["-inf", "+inf"]))

    def positive_argument(self, node, x, fname):
        """x for log/sqrt: a negative value is an error, a value that may be 0 is asked about."""
        s = sign(x)
        if s is None and self.ask(node.args[0], 0, f"the argument of {fname}()"):
            s = 0
        if s is None:
            return x
        if s < 0:
            self.undefined(f"{fname}() of the negative number {self.segment(node.args[0])!r} is not a real number")
        return Fraction(0) if s == 0 else x

    def f_sqrt(self, node, x):
        x = self.positive_argument(node, x, "sqrt")
        if isinstance(x, Fraction):
            exact = self.rational_power(x, Fraction(1, 2)) if x else Fraction(0)
            if exact is not None:
                return exact
        return iv.sqrt(interval(x))

    def f_log(self, node, x, base=None):
        x = self.positive_argument(node, x, "log")
        if x == 0:
            self.undefined(f"log() of {self.segment(node.args[0])!r}, which is 0, is undefined")
        if base is None:
            return Fraction(0) if x == 1 else iv.log(interval(x))
        b_node = node.args[1]
        s = sign(base)
        if s is None and self.ask(b_node, 0, "the base of log()"):
            s = 0
        if s is not None and s <= 0:
            self.undefined(f"log() to the base {self.segment(b_node)!r} is undefined (the base must be positive)")
        if contains(base, Fraction(1)) and (isinstance(base, Fraction) or self.ask(b_node, 1, "the base of log()")):
            self.undefined(f"log() to the base {self.segment(b_node)!r}, which is 1, is undefined (division by zero)")
        if x == 1:
            return Fraction(0)
        if isinstance(x, Fraction) and isinstance(base, Fraction):
            exact = self.integer_logarithm(x, base)
            if exact is not None:
                return exact
        return iv.log(interval(x)) / iv.log(interval(base))

    @staticmethod
    def integer_logarithm(x: Fraction, base: Fraction) -> Fraction | None:
        """k when base**k == x exactly for an integer k (x, base > 0, base != 1), else None; at any size."""
        log_base = _log_of(base)
        if log_base == 0:  # base within a float's rounding of 1: no integer k to guess from floats
            return None
        k = round(_log_of(x) / log_base)
        size = abs(k) * max(abs(base.numerator).bit_length(), base.denominator.bit_length())
        if abs(k) <= MAX_EXPONENT and size <= MAX_RESULT_DIGITS * _BITS_PER_DIGIT + 64 and base ** k == x:
            return Fraction(k)
        return None

    def f_abs(self, node, x):
        return abs(x)

    def f_sign(self, node, x):
        s = sign(x)
        if s is None and self.ask(node.args[0], 0, "the argument of sign()"):
            s = 0
        if s is None:  # not 0, yet the interval still straddles it: only more precision tells the side
            raise Imprecise(f"the sign of {self.segment(node.args[0])!r} is not settled at this precision")
        return Fraction(s)

    def f_floor(self, node, x):
        if isinstance(x, Fraction):
            return Fraction(math.floor(x))
        lo, hi = _floor_raw(x._mpi_[0]), _floor_raw(x._mpi_[1])
        if lo == hi:
            return Fraction(lo)
        n = lo + 1
        if self.ask(node.args[0], n, "the argument of floor()"):
            return Fraction(n)
        return None  # pragma: no cover - ask() raises when unsettled

    # ------------------------------------------------------------------ vectors

    def entry(self, node, depth):
        """A vector entry: a number, or ±inf (written so, or a max/min that is infinite: a masked score)."""
        s = is_infinity(node)
        if s:
            return Infinity(s)
        if depth > MAX_DEPTH:
            self.limit(f"the expression is nested more than {MAX_DEPTH} levels deep")
        value = self.build(node, depth)
        if not isinstance(value, Infinity):
            self.bounded(value, node)
        return value

    @staticmethod
    def infinite(x) -> bool:
        return isinstance(x, Infinity)

    def apply_vector(self, node, fname, vectors, scalars):
        result = getattr(self, "v_" + fname)(node, *vectors, *scalars)
        for x in (result if isinstance(result, tuple) else (result,)):
            if not isinstance(x, Infinity):
                self.bounded(x, node)
        return result

    def total(self, values):
        out = Fraction(0)
        for x in values:
            out = self.add(out, x)
        return out

    def v_sum(self, node, v):
        return self.total(v)

    def v_prod(self, node, v):
        out = Fraction(1)
        for x in v:
            out = self.mul(out, x)
            self.bounded(out, node)
        return out

    def v_mean(self, node, v):
        return self.div(self.total(v), Fraction(len(v)), node)

    def v_var(self, node, v):
        m = self.v_mean(node, v)
        return self.div(self.total(self.mul(self.add(x, -m), self.add(x, -m)) for x in v), Fraction(len(v)), node)

    def v_dot(self, node, u, v):
        return self.total(self.mul(a, b) for a, b in zip(u, v))

    def v_norm(self, node, v):
        s = self.total(self.mul(x, x) for x in v)
        exact = self.rational_power(s, Fraction(1, 2)) if isinstance(s, Fraction) and s else (Fraction(0) if s == 0 else None)
        return exact if exact is not None else iv.sqrt(interval(s))

    def extreme(self, v, largest: bool):
        finite = [x for x in v if not isinstance(x, Infinity)]
        infinite = [x for x in v if isinstance(x, Infinity) and (x.sign > 0) == largest]
        if infinite:
            return infinite[0]
        if not finite:
            return Infinity(-1 if largest else 1)
        if all(isinstance(x, Fraction) for x in finite):
            return max(finite) if largest else min(finite)
        ends = [interval(x)._mpi_ for x in finite]
        pick = max if largest else min
        lo = pick(mp.make_mpf(a) for a, _ in ends)
        hi = pick(mp.make_mpf(b) for _, b in ends)
        return iv.mpf([lo, hi])

    def v_max(self, node, v):
        return self.extreme(v, True)

    def v_min(self, node, v):
        return self.extreme(v, False)

    def v_softmax(self, node, v):
        if any(isinstance(x, Infinity) and x.sign > 0 for x in v):
            self.undefined("softmax() of a vector with a +inf entry is undefined (inf/inf)")
        finite = [x for x in v if not isinstance(x, Infinity)]
        if not finite:
            self.undefined("softmax() of a vector whose entries are all -inf is undefined (0/0)")
        for x in finite:
            self.within(abs_range(interval(x)), (None, _EXP_ARGUMENT),
                        f"softmax() of entries beyond ±{_EXP_ARGUMENT:.0f} lies outside the magnitude limit")
        if len(finite) == 1:
            return tuple(Fraction(0) if isinstance(x, Infinity) else Fraction(1) for x in v)
        if all(isinstance(x, Fraction) for x in finite) and len(set(finite)) == 1:
            return tuple(Fraction(0) if isinstance(x, Infinity) else Fraction(1, len(finite)) for x in v)
        m = self.extreme(finite, True)
        weights = [None if isinstance(x, Infinity) else iv.exp(interval(x) - interval(m)) for x in v]
        total = sum((w for w in weights if w is not None), iv.mpf(0))
        return tuple(Fraction(0) if w is None else w / total for w in weights)

    def v_layernorm(self, node, v, eps=Fraction(0)):
        return self.normalized(node, v, eps, norm_rows.normalized, "layernorm", "the variance", "a constant vector")

    def v_rmsnorm(self, node, v, eps=Fraction(0)):
        return self.normalized(node, v, eps, norm_rows.rms_normalized, "rmsnorm", "the mean square", "the zero vector")

    def normalized(self, node, v, eps, entry, name: str, what: str, degenerate: str):
        """The entries of the norm ``entry`` (:mod:`derive.norm_rows`, the one statement of LayerNorm's and
        RMSNorm's rows) of ``v``, in this evaluator's arithmetic; its square root refused where the radicand (the
        variance or the mean square, plus eps) is 0 or negative."""
        where = f"{name}()"
        x = [_Certified(self, value, where) for value in v]

        def total(term):
            out = _Certified(self, Fraction(0), where)
            for k in range(len(x)):
                out = out + term(k)
            return out

        roots: list = []  # the row's one root: every entry divides by it (norm_rows gives it once per entry)

        def root(radicand):
            if roots:
                return roots[0]
            spread = radicand.value
            s = sign(spread)
            if s is None and self.ask(node, 0, f"{what} (plus eps) of {name}()", self.layernorm_spread(node)):
                s = 0
            if s == 0:
                self.undefined(f"{name}() of {degenerate} divides by zero; give eps, as in {name}((a, b), 1e-5)")
            if s is not None and s < 0:
                self.undefined(f"{name}() with a negative eps and {what} below -eps takes the square root of a negative number")
            exact = self.rational_power(spread, Fraction(1, 2)) if isinstance(spread, Fraction) else None
            roots.append(_Certified(self, exact if exact is not None else iv.sqrt(interval(spread)), where))
            return roots[0]

        return tuple(entry(x.__getitem__, j, len(x), total, eps, sqrt=root).value for j in range(len(x)))

    def layernorm_spread(self, node) -> str:
        """var(v) + eps of a layernorm() call, dot(v, v)/n + eps of an rmsnorm() call, as text."""
        args = node.args
        vector = is_vector_node(args[0]) if args else False
        v = self.segment(args[0]) if vector else "(" + ", ".join(self.segment(a) for a in args) + ")"
        eps = f" + ({self.segment(args[1])})" if vector and len(args) == 2 else ""
        if node.func.id == "rmsnorm":
            n = len(args[0].elts) if vector else len(args)
            return f"dot({v}, {v})/{n}{eps}"
        return f"var({v}){eps}"
