"""Issue 24 part 3 / issue 25: the notation reaches every formula of the notes, the notation table and the prose of
the recurrent sections included, through the door ``seqgrad latex --symbol`` (the step and the length renamed to k and
N, the recurrent weight renamed).  The math runs are read from the written .tex (``$...$``, ``\\[...\\]``, aligned
displays); words of the prose are not math."""
import re

import pytest

from seqgrad.crosscheck.cli import main

# one worker runs this module, so that its module fixtures are built once, not once per xdist worker
pytestmark = pytest.mark.xdist_group("notes_symbols")

#: text-like groups whose letters are words, not symbols (\\text{carry}, \\operatorname{diag}, \\mathrm{pos})
_WORDS = re.compile(r"\\(?:text|mathrm|operatorname|textrm|mbox|label|tag)\s*\{[^{}]*\}")


def math_runs(tex: str) -> list[str]:
    """Every formula of a document's body (before the appendix): inline ``$...$``, ``\\[...\\]`` and aligned displays."""
    body = re.sub(r"(?<!\\)%.*", "", tex.split("\\appendix")[0])
    runs = [m.group(2) for m in re.finditer(r"\\begin\{(align\*?|equation\*?|gather\*?)\}(.*?)\\end\{\1\}", body, re.S)]
    runs += re.findall(r"\\\[(.*?)\\\]", body, re.S)
    runs += re.findall(r"(?<![\\$])\$([^$]+)\$", body)
    return runs


def letters_of(run: str) -> str:
    """A formula with its words and command names blanked: what is left are its symbols' letters."""
    return re.sub(r"\\[A-Za-z]+", " ", _WORDS.sub(" ", run))


def test_math_runs_are_read_as_formulas():
    """The reader of the test itself: it finds a lone t in a formula and in a subscript, not in \\tanh or a word."""
    tex = r"a step $t$ and $h_{t-1}$ \begin{align*} x &= \tanh(z) \text{ at t}\end{align*} the t"
    found = [r for r in math_runs(tex) if re.search(r"(?<![A-Za-z])t(?![A-Za-z])", letters_of(r))]
    assert found == ["t", "h_{t-1}"]


@pytest.fixture(scope="module")
def renamed(tmp_path_factory):
    """The recurrent sections and the notation table, written by the command line with the step k, the length N and
    the recurrent weights renamed."""
    out = tmp_path_factory.mktemp("renamed") / "notes.tex"
    rc = main(["latex", str(out), "--sections", "rnn,paths,gates", "--standalone", "--no-appendix", "--jobs", "1",
               "--symbol", "t=k", "--symbol", "T=N", "--symbol", "w_h=v_{h}", "--symbol", "W_h=V_{h}"])
    assert rc == 0
    return out.read_text()


@pytest.mark.parametrize("letter", ["t", "T"])
def test_no_formula_keeps_the_old_step_or_length(renamed, letter):
    left = [r for r in math_runs(renamed) if re.search(rf"(?<![A-Za-z]){letter}(?![A-Za-z])", letters_of(r))]
    assert left == []


def test_the_new_letters_reach_prose_table_and_displays(renamed):
    runs = math_runs(renamed)
    assert "h_{k-1}" in renamed and "x_{N-1}" in renamed and r"\mathbf{J}_{k}" in renamed
    assert any(r == r"\mathbf{x}_{k}" for r in runs)  # the notation table's input and the prose's
    assert re.search(r"\$k\$ & step \(position\) index", renamed)


def test_no_formula_keeps_the_old_parameter_name(renamed):
    left = [r for r in math_runs(renamed) if re.search(r"(?<![A-Za-z])[wW]_\{?h\}?(?![a-z])", r)]
    assert left == []
    assert "v_{h}" in renamed and r"\mathbf{V}_{h}" in renamed


# -- one kind, one type: vectors and matrices bold, numbers plain (issue 25) ---------------------------------------

@pytest.fixture(scope="module")
def build(tmp_path_factory):
    from seqgrad.crosscheck.latex_parts import Build
    from seqgrad.crosscheck.latexdoc import notes_notation
    from seqgrad.derive.latex_settings import DEFAULT

    return Build(notation=notes_notation(DEFAULT), tex_dir=tmp_path_factory.mktemp("kinds"), figures_dir=None)


BOLD = re.compile(r"\\(?:mathbf|boldsymbol)\{")


def test_the_notation_table_sets_each_symbol_in_the_type_of_its_shape(build):
    """A symbol whose shape is a vector's or a matrix's is bold, as in the displays; a number is plain (the table
    printed x_t, h_t, g_t^h, J_j, kappa, Ghat, H_0 plain beside a shape 1 x d_h, while the displays set them bold)."""
    from seqgrad.crosscheck import notes

    rows = re.findall(r"^\$(.+?)\$ & .+? & \$(.+)\$ \\\\$", notes.notation_section(build), re.M)
    assert len(rows) > 60
    # a function's value (PE(pos), det(R)) is set as its name is, whatever its shape
    wrong = [(sym, shape) for sym, shape in rows if bool(BOLD.search(sym)) != (shape != "1") and "{(" not in sym]
    assert wrong == []
    symbols = {sym for sym, _ in rows}
    assert {r"\mathbf{x}_{t}", r"\mathbf{h}_{t}", r"\mathbf{g}^{h}_{t}", r"\mathbf{J}_{j}", r"\boldsymbol{\kappa}"} <= symbols
    assert {"u_{t}", "f_{t}", "w_{h}"} <= symbols  # the gated cells are written for scalar states: numbers


