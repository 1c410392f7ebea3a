"""Issue 25, a lecturer's notation review: the symbols the text uses and the table lacked (B_mlp, Y_att, s_att, U_self,
U_cross), Z as the memory and as Z_mlp, the kernel side D beside the width d, the depth figure's J_l beside the
step Jacobian J_j, and LayerNorm's index i for a row in one display and a feature in the next.  Read from the
handout as ``seqgrad latex notes.tex --standalone`` writes it (the generic scan of symbols used against symbols
defined is tests/test_notes_front.py::test_every_symbol_the_body_prints_is_in_the_notation_table)."""
import re

import pytest

from test_notes_notation_clashes import formulas, part
from test_notes_symbols import letters_of


@pytest.fixture(scope="module")
def tex(standalone_notes):
    return standalone_notes.read_text(encoding="utf-8")


def _rows(tex: str) -> list[list[str]]:
    table = part(tex, "\\label{tab:notation}", "\\end{longtable}")
    return [line.rstrip(" \\").split(" & ") for line in table.splitlines() if line.count(" & ") == 2][1:]


@pytest.mark.parametrize("symbol, shape", [
    (r"\mathbf{B}_{\mathrm{mlp}}", r"T \times d"), (r"\mathbf{Z}_{\mathrm{mlp}}", r"T \times d_{\mathrm{ff}}"),
    (r"\mathbf{Y}_{\mathrm{att}}", r"T \times d"), (r"\mathbf{s}_{\mathrm{att}}", r"T \times d"),
    (r"\mathbf{U}_{\mathrm{self}}", r"T \times d"), (r"\mathbf{U}_{\mathrm{cross}}", r"T \times d"),
    (r"\mathbf{B}_{\mathrm{self}}", r"T \times d"), (r"\mathbf{B}_{\mathrm{cross}}", r"T \times d"),
])  # the LSTM's candidate c~_t had its row already; the scan reads accented letters now (test_notes_front)
def test_a_symbol_the_lecturer_missed_has_a_row_with_meaning_and_shape(tex, symbol, shape):
    rows = [r for r in _rows(tex) if r[0] == f"${symbol}$"]
    assert len(rows) == 1, symbol
    assert rows[0][1] and rows[0][2] == f"${shape}$"
    assert symbol in tex[tex.index("\\end{longtable}"):]  # the body uses it


def test_the_memory_has_a_symbol_of_its_own(tex):
    """Z is the MLP's pre-activation Z_mlp only; the memory a decoder reads has another symbol, the one of the table's
    memory row, in the decoder's text and formulas, the MHA_cross row and the encoder's sentence about the decoder."""
    bare_z = [f for f in formulas(tex) if re.search(r"\\mathbf\{Z\}(?!_\{\\mathrm\{mlp\}\})", f)]
    assert bare_z == []
    memory = next(s for s, m, _ in _rows(tex) if m.startswith("the encoder's output, the memory"))
    stem = re.fullmatch(r"\$(\\mathbf\{[A-Za-z]\})(?:_\{.*\})?\$", memory)
    assert stem and stem.group(1) != r"\mathbf{Z}"
    symbol = memory.strip("$")
    decoder = part(tex, "\\section{The Transformer decoder}", "\\section{")
    assert f"the memory ${symbol}$" in decoder and f"\\mathrm{{d}}{symbol}" in decoder
    assert re.search(r"\\mathbf\{K\}\s*&= " + re.escape(symbol) + r" \\mathbf\{W\}_\{K\}\^\{\\top\}", decoder)
    cross = next(s for s, *_ in _rows(tex) if s.startswith(r"$\operatorname{MHA}_{\mathrm{cross}}"))
    assert symbol in cross
    encoder = part(tex, "\\section{The Transformer encoder block}", "\\section{")
    assert f"other rows ${symbol}$ (the decoder's memory)" in encoder


