"""Printing in the text's conventions (issue 13): term order, the zero initial state, unicode text,
notation settings that hold everywhere, citations, figure captions."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest
import sympy as sp

import seqgrad.derive.prose as prose_module
import seqgrad.derive.term_order as term_order_module
import seqgrad.sources as sources_module
from seqgrad.derive import gated, rnn
from seqgrad.derive.latex_layout import break_lines, display, visual_width
from seqgrad.derive.latex_settings import Notation, NotationPrinter, Partial, check_math
from seqgrad.derive.program_text import pretty, sstr
from seqgrad.errors import SeqgradValueError
from seqgrad.sources import TEXTS, cite, markdown, normalize

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("module", [term_order_module, prose_module, sources_module], ids=lambda m: m.__name__)
def test_module_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_textbook_order_in_text_and_latex():
    net = rnn.unroll(steps=3)
    text = str(net.program).splitlines()
    assert "z_1 = w_x*x_1 + w_h*h_0" in text and "L = (yhat - y)**2/2" in text and "e = yhat - y" in text
    tex = net.latex()
    assert "z_{1} " in tex and "&= w_{x} x_{1} + w_{h} h_{0}" in tex
    assert r"\frac{(\widehat{y} - y)^{2}}{2}" in tex
    lstm = gated.lstm(steps=2).latex()
    assert "&= w_{xi} x_{1} + w_{hi} h_{0} + b_{i}" in lstm  # input, recurrent, bias: as the text writes a gate


def test_zero_initial_state_dropped_by_default_and_shown_on_request():
    net = rnn.unroll(steps=3)
    assert "h_{-1}" not in net.latex() and "z_0 = w_x*x_0" in str(net.program)
    assert r"g^{z}_{1} h_{0} + g^{z}_{2} h_{1}" in net.latex()
    rows = [(d.target, d.value) for d in net.program]
    shown = display(rows, Notation(show_zero_state=True))
    assert r"h_{-1} " in shown and r"w_{h} h_{-1}" in shown


def test_vector_text_uses_circle_and_transpose():
    vec = rnn.unroll(steps=2, hidden=2)
    text = str(vec.program)
    assert "g_1^z = g_1^h ∘ (1 - h_1**2)" in text and "HadamardProduct" not in text
    assert "g₁ᶻ = g₁ʰ ∘ (1 − h₁²)" in vec.program.pretty()
    assert sstr(sp.MatrixSymbol("W", 2, 2).T) == "W.T"


def test_pretty_unicode():
    assert pretty(sp.Symbol("w_x") * sp.Symbol("x_t") + sp.Symbol("w_h") * sp.Symbol("h_{t-1}")) == "wₓ xₜ + wₕ hₜ₋₁"
    assert pretty((sp.Symbol("yhat") - sp.Symbol("y")) ** 2 / 2) == "(ŷ − y)²/2"


def test_products_break_between_factors_and_brackets_span_lines():
    four = rnn.unroll(steps=4)
    lines = break_lines(four.grad("w_x", expand=True), NotationPrinter(), 40)
    assert len(lines) >= 3 and any(line.startswith(r"\cdot") for line in lines)
    joined = " ".join(lines)
    assert joined.count(r"\Bigl(") == joined.count(r"\Bigr)") == 1
    assert all(visual_width(line) <= 40 for line in lines)


def test_long_derivation_is_several_displays():
    tex = gated.lstm(steps=3).latex()
    assert tex.count(r"\begin{align*}") == tex.count(r"\end{align*}") > 1
    assert r"\begin{aligned}" not in tex


def test_renames_reach_gradient_labels():
    n = Notation(symbol_names={"w_h": "W_{hh}"}, letters={"g": r"\delta"})
    net = rnn.unroll(steps=3)
    rows = [(Partial(net.parameters["w_h"]), net.grad("w_h"))]
    tex = display(rows, n)
    assert r"\frac{\partial \mathcal{L}}{\partial W_{hh}}" in tex and r"\delta^{z}_{1}" in tex and "w_{h}" not in tex
    assert n.unused_renames() == []
    assert Notation(symbol_names={"zz": "Q"}).unused_renames() == ["zz"]


@pytest.mark.parametrize("tex, message", [
    ("W_{hh", "balanced braces"), ("W}_{hh{", "balanced braces"), ("$W$", "'$'"), ("a % b", "'%'"),
    (r"\begin{matrix} a", r"\begin"), ("", "non-empty"),
])
def test_malformed_latex_is_refused(tex, message):
    with pytest.raises(SeqgradValueError, match=message.replace("\\", "\\\\").replace("$", r"\$")):
        check_math("--symbol", tex)
    with pytest.raises(SeqgradValueError):
        Notation(symbol_names={"w_h": tex})


def test_citations_one_style():
    assert cite("week06", 122, 144) == "week06 §BPTT:122-144"
    assert normalize("seed 000 L784") == "week06 §Mask:784"
    assert normalize("seed000 L290-324") == "week06 §Vector:290-324"
    assert normalize("seed 001 l.170") == "lesson §Decoder:170"
    assert normalize("000_a7606e3a9f173091.txt:896") == "week06 §Heads:896"
    assert normalize("004_eb7bf15b0a8a62d8.latest-revision.txt:40") == "wiki §PE:40"
    assert normalize("line 9999", "week06") == "line 9999"  # outside the text: kept as written
    with pytest.raises(SeqgradValueError, match="key"):
        cite("week99", 1)
    for text in TEXTS.values():  # sections tile the text without gaps or overlaps
        edges = [(s.first, s.last) for s in text.sections]
        assert edges[0][0] == 1 and all(a[1] + 1 == b[0] for a, b in zip(edges, edges[1:]))


def test_every_check_and_claim_cites_in_the_one_style():
    import re

    from seqgrad.crosscheck.claims_catalogue import entries
    from seqgrad.crosscheck.registry import all_checks

    old = re.compile(r"seed ?\d{3} [Ll]|\d{3}_[0-9a-f]{16}|\bL\d{2,4}\b")
    offenders = [f"{c.name}: {c.source}" for c in all_checks() if old.search(c.source) and not c.name.startswith("identity:")]
    offenders += [f"{e.name}: {e.source}" for e in entries() if old.search(e.source)]
    assert not offenders, offenders


def test_sources_page_is_in_step():
    assert (ROOT / "docs" / "sources.md").read_text(encoding="utf-8") == markdown()


def test_every_figure_has_a_caption():
    from seqgrad.crosscheck.figures import figure_sets

    stems = {"paths": set(), "depth": set(), "encoder": set()}
    for name, module in figure_sets().items():
        captions = module.CAPTIONS
        assert all(len(c) > 60 and "." in c for c in captions.values()), name  # a sentence saying what to see
        stems[name] = set(captions)
    from seqgrad.crosscheck.figures import paths as paths_set

    assert set(paths_set.figures()) == stems["paths"]


class _Entry:
    name, title, source, method, scope = "dot-variance", "Var(q.k) = d_k", "seed 000 L667", "simplify", "all d_k >= 1"
    family = "attention"

    def __init__(self, statement):
        self._statement = statement

    def prove(self):
        return type("Proof", (), {"holds": True})()

    def statement(self):
        return self._statement


def _build():
    from seqgrad.crosscheck import latex_parts

    return latex_parts.Build(Notation(), ROOT, None)


def test_no_trivial_display_and_sources_cited_in_one_style():
    from seqgrad.crosscheck import latex_parts

    out = latex_parts.identity_status([_Entry(sp.Eq(sp.Integer(4), sp.Integer(4), evaluate=False))], _build())
    assert "4 &= 4" not in out and "Both sides evaluate to $4$" in out
    assert r"Course notes, week 6, \S{}14 \emph{One attention head}" in out and "seed 000" not in out


def test_headings_typeset_math_not_dollar_signs():
    from seqgrad.crosscheck import latex_parts

    from seqgrad.derive import softmax
    from seqgrad.errors import SeqgradValueError

    head = latex_parts._derivation("The softmax Jacobian", softmax.SoftmaxJacobian(2).latex(),
                                where=sp.Eq(sp.Symbol("n"), 3, evaluate=False))
    assert head.startswith(r"\paragraph{The softmax Jacobian, $n = 3$}") and r"\$" not in head
    with pytest.raises(SeqgradValueError, match="a complete display"):  # bare math would be pasted outside math mode
        latex_parts._derivation("The softmax Jacobian", r"\frac{\partial a}{\partial z}")


def test_shift_report_is_typeset():
    from seqgrad.crosscheck import latex_parts
    from seqgrad.derive import positional

    rows = latex_parts.shift_report_rows(positional.Sinusoidal(5).shift_identity().prove(), Notation())
    cells = " ".join(c for row in rows for c in row)
    assert r"R{(k)}^{\top} R{(k)} = \mathbf{I}" in cells and r"\operatorname{det}" in cells and r"\neq" in cells
    assert r"R^{\top}" not in cells  # the transpose of the value R(k), not a function R^T
    assert "True" not in cells and "^T R(k)" not in cells  # no ASCII proof lines


def test_identity_headings_are_names_and_words_the_statement_typeset():
    """The notes head each identity with its name, source and scope in words; the formula is the typeset
    display (never the ASCII title such as 'd a_i / d z_j = a_i (delta_ij - a_j)')."""
    from seqgrad.crosscheck import latex_parts
    from seqgrad.derive import catalogue

    entries = [catalogue.get(n) for n in ("softmax-jacobian", "pe-unpaired-no-scalar", "residual-plain")]
    b = latex_parts.Build(Notation(), Path("."), None, proof_seconds=30)
    tex = latex_parts.identity_status(entries, b)
    heads = [line for line in tex.splitlines() if line.startswith("\\paragraph")]
    assert len(heads) == 3
    for entry, head in zip(entries, heads):
        assert head.startswith(f"\\paragraph{{{latex_parts.code(entry.name)}}}")
        assert latex_parts.text(entry.title) not in tex and "\\textasciicircum" not in head and "\\textgreater" not in head
    assert heads[0].endswith("all $n \\geq 1$.")  # the scope 'all n >= 1': its relation typeset by the printer
    assert "($d = 5$: coordinate 4" in heads[1] and "counterexample $d = 5$ at $\\mathrm{pos} = 0$, $k = 1$" in heads[1]
    assert heads[1].endswith("(every odd $d$ has one unpaired sine).")
    assert tex.count("\\begin{align*}") == 3  # each statement a display, through the printer
    assert "\\delta_{i j}" in tex and "\\neq \\alpha{(1)} \\sin(0)" in tex


def test_frequencies_print_as_omega_with_their_definition():
    """PE frequencies print as omega_i with omega_i = 10000^(-2i/d), never as expanded numbers (cube roots of 10)."""
    from seqgrad.derive import catalogue, positional

    definition = r"{\omega}_{i}"
    for obj in (positional.Sinusoidal(6), positional.Sinusoidal(5).rotation(), positional.Sinusoidal(5).shift_identity(),
                positional.NoScalarShift(positional.Sinusoidal(5))):
        tex = obj.latex()
        assert definition in tex and r"10000^{- \frac{2 i}{d}}" in tex, type(obj).__name__
        assert "\\sqrt[" not in tex and "10^{" not in tex and "1000}" not in tex
    assert "with }d = 6" in positional.Sinusoidal(6).latex()  # the width the definition is taken at
    for name in ("pe-unpaired-no-scalar", "pe-dot-offset-d6", "pe-dot-offset-d8", "pe-wavelength"):
        tex = catalogue.get(name).latex()
        assert r"{\omega}_{" in tex and "\\sqrt[" not in tex and "10^{" not in tex and "{10}" not in tex, name


def test_vector_sums_print_the_shortcut_first_in_text_pretty_and_latex():
    """y = h + F(h) (seed 000 L1183-1191: the shortcut, then the branch), in every printer."""
    from seqgrad.derive.decoder import DecoderBlock
    from seqgrad.derive.residual import DepthProduct, EncoderBlock, ResidualJacobian

    values = {p: ResidualJacobian(2, p).rows()[0][1] for p in ResidualJacobian.PLACEMENTS}
    assert [sstr(values[p]) for p in ResidualJacobian.PLACEMENTS] == ["h + F(h)", "h + F(LN(h))", "LN(h + F(h))"]
    assert pretty(values["pre-norm"]) == "h + F(LN(h))"
    assert r"\mathbf{y} &= \mathbf{h} + F{(\operatorname{LN}{(\mathbf{h})})}" in \
        " ".join(ResidualJacobian(2, "pre-norm").latex().split())
    assert r"\operatorname{LN}{(\mathbf{h} + F{(\mathbf{h})})}" in ResidualJacobian(2, "post-norm").latex()
    block = {sstr(lhs): sstr(rhs) for lhs, rhs, *_ in EncoderBlock(2, 2).rows()}
    assert block["U"] == "H + MHA(X)" and block["H'"] == "U + MLP(R)"
    decoder = [sstr(row[1]) for row in DecoderBlock().rows()]
    assert decoder == ["H + MHA_self(LN_self(H), M)", "U_self + MHA_cross(LN_cross(U_self), Z)",
                       "U_cross + MLP(LN_mlp(U_cross))"]
    assert r"\mathbf{U}_{\mathrm{self}} + \operatorname{MHA}_{\mathrm{cross}}" in DecoderBlock().latex()


def test_path_sums_print_by_path_length_and_attention_in_q_k_v_order():
    from seqgrad.derive import blocks
    from seqgrad.derive.residual import DepthProduct

    paths = DepthProduct(3, 2).rows()[0][1]
    assert sstr(paths) == "I + J_1 + J_2 + J_3 + J_2*J_1 + J_3*J_1 + J_3*J_2 + J_3*J_2*J_1"  # He et al.: I + Σ J_l + Σ J_l J_m + ...
    assert pretty(paths) == "I + J₁ + J₂ + J₃ + J₂ J₁ + J₃ J₁ + J₃ J₂ + J₃ J₂ J₁"
    post = blocks.block_program("post-norm").program
    assert str(post["dH"]) == "dH = dU + dQ*W_Q + dK*W_K + dV*W_V"  # the shortcut's gradient, then the branch's
    assert str(post["Y_att"]) == "Y_att = (1*gamma_att) ∘ Xhat_att + 1*beta_att"  # LayerNorm's shift last, as a bias
    assert NotationPrinter(Notation(bold=False)).doprint(post["dH"].value) == r"\mathrm{d}U + \mathrm{d}Q W_{Q} + \mathrm{d}K W_{K} + \mathrm{d}V W_{V}"
    from seqgrad.derive import catalogue  # the same statements as `seqgrad identities --latex` prints them

    assert catalogue.get("residual-post-norm-block-program").math().endswith(
        r"= \mathrm{d}\mathbf{U} + \mathrm{d}\mathbf{Q} \mathbf{W}_{Q} + \mathrm{d}\mathbf{K} \mathbf{W}_{K} + \mathrm{d}\mathbf{V} \mathbf{W}_{V}")
    assert catalogue.get("residual-depth-expansion").math().endswith(
        r"= \mathbf{I} + \mathbf{J}_{F_1} + \mathbf{J}_{F_2} + \mathbf{J}_{F_3} + \mathbf{J}_{F_2} \mathbf{J}_{F_1}"
        r" + \mathbf{J}_{F_3} \mathbf{J}_{F_1} + \mathbf{J}_{F_3} \mathbf{J}_{F_2} + \mathbf{J}_{F_3} \mathbf{J}_{F_2} \mathbf{J}_{F_1}")


def test_an_affine_map_keeps_its_offset_last():
    from seqgrad.derive.residual import _mlp_formula

    lhs, rhs = _mlp_formula()
    from seqgrad.derive.latex_settings import DEFAULT  # on a row x, as the notes (the printer keeps the text's order)

    assert DEFAULT.latex(lhs) == r"(\mathbf{x} \mathbf{W}_{1}^{\top} + \mathbf{b}_{1}) \mathbf{W}_{2}^{\top} + \mathbf{b}_{2}"
    assert DEFAULT.latex(rhs) == r"\mathbf{x} (\mathbf{W}_{2} \mathbf{W}_{1})^{\top} + (\mathbf{b}_{1} \mathbf{W}_{2}^{\top} + \mathbf{b}_{2})"


def test_scopes_and_source_formulas_are_typeset_by_the_printer_and_plain_in_text(capsys):
    """Issue 13: a heading's scope and the formulas of its source are math, printed with the notation;
    str(), the catalogue page and `seqgrad identities --json` keep the recorded plain text."""
    import json


    from seqgrad.crosscheck import latex_parts
    from seqgrad.crosscheck.cli import main
    from seqgrad.derive import catalogue
    from seqgrad.derive.prose import Prose, scope

    assert scope("all T, d, d_k, d_v >= 1").latex() == r"all $T, d, d_{k}, d_{v} \geq 1$"
    assert scope("all even d = 2m >= 2").latex() == r"all even $d = 2 m \geq 2$"
    assert scope("all even d (every pair), symbolic w, pos, k").latex() == \
        r"all even $d$ (every pair), symbolic $w$, $\mathrm{pos}$, $k$"
    assert scope("all H_o, W_o, k >= 1 and every stride s (symbolic sizes)").latex() == \
        r"all $H_{o}, W_{o}, k \geq 1$ and every stride $s$ (symbolic sizes)"
    assert scope("instance L = 4, d = 2, symbolic lambda").latex() == r"instance $L = 4$, $d = 2$, symbolic $\lambda$"
    assert scope("instance T = 2, D = 2, generic MHA and MLP").latex() == r"instance $T = 2$, $D = 2$, generic MHA and MLP"
    assert scope("all T, d, a, b >= 1 for a branch F").latex() == r"all $T, d, a, b \geq 1$ for a branch $F$"
    renamed = Notation(symbol_names={"d_k": r"d_{\mathrm{key}}"})
    assert scope("all d_k >= 1").latex(renamed) == r"all $d_{\mathrm{key}} \geq 1$" and renamed.unused_renames() == []
    note = Prose("variance `sigma**2/(sigma**2 + epsilon)`, slightly below 1")
    assert str(note) == "variance sigma**2/(sigma**2 + epsilon), slightly below 1"
    # running text: the fraction on the line, its denominator in brackets (latex_settings.NotationPrinter._slashed)
    assert note.latex() == r"variance $\sigma^{2}/(\epsilon + \sigma^{2})$, slightly below 1"
    with pytest.raises(SeqgradValueError):
        Prose("`import os`")

    entry = catalogue.get("layernorm-jacobian-intermediates")
    assert entry.source == "seed 000 L971-975; the chain rule over the intermediates sigma, xhat" and "`" not in entry.source
    # the appendix's citation scheme (issue 25, item 19): the text, the section's number and title, no line numbers
    assert latex_parts.source_tex(entry.source, Notation()) == (
        r"Course notes, week 6, \S{}17 \emph{The pre-norm encoder block}; the chain rule over the intermediates "
        r"$\sigma$, $\hat{x}$")
    assert str(catalogue.get("attention-gradients").scope) == "all T, d, d_k, d_v >= 1"
    assert "| all T, d, d_k, d_v >= 1 |" in catalogue.markdown() and "`sigma**2`" not in catalogue.markdown()
    assert main(["identities", "--json", "--only", "softmax-sums-to-one"]) == 0
    listed, = json.loads(capsys.readouterr().out)["entries"]
    assert listed["scope"] == "all n >= 1" and listed["source"] == "seed 000 L700 (every row of A sums to 1)"


def test_every_scope_and_source_reads_and_no_heading_holds_ascii_math():
    from seqgrad.crosscheck import latex_parts
    from seqgrad.derive import catalogue

    for e in catalogue.entries():
        head = latex_parts.source_tex(e.source, Notation()) + "; " + e.scope.latex()
        words = re.sub(r"\$[^$]*\$", "", head)  # what is set as text, outside the formulas
        assert not re.search(r">=|<=|\^|\\textasciicircum|\\textgreater|\\textless|\bsqrt\(|\*\*", words), (e.name, head)


def test_prose_survives_pickling_with_its_formulas():
    """Check results cross process boundaries (seqgrad check --jobs, seqgrad latex --jobs) with their sources."""
    import pickle

    from seqgrad.derive.prose import Prose, cited

    note = Prose("seed 000 L981 (variance `sigma**2/(sigma**2 + epsilon)`)")
    copy = pickle.loads(pickle.dumps(note))
    assert copy == note and copy.recorded == note.recorded and cited(copy) == cited(note)
    assert cited(copy) == r"week06 \S{}Block:981 (variance $\sigma^{2}/(\epsilon + \sigma^{2})$)"


def test_a_scope_read_again_keeps_its_formulas():
    from seqgrad.derive.prose import scope

    once = scope("all `sigma**2` > 0, d >= 1")
    assert scope(once).latex() == once.latex() and str(scope(once)) == str(once)
    assert r"\sigma^{2}" in once.latex()


# -- a display never breaks right after a leading scalar factor (issue 25, prose review, item 3) ----------------------

def _leading_factor_cases():
    """Products whose first factor is a coefficient (a fraction, a symbol, a scalar in a matrix product), each in a
    sum long enough to be broken at the widths tried."""
    from seqgrad.derive import blocks

    x = sp.symbols("x0:12")
    c = sp.Symbol("c")
    X, Y = sp.MatrixSymbol("X", 3, 3), sp.MatrixSymbol("Y", 3, 3)
    long_sum = sp.MatAdd(*(sp.MatrixSymbol(f"A_{i}", 3, 3) for i in range(8)))
    dU = next(rhs for lhs, rhs in blocks.decoder_block_rows(heads=2) if str(lhs) == "dU_cross")  # the decoder's
    reciprocal = next(term.args[0] for term in dU.args if isinstance(term, sp.HadamardProduct))  # 1/s_mlp
    return [
        (dU, reciprocal),
        (x[0] + sp.Mul(sp.Rational(1, 3), sp.Add(*x[1:]), evaluate=False), sp.Rational(1, 3)),
        (x[0] * x[1] + sp.Mul(c, sp.Add(*x[2:]), evaluate=False), c),
        (sp.MatAdd(X, sp.MatMul(c / 7, sp.MatAdd(long_sum, Y)), evaluate=False), c / 7),
    ]


@pytest.mark.parametrize("case", range(4))
def test_no_line_ends_with_a_leading_scalar_factor(case):
    """The rule, in derive.latex_layout: a product's break after its first factor is not allowed when that factor is
    a coefficient, so at no width does a line of a broken display end with it (the decoder's dU_cross once ended a
    line with 1/s_mlp, the bracket it multiplies on the next line)."""
    expr, factor = _leading_factor_cases()[case]
    printer = NotationPrinter()
    coefficient = printer._print(factor)
    broken = 0
    for width in range(20, 80):
        lines = break_lines(expr, printer, width)
        broken += len(lines) > 1  # the formula is broken, so the rule is exercised
        assert not any(line.rstrip().endswith(coefficient) for line in lines), (width, lines)
    assert broken


def test_the_page_never_breaks_inside_one_formula():
    """A row broken over lines is one formula: the line before each continuation (``&\\quad ...``) ends in ``\\\\*``,
    where the page may not break, also where the notes allow page breaks in displays (\\allowdisplaybreaks[1]): the
    encoder's and decoder's dU once began at the foot of a page and went on at the top of the next."""
    import contextlib

    from seqgrad.derive import blocks
    from seqgrad.derive.latex_layout import page_breaks

    rows = blocks.decoder_block_rows(heads=2)
    for mode in (contextlib.nullcontext, page_breaks):  # consecutive displays; one display with \\displaybreak[0]
        with mode():
            tex = display(rows, width=40)
        lines = tex.splitlines()
        continued = [i for i, line in enumerate(lines) if line.lstrip().startswith("&\\quad")]
        assert continued
        assert all(lines[i - 1].endswith("\\\\*") for i in continued), tex
        others = [line for i, line in enumerate(lines) if line.endswith("\\\\*") and i + 1 not in continued]
        # in a document the first row and the last are not left alone on a page either (a reviewer: dO = dU alone at
        # a page's foot): \\* after the first line and before the last, and nowhere else but inside a formula
        ends = [1, len(lines) - 3] if mode is page_breaks else []  # lines[0] is \begin{align*}, lines[-1] \end
        assert [line for line in others if lines.index(line) not in ends] == []
        assert all(lines[i].endswith("\\\\*") for i in ends)


def test_a_broken_sum_breaks_at_its_outermost_plus_before_inside_a_bracket():
    """The decoder's dU_self = dU_cross + 1/s (.) (dx - mean(dx) - x (.) mean(dx (.) x)) was set with its first line
    running from the top-level term into the bracket; a line holds whole top-level terms, or part of one term that
    is too wide by itself, never the end of one term and the start of another's bracket."""
    dU, dx, m, n, xh = (sp.MatrixSymbol(name, 4, 3) for name in ("dU_{cross}", "dx_{cross}", "m_{cross}", "n_{cross}",
                                                                "xh_{cross}"))
    expr = sp.MatAdd(dU, sp.MatMul(sp.Symbol("c"), sp.MatAdd(dx, -m, -sp.HadamardProduct(xh, n))))
    width = 30  # the bracketed term alone is too wide: it is broken inside too, at its own top-level minus
    lines = break_lines(expr, NotationPrinter(), width)
    assert lines[0] == NotationPrinter().doprint(dU)  # the top-level break first
    assert lines[1].startswith("{}+ c ") and r"\Bigl(" in lines[1] and r"\Bigr)" in lines[-1]
    assert all(visual_width(line) <= width for line in lines)


