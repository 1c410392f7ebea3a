r"""Matrix and vector expressions from user text, at symbolic size: ``x.T*A*x``, ``trace(A*X)``, ``softmax(W*x)``.

A whitelist walk over Python's :mod:`ast` (the text is read by :func:`derive.whitelist.parse_tree`, which runs
nothing; there is no ``eval`` or ``sympify``).  Names are declared: a name in ``shapes`` is a matrix
(``"A:n,m"``) or a column vector (``"x:n"``, i.e. n x 1; ``"r:1,n"`` is a row), with sizes that are positive
integer symbols (or integers); a name in ``variables`` is a real scalar.  What the text may hold:

* ``+ -`` of equal shapes; ``*`` is the matrix product (a scalar times a matrix scales it); ``/`` by a scalar;
  ``**`` of scalars, and ``M**-1`` for the inverse; unary ``-``;
* ``A.T`` and ``transpose(A)``; ``trace det inv diag outer dot hadamard``; ``diag(v)`` of a vector is the
  diagonal matrix, ``diag(X)`` of a square matrix the column of its diagonal;
* ``sum(X)`` (every entry), ``sum(X, 0)`` (column sums, a row), ``sum(X, 1)`` (row sums, a column), ``mean``
  likewise; ``norm(x)`` (Euclidean; Frobenius for a matrix);
* ``softmax(S)``, ``layernorm(X[, eps])`` and ``rmsnorm(X[, eps])`` over every row of a matrix (over the entries of a column vector);
* the scalar functions the parser knows (:func:`scalar_functions`: ``exp``, ``log``, ``tanh``, ``sigmoid`` ...),
  entrywise on a matrix; the constants ``pi``, ``E``;
* with ``derivative=`` (``verify`` passes :func:`derive.matcalc.derivative_of`), ``diff(f, X)``: the derivative
  ``derivative(f, X)``.

A product whose shape is 1 x 1 (``x.T*A*x``, ``dot(x, y)``) is read as the scalar it holds
(:class:`derive.rules.AsScalar`), so it can scale a matrix or enter a scalar function.

>>> e = parse_matrix("x.T*A*x", shapes="A:n,n x:n")
>>> e, type(e).__name__
(x.T*A*x, 'AsScalar')
>>> parse_matrix("trace(A*B)", shapes="A:n,m B:m,n")
Trace(A*B)
>>> parse_matrix("A*x", shapes="A:n,m x:n")
Traceback (most recent call last):
...
seqgrad.derive.matrix_text.ShapeMismatch: expression='A*x' is not allowed: compatible shapes in 'A*x': A is n x m, x is n x 1 (the product needs m = n)
"""

from __future__ import annotations

import ast
from typing import Callable, Iterable, Mapping

import sympy as sp

from seqgrad.errors import ParseError, SeqgradValueError

from .elementwise import Elementwise
from .rules import AsScalar, Diag, Normalize, RMSNormalize, RowSoftmax
from . import safe_parse
from .safe_parse import CONSTANTS
from .whitelist import IDENTIFIER, Reader, check_variable_names, parse_tree

__all__ = ["parse_shapes", "parse_matrix", "Declared", "ShapeMismatch", "MATRIX_OPERATIONS", "is_matrix"]

#: the matrix operations by name: name -> (least, most arguments, what it is)
MATRIX_OPERATIONS: dict[str, tuple[int, int, str]] = {
    "transpose": (1, 1, "transpose(A) = A.T"),
    "trace": (1, 1, "trace of a square matrix"),
    "det": (1, 1, "determinant of a square matrix"),
    "inv": (1, 1, "inverse of a square matrix"),
    "diag": (1, 1, "diag(v): diagonal matrix of a vector; diag(X): the column of X's diagonal"),
    "outer": (2, 2, "outer(x, y) = x y^T of two vectors"),
    "dot": (2, 2, "dot(x, y) = x^T y of two vectors of one length"),
    "hadamard": (2, 2, "hadamard(A, B): the entrywise product of equal shapes"),
    "sum": (1, 2, "sum(X): every entry; sum(X, 0): column sums; sum(X, 1): row sums"),
    "mean": (1, 2, "mean(X), mean(X, 0), mean(X, 1): as sum, divided by the count"),
    "norm": (1, 1, "Euclidean norm of a vector, Frobenius norm of a matrix"),
    "softmax": (1, 1, "softmax over every row of a matrix (over the entries of a column vector)"),
    "layernorm": (1, 2, "layernorm(X[, eps]): (x - mean)/sqrt(var + eps) over every row (population variance)"),
    "rmsnorm": (1, 2, "rmsnorm(X[, eps]): x/sqrt(mean(x^2) + eps) over every row (RMSNorm: no mean subtracted)"),
}


