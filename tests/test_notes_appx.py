"""Issue 25, third review (pages 26-50, /tmp review B): the appendix's wrong or contradictory content.

Each test builds the appendix of two sections (decoder, convolution: no figures, so it is fast) or asks the printing
function itself, and fails on the output before the item was fixed.
"""

from __future__ import annotations

import re

import pytest

from test_latex_notes import body_and_appendix

# one worker runs this module, so that its module fixtures are built once, not once per xdist worker
pytestmark = pytest.mark.xdist_group("notes_appx")


@pytest.fixture(scope="module")
def appendix():
    from seqgrad.crosscheck import latexdoc

    return body_and_appendix(latexdoc.render("decoder,conv", tex_dir="."))[1]


def _paragraph(appendix: str, name: str) -> str:
    """The appendix's entry of identity ``name`` (its heading up to the next paragraph or table)."""
    head = "\\paragraph{\\texttt{" + "-\\allowbreak{}".join(name.split("-")) + "}}"
    part = appendix[appendix.index(head):]
    return re.split(r"\n\\paragraph|\\begin\{table\}", part[1:])[0]


# item 1: the convolution's gradients print their left-hand sides, the gradient each computes
@pytest.mark.parametrize("name, lhs", [("conv-weight-sharing-gradient", r"\frac{\partial \mathcal{L}}{\partial {\kappa}_{\xi,\zeta}}"),
                                       ("conv-input-gradient-full-correlation", r"\frac{\partial \mathcal{L}}{\partial {\bar{X}}_{i',j'}}")])
def test_1_conv_identities_have_a_left_hand_side(appendix, name, lhs):
    entry = _paragraph(appendix, name)
    assert "the left-hand side is the stated right-hand side" not in entry
    assert re.search(re.escape(lhs) + r"\s*(&\s*)?=", entry), entry


# item 2: the stack's count is a formula, L (8 d^2 + 2 d d_ff) without biases or LayerNorms, and its value a product
def test_2_decoder_stack_count_is_printed_as_its_formula(appendix):
    entry = _paragraph(appendix, "count-decoder-layer")
    # the model width is d, as in the body (derive.decoder's d_model renamed by the decoder's SECTION_SYMBOL_NAMES)
    assert re.search(r"\\lvert\\theta\\rvert_\{\\mathrm\{stack\}\}\s*&= L \(2 d_\{\\mathrm\{ff\}\} d \+ 8 d\^\{2\}\)", entry), entry
    assert "d_{\\mathrm{model}}" not in entry and "d_model" not in entry
    assert "6 \\cdot 1048576 = 6291456" in entry
    assert 6 * 1048576 == 6291456


# items 3, 22: the tolerance sentence states both tolerances and why a ratio can exceed err / 1e-10
def test_3_tolerance_sentence_states_both_tolerances():
    from seqgrad.crosscheck.latex_parts import tolerance_words
    from seqgrad.derive.latex_settings import Notation

    words = tolerance_words("cpu", Notation())
    assert "\\mathrm{tol} = 1.0 \\cdot 10^{-10} + 1.0 \\cdot 10^{-9}\\,\\lvert\\mathrm{ref}\\rvert" in words
    assert "half a unit of the last printed digit" in words and "larger than its max abs err" in words
    assert "tests an inequality" not in words  # the dash rule the tables contradicted (item 4)


# item 5: the heading of the numbers that are not errata says what is true of all of them
def test_5_non_errata_heading_is_true(appendix):
    assert "Printed numbers explained by rounding or truncation" not in appendix
    assert "Each of these differs from its value rounded" not in appendix
    assert "\\subsection*{Printed numbers that follow the text's own working}" in appendix


# item 7: the correction of y_t = LN o FNN(h''_t) names the FNN, not the attention
def test_7_ffn_erratum_names_the_ffn():
    from seqgrad.crosscheck.claims_statements import statements

    ffn = [s for s in statements() if "LN o FNN(h''_t)" in s.text]
    # issue 25 (item 21): the missing skip connection is one correction shared by the three decoder sublayers; it names
    # the FNN's composition, and the FNN's own correction (it is not linear) is the FNN's
    assert len(ffn) == 1 and "LN o FNN are other functions" in ffn[0].precise, ffn
    assert "which is not linear" in ffn[0].corrections[0] and "MH o Attn alone" not in ffn[0].precise


