"""Issue 25, the errata a lecturer found in the rendered handout of ``seqgrad latex notes.tex --standalone``.

Each test reads the text where it is made (the section builders of ``crosscheck.notes`` and
``crosscheck.latex_decoder_conv``, the figure captions, the catalogue), fails on the old wording, and where the
text states a fact, checks the fact: the single-head block's d_v = d in the program, the head-count assumption of the
parameter counts, the sign changes of PE coordinate 0, the convolution's padded-input gradient against torch
autograd, the vanishing t = 0 term of the three-step dL/dw_h.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import sympy as sp

from seqgrad.crosscheck import notes
from seqgrad.crosscheck.latex_parts import Build
from seqgrad.crosscheck.latexdoc import NOTES_LETTERS, NOTES_MATRICES
from seqgrad.derive.latex_settings import DEFAULT


def _build(tmp_path):
    notation = DEFAULT.replace(letters={**DEFAULT.letters, **NOTES_LETTERS}, vectors=DEFAULT.vectors | NOTES_MATRICES)
    return Build(notation=notation, tex_dir=tmp_path, figures_dir=None)


def _footnote_after(body: str, words: str) -> str:
    """The footnote that follows the sentence starting with ``words``."""
    start = body.index(words)
    at = body.index("\\footnote{", start)
    return body[at:body.index("}.}", at) + 3]


def test_1_the_single_head_block_states_dv_equals_d_and_its_proof_scope(tmp_path):
    from seqgrad.derive import blocks, catalogue

    body = notes.encoder_section(_build(tmp_path)).body
    intro = body[:body.index("\\begin{align*}")]
    assert r"for every $T$, $d$, $d_{k}$:" not in intro  # the old text: U = H + O for every d_v
    assert r"value width $d_{v} = d$" in intro and r"$T \times d_{v}$" in intro and r"$T \times d$" in intro
    assert re.search(r"\\mathbf\{U\} +&= \\mathbf\{H\} \+ \\mathbf\{O\}", body)  # aligned by the longest name
    mark = _footnote_after(body, "Backwards, the residual shows in")
    assert r"d_{k}, d_{v} \geq 1" not in mark and r"These results are proved for every $T, d, d_{k} \geq 1$, one head with $d_{v} = d$" in mark
    # what was proved: the program of one head has d_v = d (whatever d_v is asked for), so U = H + O is well-formed
    block = blocks.block_program("pre-norm", d_v_=7)
    T, d, d_k, d_v = block.sizes
    assert d_v == d and block.program["U"].value.shape == (T, d)
    for placement in ("pre-norm", "post-norm"):
        assert catalogue.get(f"residual-{placement}-block-program").scope == "all T, d, d_k >= 1, one head with d_v = d"


def test_2_the_worked_example_gives_gamma_and_beta_their_row_shape(tmp_path):
    body = notes.encoder_section(_build(tmp_path)).body
    example = body[body.index("The course encodes the phrase"):]
    example = example[:example.index("\\footnote")]
    assert r"\boldsymbol{\gamma} = \mathbf{1}^{\top}" not in example  # 1 is the T x 1 column of the notation table
    assert (r"scale $\boldsymbol{\gamma}$ a row of ones and shift $\boldsymbol{\beta}$ a row of zeros (each $1 \times d$)"
            in example)


def test_3_the_parameter_counts_state_the_head_width_assumption(tmp_path):
    from seqgrad.crosscheck import latex_decoder_conv
    from seqgrad.derive import counting
    from seqgrad.numeric import course

    body = latex_decoder_conv.decoder_body(_build(tmp_path), "")
    counts = body[body.index("\\paragraph{Parameter counts.}"):body.index("\\begin{align*}", body.index("Parameter counts"))]
    assert "(the count does not depend on the number of heads)" not in counts
    # the model width is d, in the counts as everywhere in the notes (derive.decoder's d_model)
    assert r"$d_{k} = d_{v} = d/n_{\mathrm{head}}$" in counts and r"are $d$ wide" in counts
    assert r"are 6 wide side by side ($n_{\mathrm{head}} = 2, d_{v} = 3$), not $d = 5$" in counts and r"\ref{sec:encoder}" in counts
    # the facts: with d_k = d_v = d_model / h the count is the same for every h; the course's widths are 2 * 3 != 5
    assert len({counting.attention_params(256, h) for h in (1, 2, 4, 8, 16)}) == 1
    assert len(course.attention().heads) * len(course.HEAD1["W_V"]) == 6 != len(course.E_VOCAB[0]) == 5
    assert counting.attention_params(5, 2, d_k=3, d_v=3) != counting.attention_params(5, 1, d_k=3, d_v=3)


def test_4_the_vector_recursion_says_gz_T_is_zero_where_it_is_stated(tmp_path):
    body = notes.rnn_section(_build(tmp_path)).body
    recursion = r"\mathbf{g}^{h}_{t}                                   &= \mathbf{e}_{t} \mathbf{W}_{y} + \mathbf{g}^{z}_{t+1} \mathbf{W}_{h}"
    assert recursion in body
    said = body.index(r"Backwards, with $\mathbf{g}^{z}_{T} = \mathbf{0}$")
    between = body[said:body.index(recursion)]  # the sentence, then the display that holds the recursion
    assert between.count("\\begin{align*}") == 1 and r"$\mathbf{e}_{T-1} \mathbf{W}_{y}$" in between


def test_4_with_gz_T_zero_the_recursion_gives_autograds_last_state_gradient():
    """The vector cell with a loss at every step (as the notes write it): dL/dh_{T-1} = e_{T-1} W_o, the recursion
    g^h_t = e_t W_o + g^z_{t+1} W_h at t = T - 1 with g^z_T = 0; and one step earlier the recursion itself."""
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(25)
    T, D, H, C = 3, 2, 3, 2
    W_x, W_h, W_o = (torch.randn(*s, generator=g, dtype=torch.float64) for s in ((H, D), (H, H), (C, H)))
    b_h, b_o = torch.randn(H, generator=g, dtype=torch.float64), torch.randn(C, generator=g, dtype=torch.float64)
    W_h.requires_grad_(True)  # so that every state is on the tape
    x, y = torch.randn(T, D, generator=g, dtype=torch.float64), torch.randn(T, C, generator=g, dtype=torch.float64)
    h, hs, zs, es, loss = torch.zeros(H, dtype=torch.float64), [], [], [], 0
    for t in range(T):
        z = x[t] @ W_x.T + h @ W_h.T + b_h
        h = torch.tanh(z)
        h.retain_grad()
        z.retain_grad()
        e = h @ W_o.T + b_o - y[t]
        hs.append(h), zs.append(z), es.append(e.detach())
        loss = loss + (e ** 2).sum() / 2
    loss.backward()
    torch.testing.assert_close(hs[-1].grad, es[-1] @ W_o, rtol=0, atol=1e-12)  # g^z_T = 0: no later step
    torch.testing.assert_close(hs[-2].grad, es[-2] @ W_o + zs[-1].grad @ W_h.detach(), rtol=0, atol=1e-12)


def _crossings(x) -> int:
    """Sign changes of a sampled curve: pairs of successive nonzero samples of opposite sign (a zero sample is no
    sign, so a curve that starts at 0 has not changed sign there)."""
    s = np.sign(np.asarray(x, float))
    s = s[s != 0]
    return int((s[1:] != s[:-1]).sum())


def test_5_the_positional_caption_counts_crossings_not_a_start_at_zero():
    from seqgrad.crosscheck.figures import positional
    from seqgrad.numeric.positions import sinusoidal

    caption = positional.CAPTIONS["positional_encoding_d128"]
    coordinate0 = sinusoidal(100, 128).numpy()[:, 0]  # sin(pos), pos = 0 ... 99
    assert coordinate0[0] == 0
    assert _crossings(coordinate0) == 31 == math.floor(99 / math.pi)  # zeros at k pi, k = 1 ... 31
    assert int((np.diff(np.sign(coordinate0)) != 0).sum()) == 32  # the old count took 0 -> + at pos 0 for a change
    assert "changes sign 31 times" in caption and "32" not in caption
    assert _crossings([0.0, 1.0, 0.0, -1.0, -2.0, 0.0, 3.0]) == 2  # a zero between two signs is one change


def test_6_the_convolution_indexes_the_padded_input_and_crops_its_gradient(tmp_path):
    b = _build(tmp_path)
    body = notes.conv_section(b).body
    assert "of the padded input" in body[:body.index(r"{\kappa}_{\xi,\zeta} {\bar{X}}_{\xi + i \Delta,\zeta + j \Delta}")]
    assert r"$H_{\mathrm{in}} + 2 p$ rows by $W_{\mathrm{in}} + 2 p$ columns" in body  # a size from its quantity
    crop = body[body.index("This is the gradient of the padded input"):]
    assert r"cropped by $p$ rows and columns on every side" in crop
    assert r"entry ($i'$, $j'$) of the input is entry ($i' + p$, $j' + p$) of the padded one" in crop
    table = notes.notation_section(b)
    ghat = next(line for line in table.splitlines() if line.startswith(r"$\mathbf{\hat{G}}$ & "))
    assert ghat.endswith(r"& $(H_{\mathrm{out}} + 2 (\psi - 1)) \times (W_{\mathrm{out}} + 2 (\psi - 1))$ \\")  # was "1"
    assert r"extended by $\psi - 1$ rows and columns of zeros on every side" in ghat


def test_6_the_padded_gradient_formula_and_the_crop_against_autograd():
    """dL/dX of the padded input is sum_uv Ghat_{m-u, n-v} kappa_uv with Ghat = G and k - 1 zeros on every side
    (the notation table's shape suffices); the unpadded input's gradient is it cropped by pad."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(25)
    H, W, k, P = 4, 5, 3, 1
    X = torch.tensor(rng.normal(size=(1, 1, H, W)), dtype=torch.float64, requires_grad=True)
    kappa = torch.tensor(rng.normal(size=(1, 1, k, k)), dtype=torch.float64)
    Xp = torch.nn.functional.pad(X, (P, P, P, P))
    Xp.retain_grad()
    Y = torch.nn.functional.conv2d(Xp, kappa)
    G = torch.tensor(rng.normal(size=Y.shape), dtype=torch.float64)
    (Y * G).sum().backward()
    H_o, W_o = Y.shape[-2:]
    Ghat = np.pad(G[0, 0].numpy(), k - 1)  # index -(k - 1) of the text is index 0 here
    assert Ghat.shape == (H_o + 2 * (k - 1), W_o + 2 * (k - 1))
    K = kappa[0, 0].numpy()
    dXp = np.array([[sum(Ghat[m - u + k - 1, n - v + k - 1] * K[u, v] for u in range(k) for v in range(k))
                     for n in range(W + 2 * P)] for m in range(H + 2 * P)])
    np.testing.assert_allclose(dXp, Xp.grad[0, 0].numpy(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(dXp[P:P + H, P:P + W], X.grad[0, 0].numpy(), rtol=0, atol=1e-12)


def test_7_the_path_bound_states_its_sizes_and_says_allows_growth(tmp_path):
    from seqgrad.derive import rnn

    body = notes.paths_section(_build(tmp_path)).body
    assert "may explode" not in body and r"the bound allows growth for $\rho > 1$" in body
    bound = body.index(r"\left|{g^{h}_{0}}\right| &\le \rho^{3} \left|{g^{h}_{3}}\right|")
    before = body[:bound]
    assert r"$T = 4$ and the loss on the last output only" in before[before.rindex("\\end{align*}"):]
    assert rnn.unroll(steps=4).steps == 4  # the example the bound is computed from


def test_8_the_three_step_gradient_says_why_two_terms_for_three_uses(tmp_path):
    from seqgrad.derive import rnn

    body = notes.rnn_section(_build(tmp_path)).body
    said = body[body.index("one term per step at which $w_{h}$ is used"):]
    said = said[:said.index("\\begin{align*}")]
    assert r"the term of step 0, $g^{z}_{0} h_{-1}$, vanishes because $h_{-1} = 0$: two terms remain" in said
    net = rnn.unroll(steps=3, activation="tanh")
    g = {net.sensitivity("z", t): net.sensitivity("z", t, expand=True) for t in range(net.steps)}
    uses = sp.Add.make_args(net.grad("w_h").xreplace(g))
    h_init = next(s for s in net.grad("w_h").free_symbols if s.name == "h_{-1}")
    assert len(uses) == net.steps == 3 and [h_init in u.free_symbols for u in uses].count(True) == 1
    assert len(sp.Add.make_args(net.grad("w_h").xreplace(g).subs(h_init, 0))) == 2  # the printed closed form
    printed = body[body.index(r"\frac{\partial \mathcal{L}}{\partial w_{h}} &= e w_{h} w_{o}"):]
    assert printed[:printed.index("\\end{align*}")].count(" + ") == 1 and "h_{-1}" not in printed[:printed.index("\\end")]


def test_9_the_notation_table_and_the_positional_text_typeset_their_math(tmp_path):
    b = _build(tmp_path)
    table = notes.notation_section(b)
    for raw in (r"J\_\{F\_l\}", r"d\_x", r"Delta\_l", r"W\_o", r"b\_1", r"b\_2"):
        assert raw not in table, raw
    assert r"$\mathbf{J}_{F_l}$" in table and r"($\Delta_{l}$: of layer $l$)" in table
    assert "$d_{x}$ & width of a recurrent cell's input" in table and "$d_{y}$ & width of a recurrent cell's output" in table
    body = notes.positional_section(b).body
    mark = _footnote_after(body, "General result, for an even width")
    assert "symbolic $w$" not in mark and r"symbolic $\omega$" in mark and mark.count("every even") == 1
    assert r"\sin(\omega_{j} (\mathrm{pos} + k))" in body and r"\cos(k \omega_{j})" in body
    assert r"by the angle $k \omega_{j}$" in body and r"\sin(\omega (" not in body
    assert r"$\mathbf{R}{(k)}^{\top} \mathbf{R}{(k)} = \mathbf{I}$" in body and r"R^{\top}(k)" not in body
    # the display with the pair's omega_j is still the proved identity
    from seqgrad.derive import catalogue

    lhs, rhs, _ = notes._as_rows(catalogue.get("pe-shift").statement(), sp.Symbol("omega_j"))
    assert {s.name for s in sp.Matrix(lhs).free_symbols} == {"omega_j", "pos", "k"}
    assert sp.simplify(sp.expand_trig(sp.Matrix(lhs) - sp.Matrix(rhs.doit()))) == sp.zeros(1, 2)
