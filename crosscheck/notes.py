r"""The lecture sections of ``seqgrad latex``: course notes a lecturer hands out.

Each section is built by a function of a :class:`~crosscheck.latex_parts.Build` and returns a :class:`Part`: the
section's text (the model's equations, the **general** result for every sequence length and every width, a
small instance as a worked example, the figure with a caption that says what to see) and its share of the
appendix (the identities with their ids and sources, the tables of checks run now).  Every formula is a SymPy
object of the package that derives it, printed by the notation's printer (:mod:`derive.latex_settings`); the
words around them are text.  Each result carries one verification mark, a footnote
(:func:`verification`): how it was proved and how large the error against torch autograd was, with the course
text it comes from; the line numbers, ids and tables are in the appendix.

>>> from seqgrad.crosscheck import notes
>>> [name for name, _ in notes.ORDER]
['rnn', 'paths', 'gates', 'positional', 'attention', 'residual', 'encoder', 'decoder', 'conv']
>>> notes.without_lines("week06 §Attention:700-713; lesson §Formula:172 (K, V from the encoder)")
'week06 §Attention; lesson §Formula (K, V from the encoder)'
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

import sympy as sp
from sympy.printing.precedence import PRECEDENCE

from seqgrad.derive.blocks import HEAD_INDEX, MEMORY, NORM_TAGS, NORMALIZED, QUERY_INDEX  # a sublayer's subscript, the memory's name; the index of a general head, in brackets (W_Q^[h]); a query's row
from seqgrad.derive.prose import Sizes
from seqgrad.derive.gated import lstm_total_derivative  # noqa: F401 (the LSTM section's; read here by tests)
from seqgrad.derive.sequence import T, adjoint, stepped, t

from .latex_parts import LAYERS, identity_label, number_tex

__all__ = ["Part", "ORDER", "verification", "one_footnote", "without_lines", "notation_section", "introduction", "Shape"]


@dataclass(frozen=True)
class Part:
    """What a section builds: its text in the notes and its share of the appendix (ids, sources, check tables)."""

    body: str
    appendix: str = ""


class Shape(sp.Tuple):
    """The shape of a symbol in the notation table, printed ``T \times d`` (a scalar: ``1``)."""

    def _latex(self, printer):
        return r" \times ".join(printer.parenthesize(a, PRECEDENCE["Mul"], strict=True) for a in self.args) if self.args else "1"

    def _sympystr(self, printer):
        return " x ".join(printer._print(a) for a in self.args) if self.args else "1"


# --------------------------------------------------------------------------- verification marks

_LINES = re.compile(r"(?::|\s+L|\s+l\.|\s+lines?\s+)\d+(?:\s*[-–]+\s*\d+)?")


def without_lines(source: str) -> str:
    """A source without its line numbers (those are in the appendix): ``week06 §Attention:700`` -> ``week06 §Attention``."""
    return re.sub(r"\s+", " ", _LINES.sub("", str(source))).strip()


def for_scope(text: str) -> str:
    r"""A proof's scope as the words after "proved": ``all $d \geq 1$`` -> ``for every $d \geq 1$``,
    ``instance $L = 3$`` -> ``for the case $L = 3$``.

    >>> for_scope("all $n \\geq 1$"), for_scope("instance $L = 3$, $d = 2$")
    ('for every $n \\geq 1$', 'for the case $L = 3$, $d = 2$')
    """
    text = re.sub(r"(^|;\s*)all\b", r"\1every", text.strip())
    text = re.sub(r"(^|;\s*)instance\b", r"\1the case", text)
    return "for " + text


_EVERY = re.compile(r"all ((?:\w+, )*\w+) >= 1")


def implied_scopes(scopes: Sequence[str]) -> set[str]:
    """The scopes "all n >= 1" that another of ``scopes`` includes ("all T >= 1" beside "all T, d >= 1"): a footnote
    says the wider one only.

    >>> sorted(implied_scopes(["all T, d, d_k, d_v >= 1", "all T >= 1", "all n >= 1"]))
    ['all T >= 1']
    """
    sizes = {s: set(m.group(1).split(", ")) for s in scopes if (m := _EVERY.fullmatch(s.strip()))}
    return {s for s, names in sizes.items() if any(names < other for other in sizes.values())}


def proof_mark(b, names: Sequence[str], stated: Sequence[str] = ()) -> str:
    """"proved for every d >= 1" for the catalogue entries ``names`` (each proved now, within the
    document's time for a proof); "NOT proved" where one fails, "not proved within S s here" where one is slow.
    The further identities the section's appendix ``stated`` (each proved now too) are counted by how each was
    established when they share one ("the appendix states 3 more identities, proved symbolically for every size"),
    else by the refuted ones alone ("..., 1 of them refuted by an exact counterexample (...)"): their scopes
    and symbols are in the appendix, under their headings."""
    from seqgrad.derive import catalogue
    from seqgrad.derive.prose import scope

    from .latex_parts import prove_within

    said, bad, slow, proved, refuted = [], [], [], [], []
    counted = {"every": 0, "instance": 0, "counterexample": 0, "numeric": 0}
    for name in [*names, *stated]:
        entry = catalogue.get(name)
        proof = prove_within(entry, b.proof_seconds)
        if proof is None:
            slow.append(name)
        elif not proof.holds:
            bad.append(name)
        elif name in names:
            proved.append(entry.scope)
        else:
            kind = entry.method if entry.method != "simplify" else (
                "instance" if entry.scope.startswith("instance") else "every")
            counted[kind] += 1
            refuted += [name] if kind == "counterexample" else []
    implied = implied_scopes(proved)
    for entry_scope in proved:
        text = for_scope(scope(entry_scope).latex(b.notation))
        if entry_scope not in implied and text not in said:
            said.append(text)
    # a scope another one states and adds to ("for every d", "for every d, every branch F") is said once
    said = [text for text in said if not any(other.startswith(text + ",") for other in said)]
    # scopes hold commas of their own ("for every d, every branch F"), so the list of them is joined by semicolons
    out = ["proved " + "; ".join(said[:-1]) + ("; and " if len(said) > 1 else "") + said[-1]] if said else []
    words = {"every": "proved symbolically for every size", "instance": "proved symbolically at concrete sizes",
             "counterexample": "refuted by an exact counterexample" + named(b, refuted), "numeric": "checked numerically"}
    if sum(counted.values()):
        n = sum(counted.values())
        how = [(k, words[kind]) for kind, k in counted.items() if k]
        # one kind is said; of mixed kinds only the refuted ones, named (the tally of how each is established,
        # "2 proved symbolically for every size, 11 at concrete sizes, ...", is the appendix's, under its headings)
        out.append(f"the appendix states {n} {'more ' if said else ''}identit{'y' if n == 1 else 'ies'}"
                   + (f", {how[0][1]}" if len(how) == 1 else
                      f", {counted['counterexample']} of them {words['counterexample']}" if counted["counterexample"] else ""))
    if bad:
        out.append("\\textbf{" + ("not proved" if len(bad) == len(names) + len(stated) else "not every statement is proved")
                   + "}" + named(b, bad))
    if slow:
        out.append(("not" if len(slow) == len(names) + len(stated) else "not all") + f" proved within {b.proof_seconds:g} s here")
    return ". ".join(out[:1] + [capitalized(text) for text in out[1:]])


#: What a footnote says, in words, of a refuted identity whose statement needs symbols that only its appendix entry
#: sets up (the map A(.) of the rows, a permutation pi and its matrix Pi, the masked A_M): the body defines none of
#: them, and the positional section says in words what the term means (reordering the input rows of self-attention
#: without a mask reorders its output rows the same way).
FOOTNOTE_WORDS = {
    "attention-equivariance-fails-positions": "permutation equivariance once positional encodings are added",
    "attention-equivariance-fails-causal": "permutation equivariance under a causal mask",
}


def named(b, names: Sequence[str]) -> str:
    """" ($\\sin(\\omega_{2}) \\neq \\alpha(1) \\sin(0)$, p.~N)": the catalogue identities ``names`` that a footnote
    counts as refuted (or not proved), each by its statement, printed by the notation's printer (or in the words of
    :data:`FOOTNOTE_WORDS`, where its symbols are the appendix's own), and the page of the appendix that discusses it;
    "" for none, or where the document has no appendix to point to."""
    from seqgrad.derive import catalogue

    if not names or not b.appendix:
        return ""
    said = [(FOOTNOTE_WORDS[name] if name in FOOTNOTE_WORDS else _inline(catalogue.get(name).statement(), b))
            + f", p.~\\pageref{{{identity_label(name)}}}" for name in names]
    return " (" + "; ".join(said) + ")"


def capitalized(text: str) -> str:
    """``text`` with its first letter upper case, inside a leading ``\\textbf{`` too: a footnote's sentences are
    joined from phrases that each begin in lower case.

    >>> capitalized("\\\\textbf{not proved}"), capitalized("checked")
    ('\\\\textbf{Not proved}', 'Checked')
    """
    bold = "\\textbf{"
    if text.startswith(bold):
        return bold + capitalized(text[len(bold):])
    return text[:1].upper() + text[1:]


def check_mark(results: Sequence, device: str, notation=None) -> str:
    """"checked numerically in double precision, largest error 5.3·10^-15" for check ``results`` (the device named
    unless it is the CPU): what the result was compared with and how closely, never how many checks or which (their
    ids and counts are in the appendix); a failure or an error is said in bold, never hidden in the largest error."""
    if not results:
        return ""
    from seqgrad.derive.latex_settings import DEFAULT

    printed = [r for r in results if getattr(r, "units", None) is not None]  # compared with printed figures
    if printed:
        said = [printed_mark(printed, notation)] + ([check_mark([r for r in results if r not in printed], device, notation)]
                                                   if len(printed) < len(results) else [])
        return ", and are ".join(s for s in said if s)  # "agrees with ..., and are checked numerically ..."
    failed = [r for r in results if r.status in ("fail", "error")]
    passed = [r for r in results if r.status == "pass"]
    finite = lambda x: x is not None and math.isfinite(x)  # noqa: E731
    errors = [r.max_abs_error for r in passed if not getattr(r, "single", False) and finite(r.max_abs_error)]
    # a module that runs in float32 (the course's nn.RNN) is compared at its own precision: its error is float32
    # rounding, said apart, never mixed into the double-precision figure, and as the appendix's table lists it (its
    # largest absolute error): a footnote states no number its appendix does not show
    single = [r.max_abs_error for r in passed if getattr(r, "single", False) and finite(r.max_abs_error)]
    where = "" if device == "cpu" else f" on {device}"
    text = f"checked numerically in double precision{where}" if errors or not single else ""
    text += f", largest error {number_tex(max(errors), notation or DEFAULT)}" if errors else ""
    if single:
        text += ("; " if text else "") + (
            "the course's PyTorch module, which computes in single precision, agrees within "
            f"{number_tex(max(single), notation or DEFAULT)}, the rounding of single precision")
    if failed:
        text += "; \\textbf{" + ("the check failed" if len(results) == 1 else "not every check passed") + "}"
    return text


def printed_mark(results: Sequence, notation=None) -> str:
    """"agrees with the numbers the course prints, to their printed digits (largest difference 0.48 of a unit in the
    last printed digit)" for checks against a course's printed figures (results with ``units``, the largest
    discrepancy in units of the last printed digit): their measure is the printed digit, not a floating-point error."""
    from seqgrad.derive.latex_settings import DEFAULT

    bad = [r for r in results if r.status != "pass"]
    worst = max(r.units for r in results)
    number = (notation or DEFAULT).number(f"{worst:.2f}")
    text = (f"agrees with the numbers the course prints, to their printed digits (largest difference ${number}$ of a "
            "unit in the last printed digit)")
    return text + ("; \\textbf{not every printed number is reproduced}" if bad else "")


@dataclass(frozen=True)
class Mark:
    """One result's verification, as :func:`verification` was asked for it: the catalogue proofs, the checks run,
    the source in the course texts and the appendix section with the details."""

    proofs: tuple = ()
    checks: tuple = ()
    source: str | None = None
    appendix: str | None = None
    #: the identities the section's appendix states (:func:`_audit`), counted in the footnote beside ``proofs``
    stated: tuple = ()
    #: sentences on how a result of the text was verified that no proof or check above says (the decoder's symbolic
    #: block at a small T): they belong in the footnote, not the text
    remarks: tuple = ()


#: Where a section's verification marks stand in its text until :func:`one_footnote` says them (the n-th mark).
MARK_TOKEN = "\\seqgradmark{{{}}}"


def verification(b, *, proofs: Sequence[str] = (), checks: Sequence = (), source: str | None = None,
                 appendix: str | None = None, remarks: Sequence[str] = ()) -> str:
    """One verification mark: a footnote with how the result was proved and checked and where it comes from, as a
    textbook cites it ("Course notes, week 6, §5", :func:`seqgrad.sources.in_words`): no ids, counts, line numbers
    or tables (those are in the appendix).  While a section is built (``b.marks`` a list) the mark is kept and a
    placeholder stands in the text: the section's marks are said together, in one footnote (:func:`one_footnote`)."""
    mark = Mark(tuple(proofs), tuple(checks), source, appendix, remarks=tuple(remarks))
    if b.marks is not None:
        b.marks.append(mark)
        return MARK_TOKEN.format(len(b.marks) - 1)
    return _footnote(b, mark)


def stated_with(b, name: str, section: str | None) -> str | None:
    """The section of the document whose appendix states catalogue identity ``name`` (:data:`AUDITED`), when it is
    not ``section`` (the encoder's block program is stated with the residual paths); None otherwise."""
    from seqgrad.derive import catalogue

    module = "derive." + catalogue.get(name).family
    owner = next((s for s, modules in AUDITED.items() if module in modules), None)
    present = b.appendix and (not b.sections or owner in b.sections)
    return owner if section is not None and owner not in (None, section) and present else None


#: The phrases a verification sentence begins with, and how each reads after a plural subject (:func:`_footnote`).
LEAD_VERBS = {"proved": " are proved", "checked": " are checked", "agrees": " agree", "refuted": " are refuted"}


def _footnote(b, mark: Mark, lead: str = "") -> str:
    from seqgrad.derive.prose import cited
    from seqgrad.sources import in_words

    here, elsewhere = [], {}
    for name in mark.proofs:  # a proof another section's appendix states is said with a pointer to it
        owner = stated_with(b, name, mark.appendix)
        elsewhere.setdefault(owner, []).append(name) if owner else here.append(name)
    stated = [n for n in mark.stated if n not in mark.proofs]
    said = [s for s in (proof_mark(b, here, stated) if here or stated else "",
                        *(proof_mark(b, names) + f" (Appendix~\\ref{{app:{owner}}})" for owner, names in elsewhere.items()),
                        check_mark(mark.checks, b.device, b.notation)) if s]
    said = said or ([] if mark.remarks else ["not verified here"])
    led = next((s for s in said if s.startswith(tuple(LEAD_VERBS))), None) if lead else None
    said = [led] + [s for s in said if s is not led] if led else said  # the sentence the lead is the subject of first
    first = said[0] if said else ""
    verb = next((v for v in LEAD_VERBS if first.startswith(v)), None) if said else None
    # "The results of this section are proved ...", "... agree with ...": the lead is the first sentence's subject
    # a mark of its own (no section lead) speaks of the results beside it: "These results agree with ..."
    opening = ((lead or "These results") + LEAD_VERBS[verb] + first[len(verb):]) if verb else capitalized(first)
    # a later sentence that begins with a verb has the results as its subject too: "They agree with ...", or, after
    # a sentence on the appendix's identities (whom "they" would mean), the subject again
    later = [((("They" if ". " not in prev else lead or "These results") + LEAD_VERBS[v] + s[len(v):])
              if (v := next((v for v in LEAD_VERBS if s.startswith(v + " ")), None)) else capitalized(s))
             for prev, s in zip(said, said[1:])]
    text = ". ".join(([opening] if said else []) + later + [capitalized(s) for s in mark.remarks])
    cited_as = in_words(mark.source) if mark.source else ""
    if cited_as:
        text += ". " + cited(cited_as, b.notation)
    if mark.appendix and b.appendix:
        text += f". Details in Appendix~\\ref{{app:{mark.appendix}}}"
    return "\\footnote{" + text + ".}"


#: A lead-in that ends in a colon (its verification mark after it), then the display it leads into.
_LEAD_IN = re.compile(r"(:(?:\\seqgradmark\{\d+\})?)\n\n(?=\\begin\{align\*\})")


def with_lead_ins(body: str) -> str:
    """``body`` with each display that a sentence ending in a colon leads into set in that sentence's paragraph (no
    blank line between them): TeX does not break a page just before a display inside a paragraph, so the lead-in
    is never left at the foot of a page with its formula on the next.

    >>> with_lead_ins("the sum:\\n\\n\\\\begin{align*}x\\\\end{align*}\\n\\nNext.")
    'the sum:\\n\\\\begin{align*}x\\\\end{align*}\\n\\nNext.'
    """
    return _LEAD_IN.sub(r"\1\n", body)


def one_footnote(part: Part, b) -> Part:
    """``part`` with its section's verification marks (``b.marks``) said in one footnote, where the first of them
    stands in the text: every proof and check once (one largest error for the section), the sources together."""
    part = Part(with_lead_ins(part.body), part.appendix)
    marks = b.marks or []
    if not marks:
        return part
    tokens = [MARK_TOKEN.format(i) for i in range(len(marks))]
    present = sorted((part.body.index(tok), tok) for tok in tokens if tok in part.body)
    proofs = list(dict.fromkeys(name for m in marks for name in m.proofs))
    checks = list({r.name: r for m in marks for r in m.checks}.values())
    source = "; ".join(str(m.source) for m in marks if m.source)
    joined = Mark(tuple(proofs), tuple(checks), source or None, next((m.appendix for m in marks if m.appendix), None),
                  tuple(dict.fromkeys(name for m in marks for name in m.stated)),
                  tuple(dict.fromkeys(remark for m in marks for remark in m.remarks)))
    body = part.body
    said_in = with_section_letters(b, joined.appendix) if joined.appendix else b  # the section's own letters
    for i, (_, tok) in enumerate(present):
        body = body.replace(tok, _footnote(said_in, joined, lead="The results of this section") if i == 0 else "")
    return Part(body, part.appendix)


#: A check that the patterns of two sections match, listed in one table only: the table of the section it belongs to
#: (check name -> section), when the document has that section; the other section's appendix points to it
#: (:func:`listed_elsewhere`).
LISTED_WITH = {"rnn.path_products": "paths"}


def _elsewhere(b, name: str, section: str | None) -> str | None:
    """The section of the document that lists check ``name`` instead of ``section``, or None."""
    owner = LISTED_WITH.get(name)
    return owner if section is not None and owner not in (None, section) and owner in b.sections else None


def listed_elsewhere(b, section: str, patterns: Iterable[str]) -> str:
    """A sentence of ``section``'s appendix pointing to the table that lists a check of its ``patterns`` that
    another section of the document lists (:data:`LISTED_WITH`); "" when there is none."""
    from .latex_parts import code
    from .registry import all_checks

    moved = {c.name: owner for pattern in patterns for c in all_checks(pattern)
             if (owner := _elsewhere(b, c.name, section))}
    return " ".join(f"The check {code(name)} is listed with Section~\\ref{{sec:{owner}}}, in "
                    f"Table~\\ref{{tab:checks-{owner}}}, and said in that section's footnote." for name, owner in moved.items())


