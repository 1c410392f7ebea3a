"""Assemble a complete, compilable LaTeX document for course notes.

The document (article class, amsmath, booktabs, graphicx) is a list of
sections; each section is built by a small function below that pulls the
derivations, each identity's verified status, the numeric tables and the
figures from the package that owns them.  A section whose package is not in
this checkout is never faked: asking for it raises :class:`SectionUnavailable`.

>>> from seqgrad.crosscheck import latexdoc
>>> latexdoc.SECTION_NAMES
('rnn', 'gates', 'positional', 'attention', 'encoder', 'residual', 'claims', 'decoder', 'conv')
>>> latexdoc.resolve_sections("rnn,nope")
Traceback (most recent call last):
...
seqgrad.errors.SeqgradValueError: sections='nope' is not allowed: one of rnn, gates, positional, attention, encoder, residual, claims, decoder, conv
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

PACKAGES = ("amsmath", "amssymb", "array", "booktabs", "graphicx", "longtable")


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
    figures_dir: Path | None  # None: no figure files (a standalone single-file document)
    device: str = "cpu"
    proof_seconds: float | None = 20.0  # the time one exact proof may take while the document is written
    digits: int = 3  # significant figures of numeric tables (the course prints 3)
    figures_written: list[Path] = field(default_factory=list)
    sets_included: set[str] = field(default_factory=set)  # each figure set appears once per document

    def figures(self, set_name: str) -> str:
        """Write the figure set ``set_name`` (see :mod:`crosscheck.figures`) as PDF and include every figure
        with its caption (the set's ``CAPTIONS``)."""
        from .figures import figure_sets

        if self.figures_dir is None or set_name in self.sets_included:
            return ""
        self.sets_included.add(set_name)
        sets = figure_sets()
        if set_name not in sets:
            raise SectionUnavailable(set_name, f"the figure set crosscheck/figures '{set_name}'")
        paths = [Path(p) for p in sets[set_name].write(self.figures_dir / set_name, "pdf", self.device)]
        self.figures_written += paths
        return "\n\n".join(figure_environment(path, self.tex_dir, figure_caption(sets[set_name], path.stem)) for path in paths)


def figure_caption(figure_set, stem: str) -> str:
    """The caption of figure ``stem`` of a figure set (its ``CAPTIONS``): what the figure shows and what to
    see in it, never its file name.  A figure without one is refused."""
    captions = getattr(figure_set, "CAPTIONS", {})
    if stem not in captions:
        raise SectionUnavailable(stem, f"a caption for figure '{stem}' in {figure_set.__name__}.CAPTIONS")
    return captions[stem]


def figure_environment(path: Path, tex_dir: Path, caption: str, width: str = "0.62\\linewidth") -> str:
    """A ``figure`` that includes ``path`` (relative to the document in ``tex_dir``) with ``caption``."""
    rel = Path(path).resolve().relative_to(Path(tex_dir).resolve()).as_posix()
    return ("\\begin{figure}[htbp]\n\\centering\n"
            f"\\includegraphics[width={width}]{{{rel}}}\n\\caption{{{text(caption)}}}\n\\end{{figure}}")


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

    from seqgrad.derive.latex_layout import inline, relation, tabular
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


def check_status(pattern: str, b: Build, results: list | None = None) -> str:
    """Tabulate each check matching ``pattern`` with its verified status and largest errors (the
    checks run now, or ``results`` of a run made for this section)."""
    from seqgrad.derive.latex_layout import tabular

    from .report import fmt_error

    results = run_pattern(pattern, b) if results is None else results
    marks = {"pass": "verified", "fail": "\\textbf{FAILED}", "error": "\\textbf{ERROR}", "skip": "skipped"}
    rows = [[code(r.name), source_tex(r.source, b.notation), b.notation.number(fmt_error(r.max_abs_error)),
             b.notation.number(fmt_error(r.max_rel_error)), marks[r.status]] for r in results]
    passed = sum(r.status == "pass" for r in results)
    return (f"{passed} of {len(results)} checks verified on {text(b.device)} in float64.\n\n"
            "\\begin{table}[htbp]\n\\centering\\footnotesize\n"
            f"\\caption{{Checks matching \\texttt{{{text(pattern)}}}, run now.}}\n"
            + tabular(["check", "source", "max abs err", "max rel err", "status"], rows, ragged("5.6cm", "3.9cm") + "lll")
            + "\n\\end{table}")


# --------------------------------------------------------------------------- sections

ENCODER_TABLES = {
    "attention_on_H0": ("H0", "head1.Q", "head1.K", "head1.V", "head1.A", "head1.O", "B_att"),
    "prenorm_block": ("block0.X", "block0.B_att", "block0.U", "block0.Z_mlp", "block0.B_mlp", "H1", "H_enc"),
}


def _encoder(b: Build) -> str:
    """The course's worked example: its intermediates as course-style tables, and the checks against the text."""
    from seqgrad.numeric import course
    from seqgrad.numeric.tokens import tokenize
    from seqgrad.latex_table import booktabs

    from .encoder_tables import trace_tables

    tokens = tokenize(course.TEXT)
    parts = [f"The worked example encodes ``{text(course.TEXT)}'' (T = {len(tokens)} tokens). "
             f"Rows are tokens, columns are features, numbers at {b.digits} significant figures (the text prints 3)."]
    for stage, names in ENCODER_TABLES.items():
        record = course.trace(stage, device=b.device)
        for title, rows, row_labels, col_labels in trace_tables(stage, record, list(names), tokens):
            parts.append(booktabs(rows, row_labels=row_labels, col_labels=col_labels, corner="t", caption=title,
                                  figures=b.digits, decimal_comma=b.notation.decimal_comma))
    parts.append(b.figures("encoder"))
    parts.append(check_status("encoder.*", b))
    return "\n\n".join(parts)



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


def _per_use(net, name: str, b: Build) -> str:
    """dL/dw = sum over the uses w^{[t]} of the shared weight, each use's partial next to it (text lines 150-176)."""
    import sympy as sp

    from seqgrad.derive.latex_layout import align

    total = net.grad(name)
    terms = list(total.args) if isinstance(total, sp.Add) else [total]
    base, _, sub = name.partition("_")
    from seqgrad.derive.latex_settings import Partial

    uses = []
    for term in terms:  # the use at step t is the term that carries g_t^z (or e, for the head)
        steps = sorted(int(m) for m in re.findall(r"g_(-?\d+)\^z", str(term)))
        if len(steps) != 1:
            raise SeqgradValueError("name", name, "a weight used once per step (each term carries one g_t^z)")
        uses.append((steps[0], term))
    uses.sort(key=lambda u: u[0])
    copies = [Partial(sp.Symbol(f"{name}^[{t}]")) for t, _ in uses]  # the per-use copies w_x^{[t]} of the text
    rows = [(Partial(sp.Symbol(name)), [sp.Add(*copies, evaluate=False), total])]
    rows += [(copy, term) for copy, (_, term) in zip(copies, uses)]
    return align(rows, b.notation)


def _rnn(b: Build) -> str:
    """The text's 3-step scalar RNN: forward pass, Table 3, the shared-weight sums, a closed path sum;
    then the vector cell's backward recursion; checks against autograd; Figure 3."""
    import sympy as sp

    from seqgrad.derive import rnn
    from seqgrad.derive.latex_layout import align, equation_table
    from seqgrad.derive.latex_settings import Partial

    net = rnn.unroll(steps=3, activation="tanh")
    n = b.notation
    defs = lambda kinds: [(d.target, d.value) for d in net.program.definitions(kinds)]  # noqa: E731
    table = net.backward_table()
    parts = [
        "The scalar cell of the text with $T = 3$ steps, $\\phi = \\tanh$, $h_{-1} = 0$ (text lines 65--176).",
        "\\subsection*{Forward pass}\n" + align(defs(("forward", "loss")), n),
        "\\subsection*{Forward and backward operations (Table 3)}\n\\begin{center}\n"
        + equation_table(["forward pass", "backward pass"],
                         [[(f.target, f.value) if f else None, (g.target, g.value) if g else None] for f, g in table.rows], n)
        + "\n\\end{center}",
        "\\subsection*{Shared weights: one gradient term per use}\n" + "\n".join(_per_use(net, w, b) for w in ("w_x", "w_h")),
    ]
    g = {net.sensitivity("z", t): net.sensitivity("z", t, expand=True) for t in range(net.steps)}
    parts.append("\\subsection*{The path sum}\nWith every $g^z_t$ replaced by its closed form:\n"
                 + align([(Partial(net.parameters["w_h"]), net.grad("w_h").xreplace(g))], n))
    vec = rnn.unroll(steps=3, activation="tanh", inputs=2, hidden=3, outputs=1)
    parts.append("\\subsection*{The vector cell}\nRow vectors, weights stored output $\\times$ input "
                 "($D = 2$, $H = 3$, $C = 1$; text lines 264--308). The backward recursion and the weight gradients:\n"
                 + align([(d.target, d.value) for d in vec.program.definitions(("backward",))]
                         + [(Partial(vec.parameters[w]), vec.grad(w))
                            for w in ("W_x", "W_h", "W_o")], n))
    parts.append(checks_or_note("rnn.*", b))
    parts.append(b.figures("paths"))
    return "\n\n".join(p for p in parts if p)


def _gates(b: Build) -> str:
    """GRU and LSTM in PyTorch's conventions: one step's definitions, the one-step Jacobian split into
    carry and gate terms, the activation facts with their proofs, the gated checks."""
    import sympy as sp

    from seqgrad.derive import activation_facts, gated
    from seqgrad.derive.latex_layout import align, inline
    from seqgrad.derive.latex_settings import Partial

    n = b.notation
    parts = []
    for title, net, wrts in (("GRU", gated.gru(steps=2), (None,)), ("LSTM", gated.lstm(steps=2), ("c", "h"))):
        step = [(d.target, d.value) for d in net.program.definitions(("forward",)) if d.step == 1]
        parts.append(f"\\subsection*{{{title}: one step ($t = 1$)}}\n" + align(step, n))
        for wrt in wrts:
            split = net.step_jacobian(1) if wrt is None else net.step_jacobian(1, wrt=wrt)
            prev = sp.Symbol({None: "h_0", "c": "c_0", "h": "h_0"}[wrt])
            state = sp.Symbol("h_1" if title == "GRU" else "c_1")
            J = Partial(prev, of=state)
            parts.append(f"The one-step Jacobian {inline(J, n)}: the carry at fixed gates, "
                         "then the terms through the gates.\n"
                         + align([(J, split.full), (sp.Symbol(r"\text{carry}"), split.carry),
                                  (sp.Symbol(r"\text{gate terms}"), split.gate_terms)], n))
    from .registry import all_checks

    results = run_pattern("gated.*", b) if all_checks("gated.*") else []
    proved = {r.name: r.status == "pass" for r in results}  # gated.fact.NAME runs fact NAME's proof
    rows = []
    for fact in activation_facts.FACTS.values():
        holds = proved[f"gated.fact.{fact.name}"] if f"gated.fact.{fact.name}" in proved else fact.prove().holds
        rows.append(f"\\paragraph{{{code(fact.name)}}} {source_tex(fact.source, n)}: "
                    + ("proved." if holds else "\\textbf{NOT proved}.")
                    + "\n" + fact.latex(n))
    parts.append("\\subsection*{Activation facts, each proved now}\n" + "\n".join(rows))
    parts.append(check_status("gated.*", b, results) if results else checks_or_note("gated.*", b))
    parts.append(b.figures("paths"))
    return "\n\n".join(p for p in parts if p)


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


def _attention(b: Build) -> str:
    """Softmax and scaled dot-product attention: the derivations' own displays, then every identity's status."""
    from seqgrad.derive import softmax

    jac = softmax.SoftmaxJacobian(3)
    import sympy as sp

    parts = [_derivation("The softmax Jacobian", jac.latex(b.notation), "proved exactly" if jac.prove() else "\\textbf{NOT proved}",
                         where=sp.Eq(sp.Symbol("n"), 3, evaluate=False), notation=b.notation),
             _catalogue_section(["derive.softmax", "derive.attention"])(b)]
    return "\n\n".join(parts)


def _residual(b: Build) -> str:
    """Residual Jacobians (plain, pre-norm, post-norm) proved now, the pre-norm block's Jacobian, the depth
    product expanded into paths, then every LayerNorm and residual identity's status."""
    from seqgrad.derive import catalogue, residual

    def verdict(name: str, proved: str) -> str:
        """The catalogue entry's proof (run once in the document: its identity paragraph below reuses it)."""
        proof = prove_within(catalogue.get(name), b.proof_seconds)
        return words(proved, b.notation) if proof is not None and proof.holds else "\\textbf{NOT proved}"

    parts = []
    for placement in residual.ResidualJacobian.PLACEMENTS:
        jac = residual.ResidualJacobian(d=2, placement=placement)
        parts.append(_derivation(f"A residual wrapping, {placement}", jac.latex(b.notation),
                                 verdict(f"residual-{placement}", "proved exactly for a generic branch and every `d`")))
    parts.append(_derivation("The pre-norm block (seed 000 L946)", residual.EncoderBlock(T=2, D=2).latex(b.notation)))
    depth = residual.DepthProduct(L=3, d=2)
    parts.append(_derivation("A stack of three residual layers is a sum over paths", depth.latex(b.notation),
                             verdict("residual-depth-expansion", "proved exactly, `d = 2`")))
    parts.append(_catalogue_section(["derive.layernorm", "derive.residual"])(b))
    parts.append(b.figures("depth"))
    return "\n\n".join(p for p in parts if p)


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


def _positional(b: Build) -> str:
    """PE(pos + k) = R(k) PE(pos) for an even and an odd width, proved now, then every positional identity."""
    import sympy as sp

    from seqgrad.derive import positional
    from seqgrad.derive.latex_layout import inline, tabular

    parts = []
    for d in (8, 5):
        shift = positional.Sinusoidal(d).shift_identity()
        report = shift.prove()
        verdict = "proved exactly" if report.holds else "\\textbf{NOT proved}"
        where = inline(sp.Eq(sp.Symbol("d"), d, evaluate=False), b.notation)
        parts.append(f"\\paragraph{{The shift identity, {where}}} ({verdict} {words('for symbolic `pos` and `k`.', b.notation)})\n"
                     f"{shift.latex(b.notation)}\n"
                     "\\begin{center}\n" + tabular(["statement", "", "verdict"], shift_report_rows(report, b.notation),
                                                    "l" + ragged("6cm") + "l") + "\n\\end{center}")
    parts.append(_catalogue_section(["derive.positional"])(b))
    return "\n\n".join(parts)


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
    return "\n\n".join(parts)


SECTIONS: dict[str, Section] = {s.name: s for s in (
    Section("rnn", "Recurrent networks: backpropagation through time",
            ("seqgrad.derive.rnn", "seqgrad.crosscheck.figures.paths"), _rnn),
    Section("gates", "Gated cells: GRU and LSTM",
            ("seqgrad.derive.gated", "seqgrad.derive.activation_facts", "seqgrad.crosscheck.figures.paths"), _gates),
    Section("positional", "Positional encoding",
            ("seqgrad.derive.positional", "seqgrad.derive.catalogue"), _positional),
    Section("attention", "Attention",
            ("seqgrad.derive.attention", "seqgrad.derive.softmax", "seqgrad.derive.catalogue"), _attention),
    Section("encoder", "The worked encoder example",
            ("seqgrad.numeric.course", "seqgrad.latex_table", "seqgrad.crosscheck.checks.encoder", "seqgrad.crosscheck.figures.encoder"), _encoder),
    Section("residual", "Residual paths and LayerNorm",
            ("seqgrad.derive.residual", "seqgrad.derive.layernorm", "seqgrad.derive.catalogue", "seqgrad.crosscheck.figures.depth"), _residual),
    Section("claims", "Printed claims",
            ("seqgrad.derive.claims", "seqgrad.crosscheck.claims_catalogue"), _claims),
    Section("decoder", "The Transformer decoder",
            ("seqgrad.derive.decoder", "seqgrad.numeric.decoder", "seqgrad.crosscheck.figures.decoder"), lambda b: _issue14().decoder_section(b)),
    Section("conv", "The convolution layer",
            ("seqgrad.derive.conv", "seqgrad.numeric.conv", "seqgrad.crosscheck.figures.conv"), lambda b: _issue14().conv_section(b)),
)}


def _issue14():
    from . import latex_decoder_conv

    return latex_decoder_conv
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

def preamble(title: str = "seqgrad: derivations for sequence models") -> str:
    return ("\\documentclass[11pt]{article}\n\\usepackage[margin=2.2cm]{geometry}\n"
            + "".join(f"\\usepackage{{{p}}}\n" for p in PACKAGES)
            + "\\setlength{\\parindent}{0pt}\n\\setlength{\\parskip}{0.6ex}\n"
            + f"\\title{{{text(title)}}}\n\\date{{}}\n\\begin{{document}}\n\\sloppy\n\\maketitle\n")


#: Which section of a document includes each figure set: the first section, in document order, that
#: draws it (rnn and gates both show the path products).
FIGURE_SETS = {"rnn": ("paths",), "gates": ("paths",), "encoder": ("encoder",), "residual": ("depth",)}


def render(sections: Sequence[str] | str | None = None, notation: Notation | None = None, *, tex_dir: str | Path = ".",
           figures_dir: str | Path | None = None, device: str = "cpu", proof_seconds: float | None = 20.0,
           digits: int = 3, jobs: int = 1) -> str:
    """The complete document as text.  Figures are written under ``figures_dir``
    (which must lie inside ``tex_dir``); with ``figures_dir=None`` the document has
    no figures and needs no file but itself.  With ``jobs > 1`` the sections are built
    in that many processes (:mod:`crosscheck.latexrun`); the text is the same."""
    names = resolve_sections(sections)
    if not names:
        raise SeqgradValueError("sections", sections, "at least one section whose package is present")
    notation = Notation() if notation is None else notation
    if not isinstance(notation, Notation):
        raise SeqgradTypeError("notation", notation, "a derive.latex_settings.Notation")
    if proof_seconds is not None:
        proof_seconds = validate.real("proof_seconds", proof_seconds, positive=True)
    digits = validate.integer("digits", digits, minimum=1, maximum=15)
    b = Build(notation, Path(tex_dir), None if figures_dir is None else Path(figures_dir), device, proof_seconds, digits)
    parts = [preamble()]
    jobs = validate.integer("jobs", jobs, minimum=1)
    for name, body in zip(names, build_sections(b, names, SECTIONS, jobs)):
        parts.append(f"\\section{{{text(SECTIONS[name].title)}}}\\label{{sec:{name}}}\n\n{body.strip()}\n\n\\clearpage\n")
    parts.append("\\end{document}\n")
    unused = notation.unused_renames()
    if unused:
        raise SeqgradValueError("--symbol (Notation.symbol_names)", ", ".join(unused), "the name (or base letter) of a symbol these sections print; "
                                "nothing in sections " + ", ".join(names) + " is called that")
    return "\n".join(parts)


def write(path: str | Path, sections: Sequence[str] | str | None = None, notation: Notation | None = None, *,
          standalone: bool = False, device: str = "cpu", proof_seconds: float | None = 20.0, digits: int = 3,
          jobs: int = 1) -> Path:
    """Write the document to ``path`` (atomically).  Unless ``standalone``, its figures go to
    ``<stem>-figures/`` beside it; a standalone document is one file with no figures."""
    path = Path(path)
    if path.suffix != ".tex":
        raise SeqgradValueError("OUT", str(path), "a file name ending in .tex")
    figures_dir = None if standalone else path.parent / f"{path.stem}-figures"
    body = render(sections, notation, tex_dir=path.parent, figures_dir=figures_dir, device=device,
                  proof_seconds=proof_seconds, digits=digits, jobs=jobs)
    return write_text(path, body)


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


def compile_pdf(tex: str | Path, out_dir: str | Path | None = None, *, timeout: float = 180) -> Path:
    """Compile ``tex`` with pdflatex (non-interactive, stop at the first error) and return the PDF.
    Raises LatexError quoting TeX's first error line."""
    tex = Path(tex).resolve()
    engine = tex_engine()
    if engine is None:
        raise LatexError("no TeX engine: install pdflatex (Debian: texlive-latex-base texlive-latex-recommended "
                         "texlive-latex-extra)")
    out = Path(out_dir or tempfile.mkdtemp(prefix="seqgrad-tex-")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    cmd = [engine, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", f"-output-directory={out}", tex.name]
    pdf = out / (tex.stem + ".pdf")
    for _ in range(MAX_TEX_RUNS):  # again while TeX says the references (labels, the longtable widths) moved
        proc = subprocess.run(cmd, cwd=tex.parent, capture_output=True, text=True, errors="replace", timeout=timeout)
        if proc.returncode != 0 or not pdf.exists():
            log = proc.stdout
            m = re.search(r"^! .*(?:\n.*){0,2}", log, re.M)
            raise LatexError(f"pdflatex failed on {tex.name}: {m.group(0).strip() if m else log[-400:]}")
        if not RERUN.search(proc.stdout):
            break
    return pdf


#: at most this many pdflatex runs per document (references settle in two or three)
MAX_TEX_RUNS = 4
#: TeX's and its packages' requests for another run ("Label(s) may have changed. Rerun ...", longtable's
#: "Table widths have changed. Rerun LaTeX.")
RERUN = re.compile(r"Rerun (?:to get|LaTeX)|may have changed\.\s*Rerun", re.I)
