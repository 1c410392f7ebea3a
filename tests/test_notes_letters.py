"""Issue 25: one symbol per meaning in the handout. Each test reads the text the notes print (a section's body or
the notation table's rows) and fails on the old text, where one symbol had two meanings."""
import re

import pytest

from seqgrad.crosscheck import notes
from seqgrad.crosscheck.latex_parts import Build
from seqgrad.crosscheck.latexdoc import notes_notation
from seqgrad.derive.latex_settings import DEFAULT

# one worker runs this module, so that its module fixtures are built once, not once per xdist worker
pytestmark = pytest.mark.xdist_group("notes_letters")


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """A build with the notation ``seqgrad latex notes.tex`` uses."""
    return Build(notation=notes_notation(DEFAULT), tex_dir=tmp_path_factory.mktemp("notes"), figures_dir=None)


@pytest.fixture(scope="module")
def table(build):
    """The notation table: symbol (as printed) -> meaning."""
    body = notes.notation_section(build)
    # the shape a formula, or words for a generic one ("that of its terms")
    return {m.group(1): m.group(2) for m in re.finditer(r"^\$(.+?)\$ & (.+?) & [^&]* \\\\$", body, re.M)}


@pytest.fixture(scope="module")
def gates(build):
    return notes.gates_section(build).body


def test_the_output_layer_weight_is_not_named_like_the_output_gate(build, table, gates):
    """b_o, w_xo, w_ho are the LSTM's output gate; the output layer's weight was w_o beside them."""
    assert "w_{y}" in table and "w_{o}" not in table
    assert r"\widehat{y}       &= w_{y} h_{T-1}" in gates and "w_{o}" not in gates
    assert r"\partial b_{o}}" in gates  # the gate keeps the cell's (PyTorch's) parameter names
    assert "w_{o}" not in notes.rnn_section(build).body


@pytest.fixture(scope="module")
def encoder(build):
    return notes.encoder_section(build).body


def test_the_number_of_heads_is_not_the_hidden_state(build, table, encoder):
    """h is the hidden state h_t; the number of heads was h too, in the encoder, the decoder's counts and the table.
    The number of heads is n_head; h is only the index of a head, in brackets (W_Q^[h]), as the table says."""
    assert table["h"].startswith("the index of an attention head") and "^{[h]}" in table["h"], table["h"]
    assert table["n_{\\mathrm{head}}"].startswith("number of attention heads")
    assert table[r"\mathbf{C}"] == "the heads' outputs side by side"
    assert re.search(r"\$\\mathbf\{C\}\$ & .* & \$T \\times d_\{v\} n_\{\\mathrm\{head\}\}\$", notes.notation_section(build))
    assert "With $n_{\\mathrm{head}}$ heads" in encoder and "with $n_{\\mathrm{head}}$ heads an output map" in encoder
    assert "$n_{\\mathrm{head}} = 2$ heads" in encoder and "$T \\times d_{v} n_{\\mathrm{head}}$" in encoder
    assert not re.search(r"\$h\$ heads|\$h = \d|\bh d_\{v\}", encoder)  # h heads: never (d_v h, head h's last column)
    decoder = notes.decoder_section(build).body
    assert r"d/n_{\mathrm{head}}" in decoder and "$n_{\\mathrm{head}} = 2, d_{v} = 3$" in decoder
    assert not re.search(r"\{d_\{model\}\}\{h\}|\$h = \d|h = 4", decoder)


@pytest.fixture(scope="module")
def conv(build):
    return notes.conv_section(build).body


def test_the_receptive_field_is_not_the_reset_gate(table, conv):
    """r_t is the GRU's reset gate; the receptive field was r_L (and r_3) in the convolution section and the table.
    (R is taken too: R(k) is the positional encodings' rotation.)"""
    assert table["r_{t}"].startswith("reset gate of the GRU")
    assert "r_{L}" not in table and table[r"\mathrm{rf}_{L}"].startswith("receptive field")
    assert r"{\mathrm{rf}}_{L} &= 1 + \sum_{l=1}^{L}" in conv and r"\mathrm{rf}_{3} &= " in conv
    assert not re.search(r"\{?r\}?_\{(L|3)\}", conv)


def test_the_padding_does_not_read_as_the_positional_encodings(table, conv):
    """P is the positional encodings; the padding was P_pad, which reads as P."""
    assert table[r"\mathbf{P}"].startswith("positional encodings")
    assert "P_{pad}" not in table and table["p"].startswith("rows and columns of zeros padded")
    # and not as the English word either (an upright pad): an italic p, which no other symbol of the notes uses
    assert r"\mathrm{pad}" not in table and r"\mathrm{pad}" not in conv
    assert r"\frac{H_{\mathrm{in}} + 2 p - \psi}{\Delta}" in conv and r"cropped by $p$ rows" in conv
    assert not re.search(r"\bP_\{?pad|\bP\b", conv)