def section_checks(b, patterns: Iterable[str], section: str | None = None) -> list:
    """The registered checks matching any of ``patterns`` (each once, in registry order), run now.  While a section
    is built (``b.marks`` a list) they are kept as one more mark, with no place in the text: the section's footnote
    (:func:`one_footnote`) covers every check the section runs, those a sentence of the text marks and the rest
    its appendix lists.  A check that another section of the document lists (:data:`LISTED_WITH`, ``section`` this
    section's name) is left to it."""
    from .registry import all_checks, run_checks

    chosen = {}
    for pattern in patterns:
        for c in all_checks(pattern):
            if not _elsewhere(b, c.name, section):  # listed (and said) with another section of the document
                chosen.setdefault(c.name, c)
    if not chosen:
        return []
    results = run_checks(list(chosen.values()), device=b.device, show_progress=False)
    if b.marks is not None:  # every check the section runs, and lists in its appendix, is said in its footnote
        b.marks.append(Mark(checks=tuple(results)))
    return results


def short_source(source: str, limit: int = 2, sections_only: bool = False) -> str:
    """A source as a footnote cites it: its references without line numbers or notes in brackets, each once, at
    most ``limit`` (only those that name a section of a text, ``week06 §Vector``, with ``sections_only``)."""
    from .appendix_text import tagged_by_lines

    seen = []
    text = tagged_by_lines(source)
    while re.search(r"\([^()]*\)", text):  # notes in brackets, innermost first
        text = re.sub(r"\s*\([^()]*\)", " ", text)
    for piece in text.split(";"):
        s = without_lines(piece).strip(" ,.")
        if s and s not in seen and ("§" in s or not sections_only):
            seen.append(s)
    return "; ".join(seen[:limit])


def sources(results: Sequence, limit: int = 2) -> str:
    """The distinct course sections the checks come from (no line numbers), at most ``limit``."""
    return short_source("; ".join(str(r.source) for r in results), limit, sections_only=True)


# --------------------------------------------------------------------------- small helpers

def _display(rows, b, width: int = 60, columns: int = 1) -> str:
    from seqgrad.derive.latex_layout import display

    return display(rows, b.notation, width=width, columns=columns)


def _rows(derivation_rows) -> list:
    """(lhs, rhs) pairs of :class:`derive.cell.Row` objects, the range of t a row holds for set after it."""
    return [r.display_row() for r in derivation_rows]


def _words(s: str, b, **formulas) -> str:
    """Words with formulas: in backquotes (read by :class:`derive.prose.Prose`), or ``{name}`` for a SymPy object
    given as a keyword (an index expression such as ``h_{t-1}``, a shape, a relation), each typeset by the printer."""
    from .latex_parts import words

    return words(s, b.notation, **formulas)


def _s(name: str, *shape):
    """A symbol of the notes by its name (``h_{t-1}``), a matrix symbol when a shape is given."""
    return sp.MatrixSymbol(name, *shape) if shape else sp.Symbol(name)


def _at(base: str, index, *shape):
    """The value ``base`` at step ``index`` (``h_{t-1}``, a row when a shape is given): a node of
    :mod:`derive.sequence`, so the notation's letters for the step and the length reach it."""
    return stepped(base, index, shape or None)


def _grad(base: str, index, *shape):
    """The gradient of the loss with respect to ``base`` at step ``index`` (``g_t^h``): an adjoint node."""
    return adjoint(_at(base, index, *shape))


def _inline(expr, b) -> str:
    from seqgrad.derive.latex_layout import inline

    return inline(expr, b.notation)


def _sentences(*pointers: str) -> str:
    """Sentences that point to figures (:meth:`Build.pointer`) as one paragraph, leaving out those the build does
    not include ("" when it includes none)."""
    return " ".join(p for p in pointers if p)


def _pointers(b, set_name: str, sentences: dict, **formulas) -> str:
    """:func:`_sentences` of one figure set's pointers, ``{stem: words}`` (what each figure shows, in words; the
    ``formulas`` their ``{name}`` placeholders stand for)."""
    return _sentences(*(b.pointer(set_name, stem, _words(said, b, **formulas)) for stem, said in sentences.items()))


def _figure(b, set_name: str, stems: Sequence[str] | None = None) -> str:
    return b.figures(set_name, stems)


# --------------------------------------------------------------------------- 1. RNN and BPTT

def rnn_section(b) -> Part:
    from seqgrad.derive import bptt, builtin_cells, rnn
    from seqgrad.derive.latex_layout import equation_table
    from seqgrad.derive.latex_settings import Partial

    from .latex_parts import check_status

    b = with_section_letters(b, "rnn")
    scalar = builtin_cells.rnn_cell().general()
    # the general vector cell: biases, and a loss at every step (the course's loss on the last output is the case
    # e_t = 0 for t < T - 1)
    vector = builtin_cells.rnn_cell(sizes={"D": 2, "H": 3, "C": 1}, bias=True, on="every").general()
    unrolled = bptt.Unrolled(vector)
    patterns = ["rnn.*", "cells.general.*"]
    checks = section_checks(b, patterns, "rnn")
    mark = verification(b, checks=checks, source=sources(checks), appendix="rnn")
    net = rnn.unroll(steps=3, activation="tanh")
    table = net.backward_table()
    g = {net.sensitivity("z", t): net.sensitivity("z", t, expand=True) for t in range(net.steps)}
    body = [
        _words("A recurrent network reads a sequence {xs} one step at a time and carries a state "
               "`h_t` from step to step; the same weights are used at every step. The scalar cell of the course, with "
               "the activation tanh, the initial state {h0} and a squared error on the last output:", b,
               xs=Sizes(_at("x", 0), _at("x", 1), _s("..."), _at("x", T - 1)), h0=sp.Eq(_at("h", -1), 0, evaluate=False)),
        _display(_rows(scalar.forward_rows()), b),
        "\\subsection{Backpropagation through time, at a general step}",
        _words("Write {gh} and {gz} for the gradients of the loss with respect to `h_t` and `z_t`. The loss sees "
               "`h_t` directly only at the last step; every earlier state reaches it through the next step. Going "
               "backwards from {last}:", b, gh=_grad("h", t), gz=_grad("z", t), last=sp.Eq(t, T - 1, evaluate=False)),
        _display(_rows(scalar.backward_rows()), b),
        _words("A weight is used once per step, so its gradient is a sum over the steps of what each use contributes:", b)
        + mark,
        _display(_rows(scalar.gradient_rows()), b),
        _words("The vector cell has the same structure. Rows are vectors ({x} is {xshape}, {h} is {hshape}), weights are "
               "stored output by input and applied as {xW}, so the transposes appear in the gradients. Written here in "
               "general, with biases and a loss at every step, {Lsum} (a model that predicts at every step; for the course's "
               "loss on the last output only, drop the terms of the steps {early}, that is, set their {ezero}):", b,
               x=_at("x", t, 1, 2), h=_at("h", t, 1, 3), xshape=Shape(_s("1"), _s("d_x")), hshape=Shape(_s("1"), _s("d_h")),
               xW=_at("x", t, 1, 2) * _s("W_x", 3, 2).T, Lsum=vector.forward_rows()[-1].rhs,
               ezero=sp.Eq(_at("e", t, 1, 1), sp.ZeroMatrix(1, 1), evaluate=False),
               early=sp.StrictLessThan(t, T - 1, evaluate=False)),
        _display(_rows(vector.forward_rows()[1:-1]), b),
        _words("Backwards, with {gzT} (no step follows the last one, so at {last} the recursion for {gh} keeps only "
               "{direct}):", b, gzT=sp.Eq(_grad("z", T, 1, 3), sp.ZeroMatrix(1, 3), evaluate=False),
               last=sp.Eq(t, T - 1, evaluate=False), gh=_grad("h", t, 1, 3),
               direct=_at("e", T - 1, 1, 1) * _s("W_o", 1, 3)),
        _display(_rows(vector.backward_rows() + vector.gradient_rows()), b),
        "\\subsection{Unrolling the recursion: products of Jacobians}",
        _words("The recursion says that {gh} is what the loss sends to {h} directly plus what step {next} sends back. "
               "The step from {prev} to {h} has the transition Jacobian {J}, so the adjoint of {h} reaches an earlier "
               "state {htau} ({early}) multiplied on the right by one Jacobian per step in between, the latest step's first "
               "(matrices: the order matters; for {same} the product is empty, the identity):", b,
               gh=_grad("h", t, 1, 3), h=_at("h", t, 1, 3), prev=_at("h", t - 1, 1, 3), htau=_at("h", bptt.tau, 1, 3),
               next=bptt.t + 1, J=unrolled.jacobian(bptt.t), same=sp.Eq(bptt.t, bptt.tau, evaluate=False),
               early=sp.LessThan(bptt.tau, bptt.t, evaluate=False)),
        _display(unrolled.product_row(), b),
        _words("Unrolled from `t = T - 1` down, the adjoint of {htau} collects every later step's direct term carried back "
               "along its path, and each weight gradient becomes a sum over the step `t` at which the loss is incurred "
               "and the step {tau} at which the weight acts:", b, htau=_at("h", bptt.tau, 1, 3), tau=bptt.tau)
        + verification(b, checks=[r for r in checks if r.name == "rnn.bptt_closed_form"], appendix="rnn"),
        _display([unrolled.adjoint_row()] + [(Partial(vector.params[n]), unrolled.gradient(n)) for n in ("w_h", "w_x", "b_h")],
                 b),
        "\\subsection{Worked example: three steps}",
        _words("With `T = 3` the recursion unrolls into the course's table of forward and backward operations. Each row "
               "pairs a forward operation with its backward one. The forward pass is computed down the table, from {first} "
               "to {last}; the backward pass up it, from the error `e` in the last row, through {last} down to {first}, "
               "to {ginit} in the first row (Table", b, first=sp.Eq(_s("t"), 0, evaluate=False),
               last=sp.Eq(_s("t"), net.steps - 1, evaluate=False), ginit=_s("g_{-1}^h")) + "~\\ref{tab:rnn-bptt}).",
        "\\begin{table}[htbp]\n\\centering\n\\caption{" + _words(
            "The three-step RNN: each forward operation beside its backward one.", b)
        + "}\\label{tab:rnn-bptt}\n" + equation_table(
            [_words("forward pass (read down: {first} to {last})", b, first=sp.Eq(_s("t"), 0, evaluate=False),
                    last=sp.Eq(_s("t"), net.steps - 1, evaluate=False)),
             _words("backward pass (read up: {last} down to {first})", b, first=sp.Eq(_s("t"), 0, evaluate=False),
                    last=sp.Eq(_s("t"), net.steps - 1, evaluate=False))],
            [[(f.target, f.value) if f else None, (gg.target, gg.value) if gg else None] for f, gg in table.rows], b.notation)
        + "\n\\end{table}",
        _words("With every {gz} replaced by its closed form, the gradient of the recurrent weight is a sum over "
               "paths: one term per step at which `w_h` is used, each a product of the slopes along the path. The weight `w_h` is "
               "used at all three steps, but the term of step 0, {first}, vanishes because {h0}: two terms remain.", b,
               gz=_grad("z", t), first=sp.Mul(_grad("z", 0), _at("h", -1), evaluate=False),
               h0=sp.Eq(_at("h", -1), 0, evaluate=False)),
        _display([(Partial(net.parameters["w_h"]), net.grad("w_h").xreplace(g))], b),
        *_rnn_numbers(b),
    ]
    appendix = "\n\n".join(s for s in (check_status("rnn", b, checks) if checks else "", listed_elsewhere(b, "rnn", patterns)) if s)
    return Part("\n\n".join(body), appendix)


def _as_figures(x: float, b):
    """A computed number at the notes' significant figures (:attr:`Build.digits`), as a SymPy number."""
    from .worked_numbers import as_figures

    return as_figures(x, b.digits)


def _number(x: float, b) -> str:
    """A computed number at the notes' significant figures, typeset by the printer."""
    return _inline(_as_figures(x, b), b)


def _numbers_table(b, header: Sequence[str], rows: Sequence[Sequence[str]], caption: str, label: str) -> str:
    """A numbered table of typeset cells (:func:`derive.latex_layout.tabular`): a label column, then numbers."""
    from seqgrad.derive.latex_layout import tabular

    return ("\\begin{table}[htbp]\n\\centering\\small\n"
            f"\\caption{{{caption}}}\\label{{{label}}}\n"
            + tabular(header, rows, "l" + "r" * (len(header) - 1)) + "\n\\end{table}")


def _rounded_sums(ex, b) -> str:
    """Where a printed sum is not the sum of its column's printed terms (each rounded to the notes' digits): the
    words that say what those terms add up to ("" where every column's printed terms add up to its printed sum)."""
    from .worked_numbers import printed_sum

    said = []
    for i in sorted(ex.terms):
        terms = printed_sum(ex.column(i), b.digits)
        if terms != sp.Rational(str(_as_figures(sum(ex.column(i)), b))):
            said.append(_words("the printed terms of {term} add up to {terms}", b, term=ex.columns[i],
                               terms=_as_figures(float(terms), b)))
    return ("; " + _words(" and ", b).join(said) + _words(" (each term rounded to its printed digits)", b)) if said else ""


def _rnn_numbers(b) -> list[str]:
    """The three-step scalar RNN with numbers: the stated values, and a table of the forward values, the adjoints
    and the terms of the gradient sums (:func:`crosscheck.worked_numbers.rnn_example`, the section's own formulas
    evaluated), with the sums."""
    from seqgrad.derive.latex_settings import Partial

    from .worked_numbers import rnn_example

    ex = rnn_example()
    net = ex.net
    stated = [sp.Eq(s, sp.Float(ex.values[str(s)]), evaluate=False) for s in net.program.leaves()]
    by_name = {str(e.lhs): e for e in stated}
    header = [_inline(t, b)] + [_inline(c, b) for c in ex.columns]
    # the inputs as the text states them; every computed value at the notes' digits
    rows = [[_inline(sp.Integer(k), b), _inline(sp.Float(row[0]), b)] + [_number(v, b) for v in row[1:]]
            for k, row in enumerate(ex.rows)]
    rows.append([_words("sum", b)] + [_number(sum(ex.column(i)), b) if i in ex.terms else "" for i in range(len(ex.columns))])
    grads = {p: Partial(net.parameters[p]) for p in ex.terms.values()}
    step0 = ex.columns[min(ex.terms)].subs(t, 0)
    return [
        _words("With numbers: take the weights {wx}, {wh} and {wy}, the inputs {x0}, {x1} and {x2}, the target {y} and "
               "{h0}. The forward pass gives {yhat}, so {e} and {L}.", b,
               wx=by_name["w_x"], wh=by_name["w_h"], wy=by_name["w_o"], x0=by_name["x_0"], x1=by_name["x_1"],
               x2=by_name["x_2"], y=by_name["y"], h0=sp.Eq(_at("h", -1), 0, evaluate=False),
               yhat=sp.Eq(net.yhat, _as_figures(ex.yhat, b), evaluate=False),
               e=sp.Eq(net.e, _as_figures(ex.e, b), evaluate=False), L=sp.Eq(net.L, _as_figures(ex.L, b), evaluate=False),
               ) + " Table~\\ref{tab:rnn-numbers} " + _words(
            "follows the backward recursion from {ghT} down to {gz0}; each weight's gradient is the sum of its column "
            "of terms" + (" (the term {step0} of step 0 is 0, because {h0})" if ex.rows[0][min(ex.terms)] == 0 else "")
            + ".", b, ghT=_grad("h", net.steps - 1), gz0=_grad("z", 0),
            step0=step0, h0=sp.Eq(_at("h", -1), 0, evaluate=False)),
        # the caption says what the table shows; how its sums are made is said in the text below it
        _numbers_table(b, header, rows, _words("The three-step scalar RNN at the values stated in the text: at each step "
                                              "`t` the input, the state, the two adjoints and the terms of the two "
                                              "gradient sums, with the sums in the last row.", b), "tab:rnn-numbers"),
        _words("The last row of Table", b) + "~\\ref{tab:rnn-numbers} " + _words(
            "sums the unrounded terms, {dwh} and {dwx}", b,
            dwh=sp.Eq(grads["w_h"], _as_figures(ex.gradients["w_h"], b), evaluate=False),
            dwx=sp.Eq(grads["w_x"], _as_figures(ex.gradients["w_x"], b), evaluate=False)) + _rounded_sums(ex, b) + ".",
    ]


# --------------------------------------------------------------------------- 2. path products

def paths_section(b) -> Part:
    from seqgrad.derive import builtin_cells, rnn
    from seqgrad.derive.latex_settings import OrderedProduct, Partial

    from .latex_parts import check_status

    scalar = builtin_cells.rnn_cell().general()
    vector = builtin_cells.rnn_cell(sizes={"D": 2, "H": 3, "C": 1}).general()
    t, s, j = sp.symbols("t tau j", integer=True)  # s: the earlier step, tau (s is a standard deviation)
    h = lambda k: _at("h", k)  # noqa: E731  (the state at a step: h_t, h_tau)
    Jj = sp.Symbol("J_j")
    checks = section_checks(b, ["rnn.path_products", "gated.figure3_*", "gated.pascanu_bound", "gated.fact.*"])
    mark = verification(b, checks=checks, source=sources(checks), appendix="paths")
    net = rnn.unroll(steps=4)
    rho = sp.Symbol("rho", positive=True)  # the bound on a factor (r is the GRU's reset gate)
    ordered = OrderedProduct(_at("J", j), j, s + 1, t)
    body = [
        _words("Recall from Section", b) + "~\\ref{sec:rnn}" + _words(
               " that the gradient that step `t` sends back to an earlier state {hs} is a product of one Jacobian per step "
               "in between, the transition Jacobian `J_j` of the step from {prev} to `h_j`, the latest step's first; "
               "this section bounds that product:", b, prev=h(j - 1), hs=h(s)),
        # one display: the product and the factor of both cells belong together (one alignment)
        _display([(Partial(h(s), of=h(t)), ordered),
                  (Jj, _step(scalar.transition(), j), ("  (scalar cell)",)),
                  (sp.MatrixSymbol("J_j", 3, 3), _step(vector.transition(), j), ("  (vector cell)",))], b),
        _words("The Jacobians are in numerator layout: row `i` of {Jj} holds the derivatives of entry `i` of {hj} "
               "(the denominator runs along the columns, although the states are rows), so the gradient with respect to {hs}, a "
               "row, is the gradient with respect to {ht} multiplied on the right by {ordered}.", b, ordered=ordered, hs=h(s),
               Jj=sp.MatrixSymbol("J_j", 3, 3), hj=_at("h", j, 1, 3), ht=_at("h", t, 1, 3)),
        _words("Each factor is a weight times a slope of tanh, and tanh has slope at most 1, hence {factor} (for the "
               "vector cell the same holds in the spectral norm, with {Wh} for `w_h`). If every factor has absolute "
               "value (for the vector cell: norm) at most `rho`, the product over `t - tau` steps is at most "
               "{bound} in absolute value (in norm; the bound of Pascanu, Mikolov and Bengio 2013): it vanishes geometrically for `rho < 1` (the vanishing gradient of Hochreiter 1991), and the bound allows "
               "growth for `rho > 1` (an upper bound does not say that the product grows). Worked example, four steps:", b,
               factor=sp.LessThan(sp.Abs(Jj), sp.Abs(sp.Symbol("w_h")), evaluate=False),
               bound=sp.Pow(rho, t - s, evaluate=False), Wh=sp.MatrixSymbol("W_h", 3, 3)) + mark,
        _display([(Partial(sp.Symbol("h_0"), of=sp.Symbol("h_3")), net.path_product(3, 0))], b),
        _words("and with `T = 4` and the loss on the last output only (so {gh} is all the loss sends back, through "
               "step 3), and every factor of absolute value at most `rho`, the gradients in absolute value satisfy", b,
               gh=sp.Symbol("g_3^h")),
        _relation(net.path_bound(3, 0, rho), b),
        b.pointer("paths", "fig3-left-power-curves", _words(
            "draws the bound {bound} against the path length {length} for factors `rho` below and above 1.", b,
            bound=sp.Pow(rho, t - s, evaluate=False), length=t - s)),
        _pointers(b, "paths", {
            "fig3-right-tanh-sensitivity":
                "follows two tanh trajectories with the same weight `w_h = 1.2`: the product grows where the state "
                "stays at 0, where the slope of tanh is 1, and vanishes where the state saturates, although `w_h > 1`.",
            "sensitivity-heatmap":
                "maps the same sensitivity over the step and the weight `w_h`, at input 0, where it is `w_h` to the "
                "power of the distance: it vanishes below `w_h = 1` and explodes above, the more the farther the step "
                "from the end.",
            "jacobian-product-norms":
                "compares, for a vector tanh cell, the norm of the Jacobian product with two upper bounds of it: the "
                "product of the steps' norms, and the norm of {Wh} to the power of the distance (the bound of Pascanu, "
                "Mikolov and Bengio, 2013, since the slope of tanh is at most 1)."}, Wh=sp.MatrixSymbol("W_h", 3, 3)),
        _figure(b, "paths", ["fig3-left-power-curves", "fig3-right-tanh-sensitivity", "sensitivity-heatmap",
                             "jacobian-product-norms"]),
    ]
    appendix = check_status("paths", b, checks) if checks else ""
    return Part("\n\n".join(p for p in body if p), appendix)


