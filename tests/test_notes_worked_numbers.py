"""The numeric worked examples of the notes' backward passes: the three-step scalar RNN (Section 2) and the encoder's
attention sublayer (Section 8), each computed by the project's derivations (:mod:`crosscheck.worked_numbers`) and
checked here against torch autograd of plain torch code written in this file, in float64; the tables of the text
show those numbers at the notes' digits.  And the GRU's worked example ends the GRU's subsection."""

from __future__ import annotations

import math
import re

import pytest
import torch
import torch.nn.functional as F

from seqgrad import sigfig
from seqgrad.crosscheck import notes, worked_numbers
from seqgrad.crosscheck.latexdoc import NOTES_LETTERS
from seqgrad.crosscheck.latex_parts import Build
from seqgrad.derive.latex_settings import DEFAULT
from seqgrad.numeric import course

# one worker runs this module, so that its module fixtures are built once, not once per xdist worker
pytestmark = pytest.mark.xdist_group("notes_worked_numbers")

F64 = torch.float64


def _build(tmp_path):
    notation = DEFAULT.replace(letters={**DEFAULT.letters, **NOTES_LETTERS})
    return Build(notation=notation, tex_dir=tmp_path, figures_dir=None)


def _table(body: str, label: str) -> list[list[str]]:
    """The cells of the rows of the table labelled ``label`` in ``body`` (between \\midrule and \\bottomrule)."""
    assert f"\\label{{{label}}}" in body, label
    table = body[body.index(f"\\label{{{label}}}"):]
    table = table[table.index("\\midrule") + len("\\midrule"):table.index("\\bottomrule")]
    return [[c.strip() for c in line.rstrip(" \\").split(" & ")] for line in table.strip().splitlines()]


def _number(cell: str) -> float | None:
    """The number a cell prints (``$-0.157$``), or None for an empty cell."""
    cell = cell.strip()
    if not cell:
        return None
    m = re.fullmatch(r"\$(-?[\d.]+)\$", cell)
    assert m, cell
    return float(m.group(1))


def _shows(printed: float, value: float, figures: int = 3) -> bool:
    return sigfig.matches(value, printed, figures)


# --------------------------------------------------------------------------- the scalar RNN, T = 3

def _rnn_autograd(values: dict, steps: int = 3) -> dict:
    """The course's scalar tanh RNN in plain torch, with one copy of w_h and of w_x per step, so that autograd gives
    each step's term of the gradient sums; h_t and z_t retain their gradients (g_t^h, g_t^z)."""
    w_h = [torch.tensor(values["w_h"], dtype=F64, requires_grad=True) for _ in range(steps)]
    w_x = [torch.tensor(values["w_x"], dtype=F64, requires_grad=True) for _ in range(steps)]
    w_y = torch.tensor(values["w_o"], dtype=F64, requires_grad=True)
    h = torch.tensor(0.0, dtype=F64)  # h_{-1} = 0
    hs, zs = [], []
    for k in range(steps):
        z = w_x[k] * values[f"x_{k}"] + w_h[k] * h
        h = torch.tanh(z)
        z.retain_grad(), h.retain_grad()
        zs.append(z), hs.append(h)
    yhat = w_y * h
    L = 0.5 * (yhat - values["y"]) ** 2
    L.backward()
    return {"h": [float(v.detach()) for v in hs], "gh": [float(v.grad) for v in hs], "gz": [float(v.grad) for v in zs],
            "term_w_h": [float(w.grad) for w in w_h], "term_w_x": [float(w.grad) for w in w_x],
            "w_h": sum(float(w.grad) for w in w_h), "w_x": sum(float(w.grad) for w in w_x), "w_o": float(w_y.grad),
            "yhat": float(yhat.detach()), "L": float(L.detach())}


def test_the_rnn_example_is_torch_autograd_in_double_precision():
    ex = worked_numbers.rnn_example()
    ref = _rnn_autograd(ex.values)
    assert [str(c) for c in ex.columns] == ["x_t", "h_t", "g_t^h", "g_t^z", "g_t^z*h_{t-1}", "g_t^z*x_t"]
    ours = {"h": ex.column(1), "gh": ex.column(2), "gz": ex.column(3), "term_w_h": ex.column(4), "term_w_x": ex.column(5)}
    for name, values in ours.items():
        assert values == pytest.approx(ref[name], rel=1e-12, abs=1e-14), name
    for name in ("w_h", "w_x", "w_o"):
        assert ex.gradients[name] == pytest.approx(ref[name], rel=1e-12), name
    assert (ex.yhat, ex.L) == pytest.approx((ref["yhat"], ref["L"]), rel=1e-12)
    assert ex.column(0) == [ex.values[f"x_{k}"] for k in range(3)]
    assert ex.terms == {4: "w_h", 5: "w_x"} and ex.column(4)[0] == 0.0  # h_{-1} = 0
    assert all(abs(v) > 1e-3 for v in ex.column(2) + ex.column(3) + ex.column(4)[1:] + ex.column(5))  # nothing trivial


