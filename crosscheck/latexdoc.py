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

import importlib.util
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from seqgrad.derive.latex_settings import Notation
from seqgrad import validate
from seqgrad.atomic import write_text
from seqgrad.errors import SeqgradError, SeqgradTypeError, SeqgradValueError

from seqgrad.latex_table import tex_escape
from seqgrad.timebox import within

from .latexrun import build_sections

PACKAGES = ("amsmath", "amssymb", "array", "booktabs", "graphicx", "longtable", "placeins")
#: the end of a section: its figures stay in it (placeins; a document without the package keeps LaTeX's own placement)
FLOAT_BARRIER = "\\ifdefined\\FloatBarrier\\FloatBarrier\\fi\n"


def ragged(*widths: str) -> str:
    """A column spec of ragged-right paragraph columns (``array``), e.g. ``ragged("4cm", "2cm")``."""
    return "".join(f">{{\\raggedright\\arraybackslash}}p{{{w}}}" for w in widths)

def text(s: str) -> str:
    """Plain text for LaTeX (the one escaping rule, :func:`seqgrad.latex_table.tex_escape`)."""
    return tex_escape(s)


def words(s: str, notation: Notation | None = None) -> str:
    """Words with formulas in backquotes (``"for symbolic `pos` and `k`"``), the formulas typeset by the notation's
    printer (:class:`derive.prose.Prose`), never hand-written math."""
    from seqgrad.derive.prose import Prose

    return Prose(s).latex(notation)


def code(name: str) -> str:
    """A name in typewriter type that may break after ``-``, ``_``, ``.`` or ``:`` (a long check name in a
    narrow column would otherwise run into the next one).

    >>> code("attention-equivariance-fails")
    '\\\\texttt{attention-\\\\allowbreak{}equivariance-\\\\allowbreak{}fails}'
    """
    return "\\texttt{" + re.sub(r"(-|\\_|\.|:)", r"\1\\allowbreak{}", tex_escape(name)) + "}"


class SectionUnavailable(SeqgradValueError):
    """A section was requested whose package is not in this checkout yet."""

    def __init__(self, name: str, missing: str):
        self.missing = missing
        super().__init__("sections", name, f"a section whose package is present; '{name}' needs {missing}, "
                                            "which is not in this checkout")


class LatexError(SeqgradError):
    """The TeX engine could not compile a document; the message quotes its first error line."""