# item 8: the wording of two verified rows
def test_8_wording_of_two_rows():
    from seqgrad.crosscheck.claims_catalogue import entries

    whats = " ".join(e.what for e in entries())
    assert "about 5.1 times cheaper" in whats and "almost 5.1" not in whats
    assert "multiplied by about 0.061 per step" in whats and "shrinks by about 0.061" not in whats


# item 9: the x-hat row counts the 4 numbers of its vector, not 5 (one of them is checked twice)
def test_9_claims_row_counts_printed_numbers(appendix):
    row = appendix[appendix.index("\\texttt{layernorm\\_\\allowbreak{}example\\_\\allowbreak{}xhat}"):] \
        if "\\texttt{layernorm\\_\\allowbreak{}example\\_\\allowbreak{}xhat}" in appendix else \
        appendix[appendix.index("layernorm"):]
    row = row[:row.index("\\\\\n")]
    assert "(4 numbers)" in row and "(5 numbers)" not in row, row


# item 6: one statement, one verdict and one citation: the claims row of the lecture's scaling statement points to its
# erratum, and both cite the same place
def test_6_one_verdict_and_one_citation_per_statement(appendix):
    start = appendix.index("\\texttt{lecture07\\_\\allowbreak{}scaling\\_\\allowbreak{}variance}")
    row = appendix[start:appendix.index("\\\\\n", start)]
    assert "the statement is imprecise (see its erratum below)" in row, row
    # one citation scheme (issue 25, item 19): the text, the section's number and title, no line
    assert "\\S{}3:39" not in appendix and "Lecture 7, \\S{}3 \\emph{Self-attention}" in row


# --------------------------------------------------------------------------- issue 25, fourth review (A.1-A.10)

@pytest.fixture(scope="module")
def build():
    from pathlib import Path

    from seqgrad.crosscheck.latex_parts import Build
    from seqgrad.crosscheck.latexdoc import notes_notation
    from seqgrad.derive.latex_settings import Notation

    return Build(notes_notation(Notation()), Path("."), None)


@pytest.fixture(scope="module")
def identities(build):
    from seqgrad.crosscheck.latex_parts import _catalogue_section

    return _catalogue_section(["derive.positional", "derive.attention", "derive.residual"])(build)


def _without_code(tex: str) -> str:
    return re.sub(r"\\texttt\{(?:[^{}]|\{[^{}]*\})*\}", "", tex)


# item 20: the texts' plain-text formulas are typeset as math, in the order and with the digits the text wrote
@pytest.mark.parametrize("ascii, tex", [
    ("dL/dx_0", r"$\partial \mathcal{L}/\partial x_{0}$"),  # the loss as the notes print it (issue 25, 4th review, item 7)
    ("dh_t/dh_(t-1) = diag(u_t)", r"$\partial h_{t}/\partial h_{t-1} = \operatorname{diag}(u_{t})$"),
    ("((X * K)_ij = sum_uv K_uv X_{i+u,j+v} + b)", r"$((X \ast K)_{ij} = \sum_{uv} K_{uv} X_{i+u,j+v} + b)$"),
    ("omega_i = 10000^(-2i/d)", r"$\omega_{i} = 10000^{-2i/d}$"),
    ("h_6^(0) and sigma_6^2", r"$h_{6}^{(0)}$ and $\sigma_{6}^{2}$"),
    ("x_hat_2 = -1.4125/1.05379", r"$\hat{x}_{2} = -1.4125/1.05379$"),
    ("||p_i - p_j||^2 = sum_k 2 - 2 cos(|i - j| w_k)",
     r"$\lVert p_{i} - p_{j}\rVert^{2} = \sum_{k} 2 - 2 \cos(\lvert i - j\rvert w_{k})$"),
    ("LN o MH o Attn alone", r"$\operatorname{LN} \circ \operatorname{MH} \circ \operatorname{Attn}$ alone"),
    ("d_k (E[q_a^4] - 1)", r"$d_{k} (\mathbb{E}[q_{a}^{4}] - 1)$"),
    ("the class derive.residual.EncoderBlock", r"the class \texttt{derive.residual.EncoderBlock}"),
    ("the lesson's (d = 4)", r"the lesson's $(d = 4)$"),
    ("mean 0.6125 and sigma 1.0538", r"mean 0.6125 and $\sigma$ 1.0538"),
])
def test_20_plain_text_formulas_are_math(ascii, tex):
    from seqgrad.crosscheck.latex_parts import quotation

    assert quotation(ascii) == tex


