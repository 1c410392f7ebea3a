"""Issue 25: the body items a lecturer marked in the standalone handout, each guarded where its text is made.

The path bound's step from the slope of tanh to the factor's bound, the decoder's causality said as what was done
(a structural check at one T, not a proof for every T), Table 3's sums said to be of the unrounded terms, the LSTM's
partial dc_1/dc_0 at fixed h_0 beside the total, head 1's weights said (and computed) on H_0, the three residual
connections defined before their Jacobians, the depth figure's text as numeric/depth.py sets the study up, and the
equivariance counterexamples' sizes said of the weights and of the outputs apart.
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


def test_the_decoder_proves_its_causality_for_every_length_and_says_what_was_checked(tmp_path):
    """A lecturer's review: "shown for T = 4 ..., not proved for every T" read as a test log.  The claim for every T
    is now argued map by map (the mask, the cross-attention's own row, the row-wise maps, composition); the symbolic
    block at T = 4 and the numeric decoder are what confirms it, said as such."""
    body = _flat(notes.decoder_section(_build(tmp_path)).body)
    T = decoder.DecoderBlock().T
    assert all(decoder.DecoderBlock(T=T, norm_first=nf).causal_proof()[0] for nf in (True, False))
    assert "(output row $t$ depends on no target row $j > t$, for every $T$)" in body
    why = body[body.index("This holds for every $T$:"):]
    why = why[:why.index("Without the mask")]
    for step in ("the causal mask makes the weight of row $t$ on every row $j > t$ zero", "act on each row alone",
                 "so does their composition", f"shown entry by entry in the symbolic block at $T = {T}$"):  # a footnote's remark
        assert step in why, step
    assert "not proved for every $T$" not in body and "proved for pre- and post-norm" not in body
    # teacher forcing is not generation: the mask makes the one pass equal to the prefix-by-prefix computation
    assert "equal to generating it token by token" not in body and "(teacher forcing)" in body
    # the maps are named once, the display says what each reads (no parenthetical that repeats it)
    assert "the attentions read" not in body and "for any rows $\\mathbf{X}$ of the target: " in body


def test_the_parameter_counts_give_the_layer_under_both_conventions(tmp_path):
    """A lecturer's review: 6 x 1053440 is not 6291456; the layer's weight matrices alone are counted too, and the
    stack is L of them."""
    body = _flat(notes.decoder_section(_build(tmp_path)).body)
    counts = body[body.index("\\paragraph{Parameter counts.}"):]
    # the equations have no biases: the count says whose layer it counts, and where its biases are
    assert "One layer counted as PyTorch's decoder layer builds it: a bias on each of its projections" in counts
    weights = decoder.decoder_layer_params(256, 4, 1024, bias=False, norms=False)
    stack = decoder.task29()["decoder_stack"]
    assert 6 * weights == stack and f"\\lvert\\theta\\rvert_{{\\mathrm{{weights}}}} &= {weights}" in counts
    assert f"= {stack}" in counts and "L \\lvert\\theta\\rvert_{\\mathrm{weights}}" in counts


def test_table_3_says_its_sums_are_of_the_unrounded_terms_and_what_the_printed_terms_add_up_to(tmp_path):
    b = _build(tmp_path)
    body = _flat(notes.rnn_section(b).body)
    # the caption says what the table shows in one sentence (issue 25, figure review, item 3); the sentence after
    # the table says how its sums are made
    short = body[body.index(r"\caption{The three-step scalar RNN"):body.index(r"\label{tab:rnn-numbers}")]
    assert short.count(". ") == 0 and len(short.split()) <= 40 and "unrounded" not in short
    after = body[body.index(r"\end{table}", body.index(r"\label{tab:rnn-numbers}")):]
    caption = after[:after.index("\n\n") if "\n\n" in after else len(after)]
    assert "The last row of Table~\\ref{tab:rnn-numbers} sums the unrounded terms" in caption
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


def _attention_weights(X, W_Q, W_K):
    import numpy as np

    Q, K = X @ np.asarray(W_Q, float).T, X @ np.asarray(W_K, float).T
    S = Q @ K.T / np.sqrt(Q.shape[1])
    E = np.exp(S - S.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)


def test_head_1s_table_says_it_reads_h0_and_prints_head_1_on_h0(tmp_path):
    import numpy as np

    from seqgrad.numeric import course

    b = _build(tmp_path)
    body = _flat(notes.encoder_section(b).body)
    caption = body[body.index(r"\caption{The attention weights"):body.index(r"\label{tab:encoder-head1-A}")]
    assert r"head 1 applied to the input rows $\mathbf{H}_{0}$ directly" in caption
    assert r"not to the block's LayerNorm output $\mathbf{Y}_{\mathrm{att}}$" in caption
    assert r"on one head, head 1, applied to $\mathbf{H}_{0}$ itself, not to the block's LayerNorm output" in body
    # the printed rows are softmax(H_0 W_Q^T (H_0 W_K^T)^T / sqrt(d_k)), computed here from H_0 and head 1's weights
    H0 = np.asarray(course.trace("attention_on_H0")["H0"], float)
    on_H0 = _attention_weights(H0, course.HEAD1["W_Q"], course.HEAD1["W_K"])
    Y1 = (H0 - H0.mean(1, keepdims=True)) / np.sqrt(H0.var(1, keepdims=True) + 1e-5)
    on_Y1 = _attention_weights(Y1, course.HEAD1["W_Q"], course.HEAD1["W_K"])
    table = body[body.index(r"\label{tab:encoder-head1-A}"):]
    table = table[:table.index(r"\bottomrule")]
    printed = [[float(v) for v in re.findall(r"\$(-?[0-9.]+)\$", row)] for row in table.split(r"\\")
               if re.search(r"\d: \w+ &", row)]
    assert np.asarray(printed).shape == (7, 7)
    assert np.allclose(printed, on_H0, rtol=5e-3, atol=0)  # three significant figures
    assert not np.allclose(printed, on_Y1, rtol=5e-2, atol=0)  # the block's weights are other numbers


def test_head_1s_weights_are_printed_once_in_the_figure_where_the_notes_draw_it(tmp_path, monkeypatch):
    """A lecturer's review: Table 11 (the weights A of head 1 on H_0) stood right before Fig. 14, which writes the same
    weights in its cells, with other digits.  Where the notes draw Fig. 14 the table is gone and the text points to
    the figure alone; its cells give softmax(H_0 W_Q^T (H_0 W_K^T)^T / sqrt(d_k)) at three decimals, computed here
    from H_0 and head 1's weights (not the block's weights on its LayerNorm output).  A build without the figure (the
    handout draws only Fig. 15 of the set) keeps the table, and its text points to it."""
    import numpy as np

    from seqgrad.numeric import course
    from test_notes_figures import _drawn

    drawn = Build(notation=_build(tmp_path).notation, tex_dir=tmp_path, figures_dir=tmp_path / "figures", deferred=True)
    body = _flat(notes.encoder_section(drawn).body)
    assert "tab:encoder-head1-A" not in body and "as in the table" not in body
    assert r"Figure~\ref{fig:fig10_A} its weights, the softmax of each row" in body
    assert "not a step of the block's forward pass" in body
    without = _flat(notes.encoder_section(_build(tmp_path)).body)
    assert r"Table~\ref{tab:encoder-head1-A} gives its weights." in without and r"\label{tab:encoder-head1-A}" in without

    H0 = np.asarray(course.trace("attention_on_H0")["H0"], float)
    on_H0 = _attention_weights(H0, course.HEAD1["W_Q"], course.HEAD1["W_K"])
    Y1 = (H0 - H0.mean(1, keepdims=True)) / np.sqrt(H0.var(1, keepdims=True) + 1e-5)
    on_Y1 = _attention_weights(Y1, course.HEAD1["W_Q"], course.HEAD1["W_K"])
    fig = _drawn(monkeypatch, "encoder", "fig10_A", tmp_path / "drawn")
    [ax] = [a for a in fig.axes if a.texts]
    printed = np.zeros((7, 7))
    for text in ax.texts:
        j, i = (int(round(c)) for c in text.get_position())
        printed[i, j] = float(text.get_text())
    assert len(ax.texts) == 49 and np.allclose(printed, on_H0, rtol=0, atol=5e-4)  # three decimals
    assert not np.allclose(printed, on_Y1, rtol=0, atol=5e-3)


def test_the_residual_section_defines_the_three_connections_before_their_jacobians(tmp_path):
    body = _flat(notes.residual_section(_build(tmp_path)).body)
    out, x = r"\mathbf{x}_{\mathrm{out}}", r"\mathbf{x}"
    maps = [rf"{out} &= {x} + F{{({x})}}\quad \text{{  (plain)}}",
            rf"{out} &= {x} + F{{(\operatorname{{LN}}{{({x})}})}}\quad \text{{  (pre-norm)}}",
            rf"{out} &= \operatorname{{LN}}{{({x} + F{{({x})}})}}\quad \text{{  (post-norm)}}"]
    where = [body.index(_flat(m)) for m in maps]
    jacobian = body.index(r"\frac{\partial \mathbf{x}_{\mathrm{out}}}{\partial \mathbf{x}} &= \mathbf{I} + \mathbf{J}_{F}")
    assert where == sorted(where) and where[-1] < jacobian


def test_the_depth_pointers_stand_between_the_worked_examples_each_figure_after_its_own(tmp_path):
    """A lecturer's review: Figures 10 and 11 (the singular values of the depth Jacobian products) stood two pages
    past the paragraph that cites them, which followed the gradient profiles' on the page after Figure 7's.  The
    five depth figures are two pages of floats to about one of text, so their pointers are spread over the section:
    the pre-norm profile after Figure 7's paragraph, then one connection with numbers, the post-norm profile, the
    three layers' product and last the singular values of a whole stack's product, each figure right after its
    paragraph (tests/test_notes_floats.py checks the pages)."""
    drawn = Build(notation=_build(tmp_path).notation, tex_dir=tmp_path, figures_dir=tmp_path / "figures", deferred=True)
    body = _flat(notes.residual_section(drawn).body)
    pointer = lambda stem: body.index(r"Figure~\ref{fig:%s}" % stem)  # noqa: E731
    order = [pointer("gradient-near-output-vs-depth"), pointer("gradient-profile-pre-norm"),
             body.index("With numbers, one plain connection"), pointer("gradient-profile-post-norm"),
             body.index("Worked example, three residual layers"),
             pointer("jacobian-product-singular-values-pre-norm"), pointer("jacobian-product-singular-values-post-norm")]
    assert order == sorted(order)
    # the post-norm profile's pointer, away from the pre-norm one, says what it shows without "the same"
    assert r"Figure~\ref{fig:gradient-profile-post-norm} shows the gradient of every layer of post-norm stacks" in body
    # each figure's placeholder right after its own paragraph, before the next pointer
    marks = [body.index(f"%%seqgrad-figure depth/{stem} ") for stem in ("gradient-profile-pre-norm",
                                                                        "gradient-profile-post-norm")]
    assert order[1] < marks[0] < order[2] and order[3] < marks[1] < order[4]


def test_the_depth_figures_text_names_the_measured_weight_and_the_final_layernorm_the_code_has(standalone_notes):
    import torch

    from seqgrad.numeric import depth

    body = _flat(standalone_notes.read_text(encoding="utf-8").split("\\appendix")[0])
    said = body[body.index(r"Figure~\ref{fig:gradient-near-output-vs-depth} shows"):]
    said = said[:said.index("(Xiong et al.")]
    assert r"the gradient with respect to $\mathbf{W}_{2}$, the second weight matrix of the MLP of block $L$" in said
    assert "The pre-norm stack ends in a final LayerNorm after block $L$, the post-norm stack in block $L$'s own" in said
    # the code's setup: the measured gradient is of block L's second MLP matrix, and the pre-norm output passes a
    # LayerNorm after the last block (the post-norm output is the last block's)
    sizes = depth.Sizes()
    H0, W_read = depth.inputs(sizes, 0)
    for placement, final in (("pre-norm", True), ("post-norm", False)):
        blocks = depth.stack(3, placement, sizes, seed=0)
        H = H0
        for block in blocks:
            H = block(H)
        normed = torch.nn.functional.layer_norm(H, (H.shape[-1],))
        assert torch.allclose(depth.output(blocks, H0), normed if final else H)
        assert final == (not torch.allclose(H, normed, atol=1e-6))  # the pre-norm stack's last block is not normed
        grad, = torch.autograd.grad((W_read * depth.output(blocks, H0)).sum(), blocks[-1].mlp.W2)
        assert abs(depth.layer_gradient_norms(blocks, H0, W_read)[-1] - float(torch.linalg.norm(grad))) < 1e-9


def test_the_equivariance_counterexamples_say_which_quantity_differs_by_how_much(standalone_notes):
    from seqgrad.derive import attention

    tex = _flat(standalone_notes.read_text(encoding="utf-8"))
    for identity in (i for i in attention.identities() if i.name.startswith("attention-equivariance-fails-")):
        proof = identity.prove()
        found = re.search(r"differ by up to ([0-9.]+) in the weights A \(entry t = (\d), s = (\d)\) and by up to "
                          r"([0-9.]+) in the outputs O \(entry t = (\d), c = (\d)\)", proof.detail)
        assert found, proof.detail
        weights, outputs = float(found[1]), float(found[4])
        assert 0 < weights <= 1  # two attention weights, each in [0, 1], differ by at most 1
        assert abs(max(weights, outputs) - float(proof.residual)) < 5e-3 * float(proof.residual)
        said = (rf"differ by up to {found[1]} in the weights A (entry $t = {found[2]}$, $s = {found[3]}$) and by up to "
                rf"{found[4]} in the outputs O (entry $t = {found[5]}$, $c = {found[6]}$)")
        assert said in tex


def test_a_decimal_in_the_words_is_typeset_as_typed_inside_the_math(tmp_path):
    """A lecturer's review: "$w_h$ = 1.2" set the equals sign and the number outside math; inside a formula the safe
    parser read 1.2 as 6/5.  Now the relation is one formula and the decimal prints as typed."""
    from seqgrad.crosscheck.figures import paths
    from seqgrad.crosscheck.latex_parts import words

    assert words("`w_h = 1.2`, `x = 0.50`, `1.2**T`") == "$w_{h} = 1.2$, $x = 0.50$, ${1.2}^{T}$"
    caption = words(paths.CAPTIONS["fig3-right-tanh-sensitivity"])
    assert "$w_{h} = 1.2$" in caption and "$w_{h}$ = 1.2" not in caption


def test_the_encoder_example_says_which_tables_are_one_head_on_h0_and_which_are_the_block(tmp_path):
    """Issue 25, lecturer's figure review, item 5: "The forward pass, in three tables" presented head 1 applied to H_0
    as part of the block's forward pass.  Head 1 on H_0 is said to be the course's attention example, one head, not a
    step of the block; the block's output is said to be the block's; every figure computed from head 1 on H_0 names
    head 1 and H_0 in its caption."""
    from seqgrad.crosscheck.figures import encoder

    b = _build(tmp_path)
    body = _flat(notes.encoder_section(b).body)
    assert "The forward pass, in three tables" not in body
    block = body.index("The block's forward pass itself")
    # under a heading of its own, so that the switch from the block to one head on H_0 is announced
    example = body.index("\\subsection{The course's attention example: one head on the input rows}")
    assert "on one head, head 1, applied to $\\mathbf{H}_{0}$ itself" in body[example:]
    # the block's output and backward pass first, then the one-head example closes the section (in the middle of it,
    # its table and three figures ran up to three pages past the paragraph that cites them)
    assert block < body.index(r"\label{tab:encoder-H_enc}") < body.index(r"\label{tab:encoder-dH}") < example
    assert example < body.index(r"\label{tab:encoder-head1-A}")
    assert "not a step of the block's forward pass" in body[example:]
    for stem in notes.ENCODER_HEAD_FIGURES + ("fig11_A_causal",):
        caption = encoder.CAPTIONS[stem]
        assert re.search(r"[Hh]ead 1", caption) and "`H_0`" in caption, stem