def test_the_prose_names_whole_matrices_in_bold(build):
    """The words of the decoder, the convolution and the worked example name whole matrices (the memory Z, the input
    X, the gradient G, the attention weights A) bold, as the displays print them; an entry (G_ij) stays plain."""
    from seqgrad.crosscheck import notes

    decoder = notes.decoder_section(build).body
    assert r"the encoder's output $\mathbf{H}_{\mathrm{enc}}$ (the memory)" in decoder and "output $H_{" not in decoder
    conv = notes.conv_section(build).body
    prose = "\n".join(line for line in conv.splitlines() if line[:1].isalpha())
    for bold, plain in ((r"\mathbf{X}_{\mathrm{in}}", r"X_{\mathrm{in}}"), (r"\mathbf{\bar{X}}", r"\bar{X}"),
                        (r"\mathbf{Y}", "Y"), (r"\mathrm{d}\mathbf{Y}", r"\mathrm{d}Y")):
        assert f"${bold}$" in prose and f"${plain}$" not in prose, plain
    assert r"kernel $\boldsymbol{\kappa}$" in prose and r"${\mathrm{d}Y}_{i,j}$" in conv  # an entry: plain
    encoder = notes.encoder_section(build).body
    assert r"\caption{The input rows $\mathbf{H}_{0}$" in encoder and r"weights $\mathbf{A}$ of head 1" in encoder
    assert "$H_0$" not in encoder and "$A$ of head" not in encoder


# -- the padding as a symbol, the size formula as a textbook writes it (issue 25) -------------------------------

def test_a_size_is_written_from_the_quantity_it_changes():
    """The printer's term order put the multiple first, 2 pad + W - k; a textbook writes W + 2p - K (the order
    rules of derive.term_order, not a hand-built string), while a polynomial keeps its higher degree first."""
    import sympy as sp

    from seqgrad.derive.term_order import textbook_order

    W, pad, k, j = sp.symbols("W pad k j", integer=True, positive=True)
    assert sp.sstr(textbook_order(2 * pad + W - k), order="none") == "W + 2*pad - k"
    assert sp.sstr(textbook_order(2 * sp.Symbol("pad") + sp.Symbol("W")), order="none") == "W + 2*pad"  # prose too
    assert sp.sstr(textbook_order(2 * j + 1), order="none") == "2*j + 1"  # an index: the number last
    d_ff, d = sp.symbols("d_ff d_model", integer=True)
    assert sp.sstr(textbook_order(2 * d_ff * d + d_ff), order="none") == "2*d_ff*d_model + d_ff"


def test_the_convolution_prints_the_padding_as_a_letter_and_its_sizes_in_textbook_order(build):
    from seqgrad.crosscheck import notes

    conv = notes.conv_section(build).body
    assert r"W_{\mathrm{out}} &= \left\lfloor{\frac{W_{\mathrm{in}} + 2 p - \psi}{\Delta}}\right\rfloor + 1" in conv
    assert r"$H_{\mathrm{in}} + 2 p$ rows by $W_{\mathrm{in}} + 2 p$ columns" in conv and r"\mathrm{pad}" not in conv
    table = notes.notation_section(build)
    assert re.search(r"^\$p\$ & rows and columns of zeros padded", table, re.M)
    # p means the padding only: the kernel's entries are (u, v) everywhere, a pooling window is psi by psi
    assert not re.search(r"\\kappa\}?_\{p|\\le p - 1|\$p\$ by \$p\$", conv)


# -- heads counted from 1, said; MHA and the Iverson bracket defined where first used (issue 25) ------------------

def test_the_counting_convention_is_said(build):
    from seqgrad.crosscheck import notes

    table = notes.notation_section(build)
    assert ("indices of steps, positions, rows, columns and entries start at 0 (a block of columns too), while heads "
            "and layers are counted from 1") in table
    encoder = notes.encoder_section(build).body
    assert "heads, head 1 to head $n_{\\mathrm{head}}$ as in the course" in encoder


