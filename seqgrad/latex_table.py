"""Numeric tables as booktabs LaTeX, laid out like the course tables (stdlib only).

Numbers print at a fixed number of significant figures with trailing zeros
stripped, as the course prints them ("0.65", "1.2", "-0.0954"); an optional
decimal comma writes ``0{,}65`` for Russian-language notes.
"""

from __future__ import annotations

import math
import re
from typing import Callable, Sequence

from .errors import NonFiniteError, SeqgradValueError


def format_sigfig(x: float, figures: int = 3, trailing_zeros: bool = False) -> str:
    """``x`` rounded to ``figures`` significant figures, plain decimal, trailing zeros stripped as the course
    prints them ("0.2"), or kept with ``trailing_zeros`` so that every entry shows its figures ("0.200")."""
    if figures < 1:
        raise SeqgradValueError("figures", figures, "an integer >= 1")
    x = float(x)
    if not math.isfinite(x):
        raise NonFiniteError("x", x)
    if x == 0:
        return f"{0:.{figures - 1}f}" if trailing_zeros else "0"
    exponent = math.floor(math.log10(abs(x)))
    decimals = figures - 1 - exponent
    rounded = round(x, decimals)
    if rounded != 0 and math.floor(math.log10(abs(rounded))) > exponent:  # 0.9996 -> 1.00
        decimals -= 1
        rounded = round(x, decimals)
    text = f"{rounded:.{max(decimals, 0)}f}"
    if "." in text and not trailing_zeros:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _cell(x: float, figures: int, decimal_comma: bool, trailing_zeros: bool = False) -> str:
    text = format_sigfig(x, figures, trailing_zeros)
    if decimal_comma:
        text = text.replace(".", "{,}")
    return f"${text}$"


_TEX_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
                # characters of the course texts that pdflatex's default input does not set up
                "−": "$-$", "≈": r"$\approx$", "×": r"$\times$", "·": r"$\cdot$", "≤": r"$\le$", "≥": r"$\ge$",
                "≠": r"$\neq$", "±": r"$\pm$", "→": r"$\to$", "√": r"$\surd$", "∞": r"$\infty$", "§": r"\S{}",
                "–": "--", "—": "---", "«": "``", "»": "''", "“": "``", "”": "''", "’": "'", "…": r"\ldots{}"}


def tex_escape(text: str) -> str:
    """Plain text for LaTeX: specials escaped, common math characters set in math mode, any other
    non-ASCII character written as its code point, so that the document always compiles."""
    return "".join(_TEX_ESCAPES.get(ch, ch if ord(ch) < 128 else f"\\texttt{{U+{ord(ch):04X}}}") for ch in str(text))


#: Preamble lines that set Cyrillic (:func:`with_cyrillic`) with T2A fonts and babel's Russian where TeX Live has
#: them (Debian: texlive-lang-cyrillic), and as its transliteration where it has not: the document compiles either way.
#: ``cmap`` (where present) maps the glyphs back to Unicode, so that the PDF's Cyrillic can be searched and copied.
CYRILLIC_PREAMBLE = (
    "\\IfFileExists{t2aenc.def}{\\IfFileExists{russianb.ldf}{\\def\\seqgradhascyr{}}{}}{}\n"
    "\\ifdefined\\seqgradhascyr\n\\IfFileExists{cmap.sty}{\\usepackage{cmap}}{}\n\\usepackage[T2A,OT1]{fontenc}\n\\usepackage[russian,english]{babel}\n"
    "\\newcommand{\\seqgradcyr}[2]{\\foreignlanguage{russian}{#1}}\n"
    "\\else\n\\newcommand{\\seqgradcyr}[2]{#2}\n\\fi\n")
_CYRILLIC_RUN = re.compile(r"[\u0400-\u04ff]+(?:[ \-]+[\u0400-\u04ff]+)*")
_TRANSLIT = dict(zip("абвгдеёжзийклмнопрстуфхцчшщъыьэюя",
                     "a b v g d e yo zh z i y k l m n o p r s t u f kh ts ch sh shch - y - e yu ya".split()))


