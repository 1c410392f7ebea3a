"""The one safe parser from user text to SymPy: a whitelist walk over Python's ``ast``.

Every piece of text a user types (an expression, a claim, an activation
written as a formula) reaches SymPy through :func:`parse_expression` and
nothing else.  The text is parsed by :func:`ast.parse` -- which only builds a
syntax tree and runs nothing -- and the tree is walked node by node; each node
is either translated into a SymPy object or refused with
:class:`seqgrad.errors.ParseError` naming what was refused.  There is no
``eval``, ``exec``, ``sympify`` or ``parse_expr`` of user text anywhere.

What is allowed (the whole whitelist):

* numbers: integer and decimal literals (``2``, ``0.1411``, ``6.3e-4``); a
  decimal literal becomes the exact rational it spells (``0.1`` is 1/10, not the
  nearest binary float);
* the operators ``+ - * / **``, unary ``-`` and ``+``, and parentheses;
* the constants in :data:`CONSTANTS` (``pi``, ``E``);
* calls of the operations of the registry (:mod:`seqgrad.operations`, listed by :func:`functions`) with
  positional arguments;
* the vector operations in :data:`VECTOR_FUNCTIONS` (``softmax``,
  ``layernorm``, ``rmsnorm``, ``mean``, ``var``, ``dot``, ``norm``, ``sum``, ``prod``,
  ``max``, ``min``) on vectors written ``(a, b, c)`` or ``[a, b, c]`` (or on
  their entries given directly, ``max(1, 7, 3)``), with ``-inf`` allowed as an
  entry of ``softmax``, ``max`` and ``min`` (a masked score); :func:`parse_value`
  also accepts a whole vector (a vector literal or ``softmax(...)``) and
  returns a tuple;
* names the caller declares as variables (``variables=("u", "h")``), and
  names of positive integer symbols (``sizes=("n",)``);
* with ``calculus=True`` only (:func:`derive.verify`), the calls in
  :data:`CALCULUS`: ``diff(f, x)`` / ``diff(f, x, n)`` (x a declared variable,
  order at most :data:`MAX_DIFF_ORDER`) and ``sum(f, i, a, b)`` =
  sum_{i=a}^{b} f with ``i`` a bound integer index (a name not declared
  otherwise); a caller's own one-argument ``functions`` are read before the
  whitelist (a cell's activations).

The text is read by :func:`derive.whitelist.parse_tree` (typographic
characters, decimal commas, refused characters such as ``#``), and the
whitelist and limits are those of :mod:`derive.whitelist`, which the
SymPy-free evaluator of claims (:mod:`derive.certified`) shares.

Limits, so that no input can hang or exhaust memory: at most
:data:`MAX_LENGTH` characters, a syntax tree at most :data:`MAX_DEPTH` deep,
number literals of at most :data:`MAX_LITERAL_DIGITS` digits with a decimal
exponent within ``±MAX_LITERAL_EXPONENT``, and powers whose exponent is a
number of modulus at most :data:`MAX_EXPONENT` and whose exact result would
have at most :data:`MAX_RESULT_DIGITS` digits (``9**9**9**9`` is refused as
soon as an exponent exceeds the limit).  Every subexpression that is a number
is evaluated (15 digits) as it is built and must be finite with a modulus
between ``10**-MAX_MAGNITUDE`` and ``10**MAX_MAGNITUDE`` (or be 0), so a
tower such as ``exp(exp(exp(100)))`` is refused at its first oversized level
instead of hanging a later evaluation.  Names given ``values`` are replaced
by those numbers while parsing, so the same guard covers them.

>>> from seqgrad.derive.safe_parse import parse_expression
>>> parse_expression("sin(1)*cos(2) + cos(1)*sin(2)")
sin(1)*cos(2) + sin(2)*cos(1)
>>> parse_expression("0.9*0.5 + 0.1*(-0.4)")
41/100
>>> parse_expression("u*h + (1 - u)*c", variables=("u", "h", "c"))
c*(1 - u) + h*u
>>> parse_expression("__import__('os').system('echo pwned')")
Traceback (most recent call last):
...
seqgrad.errors.ParseError: expression="__import__('os').system('echo pwned')" is not allowed: attribute access ('.system') is not allowed; ...
"""

from __future__ import annotations

import ast
import math
import numbers
from typing import Callable, Iterable, Mapping

import mpmath
import sympy

from seqgrad.errors import NonFiniteError, ParseError, SeqgradTypeError

from seqgrad import operations as registry