def test_20_no_formula_of_the_appendix_is_set_as_text(appendix, build):
    from seqgrad.crosscheck.latex_parts import check_status

    gates = check_status("gated.*_carry_jacobian", build)
    for tex in (appendix, gates):
        prose = _without_code(re.sub(r"\$[^$]*\$", "", tex))
        for raw in ("\\_", "\\textasciicircum", "sqrt(", "||", "dL/dx"):
            assert raw not in prose, (raw, prose[max(0, prose.find(raw) - 200):prose.find(raw) + 100])
    assert r"$\partial h_{t}/\partial h_{t-1} = \operatorname{diag}(u_{t})$" in gates


# item 19: one citation scheme: the text, the section's number and title; no line numbers anywhere
def test_19_sources_cite_text_section_number_and_title(appendix, identities, build):
    from seqgrad.crosscheck.latex_parts import check_status

    checks = check_status("transformer.*_program*", build) + check_status("rnn.*", build)
    for tex in (appendix, identities, checks):
        assert not re.search(r"\\S\{\}[\w. ]+:\d", tex), re.search(r".{80}\\S\{\}[\w. ]+:\d.{20}", tex)
        assert not re.search(r"\b(?:l\.|lines?) ?\d", _without_code(tex)), re.search(r".{60}\b(?:l\.|lines?) ?\d.{20}", tex)
    assert "Course notes, week 6, \\S{}17 \\emph{The pre-norm encoder block}" in checks  # was "week06 §2.7:971"
    assert "Course notes, week 6, \\S{}3--5 (scalar RNN" in checks  # was "week06 §RNN:63-242"
    assert "Course notes, week 6, \\S{}4 \\emph{Forward and backward operations} (the course's Tab.~3" in checks
    assert "Lesson on Transformers, \\S{}7 \\emph{Practice} (task 29" in appendix  # was "lesson §Advanced tasks:254"
    assert "\\S{}2.7" not in checks and "\\S{}Block" not in checks


def test_19_a_line_a_note_names_is_its_section():
    from seqgrad.crosscheck.appendix_text import citation_tex

    out = citation_tex("lesson §Medium tasks:222-226 (tasks 14-16; l.254 confirms 262,144)")
    assert out == "Lesson on Transformers, \\S{}7 \\emph{Practice} (tasks 14-16; \\S{}7 confirms 262,144)"
    assert citation_tex("x (the text says at line 991 that ...)", key="week06") == "x (the text says at \\S{}17 that ...)"


# item 18: a table of the course texts is named as theirs, never "Table 16" beside the notes' own tables
def test_18_course_tables_are_named_as_the_course_notes(appendix, build):
    from seqgrad.crosscheck.latex_parts import check_status

    checks = check_status("encoder.causal_journey_row", build) + check_status("gated.fact.sigmoid_prime*", build)
    assert "Course notes, week 6, \\S{}15 \\emph{The causal mask}, Tab.~16" in checks
    for tex in (appendix, checks):
        prose = re.sub(r"\\(?:caption|ref)\{[^{}]*\}", "", tex)
        bare = re.findall(r".{40}(?<!course notes, )(?<!week 6, )(?<!\}, )\bTables? \d+", prose)
        assert not bare, bare
    assert re.search(r"the course's Tabs?\.~10(--\d+)?: every printed number", appendix)  # alone, or a run's first


