"""The autograd twin (crosscheck/twin.py): the cell's step definitions evaluated with the operations' torch
implementations, no printed code.  Against the old printed forward loop, against torch.nn.RNN/GRU/LSTM and
hand-written torch loops (float64, < 1e-12); a printer fault now fails the check (it passed when the twin was
printed by the same printer); an operation without a torch implementation is refused by name before any
evaluation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
import torch

from seqgrad import operations as registry
from seqgrad.crosscheck import code_printer
from seqgrad.crosscheck.cells import CellFunction, against_autograd, autograd_gradients, autograd_twin, random_case
from seqgrad.crosscheck.twin import TorchTwin
from seqgrad.derive import operations
from seqgrad.derive.builtin_cells import gru_cell, lstm_cell, rnn_cell
from seqgrad.derive.cell import Cell
from seqgrad.errors import SeqgradValueError
from test_cell import VEC, _nn_cell, _torch_case

u = sp.Symbol("u")


def _gelu_step(p, x, s):
    z = x @ p["W_x"].T + s["h"] @ p["W_h"].T + p["b"]
    return {"h": z * (1 + torch.erf(z / math.sqrt(2))) / 2 + math.erf(math.sqrt(2) / 4)}


def _abs_step(p, x, s):
    a = p["w_x"] * x + p["w_h"] * s["h"]
    c = 0.5 * s["c"] + torch.abs(a) / math.sqrt(3)
    return {"c": c, "h": torch.tanh(c) * (torch.erf(a) + math.sqrt(5))}


#: two user cells with user functions, erf, abs and sqrt of constants, each with its step written in plain
#: torch by hand and its head
USER = {
    "gelu_vector": (
        dict(equations="z = w_x*x + w_h*h_prev + b; h = mygelu(z) + erf(sqrt(2)/4)", states="h",
             params={"w_x": ("H", "D"), "w_h": ("H", "H"), "b": ("H",), "w_o": ("C", "H")}, head="w_o*h",
             functions={"mygelu": sp.Lambda(u, u * (1 + sp.erf(u / sp.sqrt(2))) / 2)}, sizes=VEC,
             loss="cross_entropy", on="every", reduction="mean", batch="mean"),
        _gelu_step, lambda p, s: s["h"] @ p["W_o"].T),
    "abs_two_state_scalar": (
        dict(equations="a = w_x*x + w_h*h_prev; c = 0.5*c_prev + abs(a)/sqrt(3); h = tanh(c) * shifted(a)",
             states="h c", params="w_x w_h w_o", head="w_o*h", functions={"shifted": sp.Lambda(u, sp.erf(u) + sp.sqrt(5))},
             on=(0, 2), reduction="sum"),
        _abs_step, lambda p, s: p["w_o"] * s["h"]),
}


def _by_hand(cell, step, head, params, X, y):
    """The cell's loss written in plain torch (the loop, the states from 0, the loss of its Loss object)."""
    p = {n: torch.as_tensor(v, dtype=torch.float64).reshape(cell.param_symbol(k).shape if cell.vector else ())
         for (n, v), k in zip(params.items(), cell.param_shapes)}
    for v in p.values():
        v.requires_grad_(True)
    X = torch.as_tensor(X).requires_grad_(True)
    B, steps = X.shape[:2]
    state = {s: torch.zeros((B, cell.shape_of(s)[1]) if cell.vector else (B,), dtype=torch.float64) for s in cell.states}
    positions = cell.loss.positions(steps)
    y = torch.as_tensor(y)
    L = 0.0
    for t in range(steps):
        state = step(p, X[:, t], state)
        if t in positions:
            yhat, y_t = head(p, state), (y if cell.loss.on == "final" else y[:, positions.index(t)])
            if cell.loss.kind == "squared":
                L = L + 0.5 * ((yhat - y_t) ** 2).sum()
            else:
                L = L - (y_t * torch.log_softmax(yhat, -1)).sum()
    if cell.loss.reduction == "mean":
        L = L / len(positions)
    if cell.loss.batch == "mean":
        L = L / B
    grads = torch.autograd.grad(L, list(p.values()) + [X])
    return {"L": L, **dict(zip(list(p) + ["X"], grads))}


def _max_diff(a: dict, b: dict) -> float:
    assert set(a) == set(b)
    return max(float((torch.as_tensor(a[k]).detach().reshape(-1) - torch.as_tensor(b[k]).detach().reshape(-1)).abs().max())
               for k in a)


def _derived_gradients(cell, params, X, y):
    """The derivation's gradients, compiled (numpy loop): what the twin checks."""
    return {k: torch.as_tensor(v) for k, v in CellFunction(cell, "numpy")(params, X, y).items()}


CELLS = {"rnn": lambda v: rnn_cell(sizes=v, bias=True), "gru": lambda v: gru_cell(sizes=v),
         "lstm": lambda v: lstm_cell(sizes=v, on="every", reduction="mean"),
         **{name: (lambda spec: lambda v: Cell(**spec))(spec) for name, (spec, _, _) in USER.items()}}