def _step(expr, j):
    """A transition Jacobian at step ``j`` instead of ``t``: the step substituted (``h_t`` -> ``h_j``)."""
    from seqgrad.derive.sequence import t

    return expr.subs(t, j)


def _rms_call(rhs):
    """The ``rms(x)`` the RMSNorm Jacobian ``rhs`` divides by."""
    return next(a for a in rhs.atoms(sp.Function) if str(a.func) == "rms")


def _rms_of_row(rhs):
    """``rms(x) = sqrt(epsilon + sum_j x_j^2 / d)``: the root mean square of the row that the RMSNorm Jacobian ``rhs``
    (:func:`derive.catalogue.get` ``("rmsnorm-jacobian")``) divides by, defined as the appendix's entry states it
    (summed over a feature j, as LayerNorm's mean is: k is the positional offset alone)."""
    rms = _rms_call(rhs)
    d = next(v for v in rhs.free_symbols if v.name == "d")
    j = sp.Symbol("j", integer=True)
    x_j = sp.IndexedBase(str(rms.args[0]))[j]
    return sp.Eq(rms, sp.sqrt(sp.Symbol("epsilon", positive=True) + sp.Sum(x_j ** 2, (j, 0, d - 1)) / d), evaluate=False)


def _RMS():
    """The right-hand side of the RMSNorm Jacobian, the catalogue's (its symbols are the ones the notes print)."""
    from seqgrad.derive import catalogue

    return catalogue.get("rmsnorm-jacobian").statement().rhs


def _rms_scaled(rhs):
    """``xtilde_i = x_i / rms(x)``: the scaled entries the RMSNorm Jacobian ``rhs`` is written in."""
    rms = _rms_call(rhs)
    xt = next(a for a in rhs.atoms(sp.Indexed) if str(a.base) == "xtilde" and str(a.indices[0]) == "i")
    return sp.Eq(xt, sp.IndexedBase(str(rms.args[0]))[xt.indices] / rms, evaluate=False)


def _relation(rel, b) -> str:
    from seqgrad.derive.latex_layout import relation

    op = {sp.LessThan: r"\le", sp.GreaterThan: r"\ge", sp.Equality: "=", sp.StrictLessThan: "<"}[type(rel)]
    return relation(rel.lhs, rel.rhs, b.notation, op=op)


# --------------------------------------------------------------------------- 3. GRU and LSTM

def _gate_columns(names) -> int:
    """How many gradient rows of a gated cell to set side by side, so that each line holds one gate's parameters
    (the LSTM's w_x, w_h and b: 3) or half of them (the GRU's w_x, w_h, b_x, b_h: 2 lines of 2), never the end of
    one gate beside the start of the next (b_i beside w_xf); ``names``: the parameters' names, in the rows' order."""
    from collections import Counter

    # w_x., w_h., b_x., b_h. or b_. of gate "." (w_o alone is the output weight)
    gates = [re.fullmatch(r"w_[xh](\w)|b_[xh]?(\w)", n) for n in names]
    per_gate = Counter(m[1] or m[2] for m in gates if m)
    most = max(per_gate.values(), default=2)
    return most if most <= 3 else 2 if most % 2 == 0 else 1


def _shared_bias_gradients(b, rows) -> list[str]:
    """What the gradient rows of a cell with two biases per gate (the GRU, PyTorch's convention) show: biases that
    enter a pre-activation only through their sum have equal gradients, read off the derived rows (equal right-hand
    sides); a recurrent bias ``b_h.`` whose gradient differs from its input bias's ``b_x.`` is multiplied by
    something first (the GRU's reset gate times ``b_hn``).  [] for a cell with one bias per gate (the LSTM)."""
    from seqgrad.derive.step_sum import StepSum

    grads = {str(lhs.wrt): (lhs, rhs) for lhs, rhs, *_ in (r.display_row() for r in rows) if str(lhs.wrt).startswith("b_")}
    pairs = [(grads[x], grads["b_h" + x[3:]]) for x in grads if x.startswith("b_x") and "b_h" + x[3:] in grads]
    same = [sp.simplify(bx[1] - bh[1]) == 0 for bx, bh in pairs]  # the two biases' gradients are equal
    equal = [sp.Eq(bx[0], bh[0], evaluate=False) for (bx, bh), eq in zip(pairs, same) if eq]
    if not equal:
        return []
    said = _words("Where a gate's two biases enter its pre-activation only through their sum, their gradients are "
                  "equal: " + _listed([f"{{e{k}}}" for k in range(len(equal))]) + ".", b,
                  **{f"e{k}": e for k, e in enumerate(equal)})
    for (bx, bh), eq in zip(pairs, same):  # a recurrent bias multiplied first: its summand is the input's times that
        if not eq and isinstance(bx[1], StepSum) and isinstance(bh[1], StepSum):
            factor = sp.simplify(bh[1].args[0] / bx[1].args[0])  # the summands (a sum over the steps: summand, 0, T-1)
            said += " " + _words("Not so for {bh}: {factor} multiplies it before it joins the pre-activation, so its gradient is {grad}.",
                                 b, bh=bh[0].wrt, factor=factor, grad=sp.Eq(bh[0], bh[1], evaluate=False))
    return [said]


def gates_section(b) -> Part:
    from seqgrad.derive import builtin_cells, gated
    from seqgrad.derive.latex_settings import Partial

    from .latex_parts import check_status

    b = with_section_letters(b, "gates")
    checks = section_checks(b, ["gated.derived_*", "gated.gru_*", "gated.lstm_*", "cells.builtin.*"])
    mark = verification(b, checks=checks, source=sources(checks), appendix="gates")
    body = [_words("Gated cells (the LSTM of Hochreiter & Schmidhuber 1997, the GRU of Cho et al. 2014) add a path on "
                   "which the state is carried from step to step scaled by a gate, a number "
                   "between 0 and 1 that the network computes from `x_t` and {prev}. Both cells below follow PyTorch's "
                   "conventions (gate order; two biases in the GRU, where the reset gate multiplies one of them; the "
                   "LSTM's two biases of a gate add into one), written for scalar states; the vector cells have "
                   "the same equations with the products of a gate and a state taken entrywise ({hadamard}). Both "
                   "start from the zero state, {h0} (the LSTM also {c0}).", b,
                   prev=_at("h", t - 1), hadamard=sp.HadamardProduct(_at("f", t, 1, 3), _at("c", t - 1, 1, 3)),
                   h0=sp.Eq(_at("h", -1), 0, evaluate=False), c0=sp.Eq(_at("c", -1), 0, evaluate=False))]
    # each cell's subsection ends with its worked example: the carry at fixed gates, the one-step Jacobian split into
    # the carry and the terms through the gates (t = 1)
    for title, cell, net, wrt, prev, state in (("GRU", builtin_cells.gru_cell(), gated.gru(steps=2), None, "h_0", "h_1"),
                                               ("LSTM", builtin_cells.lstm_cell(), gated.lstm(steps=2), "c", "c_0", "c_1")):
        gd = cell.general()
        gradients = gd.gradient_rows()
        body += [f"\\subsection{{The {title}}}",
                 _display(_rows(gd.forward_rows()), b),
                 _words("Backpropagation through time at a general step `t`:", b) + (mark if wrt == "c" else ""),
                 _display(_rows(gd.backward_rows()), b),
                 _words("Every weight is shared by all steps, so its gradient is again a sum over `t`:", b),
                 # three sums a line fit the text's width (72 typeset characters; a third of the default 60 did not)
                 _display(_rows(gradients), b, width=72, columns=_gate_columns(
                     [str(r.display_row()[0].wrt) for r in gradients]))]
        body += _shared_bias_gradients(b, gradients)
        body += _gate_example(b, title, net, wrt, prev, state)
    # the cells of these notes are scalar cells: a carry is a number, diag(...) only for a vector state
    carries = (_words("The carry of the LSTM is `f_t`, the derivative {dc} at fixed gates; that of the GRU is `u_t`, the "
                       "derivative {dh} at fixed gates and candidate (for a vector state, `diag(f_t)` and `diag(u_t)`): "
                       "a gate held near 1 makes the product of carries shrink only by the gate's value per step, where "
                       "a plain RNN's product shrinks by its slope times its weight at every step.", b,
                       dc=Partial(_at("c", t - 1), of=_at("c", t)), dh=Partial(_at("h", t - 1), of=_at("h", t)))
                + " " + b.pointer("paths", "gradient-flow-rnn-gru-lstm", _words(
                    "shows the carry product and the gradient over 59 steps back, for the three cells at their default "
                    "initialisation (left) and for the GRU and the LSTM with the keeping gate's bias raised (right).", b)))
    # in the LSTM's subsection, after its backward pass, where both gates and their carries are defined: the paragraph
    # that points to the figure, then the figure, then the LSTM's worked example, which fills the page it floats from
    # (the figure alone before the paragraph floated to the page before it; both at the section's end, the section's
    # float barrier left the page short)
    at = body.index("\\subsection{The LSTM}") + 4
    body[at:at] = [carries, _figure(b, "paths", ["gradient-flow-rnn-gru-lstm"])]
    appendix = check_status("gates", b, checks) if checks else ""
    return Part("\n\n".join(p for p in body if p), appendix)


def _gate_example(b, title: str, net, wrt, prev: str, state: str) -> list[str]:
    """The worked example of a gated cell at ``t = 1``: the one-step Jacobian of ``state`` with respect to ``prev``
    (``wrt``: the state it is taken along, None for the cell's only one), split into the carry and the gate terms."""
    from seqgrad.derive.latex_settings import AtFixed, Partial

    split = net.step_jacobian(1) if wrt is None else net.step_jacobian(1, wrt=wrt)
    J = Partial(sp.Symbol(prev), of=sp.Symbol(state))
    if split.gate_terms == 0:  # the state reaches the next one only through the carry: one line says it all
        # at fixed h_0, said by its subscript: the derivative along every path (the total one) follows, with the same d
        held = AtFixed(sp.Symbol(prev), of=sp.Symbol(state), held=net.h[0])
        return [_words(f"Worked example, the {title} at `t = 1`: the gates and the candidate are computed from "
                       "`x_1` and `h_0`, not from `c_0`, so the partial derivative of `c_1` with respect to `c_0` "
                       "at fixed `h_0` is the carry path alone:", b), _display([(held, split.full)], b),
                *_lstm_total(b, net, split.full)]
    return [_words(f"Worked example, the {title} at `t = 1`: the one-step Jacobian is the carry, the path at fixed "
                   "gates and candidate, plus the other paths: through the update gate (the term with `w_hu`) and "
                   "through the candidate, by its recurrent weight (the term with `w_hn*r_1`) and through the reset "
                   "gate inside it (the term with `w_hr`):", b),
            _display([(J, split.full)], b),
            _words("The carry is {carry}; what the gates and the candidate add is the rest:", b, carry=split.carry),
            _display([(sp.Add(J, -split.carry, evaluate=False), split.gate_terms)], b),
            *_gru_numbers(b, J)]


def _gru_numbers(b, J) -> list[str]:
    """The GRU's worked example with numbers: the stated weights and inputs, a table of every quantity of the section
    at each step, the one-step Jacobian, its carry and the rest, and every weight's gradient
    (:func:`crosscheck.worked_numbers.gru_example`, the section's own formulas evaluated)."""
    from .worked_numbers import gru_example

    ex = gru_example()
    figures = lambda x: _as_figures(x, b)  # noqa: E731
    return _gated_numbers(
        b, ex, "GRU", "tab:gru-numbers", [sp.Eq(_at("h", -1), 0, evaluate=False)], columns=4,
        said="the one-step Jacobian above, its carry and the rest are" + (
            " (each rounded from its own unrounded value, so the printed rest need not be the difference of the two "
            "printed values)" if _rounded_apart(ex, figures) else ""),
        shown=[(J, ex.jacobian), (ex.split.carry, ex.carry), (sp.Add(J, -ex.split.carry, evaluate=False), ex.gate_terms)])


def _lstm_numbers(b, J, total) -> list[str]:
    """The LSTM's worked example with numbers, as the GRU's (:func:`_gru_numbers`): the stated values, the table of
    the section's quantities at each step, the partial derivative ``J`` (the carry) and the total derivative
    ``total`` of ``c_1`` with respect to ``c_0`` at those values, and every weight's gradient
    (:func:`crosscheck.worked_numbers.lstm_example`)."""
    from .worked_numbers import lstm_example

    ex = lstm_example()
    # g_0^{z_f} = g_0^c f_0 (1 - f_0) c_{-1}: the forget gate of step 0 has nothing to forget
    zf = next(i for i, c in enumerate(ex.columns) if str(c) == "g_t^{z^f}")
    zero = (_words(" ({g} is 0, because {c0})", b, g=ex.columns[zf].subs(t, 0), c0=sp.Eq(_at("c", -1), 0, evaluate=False))
            if ex.rows[0][zf] == 0 else "")
    return _gated_numbers(b, ex, "LSTM", "tab:lstm-numbers",
                          [sp.Eq(_at("h", -1), 0, evaluate=False), sp.Eq(_at("c", -1), 0, evaluate=False)], columns=3,
                          said="the partial derivative above, which is its carry, and the total derivative are",
                          zero=zero, shown=[(J, ex.split.carry, ex.jacobian), (total, ex.total)])


def _gated_numbers(b, ex, title: str, label: str, initial, columns: int, said: str, shown, zero: str = "") -> list[str]:
    """A gated cell's worked example with numbers (``ex``, :func:`crosscheck.worked_numbers.gru_example` or
    :func:`~crosscheck.worked_numbers.lstm_example`): the stated weights (in ``columns`` columns), inputs, target and
    ``initial`` states, the head's values, a table (``label``) of every quantity of the section at each step, the
    rows ``shown`` (an expression, what it equals where that is said too, and its value) that ``said`` names, and every weight's gradient; ``zero`` says,
    after the table's reference, why an entry of it is 0 ("" where none needs saying)."""
    from seqgrad.derive.latex_settings import Partial

    net = ex.net
    stated = {str(s): s for s in net.program.leaves()}
    inputs = [n for n in stated if n.startswith("x_")] + ["y"]
    weights = [(symbol, sp.Float(ex.values[n])) for n, symbol in net.parameters.items()]  # in the section's order
    steps = range(len(ex.rows))
    header = [_words("quantity", b)] + [_inline(sp.Eq(t, k, evaluate=False), b) for k in steps]
    rows = [[_inline(c, b)] + [_number(ex.rows[k][i], b) for k in steps] for i, c in enumerate(ex.columns)]
    figures = lambda x: _as_figures(x, b)  # noqa: E731
    return [
        _words("With numbers: take the weights and biases below, the inputs {inputs}, the target {y} and {initial}:", b,
               inputs=Sizes(*(sp.Eq(stated[n], sp.Float(ex.values[n]), evaluate=False) for n in inputs[:-1])),
               y=sp.Eq(stated["y"], sp.Float(ex.values["y"]), evaluate=False), initial=Sizes(*initial)),
        _display(weights, b, columns=columns),
        _words("The forward pass gives {yhat}, so {e} and {L}. Table", b,
               yhat=sp.Eq(net.yhat, figures(ex.yhat), evaluate=False), e=sp.Eq(net.e, figures(ex.e), evaluate=False),
               L=sp.Eq(net.L, figures(ex.L), evaluate=False))
        + f"~\\ref{{{label}}} " + _words(
            "gives every quantity of the section at both steps: the forward pass down to {h1}, then the adjoints of "
            "the backward recursion from {gh1} down to step 0", b, h1=net.h[-1], gh1=_grad("h", len(ex.rows) - 1))
        + zero + _words(". At these values " + said, b),
        _display([(lhs, [*between, figures(v)] if between else figures(v)) for lhs, *between, v in shown], b),
        _numbers_table(b, header, rows, _words(f"The two-step scalar {title} at the values stated in the text: each "
                                              "quantity of the section's forward pass and backward recursion at "
                                              "`t = 0` and `t = 1`.", b), label),
        _words("Every weight's gradient, the sum over the two steps of the section's terms:", b),
        _display([(Partial(net.parameters[p]), figures(v)) for p, v in ex.gradients.items()], b,
                 columns=_gate_columns(list(ex.gradients))),
    ]


def _rounded_apart(ex, figures) -> bool:
    """Whether the printed rest of the GRU's one-step Jacobian differs from the printed Jacobian minus the printed
    carry (0.730 - 0.507 = 0.223, printed 0.222): each is rounded from its own value."""
    printed = lambda x: sp.Rational(str(figures(x)))  # noqa: E731
    return printed(ex.jacobian) - printed(ex.carry) != printed(ex.gate_terms)


def _lstm_total(b, net, carry) -> list[str]:
    """The LSTM's total derivative of ``c_1`` with respect to ``c_0``: the carry plus the path through
    ``h_0 = o_0 tanh(c_0)``, which the gates of step 1 read (the chain rule, each factor from the unrolled program)."""
    from seqgrad.derive.latex_settings import AtFixed, Partial, Total

    h0, c0, c1 = net.h[0], net.c[0], net.c[1]
    chain = sp.Add(carry, sp.Mul(Partial(h0, of=c1), Partial(c0, of=h0), evaluate=False), evaluate=False)
    return [_words("But `h_0` depends on `c_0`, through {h0def}; the total derivative (without a subscript: along "
                   "every path), along which the gradient reaches `c_0`, adds the path through `h_0`:", b,
                   h0def=sp.Eq(h0, net.program[h0].value, evaluate=False)),
            _display([(Total(c0, of=c1), [chain, lstm_total_derivative(net, carry)])], b),
            # the carry is the partial derivative at fixed h_0, printed as the derivation above prints it (without
            # its subscript it read as the total derivative, beside the total's other value)
            *_lstm_numbers(b, AtFixed(c0, of=c1, held=h0), Total(c0, of=c1))]


# --------------------------------------------------------------------------- 4. positional encodings