class ShapeMismatch(ParseError):
    """The shapes of an expression's operands do not fit (a product, a sum, a square-only operation)."""


def scalar_functions() -> dict:
    """The scalar functions the text may call, name -> (SymPy constructor, least, most arguments): the parser's
    own table (:func:`derive.safe_parse.functions`, the operation registry, where it has one)."""
    table = getattr(safe_parse, "functions", None)
    return table() if callable(table) else safe_parse.FUNCTIONS


#: layernorm()'s eps when none is given: torch.nn.LayerNorm's 1e-5 (inside the square root)
LAYERNORM_EPS = sp.Rational(1, 10**5)


def is_matrix(e) -> bool:
    return bool(getattr(e, "is_Matrix", False))


def _size(text: str, sizes: dict, argument: str):
    text = text.strip()
    if text.isdigit():
        if int(text) < 1:
            raise ParseError(argument, text, "a size is a positive integer or a name such as n")
        return sp.Integer(int(text))
    if not IDENTIFIER.match(text) or text.startswith("__"):
        raise ParseError(argument, text, "a size is a positive integer or a plain name such as n")
    return sizes.setdefault(text, sp.Symbol(text, integer=True, positive=True))


class Declared:
    """The declared names: matrices and vectors (``shapes``), real scalars (``variables``), and the sizes."""

    def __init__(self, shapes: str | Mapping | None = None, variables: Iterable[str] | str | None = None):
        self.sizes: dict[str, sp.Symbol] = {}
        self.matrices: dict[str, sp.MatrixSymbol] = {}
        if isinstance(shapes, Mapping):
            items = [(k, v if isinstance(v, str) else ",".join(map(str, v))) for k, v in shapes.items()]
        else:
            text = (shapes or "").replace(";", " ")
            items = []
            for piece in text.split():
                name, colon, dims = piece.partition(":")
                if not colon or not dims:
                    raise ParseError("shape", piece, 'NAME:n,m for a matrix or NAME:n for a column vector, e.g. "A:n,n x:n"')
                items.append((name, dims))
        for name, dims in items:
            check_variable_names([name], "shape")
            if name in self.matrices:
                raise ParseError("shape", name, "each name declared once")
            parts = [p for p in dims.split(",")]
            if len(parts) not in (1, 2) or not all(p.strip() for p in parts):
                raise ParseError("shape", f"{name}:{dims}", "one size (a column vector) or two (rows, columns)")
            rows = _size(parts[0], self.sizes, "shape")
            cols = _size(parts[1], self.sizes, "shape") if len(parts) == 2 else sp.Integer(1)
            self.matrices[name] = sp.MatrixSymbol(name, rows, cols)
        if isinstance(variables, str):
            variables = [v for v in variables.replace(",", " ").split() if v]
        self.scalars = {n: sp.Symbol(n, real=True) for n in check_variable_names(list(variables or ()))}
        clash = (set(self.scalars) | set(self.sizes)) & set(self.matrices)
        clash |= set(self.scalars) & set(self.sizes)
        if clash:
            raise ParseError("shape", ", ".join(sorted(clash)), "a name is a matrix, a scalar variable or a size, not two of them")

    def names(self) -> list[str]:
        return [*self.matrices, *self.scalars, *self.sizes]

    def lookup(self, name: str):
        for table in (self.matrices, self.scalars, self.sizes):
            if name in table:
                return table[name]
        return None


def parse_shapes(shapes) -> dict:
    """``"A:n,n x:n"`` -> ``{"A": MatrixSymbol A (n x n), "x": MatrixSymbol x (n x 1)}``."""
    return dict(Declared(shapes).matrices)


