"""Lay formulas out as LaTeX environments: displays, aligned derivations, tables.

Every formula is printed by :class:`derive.latex_settings.NotationPrinter`;
this module only arranges the printed pieces.  What it returns pastes into a
document body whose preamble loads :data:`PACKAGES`.  Long sums break before a
``+``, long products between factors, and a long derivation is set as several
displays so that the page may break between them (never inside one formula: the
line a formula continues from ends in ``\\\\*``):

>>> import sympy as sp
>>> from seqgrad.derive.latex_layout import display
>>> g = [sp.Symbol(f"g_{t}^z") for t in range(4)]
>>> x = [sp.Symbol(f"x_{t}") for t in range(4)]
>>> print(display([(sp.Symbol("G"), sum(a * b for a, b in zip(g, x)))], width=24))
\\begin{align*}
G &= g^{z}_{0} x_{0} + g^{z}_{1} x_{1}\\\\*
  &\\quad {}+ g^{z}_{2} x_{2} + g^{z}_{3} x_{3}
\\end{align*}

A row may be any SymPy relation (``Eq``, ``Ne``, ``Le``, ...) and carry a note in words, text and
SymPy pieces that are set after the formula; every ``latex()`` of a derivation object is such a
display of its ``rows()``:

>>> z = sp.Symbol("z")
>>> print(display([(sp.Le(sp.Derivative(sp.tanh(z), z), 1), ("for all ", z))]))
\\begin{align*}
\\frac{\\mathrm{d}}{\\mathrm{d} z} \\tanh(z) &\\le 1\\quad \\text{for all }z
\\end{align*}

The zero initial state of the text (``h_{-1} = 0``) is dropped, with every term it multiplies,
unless the notation says ``show_zero_state=True``.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

import sympy as sp

from seqgrad.errors import SeqgradTypeError, SeqgradValueError
from seqgrad.validate import integer

from .latex_settings import Notation, NotationPrinter, textbook_form
from .term_order import drop_zero_state, is_negative, negated, textbook_order

#: The packages every piece of LaTeX seqgrad prints needs (``booktabs`` for tables only):
#: a display pastes into any document body whose preamble loads them.
PACKAGES = ("amsmath", "amssymb", "booktabs")

_LABEL = re.compile(r"[A-Za-z0-9:._-]+")


def _printer(notation: Notation | None) -> NotationPrinter:
    return NotationPrinter(notation)


def _label(label: str | None) -> str:
    if label is None:
        return ""
    if not isinstance(label, str) or not _LABEL.fullmatch(label):
        raise SeqgradValueError("label", label, "letters, digits and : . _ - only (e.g. 'eq:bptt')")
    return f"\\label{{{label}}}"


#: How each SymPy relation is typeset between the sides of a row.
RELATIONS = {sp.Eq: "=", sp.Ne: r"\neq", sp.Lt: "<", sp.Le: r"\le", sp.Gt: ">", sp.Ge: r"\ge"}


@dataclass
class _Row:
    lhs: object
    chain: list
    op: str = "="
    note: tuple = ()


def _note(note) -> tuple:
    """A row's note: plain text, or a tuple of text and SymPy pieces (``("for every ", pos)``)."""
    if note is None:
        return ()
    parts = (note,) if isinstance(note, str) else tuple(note) if isinstance(note, (tuple, list)) else None
    if not parts or not all(isinstance(x, (str, sp.Basic)) for x in parts):
        raise SeqgradTypeError("rows", note, "a note: text, or a tuple of text and SymPy expressions")
    return parts


