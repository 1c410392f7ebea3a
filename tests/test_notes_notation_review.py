"""A lecturer's notation review of the complete notes (the document with its appendix): one letter per meaning (the GRU
candidate's n was also a convolution's column index), the figures' matrices bold as in the text, one index t for a
query's row, and the symbols used undefined (the depth figures' superscript (l), PE_{0...3}, the footnote's A(P + Pi X),
pi, A_M).  Read from the handout as ``seqgrad latex notes.tex --standalone`` writes it, its appendix included (the
pattern of tests/test_notes_notation_gaps.py)."""
import re

import pytest

from test_notes_notation_clashes import formulas, part
from test_notes_notation_gaps import _rows, tex  # noqa: F401 (tex: the handout's source, a fixture)
from test_notes_symbols import letters_of


def _standing(letter: str, text: str) -> list[str]:
    """The formulas of ``text`` in which the Latin ``letter`` stands as a symbol (not in a word or a command)."""
    return [f for f in formulas(text) if re.search(r"(?<![A-Za-z])%s(?![A-Za-z])" % letter, letters_of(f))]


def test_the_letter_n_names_the_gru_candidate_only(tex):
    """n indexes the GRU's candidate (z_{n,t}, w_xn); a convolution's input entry is indexed by other letters, in its
    section, its appendix and the table, and the table lists n once, with the gate."""
    rows = _rows(tex)
    column = next(s for s, m, _ in rows if m.startswith("column of an entry of a convolution's input"))
    row = next(s for s, m, _ in rows if m.startswith("row of an entry of a convolution's input"))
    assert column != "$n$" and row != "$n$" and column != row
    assert not [s for s, *_ in rows if s == "$n$"]
    conv = part(tex, "\\section{The convolution layer}", "\\section{") + part(
        tex, "\\subsection{The convolution layer}", "\\subsection{")
    assert _standing("n", conv) == []
    assert column.strip("$") in "\n".join(formulas(conv))  # the new letter is the one the formulas use
    assert "z_{n,t}" in tex and "w_{xn}" in tex  # the candidate keeps its n


def test_the_query_row_is_t_as_in_the_figures(tex):
    """The attention figures index a query's row t (A_tj); the table of head 1's weights, the mask and the decoder's
    causality say t too, never i."""
    assert "row $i$ is the query" not in tex and "row $t$ is the query, column $j$ the source" in tex
    attention = part(tex, "\\section{Attention}", "\\section{")
    assert "{M}_{t,j} = -\\infty$ for $j > t$" in attention and "{M}_{i,j}" not in attention
    decoder = part(tex, "\\section{The Transformer decoder}", "\\section{")
    assert "output row $t$ depends on no target row $j > t$" in decoder
    assert "row $i$" not in decoder and "position $i$" not in decoder


def test_the_layer_superscript_of_the_depth_figures_is_defined(tex):
    """The depth figures write W_2^(l) (their axes) and W_2^(L): the table defines the layer index l and the
    superscript in parentheses, and the caption of the handout's depth figure names W_2^(L)."""
    rows = _rows(tex)
    layer = [m for s, m, _ in rows if s == "$l$"]
    assert len(layer) == 1 and "$\\mathbf{W}^{(l)}_{2}$" in layer[0] and "superscript in parentheses" in layer[0]
    residual = part(tex, "\\section{LayerNorm and residual paths}", "\\section{")
    caption = residual[residual.index("\\caption{", residual.index("gradient-near-output-vs-depth")):]
    assert "$\\mathbf{W}^{(L)}_{2}$" in caption[:caption.index("\\label")]


def test_the_paired_encoding_is_defined_where_it_is_used_and_in_the_table(tex):
    """PE_{0...3} (the encoding's paired coordinates at d = 5) is said to be coordinates 0 to 3 of PE(pos) at its first
    use, and the table's row of PE names it."""
    paired = "\\operatorname{PE}_{0 \\ldots 3}"
    pe = next(m for s, m, _ in _rows(tex) if s.startswith("$\\operatorname{PE}{(\\mathrm{pos})}"))
    assert paired in pe and "$d = 5$" in pe
    positional = part(tex, "\\section{Positional encoding}", "\\section{")
    first = positional.index(paired)
    assert positional[first:first + 200].count("the row of the paired coordinates $0$ to $3$ of "
                                               "$\\operatorname{PE}{(\\mathrm{pos})}$") == 1


