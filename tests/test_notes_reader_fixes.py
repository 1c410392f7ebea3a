"""The defects a lecturer found in the notes of ``seqgrad latex``, each guarded where its text is made.

The ones vector of LayerNorm's parameter gradients is a row (``1ᵀ G``), the row statistics are defined where
they are used, the path product says its order and its layout, the notation table has one symbol per meaning
(``rho`` the bound on a factor, ``r_t`` the reset gate) and ``epsilon = 10^{-5}`` set as math, the positional
table's ``R(k)`` and ``alpha(k)`` are defined, and the gated cells' worked examples name their paths.
"""

from __future__ import annotations

import re

import sympy as sp

from seqgrad.crosscheck import notes
from seqgrad.crosscheck.latexdoc import NOTES_LETTERS, NOTES_MATRICES
from seqgrad.crosscheck.latex_parts import Build
from seqgrad.derive import blocks
from seqgrad.derive.latex_settings import DEFAULT, OrderedProduct


def _build(tmp_path, base=None):
    """A build with the notes' notation (s the standard deviation, sigma the sigmoid), as ``seqgrad latex`` has."""
    base = DEFAULT if base is None else base
    notation = base.replace(letters={**base.letters, **NOTES_LETTERS}, vectors=base.vectors | NOTES_MATRICES)
    return Build(notation=notation, tex_dir=tmp_path, figures_dir=None)


def test_the_row_of_ones_prints_as_the_transpose_of_the_column():
    ln = blocks.layernorm_program()
    lines = {str(d.target): DEFAULT.latex(d.value) for d in ln.backward_lines()}
    assert lines["dgamma"].startswith(r"\mathbf{1}^{\top} ")
    assert lines["dbeta"] == r"\mathbf{1}^{\top} \mathbf{G}"
    assert lines["dXhat"].endswith(r"(\mathbf{1} \boldsymbol{\gamma})")  # the column repeats gamma: no transpose
    T = sp.Symbol("T", positive=True, integer=True)
    assert DEFAULT.latex(sp.OneMatrix(1, 1)) == r"\mathbf{1}" and DEFAULT.latex(sp.OneMatrix(T, 1)) == r"\mathbf{1}"


def test_an_ordered_product_prints_its_factors_latest_first():
    j, s, t = sp.symbols("j s t", integer=True)
    assert DEFAULT.latex(OrderedProduct(sp.Indexed("J", j), j, s + 1, t)) == r"{J}_{t} {J}_{t - 1} \cdots {J}_{s + 1}"
    assert str(OrderedProduct(sp.Indexed("J", j), j, 1, 3)) == "J[3]*J[2]*...*J[1]"


def test_the_notation_table_defines_what_the_body_uses(tmp_path):
    table = notes.notation_section(_build(tmp_path))
    assert "1e-5" not in table and r"$\epsilon = 10^{-5}$" in table
    assert "the matrix after the d (same shape)" not in table
    for symbol in (r"$\operatorname{mean}(\mathbf{X})$", r"$\operatorname{rowsum}(\mathbf{X})$",
                   r"$\operatorname{normalize}(\mathbf{X})$", r"$s_{\epsilon}(\mathbf{X})$", r"$\mu_{t}$", r"$v_{t}$",
                   r"$\rho$", r"$\mathrm{pos}'$", r"$\mathbf{E}_{\mathrm{seq}}$", r"$\mathbf{P}$", "$d$", "$d_{\\mathrm{ff}}$", r"$\lvert\theta\rvert_{\mathrm{layer}}$",
                   "$L$", r"$\tau$"):
        assert "\n" + symbol + " & " in table, symbol
    assert "\n" + r"$\mathbf{1}^{\top}$ & row of ones" in table and r"& $1 \times T$ \\" in table
    symbols = [line.split(" & ")[0] for line in table.splitlines() if line.count(" & ") == 2 and not line.startswith("symbol & ")]
    assert "$r$" not in symbols  # r is the reset gate's letter only
    assert "$s$" not in symbols and "$P_{layer}$" not in symbols  # s: a standard deviation only; P: the positions only
    assert len(symbols) == len(set(symbols))
    assert r"$d_{\mathrm{model}}$" not in symbols  # the model width has one name, d