@dataclass
class Build:
    """What a section function builds with: the notation, where figures go, and the document's directory."""

    notation: Notation
    tex_dir: Path
    figures_dir: Path | None  # None: no figure files (a document that needs no file but itself)
    device: str = "cpu"
    proof_seconds: float | None = 20.0  # the time one exact proof may take while the document is written
    digits: int = 3  # significant figures of numeric tables (the course prints 3)
    figures_written: list[Path] = field(default_factory=list)
    sets_included: set[str] = field(default_factory=set)  # the figures (set/stem) already in the document
    appendix: bool = True  # whether the document has the appendix the verification marks point to
    _sets: dict = field(default_factory=dict, repr=False)  # figure set -> {stem: path}, each set written once here
    deferred: bool = False  # figures as placeholders (:data:`FIGURE_MARK`), drawn elsewhere and put in by :func:`place_figures`
    #: the folder the document names for ``figures_dir`` (the figures are written into a fresh folder that then
    #: replaces this one, :func:`write`); None: ``figures_dir`` itself
    figures_link: Path | None = None
    #: the handout (``seqgrad latex --standalone``): section -> the figures (``set/stem``) it includes, one per point,
    #: and only those are drawn; None: every figure of a set the sections draw from
    handout: dict | None = None

    def href(self, path: Path) -> str:
        """The path the document includes the figure file ``path`` by, relative to the document."""
        path = Path(path).resolve()
        if self.figures_link is not None:
            path = Path(self.figures_link).resolve() / path.relative_to(Path(self.figures_dir).resolve())
        return path.relative_to(Path(self.tex_dir).resolve()).as_posix()

    def figures(self, set_name: str, stems: Sequence[str] | None = None) -> str:
        """Write the figure set ``set_name`` (see :mod:`crosscheck.figures`) as PDF, once per build, and include
        its figures ``stems`` (default: all, in the order of its ``CAPTIONS``) with their captions and labels
        ``fig:STEM``; a figure already in the document is not included again.  A handout build includes (and
        draws) only the figures of :attr:`handout`.  A ``deferred`` build writes nothing and leaves a placeholder
        for each figure (:func:`place_figures` puts the figure in)."""
        from .figures import figure_sets

        if self.figures_dir is None:
            return ""
        sets = figure_sets()
        if set_name not in sets:
            raise SectionUnavailable(set_name, f"the figure set crosscheck/figures '{set_name}'")
        captions = getattr(sets[set_name], "CAPTIONS", {})
        chosen = list(captions) if stems is None else list(stems)
        unknown = [stem for stem in chosen if stem not in captions]
        if unknown:
            raise SectionUnavailable(", ".join(unknown), f"the figures {', '.join(unknown)} of the set '{set_name}'")
        if self.handout is not None:
            chosen = [stem for stem in chosen if f"{set_name}/{stem}" in handout_figures(self.handout)]
        drawn = self._sets.setdefault(set_name, {})
        missing = [stem for stem in chosen if stem not in drawn]
        if not self.deferred and missing:  # the whole set at once, or (a handout) the figures it includes
            paths = [Path(p) for p in sets[set_name].write(self.figures_dir / set_name, "pdf", self.device,
                                                           stems=None if self.handout is None else missing)]
            self.figures_written += paths
            drawn.update({path.stem: path for path in paths})
        out = []
        for stem in chosen:
            if f"{set_name}/{stem}" in self.sets_included:
                continue
            self.sets_included.add(f"{set_name}/{stem}")
            out.append(FIGURE_MARK.format(set=set_name, stem=stem) if self.deferred else
                       figure_environment(drawn[stem], self.tex_dir, figure_caption(sets[set_name], stem),
                                          label=f"fig:{stem}", href=self.href(drawn[stem])))
        return "\n\n".join(out)

    def shows(self, set_name: str, stem: str) -> bool:
        """Whether this build includes figure ``stem`` of ``set_name`` (a sentence may then point to it)."""
        if self.figures_dir is None:
            return False
        return self.handout is None or f"{set_name}/{stem}" in handout_figures(self.handout)


def handout_figures(handout: dict, names: Sequence[str] | None = None) -> set[str]:
    """The figures (``set/stem``) a handout includes, of the sections ``names`` (default: all)."""
    return {f for name, figures in handout.items() if names is None or name in names for f in figures}


#: The placeholder a deferred build leaves for a figure (:meth:`Build.figures`).
FIGURE_MARK = "%%seqgrad-figure {set}/{stem}%%"
_FIGURE_MARK = re.compile(r"%%seqgrad-figure ([\w-]+)/([\w-]+)%%")


def place_figures(text: str, written: dict, b: Build) -> str:
    """``text`` with each placeholder of a deferred build replaced by its figure: ``written`` maps each figure
    set to its written files by stem; ``b``, the build, says where the document finds them."""
    from .figures import figure_sets

    sets = figure_sets()
    return _FIGURE_MARK.sub(lambda m: figure_environment(written[m[1]][m[2]], b.tex_dir, figure_caption(sets[m[1]], m[2]),
                                                         label=f"fig:{m[2]}", href=b.href(written[m[1]][m[2]])), text)


def figure_caption(figure_set, stem: str) -> str:
    """The caption of figure ``stem`` of a figure set (its ``CAPTIONS``): what the figure shows and what to
    see in it, never its file name.  A figure without one is refused."""
    captions = getattr(figure_set, "CAPTIONS", {})
    if stem not in captions:
        raise SectionUnavailable(stem, f"a caption for figure '{stem}' in {figure_set.__name__}.CAPTIONS")
    return captions[stem]


#: The width of the text of the notes, in inches (A4 with 2.2 cm margins): a figure no wider is included at its
#: own size, so its fonts are set at the sizes it was drawn with; a wider one is scaled down to it.
TEXT_WIDTH_IN = (21.0 - 2 * 2.2) / 2.54


def figure_size(path: Path) -> tuple[float, float]:
    """The width and height in inches of a one-page PDF figure (its MediaBox)."""
    data = Path(path).read_bytes()
    m = re.search(rb"/MediaBox\s*\[\s*([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s*\]", data)
    if m is None:
        raise SeqgradValueError("path", str(path), "a PDF figure with a MediaBox")
    x0, y0, x1, y1 = (float(v) for v in m.groups())
    return (x1 - x0) / 72, (y1 - y0) / 72


