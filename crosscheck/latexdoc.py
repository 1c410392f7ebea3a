"""Assemble a complete, compilable LaTeX document: course notes a lecturer hands out.

The document (article class, amsmath, booktabs, graphicx) is a chapter: a title
page with a short introduction, the notation, one section per topic in the
course's order (built by :mod:`crosscheck.notes`, which pulls the derivations,
the proofs, the checks and the figures from the packages that own them), and
an appendix with the verification: the identities with their ids and sources,
the checks run now, the printed claims.  A section whose package is not in this
checkout is never faked: asking for it raises :class:`SectionUnavailable`.

>>> from seqgrad.crosscheck import latexdoc
>>> latexdoc.SECTION_NAMES
('rnn', 'paths', 'gates', 'positional', 'attention', 'residual', 'encoder', 'decoder', 'conv')
>>> latexdoc.resolve_sections("rnn,nope")
Traceback (most recent call last):
...
seqgrad.errors.SeqgradValueError: sections='nope' is not allowed: one of rnn, paths, gates, positional, attention, residual, encoder, decoder, conv
"""

from __future__ import annotations

import dataclasses

import importlib.util
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from seqgrad.derive.latex_settings import Notation
from seqgrad import validate
from seqgrad.atomic import write_text
from seqgrad.errors import SeqgradError, SeqgradTypeError, SeqgradValueError


from .latex_parts import Build, SectionUnavailable, code, quotation, ragged, source_tex, text, tolerance_words
from . import references
from .latexrun import build_sections

PACKAGES = ("amsmath", "amssymb", "array", "booktabs", "graphicx", "longtable", "[section]{placeins}", "caption")
#: (placeins with ``section``: a float stays in its section, a barrier before each \section; a figure is placed
#: "here" where it fits, [htbp], and stands in its section's source after the text it shows, not at the section's
#: end, so that the barrier does not send it to a page of its own and leave the page before half empty)


class LatexError(SeqgradError):
    """The TeX engine could not compile a document; the message quotes its first error line."""


@dataclass(frozen=True)
class Section:
    name: str
    title: str
    requires: tuple[str, ...]  # modules that must exist in this checkout
    build: Callable[[Build], str] | None  # None: not wired to its package yet

    def missing(self) -> str | None:
        """What this section still lacks in this checkout (a module, or its builder), or None."""
        for module in self.requires:
            try:
                if importlib.util.find_spec(module) is None:
                    return module
            except ModuleNotFoundError:
                return module
        if self.build is None:
            return "its section builder in crosscheck/latexdoc.py"
        return None


# --------------------------------------------------------------------------- identity status


@dataclass
class _ClaimRow:
    """One row of the table of printed statements: an entry, its verdict in words, and the count of numbers it
    checks where the row may stand for a run of its like (a verified table of the course, no erratum); ``last``,
    the run's last entry where it stands for several."""
    entry: object
    source: str  # as the table cites it (a section, without its lines)
    verdict: str
    shown: int | None
    last: object = None

    def table(self, entry=None) -> int | None:
        """The number of the course's table ``entry`` (the row's own by default) checks every number of
        (``table10``), if it is one and the row may stand for a run."""
        m = re.fullmatch(r"table(\d+)", (entry or self.entry).name)
        return int(m.group(1)) if m and self.shown is not None else None

    def statement(self, entry=None) -> str:
        """What the entry checks, without its table's number: alike for every table checked alike."""
        entry = entry or self.entry
        return entry.what.replace(f"Table {self.table(entry)}:", "", 1)

    def cells(self) -> list[str]:
        key = _key(self.entry.source)
        if self.last is None:
            return [code(self.entry.name), self.source, quotation(self.entry.what, key), self.verdict]
        first, last = self.table(), self.table(self.last)
        what = self.entry.what.replace(f"Table {first}:", f"Tables {first}-{last}:", 1)
        return [f"{code(self.entry.name)}--{code(self.last.name)}", self.source,
                quotation(what, key).replace(f"~{first}-{last}", f"~{first}--{last}", 1),
                self.verdict.replace(" numbers)", " numbers each)")]


