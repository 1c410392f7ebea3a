"""Issue 25: the backward passes the notes were missing, each read off the engine and checked against torch autograd:
multi-head attention for every head i of n_head (the encoder's section), the decoder block at the level of its
sublayers, and the GRU's worked example with numbers."""

from __future__ import annotations

import math
import re

import pytest
import sympy as sp

from seqgrad.crosscheck import notes
from seqgrad.crosscheck.latexdoc import NOTES_LETTERS, NOTES_MATRICES
from seqgrad.crosscheck.latex_parts import Build
from seqgrad.derive import blocks
from seqgrad.derive.latex_settings import DEFAULT

# one worker runs this module, so that its module fixtures are built once, not once per xdist worker
pytestmark = pytest.mark.xdist_group("notes_backward_passes")

torch = pytest.importorskip("torch")


def _build(tmp_path):
    notation = DEFAULT.replace(letters={**DEFAULT.letters, **NOTES_LETTERS}, vectors=DEFAULT.vectors | NOTES_MATRICES)
    return Build(notation=notation, tex_dir=tmp_path, figures_dir=None)


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    return notes.encoder_section(_build(tmp_path_factory.mktemp("encoder"))).body


def _line(body: str, lhs: str) -> str:
    """The right-hand side of the display line whose left-hand side is ``lhs`` (LaTeX), one line of an align*, with
    the lines it continues on (``&\\quad {}+ ...``) joined to it."""
    end = r"(?: \\displaybreak\[0\])?(?:\\\\\*?)?$"
    found = re.findall(r"^" + re.escape(lhs) + r" *&= (.*?)" + end + r"((?:\n +&\\quad (?:\{\})?.*?" + end + r")*)",
                       body, re.M)
    assert found, lhs
    first, more = found[0]
    return " ".join([first] + re.findall(r"&\\quad (?:\{\})?(.*?)" + end, more, re.M))


def test_the_multi_head_forward_map_is_written_for_n_head_heads(encoder):
    sub = encoder[encoder.index("\\subsection{Multi-head attention and the MLP sublayer}"):]
    concat = _line(sub, r"\mathbf{C}")
    assert concat == (r"\left[\mathbf{O}^{[1]}\;\middle|\;\mathbf{O}^{[2]}\;\middle|\;\cdots\;\middle|\;"
                      r"\mathbf{O}^{[n_{\mathrm{head}}]}\right]")
    assert "Written for two heads" not in encoder


def test_the_multi_head_backward_pass_is_printed_line_by_line(encoder):
    sub = encoder[encoder.index("\\subsection{Multi-head attention and the MLP sublayer}"):encoder.index("We write $\\operatorname{MHA}")]
    dX = r"\mathrm{d}\mathbf{X}"
    head = lambda name: r"\mathrm{d}\mathbf{%s}^{[h]}" % name  # noqa: E731
    assert _line(sub, r"\mathrm{d}\mathbf{C}") == r"\mathrm{d}\mathbf{B} \mathbf{W}_{O}"
    assert _line(sub, r"\mathrm{d}\mathbf{W}_{O}") == r"\mathrm{d}\mathbf{B}^{\top} \mathbf{C}"
    # head h's block of dC's columns by its name, its columns said once in the sentence (a lecturer's review: no
    # index arithmetic, d_v (h - 1) ... d_v h - 1, in the display's subscript)
    assert _line(sub, head("O")) == r"\mathrm{d}\mathbf{C}^{[h]}"
    assert r"$\mathrm{d}\mathbf{C}^{[h]}$: every row of $\mathrm{d}\mathbf{C}$ and its columns $d_{v} (h - 1)$ to $d_{v} h - 1$" in sub
    assert "\\bullet" not in sub
    assert _line(sub, head("V")) == r"(\mathbf{A}^{[h]})^{\top} \mathrm{d}\mathbf{O}^{[h]}"  # head h's one-head pass
    assert _line(sub, dX) == (r"\sum_{h=1}^{n_{\mathrm{head}}} (\mathrm{d}\mathbf{Q}^{[h]} \mathbf{W}^{[h]}_{Q} + "
                              r"\mathrm{d}\mathbf{K}^{[h]} \mathbf{W}^{[h]}_{K} + \mathrm{d}\mathbf{V}^{[h]} \mathbf{W}^{[h]}_{V})")
    for W in "QKV":
        assert _line(sub, r"\mathrm{d}\mathbf{W}^{[h]}_{%s}" % W) == r"(\mathrm{d}\mathbf{%s}^{[h]})^{\top} \mathbf{X}" % W


