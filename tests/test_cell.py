"""The cell engine: a user's cell from its equations, derived at general t, compiled as a loop, checked
against torch autograd (float64); the built-in cells against torch.nn.RNN/GRU/LSTM; the general-t
formulas against the text's boxed formulas and against the unrolled program; bad input."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
import torch

from seqgrad.crosscheck.cells import CellFunction, against_autograd, random_case
from seqgrad.derive import activations
from seqgrad.derive.builtin_cells import gru_cell, lstm_cell, rnn_cell
from seqgrad.derive.cell import Cell, CellError, T, t
from seqgrad.derive.sequence import adjoint, stepped
from seqgrad.errors import ParseError, SeqgradError

VEC = {"D": 3, "H": 4, "C": 2}
MATS = {"w_x": ("H", "D"), "w_h": ("H", "H"), "b_h": ("H",), "w_o": ("C", "H"), "b_o": ("C",)}
z = sp.Symbol("z")

USER_CELLS = {
    "leaky_relu_elman": dict(equations="z = w_x*x + w_h*h_prev + b_h; h = leaky_relu(z)", states="h",
                             params=MATS, head="w_o*h + b_o"),
    "indrnn": dict(equations="z = w_x*x + u*h_prev + b_h; h = relu(z)", states="h",
                   params={"w_x": ("H", "D"), "u": ("H",), "b_h": ("H",), "w_o": ("C", "H")}, head="w_o*h"),
    "residual": dict(equations="a = w_x*x + w_h*h_prev; h = h_prev + tanh(a)", states="h",
                     params={"w_x": ("H", "D"), "w_h": ("H", "H"), "w_o": ("C", "H")}, head="w_o*h"),
    "softplus": dict(equations="z = w_x*x + w_h*h_prev; h = sp(z) - 0.5", states="h",
                     params={"w_x": ("H", "D"), "w_h": ("H", "H"), "w_o": ("C", "H")}, head="w_o*h",
                     functions={"sp": sp.Lambda(z, sp.log(1 + sp.exp(z)))}),
    "two_state": dict(equations="z = w_x*x + w_h*h_prev; c = 0.5*c_prev + sigmoid(z); h = tanh(c) * g",
                      states="h c", params={"w_x": ("H", "D"), "w_h": ("H", "H"), "g": ("H",), "w_o": ("C", "H")},
                      head="w_o*h"),
}


def _scalar_params(params):
    return list(params)


def _make(spec, vector, **kw):
    spec = dict(spec)
    if not vector:
        spec["params"] = _scalar_params(spec["params"])
    return Cell(**spec, sizes=VEC if vector else None, **kw)


def _worst(rows):
    return max(r[2] for r in rows)


@pytest.mark.parametrize("name", sorted(USER_CELLS))
@pytest.mark.parametrize("vector", [False, True], ids=["scalar", "vector"])
def test_user_cells_against_autograd(name, vector):
    cell = _make(USER_CELLS[name], vector)
    rows = against_autograd(cell, steps=(1, 5, 200), trials=1)
    assert {r[1] for r in rows} == set(cell.parameter_names) | {"L", "X"}
    assert _worst(rows) < 1e-10, max(rows, key=lambda r: r[2])


@pytest.mark.parametrize("on,reduction,batch", [("every", "mean", "mean"), ((0, 2, 4), "sum", "sum"), ("final", "sum", "mean")])
def test_losses_positions_and_means(on, reduction, batch):
    cell = _make(USER_CELLS["leaky_relu_elman"], True, on=on, reduction=reduction, batch=batch)
    assert _worst(against_autograd(cell, steps=(5, 7), trials=1)) < 1e-10


@pytest.mark.parametrize("on", ["final", "every"])
def test_cross_entropy_over_classes(on):
    cell = _make(USER_CELLS["residual"], True, loss="cross_entropy", on=on, reduction="mean")
    assert _worst(against_autograd(cell, steps=(1, 6), trials=1)) < 1e-10
    gen = cell.general()
    assert "softmax" in str(gen.error_row())


def test_class_ids_and_one_hot_agree():
    cell = _make(USER_CELLS["residual"], True, loss="cross_entropy")
    f = CellFunction(cell)
    params, X, _ = random_case(cell, np.random.default_rng(1), 4)
    ids = np.array([0, 1, 0])
    a, b = f(params, X, ids), f(params, X, np.eye(2)[ids])
    assert np.allclose(a["W_x"], b["W_x"]) and np.isclose(a["L"], b["L"])


@pytest.mark.parametrize("make", [rnn_cell, gru_cell, lstm_cell], ids=["rnn", "gru", "lstm"])
@pytest.mark.parametrize("vector", [False, True], ids=["scalar", "vector"])
def test_builtin_cells_against_autograd(make, vector):
    cell = make(sizes=VEC if vector else None)
    assert _worst(against_autograd(cell, steps=(1, 4, 200), trials=1)) < 1e-10


def _torch_case(kind, D=3, H=4, C=2, B=3, steps=6, seed=0):
    torch.manual_seed(seed)
    module = {"rnn": torch.nn.RNN, "gru": torch.nn.GRU, "lstm": torch.nn.LSTM}[kind](D, H, batch_first=True).double()
    head = torch.nn.Linear(H, C, bias=False).double()
    X = torch.randn(B, steps, D, dtype=torch.float64, requires_grad=True)
    y = torch.randn(B, C, dtype=torch.float64)
    out, _ = module(X)
    L = 0.5 * ((head(out[:, -1]) - y) ** 2).sum()
    L.backward()
    return module, head, X, y, L


def _split(w, n):
    return [p.detach().numpy() for p in torch.chunk(w, n, 0)]


def _nn_cell(kind, module, head):
    """The built-in cell of a torch.nn.RNN/GRU/LSTM with its weights, and the module's gradients by parameter."""
    W = {n: getattr(module, n) for n in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")}
    grads = {n: w.grad for n, w in W.items()}
    if kind == "rnn":
        cell = rnn_cell(sizes=VEC, bias=True)
        params = {"W_x": W["weight_ih_l0"], "W_h": W["weight_hh_l0"], "b_h": W["bias_ih_l0"] + W["bias_hh_l0"],
                  "W_o": head.weight, "b_o": np.zeros(2)}
        want = {"W_x": grads["weight_ih_l0"], "W_h": grads["weight_hh_l0"], "b_h": grads["bias_ih_l0"]}
    elif kind == "gru":
        cell = gru_cell(sizes=VEC)
        params, want = {"W_o": head.weight}, {}
        for part, gates in (("weight_ih_l0", "W_x"), ("weight_hh_l0", "W_h"), ("bias_ih_l0", "b_x"), ("bias_hh_l0", "b_h")):
            for g, value, grad in zip("run", _split(W[part], 3), _split(grads[part], 3)):
                params[gates + g], want[gates + g] = value, grad
    else:
        cell = lstm_cell(sizes=VEC)
        params, want = {"W_o": head.weight}, {}
        bias = W["bias_ih_l0"] + W["bias_hh_l0"]
        for part, gates in (("weight_ih_l0", "W_x"), ("weight_hh_l0", "W_h")):
            for g, value, grad in zip("ifco", _split(W[part], 4), _split(grads[part], 4)):
                params[gates + g], want[gates + g] = value, grad
        for g, value, grad in zip("ifco", _split(bias, 4), _split(grads["bias_ih_l0"], 4)):
            params["b_" + g], want["b_" + g] = value, grad
    return cell, params, want


@pytest.mark.parametrize("kind", ["rnn", "gru", "lstm"])
def test_builtin_cells_against_torch_nn(kind):
    module, head, X, y, L = _torch_case(kind)
    cell, params, want = _nn_cell(kind, module, head)
    ours = CellFunction(cell)(params, X.detach().numpy(), y.numpy())
    assert abs(float(ours["L"]) - float(L)) < 1e-12
    assert np.max(np.abs(ours["W_o"] - head.weight.grad.numpy())) < 1e-12
    assert np.max(np.abs(ours["X"] - X.grad.numpy())) < 1e-12
    for name, value in want.items():
        assert np.max(np.abs(np.reshape(ours[name], np.shape(value)) - np.asarray(value))) < 1e-12, name


# -- the general-t derivation ------------------------------------------------------------------------

def test_general_rnn_equals_the_boxed_formulas():
    """Text L154-166 (boxed gradients at T = 3) and L290/L304/L318 (vector recursion) at general t."""
    gen = rnn_cell(activation="phi").general()
    s, v = sp.Symbol, stepped
    assert sp.expand(gen.grad("w_x").at(3) - sum(adjoint(v("z", k)) * v("x", k) for k in range(3))) == 0
    assert sp.expand(gen.grad("w_h").at(3) - sum(adjoint(v("z", k)) * v("h", k - 1) for k in range(3))) == 0
    assert gen.grad("w_o") == s("e") * v("h", T - 1)
    assert gen.grad("x") == adjoint(v("z", t)) * s("w_x")
    rows = {r.lhs: r for r in gen.backward_rows()}
    assert rows[adjoint(v("z", t))].rhs == adjoint(v("h", t)) * activations.dphi(v("z", t))
    assert gen.transition() == s("w_h") * activations.dphi(v("z", t))
    # per-position loss (L318): g_t^h = e_t w_o + g_{t+1}^z w_h, g_T^z = 0
    every = rnn_cell(sizes=VEC, on="every").general()
    M = sp.MatrixSymbol
    g_h = next(r for r in every.backward_rows() if r.lhs == adjoint(v("h", t, (1, 4))))
    assert g_h.rhs == v("e", t, (1, 2)) * M("W_o", 2, 4) + adjoint(v("z", t + 1, (1, 4))) * M("W_h", 4, 4)
    assert every.grad("w_o").term == v("e", t, (1, 2)).T * v("h", t, (1, 4))


@pytest.mark.parametrize("make", [lambda: rnn_cell("phi"), lambda: rnn_cell(sizes=VEC, bias=True, on="every"),
                                  gru_cell, lambda: lstm_cell(sizes={"D": 2, "H": 2, "C": 1}),
                                  lambda: _make(USER_CELLS["two_state"], False, on=(0, 2))],
                         ids=["rnn_phi", "rnn_vector_every", "gru", "lstm_vector", "two_state_positions"])
@pytest.mark.parametrize("steps", [1, 2, 3, 6])
def test_general_equals_unrolled_program(make, steps):
    cell = make()
    if isinstance(cell.loss.on, tuple) and max(cell.loss.on) >= steps:
        pytest.skip("fewer steps than loss positions")
    assert cell.unroll(steps).check_general() == []


def test_unrolled_gradients_equal_sympy_diff_of_nested_loss():
    """The unrolled program's sums over uses equal plain sympy.diff of the fully nested loss (two states,
    a loss at every step), compared at random rational points to 30 digits."""
    cell = _make(USER_CELLS["two_state"], False, on="every")
    net = cell.unroll(3)
    L = net.loss_closed_form()
    rng = np.random.default_rng(3)
    leaves = sorted(L.free_symbols, key=str)
    # each gradient built once, then evaluated at every point in 50-digit arithmetic (exact rational leaves made
    # SymPy carry exact rationals through the nested tree, which took minutes)
    pairs = {name: (net.grad(name, expand="all"), sp.diff(L, net.parameters[name])) for name in net.parameters}
    for _ in range(2):
        point = {s: sp.Float(sp.Rational(int(rng.integers(-9, 10)), int(rng.integers(1, 9))), 50) for s in leaves}
        for name, (ours, plain) in pairs.items():
            assert abs(sp.N((ours - plain).xreplace(point), 30)) < 1e-25, name
            assert sp.N(plain.xreplace(point), 30) != 0, name  # a gradient that vanishes proves nothing


def test_general_check_can_fail():
    cell = rnn_cell("phi")
    net = cell.unroll(3)
    gen = cell.general()
    d = gen.backward_defs[-1]
    object.__setattr__(d, "value", d.value * 2)  # a wrong sensitivity must be caught
    try:
        assert net.check_general() != []
    finally:
        object.__setattr__(d, "value", d.value / 2)


def test_general_prints_in_latex():
    text = lstm_cell(sizes=VEC).general().latex()
    assert r"\sum_{t=0}^{T - 1}" in text and r"\mathbf{g}^{c}_{t+1} \odot \mathbf{f}_{t+1}" in text


def test_compiled_code_does_not_grow_with_T():
    f = CellFunction(rnn_cell(sizes=VEC))
    params, X, y = random_case(f.cell, np.random.default_rng(0), 300)
    out = f(params, X, y)
    assert out["X"].shape == X.shape and "for t in range(_T)" in f.source and len(f.source) < 5000


# -- bad input -----------------------------------------------------------------------------------------

BAD = [
    (dict(equations="z = w*x; h = tanh(z)", states="c", params="w v", head="v*h"), "states"),
    (dict(equations="z = w*x + q; h = tanh(z)", states="h", params="w v", head="v*h"), "q"),
    (dict(equations="h = tanh(w*x + w*h_prev)", states="h", params="w v unused", head="v*h"), "unused"),
    (dict(equations="h = tanh(w*x + w*h_prev_prev)", states="h", params="w v", head="v*h"), "first-order"),
    (dict(equations="h = tanh(w*x)", states="h", params="w v", head="v*x"), "head"),
    (dict(equations="h = __import__('os').system('true')", states="h", params="w v", head="v*h"), "not allowed"),
]


@pytest.mark.parametrize("kw,fragment", BAD)
def test_bad_cells_are_refused_clearly(kw, fragment):
    with pytest.raises(SeqgradError) as info:
        Cell(**kw)
    assert fragment in str(info.value)


def test_shape_mismatch_names_both_shapes():
    with pytest.raises(CellError, match=r"1 x 3.*4 x 4"):
        Cell("z = w_h*x; h = tanh(z)", states="h", params={"w_h": ("H", "H"), "w_o": ("C", "H")}, head="w_o*h", sizes=VEC)


def test_generic_phi_cannot_be_compiled():
    with pytest.raises(SeqgradError, match="concrete activation"):
        CellFunction(rnn_cell("phi"))({"w_x": 1.0, "w_h": 1.0, "w_o": 1.0}, np.ones((1, 2)), np.ones(1))


def test_wrong_parameter_names_and_shapes():
    f = CellFunction(rnn_cell(sizes=VEC))
    params, X, y = random_case(f.cell, np.random.default_rng(0), 3)
    with pytest.raises(SeqgradError, match="params"):
        f({**params, "W_q": 1.0}, X, y)
    with pytest.raises(SeqgradError, match="W_h"):
        f({**params, "W_h": np.ones((3, 3))}, X, y)
    with pytest.raises(SeqgradError, match="X"):
        f(params, X[..., :2], y)


def test_relu_kink_convention_is_torch_relu():
    cell = Cell("h = relu(w*x + v*h_prev)", states="h", params="w v o", head="o*h")
    out = CellFunction(cell)({"w": 1.0, "v": 1.0, "o": 1.0}, np.array([[0.0]]), np.array([1.0]))
    assert out["w"] == 0.0  # relu'(0) = 0, as torch.relu


def test_parse_error_is_one_line():
    with pytest.raises(ParseError):
        Cell("h = tanh(w*x", states="h", params="w v", head="v*h")


def test_symbols_t_and_T():
    assert t.is_integer and T.is_positive


# -- path products of any cell ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["leaky_relu_elman", "two_state", "residual"])
def test_transition_jacobians_equal_autograd(name):
    """The derived J_t, evaluated along a trajectory, equals torch's Jacobian of one step of the forward loop."""
    from seqgrad.crosscheck.cell_paths import transition_jacobians

    cell = _make(USER_CELLS[name], True)
    params, X, _ = random_case(cell, np.random.default_rng(2), 6, batch=1)
    J = transition_jacobians(cell, params, X[0])
    P = {k: torch.tensor(np.asarray(v, dtype=float)) for k, v in params.items()}
    H = cell.sizes["H"]
    assert cell.general().transition().shape == (H, H)
    for t_ in (1, 4):
        h_prev = torch.tensor(_states_before(cell, params, X, t_), requires_grad=True)
        jac = torch.autograd.functional.jacobian(lambda hp: _one_step(cell, P, torch.tensor(X[0, t_]), hp), h_prev)
        np.testing.assert_allclose(J[t_], jac.numpy(), atol=1e-12)


def _one_step(cell, P, x, h_prev):
    """The first state after one step of the cell's equations from ``h_prev`` (other states at their trajectory)."""
    env = {"x": x[None], "h_prev": h_prev[None], **{k.lower() if k.startswith("W") else k: v for k, v in P.items()}}
    env.update(_OTHER)
    vals = dict(env)
    for name, expr in cell.equations:
        vals[name] = _torch_eval(expr, vals, cell)
    return vals[cell.states[0]][0]


_OTHER: dict = {}


def _torch_eval(expr, vals, cell):
    import sympy as sp

    if expr.is_Number:
        return float(expr)
    if expr.is_Symbol:
        return vals[expr.name]
    if expr.is_Add:
        out = 0
        for a in expr.args:
            out = out + _torch_eval(a, vals, cell)
        return out
    if expr.is_Mul:
        mats = [a for a in expr.args if a.is_Symbol and len(cell.param_shapes.get(a.name, ())) == 2]
        rest = [a for a in expr.args if a not in mats]
        out = 1
        for a in rest:
            out = out * _torch_eval(a, vals, cell)
        for W in mats:
            out = out @ vals[W.name].T
        return out
    arg = _torch_eval(expr.args[0], vals, cell) if expr.args else None
    if isinstance(expr, sp.tanh):
        return torch.tanh(arg)
    if isinstance(expr, activations.sigmoid):
        return torch.sigmoid(arg)
    if isinstance(expr, sp.Max):
        a, b = (_torch_eval(x, vals, cell) for x in expr.args)
        return torch.maximum(torch.as_tensor(a, dtype=torch.float64), torch.as_tensor(b, dtype=torch.float64))
    raise NotImplementedError(expr)


def _states_before(cell, params, X, t_):
    """h_{t-1} (and the other states at t-1, kept in _OTHER) along the trajectory, by the compiled forward."""
    _OTHER.clear()
    P = {k: torch.tensor(np.asarray(v, dtype=float)) for k, v in params.items()}
    state = {f"{s}_prev": torch.zeros(1, cell.sizes["H"], dtype=torch.float64) for s in cell.states}
    for k in range(t_):
        vals = {"x": torch.tensor(X[0, k])[None], **state,
                **{n.lower() if n.startswith("W") else n: v for n, v in P.items()}}
        for name, expr in cell.equations:
            vals[name] = _torch_eval(expr, vals, cell)
        state = {f"{s}_prev": vals[s] for s in cell.states}
    _OTHER.update({k: v for k, v in state.items() if k != "h_prev"})
    return state["h_prev"][0].numpy()


def test_path_norms_of_a_user_cell_and_the_figure(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from seqgrad.crosscheck.cell_paths import path_norms, plot_path_norms

    cell = _make(USER_CELLS["leaky_relu_elman"], True)
    params, X, _ = random_case(cell, np.random.default_rng(4), 30, batch=1, scale=1.5)
    norms = path_norms(cell, params, X[0])
    assert norms.violations() == 0 and norms.distance[-1] == 29
    fig, ax = plt.subplots()
    lines = plot_path_norms(ax, cell, params, X[0])
    np.testing.assert_allclose(lines[0].get_ydata(), norms.measured)
    fig.savefig(tmp_path / "paths.png")
    plt.close(fig)