from . import norm_rows, operations
from .whitelist import (ACCEPTS_INFINITY, MAX_DEPTH, MAX_EXPONENT, MAX_LENGTH, MAX_LITERAL_DIGITS,  # noqa: F401 - re-exported
                        MAX_LITERAL_EXPONENT, MAX_MAGNITUDE, MAX_RESULT_DIGITS, MAX_VECTOR, VECTOR_ARITY, IDENTIFIER, Reader,
                        allowed_names, check_variable_names, function_arity, is_infinity, is_vector_node, parse_tree)


def functions() -> dict[str, tuple[Callable, int, int]]:
    """name -> (SymPy node, smallest and largest number of arguments): every operation of the registry
    (:mod:`seqgrad.operations`, a user's registered ones included)."""
    return {name: (node, *registry.get(name).arity) for name, node in operations.nodes().items()}


#: name -> SymPy constant
CONSTANTS: dict[str, sympy.Expr] = {"pi": sympy.pi, "E": sympy.E}


def _mean(v):
    return sympy.Add(*v) / len(v)


def _var(v):
    m = _mean(v)
    return sympy.Add(*[(x - m) ** 2 for x in v]) / len(v)


def _softmax(v):
    finite = [x for x in v if x not in (sympy.oo, -sympy.oo)]
    if sympy.oo in v or not finite:
        raise ParseError("softmax", str(v), "entries that are finite or -inf (a masked score), not all -inf")
    m = sympy.Max(*finite)
    e = [sympy.exp(x - m) for x in v]
    total = sympy.Add(*e)
    return tuple(x / total for x in e)


def _norm(entry):
    """The vector language's norm of a row v, eps = 0 unless given: ``entry`` of :mod:`derive.norm_rows`, the
    one statement of the row that the rule table's nodes (and so derive.blocks' programs) read too."""
    def row(v, eps=0):
        n = len(v)
        return tuple(entry(v.__getitem__, j, n, lambda term: sympy.Add(*[term(k) for k in range(n)]), eps) for j in range(n))

    return row


_VECTOR_SYMPY: dict[str, Callable] = {
    "softmax": _softmax,       # exp(v_i) / sum_j exp(v_j)
    "layernorm": _norm(norm_rows.normalized),      # (v_i - mean) / sqrt(var + eps), population variance, eps = 0 unless given
    "rmsnorm": _norm(norm_rows.rms_normalized),    # v_i / sqrt(mean(v o v) + eps) (Zhang & Sennrich 2019), eps = 0 unless given
    "mean": _mean,
    "var": _var,               # population variance (divides by n)
    "dot": lambda u, v: sympy.Add(*[a * b for a, b in zip(u, v)]),
    "norm": lambda v: sympy.sqrt(sympy.Add(*[x ** 2 for x in v])),  # Euclidean
    "sum": lambda v: sympy.Add(*v),
    "prod": lambda v: sympy.Mul(*v),
    "max": lambda v: sympy.Max(*v),
    "min": lambda v: sympy.Min(*v),
}

#: vector operations: name -> (SymPy function, number of vector arguments, number of optional scalar
#: arguments after them, True if the result is a vector), as :data:`derive.whitelist.VECTOR_ARITY`.
#: A vector is written (a, b, c) or [a, b, c]; an operation of one vector also takes its entries
#: directly: softmax(1.2, 0.5, 2.0), max(1, 7, 3).
VECTOR_FUNCTIONS: dict[str, tuple[Callable, int, int, bool]] = {
    name: (_VECTOR_SYMPY[name], *arity) for name, arity in VECTOR_ARITY.items()}

_BINARY = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
}

#: calculus in identities (:func:`derive.verify`, ``calculus=True`` only): ``diff(f, x)`` / ``diff(f, x, n)`` and
#: ``sum(f, i, a, b)`` = sum_{i=a}^{b} f with i a bound integer index (a name not declared otherwise)
CALCULUS = ("diff", "sum")
MAX_DIFF_ORDER = 10


def parse_expression(text: str, *, variables: Iterable[str] = (), values: Mapping[str, sympy.Expr] | None = None,
                     argument: str = "expression", functions: Mapping[str, Callable] | None = None,
                     calculus: bool = False, sizes: Iterable[str] = ()) -> sympy.Expr:
    """Parse ``text`` into a SymPy expression through the whitelist (see the module docstring).

    ``variables`` are the names allowed as free real symbols; ``values`` maps
    further names to numbers that replace them; ``functions`` maps further
    names to one-argument SymPy callables (a ``Lambda`` or a ``Function``
    class the caller chose, e.g. a cell's activations); ``argument`` is the
    name the error messages give the text.  Raises :class:`~seqgrad.errors.ParseError`
    for anything outside the whitelist or the limits.  ``calculus`` also allows
    :data:`CALCULUS`; ``sizes`` are names of positive integer symbols (bounds of sums).
    """
    walker, body = _prepare(text, variables, values, argument, functions, calculus, sizes)
    return walker.visit(body, 1)