def test_the_general_rows_are_the_engines_lines_at_every_head():
    """The rows for head h, instantiated at every head k of three, are the engine's own lines; a wrong row is refused."""
    forward, backward = blocks.multihead_rows(heads=3)
    prog = blocks.attention_program(heads=3).program
    dV = next(value for target, value in backward if target.name == "dV^[h]")
    assert blocks.at_head(dV, 2, 3) == prog["dV^[2]"].value
    dX = next(value for target, value in backward if target.name == "dX")
    assert isinstance(dX, blocks.HeadSum) and len(sp.MatAdd.make_args(dX.at(3))) == 9
    wrong = [(t, v.T if t.name == "dO^[h]" else v) for t, v in backward]
    with pytest.raises(Exception):
        blocks._check_general(prog, forward + wrong, 3, {})


def test_the_printed_multi_head_rows_agree_with_torch_autograd_at_three_heads():
    """The rows as printed, instantiated at n_head = 3 and compiled, against autograd of plain torch code (float64),
    at a random size."""
    from seqgrad.crosscheck import blocks as c_blocks

    g = torch.Generator().manual_seed(25)
    draw = lambda lo, hi: int(torch.randint(lo, hi + 1, (1,), generator=g))  # noqa: E731
    sizes = {"T": draw(2, 7), "d": draw(2, 6), "d_k": draw(1, 4), "d_v": draw(1, 4)}
    rows = c_blocks.compare_multihead_at(sizes, g, heads=3)
    names = [name for name, _, _ in rows]
    assert {"X", "W_O", "W_Q^[3]", "W_V^[3]"} <= set(names)
    for name, derived, reference in rows:
        assert derived.dtype == torch.float64
        assert torch.allclose(derived, reference, rtol=1e-10, atol=1e-12), name


@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    return notes.decoder_section(_build(tmp_path_factory.mktemp("decoder"))).body


def test_the_decoder_block_backward_pass_is_printed_at_the_level_of_its_sublayers(decoder):
    sub = decoder[decoder.index("Backwards, at the level of the sublayers"):decoder.index("\\paragraph{Parameter counts.}")]
    # one parenthesis after the title, the scope of its proof (it read "The decoder block (pre-norm) (output row ...)")
    assert decoder.index("\\paragraph{The pre-norm decoder block} (output row") < decoder.index("Backwards, at the level of the sublayers")
    assert _line(sub, r"\mathrm{d}\mathbf{B}_{\mathrm{mlp}}") == r"\mathrm{d}\mathbf{H'}"
    assert _line(sub, r"\mathrm{d}\mathbf{B}_{\mathrm{cross}}") == r"\mathrm{d}\mathbf{U}_{\mathrm{cross}}"
    assert _line(sub, r"\mathrm{d}\mathbf{B}_{\mathrm{self}}") == r"\mathrm{d}\mathbf{U}_{\mathrm{self}}"
    # the residual sums: each dU is the shortcut's gradient plus what comes back through the branch and its LayerNorm
    assert _line(sub, r"\mathrm{d}\mathbf{U}_{\mathrm{cross}}").startswith(r"\mathrm{d}\mathbf{H'} + \frac{1}{\mathbf{s}_{\mathrm{mlp}}}")
    assert _line(sub, r"\mathrm{d}\mathbf{U}_{\mathrm{self}}").startswith(r"\mathrm{d}\mathbf{U}_{\mathrm{cross}} + \frac{1}{\mathbf{s}_{\mathrm{cross}}}")
    assert _line(sub, r"\mathrm{d}\mathbf{H}").startswith(r"\mathrm{d}\mathbf{U}_{\mathrm{self}} + \frac{1}{\mathbf{s}_{\mathrm{self}}}")
    # the memory's gradient through the cross-attention's keys and values, summed over the heads
    assert _line(sub, r"\mathrm{d}\mathbf{H}_{\mathrm{enc}}") == (
        r"\sum_{h=1}^{n_{\mathrm{head}}} (\mathrm{d}\mathbf{K}^{[h]}_{\mathrm{cross}} \mathbf{W}^{[h]}_{K,\mathrm{cross}} + "
        r"\mathrm{d}\mathbf{V}^{[h]}_{\mathrm{cross}} \mathbf{W}^{[h]}_{V,\mathrm{cross}})")
    assert _line(sub, r"\mathrm{d}\mathbf{Y}_{\mathrm{cross}}") == (r"\sum_{h=1}^{n_{\mathrm{head}}} \mathrm{d}\mathbf{Q}^{[h]}_{\mathrm{cross}} "
                                                      r"\mathbf{W}^{[h]}_{Q,\mathrm{cross}}")
    assert "\\ref{sec:encoder}" in sub


