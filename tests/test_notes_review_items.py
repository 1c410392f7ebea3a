"""Issue 25, a lecturer's review of the chapter (stop 38): one test per item fixed, each reading the built handout
(``standalone_notes``) and failing on the text before the fix."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def body(standalone_notes):
    source = standalone_notes.read_text(encoding="utf-8")
    return source[:source.index("\\appendix")]


def _section(body: str, label: str) -> str:
    start = body.index(f"\\label{{sec:{label}}}")
    end = body.find("\\section", start)
    return body[start:end if end > 0 else len(body)]


def test_the_receptive_field_of_three_layers_is_written_layer_by_layer(body):
    """rf_3 printed as Delta_1 (K_2 - 1) + Delta_1 Delta_2 (K_3 - 1) + K_1: the stride s was ordered as a state s, before
    the first layer's kernel.  The sum now runs layer by layer, the first layer's term first."""
    import sympy as sp

    from seqgrad.derive import conv as dc

    conv = _section(body, "conv")
    line = next(row for row in conv.splitlines() if row.startswith("\\mathrm{rf}_{3}") or row.startswith("rf_{3}"))
    terms = line.split("&=")[1].strip().rstrip("\\").split(" + ")
    assert len(terms) == 3 and "-" not in terms[0], line  # K_1, then Delta_1 (K_2 - 1), then Delta_1 Delta_2 (K_3 - 1)
    assert "_{3}" in terms[2] and "_{2}" in terms[1] and "_{1}" in terms[0], line
    k, s = sp.symbols("k_1:4", positive=True, integer=True), sp.symbols("s_1:4", positive=True, integer=True)
    assert dc.receptive_field(k, s) == k[0] + s[0] * (k[1] - 1) + s[0] * s[1] * (k[2] - 1)


def test_an_entry_of_a_matrix_with_a_subscript_is_bracketed(body):
    """Max-pooling printed {X_{in}}_{xi + i Delta, ...}, which reads as one subscript "in xi + i Delta"; an entry of a
    matrix whose name has a subscript of its own is now (X_in)_{...}."""
    import sympy as sp

    from seqgrad.derive.latex_settings import DEFAULT

    conv = _section(body, "conv")
    pooling = conv[conv.index("\\paragraph{Max-pooling.}"):]
    assert "}}_{" not in pooling.replace("\\mathrm{in}}}_{", "!"), pooling  # no {X_{in}}_{..} left
    assert "\\mathrm{in}}\\right)_{" in pooling or "\\mathrm{in}})_{" in pooling, pooling
    i, j = sp.symbols("i j", integer=True)
    assert DEFAULT.latex(sp.IndexedBase("X_in")[i, j]).startswith("(X_{\\mathrm{in}})_{") or \
        DEFAULT.latex(sp.IndexedBase("X_in")[i, j]).startswith("\\left(X_{\\mathrm{in}}\\right)_{")
    assert DEFAULT.latex(sp.IndexedBase("X")[i, j]) == "{X}_{i,j}"  # a plain name keeps its one subscript


def test_the_last_output_loss_is_said_as_dropping_terms(body):
    """"the course's loss on the last output only is the case e_t = 0 for t < T - 1" said that a model's error is 0;
    the loss on the last output drops those terms."""
    rnn = _section(body, "rnn")
    assert "is the case" not in rnn and "drop the terms of the steps" in rnn


def test_the_scaled_score_has_variance_one(body):
    attention = _section(body, "attention")
    assert "so the scaled score has variance 1" in attention


def test_the_notation_table_defines_each_parameter_count(standalone_notes):
    """The table gave |theta|_layer "with the subscript stack, of a stack of L layers", which read as L |theta|_layer,
    while the body counts the stack's weight matrices only, L |theta|_weights, and |theta|_weights was not defined."""
    source = standalone_notes.read_text(encoding="utf-8")
    table = source[source.index("\\label{sec:notation}"):source.index("\\label{sec:rnn}")]
    rows = {line.split(" & ")[0]: line for line in table.splitlines() if line.count(" & ") == 2}
    for which in ("layer", "weights", "stack"):
        assert f"$\\lvert\\theta\\rvert_{{\\mathrm{{{which}}}}}$" in rows, which
    assert "subscript stack" not in table
    assert "no biases, no LayerNorms" in rows["$\\lvert\\theta\\rvert_{\\mathrm{weights}}$"]


def test_the_lstm_total_derivative_is_named_and_starts_from_the_carry(body):
    """The display's left side was the chain itself, dc_1/dh_0 dh_0/dc_0 + f_1 = ...: the total derivative is now named
    (with the curly d of every derivative; the partial one at fixed h_0 carries a subscript) and written carry first, f_1 + (dc_1/dh_0)(dh_0/dc_0), then expanded, the carry first again."""
    gates = _section(body, "gates")
    start = gates.index("\\frac{\\partial c_{1}}{\\partial c_{0}} &= f_{1} + \\frac{\\partial c_{1}}{\\partial h_{0}}")
    display = gates[start:gates.index("\\end{align*}", start)]
    assert display.splitlines()[1].lstrip().startswith("&= f_{1} + ")


