r"""Words with formulas in them (an entry's scope, a source's note): recorded once as text, printed by the printers.

A catalogue entry says for which sizes it holds (its scope, ``"all T, d, d_k, d_v >= 1"``) and where it
comes from (its source, whose note may hold a formula: ``"chain rule over `mu`, `sigma**2`, `s`"``).  Both
are plain text for terminals, the catalogue page and ``seqgrad identities --json``; in the notes their
formulas are typeset by the notation's printer, as the display below them is: ``d_k`` as :math:`d_{k}`,
``>=`` as :math:`\geq`, ``lambda`` as :math:`\lambda`, a renamed symbol renamed.

:class:`Prose` is the recorded text (a ``str``: what ``str()`` and ``--json`` give, without the backquotes
that mark a formula) with its :attr:`~Prose.parts`, words and SymPy objects; :meth:`Prose.latex` prints them.
A formula is

* a span in backquotes, read by :func:`derive.safe_parse.parse_expression` (``sigma**2/(sigma**2 + eps)``);
* in a scope (:func:`scope`) also without backquotes: a relation over sizes (``T, d, d_k, d_v >= 1``,
  ``d = 2m >= 2``, ``N = 6``), and a symbol's name standing alone: one letter (``F``, ``s``), a name with a
  subscript (``d_model``), a Greek letter (``lambda``) or a name of the text's notation (``pos``).
  Every other word is a word (``instance``, ``MHA``, ``pe-shift``, ``256/4/1024``).

>>> s = scope("all T, d, d_k, d_v >= 1")
>>> str(s)
'all T, d, d_k, d_v >= 1'
>>> s.latex()
'all $T, d, d_{k}, d_{v} \\geq 1$'
>>> scope("instance L = 4, d = 2, symbolic lambda").latex()
'instance $L = 4$, $d = 2$, symbolic $\\lambda$'
>>> note = Prose("chain rule over `mu`, `sigma**2`, `s`")
>>> str(note), note.latex()
('chain rule over mu, sigma**2, s', 'chain rule over $\\mu$, $\\sigma^{2}$, $s$')
"""

from __future__ import annotations

import re

import sympy as sp

from seqgrad.errors import SeqgradValueError

__all__ = ["Prose", "scope", "cited", "Sizes"]


class Sizes(sp.Tuple):
    """Several sizes that one relation bounds (``T, d, d_k >= 1``): printed as a list, without brackets."""

    def _latex(self, printer):
        return ", ".join(printer._print(a) for a in self.args)

    def _sympystr(self, printer):
        return ", ".join(printer._print(a) for a in self.args)


_RELATIONS = {"=": sp.Eq, ">=": sp.GreaterThan, "<=": sp.LessThan, "!=": sp.Ne, ">": sp.StrictGreaterThan, "<": sp.StrictLessThan}
_TOKEN = re.compile(r"(?P<quoted>`[^`]*`)|(?P<name>[A-Za-z]+(?:_[A-Za-z0-9]+)*)|(?P<number>\d+(?:\.\d+)?)(?P<factor>[A-Za-z](?![A-Za-z0-9_]))?"
                    r"|(?P<rel>>=|<=|!=|=|<|>)|(?P<comma>,)|(?P<space>\s+)|(?P<other>.)")


def _is_symbol_name(name: str, alone: bool = False) -> bool:
    """A word that names a symbol in a scope: one letter, a name with a subscript, a Greek letter, or one of the
    text's named symbols (``pos``, ``yhat``, ...); standing ``alone`` (not in a relation), ``a`` is the article."""
    from .latex_settings import GREEK, TEXTBOOK_LETTERS

    if alone and name == "a":
        return False
    return len(name) == 1 or "_" in name or name in GREEK or name == "eps" or name in TEXTBOOK_LETTERS