def test_a_sum_over_the_heads_that_is_not_the_programs_is_refused():
    block = blocks.decoder_block_program(heads=3)
    dZ = block.program["dZ"].value
    assert len(sp.MatAdd.make_args(blocks.over_heads(dZ, 3).at(3))) == 6
    missing_one = sp.MatAdd(*sp.MatAdd.make_args(dZ)[:-1])
    with pytest.raises(Exception):
        blocks.over_heads(missing_one, 3)


def test_the_decoder_block_backward_pass_agrees_with_torch_autograd():
    """The engine's decoder block (whose lines the notes print) against autograd of a plain torch decoder block with
    the causal mask, in float64, at a random size; the memory's gradient dZ among the gradients compared."""
    from seqgrad.crosscheck import blocks as c_blocks

    g = torch.Generator().manual_seed(2025)
    draw = lambda lo, hi: int(torch.randint(lo, hi + 1, (1,), generator=g))  # noqa: E731
    sizes = {"T": draw(2, 6), "T_src": draw(2, 6), "d": draw(2, 6), "d_k": draw(1, 4), "d_v": draw(1, 4), "d_ff": draw(1, 8)}
    rows = c_blocks.compare_decoder_at(sizes, g, heads=2)
    names = [name for name, _, _ in rows]
    assert {"forward", "dH", "dZ", "dW_K,cross^[2]", "dW_V,cross^[1]", "dW_1"} <= set(names)
    for name, derived, reference in rows:
        assert torch.allclose(derived, reference, rtol=1e-10, atol=1e-12), name


def _gru_by_hand(values: dict):
    """The two-step scalar GRU written out in torch (torch.nn.GRU's equations, one unit), every weight a leaf; returns
    the leaves, each step's intermediates, h_0 as a leaf of its own for dh_1/dh_0, and the loss."""
    w = {n: torch.tensor(v, dtype=torch.float64, requires_grad=True) for n, v in values.items()}

    def step(x, h):
        zr = w["w_xr"] * x + w["b_xr"] + w["w_hr"] * h + w["b_hr"]
        r = torch.sigmoid(zr)
        zu = w["w_xu"] * x + w["b_xu"] + w["w_hu"] * h + w["b_hu"]
        u = torch.sigmoid(zu)
        eta = w["w_hn"] * h + w["b_hn"]
        zn = w["w_xn"] * x + w["b_xn"] + r * eta
        n = torch.tanh(zn)
        return {"z_r": zr, "r": r, "z_u": zu, "u": u, "eta": eta, "z_n": zn, "n": n, "h": (1 - u) * n + u * h}

    s0 = step(w["x_0"], torch.zeros((), dtype=torch.float64))
    s1 = step(w["x_1"], s0["h"])
    h0 = s0["h"].detach().requires_grad_()
    loss = (w["w_o"] * s1["h"] - w["y"]) ** 2 / 2
    return w, (s0, s1), h0, step(w["x_1"], h0)["h"], loss