def _row(row) -> _Row:
    """A row is a relation (``Eq``, ``Ne``, ``Le``, ...), or ``(lhs, rhs)``, or ``(lhs, [rhs1, rhs2, ...])`` for a
    chain ``lhs = rhs1 = rhs2``; either may carry a note, ``(Eq(...), note)`` or ``(lhs, rhs, note)``, set as
    text after the formula (``\\quad\\text{for every } pos``)."""
    if isinstance(row, sp.core.relational.Relational):
        row = (row, None)
    if isinstance(row, (tuple, list)) and len(row) == 2 and isinstance(row[0], sp.core.relational.Relational):
        rel, note = row
        if type(rel) not in RELATIONS:
            raise SeqgradTypeError("rows", rel, "a relation =, !=, <, <=, >, >=")
        return _Row(rel.lhs, [rel.rhs], RELATIONS[type(rel)], _note(note))
    if isinstance(row, (tuple, list)) and len(row) in (2, 3):
        lhs, rhs = row[0], row[1]
        chain = list(rhs) if isinstance(rhs, (list, tuple)) else [rhs]
        if not chain:
            raise SeqgradValueError("rows", row, "a right-hand side with at least one expression")
        return _Row(lhs, chain, "=", _note(row[2] if len(row) == 3 else None))
    raise SeqgradTypeError("rows", row, "a relation (Eq, Ne, Le, ...) or a pair (lhs, rhs), each with an optional note")


def _as_sides(row) -> tuple[object, list[object]]:
    """The left side and the chain of right sides of a row (see :func:`_row`)."""
    r = _row(row)
    return r.lhs, r.chain


_STYLE = re.compile(r"\\(?:mathbf|boldsymbol|mathrm|mathcal|operatorname|widehat|widetilde|hat|tilde|left|right|bigl|bigr|Bigl|Bigr|big|Big)\b")
_COMMAND = re.compile(r"\\[A-Za-z]+")
_OPERATOR = re.compile(r"\\(sin|cos|tan|tanh|sinh|cosh|exp|log|ln|max|min|det|diag|operatorname)\b")
_SPACE = re.compile(r"\\(?:quad|qquad|,|;|!)|\{\}|&")


_MATRIX = re.compile(r"\\begin\{([pbv]?matrix)\}(.*?)\\end\{\1\}", re.S)


def _matrix_width(m: re.Match) -> str:
    """A matrix as wide as it is typeset: its widest row, its columns side by side with a gap of two between them."""
    rows = [row.split("&") for row in m.group(2).split("\\\\")]
    columns = max(len(row) for row in rows)
    widths = [max(visual_width(row[c]) if c < len(row) else 0 for row in rows) for c in range(columns)]
    return "x" * (sum(widths) + 2 * (columns - 1))


def visual_width(tex: str) -> int:
    """About how many characters wide ``tex`` looks when typeset: style macros and braces
    take no room, a command such as ``\\alpha`` takes one, ``\\sin`` three, a binary ``+``, ``-`` or ``=`` three;
    a matrix is as wide as its widest row (its entries side by side), not as all its entries in a row."""
    tex = _MATRIX.sub(_matrix_width, tex)
    tex = _COMMAND.sub("x", _OPERATOR.sub(lambda m: m.group(1), _STYLE.sub("", _SPACE.sub("", tex))))
    return sum(3 if ch in "+-=" else 1 for ch in tex if ch not in "{}^_ ")


# --------------------------------------------------------------------------- breaking long formulas
#
# A formula wider than the line is cut into pieces at the places a reader would break it: before a
# + or - of a sum, before the o of an elementwise product, between the factors of a product (the next
# line starts with a centred dot).  A bracket whose contents are broken is written \Bigl( ... \Bigr),
# which may span lines (a \left ... \right pair may not).  Breaks at the outermost level are preferred.
# A line never ends with a product's leading scalar factor (a number, a symbol, a fraction such as 1/s, a
# scalar before matrices): the factor stays with what it multiplies (:func:`_coefficient`).

@dataclass
class _Piece:
    text: str
    depth: int = -1  # -1: joined to the previous piece; otherwise a break is allowed before it, at this depth
    lead: str = ""   # what a line starting here begins with (a binary operator needs {} in front of it)