def _collapsed(rows: list[_ClaimRow]) -> list[_ClaimRow]:
    """The rows with each run of the course's tables checked alike (consecutive tables of one section, each
    verified with as many numbers, the same statement) as one row, ``table10--table15``, ``Tabs. 10--15``,
    ``verified (21 numbers each)``: the same verdicts, without one row repeated for every table."""
    out: list[_ClaimRow] = []
    for row in rows:
        prev = out[-1] if out else None
        if (prev is not None and row.table() is not None and prev.table() is not None
                and prev.table(prev.last or prev.entry) == row.table() - 1 and row.source == prev.source
                and row.verdict == prev.verdict and row.statement() == prev.statement()):
            prev.last = row.entry
        else:
            out.append(row)
    return out


def _claims(b: Build) -> str:
    """Every printed numeric claim of the course texts, verified now: one row per printed statement,
    one per printed table, and each printed number that is not its value rounded as a sentence (the printed number,
    the value at the printed digits, the verdict in words)."""
    from functools import lru_cache

    from seqgrad.derive.latex_layout import longtable
    from seqgrad.numeric import course

    from .claims_catalogue import entries, table_entries

    from .claims_words import sentences, verdict_words, working_words

    from .claims_statements import statements

    traces = lru_cache(maxsize=None)(lambda stage: course.trace(stage, device=b.device))
    rows, errata, notes_ = [], [], []
    # an entry whose statement the texts' errata mark imprecise or false: its row says so (one verdict per statement;
    # the number it checks holds only under the assumption the errata add).  Only a statement of the entry's own text
    # judges it: a number of one text that bears on another text's statement (the course's exercise 4 on the wiki's
    # concatenation) has no erratum of its own to point to
    judged = {(ref.split(".", 1)[1], _key(s.cite)): s.verdict for s in statements() if s.verdict in ("imprecise", "false")
              for ref in s.checked_by if ref.startswith("claims.")}
    for entry in list(entries()) + list(table_entries(traces)):
        verdicts = [claim.verify() for claim in entry.claims]
        bad = [v for v in verdicts if not v.verified]
        shown = printed_count(verdicts)
        count = f" ({shown} numbers)" if shown > 1 else ""
        verdict = verdict_words([v.status for v in verdicts]) + count
        judgement = judged.get((entry.name, _key(entry.source)))
        if judgement and bad:  # its number is the statement's counterexample: the statement's erratum says it
            verdict = f"the statement is {judgement}{count} (see its erratum below)"
        elif judgement:
            verdict = f"number {verdict}; the statement is {judgement} (see its erratum below)"
        rows.append(_ClaimRow(entry, source_tex(entry.source, b.notation), verdict,
                              shown if not judgement and not bad else None))
        # a truncated number is wrong at the digits it prints (0.9999 for cos 0.01 = 0.99995...): an erratum
        wrong = ("contradicted", "undecided", "truncated")
        for found, kept in ((errata, [v for v in bad if v.status in wrong]),
                            (notes_, [v for v in bad if v.status not in wrong])):
            if kept and not (found is errata and judgement):  # (a judged entry: its statement's erratum)
                found.append((entry, kept))
    total = len(rows)
    rows = [row.cells() for row in _collapsed(rows)]
    parts = [f"Table~\\ref{{tab:claims}} lists the {total} printed statements of the course texts. Each was evaluated "
             "exactly when these notes were written and compared with the number as printed (at the decimals written, "
             "or at 3 significant figures for the tables).",
             "{\\footnotesize\n" + longtable(["entry", "source", "statement", "verdict"], rows,
                                               ragged("3.4cm", "3.3cm", "5.7cm", "2.2cm"),
                                               caption="The printed statements of the course texts and their verdicts.",
                                               label="tab:claims") + "\n}"]
    # each printed number that is not its value rounded: what the text prints, the value at the printed digits, the
    # verdict in words (:mod:`crosscheck.claims_words`); the errata first, then the numbers rounding explains
    for title, found, intro in (("Errata: printed numbers that are wrong", errata, ""),
                                ("Printed numbers that follow the text's own working", notes_, working_words(notes_))):
        if found:
            items = "\n".join(f"\\item {code(e.name)} ({source_tex(e.source, b.notation)}). "
                               + sentences(vs, e.derived, e.implies, key=_key(e.source))
                               + (f"\\\\ \\emph{{{quotation(e.note or e.erratum, _key(e.source))}}}"
                                  if (e.note or e.erratum) and not _said(vs) else "")
                               for e, vs in found)
            parts.append(f"\\subsection*{{{title}}}\n{intro}\n\\begin{{itemize}}\\raggedright\n{items}\n\\end{{itemize}}")
    parts.append(_statement_errata(b))
    return "\n\n".join(p for p in parts if p)