def transliterate(text: str) -> str:
    """Russian Cyrillic in Latin letters (the course's own "Ya lyublyu MO"); hard and soft signs are dropped.

    >>> transliterate("Я люблю МО")
    'Ya lyublyu MO'
    """
    def one(ch: str) -> str:
        low = _TRANSLIT.get(ch.lower(), ch)
        low = "" if low == "-" else low
        return low if ch.islower() or ch == low else low[:1].upper() + low[1:]

    return "".join(one(ch) for ch in text)


def with_cyrillic(text: str, escape: Callable[[str], str] = tex_escape) -> str:
    """``text`` for a document whose preamble has :data:`CYRILLIC_PREAMBLE`: each run of Cyrillic words set in
    Russian (or transliterated, where TeX Live lacks Cyrillic), everything else by ``escape``.

    >>> print(with_cyrillic("week06 §Что нового?:12"))
    week06 \\S{}\\seqgradcyr{Что нового}{Chto novogo}?:12
    """
    out, at = [], 0
    for m in _CYRILLIC_RUN.finditer(text):
        if m.start() > at:
            out.append(escape(text[at:m.start()]))
        out.append(f"\\seqgradcyr{{{m.group(0)}}}{{{tex_escape(transliterate(m.group(0)))}}}")
        at = m.end()
    if at < len(text) or not out:
        out.append(escape(text[at:]))
    return "".join(out)


def booktabs(rows: Sequence[Sequence[float]], *, row_labels: Sequence[str] | None = None,
             col_labels: Sequence[str] | None = None, corner: str = "", caption: str | None = None,
             label: str | None = None, figures: int = 3, decimal_comma: bool = False, raw_labels: bool = False,
             trailing_zeros: bool = False) -> str:
    """A ``table`` environment with ``\\toprule``/``\\midrule``/``\\bottomrule`` (needs ``booktabs``).

    Labels are escaped for LaTeX unless ``raw_labels`` (then they are written as given, e.g. math).
    """
    rows = [list(r) for r in rows]
    if not rows or not rows[0]:
        raise SeqgradValueError("rows", rows, "at least one row with at least one number")
    width = len(rows[0])
    if any(len(r) != width for r in rows):
        raise SeqgradValueError("rows", [len(r) for r in rows], f"rows of equal length {width}")
    if row_labels is not None and len(row_labels) != len(rows):
        raise SeqgradValueError("row_labels", len(row_labels), f"{len(rows)} labels, one per row")
    if col_labels is not None and len(col_labels) != width:
        raise SeqgradValueError("col_labels", len(col_labels), f"{width} labels, one per column")
    esc = (lambda s: str(s)) if raw_labels else tex_escape
    spec = ("l" if row_labels is not None else "") + "r" * width
    # a small type and narrow gaps let the course's 7-token tables fit a plain article's text width
    lines = [r"\begin{table}[htbp]", r"\centering", r"\small", r"\setlength{\tabcolsep}{4pt}"]
    if caption:
        lines.append(rf"\caption{{{esc(caption)}}}")
    if label:
        lines.append(rf"\label{{{label}}}")
    lines += [rf"\begin{{tabular}}{{{spec}}}", r"\toprule"]
    if col_labels is not None:
        split = [str(c).split(": ", 1) for c in col_labels]
        if all(len(parts) == 2 for parts in split):  # "j=1: journey": the index above the word, two header rows
            lead = [""] if row_labels is not None else []
            lines.append(" & ".join(lead + [esc(a) for a, _ in split]) + r" \\")
            col_labels = [b for _, b in split]
        head = ([esc(corner)] if row_labels is not None else []) + [esc(c) for c in col_labels]
        lines += [" & ".join(head) + r" \\", r"\midrule"]
    for i, r in enumerate(rows):
        cells = ([esc(row_labels[i])] if row_labels is not None else []) + [_cell(x, figures, decimal_comma, trailing_zeros) for x in r]
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"