def _pieces(expr, p: NotationPrinter, width: int, depth: int = 0) -> list[_Piece]:
    """``expr`` (already in the text's order) as pieces with the allowed breaks between them."""
    text = p._print(expr)
    if visual_width(text) <= width or not isinstance(expr, sp.Basic) or expr.is_Atom:  # an explicit matrix: whole
        return [_Piece(text)]
    if isinstance(expr, (sp.Add, sp.MatAdd)):
        out: list[_Piece] = []
        for i, term in enumerate(expr.args):
            negative = is_negative(term)
            inner = _bracketed(negated(term) if negative else term, p, width, depth, add=True)
            sign = "- " if negative else ("" if i == 0 else "+ ")
            inner[0] = _Piece(sign + inner[0].text, -1 if i == 0 else depth, "{}" if i else "")
            out += inner
        return out
    if isinstance(expr, sp.HadamardProduct):
        out = []
        for i, factor in enumerate(expr.args):
            inner = _bracketed(factor, p, width, depth, add=False)
            if i:
                inner[0] = _Piece("\\odot " + inner[0].text, -1 if i == 1 and _coefficient(expr, p) else depth,
                                  "{}")
            out += inner
        return out
    if isinstance(expr, (sp.Mul, sp.MatMul)):
        if expr.could_extract_minus_sign() and expr.args[0].is_Number:
            inner = _pieces(negated(expr), p, width, depth)
            return [_Piece("- " + inner[0].text, inner[0].depth, inner[0].lead)] + inner[1:]
        out = []
        args = list(expr.args)
        for i, factor in enumerate(args):
            if factor.is_Rational and not factor.is_Integer:
                inner = [_Piece(p._print(factor))]
            else:
                inner = _bracketed(factor, p, width, depth, add=False, first=i == 0, last=i == len(args) - 1)
            if i:
                inner[0] = _Piece(inner[0].text, -1 if i == 1 and _coefficient(expr, p) else depth, "\\cdot ")
            out += inner
        return out
    if isinstance(expr, sp.Pow) and isinstance(expr.base, sp.Add) and expr.exp.is_Integer and expr.exp > 0:
        inner = _pieces(expr.base, p, width, depth + 1)
        return _wrap(inner, "\\Bigl(", "\\Bigr)^{%s}" % p._print(expr.exp))
    return [_Piece(text)]


def _coefficient(product, p: NotationPrinter) -> bool:
    """Whether the first factor of ``product`` is a leading scalar factor, which a line may not end with: a number,
    a symbol, a factor printed as a fraction (``\\frac{1}{\\sqrt{d_{k}}}``, an entrywise reciprocal
    ``\\frac{1}{\\mathbf{s}}``) or, in a product of matrices, a scalar.  A line ending in it leaves the factor
    dangling from what it multiplies, so the product's first break is not allowed (breaks inside the next factor
    remain)."""
    first = product.args[0]
    if first.is_Number or first.is_Atom or p._print(first).lstrip().startswith(("\\frac", "\\dfrac", "\\tfrac")):
        return True
    return isinstance(product, (sp.MatMul, sp.HadamardProduct)) and not getattr(first, "is_Matrix", False)


def _bracketed(expr, p: NotationPrinter, width: int, depth: int, *, add: bool, first: bool = False,
               last: bool = False) -> list[_Piece]:
    """Pieces of a term (``add``) or factor, in brackets where the printer would put them."""
    needs = p._needs_add_brackets(expr) if add else (
        isinstance(expr, (sp.Add, sp.MatAdd)) or p._needs_mul_brackets(expr, first=first, last=last))
    if not needs:
        return _pieces(expr, p, width, depth)
    inner = _pieces(expr, p, width, depth + 1)
    if len(inner) == 1:
        return [_Piece("\\left(%s\\right)" % inner[0].text)]
    return _wrap(inner, "\\Bigl(", "\\Bigr)")


def _wrap(inner: list[_Piece], left: str, right: str) -> list[_Piece]:
    inner = list(inner)
    inner[0] = _Piece(left + inner[0].text, inner[0].depth, inner[0].lead)
    inner[-1] = _Piece(inner[-1].text + right, inner[-1].depth, inner[-1].lead)
    return inner


def _groups(pieces: list[_Piece], max_depth: int) -> list[list[_Piece]]:
    """``pieces`` in runs that start at an allowed break of depth <= ``max_depth``: what must share a line."""
    groups: list[list[_Piece]] = []
    for piece in pieces:
        if groups and not 0 <= piece.depth <= max_depth:
            groups[-1].append(piece)
        else:
            groups.append([piece])
    return groups


def _text(pieces: list[_Piece]) -> str:
    return " ".join(piece.text for piece in pieces)