def test_layernorm_gives_its_row_statistics_and_the_row_of_ones(tmp_path):
    body = notes.residual_section(_build(tmp_path)).body
    assert r"\mathrm{d}\boldsymbol{\gamma} &= \mathbf{1}^{\top} (\mathrm{d}\mathbf{Y} \odot \mathbf{\hat{X}})" in body
    flat = " ".join(body.split())  # the alignment's padding aside
    # the row is t, as where the text fixes one row t; j its feature (i and j: two features in the Jacobian)
    assert r"\mu_{t} &= \frac{\sum_{j=0}^{d - 1} {X}_{t,j}}{d}" in flat  # an entry, a number: plain
    assert r"v_{t} &= \frac{\sum_{j=0}^{d - 1} ({X}_{t,j} - \mu_{t})^{2}}{d}" in flat
    assert r"s_{t} &= \sqrt{\epsilon + v_{t}}" in flat
    assert r"{\hat{X}}_{t,j} &= \frac{{X}_{t,j} - \mu_{t}}{s_{t}}" in flat  # an entry with a comma, as X_{t,j}


def test_the_path_product_says_its_order_layout_and_bound(tmp_path):
    body = notes.paths_section(_build(tmp_path)).body
    assert r"J_{t} J_{t-1} \cdots J_{\tau+1}" in body and "numerator layout" in body
    assert r"$\rho^{t - \tau}$" in body and r"state $h_{\tau}$" in body and "h_{s}" not in body  # tau: the earlier step
    assert r"\left|{g^{h}_{0}}\right| &\le \rho^{3} \left|{g^{h}_{3}}\right|" in body
    assert "at most $r$" not in body
    # the product and the factors of both cells are one display, aligned together
    first = body[body.index("\\begin{align*}"):body.index("\\end{align*}")]
    # the product of matrices written out in its order in the display itself (a reader reads \\prod lowest index first)
    assert r"J_{t} J_{t-1} \cdots J_{\tau+1}" in first and "\\prod_" not in first
    assert "(scalar cell)" in first and "(vector cell)" in first


def test_the_gated_examples_name_their_paths(tmp_path):
    body = notes.gates_section(_build(tmp_path)).body
    assert "through the gates" not in body and "carry alone" not in body
    assert r"through the candidate, by its recurrent weight (the term with $w_{hn} r_{1}$)" in body
    assert "at fixed $h_{0}$ is the carry path alone" in body


def test_the_positional_table_defines_r_and_alpha(tmp_path):
    body = notes.positional_section(_build(tmp_path)).body
    before_table = body[:body.index("\\begin{tabular}")]
    assert r"\mathbf{R}{(k)} &= \operatorname{blockdiag}{(\mathbf{R}_{j}{(k)})}" in before_table  # j: the pair, as omega_j
    assert r"$\alpha{(k)}$ stands for any number that depends on $k$ alone" in before_table


def test_the_appendix_lists_every_imprecise_or_false_statement_with_its_cyrillic_typeset():
    """Issue 29: each false or imprecise statement of the texts appears in the notes' appendix, its Russian words
    typeset (never as U+ codes)."""
    from seqgrad.crosscheck import latexdoc
    from seqgrad.crosscheck.claims_statements import statements
    from seqgrad.derive.latex_settings import Notation

    class B:
        notation = Notation()

    tex = latexdoc._statement_errata(B())
    wrong = [s for s in statements() if s.verdict in ("imprecise", "false")]
    # issue 25 (item 21): one item per correction, each listing every statement it applies to
    corrections = {c for s in wrong for c in s.corrections}
    assert wrong and tex.count("\\item ") == len(corrections) < len(wrong)
    assert tex.count("\\textbf{imprecise}") + tex.count("\\textbf{false}") >= len(wrong)
    assert "U+04" not in tex and "\\seqgradcyr{" in tex
    assert all(f"\\textbf{{{s.verdict}}}" in tex for s in wrong)


