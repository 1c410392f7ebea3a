"""What user text may contain, and how it is read: the whitelist and limits shared by every reader.

Two readers walk the same syntax tree: :mod:`derive.safe_parse` builds SymPy
expressions, :mod:`derive.certified` evaluates numbers with certified bounds
(for :mod:`derive.claims`, without importing SymPy).  Both take their names,
arities, limits and refusal messages from here, and both read the text through
:func:`parse_tree`, so a text means the same thing to each.  The scalar functions are the operations
of the registry (:mod:`seqgrad.operations`): safe_parse reads every one, the certified reader those
with an interval rule (the registry's ``interval=``; every built-in operation has one).  This module imports only the standard library (the registry imports nothing else either).

How text is read, before Python's :mod:`ast` builds the tree (which runs nothing):

* the typographic characters of printed texts mean what they stand for:
  ``−`` is ``-``, ``·``, ``×`` and ``⋅`` are ``*``, ``∞`` is ``inf``;
* decimal commas: when the text uses ``;`` to separate entries or arguments,
  as the Russian texts do (``(1,2; 0,5; 2,0)``), every ``,`` is a decimal comma;
  otherwise a text that is one number written with a comma (``0,5``,
  ``-0,3502``) is that decimal, and any other ``,`` separates entries
  (``softmax(1,2,3)`` has three arguments);
* ``#`` (Python would read a comment), ``\\`` and other non-ASCII characters are
  refused rather than ignored or normalised.
"""

from __future__ import annotations

import ast
import re
import warnings
from decimal import Decimal
from fractions import Fraction
from typing import Callable, Iterable

from seqgrad import operations as registry
from seqgrad.errors import ParseError, SeqgradTypeError

MAX_LENGTH = 1000
MAX_DEPTH = 60
MAX_LITERAL_DIGITS = 60
MAX_LITERAL_EXPONENT = 300
MAX_EXPONENT = 1000
MAX_RESULT_DIGITS = 10_000
MAX_MAGNITUDE = 1000  # every numeric subexpression lies within 10**±MAX_MAGNITUDE (or is 0)
MAX_VECTOR = 64  # entries of one vector

#: the scalar functions of the certified claims (name -> smallest, largest number of arguments): the
#: registry's operations (:mod:`seqgrad.operations`) that :mod:`derive.certified` evaluates with bounds;
#: :mod:`derive.safe_parse` reads every operation of the registry (:func:`function_arity`)
FUNCTION_ARITY: dict[str, tuple[int, int]] = {name: registry.get(name).arity for name in registry.claims_names()}

#: vector operations: name -> (number of vector arguments, number of optional scalar arguments
#: after them, True if the result is a vector).  A vector is written (a, b, c) or [a, b, c]; an
#: operation of one vector also takes its entries directly: softmax(1.2, 0.5, 2.0), max(1, 7, 3).
VECTOR_ARITY: dict[str, tuple[int, int, bool]] = {
    "softmax": (1, 0, True),      # exp(v_i) / sum_j exp(v_j); -inf entries (masked scores) get weight 0
    "layernorm": (1, 1, True),    # (v_i - mean) / sqrt(var + eps), population variance, eps = 0 unless given
    "rmsnorm": (1, 1, True),      # v_i / sqrt(mean(v o v) + eps), eps = 0 unless given
    "mean": (1, 0, False),
    "var": (1, 0, False),         # population variance (divides by n)
    "dot": (2, 0, False),
    "norm": (1, 0, False),        # Euclidean
    "sum": (1, 0, False),
    "prod": (1, 0, False),
    "max": (1, 0, False),
    "min": (1, 0, False),
}

#: the operations a vector entry of ±inf (a masked score) may be given to
ACCEPTS_INFINITY = ("softmax", "max", "min")

CONSTANT_NAMES = ("pi", "E")
INFINITY_NAME = "inf"

# What a refused node is called in the error message.
REFUSED = {
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
    ast.List: "vectors outside " + ", ".join(VECTOR_ARITY),
    ast.Tuple: "vectors outside " + ", ".join(VECTOR_ARITY),
    ast.Set: "sets",
    ast.Dict: "dicts",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.Slice: "slices",
}

