"""The mathematical words of the handout's statements, second review (issue 25): each statement says what is
true under the notes' own symbols (``s = sqrt(epsilon + v)``, rows, ``d`` the width, ``J_{F_l}`` a layer's
branch), and each guard fails on the words it replaced."""

from __future__ import annotations

import sympy as sp

from seqgrad.crosscheck.latex_parts import source_tex
from seqgrad.crosscheck.latexdoc import NOTES_LETTERS
from seqgrad.derive import catalogue
from seqgrad.derive.latex_settings import DEFAULT
from seqgrad.derive.prose import scope

NOTES = DEFAULT.replace(letters={**DEFAULT.letters, **NOTES_LETTERS})


def _head(name: str) -> str:
    """The appendix paragraph's head of an identity: its source and its scope, as the notes print them."""
    entry = catalogue.get(name)
    return source_tex(entry.source, NOTES) + "; " + scope(entry.scope).latex(NOTES)


def test_layernorm_variance_is_v_over_eps_plus_v_in_the_notes_symbols():
    head = _head("layernorm-variance")
    assert r"$v/(\epsilon + v)$" in head and "s^{2}" not in head


def test_softmax_rows_sum_to_zero_by_shift_invariance_not_by_the_sum_of_the_weights():
    head = _head("softmax-jacobian-rows-sum-to-zero")
    assert "sum to 1" not in head and "shifting" in head
    assert catalogue.get("softmax-jacobian-rows-sum-to-zero").prove().holds


def test_pe_wavelength_states_the_longest_wavelength_at_d_64():
    head = _head("pe-wavelength")
    assert r"$15000 \pi$" in head and "about $20000 \\pi$" not in head
    assert catalogue.get("pe-wavelength").prove().holds
    longest = 2 * 10000 ** (62 / 64)
    assert abs(longest - 15000) < 50  # the number the scope states, from the wavelength's own formula


def test_a_number_given_with_its_figures_prints_all_of_them():
    assert DEFAULT.latex(sp.Float("-0.990", 3)) == "-0.990"
    assert DEFAULT.latex(sp.Float(0.5)) == "0.5"  # a double prints as SymPy prints it
    rhs = catalogue.get("pe-p3-printed").statement().rhs
    assert NOTES.latex(rhs).split(r"\\")[1] == "-0.990"


def test_the_dot_product_variance_states_its_assumptions():
    head = _head("attention-dot-variance")
    assert "independent" in head and "mean 0 and variance 1" in head


def test_the_erratum_says_2_d_k_holds_when_the_fourth_moment_is_3():
    """Var(q . q) = d_k (E[q_a^4] - 1): 2 d_k exactly when E[q_a^4] = 3 (Gaussian coordinates, and others), not
    'for Gaussian coordinates only' (a reviewer's correction of the earlier wording)."""
    from seqgrad.crosscheck import claims_evidence
    from seqgrad.crosscheck.claims_statements import statements

    precise = next(s.precise for s in statements() if s.text.startswith("dividing by sqrt(d_k) keeps the variance"))
    assert "only when E[q_a^4] = 3, as for Gaussian coordinates" in precise and "E[q_a^4] - 1" in precise
    assert "Gaussian coordinates only" not in precise
    ok, detail = claims_evidence.dot_product_variance()
    assert ok and "4/5 for uniform" in detail  # a unit-variance coordinate that is not Gaussian: not 2


def test_the_gru_carry_holds_the_candidate_fixed_too(tmp_path):
    """The carries at fixed gates (and, for the GRU, candidate), said where the section defines them; a lecturer's
    review: the cells of the notes are scalar cells, so a carry is the number f_t or u_t, diag(...) only for a vector
    state (the text said diag(f_t) of the scalar f_t)."""
    from seqgrad.crosscheck import notes
    from seqgrad.crosscheck.figures import figure_sets
    from seqgrad.crosscheck.latex_parts import Build
    from seqgrad.crosscheck.registry import all_checks

    source = next(c for c in all_checks("gated.gru_carry_jacobian")).source
    assert source.endswith("diag(u_t) at fixed gates and candidate")  # the check of the vector cell
    body = notes.gates_section(Build(notation=NOTES, tex_dir=tmp_path, figures_dir=None)).body
    said = body[body.index("The carry of the LSTM"):].split("\n\n")[0]
    assert (r"The carry of the LSTM is $f_{t}$, the derivative $\partial c_{t}/\partial c_{t-1}$ at fixed gates; that of "
            r"the GRU is $u_{t}$, the derivative $\partial h_{t}/\partial h_{t-1}$ at fixed gates and candidate (for a "
            r"vector state, $\operatorname{diag}(f_{t})$ and $\operatorname{diag}(u_{t})$)") in said
    assert said.count("diag") == 2 and "diag" not in figure_sets()["paths"].READINGS["gradient-flow-rnn-gru-lstm"]