def test_the_attention_footnote_uses_no_symbol_of_the_appendix_alone(tex):
    """The footnote of the attention section named its refuted identities by formulas of the appendix's own symbols
    (A(P + Pi X), pi, A_M, defined nowhere); it names them in words, with their pages."""
    attention = part(tex, "\\section{Attention}", "\\section{")
    start = attention.index("\\footnote{")
    note = attention[start:attention.index("Details in Appendix", start)]
    assert "refuted by an exact counterexample" in note
    assert not re.search(r"\\Pi|\\pi|A_\{M\}|A\{\(", note), note
    assert note.count("permutation equivariance") == 2 and note.count("\\pageref{") == 2


@pytest.mark.parametrize("stem", ["fig09_S", "fig10_A", "fig11_A_causal"])
def test_the_attention_figures_set_their_matrices_bold(stem, monkeypatch, tmp_path):
    """The titles named S, A, QK^T and M in italic (mathtext) where the text sets the matrices bold."""
    from test_notes_figures import _drawn

    fig = _drawn(monkeypatch, "encoder", stem, tmp_path)
    title = next(ax.get_title() for ax in fig.axes if ax.get_title())
    math = " ".join(re.findall(r"\$([^$]*)\$", title))
    assert math and re.search(r"\\mathbf\{[SA]\}", math)
    bare = re.sub(r"\\mathbf\{[A-Z]\}|\\[A-Za-z]+(?:\{[a-z]+\})?", " ", math)
    assert not re.search(r"[A-Z]", bare), title


def test_the_appendix_writes_the_rotation_on_rows_with_det(tex):
    """The appendix printed the shift in column form, [sin; cos](pos + k) = B [sin; cos](pos), and the determinant
    as |R(a)|, where the body writes rows, PE(pos + k) = PE(pos) R(k), and det: one form, the body's."""
    appendix = part(tex, "\\subsection{Positional encoding}\\label{app:positional}", "\\subsection{")
    column = r"\cos(k {\omega}_{j}) & \sin(k {\omega}_{j})\\- \sin(k {\omega}_{j})"  # the columns' rotation
    assert column not in appendix and r"\sin({\omega}_{j} \mathrm{pos})\\\cos" not in appendix
    assert "\\left|" not in appendix
    assert "\\operatorname{det}{(\\mathbf{R}{(a)})} &= 1" in appendix
    row = r"\left[\begin{matrix}\sin({\omega}_{j} \mathrm{pos}) & \cos({\omega}_{j} \mathrm{pos})\end{matrix}\right] "
    assert row + r"\left[\begin{matrix}\cos(k {\omega}_{j}) & - \sin(k {\omega}_{j})" in appendix


def test_layernorms_normalized_rows_are_a_capital_matrix(tex):
    """x-hat, lower case and bold, was a T x d matrix: the normalized rows are X-hat, capital as every matrix of rows,
    in the table, the displays and the blocks' subscripted copies; the lower-case x-hat_i are the entries of one row."""
    rows = _rows(tex)
    normalized = [r for r in rows if r[1].startswith("normalized rows of LayerNorm")]
    assert len(normalized) == 1 and normalized[0][0] == r"$\mathbf{\hat{X}}$" and normalized[0][2] == r"$T \times d$"
    assert r"\mathbf{\hat{x}}" not in tex
    residual = part(tex, "\\section{LayerNorm and residual paths}", "\\subsection{Residual paths}")
    assert r"\mathbf{\hat{X}} &= \operatorname{normalize}(\mathbf{X})" in residual
    assert r"{\hat{X}}_{t,j} &= \frac{{X}_{t,j} - \mu_{t}}{s_{t}}" in residual
    assert r"${\hat{x}}_{i} = {\hat{X}}_{t,i}$" in residual  # a row's entry is the matrix's entry


