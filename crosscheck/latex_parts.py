"""The pieces every part of the notes and the report is written with: text and code set safely in LaTeX,
the figures placed and captioned, a measured error as typeset math, the status of the proofs and the checks
run now, a derivation's display with its verdict, and the letters the notes share (``L``, the number of layers).

:mod:`crosscheck.latexdoc` assembles the document from the sections of :mod:`crosscheck.notes` and
:mod:`crosscheck.latex_decoder_conv`; all of them, and :mod:`crosscheck.report`, read these pieces from here, so
no module of the document imports another's assembly.
"""

from __future__ import annotations

import base64
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import sympy as sp

from seqgrad.derive.counting import LAYERS  # noqa: F401  the number of layers of a stack, one letter (re-exported)
from seqgrad.derive.latex_settings import Notation
from seqgrad.errors import SeqgradValueError
from seqgrad.latex_table import tex_escape
from seqgrad.timebox import within

from .tolerance import fmt_error

class SectionUnavailable(SeqgradValueError):
    """A section was requested whose package is not in this checkout yet."""

    def __init__(self, name: str, missing: str):
        self.missing = missing
        super().__init__("sections", name, f"a section whose package is present; '{name}' needs {missing}, "
                                            "which is not in this checkout")


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
    #: the verification marks of the section being built (:func:`crosscheck.notes.verification`), said in one
    #: footnote per section (:func:`crosscheck.notes.one_footnote`); None: each mark is its own footnote
    marks: list | None = None
    #: the sections of the document (names, in order); empty: not known (a section built on its own)
    sections: tuple = ()

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
            # in the section's notation, the matrices the set's captions name (its MATRICES) bold, as in the displays
            named = getattr(sets[set_name], "MATRICES", ())
            caption = words(figure_caption(sets[set_name], stem), matrices(self.notation, set(named)) if named else self.notation,
                            **getattr(sets[set_name], "FORMULAS", {}))
            out.append(figure_mark(set_name, stem, caption) if self.deferred else
                       figure_environment(drawn[stem], self.tex_dir, caption, label=f"fig:{stem}",
                                          href=self.href(drawn[stem])))
        return "\n\n".join(out)

    def pointer(self, set_name: str, stem: str, sentence: str) -> str:
        """``Figure~\\ref{fig:STEM}`` followed by ``sentence`` (typeset words: what the reader sees in the figure),
        when this build includes the figure, then what the set's ``READINGS`` say of it (the reading of its curves,
        too long for its caption); "" when it does not (a sentence never points to a missing figure)."""
        if not self.shows(set_name, stem):
            return ""
        from .figures import figure_sets

        figure_set = figure_sets()[set_name]
        reading = getattr(figure_set, "READINGS", {}).get(stem)
        return f"Figure~\\ref{{fig:{stem}}} {sentence}" + (
            " " + words(reading, self.notation, **getattr(figure_set, "FORMULAS", {})) if reading else "")

    def shows(self, set_name: str, stem: str) -> bool:
        """Whether this build includes figure ``stem`` of ``set_name`` (a sentence may then point to it)."""
        if self.figures_dir is None:
            return False
        return self.handout is None or f"{set_name}/{stem}" in handout_figures(self.handout)


def matrices(notation, names):
    """``notation`` for words that speak of whole matrices (``X``, ``G``, the memory ``Z``): ``names`` set in bold, as
    the displays set every matrix (an entry, ``X_{ij}`` in an index display, is a number and stays plain); the renames
    it applies are recorded in ``notation``."""
    out = notation.with_vectors(names)
    object.__setattr__(out, "_used", notation._used)  # one record of the renames applied (Notation.unused_renames)
    return out


def ragged(*widths: str) -> str:
    """A column spec of ragged-right paragraph columns (``array``), e.g. ``ragged("4cm", "2cm")``."""
    return "".join(f">{{\\raggedright\\arraybackslash}}p{{{w}}}" for w in widths)