def parse_value(text: str, *, variables: Iterable[str] = (), values: Mapping[str, sympy.Expr] | None = None,
                argument: str = "expression", calculus: bool = False, sizes: Iterable[str] = ()) -> sympy.Expr | tuple[sympy.Expr, ...]:
    """Like :func:`parse_expression`, but the text may also be a vector: ``(0.31, 0.15, 0.54)``
    or a vector operation such as ``softmax(1.2, 0.5, 2.0)``; a vector is returned as a tuple."""
    walker, body = _prepare(text, variables, values, argument, None, calculus, sizes)
    if is_vector_node(body):
        return walker.vector(body, 1)
    return walker.visit(body, 1)


def vector_entries(text: str, argument: str = "expression") -> list[str] | None:
    """The entries' text of a vector literal ``(a, b, c)`` / ``[a, b, c]``, or None for anything else.

    Only :func:`ast.parse` runs (it builds a tree and evaluates nothing); the
    entries still have to be parsed by :func:`parse_expression`.
    """
    walker, body = _prepare(text, (), None, argument)
    if not isinstance(body, (ast.Tuple, ast.List)):
        return None
    return [ast.get_source_segment(walker.source, e) or "" for e in body.elts]


def _prepare(text, variables, values, argument, functions=None, calculus=False, sizes=()):
    if not isinstance(text, str):
        raise SeqgradTypeError(argument, text, "a string holding an expression")
    symbols = {name: sympy.Symbol(name, real=True) for name in check_variable_names(variables)}
    for name in check_variable_names(sizes, "sizes"):
        symbols[name] = sympy.Symbol(name, integer=True, positive=True)
    for name, value in (values or {}).items():
        check_variable_names([name])
        if not (isinstance(value, sympy.Expr) and value.is_number):
            raise SeqgradTypeError(f"values[{name!r}]", value, "a SymPy number")
        symbols[name] = value
    source, body = parse_tree(text, argument)
    extra = dict(functions or {})
    for name in extra:
        if not isinstance(name, str) or not IDENTIFIER.match(name) or name.startswith("__"):
            raise ParseError("functions", str(name), "a function name is a plain identifier such as lrelu")
    walker = _Walker(text, source, symbols, argument, extra)
    walker.calculus = bool(calculus)
    return walker, body


def as_sympy(value, argument: str = "value", *, variables: Iterable[str] = ()) -> sympy.Basic:
    """A safe replacement for ``sympy.sympify`` on a caller's argument.

    SymPy objects pass through (a mutable ``Matrix`` becomes immutable); Python
    and numpy numbers become SymPy numbers
    (finite floats only); text goes through :func:`parse_expression` (with
    ``variables`` as the allowed names); anything else is refused.  Use it
    wherever an argument may be text: ``sympy.sympify`` hands a ``str`` to
    SymPy's own parser, which calls ``eval`` -- ``sympify("__import__('os')...")``
    runs the command.

    >>> as_sympy(0.5), as_sympy(3), as_sympy("1/4 + x", variables=["x"])
    (0.500000000000000, 3, x + 1/4)
    """
    if isinstance(value, sympy.Basic):
        return value
    if isinstance(value, sympy.MatrixBase):  # a mutable Matrix: its entries are SymPy objects already
        return sympy.ImmutableMatrix(value)
    if isinstance(value, str):
        return parse_expression(value, variables=variables, argument=argument)
    if isinstance(value, bool) or not isinstance(value, numbers.Number):
        raise SeqgradTypeError(argument, value, "a number, a SymPy expression, or an expression as text")
    if isinstance(value, numbers.Integral):
        return sympy.Integer(int(value))
    if isinstance(value, numbers.Rational):
        return sympy.Rational(int(value.numerator), int(value.denominator))
    if isinstance(value, numbers.Real):
        x = float(value)
        if not math.isfinite(x):
            raise NonFiniteError(argument, value)
        return sympy.Float(x)
    raise SeqgradTypeError(argument, value, "a real number, a SymPy expression, or an expression as text")