def test_the_rnn_example_refuses_values_for_other_symbols():
    from seqgrad.errors import SeqgradValueError

    with pytest.raises(SeqgradValueError, match="every leaf of the program"):
        worked_numbers.rnn_example({"w_h": 1.0})


@pytest.fixture(scope="module")
def rnn_body(tmp_path_factory):
    return notes.rnn_section(_build(tmp_path_factory.mktemp("rnn"))).body


def test_the_rnn_section_tabulates_the_backward_pass_with_numbers(rnn_body):
    ex = worked_numbers.rnn_example()
    ref = _rnn_autograd(ex.values)
    rows = _table(rnn_body, "tab:rnn-numbers")
    assert len(rows) == 4 and rows[-1][0] == "sum"
    for k, row in enumerate(rows[:3]):
        assert row[0] == f"${k}$"
        printed = [_number(c) for c in row[1:]]
        assert printed[0] == ex.values[f"x_{k}"]  # the input as stated
        for p, value in zip(printed[1:], (ref["h"][k], ref["gh"][k], ref["gz"][k], ref["term_w_h"][k], ref["term_w_x"][k])):
            assert _shows(p, value), (k, p, value)
    sums = [_number(c) for c in rows[-1][1:]]
    assert sums[:4] == [None] * 4 and _shows(sums[4], ref["w_h"]) and _shows(sums[5], ref["w_x"])
    # the header is the section's notation, the table referenced from the text, the stated values in the text
    header = rnn_body[rnn_body.index("\\label{tab:rnn-numbers}"):].split("\\toprule")[1].split("\\midrule")[0]
    assert r"$g^{z}_{t} h_{t-1}$" in header and r"$g^{h}_{t}$" in header and r"$x_{t}$" in header
    assert "Table~\\ref{tab:rnn-numbers}" in rnn_body
    text = rnn_body[rnn_body.index("With numbers"):rnn_body.index("\\begin{table}", rnn_body.index("With numbers"))]
    for symbol, name in ((r"w_{x}", "w_x"), (r"w_{h}", "w_h"), (r"x_{1}", "x_1"), (r"y", "y")):
        assert f"${symbol} = {ex.values[name]:g}" in text, symbol
    L = float(re.search(r"\\mathcal\{L\} = ([\d.]+)\$", text).group(1))
    assert _shows(L, ref["L"])
    assert rnn_body.index("Worked example: three steps") < rnn_body.index("With numbers")


# --------------------------------------------------------------------------- the encoder's attention sublayer

def _layer_norm(X):
    return F.layer_norm(X, (X.shape[-1],), eps=1e-5)  # scale 1, shift 0, as the course's every LayerNorm


def _sublayer_autograd():
    """U = H + MHA(LN_att(H)) of the course (two heads 5 -> 3, output map 6 -> 5), H = H_0, written in plain torch;
    autograd of L = sum of U's entries with respect to H and head 1's W_Q."""
    H = course.trace("attention_on_H0")["H0"].clone().requires_grad_(True)
    maps = [{n: torch.tensor(head[n], dtype=F64, requires_grad=True) for n in ("W_Q", "W_K", "W_V")}
            for head in (course.HEAD1, course.HEAD2)]
    W_O = torch.tensor(course.W_O, dtype=F64)
    X = _layer_norm(H)
    outs = []
    for m in maps:
        Q, K, V = X @ m["W_Q"].T, X @ m["W_K"].T, X @ m["W_V"].T
        outs.append(torch.softmax(Q @ K.T / math.sqrt(Q.shape[1]), dim=-1) @ V)
    U = H + torch.cat(outs, dim=-1) @ W_O.T
    U.sum().backward()
    return U.detach(), H.grad, maps[0]["W_Q"].grad


