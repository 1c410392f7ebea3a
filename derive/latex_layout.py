"""Lay formulas out as LaTeX environments: equations, aligned derivations, tables.

Every formula is printed by :class:`derive.latex_settings.NotationPrinter`;
this module only arranges the printed pieces.  Long sums are broken between
top-level terms, so a bracket never spans two lines:

>>> import sympy as sp
>>> from derive.latex_layout import align
>>> g = [sp.Symbol(f"g_{t}^z") for t in range(3)]
>>> h = [sp.Symbol(f"h_{t - 1}") for t in range(3)]
>>> print(align([(sp.Symbol("G"), sum(a * b for a, b in zip(g, h)))], width=20))
\\begin{align*}
G &= g^{z}_{0} h_{-1} + g^{z}_{1} h_{0}\\\\
  &\\quad + g^{z}_{2} h_{1}
\\end{align*}
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

import sympy as sp

from seqgrad.errors import SeqgradTypeError, SeqgradValueError
from seqgrad.validate import integer

from .latex_settings import Notation, NotationPrinter

_LABEL = re.compile(r"[A-Za-z0-9:._-]+")


def _printer(notation: Notation | None) -> NotationPrinter:
    return NotationPrinter(notation)


def _label(label: str | None) -> str:
    if label is None:
        return ""
    if not isinstance(label, str) or not _LABEL.fullmatch(label):
        raise SeqgradValueError("label", label, "letters, digits and : . _ - only (e.g. 'eq:bptt')")
    return f"\\label{{{label}}}"


def _as_sides(row) -> tuple[object, list[object]]:
    """A row is an ``Eq``, or ``(lhs, rhs)``, or ``(lhs, [rhs1, rhs2, ...])`` for a chain ``lhs = rhs1 = rhs2``."""
    if isinstance(row, sp.Equality):
        return row.lhs, [row.rhs]
    if isinstance(row, (tuple, list)) and len(row) == 2:
        lhs, rhs = row
        chain = list(rhs) if isinstance(rhs, (list, tuple)) else [rhs]
        if not chain:
            raise SeqgradValueError("rows", row, "a right-hand side with at least one expression")
        return lhs, chain
    raise SeqgradTypeError("rows", row, "an Eq or a pair (lhs, rhs)")


def _natural(term) -> list:
    """Order terms as a reader counts: g_2 before g_10, signs ignored."""
    text = str(-term if term.could_extract_minus_sign() else term)
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


_STYLE = re.compile(r"\\(?:mathbf|boldsymbol|mathrm|mathcal|operatorname|widehat|widetilde|hat|tilde|left|right|big|Big)\b")
_COMMAND = re.compile(r"\\[A-Za-z]+")
_OPERATOR = re.compile(r"\\(sin|cos|tan|tanh|sinh|cosh|exp|log|ln|max|min|det|operatorname)\b")


def visual_width(tex: str) -> int:
    """About how many characters wide ``tex`` looks when typeset: style macros and braces
    take no room, a command such as ``\\alpha`` takes one, ``\\sin`` three, a binary ``+``, ``-`` or ``=`` three."""
    tex = _COMMAND.sub("x", _OPERATOR.sub(lambda m: m.group(1), _STYLE.sub("", tex)))
    return sum(3 if ch in "+-=" else 1 for ch in tex if ch not in "{}^_ ")


def sum_lines(expr, printer: NotationPrinter, width: int) -> list[str]:
    """``expr`` printed on as many lines as its top-level terms need to keep each
    line near ``width`` typeset characters (see :func:`visual_width`); lines after the first start with ``+`` or ``-``.
    Terms come in natural order of their indices (``x_2`` before ``x_10``)."""
    if not isinstance(expr, (sp.Add, sp.MatAdd)):
        return [printer.doprint(expr)]
    lines: list[str] = []
    current = ""
    for i, term in enumerate(sorted(expr.args, key=_natural)):
        sign = "+"
        if term.could_extract_minus_sign():
            sign, term = "-", -term
        text = printer.doprint(term)
        if printer._needs_add_brackets(term):
            text = f"\\left({text}\\right)"
        piece = (f"- {text}" if sign == "-" else text) if i == 0 else f"{sign} {text}"
        if current and visual_width(current) + visual_width(piece) + 1 > width:
            lines.append(current)
            current = piece
        else:
            current = f"{current} {piece}" if current else piece
    lines.append(current)
    return lines


def _aligned_lines(rows: Iterable, notation: Notation | None, width: int) -> list[str]:
    """The lines ``lhs &= rhs`` of an alignment, ``&`` lined up; long right-hand sums
    continue on ``&\\quad`` lines."""
    width = integer("width", width, minimum=8)
    printer = _printer(notation)
    out: list[str] = []
    for row in rows:
        lhs, chain = _as_sides(row)
        lhs_tex = printer.doprint(lhs)
        first = True
        for rhs in chain:
            for k, line in enumerate(sum_lines(rhs, printer, width)):
                if k == 0:
                    out.append(f"{lhs_tex if first else ''} &= {line}")
                else:
                    out.append(f"{' ' * len(lhs_tex) if first else ''} &\\quad {line}")
            first = False
    if not out:
        raise SeqgradValueError("rows", [], "at least one equation")
    return _pad(out)


def aligned(rows: Iterable, notation: Notation | None = None, *, width: int = 60) -> str:
    """An ``aligned`` environment (inside display math, as ``_repr_latex_`` needs),
    one row per equation, aligned at ``=``, long sums broken over lines."""
    body = "\\\\\n".join(_aligned_lines(rows, notation, width))
    return f"\\begin{{aligned}}\n{body}\n\\end{{aligned}}"


def align(rows: Iterable, notation: Notation | None = None, *, width: int = 60, numbered: bool = False,
          label: str | None = None) -> str:
    """An ``align*`` (or numbered ``align``) environment, one row per equation,
    aligned at ``=``; right-hand sums wider than ``width`` typeset characters continue
    on indented lines."""
    out = _aligned_lines(rows, notation, width)
    env = "align" if numbered else "align*"
    if label and not numbered:
        raise SeqgradValueError("label", label, "a label only on a numbered environment (numbered=True)")
    body = "\\\\\n".join(out)
    return f"\\begin{{{env}}}\n{body}{_label(label)}\n\\end{{{env}}}"


def _pad(lines: list[str]) -> list[str]:
    """Line the ``&`` up in the source too, for readable .tex files."""
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
        lines = sum_lines(rhs, printer, integer("width", width, minimum=8))
        lhs_tex = printer.doprint(lhs)
        if len(lines) == 1:
            body = f"{lhs_tex} = {lines[0]}"
        else:
            rest = "\\\\\n".join(f"  &\\quad {line}" for line in lines[1:])
            body = f"\\begin{{split}}\n  {lhs_tex} &= {lines[0]}\\\\\n{rest}\n\\end{{split}}"
    return f"\\begin{{{env}}}\n{body}{_label(label)}\n\\end{{{env}}}"


def relation(lhs, rhs, notation: Notation | None = None, *, op: str = "=", width: int = 60) -> str:
    """``lhs op rhs`` displayed so that neither side runs off the page: a short left side stays
    in front of the relation (as :func:`align` does); a long one gets its own lines, and the
    relation starts the lines of the right side."""
    if op not in ("=", r"\neq", r"\le", r"\ge", r"\approx"):
        raise SeqgradValueError("op", op, r"one of =, \neq, \le, \ge, \approx")
    width = integer("width", width, minimum=8)
    printer = _printer(notation)
    left, right = sum_lines(lhs, printer, width), sum_lines(rhs, printer, width)
    if len(left) == 1 and visual_width(left[0]) <= width // 3:
        lines = [f"{left[0]} &{op} {right[0]}"] + [f"&\\quad {line}" for line in right[1:]]
    else:
        lines = [f"&{left[0]}"] + [f"&\\quad {line}" for line in left[1:]]
        lines += [f"&{op} {right[0]}"] + [f"&\\quad {line}" for line in right[1:]]
    return "\\begin{align*}\n" + "\\\\\n".join(lines) + "\n\\end{align*}"


def inline(expr, notation: Notation | None = None) -> str:
    """``$...$`` for running text and table cells."""
    return f"${_printer(notation).doprint(expr)}$"


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


def equation_table(header: Sequence[str], rows: Sequence[Sequence], notation: Notation | None = None) -> str:
    """A booktabs table whose cells are equations (``Eq`` or ``(lhs, rhs)``) or expressions,
    e.g. the forward/backward table: one forward op and its backward op per row."""
    printer = _printer(notation)

    def cell(item) -> str:
        if item is None:
            return ""
        if isinstance(item, sp.Equality) or (isinstance(item, tuple) and len(item) == 2):
            lhs, chain = _as_sides(item)
            return "$" + " = ".join([printer.doprint(lhs)] + [printer.doprint(r) for r in chain]) + "$"
        return f"${printer.doprint(item)}$"

    return tabular(list(header), [[cell(c) for c in row] for row in rows])