def test_a_quantifier_ends_the_last_line_of_a_long_left_side():
    """The positional shift identity has a left side too wide to stand before the ``&``; its note *for every pos
    and every k* was set alone on a line of its own.  It ends the formula's last line where it fits there."""
    pos, k, omega = sp.symbols("pos k omega_j")
    row = sp.Matrix([[sp.sin(omega * (pos + k)), sp.cos(omega * (pos + k))]])
    shifted = sp.MatMul(sp.Matrix([[sp.sin(omega * pos), sp.cos(omega * pos)]]), sp.Function("B_j")(k), evaluate=False)
    lines = display([(row, shifted, ("for every ", pos, " and every ", k))], width=60).splitlines()[1:-1]
    assert not any(line.lstrip().startswith(r"&\quad \text") for line in lines)
    assert r"\text{ and every }k" in lines[-1] and lines[-1].startswith("&= ") and "B_{j}" in lines[-1]
    # a matrix is as wide as one row: brackets, a, a gap of two, b (not both rows and the environment's name)
    assert visual_width(r"\left[\begin{matrix}a & b\\c & d\end{matrix}\right]") == len("[a") + 2 + len("b]")


def test_a_sum_over_two_indices_in_running_text_keeps_its_limits_on_one_line():
    """The encoder's worked loss, the sum of every entry of U, was set in the text and in a caption as
    ``\\sum_{\\substack{0 <= t <= 6 \\\\ 0 <= j <= 4}}``: two lines of limits that push the text's lines apart.  Inline,
    it is two nested sums, each with its limits beside the sign; a display keeps the one sign."""
    from seqgrad.derive.latex_layout import inline

    t, j = sp.symbols("t j", integer=True)
    U = sp.MatrixSymbol("U", 7, 5)
    total = sp.Sum(U[t, j], (t, 0, 6), (j, 0, 4))
    text = inline(sp.Eq(sp.Symbol("L"), total, evaluate=False))
    assert r"\substack" not in text and text.count(r"\sum_{") == 2
    assert text.index("j=0}^{4}") < text.index("t=0}^{6}")  # the first index innermost, as in Sum
    assert inline(sp.Product(U[t, j], (t, 0, 6), (j, 0, 4))).count(r"\prod_{") == 2
    assert inline(sp.Sum(U[t, j], (t, 0, 6))) == "$%s$" % NotationPrinter().doprint(sp.Sum(U[t, j], (t, 0, 6)))