class Prose(str):
    """Recorded words with formulas; see the module docstring.  ``Prose(text)`` reads backquoted formulas only;
    :func:`scope` reads a scope's relations and symbol names too."""

    parts: tuple  # str (words) and SymPy objects (formulas), in order
    recorded: str  # the text as written, formulas in backquotes

    def __new__(cls, text: str, *, sizes: bool = False):
        if isinstance(text, Prose) and not sizes:
            return text
        if not isinstance(text, str):
            raise SeqgradValueError("text", text, "words as a string, formulas in backquotes")
        text = getattr(text, "recorded", text)  # a Prose read again: from the text as written, backquotes kept
        parts = _read(text, sizes)
        self = super().__new__(cls, "".join(recorded for _, recorded in parts))
        self.parts = tuple(p for p, _ in parts)
        self.recorded = text  # as written, formulas in backquotes
        return self

    def latex(self, notation=None) -> str:
        """The words as text (escaped for LaTeX) and each formula in ``$...$``, printed with ``notation``."""
        from seqgrad.latex_table import tex_escape

        from .latex_settings import Notation

        notation = Notation() if notation is None else notation
        return "".join(_minus(tex_escape(p)) if isinstance(p, str) else f"${_printer(notation).doprint(p)}$"
                       for p in self.parts)

    def __reduce__(self):  # pickled (worker processes, check results) with its parts and the text as written
        return (_rebuild, (str(self), self.parts, self.recorded))


def cited(source: str, notation=None) -> str:
    """LaTeX of a source (a :class:`Prose` or plain text): its references in the one citation style
    (:func:`seqgrad.sources.normalize`), the formulas of its note typeset."""
    from seqgrad.sources import normalize

    return Prose(normalize(getattr(source, "recorded", source))).latex(notation)


def _printer(notation):
    """The notation's printer for the sizes of a scope: ``L`` there is a number of layers, so it keeps its letter
    (the text's ``\\mathcal{L}`` is the loss); the renames it applies count as used by ``notation``."""
    from .latex_settings import NotationPrinter

    own = notation.replace(letters={**notation.letters, "L": "L"})
    object.__setattr__(own, "_used", notation._used)  # one record of the renames applied (Notation.unused_renames)
    return NotationPrinter(own, fold_short_frac=True)  # running text: fractions on the line, as latex_layout.inline


def _rebuild(text: str, parts: tuple, recorded: str) -> Prose:
    self = str.__new__(Prose, text)
    self.parts, self.recorded = parts, recorded
    return self


def scope(text: str) -> Prose:
    """An entry's scope (``"all n >= 1"``, ``"instance d = 8, half layout"``) with its relations and symbol names
    read as formulas."""
    return Prose(text, sizes=True)


def _read(text: str, sizes: bool) -> list[tuple]:
    """``(part, recorded text)`` pairs: words as they are, formulas as SymPy objects with the text they were read from."""
    tokens = [(m.lastgroup if m.lastgroup != "factor" else "number", m.group(0)) for m in _TOKEN.finditer(text)]
    parts: list[tuple] = []
    i = 0

    def word(s: str):
        if parts and isinstance(parts[-1][0], str):
            parts[-1] = (parts[-1][0] + s, parts[-1][1] + s)
        else:
            parts.append((s, s))

    while i < len(tokens):
        kind, s = tokens[i]
        if kind == "quoted":
            parts.append((_formula(s[1:-1], text), s[1:-1]))
            i += 1
        elif sizes and kind == "name" and _is_symbol_name(s):
            j, chain = _relation(tokens, i)
            if chain is not None:
                parts.append((chain, "".join(t for _, t in tokens[i:j])))
                i = j
                continue
            if _is_symbol_name(s, alone=True):
                parts.append((sp.Symbol(s), s))
            else:
                word(s)
            i += 1
        else:
            word(s)
            i += 1
    return parts


#: A hyphen that starts a number in words ("slope -0.63", "(-0.5"): a minus sign, not a hyphen ("log-log", "1-3" stay).
_NEGATIVE = re.compile(r"(?<![\w)\]}])-(?=\d)")


def _minus(text: str) -> str:
    """``text`` (LaTeX words) with each hyphen that starts a number set as a minus sign.

    >>> _minus("a slope -0.63 (against -0.5), log-log, steps 1-3")
    'a slope $-$0.63 (against $-$0.5), log-log, steps 1-3'
    """
    return _NEGATIVE.sub("$-$", text)