OPERATOR_NAMES = {
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

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Typographic characters that textbooks print, mapped to the ASCII they mean.
TYPOGRAPHY = str.maketrans({"\u2212": "-", "\u00b7": "*", "\u00d7": "*", "\u22c5": "*", "\u221e": "inf"})
_COMMA_NUMBER = re.compile(r"\s*[+-]?\s*\d+,\d+([eE][+-]?\d+)?\s*\Z")
_SILENT = {"#": "'#' (Python would read the rest as a comment)", "\\": "'\\\\' (a line continuation)"}


def function_arity(name: str) -> tuple[int, int] | None:
    """(smallest, largest) number of arguments of the registered operation ``name`` (None: not one)."""
    op = registry.find(name)
    return None if op is None else op.arity


def allowed_names(functions=None) -> str:
    """The whitelist as one line of text, for error messages and docs (``functions``: the scalar functions
    the reader reads, by default every operation of the registry)."""
    functions = registry.parser_names() if functions is None else functions
    return ("functions " + ", ".join(sorted(functions)) + "; vector operations " + ", ".join(sorted(VECTOR_ARITY))
            + "; constants " + ", ".join(sorted(CONSTANT_NAMES)) + "; inf as a vector entry")


def reserved(name: str) -> bool:
    return (registry.find(name) is not None or name in VECTOR_ARITY or name in CONSTANT_NAMES
            or name == INFINITY_NAME)


def check_variable_names(variables: Iterable[str], argument: str = "variables") -> tuple[str, ...]:
    """Return ``variables`` as a tuple after checking each is a plain, free identifier."""
    names = tuple(variables)
    for name in names:
        if not isinstance(name, str) or not IDENTIFIER.match(name):
            raise ParseError(argument, str(name), "a variable name is a plain identifier such as u or h_prev")
        if name.startswith("__"):
            raise ParseError(argument, name, "dunder names are not allowed")
        if reserved(name):
            raise ParseError(argument, name, f"{name!r} is a built-in name of the whitelist and cannot be a variable")
    return names


def name_value_pairs(text: str, splits_at: Callable[[str, int], bool], refusal: Callable[[], Exception]) -> list[tuple[str, str]]:
    """``"x = 0, y = log(8, 2)"`` -> ``[("x", "0"), ("y", "log(8, 2)")]``: ``text`` cut where ``splits_at(text, i)``
    holds outside brackets, each piece read as ``name = value`` (``refusal()`` is raised for a piece that is not)."""
    pieces, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch in "([") - (ch in ")]")
        if depth == 0 and splits_at(text, i):
            pieces.append(text[start:i])
            start = i + 1
    pieces.append(text[start:])
    out = []
    for piece in pieces:
        name, eq, value = piece.partition("=")
        if not eq or not name.strip() or not value.strip():
            raise refusal()
        out.append((name.strip(), value.strip()))
    return out


def normalize(text: str, argument: str = "expression") -> str:
    """The text as Python reads it: typography translated, decimal commas made points, unsafe characters refused."""
    if not isinstance(text, str):
        raise SeqgradTypeError(argument, text, "a string holding an expression")
    source = text.translate(TYPOGRAPHY)
    if len(source) > MAX_LENGTH:
        raise ParseError(argument, text, f"at most {MAX_LENGTH} characters (got {len(source)})")
    for ch in source:
        if ch in _SILENT or ord(ch) > 127:
            shown = _SILENT.get(ch) or f"{ch!r} (U+{ord(ch):04X})"
            raise ParseError(argument, text, f"the character {shown} is not allowed")
    if ";" in source:
        source = source.replace(",", ".").replace(";", ",")
    elif _COMMA_NUMBER.match(source):
        source = source.replace(",", ".")
    return source.strip()


def parse_tree(text: str, argument: str = "expression") -> tuple[str, ast.AST]:
    """``(source, body)``: the normalized text and the body of its expression tree (nothing is run)."""
    source = normalize(text, argument)
    if not source:
        raise ParseError(argument, text, "an expression, not empty text")
    try:
        with warnings.catch_warnings():  # Python warns about e.g. '1if'; the text is refused or read, not warned about
            warnings.simplefilter("ignore", SyntaxWarning)
            tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise ParseError(argument, text, f"it is not a well-formed expression ({exc.msg})") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ParseError(argument, text, f"it is not a well-formed expression ({type(exc).__name__})") from None
    return source, tree.body


def literal_digits(literal: str) -> int:
    return sum(ch.isdigit() for ch in literal)


def is_infinity(node: ast.AST) -> int:
    """+1 for ``inf`` / ``+inf``, -1 for ``-inf``, 0 for anything else."""
    sign = 1
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        sign = -sign if isinstance(node.op, ast.USub) else sign
        node = node.operand
    return sign if isinstance(node, ast.Name) and node.id == INFINITY_NAME else 0