def test_one_letter_one_meaning_across_sections(tmp_path):
    """The last lecturer review: the kernel is kappa (K: the keys), a cell's widths are d_x, d_h, d_y (H: the rows
    of an encoder block), a positional encoding's width is the model width d."""
    b = _build(tmp_path)
    conv = notes.conv_section(b).body
    # the kernel is kappa, its side psi (a number; the keys are the matrix K), its entries (xi, zeta) wherever indexed
    assert r"{\kappa}_{\xi,\zeta}" in conv and r"\partial {\kappa}_{\xi,\zeta}" in conv and "{K}_{\\xi" not in conv
    assert r"kernel $\boldsymbol{\kappa}$ is $\psi$ by $\psi$" in conv and r"\mathbf{K}" not in conv
    rnn = notes.rnn_section(b).body
    assert r"$1 \times d_{x}$" in rnn and r"$1 \times d_{h}$" in rnn and r"\times D$" not in rnn
    positional = notes.positional_section(b).body
    assert r"10000^{- \frac{2 j}{d}}" in positional and "$d = 5$" in positional and "{D}" not in positional
    table = notes.notation_section(b)
    symbols = [line.split(" & ")[0] for line in table.splitlines() if line.count(" & ") == 2]
    assert r"$\boldsymbol{\kappa}$" in symbols and r"$\psi$" in symbols and "$D$" not in symbols  # the kernel's side
    assert r"$\mathbf{K}$" in symbols and "$K$" not in symbols  # the keys, a matrix: K has no second meaning
    assert all(r"\times H$" not in line and r"H \times" not in line for line in table.splitlines() if "$\\mathbf{H}$" not in line)


def test_a_section_letter_leaves_the_users_rename_and_records_what_it_applied(tmp_path):
    from seqgrad.derive.latex_settings import Notation

    b = _build(tmp_path)
    assert notes.with_section_letters(b, "paths") is b  # a section without letters or names of its own
    assert dict(notes.with_section_letters(b, "rnn").notation.symbol_names) == {"W_o": "W_{y}", "b_o": "b_{y}"}
    assert notes.with_section_letters(_build(tmp_path, Notation(symbol_names={"W_o": "V"})), "rnn").notation.symbol_names["W_o"] == "V"
    own = notes.with_section_letters(b, "conv")
    assert own.notation.letters["K"] == r"\kappa" and "K" not in b.notation.letters
    own.notation.latex(sp.Symbol("K_pq"))
    assert "K" in b.notation._used  # one record for the document
    user = _build(tmp_path, Notation(letters={"K": "W"}))
    assert notes.with_section_letters(user, "conv").notation.letters["K"] == "W"


def test_the_general_bptt_comes_before_the_three_step_example(tmp_path):
    """Issue 25, review item 1: section 2 states BPTT for every T first (the adjoint recursion, the weight gradients
    as sums over t with the bias, the ordered product of Jacobians and the double sum over t and tau), then T = 3."""
    body = notes.rnn_section(_build(tmp_path)).body
    example = body.index("Worked example: three steps")
    general = body[:example]
    assert r"\mathbf{g}^{h}_{t}                                   &= \mathbf{e}_{t} \mathbf{W}_{y} + \mathbf{g}^{z}_{t+1} \mathbf{W}_{h}" in general
    for lhs in (r"\mathbf{W}_{h}} &= \sum_{t=0}^{T - 1} (\mathbf{g}^{z}_{t})^{\top} \mathbf{h}_{t-1}",
                r"\mathbf{b}_{h}} &= \sum_{t=0}^{T - 1} \mathbf{g}^{z}_{t}",
                r"\frac{\partial \mathbf{h}_{t}}{\partial \mathbf{h}_{\tau}} &= \mathbf{J}_{t} \mathbf{J}_{t-1} \cdots \mathbf{J}_{\tau+1}",
                r"\mathbf{W}_{h}} &= \sum_{t=0}^{T - 1} \sum_{\tau=0}^{t} "):
        assert lhs in general.replace("  ", " ").replace("  ", " ") or lhs in general, lhs
    assert "\\ref{app:rnn}" in general[general.index("Unrolling the recursion"):]  # verified (rnn.bptt_closed_form)
    assert "\\sum_{t=0}^{T - 1} \\sum_{\\tau=0}^{t}" not in body[example:]


def test_the_gated_cells_show_their_weight_gradients_as_sums_over_t(tmp_path):
    body = notes.gates_section(_build(tmp_path)).body
    for name in ("w_{hr}", "w_{hu}", "w_{hn}", "w_{hi}", "w_{hf}", "w_{hc}", "w_{ho}"):
        assert re.search(r"\\partial " + re.escape(name) + r"\} *&= \\sum_\{t=0\}\^\{T - 1\}", body), name