def test_the_total_derivative_has_no_upright_d(tex):
    """dc_1/dc_0 with an upright d read as the adjoint dX (the gradient of the loss): every derivative has a curly d,
    the partial one at fixed h_0 says so by its subscript, and the table defines both."""
    gates = part(tex, "\\section{Gated cells: GRU and LSTM}", "\\section{")
    assert "\\mathrm{d} c_{" not in gates
    held = r"\left(\frac{\partial c_{1}}{\partial c_{0}}\right)_{h_{0}}"
    assert held + " &= f_{1}" in gates
    assert r"\frac{\partial c_{1}}{\partial c_{0}} &= f_{1} + \frac{\partial c_{1}}{\partial h_{0}}" in gates
    assert [m for s, m, _ in _rows(tex) if s == r"$(\partial c_{1}/\partial c_{0})_{h_{0}}$"]  # in a line: a slash


def test_no_display_gives_one_left_side_two_numbers(standalone_notes):
    """The LSTM's worked example printed dc_1/dc_0 = 0.608 and, two lines on, dc_1/dc_0 = 0.568: the first, the
    partial derivative at fixed h_0, had lost its subscript.  In no display does one left-hand side equal two
    different numbers."""
    source = standalone_notes.read_text(encoding="utf-8")
    number = re.compile(r"=\s*(-?\d+(?:\.\d+)?(?:\s*\\cdot\s*10\^\{-?\d+\})?)\s*$")
    twice = []
    for m in re.finditer(r"\\begin\{(align\*?)\}(.*?)\\end\{\1\}", source, re.S):
        values: dict[str, str] = {}
        for row in re.split(r"\\\\\*?", m.group(2)):
            lhs, _, rhs = row.partition("&")
            lhs, value = " ".join(lhs.split()), number.match(rhs.strip())
            if lhs and value:
                if values.setdefault(lhs, value[1]) != value[1]:
                    twice.append((lhs, values[lhs], value[1]))
    assert twice == []


def test_rmsnorm_at_a_constant_row_scales_a_uniform_change_by_epsilon_over_rms_squared(standalone_notes):
    """The notes said RMSNorm's Jacobian "still" sends a uniform change to 0 at a constant row: true for epsilon = 0
    alone.  They now give the factor, epsilon / rms(x)^2; torch autograd of y = gamma x / rms(x) agrees."""
    import torch

    d, c, eps = 5, 0.3, 1e-2
    gamma = torch.linspace(0.5, 1.5, d, dtype=torch.float64)
    rmsnorm = lambda x: gamma * x / torch.sqrt((x ** 2).mean() + eps)  # noqa: E731
    x = torch.full((d,), c, dtype=torch.float64)
    J = torch.autograd.functional.jacobian(rmsnorm, x)
    rms2 = c ** 2 + eps
    # J 1 = (gamma / rms) * (epsilon / rms^2): the change 1, scaled entry by entry by gamma / rms as every output is
    assert torch.allclose(J @ torch.ones(d, dtype=torch.float64), gamma / rms2 ** 0.5 * (eps / rms2))
    body = standalone_notes.read_text(encoding="utf-8").split("\\appendix")[0]
    said = " ".join(body[body.index("RMSNorm (Zhang"):].split("\\end{")[0].split())
    assert "it still does at a constant row" not in said
    assert r"$\epsilon/\operatorname{rms}^{2}{(x)}$" in said and "0 only without $\\epsilon$" in said
    # the whole factor, gamma_i epsilon / rms^3 (J 1 above), and the gamma_i / rms every other change gets
    assert torch.allclose(J @ torch.ones(d, dtype=torch.float64), gamma * eps / rms2 ** 1.5)
    v = torch.tensor([1.0, -2.0, 0.5, 0.25, 0.25], dtype=torch.float64)  # orthogonal to the constant row
    assert abs(float(v.sum())) < 1e-15 and torch.allclose(J @ v, gamma / rms2 ** 0.5 * v)
    assert r"multiplied by $\epsilon {\gamma}_{i}/\operatorname{rms}^{3}{(x)}$" in said
    assert r"times the ${\gamma}_{i}/\operatorname{rms}{(x)}$ that multiplies a change orthogonal to the row" in said