def positional_section(b) -> Part:
    from seqgrad.derive import catalogue, positional

    b = with_section_letters(b, "positional")
    from .latex_parts import paired_encoding

    pos, k, j, D = sp.symbols("pos k j d", integer=True)  # d: the encoding's width, the model's
    omega = sp.Symbol("omega_j")
    PE = sp.Function("PE")
    shift = catalogue.get("pe-shift")  # exact identities: proved (the appendix lists every one of them, proved now)
    mark = verification(b, proofs=["pe-shift"], source=shift.source, appendix="positional")  # the shift is what the text states
    odd = positional.Sinusoidal(5).shift_identity()
    report = odd.prove()
    body = [
        _words("Self-attention without a mask is permutation-equivariant: reordering its input rows reorders its "
               "output rows the same way, so it cannot tell two orders of the same tokens apart (", b)
        + "Appendix~\\ref{app:attention} " + _words("proves it for every size; a causal mask, which does depend on "
                                                      "the order, is set up at the end of", b)
        + " Section~\\ref{sec:attention} " + _words("and used by the decoder,", b) + " Section~\\ref{sec:decoder}). "
        + _words("The position `pos` of each token is therefore added to its embedding as a vector of sines and "
                 "cosines, one frequency per pair of coordinates (Vaswani et al. 2017, section 3.5):", b),
        _display([(PE(pos, 2 * j), sp.sin(omega * pos)), (PE(pos, 2 * j + 1), sp.cos(omega * pos)),
                  (omega, sp.Pow(10000, -2 * j / D, evaluate=False))], b),
        b.pointer("positional", "positional_encoding_d128", _words(
            "shows the encodings of 100 positions at width 128: the first coordinates oscillate fast, the last ones "
            "hardly change.", b)),
        _figure(b, "positional"),
        _words("General result, for an even width `d`: shifting the position by `k` rotates every pair of coordinates "
               "by the angle {angle}; the rotation does not depend on `pos`, so a fixed offset is a fixed linear map "
               "of the encoding. For an odd width this holds on the paired coordinates only:", b, angle=omega * _s("k")) + mark,
        _display(_named_rotation(_as_rows(shift.statement(), omega), _rotation_rows(odd.R, j)[1][0]), b),
        _words("Worked example, an odd width `d = 5`: the two pairs rotate, and coordinate {j} is a sine without a "
               "cosine partner, so no fixed linear map of it alone realises the shift. The encodings are rows, as "
               "everywhere: {Rk} is the {size} block-diagonal matrix of one rotation per pair, the matrix above at "
               "that pair's frequency, and it acts on {paired}, the row of the paired coordinates {first} to {last} of "
               "{PEpos}, so that {shift}; {alpha} stands for any number that depends on `k` alone:", b,
               Rk=sp.Function("R")(k), j=report.unpaired, size=Shape(len(report.paired), len(report.paired)),
               paired=paired_encoding(report)(pos), first=report.paired[0], last=report.paired[-1], PEpos=PE(pos),
               alpha=sp.Function("alpha")(k),
               shift=_row_shift(paired_encoding(report))),
        _display(_rotation_rows(odd.R, j)[:1], b),  # its blocks are the R_j(k) of the general result
        "Table~\\ref{tab:pe-shift-properties} " + _words("lists what makes {Rk} a rotation at this width: it is orthogonal, "
               "its determinant is 1, two shifts compose into one, and the unpaired coordinate has no shift of its own.",
               b, Rk=sp.Function("R")(k)),
        _shift_table(report, b),
        *_shift_numbers(b),
    ]
    return Part("\n\n".join(p for p in body if p), _audit(b, "positional"))


def _shift_table(report, b) -> str:
    """The table of the shift's properties at ``d = 5``: each statement and what it says; a column "proved" only when
    some statement is not (a column of "yes" in every row says nothing the caption cannot)."""
    from seqgrad.derive.latex_layout import tabular

    from .latex_parts import shift_report_rows

    rows = shift_report_rows(report, b.notation)
    every = len(rows[0]) == 2
    header = ["statement", "what it says"] + ([] if every else ["proved"])
    caption = ("The properties of the shift at $d = 5$; Appendix~\\ref{app:positional} "
               + ("states and proves each of them." if every else "states each of them; not every one is proved."))
    return ("\\begin{table}[htbp]\n\\centering\n\\caption{" + caption + "}\\label{tab:pe-shift-properties}\n"
            + tabular(header, rows, "l" + "p{6.5cm}" + ("" if every else "p{1.5cm}")) + "\n\\end{table}")


def _depth_pointers(b, later: dict, stems: Sequence[str]) -> list[str]:
    """The paragraph that points to the depth figures ``stems`` (of ``later``: stem -> what it shows), and those
    figures after it."""
    from seqgrad.derive import residual

    return [_pointers(b, "depth", {stem: later[stem] for stem in stems}, Jl=residual.block_jacobian()),  # as the
            _figure(b, "depth", stems)]  # figure's caption and axis print it


def _figures_matrix(rows, b):
    """A matrix of computed numbers at the notes' significant figures (0 as 0), as a SymPy matrix."""
    return sp.Matrix([[_as_figures(v, b) for v in row] for row in rows])