def text(s: str) -> str:
    """Plain text for LaTeX (the one escaping rule, :func:`seqgrad.latex_table.tex_escape`)."""
    return tex_escape(s)


def quotation(s: str, key: str | None = None) -> str:
    """Plain text quoting the course texts (or about them): their plain-text formulas typeset as math, their
    citations and the lines they name (``key``: the text quoted) as the appendix cites them
    (:func:`crosscheck.appendix_text.citation_tex`).

    >>> print(quotation("k_t = h_t W_K^T, n d^2 and h_0^(0)"))
    $k_{t} = h_{t} W_{K}^{\\top}$, $n d^{2}$ and $h_{0}^{(0)}$
    """
    from .appendix_text import citation_tex

    return citation_tex(s, key=key)


def words(s: str, notation: Notation | None = None, **formulas) -> str:
    """Words with formulas in backquotes (``"for symbolic `pos` and `k`"``), the formulas typeset by the notation's
    printer (:class:`derive.prose.Prose`), never hand-written math; with ``formulas``, also ``{name}`` for a SymPy
    object given as a keyword (one the backquotes cannot read: ``J_{block,l}``, an index expression, a shape)."""
    from seqgrad.derive.latex_layout import inline
    from seqgrad.derive.prose import Prose

    if not formulas:
        return Prose(s).latex(notation)
    pieces = re.split(r"\{(\w+)\}", s)
    return "".join(Prose(p).latex(notation) if i % 2 == 0 else inline(formulas[p], notation or Notation())
                   for i, p in enumerate(pieces))


def code(name: str) -> str:
    """A name in typewriter type that may break after ``-``, ``_``, ``.`` or ``:`` (a long check name in a
    narrow column would otherwise run into the next one).

    >>> code("attention-equivariance-fails")
    '\\\\texttt{attention-\\\\allowbreak{}equivariance-\\\\allowbreak{}fails}'
    """
    return "\\texttt{" + re.sub(r"(-|\\_|\.|:)", r"\1\\allowbreak{}", tex_escape(name)) + "}"


def handout_figures(handout: dict, names: Sequence[str] | None = None) -> set[str]:
    """The figures (``set/stem``) a handout includes, of the sections ``names`` (default: all)."""
    return {f for name, figures in handout.items() if names is None or name in names for f in figures}


#: The placeholder a deferred build leaves for a figure (:meth:`Build.figures`): the set, the stem and the caption
#: as the section typeset it (base64: a section's notation, e.g. its own letters, reaches the caption, and the
#: caption's characters cannot end the mark).
FIGURE_MARK = "%%seqgrad-figure {set}/{stem} {caption}%%"
_FIGURE_MARK = re.compile(r"%%seqgrad-figure ([\w-]+)/([\w-]+) ([A-Za-z0-9+/=]*)%%")


def figure_mark(set_name: str, stem: str, caption: str) -> str:
    """The placeholder of figure ``stem`` of ``set_name`` with its typeset ``caption`` (:func:`place_figures` reads it)."""
    return FIGURE_MARK.format(set=set_name, stem=stem, caption=base64.b64encode(caption.encode()).decode("ascii"))