def _said(verdicts) -> bool:
    """Whether the sentences of ``verdicts`` already say what an entry's note says: each names the values of the
    text's working that give the printed number (the note would say it again)."""
    return all(v.status == "rounding-consistent" and getattr(v, "alternative", None) is not None for v in verdicts)


def _key(source) -> str | None:
    """The course text a source cites first (``week06``, ``lesson``, ...), or None."""
    from seqgrad.sources import TEXTS

    m = re.search(r"\b(" + "|".join(TEXTS) + r")\b", str(source))
    return m[1] if m else None


def printed_count(verdicts) -> int:
    """How many numbers the text prints in an entry's claims (``verdicts``): each number of a printed vector, and a
    number of a vector checked again on its own (from the text's rounded inputs) once."""
    vectors = [v.claim.printed for verdict in verdicts for v in (getattr(verdict, "entries", None) or ())]
    scalars = [v for v in verdicts if not getattr(v, "entries", None) and v.claim.printed not in vectors]
    return len(vectors) + len(scalars)


def _statement_errata(b: Build) -> str:
    """The texts' prose statements whose verdict is imprecise or false (:func:`crosscheck.claims_statements.statements`):
    each correction once (:attr:`~crosscheck.claims_statements.Statement.corrections`), after the statements it applies
    to, each with its citation and its words (a statement a correction above already quoted, by its citation only)."""
    from seqgrad.latex_table import with_cyrillic

    from .claims_statements import statements

    wrong = [s for s in statements() if s.verdict in ("imprecise", "false")]
    if not wrong:
        return ""

    def quote(s):
        return lambda words: quotation(words, s.key)

    groups: dict[str, list] = {}  # correction -> the statements it corrects, in the texts' order
    for s in wrong:
        for correction in s.corrections or (s.reason,):
            groups.setdefault(correction, []).append(s)
    quoted, items = set(), []
    for correction, said in groups.items():
        places = []
        for s in said:
            where = f"\\textbf{{{s.verdict}}} ({source_tex(s.cite, b.notation)})"
            places.append(where + (" (quoted above)" if id(s) in quoted else ": " + with_cyrillic(s.text, quote(s))))
            quoted.add(id(s))
        items.append("\\item " + ";\\\\ ".join(places)  # several places: one a line
                     + (f"\\\\ \\emph{{{with_cyrillic(correction, quote(said[0]))}}}" if correction else ""))
    return ("\\subsection*{Errata among the texts' statements}\n"
            f"{len(wrong)} prose statements of the texts are imprecise or false. Each correction is given once, after "
            "the statements it applies to.\n"
            f"\\begin{{itemize}}\n{chr(10).join(items)}\n\\end{{itemize}}")


def _section(name: str, title: str, requires: tuple[str, ...]) -> Section:
    def build(b: Build):
        from seqgrad.derive.latex_layout import page_breaks

        from . import notes

        b = dataclasses.replace(b, marks=[])  # the section's verification marks, said in one footnote
        with page_breaks():  # a document: a long derivation is one display that may break across pages
            return notes.one_footnote(dict(notes.ORDER)[name](b), b)

    return Section(name, title, requires, build)


