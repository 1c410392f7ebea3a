"""derive/: the unrolled RNN program, proved equal to sympy.diff of the fully nested loss."""

from __future__ import annotations

import re

import doctest
import itertools

import pytest
import sympy as sp

from seqgrad.derive import activations, program, rnn
from seqgrad.derive.activations import dphi
from seqgrad.derive.sequence import stepped
from seqgrad.errors import SeqgradTypeError, SeqgradValueError, SizeGuardError


def _same(a, b) -> bool:
    diff = (a - b).replace(lambda e: isinstance(e, sp.Heaviside), lambda e: sp.Heaviside(e.args[0], 0))
    return sp.expand(diff) == 0 or sp.simplify(diff) == 0


@pytest.mark.parametrize("module", [program, activations, rnn])
def test_module_doctests(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


# -- scalar cell ----------------------------------------------------------------

SCALAR_CASES = [
    (T, act, loss, reduction, bias)
    for T, act in [(1, "phi"), (2, "phi"), (3, "phi"), (2, "tanh"), (2, "sigmoid"), (2, "relu"), (2, "identity")]
    for loss, reduction in [("final", "sum"), ("every", "sum"), ("every", "mean")]
    for bias in (False, True)
    if not (loss == "final" and reduction == "mean")
]


@pytest.mark.parametrize("T, act, loss, reduction, bias", SCALAR_CASES)
def test_scalar_gradients_equal_sympy_diff(T, act, loss, reduction, bias):
    net = rnn.unroll(steps=T, activation=act, loss=loss, reduction=reduction, bias=bias)
    L = net.loss_closed_form()
    for name in list(net.parameters) + [f"x_{t}" for t in range(T)]:
        derived = net.grad(name, expand="all")
        assert _same(derived, sp.diff(L, net.symbol(name))), name


def test_scalar_three_steps_is_the_text():
    """Table 3, the closed forms of line 144 and the boxed gradients of lines 162-166."""
    net = rnn.unroll(steps=3, activation="phi")
    g = {name: net.symbol(name) for name in ["g_0^z", "g_1^z", "g_2^z", "g_0^h", "g_1^h", "g_2^h"]}  # step values
    z = [net.symbol(f"z_{k}") for k in range(3)]
    h = [net.symbol(f"h_{k}") for k in ("{-1}", 0, 1, 2)]
    w_x, w_h, w_o, e = sp.symbols("w_x w_h w_o e")
    table = net.backward_table()
    assert [str(f.target) for f, _ in table.rows] == ["z_0", "h_0", "z_1", "h_1", "z_2", "h_2", "yhat", "L"]
    backward = {str(b.target): b.value for _, b in table.rows}
    assert list(backward) == ["g_{-1}^h", "g_0^z", "g_0^h", "g_1^z", "g_1^h", "g_2^z", "g_2^h", "e"]
    assert backward["g_{-1}^h"] == g["g_0^z"] * w_h
    for t in range(3):
        assert backward[f"g_{t}^z"] == g[f"g_{t}^h"] * dphi(z[t])
    assert backward["g_0^h"] == g["g_1^z"] * w_h and backward["g_1^h"] == g["g_2^z"] * w_h
    assert backward["g_2^h"] == e * w_o
    assert backward["e"] == sp.Symbol("yhat") - sp.Symbol("y")
    # line 144
    assert net.sensitivity("z", 2, expand=True) - e * w_o * dphi(z[2]) == 0
    assert sp.expand(net.program.expand(g["g_0^z"]) - e * w_o * dphi(z[2]) * w_h * dphi(z[1]) * w_h * dphi(z[0])) == 0
    # boxed gradients
    x = [net.symbol(f"x_{k}") for k in range(3)]
    assert net.grad("w_x") == sum(g[f"g_{t}^z"] * x[t] for t in range(3))
    assert net.grad("w_h") == sum(g[f"g_{t}^z"] * h[t] for t in range(3))
    assert net.grad("w_o") == e * h[3]
    assert net.grad("x_0") == g["g_0^z"] * w_x
    # lines 170-172: the fully expanded path sums
    p = [dphi(zz) for zz in z]
    expected_wx = e * w_o * (p[2] * w_h * p[1] * w_h * p[0] * x[0] + p[2] * w_h * p[1] * x[1] + p[2] * x[2])
    expected_wh = e * w_o * (p[2] * w_h * p[1] * w_h * p[0] * h[0] + p[2] * w_h * p[1] * h[1] + p[2] * h[2])
    assert sp.expand(net.grad("w_x", expand=True) - expected_wx) == 0
    assert sp.expand(net.grad("w_h", expand=True) - expected_wh) == 0


def test_tanh_slope_is_written_through_the_state():
    net = rnn.unroll(steps=2, activation="tanh")
    assert net.program["g_1^z"].value == net.symbol("g_1^h") * (1 - net.symbol("h_1") ** 2)


def test_every_position_two_paths_and_mean():
    net = rnn.unroll(steps=3, activation="phi", loss="every", reduction="mean")
    w_o, w_h = sp.symbols("w_o w_h")
    g1h = net.program["g_1^h"].value
    s = net.symbol
    assert sp.expand(g1h - (s("e_1") * w_o / 3 + s("g_2^z") * w_h)) == 0
    assert net.program["e_1"].value == s("yhat_1") - stepped("y", 1)
    assert sp.expand(net.grad("w_o") - sum(s(f"e_{t}") * s(f"h_{t}") for t in range(3)) / 3) == 0


def test_path_product_and_bounds():
    net = rnn.unroll(steps=5, activation="phi")
    w_h = sp.Symbol("w_h")
    assert net.transition(3) == w_h * dphi(net.symbol("z_3"))
    for s in range(-1, 4):
        ratio = net.sensitivity("h", s, expand=True) / net.sensitivity("h", 4, expand=True)
        assert sp.simplify(ratio - net.path_product(4, s)) == 0
    assert net.path_product(2, 2) == 1
    bound = net.path_bound(4, 1, r=sp.Rational(1, 2))
    assert isinstance(bound, sp.Le) and bound.rhs == sp.Abs(net.symbol("g_4^h")) / 8
    assert isinstance(net.path_bound(4, 1, kind="exploding"), sp.Ge)


def test_sizes_of_a_long_scalar_program_are_linear():
    small, large = rnn.unroll(steps=50), rnn.unroll(steps=100)
    assert len(small.program) == 4 * 50 + 5 and len(large.program) == 4 * 100 + 5  # O(T), not O(2^T)
    assert len(sp.Add.make_args(large.grad("w_x"))) == 100


# -- vector cell ------------------------------------------------------------------

def _explicit(net):
    """Component symbols for every leaf of a vector program."""
    values = {}
    for leaf in net.program.leaves():
        r, c = leaf.shape
        values[leaf] = sp.Matrix(r, c, lambda i, j: sp.Symbol(f"{leaf.name}[{i},{j}]"))
    return values


VECTOR_CASES = [
    ("tanh", "final", "sum", True, (2, 2, 1)),
    ("phi", "final", "sum", False, (2, 2, 2)),
    ("sigmoid", "every", "sum", True, (1, 2, 2)),
    ("identity", "every", "mean", True, (2, 2, 1)),
    ("relu", "final", "sum", True, (2, 1, 1)),
]


@pytest.mark.parametrize("act, loss, reduction, bias, sizes", VECTOR_CASES)
def test_vector_gradients_equal_sympy_diff(act, loss, reduction, bias, sizes):
    D, H, C = sizes
    net = rnn.unroll(steps=2, activation=act, inputs=D, hidden=H, outputs=C, bias=bias, loss=loss, reduction=reduction)
    values = _explicit(net)
    L = net.program.evaluate(net.L, values)
    for symbol, grad in net.gradients.items():
        if symbol not in values:
            continue
        derived = net.program.evaluate(grad, values)
        assert derived.shape == symbol.shape
        for (i, j) in itertools.product(range(symbol.shape[0]), range(symbol.shape[1])):
            assert _same(derived[i, j], sp.diff(L, values[symbol][i, j])), (symbol, i, j)


def test_evaluate_many_expressions_at_once_equals_one_at_a_time():
    """A list of expressions shares one forward pass and gives what evaluating each alone gives; a tuple too."""
    net = rnn.unroll(steps=2, activation="tanh", inputs=2, hidden=2, outputs=1, bias=True)
    values = _explicit(net)
    exprs = [net.L] + [net.gradients[s] for s in net.gradients if s in values]
    together = net.program.evaluate(exprs, values)
    assert isinstance(together, list) and len(together) == len(exprs)
    for expr, value in zip(exprs, together):
        assert value == net.program.evaluate(expr, values)
    assert net.program.evaluate(tuple(exprs[:2]), values) == together[:2]


def test_vector_forms_are_the_texts():
    net = rnn.unroll(steps=3, activation="tanh", inputs=2, hidden=2, outputs=1, bias=True)
    P = net.parameters
    g = [net.symbol(f"g_{t}^z") for t in range(3)]
    x = [net.symbol(f"x_{t}") for t in range(3)]
    assert net.grad("W_x") == sum((g[t].T * x[t] for t in range(1, 3)), g[0].T * x[0])
    assert net.grad("b_h") == g[0] + g[1] + g[2]
    assert net.grad("W_o") == sp.MatrixSymbol("e", 1, 1).T * net.symbol("h_2")
    assert net.grad("x_1") == g[1] * P["W_x"]
    assert net.program["g_1^h"].value == g[2] * P["W_h"]


def test_vector_jacobian_is_diag_slope_times_W_h():
    net = rnn.unroll(steps=3, activation="tanh", inputs=1, hidden=2, outputs=1)
    values = _explicit(net)
    hp = sp.Matrix([[sp.Symbol("a"), sp.Symbol("b")]])
    values[net.symbol("h_0")] = hp
    z1 = net.program.evaluate(net.program["z_1"].value, values)
    h1 = z1.applyfunc(sp.tanh)
    J = h1.jacobian(hp)
    values[net.symbol("h_1")] = h1
    derived = net.program.evaluate(net.transition(1), values)
    assert sp.simplify(derived - J) == sp.zeros(2, 2)
    product = net.path_product(2, 0)
    assert [str(a) for a in product.args][1] == "W_h" and len(product.args) == 4


# -- output -------------------------------------------------------------------------

def test_latex_is_aligned_and_breaks_long_sums():
    net = rnn.unroll(steps=16, activation="tanh")
    text = net.latex()
    assert text.startswith("\\begin{align*}") and text.endswith("\\end{align*}")  # a display to paste
    assert text.count("\\begin{align*}") > 1  # a long derivation is several displays: the page may break between them
    assert re.search(r"&\\quad \{\}\+ g\^\{z\}_\{\d+\} x_\{\d+\}", text)  # the sum over 16 uses continues on indented lines
    assert text.count("\\begin{") == text.count("\\end{")
    tab = net.backward_table().latex()
    assert tab.startswith("\\begin{tabular}{ll}") and tab.count("&") == 8 + 1 + 14 - 14 + len(net.backward_table().rows) - 8
    assert net._repr_latex_() == net.latex()  # Jupyter renders the display as it is
    net = rnn.unroll(steps=7, activation="tanh")


def test_dot_graph_lists_every_dependency():
    net = rnn.unroll(steps=2, activation="tanh")
    dot = net.dot()
    assert dot.startswith("digraph") and dot.rstrip().endswith("}")
    assert '"w_h" -> "z_1";' in dot and '"h_0" -> "z_1";' in dot and '"g_1^z" -> "g_0^h";' in dot


# -- bad input ----------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, error, argument", [
    (dict(steps=0), SeqgradValueError, "steps"),
    (dict(steps=2.0), SeqgradTypeError, "steps"),
    (dict(steps=3, hidden=0), SeqgradValueError, "hidden"),
    (dict(steps=3, inputs="2"), SeqgradTypeError, "inputs"),
    (dict(steps=3, hidden=1.5), SeqgradTypeError, "hidden"),
    (dict(steps=3, activation="swish"), SeqgradValueError, "activation"),
    (dict(steps=3, activation="__import__('os')"), SeqgradValueError, "activation"),
    (dict(steps=3, loss="all"), SeqgradValueError, "loss"),
    (dict(steps=3, reduction="max"), SeqgradValueError, "reduction"),
    (dict(steps=3, bias="yes"), SeqgradTypeError, "bias"),
])
def test_bad_arguments_are_named(kwargs, error, argument):
    with pytest.raises(error, match=argument):
        rnn.unroll(**kwargs)


def test_unknown_gradient_name():
    with pytest.raises(SeqgradValueError, match="one of w_x, w_h, w_o"):
        rnn.unroll(steps=2).grad("W_x")


def test_closed_form_over_the_size_guard():
    net = rnn.unroll(steps=400, activation="tanh")
    with pytest.raises(SizeGuardError, match="size guard of 20000"):
        net.grad("w_x", expand=True)
    with pytest.raises(SizeGuardError, match="expand"):
        rnn.unroll(steps=8).grad("w_h", expand="all", max_terms=50)
    assert net.program.size(net.grad("w_x")) > program.MAX_TERMS