def _shape_text(e) -> str:
    r, c = e.shape
    return f"{sp.sstr(r)} x {sp.sstr(c)}"


class _MatrixReader(Reader):
    """The walk: numbers through :meth:`Reader.literal` (exact), everything else below."""

    def __init__(self, text, source, argument, declared: Declared, derivative: Callable | None):
        super().__init__(text, source, argument)
        self.d = declared
        self.derivative_of = derivative

    def declared(self):
        return self.d.names()

    def refuse(self, reason: str):
        raise ParseError(self.argument, self.text, reason + "; allowed: numbers, + - * / **, parentheses, A.T, "
                         + ", ".join(MATRIX_OPERATIONS) + ", the scalar functions " + ", ".join(sorted(scalar_functions()))
                         + (", diff(f, X)" if self.derivative_of else "") + "; declared: " + (", ".join(self.d.names()) or "none"))

    def mismatch(self, node, message: str, *operands):
        shapes = ", ".join(f"{self.segment(o) if isinstance(o, ast.AST) else o} is {s}" for o, s in operands)
        raise ShapeMismatch(self.argument, self.text, f"compatible shapes in {self.segment(node)!r}: {shapes}{message}")

    # ------------------------------------------------------------------ nodes

    def visit(self, node, depth: int = 0):
        if depth > 60:
            self.limit("the expression is nested more than 60 levels deep")
        if isinstance(node, ast.Constant):
            f = self.literal(node)
            return sp.Rational(f.numerator, f.denominator)
        if isinstance(node, ast.Name):
            value = self.d.lookup(node.id)
            if value is not None:
                return value
            if node.id in CONSTANTS:
                return CONSTANTS[node.id]
            if node.id in scalar_functions() or node.id in MATRIX_OPERATIONS:
                self.refuse(f"the function {node.id!r} must be called, e.g. {node.id}(X)")
            raise ParseError(self.argument, self.text, f"the name {node.id!r} is not declared: declare matrices and vectors "
                             'with shapes ("A:n,n x:n") and scalars with variables; declared: ' + (", ".join(self.d.names()) or "none"))
        if isinstance(node, ast.Attribute):
            if node.attr != "T":
                self.refuse(f"attribute access ('.{node.attr}') is not allowed (only .T, the transpose)")
            return self.transpose(node.value, self.visit(node.value, depth + 1))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            x = self.visit(node.operand, depth + 1)
            return x if isinstance(node.op, ast.UAdd) else (sp.MatMul(-1, x) if is_matrix(x) else -x)
        if isinstance(node, ast.BinOp):
            return self.binary(node, depth)
        if isinstance(node, ast.Call):
            return self.call(node, depth)
        self.refuse(f"{type(node).__name__} nodes are not allowed")

    def transpose(self, node, x):
        return x.T if is_matrix(x) else x

    def binary(self, node, depth):
        op = type(node.op)
        if op not in (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow):
            self.refuse(f"the operator {type(node.op).__name__} is not allowed")
        a, b = self.visit(node.left, depth + 1), self.visit(node.right, depth + 1)
        if op in (ast.Add, ast.Sub):
            if is_matrix(a) != is_matrix(b) or (is_matrix(a) and a.shape != b.shape):
                self.mismatch(node, " (a sum needs equal shapes; a scalar is not added to a matrix)",
                              (node.left, _shape_text(a) if is_matrix(a) else "a scalar"),
                              (node.right, _shape_text(b) if is_matrix(b) else "a scalar"))
            if is_matrix(a):
                return _flat(sp.MatAdd, a, b if op is ast.Add else sp.MatMul(-1, b))
            return a + b if op is ast.Add else a - b
        if op is ast.Mult:
            if is_matrix(a) and is_matrix(b):
                if a.shape[1] != b.shape[0]:
                    self.mismatch(node, f" (the product needs {sp.sstr(a.shape[1])} = {sp.sstr(b.shape[0])})",
                                  (node.left, _shape_text(a)), (node.right, _shape_text(b)))
                return _scalar_if_1x1(_flat(sp.MatMul, a, b))
            if is_matrix(a) or is_matrix(b):
                return _flat(sp.MatMul, b, a) if is_matrix(a) else _flat(sp.MatMul, a, b)
            return a * b
        if op is ast.Div:
            if is_matrix(b):
                self.refuse(f"division by the matrix {self.segment(node.right)!r} is not allowed (write inv(...))")
            if b == 0:
                self.limit("division by zero")
            return sp.MatMul(1 / b, a) if is_matrix(a) else a / b
        if is_matrix(b):
            self.refuse(f"a matrix exponent {self.segment(node.right)!r} is not allowed")
        if is_matrix(a):
            if b == -1:
                self.square(node.left, a, "the inverse")
                return sp.Inverse(a)
            self.refuse(f"a matrix power {self.segment(node)!r} is not allowed: write A*A (matrix product), "
                        "hadamard(A, A) (entrywise) or A**-1 (the inverse)")
        if b.is_number and abs(b) > 1000:
            self.limit("exponents have modulus at most 1000")
        return a ** b

    def square(self, node, x, what: str) -> bool:
        if not is_matrix(x) or x.shape[0] != x.shape[1]:
            self.mismatch(node, f" ({what} needs a square matrix)", (node, _shape_text(x) if is_matrix(x) else "a scalar"))
        return True

    def vector_length(self, node, x, fname: str):
        if not is_matrix(x) or (x.shape[1] != 1 and x.shape[0] != 1):
            self.mismatch(node, f" ({fname}() needs a vector: a column n x 1 or a row 1 x n)",
                          (node, _shape_text(x) if is_matrix(x) else "a scalar"))
        return x if x.shape[1] == 1 else x.T  # as a column

    def call(self, node, depth):
        if not isinstance(node.func, ast.Name):
            self.refuse("only calls of whitelisted functions by name are allowed")
        fname = node.func.id
        if node.keywords:
            self.refuse(f"keyword arguments to {fname}() are not allowed")
        if self.derivative_of and fname == "diff":
            return self.derivative(node, depth)
        if fname in MATRIX_OPERATIONS:
            least, most, _ = MATRIX_OPERATIONS[fname]
            if not least <= len(node.args) <= most:
                self.limit(f"{fname}() takes {least if least == most else f'{least} or {most}'} argument(s), got {len(node.args)}")
            args = [self.visit(a, depth + 1) for a in node.args]
            return self.operation(node, fname, args)
        functions = scalar_functions()
        if fname in functions:
            make, least, most = functions[fname]
            if not least <= len(node.args) <= most:
                self.limit(f"{fname}() takes {least} to {most} argument(s), got {len(node.args)}")
            args = [self.visit(a, depth + 1) for a in node.args]
            if len(args) == 1 and is_matrix(args[0]):
                u = sp.Dummy("u", real=True)
                return Elementwise(sp.Lambda(u, make(u)), args[0])
            if any(is_matrix(a) for a in args):
                self.refuse(f"{fname}() of a matrix takes one argument (applied entrywise)")
            return make(*args)
        self.refuse(f"calls of {fname!r} are not allowed (not a whitelisted function or matrix operation)")

    def operation(self, node, fname, args):
        x, where = args[0], node.args[0]
        if fname == "transpose":
            return self.transpose(where, x)
        if fname in ("trace", "det", "inv"):
            self.square(where, x, f"{fname}()")
            return {"trace": sp.Trace, "det": sp.Determinant, "inv": sp.Inverse}[fname](x)
        if fname == "diag":
            if is_matrix(x) and x.shape[0] == x.shape[1] and x.shape != (1, 1) and x.shape[1] != 1:
                return sp.DiagonalOf(x)
            v = self.vector_length(where, x, "diag")
            return Diag(v)
        if fname in ("outer", "dot"):
            u, v = self.vector_length(where, x, fname), self.vector_length(node.args[1], args[1], fname)
            if fname == "dot" and u.shape != v.shape:
                self.mismatch(node, " (dot() needs two vectors of one length)", (where, _shape_text(u)), (node.args[1], _shape_text(v)))
            return sp.MatMul(u, v.T) if fname == "outer" else _scalar_if_1x1(sp.MatMul(u.T, v))
        if fname == "hadamard":
            y = args[1]
            if not (is_matrix(x) and is_matrix(y) and x.shape == y.shape):
                self.mismatch(node, " (hadamard() needs two matrices of one shape)",
                              (where, _shape_text(x) if is_matrix(x) else "a scalar"),
                              (node.args[1], _shape_text(y) if is_matrix(y) else "a scalar"))
            return sp.HadamardProduct(x, y)
        if fname in ("sum", "mean"):
            return self.total(node, fname, x, args[1:])
        if fname == "norm":
            if not is_matrix(x):
                return sp.Abs(x)
            return sp.sqrt(_scalar_if_1x1(sp.MatMul(x.T, x)) if x.shape[1] == 1 else sp.Trace(sp.MatMul(x.T, x)))
        if not is_matrix(x):
            self.mismatch(node, f" ({fname}() needs a matrix or a vector)", (where, "a scalar"))
        if fname == "softmax":
            return RowSoftmax(x.T).T if x.shape[1] == 1 and x.shape[0] != 1 else RowSoftmax(x)
        eps = args[1] if len(args) > 1 else LAYERNORM_EPS
        if is_matrix(eps) or (eps.is_number and not eps > 0):
            self.refuse(f"the eps of {fname}() is a positive scalar")
        node = RMSNormalize if fname == "rmsnorm" else Normalize
        return node(x.T, eps).T if x.shape[1] == 1 and x.shape[0] != 1 else node(x, eps)

    def total(self, node, fname, x, axis):
        if not is_matrix(x):
            self.mismatch(node, f" ({fname}() needs a matrix or a vector)", (node.args[0], "a scalar"))
        rows, cols = x.shape
        if axis:
            a = axis[0]
            if a not in (0, 1):
                self.refuse(f"the axis of {fname}() is 0 (column sums) or 1 (row sums)")
            out = sp.MatMul(sp.OneMatrix(1, rows), x) if a == 0 else sp.MatMul(x, sp.OneMatrix(cols, 1))
            count = rows if a == 0 else cols
            out = _scalar_if_1x1(out)
        else:
            out, count = _scalar_if_1x1(sp.MatMul(sp.OneMatrix(1, rows), x, sp.OneMatrix(cols, 1))), rows * cols
        if fname == "sum":
            return out
        return out / count if not is_matrix(out) else sp.MatMul(1 / count, out)

    def derivative(self, node, depth):
        if len(node.args) != 2 or not isinstance(node.args[1], ast.Name):
            self.limit("diff() takes an expression and a declared name: diff(f, X)")
        wrt = self.d.lookup(node.args[1].id)
        if wrt is None or not isinstance(wrt, (sp.MatrixSymbol, sp.Symbol)) or node.args[1].id in self.d.sizes:
            self.limit(f"diff() differentiates with respect to a declared matrix, vector or scalar, not {node.args[1].id!r}")
        return self.derivative_of(self.visit(node.args[0], depth + 1), wrt)