#: The chapter's sections, in the course's order (:mod:`crosscheck.notes` builds them).
SECTIONS: dict[str, Section] = {s.name: s for s in (
    _section("rnn", "Recurrent networks and backpropagation through time", ("seqgrad.derive.rnn", "seqgrad.derive.builtin_cells")),
    _section("paths", "Path products and gradient flow", ("seqgrad.derive.rnn", "seqgrad.crosscheck.figures.paths")),
    _section("gates", "Gated cells: GRU and LSTM",
             ("seqgrad.derive.gated", "seqgrad.derive.builtin_cells", "seqgrad.crosscheck.figures.paths")),
    _section("positional", "Positional encoding",
             ("seqgrad.derive.positional", "seqgrad.derive.catalogue", "seqgrad.crosscheck.figures.positional")),
    _section("attention", "Attention", ("seqgrad.derive.blocks", "seqgrad.derive.softmax", "seqgrad.derive.catalogue")),
    _section("residual", "LayerNorm and residual paths",
             ("seqgrad.derive.residual", "seqgrad.derive.layernorm", "seqgrad.derive.catalogue", "seqgrad.crosscheck.figures.depth")),
    _section("encoder", "The Transformer encoder block",
             ("seqgrad.numeric.course", "seqgrad.latex_table", "seqgrad.crosscheck.checks.encoder", "seqgrad.crosscheck.figures.encoder")),
    _section("decoder", "The Transformer decoder",
             ("seqgrad.derive.decoder", "seqgrad.numeric.decoder", "seqgrad.crosscheck.figures.decoder",
              "seqgrad.crosscheck.figures.encoder")),  # the causal mask on the encoder's example
    _section("conv", "The convolution layer", ("seqgrad.derive.conv", "seqgrad.numeric.conv", "seqgrad.crosscheck.figures.conv")),
)}

#: The appendix's last part: every printed numeric claim of the course texts, verified now.
CLAIMS = Section("claims", "Printed claims of the course texts",
                 ("seqgrad.derive.claims", "seqgrad.crosscheck.claims_catalogue"), lambda b: _claims(b))
SECTION_NAMES = tuple(SECTIONS)


def available_sections() -> list[str]:
    """Sections whose packages are present in this checkout."""
    return [name for name, s in SECTIONS.items() if s.missing() is None]


def resolve_sections(spec: str | Sequence[str] | None) -> list[str]:
    """Section names from ``"rnn,gates"`` or a list; None means every available section.
    Unknown names raise SeqgradValueError; known but missing ones raise SectionUnavailable."""
    if spec is None:
        return available_sections()
    if isinstance(spec, str):
        names = [n.strip() for n in spec.split(",") if n.strip()]
    elif isinstance(spec, (list, tuple)) and all(isinstance(n, str) for n in spec):
        names = list(spec)
    else:
        raise SeqgradTypeError("sections", spec, "a comma-separated string or a list of section names")
    if not names:
        raise SeqgradValueError("sections", spec, "at least one of " + ", ".join(SECTION_NAMES))
    for n in names:
        if n not in SECTIONS:
            raise SeqgradValueError("sections", n, "one of " + ", ".join(SECTION_NAMES))
    for n in names:
        missing = SECTIONS[n].missing()
        if missing:
            raise SectionUnavailable(n, missing)
    return list(dict.fromkeys(names))


# --------------------------------------------------------------------------- the document

