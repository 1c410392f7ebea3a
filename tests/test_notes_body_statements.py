"""Statements of the handout's body a lecturer found false or misleading (issue 25, review A items 1, 2, 6, 7, 9, 10),
each checked where its text is made; the figure captions against the data they describe."""

from __future__ import annotations

import re

import sympy as sp

from seqgrad.crosscheck import notes
from seqgrad.crosscheck.latexdoc import NOTES_LETTERS
from seqgrad.crosscheck.latex_parts import Build
from seqgrad.derive.latex_settings import DEFAULT


def _build(tmp_path):
    notation = DEFAULT.replace(letters={**DEFAULT.letters, **NOTES_LETTERS})
    return Build(notation=notation, tex_dir=tmp_path, figures_dir=None)


def test_post_norm_is_not_said_to_keep_a_bare_identity_path(tmp_path):
    body = notes.residual_section(_build(tmp_path)).body
    assert "always carries the gradient unchanged" not in body
    assert "post-norm connection every path" in body and "the shortcut included" in body


def test_the_shift_is_a_linear_map_for_even_widths_and_on_the_pairs_only_for_odd(tmp_path):
    body = notes.positional_section(_build(tmp_path)).body
    assert "for every width and every pair" not in body
    assert "for an even width" in body and "paired coordinates only" in body


def test_conv_states_the_strided_input_gradient_and_no_audit_sizes(tmp_path):
    body = notes.conv_section(_build(tmp_path)).body
    assert "checked at concrete sizes" not in body and "at one size" not in body
    assert "torch.nn" not in body
    assert "lie in no window" in body and "dilated" in body


def test_the_stack_count_says_what_it_counts_and_gives_its_formula(tmp_path):
    from seqgrad.derive import decoder as dd
    from seqgrad.derive.counting import LAYERS

    body = notes.decoder_section(_build(tmp_path)).body
    assert "(weight matrices only: no biases, no LayerNorms)" in body  # the general display, not only the paragraph
    d, h, f = sp.symbols("d_model n_head d_ff")
    general = dd.decoder_stack_params(LAYERS, d_model=d, heads=h, d_ff=f, bias=False, norms=False)
    # the general count gives the stack's number at the example's sizes: the two displays agree
    assert general.subs({LAYERS: 6, d: 256, h: 4, f: 1024}) == dd.task29()["decoder_stack"] == 6291456


def test_the_receptive_field_caption_is_true_of_the_drawn_data():
    from seqgrad.crosscheck.figures import conv
    from seqgrad.derive.conv import receptive_field

    caption = conv.CAPTIONS["conv_receptive_field"]
    assert "agree at every depth" not in caption and "black bar" in caption
    for strides, width in (([1, 1, 1], 7), ([2, 2, 1], 15)):
        reads = conv.influence([3, 3, 3], strides)
        assert int(reads[0].max() - reads[0].min() + 1) == width == int(receptive_field([3, 3, 3], strides))
        assert f"{width} input positions" in caption or f"and {width} at strides" in caption
    assert "`7 = " not in caption  # a sum of numbers in backquotes is printed evaluated, "7 = 7"


def test_the_cross_attention_caption_does_not_describe_a_causal_mask():
    from seqgrad.crosscheck.figures import decoder

    caption = decoder.CAPTIONS["decoder_cross_attention"]
    assert "positions 0 to t" not in caption
    assert "all source words" in caption and "i, love, ml" in caption
    assert not re.search("[\u0400-\u04ff]", caption)  # the notes' caption font has no Cyrillic: transliterated


def test_the_gated_weight_gradients_are_set_two_a_line(tmp_path):
    """Review A item 18: the GRU's and LSTM's ~28 one-line sums over t filled pages in one narrow column; the short
    ones now stand two a line (each column aligned at its '='), a long one on a line of its own."""
    body = notes.gates_section(_build(tmp_path)).body
    lines = [line for line in body.splitlines() if "\\sum_{t=0}^{T - 1}" in line and "\\partial w_{x" in line]
    # two a line for the GRU (w_x, w_h; b_x, b_h), three for the LSTM (one gate's w_x, w_h, b)
    assert lines and all(line.count("&=") in (2, 3) for line in lines) and any(line.count("&=") == 3 for line in lines)
    gradients = sum(line.count("\\partial \\mathcal{L}}{\\partial w_{") for line in body.splitlines())
    assert gradients >= 12  # every weight's gradient is still there (GRU: 6, LSTM: 8)


def test_no_lead_in_is_a_paragraph_apart_from_its_display(standalone_notes):
    """Review items A17, B23: a sentence ending in a colon was left at a page's foot with its formula on the next
    page; set in one paragraph with its display, TeX cannot break between them."""
    body = standalone_notes.read_text(encoding="utf-8").split("\\appendix")[0]
    assert not re.search(r":(\\footnote\{[^{}]*(\{[^{}]*\}[^{}]*)*\})?\n\n\\begin\{align\*\}", body)
    assert body.count(":\n\\begin{align*}") >= 20


def test_the_gated_cells_state_their_zero_initial_states(tmp_path):
    """Third review, item 8: the displays drop the zero initial state, so the text says it (c_{-1} was never given)."""
    body = notes.gates_section(_build(tmp_path)).body
    assert "h_{-1} = 0" in body and "c_{-1} = 0" in body
