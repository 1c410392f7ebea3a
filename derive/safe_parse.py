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
* calls of the functions in :data:`FUNCTIONS` with positional arguments;
* the vector operations in :data:`VECTOR_FUNCTIONS` (``softmax``,
  ``layernorm``, ``mean``, ``var``, ``dot``, ``norm``) on vectors written
  ``(a, b, c)`` or ``[a, b, c]``; :func:`parse_value` also accepts a whole
  vector (a vector literal or ``softmax(...)``) and returns a tuple;
* names the caller declares as variables (``variables=("u", "h")``).

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

>>> from derive.safe_parse import parse_expression
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
import re
from decimal import Decimal, InvalidOperation
from typing import Callable, Iterable, Mapping

import mpmath
import sympy

from seqgrad.errors import NonFiniteError, ParseError, SeqgradTypeError

MAX_LENGTH = 1000
MAX_DEPTH = 60
MAX_LITERAL_DIGITS = 60
MAX_LITERAL_EXPONENT = 300
MAX_EXPONENT = 1000
MAX_RESULT_DIGITS = 10_000
MAX_MAGNITUDE = 1000  # every numeric subexpression lies within 10**±MAX_MAGNITUDE (or is 0)


def _sigmoid(x):
    return 1 / (1 + sympy.exp(-x))


def _log(x, base=None):
    return sympy.log(x) if base is None else sympy.log(x, base)


#: name -> (SymPy constructor, smallest and largest number of arguments)
FUNCTIONS: dict[str, tuple[Callable, int, int]] = {
    "sin": (sympy.sin, 1, 1),
    "cos": (sympy.cos, 1, 1),
    "tan": (sympy.tan, 1, 1),
    "asin": (sympy.asin, 1, 1),
    "acos": (sympy.acos, 1, 1),
    "atan": (sympy.atan, 1, 1),
    "sinh": (sympy.sinh, 1, 1),
    "cosh": (sympy.cosh, 1, 1),
    "tanh": (sympy.tanh, 1, 1),
    "exp": (sympy.exp, 1, 1),
    "log": (_log, 1, 2),  # natural logarithm; log(x, b) in base b
    "sqrt": (sympy.sqrt, 1, 1),
    "sigmoid": (_sigmoid, 1, 1),
    "abs": (sympy.Abs, 1, 1),
    "max": (sympy.Max, 1, 32),
    "min": (sympy.Min, 1, 32),
    "floor": (sympy.floor, 1, 1),
}

#: name -> SymPy constant
CONSTANTS: dict[str, sympy.Expr] = {"pi": sympy.pi, "E": sympy.E}

MAX_VECTOR = 64  # entries of one vector


def _mean(v):
    return sympy.Add(*v) / len(v)


def _var(v):
    m = _mean(v)
    return sympy.Add(*[(x - m) ** 2 for x in v]) / len(v)


def _softmax(v):
    m = sympy.Max(*v)
    e = [sympy.exp(x - m) for x in v]
    total = sympy.Add(*e)
    return tuple(x / total for x in e)


def _layernorm(v, eps=0):
    m, s2 = _mean(v), _var(v)
    return tuple((x - m) / sympy.sqrt(s2 + eps) for x in v)


#: vector operations: name -> (SymPy function, number of vector arguments, number of optional scalar
#: arguments after them, True if the result is a vector).  A vector is written (a, b, c) or [a, b, c];
#: a function of one vector also takes its entries directly: softmax(1.2, 0.5, 2.0).
VECTOR_FUNCTIONS: dict[str, tuple[Callable, int, int, bool]] = {
    "softmax": (_softmax, 1, 0, True),      # exp(v_i) / sum_j exp(v_j)
    "layernorm": (_layernorm, 1, 1, True),  # (v_i - mean) / sqrt(var + eps), population variance, eps = 0 unless given
    "mean": (_mean, 1, 0, False),
    "var": (_var, 1, 0, False),             # population variance (divides by n)
    "dot": (lambda u, v: sympy.Add(*[a * b for a, b in zip(u, v)]), 2, 0, False),
    "norm": (lambda v: sympy.sqrt(sympy.Add(*[x ** 2 for x in v])), 1, 0, False),  # Euclidean
}