def preamble(title: str = "Gradients of sequence models: course notes") -> str:
    """The document class, the packages, and the title page's title."""
    from seqgrad.latex_table import CYRILLIC_PREAMBLE

    return ("\\documentclass[11pt,a4paper]{article}\n\\usepackage[margin=2.2cm]{geometry}\n" + CYRILLIC_PREAMBLE
            + "".join("\\usepackage" + (p if p.startswith("[") else "{" + p + "}") + "\n" for p in PACKAGES)
            + "\\setlength{\\parindent}{0pt}\n\\setlength{\\parskip}{0.6ex}\n"
            # a table's caption stands above it, with space before its top rule (LaTeX's skip is set above a caption,
            # the place of a figure's, and left a table's caption touching the rule)
            + "\\captionsetup[table]{position=top,skip=8pt}\n"
            # a tall display may break between its rows (discouraged, not forbidden): a page no longer ends half empty
            # because a group of equations that does not fit in what is left of it is pushed whole to the next page;
            # derive.latex_layout.display prefers its chunks of about equal height (\displaybreak[0])
            + "\\allowdisplaybreaks[1]\n"
            # a float may take most of a text page (LaTeX's defaults, 0.7 of a page at the top and 0.2 of it for
            # text, sent a large figure to a page of its own, most of it white)
            + "\\renewcommand{\\topfraction}{0.85}\n\\renewcommand{\\textfraction}{0.1}\n"
            # a page of floats may be half full: a float that does not fit on the page of its text goes to a page of
            # its own sooner, instead of holding back the floats after it until a section's barrier (which left the
            # text page before the barrier a third empty)
            + "\\renewcommand{\\floatpagefraction}{0.5}\n"
            + f"\\title{{{text(title)}}}\n\\author{{}}\n\\date{{}}\n\\begin{{document}}\n\\sloppy\n")


#: The notes' own letters (on top of the text's, unless the notation renames them itself): the standard deviation of
#: LayerNorm is ``s``, so that ``\sigma`` is only the sigmoid; a convolution's zero padding is the italic ``p`` (a letter
#: no other symbol of the notes uses: an upright ``pad`` read as the English word, ``P`` is the positional encodings);
#: a receptive field is an upright ``rf`` (``r_t`` is the GRU's reset gate, ``R(k)`` the encodings' rotation).
NOTES_LETTERS = {"sigma": "s", "pad": "p", "rf": r"\mathrm{rf}"}

#: The notes' own names of whole symbols (unless the notation names them itself): the output layer's weight is
#: ``w_y``, so that an index ``o`` (``w_xo``, ``w_ho``, ``b_o``) only ever names the LSTM's output gate.
NOTES_SYMBOL_NAMES = {"w_o": "w_{y}"}


#: The notes' maps whose value is a matrix, set in bold as every matrix: the positional encodings' rotation ``R(k)``
#: and its blocks ``R_j(k)``.
NOTES_MATRICES = frozenset({"R", "R_j"})


def notes_notation(notation: Notation) -> Notation:
    """``notation`` with the notes' own letters and names (:data:`NOTES_LETTERS`, :data:`NOTES_SYMBOL_NAMES`), where
    it does not rename those symbols itself, and its matrix-valued maps (:data:`NOTES_MATRICES`) in bold."""
    letters = {k: v for k, v in NOTES_LETTERS.items() if k not in notation.letters and k not in notation.symbol_names}
    names = {k: v for k, v in NOTES_SYMBOL_NAMES.items() if k not in notation.symbol_names}
    return notation.replace(letters={**notation.letters, **letters}, symbol_names={**notation.symbol_names, **names},
                            vectors=notation.vectors | NOTES_MATRICES)


def front_matter(b: Build, names: Sequence[str], bodies: dict[str, str] | None = None) -> str:
    """The title page (title, a short introduction, the contents) and the notation section; ``bodies`` (section
    name -> text): what the introduction says the sections hold."""
    from . import notes

    return ("\\begin{titlepage}\n\\maketitle\n\\thispagestyle{empty}\n" + notes.introduction(b, names, b.appendix, bodies)
            + "\n\\end{titlepage}\n\\tableofcontents\n\\clearpage\n\n"
            + "\\section{Notation}\\label{sec:notation}\n\n" + notes.notation_section(b) + "\n")