def test_the_encoder_defines_multi_head_attention_and_the_mlp_before_the_example(tmp_path):
    """Issue 25, review item 2: heads, concatenation and W_O, and the MLP sublayer, are defined before the worked
    example uses them, and the example states its sizes."""
    body = notes.encoder_section(_build(tmp_path)).body
    example = body.index("\\subsection{Worked example}")
    before, after = body[:example], body[example:]
    assert r"\mathbf{C}       &= \left[\mathbf{O}^{[1]}\;\middle|\;\mathbf{O}^{[2]}\;\middle|\;\cdots" in before
    assert r"\mathbf{B}       &= \mathbf{C} \mathbf{W}_{O}^{\top}" in before
    assert re.search(r"^\\mathbf\{H'\} +&= \\mathbf\{B\}_\{\\mathrm\{mlp\}\} \+ \\mathbf\{U\}", before, re.M)
    for size in ("$T = 7, d = 5$", "$n_{\\mathrm{head}} = 2$", "$d_{k} = 3, d_{v} = 3$", r"$5 \times 6$", "$d_{\\mathrm{ff}} = 4$"):
        assert size in after[:900], size
    table = notes.notation_section(_build(tmp_path))
    for symbol in (r"$\mathbf{W}_{O}$", r"$\mathbf{C}$", "$n_{\\mathrm{head}}$", r"$\mathbf{W}_{1}$", r"$\mathbf{W}_{2}$"):
        assert "\n" + symbol + " & " in table, symbol


def test_one_symbol_for_the_number_of_layers_and_the_counts_say_what_they_count(tmp_path):
    """Issue 25, review item 3: the number of layers is L everywhere (no N_layer / N_stack beside it), and each
    parameter count says whether biases and LayerNorms are counted."""
    from seqgrad.crosscheck import latex_decoder_conv

    b = _build(tmp_path)
    body = latex_decoder_conv.decoder_body(b, "")
    counts = re.sub(r"\s+", " ", body[body.index("Parameter counts"):])  # the display's alignment spaces aside
    assert "N_{" not in body and "$L = 6$ layers" in counts and "6 layers" not in counts.replace("$L = 6$ layers", "")
    assert r"\lvert\theta\rvert_{\mathrm{layer}} &= 2 d d_{\mathrm{ff}}" in counts
    assert "(biases and the three LayerNorms counted)" in counts and "no biases, no LayerNorms" in counts
    table = notes.notation_section(b)
    assert "N_{" not in table and "\n$L$ & number of layers of a stack" in table


def test_the_convolution_section_defines_its_sizes_and_states_pooling_and_the_receptive_field(tmp_path):
    """Issue 25, review item 4: cross-correlation said; H_o, W_o and G-hat defined before they are used; the strided
    form in the body; the receptive field for any number of layers; max-pooling forward and its gradient."""
    body = notes.conv_section(_build(tmp_path)).body
    assert "cross-correlation" in body[:body.index("\\begin{align*}")]
    H_out = r"H_{\mathrm{out}}"
    first_h_o = body.index(H_out)
    assert body.index(H_out + r" &= \left\lfloor{\frac{H_{\mathrm{in}} + 2 p - \psi}{\Delta}}\right\rfloor + 1") < body.index(
        r"0 \leq i \leq " + H_out + " - 1")
    assert "rows" in body[first_h_o - 80:first_h_o + 40]  # defined in words where it first appears
    assert body.index(r"Write $\mathbf{\hat{G}}$ for $\mathrm{d}\mathbf{Y}$ extended by zeros") < body.index(r"{\hat{G}}_{")
    assert r"{\kappa}_{\xi,\zeta} {\bar{X}}_{\xi + i \Delta,\zeta + j \Delta} + b" in body  # the strided forward pass
    assert r"{\mathrm{d}Y}_{i,j} {\bar{X}}_{\xi + i \Delta,\zeta + j \Delta}" in body  # G: the gradient of Y, dY
    assert r"{Y}_{i,j} &= \max_{0 \le \xi, \zeta \le \psi - 1} (X_{\mathrm{in}})_{\xi + i \Delta,\zeta + j \Delta}" in re.sub(r" +", " ", body)
    assert r"{\mathrm{d}Y}_{i,j} [(i', j') = {\nu}_{i,j}]" in body  # nu: the argmax (a is the softmax's)
    # the layers below layer l are l' (j is the output's column: the lecturer's review of the letter j)
    assert r"{\mathrm{rf}}_{L} &= 1 + \sum_{l=1}^{L} \left(\prod_{l'=1}^{l - 1} {\Delta}_{l'}\right) ({\psi}_{l} - 1)" in body
    assert "\\max_{0\\le \\xi,\\zeta" not in body and "cut off" not in body