def test_the_encoder_backward_is_torch_autograd_in_double_precision():
    ex = worked_numbers.encoder_backward()
    U, dH, dWQ = _sublayer_autograd()
    assert torch.allclose(ex.U, U, rtol=1e-12, atol=1e-13)
    assert torch.allclose(ex.gradients["H"], dH, rtol=1e-12, atol=1e-13)
    assert torch.allclose(ex.gradients["W_Q^[1]"], dWQ, rtol=1e-12, atol=1e-13)
    assert tuple(dH.shape) == (7, 5) and tuple(dWQ.shape) == (3, 5)
    assert float(dWQ.abs().min()) > 1e-3  # nothing trivial to show
    # what the text says of dH: every row sums to d (the shortcut's ones; LayerNorm's rows sum to zero)
    assert torch.allclose(dH.sum(dim=1), torch.full((7,), 5.0, dtype=F64), atol=1e-10)


def test_a_sum_over_a_layernorm_output_has_no_gradient():
    """Why the example stops at the sublayer: the final LayerNorm's rows sum to 0, so the sum's gradient is 0."""
    X = torch.randn(7, 5, generator=torch.Generator().manual_seed(0), dtype=F64).requires_grad_(True)
    _layer_norm(X).sum().backward()
    assert float(X.grad.abs().max()) < 1e-12


@pytest.fixture(scope="module")
def encoder_body(tmp_path_factory):
    return notes.encoder_section(_build(tmp_path_factory.mktemp("encoder"))).body


def test_the_encoder_section_tabulates_its_backward_pass(encoder_body):
    U, dH, dWQ = _sublayer_autograd()
    tokens = course.TEXT.split()
    for label, ref, row_labels in (("tab:encoder-dH", dH, [f"{t}: {w}" for t, w in enumerate(tokens)]),
                                   ("tab:encoder-dWQ", dWQ, [f"query feature {i}" for i in range(3)])):
        rows = _table(encoder_body, label)
        assert [r[0] for r in rows] == row_labels, label
        printed = [[_number(c) for c in r[1:]] for r in rows]
        assert len(printed) == ref.shape[0] and all(len(r) == ref.shape[1] for r in printed)
        for i, row in enumerate(printed):
            for j, p in enumerate(row):
                assert _shows(p, float(ref[i, j])), (label, i, j, p, float(ref[i, j]))
        assert f"Table~\\ref{{{label}}}" in encoder_body
    said = encoder_body[encoder_body.index("Backwards, with numbers"):]
    # the loss is the sum of every entry, written as a sum (1^T U 1 would need columns of ones of two sizes, T and d)
    # (in running text as two sums, each with its limits on one line: no \substack spreading the lines)
    assert r"\mathcal{L} = \sum_{j=0}^{4} \sum_{t=0}^{6} {U}_{t,j}" in said and "$d = 5$" in said
    assert r"\mathbf{1}^{\top} \mathbf{U} \mathbf{1}" not in said
    # after the forward tables of the worked example, before its figure
    assert encoder_body.index("\\subsection{Worked example}") < encoder_body.index("The encoder's output") \
        < encoder_body.index("Backwards, with numbers")


# --------------------------------------------------------------------------- the GRU's worked example

def test_each_gated_cells_worked_example_ends_its_own_subsection(tmp_path):
    body = notes.gates_section(_build(tmp_path)).body
    gru, lstm = body.index("\\subsection{The GRU}"), body.index("\\subsection{The LSTM}")
    gru_example, lstm_example = body.index("Worked example, the GRU"), body.index("Worked example, the LSTM")
    assert gru < gru_example < lstm < lstm_example
    # the GRU's example follows its gradients, the last display of its subsection
    assert body.index("Every weight is shared by all steps", gru) < gru_example
    assert body.index("Every weight is shared by all steps", lstm) < lstm_example


def test_the_softmax_example_with_numbers_is_torch_s_jacobian(tmp_path):
    """Review A item 3: the three-score softmax example with numbers, against torch autograd of plain torch code."""
    import torch

    from seqgrad.crosscheck import notes
    from seqgrad.crosscheck.worked_numbers import SOFTMAX_SCORES, softmax_example

    a, J = softmax_example()
    z = torch.tensor(SOFTMAX_SCORES, dtype=torch.float64)
    ref = torch.autograd.functional.jacobian(lambda v: torch.softmax(v, 0), z)
    assert torch.allclose(torch.tensor(J, dtype=torch.float64), ref, atol=1e-14)
    assert torch.allclose(torch.tensor(a, dtype=torch.float64), torch.softmax(z, 0), atol=1e-15)
    body = notes.attention_section(_build(tmp_path)).body
    said = body[body.index("With numbers, the scores"):body.index("\\subsection{Backward pass}")]
    for value in (0.0900, 0.245, 0.665, 0.0819, -0.0220, -0.163, 0.223):
        assert f"{value:.3g}" in said or f"{value:.4f}" in said, value
    nearest = min(range(3), key=lambda i: abs(a[i] - 0.5))
    assert max(range(3), key=lambda i: J[i][i]) == nearest and f"here $a_{{{nearest}}}$" in said