def test_the_jacobian_norms_caption_says_where_the_measured_norm_lies():
    """Fig. 4's caption said the norm of the product "can be far smaller than the bounds", while that norm is the
    plotted third curve: it now says that norm falls far below both as the distance grows, as the data do."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from seqgrad.crosscheck.figures import paths
    from seqgrad.numeric.figures_paths import plot_jacobian_norms

    measured, product, pascanu = (line.get_ydata() for line in plot_jacobian_norms(Figure().add_subplot()))
    assert measured[0] > product[0] / 2 and measured[-1] < 1e-3 * product[-1] < 1e-3 * pascanu[-1]
    caption = paths.CAPTIONS["jacobian-product-norms"]
    assert "the norm of the product itself falls far below both as the distance grows" in caption


def test_the_receptive_field_counts_layers_and_j_is_said_once_per_section(tex):
    """A lecturer's review: j named the layers of the receptive field's product, a column, a step and a coordinate
    pair. The product runs over the layers l' below layer l (the table says so, and prints the same product), and
    the table's row of j gives one meaning per section; the convolution section's j is its output column only."""
    conv = part(tex, "\\section{The convolution layer}", "\\section{")
    rf = next(f for f in formulas(conv) if "{\\mathrm{rf}}_{L} &=" in f)
    assert not re.search(r"(?<![A-Za-z])j(?![A-Za-z])", letters_of(rf))
    assert r"\prod_{l'=1}^{l - 1} {\Delta}_{l'}" in rf
    rows = {s: m for s, m, _ in _rows(tex)}
    assert r"$\prod_{l'=1}^{l - 1} {\Delta}_{l'}$" in rows and "$l'$: a layer below it" in rows["$l$"]
    j = rows["$j$"]
    assert "a second index" in j and "a step in the path products ($J_{j}$)" in j and r"a coordinate pair in the positional encoding ($\omega_{j}$)" in j


def _inline_runs(tex: str) -> list[str]:
    """The inline formulas ``$...$`` of the whole handout, body, tables, captions and appendix (not the displays)."""
    text = re.sub(r"(?<!\\)%.*", "", tex)
    text = re.sub(r"\\begin\{(align\*?|equation\*?|gather\*?)\}.*?\\end\{\1\}|\\\[.*?\\\]", " ", text, flags=re.S)
    return re.findall(r"(?<![\\$])\$([^$]+)\$", text)


def test_inline_math_writes_fractions_on_the_line(tex):
    """A lecturer's review: stacked fractions and roots over a sum in running text made the lines uneven
    (the squared error, dL/dw_h, 1/sqrt(d_k), rms(x), eps/(eps + v)). Every inline formula, table cells included,
    is printed with fractions on the line, bracketed where needed; the displays keep their stacked fractions."""
    runs = _inline_runs(tex)
    assert len(runs) > 1000
    assert [r for r in runs if re.search(r"\\[dt]?frac", r)] == []
    assert [r for r in runs if re.search(r"\\sqrt\{[^}]*\\sum", r)] == []
    for written in (r"v/(\epsilon + v)", r"1/\sqrt{d_{k}}", r"1/\sqrt{L}", r"\partial \mathcal{L}/\partial w_{h}",
                    r"\mathcal{L} = (\widehat{y} - y)^{2}/2", r"\operatorname{rms}{(x)} = (\sum_{j=0}^{d - 1} {x}_{j}^{2}/d + \epsilon)^{1/2}"):
        assert any(written in r for r in runs), written
    assert r"\frac{1}{\sqrt{d_{k}}}" in tex  # a display (the scores) keeps its fraction