def place_figures(text: str, written: dict, b: Build) -> str:
    """``text`` with each placeholder of a deferred build replaced by its figure: ``written`` maps each figure
    set to its written files by stem; ``b``, the build, says where the document finds them."""
    return _FIGURE_MARK.sub(lambda m: figure_environment(written[m[1]][m[2]], b.tex_dir, base64.b64decode(m[3]).decode(),
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
    """A ``figure`` that includes ``path`` (relative to the document in ``tex_dir``, or as ``href``) with ``caption``
    (LaTeX, typeset by the section: :meth:`Build.figures` prints its formulas with the section's notation): at its
    own size (or scaled down to the text width, :func:`figure_scale`) unless ``width`` is given."""
    rel = href if href is not None else Path(path).resolve().relative_to(Path(tex_dir).resolve()).as_posix()
    size = f"width={width}" if width else f"scale={figure_scale(path):.3f}"
    return ("\\begin{figure}[htbp]\n\\centering\n"
            f"\\includegraphics[{size}]{{{rel}}}\n\\caption{{{caption}}}"
            + (f"\\label{{{label}}}" if label else "") + "\n\\end{figure}")


def prove_within(entry, seconds: float | None):
    """``entry.prove()``, or None when it takes longer than ``seconds`` (see :func:`seqgrad.timebox.within`)."""
    return within(seconds, entry.prove)


#: the catalogue's families (:attr:`derive.identity.Identity.family`, a module of derive/) as a caption names them
FAMILY_WORDS = {"positional": "positional encoding", "softmax": "the softmax", "attention": "attention",
                "layernorm": "LayerNorm", "residual": "residual paths", "counting": "parameter and cost counts",
                "decoder": "the decoder", "conv": "convolution"}


#: how each proof method of :data:`derive.identity.METHODS` establishes an identity, in words
PROOF_WORDS = {"simplify": "proved symbolically", "counterexample": "exact counterexample",
               "numeric": "checked numerically"}


def column_block_definition(matrix, notation: Notation) -> str:
    """The sentence that defines the printed column block (:class:`derive.rules.ColumnBlock`) of ``matrix`` (a matrix
    symbol), the block printed by the notation's printer: ``Here (W_O)_{•, i … j} is the block of columns i to j of
    W_O, with all its rows`` (columns counted from 0, as the notation section says of every index of entries)."""
    from seqgrad.derive.latex_layout import inline
    from seqgrad.derive.rules import ColumnBlock

    i, j = sp.symbols("i j", integer=True, nonnegative=True)
    block = ColumnBlock(matrix, i, j - i + 1)
    return (f"Here {inline(block, notation)} is the block of columns {inline(i, notation)} to {inline(j, notation)} "
            f"of {inline(matrix, notation)}, with all its rows.")


def identity_label(name: str) -> str:
    """The label of catalogue identity ``name``'s heading in the appendix (:func:`identity_status`), which the notes'
    footnotes refer to by page."""
    return f"id:{name}"


def identity_status(identities: Sequence, b: Build, *, max_chars: int = 900) -> str:
    """Each identity's statement and its verified status (the exact proof run now)."""
    import sympy as sp

    from seqgrad.derive.latex_layout import componentwise, display, equation, inline, relation
    from seqgrad.derive.prose import scope
    from seqgrad.derive.rules import ColumnBlock

    rows, statements, printed, proofs = [], [], [], {}
    for entry in identities:
        proof = proofs[entry.name] = prove_within(entry, b.proof_seconds)
        if proof is None:
            status = f"not proved within {b.proof_seconds:g} s here (run \\texttt{{seqgrad identities}})"
        else:
            status = PROOF_WORDS[entry.method] if proof.holds else "\\textbf{not proved}"
        source = source_tex(entry.source, b.notation)
        rows.append([code(entry.name), source, status])
        statement = entry.statement()
        printed.append((entry, source, statement, b.notation.latex(statement)))
    # entries that state one formula (the instances of one identity: the shift at d = 8 and d = 5, in either layout)
    # are one statement, their names and scopes in its heading
    groups: list[list] = []
    for item in printed:
        if groups and groups[-1][0][1] == item[1] and groups[-1][0][3] == item[3]:
            groups[-1].append(item)
        else:
            groups.append([item])
    defined = False  # the column block (derive.rules.ColumnBlock) is defined where an entry first prints one
    for group in groups:
        entry, source, statement, body = group[0]
        # the heading names the entry and says where it comes from and for which sizes it holds; the formula itself is
        # the typeset display below it (the title is an ASCII sentence for terminals, never set in the notes)
        names = ", ".join(code(e.name) for e, *_ in group)
        scopes = "; ".join(scope(e.scope).latex(b.notation) for e, *_ in group)
        labels = "".join(f"\\label{{{identity_label(e.name)}}}" for e, *_ in group)  # the footnotes' page references
        head = f"\\paragraph{{{names}}}{labels} {source}; {scopes}."
        proof = proofs[entry.name]
        found = quotation(proof.detail) if entry.method == "counterexample" and proof is not None and proof.holds \
            and proof.detail else ""
        if found and not any(f in head for f in re.findall(r"\$[^$]+\$", found)):  # the counterexample, unless said
            head += " At the point found, " + found + "."
        # a statement of matrices is short on the page however long its LaTeX: one line where it fits
        width = 300 if "\\begin{matrix}" in body else 60
        trivial = getattr(statement, "lhs", None) is not None and statement.lhs == statement.rhs and not statement.free_symbols
        if trivial:  # both sides evaluate to the same number ("4 = 4"): the title states it; a display would not
            statements.append(f"{head} (Both sides evaluate to {inline(statement.lhs, b.notation)}.)")
        elif isinstance(statement, sp.Eq) and b.notation.latex(statement.lhs) == b.notation.latex(statement.rhs):
            # the side computed from the definition prints as the claim does: one display, not "X = X"
            statements.append(f"{head} Computed from the definition, the left-hand side is the stated right-hand side, "
                              "shown once:\n"
                              + equation(statement.rhs, notation=b.notation))
        elif isinstance(statement, sp.Eq) and componentwise(statement.lhs, statement.rhs):  # one named line each
            statements.append(f"{head}\n" + display([(statement.lhs, statement.rhs)], b.notation, width=width))
        elif len(body) <= max_chars:
            op = "=" if isinstance(statement, sp.Eq) else "\\neq"
            statements.append(f"{head}\n" + relation(statement.lhs, statement.rhs, b.notation, op=op, width=width))
        else:
            statements.append(f"{head} (The statement takes {len(body)} characters of LaTeX; "
                              "print it with \\texttt{seqgrad identities}.)")
        if not defined and getattr(statement, "atoms", None) and statement.atoms(ColumnBlock):
            first = min(statement.atoms(ColumnBlock), key=str).args[0]
            statements[-1] += "\n" + column_block_definition(first, b.notation)
            defined = True
    families = list(dict.fromkeys(FAMILY_WORDS.get(entry.family, entry.family) for entry in identities))
    caption = (f"The {len(rows)} identities of {text(' and '.join(families))} stated above, with their sources in the "
               "course texts and how each was proved." if len(rows) > 1 else
               f"The identity of {text(' and '.join(families))} stated above, with its source in the course texts and "
               "how it was proved.")
    return "\n\n".join(statements + [appendix_table(["identity", "source", "status"], rows,
                                                     ragged("5.6cm", "5.6cm") + "l", caption)])


def appendix_table(header: Sequence[str], rows: Sequence[Sequence[str]], colspec: str, caption: str,
                   label: str = "") -> str:
    """A table of the appendix: a ``longtable`` in small type, set where it stands and continued over pages (a
    floating table that does not fit below the text before it goes to a page of its own, most of it white)."""
    from seqgrad.derive.latex_layout import longtable

    return "{\\footnotesize\n" + longtable(header, rows, colspec, caption=caption, label=label) + "\n}"


def run_pattern(pattern: str, b: Build) -> list:
    """Run the registered checks matching ``pattern`` (see ``seqgrad check --only``) now."""
    from .registry import all_checks, run_checks

    items = all_checks(pattern)
    if not items:
        raise SectionUnavailable(pattern, f"registered checks matching '{pattern}' (crosscheck/checks)")
    return run_checks(items, device=b.device, show_progress=False)


def _error_tex(x: float, notation: Notation) -> str:
    """A measured error as typeset math, ``$4.4 \\cdot 10^{-16}$`` (:func:`number_tex`); not finite:
    the report's word for it."""
    import math

        
    return number_tex(x, notation) if math.isfinite(x) else notation.number(fmt_error(x))


def ratio_tex(r, notation: Notation) -> str:
    """A check's entry in the column err / tol: the printed digits' measure for a check against printed numbers (its
    largest difference over half a unit of the last printed digit); a dash for an exact check (a proof, an exact count,
    an inequality: no floating-point error); the ratio it reports; or, for a check that reports its error only, the
    bound ``≤ err / atol`` (every tolerance is at least ``atol``)."""
    from .tolerance import tolerance

    if getattr(r, "units", None) is not None:
        return _error_tex(r.units / 0.5, notation)
    if r.max_abs_error == 0:
        return "--"
    if r.tol_ratio is not None:
        return _error_tex(r.tol_ratio, notation)
    if not math.isfinite(r.max_abs_error):
        return _error_tex(r.max_abs_error, notation)
    return "$\\leq$ " + _error_tex(r.max_abs_error / tolerance("float64", r.device).atol, notation)


def tolerance_words(device: str, notation: Notation) -> str:
    """What the column ``err / tol`` of a table of checks holds, with the tolerance on ``device``."""
    from .tolerance import tolerance

    tol = tolerance("float64", device)
    return ("The column err\\,/\\,tol is the largest ratio of an error to its tolerance over every comparison a check "
            f"makes: $\\mathrm{{tol}} = {number_tex(tol.atol, notation).strip('$')} + {number_tex(tol.rtol, notation).strip('$')}"
            "\\,\\lvert\\mathrm{ref}\\rvert$ for double-precision comparisons; half a unit of the last printed digit for "
            "numbers printed in the course texts. A check that also compares printed numbers can therefore show a ratio "
            f"larger than its max abs err over {number_tex(tol.atol, notation)}, or a max abs err far above that and "
            "still pass: its differences from printed numbers are held to the printed digits. "
            "A check passes when the ratio is at most 1. A dash: the check is exact (a proof, an exact count or an "
            "inequality) and has no floating-point error; $\\leq$: the check reports its error only, and the bound is "
            f"that error over {number_tex(tol.atol, notation)}, the smallest tolerance.")


def check_status(pattern: str, b: Build, results: list | None = None) -> str:
    """Tabulate each check matching ``pattern`` with its verified status and largest errors (the
    checks run now, or ``results`` of a run made for this section; then ``pattern`` names the section)."""
    given = None if results is None else pattern
    results = run_pattern(pattern, b) if results is None else results
    marks = {"pass": "verified", "fail": "\\textbf{FAILED}", "error": "\\textbf{ERROR}", "skip": "skipped"}
    # the measure the tolerance policy decides by (crosscheck.tolerance): each entry's error over the tolerance it was
    # held to, not the relative error, which is meaningless on entries near zero
    rows = [[code(r.name), source_tex(r.source, b.notation), _error_tex(r.max_abs_error, b.notation),
             ratio_tex(r, b.notation), marks[r.status]] for r in results]
    passed = sum(r.status == "pass" for r in results)
    what = f"Section~\\ref{{sec:{given}}}" if given is not None else f"the name pattern \\texttt{{{text(pattern)}}}"
    label = f"tab:checks-{given}" if given is not None else ""
    verdict = ((f"all {len(results)} pass" if len(results) > 1 else "it passes") if passed == len(results) else
               f"{passed} of the {len(results)} pass, and the others are marked in the table")
    return ((f"Table~\\ref{{{label}}} lists" if label else "The table below lists")
            + f" the numeric checks of {what}; {verdict}.\n\n"
            + appendix_table(["check", "source", "max abs err", "err / tol", "status"], rows, ragged("4.2cm", "5.3cm") + "lll",
                             f"The numeric checks of {what}, with the largest errors measured.", label))


#: Catalogue identities the notes' appendix leaves out, each with the reason (they stay in the catalogue,
#: ``seqgrad identities``): what the notes would display of them says nothing at the size it is proved for.
NOT_IN_NOTES = {
    # its display is the zero-branch instance (lambda I)^4 = lambda^4 I, a fact of scalar matrices; its expansion with
    # the branches is residual-depth-expansion's with every shortcut scaled by lambda (stated there at lambda = 1)
    "residual-scaled-shortcut": "the display (lambda I)^4 = lambda^4 I says nothing at L = 4",
}


def _catalogue_section(modules: Sequence[str]) -> Callable[[Build], str]:
    """The identities the catalogue has from ``modules`` (``derive.positional``, ...), in catalogue order within
    each: the entries :func:`derive.catalogue.entries` built once (before the workers fork, when the checks are
    loaded), not a second copy of each."""
    def build(b: Build) -> str:
        return identity_status(catalogue_identities(modules), b)

    return build


def catalogue_identities(modules: Sequence[str]) -> list:
    """The identities the catalogue has from ``modules`` (``derive.positional``, ...) that the notes state (not
    :data:`NOT_IN_NOTES`), in catalogue order within each; a module with none is a section this checkout cannot
    build (:class:`SectionUnavailable`)."""
    from seqgrad.derive import catalogue

    every = catalogue.entries()
    chosen = []
    for name in modules:
        family = [e for e in every if e.family == name.rsplit(".", 1)[-1]]
        if not family:
            raise SectionUnavailable(name, f"identities of {name} in derive.catalogue.entries()")
        chosen += [e for e in family if e.name not in NOT_IN_NOTES]
    return chosen


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


class Transposed(__import__("sympy").Function):
    r"""The transpose of a matrix written as a function value, ``R(k)^T`` (printed ``R(k)^{\top}``, never
    ``R^{\top}(k)``): the transpose applies to the value, the matrix ``R(k)``.

    >>> import sympy as sp
    >>> sp.latex(Transposed(sp.Function("R")(sp.Symbol("k"))))
    'R{\\left(k \\right)}^{\\top}'
    """

    is_commutative = False

    def _latex(self, printer):
        return printer._print(self.args[0]) + r"^{\top}"

    def _sympystr(self, printer):
        return printer._print(self.args[0]) + "^T"


def shift_report_rows(report, notation: Notation, shift: str = "pe-shift-d5-interleaved") -> list[list[str]]:
    """:func:`shift_report_statements` as table rows: the statement and what it says, and, only when some statement
    is not proved, "yes" or "no" (a column that reads "yes" in every row tells the reader nothing: the caption then
    says that each is proved; it points to the positional appendix, which states each identity under its name: no
    typewriter id before the appendix)."""
    statements = shift_report_statements(report, notation, shift)
    every = all(ok for _, _, ok, _ in statements)
    return [[inline_statement, note] + ([] if every else ["yes" if ok else "\\textbf{no}"])
            for inline_statement, note, ok, _ in statements]


def paired_encoding(report, commutative: bool = True):
    """The encoding restricted to the coordinates ``R(k)`` acts on (``report.paired`` of a
    :class:`derive.positional.ShiftReport`), as a function of the position: ``PE`` itself for an even width, and for
    an odd one ``PE`` subscripted with those coordinates (``PE_{0...3}`` at ``d = 5``), so that the shift is stated
    on the rows it holds for: ``R(k)`` is (d - 1) x (d - 1) there, and the unpaired sine is no part of it."""
    return paired_function(report.unpaired, report.paired, commutative)


def paired_function(unpaired, paired, commutative: bool = True):
    """:func:`paired_encoding` of an encoding whose unpaired coordinate is ``unpaired`` (None at an even width) and
    whose rotation acts on the coordinates ``paired``."""
    import sympy as sp

    if unpaired is None:
        return sp.Function("PE", commutative=commutative)
    c = paired
    return sp.Function(f"PE_{{{c[0]} \\ldots {c[-1]}}}" if _contiguous(c) else "PE_{" + ", ".join(map(str, c)) + "}",
                       commutative=commutative)


def _contiguous(coordinates) -> bool:
    return list(coordinates) == list(range(coordinates[0], coordinates[-1] + 1))


def _listed_coordinates(coordinates) -> str:
    """``0 to 3``: the coordinates of a paired encoding, as the text says them."""
    c = list(coordinates)
    return f"{c[0]} to {c[-1]}" if _contiguous(c) else ", ".join(map(str, c[:-1])) + f" and {c[-1]}"


def shift_report_statements(report, notation: Notation, shift: str = "pe-shift-d5-interleaved") -> list[tuple]:
    """The properties a :class:`derive.positional.ShiftReport` establishes: ``(typeset statement, remark, proved,
    identity name)``, proved as True or False (never the report's ASCII text).  They are written in the notes' row
    convention: an encoding is a row, ``R(k)`` multiplies it on the right (the transpose of the proof's matrix, which
    acts on columns; orthogonality, the determinant, composition and independence of the position hold for both), and
    coordinate ``i`` of the encoding is ``PE(pos, i)``.  Each row names the catalogue identity that states it (the
    appendix's heading; ``shift``: the instance of the shift identity the report is of), so a "yes" points to a
    statement the appendix proves; the report's independence of the position is no identity of its own (it is read
    off the shift's statement, whose R(k) has no pos) and is not a row."""
    import sympy as sp

    from seqgrad.derive.latex_layout import inline

    pos, k, a, b_ = sp.symbols("pos k a b")
    PE, R = sp.Function("PE", commutative=False), sp.Function("R", commutative=False)
    I = sp.Identity(sp.Symbol("d", integer=True, positive=True))  # the identity matrix, bold as in every display
    det, alpha = sp.Function("det"), sp.Function("alpha")
    paired = paired_encoding(report, commutative=False)
    statements = [
        (sp.Eq(paired(pos + k), paired(pos) * R(k), evaluate=False),
         words("a shift of the position is a fixed linear map of the encoding" if paired == PE else
               f"a shift of the position is a fixed linear map of the row of coordinates "
               f"{_listed_coordinates(report.paired)}", notation),
         report.shift, shift),
        (sp.Eq(Transposed(R(k)) * R(k), I, evaluate=False), words("`R(k)` is orthogonal: it keeps lengths", notation),
         report.orthogonal, "pe-rotation-group"),
        (sp.Eq(det(R(k)), 1, evaluate=False), words("it keeps orientation: a rotation, not a reflection", notation),
         report.determinant_one, "pe-rotation-group"),
        (sp.Eq(R(a) * R(b_), R(a + b_), evaluate=False), words("two shifts compose into one", notation),
         report.composition, "pe-rotation-group"),
    ]
    if report.unpaired is not None:
        j = report.unpaired
        statements.append((sp.Ne(PE(pos + k, j), alpha(k) * PE(pos, j), evaluate=False),
                           words(f"coordinate {j} is an unpaired sine: for `k` not a multiple of `pi/omega_{report.unpaired_frequency}`, "
                                 "no scalar `alpha(k)` makes the two sides equal for every `pos` (at `pos = 0` the right "
                                 "side is 0)", notation),
                           report.unpaired_no_scalar, "pe-unpaired-no-scalar"))
    return [(inline(st, notation), note, ok, name) for st, note, ok, name in statements]


def source_tex(source: str, notation: Notation) -> str:
    """A source as the appendix cites it (:func:`crosscheck.appendix_text.citation_tex`): each text by its name, each
    section by its number and title, no line numbers, the formulas of its note typeset (those in backquotes by the
    notation's printer): ``Course notes, week 6, §17 The pre-norm encoder block (a constant row maps to $\\beta$)``."""
    from .appendix_text import citation_tex

    return citation_tex(source, notation)

def number_tex(x: float, notation) -> str:
    """A measured error at two significant figures, ``$3.2 \\cdot 10^{-16}$``, with the notation's decimal separator."""
    if x == 0:
        return "$0$"
    mantissa, exponent = f"{x:.1e}".split("e")  # rounded first: 0.9986 is 1.0, never 10.0 * 10^-1
    mantissa, exponent = notation.number(mantissa), int(exponent)
    return f"${mantissa}$" if exponent == 0 else f"${mantissa} \\cdot 10^{{{exponent}}}$"