def displays_in_paragraph(body: str) -> str:
    """``body`` with each display that follows a line of text (or another display) set in that paragraph: the blank
    line between them ended the paragraph, so that LaTeX opened an empty one for the display and left a gap of a line
    above it (a lecturer: white gaps above the LayerNorm and residual displays).  A display after a heading, a figure
    or a table keeps its blank line.

    >>> displays_in_paragraph("the connection is\\n\\n\\\\begin{align*}\\nx\\n\\\\end{align*}")
    'the connection is\\n\\\\begin{align*}\\nx\\n\\\\end{align*}'
    >>> displays_in_paragraph("\\\\subsection{The GRU}\\n\\n\\\\begin{align*}")
    '\\\\subsection{The GRU}\\n\\n\\\\begin{align*}'
    """
    # a line of text: one that does not begin with a command, or a run-in \paragraph{...} heading and its text
    return re.sub(r"(?m)^((?!\\(?!paragraph\{))[^\n]*\S|\\end\{align\*\})\n\n(?=\\begin\{align\*\})", r"\1\n", body)


def _split(built) -> tuple[str, str]:
    """A section's text and its appendix share (a section builder returns a :class:`crosscheck.notes.Part`, or text)."""
    if isinstance(built, str):
        return built, ""
    return built.body, built.appendix


_REFERENCE = re.compile(r"(Section|Appendix)~\\ref\{((sec|app):(\w+))\}")


def without_absent_references(part: str, document: str) -> str:
    """``part`` with each ``Section~\\ref{sec:NAME}`` and ``Appendix~\\ref{app:NAME}`` whose label the
    ``document`` lacks (notes of some sections only, or without the appendix) said in words instead: the section
    by its title in the complete notes, the appendix as the complete notes' (never a "??" in the PDF)."""
    labels = set(re.findall(r"\\label\{([^}]*)\}", document))

    def said(m):
        if m.group(2) in labels:
            return m.group(0)
        section = SECTIONS.get(m.group(4))
        if m.group(3) == "sec" and section is not None:
            return f"the section \\emph{{{text(section.title)}}} of the complete notes"
        return "the appendix of the complete notes"

    return _REFERENCE.sub(said, part)