def is_vector_node(node: ast.AST) -> bool:
    """True for (a, b), [a, b] and calls of vector-valued operations such as softmax(...)."""
    if isinstance(node, (ast.Tuple, ast.List)):
        return True
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in VECTOR_ARITY
            and VECTOR_ARITY[node.func.id][2])


class Reader:
    """What both readers of a syntax tree share: the node dispatch, the refusals and limits, literals,
    the checks of a call and the splitting of a vector operation's arguments.

    A subclass supplies the values: :meth:`number` (an exact literal as a Fraction), :meth:`name`,
    :meth:`negate`, :meth:`power`, :meth:`chain`, :meth:`function` (a whitelisted scalar function of
    evaluated arguments), :meth:`entry` and :meth:`vector` (a vector's entries), :meth:`apply_vector`
    (a vector operation of split arguments) and :meth:`infinite` (is a value ±inf).
    """

    functions: dict = {}  # a caller's own one-argument functions (safe_parse), checked before the whitelist

    def arity(self, fname: str) -> tuple[int, int] | None:
        """(smallest, largest) number of arguments of the scalar function ``fname`` this reader reads
        (None: not one).  The certified reader reads the operations with an interval rule (the registry's
        ``interval``, an operation registered later included); safe_parse every operation."""
        op = registry.find(fname)
        return op.arity if op is not None and op.claims else None

    def function_names(self):
        return registry.claims_names()
    def __init__(self, text: str, source: str, argument: str):
        self.text, self.source, self.argument = text, source, argument

    # ------------------------------------------------------------------ messages

    def segment(self, node) -> str:
        return (ast.get_source_segment(self.source, node) if node is not None else None) or "a subexpression"

    def reads_call(self, fname: str) -> bool:
        """True when the subclass reads calls of ``fname`` itself (:meth:`own_call`), before the whitelist."""
        return False

    def own_call(self, node, fname: str, depth: int):
        raise NotImplementedError(fname)

    def declared(self) -> list[str]:
        """The names the caller declared, for the refusal message."""
        return []

    def limit(self, reason: str):
        """Refuse text that is on the whitelist but exceeds a size limit."""
        raise ParseError(self.argument, self.text, reason)

    def refuse(self, reason: str):
        """Refuse text that uses something outside the whitelist."""
        names = sorted(self.declared())
        raise ParseError(self.argument, self.text, reason + "; allowed: numbers, + - * / **, parentheses, "
                         + allowed_names(self.function_names())
                         + (", variables " + ", ".join(names) if names else ""))

    # ------------------------------------------------------------------ walking

    def build(self, node, depth: int):
        if depth > MAX_DEPTH:
            self.limit(f"the expression is nested more than {MAX_DEPTH} levels deep")
        if isinstance(node, ast.Constant):
            return self.number(self.literal(node))
        if isinstance(node, ast.Name):
            if node.id.startswith("__") or node.id.endswith("__"):
                self.refuse(f"the dunder name {node.id!r} is not allowed")
            return self.name(node.id)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.USub):
                return self.negate(self.visit(node.operand, depth + 1))
            if isinstance(node.op, ast.UAdd):
                return self.visit(node.operand, depth + 1)
            self.refuse(f"{OPERATOR_NAMES.get(type(node.op), type(node.op).__name__)} is not allowed")
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Pow):
                return self.power(node, self.visit(node.left, depth + 1), self.visit(node.right, depth + 1))
            return self.chain(node, depth)
        if isinstance(node, ast.Call):
            return self.call(node, depth)
        kind = REFUSED.get(type(node), f"{type(node).__name__} nodes")
        detail = f" ('.{node.attr}')" if isinstance(node, ast.Attribute) else ""
        self.refuse(f"{kind}{detail} is not allowed" if kind.endswith(("access", "lambda", "await", "yield"))
                    else f"{kind}{detail} are not allowed")

    def chain_steps(self, node):
        """``(first, [(op, right node, whole node), ...])`` of a chain a + b - c ... (or a * b / c ...):
        Python nests it to the left, one level per term; walked iteratively, so a long flat sum is not deep."""
        steps = []
        while isinstance(node, ast.BinOp) and not isinstance(node.op, ast.Pow):
            steps.append((node.op, node.right, node))
            node = node.left
        for op, _, _ in steps:
            if not isinstance(op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
                self.refuse(f"{OPERATOR_NAMES.get(type(op), type(op).__name__)} is not allowed")
        return node, steps[::-1]

    def literal(self, node: ast.Constant):
        """A number literal as the exact rational it spells (``0.1`` is 1/10), within the literal limits."""
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            kind = {str: "string literals", bytes: "bytes literals", complex: "complex numbers"}.get(type(value), f"{type(value).__name__} constants")
            if value is None or value is Ellipsis or isinstance(value, bool):
                kind = f"the constant {value!r}"
            self.refuse(f"{kind} are not allowed" if kind.endswith("s") else f"{kind} is not allowed")
        text = self.segment(node).replace("_", "")
        digits = literal_digits(text)
        if digits > MAX_LITERAL_DIGITS:
            self.limit(f"number literals have at most {MAX_LITERAL_DIGITS} digits (got {digits})")
        if isinstance(value, int):
            return Fraction(value)
        exact = Decimal(text)
        if not exact.is_finite() or abs(exact.adjusted()) > MAX_LITERAL_EXPONENT:
            self.limit(f"number literals have a decimal exponent within ±{MAX_LITERAL_EXPONENT}")
        return Fraction(exact)

    def call(self, node, depth: int):
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
        if self.reads_call(fname):  # a subclass's own calls (safe_parse's diff and sum with calculus=True)
            if node.keywords:
                self.refuse(f"keyword arguments to {fname}() are not allowed")
            return self.own_call(node, fname, depth)
        if self.arity(fname) is None and fname not in VECTOR_ARITY:
            self.refuse(f"calls of {fname!r} are not allowed (not a whitelisted function)")
        if node.keywords:
            self.refuse(f"keyword arguments to {fname}() are not allowed")
        if fname in VECTOR_ARITY:
            if VECTOR_ARITY[fname][2]:
                self.refuse(f"{fname}() gives a vector, which is allowed only as a whole claim side or inside a vector operation")
            return self.vector_operation(node, depth)
        least, most = self.arity(fname)
        if not least <= len(node.args) <= most:
            count = f"{least}" if least == most else f"{least} to {most}"
            self.limit(f"{fname}() takes {count} argument(s), got {len(node.args)}")
        return self.function(node, fname, [self.visit(arg, depth + 1) for arg in node.args])

    def vector(self, node, depth: int) -> tuple:
        """A vector: (a, b, ...) / [a, b, ...], or a vector-valued operation such as softmax(...)."""
        if depth > MAX_DEPTH:
            self.limit(f"the expression is nested more than {MAX_DEPTH} levels deep")
        if isinstance(node, (ast.Tuple, ast.List)):
            if not 1 <= len(node.elts) <= MAX_VECTOR:
                self.limit(f"a vector has 1 to {MAX_VECTOR} entries (got {len(node.elts)})")
            return tuple(self.entry(e, depth + 1) for e in node.elts)
        if is_vector_node(node):
            if node.keywords:
                self.refuse(f"keyword arguments to {node.func.id}() are not allowed")
            return self.vector_operation(node, depth)
        self.refuse(f"{self.segment(node)!r} is not a vector; write a vector as (a, b, c)")

    def vector_operation(self, node, depth: int):
        """A vector operation: its arguments read and split into vectors and optional scalars, then applied."""
        fname = node.func.id
        n_vectors, n_optional, _ = VECTOR_ARITY[fname]
        args = node.args
        if n_vectors == 1 and args and not is_vector_node(args[0]):  # softmax(1.2, 0.5, 2.0): the entries directly
            if not 1 <= len(args) <= MAX_VECTOR:
                self.limit(f"a vector has 1 to {MAX_VECTOR} entries (got {len(args)})")
            vectors, scalars = [tuple(self.entry(a, depth + 1) for a in args)], []
        else:
            if not n_vectors <= len(args) <= n_vectors + n_optional:
                shape = ", ".join(["(a, b, ...)"] * n_vectors + ["eps"] * n_optional)
                self.limit(f"{fname}() takes {shape}, got {len(args)} argument(s)")
            vectors = [self.vector(a, depth + 1) for a in args[:n_vectors]]
            scalars = [self.visit(a, depth + 1) for a in args[n_vectors:]]
        if fname not in ACCEPTS_INFINITY and any(self.infinite(x) for v in vectors for x in v):
            self.refuse(f"{fname}() of a vector with an infinite entry is not allowed: inf is allowed only in "
                        + ", ".join(ACCEPTS_INFINITY))
        if n_vectors == 2 and len(vectors[0]) != len(vectors[1]):
            self.limit(f"{fname}() needs two vectors of the same length (got {len(vectors[0])} and {len(vectors[1])})")
        return self.apply_vector(node, fname, vectors, scalars)