def _flat(kind, *terms):
    """``kind(*terms)`` with nested sums (products) of the same kind merged: ``x.T*A*x``, not ``(x.T*A)*x``."""
    args = []
    for t in terms:
        args.extend(t.args if isinstance(t, kind) else [t])
    return kind(*args)


def _scalar_if_1x1(e):
    return AsScalar(e) if is_matrix(e) and tuple(e.shape) == (1, 1) else e


def parse_matrix(text: str, shapes=None, variables=None, *, argument: str = "expression",
                 derivative: Callable | None = None, declared: Declared | None = None):
    """Read ``text`` into a SymPy matrix expression (or a scalar one) over the declared names; see the module docstring.
    ``derivative(f, X)``: what ``diff(f, X)`` in the text means (None: ``diff`` is not read)."""
    d = declared if declared is not None else Declared(shapes, variables)
    source, body = parse_tree(text, argument)
    reader = _MatrixReader(text, source, argument, d, derivative)
    try:
        return reader.visit(body, 0)
    except RecursionError:
        raise ParseError(argument, text, "the expression is nested too deeply") from None
    except (ValueError, TypeError) as exc:  # a SymPy refusal of a combination the checks above let through
        if isinstance(exc, SeqgradValueError):
            raise
        raise ParseError(argument, text, f"it does not form a valid matrix expression ({exc})") from None
