"""LaTeX notation settings and layout (derive/latex_settings.py, derive/latex_layout.py); no TeX engine needed."""

from __future__ import annotations

import doctest

import pytest
import sympy as sp

import seqgrad.derive.latex_layout as layout_module
import seqgrad.derive.latex_settings as settings_module
from seqgrad.derive.latex_layout import align, equation, equation_table, inline, sum_lines, tabular, visual_width
from seqgrad.derive.latex_settings import Notation, NotationPrinter, latex
from seqgrad.errors import SeqgradTypeError, SeqgradValueError


@pytest.mark.parametrize("module", [settings_module, layout_module], ids=lambda m: m.__name__)
def test_module_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_textbook_superscript_labels_and_indices():
    assert latex(sp.Symbol("g_2^h")) == "g^{h}_{2}"
    assert latex(sp.Symbol("h_-1")) == "h_{-1}"
    assert latex(sp.Symbol("w_x^[0]")) == "w^{[0]}_{x}"  # a per-use copy, not a power
    assert latex(sp.Symbol("yhat")) == r"\widehat{y}"
    assert latex(sp.Symbol("L")) == r"\mathcal{L}"


def test_vectors_bold_or_plain():
    n = Notation(vectors={"h", "W_h", "gamma"})
    assert n.latex(sp.Symbol("h_t")) == r"\mathbf{h}_{t}"
    assert n.latex(sp.Symbol("h_{t-1}")) == r"\mathbf{h}_{t-1}"  # indices already written in LaTeX
    assert n.latex(sp.Symbol("W_h")) == r"\mathbf{W}_{h}"
    assert n.latex(sp.Symbol("gamma")) == r"\boldsymbol{\gamma}"  # \mathbf does not bold Greek
    assert n.latex(sp.Symbol("w_h")) == "w_{h}"  # scalars stay plain
    plain = n.replace(bold=False)
    assert plain.latex(sp.Symbol("h_t")) == "h_{t}"
    W = sp.MatrixSymbol("W_Q", 3, 5)
    assert Notation().latex(W) == r"\mathbf{W}_{Q}"
    assert plain.latex(W) == "W_{Q}"


def test_symbol_names_and_letters_are_configurable():
    n = Notation(symbol_names={"w_h": r"W_{hh}"}, letters={"g": r"\delta"})
    assert n.latex(sp.Symbol("w_h") * sp.Symbol("g_0^z")) in (r"W_{hh} \delta^{z}_{0}", r"\delta^{z}_{0} W_{hh}")
    assert Notation().with_vectors(["z"]).latex(sp.Symbol("z_1")) == r"\mathbf{z}_{1}"


def test_decimal_comma():
    ru = Notation(decimal_comma=True)
    x = sp.Symbol("x")
    assert ru.latex(sp.Float(0.25) * x) == "0{,}25 x"
    assert ru.latex(sp.Float(1.5e-7) * x) == r"1{,}5 \cdot 10^{-7} x"
    assert Notation().latex(sp.Float(0.25) * x) == "0.25 x"
    assert ru.number("-0.0954") == "-0{,}0954"


@pytest.mark.parametrize("kwargs, argument", [
    ({"bold": "yes"}, "bold"),
    ({"decimal_comma": 1}, "decimal_comma"),
    ({"vectors": "h"}, "vectors"),
    ({"vectors": [1]}, "vectors"),
    ({"symbol_names": {"w": 3}}, "symbol_names"),
    ({"letters": ["g"]}, "letters"),
])
def test_bad_notation_settings(kwargs, argument):
    with pytest.raises(SeqgradTypeError, match=argument):
        Notation(**kwargs)


def test_printer_refuses_a_non_notation():
    with pytest.raises(SeqgradTypeError, match="notation"):
        NotationPrinter({"bold": True})


def test_long_sums_break_between_terms_in_natural_order():
    g = [sp.Symbol(f"g_{t}^z") for t in range(12)]
    h = [sp.Symbol(f"h_{t - 1}") for t in range(12)]
    expr = sum(a * b for a, b in zip(g, h)) - sp.Symbol("c")
    lines = sum_lines(expr, NotationPrinter(), width=20)
    assert len(lines) > 3
    assert all(visual_width(line) <= 20 for line in lines)
    assert all(line.startswith(("+ ", "- ")) for line in lines[1:])
    text = " ".join(lines)
    for t in range(12):  # every term exactly once, in index order
        assert text.count(f"g^{{z}}_{{{t}}} ") == 1
    positions = [text.index(f"g^{{z}}_{{{t}}} ") for t in range(12)]
    assert positions == sorted(positions)
    assert "- c" in text


