"""Issue 25: the body items a lecturer marked in the standalone handout, each guarded where its text is made.

The path bound's step from the slope of tanh to the factor's bound, the decoder's causality said as what was done
(a structural check at one T, not a proof for every T), and Table 3's sums said to be of the unrounded terms.
"""

from __future__ import annotations

import re

import sympy as sp

from seqgrad.crosscheck import notes, worked_numbers
from seqgrad.crosscheck.latexdoc import NOTES_LETTERS
from seqgrad.crosscheck.latex_parts import Build
from seqgrad.derive import decoder
from seqgrad.derive.latex_settings import DEFAULT


def _build(tmp_path):
    notation = DEFAULT.replace(letters={**DEFAULT.letters, **NOTES_LETTERS})
    return Build(notation=notation, tex_dir=tmp_path, figures_dir=None)


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_the_path_bound_goes_from_the_slope_to_the_factor_before_assuming_rho(tmp_path):
    body = _flat(notes.paths_section(_build(tmp_path)).body)
    assert "the gradient that step $t$ sends back" in body and "gradient step $t$ sends" not in body
    # the conclusion of 'slope at most 1' is the factor's bound; the bound rho is an assumption after it
    said = body.index(r"tanh has slope at most 1, hence $\left|{J_{j}}\right| \leq \left|{w_{h}}\right|$")
    assert body.index("If every factor has absolute value", said) > said
    assert "So when every factor" not in body


def test_the_decoder_says_its_causality_was_shown_at_one_size_not_proved(tmp_path):
    body = _flat(notes.decoder_section(_build(tmp_path)).body)
    T = decoder.DecoderBlock().T
    assert all(decoder.DecoderBlock(T=T, norm_first=nf).causal_proof()[0] for nf in (True, False))
    assert f"shown for $T = {T}$ target rows, pre- and post-norm" in body and "not proved for every $T$" in body
    assert "proved for pre- and post-norm" not in body


def test_table_3_says_its_sums_are_of_the_unrounded_terms_and_what_the_printed_terms_add_up_to(tmp_path):
    b = _build(tmp_path)
    body = _flat(notes.rnn_section(b).body)
    caption = body[body.index(r"\caption{The three-step scalar RNN"):body.index(r"\label{tab:rnn-numbers}")]
    assert "the last row sums the unrounded terms" in caption
    ex = worked_numbers.rnn_example()
    mismatched = 0
    for i in sorted(ex.terms):
        column = ex.column(i)
        # the printed terms, as the table prints them, added up by hand
        printed = sum(sp.Rational(str(worked_numbers.as_figures(v, b.digits))) for v in column)
        total = worked_numbers.as_figures(sum(column), b.digits)
        name = notes._inline(ex.columns[i], b)
        if printed != sp.Rational(str(total)):
            mismatched += 1
            assert f"the printed terms of {name} add up to ${worked_numbers.as_figures(float(printed), b.digits)}$" in caption
        else:
            assert f"the printed terms of {name}" not in caption
    assert mismatched  # the course's values: both columns' printed terms miss the printed sum by one in the last digit
    assert "each term rounded to its printed digits" in caption


def test_the_lstm_example_states_its_fixed_h0_and_gives_the_total_derivative(tmp_path):
    from seqgrad.derive import gated

    body = _flat(notes.gates_section(_build(tmp_path)).body)
    assert "with respect to $c_{0}$ at fixed $h_{0}$ is the carry path alone" in body
    assert r"through $h_{0} = o_{0} \tanh(c_{0})$; the total derivative" in body
    net = gated.lstm(steps=2)
    c0 = net.c[0]
    # c_1 as a function of c_0 alone: step 1's definitions and h_0 = o_0 tanh(c_0) substituted, latest first
    forward = [d for d in net.program.definitions("forward") if d.step == 1 or d.target == net.h[0]]
    defs = {d.target: d.value for d in forward}
    upto = forward[:[d.target for d in forward].index(net.c[1]) + 1]
    c1 = defs[net.c[1]]
    for d in reversed(upto[:-1]):
        c1 = c1.xreplace({d.target: d.value})
    total = notes.lstm_total_derivative(net, net.step_jacobian(1, wrt="c").full)
    for d in reversed(upto[:-1]):
        total = total.xreplace({d.target: d.value})
    carry = net.step_jacobian(1, wrt="c").full
    for d in reversed(upto[:-1]):
        carry = carry.xreplace({d.target: d.value})
    point = {s_: sp.Rational(3 * k % 7 - 3, 4) for k, s_ in enumerate(sorted(c1.free_symbols, key=str), start=1)}
    exact = float(sp.diff(c1, c0).xreplace(point))
    assert abs(exact - float(total.xreplace(point))) < 1e-12
    assert abs(exact - float(carry.xreplace(point))) > 1e-3  # the carry alone is not the total here