def test_the_convolution_checks_at_sizes_are_not_called_proofs(tmp_path):
    from seqgrad.crosscheck import notes
    from seqgrad.crosscheck.latex_parts import Build

    body = notes.conv_section(Build(notation=NOTES, tex_dir=tmp_path, figures_dir=None)).body
    assert "proved at concrete sizes" not in body
    # the audit parentheticals are gone from the text (review A item 10); the stride is said as a formula
    assert "checked exactly" not in body and "(checked at concrete sizes)" not in body
    assert "dilated" in body


def test_pe_omega_counts_pairs_and_writes_the_width_d_as_section_5_does():
    import re

    from seqgrad.crosscheck.claims_catalogue import entries

    entry = next(e for e in entries() if e.name == "pe_omega")
    assert "floor" not in entry.what and not re.search(r"\bD\b", entry.what)
    assert entry.what.startswith("omega_i = 10000^(-2i/d) for pair i")
    assert all(c.verify().status == "verified" for c in entry.claims)
    for name in ("pe-p0", "pe-p3-printed", "residual-encoder-block"):
        assert not re.search(r"\bD = ", catalogue.get(name).scope), name


def test_the_residual_statements_use_section_7s_symbols():
    for name in ("residual-plain", "residual-pre-norm", "residual-post-norm"):
        assert catalogue.get(name).math().startswith(r"\frac{\partial \mathbf{u}}{\partial \mathbf{x}} = "), name
    post = catalogue.get("residual-post-norm-block-program").math()
    assert r"\mathbf{Z}" not in post and r"= \mathrm{d}\mathbf{U} + " in post  # Z is the encoder's memory
    depth = catalogue.get("residual-depth-expansion").math()
    assert r"\mathbf{J}_{3}" not in depth and depth.startswith(r"(\mathbf{I} + \mathbf{J}_{F_3})")
    assert all(catalogue.get(n).prove().holds for n in ("residual-post-norm-block-program", "residual-depth-expansion"))


def test_the_mlp_without_activation_acts_on_a_row():
    entry = catalogue.get("mlp-without-activation-affine")
    assert entry.math() == (r"(\mathbf{x} \mathbf{W}_{1}^{\top} + \mathbf{b}_{1}) \mathbf{W}_{2}^{\top} + \mathbf{b}_{2} = "
                            r"\mathbf{x} (\mathbf{W}_{2} \mathbf{W}_{1})^{\top} + (\mathbf{b}_{1} \mathbf{W}_{2}^{\top} + \mathbf{b}_{2})")
    assert entry.prove().holds


def test_the_unpaired_sine_fails_for_some_k_and_shows_the_step():
    from seqgrad.crosscheck.latex_parts import shift_report_rows
    from seqgrad.derive import positional

    entry = catalogue.get("pe-unpaired-no-scalar")
    assert entry.math() == r"\sin({\omega}_{2}) \neq \alpha{(1)} \sin(0)"  # pos = 0, k = 1: the right side vanishes
    assert "one $k$ suffices" in _head("pe-unpaired-no-scalar") and entry.prove().holds
    for layout in ("interleaved", "half"):
        report = positional.shift_identity(d=5, layout=layout).prove()
        note = shift_report_rows(report, NOTES)[-1][1]
        assert r"for $k$ not a multiple of $\pi/\omega_{2}$" in note and r"for every $\mathrm{pos}$" in note
        assert positional.Sinusoidal(5, layout=layout).omega(report.unpaired) == 10000 ** sp.Rational(-4, 5)  # omega_2