def test_the_gru_worked_example_agrees_with_torch_autograd():
    from seqgrad.crosscheck.worked_numbers import GRU_VALUES, gru_example

    ex = gru_example()
    w, steps, h0, h1_of_h0, loss = _gru_by_hand(GRU_VALUES)
    intermediates = [[float(s[k].detach()) for k in ("z_r", "r", "z_u", "u", "eta", "z_n", "n", "h")] for s in steps]
    loss.backward(retain_graph=True)
    for k, row in enumerate(ex.rows):
        assert row[:8] == pytest.approx(intermediates[k], rel=1e-12, abs=1e-14), k
    assert ex.L == pytest.approx(float(loss.detach()), rel=1e-12)
    for name, value in ex.gradients.items():
        assert value == pytest.approx(float(w[name].grad), rel=1e-10, abs=1e-14), name
    (dh1_dh0,) = torch.autograd.grad(h1_of_h0, h0)
    assert ex.jacobian == pytest.approx(float(dh1_dh0), rel=1e-12)
    assert ex.carry == pytest.approx(float(steps[1]["u"].detach()), rel=1e-12)
    assert ex.jacobian == pytest.approx(ex.carry + ex.gate_terms, rel=1e-12)
    # the adjoints g_t^h of the table: dL/dh_t (h_0's read off the gradient that reaches it through step 1)
    h_1 = steps[1]["h"]
    g = torch.autograd.grad(loss, [steps[0]["h"], h_1], retain_graph=True)
    assert ex.rows[1][8] == pytest.approx(float(g[1]), rel=1e-12)
    assert ex.rows[0][8] == pytest.approx(float(g[0]), rel=1e-12)
    # g_t^{z^n}, g_t^{z^u}, g_t^{z^r}: dL/dz at each step
    for k, s in enumerate(steps):
        dz = torch.autograd.grad(loss, [s["z_n"], s["z_u"], s["z_r"]], retain_graph=True)
        assert ex.rows[k][9:12] == pytest.approx([float(v) for v in dz], rel=1e-12, abs=1e-15), k


def test_the_gru_worked_example_prints_its_numbers(tmp_path):
    from seqgrad.crosscheck.worked_numbers import GRU_VALUES, as_figures, gru_example

    body = notes.gates_section(_build(tmp_path)).body
    gru = body[body.index("\\subsection{The GRU}"):body.index("\\subsection{The LSTM}")]
    ex = gru_example()
    assert "\\label{tab:gru-numbers}" in gru and "Table~\\ref{tab:gru-numbers}" in gru
    assert re.search(r"w_\{hn\} +&= " + re.escape(str(GRU_VALUES["w_hn"])), gru)  # the weights are stated
    figures = lambda x: sp.latex(as_figures(x, 3))  # noqa: E731
    assert re.search(r"\\frac\{\\partial h_\{1\}\}\{\\partial h_\{0\}\} +&= " + re.escape(figures(ex.jacobian)), gru)
    assert re.search(r"\\frac\{\\partial \\mathcal\{L\}\}\{\\partial w_\{hn\}\} +&= " + re.escape(figures(ex.gradients["w_hn"])), gru)
    for k in range(2):
        assert "$" + figures(ex.rows[k][7]) + "$" in gru  # h_t at both steps, in the table


def _lstm_by_hand(values: dict):
    """The two-step scalar LSTM written out in torch (torch.nn.LSTM's equations, one unit, the two biases of a gate
    as one), every weight a leaf; returns the leaves, each step's intermediates, c_0 as a leaf of its own with h_0
    computed from it (for the total derivative dc_1/dc_0) and with h_0 held fixed (the partial), and the loss."""
    w = {n: torch.tensor(v, dtype=torch.float64, requires_grad=True) for n, v in values.items()}

    def step(x, h, c):
        s = {}
        for gate, act in (("i", torch.sigmoid), ("f", torch.sigmoid), ("c", torch.tanh), ("o", torch.sigmoid)):
            s["z_" + gate] = w["w_x" + gate] * x + w["w_h" + gate] * h + w["b_" + gate]
            s[gate] = act(s["z_" + gate])
        s["c_new"] = s["f"] * c + s["i"] * s["c"]
        s["h"] = s["o"] * torch.tanh(s["c_new"])
        return s

    zero = torch.zeros((), dtype=torch.float64)
    s0 = step(w["x_0"], zero, zero)
    s1 = step(w["x_1"], s0["h"], s0["c_new"])
    loss = (w["w_o"] * s1["h"] - w["y"]) ** 2 / 2
    c0 = s0["c_new"].detach().requires_grad_()
    total = step(w["x_1"], s0["o"].detach() * torch.tanh(c0), c0)["c_new"]
    partial = step(w["x_1"], s0["h"].detach(), c0)["c_new"]
    return w, (s0, s1), c0, partial, total, loss