def parse_number(text: str, argument: str = "number") -> sympy.Rational:
    """Parse a plain decimal number (optionally signed) into the exact rational it spells."""
    value = parse_expression(text, argument=argument)
    if not isinstance(value, sympy.Rational):
        raise ParseError(argument, text, "a plain decimal number such as 0.1411 or -2.5e-3")
    return value


class _Walker(Reader):
    calculus = False

    def __init__(self, text: str, source: str, symbols: dict, argument: str, functions: dict | None = None):
        super().__init__(text, source, argument)
        self.functions = functions or {}
        self.symbols = symbols

    def declared(self):
        return list(self.symbols)

    def arity(self, fname: str):
        return function_arity(fname)

    def function_names(self):
        return registry.parser_names()

    def visit(self, node: ast.AST, depth: int) -> sympy.Expr:
        result = self.build(node, depth)
        if result.is_number:
            self.bounded(result, node)
        return result

    def bounded(self, value: sympy.Expr, node: ast.AST) -> None:
        """Refuse a numeric subexpression that is not finite or lies outside 10**±MAX_MAGNITUDE."""
        where = self.segment(node)
        if isinstance(value, sympy.Rational):
            orders = abs(abs(int(value.p)).bit_length() - int(value.q).bit_length()) * math.log10(2)
            if value != 0 and orders > MAX_MAGNITUDE + 1:
                self.limit(f"{where!r} lies outside the magnitude limit 10**±{MAX_MAGNITUDE}")
            return
        self.magnitude(sympy.N(value, 15), node)

    def magnitude(self, approx: sympy.Expr, node: ast.AST) -> None:
        """Refuse a 15-digit approximation that is not finite or lies outside 10**±MAX_MAGNITUDE."""
        where = self.segment(node)
        if approx.has(sympy.zoo, sympy.oo, -sympy.oo, sympy.nan) or not approx.is_number:
            self.limit(f"{where!r} is not a finite number")
        size = max(abs(sympy.Float(part)) for part in approx.as_real_imag())  # no float overflow past 1e308
        if size != 0 and abs(mpmath.log10(mpmath.mpf(size._mpf_))) > MAX_MAGNITUDE:
            self.limit(f"{where!r} lies outside the magnitude limit 10**±{MAX_MAGNITUDE}")

    def chain(self, node: ast.BinOp, depth: int) -> sympy.Expr:
        """a + b - c + ... (or a * b / c ...), walked iteratively (see Reader.chain_steps)."""
        first, steps = self.chain_steps(node)
        result = self.visit(first, depth + 1)
        approx = sympy.N(result, 15) if result.is_number else None
        for op_node, right_node, whole in steps:
            op = _BINARY[type(op_node)]
            right = self.visit(right_node, depth + 1)
            if isinstance(op_node, ast.Div) and right == 0:
                self.limit("division by zero")
            result = op(result, right)
            # bound each partial result from running 15-digit approximations (no re-evaluation
            # of the whole prefix per term); the outermost result is checked exactly by visit()
            if approx is not None and right.is_number:
                approx = sympy.N(op(approx, sympy.N(right, 15)), 15)
                self.magnitude(approx, whole)
            else:
                approx = None
        return result

    @staticmethod
    def number(value) -> sympy.Rational:
        return sympy.Rational(value.numerator, value.denominator)

    @staticmethod
    def negate(x: sympy.Expr) -> sympy.Expr:
        return -x

    def name(self, name: str) -> sympy.Expr:
        if name in self.symbols:
            return self.symbols[name]
        if name in CONSTANTS:
            return CONSTANTS[name]
        if name == "inf":
            self.refuse("inf is allowed only as an entry of a vector given to " + ", ".join(ACCEPTS_INFINITY))
        if registry.find(name) is not None or name in VECTOR_FUNCTIONS:
            self.refuse(f"the function {name!r} must be called, e.g. {name}(x)")
        self.refuse(f"the name {name!r} is not on the whitelist")

    def function(self, node: ast.Call, fname: str, args: list) -> sympy.Expr:
        if fname in ("exp", "sinh", "cosh", "sigmoid") and args[0].is_number:
            # bound the argument before SymPy evaluates e**x (sigmoid: e**-x): |x| <= MAX_MAGNITUDE * ln 10
            if abs(complex(sympy.N(sympy.re(args[0]), 15))) > MAX_MAGNITUDE * math.log(10):
                self.limit(f"{fname}() of {self.segment(node.args[0])!r} lies outside the magnitude limit 10**±{MAX_MAGNITUDE}")
        return operations.node(fname)(*args)

    def reads_call(self, fname: str) -> bool:
        return self.calculus and fname in CALCULUS

    def own_call(self, node: ast.Call, fname: str, depth: int) -> sympy.Expr:
        """diff(f, x[, n]) with x a declared variable; sum(f, i, a, b) with i a fresh bound integer index."""
        args = node.args
        if fname == "diff":
            if not 2 <= len(args) <= 3 or not isinstance(args[1], ast.Name):
                self.limit("diff() takes an expression, a declared variable and optionally an order: diff(f, x) or diff(f, x, 2)")
            x = self.name(args[1].id)
            if not isinstance(x, sympy.Symbol):
                self.limit(f"diff() differentiates with respect to a declared variable, not {args[1].id!r}")
            order = 1
            if len(args) == 3:
                order = self.visit(args[2], depth + 1)
                if not (order.is_Integer and 1 <= order <= MAX_DIFF_ORDER):
                    self.limit(f"the order of diff() is an integer from 1 to {MAX_DIFF_ORDER}")
            return sympy.Derivative(self.visit(args[0], depth + 1), (x, int(order)))  # printed as written; doit() evaluates
        if len(args) != 4 or not isinstance(args[1], ast.Name):
            self.limit("sum() takes an expression, an index name and two bounds: sum(f, i, 0, n - 1)")
        index = args[1].id
        check_variable_names([index], "index")
        if index in self.symbols:
            self.limit(f"the summation index {index!r} must be a new name (it is bound by the sum)")
        i = sympy.Symbol(index, integer=True)
        lower, upper = self.visit(args[2], depth + 1), self.visit(args[3], depth + 1)
        self.symbols[index] = i
        try:
            body = self.visit(args[0], depth + 1)
        finally:
            del self.symbols[index]
        return sympy.Sum(body, (i, lower, upper))

    def entry(self, node: ast.AST, depth: int) -> sympy.Expr:
        """A vector entry: a number, or ±inf (a masked score)."""
        s = is_infinity(node)
        return s * sympy.oo if s else self.visit(node, depth)

    @staticmethod
    def infinite(x) -> bool:
        return x in (sympy.oo, -sympy.oo)

    def apply_vector(self, node: ast.Call, fname: str, vectors: list, scalars: list):
        if fname == "softmax":
            for x in vectors[0]:  # exp(x - max) is evaluated: bound x as exp() bounds its argument
                if x.is_number and x.is_finite and abs(complex(sympy.N(sympy.re(x), 15))) > MAX_MAGNITUDE * math.log(10):
                    self.limit(f"softmax() of entries beyond ±{MAX_MAGNITUDE * math.log(10):.0f} lies outside the magnitude limit")
        if fname in ("layernorm", "rmsnorm"):
            v = vectors[0]
            if scalars and scalars[0].is_number and not scalars[0].is_nonnegative:
                self.limit(f"{fname}()'s eps is {scalars[0]}; it must be a number >= 0 (inside the square root)")
            spread = (_var(v) if fname == "layernorm" else _mean([x ** 2 for x in v])) + (scalars[0] if scalars else 0)
            if spread.is_number and spread == 0:
                what = "a constant vector" if fname == "layernorm" else "the zero vector"
                self.limit(f"{fname}() of {what} divides by zero; give eps, as in {fname}((a, b), 1e-5)")
        result = VECTOR_FUNCTIONS[fname][0](*vectors, *scalars)
        if isinstance(result, tuple):
            for entry in result:
                if entry.is_number and not self.infinite(entry):
                    self.bounded(entry, node)
        return result

    def power(self, node: ast.BinOp, base: sympy.Expr, exponent: sympy.Expr) -> sympy.Expr:
        if exponent.is_number:
            size = abs(complex(sympy.N(exponent, 15)))
            if not math.isfinite(size) or size > MAX_EXPONENT:
                self.limit(f"exponents have modulus at most {MAX_EXPONENT}")
            if base.is_Rational and base not in (0, 1, -1):
                digits = size * max(math.log10(abs(int(base.p))), math.log10(abs(int(base.q))), 1.0)
                if digits > MAX_RESULT_DIGITS:
                    self.limit(f"the exact power would have more than {MAX_RESULT_DIGITS} digits")
        if base == 0 and exponent.is_number and sympy.re(exponent) < 0:
            self.limit("division by zero (zero to a negative power)")
        return base ** exponent