def test_the_total_derivative_is_the_derivative_along_every_path():
    import sympy as sp

    from seqgrad.crosscheck import notes
    from seqgrad.derive import gated

    net = gated.lstm(steps=2)
    total = notes.lstm_total_derivative(net, net.step_jacobian(1, wrt="c").carry)
    c0, h0 = net.c[0], net.h[0]
    lines = list(net.program)
    o0 = next(d.target for d in lines if str(d.target) == "o_0")
    order = [d.target for d in lines]
    step1 = {d.target: d.value for d in lines[order.index(h0) + 1:order.index(net.c[1])]}  # step 1's gates, candidate
    # c_1 as a function of c_0 along both paths: its own line, step 1's gates written out, h_0 = o_0 tanh(c_0)
    full = net.program[net.c[1]].value
    for _ in range(4):
        full = full.xreplace(step1)
    full = full.xreplace({h0: o0 * sp.tanh(c0)})
    params = sorted(full.free_symbols - {c0, o0}, key=str)
    point = {s: sp.Rational(k % 5 + 1, 9) * (-1) ** k for k, s in enumerate(params)}
    point.update({c0: sp.Rational(3, 7), o0: sp.Rational(5, 8)})
    exact = sp.diff(full, c0).subs(point)
    values = {}  # step 1's quantities at the point, to evaluate the printed form, which names them
    for target, value in step1.items():
        values[target] = value.xreplace({h0: o0 * sp.tanh(c0)}).subs(values).subs(point)
    printed = total.subs(values).subs(point)
    assert abs(float((printed - exact).evalf(30))) < 1e-20, (printed.evalf(), exact.evalf())
    assert abs(float(exact.evalf())) > 1e-3


def test_captions_set_the_matrices_they_name_in_bold(standalone_notes):
    """The captions wrote E_seq, P, H_0, S, A (encoder) and J_l (depth) in italic, where the displays set every
    matrix in bold; a figure set's MATRICES are now bold in its captions."""
    import re

    from seqgrad.crosscheck.figures import depth, encoder

    source = standalone_notes.read_text(encoding="utf-8")
    captions = re.findall(r"\\caption\{(.*?)\}\\label\{fig:([\w-]+)\}", source)
    read = 0
    for caption, stem in captions:
        for figure_set, letters in ((encoder, {"E_seq": "E", "H_0": "H", "S": "S", "A": "A"}), (depth, {"J_l": "J"})):
            if stem in figure_set.CAPTIONS:
                for name, letter in letters.items():
                    if f"`{name}`" in figure_set.CAPTIONS[stem]:
                        read += 1
                        assert f"\\mathbf{{{letter}}}" in caption and not re.search(rf"\$(?<!\\mathbf\{{){letter}_", caption.replace(f"\\mathbf{{{letter}}}", "")), (stem, caption[:160])
    assert read >= 1, "the handout shows a figure whose caption names a matrix"
    # the encoder's figures are in the chapter, not the handout: their captions as the build words them
    from seqgrad.crosscheck.latex_parts import figure_caption, matrices, words
    from seqgrad.derive.latex_settings import DEFAULT

    said = words(figure_caption(encoder, "fig09_S"), matrices(DEFAULT, set(encoder.MATRICES)))
    assert "\\mathbf{S}" in said and "\\mathbf{H}_{0}" in said, said


def test_the_receptive_field_is_argued_in_two_plain_steps(body):
    """"One step down the stack widens the field by K_l - 1 steps of layer l - 1, and one such step is the product
    of the strides below it" was hard to follow: the two facts are said one at a time."""
    conv = _section(body, "conv")
    field = conv[conv.index("\\paragraph{Receptive field.}"):]
    assert "One step down the stack" not in conv
    assert "neighbouring positions of its input" in field and "multiply to" in field


def test_the_gru_example_says_its_rest_is_rounded_apart(body):
    """0.730 - 0.507 = 0.223, but the rest printed 0.222: the text now says each is rounded from its own value."""
    from seqgrad.crosscheck import notes, worked_numbers
    from seqgrad.crosscheck.latex_parts import Build
    from seqgrad.derive.latex_settings import DEFAULT

    ex = worked_numbers.gru_example()
    figures = lambda x: notes._as_figures(x, Build(notation=DEFAULT, tex_dir=None, figures_dir=None))  # noqa: E731
    gates = _section(body, "gates")
    said = "each rounded from its own unrounded value" in gates
    assert said == notes._rounded_apart(ex, figures)
    assert said  # at the course's values the printed numbers do differ


def test_the_decoder_backward_pass_passes_through_the_mlps_hidden_layer(body):
    """The decoder's backward display went from dB_mlp = dH' to dY_mlp = dZ_mlp W_1 without defining dZ_mlp."""
    from seqgrad.derive import blocks

    assert blocks.DECODER_SUBLAYER_LINES[:4] == ("dB_mlp", "dPhi_mlp", "dZ_mlp", "dY_mlp")


def test_a_mark_of_its_own_has_a_subject():
    from seqgrad.crosscheck import notes
    from seqgrad.crosscheck.latex_parts import Build
    from seqgrad.crosscheck.registry import Result
    from seqgrad.derive.latex_settings import DEFAULT

    b = Build(notation=DEFAULT, tex_dir=None, figures_dir=None, appendix=True)
    plain = Result("x", "week06 §Paths:188", "rnn", "pass", True, 1e-15, 1e-15, "cpu", "float64", "", 0.0)
    mark = notes.verification(b, checks=[plain])
    assert mark.startswith("\\footnote{These results are checked numerically"), mark
