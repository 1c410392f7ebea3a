"""Issue 25, third review (pages 26-50, /tmp review B): the appendix's wrong or contradictory content.

Each test builds the appendix of two sections (decoder, convolution: no figures, so it is fast) or asks the printing
function itself, and fails on the output before the item was fixed.
"""

from __future__ import annotations

import re

import pytest

from test_latex_notes import body_and_appendix


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
@pytest.mark.parametrize("name, lhs", [("conv-weight-sharing-gradient", r"\frac{\partial \mathcal{L}}{\partial {\kappa}_{u,v}}"),
                                       ("conv-input-gradient-full-correlation", r"\frac{\partial \mathcal{L}}{\partial {X}_{m,n}}")])
def test_1_conv_identities_have_a_left_hand_side(appendix, name, lhs):
    entry = _paragraph(appendix, name)
    assert "the left-hand side is the stated right-hand side" not in entry
    assert re.search(re.escape(lhs) + r"\s*(&\s*)?=", entry), entry


# item 2: the stack's count is a formula, L (8 d^2 + 2 d d_ff) without biases or LayerNorms, and its value a product
def test_2_decoder_stack_count_is_printed_as_its_formula(appendix):
    entry = _paragraph(appendix, "count-decoder-layer")
    assert re.search(r"\\lvert\\theta\\rvert_\{\\mathrm\{stack\}\}\s*&= L \(2 d_\{\\mathrm\{ff\}\} d_\{\\mathrm\{model\}\} \+ "
                     r"8 d_\{\\mathrm\{model\}\}\^\{2\}\)|\\lvert\\theta\\rvert_\{\\mathrm\{stack\}\}\s*&= L \(2 d_\{ff\} "
                     r"d_\{model\} \+ 8 d_\{model\}\^\{2\}\)", entry), entry
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
    assert len(ffn) == 1 and "LN o FNN alone is another function" in ffn[0].precise, ffn
    assert "MH o Attn alone" not in ffn[0].precise


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