@pytest.mark.parametrize("scores", [[2.0], [], [1.0, math.nan], [1.0, math.inf], [0.0, -5000.0], "1 2 3", [1.0, "b"],
                                    3.0, [True, False]],
                         ids=["one score", "no score", "NaN", "inf", "too large", "text", "not a number", "not a row",
                              "booleans"])
def test_the_softmax_example_refuses_bad_scores_by_name(scores):
    """Issue 25, item 5: each refusal of :func:`softmax_example` is one SeqgradValueError that names ``scores`` and
    says what is allowed; never a raw float() error, never a NaN weight."""
    from seqgrad.crosscheck.worked_numbers import softmax_example
    from seqgrad.errors import SeqgradValueError

    with pytest.raises(SeqgradValueError) as info:
        softmax_example(scores)
    assert info.value.argument == "scores" and str(info.value).startswith("scores=")
    assert "two or more finite scores" in info.value.allowed


def test_the_softmax_example_takes_any_row_of_two_or_more_real_scores():
    """The refusals above do not refuse good rows: a tuple, integers, two scores, and four (each a softmax)."""
    from seqgrad.crosscheck.worked_numbers import softmax_example

    for scores in ((0, 0), [-1.5, 0.25, 2, 999.0]):
        a, J = softmax_example(scores)
        z = torch.tensor([float(x) for x in scores], dtype=F64)
        assert torch.allclose(torch.tensor(a, dtype=F64), torch.softmax(z, 0), atol=1e-15)
        assert torch.allclose(torch.tensor(J, dtype=F64), torch.autograd.functional.jacobian(lambda v: torch.softmax(v, 0), z),
                              atol=1e-14)


# --------------------------------------------------------------------------- the positional encodings' and the residual's numbers

