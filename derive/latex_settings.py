"""Notation settings for LaTeX output, passed explicitly (SymPy's printer style).

A :class:`Notation` says how symbols look: which names to rename, which
symbols stand for whole vectors or matrices (set in bold, as the course text
does), and whether numbers use a decimal comma (Russian-language notes).
It builds a :class:`NotationPrinter`, a subclass of SymPy's ``LatexPrinter``;
every formula in seqgrad's LaTeX goes through it, never through hand-built
math strings.

>>> import sympy as sp
>>> from seqgrad.derive.latex_settings import Notation
>>> h, W = sp.Symbol("h_t"), sp.Symbol("W_h")
>>> Notation(vectors={"h", "W"}).latex(h * W)
'\\\\mathbf{W}_{h} \\\\mathbf{h}_{t}'
>>> Notation(vectors={"h", "W"}, bold=False).latex(h * W)
'W_{h} h_{t}'
>>> Notation(decimal_comma=True).latex(sp.Float(0.25) * sp.Symbol("x"))
'0{,}25 x'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Iterable, Mapping

import sympy as sp
from sympy.core.function import AppliedUndef
from sympy.printing.conventions import split_super_sub
from sympy.printing.latex import LatexPrinter, translate
from sympy.printing.precedence import PRECEDENCE, precedence_traditional
from sympy.simplify import fraction

from seqgrad.errors import SeqgradTypeError, SeqgradValueError

from .sequence import index_order
from .sequence import base_parts
from .term_order import is_negative, negated, textbook_order

# The course text's own glyphs for a few names (keys are base names: indices are kept).
TEXTBOOK_LETTERS: Mapping[str, str] = MappingProxyType({
    "yhat": r"\widehat{y}",
    "ctilde": r"\widetilde{c}",
    "htilde": r"\widetilde{h}",
    "L": r"\mathcal{L}",
    "pos": r"\mathrm{pos}",
})

#: Two-letter subscripts that are words (abbreviations), set upright as every longer word (:func:`upright_words`):
#: ``d_ff`` (feed-forward), ``H_in`` (input); a two-letter subscript is otherwise a pair of indices (``w_hn``).
WORD_SUBSCRIPTS = frozenset({"ff", "in"})

GREEK = {"alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "iota", "kappa",
          "lambda", "mu", "nu", "xi", "pi", "rho", "sigma", "tau", "upsilon", "phi", "varphi", "chi", "psi", "omega"}


def _names(argument: str, value: object) -> frozenset[str]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise SeqgradTypeError(argument, value, "a collection of symbol names, e.g. {'h', 'W_x'}")
    names = frozenset(value)
    if not all(isinstance(n, str) and n for n in names):
        raise SeqgradTypeError(argument, value, "a collection of non-empty strings")
    return names


def _mapping(argument: str, value: object) -> Mapping[str, str]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and k and isinstance(v, str) for k, v in value.items()):
        raise SeqgradTypeError(argument, value, "a mapping from symbol names to LaTeX strings")
    for name, tex in value.items():
        check_math(f"{argument}[{name!r}]", tex)
    return MappingProxyType(dict(value))


_ENV = re.compile(r"\\(begin|end)\{([^{}]*)\}")


def check_math(argument: str, tex: str) -> str:
    """``tex`` if it is a well-formed piece of math-mode LaTeX: braces balanced, every ``\\begin``
    closed by its ``\\end``, no ``$``, ``%``, ``#`` or ``&`` (they would end the formula, comment out the
    rest of the line, or break a table).  Anything else is refused before it reaches a document."""
    if not isinstance(tex, str) or not tex.strip():
        raise SeqgradValueError(argument, tex, "a non-empty piece of LaTeX, e.g. 'W_{hh}'")
    unescaped = re.sub(r"\\.", "", tex)
    for ch in "$%#&":
        if ch in unescaped:
            raise SeqgradValueError(argument, tex, f"math-mode LaTeX without an unescaped {ch!r}")
    depth = 0
    for ch in unescaped:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            break
    if depth != 0:
        raise SeqgradValueError(argument, tex, "LaTeX with balanced braces { } (e.g. 'W_{hh}')")
    stack = []
    for kind, env in _ENV.findall(tex):
        if kind == "begin":
            stack.append(env)
        elif not stack or stack.pop() != env:
            raise SeqgradValueError(argument, tex, "LaTeX whose \\begin{...} and \\end{...} match")
    if stack:
        raise SeqgradValueError(argument, tex, "LaTeX whose \\begin{...} and \\end{...} match")
    return tex


@dataclass(frozen=True)
class Notation:
    """How formulas are printed.

    ``symbol_names``: exact symbol name -> LaTeX (``{"w_h": r"w_{hh}"}``).
    ``letters``: base name -> LaTeX, keeping sub- and superscripts (``{"g": r"\\delta"}``
    prints ``g_t^h`` as ``\\delta^{h}_{t}``), on top of the text's ``\\widehat{y}``,
    ``\\widetilde{c}``, ``\\widetilde{h}``, ``\\mathcal{L}`` (give ``{"L": "L"}`` to undo one).
    ``vectors``: names (exact, or base letters) of symbols that stand for whole
    vectors or matrices; with ``bold=True`` they, and every ``MatrixSymbol``, are bold.
    ``decimal_comma``: print ``0{,}25`` instead of ``0.25``.
    ``greek_indices``: let SymPy turn index names into Greek letters (``w_xi`` as
    ``w_{\\xi}``); off by default, since the text's indices are Latin (``w_{xi}``: x to i).
    ``show_zero_state``: print the zero initial state (``h_{-1} = 0`` and every term it
    multiplies); off by default: the text drops it (``z_0 = w_x x_0``).
    ``word_subscripts``: two-letter sub- and superscripts that are words, set upright (``d_{\\mathrm{ff}}``) as
    every word of three or more letters (``d_{\\mathrm{model}}``, ``T_{\\mathrm{src}}``) and every abbreviation in
    capitals (``J_{\\mathrm{LN}}``) is; any other two-letter index is a pair of indices, italic (``w_{hn}``).
    """

    symbol_names: Mapping[str, str] = field(default_factory=dict, hash=False)
    letters: Mapping[str, str] = field(default_factory=lambda: dict(TEXTBOOK_LETTERS), hash=False)
    vectors: frozenset[str] = frozenset()
    bold: bool = True
    decimal_comma: bool = False
    greek_indices: bool = False
    show_zero_state: bool = False
    word_subscripts: frozenset[str] = WORD_SUBSCRIPTS

    def __post_init__(self):
        object.__setattr__(self, "symbol_names", _mapping("symbol_names", self.symbol_names))
        object.__setattr__(self, "letters", MappingProxyType({**TEXTBOOK_LETTERS, **_mapping("letters", self.letters)}))
        object.__setattr__(self, "vectors", _names("vectors", self.vectors))
        object.__setattr__(self, "word_subscripts", _names("word_subscripts", self.word_subscripts))
        for flag in ("bold", "decimal_comma", "greek_indices", "show_zero_state"):
            if not isinstance(getattr(self, flag), bool):
                raise SeqgradTypeError(flag, getattr(self, flag), "True or False")
        object.__setattr__(self, "_used", set())  # the renames a printer has applied (see unused_renames)
        object.__setattr__(self, "_printed", {})  # printed form -> the symbol names printed so (see rename_collisions)

    def unused_renames(self) -> list[str]:
        """The names of ``symbol_names`` and the letters of ``letters`` (beyond the text's own) that no
        formula printed with this notation has used so far: a rename of a name that does not occur."""
        wanted = set(self.symbol_names) | {b for b, tex in self.letters.items() if TEXTBOOK_LETTERS.get(b) != tex}
        return sorted(wanted - self._used)

    def printed(self, name: str, out: str) -> str:
        """Record that a printer wrote the symbol ``name`` as ``out`` (for :meth:`rename_collisions`); return ``out``."""
        key = re.sub(r"([_^])\{([^{}\s])\}", r"\1\2", re.sub(r"\s+", "", out))  # w_{x} and w_x read the same
        self._printed.setdefault(key, set()).add(name)
        return out

    def rename_collisions(self) -> list[tuple[str, list[str]]]:
        """Each printed form that a rename gave to two or more symbols (``W_Q`` renamed ``V`` beside the symbol ``V``),
        with their names: a formula in which two quantities read the same."""
        letters = {b for b, tex in self.letters.items() if TEXTBOOK_LETTERS.get(b) != tex}
        renamed = lambda name: name in self.symbol_names or re.match(r"[^_^{]*", name).group(0) in letters
        return [(out, sorted(names)) for out, names in self._printed.items() if len(names) > 1 and any(map(renamed, names))]

    def __reduce__(self):
        """Pickle as plain settings (worker processes build document sections with a copy)."""
        return (Notation, (dict(self.symbol_names), dict(self.letters), self.vectors, self.bold, self.decimal_comma,
                           self.greek_indices, self.show_zero_state, self.word_subscripts))

    def replace(self, **changes) -> "Notation":
        """A copy with some settings changed."""
        return replace(self, **changes)

    def with_vectors(self, names: Iterable[str]) -> "Notation":
        """A copy in which ``names`` also denote vectors or matrices."""
        return replace(self, vectors=self.vectors | _names("names", names))

    def printer(self) -> "NotationPrinter":
        return NotationPrinter(self)

    def latex(self, expr) -> str:
        """LaTeX for a SymPy expression (or anything ``sympify``-free SymPy can print)."""
        return self.printer().doprint(expr)

    def number(self, text: str) -> str:
        """A decimal number already written as text (``"0.25"``), with this notation's separator."""
        return text.replace(".", "{,}") if self.decimal_comma else text


#: The name of a block program's adjoint ``dX`` (``dW_Q``, ``dgamma``, ``dxhat``): ``d`` and the quantity's name.
_ADJOINT = re.compile(r"d((?:[A-Z]|gamma|beta|xhat|mu|sigma|b_)\w*'*(?:\^\[\w+\]\w*)?)")  # db_1 of a bias, dH' of a block's
# H', dW_Q^[i] of head i's map

#: Functions set as an operator name (``\\tanh``) applied to their argument: :meth:`NotationPrinter._print_Function`.
OPERATOR_FUNCTIONS = frozenset({"sin", "cos", "tan", "tanh", "sinh", "cosh", "exp", "log", "ln"})

_TALL = ("\\frac", "\\sum", "\\prod", "\\begin", "\\left", "\\Bigl", "\\sqrt")
_DOUBLED = re.compile(r"\(\(([^()]*)\)\)")
_LEFT_RIGHT = re.compile(r"\\left\(((?:(?!\\left\(|\\right\)).)*)\\right\)", re.S)
_APPLIED = re.compile(r"(\\[A-Za-z]+|\\operatorname\{[^{}]*\}|[A-Za-z]|\})(\^\{[^{}]*\})?(\(|\\left\()")


def textbook_form(tex: str) -> str:
    r"""Printed LaTeX in the textbook's form: a short argument or bracketed term in plain brackets
    (``\sigma(z_t)``, ``(1 - u_t)``: ``\left(``/``\right)`` only round a fraction, a sum or another
    tall piece), and a function's name joined to its bracket (``\tanh(z)``, not ``\tanh (z)``: TeX puts a thin
    space between an operator and ``\left(``, which ``\mathopen{}`` removes).

    >>> textbook_form(r"\tanh\left(z_{t}\right) \left(1 - \frac{1}{2}\right)")
    '\\tanh(z_{t}) \\left(1 - \\frac{1}{2}\\right)'
    >>> textbook_form(r"\sigma\left(\frac{a}{b}\right)")
    '\\sigma\\mathopen{}\\left(\\frac{a}{b}\\right)'
    """
    def plain(m):
        inner = m.group(1)
        if any(t in inner for t in _TALL):
            return "\\left\u0001" + inner + "\\right\u0002"
        return "(" + inner.strip() + ")"

    while True:
        new = _LEFT_RIGHT.sub(plain, tex)
        if new == tex:
            break
        tex = new
    tex = tex.replace("\\left\u0001", "\\left(").replace("\\right\u0002", "\\right)")
    tex = _DOUBLED.sub(r"(\1)", tex)  # diag((1 - h)): one pair of brackets round an argument
    return _APPLIED.sub(lambda m: m.group(1) + (m.group(2) or "") + ("\\mathopen{}\\left(" if m.group(3) != "(" else "("), tex)


DEFAULT = Notation()
RUSSIAN = Notation(decimal_comma=True)


class NotationPrinter(LatexPrinter):
    """``sympy.printing.latex.LatexPrinter`` with seqgrad's :class:`Notation`."""

    printmethod = "_latex"

    def __init__(self, notation: Notation | None = None, **settings):
        notation = DEFAULT if notation is None else notation
        if not isinstance(notation, Notation):
            raise SeqgradTypeError("notation", notation, "a derive.latex_settings.Notation")
        self.notation = notation
        settings.setdefault("decimal_separator", "comma" if notation.decimal_comma else "period")
        settings.setdefault("mat_symbol_style", "bold" if notation.bold else "plain")
        settings.setdefault("order", "none")  # the arguments are put in the text's order by doprint
        settings.setdefault("diff_operator", "rd")  # an upright d, as the adjoints' dX: the italic d is the model width
        super().__init__(settings)

    def doprint(self, expr):
        """LaTeX of ``expr`` with its sums and products in the text's order (:mod:`derive.term_order`), in the
        textbook's form (:func:`textbook_form`: ``\\tanh(z)`` without a gap, small brackets round a short argument)."""
        return textbook_form(super().doprint(textbook_order(expr) if self._settings["order"] == "none" else expr))

    def _print_Function(self, expr, exp=None):
        """``\\tanh(z_t)``, ``\\tanh^{2}(c_t)``: an operator name applied to its argument without the thin space
        SymPy's ``\\tanh{\\left(z \\right)}`` sets between them."""
        name = expr.func.__name__
        if name.endswith("^T") and len(name) > 2:  # an unnamed map's transpose, R^T(k): the notation's transpose
            args = ", ".join(self._print(a) for a in expr.args)
            return "%s^{\\top}\\left(%s\\right)" % (self._print(sp.Symbol(name[:-2])), args)
        if name in OPERATOR_FUNCTIONS and len(expr.args) == 1:
            head = "\\" + name + ("" if exp is None else "^{%s}" % exp)
            return head + "\\left(%s\\right)" % self._print(expr.args[0])
        if name == "diag" and len(expr.args) == 1:  # diag(u_t) written in words: printed as the DiagMatrix node is
            return r"\operatorname{diag}\left(%s\right)" % self._print(expr.args[0])
        if self.notation.bold and name in self.notation.vectors and isinstance(expr, AppliedUndef):
            # a map whose value is a vector or a matrix (the rotation R(k)): its name bold, as the matrix's
            head = self._print_Symbol(sp.Symbol(name), "bold") + ("" if exp is None else "^{%s}" % exp)
            return head + "{\\left(%s \\right)}" % ", ".join(self._print(a) for a in expr.args)
        return super()._print_Function(expr, exp)

    def _print_Heaviside(self, expr, exp=None):
        """A step with its value at 0 as an Iverson bracket, ``[z > 0]`` (``Heaviside(z, 0)``, ReLU's slope as PyTorch
        takes it) or ``[z \\geq 0]`` (``Heaviside(z, 1)``); SymPy's theta for the step that is 1/2 at 0."""
        at_zero = expr.args[1] if len(expr.args) > 1 else None
        if at_zero in (sp.S.Zero, sp.S.One):
            tex = r"[%s %s 0]" % (self._print(expr.args[0]), ">" if at_zero == 0 else r"\geq")
            return tex if exp is None else r"%s^{%s}" % (tex, exp)
        return super()._print_Heaviside(expr, exp)

    def _print_Indexed(self, expr):
        """An entry ``X_{i+u, j+v}``: each index a sum in the order of index arithmetic, the positive terms first
        and the number last (``m + u - k + 1``, not SymPy's ``1 + m + u - k``)."""
        indices = [index_order(i) for i in expr.indices]
        tex = super()._print_Indexed(sp.Indexed(expr.base, *indices)) if indices != list(expr.indices) \
            else super()._print_Indexed(expr)
        base = self._print(expr.base.label)
        if "_" in base and tex.startswith("{" + base + "}_"):
            # a base with a subscript of its own (X_in): its entry is (X_in)_{i,j}, never X_{in}_{i,j}, which reads
            # as one subscript "in i, j"
            tex = r"\left(%s\right)" % base + tex[len(base) + 2:]
        return tex

    def _print_Transpose(self, expr):
        """``\\mathbf{W}_{Q}^{\\top}``; a symbol with a superscript of its own, or a compound, in brackets:
        ``(\\mathbf{g}^{z}_{t})^{\\top}``; a call (``prints_as_call``) without: ``\\operatorname{softmax}(\\mathbf{x})^{\\top}``."""
        base = self._print(expr.arg)
        if not (isinstance(expr.arg, sp.MatrixSymbol) or getattr(expr.arg, "prints_as_call", False)) or "^" in base:
            base = r"\left(%s\right)" % base
        return "%s^{\\top}" % base

    def _print_HadamardProduct(self, expr):
        return super()._print_HadamardProduct(expr).replace(r" \circ ", r" \odot ")  # the Hadamard product: one glyph

    def _print_MatMul(self, expr):
        """A product of matrices with a factor repeated next to itself written as a power: ``(\\lambda I + J)^{2}``,
        never ``(\\lambda I + J)(\\lambda I + J)``."""
        args = list(expr.args)
        runs = []
        for a in args:
            if runs and runs[-1][0] == a and not a.is_Number:
                runs[-1][1] += 1
            else:
                runs.append([a, 1])
        if all(k == 1 for _, k in runs):
            return super()._print_MatMul(expr)
        return super()._print_MatMul(sp.MatMul(*[a if k == 1 else sp.MatPow(a, k) for a, k in runs], evaluate=False))

    def _print_Add(self, expr, order=None):
        terms = self._as_ordered_terms(expr, order=order)
        tex = ""
        for i, term in enumerate(terms):
            if i == 0:
                pass
            elif is_negative(term):
                tex += " - "
                term = negated(term)
            else:
                tex += " + "
            term_tex = self._print(term)
            if self._needs_add_brackets(term):
                term_tex = r"\left(%s\right)" % term_tex
            tex += term_tex
        return tex

    def _print_Mul(self, expr):
        if self._settings["order"] == "none" and expr.could_extract_minus_sign() and expr.args[0].is_Number:
            rest = negated(expr)
            text = self._print(rest)
            return "- " + (r"\left(%s\right)" % text if rest.is_Add else text)
        if self._settings["fold_short_frac"] and not (isinstance(expr, sp.Mul) and _unevaluated(expr)):
            sign, body = ("- ", -expr) if expr.could_extract_minus_sign() else ("", expr)
            numer, denom = fraction(body, exact=True)
            if denom is not sp.S.One:
                return sign + self._slashed(self._print(numer), self._print(denom), numer, denom)
        return super()._print_Mul(expr)

    def _slashed(self, top: str, bottom: str, numer=None, denom=None) -> str:
        """``top/bottom``, a fraction on the line, as running text prints every fraction (``fold_short_frac``, the
        setting of :class:`derive.latex_layout._InlinePrinter`; SymPy folds short ones only): the numerator in
        brackets where it is a sum, or a sum over an index; the denominator where it is a sum or a product
        (``\\epsilon/(\\epsilon + v)``, ``1/(2 d)``), so that the slash divides what the fraction bar did and the
        line keeps its height (``\\partial \\mathcal{L}/\\partial w_{h}``, ``1/\\sqrt{d_{k}}``)."""
        if numer is not None and self._needs_mul_brackets(numer, last=False) and not _divides_each_term(numer, denom):
            top = r"\left(%s\right)" % top
        if denom is not None and (precedence_traditional(denom) <= PRECEDENCE["Mul"] or self._needs_mul_brackets(denom)):
            bottom = r"\left(%s\right)" % bottom
        return "%s/%s" % (top, bottom)

    def _print_Float(self, expr):
        """A number given with its significant figures (``Float("-0.990", 3)``, a precision below double's) prints
        all of them, ``-0.990``, the trailing zero included; a double prints as SymPy prints it."""
        if expr._prec < 53:
            full, self._settings["full_prec"] = self._settings["full_prec"], True
            try:
                return super()._print_Float(expr)
            finally:
                self._settings["full_prec"] = full
        return super()._print_Float(expr)

    def _print_Pow(self, expr):
        """In running text (``fold_short_frac``) a root's reciprocal on the line too, ``1/\\sqrt{d_{k}}`` (SymPy
        stacks it even where it folds a fraction), and the square root of a sum over an index as a power,
        ``(\\sum_{j=0}^{d - 1} x_{j}^{2}/d + \\epsilon)^{1/2}``: a radical drawn over the sum's limits is taller than
        the line."""
        if self._settings["fold_short_frac"] and expr.exp.is_Rational and expr.base.is_commutative:
            if expr.exp.is_negative:
                denom = expr.base if expr.exp == -1 else sp.Pow(expr.base, -expr.exp, evaluate=False)
                return self._slashed("1", self._print(denom), None, denom)
            if expr.exp == sp.S.Half and expr.base.has(sp.Sum, sp.Product):
                return "(%s)^{%s}" % (self._print(expr.base), self._print(expr.exp))
        return super()._print_Pow(expr)

    def _print_Rational(self, expr):
        if self._settings["fold_short_frac"] and expr.q != 1:  # 1/100, as the other fractions on the line
            return "%s%d/%d" % ("- " if expr.p < 0 else "", abs(expr.p), expr.q)
        return super()._print_Rational(expr)

    def _print_Derivative(self, expr):
        """``\\partial f/\\partial x`` in running text (``fold_short_frac``); a derivative of a compound expression
        there as the operator in brackets before it, ``(\\mathrm{d}/\\mathrm{d} x)\\, x^{2}``."""
        if not self._settings["fold_short_frac"]:
            return super()._print_Derivative(expr)
        from sympy.printing.latex import requires_partial

        d = r"\partial" if requires_partial(expr.expr) else self._settings["diff_operator_latex"]
        dim = sum(n for _, n in expr.variable_count)
        wrt = " ".join(d + " " + (self._print(x) if n == 1 else "%s^{%s}" % (self.parenthesize_super(self._print(x)), n))
                       for x, n in reversed(expr.variable_count))
        top = d if dim == 1 else "%s^{%s}" % (d, dim)
        if expr.expr.is_Atom or isinstance(expr.expr, (AppliedUndef, sp.Indexed, sp.MatrixSymbol)):
            return self._slashed("%s %s" % (top, self._print(expr.expr)), wrt)
        return r"(%s)\, %s" % (self._slashed(top, wrt), self.parenthesize(expr.expr, PRECEDENCE["Mul"], strict=True))

    def _print_Partial(self, expr):
        return derivative_tex(self, self._print(expr.of), self._print(expr.wrt))

    def _print_Total(self, expr):
        # with a curly d, as every derivative of the notes: the upright d is the adjoint's (dX, the gradient of the loss);
        # the partial derivative beside it says what it holds fixed (AtFixed)
        return self._print_Partial(expr)

    def _print_AtFixed(self, expr):
        return r"\left(%s\right)_{%s}" % (self._print_Partial(expr), self._print(expr.held))

    def _print_OneMatrix(self, expr):
        """The ones vector: a column ``\\mathbf{1}`` (n x 1), a row written as its transpose ``\\mathbf{1}^{\\top}``
        (1 x n), so that ``1ᵀ G`` (the column sums of G) reads with the shapes it has."""
        one = self._print_Symbol(sp.Symbol("1"), style=self._settings["mat_symbol_style"])
        if expr.shape[0] == 1 and expr.shape[1] != 1:
            return one + "^{\\top}"
        if expr.shape[0] != 1 and expr.shape[1] != 1:  # an n x m block of ones is 1 1ᵀ
            return one + " " + one + "^{\\top}"
        return one

    def _print_DiagMatrix(self, expr):
        return r"\operatorname{diag}\left(%s\right)" % self._print(expr.args[0])

    _print_DiagonalizeVector = _print_DiagMatrix

    def _print_Symbol(self, expr, style="plain"):
        return self.notation.printed(expr.name, self._symbol(expr, style))

    def _symbol(self, expr, style):
        n = self.notation
        if expr.name in n.symbol_names:
            n._used.add(expr.name)
            tex = n.symbol_names[expr.name]
            if style == "bold" or (n.bold and expr.name in n.vectors):  # a rename keeps the kind: a matrix stays bold
                return _bold_stem(tex)
            return tex
        adjoint = _ADJOINT.fullmatch(expr.name)
        if adjoint:  # dX = dL/dX of a block program: an upright d before the quantity it is the gradient of
            return r"\mathrm{d}" + self._print_Symbol(sp.Symbol(adjoint.group(1)), style)
        base, supers, subs, braced = self._parts(expr.name)
        if base in n.letters:
            n._used.add(base)
        glyph = n.letters[base] if base in n.letters else translate(base)  # SymPy's greek letters, hat, ...
        if style == "bold" or (n.bold and (expr.name in n.vectors or base in n.vectors)):
            glyph = (r"\boldsymbol{%s}" if glyph.lstrip("\\").lower() in GREEK else r"\mathbf{%s}") % glyph
        index = lambda s: self._index(s)  # noqa: E731
        if supers:
            glyph += "^{%s}" % " ".join("\\top" if s == "T" else s if s.startswith("[") else index(s) for s in supers)  # R^T: the transpose
        if subs:
            glyph += "_{%s}" % " ".join(index(s) for s in subs)
        return glyph + braced

    def _index(self, index: str) -> str:
        """One sub- or superscript of a symbol's name: a word (``model``, ``LN``, ``ff``: :func:`upright_words`)
        upright, a Greek letter's name as the letter, an index (``t``, ``hn``) as it is (in Greek with
        ``greek_indices``)."""
        word = upright_words(index, self.notation.word_subscripts)
        if word != index:
            return word
        return translate(index) if self.notation.greek_indices else index

    def _split_super_sub(self, name: str):
        """A function's name and its sub- and superscripts (``MHA_self``, ``LN_1``), as SymPy splits them, with their
        words upright, as a symbol's (:func:`upright_words`)."""
        name, supers, subs = super()._split_super_sub(name)
        words = self.notation.word_subscripts
        return name, [upright_words(s, words) for s in supers], [upright_words(s, words) for s in subs]

    def _parts(self, name: str) -> tuple[str, list[str], list[str], str]:
        """Base name, superscripts, subscripts, and an already-LaTeX tail such as ``_{t-1}``."""
        if self._settings["disable_split_super_sub"]:
            return name, [], [], ""
        if "{" in name:  # indices partly written in LaTeX already (h_{t-1}, w_K_{0,0}): merge them, one level deep
            m = re.fullmatch(r"([A-Za-z]+)((?:[_^](?:\{[^{}]*\}|[^_^{}]+))+)", name)
            if not m:
                return name, [], [], ""
            parts = re.findall(r"([_^])(\{[^{}]*\}|[^_^{}]+)", m.group(2))
            subs = [upright_words(_greek_words(v.strip("{}")), self.notation.word_subscripts)
                    for k, v in parts if k == "_"]  # h_{tau-1}: \\tau; T_{src}: \\mathrm{src}
            # a superscript of a superscript set as a subscript: g^{z_{n}}, never g^{z^{n}} (z^n: the gate n's z)
            supers = [re.sub(r"\^\{?([A-Za-z0-9]+)\}?", r"_{\1}", v.strip("{}")) for k, v in parts if k == "^"]
            tail = (f"^{{{','.join(supers)}}}" if supers else "") + (f"_{{{','.join(subs)}}}" if subs else "")
            return m.group(1), [], [], tail
        head = re.fullmatch(r"([^^]+)\^\[(\w+)\](\w*)", name)
        if head:  # a head's number, W_Q^[i], O^[n_head]: one superscript [number], the number printed as a symbol
            base, supers, subs, braced = self._parts(head.group(1) + head.group(3))
            return base, [*supers, "[%s]" % self._print(sp.Symbol(head.group(2)))], subs, braced
        base, supers, subs = split_super_sub(name)
        return base, supers, subs, ""

    def _print_MatrixSymbol(self, expr):
        return self._print_Symbol(sp.Symbol(expr.name), style=self._settings["mat_symbol_style"])

    def _print_MatrixElement(self, expr):
        """An entry ``X_{i,j}`` of a matrix: a number, so set plain (the matrix itself is bold), as an index display
        over ``IndexedBase`` prints it."""
        if not isinstance(expr.parent, sp.MatrixSymbol):
            return super()._print_MatrixElement(expr)
        return "{%s}_{%s,%s}" % (self._print_Symbol(sp.Symbol(expr.parent.name)), self._print(expr.i), self._print(expr.j))

    # -- values of a sequence (derive.sequence): the value's glyph, the step index printed by this printer ------
    def _step_index(self, index) -> str:
        """A step index in a subscript, ``t-1``, ``N-1`` (the notation's letters for t and T), set tight."""
        return re.sub(r"\s*([+-])\s*", r"\1", self._print(index_order(index))).strip()

    def _print_Stepped(self, expr, style="plain"):
        """``h_{t-1}``, ``z_{r,t}``, ``\\mathbf{h}_{N-1}``: a value at a step (an exact ``symbol_names`` entry for the
        whole name, ``h_t``, still wins).  A display name with a superscript, a gate's pre-activation ``z^r``, is set
        with the gate beside the step, ``z_{r,t}``, as its gradient ``g^{z_{r}}_{t}`` names it (no nested scripts)."""
        if expr.name in self.notation.symbol_names:
            return self._print_Symbol(sp.Symbol(expr.name), style)
        stem, gate = base_parts(expr.base)
        if gate:
            index = translate if self.notation.greek_indices else str
            return "%s_{%s,%s}" % (self._print_Symbol(sp.Symbol(stem), style), index(gate), self._step_index(expr.index))
        return "%s_{%s}" % (self._print_Symbol(sp.Symbol(expr.base), style), self._step_index(expr.index))

    def _print_SteppedMatrix(self, expr):
        return self._print_Stepped(expr, style=self._settings["mat_symbol_style"])

    def _print_Sensitivity(self, expr, style="plain"):
        """``g^{h}_{t}``: the adjoint letter ``g`` (the notation's, e.g. ``\\delta``), the value it is the gradient of
        as its superscript, the step as its subscript."""
        if expr.name in self.notation.symbol_names:
            return self._print_Symbol(sp.Symbol(expr.name), style)
        # the value's gate as a subscript: g^{z_{f}}_{t}, never g^{z^{f}}_{t} (z^f: the gate f's z)
        stem, gate = base_parts(expr.base)
        value = f"{stem}_{gate}" if gate else stem
        return "%s^{%s}_{%s}" % (self._print_Symbol(sp.Symbol("g"), style), self._print_Symbol(sp.Symbol(value)),
                                 self._step_index(expr.index))

    def _print_SensitivityMatrix(self, expr):
        return self._print_Sensitivity(expr, style=self._settings["mat_symbol_style"])


_STEM = re.compile(r"(\\[A-Za-z]+|[A-Za-z]+)(.*)", re.S)
_ACCENTED = re.compile(r"(\\(?:bar|hat|tilde|widehat|widetilde)\{[A-Za-z]\})(.*)", re.S)


def _bold_stem(tex: str) -> str:
    r"""A renamed matrix's LaTeX (``--symbol W_h=V_{h}``) with its letter in bold, its indices as they are:
    ``\mathbf{V}_{h}``, ``\boldsymbol{\Omega}_{h}``; LaTeX already bold, or not a letter first, is kept.

    >>> print(_bold_stem("V_{h}"), _bold_stem(r"\Omega_{h}"), _bold_stem(r"\mathbf{U}"), _bold_stem(r"\mathrm{d}O"))
    \mathbf{V}_{h} \boldsymbol{\Omega}_{h} \mathbf{U} \mathrm{d}\mathbf{O}
    >>> print(_bold_stem(r"\bar{X}"), _bold_stem(r"\hat{G}_{1}"))  # an accented letter, as a MatrixSymbol Xbar prints
    \mathbf{\bar{X}} \mathbf{\hat{G}}_{1}
    """
    if tex.startswith(r"\mathrm{d}") and len(tex) > len(r"\mathrm{d}"):  # a gradient's name, dO: its letter bold
        return r"\mathrm{d}" + _bold_stem(tex[len(r"\mathrm{d}"):])
    accented = _ACCENTED.fullmatch(tex)
    if accented:
        return r"\mathbf{%s}" % accented.group(1) + accented.group(2)
    m = _STEM.fullmatch(tex)
    if m is None or "\\mathbf" in tex or "\\boldsymbol" in tex or (m.group(1).startswith("\\")
                                                                  and m.group(1).lstrip("\\").lower() not in GREEK):
        return tex
    stem = m.group(1)
    return (r"\boldsymbol{%s}" if stem.startswith("\\") else r"\mathbf{%s}") % stem + m.group(2)


def upright_words(index: str, words: Iterable[str] = WORD_SUBSCRIPTS) -> str:
    r"""A sub- or superscript with its words set upright: a run of three or more letters that is not the name of a
    Greek letter (``model``, ``src``), of two or more capitals (``LN``), or one of ``words`` (``ff``); a pair of
    indices (``hn``, ``ij``), a single letter and a step (``t-1``) are kept.

    >>> [upright_words(s) for s in ("model", "LN", "ff", "hn", "t-1", "tau", "0,0")]
    ['\\mathrm{model}', '\\mathrm{LN}', '\\mathrm{ff}', 'hn', 't-1', 'tau', '0,0']
    """
    def word(m):
        w = m.group(0)
        if (len(w) >= 3 and w.lower() not in GREEK) or (len(w) >= 2 and w.isupper()) or w in words:
            return r"\mathrm{%s}" % w
        return w

    return re.sub(r"(?<![\\A-Za-z])[A-Za-z]{2,}(?![A-Za-z])", word, index)


def derivative_tex(printer, of: str, wrt: str, operator: str = r"\partial") -> str:
    """A derivative label ``\\frac{\\partial of}{\\partial wrt}`` (``of``, ``wrt`` printed), on the line in running
    text, ``\\partial of/\\partial wrt``, where ``printer`` folds fractions (``fold_short_frac``)."""
    top, bottom = "%s %s" % (operator, of), "%s %s" % (operator, wrt)
    if printer._settings.get("fold_short_frac") and hasattr(printer, "_slashed"):
        return printer._slashed(top, bottom)
    return r"\frac{%s}{%s}" % (top, bottom)


def _divides_each_term(numer, denom) -> bool:
    """Whether ``numer/denom``, a sum over an index divided by what does not depend on it, is read alike with the
    division inside the sum (``\\sum_{j} x_{j}^{2}/d``): no brackets are needed round the sum."""
    return isinstance(numer, sp.Sum) and denom is not None and not denom.free_symbols & set(numer.variables)


def _unevaluated(expr: sp.Mul) -> bool:
    """A product SymPy prints factor by factor as it stands (``Mul(1, x, evaluate=False)``, a number after the first
    factor), never as a fraction."""
    return expr.args[0] is sp.S.One or any(isinstance(a, sp.Number) for a in expr.args[1:])


def _greek_words(index: str) -> str:
    """A braced step index with the names of Greek letters set as the letters: ``tau-1`` -> ``\\tau-1``.

    >>> _greek_words("tau-1"), _greek_words("t+1"), _greek_words("T-1")
    ('\\\\tau-1', 't+1', 'T-1')
    """
    return re.sub(r"(?<![\\A-Za-z])([A-Za-z]{2,})(?![A-Za-z])",
                  lambda m: "\\" + m[1] if m[1].lower() in GREEK and m[1].islower() else m[1], index)


class Partial(sp.Expr):
    """The label ``dL/dw`` of a gradient, as an expression: printed ``\\frac{\\partial \\mathcal{L}}{\\partial w_{h}}``
    by the notation's printer, so a rename of ``w_h`` (or of ``L``) reaches the label too.

    >>> Notation(symbol_names={"w_h": "W_{hh}"}).latex(Partial(sp.Symbol("w_h")))
    '\\\\frac{\\\\partial \\\\mathcal{L}}{\\\\partial W_{hh}}'
    >>> str(Partial(sp.Symbol("w_h")))
    'dL/dw_h'
    """

    is_commutative = True
    is_derivative_label = True  # derive.term_order writes a chain of labels after a direct term

    def __new__(cls, wrt, of=None):
        of = sp.Symbol("L") if of is None else of
        if not isinstance(wrt, sp.Basic) or not isinstance(of, sp.Basic):
            raise SeqgradTypeError("wrt", wrt, "a SymPy symbol")
        return sp.Expr.__new__(cls, of, wrt)

    @property
    def of(self):
        return self.args[0]

    @property
    def wrt(self):
        return self.args[1]

    def _sympystr(self, printer):
        return f"d{printer._print(self.of)}/d{printer._print(self.wrt)}"


class Total(Partial):
    """The total derivative ``dc_1/dc_0`` (every path from ``wrt`` to ``of``), printed with a curly d as every
    derivative of the notes (an upright d names an adjoint, dX); the partial one beside it at a fixed quantity is
    :class:`AtFixed`.

    >>> Notation().latex(Total(sp.Symbol("c_0"), of=sp.Symbol("c_1")))
    '\\\\frac{\\\\partial c_{1}}{\\\\partial c_{0}}'
    """


class AtFixed(Partial):
    """The partial derivative of ``of`` by ``wrt`` with ``held`` fixed, ``(dc_1/dc_0)_{h_0}``: the subscript says what
    is held, so that it is told apart from the derivative along every path (:class:`Total`).

    >>> Notation().latex(AtFixed(sp.Symbol("c_0"), of=sp.Symbol("c_1"), held=sp.Symbol("h_0")))
    '\\\\left(\\\\frac{\\\\partial c_{1}}{\\\\partial c_{0}}\\\\right)_{h_{0}}'
    """

    def __new__(cls, wrt, of, held):
        if not all(isinstance(x, sp.Basic) for x in (wrt, of, held)):
            raise SeqgradTypeError("wrt", wrt, "a SymPy symbol")
        return sp.Expr.__new__(cls, of, wrt, held)

    @property
    def held(self):
        return self.args[2]

    def _sympystr(self, printer):
        return f"(d{printer._print(self.of)}/d{printer._print(self.wrt)})_{printer._print(self.held)}"


class OrderedProduct(sp.Expr):
    """A product of non-commuting factors written out in its order, the highest index first:
    ``OrderedProduct(J_j, j, s + 1, t)`` prints ``J_{t} J_{t-1} \\cdots J_{s+1}`` (where ``\\prod`` leaves the order
    unsaid).  A label for the text, not a value: it has no ``doit``.

    >>> j, s, t = sp.symbols("j s t", integer=True)
    >>> Notation().latex(OrderedProduct(sp.Indexed("J", j), j, s + 1, t))
    '{J}_{t} {J}_{t - 1} \\\\cdots {J}_{s + 1}'
    """

    is_commutative = False

    def __new__(cls, term, index, low, high):
        if not isinstance(index, sp.Symbol):
            raise SeqgradTypeError("index", index, "a SymPy symbol")
        from .safe_parse import as_sympy

        term, low, high = (as_sympy(v, name) for name, v in (("term", term), ("low", low), ("high", high)))
        return sp.Expr.__new__(cls, term, index, low, high)

    def _latex(self, printer):
        term, j, low, high = self.args
        at = lambda k: printer._print(term.subs(j, k))  # noqa: E731
        return "%s %s \\cdots %s" % (at(high), at(high - 1), at(low))

    def _sympystr(self, printer):
        term, j, low, high = self.args
        return "%s*%s*...*%s" % tuple(printer._print(term.subs(j, k)) for k in (high, high - 1, low))


_notebook: list[Notation | None] = [None]  # the notation of use_in_notebook (None: the text's)


def notebook_notation() -> Notation | None:
    """The notation :func:`use_in_notebook` set last (None: the course text's): what every ``_repr_latex_`` of a
    derivation object prints with."""
    return _notebook[0]


def use_in_notebook(notation: Notation | None = None) -> None:
    """Make IPython show every SymPy object printed by :class:`NotationPrinter` (the text's notation and
    order of terms, the renames of ``notation``) instead of SymPy's own LaTeX; the derivation objects'
    ``_repr_latex_`` print with ``notation`` too (:func:`notebook_notation`), in IPython or not."""
    if notation is not None and not isinstance(notation, Notation):
        raise SeqgradTypeError("notation", notation, "a derive.latex_settings.Notation")
    _notebook[0] = notation
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    printer = NotationPrinter(notation)
    shell.display_formatter.formatters["text/latex"].for_type(sp.Basic, lambda e: "$\\displaystyle " + printer.doprint(e) + "$")


def latex(expr, notation: Notation | None = None) -> str:
    """LaTeX for ``expr`` under ``notation`` (default: the course text's notation)."""
    return NotationPrinter(notation).doprint(expr)