def test_rmsnorm_names_rms_names_its_own_normalised_row_and_typesets_its_source():
    """The root mean square is named as the function, rms(x) (a letter r would be the GRU's reset gate)."""
    head = _head("rmsnorm-jacobian")
    assert "rms(x) o gamma" not in head and "$r" not in head and r"with $\operatorname{rms}{(x)}$ the square root" in head
    assert r"\tilde{x}_{i} = x_{i}/\operatorname{rms}{(x)}" in head
    entry = catalogue.get("rmsnorm-jacobian")
    shown = NOTES.latex(entry.statement())
    assert r"\tilde{x}" in shown and r"\hat{x}" not in shown  # x̂ is LayerNorm's (x - mu)/s
    assert entry.prove().holds


def test_the_decoder_layer_count_prints_equations_with_their_values_in_the_notes_symbols():
    from seqgrad.derive.latex_layout import display

    entry = catalogue.get("count-decoder-layer")
    statement = entry.statement()
    tex = display([(statement.lhs, statement.rhs)], NOTES)
    rows = [r.split("&=")[1].strip().rstrip("\\").strip() for r in tex.splitlines() if "&=" in r]
    assert rows == ["2 d_{\\mathrm{ff}} d_{\\mathrm{model}} + 8 d_{\\mathrm{model}}^{2} + 15 d_{\\mathrm{model}} + d_{\\mathrm{ff}}",
                    "1053440", "L (2 d_{\\mathrm{ff}} d_{\\mathrm{model}} + 8 d_{\\mathrm{model}}^{2})",
                    "6 \\cdot 1048576 = 6291456"]  # the stack: no biases, no LN
    assert r"\lvert\theta\rvert_{\mathrm{layer}}" in tex and r"n_{\mathrm{head}}=4" in tex and r"L=6" in tex
    assert "matrix" not in tex
    head = _head("count-decoder-layer")
    assert "$h$" not in head and "$N = 6$" not in head and "$n_{\\mathrm{head}}" in head and "$L = 6$" in head
    assert entry.prove().holds


def test_a_float32_module_is_reported_at_its_own_precision_not_as_a_double_precision_error():
    from seqgrad.crosscheck import notes
    from seqgrad.crosscheck.registry import Result
    from seqgrad.crosscheck.tolerance import combine, compare

    assert compare([1.0], [1.0], dtype="float32").single and not compare([1.0], [1.0]).single
    assert combine([compare([1.0], [1.0]), compare([1.0], [1.0], dtype="float32")]).single
    double = Result("a", "s", "g", "pass", True, 8.5e-14, 1e-13, "cpu", "float64", "", 0.0)
    module = Result("b", "s", "g", "pass", True, 9.7e-9, 2.4e-7, "cpu", "float64", "", 0.0, single=True)
    mark = notes.check_mark([double, module], "cpu")
    assert mark.startswith(r"checked numerically in double precision, largest error $8.5 \cdot 10^{-14}$; the course's")
    # the largest absolute error, as the appendix's table lists it (issue 25, fourth review: the relative 2.4e-7 was
    # a number the appendix does not show)
    assert r"agrees within $9.7 \cdot 10^{-9}$, the rounding of single precision" in mark and "2.4" not in mark
    assert "float32" not in mark  # no code words in the notes
    assert notes.check_mark([module], "cpu").startswith("the course's PyTorch module, which computes in single precision")


def test_the_power_curves_caption_does_not_say_the_product_explodes():
    from seqgrad.crosscheck.figures import figure_sets

    caption = figure_sets()["paths"].CAPTIONS["fig3-left-power-curves"]
    assert "explodes" not in caption and "allows a product to grow but does not make it" in caption


def test_the_dot_product_variance_reads_the_moments_off_the_distributions():
    """The evidence's moments come from SymPy's own distributions (the moment generating function), exactly; a
    distribution of another variance or kurtosis gives other numbers, so the verdict can fail."""
    from sympy.stats import Normal, Uniform

    from seqgrad.crosscheck.claims_evidence import moments

    assert moments(Normal("x", 0, 1), 4) == [1, 0, 1, 0, 3]
    assert moments(Normal("x", 0, 2), 4) == [1, 0, 4, 0, 48]  # E[X^4] = 3 sigma^4
    assert moments(Uniform("u", -sp.sqrt(3), sp.sqrt(3)), 4) == [1, 0, 1, 0, sp.Rational(9, 5)]
    assert moments(Uniform("u", 0, 1), 3) == [1, sp.Rational(1, 2), sp.Rational(1, 3), sp.Rational(1, 4)]