_BINARY = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
}

# What a refused node is called in the error message.
_REFUSED = {
    ast.Attribute: "attribute access",
    ast.Subscript: "subscripts",
    ast.Lambda: "lambda",
    ast.ListComp: "comprehensions",
    ast.SetComp: "comprehensions",
    ast.DictComp: "comprehensions",
    ast.GeneratorExp: "comprehensions",
    ast.JoinedStr: "f-strings",
    ast.FormattedValue: "f-strings",
    ast.Compare: "comparisons",
    ast.BoolOp: "boolean operators",
    ast.IfExp: "conditional expressions",
    ast.NamedExpr: "assignment expressions (:=)",
    ast.Starred: "starred arguments",
    ast.List: "vectors outside softmax, layernorm, mean, var, dot and norm",
    ast.Tuple: "vectors outside softmax, layernorm, mean, var, dot and norm",
    ast.Set: "sets",
    ast.Dict: "dicts",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.Slice: "slices",
}

_OPERATOR_NAMES = {
    ast.FloorDiv: "floor division (//)",
    ast.Mod: "the % operator",
    ast.MatMult: "matrix multiplication (@)",
    ast.BitXor: "the ^ operator (write powers as **)",
    ast.BitAnd: "the & operator",
    ast.BitOr: "the | operator",
    ast.LShift: "the << operator",
    ast.RShift: "the >> operator",
    ast.Invert: "the ~ operator",
    ast.Not: "not",
}

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# Typographic characters that textbooks print, mapped to the ASCII operator they mean.
_TYPOGRAPHY = str.maketrans({"\u2212": "-", "\u00b7": "*", "\u00d7": "*", "\u22c5": "*"})


def allowed_names() -> str:
    """The whitelist as one line of text, for error messages and docs."""
    return ("functions " + ", ".join(sorted(FUNCTIONS)) + "; vector operations " + ", ".join(sorted(VECTOR_FUNCTIONS))
            + "; constants " + ", ".join(sorted(CONSTANTS)))


def check_variable_names(variables: Iterable[str], argument: str = "variables") -> tuple[str, ...]:
    """Return ``variables`` as a tuple after checking each is a plain, free identifier."""
    names = tuple(variables)
    for name in names:
        if not isinstance(name, str) or not _IDENTIFIER.match(name):
            raise ParseError(argument, str(name), "a variable name is a plain identifier such as u or h_prev")
        if name.startswith("__"):
            raise ParseError(argument, name, "dunder names are not allowed")
        if name in FUNCTIONS or name in CONSTANTS or name in VECTOR_FUNCTIONS:
            raise ParseError(argument, name, f"{name!r} is a built-in name of the whitelist and cannot be a variable")
    return names


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
    if walker.is_vector(body):
        return walker.vector(body, 1)
    return walker.visit(body, 1)


def vector_entries(text: str, argument: str = "expression") -> list[str] | None:
    """The entries' text of a vector literal ``(a, b, c)`` / ``[a, b, c]``, or None for anything else.

    Only :func:`ast.parse` runs (it builds a tree and evaluates nothing); the
    entries still have to be parsed by :func:`parse_expression`.
    """
    _, body = _prepare(text, (), None, argument)
    if not isinstance(body, (ast.Tuple, ast.List)):
        return None
    source = text.translate(_TYPOGRAPHY).strip()
    return [ast.get_source_segment(source, e) or "" for e in body.elts]


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
    source = text.translate(_TYPOGRAPHY)
    if len(source) > MAX_LENGTH:
        raise ParseError(argument, text, f"at most {MAX_LENGTH} characters (got {len(source)})")
    if not source.strip():
        raise ParseError(argument, text, "an expression, not empty text")
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        raise ParseError(argument, text, f"it is not a well-formed expression ({exc.msg})") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ParseError(argument, text, f"it is not a well-formed expression ({type(exc).__name__})") from None
    extra = dict(functions or {})
    for name in extra:  # a caller's function may shadow a whitelisted one (a cell's own sigmoid)
        if not isinstance(name, str) or not _IDENTIFIER.match(name) or name.startswith("__"):
            raise ParseError("functions", str(name), "a function name is a plain identifier such as lrelu")
    walker = _Walker(text, source.strip(), symbols, argument, extra)
    walker.calculus = bool(calculus)
    return walker, tree.body


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