def test_the_lstm_worked_example_agrees_with_torch_autograd():
    """The LSTM's worked example (a lecturer: the RNN and the GRU had numbers, the LSTM none): every quantity of its
    table, the loss, every weight's gradient and both derivatives of c_1 with respect to c_0, against torch autograd
    of the cell written out and against torch.nn.LSTM itself."""
    from seqgrad.crosscheck.worked_numbers import LSTM_VALUES, lstm_example

    ex = lstm_example()
    assert [str(c) for c in ex.columns] == ["z_t^i", "i_t", "z_t^f", "f_t", "z_t^c", "ctilde_t", "z_t^o", "o_t", "c_t",
                                            "h_t", "g_t^h", "g_t^c", "g_t^{z^o}", "g_t^{z^c}", "g_t^{z^f}", "g_t^{z^i}"]
    w, steps, c0, partial, total, loss = _lstm_by_hand(LSTM_VALUES)
    keys = ("z_i", "i", "z_f", "f", "z_c", "c", "z_o", "o", "c_new", "h")
    for k, s in enumerate(steps):
        assert ex.rows[k][:10] == pytest.approx([float(s[n].detach()) for n in keys], rel=1e-12, abs=1e-14), k
    assert ex.L == pytest.approx(float(loss.detach()), rel=1e-12)
    # the adjoints g_t^h, g_t^c (dL/dh_t, dL/dc_t) and g_t^z (dL/dz at each step)
    for k, s in enumerate(steps):
        got = torch.autograd.grad(loss, [s[n] for n in ("h", "c_new", "z_o", "z_c", "z_f", "z_i")], retain_graph=True)
        assert ex.rows[k][10:] == pytest.approx([float(v) for v in got], rel=1e-12, abs=1e-15), k
    loss.backward()
    for name, value in ex.gradients.items():
        assert value == pytest.approx(float(w[name].grad), rel=1e-10, abs=1e-14), name
    (dpartial,) = torch.autograd.grad(partial, c0)
    (dtotal,) = torch.autograd.grad(total, c0)
    assert ex.jacobian == ex.carry == pytest.approx(float(dpartial), rel=1e-12) and ex.gate_terms == 0
    assert ex.carry == pytest.approx(float(steps[1]["f"].detach()), rel=1e-12)
    assert ex.total == pytest.approx(float(dtotal), rel=1e-12) and abs(ex.total - ex.carry) > 1e-3
    # torch.nn.LSTM with the stated weights (gate order i, f, g, o; bias_hh zero, bias_ih the gates' biases)
    lstm = torch.nn.LSTM(1, 1).double()
    with torch.no_grad():
        for name, prefix in (("weight_ih_l0", "w_x"), ("weight_hh_l0", "w_h"), ("bias_ih_l0", "b_")):
            getattr(lstm, name).copy_(torch.tensor([LSTM_VALUES[prefix + g] for g in "ifco"], dtype=torch.float64).reshape(
                getattr(lstm, name).shape))
        lstm.bias_hh_l0.zero_()
    out, _ = lstm(torch.tensor([LSTM_VALUES["x_0"], LSTM_VALUES["x_1"]], dtype=torch.float64).reshape(2, 1, 1))
    nn_loss = (LSTM_VALUES["w_o"] * out[-1, 0, 0] - LSTM_VALUES["y"]) ** 2 / 2
    nn_loss.backward()
    assert float(nn_loss.detach()) == pytest.approx(ex.L, rel=1e-12)
    assert [float(v) for v in lstm.weight_hh_l0.grad.flatten()] == pytest.approx(
        [ex.gradients["w_h" + g] for g in "ifco"], rel=1e-10, abs=1e-14)
    assert [float(v) for v in lstm.weight_ih_l0.grad.flatten()] == pytest.approx(
        [ex.gradients["w_x" + g] for g in "ifco"], rel=1e-10, abs=1e-14)
    assert [float(v) for v in lstm.bias_ih_l0.grad] == pytest.approx([ex.gradients["b_" + g] for g in "ifco"], rel=1e-10)