def test_the_memorys_symbol_comes_from_one_place():
    """The table, the decoder section's renames and the derivations read one name, derive.blocks.MEMORY."""
    from seqgrad.crosscheck import notes
    from seqgrad.derive.blocks import MEMORY

    assert notes.SECTION_SYMBOL_NAMES["decoder"]["Z"] == MEMORY and not MEMORY.startswith("Z")


def _standing(letter: str):
    """A pattern of ``letter`` standing as a symbol in a formula: a Latin letter not in a word or a command name, a
    Greek one as its command (``\\psi``, not ``\\psi`` in a longer name)."""
    if letter.startswith("\\"):
        return lambda f: re.search(re.escape(letter) + r"(?![A-Za-z])", f)
    return lambda f: re.search(r"(?<![A-Za-z])%s(?![A-Za-z])" % letter, letters_of(f))


def _other_case(letter: str) -> str:
    return "\\" + letter[1:].swapcase()[0] + letter[2:] if letter.startswith("\\") else letter.swapcase()


def test_the_kernel_side_shares_its_letter_with_nothing(tex):
    """The kernel side's letter stands as a symbol nowhere but in the convolution's text (its section and its appendix)
    and the table's rows of the convolution, nor in the other case anywhere: D sat beside the width d, and the
    letters still free in the body (N, q) are the lesson's number of layers and its query in the appendix."""
    rows = _rows(tex)
    side = next(s for s, m, _ in rows if m.startswith("side of a convolution kernel"))
    letter = re.fullmatch(r"\$(\\?[A-Za-z]+)\$", side).group(1)
    rest = re.sub(r"\\(?:sub)?section\{The convolution layer\}.*?(?=\\(?:sub)?section|\\begin\{thebibliography\}|$)", "",
                  tex.replace(part(tex, "\\label{tab:notation}", "\\end{longtable}"), ""), flags=re.S)
    assert "\\section{The convolution layer}" not in rest and "\\section{Notation}" in rest
    used = _standing(letter)
    assert not [f for f in formulas(rest) if used(f)]
    others = [r for r in rows if not ("convolution" in r[1] or "pooling" in r[1] or "kernel" in r[1])]
    assert not [r[0] for r in others if used(r[0])]
    pair = _standing(_other_case(letter))
    assert not [f for f in formulas(tex) if pair(f)]


def test_the_depth_figure_and_the_text_print_one_block_jacobian():
    """The depth figure's axis and caption and the notation table name the Jacobian of block l with one symbol of
    derive.residual, not J_l, which reads as the step Jacobian J_j of a recurrent cell."""
    from seqgrad.crosscheck.figures import depth
    from seqgrad.crosscheck.notes import notation_rows
    from seqgrad.derive.latex_settings import Notation
    from seqgrad.derive.residual import block_jacobian

    caption = depth.CAPTIONS["jacobian-product-singular-values-pre-norm"]
    assert "`J_l`" not in caption and "{Jl}" in caption and depth.FORMULAS["Jl"] == block_jacobian()
    printed = Notation().latex(block_jacobian("L"))
    assert printed in depth.product_label() and printed != Notation().latex(sp_matrix("J_L"))
    assert block_jacobian() in [row[0] for row in notation_rows(None)]


def sp_matrix(name):
    import sympy as sp

    return sp.MatrixSymbol(name, 2, 2)


def test_the_depth_figure_draws_the_label_it_is_given():
    """numeric draws the axis label the figure set gives it (the notes' symbol), not a hand-written J_L ... J_1."""
    from matplotlib.figure import Figure

    from seqgrad.crosscheck.figures import depth as figure_set
    from seqgrad.numeric import depth, figures_depth

    study = depth.JacobianStudy(sizes=depth.Sizes(T=1, D=2, F_width=2), depths=(1,))
    study.singular_values.update({(p, r, 1): [2.0, 1.0] for p in depth.PLACEMENTS for r in (True, False)})
    ax = Figure().subplots()
    figures_depth.plot_singular_values(ax, study, "pre-norm", figure_set.product_label())
    assert ax.get_ylabel() == figure_set.product_label() and r"\mathrm{block}" in ax.get_ylabel()