def test_a_gates_pre_activation_is_defined_as_its_gradient_names_it(build, table, gates):
    """The gates' pre-activations were defined as z^{r}_{t} but their gradients printed g^{z_{r}}_{t}: now both say
    z_r, the definition z_{r,t} (the gate beside the step, no nested scripts)."""
    # a gate's pre-activation and its gradient are named where the pre-activation and the gates are
    assert "of a gate, $z_{r,t}$" in table["\\mathbf{z}_{t}"] and "of a gate's, $g^{z_{r}}_{t}$" in table["\\mathbf{g}^{z}_{t}"]
    assert "names its pre-activation $z_{r,t}$" in table["r_{t}"] and table["z_{n,t}"].startswith("pre-activation of the GRU's candidate")
    for gate, cell in (("r", "GRU"), ("u", "GRU"), ("n", "GRU"), ("i", "LSTM"), ("f", "LSTM"), ("c", "LSTM"), ("o", "LSTM")):
        assert re.search(r"^z_\{%s,t\} +&= " % gate, gates, re.M), (gate, cell)  # defined
        assert re.search(r"^g\^\{z_\{%s\}\}_\{t\} +&= " % gate, gates, re.M), (gate, cell)  # its gradient
    assert not re.search(r"z\^\{[a-z]\}", gates) and "z^{" not in notes.notation_section(build)


# -- the lecturer's review of the chapter: n, the rotation, the identity, diag (issue 25) ----------------------------

@pytest.fixture(scope="module")
def attention(build):
    return notes.attention_section(build)


def test_a_softmax_row_has_T_entries_not_n(build, table, attention):
    """n was the number of a softmax's scores (and the path length, and a convolution's column): a row of scores has
    one entry per key, T, in the section, its footnote and its appendix; n is the GRU candidate's index only, and a
    convolution's input entry is (i', j') (tests/test_notes_notation_review.py)."""
    body = attention.body
    assert r"of one row of scores $\mathbf{z}$ ($T$ entries), entry by entry and as a matrix, for every $T$:" in body
    assert not re.search(r"(?<![A-Za-z\\])n(?![A-Za-z])", re.sub(r"n_\{\\mathrm\{head\}\}", "", body).replace("\\n", ""))
    assert "number of entries of a softmax's row" not in " ".join(table.values())
    assert table["j'"] == "column of an entry of a convolution's input, counted from 0"
    assert table["i'"] == "row of an entry of a convolution's input, counted from 0"
    # diag(a) is as large as its row a, not T x T (the lecturer's review of Table 1)
    assert re.search(r"^\$\\operatorname\{diag\}\(\\mathbf\{a\}\)\$ & .* one row and one column per entry & square \\\\$",
                     notes.notation_section(build), re.M)
    assert r"\mathbf{a}$ & softmax of a row $z$ of scores: the weights of one row, one per key & $1 \times T$" in \
        notes.notation_section(build)


def test_the_path_length_is_t_minus_tau(standalone_notes):
    """The figure of the power curves drew rho^n against a path length n; the section's bound is rho^(t - tau), over
    the t - tau steps from tau to t: the pointer, the caption and the figure's axes say t - tau."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from seqgrad.numeric import figures_paths

    tex = standalone_notes.read_text(encoding="utf-8")
    body = tex[tex.index("\\section{Path products"):tex.index("\\section{Gated cells")]
    assert r"draws the bound $\rho^{t - \tau}$ against the path length $t - \tau$" in body
    assert r"raised to the path length $t - \tau$" in body
    assert not re.search(r"\$n\$|\^\{n\}|\\rho\^n", body)
    fig, ax = plt.subplots()
    try:
        figures_paths.plot_power_curves(ax)
        assert ax.get_xlabel() == r"number of transitions $t - \tau$" and ax.get_ylabel() == r"$\rho^{t - \tau}$"
    finally:
        plt.close(fig)


def test_the_rotation_and_the_identity_are_bold_as_every_matrix(build, table):
    """R(k) (a d by d matrix) and its blocks R_j(k) (once B_j(k), the letter of the attention output) were italic, and the identity of the PE table a plain I beside the
    bold I of the residual section: every matrix is bold, in the table, the section and the properties' table."""
    body = notes.positional_section(build).body
    assert r"\mathbf{R}{(k)}" in table and r"\operatorname{blockdiag}{(\mathbf{R}_{j}{(k)})}" in table
    assert r"\mathbf{R}{(k)} &= \operatorname{blockdiag}{(\mathbf{R}_{j}{(k)})}" in body
    assert "B_{j}" not in body and "B_{j}" not in table  # B is the attention output's letter
    assert r"$\mathbf{R}{(k)}^{\top} \mathbf{R}{(k)} = \mathbf{I}$" in body
    assert r"$\mathbf{R}{(a)} \mathbf{R}{(b)} = \mathbf{R}{(a + b)}$" in body
    assert not re.search(r"(?<![A-Za-z{])R\{\(|(?<![A-Za-z{])R_\{j\}\{\(|= I\$", body)