def render(sections: Sequence[str] | str | None = None, notation: Notation | None = None, *, tex_dir: str | Path = ".",
           figures_dir: str | Path | None = None, device: str = "cpu", proof_seconds: float | None = 20.0,
           digits: int = 3, jobs: int = 1, appendix: bool = True, progress: bool | None = None,
           handout: bool = False, figures_link: str | Path | None = None) -> str:
    """The complete document as text: a title page with a short introduction, the notation, one section per
    topic in the course's order, and (``appendix``) the verification appendix: every identity with its id and
    source, the checks run now, the printed claims of the course texts.  Figures are written under
    ``figures_dir`` (which must lie inside ``tex_dir``; the document names it ``figures_link`` if given, the folder
    it will be moved to); with ``figures_dir=None`` the document has no figures and needs no file but itself.
    ``handout``: each section includes only the figure of its point (:data:`crosscheck.notes.HANDOUT`), and
    only those are drawn.  With ``jobs > 1`` the sections are built in that many processes
    (:mod:`crosscheck.latexrun`); the text is the same.  ``progress``: a bar per section (default: on a terminal)."""
    names = resolve_sections(sections)
    if not names:
        raise SeqgradValueError("sections", sections, "at least one section whose package is present")
    notation = Notation() if notation is None else notation
    if not isinstance(notation, Notation):
        raise SeqgradTypeError("notation", notation, "a derive.latex_settings.Notation")
    if proof_seconds is not None:
        proof_seconds = validate.real("proof_seconds", proof_seconds, positive=True)
    digits = validate.integer("digits", digits, minimum=1, maximum=15)
    for name, flag in (("appendix", appendix), ("handout", handout)):
        if not isinstance(flag, bool):
            raise SeqgradTypeError(name, flag, "True or False")
    chosen, notation = notation, notes_notation(notation)
    from .notes import HANDOUT

    b = Build(notation, Path(tex_dir), None if figures_dir is None else Path(figures_dir), device, proof_seconds, digits,
              appendix=appendix, figures_link=None if figures_link is None else Path(figures_link),
              handout=dict(HANDOUT) if handout else None, sections=tuple(names))
    jobs = validate.integer("jobs", jobs, minimum=1)
    parts = [preamble()]
    sections, order = dict(SECTIONS), list(names)
    if appendix and CLAIMS.missing() is None:  # the printed claims: the appendix's last part, built as a section is
        sections[CLAIMS.name], order = CLAIMS, order + [CLAIMS.name]
    built = [_split(x) for x in build_sections(b, order, sections, jobs, progress=progress)]
    claims = built[len(names)][0] if len(order) > len(names) else None
    parts.append(front_matter(b, names, {name: body for name, (body, _) in zip(names, built)}))
    for name, (body, _) in zip(names, built):
        parts.append(f"\\section{{{text(SECTIONS[name].title)}}}\\label{{sec:{name}}}\n\n{displays_in_paragraph(body.strip())}\n")
    before_appendix = len(parts)
    if appendix:
        # addressed to the chapter's reader who wants the proofs and the checks: whom it is for, what it holds, how
        # to read an entry, in plain sentences
        # ragged right: its narrow tables, typewriter names and quoted formulas leave lines that justified text
        # would stretch to wide word spaces
        parts.append("\\clearpage\n\\appendix\n\\raggedright\n\\section{Verification}\\label{app:verification}\n\n" + text(
            "This appendix is for the reader of the chapter who wants the proofs and the checks behind its formulas. "
            "It follows the chapter's sections in order. For each section it first states the identities proved for "
            "it (where it has any), and a table says how each was proved; a second table lists the numeric checks of "
            "the section's formulas against PyTorch's automatic differentiation in double precision"
            + ("" if device == "cpu" else f" on {device}") + ", with the largest error each one measured."
            + (" The last part compares every number printed in the course texts with its value computed exactly, "
               "and lists the texts' errata." if claims is not None else "")
            + " Every proof and every check was run when this document was generated.") + "\n\n" + text(
            "Each identity is headed by its name (in typewriter type), the place in the course texts that states it "
            "(the text, the section's number and title, as in the footnotes) and the sizes it holds for; its "
            "statement follows.") + " "
            + tolerance_words(device, notation))
        for name, (_, audit) in zip(names, built):
            # a float barrier closes each subsection: its tables are set before the next heading
            parts.append(f"\\subsection{{{text(SECTIONS[name].title)}}}\\label{{app:{name}}}\n\n"
                         + (audit.strip() or "Nothing beyond the footnotes.") + "\n\\FloatBarrier\n")
        if claims is not None:
            parts.append(f"\\subsection{{{text(CLAIMS.title)}}}\\label{{app:claims}}\n\n" + claims.strip() + "\n")
    # the works the document cites (the appendix's tables too), listed before the appendix
    parts.insert(before_appendix, references.section("\n".join(parts[1:])))
    parts.append("\\end{document}\n")
    unused = [name for name in notation.unused_renames() if (name not in NOTES_LETTERS or name in chosen.letters)
              and (name not in NOTES_SYMBOL_NAMES or name in chosen.symbol_names)]
    if unused:
        raise SeqgradValueError("--symbol (Notation.symbol_names)", ", ".join(unused), "the name (or base letter) of a symbol these sections print; "
                                "nothing in sections " + ", ".join(names) + " is called that")
    document = "\n".join(parts)
    return without_absent_references(document, document)  # the labels read once, from the whole document