def figure_scale(path: Path) -> float:
    """The factor a figure is included at in the notes: 1, or less for a figure wider than the text."""
    width, _ = figure_size(path)
    return min(1.0, TEXT_WIDTH_IN / width)


def figure_environment(path: Path, tex_dir: Path, caption: str, width: str | None = None, label: str | None = None,
                       href: str | None = None) -> str:
    """A ``figure`` that includes ``path`` (relative to the document in ``tex_dir``, or as ``href``) with ``caption``:
    at its own size (or scaled down to the text width, :func:`figure_scale`) unless ``width`` is given."""
    rel = href if href is not None else Path(path).resolve().relative_to(Path(tex_dir).resolve()).as_posix()
    size = f"width={width}" if width else f"scale={figure_scale(path):.3f}"
    return ("\\begin{figure}[tbp]\n\\centering\n"
            f"\\includegraphics[{size}]{{{rel}}}\n\\caption{{{words(caption)}}}"
            + (f"\\label{{{label}}}" if label else "") + "\n\\end{figure}")


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

def prove_within(entry, seconds: float | None):
    """``entry.prove()``, or None when it takes longer than ``seconds`` (see :func:`seqgrad.timebox.within`)."""
    return within(seconds, entry.prove)


def identity_status(identities: Sequence, b: Build, *, max_chars: int = 900) -> str:
    """Each identity's statement and its verified status (the exact proof run now)."""
    import sympy as sp

    from seqgrad.derive.latex_layout import componentwise, display, equation, inline, relation, tabular
    from seqgrad.derive.prose import scope

    rows, statements = [], []
    for entry in identities:
        proof = prove_within(entry, b.proof_seconds)
        if proof is None:
            status = f"not proved within {b.proof_seconds:g} s here (run \\texttt{{seqgrad identities}})"
        else:
            status = ("proved" if proof.holds else "\\textbf{NOT proved}") + f" ({text(entry.method)})"
        source = source_tex(entry.source, b.notation)
        rows.append([code(entry.name), source, status])
        statement = entry.statement()
        body = b.notation.latex(statement)
        # the heading names the entry and says where it comes from and for which sizes it holds; the formula itself is
        # the typeset display below it (the title is an ASCII sentence for terminals, never set in the notes)
        head = f"\\paragraph{{{code(entry.name)}}} {source}; {scope(entry.scope).latex(b.notation)}."
        trivial = getattr(statement, "lhs", None) is not None and statement.lhs == statement.rhs and not statement.free_symbols
        if trivial:  # both sides evaluate to the same number ("4 = 4"): the title states it; a display would not
            statements.append(f"{head} (Both sides evaluate to {inline(statement.lhs, b.notation)}.)")
        elif isinstance(statement, sp.Eq) and b.notation.latex(statement.lhs) == b.notation.latex(statement.rhs):
            # the side computed from the definition prints as the claim does: one display, not "X = X"
            statements.append(f"{head} The side computed from the definition and the side stated print alike:\n"
                              + equation(statement.rhs, notation=b.notation))
        elif isinstance(statement, sp.Eq) and componentwise(statement.lhs, statement.rhs):  # one named line each
            statements.append(f"{head}\n" + display([(statement.lhs, statement.rhs)], b.notation))
        elif len(body) <= max_chars:
            op = "=" if isinstance(statement, sp.Eq) else "\\neq"
            statements.append(f"{head}\n" + relation(statement.lhs, statement.rhs, b.notation, op=op))
        else:
            statements.append(f"{head} (The statement takes {len(body)} characters of LaTeX; "
                              "print it with \\texttt{seqgrad identities}.)")
    table = ("\\begin{table}[htbp]\n\\centering\\footnotesize\n\\caption{Identities, each proved now.}\n"
             + tabular(["identity", "source", "status"], rows, ragged("5.6cm", "5.6cm") + "l") + "\n\\end{table}")
    return "\n\n".join(statements + [table])


def run_pattern(pattern: str, b: Build) -> list:
    """Run the registered checks matching ``pattern`` (see ``seqgrad check --only``) now."""
    from .registry import all_checks, run_checks

    items = all_checks(pattern)
    if not items:
        raise SectionUnavailable(pattern, f"registered checks matching '{pattern}' (crosscheck/checks)")
    return run_checks(items, device=b.device, show_progress=False)