@pytest.mark.parametrize("name", sorted(CELLS))
@pytest.mark.parametrize("vector", [False, True], ids=["scalar", "vector"])
def test_the_twin_equals_the_derived_gradients(name, vector):
    if name in USER and vector != ("sizes" in USER[name][0]):
        pytest.skip("the user cell is one kind")
    cell = CELLS[name](VEC if vector else None)
    params, X, y = random_case(cell, np.random.default_rng(3), 7)
    ours = autograd_gradients(cell, params, X, y)
    assert set(ours) == set(cell.parameter_names) | {"L", "X"}
    assert _max_diff(ours, _derived_gradients(cell, params, X, y)) < 1e-10


@pytest.mark.parametrize("kind", ["rnn", "gru", "lstm"])
def test_the_twin_equals_torch_nn(kind):
    module, head, X, y, L = _torch_case(kind)
    cell, params, want = _nn_cell(kind, module, head)
    ours = autograd_gradients(cell, params, X.detach(), y)
    assert abs(float(ours["L"]) - float(L.detach())) < 1e-12
    assert float((ours["X"] - X.grad).abs().max()) < 1e-12
    assert float((ours["W_o"] - head.weight.grad).abs().max()) < 1e-12
    for name, value in want.items():
        assert np.max(np.abs(ours[name].numpy().reshape(np.shape(value)) - np.asarray(value))) < 1e-12, name


@pytest.mark.parametrize("name", sorted(USER))
def test_the_twin_equals_hand_written_torch(name):
    spec, step, head = USER[name]
    cell = Cell(**spec)
    params, X, y = random_case(cell, np.random.default_rng(5), 6)
    assert _max_diff(autograd_gradients(cell, params, X, y), _by_hand(cell, step, head, params, X, y)) < 1e-12
    assert max(r[2] for r in against_autograd(cell, steps=(3, 6), trials=1)) < 1e-10  # the compiled loop agrees


def _misprint(monkeypatch, wrong: dict):
    """Make the torch printer print each function of ``wrong`` as another one (a printer fault)."""
    original = code_printer._TorchPrinter._print_operation

    def faulty(self, expr, arg_text=None):
        if expr.func in wrong:
            expr = wrong[expr.func](*expr.args, evaluate=False)
        return original(self, expr, arg_text)

    monkeypatch.setattr(code_printer._TorchPrinter, "_print_operation", faulty)


def _worst(rows):
    return max(r[2] for r in rows)


def test_a_printer_fault_now_fails_the_check(monkeypatch):
    """sin printed as sinh (and so cos, sin's slope, as cosh): the compiled gradients are those of the faulty
    forward loop (the sinh cell's, exactly), so a twin printed by the same printer (the old one) agreed with them;
    this twin evaluates sin by the registry's torch.sin and the check fails."""
    cell = Cell("z = w_x*x + w_h*h_prev; h = sin(z)", states="h", params="w_x w_h w_o", head="w_o*h")
    params, X, y = random_case(cell, np.random.default_rng(0), 5)
    assert _worst(against_autograd(cell, steps=(5,), trials=1)) < 1e-10
    _misprint(monkeypatch, {sp.sin: sp.sinh, sp.cos: sp.cosh})
    compiled = CellFunction(cell, "torch")(params, X, y)
    faulty = Cell("z = w_x*x + w_h*h_prev; h = sinh(z)", states="h", params="w_x w_h w_o", head="w_o*h")
    assert _max_diff(compiled, autograd_gradients(faulty, params, X, y)) < 1e-10  # what a printed twin would see
    assert _worst(against_autograd(cell, steps=(5,), trials=1)) > 1e-3               # the check now fails


def test_tanh_printed_as_sin_fails_the_lstm_check(monkeypatch):
    """The scalar LSTM's loop is printed by the torch printer (the vector one runs the fused gate kernels of
    crosscheck.cell_loop, which print no tanh)."""
    cell = lstm_cell()
    assert _worst(against_autograd(cell, steps=(4,), trials=1)) < 1e-10
    _misprint(monkeypatch, {sp.tanh: sp.sin})
    assert _worst(against_autograd(cell, steps=(4,), trials=1)) > 1e-3


@pytest.fixture
def numpy_only():
    op = registry.register(registry.Operation("np_only", sympy=lambda s: sp.Function("np_only"), numpy=lambda n: n.tanh,
                                              derivative=lambda m, z, h: 1 - h**2, sympy_diff=False))
    yield op
    registry.unregister("np_only")


@pytest.mark.parametrize("through", ["registered", "inside a user function"])
def test_an_operation_without_torch_is_refused_by_name_before_evaluation(numpy_only, through, monkeypatch):
    if through == "registered":
        cell = Cell("z = w_x*x + w_h*h_prev; h = np_only(z)", states="h", params="w_x w_h w_o", head="w_o*h")
    else:
        node = operations.node("np_only")
        cell = Cell("z = w_x*x + w_h*h_prev; h = mine(z)", states="h", params="w_x w_h w_o", head="w_o*h",
                    functions={"mine": sp.Lambda(u, 2 * node(u))})
    params, X, y = random_case(cell, np.random.default_rng(0), 3)
    assert np.isfinite(CellFunction(cell, "numpy")(params, X, y)["L"])  # the cell itself compiles and runs on numpy
    monkeypatch.setattr(TorchTwin, "fn", lambda *a: pytest.fail("evaluated"))
    with pytest.raises(SeqgradValueError, match="np_only.*torch|torch.*np_only"):
        autograd_twin(cell)
    with pytest.raises(SeqgradValueError, match="np_only"):
        autograd_gradients(cell, params, X, y)