# item 21: each correction once, with every place it applies to
def test_21_each_correction_once(appendix):
    errata = appendix[appendix.index("\\subsection*{Errata among the texts' statements}"):]
    assert errata.count("are different functions of the same parameters") == 1
    assert errata.count("permutation-equivariant, not invariant") == 1
    assert errata.count("the skip connection is missing") == 1
    assert errata.count("oscillates") == 1 and appendix.count("oscillates") == 1
    item = next(i for i in errata.split("\\item") if "permutation-equivariant, not invariant" in i)
    assert item.count("\\textbf{imprecise}") == 4  # lesson §1, §8, §9 and lecture 7 §4
    numbers = appendix[appendix.index("\\subsection*{Errata: printed numbers"):appendix.index("\\subsection*{Errata among")]
    assert "wiki\\_\\allowbreak{}pe\\_\\allowbreak{}distance" not in numbers  # its statement's erratum says it


def test_21_a_number_is_said_once_per_erratum(appendix):
    def item(name):
        start = appendix.index("\\item " + name)
        return appendix[start:appendix.index("\n", start)]

    xhat = item("\\texttt{layernorm\\_\\allowbreak{}example\\_\\allowbreak{}xhat}")
    assert xhat.count("The text prints") == 1, xhat
    a60 = item("\\texttt{contribution\\_\\allowbreak{}A60\\_\\allowbreak{}v0}")
    assert a60.count("The text prints") == 1 and "$0.0371$ and $0.0741$" in a60 and "\\\\ \\emph" not in a60, a60


# item 22: the appendix reads as notes, not a tool's log
def test_22_no_audit_log_wording(appendix, identities, build):
    from seqgrad.crosscheck.latex_parts import check_status

    checks = check_status("gated.figure3_right", build) + check_status("cells.builtin.autograd", build)
    for tex in (appendix, identities, checks):
        for phrase in ("each proof was run when the notes were written", "measured on the processor", "each run on the",
                       "by the chain rule in SymPy", "the program's backward pass", "lesson digest", "digest: not in",
                       "computed in spec", "the cells on the engine", "agree to 100 decimals", "(the course)",
                       "every pair, every", ": pe-shift)", ": pe-norm)"):
            assert phrase not in tex, phrase


# item 24: the appendix says what an identity's entry holds, and promises identities only where there are some
def test_24_the_parts_of_an_entry_are_explained(appendix):
    intro = appendix[:appendix.index("\\subsection")]
    assert "the identities behind every result" not in intro
    assert "(where it has any)" in intro
    assert all(w in intro for w in ("its name", "the place in the course texts", "the sizes it holds for", "statement"))


# item 15: the instances of the shift identity are one statement, their layouts' coordinates named, on one line
def test_15_shift_instances_are_one_statement(identities):
    heads = [p for p in identities.split("\\paragraph{")[1:] if "shift-\\allowbreak{}d8" in p.split("\n")[0]]
    assert len(heads) == 1
    entry = heads[0][:heads[0].index("\\end{align*}")]
    for name in ("d8-\\allowbreak{}interleaved", "d8-\\allowbreak{}half", "d5-\\allowbreak{}interleaved", "d5-\\allowbreak{}half"):
        assert name in entry
    assert "pair $i$ at coordinates $2 i$ and" in entry and "pair $i$ at coordinates $i$ and $i + d/2$" in entry
    assert "\\quad" not in entry and entry.count("&=") == 1


# item 16: the course's rows of the encoding print the text's formula; omega_1 as the power of ten it is
def test_16_course_rows_print_their_formula(identities):
    def entry(name):
        head = "\\paragraph{\\texttt{" + "-\\allowbreak{}".join(name.split("-")) + "}}"
        part = identities[identities.index(head):]
        return re.split(r"\n\\paragraph|\\begin\{table\}", part[1:])[0]

    p0, p3 = entry("pe-p0"), entry("pe-p3-printed")
    assert "Both sides evaluate" not in p0 and "\\sin(0 {\\omega}_{0})" in p0
    assert "10^{\\frac{2}{5}}" not in p3 and "\\sin(3 {\\omega}_{1})" in p3
    assert re.search(r"\{\\omega\}_\{1\}\s*&= 10\^\{- \\frac\{8\}\{5\}\}", p3) and "0.0251" in p3