def test_layernorm_indexes_the_row_with_t_and_the_features_with_i_and_j(tex):
    """LayerNorm's row is t throughout (its statistics mu_t, v_t, s_t, the entries X_{t,j}), as where the text fixes
    one row t; i and j index only the features, and the table's rows say the same."""
    residual = part(tex, "\\section{LayerNorm and residual paths}", "\\subsection{Residual paths}")
    runs = formulas(residual)
    assert not [f for f in runs if re.search(r"(?:mu|v|s)_\{i\}|\{X\}_\{i,|\{\\hat\{x\}\}_\{i,", f)]
    assert any(re.search(r"\\mu_\{t\} +&= \\frac\{\\sum_\{j=0\}\^\{d - 1\} \{X\}_\{t,j\}\}\{d\}", f) for f in runs)
    assert "row $t$" in residual and "$i$ and $j$ both index features" in residual
    rows = {s: m for s, m, _ in _rows(tex)}
    assert rows[r"$\mu_{t}$"] == "mean of the $d$ entries of row $t$" and r"$\mu_{i}$" not in rows
    assert r"$s_{t}$" in rows and r"$v_{t}$" in rows


def test_a_generic_map_of_the_table_has_the_shape_of_what_it_is_applied_to(tex):
    """A lecturer's review of Table 1: softmax(X) was listed T x d, but it is applied to the T x T scores too; diag(a)
    T x T, I d x d and 0 1 x d, while each is as large as what it meets. A row-wise map has the shape of its argument
    X, an entrywise one (the sigmoid, the Hadamard product) that of its argument or factors, and diag, I and 0 have no
    fixed size; rowsum, mean and s_eps say one row index, t."""
    import sympy as sp

    from seqgrad.crosscheck.notes import Shape, notation_rows
    from seqgrad.derive import rules

    generic = (rules.RowSum, rules.RowMean, rules.RowStd, rules.Normalize, sp.DiagMatrix, sp.Identity, sp.ZeroMatrix,
               sp.HadamardProduct, sp.Sum)
    found = [(sym, shape) for sym, _, shape, *_ in notation_rows(None)
             if isinstance(sym, generic) or getattr(sym, "func", None) in (sp.Function("softmax"), sp.Function("sigma"))]
    assert len(found) == 11
    assert [sym for sym, shape in found if isinstance(shape, Shape)] == []  # words, no fixed T x d
    rows = {s: (m, shape) for s, m, shape in _rows(tex)}
    for symbol in (r"\operatorname{softmax}{(\mathbf{X})}", r"\operatorname{rowsum}(\mathbf{X})",
                   r"\operatorname{mean}(\mathbf{X})", r"s_{\epsilon}(\mathbf{X})", r"\operatorname{normalize}(\mathbf{X})"):
        assert rows[f"${symbol}$"][1] == r"that of $\mathbf{X}$", symbol
    for symbol in (r"\operatorname{diag}(\mathbf{a})", r"\mathbf{I}", r"\mathbf{0}"):
        assert "\\times" not in rows[f"${symbol}$"][1] and "$T" not in rows[f"${symbol}$"][1], symbol
    assert rows[r"$\operatorname{diag}(\mathbf{a})$"] == (r"diagonal matrix with the entries of a row $\mathbf{a}$ on its "
                                                      "diagonal, one row and one column per entry", "square")
    row_maps = [m for s, (m, _) in rows.items() if m.startswith("every entry of row")]
    assert len(row_maps) == 3 and all(m.startswith("every entry of row $t$") for m in row_maps)
    assert rows[r"$\operatorname{rowsum}(\mathbf{X})$"][0] == r"every entry of row $t$ is the sum of row $t$ of $\mathbf{X}$"