class _Walker:
    calculus = False

    def __init__(self, text: str, source: str, symbols: dict, argument: str, functions: dict | None = None):
        self.functions = functions or {}
        self.text = text
        self.source = source
        self.symbols = symbols
        self.argument = argument

    def limit(self, reason: str):
        """Refuse text that is on the whitelist but exceeds a size limit."""
        raise ParseError(self.argument, self.text, reason)

    def refuse(self, reason: str):
        """Refuse text that uses something outside the whitelist."""
        raise ParseError(self.argument, self.text, reason + "; allowed: numbers, + - * / **, parentheses, " + allowed_names()
                         + (", variables " + ", ".join(sorted(self.symbols)) if self.symbols else ""))

    def visit(self, node: ast.AST, depth: int) -> sympy.Expr:
        result = self.build(node, depth)
        if result.is_number:
            self.bounded(result, node)
        return result

    def bounded(self, value: sympy.Expr, node: ast.AST) -> None:
        """Refuse a numeric subexpression that is not finite or lies outside 10**±MAX_MAGNITUDE."""
        where = ast.get_source_segment(self.source, node) or "a subexpression"
        if isinstance(value, sympy.Rational):
            orders = abs(abs(int(value.p)).bit_length() - int(value.q).bit_length()) * math.log10(2)
            if value != 0 and orders > MAX_MAGNITUDE + 1:
                self.limit(f"{where!r} lies outside the magnitude limit 10**±{MAX_MAGNITUDE}")
            return
        self.magnitude(sympy.N(value, 15), node)

    def magnitude(self, approx: sympy.Expr, node: ast.AST) -> None:
        """Refuse a 15-digit approximation that is not finite or lies outside 10**±MAX_MAGNITUDE."""
        where = ast.get_source_segment(self.source, node) or "a subexpression"
        if approx.has(sympy.zoo, sympy.oo, -sympy.oo, sympy.nan) or not approx.is_number:
            self.limit(f"{where!r} is not a finite number")
        size = max(abs(sympy.Float(part)) for part in approx.as_real_imag())  # no float overflow past 1e308
        if size != 0 and abs(mpmath.log10(mpmath.mpf(size._mpf_))) > MAX_MAGNITUDE:
            self.limit(f"{where!r} lies outside the magnitude limit 10**±{MAX_MAGNITUDE}")

    def build(self, node: ast.AST, depth: int) -> sympy.Expr:
        if depth > MAX_DEPTH:
            raise ParseError(self.argument, self.text, f"the expression is nested more than {MAX_DEPTH} levels deep")
        if isinstance(node, ast.Constant):
            return self.constant(node)
        if isinstance(node, ast.Name):
            return self.name(node.id)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.USub):
                return -self.visit(node.operand, depth + 1)
            if isinstance(node.op, ast.UAdd):
                return self.visit(node.operand, depth + 1)
            self.refuse(f"{_OPERATOR_NAMES.get(type(node.op), type(node.op).__name__)} is not allowed")
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Pow):
                return self.power(self.visit(node.left, depth + 1), self.visit(node.right, depth + 1))
            return self.chain(node, depth)
        if isinstance(node, ast.Call):
            return self.call(node, depth)
        kind = _REFUSED.get(type(node), f"{type(node).__name__} nodes")
        detail = f" ('.{node.attr}')" if isinstance(node, ast.Attribute) else ""
        self.refuse(f"{kind}{detail} is not allowed" if kind.endswith(("access", "lambda", "await", "yield"))
                    else f"{kind}{detail} are not allowed")

    def chain(self, node: ast.BinOp, depth: int) -> sympy.Expr:
        """a + b - c + ... (or a * b / c ...): Python nests such a chain to the left, one level per
        term; walk its spine iteratively so that a long flat sum does not count as deep nesting."""
        steps = []
        while isinstance(node, ast.BinOp) and not isinstance(node.op, ast.Pow):
            steps.append((node.op, node.right, node))
            node = node.left
        result = self.visit(node, depth + 1)
        approx = sympy.N(result, 15) if result.is_number else None
        for op_node, right_node, whole in reversed(steps):
            op = _BINARY.get(type(op_node))
            if op is None:
                self.refuse(f"{_OPERATOR_NAMES.get(type(op_node), type(op_node).__name__)} is not allowed")
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

    def constant(self, node: ast.Constant) -> sympy.Expr:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            kind = {str: "string literals", bytes: "bytes literals", complex: "complex numbers"}.get(type(value), f"{type(value).__name__} constants")
            if value is None or value is Ellipsis or isinstance(value, bool):
                kind = f"the constant {value!r}"
            self.refuse(f"{kind} are not allowed" if kind.endswith("s") else f"{kind} is not allowed")
        literal = ast.get_source_segment(self.source, node) or repr(value)
        digits = sum(ch.isdigit() for ch in literal)
        if digits > MAX_LITERAL_DIGITS:
            self.limit(f"number literals have at most {MAX_LITERAL_DIGITS} digits (got {digits})")
        if isinstance(value, int):
            return sympy.Integer(value)
        try:
            exact = Decimal(literal.replace("_", ""))
        except InvalidOperation:  # pragma: no cover - every float literal is a decimal
            exact = Decimal(repr(value))
        if not exact.is_finite() or abs(exact.adjusted()) > MAX_LITERAL_EXPONENT:
            self.limit(f"number literals have a decimal exponent within ±{MAX_LITERAL_EXPONENT}")
        return sympy.Rational(str(exact))

    def name(self, name: str) -> sympy.Expr:
        if name.startswith("__") or name.endswith("__"):
            self.refuse(f"the dunder name {name!r} is not allowed")
        if name in self.symbols:
            return self.symbols[name]
        if name in CONSTANTS:
            return CONSTANTS[name]
        if name in FUNCTIONS:
            self.refuse(f"the function {name!r} must be called, e.g. {name}(x)")
        self.refuse(f"the name {name!r} is not on the whitelist")

    def call(self, node: ast.Call, depth: int) -> sympy.Expr:
        if not isinstance(node.func, ast.Name):
            if isinstance(node.func, ast.Attribute):
                self.refuse(f"attribute access ('.{node.func.attr}') is not allowed")
            self.refuse("only calls of whitelisted functions by name are allowed")
        fname = node.func.id
        if fname.startswith("__") or fname.endswith("__"):
            self.refuse(f"the dunder name {fname!r} is not allowed")
        if fname in self.functions:
            if node.keywords or len(node.args) != 1:
                self.limit(f"{fname}() takes one positional argument")
            return self.functions[fname](self.visit(node.args[0], depth + 1))
        calculus = self.calculus and fname in CALCULUS
        if fname not in FUNCTIONS and fname not in VECTOR_FUNCTIONS and not calculus:
            self.refuse(f"calls of {fname!r} are not allowed (not a whitelisted function)")
        if node.keywords:
            self.refuse(f"keyword arguments to {fname}() are not allowed")
        if calculus:
            return self.calculus_call(fname, node, depth)
        if fname in VECTOR_FUNCTIONS:
            fn, _, _, gives_vector = VECTOR_FUNCTIONS[fname]
            if gives_vector:
                self.refuse(f"{fname}() gives a vector, which is allowed only as a whole claim side or inside a vector operation")
            return fn(*self.vector_arguments(node, depth))
        fn, least, most = FUNCTIONS[fname]
        if not least <= len(node.args) <= most:
            count = f"{least}" if least == most else f"{least} to {most}"
            self.limit(f"{fname}() takes {count} argument(s), got {len(node.args)}")
        args = [self.visit(arg, depth + 1) for arg in node.args]
        if fname in ("exp", "sinh", "cosh") and args[0].is_number:
            # bound the argument before SymPy evaluates e**x: |x| <= MAX_MAGNITUDE * ln 10
            if abs(complex(sympy.N(sympy.re(args[0]), 15))) > MAX_MAGNITUDE * math.log(10):
                self.limit(f"{fname}() of {ast.get_source_segment(self.source, node.args[0])!r} lies outside the magnitude limit 10**±{MAX_MAGNITUDE}")
        return fn(*args)

    def calculus_call(self, fname: str, node: ast.Call, depth: int) -> sympy.Expr:
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

    def is_vector(self, node: ast.AST) -> bool:
        """True for (a, b), [a, b] and calls of vector-valued operations such as softmax(...)."""
        if isinstance(node, (ast.Tuple, ast.List)):
            return True
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in VECTOR_FUNCTIONS
                and VECTOR_FUNCTIONS[node.func.id][3])

    def vector(self, node: ast.AST, depth: int) -> tuple[sympy.Expr, ...]:
        """A vector: (a, b, ...) / [a, b, ...] with scalar entries, or a vector-valued operation."""
        if depth > MAX_DEPTH:
            self.limit(f"the expression is nested more than {MAX_DEPTH} levels deep")
        if isinstance(node, (ast.Tuple, ast.List)):
            if not 1 <= len(node.elts) <= MAX_VECTOR:
                self.limit(f"a vector has 1 to {MAX_VECTOR} entries (got {len(node.elts)})")
            return tuple(self.visit(e, depth + 1) for e in node.elts)
        if self.is_vector(node):
            fname = node.func.id
            if node.keywords:
                self.refuse(f"keyword arguments to {fname}() are not allowed")
            fn = VECTOR_FUNCTIONS[fname][0]
            result = tuple(fn(*self.vector_arguments(node, depth)))
            for entry in result:
                if entry.is_number:
                    self.bounded(entry, node)
            return result
        where = ast.get_source_segment(self.source, node) or "an argument"
        self.refuse(f"{where!r} is not a vector; write a vector as (a, b, c)")

    def vector_arguments(self, node: ast.Call, depth: int) -> list:
        """The arguments of a vector operation: its vectors, then its optional scalars."""
        fname = node.func.id
        _, n_vectors, n_optional, _ = VECTOR_FUNCTIONS[fname]
        args = node.args
        if n_vectors == 1 and args and not self.is_vector(args[0]):
            # softmax(1.2, 0.5, 2.0): the entries given directly
            if not 1 <= len(args) <= MAX_VECTOR:
                self.limit(f"a vector has 1 to {MAX_VECTOR} entries (got {len(args)})")
            vectors, scalars = [tuple(self.visit(a, depth + 1) for a in args)], []
        else:
            if not n_vectors <= len(args) <= n_vectors + n_optional:
                shape = ", ".join(["(a, b, ...)"] * n_vectors + ["eps"] * n_optional)
                self.limit(f"{fname}() takes {shape}, got {len(args)} argument(s)")
            vectors = [self.vector(a, depth + 1) for a in args[:n_vectors]]
            scalars = [self.visit(a, depth + 1) for a in args[n_vectors:]]
        if n_vectors == 2 and len(vectors[0]) != len(vectors[1]):
            self.limit(f"{fname}() needs two vectors of the same length (got {len(vectors[0])} and {len(vectors[1])})")
        if fname == "softmax":
            for x in vectors[0]:  # exp(x - max) is evaluated: bound x as exp() bounds its argument
                if x.is_number and abs(complex(sympy.N(sympy.re(x), 15))) > MAX_MAGNITUDE * math.log(10):
                    self.limit(f"softmax() of entries beyond ±{MAX_MAGNITUDE * math.log(10):.0f} lies outside the magnitude limit")
        if fname == "layernorm":
            v = vectors[0]
            spread = _var(v) + (scalars[0] if scalars else 0)
            if spread.is_number and spread == 0:
                self.limit("layernorm() of a constant vector divides by zero; give eps, as in layernorm((a, b), 1e-5)")
        return vectors + scalars

    def power(self, base: sympy.Expr, exponent: sympy.Expr) -> sympy.Expr:
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
