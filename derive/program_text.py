"""Plain-text and one-line unicode forms of the programs' expressions, in the text's order of terms
(:mod:`derive.term_order`): :func:`sstr` (``w_x*x_0 + w_h*h_{t-1}``, ``a ∘ b``, ``diag(a)``) and
:func:`pretty` for terminals (``wₓ xₜ + wₕ hₜ₋₁``, ``(ŷ − y)²/2``).  (LaTeX: :mod:`derive.latex_settings`.)
"""

from __future__ import annotations

import sympy as sp
from sympy.printing.str import StrPrinter

from .elementwise import Elementwise

__all__ = ["sstr", "pretty"]


class _StrPrinter(StrPrinter):
    """SymPy's str printer in the text's order of terms (:mod:`derive.term_order`): ``w_x*x_0 + w_h*h_{-1}``,
    ``(yhat - y)**2/2``; the elementwise product written ``a ∘ b``, a diagonal matrix ``diag(a)``."""

    def __init__(self, settings=None, notation=None):
        super().__init__({"order": "none", **(settings or {})})
        self.notation = notation
        self._letters = _user_letters(notation)  # the notation's renames of base letters beyond the text's own

    def _renames(self) -> bool:
        return self.notation is not None and bool(self.notation.symbol_names or self._letters)

    def _print_Symbol(self, expr):
        """A symbol under the notation's renames: an exact ``symbol_names`` entry, else its base letter renamed
        (``letters``, keeping its indices); a value at a step or an adjoint (derive.sequence) from its parts, so
        that the step letter (t, T) is renamed inside its index too.  Without renames, SymPy's own name."""
        if not self._renames():
            return super()._print_Symbol(expr)
        return self.notation.printed(expr.name, self._renamed_symbol(expr))

    def _renamed_symbol(self, expr):
        from .sequence import Sensitivity, Stepped

        n = self.notation
        if expr.name in n.symbol_names:
            n._used.add(expr.name)
            return n.symbol_names[expr.name]
        if isinstance(expr, Stepped):
            return self._stepped(expr.base, expr.index)
        if isinstance(expr, Sensitivity):
            return self._sensitivity(expr.base, expr.index)
        return self._letter(expr.name)

    def _print_MatrixSymbol(self, expr):
        if not self._renames():
            return super()._print_MatrixSymbol(expr)
        return self.notation.printed(expr.name, self._renamed_matrix(expr))

    def _renamed_matrix(self, expr):
        from .sequence import SensitivityMatrix, SteppedMatrix

        if expr.name in self.notation.symbol_names:
            self.notation._used.add(expr.name)
            return self.notation.symbol_names[expr.name]
        if isinstance(expr, SteppedMatrix):
            return self._stepped(expr.base, expr.index)
        if isinstance(expr, SensitivityMatrix):
            return self._sensitivity(expr.base, expr.index)
        return self._letter(expr.name)

    def _letter(self, name: str) -> str:
        """``name`` with its base letter (up to the first ``_`` or ``^``) renamed by the notation's letters."""
        import re

        base, rest = re.match(r"([^_^]*)(.*)", name).groups()
        if base in self._letters:
            self.notation._used.add(base)
            return self._letters[base] + rest
        return name

    def _index(self, index) -> str:
        from .sequence import index_order

        text = self._print(index_order(index)).replace(" ", "")
        return text if len(text) == 1 else "{%s}" % text

    def _stepped(self, base: str, index) -> str:
        from .sequence import base_parts

        stem, gate = base_parts(base)
        return f"{self._letter(stem)}_{self._index(index)}" + (f"^{gate}" if gate else "")

    def _sensitivity(self, base: str, index) -> str:
        from .sequence import base_parts

        stem, gate = base_parts(base)
        value = self._letter(stem)
        return f"{self._letter('g')}_{self._index(index)}^" + (value if not gate else "{%s^%s}" % (value, gate))

    def doprint(self, expr):
        from .term_order import textbook_order

        return super().doprint(textbook_order(expr))

    def _print_MatMul(self, expr):
        """A negative symbolic scalar factor as the sign of the product: ``−(aᵀ G) 𝟏``, not ``(−aᵀ G) 𝟏``."""
        coeff, mats = expr.as_coeff_matrices()
        if not coeff.is_number and coeff.could_extract_minus_sign():
            return "-" + self._print(sp.MatMul(-coeff, *mats))
        return super()._print_MatMul(expr)

    def _print_HadamardProduct(self, expr):
        def factor(a):
            text = self._print(a)
            simple = (a.is_symbol or (isinstance(a, Elementwise) and (a.function.expr.is_Function or a.function.expr.is_Add))
                      or (text.startswith("(") and text.endswith(")") and text.count("(") == 1) or _one_call(text)
                      or (isinstance(a, sp.Transpose) and text.endswith("ᵀ") and (a.arg.is_symbol or _one_call(text[:-1]))))
            return text if simple else f"({text})"

        return " ∘ ".join(factor(a) for a in expr.args)

    def _print_DiagMatrix(self, expr):
        return f"diag({self._print(expr.args[0])})"

    _print_DiagonalizeVector = _print_DiagMatrix

    def _print_Trace(self, expr):
        return f"trace({self._print(expr.arg)})"

    def _print_Determinant(self, expr):
        return f"det({self._print(expr.arg)})"

    def _print_DiagonalOf(self, expr):
        return f"diagonal({self._print(expr.arg)})"

    def _print_KroneckerProduct(self, expr):
        from sympy.printing.precedence import PRECEDENCE

        return " ⊗ ".join(self.parenthesize(a, PRECEDENCE["Mul"]) for a in expr.args)

    def _print_Contains(self, expr):  # a range of a step: t in {0, 3}
        return "%s in %s" % (self._print(expr.args[0]), self._print(expr.args[1]))

    def _print_Subs(self, expr):  # a value at a point: dx|(x = 1, y = 2)
        point = ", ".join(f"{self._print(a)} = {self._print(b)}" for a, b in zip(expr.variables, expr.point))
        return f"{self._print(expr.expr)}|({point})"


