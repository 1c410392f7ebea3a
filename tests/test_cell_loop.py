"""The gate layout of the compiled cell loops (crosscheck.cell_loop): which cells get it, that every gradient
through it equals torch autograd in float64 on both backends, that a cell of another shape falls back to the
plain loop and stays right, and the accuracy of the loop's fast activations."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import torch

from seqgrad.crosscheck import cell_loop, loop_ir
from seqgrad.crosscheck.cells import CellFunction, against_autograd
from seqgrad.derive.builtin_cells import gru_cell, lstm_cell, rnn_cell
from seqgrad.derive.cell import Cell

from test_cell import USER_CELLS, VEC, _make, _worst


def _layout(cell):
    return cell_loop.gate_layout(loop_ir.hoist(loop_ir.cell_loop(cell, cell.general())))


@pytest.mark.parametrize("make, recurrent, gates", [(rnn_cell, 1, 1), (gru_cell, 3, 4), (lstm_cell, 4, 4)],
                         ids=["rnn", "gru", "lstm"])
def test_builtin_cells_get_the_gate_layout(make, recurrent, gates):
    layout = _layout(make(sizes=VEC))
    assert (layout.recurrent, len(layout.gates)) == (recurrent, gates)
    src = CellFunction(make(sizes=VEC)).source
    before, forward, backward = src.split("for t in")
    assert "_Z = _gate_inputs(" in before
    assert re.search(r"(\w+) = _Zh\[t\]\n\s+_recur\(\1, h_prev, _WhTk, _rf\)", forward)  # the step's view, then the product
    assert "_recur_back(_gz, _Whk, _next_h, _rb)" in backward and "_gate_grads(_GZ, _Xt)" in backward


def test_lstm_sigmoid_gates_are_one_run_and_tanh_c_is_computed_once():
    layout = _layout(lstm_cell(sizes=VEC))
    assert [(a, b) for a, b, _ in layout.runs] == [(0, 3), (3, 4)]  # i, f, o together; the candidate c alone
    src = CellFunction(lstm_cell(sizes=VEC)).source
    assert src.count("_sigmoid_into(") == 1 and src.count("_tanh_into(c_t, ") == 1 and "numpy.tanh" not in src
    assert "_dA0 = _run_rows(X, 3, _B, 4)" in src and "out=_dA0)" in src  # the three sigmoid slopes y (1 - y), one buffer


@pytest.mark.parametrize("name", sorted(USER_CELLS))
def test_user_cells_get_the_gate_layout(name):
    cell = _make(USER_CELLS[name], True)
    assert _layout(cell) is not None
    assert "_gate_inputs(" in CellFunction(cell).source


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("make, on", [(gru_cell, "every"), (lstm_cell, (0, 2, 4)),
                                     (lambda **kw: rnn_cell(bias=True, **kw), "final")],
                         ids=["gru_every", "lstm_positions", "rnn_bias_final"])
def test_gate_layout_against_autograd(make, on, backend):
    cell = make(sizes=VEC, on=on)
    assert _layout(cell) is not None
    rows = against_autograd(cell, steps=(5, 9), trials=1, backend=backend, batch=4)
    assert {r[1] for r in rows} == set(cell.parameter_names) | {"L", "X"}
    assert _worst(rows) < 1e-10, max(rows, key=lambda r: r[2])


TIED = dict(equations="a = w_x*x + w_h*h_prev; z = w_x*x + w_g*h_prev; h = tanh(a) * sigmoid(z)", states="h",
            params={"w_x": ("H", "D"), "w_h": ("H", "H"), "w_g": ("H", "H"), "w_o": ("C", "H")}, head="w_o*h")


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_a_weight_shared_by_two_gates_falls_back_to_the_plain_loop(backend):
    cell = Cell(**TIED, sizes=VEC)
    assert _layout(cell) is None  # dW_x is a sum of two gates' terms: not the gate form
    assert "_gate_inputs(" not in CellFunction(cell).source
    assert _worst(against_autograd(cell, steps=(1, 4), trials=1, backend=backend)) < 1e-10


def test_scalar_cells_keep_the_plain_loop():
    cell = _make(USER_CELLS["leaky_relu_elman"], False)
    assert _layout(cell) is None


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_fast_activations_are_accurate_and_do_not_overflow(backend):
    z = np.concatenate([np.linspace(-800, 800, 4001), np.geomspace(1e-12, 1.0, 200), -np.geomspace(1e-12, 1.0, 200)])
    helpers = cell_loop.helpers(backend)
    exact_sigmoid = np.where(z >= 0, 1 / (1 + np.exp(-np.abs(z))), np.exp(-np.abs(z)) / (1 + np.exp(-np.abs(z))))
    for name, exact in (("_tanh_into", np.tanh(z)), ("_sigmoid_into", exact_sigmoid)):
        arg = torch.tensor(z) if backend == "torch" else z
        out = torch.empty_like(arg) if backend == "torch" else np.empty_like(z)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no overflow warning at |z| = 800
            helpers[name](arg, out)
        out = np.asarray(out)
        assert np.all(np.isfinite(out))
        assert np.max(np.abs(out - exact)) < 1e-15, name


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_two_biases_of_one_gate_get_separate_arrays(backend):
    """A GRU's b_xr and b_hr have equal gradients; writing into one must not change the other."""
    from seqgrad.crosscheck.cells import random_case

    cell = gru_cell(sizes=VEC)
    params, X, y = random_case(cell, np.random.default_rng(0), 5, 4)
    if backend == "torch":
        params, X, y = ({k: torch.as_tensor(v) for k, v in params.items()}, torch.as_tensor(X), torch.as_tensor(y))
    out = CellFunction(cell, backend)(params, X, y)
    pairs = [(a, b) for a in out for b in out if a < b and a.startswith("b_") and b.startswith("b_")
             and out[a].shape == out[b].shape and bool((out[a] == out[b]).all())]
    assert pairs  # the reset gate's two biases
    for a, b in pairs:
        before = out[b].clone() if backend == "torch" else out[b].copy()
        out[a][...] = 123.0
        assert (out[b] == before).all(), (a, b)


def test_the_gate_form_is_read_from_the_ir_statements():
    """gate_layout reads the hoisted IR: a weight gradient the IR sums in another form (here the stacked
    product of dW_xf replaced by the input gate's), or a dL/dx_t with a term more, is not the gate form."""
    from dataclasses import replace

    fn = loop_ir.hoist(loop_ir.cell_loop(lstm_cell(sizes=VEC), lstm_cell(sizes=VEC).general()))
    assert cell_loop.gate_layout(fn) is not None
    stacked = {fn.names[s.target]: s for s in fn.body if isinstance(s, loop_ir.Stacked)}
    wrong = replace(stacked["d_W_xf"], a=stacked["d_W_xi"].a)
    body = [wrong if s is stacked["d_W_xf"] else s for s in fn.body]
    assert cell_loop.gate_layout(replace(fn, body=body)) is None
    dx = next(s for s in fn.body if isinstance(s, loop_ir.Assign) and s.target == fn.body[-1].values[-1])
    more = replace(dx, value=dx.value + dx.value.args[0])
    body = [more if s is dx else s for s in fn.body]
    assert cell_loop.gate_layout(replace(fn, body=body)) is None