def _fill(pieces: list[_Piece], width: int, max_depth: int) -> list[list[_Piece]]:
    """Greedy lines of at most ``width`` (where the allowed breaks permit), breaking at depth <= ``max_depth``: the
    pieces up to the next allowed break go on a line together, so a break is taken when they would not fit."""
    lines: list[list[_Piece]] = []
    for group in _groups(pieces, max_depth):
        if lines and visual_width(_text(lines[-1])) + visual_width(_text(group)) + 1 > width:
            lines.append(list(group))
        elif lines:
            lines[-1] += group
        else:
            lines.append(list(group))
    return lines


def _layered(pieces: list[_Piece], width: int, depth: int, deepest: int) -> list[list[_Piece]]:
    """Lines broken at depth ``depth`` first; only a line that is still too wide (one term or factor too wide by
    itself) is broken inside, at the next depth.  So a line never joins the end of one bracketed group to the next
    term: it breaks at the outermost ``+`` it can, and inside a bracket only where that bracket alone is too wide."""
    out: list[list[_Piece]] = []
    for line in _fill(pieces, width, depth):
        if depth < deepest and visual_width(_text(line)) > width:
            out += _layered(line, width, depth + 1, deepest)
        else:
            out.append(line)
    return out


def break_lines(expr, printer: NotationPrinter, width: int) -> list[str]:
    """``expr`` printed on as many lines as it needs to keep each near ``width`` typeset characters
    (:func:`visual_width`): sums break before a ``+``/``-``, products between factors (the next line
    starts with ``\\cdot``), elementwise products before ``\\circ``; outermost breaks first, a deeper one only
    inside a term that is too wide alone (:func:`_layered`)."""
    pieces = _pieces(textbook_order(expr), printer, width)
    deepest = max((piece.depth for piece in pieces), default=0)
    lines = _layered(pieces, width, 0, max(deepest, 0))
    return [_text(line) if i == 0 else line[0].lead + _text(line) for i, line in enumerate(lines)]


def sum_lines(expr, printer: NotationPrinter, width: int) -> list[str]:
    """``expr`` broken over lines of about ``width`` typeset characters (see :func:`break_lines`);
    lines after the first start with ``+``, ``-``, ``\\circ`` or ``\\cdot``."""
    return [line[2:] if line.startswith("{}") else line for line in break_lines(expr, printer, width)]


def _zero_state(rows: list[_Row], notation: Notation | None) -> list[_Row]:
    """The rows without the zero initial state (see :func:`derive.term_order.drop_zero_state`)."""
    if notation is not None and notation.show_zero_state:
        return rows
    kept = iter(drop_zero_state([(r.lhs, r.chain) for r in rows]))
    out, nxt = [], next(kept, None)
    for r in rows:
        if nxt is not None and nxt[0] is r.lhs:
            out.append(_Row(nxt[0], nxt[1], r.op, r.note))
            nxt = next(kept, None)
    return out


def _note_tex(note: tuple, printer: NotationPrinter) -> str:
    from seqgrad.latex_table import tex_escape

    if not note:
        return ""
    return "\\quad " + "".join(f"\\text{{{tex_escape(x)}}}" if isinstance(x, str) else printer.doprint(x) for x in note)


def componentwise(lhs, rhs) -> bool:
    """Whether ``lhs = rhs`` is several equations at once: both sides tuples of one length, such as
    ``(dA, dS, ...) = (G V^T, ...)`` (:func:`display` sets them one named equation a line)."""
    return isinstance(lhs, sp.Tuple) and isinstance(rhs, sp.Tuple) and len(lhs) == len(rhs) > 1


def _componentwise(rows: list[_Row]) -> list[_Row]:
    """A row whose sides are tuples of one length, ``(dA, dS, dV) = (G V^T, ..., A^T G)``, as one row per
    component (``dA = G V^T``, ...): one named equation a line, never one tuple running off the page."""
    out: list[_Row] = []
    for row in rows:
        rhs = row.chain[0] if len(row.chain) == 1 else None
        if row.op == "=" and componentwise(row.lhs, rhs):
            parts = [_Row(a, [b], row.op) for a, b in zip(row.lhs, rhs)]
            parts[-1].note = row.note
            out += parts
        else:
            out.append(row)
    return out