def test_visual_width_ignores_markup():
    assert visual_width(r"\mathbf{g}^{z}_{0} \mathbf{h}_{-1}") == len("gz0h1") + 3
    assert visual_width(r"\left(\alpha + y\right)") == len("(ay)") + 3


def test_align_rows_chains_and_breaks():
    x, y = sp.symbols("x y")
    out = align([sp.Eq(sp.Symbol("a"), x + y), (sp.Symbol("b"), [x * (x + y), x**2 + x * y])])
    assert out.startswith("\\begin{align*}") and out.endswith("\\end{align*}")
    body = out.splitlines()[1:-1]
    assert len(body) == 3 and all("&=" in line for line in body)
    assert r"x (x + y)" in out  # a short bracket in plain brackets (textbook_form)
    numbered = align([(x, y)], numbered=True, label="eq:xy")
    assert "\\begin{align}" in numbered and "\\label{eq:xy}" in numbered


def test_equation_splits_long_sums():
    xs = sp.symbols("x0:20")
    out = equation(sp.Symbol("s"), sum(xs), width=30)
    assert "\\begin{split}" in out and out.count("\\\\") >= 3
    assert equation(sp.Symbol("s"), xs[0]) == "\\begin{equation*}\ns = x_{0}\n\\end{equation*}"
    assert inline(xs[1]) == "$x_{1}$"


@pytest.mark.parametrize("call, error", [
    (lambda: align([]), SeqgradValueError),
    (lambda: align([42]), SeqgradTypeError),
    (lambda: align([(sp.Symbol("a"), [])]), SeqgradValueError),
    (lambda: align([(sp.Symbol("a"), 1)], width=3), SeqgradValueError),
    (lambda: align([(sp.Symbol("a"), 1)], width="wide"), SeqgradTypeError),
    (lambda: align([(sp.Symbol("a"), 1)], numbered=True, label="bad label}"), SeqgradValueError),
    (lambda: equation(sp.Symbol("a"), 1, label="eq:a"), SeqgradValueError),  # a label needs a number
    (lambda: tabular([], []), SeqgradValueError),
    (lambda: tabular(["a", "b"], [["1"]]), SeqgradValueError),
])
def test_layout_bad_input(call, error):
    with pytest.raises(error):
        call()


def test_forward_backward_table_is_booktabs_with_math_cells():
    z0, x0, w_x = sp.symbols("z_0 x_0 w_x")
    out = equation_table(["forward", "backward"], [[(z0, w_x * x0), sp.Eq(sp.Symbol("g_0^z"), sp.Symbol("g_0^h"), evaluate=False)]])
    assert "\\toprule" in out and "\\midrule" in out and "\\bottomrule" in out
    assert "$z_{0} = w_{x} x_{0}$ & $g^{z}_{0} = g^{h}_{0}$ \\\\" in out


def test_indices_stay_latin_unless_asked():
    """The text's w_{xi} is 'from x to i', not the Greek xi (SymPy's default would print w_{\\xi})."""
    assert latex(sp.Symbol("w_xi")) == "w_{xi}"
    assert Notation(greek_indices=True).latex(sp.Symbol("w_xi")) == r"w_{\xi}"
    assert latex(sp.Symbol("htilde_1")) == r"\widetilde{h}_{1}"


def test_relation_keeps_both_sides_on_the_page():
    from seqgrad.derive.latex_layout import relation

    xs = sp.symbols("x0:14")
    long_left = relation(sum(sp.sin(x) for x in xs), sum(xs), op=r"\neq", width=40)
    lines = long_left.splitlines()[1:-1]
    assert lines[0].startswith("&\\sin") and any(line.startswith("&\\neq ") for line in lines)
    assert all(visual_width(line) <= 44 for line in lines)  # the width plus the leading "&\quad"
    short_left = relation(sp.Symbol("s"), sum(xs), width=40)
    assert short_left.splitlines()[1].startswith("s &= ")
    with pytest.raises(SeqgradValueError, match="op"):
        relation(xs[0], xs[1], op="\\input{x}")


# -- issue 25, item 14: a word in a subscript is upright, an index italic -----------------------------------------