def _error_tex(x: float, notation: Notation) -> str:
    """A measured error as typeset math, ``$4.4 \\cdot 10^{-16}$`` (:func:`crosscheck.notes._number`); not finite:
    the report's word for it."""
    import math

    from .notes import _number
    from .report import fmt_error

    return _number(x, notation) if math.isfinite(x) else notation.number(fmt_error(x))


def check_status(pattern: str, b: Build, results: list | None = None) -> str:
    """Tabulate each check matching ``pattern`` with its verified status and largest errors (the
    checks run now, or ``results`` of a run made for this section; then ``pattern`` names the section)."""
    from seqgrad.derive.latex_layout import tabular

    given = None if results is None else pattern
    results = run_pattern(pattern, b) if results is None else results
    marks = {"pass": "verified", "fail": "\\textbf{FAILED}", "error": "\\textbf{ERROR}", "skip": "skipped"}
    rows = [[code(r.name), source_tex(r.source, b.notation), _error_tex(r.max_abs_error, b.notation),
             _error_tex(r.max_rel_error, b.notation), marks[r.status]] for r in results]
    passed = sum(r.status == "pass" for r in results)
    return (f"{passed} of {len(results)} checks verified on {text(b.device)} in float64.\n\n"
            "\\begin{table}[htbp]\n\\centering\\footnotesize\n"
            + (f"\\caption{{Checks matching \\texttt{{{text(pattern)}}}, run now.}}\n" if given is None else
               f"\\caption{{Checks of Section~\\ref{{sec:{given}}}, run now.}}\n")
            + tabular(["check", "source", "max abs err", "max rel err", "status"], rows, ragged("5.6cm", "3.9cm") + "lll")
            + "\n\\end{table}")


# --------------------------------------------------------------------------- sections

def _catalogue_section(modules: Sequence[str]) -> Callable[[Build], str]:
    """The identities the catalogue has from ``modules`` (``derive.positional``, ...), in catalogue order within
    each: the entries :func:`derive.catalogue.entries` built once (before the workers fork, when the checks are
    loaded), not a second copy of each."""
    def build(b: Build) -> str:
        from seqgrad.derive import catalogue

        every = catalogue.entries()
        chosen = []
        for name in modules:
            family = [e for e in every if e.family == name.rsplit(".", 1)[-1]]
            if not family:
                raise SectionUnavailable(name, f"identities of {name} in derive.catalogue.entries()")
            chosen += family
        return identity_status(chosen, b)

    return build


def checks_or_note(pattern: str, b: Build) -> str:
    """:func:`check_status` for ``pattern``, or a plain statement that no check of it is registered yet."""
    from .registry import all_checks

    if not all_checks(pattern):
        return f"No registered check matches \\texttt{{{text(pattern)}}} yet; nothing here is marked verified."
    return check_status(pattern, b)


def _derivation(title: str, tex: str, verdict: str = "", where=None, notation: Notation | None = None) -> str:
    """A derivation object's own display (its ``latex()``, a complete ``align*`` display, pasted as it is), with
    its proof's verdict; ``where`` is a SymPy equation typeset after the title (``n = 3``), never text with
    dollar signs in it."""
    from seqgrad.derive.latex_layout import inline
    from seqgrad.sources import normalize

    if not tex.lstrip().startswith("\\begin{align"):
        raise SeqgradValueError("tex", tex[:60], "a complete display (what every latex() returns)")
    head = text(normalize(title)) + (", " + inline(where, notation) if where is not None else "")
    return f"\\paragraph{{{head}}}" + (f" ({verdict})" if verdict else "") + "\n" + tex