def test_the_receptive_field_formula_is_the_layer_by_layer_recurrence():
    from seqgrad.derive import conv

    r_L, formula = conv.receptive_field_formula()
    depth = next(a for a in r_L.free_symbols if a.name == "L")
    k, s = sp.IndexedBase("k"), sp.IndexedBase("s")
    for layers in (1, 2, 3, 4):
        recurrence, _ = conv.receptive_field_recurrence(layers)
        names = {sp.Symbol(f"k_{l}", positive=True, integer=True): k[l] for l in range(1, layers + 1)}
        names |= {sp.Symbol(f"s_{l}", positive=True, integer=True): s[l] for l in range(1, layers + 1)}
        assert sp.expand(formula.subs(depth, layers).doit() - recurrence.xreplace(names)) == 0


def test_a_check_against_printed_tables_is_marked_by_its_printed_digits():
    """Issue 25, review item 6: a footnote of a check against the course's printed tables says it matches them to
    their printed digits (the result carries ``units``), never "in double precision" with a gap such as 4.8e-3."""
    from seqgrad.crosscheck.registry import Result, all_checks, run_checks

    [tables] = run_checks(all_checks("encoder.course_tables"), device="cpu", show_progress=False)
    assert tables.units is not None and tables.units <= 0.5
    mark = notes.check_mark([tables], "cpu")
    assert mark.startswith("agrees with the numbers the course prints, to their printed digits") and "double precision" not in mark
    assert "10^{-3}" not in mark
    wrong = Result("x", "s", "encoder", "fail", False, 0.2, 0.1, "cpu", "float64", "", 0.0, units=3.0)
    assert "\\textbf{not every printed number is reproduced}" in notes.check_mark([wrong], "cpu")
    plain = Result("y", "s", "encoder", "pass", True, 1e-15, 1e-15, "cpu", "float64", "", 0.0)
    both = notes.check_mark([tables, plain], "cpu")
    assert "printed digits" in both and "double precision" in both


def test_the_worked_example_footnote_compares_with_the_printed_tables(tmp_path):
    body = notes.encoder_section(_build(tmp_path)).body
    example = body[body.index("\\subsection{Worked example}"):]
    first = example[example.index("\\footnote{"):example.index("}", example.index("Course notes"))]
    assert "the course prints, to their printed digits" in first and "double precision" not in first


def test_textbook_term_order_and_no_nested_superscripts(tmp_path):
    """Issue 25, review item 7: the GRU's mix as the course writes it, a gate's slope f (1 - f) together, the softmax
    example's a_0 (1 - a_0), the shifted angle omega (pos + k), and no superscript of a superscript (g^{z^n})."""
    b = _build(tmp_path)
    gates = notes.gates_section(b).body
    assert r"h_{t}             &= u_{t} h_{t-1} + (1 - u_{t}) \widetilde{h}_{t}" in gates
    assert r"g^{z_{f}}_{t} &= g^{c}_{t} f_{t} (1 - f_{t}) c_{t-1}" in gates
    assert r"g^{z_{i}}_{t} &= g^{c}_{t} i_{t} (1 - i_{t}) \widetilde{c}_{t}" in gates
    assert r"g^{z_{u}}_{t} &= g^{h}_{t} u_{t} (1 - u_{t})" in gates
    assert not re.search(r"\^\{[^{}]*\^", gates)  # no g^{z^n}
    attention = notes.attention_section(b).body
    assert r"a_{0} (1 - a_{0})" in attention and "a_{0} - a_{0}^{2}" not in attention
    positional = notes.positional_section(b).body
    assert r"\sin(\omega_{j} (\mathrm{pos} + k))" in positional and r"k \omega_{j})\\\cos" not in positional