@pytest.mark.parametrize("expr, tex", [
    (sp.Symbol("d_model"), r"d_{\mathrm{model}}"), (sp.Symbol("d_ff"), r"d_{\mathrm{ff}}"),
    (sp.Symbol("n_head"), r"n_{\mathrm{head}}"), (sp.Symbol("T_src"), r"T_{\mathrm{src}}"),
    (sp.Symbol("E_seq"), r"E_{\mathrm{seq}}"), (sp.MatrixSymbol("J_LN", 2, 2), r"\mathbf{J}_{\mathrm{LN}}"),
    (sp.Symbol("T_{src}"), r"T_{\mathrm{src}}"),
    (sp.Function("MHA_self")(sp.Symbol("x")), r"\operatorname{MHA}_{\mathrm{self}}(x)"),
    # indices stay italic: a pair of indices (w_hn: h to the gate n), a step, a number, a Greek letter's name
    (sp.Symbol("w_hn"), "w_{hn}"), (sp.Symbol("a_ij"), "a_{ij}"), (sp.Symbol("w_K_{0,0}"), "w_{K,0,0}"),
    (sp.Function("LN_1")(sp.Symbol("x")), r"\operatorname{LN}_{1}(x)"),
])
def test_a_word_in_a_subscript_is_upright_and_an_index_is_not(expr, tex):
    assert Notation().latex(expr).replace("{(x)}", "(x)") == tex


def test_the_words_of_a_notation_can_be_set():
    assert Notation(word_subscripts=set()).latex(sp.Symbol("d_ff")) == "d_{ff}"
    assert Notation(word_subscripts={"hn"}).latex(sp.Symbol("w_hn")) == r"w_{\mathrm{hn}}"
    with pytest.raises(SeqgradTypeError):
        Notation(word_subscripts="ff")
    import pickle  # a worker process builds its sections with a copy of the settings

    assert pickle.loads(pickle.dumps(Notation(word_subscripts={"hn"}))).latex(sp.Symbol("w_hn")) == r"w_{\mathrm{hn}}"


def test_inline_math_folds_every_fraction_onto_the_line_and_displays_stack_it():
    """Running text (inline, Prose, a table cell) prints each fraction with a slash, bracketed where the slash would
    divide less than the bar did; a display keeps \\frac. SymPy's own fold_short_frac folds short ones only (it left
    epsilon/(epsilon + v) stacked, and 1/sqrt(d_k) in every mode)."""
    from seqgrad.derive.latex_settings import AtFixed, Partial
    from seqgrad.derive.prose import Prose

    eps, v, d, d_k, a, b, j = sp.symbols("epsilon v d d_k a b j")
    x = sp.IndexedBase("x")
    cases = [(eps / (eps + v), r"\epsilon/(\epsilon + v)"), (1 / sp.sqrt(d_k), r"1/\sqrt{d_{k}}"),
             (1 / (2 * d), r"1/(2 d)"), ((a + b) / (a - b), r"(a + b)/(a - b)"), (-a / b, r"- a/b"),
             (sp.Rational(1, 100), "1/100"), (10000 ** (-2 * j / d), r"10000^{- 2 j/d}"),
             (Partial(sp.Symbol("w_h")), r"\partial \mathcal{L}/\partial w_{h}"),
             (AtFixed(sp.Symbol("c_0"), of=sp.Symbol("c_1"), held=sp.Symbol("h_0")), r"(\partial c_{1}/\partial c_{0})_{h_{0}}"),
             (sp.Derivative(sp.Function("f")(a), a), r"\mathrm{d} f{(a)}/\mathrm{d} a"),
             # a sum divided by what does not depend on its index reads alike with the division inside it; a
             # radical over the sum's limits would be taller than the line
             (sp.sqrt(sp.Sum(x[j] ** 2, (j, 0, d - 1)) / d + eps), r"(\sum_{j=0}^{d - 1} {x}_{j}^{2}/d + \epsilon)^{1/2}"),
             (sp.Sum(x[j], (j, 0, d - 1)) / j, r"\left(\sum_{j=0}^{d - 1} {x}_{j}\right)/j")]
    for expr, written in cases:
        assert inline(expr) == f"${written}$", expr
        assert "/" not in latex(expr) and "\\frac" in latex(expr), expr  # a display stacks it
    assert Prose("`epsilon/(epsilon + v)`").latex() == r"$\epsilon/(\epsilon + v)$"
    assert "\\frac" not in equation_table(["a"], [[(sp.Symbol("y"), 1 / sp.sqrt(d_k))]])