def _listed(items: Sequence[str]) -> str:
    """Typeset items as a sentence lists them: ``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _shift_numbers(b) -> list[str]:
    """The shift with numbers, at an even width: two encodings and the rotation between them
    (:func:`crosscheck.worked_numbers.shift_example`, the derivation's matrices evaluated)."""
    from .worked_numbers import shift_example

    ex = shift_example()
    PE, R = sp.Function("PE"), sp.Function("R")
    at, k, later = sp.Integer(ex.position), sp.Integer(ex.shift), sp.Integer(ex.position + ex.shift)
    omegas = [sp.Eq(sp.Symbol(f"omega_{j}"), sp.Pow(10000, sp.Rational(-2 * j, ex.d)), evaluate=False)
              for j in range(ex.d // 2)]
    return [
        _words("With numbers, at the even width {d} (frequencies {omegas}): the encoding of position {pos}, the "
               "rotation by the offset {k}, and their product, which is the encoding of position {later}:", b,
               d=sp.Eq(_s("d"), ex.d, evaluate=False), omegas=Sizes(*omegas), pos=at, k=k, later=later),
        _display([(PE(at), _figures_matrix([ex.encoding], b)), (R(k), _figures_matrix(ex.rotation, b)),
                  (sp.MatMul(PE(at), R(k), evaluate=False), _figures_matrix([ex.rotated], b)),
                  (PE(later), _figures_matrix([ex.shifted], b))], b),
        _words("Each pair turns by its own angle,", b) + " " + _listed(
            [_inline(sp.Eq(sp.Mul(k, w.lhs, evaluate=False), k * w.rhs, evaluate=False), b) for w in omegas])
        + _words(" radians, whatever the position: the same matrix {Rk} takes the encoding of every position to that "
                 "of the position {k} further on.", b, Rk=R(k), k=k),
    ]


def _paired_encoding(d: int):
    """The encoding of width ``d`` restricted to its paired coordinates, as the positional section's worked example
    writes it (:func:`latex_parts.paired_encoding`), without proving the shift."""
    from seqgrad.derive import positional

    from .latex_parts import paired_function

    pe = positional.Sinusoidal(d)
    return paired_function(pe.unpaired(), tuple(pe.shift_identity().R.coordinates))


def _row_shift(PE=sp.Function("PE")):
    """``PE(pos + k) = PE(pos) R(k)``: the shift of an encoding, a row, by the rotation ``R(k)`` on its right (``PE``:
    the encoding, or its paired coordinates, :func:`latex_parts.paired_encoding`)."""
    pos, k = sp.Symbol("pos"), sp.Symbol("k")
    return sp.Eq(PE(pos + k), sp.MatMul(PE(pos), sp.Function("R")(k), evaluate=False), evaluate=False)


def _rotation_rows(rotation, j):
    """The block-diagonal ``R(k)`` of a :class:`derive.positional.Rotation` in the notes' row convention: each block
    the transpose of the proof's (which acts on columns), so that ``PE(pos + k) = PE(pos) R(k)``, and the pair index
    ``j``, as the frequencies ``omega_j`` of the section write it."""
    from seqgrad.derive import positional

    (R, blocks, where), (B, block) = rotation.rows()[:2]
    Bj = sp.Function(f"R_{j.name}")
    renamed = lambda e: e.xreplace({positional.i_: j}).replace(B.func, Bj) if isinstance(e, sp.Basic) else e  # noqa: E731
    return [(R, renamed(blocks), tuple(renamed(w) for w in where) if isinstance(where, tuple) else where),
            (renamed(B), renamed(block).T)]


def _entrywise(statement, matrix):
    """``matrix`` (an instance of the softmax Jacobian) written entry by entry from the general entry of
    ``statement`` (``a_i (delta_ij - a_j)``: ``a_0 (1 - a_0)`` on the diagonal, not the expanded ``a_0 - a_0^2``);
    refused unless every entry equals the instance's."""
    from seqgrad.errors import SeqgradValueError

    entry = statement.rhs
    i, j = sorted((s for s in entry.free_symbols if s.is_integer), key=str)[:2]
    base = next(iter(entry.atoms(sp.Indexed))).base

    def at(r, c):
        value = entry.subs({i: r, j: c})
        return value.xreplace({x: sp.Symbol(f"a_{x.indices[0]}") for x in value.atoms(sp.Indexed) if x.base == base})

    written = sp.ImmutableMatrix(matrix.shape[0], matrix.shape[1], lambda r, c: at(r, c))
    if sp.expand(written - sp.ImmutableMatrix(matrix)) != sp.zeros(*matrix.shape):
        raise SeqgradValueError("matrix", matrix, "the instance of the general entry " + str(entry))
    return written


def _named_rotation(row, name):
    """The shift ``row`` of :func:`_as_rows` as two short lines: the pair's rotation defined under its ``name``
    (``R_j(k) = [[cos, -sin], [sin, cos]]``), then the shift with the name in its place, so that neither is spread
    over four lines nor the rotation printed twice (the worked example's blocks are the same R_j(k))."""
    lhs, (v, B), where = row[0], row[1].args, row[2]
    return [(name, B), (lhs, sp.MatMul(v, name, evaluate=False), where)]


def _as_rows(statement, frequency=None):
    """The shift identity ``v(pos + k) = v(pos) B(k)`` (rows, as the catalogue proves it and the notes write
    encodings) with the angle as the text writes it and its quantifier: for every ``pos`` and ``k``; the catalogue's
    symbolic frequency is written as ``frequency`` where one is given (the pair's ``omega_j``)."""
    if frequency is not None:
        omega = next(s for s in statement.rhs.free_symbols if s.name == "omega")
        statement = statement.xreplace({omega: frequency})
    v, B = statement.rhs.args
    pos = next(s for s in statement.rhs.free_symbols if s.name == "pos")
    k = next(s for s in statement.rhs.free_symbols if s.name == "k")
    return (_common_angles(statement.lhs), sp.MatMul(v, B, evaluate=False), ("  for every ", pos, " and every ", k))


def _common_angles(expr):
    """``expr`` with each angle of a sine or cosine written with its common factor taken out, ``sin(omega (pos + k))``
    as the text writes it, not SymPy's ``sin(omega pos + k omega)`` (the same value: ``factor`` only)."""
    return expr.replace(lambda e: isinstance(e, (sp.sin, sp.cos)) and e.args[0].is_Add,
                        lambda e: e.func(sp.factor(e.args[0])))


#: The catalogue's identities each section's appendix states and proves (the families of derive.catalogue, by
#: module): the one list that both the appendix and the proofs started ahead of the build (crosscheck.latexrun) read.
AUDITED = {"positional": ("derive.positional",), "attention": ("derive.softmax", "derive.attention"),
           "residual": ("derive.layernorm", "derive.residual"), "decoder": ("derive.decoder",), "conv": ("derive.conv",)}


def _audit(b, name: str, checks: Sequence = ()) -> str:
    """The appendix of section ``name``: its catalogue identities (:data:`AUDITED`: ids, sources, each proof's
    verdict) and its checks."""
    from .latex_parts import _catalogue_section, catalogue_identities, check_status

    parts = [_catalogue_section(list(AUDITED[name]))(b)] if name in AUDITED else []
    if name in AUDITED and b.marks is not None:  # the section's footnote says every identity its appendix states
        b.marks.append(Mark(stated=tuple(e.name for e in catalogue_identities(list(AUDITED[name]))), appendix=name))
    if checks:
        parts.append(check_status(name, b, checks))
    return "\n\n".join(parts)


# --------------------------------------------------------------------------- 5. attention

def _softmax_numbers(b, a, z, jac) -> str:
    """The three-score example with numbers: the scores, their softmax and its Jacobian at the notes' digits
    (:func:`crosscheck.worked_numbers.softmax_example`), and what the numbers show."""
    from seqgrad.derive.latex_settings import Partial

    from .worked_numbers import SOFTMAX_SCORES, as_figures, softmax_example

    weights, J = softmax_example(SOFTMAX_SCORES)
    row = lambda values: sp.Matrix([[as_figures(v, b.digits) for v in values]])  # noqa: E731
    n = len(weights)
    return _words("With numbers, the scores {zval} give {aval} and", b,
                  zval=sp.Eq(sp.MatrixSymbol("z", 1, n), sp.Matrix([[sp.Integer(int(v)) if float(v).is_integer() else v
                                                                     for v in SOFTMAX_SCORES]]), evaluate=False),
                  aval=sp.Eq(sp.MatrixSymbol("a", 1, n), row(weights), evaluate=False)) + "\n" + _display(
        [(Partial(z, of=a), sp.Matrix([[as_figures(x, b.digits) for x in r] for r in J]))], b) + "\n" + _words(
        "Each row sums to 0 (up to the rounding of the printed digits), and the diagonal entry `a_i*(1 - a_i)` is "
        "largest for the weight nearest one half, here {ak}.", b,
        ak=sp.Symbol(f"a_{min(range(n), key=lambda i: abs(weights[i] - 0.5))}"))

def attention_section(b) -> Part:
    from seqgrad.derive import blocks, catalogue, softmax
    from seqgrad.derive.latex_settings import Partial

    b = with_section_letters(b, "attention")
    att = blocks.attention_program()
    checks = section_checks(b, ["transformer.attention*", "transformer.softmax_jacobian", "transformer.course_attention_backward"])
    n = sp.Symbol("n", integer=True, positive=True)
    a, z = sp.MatrixSymbol("a", 1, n), sp.MatrixSymbol("z", 1, n)  # rows, as every vector of the notes
    jac = softmax.SoftmaxJacobian(3)
    sm = catalogue.get("softmax-jacobian").statement()
    var = catalogue.get("attention-dot-variance")
    body = [
        _words("Scaled dot-product attention mixes the rows of {X} ({shape}, one row per token). Each row is mapped to a "
               "query, a key and a value; the weights of a row are the softmax of its scores against every key:", b,
               X=_s("X", 2, 2), shape=Shape(_s("T"), _s("d"))),
        _display([(d.target, d.value) for d in att.program.definitions(("forward",))], b),
        _words("The scale `1/sqrt(d_k)` keeps the scores of order one: if the entries of a query and a key are "
               "independent with mean 0 and variance 1, their dot product has variance `d_k`, so the scaled score has "
               "variance 1.", b)
        + verification(b, proofs=["attention-dot-variance"], source=var.source, appendix="attention"),
        "\\subsection{The softmax Jacobian}",
        _words("For the softmax {a} of one row of scores {z} (`n` entries), entry by entry and as a matrix, for every `n`:",
               b, a=a, z=z)
        + verification(b, proofs=["softmax-jacobian", "softmax-jacobian-rows-sum-to-zero"], source=catalogue.get("softmax-jacobian").source,
                       appendix="attention"),
        _display([(sm.lhs, sm.rhs), (Partial(z, of=a), sp.MatAdd(sp.DiagMatrix(a), -a.T * a, evaluate=False))], b),
        _words("Each row of the Jacobian sums to zero: raising every score by the same amount changes nothing. "
               "Worked example, three scores:", b),
        _display([(lhs, _entrywise(sm, chain[-1])) for lhs, chain in jac.rows()], b),
        _softmax_numbers(b, a, z, jac),
        "\\subsection{Backward pass}",
        _words("Write {dO} for the gradient of the loss with respect to the output {O}, and likewise {dS} for the "
               "gradient with respect to {S}, and so for every matrix (each of the shape of its matrix). The chain rule "
               "through the lines above, one line each, for every `T`, `d`, `d_k`, `d_v`:", b,
               dO=_s("dO", 2, 2), O=_s("O", 2, 2), dS=_s("dS", 2, 2), S=_s("S", 2, 2))
        + verification(b, proofs=["attention-gradients"], checks=checks, source=catalogue.get("attention-gradients").source,
                       appendix="attention"),
        _display([(d.target, d.value) for d in att.backward_lines()], b),
        _words(f"With a causal mask, {{S}} gets {{M}} added ({{Mij}} for `j > {QUERY_INDEX}`, else 0). The mask is a constant, so "
               "the backward lines are the same; the masked weights are 0, so the rule for {dS} gives 0 there and no "
               "gradient flows to a future key.", b, S=_s("S", 2, 2), M=_s("M", 2, 2), dS=_s("dS", 2, 2),
               Mij=sp.Eq(sp.MatrixSymbol("M", T, T)[sp.Symbol(QUERY_INDEX), sp.Symbol("j")], -sp.oo, evaluate=False))
        + verification(b, proofs=["attention-gradients-causal", "attention-mask-before-softmax"], appendix="attention"),
    ]
    from .latex_parts import check_status

    appendix = "\n\n".join([_audit(b, "attention")]
                           + ([check_status("attention", b, checks)] if checks else []))
    return Part("\n\n".join(body), appendix)


# --------------------------------------------------------------------------- 6. LayerNorm and residual paths

def residual_section(b) -> Part:
    from seqgrad.derive import blocks, catalogue, residual

    b = with_section_letters(b, "residual")
    ln = blocks.layernorm_program()
    checks = section_checks(b, ["transformer.layernorm*", "transformer.residual_jacobians"])
    jac = catalogue.get("layernorm-jacobian").statement()
    rms = catalogue.get("rmsnorm-jacobian").statement()
    gamma_i = next(a for a in rms.lhs.expr.args if str(a).startswith("gamma"))  # the scale's entry i, gamma_i
    epsilon = sp.Symbol("epsilon", positive=True)
    i_, j_, r_ = sp.symbols("i j t", integer=True)  # features i, j of one row t (a token's; r is the GRU's reset gate)
    depth_first = "gradient-near-output-vs-depth"  # the depth figure the text points to first, then depth_later
    depth_later = {  # what the later depth figures show, in the order the text points to them
        "gradient-profile-pre-norm":
            "shows the gradient of every layer of pre-norm stacks of 4, 16 and 48 blocks: largest at the layer "
            "nearest the input and falling toward the output, the more so the deeper the stack.",
        "gradient-profile-post-norm":  # after the worked example of one connection: it names what it shows
            "shows the gradient of every layer of post-norm stacks of 4, 16 and 48 blocks: in the deepest it grows "
            "toward the output layers.",
        "jacobian-product-singular-values-pre-norm":
            "follows the identity paths through a whole pre-norm stack: with the residual bypass the singular values "
            "of the product of the blocks' Jacobians {Jl} stay away from 0 at every depth; without it, from four blocks "
            "on, all but a few fall to the rounding-noise floor.",
        "jacobian-product-singular-values-post-norm":
            "shows the same for post-norm stacks, where each LayerNorm sends one direction per token to 0 (the constant "
            "row) and shrinks another (the centred row), so two fewer per token stay at ordinary size."}
    body = [
        _words("LayerNorm (Ba et al. 2016) normalizes each row of {X} ({shape}) over its `d` features, with the population variance "
               "and `epsilon` inside the square root (as PyTorch's LayerNorm does), then scales by {gamma} and shifts by "
               "{beta} ({one} is a column of ones, so {onegamma} repeats {gamma} on every row; its transpose {onet} is a "
               "row of ones, so {onetG} sums the columns of {G}):", b, onet=sp.OneMatrix(1, 2),
               onetG=sp.OneMatrix(1, 2) * _s("dY", 2, 2), G=_s("dY", 2, 2),
               X=_s("X", 2, 2), shape=Shape(_s("T"), _s("d")), gamma=_s("gamma", 1, 2), beta=_s("beta", 1, 2),
               one=_s("1", 2, 1), onegamma=_s("1", 2, 1) * _s("gamma", 1, 2)),
        _display([(d.target, d.value) for d in ln.program.definitions(("forward",))], b),
        _words("Row by row, with `mu_t` the mean and `v_t` the population variance of the `d` entries of row `t` "
               "(divided by `d`, not `d - 1`), the operators above are", b),
        _display(_layernorm_entries(ln.inputs["X"]), b),
        _words("so {std} and {norm} have the shape of {X}, every entry of row `t` of {std} being `s_t`, and "
               "{mean} likewise repeats each row's mean across the row.", b,
               std=_rules().RowStd(_s("X", 2, 2), sp.Symbol("epsilon", positive=True)),
               norm=_rules().Normalize(_s("X", 2, 2), sp.Symbol("epsilon", positive=True)),
               mean=_rules().RowMean(_s("X", 2, 2)), X=_s("X", 2, 2)),
        _words("Each row is normalized on its own, so fix one, row `t`: write {x} for it ({shape}, its entries {xj}), "
               "{sd} for its standard deviation and {xhat} for its normalized entries ({xh}). Now `i` and `j` "
               "both index features of that row. Its Jacobian, entry by entry, for every `d`:", b,
               x=_s("x", 1, 2), shape=Shape(_s("1"), _s("d")),
               xj=sp.Eq(sp.IndexedBase("x")[j_], _s("X", 2, 2)[r_, j_], evaluate=False),
               sd=sp.Symbol("s_t"),
               xhat=sp.IndexedBase("xhat")[i_],
               xh=sp.Eq(sp.IndexedBase("xhat")[i_], sp.MatrixSymbol(NORMALIZED, 2, 2)[r_, i_], evaluate=False))
        + verification(b, proofs=["layernorm-jacobian", "layernorm-jacobian-kills-constants"],
                       source=catalogue.get("layernorm-jacobian").source, appendix="residual"),
        # the row's standard deviation as the notes name it, s_t (the catalogue's sigma; s alone is the matrix of them)
        _display([(jac.lhs, scaled_bracket(jac.rhs.xreplace({v: sp.Symbol("s_t") for v in jac.rhs.free_symbols
                                                             if v.name == "sigma"})))], b),
        _words("With {dY} the gradient with respect to the output {Y}, the backward pass, for every `T` and `d`:", b,
               dY=_s("dY", 2, 2), Y=_s("Y", 2, 2))
        + verification(b, checks=[r for r in checks if "layernorm" in r.name], appendix="residual"),
        _display([(d.target, d.value) for d in ln.backward_lines()], b),
        # the variant the appendix proves too, cited where LayerNorm is (a lecturer: Zhang & Sennrich were cited in
        # the appendix alone)
        _words("A variant, RMSNorm (Zhang & Sennrich 2019), subtracts no mean and adds no shift: it divides each "
               "row by its root mean square {rms} and scales by {gamma}, so entry `i` of the row maps to {entry}, "
               "with {xt}. Without the mean, the lone `1/d` term of the Jacobian above is gone, and the Jacobian no "
               "longer sends a change that moves every entry of the row alike to 0: at a constant row entry `i` of "
               "such a change comes out multiplied by {full}, {factor} times the {scale} that multiplies a change "
               "orthogonal to the row, and 0 only without {eps}. Its Jacobian:", b, rms=_rms_of_row(rms.rhs),
               gamma=_s("gamma", 1, 2), entry=rms.lhs.expr, xt=_rms_scaled(rms.rhs),
               # J 1 = gamma_i / rms (1 - x_i sum_j x_j / (d rms^2)) per entry; at x = c 1 the bracket is
               # 1 - c^2 / rms^2 = epsilon / rms^2 (a lecturer: "it still does at a constant row" held for epsilon = 0
               # alone; a second: "scales by epsilon / rms^2" left out the gamma_i / rms every change gets)
               full=gamma_i * epsilon / _rms_call(rms.rhs) ** 3, factor=epsilon / _rms_call(rms.rhs) ** 2,
               scale=gamma_i / _rms_call(rms.rhs), eps=epsilon)
        + verification(b, proofs=["rmsnorm-jacobian"], appendix="residual"),
        _display([(rms.lhs, scaled_bracket(rms.rhs))], b),
        "\\subsection{Residual paths}",
        _words("A residual connection (He et al. 2016) adds the input {x} of a branch `F` to the branch's output {Fx}; the "
               "sum {u} is the connection's output. Without a LayerNorm, with one before the branch (pre-norm) or with one after the sum "
               "(post-norm), the connection is", b, x=_s("x", 1, 2),
               Fx=sp.Function("F")(_s("x", 1, 2)), u=_s("u", 1, 2)),
        _display(_placements(), _with_vectors(b, {"u", "x"})),
        _words("In a plain or a pre-norm connection the Jacobian is the identity plus the branch's, so the path through "
               "the identity carries the gradient unchanged; in a post-norm connection every path, the shortcut "
               "included, passes through the LayerNorm Jacobian at every layer. For every width `d` and every "
               "differentiable branch, with {JF} the branch's Jacobian and {JLN} the LayerNorm's, each at the row it "
               "is applied to:", b, JF=_s("J_F", 2, 2), JLN=_s("J_LN", 2, 2))
        + verification(b, proofs=["residual-plain", "residual-pre-norm", "residual-post-norm"],
                       checks=[r for r in checks if "residual" in r.name], source=catalogue.get("residual-plain").source,
                       appendix="residual"),
        _display([(lhs, rhs, (f"  ({p})",)) for p in ("plain", "pre-norm", "post-norm")
                  for lhs, rhs in [residual.jacobian_formula(p)]], b),
        b.pointer("depth", depth_first, _words(
            "shows what the placement does to the gradient of the last block of a deep stack at initialisation: the "
            "gradient with respect to {W2}, the second weight matrix of the MLP of block `L`, the block nearest the "
            "output, with the loss a fixed random linear read-out of the stack's output. The pre-norm stack ends in "
            "a final LayerNorm after block `L`, the post-norm stack in block `L`'s own. With pre-norm the gradient "
            "shrinks as the stack deepens, with post-norm it keeps its size. The identity paths do not contradict "
            "this: in a pre-norm stack they carry the gradient to every layer, but the final LayerNorm divides "
            "by the spread of the residual stream, and that grows with the number of layers it sums (Xiong et al. "
            "2020).", b, W2=_s("W_2", 2, 2))),
        # each figure right after the paragraph that first points to it, so that it floats to that page or the next
        # (all five after the last of them, four float pages in a row ran ahead of the text that cites them)
        _figure(b, "depth", [depth_first]),
        # the five depth figures take two pages of floats to about one of text: each pointer stands between the worked
        # examples so that its figure floats to its page or the next (the gradient profiles of pre-norm, then
        # post-norm stacks, on either side of the connection with numbers; the product of three layers' Jacobians
        # before the singular values of a whole stack's product). With all four pointers on the page after Figure
        # 7's, the profiles took the page after it and the products the next, two pages past their text.
        *_depth_pointers(b, depth_later, ["gradient-profile-pre-norm"]),
        *_residual_numbers(b),
        *_depth_pointers(b, depth_later, ["gradient-profile-post-norm"]),
        _words("Worked example, three residual layers: the product of the three Jacobians is a sum over the eight paths "
               "through the stack, one of them the identity.", b)
        + verification(b, proofs=["residual-depth-expansion"], appendix="residual"),
        _display([(residual.branch_jacobians(lhs), residual.branch_jacobians(chain[-1]))
                  for lhs, chain in _chain_rows(residual.DepthProduct(L=3, d=2))], b),
        *_depth_pointers(b, depth_later, ["jacobian-product-singular-values-pre-norm",
                                          "jacobian-product-singular-values-post-norm"]),
    ]
    from .latex_parts import check_status

    appendix = "\n\n".join([_audit(b, "residual")]
                           + ([check_status("residual", b, checks)] if checks else []))
    return Part("\n\n".join(p for p in body if p), appendix)


def _placements() -> list[tuple]:
    """The three residual connections of a branch ``F`` on a row ``x``, as display rows: plain ``u = x + F(x)``,
    pre-norm ``u = x + F(LN(x))`` (the branch reads the normalized row, the shortcut the row itself) and post-norm
    ``u = LN(x + F(x))`` (the LayerNorm after the sum)."""
    x, u = sp.Symbol("x", commutative=False), sp.Symbol("u", commutative=False)
    F, LN = sp.Function("F", commutative=False), sp.Function("LN", commutative=False)
    return [(u, x + F(x), ("  (plain)",)), (u, x + F(LN(x)), ("  (pre-norm)",)), (u, LN(x + F(x)), ("  (post-norm)",))]


def _residual_numbers(b) -> list[str]:
    """One plain connection with numbers: a branch ``F(x) = tanh(x W^T)`` at a row ``x``, its Jacobian and the
    connection's ``I + J_F`` (:func:`crosscheck.worked_numbers.residual_example`, the derived Jacobian evaluated)."""
    from seqgrad.derive import residual
    from seqgrad.derive.elementwise import Elementwise

    from .worked_numbers import RESIDUAL_W, RESIDUAL_X, residual_example

    J_F, J = residual_example()
    d = len(RESIDUAL_X)
    x, W = _s("x", 1, d), _s("W", d, d)
    u = sp.Dummy("u")
    lhs, rhs = residual.jacobian_formula("plain")
    stated = lambda rows: sp.Matrix([[sp.Float(v) for v in row] for row in rows])  # noqa: E731  (as the text states them)
    return [
        _words("With numbers, one plain connection of width {d} whose branch is {F} ({W} stored output by input), at the "
               "row {x} and the weights {W} below. Row `i` of the branch's Jacobian holds the slope of tanh at entry `i` "
               "of {xW} times row `i` of {W}, and the connection adds the identity:", b, d=sp.Eq(_s("d"), d, evaluate=False),
               F=sp.Eq(sp.Function("F")(x), Elementwise(sp.Lambda(u, sp.tanh(u)), x * W.T), evaluate=False),
               W=W, x=x, xW=x * W.T),
        _display([(x, stated([RESIDUAL_X])), (W, stated(RESIDUAL_W)), (sp.MatrixSymbol("J_F", d, d), _figures_matrix(J_F, b)),
                  (lhs, [rhs, sp.MatAdd(sp.Identity(d), _figures_matrix(J_F, b), evaluate=False), _figures_matrix(J, b)])],
                 b, columns=2),
        _words("The shortcut's 1 stands on the diagonal beside the branch's slopes: a gradient reaches {x} through the "
               "identity unchanged, however small the branch's Jacobian is.", b, x=x),
    ]


def _rules():
    from seqgrad.derive import rules

    return rules


def _layernorm_entries(X):
    """The row statistics of LayerNorm entry by entry, from the operators' own entries (derive.rules):
    ``mu_t``, the population variance ``v_t``, ``s_t = sqrt(v_t + eps)`` and ``Xhat_tj = (X_tj - mu_t) / s_t``: the row
    is t, a token's, as where the text fixes one row, and j its feature (i and j are two features of the row in the
    Jacobian after it, so i indexes no row here)."""
    rules = _rules()
    row, j = sp.symbols("t j", integer=True)
    eps = sp.Symbol("epsilon", positive=True)
    mu, v, s = sp.Symbol("mu_t"), sp.Symbol("v_t"), sp.Symbol("s_t")
    mean = rules.RowMean(X)._entry(row, j)
    k = next(iter(mean.atoms(sp.Sum))).variables[0]
    # the sums run over the columns j of row t (k is the positional encodings' offset): j is free nowhere in them
    mean = mean.xreplace({k: j})
    var = sp.Mul(sp.Sum((X[row, j] - mu) ** 2, (j, 0, X.shape[1] - 1)), 1 / X.shape[1], evaluate=False)
    normalized = sp.MatrixSymbol(NORMALIZED, *X.shape)  # the matrix of normalized rows, entry (t, j)
    return [(mu, mean), (v, var), (s, sp.sqrt(v + eps)), (normalized[row, j], (X[row, j] - mu) / s)]


def scaled_bracket(expr):
    """``(a/s) (bracket)`` for a fraction ``a (bracket) / s``, as the textbook writes LayerNorm's Jacobian, instead of a
    fraction with a fraction inside; the value is the same (``UnevaluatedExpr`` only keeps the factor together)."""
    numerator, denominator = sp.fraction(expr)
    factors = sp.Mul.make_args(numerator)
    brackets = [f for f in factors if isinstance(f, sp.Add)]
    if len(brackets) != 1 or denominator == 1:
        return expr
    scale = sp.Mul(*[f for f in factors if f is not brackets[0]]) / denominator
    return sp.Mul(sp.UnevaluatedExpr(scale), brackets[0], evaluate=False)


def _chain_rows(derivation) -> list:
    """A derivation's rows as ``(lhs, [rhs, ...])`` pairs."""
    out = []
    for row in derivation.rows():
        lhs, rest = row[0], row[1]
        out.append((lhs, list(rest) if isinstance(rest, (list, tuple)) else [rest]))
    return out


# --------------------------------------------------------------------------- 7. the encoder block and worked example

#: The output of an encoder or a decoder block, the next block's input: H' in both (the decoder's block program names
#: it so, :mod:`derive.decoder`), not H_1 (a subscript 1 numbers a block's LayerNorms and the MLP's first layer).
BLOCK_OUTPUT = "H'"

ENCODER_SHOWN = (("attention_on_H0", "H0", "The input rows {H0}, token embedding plus position, one row per token."),
                 ("attention_on_H0", "head1.A", "The attention weights {A} of head 1 applied to the input rows {H0} "
                                                "directly, as the course's attention example applies it, not to "
                                                "the block's LayerNorm output {Y1}: row `%s` is the query, column `j` the "
                                                "source; every row sums to 1." % QUERY_INDEX),
                 ("prenorm_block", "H_enc", "The encoder's output: every token's row after the pre-norm block and the "
                                            "final LayerNorm (scale 1, shift 0: every row has mean 0 and variance 1 up to "
                                            "the epsilon)."))


#: the encoder's figures of head 1 applied to H_0 (the course's attention example, not a step of the block)
ENCODER_HEAD_FIGURES = ("fig09_S", "fig10_A", "fig08_begins_contributions")  # the causal mask's is the decoder's

#: the matrices the captions of :data:`ENCODER_SHOWN` name, printed by the notation's printer (bold, as in the displays)
ENCODER_MATRICES = {"H0": sp.MatrixSymbol("H_0", 7, 5), "A": sp.MatrixSymbol("A", 7, 7),
                    "Y1": sp.MatrixSymbol("Y_att", 7, 5)}



#: The check of the MLP sublayer's backward pass (:func:`derive.blocks.mlp_program` against torch autograd).
MLP_CHECK = "transformer.mlp_program"

#: The check of multi-head attention's rows for every head (:func:`derive.blocks.multihead_rows` against torch autograd).
MULTIHEAD_CHECK = "transformer.multihead_rows"


def _encoder_sublayers(b, checks: Sequence = ()) -> list[str]:
    """The two pieces the worked example uses beyond one attention head: multi-head attention (each head with its own
    maps, the outputs concatenated and mapped back by W_O) and the MLP sublayer with its backward pass (``checks``:
    the results that verify it), each from its program."""
    from seqgrad.derive import blocks
    from seqgrad.derive.elementwise import Elementwise

    # multi-head attention for every head i of n_head, read off the engine's program of three heads (derive.blocks)
    forward_heads, backward_heads = blocks.multihead_rows(heads=3)
    concat = next(value for target, value in forward_heads if target.name == "C")  # [O^[1] | O^[2] | ... | O^[n_head]]
    first, second = concat.terms(2)
    block = next(value for target, value in backward_heads if target.name == f"dO^[{HEAD_INDEX}]")  # head h's columns of dC
    # named in the display, dC^[h], and its columns said once in words: no index arithmetic in a subscript
    head_block = sp.MatrixSymbol(f"dC^[{HEAD_INDEX}]", *block.shape)
    mlp = blocks.mlp_program()  # the second sublayer with the course's names (Z_mlp, J_mlp, B_mlp), ReLU
    forward = mlp.program.definitions(("forward",))
    names = {d.target.name: _s(d.target.name, 2, 2) for d in forward}
    # the gradient of the block's output is written as every gradient, d and the matrix's name (the program's G)
    d_out = sp.MatrixSymbol("d" + mlp.output.name, *mlp.G.shape)
    # ReLU's slope at every entry of Z_mlp, as the derivation writes it ([Z_mlp > 0])
    step = next(e for e in sp.preorder_traversal(mlp.program["dZ_mlp"].value) if isinstance(e, Elementwise))
    return [
        "\\subsection{Multi-head attention and the MLP sublayer}",
        _words("With `n_head` heads, head 1 to head {nh} as in the course, each head {h} has maps of its own, {wq} and {wk} ({kshape}) and {wv} ({vshape}), "
               "and computes the attention above from the same rows {X}; the heads' outputs are concatenated side by "
               "side into {C} ({cshape}: the columns of {O1}, then those of {O2}, and so on), and mapped "
               "back to width `d` by {wo} ({oshape}). For every number of heads `n_head`:", b,
               nh=_s("n_head"), O1=first, O2=second,
               wq=_s(f"W_Q^[{HEAD_INDEX}]", 2, 2), wk=_s(f"W_K^[{HEAD_INDEX}]", 2, 2), wv=_s(f"W_V^[{HEAD_INDEX}]", 2, 2),
               h=_s(HEAD_INDEX), X=_s("X", 2, 2), C=_s("C", 2, 2),
               kshape=Shape(_s("d_k"), _s("d")), vshape=Shape(_s("d_v"), _s("d")), cshape=Shape(_s("T"), _s("n_head") * _s("d_v")),
               wo=_s("W_O", 2, 2), oshape=Shape(_s("d"), _s("n_head") * _s("d_v"))),
        _display([(*forward_heads[0], ("  for every head ", _s(HEAD_INDEX)))] + forward_heads[1:], b),
        _words("Backwards, with {dB} the gradient of {B}: the output map passes it back to {C} and gives {dWO}; head {h} "
               "receives its own block of {dC}'s columns, {block}: every row of {dC} and its columns {lo} to {hi}, "
               "the {dv} columns that {Oi} fills in {C}; from there each head's "
               "backward pass is the one-head pass above with that head's symbols; and since every head reads the same "
               "rows {X}, the rows' gradient {dX} is the sum over the heads:", b, dB=_s("dB", 2, 2), B=_s("B", 2, 2), h=_s(HEAD_INDEX),
               C=_s("C", 2, 2), dC=_s("dC", 2, 2), dWO=_s("dW_O", 2, 2), dv=_s("d_v"), Oi=_s(f"O^[{HEAD_INDEX}]", 2, 2),
               X=_s("X", 2, 2), dX=_s("dX", 2, 2), block=head_block, lo=block.args[1],
               hi=sp.factor(block.args[1] + block.args[2]) - 1)
        + verification(b, checks=[r for r in checks if r.name == MULTIHEAD_CHECK], source="week06 §2.6", appendix="encoder"),
        _display([(target, head_block if value == block else value) for target, value in backward_heads], b),
        _words("We write {mha} for this map, multi-head attention, from the rows {X} to {B}. The decoder uses it twice: "
               "as {mham}, with a mask {M} added to every head's scores, and as {mhaz}, with the keys and values computed "
               "from other rows {Z} (the decoder's memory). In the block, {B} takes the place of {O}. The second sublayer normalizes {U} again (its own {g2} and "
               "{b2}) and applies the same two-layer MLP, the feed-forward network, to every row: a hidden layer of width "
               "`d_ff` with ReLU, then back to width `d`, and the shortcut adds {U}. The block's output {H1} is the next "
               "block's input. {Zm} is the hidden layer before ReLU, {Jm} after it (the course writes `J`, the letter these "
               "notes keep for Jacobians) and {Bm} the MLP's output:", b, B=_s("B", 2, 2), O=_s("O", 2, 2), U=_s("U", 2, 2), g2=_s("gamma_mlp", 1, 2),
               Zm=names["Z_mlp"], Jm=names["Phi_mlp"], Bm=names["B_mlp"],
               X=_s("X", 2, 2), M=_s("M", 2, 2), Z=_s(MEMORY, 2, 2), mha=sp.Function("MHA")(_s("X", 2, 2)),
               mham=sp.Function("MHA_self")(_s("X", 2, 2), _s("M", 2, 2)),
               mhaz=sp.Function("MHA_cross")(_s("X", 2, 2), _s(MEMORY, 2, 2)),
               b2=_s("beta_mlp", 1, 2), H1=names[mlp.output.name]),
        _display([(d.target, d.value) for d in forward], b),
        _words("Backwards, the second shortcut shows in {dU}: the gradient {dH} of the block's output plus what comes "
               "back through the MLP and its LayerNorm. ReLU passes the gradient on where its input is positive: {step} "
               "is 1 where an entry of {Zm} is positive and 0 elsewhere (Iverson's bracket; at 0 the slope is taken to "
               "be 0, as PyTorch does). For every `T`, `d` and `d_ff`:", b, dU=_s("dU", 2, 2), dH=d_out,
               step=step.xreplace({mlp.program["Z_mlp"].target: names["Z_mlp"]}), Zm=names["Z_mlp"])
        + verification(b, checks=[r for r in checks if r.name == MLP_CHECK], source="week06 §Block", appendix="encoder"),
        _display([(d.target, d.value.xreplace({mlp.G: d_out})) for d in mlp.backward_lines()], b),
        _words("This {dU} is the gradient the attention sublayer's backward pass above starts from.", b, dU=_s("dU", 2, 2)),
    ]


#: The proof of the encoder block's backward pass, one of the residual paths' identities (stated in their appendix).
BLOCK_PROOF = "residual-pre-norm-block-program"


def encoder_section(b) -> Part:
    from seqgrad.derive import blocks
    from seqgrad.numeric import course
    from seqgrad.numeric.tokens import tokenize

    from .encoder_tables import trace_tables
    from .latex_parts import check_status, text

    b = with_section_letters(b, "encoder")
    block = blocks.block_program("pre-norm")
    checks = section_checks(b, ["encoder.*", "transformer.prenorm_block", "transformer.postnorm_block", "transformer.block_programs",
                                MLP_CHECK, MULTIHEAD_CHECK])
    tokens = tokenize(course.TEXT)
    body = [
        _words("An encoder block puts the pieces together: LayerNorm, attention and a residual connection (pre-norm, "
               "as in the course), then the same for a two-layer MLP. With one head, the attention sublayer reads as "
               "below for every `T`, `d`, `d_k` and value width {dv} (the head's output {O}, {oshape}, is added to {H}, "
               "{hshape}, directly; with `n_head` heads an output map does it, as in the next subsection):", b,
               dv=sp.Eq(_s("d_v"), _s("d"), evaluate=False), O=_s("O", 2, 2), oshape=Shape(_s("T"), _s("d_v")),
               H=_s("H", 2, 2), hshape=Shape(_s("T"), _s("d"))),
        _display([(d.target, d.value) for d in block.program.definitions(("forward",))], b),
        _words("Backwards, the residual shows in {dH}: the gradient of the shortcut plus what comes back through the branch:", b,
               dH=_s("dH", 2, 2))
        + verification(b, proofs=[BLOCK_PROOF], checks=[r for r in checks if r.name.startswith("transformer.")
                                                          and r.name not in (MLP_CHECK, MULTIHEAD_CHECK)],
                       source="week06 §Block", appendix="encoder"),
        _display([(d.target, d.value) for d in block.backward_lines()], b),
        *_encoder_sublayers(b, [r for r in checks if r.name in (MLP_CHECK, MULTIHEAD_CHECK)]),
        "\\subsection{Worked example}",
        _words("The course encodes the phrase ", b) + f"``{text(course.TEXT)}''" + _words(
            " with {sizes}: one block of {heads} heads ({widths} each, so {wo} is {woshape}) and an MLP of hidden width "
            "{dff} with ReLU, every LayerNorm with scale {gamma} a row of ones and shift {beta} a row of zeros (each "
            "{lnshape}), followed by a final LayerNorm. Rows are tokens, "
            f"numbers at {b.digits} significant figures", b,
            sizes=Sizes(sp.Eq(_s("T"), len(tokens), evaluate=False), sp.Eq(_s("d"), len(course.E_VOCAB[0]), evaluate=False)),
            heads=sp.Eq(_s("n_head"), len(course.attention().heads), evaluate=False),
            widths=Sizes(sp.Eq(_s("d_k"), len(course.HEAD1["W_Q"]), evaluate=False),
                         sp.Eq(_s("d_v"), len(course.HEAD1["W_V"]), evaluate=False)),
            wo=_s("W_O", 2, 2), woshape=Shape(len(course.W_O), len(course.W_O[0])),
            dff=sp.Eq(_s("d_ff"), len(course.W1), evaluate=False),
            gamma=_s("gamma", 1, 2), beta=_s("beta", 1, 2), lnshape=Shape(1, _s("d")))
        + verification(b, checks=[r for r in checks if r.name == "encoder.course_tables"],
                                            source="week06 §Tokens", appendix="encoder")
        + verification(b, checks=[r for r in checks if r.name.startswith("encoder.")
                                                                            and r.name.endswith("_vs_torch")],
                                                                 source="week06 §Block", appendix="encoder") + ".",
    ]
    body += _encoder_parameters(b)
    # head 1's weights A on H_0 as a table only where the notes do not draw them (Fig. fig10_A writes every weight in
    # its cell): the table and the figure printed the same numbers twice, with different digits
    shown = [entry for entry in ENCODER_SHOWN if entry[1] != "head1.A" or not b.shows("encoder", "fig10_A")]
    label = lambda name: f"tab:encoder-{name.replace('.', '-')}"  # noqa: E731
    ref = lambda name: f"~\\ref{{{label(name)}}}"  # noqa: E731
    records = {}
    tables = {}
    for stage, name, caption in shown:
        record = records.setdefault(stage, course.trace(stage, device=b.device))
        for _, rows, row_labels, col_labels in trace_tables(stage, record, [name], tokens):
            tables[name] = _encoder_table(b, rows, row_labels, col_labels, _words(caption, b, **ENCODER_MATRICES),
                                          label(name))
    # each table and figure after the paragraph that first points to it (the five figures after the three tables ran
    # four float pages past their text); the tables and figures of head 1 on H_0 are said to be that, the course's
    # attention example, and the block's forward pass is the encoder's output
    body += [
        _sentences(_words("The input rows {H0} are given in Table", b, **ENCODER_MATRICES) + ref("H0") + ".",
                   b.pointer("encoder", "fig06_identity_position", _words(
                       "shows them: the token identities, the positions and their sum, on one colour scale.", b))),
        tables["H0"],
        _figure(b, "encoder", ["fig06_identity_position"]),
    ]
    # the block's own output first, then its backward pass; the course's attention example, one head on H_0 (said not
    # to be a step of the block), closes the section, so that its figures (and a table of A where they are not drawn)
    # float from the section's end (before it, they ran up to three pages past the paragraph that cites them)
    body += [
        _words("The block's forward pass itself, both heads on {Y1}, the MLP sublayer and the final LayerNorm, ends in "
               "the encoder's output of Table", b, **ENCODER_MATRICES) + ref("H_enc") + ".",
        tables["H_enc"],
    ]
    body += _encoder_backward(b, tokens)
    # the course's attention example under a heading of its own: a reader of the block's worked example met it as
    # an unannounced switch from the block (both heads on Y_att) to one head on H_0
    body += [
        "\\subsection{The course's attention example: one head on the input rows}",
        _sentences(
            _words("The course works the attention of Section", b) + "~\\ref{sec:attention} " + _words(
                   "through with its numbers on one head, head 1, applied to {H0} itself, not to the block's "
                   "LayerNorm output {Y1}, so it is not a step of the block's forward pass. Its maps are "
                   "the {Q}, {K} and {V} displayed above, with no biases, and its scores are scaled by {scale}.", b,
                   **{n[-1]: _s(f"{n}^[1]", len(course.HEAD1[n]), len(course.HEAD1[n][0])) for n in ("W_Q", "W_K", "W_V")},
                   scale=sp.Eq(sp.Pow(sp.sqrt(_s("d_k")), -1, evaluate=False),
                               sp.Pow(sp.sqrt(len(course.HEAD1["W_Q"])), -1, evaluate=False), evaluate=False),
                   **ENCODER_MATRICES),
            _words("Table", b) + ref("head1.A") + _words(" gives its weights.", b) if "head1.A" in tables else "",
            b.pointer("encoder", "fig09_S", _words("shows the scaled scores of head 1 on {H0}, and", b,
                                                   **ENCODER_MATRICES)),
            b.pointer("encoder", "fig10_A", _words("its weights, the softmax of each row", b)
                      + ((_words(" (Section", b) + "~\\ref{sec:decoder} "
                          + _words("shows what the decoder's causal mask makes of them).", b))
                         if b.shows("encoder", "fig11_A_causal") else "."))),
        tables.get("head1.A", ""),
        _figure(b, "encoder", ["fig09_S", "fig10_A"]),
        b.pointer("encoder", "fig08_begins_contributions", _words(
            "takes one row of that head's output apart: row 6 of head 1 applied to {H0}, the query of the last token, "
            "as the sum of the value rows weighted by that query's attention weights.", b, **ENCODER_MATRICES)),
        _figure(b, "encoder", ["fig08_begins_contributions"]),
    ]
    appendix = check_status("encoder", b, checks) if checks else ""
    if (owner := stated_with(b, BLOCK_PROOF, "encoder")) is not None:  # the proof of the block's backward pass
        from .latex_parts import code

        appendix += (f"\n\nThe proof of the block's backward pass, {code(BLOCK_PROOF)}, is stated with "
                     f"Section~\\ref{{sec:{owner}}}, in Appendix~\\ref{{app:{owner}}}, and said in this section's footnote.")
    return Part("\n\n".join(p for p in body if p), appendix)


def _stated(rows) -> sp.Matrix:
    """A matrix of the course's parameters as the text prints them: whole numbers as integers, the rest as decimals."""
    return sp.Matrix([[sp.Integer(int(v)) if float(v).is_integer() else sp.Float(str(v)) for v in row] for row in rows])


def _encoder_parameters(b) -> list[str]:
    """The worked example's parameters as the course states them (:mod:`seqgrad.numeric.course`), stored output by
    input: each head's query, key and value maps, the output map and the MLP's weights and biases, so that every
    number of the example below can be recomputed from them and the input rows."""
    from seqgrad.numeric import course

    heads = [(h, maps) for h, maps in enumerate((course.HEAD1, course.HEAD2), start=1)]
    rows = [(_s(f"{name}^[{h}]", len(maps[name]), len(maps[name][0])), _stated(maps[name]))
            for h, maps in heads for name in ("W_Q", "W_K", "W_V")]
    mlp = [("W_1", course.W1), ("b_1", [course.b1]), ("W_2", course.W2), ("b_2", [course.b2]), ("W_O", course.W_O)]
    return [
        _words("The parameters, as the course states them and stored output by input (with the input rows below they "
               "fix every number of the example): the query, key and value maps of head 1 (first line) and head 2,", b),
        _display(rows, b, columns=3),
        _words("the MLP's weights and biases, and the output map {WO}:", b, WO=_s("W_O", 2, 2)),
        _display([(_s(name, len(m), len(m[0])), _stated(m)) for name, m in mlp], b, columns=2),
    ]


def _encoder_table(b, rows, row_labels, col_labels, caption: str, label: str | None = None) -> str:
    """A table of the worked example at the notes' digits (:func:`seqgrad.latex_table.booktabs`), features named
    ``feature j``, source tokens by their word, with ``caption`` already typeset (its formulas by the printer)."""
    from seqgrad.latex_table import booktabs

    from .latex_parts import text

    placeholder = "CAPTION"  # booktabs escapes a caption; the typeset one is put in its place
    cols = [c.replace("F", "feature ") if c.startswith("F") else c.removeprefix("j=") for c in col_labels]  # "0: a", "3: a": the phrase has two a's
    table = booktabs(rows, row_labels=row_labels, col_labels=cols, corner="", caption=placeholder, label=label,
                     figures=b.digits, decimal_comma=b.notation.decimal_comma, raw_labels=False, trailing_zeros=True)
    return table.replace("\\caption{" + text(placeholder) + "}", "\\caption{" + caption + "}")


def _encoder_backward(b, tokens: list[str]) -> list[str]:
    """The backward pass of the worked example's attention sublayer with numbers: the derived program of the block
    above, with the course's two heads, run at the course's weights and ``H = H_0`` for ``L`` the sum of the entries
    of ``U`` (:func:`crosscheck.worked_numbers.encoder_backward`): ``dH`` and ``dL/dW_Q`` of head 1 as tables."""
    from seqgrad.derive.latex_settings import Partial

    from .encoder_tables import labels
    from .worked_numbers import encoder_backward

    ex = encoder_backward(b.device)
    block = ex.block
    H, U, G = block.inputs["H"], block.output, block.G
    WQ = block.inputs["W_Q^[1]"]
    T_, d_ = ex.inputs["H"].shape
    dH = ex.gradients["H"].detach().cpu().double()
    dWQ = ex.gradients["W_Q^[1]"].detach().cpu().double()
    t, j = sp.symbols("t j", integer=True)  # the sum of every entry (not 1^T U 1: its two columns of ones differ in size)
    loss = sp.Eq(_s("L"), sp.Sum(U[t, j], (t, 0, T_ - 1), (j, 0, d_ - 1)), evaluate=False)
    H0 = ENCODER_MATRICES["H0"]
    row_sums = dH.sum(dim=1)
    rows_sum_to_d = bool(((row_sums - d_).abs() < 1e-9).all())
    said = _words("Backwards, with numbers: take the attention sublayer of the block, {Udef} with {B} of the two heads of "
                  "the course and {HH0}, and the loss {loss}, the sum of the entries of {U}, so that the upstream gradient "
                  "{G} is a matrix of ones. The backward pass of this two-head sublayer is the one displayed above for "
                  "each head, after the output map: with {Bdef}, the gradient {dC} is split between the heads' columns and "
                  "{dWO}. Run on the course's numbers, it gives {dH}", b,
                  Bdef=sp.Eq(_s("B", 2, 2), _s("C", 2, 2) * _s("W_O", 2, 2).T, evaluate=False),
                  dC=sp.Eq(_s("dC", 2, 2), _s("dB", 2, 2) * _s("W_O", 2, 2), evaluate=False),
                  dWO=sp.Eq(_s("dW_O", 2, 2), _s("dB", 2, 2).T * _s("C", 2, 2), evaluate=False), Udef=sp.Eq(U, block.program["U"].value, evaluate=False),
                  B=sp.Eq(block.program["B"].target, sp.Function("MHA")(block.program["Y_att"].target), evaluate=False),
                  HH0=sp.Eq(H, H0, evaluate=False), loss=loss, U=U, G=sp.Eq(G, Partial(U), evaluate=False), dH=Partial(H))
    said += " (Table~\\ref{tab:encoder-dH}) " + _words("and the gradient of the first head's query map, {dWQ}", b,
                                                          dWQ=Partial(WQ)) + " (Table~\\ref{tab:encoder-dWQ})."
    if rows_sum_to_d:
        said += " " + _words("Every row of {dH} sums to {d}: the shortcut sends 1 to every entry, and what comes back "
                             "through LayerNorm sums to 0 along each row (adding a number to every entry of a row of {H} "
                             "does not change the row's normalisation). The loss is a sum over {U}, not over the encoder's "
                             "output {Henc}: with its shift 0, each row of the final LayerNorm's output sums to 0 for "
                             "every input, so that sum is 0 and its gradient too.", b, U=U, dH=Partial(H),
                             d=sp.Eq(_s("d"), d_, evaluate=False), H=H,
                             Henc=sp.MatrixSymbol(MEMORY, T_, d_))  # the memory a decoder reads (notation table)
    row_labels, col_labels = labels("dH", tuple(dH.shape), tokens)
    tables = [_encoder_table(b, dH.tolist(), row_labels, col_labels,
                             _words("The gradient {dH} of the loss {loss} with respect to the block's input rows {H}, "
                                    "here {HH0}: one row per token, the shortcut's 1 in every entry plus what comes back "
                                    "through the attention branch.", b, dH=Partial(H), loss=loss, H=H,
                                    HH0=sp.Eq(H, H0, evaluate=False)), "tab:encoder-dH")]
    tables.append(_encoder_table(b, dWQ.tolist(), [f"query feature {i}" for i in range(dWQ.shape[0])],
                                 [f"F{j}" for j in range(dWQ.shape[1])],
                                 _words("The gradient {dWQ} of the same loss with respect to the query map of head 1 "
                                        "({shape}, stored output by input): row `i` belongs to feature `i` of the "
                                        "queries, column `j` to feature `j` of the normalized input rows.", b,
                                        dWQ=Partial(WQ), shape=Shape(*dWQ.shape)), "tab:encoder-dWQ"))
    return [said, _one_float(tables)]


def _one_float(tables: Sequence[str]) -> str:
    """Complete ``table`` environments set as one float, each with its own caption and number: they stay together,
    and a page holds as many floats as LaTeX allows (three) with room for the others."""
    from seqgrad.errors import SeqgradValueError

    begin, end = "\\begin{table}[htbp]", "\\end{table}"
    inner = []
    for table in tables:
        table = table.strip()
        if not (table.startswith(begin) and table.endswith(end)):
            raise SeqgradValueError("tables", table[:40], "complete table environments (begin{table}[htbp] ... end{table})")
        inner.append(table[len(begin):-len(end)].strip())
    return begin + "\n" + "\n\\bigskip\n".join(inner) + "\n" + end


# --------------------------------------------------------------------------- 8, 9: decoder and convolution

def decoder_section(b) -> Part:
    from . import latex_decoder_conv

    b = with_section_letters(b, "decoder")
    checks = section_checks(b, ["decoder.*"])
    body = latex_decoder_conv.decoder_body(b, verification(b, checks=checks, source=sources(checks), appendix="decoder"),
                                           verification)  # the section's footnote marks, made here (no import circle)
    return Part(body, _audit(b, "decoder", checks))


#: Letters of one section only, where the notes' own letter means something else: the convolution kernel is
#: kappa (K is the attention's keys), its stride Delta (s is LayerNorm's standard deviation), its side psi, the side of
#: a pooling window too (k is the positional encodings' offset, K the keys: an italic K beside the bold keys would give
#: the letter two meanings; D beside d, the model width, would read as a second width; every other Latin letter has a
#: meaning in the notes or in the course they quote, N the lesson's number of layers, q its query: psi, in either case,
#: has none, and sits with the section's other Greek letters), an entry of the kernel (xi, zeta) wherever it is
#: indexed (the derivation's u, v and the gradient's p, q: u is the GRU's update gate, v a row's variance, p the
#: padding, q a second position); its receptive field is rf and its padding p
#: (:data:`crosscheck.latexdoc.NOTES_LETTERS`). The argmax of a pooling window is nu and the GRU's recurrent term of
#: the candidate eta: a is the softmax's row of weights. A letter the notation itself renames is left to it.
SECTION_LETTERS = {"conv": {"K": r"\kappa", "s": r"\Delta", "k": r"\psi", "u": r"\xi", "v": r"\zeta", "p": r"\xi",
                            "q": r"\zeta", "a": r"\nu",
                            # an entry of the input is (i', j'), primed as a second position is (pos'), beside the
                            # output's (i, j): n is the GRU's candidate (z_{n,t}), and m would be n's partner
                            "m": "i'", "n": "j'"},
                   "gates": {"a": r"\eta"},
                   # the index of the sum over a row's keys is s, as in the permutation's A(Pi X)_{t,s} (r is the
                   # GRU's reset gate)
                   "attention": {"r": "s",
                                 # a softmax's row of scores has one entry per key, T (n is a convolution's index)
                                 "n": "T"},
                   # the index of a pair of coordinates is j, as in omega_j (i is the LSTM's input gate); a second
                   # position is pos' (q would read as a query, beside the queries Q)
                   "positional": {"i": "j", "q": r"\mathrm{pos}'"}}

#: Names of whole symbols in one section only (symbol name -> the name printed): the vector RNN's output layer is
#: W_y, b_y, as the scalar cell's w_y (:data:`crosscheck.latexdoc.NOTES_SYMBOL_NAMES`), since b_o is the LSTM's
#: output-gate bias and W_O the attention's output map. A name the notation itself renames is left to it.
SECTION_SYMBOL_NAMES = {"rnn": {"W_o": "W_y", "b_o": "b_y"},
                        # the gradient of a block's output is written as every other gradient, d and the matrix's name
                        # (the block programs call it G): dO of attention's output, dY of LayerNorm's and of a
                        # convolution's, dU of the encoder block's attention sublayer
                        "attention": {"G": "dO"}, "encoder": {"G": "dU"},
                        # the model width is d throughout the notes, in the decoder's counts and their appendix too
                        # (derive.decoder calls it d_model, as PyTorch does); the memory, the programs' Z, is printed
                        # as derive.blocks.MEMORY (Z_mlp is the MLP's pre-activation)
                        "decoder": {"G": "dO", "d_model": "d", "Z": MEMORY, "dZ": "d" + MEMORY},
                        # the output of a residual connection is x_out, x + F(x) (u is the GRU's update gate)
                        "residual": {"G": "dY", "u": "x_out"},
                        # a convolution's output is H_out by W_out (W_o would read as an output weight, beside W_O);
                        # its sums read the padded input Xbar, barred as Ghat is hatted (X is a block's rows; the input
                        # itself is X_in; no upright pad: the padding is p)
                        "conv": {"G": "dY", "H_o": "H_out", "W_o": "W_out", "X": "Xbar"}}


def with_section_letters(b, section: str):
    """``b`` with the letters of ``section`` (:data:`SECTION_LETTERS`) and its symbol names
    (:data:`SECTION_SYMBOL_NAMES`) in its notation; the renames the section's formulas apply are recorded in the
    document's notation (so an unused ``--symbol`` is still found)."""
    import dataclasses

    letters = {k: v for k, v in SECTION_LETTERS.get(section, {}).items()
               if k not in b.notation.letters and k not in b.notation.symbol_names}
    plain = b.notation.replace(bold=False)
    names = {k: plain.latex(sp.Symbol(v)) for k, v in SECTION_SYMBOL_NAMES.get(section, {}).items()
             if k not in b.notation.symbol_names}
    if not letters and not names:
        return b
    notation = b.notation.replace(letters={**b.notation.letters, **letters},
                                  symbol_names={**b.notation.symbol_names, **names})
    object.__setattr__(notation, "_used", b.notation._used)  # one record of the renames applied
    return dataclasses.replace(b, notation=notation)


def conv_section(b) -> Part:
    from . import latex_decoder_conv

    b = with_section_letters(b, "conv")
    checks = section_checks(b, ["conv.*"])
    body = latex_decoder_conv.conv_body(b, verification(b, checks=checks, source=sources(checks), appendix="conv"))
    return Part(body, _audit(b, "conv", checks))


#: The sections in the course's order: name and builder.
ORDER = (("rnn", rnn_section), ("paths", paths_section), ("gates", gates_section), ("positional", positional_section),
         ("attention", attention_section), ("residual", residual_section), ("encoder", encoder_section),
         ("decoder", decoder_section), ("conv", conv_section))


#: The handout (``seqgrad latex --standalone``): the one figure of each section that shows its point, as
#: ``set/stem`` of :mod:`crosscheck.figures`; the full notes include every figure of the sections' sets.
HANDOUT = {
    "paths": ("paths/fig3-left-power-curves",),  # a factor rho raised to the path length: vanishes or explodes
    "gates": ("paths/gradient-flow-rnn-gru-lstm",),  # a gate near 1 keeps the carry product near 1
    "positional": ("positional/positional_encoding_d128",),  # one frequency per pair of coordinates
    "residual": ("depth/gradient-near-output-vs-depth",),  # pre-norm's gradient falls like 1/sqrt(L)
    "encoder": ("encoder/fig08_begins_contributions",),  # a row of the output, the sum of weighted values (A is a table)
    "decoder": ("decoder/decoder_cross_attention",),  # which source word each generated token reads
    "conv": ("conv/conv_receptive_field",),  # the receptive field, measured and by the formula
}


# --------------------------------------------------------------------------- front matter

#: The words that open a section's worked example (a small instance of its general result); the introduction
#: counts the sections that have one (:func:`introduction`).
WORKED_EXAMPLE = "Worked example"


def _has_figure(body: str) -> bool:
    from .latex_parts import FIGURE_MARK

    return "\\begin{figure}" in body or FIGURE_MARK.split("{")[0] in body


def _section_list(names: Sequence[str]) -> str:
    """``Section~\\ref{sec:rnn}`` or ``Sections~\\ref{sec:rnn}, \\ref{sec:paths} and \\ref{sec:gates}``."""
    refs = [f"\\ref{{sec:{n}}}" for n in names]
    return ("Section~" if len(refs) == 1 else "Sections~") + _listed(refs)


def contents_sentence(bodies: dict[str, str]) -> str:
    """What the sections hold, from their text (``bodies``: section name -> body): the model and the general result in
    every one; how many work an example (:data:`WORKED_EXAMPLE`) and show a figure, in a word ("most", "some"), not a
    list of the sections that lack them (a lecturer read "(all but Sections 9 and 10)" as a tally).

    The notation (Section 1) is no such section: the sentence counts the sections after it.

    >>> contents_sentence({"rnn": "Worked example: ...", "paths": "\\\\begin{figure} ...", "gates": ""})[-99:]
    'Some of them then work a small instance as an example, and some have a figure that shows the point.'
    >>> contents_sentence({"a": "Worked example", "b": "Worked example", "c": ""})[-54:]
    'Most of them then work a small instance as an example.'
    """
    worked = [n for n, body in bodies.items() if WORKED_EXAMPLE in body]
    figures = [n for n, body in bodies.items() if _has_figure(body)]
    text = ("Each section after the notation states the model, then the general result (for every sequence length and "
            "every width).")
    if set(worked) == set(figures) == set(bodies):
        return text[:-1] + ", then a small worked example and a figure that shows the point."

    def how_many(have: list[str]) -> str:
        return "all" if len(have) == len(bodies) else "most" if 2 * len(have) > len(bodies) else "some"

    said = [(how_many(have), plural) for have, plural in ((worked, "work a small instance as an example"),
                                                          (figures, "have a figure that shows the point")) if have]
    if not said:
        return text
    (first, did), rest = said[0], said[1:]
    sentence = f" {first.capitalize()} of them then {did}"
    for many, plural in rest:  # "and most have ...": the two groups are not the same sections
        sentence += f", and {many} {plural}"
    return text + sentence + "."


def introduction(b, names: Sequence[str], appendix: bool, bodies: dict[str, str] | None = None) -> str:
    """The short introduction on the title page; what the sections hold is said from their text (``bodies``,
    :func:`contents_sentence`), so that it stays true."""
    text = ("These notes derive the gradients of the sequence models of the course: recurrent networks and "
            "backpropagation through time, gated cells, positional encodings, attention, LayerNorm and residual "
            "connections, the Transformer encoder and decoder, and convolution. "
            + (contents_sentence({n: bodies[n] for n in names}) + " " if bodies is not None else "")
            + "Every formula is derived from the model's equations.")
    # how the formulas were verified is a footnote, not the text (issue 25, prose review, item 1)
    note = ("Each was verified when these notes were written: proved symbolically or checked against PyTorch's "
            "automatic differentiation in double precision; one footnote per section says which, and where its "
            "results come from in the course texts.")
    if appendix:
        note += " The appendix lists every identity and check with its source and the errors measured."
    return "\\begin{abstract}\n" + text + "\\footnote{" + note + "}\n\\end{abstract}"


def _sym(name: str, *shape, matrix: bool = False):
    return sp.MatrixSymbol(name, *shape) if matrix else sp.Symbol(name)


def _params(what: str):
    from .latex_decoder_conv import PARAMS_LAYER, PARAMS_STACK, PARAMS_WEIGHTS

    return {"layer": PARAMS_LAYER, "weights": PARAMS_WEIGHTS, "stack": PARAMS_STACK}[what]


#: The shape of a row-wise map in the notation table, in words (typeset as a meaning is): a map of ``X`` has the shape
#: of what it is applied to (the scores too, T x T), not a fixed one.
LIKE_X = "that of {X}"


def notation_rows(b) -> list[tuple]:
    """(symbol, meaning, shape) of every symbol the notes use, each once: SymPy objects, printed by the notation's printer
    (a symbol that one section renames, :data:`SECTION_LETTERS`, is given as that section prints it).  The shape is a
    :class:`Shape`, or words for a generic one (:data:`LIKE_X`: "that of X"; the identity's "that of the matrices
    beside it")."""
    from seqgrad.derive import conv, residual, rules

    # the widths of a cell are d_x, d_h, d_y (H is the matrix of an encoder block's rows, D is not used)
    D, H, C, d, d_k, d_v, j = sp.symbols("d_x d_h d_y d d_k d_v j", integer=True)
    T_src, n_head, d_ff = sp.symbols("T_src n_head d_ff", integer=True)
    L = sp.Symbol("L")
    one = Shape()
    M = lambda name, r, c: sp.MatrixSymbol(name, r, c)  # noqa: E731
    X = M("X", T, d)
    rows = [
        (t, "step (position) index, from 0", one),
        # the index i once, told apart from the LSTM's input gate i_t (a gate's section writes no index i)
        (sp.Symbol("i"), "an index, from 0: of a row or an entry; of a coordinate of a positional encoding; (`i`, "
         "`j`), a position of a convolution's or a pooling window's output; not the LSTM's input gate {it}, always "
         "written with its step", one),
        # j, one meaning per section: a second index (attention, LayerNorm, the encoder and decoder, the
        # convolution), a step (the path products), a coordinate pair (the positional encoding)
        (sp.Symbol("j"), "a second index, from 0: a column or a second entry (a key in attention, a feature in "
         "LayerNorm, an output column of a convolution); a step in the path products ({Jj}); a coordinate pair in "
         "the positional encoding ({omegaj})", one),
        (sp.Symbol(HEAD_INDEX), "the index of an attention head, from 1, written in brackets: {headi} is head `h`'s "
         "map (not the hidden state, which always carries its step, `h_t`)", one),
        (T, "sequence length (number of steps or tokens)", one),
        (D, "width of a recurrent cell's input", one), (H, "width of a recurrent cell's state", one),
        (C, "width of a recurrent cell's output (the prediction)", one),
        (_at("x", t, 1, 2), "input at step `t`, a row (in the scalar cell a number, `x_t`)", Shape(1, D)),
        (_at("h", t, 1, 2), "hidden state at step `t` (scalar cell: `h_t`); the initial state is zero", Shape(1, H)),
        (_at("z", t, 1, 2), "pre-activation, the input of an activation: of the recurrent cell at step `t` (scalar cell: "
         "`z_t`); of a gate, {zr}; of the softmax, its row of scores `z`", Shape(1, H)),
        (M("yhat", 1, C), "prediction (scalar cell: `yhat`)", Shape(1, C)), (M("y", 1, C), "target (scalar cell: `y`)", Shape(1, C)),
        (M("e", 1, C), "error, prediction minus target (scalar cell: `e`); at step `t`, {et}", Shape(1, C)), (L, "loss", one),
        (sp.Symbol("w_x"), "input weight of the scalar cell (a second index names a gate: input to reset gate)", one),
        (sp.Symbol("w_h"), "recurrent weight of the scalar cell", one), (sp.Symbol("w_o"), "output weight (of the output layer, which computes the prediction)", one),
        (M("W_x", H, D), "input weights of the vector cell, stored output by input", Shape(H, D)),
        (M("W_h", H, H), "recurrent weights", Shape(H, H)), (M(SECTION_SYMBOL_NAMES["rnn"]["W_o"], C, H), "output weights of the vector cell", Shape(C, H)),
        (M("b_h", 1, H), "bias of the vector cell's state", Shape(1, H)),
        (M(SECTION_SYMBOL_NAMES["rnn"]["b_o"], 1, C), "bias of the vector cell's output layer", Shape(1, C)),
        (sp.Symbol("b"), "a bias of a scalar cell (its indices as those of `w`: `b_hr`) or of a convolution", one),
        (sp.Symbol("tau"), "an earlier step, the start of a path back in time", one),
        (sp.Symbol("rho"), "a bound on the absolute value (the norm) of every factor of a path product", one),
        (_grad("h", t, 1, 2), "gradient of the loss with respect to the state at step `t`, the state's adjoint (scalar "
         "cell: {ght}); the adjoint of a quantity is the gradient of the loss with respect to it", Shape(1, H)),
        (_grad("z", t, 1, 2), "gradient with respect to the pre-activation at step `t` (scalar cell: {gzt}); of a "
         "gate's, {gzr}", Shape(1, H)),
        (_at("J", j, 2, 2), "transition Jacobian of step `j`: the derivative of a state by the state before it, in "
         "numerator layout (row `i`: the derivatives of entry `i` of the state); a number, {Jj}, for the scalar cell",
         Shape(H, H)),
        (_at("r", t), "reset gate of the GRU; a gate's index (`r`, `u`, `n`; `i`, `f`, `o`) names its pre-activation "
         "{zr}, its weights and biases (`w_xr`, `w_hr`, `b_xr`)", one),
        (_at("u", t), "update gate of the GRU", one),
        (_at("z^n", t), "pre-activation of the GRU's candidate: the index `n` (PyTorch's) names the candidate, its "
         "weights `w_xn`, `w_hn` and biases `b_xn`, `b_hn`", one),
        (_at("eta", t), "the GRU's recurrent term of the candidate, before the reset gate scales it", one),
        (_at("htilde", t), "candidate state of the GRU", one),
        (_at("i", t), "input gate of the LSTM", one), (_at("f", t), "forget gate of the LSTM", one),
        (_at("o", t), "output gate of the LSTM", one), (_at("c", t), "cell state of the LSTM", one),
        (_at("ctilde", t), "candidate cell state of the LSTM", one),
        (_grad("c", t), "gradient of the loss with respect to the LSTM's cell state at step `t`", one),
        (sp.Function("sigma")(sp.Symbol("z")), "logistic sigmoid, applied entrywise", "that of `z`"),
        # every derivative has a curly d (the upright one names an adjoint, dX); one held fixed says so by a subscript
        (_at_fixed(), "partial derivative at fixed `h_0`; without the subscript, along every path (the total one)", one),
        (sp.Symbol("pos"), "position of a token", one),
        (sp.Symbol("k"), "an offset of positions, the shift from `pos` to `pos + k`", one),
        (sp.Function("PE")(sp.Symbol("pos")), "positional encoding of position `pos`, a row; {PEi}, its coordinate `i`; "
         "at `d = 5`, {PEpaired}, the row of its paired coordinates",
         Shape(1, d)),
        (sp.Symbol("omega_j"), "frequency of the coordinate pair `j` (coordinates `2*j` and `2*j + 1`)", one),
        (sp.Symbol("lambda_j"), "wavelength of the coordinate pair `j`, in positions: {wavelength} (appendix)", one),
        (sp.pi, "the circle constant, 3.14159...: a full turn is `2*pi` radians", one),
        (sp.Function("R")(sp.Symbol("k")), "rotation of the encodings by the offset `k`: one rotation by the angle "
         "`omega_j*k` per coordinate pair, so that {shift} at an even width; at an odd width it is `d - 1` by `d - 1` and "
         "rotates the paired coordinates (the last one has no partner)", Shape(d, d)),
        (sp.Function("blockdiag")(sp.Function("R_j")(sp.Symbol("k"))), "the block-diagonal matrix with the blocks "
         "{Bj}, one per pair `j` (each 2 by 2)", Shape(d, d)),
        (sp.Symbol("q"), "a second position, beside `pos` (the dot product of two encodings, appendix)", one,
         "positional"),
        (sp.Symbol("E_seq"), "token embeddings of the worked example: one row per token", Shape(T, d)),
        (sp.Symbol("P"), "positional encodings of the worked example: one row per position", Shape(T, d)),
        (sp.Symbol("H_0"), "input of the first encoder block, the sum of the two", Shape(T, d)),
        (sp.Symbol("d"), "model width of the Transformer, and the width of a positional encoding", one),
        (d_k, "width of a query and of a key", one), (d_v, "width of a value", one),
        (d_ff, "width of the hidden layer of the feed-forward sublayer (MLP)", one),
        (LAYERS, "number of layers of a stack (its depth)", one),
        # the depth figures' axes write a layer's matrix with the layer in parentheses (crosscheck.figures.depth)
        (sp.Symbol("l"), "index of a layer of a stack, from 1 ({lp}: a layer below it, in the receptive field's "
         "product); a superscript in parentheses names a layer's matrix: {W2l}, layer `l`'s second MLP weight",
         one),
        (_params("layer"), "number of parameters of one decoder layer, its biases and LayerNorms included", one),
        (_params("weights"), "number of entries of one decoder layer's weight matrices alone (no biases, no LayerNorms)",
         one),
        (_params("stack"), "number of weight-matrix entries of a stack of `L` decoder layers, `L` times one layer's",
         one),
        (X, "rows of a block's input, one per token", Shape(T, d)),
        (M("W_Q", d_k, d), "query map", Shape(d_k, d)), (M("W_K", d_k, d), "key map", Shape(d_k, d)),
        (M("W_V", d_v, d), "value map", Shape(d_v, d)),
        (M("Q", T, d_k), "queries", Shape(T, d_k)),
        (M("K", T, d_k), "keys (in cross-attention one per memory row: {srck})", Shape(T, d_k)),
        (M("V", T, d_v), "values (in cross-attention {srcv})", Shape(T, d_v)),
        (M("S", T, T), "scaled scores (in cross-attention {srcs})", Shape(T, T)),
        (M("A", T, T), "attention weights, the softmax of each row of {S} (in cross-attention {srcs})", Shape(T, T)),
        # a row of scores has one entry per key: T entries (attention's letters, SECTION_LETTERS)
        (M("a", 1, T), "softmax of a row `z` of scores: the weights of one row, one per key", Shape(1, T)),
        (M("M", T, T), "additive mask: 0 where a query may look, minus infinity where not", Shape(T, T)),
        (M("O", T, d_v), "attention output", Shape(T, d_v)),
        (n_head, "number of attention heads; a superscript in brackets names a head and its maps ({headi}: head {h}'s "
         "query map)", one),
        (M("C", T, n_head * d_v), "the heads' outputs side by side", Shape(T, n_head * d_v)),
        (M("W_O", d, n_head * d_v), "output map of multi-head attention", Shape(d, n_head * d_v)),
        (M("B", T, d), "output of multi-head attention, in the place of {O}", Shape(T, d)),
        (sp.Function("MHA")(X), "multi-head attention of the rows {X}, a map to {B}", Shape(T, d)),
        (sp.Function("MHA_self")(X, M("M", T, T)), "the decoder's self-attention: multi-head attention of the rows {X} "
         "with the mask {M} added to every head's scores", Shape(T, d)),
        (sp.Function("MHA_cross")(X, M(MEMORY, T_src, d)), "the decoder's cross-attention: queries from the rows {X}, keys "
         "and values from the memory {Z}", Shape(T, d)),
        (M("W_1", d_ff, d), "first layer of the MLP", Shape(d_ff, d)), (M("b_1", 1, d_ff), "its bias", Shape(1, d_ff)),
        (M("W_2", d, d_ff), "second layer of the MLP", Shape(d, d_ff)), (M("b_2", 1, d), "its bias", Shape(1, d)),
        (sp.Function("MLP")(X), "the two-layer feed-forward sublayer, applied to each row of {X}", Shape(T, d)),
        # the hidden layer after ReLU: not the course's J, the notes' letter for Jacobians (J_MHA, J_MLP, J_LN)
        (M("Phi_mlp", T, d_ff), "the MLP's hidden layer after its activation (ReLU); before it, {Zmlp}", Shape(T, d_ff)),
        (M("H", T, d), "input rows of an encoder or decoder block", Shape(T, d)),
        (M(BLOCK_OUTPUT, T, d), "output of an encoder or decoder block, the next block's input", Shape(T, d)),
        (M("U", T, d), "output of the block's attention sublayer, shortcut included", Shape(T, d)),
        # the sublayers' outputs and the LayerNorms' quantities, each named after its sublayer (derive.blocks.NORM_TAGS)
        (M("Z" + NORM_TAGS["mlp"], T, d_ff), "the MLP's pre-activation, the input of its ReLU", Shape(T, d_ff)),
        (M("B" + NORM_TAGS["mlp"], T, d), "output of the MLP, before the shortcut adds its input", Shape(T, d)),
        (M("U" + NORM_TAGS["self"], T, d), "output of the decoder's self-attention sublayer, shortcut included",
         Shape(T, d)),
        (M("U" + NORM_TAGS["cross"], T, d), "output of the decoder's cross-attention sublayer, shortcut included",
         Shape(T, d)),
        (M("B" + NORM_TAGS["self"], T, d), "output of the decoder's self-attention, before the shortcut", Shape(T, d)),
        (M("B" + NORM_TAGS["cross"], T, d), "output of the decoder's cross-attention, before the shortcut", Shape(T, d)),
        (M("Y" + NORM_TAGS["attention"], T, d), "output of the LayerNorm before the attention, {lnatt}: the rows the "
         "attention reads; of the LayerNorms before the MLP, the self- and the cross-attention, {Ymlp}, {Yself}, "
         "{Ycross}", Shape(T, d)),
        (M("s" + NORM_TAGS["attention"], T, d), "the standard deviations {sdev} of the rows {lnatt} normalizes; of the "
         "other LayerNorms, {sdmlp}, {sdself}, {sdcross}", Shape(T, d)),
        (T_src, "number of memory rows (the length of the source sequence)", one),
        (M(MEMORY, T_src, d), "the encoder's output, the memory a decoder reads", Shape(T_src, d)),
        (M("dX", T, d), "gradient of the loss with respect to {X}, an upright d before the matrix's name; {dO}, {dS}, "
         "{dY} ... likewise, each of the shape of its matrix", Shape(T, d)),
        (sp.Function("LN")(X), "LayerNorm of each row of {X}; where a block has several, each with its own scale and "
         "shift, named after the sublayer it feeds: {lnatt} before the attention, {lnmlp} before the MLP (the "
         "decoder's {lnself}, {lncross}, {lnmlp}), its scale {gatt} and the like with the same subscript",
         Shape(T, d)),
        (M("Y", T, d), "output of a layer: of LayerNorm; of a convolution (then {conv})", Shape(T, d)),
        (M(NORMALIZED, T, d), "normalized rows of LayerNorm; of a block's LayerNorms, {xhatatt}, {xhatmlp}, {xhatself}, "
         "{xhatcross}", Shape(T, d)),
        # a row's entries, where the text fixes one row t (its Jacobian): the matrix's entries (t, i)
        (sp.IndexedBase("xhat")[sp.Symbol("i")], "entry `i` of a normalized row `t`: {xhatti}",
         one),
        (M("gamma", 1, d), "LayerNorm's scale; of a block's LayerNorms, {gatt}, {gmlp}, {gself}, {gcross}", Shape(1, d)),
        (M("beta", 1, d), "LayerNorm's shift; of a block's LayerNorms, {batt}, {bmlp}, {bself}, {bcross}",
         Shape(1, d)),
        (M("sigma", T, d), "standard deviation of each row, `epsilon` inside the root, repeated across the row",
         Shape(T, d)),
        (sp.Eq(sp.Symbol("epsilon"), sp.Pow(sp.UnevaluatedExpr(10), -5, evaluate=False), evaluate=False),
         "LayerNorm's small constant", one),
        # LayerNorm's row is t (a token's), its features j and, in its Jacobian, i: one index per meaning
        (_at("mu", t), "mean of the `d` entries of row `t`", one),
        (_at("v", t), "population variance of the `d` entries of row `t` (divided by `d`)", one),
        (_at("s", t), "standard deviation of row `t`, the square root of its variance plus `epsilon`", one),
        # the row-wise maps are generic (rowsum and softmax read the T x T scores too): each has its argument's shape
        (rules.RowMean(X), "every entry of row `t` is the mean of row `t` of {X}", LIKE_X),
        (rules.RowStd(X, sp.Symbol("epsilon", positive=True)), "every entry of row `t` is the standard deviation of "
         "row `t`, `epsilon` inside the root", LIKE_X),
        (rules.Normalize(X, sp.Symbol("epsilon", positive=True)),
         "row `t` of {X} minus its mean, divided by its standard deviation: the normalized rows", LIKE_X),
        # RMSNorm, LayerNorm's variant (its Jacobian as the appendix's catalogue entry writes it)
        (_rms_of_row(_RMS()).lhs, "root mean square of a row `x` of RMSNorm, `epsilon` inside the root", one),
        (_rms_scaled(_RMS()).lhs, "entry `i` of RMSNorm's scaled row, `x_i` divided by the root mean square", one),
        (rules.RowSum(X), "every entry of row `t` is the sum of row `t` of {X}", LIKE_X),
        (sp.Function("softmax")(X), "the softmax of each row of {X}", LIKE_X),
        (M("1", T, 1), "column of ones", Shape(T, 1)),
        (sp.OneMatrix(1, T), "row of ones, the transpose of the column: it sums the columns of the matrix after it",
         Shape(1, T)), (sp.Identity(d), "identity matrix, of the size of the matrices beside it", "square"),
        (sp.KroneckerDelta(sp.Symbol("i"), sp.Symbol("j")), "1 if {ij}, else 0", one),
        (sp.Function("F")(sp.MatrixSymbol("x", 1, d)), "a residual branch: any differentiable map of a row {x}; the "
         "residual connection's output is {xout}", Shape(1, d), "rows"),
        (M(SECTION_SYMBOL_NAMES["residual"]["u"], 1, d), "output of a residual connection", Shape(1, d)),
        (sp.MatrixSymbol("J_F", d, d), "Jacobian of the branch; of the branch of layer `l` in a stack, {JFl}", Shape(d, d)),
        (sp.MatrixSymbol("J_LN", d, d), "Jacobian of LayerNorm; of a block's LayerNorms before the attention and "
         "before the MLP, {JLNatt} and {JLNmlp}", Shape(d, d)),
        (sp.MatrixSymbol("J_MHA", d, d), "Jacobian of a block's multi-head attention, at the rows it reads (appendix)",
         Shape(d, d)),
        (sp.MatrixSymbol("J_MLP", d, d), "Jacobian of a block's MLP, at the rows it reads (appendix)", Shape(d, d)),
        (residual.block_jacobian(), "Jacobian of block `l` of a stack with respect to its input rows, all tokens at once "
         "(the depth figures); not a step's transition Jacobian", Shape(T * d, T * d)),
        (sp.HadamardProduct(_at("f", t, 1, 2), _at("c", t - 1, 1, 2)), "entrywise (Hadamard) product",
         "that of its factors"),
        (sp.Sum(_grad("z", t), (t, 0, T - 1)), "sum of the terms for `t` from 0 to `T - 1` (over any index and range "
         "likewise; 0 when the range is empty)", "that of its terms"),
        # the receptive field's product over the layers l' below layer l, as the convolution section prints it
        (_rf_product(), "product of the factors for {lp} from 1 to `l - 1` (over any index and range likewise; 1 "
         "when the range is empty)", one, "conv"),
        (X.T, "transpose (of {X}; likewise of any matrix)", Shape(d, T)),
        (sp.Function("det")(M("R", d, d)), "determinant of a square matrix", one),
        (sp.ZeroMatrix(1, d), "a row (or a matrix) of zeros", "as what it equals"),
        (sp.DiagMatrix(M("a", 1, T)), "diagonal matrix with the entries of a row {a} on its diagonal, one row and one "
         "column per entry", "square"),
        # printed with the section's letters: the derivation's side k (SECTION_LETTERS), its indices u, v are xi, zeta
        (sp.Symbol("kappa"), "a convolution kernel of {side} by {side} entries, indexed (`u`, `v`)",
         Shape(sp.Symbol("k"), sp.Symbol("k")), "conv"),
        (sp.Symbol("k"), "side of a convolution kernel, and of a max-pooling window ({sidel}: of layer `l`)", one, "conv"),
        (M("X_in", sp.Symbol("H_in"), sp.Symbol("W_in")), "input of a convolution (one channel)",
         Shape(sp.Symbol("H_in"), sp.Symbol("W_in"))),
        (M("Xbar", sp.Symbol("H_in") + 2 * sp.Symbol("pad"), sp.Symbol("W_in") + 2 * sp.Symbol("pad")),
         "the input of a convolution with {pad} rows and columns of zeros on every side (the padded input), its indices "
         "from 0", Shape(sp.Symbol("H_in") + 2 * sp.Symbol("pad"), sp.Symbol("W_in") + 2 * sp.Symbol("pad"))),
        (sp.Symbol("H_in"), "number of rows of a convolution's input", one),
        (sp.Symbol("W_in"), "number of columns of a convolution's input", one),
        (sp.Symbol("m"), "row of an entry of a convolution's input, counted from 0", one, "conv"),
        (sp.Symbol("n"), "column of an entry of a convolution's input, counted from 0", one, "conv"),
        (sp.Symbol("H_out"), "number of output rows of a convolution or pooling layer", one),
        (sp.Symbol("W_out"), "number of output columns of a convolution or pooling layer", one),
        (sp.Symbol("Ghat"), "the gradient {dY} of a convolution's output (stride 1) extended by {K1} rows and columns of "
         "zeros on every side (the padded gradient), its indices from {K1neg}",
         Shape(*(n + sp.Mul(2, sp.Symbol("k", integer=True) - 1, evaluate=False) for n in sp.symbols("H_out W_out", integer=True))),
         "conv"),
        (sp.Symbol("pad"), "rows and columns of zeros padded on each side of a convolution's input", one),
        (sp.Symbol("Delta"), "stride of a convolution or pooling layer (`Delta_l`: of layer `l`)", one),
        (conv.WindowArgmax(sp.Symbol("i"), sp.Symbol("j")), "input position of the largest entry of pooling window "
         "(`i`, `j`)", one, "conv"),
        (_iverson(), "Iverson's bracket: 1 where the statement inside holds, else 0 (here: the position (`m`, `n`) is "
         "the argmax of pooling window (`i`, `j`))", one, "conv"),
        (sp.Symbol("rf_L"), "receptive field of a stack of `L` convolutions, in input positions", one),
    ]
    return rows


def _rf_product():
    """The product of the strides of the layers below layer l in the receptive field's formula (:mod:`derive.conv`)."""
    from seqgrad.derive import conv

    return next(iter(conv.receptive_field_formula()[1].atoms(sp.Product)))


def _at_fixed():
    """The LSTM's partial derivative (dc_1/dc_0)_{h_0} of the gates' worked example (:func:`_gate_example`)."""
    from seqgrad.derive.latex_settings import AtFixed

    return AtFixed(sp.Symbol("c_0"), of=sp.Symbol("c_1"), held=sp.Symbol("h_0"))


def _total_derivative():
    """The LSTM's derivative of c_1 by c_0 along every path, beside :func:`_at_fixed`."""
    from seqgrad.derive.latex_settings import Total

    return Total(sp.Symbol("c_0"), of=sp.Symbol("c_1"))


def _iverson():
    """The bracket ``[(m, n) = a_ij]`` of max-pooling's gradient, the derivation's own node (:mod:`derive.conv`)."""
    from seqgrad.derive import conv

    return next(iter(conv.max_pool_rows()[1][1].atoms(conv._Routed)))


def _with_vectors(b, names):
    """``b`` whose notation sets ``names`` in bold, as rows (its renames recorded in the document's notation)."""
    import dataclasses

    from .latex_parts import matrices

    return dataclasses.replace(b, notation=matrices(b.notation, names))


def _of_kind(sym, shape):
    """A symbol of the notation table as the notes print its kind: a plain name with a vector's or a matrix's shape
    (``Ghat``, ``kappa``, ``P``) as a matrix symbol, bold as every matrix of the displays; a scalar as it is."""
    if type(sym) is sp.Symbol and isinstance(shape, Shape) and shape.args:
        return sp.MatrixSymbol(sym.name, 2, 2)
    return sym


def _norm_names() -> dict:
    """The table's names of a block's LayerNorms, each named after the sublayer it feeds (derive.blocks.NORM_TAGS), with
    their Jacobians as derive.residual prints them."""
    from seqgrad.derive import residual
    from seqgrad.derive.blocks import NORM_TAGS

    X = sp.MatrixSymbol("X", 2, 2)
    return {"lnatt": sp.Function("LN" + NORM_TAGS["attention"])(X), "lnmlp": sp.Function("LN" + NORM_TAGS["mlp"])(X),
            "lnself": sp.Function("LN" + NORM_TAGS["self"])(X), "lncross": sp.Function("LN" + NORM_TAGS["cross"])(X),
            "gatt": sp.MatrixSymbol("gamma" + NORM_TAGS["attention"], 1, 2),
            # a LayerNorm's quantities with the subscript of its sublayer (Y_mlp, s_self, xhat_cross, gamma_mlp, ...)
            **{key + tag.lstrip("_"): sp.MatrixSymbol(name + tag, 1 if name in ("gamma", "beta") else 2, 2)
               for key, name in (("Y", "Y"), ("sd", "s"), ("xhat", NORMALIZED), ("g", "gamma"), ("b", "beta"))
               for tag in NORM_TAGS.values()},
            **{"JLN" + s.lstrip("_"): sp.MatrixSymbol(residual._norm_jacobian_name("LN", k), 2, 2)
               for k, s in NORM_TAGS.items()}}


def notation_section(b) -> str:
    """The notation: one table, every symbol once, with its meaning and its shape."""
    from seqgrad.derive.latex_layout import inline

    from .figures import depth as depth_figures  # the depth figures' W_2^(l), as their captions name it

    rows = notation_rows(b)
    # a meaning's formulas in backquotes, or {JFl} for one the parser does not read (a subscript with a subscript)
    T_src, d, d_k, d_v, k = (sp.Symbol(n) for n in ("T_src", "d", "d_k", "d_v", "k"))
    pos = sp.Symbol("pos")
    PE = sp.Function("PE")
    matrix = lambda name, *shape: sp.MatrixSymbol(name, *(shape or (2, 2)))  # noqa: E731
    formulas = {"JFl": sp.MatrixSymbol("J_{F_l}", 2, 2), "gzr": _grad("z^r", t), "zr": _at("z^r", t),
                "et": _at("e", t, 1, 2), "ght": _grad("h", t), "gzt": _grad("z", t), "Jj": _at("J", sp.Symbol("j")),
                "W2l": depth_figures.FORMULAS["W2l"],
                "xhatti": sp.Eq(sp.IndexedBase("xhat")[sp.Symbol("i")], sp.MatrixSymbol(NORMALIZED, 2, 2)[t, sp.Symbol("i")],
                                evaluate=False), "total": _total_derivative(), "K1": sp.Symbol("k") - 1, "K1neg": -(sp.Symbol("k") - 1), "sidel": sp.Symbol("k_l"),
                "PEi": PE(pos, sp.Symbol("i")), "PEpaired": _paired_encoding(5)(pos), "shift": _row_shift(),
                "srck": Shape(T_src, d_k), "srcv": Shape(T_src, d_v), "srcs": Shape(T, T_src),
                "X": matrix("X"), "B": matrix("B"), "M": matrix("M"), "Z": matrix(MEMORY), "x": matrix("x", 1, 2),
                "xout": sp.Eq(sp.Symbol(SECTION_SYMBOL_NAMES["residual"]["u"]), sp.Symbol("x") + sp.Function("F")(sp.Symbol("x")),
                              evaluate=False),
                "a": matrix("a", 1, 2), "sdev": matrix("s"), "dO": matrix("dO"), "dS": matrix("dS"), "dY": matrix("dY"),
                "conv": Shape(sp.Symbol("H_out"), sp.Symbol("W_out")), "O": matrix("O"), "S": matrix("S"),
                "headi": matrix(f"W_Q^[{HEAD_INDEX}]"), "Zmlp": matrix("Z_mlp"), "it": _at("i", t), "h": sp.Symbol(HEAD_INDEX), "side": sp.Symbol("k"), "Bj": sp.Function("R_j")(k),
                "ij": sp.Eq(sp.Symbol("i"), sp.Symbol("j"), evaluate=False),
                "wavelength": sp.Eq(sp.Symbol("lambda_j"), 2 * sp.pi / sp.Symbol("omega_j"), evaluate=False),
                "pad": sp.Symbol("pad"), "lp": _rf_product().variables[0], "omegaj": sp.Symbol("omega_j"), **_norm_names()}
    # a row printed as a section prints it (its letters), or with some of its words' symbols rows (u = x + F(x))
    section = {None: b, "conv": with_section_letters(b, "conv"), "positional": with_section_letters(b, "positional"),
               "rows": _with_vectors(b, {SECTION_SYMBOL_NAMES["residual"]["u"], "x"})}
    body = []
    for sym, meaning, shape, *where in rows:
        at = section[where[0] if where else None]
        size = _words(shape, at, **formulas) if isinstance(shape, str) else inline(shape, at.notation)
        body.append(" & ".join([inline(_of_kind(sym, shape), at.notation), _words(meaning, at, **formulas), size])
                    + " \\\\")
    intro = ("Sequences are rows: a vector is a row vector and a matrix holds one row per step or token; indices of "
             "steps, positions, rows, columns and entries start at 0 (a block of columns too), while heads and layers "
             "are counted from 1 (head 1, layer 1). Vectors and matrices are set in bold. Weights are stored output by input, as in PyTorch, and applied "
             "to rows through their transpose. A function of a vector (tanh, the sigmoid, a square) acts on each entry. "
             "Table~\\ref{tab:notation} lists the symbols, each with its meaning and its shape.")
    from .latex_parts import ragged

    # compact: 8 pt type with rows at 0.9 of their height, the meanings on lines as wide as the page allows (one
    # line for most symbols), the shapes wrapped in a narrow column; 180 symbols take under two pages, not four
    return (intro + "\n\n{\\scriptsize\\setlength{\\tabcolsep}{4pt}\\renewcommand{\\arraystretch}{0.9}\n"
            "\\begin{longtable}{l" + ragged("10.4cm", "2.6cm")
            + "}\n"
            # captioned, so the table counter it steps is Table 1 and the tables after it count on from it
            + "\\caption{The symbols of these notes, their meanings and their shapes.}\\label{tab:notation}\\\\\n"
            + "\\toprule\nsymbol & meaning & shape \\\\\n\\midrule\n\\endfirsthead\n"  # the caption on the first page only
            + "\\toprule\nsymbol & meaning & shape \\\\\n\\midrule\n\\endhead\n" + "\n".join(body)
            + "\n\\bottomrule\n\\end{longtable}\n}")