def test_a_complement_follows_what_it_complements():
    from seqgrad.derive.term_order import textbook_order

    f, c, a = sp.symbols("f_t c_{t-1} a_0")
    assert sp.sstr(textbook_order((1 - f) * f * c), order="none") == "f_t*(1 - f_t)*c_{t-1}"
    assert sp.sstr(textbook_order((1 - a) * a), order="none") == "a_0*(1 - a_0)"


def test_one_letter_per_meaning_stride_jacobians_residual_and_transpose(tmp_path):
    """Issue 25, review item 5 (the part done): the stride is Delta (s: LayerNorm's standard deviation), a stack's
    branch Jacobians are J_{F_l} (J_t: the transition Jacobian of step t), the residual connection is x_out = x + F(x)
    (y: the target, h: the hidden state, u: the update gate), and the notation's transpose is shown on X, not on A (the weights)."""
    b = _build(tmp_path)
    conv = notes.conv_section(b).body
    assert not re.search(r"(?<![\\A-Za-z])s(?![A-Za-z])", "".join(re.findall(r"\$[^$]*\$|\\begin\{align\*\}.*?\\end\{align\*\}", conv, re.S)))
    residual = notes.residual_section(b).body
    assert r"\frac{\partial \mathbf{x}_{\mathrm{out}}}{\partial \mathbf{x}} &= \mathbf{I} + \mathbf{J}_{F}" in residual
    assert "partial y" not in residual and r"\mathbf{J}_{1}" not in residual and r"\mathbf{J}_{F_1}" in residual
    table = notes.notation_section(b)
    assert r"$\mathbf{A}^{\top}$" not in table and r"$\mathbf{X}^{\top}$ & transpose" in table
    assert r"\Delta" in table


def test_the_encoder_output_table_says_it_is_after_the_final_layernorm_and_that_holds(tmp_path):
    """Issue 25, review item 8 (Table 4's caption): the last table is after the final LayerNorm, and its rows do have
    mean 0 and variance 1 (up to epsilon), as the caption says."""
    from seqgrad.numeric import course

    body = notes.encoder_section(_build(tmp_path)).body
    caption = [c for c in re.findall(r"\\caption\{(.*?)\}\n", body) if "encoder's output" in c]
    assert caption and "final LayerNorm" in caption[0] and "mean 0 and variance 1" in caption[0]
    H = course.trace("prenorm_block")["H_enc"]
    assert float(H.mean(-1).abs().max()) < 1e-12 and float((H.var(-1, unbiased=False) - 1).abs().max()) < 1e-3


def test_the_pe_shift_is_stated_for_rows_with_its_quantifier_and_holds():
    """Issue 25, review item 8: the rotation in the notes' row-vector convention, v(pos + k) = v(pos) B(k)^T, for
    every pos and k; the displayed identity is proved here (trigonometric expansion), so a wrong transpose fails."""
    from seqgrad.derive import catalogue

    lhs, rhs, note = notes._as_rows(catalogue.get("pe-shift").statement())
    assert lhs.shape == (1, 2) and "  for every " in note
    assert sp.simplify(sp.expand_trig(sp.Matrix(lhs) - sp.Matrix(rhs.doit()))) == sp.zeros(1, 2)
    wrong = sp.Matrix(rhs.args[0]) * sp.Matrix(rhs.args[1]).T  # the column form's matrix on the right of a row
    assert sp.simplify(sp.expand_trig(sp.Matrix(lhs) - wrong)) != sp.zeros(1, 2)


def test_the_appendix_check_tables_typeset_their_errors(tmp_path):
    """Issue 25, review item 8 (the appendix's test log): the errors of the check tables are typeset math, not
    ASCII exponents."""
    from seqgrad.crosscheck.latex_parts import check_status
    from seqgrad.crosscheck.registry import Result

    results = [Result("a.b", "week06 §X", "g", "pass", True, 4.44e-16, 1.97e-15, "cpu", "float64", "", 0.0,
                      tol_ratio=1.97e-5),
               Result("a.c", "week06 §X", "g", "error", False, float("inf"), float("inf"), "cpu", "float64", "", 0.0,
                      tol_ratio=float("inf"))]
    table = check_status("rnn", _build(tmp_path), results)
    # the error over its tolerance is printed, not the relative error (issue 25, second review, item 7)
    assert r"$4.4 \cdot 10^{-16}$" in table and r"$2.0 \cdot 10^{-5}$" in table and "e-16" not in table
    assert "\\textbf{ERROR}" in table