def _relation(tokens: list, i: int) -> tuple[int, object]:
    """A relation over sizes starting at token ``i`` (``T, d >= 1``, ``d = 2m >= 2``): the token after it and the
    relation as SymPy objects, or ``(i, None)`` when none starts there."""
    def skip(k):
        while k < len(tokens) and tokens[k][0] == "space":
            k += 1
        return k

    names, k = [sp.Symbol(tokens[i][1])], skip(i + 1)
    while k < len(tokens) and tokens[k][0] == "comma":
        n = skip(k + 1)
        if n < len(tokens) and tokens[n][0] == "name" and _is_symbol_name(tokens[n][1]):
            names.append(sp.Symbol(tokens[n][1]))
            k = skip(n + 1)
        else:
            break
    chain, end = Sizes(*names) if len(names) > 1 else names[0], None
    while k < len(tokens) and tokens[k][0] == "rel":
        v = skip(k + 1)
        value = _value(tokens[v][1]) if v < len(tokens) and tokens[v][0] in ("number", "name") else None
        if value is None or (tokens[v][0] == "name" and not _is_symbol_name(tokens[v][1])):
            break
        chain = _RELATIONS[tokens[k][1]](chain, value, evaluate=False)
        end = v + 1
        k = skip(end)
    return (end, chain) if end is not None else (i, None)


def _value(s: str):
    """A bound: a number, a number times a size (``2m``), or a size."""
    from .safe_parse import parse_number

    m = re.fullmatch(r"(\d+(?:\.\d+)?)([A-Za-z])?|([A-Za-z]+(?:_[A-Za-z0-9]+)*)", s)
    if m is None:
        return None
    if m.group(3):
        return sp.Symbol(m.group(3))
    number = parse_number(m.group(1), "scope")
    return sp.Mul(number, sp.Symbol(m.group(2)), evaluate=False) if m.group(2) else number


def _formula(source: str, text: str):
    """A backquoted formula, read by the one safe parser: an expression or a relation (``gamma = 1``); its names are
    the formula's symbols, and a name applied to an argument that is not one of the parser's functions is an unnamed
    map (``Layer(Norm(x))``, ``alpha(k)``)."""
    from .safe_parse import parse_expression
    from .whitelist import reserved

    calls = {f for f in re.findall(r"([A-Za-z][A-Za-z0-9_]*)\s*\(", source) if not reserved(f)}
    variables = sorted({n for n in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", source) if n not in calls and not reserved(n)})
    functions = {f: sp.Function(f) for f in calls}
    sides = re.split(r"\s*(>=|<=|!=|=|<|>)\s*", source)
    try:
        parsed = [parse_expression(side, variables=variables, functions=functions, argument="formula") for side in sides[::2]]
    except ValueError as exc:
        raise SeqgradValueError("text", text, f"formulas in backquotes that derive.safe_parse reads ({exc})") from None
    formula = parsed[0]
    for op, side in zip(sides[1::2], parsed[1:]):
        formula = _RELATIONS[op](formula, side, evaluate=False)
    return at_steps(_as_typed(formula, source))


#: a decimal literal of a formula's text (``1.2``, ``0.50``; not a part of a name or of a longer number)
_DECIMAL = re.compile(r"(?<![\w.])\d+\.\d+(?![\w.])")


def _as_typed(formula, source: str):
    """``formula`` with each decimal the text typed printed as typed (``w_h = 1.2``, not the exact ``6/5`` the safe
    parser reads it as): a number of that many significant figures, which the notation's printer writes digit for digit."""
    typed = {}
    for literal in _DECIMAL.findall(source):
        figures = len(literal.replace(".", "").lstrip("0")) or 1
        typed[sp.Rational(literal)] = sp.Float(literal, figures)
    return formula.xreplace(typed) if typed else formula


#: A name of a value at the step or at the last step, as the text types it: ``h_t``, ``x_t``, ``e_T``.
_AT_STEP = re.compile(r"([A-Za-z]+)_([tT])")


def at_steps(formula):
    """``formula`` with each name of a value at the step (``h_t``, ``e_T``) as the node
    :func:`derive.sequence.stepped`, so that the notation's letters for the step and the length reach it as they
    reach the displays (``Notation(letters={"t": "k"})`` prints ``h_{k}``).

    >>> from seqgrad.derive.latex_settings import Notation
    >>> Notation(letters={"t": "k", "T": "N"}).latex(at_steps(sp.Symbol("h_t") + sp.Symbol("e_T")))
    'h_{k} + e_{N}'
    """
    from .sequence import T, stepped, t

    steps = {}
    for s in formula.free_symbols:
        m = _AT_STEP.fullmatch(getattr(s, "name", ""))
        if m and type(s) is sp.Symbol:
            steps[s] = stepped(m.group(1), {"t": t, "T": T}[m.group(2)])
    return formula.xreplace(steps) if steps else formula