def test_diag_prints_one_way():
    """diag(.) printed diag(a) from the matrix node and diag{(f_t)} from words (the gates' figure): one form."""
    import sympy as sp

    from seqgrad.derive.latex_settings import DEFAULT

    assert DEFAULT.latex(sp.Function("diag")(sp.Symbol("f_t"))) == r"\operatorname{diag}(f_{t})"
    assert DEFAULT.latex(sp.DiagMatrix(sp.MatrixSymbol("a", 1, 3))) == r"\operatorname{diag}(\mathbf{a})"


def test_every_symbol_of_the_review_is_in_the_table(table):
    """pi, the product sign, a pair's wavelength lambda_j, the Jacobians J_MHA and J_MLP of the block's identity, the
    block's output H' and the word adjoint were used without a row of the notation table."""
    assert table[r"\pi"].startswith("the circle constant")
    assert table[r"\lambda_{j}"].startswith("wavelength of the coordinate pair $j$, in positions: "
                                            r"$\lambda_{j} = 2 \pi/\omega_{j}$")
    assert table[r"\prod_{l'=1}^{l - 1} {\Delta}_{l'}"].startswith("product of the factors")
    assert table[r"\sum_{t=0}^{T - 1} g^{z}_{t}"].startswith("sum of the terms")
    assert table[r"\mathbf{J}_{\mathrm{MHA}}"].startswith("Jacobian of a block's multi-head attention")
    assert table[r"\mathbf{J}_{\mathrm{MLP}}"].startswith("Jacobian of a block's MLP")
    assert r"$\mathbf{J}_{\mathrm{LN},\mathrm{att}}$ and $\mathbf{J}_{\mathrm{LN},\mathrm{mlp}}$" in table[r"\mathbf{J}_{\mathrm{LN}}"]
    assert table[r"\mathbf{H'}"] == "output of an encoder or decoder block, the next block's input"
    assert "the state's adjoint" in table[r"\mathbf{g}^{h}_{t}"]


def test_the_encoder_names_its_output_as_the_decoder_reads_it(build, encoder):
    """The encoder's output was H_enc, beside the table's Z (the memory a decoder reads), and a block's output H_1,
    whose subscript 1 also numbers the block's first LayerNorm and the MLP's first layer; the decoder's block output
    is H': the encoder says the memory's symbol (H_enc, since Z_mlp is the MLP's pre-activation) and H' too."""
    assert r"not over the encoder's output $\mathbf{H}_{\mathrm{enc}}$: with its shift 0" in encoder
    assert r"The block's output $\mathbf{H'}$ is the next block's input" in encoder
    assert re.search(r"^\\mathbf\{H'\} +&= \\mathbf\{B\}_\{\\mathrm\{mlp\}\} \+ \\mathbf\{U\}", encoder, re.M)
    assert not re.search(r"\\mathbf\{Z\}(?!_)", encoder) and r"\mathbf{H}_{1}" not in encoder  # the memory: one name
    assert re.search(r"^\\mathbf\{H'\} +&= \\mathbf\{U\}_\{\\mathrm\{cross\}\} \+ ", notes.decoder_section(build).body, re.M)


def test_the_convolution_names_its_input_and_its_padded_input(table, conv):
    """X is a block's rows (T by d); the convolution's input was X too, and X changed meaning within the section, from
    the input (H_in by W_in) to the padded input its sums read: now X_in and Xbar (barred as the padded gradient Ghat is hatted), both in the table, and no bare X."""
    assert table[r"\mathbf{X}_{\mathrm{in}}"] == "input of a convolution (one channel)"
    assert table[r"\mathbf{\bar{X}}"].startswith("the input of a convolution with $p$ rows and columns of zeros")
    assert table[r"\mathbf{X}"] == "rows of a block's input, one per token"
    assert r"Sizes: the input $\mathbf{X}_{\mathrm{in}}$ has $H_{\mathrm{in}}$ rows" in conv
    assert r"in these sums and below, $\mathbf{\bar{X}}$ is the input with its zeros" in conv
    assert r"{\kappa}_{\xi,\zeta} {\bar{X}}_{\xi + i \Delta,\zeta + j \Delta} + b" in conv
    assert r"\frac{\partial \mathcal{L}}{\partial {\bar{X}}_{i',j'}}" in conv
    assert r"\max_{0 \le \xi, \zeta \le \psi - 1} (X_{\mathrm{in}})_{\xi + i \Delta,\zeta + j \Delta}" in conv  # pooling
    assert not re.search(r"(?<!mathbf)\{X\}_|\\mathbf\{X\}(?!_)", conv)


def test_a_second_position_is_not_q(build, table):
    """q was a second position (the dot product of two encodings), beside the queries Q: it is pos', in the table and
    in the positional appendix's identities."""
    assert table["\\mathrm{pos}'"].startswith("a second position, beside $\\mathrm{pos}$") and "q" not in table
    appendix = notes.positional_section(build).appendix
    assert r"\cos({\omega}_{j} (\mathrm{pos} - \mathrm{pos}'))" in appendix
    assert not re.search(r"(?<![A-Za-z\\])q(?![A-Za-z])", re.sub(r"\\[A-Za-z]+|\\text\{[^}]*\}", " ", appendix))