# item 4: the column err / tol follows its legend
def test_4_ratio_column_follows_its_legend():
    from types import SimpleNamespace

    from seqgrad.crosscheck.latex_parts import ratio_tex, tolerance_words
    from seqgrad.derive.latex_settings import Notation

    n = Notation()
    proof = SimpleNamespace(units=None, max_abs_error=0.0, tol_ratio=0.0, device="cpu")  # gated.fact.sigmoid_prime_max
    compared = SimpleNamespace(units=None, max_abs_error=5.6e-17, tol_ratio=None, device="cpu")  # gru_mixing_example
    printed = SimpleNamespace(units=0.4993, max_abs_error=4.8e-3, tol_ratio=None, device="cpu")  # encoder.course_tables
    assert ratio_tex(proof, n) == "--"
    assert ratio_tex(compared, n) == "$\\leq$ $5.6 \\cdot 10^{-7}$"
    assert ratio_tex(printed, n) == "$1.0$"
    words = tolerance_words("cpu", n)
    assert "A dash: the check is exact" in words and "$\\leq$: the check reports its error only" in words


# item 5: a truncated printed number is an erratum; the heading of the others is true of each of them
def test_5_truncated_is_an_erratum_and_the_heading_is_true(appendix):
    errata = appendix[appendix.index("\\subsection*{Errata: printed numbers"):appendix.index("\\subsection*{Printed numbers that")]
    working = appendix[appendix.index("\\subsection*{Printed numbers that"):appendix.index("\\subsection*{Errata among")]
    assert "pe\\_\\allowbreak{}d4\\_\\allowbreak{}pos1" in errata and "pe\\_\\allowbreak{}d4\\_\\allowbreak{}pos1" not in working
    heading = working[:working.index("\\begin{itemize}")]
    assert "$0.0371$, $0.0741$ and $-0.3502$ are right at the printed digits" in heading
    assert "$4.4420$ follows from intermediate values the text rounded" in heading
    assert "cut off" not in heading


# item 25: each gated cell's checks cite their own cell's section
def test_25_cell_checks_cite_their_own_cell():
    from seqgrad.crosscheck.registry import all_checks

    for c in all_checks("gated.derived_*"):
        own, other = ("GRU", "LSTM") if "_gru_" in c.name else ("LSTM", "GRU")
        assert f"§{own}" in str(c.source) and f"§{other}" not in str(c.source), (c.name, c.source)


# items 17, 27: the causal gradients say why they equal the unmasked ones; the norm and the wavelengths worded right
def test_17_27_catalogue_wording(identities):
    assert "a masked $A_{ts} = 0$, so $\\mathrm{d}S_{ts} = 0$" in identities
    assert "so the norm is $\\sqrt{m}$" in identities
    assert "the longest tends to $20000 \\pi$ as $d$ grows" in identities and "the longest as" not in identities


# item 17: a counterexample entry shows the counterexample it found (unless its heading states it already)
def test_17_counterexamples_are_shown(identities):
    for name in ("positions", "causal"):
        head = "\\paragraph{\\texttt{attention-\\allowbreak{}equivariance-\\allowbreak{}fails-\\allowbreak{}" + name + "}}"
        line = identities[identities.index(head):].split("\n")[0]
        assert re.search(r"At the point found, for the permutation \(2, 0, 1\) the two sides differ by up to \d", line), line
    unpaired = identities[identities.index("\\paragraph{\\texttt{pe-\\allowbreak{}unpaired"):].split("\n")[0]
    assert "At the point found" not in unpaired and unpaired.count("\\sin(\\omega_{2}) > 0") == 1