def shift_report_rows(report, notation: Notation) -> list[list[str]]:
    """The properties a :class:`derive.positional.ShiftReport` establishes, as typeset statements with
    their verdicts (never the report's ASCII text)."""
    import sympy as sp

    from seqgrad.derive.latex_layout import inline

    pos, k, a, b_ = sp.symbols("pos k a b")
    PE, R = sp.Function("PE", commutative=False), sp.Function("R", commutative=False)
    I = sp.Symbol("I", commutative=False)
    det, alpha = sp.Function("det"), sp.Function("alpha")
    Rt = sp.Function("R^T", commutative=False)
    statements = [
        (sp.Eq(PE(pos + k), R(k) * PE(pos), evaluate=False), "on the paired coordinates", report.shift),
        (sp.Eq(Rt(k) * R(k), I, evaluate=False), "", report.orthogonal),
        (sp.Eq(det(R(k)), 1, evaluate=False), "", report.determinant_one),
        (sp.Eq(R(a) * R(b_), R(a + b_), evaluate=False), "", report.composition),
        (sp.Eq(sp.Derivative(R(k), pos), 0, evaluate=False), words("`R(k)` does not depend on the position", notation),
         report.pos_independent),
    ]
    if report.unpaired is not None:
        j = report.unpaired
        PEj = sp.Function(f"PE_{j}", commutative=False)
        statements.append((sp.Ne(PEj(pos + k), alpha(k) * PEj(pos), evaluate=False),
                           words(f"coordinate {j} is an unpaired sine: no rotation, and no scalar `alpha(k)` shifts it", notation),
                           report.unpaired_no_scalar))
    return [[inline(st, notation), note, "holds" if ok else "\\textbf{fails}"] for st, note, ok in statements]


def source_tex(source: str, notation: Notation) -> str:
    """A source in the one citation style with the formulas of its note typeset (written in backquotes, read by
    :class:`derive.prose.Prose`): ``week06 §Block:981 (variance $\\frac{\\sigma^{2}}{\\epsilon + \\sigma^{2}}$, ...)``."""
    from seqgrad.derive.prose import cited

    return cited(source, notation)


def _claims(b: Build) -> str:
    """Every printed numeric claim of the course texts, verified now: one row per printed statement,
    one per printed table, and each contradiction in full."""
    from functools import lru_cache

    from seqgrad.derive.latex_layout import tabular
    from seqgrad.numeric import course

    from .claims_catalogue import entries, table_entries

    traces = lru_cache(maxsize=None)(lambda stage: course.trace(stage, device=b.device))
    rows, contradicted = [], []
    for entry in list(entries()) + list(table_entries(traces)):
        verdicts = [claim.verify() for claim in entry.claims]
        bad = [v for v in verdicts if not v.verified]
        status = f"{len(verdicts)} verified" if not bad else f"\\textbf{{{len(bad)} of {len(verdicts)} contradicted}}"
        rows.append([code(entry.name), source_tex(entry.source, b.notation), text(entry.what), status])
        contradicted += [(entry, v) for v in bad]
    total = sum(1 for _ in rows)
    parts = [f"{total} printed statements of the course texts, each evaluated exactly now and compared with the "
             "number as printed (at the decimals written, or at 3 significant figures for the tables).",
             "{\\footnotesize\n" + tabular(["entry", "source", "statement", "verdict"], rows, ragged("4.4cm", "2.3cm", "5.7cm", "2.2cm"))
             .replace("\\begin{tabular}", "\\begin{longtable}").replace("\\end{tabular}", "\\end{longtable}") + "\n}"]
    if contradicted:
        items = "\n".join(f"\\item {code(e.name)} ({source_tex(e.source, b.notation)}): {text(v.line())}"
                           + (f"\\\\ \\emph{{{text(e.note)}}}" if e.note else "") for e, v in contradicted)
        parts.append(f"\\subsection*{{Contradicted claims}}\n\\begin{{itemize}}\n{items}\n\\end{{itemize}}")
    parts.append(_statement_errata(b))
    return "\n\n".join(p for p in parts if p)


def _statement_errata(b: Build) -> str:
    """The texts' prose statements whose verdict is imprecise or false (:func:`crosscheck.claims_statements.statements`),
    each with its citation, its words and the precise statement or the counterexample."""
    from seqgrad.latex_table import with_cyrillic

    from .claims_statements import statements

    wrong = [s for s in statements() if s.verdict in ("imprecise", "false")]
    if not wrong:
        return ""
    items = "\n".join(f"\\item \\textbf{{{s.verdict}}} ({source_tex(s.cite, b.notation)}): {with_cyrillic(s.text, text)}"
                       + (f"\\\\ \\emph{{{with_cyrillic(s.precise or s.reason, text)}}}" if (s.precise or s.reason) else "")
                       for s in wrong)
    return ("\\subsection*{Errata among the texts' statements}\n"
            f"{len(wrong)} prose statements of the texts are imprecise or false; each with what holds instead.\n"
            f"\\begin{{itemize}}\n{items}\n\\end{{itemize}}")