def write(path: str | Path, sections: Sequence[str] | str | None = None, notation: Notation | None = None, *,
          standalone: bool = False, device: str = "cpu", proof_seconds: float | None = 20.0, digits: int = 3,
          jobs: int = 1, appendix: bool = True, progress: bool | None = None) -> Path:
    """Write the document to ``path`` (atomically) and its figures, as PDF, to ``<stem>-figures/`` beside it:
    every figure of the sets its sections draw from, or (``standalone``, the handout) only the figures it includes,
    one per point.  The figures are written into a fresh folder that replaces the old one in one step once the
    document is written; on an error nothing is replaced and nothing is left behind, and a document without
    figures leaves no folder."""
    from seqgrad.atomic import COMPANION, atomic_directory

    path = Path(path)
    if path.suffix != ".tex":
        raise SeqgradValueError("OUT", str(path), "a file name ending in .tex")
    folder = path.parent / f"{path.stem}-figures"
    # the document and its figures are replaced together; without figures, no folder (the old one held the old
    # document's figures)
    with atomic_directory(folder, companion=path, keep_empty=False) as fresh:
        body = render(sections, notation, tex_dir=path.parent, figures_dir=fresh, figures_link=folder, device=device,
                      proof_seconds=proof_seconds, digits=digits, jobs=jobs, appendix=appendix, progress=progress,
                      handout=standalone)
        write_text(fresh / COMPANION, body)
    return path


# --------------------------------------------------------------------------- compiling

def tex_engine() -> str | None:
    """The path of ``pdflatex``, or None when no TeX engine is installed."""
    return shutil.which("pdflatex")


_OVERFULL = re.compile(r"^Overfull \\[hv]box \(([\d.]+)pt too (?:wide|high)\)(.*)$", re.M)
_UNDEFINED = re.compile(r"^! (?:LaTeX Error: )?(Undefined control sequence|Environment \S+ undefined).*$", re.M)


def tex_problems(log: str, *, overfull_pt: float = 1.0) -> list[str]:
    """The layout defects a TeX log reports: every overfull box wider (or taller) than ``overfull_pt``
    points and every undefined control sequence or environment, one line each, as TeX words them."""
    problems = [f"{m.group(0).strip()}" for m in _OVERFULL.finditer(log) if float(m.group(1)) > overfull_pt]
    problems += [m.group(0).strip() for m in _UNDEFINED.finditer(log)]
    return problems


def compile_pdf(tex: str | Path, out_dir: str | Path | None = None, *, timeout: float = 180, passes: int = 1) -> Path:
    """Compile ``tex`` with pdflatex (non-interactive, stop at the first error) and return the PDF; ``passes``
    runs (the notes need 2: their contents, footnotes and references are resolved on the second).
    Raises LatexError quoting TeX's first error line."""
    passes = validate.integer("passes", passes, minimum=1, maximum=4)
    tex = Path(tex).resolve()
    engine = tex_engine()
    if engine is None:
        raise LatexError("no TeX engine: install pdflatex (Debian: texlive-latex-base texlive-latex-recommended "
                         "texlive-latex-extra)")
    out = Path(out_dir or tempfile.mkdtemp(prefix="seqgrad-tex-")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    cmd = [engine, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", f"-output-directory={out}", tex.name]
    pdf = out / (tex.stem + ".pdf")
    for run in range(MAX_TEX_RUNS):  # at least ``passes`` runs, then again while TeX says the references moved
        proc = subprocess.run(cmd, cwd=tex.parent, capture_output=True, text=True, errors="replace", timeout=timeout)
        if proc.returncode != 0 or not pdf.exists():
            log = proc.stdout
            m = re.search(r"^! .*(?:\n.*){0,2}", log, re.M)
            raise LatexError(f"pdflatex failed on {tex.name}: {m.group(0).strip() if m else log[-400:]}")
        if run + 1 >= passes and not RERUN.search(proc.stdout):
            break
    return pdf


#: at most this many pdflatex runs per document (references settle in two or three)
MAX_TEX_RUNS = 4
#: TeX's and its packages' requests for another run ("Label(s) may have changed. Rerun ...", longtable's
#: "Table widths have changed. Rerun LaTeX.")
RERUN = re.compile(r"Rerun (?:to get|LaTeX)|may have changed\.\s*Rerun", re.I)
