"""What user text may contain, and how it is read: the whitelist and limits shared by every reader.

Two readers walk the same syntax tree: :mod:`derive.safe_parse` builds SymPy
expressions, :mod:`derive.certified` evaluates numbers with certified bounds
(for :mod:`derive.claims`, without importing SymPy).  Both take their names,
arities, limits and refusal messages from here, and both read the text through
:func:`parse_tree`, so a text means the same thing to each.  This module
imports only the standard library.

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
from typing import Iterable

from seqgrad.errors import ParseError, SeqgradTypeError

MAX_LENGTH = 1000
MAX_DEPTH = 60
MAX_LITERAL_DIGITS = 60
MAX_LITERAL_EXPONENT = 300
MAX_EXPONENT = 1000
MAX_RESULT_DIGITS = 10_000
MAX_MAGNITUDE = 1000  # every numeric subexpression lies within 10**±MAX_MAGNITUDE (or is 0)
MAX_VECTOR = 64  # entries of one vector

#: scalar functions: name -> (smallest, largest number of arguments)
FUNCTION_ARITY: dict[str, tuple[int, int]] = {
    "sin": (1, 1), "cos": (1, 1), "tan": (1, 1), "asin": (1, 1), "acos": (1, 1), "atan": (1, 1),
    "sinh": (1, 1), "cosh": (1, 1), "tanh": (1, 1), "exp": (1, 1),
    "log": (1, 2),  # natural logarithm; log(x, b) in base b
    "sqrt": (1, 1), "sigmoid": (1, 1), "abs": (1, 1), "floor": (1, 1),
}

#: vector operations: name -> (number of vector arguments, number of optional scalar arguments
#: after them, True if the result is a vector).  A vector is written (a, b, c) or [a, b, c]; an
#: operation of one vector also takes its entries directly: softmax(1.2, 0.5, 2.0), max(1, 7, 3).
VECTOR_ARITY: dict[str, tuple[int, int, bool]] = {
    "softmax": (1, 0, True),      # exp(v_i) / sum_j exp(v_j); -inf entries (masked scores) get weight 0
    "layernorm": (1, 1, True),    # (v_i - mean) / sqrt(var + eps), population variance, eps = 0 unless given
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


def allowed_names() -> str:
    """The whitelist as one line of text, for error messages and docs."""
    return ("functions " + ", ".join(sorted(FUNCTION_ARITY)) + "; vector operations " + ", ".join(sorted(VECTOR_ARITY))
            + "; constants " + ", ".join(sorted(CONSTANT_NAMES)) + "; inf as a vector entry")


def reserved(name: str) -> bool:
    return name in FUNCTION_ARITY or name in VECTOR_ARITY or name in CONSTANT_NAMES or name == INFINITY_NAME


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