def _aligned_lines(rows: Iterable, notation: Notation | None, width: int) -> list[str]:
    """The lines ``lhs &= rhs`` of an alignment, ``&`` lined up; long right sides continue on
    ``&\\quad`` lines.  ``width`` is the whole line, left side included."""
    width = integer("width", width, minimum=8)
    printer = _printer(notation)
    rows = _zero_state(_componentwise([r if isinstance(r, _Row) else _row(r) for r in rows]), notation)
    out: list[str] = []
    for row in rows:
        lhs_tex = printer.doprint(row.lhs)
        note = _note_tex(row.note, printer)
        if visual_width(lhs_tex) > width // 3 and not _fits(row, lhs_tex, printer, width):
            out += _long_left(row, printer, width, note)  # a long left side gets lines of its own; the relation
            continue                                       # starts the right side's
        room = max(width - visual_width(lhs_tex) - 5, width // 3)
        first = True
        for i, rhs in enumerate(row.chain):
            last_room = room - (visual_width(note) if i == len(row.chain) - 1 else 0)
            lines = break_lines(rhs, printer, room)
            if i == len(row.chain) - 1 and note:
                if visual_width(lines[-1]) > max(last_room, 8):
                    lines.append(note.removeprefix("\\quad "))
                else:
                    lines[-1] += note
            for k, line in enumerate(lines):
                if k == 0:
                    out.append(f"{lhs_tex if first else ''} &{row.op} {line}")
                else:
                    out.append(f"{' ' * len(lhs_tex) if first else ''} &\\quad {line}")
            first = False
    if not out:
        raise SeqgradValueError("rows", [], "at least one equation")
    return _pad([textbook_form(line) for line in out])


def _fits(row: _Row, lhs_tex: str, printer: NotationPrinter, width: int) -> bool:
    """Whether the whole row (one right side) fits on one line of ``width``."""
    return len(row.chain) == 1 and visual_width(lhs_tex) + visual_width(printer.doprint(row.chain[0])) + 3 <= width


def _long_left(row: _Row, printer: NotationPrinter, width: int, note: str) -> list[str]:
    """The lines of a row whose left side is too wide to stand in front of the ``&``: it is broken over lines
    of its own after the ``&``, and each right side starts a line with the relation.  The note (a quantifier such
    as *for every pos*) ends the last line where it fits there, and gets a line of its own only where it does not."""
    left = break_lines(row.lhs, printer, width)
    out = [f"&{left[0]}"] + [f"&\\quad {line}" for line in left[1:]]
    for i, rhs in enumerate(row.chain):
        right = break_lines(rhs, printer, width)
        out += [f"&{row.op} {right[0]}"] + [f"&\\quad {line}" for line in right[1:]]
    if note and visual_width(out[-1]) + visual_width(note) <= width:
        out[-1] += note
    elif note:
        out.append("&" + note)
    return out


#: Height budget of one display, in text lines (a line with a fraction counts two): a derivation
#: longer than this is set as several displays, one after the other, so that the page may break
#: between them (amsmath never breaks a page inside one without \allowdisplaybreaks).
DISPLAY_LINES = 12


def _height(line: str) -> int:
    return 2 if ("\\frac" in line or "\\sum" in line or "\\prod" in line or "\\Bigl" in line) else 1


def _chunks(lines: list[str], budget: int = DISPLAY_LINES) -> list[list[str]]:
    """``lines`` cut into as few chunks as the ``budget`` of heights allows, of about equal height: a derivation of
    13 lines is cut 7 + 6, never 12 + 1 (a last line left alone at the top of a page, cut off from its derivation).
    A line that continues the row above stays with it.

    >>> [len(c) for c in _chunks([f"x_{i}" for i in range(13)])], [len(c) for c in _chunks(["a"] * 5)]
    ([7, 6], [5])
    """
    total = sum(_height(line) for line in lines)
    target = total / max(1, math.ceil(total / budget))  # the chunks' equal share of the height
    chunks: list[list[str]] = [[]]
    used = 0  # the height of the lines so far, every chunk's
    for line in lines:
        h = _height(line)
        continues = line.lstrip().startswith("&")  # the rest of the row above: never cut off from it
        if chunks[-1] and used + h > target * len(chunks) + 0.5 and not continues:
            chunks.append([])
        chunks[-1].append(line)
        used += h
    return chunks


def aligned(rows: Iterable, notation: Notation | None = None, *, width: int = 60) -> str:
    """An ``aligned`` environment, for use inside math (``$$...$$`` in a notebook, ``\\[...\\]``):
    one row per equation, aligned at ``=``, long sums and products broken over lines.
    It never breaks across pages; for a document use :func:`display`."""
    body = "\\\\\n".join(_aligned_lines(rows, notation, width))
    return f"\\begin{{aligned}}\n{body}\n\\end{{aligned}}"


_PAGE_BREAKS: contextvars.ContextVar[bool] = contextvars.ContextVar("page_breaks", default=False)


@contextlib.contextmanager
def page_breaks():
    """Within this context (a whole document, such as the notes), :func:`display` and :func:`align` set a derivation
    taller than :data:`DISPLAY_LINES` as **one** environment, so that its ``=`` signs line up from the first row to
    the last, with ``\\displaybreak[0]`` (amsmath: the page may break here) where it would otherwise be cut into
    consecutive displays.  Outside it they keep the consecutive displays, which MathJax renders (it has no
    ``\\displaybreak``) and which break across pages in any document.

    >>> rows = [(sp.Symbol(f"x_{i}"), sp.Symbol("y") ** i) for i in range(14)]
    >>> display(rows).count("\\\\begin{align*}"), display(rows).count("\\\\displaybreak")
    (2, 0)
    >>> with page_breaks():
    ...     one = display(rows)
    >>> one.count("\\\\begin{align*}"), one.count("\\\\displaybreak[0]")
    (1, 1)
    """
    token = _PAGE_BREAKS.set(True)
    try:
        yield
    finally:
        _PAGE_BREAKS.reset(token)


def _continues(line: str) -> bool:
    """Whether ``line`` continues the row above it (``&\\quad {}+ ...``): one formula with it."""
    return line.lstrip().startswith("&")


def _joined(lines: list[str], ends: set = frozenset()) -> str:
    """``lines`` of an alignment joined by ``\\\\``; before a line that continues the row above by ``\\\\*``, so that
    the page never breaks inside one formula (the notes allow page breaks in displays, \\allowdisplaybreaks); after
    a line of ``ends`` (the last of a chunk) ``\\displaybreak[0]`` first: the page may break there.  In a document
    (:func:`page_breaks`) neither the first line nor the last is left alone on a page: ``\\\\*`` after the first
    and before the last (a reviewer found ``dO = dU`` alone at a page's foot, the rest of its display overleaf)."""
    kept = {0, len(lines) - 2} if _PAGE_BREAKS.get() else set()  # the lines after which the page may not break
    out = ""
    for i, line in enumerate(lines):
        if i == len(lines) - 1:
            out += line
        elif i in ends and i not in kept:
            out += line + " \\displaybreak[0]\\\\\n"
        else:
            out += line + ("\\\\*\n" if _continues(lines[i + 1]) or i in kept else "\\\\\n")
    return out


def _environments(env: str, chunks: list[list[str]], label: str = "") -> str:
    """``chunks`` of aligned lines as ``env`` environments: one per chunk, or (:func:`page_breaks`) one in all with
    a permitted page break between the chunks; the label goes on the last line."""
    if _PAGE_BREAKS.get() and len(chunks) > 1:
        lines = _pad([line for chunk in chunks for line in chunk])
        ends = {sum(len(c) for c in chunks[:i + 1]) - 1 for i in range(len(chunks) - 1)}  # the last line of a chunk
        return f"\\begin{{{env}}}\n{_joined(lines, ends)}{label}\n\\end{{{env}}}"
    return "\n".join(f"\\begin{{{env}}}\n" + _joined(_pad(chunk)) + (label if i == len(chunks) - 1 else "")
                     + f"\n\\end{{{env}}}" for i, chunk in enumerate(chunks))


def display(rows: Iterable, notation: Notation | None = None, *, width: int = 60, columns: int = 1) -> str:
    """A complete display for a document body (paste it between paragraphs; it needs only
    ``\\usepackage{amsmath}``): one or more ``align*`` environments, one row per equation aligned
    at ``=``, long sums and products broken over lines, and a derivation taller than
    :data:`DISPLAY_LINES` lines set as consecutive displays so that it breaks across pages (within
    :func:`page_breaks`: one display that may break between the same rows).
    Jupyter (MathJax) renders the same text as it is.

    ``columns=2`` sets short rows side by side, two equations a line (a list of weight gradients), each
    column aligned at its ``=``; a row that does not fit in half the width gets a line of its own.

    >>> import sympy as sp
    >>> a, b, c, d = sp.symbols("a b c d")
    >>> print(display([(a, b), (c, d), (b, a)], columns=2))
    \\begin{align*}
    a &= b & c &= d\\\\
    b &= a
    \\end{align*}
    """
    columns = integer("columns", columns, minimum=1)
    if columns == 1:
        return _environments("align*", _chunks(_aligned_lines(rows, notation, width)))
    lines, side = [], []  # side: the short rows waiting for their line
    for row in rows:
        short = _aligned_lines([row], notation, width // columns)
        if len(short) == 1:
            side.append(short[0])
            if len(side) == columns:
                lines, side = lines + [" & ".join(side)], []
            continue
        lines, side = lines + ([" & ".join(side)] if side else []), []
        lines += _aligned_lines([row], notation, width)  # a long row: a line (or more) of its own
    return _environments("align*", _chunks(lines + ([" & ".join(side)] if side else [])))


def align(rows: Iterable, notation: Notation | None = None, *, width: int = 60, numbered: bool = False,
          label: str | None = None) -> str:
    """An ``align*`` (or numbered ``align``) environment, one row per equation,
    aligned at ``=``; right-hand sums wider than ``width`` typeset characters continue
    on indented lines."""
    env = "align" if numbered else "align*"
    if label and not numbered:
        raise SeqgradValueError("label", label, "a label only on a numbered environment (numbered=True)")
    return _environments(env, _chunks(_aligned_lines(rows, notation, width)), _label(label))


def _pad(lines: list[str]) -> list[str]:
    """Line the ``&`` up in the source too, for readable .tex files."""
    lines = [line.lstrip() if line.lstrip().startswith("&") else line for line in lines]
    col = max(line.index("&") for line in lines)
    return [line[: line.index("&")].ljust(col) + line[line.index("&"):] for line in lines]


def equation(lhs, rhs=None, notation: Notation | None = None, *, numbered: bool = False, label: str | None = None,
             width: int = 60) -> str:
    """One displayed equation ``lhs = rhs`` (or a single expression when ``rhs`` is None).
    A long right-hand sum is split with ``split`` inside the equation."""
    printer = _printer(notation)
    env = "equation" if numbered else "equation*"
    if label and not numbered:
        raise SeqgradValueError("label", label, "a label only on a numbered environment (numbered=True)")
    if rhs is None:
        body = printer.doprint(lhs)
    else:
        lines = break_lines(rhs, printer, integer("width", width, minimum=8))
        lhs_tex = printer.doprint(lhs)
        if len(lines) == 1:
            body = f"{lhs_tex} = {lines[0]}"
        else:
            rest = "\\\\\n".join(f"  &\\quad {line}" for line in lines[1:])
            body = f"\\begin{{split}}\n  {lhs_tex} &= {lines[0]}\\\\\n{rest}\n\\end{{split}}"
    return f"\\begin{{{env}}}\n{body}{_label(label)}\n\\end{{{env}}}"


def relation(lhs, rhs, notation: Notation | None = None, *, op: str = "=", width: int = 60) -> str:
    """``lhs op rhs`` displayed (:func:`display`, one row) so that neither side runs off the page: a short left
    side stays in front of the relation; a long one gets its own lines, and the relation starts the lines of
    the right side."""
    if op not in ("=", r"\neq", r"\le", r"\ge", "<", ">", r"\approx"):
        raise SeqgradValueError("op", op, r"one of =, \neq, \le, \ge, <, >, \approx")
    return display([_Row(lhs, [rhs], op)], notation, width=width)


class _InlinePrinter(NotationPrinter):
    """The notation's printer for running text: a sum or product over several indices is printed as nested ones,
    one index each (``Sum(f, (t, ...), (j, ...))`` as ``\\sum_{j=0}^{4} \\sum_{t=0}^{6} f``, the first index
    innermost: the same value), with the limits beside the sign, not as ``\\sum_{\\substack{...}}``, whose two
    lines of limits push the lines of running text apart; for the same reason every fraction is written on the line,
    ``1/\\sqrt{d_{k}}``, not stacked (``fold_short_frac``: :meth:`NotationPrinter._slashed`)."""

    def __init__(self, notation: Notation | None = None, **settings):
        settings.setdefault("fold_short_frac", True)
        super().__init__(notation, **settings)

    def _nested(self, expr, print_one):
        out = expr.function
        for limit in expr.limits:  # unevaluated: evaluated, Sum(Sum(f, L1), L2) would merge back into Sum(f, L1, L2)
            out = sp.Expr.__new__(type(expr), out, sp.Tuple(*limit))
        return print_one(out)

    def _print_Sum(self, expr):
        return super()._print_Sum(expr) if len(expr.limits) == 1 else self._nested(expr, super()._print_Sum)

    def _print_Product(self, expr):
        return super()._print_Product(expr) if len(expr.limits) == 1 else self._nested(expr, super()._print_Product)


def inline(expr, notation: Notation | None = None) -> str:
    """``$...$`` for running text and table cells: a sum over several indices as nested sums (:class:`_InlinePrinter`),
    so that no limits stack in the line."""
    return f"${_InlinePrinter(notation).doprint(expr)}$"


def tabular(header: Sequence[str], rows: Sequence[Sequence[str]], colspec: str | None = None) -> str:
    """A booktabs ``tabular`` of cells that are already LaTeX (use :func:`inline` for formulas)."""
    ncols = len(header)
    if ncols == 0:
        raise SeqgradValueError("header", list(header), "at least one column")
    for row in rows:
        if len(row) != ncols:
            raise SeqgradValueError("rows", list(row), f"rows of {ncols} cells, like the header")
    colspec = colspec or "l" * ncols
    lines = [f"\\begin{{tabular}}{{{colspec}}}", "\\toprule", " & ".join(header) + " \\\\", "\\midrule"]
    lines += [" & ".join(row) + " \\\\" for row in rows]
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines)


def longtable(header: Sequence[str], rows: Sequence[Sequence[str]], colspec: str | None = None, *,
              caption: str, label: str = "") -> str:
    """A booktabs ``longtable`` (the ``longtable`` package) of cells that are already LaTeX: numbered with
    ``caption``, the column headers repeated at the top of every page it runs over.

    >>> print(longtable(["a", "b"], [["1", "2"]], caption="Two numbers."))
    \\begin{longtable}{ll}
    \\caption{Two numbers.}\\\\
    \\toprule
    a & b \\\\
    \\midrule
    \\endfirsthead
    \\caption[]{Two numbers. (Continued.)}\\\\
    \\toprule
    a & b \\\\
    \\midrule
    \\endhead
    \\bottomrule
    \\endfoot
    1 & 2 \\\\
    \\end{longtable}
    """
    lines = tabular(header, rows, colspec).split("\n")
    head, body = lines[1:4], lines[4:-2]  # toprule, the header row, midrule; the rows
    return "\n".join([lines[0].replace("{tabular}", "{longtable}"), f"\\caption{{{caption}}}"
                      + (f"\\label{{{label}}}" if label else "") + "\\\\", *head, "\\endfirsthead",
                      f"\\caption[]{{{caption} (Continued.)}}\\\\", *head, "\\endhead", "\\bottomrule", "\\endfoot",
                      *body, "\\end{longtable}"])


def equation_table(header: Sequence[str], rows: Sequence[Sequence], notation: Notation | None = None) -> str:
    """A booktabs table whose cells are equations (``Eq`` or ``(lhs, rhs)``) or expressions,
    e.g. the forward/backward table: one forward op and its backward op per row; each cell a line of text, printed
    as running text is (:class:`_InlinePrinter`)."""
    printer = _InlinePrinter(notation)

    def cell(item) -> str:
        if item is None:
            return ""
        if isinstance(item, sp.Equality) or (isinstance(item, tuple) and len(item) == 2):
            lhs, chain = _as_sides(item)
            return "$" + " = ".join([printer.doprint(lhs)] + [printer.doprint(r) for r in chain]) + "$"
        return f"${printer.doprint(item)}$"

    return tabular(list(header), [[cell(c) for c in row] for row in rows])