def _section(name: str, title: str, requires: tuple[str, ...]) -> Section:
    def build(b: Build):
        from . import notes

        return dict(notes.ORDER)[name](b)

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
    _section("encoder", "The encoder block and the worked example",
             ("seqgrad.numeric.course", "seqgrad.latex_table", "seqgrad.crosscheck.checks.encoder", "seqgrad.crosscheck.figures.encoder")),
    _section("decoder", "The Transformer decoder",
             ("seqgrad.derive.decoder", "seqgrad.numeric.decoder", "seqgrad.crosscheck.figures.decoder")),
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
            + "".join(f"\\usepackage{{{p}}}\n" for p in PACKAGES)
            + "\\setlength{\\parindent}{0pt}\n\\setlength{\\parskip}{0.6ex}\n"
            + f"\\title{{{text(title)}}}\n\\author{{generated by seqgrad}}\n\\date{{}}\n\\begin{{document}}\n\\sloppy\n")


#: The notes' own letters (on top of the text's, unless the notation renames them itself): the standard deviation of
#: LayerNorm is ``s``, so that ``\sigma`` is only the sigmoid.
NOTES_LETTERS = {"sigma": "s"}


def front_matter(b: Build, names: Sequence[str]) -> str:
    """The title page (title, a short introduction, the contents) and the notation section."""
    from . import notes

    return ("\\begin{titlepage}\n\\maketitle\n\\thispagestyle{empty}\n" + notes.introduction(b, names, b.appendix)
            + "\n\\end{titlepage}\n\\tableofcontents\n\\clearpage\n\n"
            + "\\section{Notation}\\label{sec:notation}\n\n" + notes.notation_section(b) + "\n\n\\clearpage\n")


def _split(built) -> tuple[str, str]:
    """A section's text and its appendix share (a section builder returns a :class:`crosscheck.notes.Part`, or text)."""
    if isinstance(built, str):
        return built, ""
    return built.body, built.appendix


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
    chosen = notation
    if "sigma" not in notation.letters and "sigma" not in notation.symbol_names:  # one meaning per symbol: sigma is the
        notation = notation.replace(letters={**notation.letters, **NOTES_LETTERS})  # sigmoid, s a standard deviation
    from .notes import HANDOUT

    b = Build(notation, Path(tex_dir), None if figures_dir is None else Path(figures_dir), device, proof_seconds, digits,
              appendix=appendix, figures_link=None if figures_link is None else Path(figures_link),
              handout=dict(HANDOUT) if handout else None)
    jobs = validate.integer("jobs", jobs, minimum=1)
    parts = [preamble()]
    sections, order = dict(SECTIONS), list(names)
    if appendix and CLAIMS.missing() is None:  # the printed claims: the appendix's last part, built as a section is
        sections[CLAIMS.name], order = CLAIMS, order + [CLAIMS.name]
    built = [_split(x) for x in build_sections(b, order, sections, jobs, progress=progress)]
    claims = built[len(names)][0] if len(order) > len(names) else None
    parts.append(front_matter(b, names))
    for name, (body, _) in zip(names, built):
        parts.append(f"\\section{{{text(SECTIONS[name].title)}}}\\label{{sec:{name}}}\n\n{body.strip()}\n\n{FLOAT_BARRIER}")
    if appendix:
        parts.append("\\clearpage\n\\appendix\n\\section{Verification}\\label{app:verification}\n\n" + text(
            "Every result of the notes, with the identities behind it (their ids and sources in the course texts, each "
            "proof run when the notes were written) and the numeric checks against PyTorch (float64), with the largest "
            f"errors measured on {device}."))
        for name, (_, audit) in zip(names, built):
            parts.append(f"\\subsection{{{text(SECTIONS[name].title)}}}\\label{{app:{name}}}\n\n"
                         + (audit.strip() or "Nothing beyond the footnotes.") + "\n")
        if claims is not None:
            parts.append(f"\\subsection{{{text(CLAIMS.title)}}}\\label{{app:claims}}\n\n" + claims.strip() + "\n")
    parts.append("\\end{document}\n")
    unused = [name for name in notation.unused_renames() if name not in NOTES_LETTERS or name in chosen.letters]
    if unused:
        raise SeqgradValueError("--symbol (Notation.symbol_names)", ", ".join(unused), "the name (or base letter) of a symbol these sections print; "
                                "nothing in sections " + ", ".join(names) + " is called that")
    return "\n".join(parts)


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