def _one_call(text: str) -> bool:
    """``name(...)`` as a whole (``mean(dxhat ∘ xhat)``, not ``f(a) + g(b)``): a factor that needs no brackets."""
    import re

    m = re.match(r"[A-Za-z_]\w*\(", text)
    if not m or not text.endswith(")"):
        return False
    depth = 0
    for pos in range(m.end() - 1, len(text)):
        depth += {"(": 1, ")": -1}.get(text[pos], 0)
        if depth == 0:
            return pos == len(text) - 1
    return False


_SUB = dict(zip("0123456789-+()aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉₋₊₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ"))
_SUP = dict(zip("0123456789-+()nizcfoTrhu", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺⁽⁾ⁿⁱᶻᶜᶠᵒᵀʳʰᵘ"))
_GLYPH = {"yhat": "ŷ", "ctilde": "c̃", "htilde": "h̃", "sigma": "σ", "phi": "φ", "delta": "δ", "omega": "ω"}


def _script(text: str, table: dict, mark: str) -> str:
    return "".join(table[c] for c in text) if text and all(c in table for c in text) else f"{mark}{{{text}}}"


class _PrettyPrinter(_StrPrinter):
    """One-line unicode for terminals: ``wₓ xₜ + wₕ hₜ₋₁``, ``(ŷ − y)²/2``, ``g₂ᶻ``, ``a ∘ b``."""

    def _print_Symbol(self, expr):
        import re

        m = re.fullmatch(r"([A-Za-z]+)((?:[_^](?:\{[^{}]*\}|[^_^{}]+))*)", expr.name)
        if not m:
            return expr.name
        out = _GLYPH.get(m.group(1), m.group(1))
        subs, sups = [], []
        for kind, value in re.findall(r"([_^])(\{[^{}]*\}|[^_^{}]+)", m.group(2)):
            (subs if kind == "_" else sups).append(value.strip("{}"))
        if subs:
            out += _script(",".join(subs), _SUB, "_")
        if sups:
            out += _script(",".join(sups), _SUP, "^")
        return out

    _print_MatrixSymbol = _print_Symbol

    def _print_OneMatrix(self, expr):
        """The ones vector as a bold 𝟏 (a number 1 it is not): a column 𝟏, a row 𝟏ᵀ, an n x m block 𝟏 𝟏ᵀ, so that
        sum(X) reads 𝟏ᵀ X 𝟏."""
        rows, cols = expr.shape
        if rows == 1 and cols == 1:
            return "1"
        return "𝟏ᵀ" if rows == 1 else ("𝟏" if cols == 1 else "𝟏 𝟏ᵀ")

    def _print_Pow(self, expr, rational=False):
        if expr.exp.is_Integer and expr.exp > 1:
            return self.parenthesize(expr.base, 1000 - 1) + _script(str(expr.exp), _SUP, "^")  # PRECEDENCE["Pow"] - 1
        return super()._print_Pow(expr, rational)

    def _print_Transpose(self, expr):
        return self.parenthesize(expr.arg, 1000 - 1) + "ᵀ"

    def _print_Inverse(self, expr):
        if isinstance(expr.arg, sp.Transpose):  # X⁻ᵀ, the inverse of the transpose
            return self.parenthesize(expr.arg.arg, 1000 - 1) + "⁻ᵀ"
        return self.parenthesize(expr.arg, 1000 - 1) + "⁻¹"

    def doprint(self, expr):
        text = super().doprint(expr).replace("||**2", "||²").replace("**", "^").replace("*", " ")
        text = text.replace(" - ", " − ").replace("(-", "(−")
        return "−" + text[1:] if text.startswith("-") else text


def _user_letters(notation) -> dict:
    """The base-letter renames of ``notation`` beyond the text's own LaTeX letters (``\\widehat{y}``, ...), which
    plain text does not use."""
    if notation is None:
        return {}
    from .latex_settings import TEXTBOOK_LETTERS

    return {b: tex for b, tex in notation.letters.items() if TEXTBOOK_LETTERS.get(b) != tex}


def sstr(expr, notation=None) -> str:
    """Plain-text form of a program's expressions, in the text's order (``sympy.sstr`` otherwise;
    ``∘`` for the elementwise product, ``diag(a)``), with the renames of ``notation`` (a
    :class:`derive.latex_settings.Notation`: its ``symbol_names`` and its ``letters``, the step letters t
    and T included, printed as given):

    >>> from seqgrad.derive.latex_settings import Notation
    >>> from seqgrad.derive.sequence import stepped
    >>> import sympy as sp
    >>> t = sp.Symbol("t", integer=True)
    >>> expr = sp.Symbol("w_h") * stepped("h", t - 1)
    >>> sstr(expr), sstr(expr, Notation(symbol_names={"w_h": "U"}, letters={"t": "k"}))
    ('w_h*h_{t-1}', 'U*h_{k-1}')
    """
    return _StrPrinter(notation=notation).doprint(expr)


def pretty(expr) -> str:
    """A one-line unicode form for terminals, in the text's order: ``z₀ = wₓ x₀``, ``(ŷ − y)²/2``.

    >>> import sympy as sp
    >>> y, yhat = sp.symbols("y yhat")
    >>> pretty((yhat - y) ** 2 / 2)
    '(ŷ − y)²/2'
    >>> pretty(sp.Symbol("w_x") * sp.Symbol("x_0") + sp.Symbol("w_h") * sp.Symbol("h_{t-1}"))
    'wₓ x₀ + wₕ hₜ₋₁'
    """
    return _PrettyPrinter().doprint(expr)