def _pe(position: int, d: int):
    """The sinusoidal encoding in plain numpy, as the course defines it: sin on even j, cos on odd j."""
    import numpy as np

    j = np.arange(d)
    angle = position / 10000.0 ** (2 * (j // 2) / d)
    return np.where(j % 2 == 0, np.sin(angle), np.cos(angle))


def test_the_shift_example_is_the_encoding_and_its_rotation_in_numpy(tmp_path):
    """Issue 25, third review, item 3: the positional encodings' worked example with numbers (d = 4, PE(1), R(2),
    PE(3)), computed from the derivation, against numpy written here; the section prints those numbers."""
    import numpy as np

    ex = worked_numbers.shift_example()
    assert (ex.d, ex.position, ex.shift) == (4, 1, 2)
    assert np.allclose(ex.encoding, _pe(1, 4), atol=1e-15, rtol=0) and np.allclose(ex.shifted, _pe(3, 4), atol=1e-15, rtol=0)
    R = np.zeros((4, 4))
    for pair in range(2):
        a = 2 / 10000.0 ** (2 * pair / 4)
        R[2 * pair:2 * pair + 2, 2 * pair:2 * pair + 2] = [[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]]
    assert np.allclose(ex.rotation, R, atol=1e-15, rtol=0)
    assert np.allclose(_pe(1, 4) @ R, _pe(3, 4), atol=1e-15) and np.allclose(ex.rotated, _pe(3, 4), atol=1e-15, rtol=0)
    body = notes.positional_section(_build(tmp_path)).body
    said = body[body.index("With numbers, at the even width"):]
    rows = re.findall(r"\\left\[\\begin\{matrix\}(.*?)\\end\{matrix\}\\right\]", said[:said.index("\\end{align*}")])
    printed = [[float(v) for v in row.split(" & ")] for line in rows for row in line.split("\\\\")]
    expected = [list(_pe(1, 4))] + R.tolist() + [list(_pe(3, 4))] * 2
    assert len(printed) == len(expected)
    assert all(_shows(p, v) for prow, vrow in zip(printed, expected) for p, v in zip(prow, vrow) if v != 0), printed
    with pytest.raises(worked_numbers.SeqgradValueError) as info:
        worked_numbers.shift_example(d=5)
    assert info.value.argument == "d"


def test_the_residual_example_is_torch_autograd(tmp_path):
    """Issue 25, third review, item 3: one plain connection u = x + tanh(x W^T) with numbers: the derived J_F and
    I + J_F against torch autograd of plain torch code, and the section prints them."""
    x = torch.tensor(worked_numbers.RESIDUAL_X, dtype=F64)
    W = torch.tensor(worked_numbers.RESIDUAL_W, dtype=F64)
    J_F, J = worked_numbers.residual_example()
    ref_F = torch.autograd.functional.jacobian(lambda v: torch.tanh(v @ W.T), x)
    ref = torch.autograd.functional.jacobian(lambda v: v + torch.tanh(v @ W.T), x)
    assert torch.allclose(torch.tensor(J_F, dtype=F64), ref_F, atol=1e-15, rtol=0)
    assert torch.allclose(torch.tensor(J, dtype=F64), ref, atol=1e-15, rtol=0)
    body = notes.residual_section(_build(tmp_path)).body
    said = body[body.index("With numbers, one plain connection"):]
    display = said[said.index("\\begin{align*}"):said.index("\\end{align*}")]
    matrices = re.findall(r"\\left\[\\begin\{matrix\}(.*?)\\end\{matrix\}\\right\]", display)
    printed = [[[float(v) for v in row.split(" & ")] for row in m.split("\\\\")] for m in matrices]
    assert len(printed) == 5 and printed[:2] == [[list(worked_numbers.RESIDUAL_X)], [list(r) for r in worked_numbers.RESIDUAL_W]]
    for shown, value in zip(printed[2:], (ref_F, ref_F, ref)):
        assert all(_shows(p, float(v)) for prow, vrow in zip(shown, value.tolist()) for p, v in zip(prow, vrow)), shown
    with pytest.raises(worked_numbers.SeqgradValueError) as info:
        worked_numbers.residual_example(x=(1.0, 2.0), W=((1.0, 0.0),))
    assert info.value.argument == "x, W"


def _printed_matrix(body: str, lhs: str) -> list[list[float]]:
    """The entries of the matrix displayed as ``lhs = [...]`` in ``body``, as numbers."""
    m = re.search(re.escape(lhs) + r" &= \\left\[\\begin\{matrix\}(.*?)\\end\{matrix\}\\right\]", body)
    assert m, lhs
    return [[float(c) for c in row.split(" & ")] for row in m.group(1).split("\\\\")]


def test_the_encoder_example_states_every_parameter_before_its_numbers(encoder_body):
    """A reader can recompute the example: every weight and bias of the course's block is displayed, stored output
    by input (a head's maps 3 x 5, not the transposes the course prints for head 1), before the first table."""
    example = encoder_body[encoder_body.index("\\subsection{Worked example}"):]
    first_table = example.index("\\begin{table}")
    stated = {r"\mathbf{W}_{O}": course.W_O, r"\mathbf{W}_{1}": course.W1, r"\mathbf{b}_{1}": [course.b1],
              r"\mathbf{W}_{2}": course.W2, r"\mathbf{b}_{2}": [course.b2]}
    for h, maps in ((1, course.HEAD1), (2, course.HEAD2)):
        stated |= {rf"\mathbf{{W}}^{{[{h}]}}_{{{name[-1]}}}": maps[name] for name in ("W_Q", "W_K", "W_V")}
    for lhs, values in stated.items():
        assert _printed_matrix(example[:first_table], lhs) == [[float(v) for v in row] for row in values], lhs
    assert len(_printed_matrix(example, r"\mathbf{W}^{[1]}_{K}")) == 3  # output by input, as in Table 1


def test_the_gru_section_says_which_bias_gradients_are_equal():
    """PyTorch's GRU has two biases per gate; torch autograd of nn.GRU shows the reset and update gates' two bias
    gradients equal and the candidate's differ (the reset gate multiplies b_hn): the notes say exactly that."""
    torch.manual_seed(0)
    gru = torch.nn.GRU(1, 1, dtype=F64)
    out, _ = gru(torch.randn(4, 1, 1, dtype=F64))
    out.sum().backward()
    b_ih, b_hh = gru.bias_ih_l0.grad, gru.bias_hh_l0.grad  # PyTorch's gate order r, z (update), n
    assert torch.allclose(b_ih[:2], b_hh[:2]) and not torch.allclose(b_ih[2], b_hh[2])
    from seqgrad.derive import builtin_cells

    said = notes._shared_bias_gradients(_build(None), builtin_cells.gru_cell().general().gradient_rows())[0]
    equal = said[:said.index("Not so for $b_{hn}$: $r_{t}$ multiplies it")]
    assert re.findall(r"b_\{x(\w)\}", equal) == re.findall(r"b_\{h(\w)\}", equal) == ["r", "u"], equal
    assert notes._shared_bias_gradients(_build(None), builtin_cells.lstm_cell().general().gradient_rows()) == []