def test_the_counting_convention_is_said_once_and_kept(build):
    """Issue 25, prose review, item 4: the notation section states the convention (entries and columns from 0,
    heads from 1); the attention and multi-head sections neither restate it nor count a column block from 1, and
    the block's printed first column is the column its first entry reads."""
    import sympy as sp

    from seqgrad.crosscheck import notes
    from seqgrad.derive.blocks import HEAD_INDEX
    from seqgrad.derive.rules import ColumnBlock

    for section in (notes.attention_section(build).body, notes.encoder_section(build).body):
        assert not re.search(r"(counted|numbered) from [01]", section)
    encoder = notes.encoder_section(build).body
    h, dv = sp.Symbol(HEAD_INDEX, integer=True, positive=True), sp.Symbol("d_v", integer=True, positive=True)
    dC = sp.MatrixSymbol("dC", 2, 2 * dv)
    block = ColumnBlock(dC, (h - 1) * dv, dv)
    first, last = block[0, 0].j, block[0, block.shape[1] - 1].j  # the columns of dC its first and last entries read
    said = f"its columns ${build.notation.latex(first)}$ to ${build.notation.latex(sp.expand(last))}$"
    assert said == "its columns $d_{v} (h - 1)$ to $d_{v} h - 1$" and said in encoder


def test_the_concatenation_and_mha_are_defined_before_they_are_used(build):
    from seqgrad.crosscheck import notes

    encoder = notes.encoder_section(build).body
    # said in words (the bracketed concatenation inline in the paragraph stood as tall as the display it preceded)
    concat = r"concatenated side by side into $\mathbf{C}$ ($T \times d_{v} n_{\mathrm{head}}$: the columns of $\mathbf{O}^{[1]}$"
    assert concat in encoder
    paragraph = encoder[encoder.rindex("\n", 0, encoder.index(concat)):encoder.index("\\begin{align*}", encoder.index(concat))]
    assert "\\middle|" not in paragraph
    assert encoder.index(concat) < encoder.index(r"\mathbf{C}       &= \left[\mathbf{O}^{[1]}")
    assert r"We write $\operatorname{MHA}{(\mathbf{X})}$ for this map, multi-head attention" in encoder
    decoder = notes.decoder_section(build).body
    said = decoder.index(r"The block below is written with the multi-head attention of Section~\ref{sec:encoder}")
    assert said < decoder.index(r"\operatorname{MHA}_{\mathrm{self}}{(\operatorname{LN}_{\mathrm{self}}")
    assert said < decoder.index(r"\operatorname{MHA}_{\mathrm{cross}}{(\operatorname{LN}_{\mathrm{cross}}")
    # the sections come in this order, so MHA is defined (encoder) before the decoder uses it
    assert [n for n, _ in notes.ORDER].index("encoder") < [n for n, _ in notes.ORDER].index("decoder")
    assert "MHA" not in "".join(notes.attention_section(build).body)


def test_the_iverson_bracket_is_defined_where_first_used(build):
    from seqgrad.crosscheck import notes

    conv = notes.conv_section(build).body
    defined = conv.index(r"The bracket $[(i', j') = {\nu}_{i,j}]$ is 1 where the statement in it holds and 0 elsewhere")
    used = conv.index(r"{\mathrm{d}Y}_{i,j} [(i', j') = {\nu}_{i,j}]")
    assert defined < used and conv.count(r"[(i', j') = {\nu}_{i,j}]") == 2
    table = notes.notation_section(build)
    assert re.search(r"^\$\[\(i', j'\) = \{\\nu\}_\{i,j\}\]\$ & Iverson's bracket: 1 where", table, re.M)


# -- one meaning per letter: k the positional offset, d the model width, p the padding (issue 25) ------------------

@pytest.fixture(scope="module")
def bodies(build):
    from seqgrad.crosscheck import notes

    return {name: section(build).body for name, section in notes.ORDER}


def test_k_is_only_the_positional_offset(bodies):
    """k was also a row of J_j (paths), LayerNorm's summation index and the kernel's side (convolution)."""
    lone_k = re.compile(r"(?<![A-Za-z])k(?![A-Za-z])")
    found = {name: [r for r in math_runs(body) if lone_k.search(letters_of(r.replace("d_{k}", "d")))]
             for name, body in bodies.items() if name != "positional"}
    assert {name: runs for name, runs in found.items() if runs} == {}
    assert any(lone_k.search(r) for r in math_runs(bodies["positional"]))  # the test can fail
    assert r"\mu_{t} &= \frac{\sum_{j=0}^{d - 1} {X}_{t,j}}{d}" in " ".join(bodies["residual"].split())


def test_the_derivative_d_is_upright_the_width_d_italic(bodies, build):
    """d is the model width; an ordinary derivative printed d/dpos in the same italic d."""
    import sympy as sp

    text = "\n".join(bodies.values())
    assert r"\frac{d}{d" not in text
    # (the positional section no longer prints d/dpos R(k) = 0, a property its appendix states no identity for:
    # the notes' printer itself is checked)
    pos = sp.Symbol("pos")
    assert build.notation.latex(sp.Derivative(sp.Function("R")(pos), pos)).startswith(r"\frac{\mathrm{d}}{\mathrm{d} \mathrm{pos}}")


def test_an_entry_of_a_matrix_is_a_number_set_plain(bodies):
    """LayerNorm's entries printed {\\mathbf{X}}_{i,j} (bold, as the matrix) beside the convolution's plain X_{ij}."""
    text = "\n".join(bodies.values())
    assert not re.search(r"\{\\(?:mathbf|boldsymbol)\{[^{}]*\}\}_\{", text)
    assert "{X}_{t,j}" in bodies["residual"]