def test_the_lstm_worked_example_prints_its_numbers(tmp_path):
    """The LSTM's worked example states its values and prints its table, both derivatives of c_1 with respect to
    c_0 and every weight's gradient, as the GRU's does, from :func:`lstm_example`."""
    from seqgrad.crosscheck.worked_numbers import LSTM_VALUES, as_figures, lstm_example

    b = _build(tmp_path)
    body = notes.gates_section(b).body
    lstm = body[body.index("\\subsection{The LSTM}"):]
    ex = lstm_example()
    assert "\\label{tab:lstm-numbers}" in lstm and "Table~\\ref{tab:lstm-numbers}" in lstm
    assert re.search(r"w_\{hf\} +&= " + re.escape(str(LSTM_VALUES["w_hf"])), lstm)  # the weights are stated
    assert "$h_{-1} = 0, c_{-1} = 0$" in lstm
    figures = lambda x: sp.latex(as_figures(x, 3))  # noqa: E731
    # the partial derivative at fixed h_0 with its subscript, the total one without (the notation table's two rows)
    # (it is the carry f_1, said once in the same row, not a second row repeating the number)
    assert abs(ex.jacobian - ex.carry) < 1e-15
    assert re.search(r"\\left\(\\frac\{\\partial c_\{1\}\}\{\\partial c_\{0\}\}\\right\)_\{h_\{0\}\} +&= f_\{1\}\\\\\*?\n"
                     r" +&= " + re.escape(figures(ex.jacobian)), lstm)
    assert not re.search(r"\nf_\{1\} +&= ", lstm)
    assert re.search(r"\n\\frac\{\\partial c_\{1\}\}\{\\partial c_\{0\}\} +&= " + re.escape(figures(ex.total)), lstm)
    for name in ("w_hc", "b_f", "w_xo"):
        assert re.search(r"\\frac\{\\partial \\mathcal\{L\}\}\{\\partial " + re.escape(sp.latex(sp.Symbol(name)))
                         + r"\} +&= " + re.escape(figures(ex.gradients[name])), lstm), name
    table = lstm[lstm.index("\\label{tab:lstm-numbers}"):lstm.index("\\end{table}", lstm.index("\\label{tab:lstm-numbers}"))]
    for k in range(2):
        assert notes._number(ex.rows[k][9], b) in table  # h_t at both steps, as the printer sets them
    assert len(re.findall(r"\\\\\n", table)) == len(ex.columns) + 1  # a row per quantity, after the header
    # the table's one 0, said why: g_0^{z_f} = g_0^c f_0 (1 - f_0) c_{-1}, and c_{-1} = 0
    assert ex.rows[0][[str(c) for c in ex.columns].index("g_t^{z^f}")] == 0
    assert "down to step 0 ($g^{z_{f}}_{0}$ is 0, because $c_{-1} = 0$). At these values" in lstm


def test_a_line_of_gate_gradients_holds_one_gates_parameters(tmp_path):
    """The LSTM's gradients were set two a line in the order w_xi, w_hi, b_i, w_xf, ...: b_i stood beside w_xf. Each
    line of a gradient list (the general sums and the worked numbers) now holds parameters of one gate only."""
    body = notes.gates_section(_build(tmp_path)).body
    lists = [m for m in re.findall(r"\\begin\{align\*\}(.*?)\\end\{align\*\}", body, re.S) if "\\partial w_{hf}" in m
             or "\\partial w_{hr}" in m]
    assert len(lists) == 4, len(lists)  # the GRU's and the LSTM's sums and numbers
    for display in lists:
        for line in display.split("\\\\"):
            gates = {m[1] or m[2] for m in re.finditer(r"\\partial [wb]_\{[xh](\w)\}|\\partial b_\{(\w)\}", line)}
            assert len(gates) <= 1, line
