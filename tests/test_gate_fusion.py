"""Gate fusion as a rewrite pass from IR to IR (crosscheck.cell_loop.fuse_gates): the hoisted IR of a cell of
gate form becomes the gate layout's statements (stacked gate products, step buffers allocated before the
loops, elementwise writes into them), printed by the one emitter of crosscheck.loop_ir for numpy and torch;
the fused loop of cells the layout was not written for (a peephole LSTM, the minimal gated unit, both as cell
equations) equals torch autograd and the unfused loop."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from seqgrad.crosscheck import cell_loop, loop_ir
from seqgrad.crosscheck.cells import Arguments, CellFunction, autograd_gradients, loop_namespace, random_case
from seqgrad.crosscheck.lambdify import run_generated
from seqgrad.derive.builtin_cells import gru_cell, lstm_cell
from seqgrad.derive.cell import Cell

from test_buffered import SIZES, mgu_cell
from test_cell_loop import TIED

PEEPHOLE_PARAMS = ({f"w_x{k}": ("H", "D") for k in "ifoc"} | {f"w_h{k}": ("H", "H") for k in "ifoc"}
                   | {f"b_{k}": ("H",) for k in "ifoc"} | {"p_i": ("H",), "p_f": ("H",), "p_o": ("H",), "w_o": ("C", "H")})


def peephole_lstm(sizes=SIZES, **kw):
    """An LSTM whose gates also read the cell state (Gers and Schmidhuber 2000), written as cell equations."""
    return Cell("""
        zi = w_xi*x + w_hi*h_prev + p_i*c_prev + b_i
        zf = w_xf*x + w_hf*h_prev + p_f*c_prev + b_f
        zc = w_xc*x + w_hc*h_prev + b_c
        c = sigmoid(zf)*c_prev + sigmoid(zi)*tanh(zc)
        zo = w_xo*x + w_ho*h_prev + p_o*c + b_o
        h = sigmoid(zo)*tanh(c)
    """, states="h c", params=PEEPHOLE_PARAMS, head="w_o*h", sizes=sizes, name="peephole", **kw)


def _hoisted(cell):
    return loop_ir.hoist(loop_ir.cell_loop(cell, cell.general()))


def _compile(cell, fn, backend):
    source = loop_ir.Emitter(backend, fn.names).source(fn)
    return source, run_generated(source, "<test>", loop_namespace(cell, backend), "_generated")


def _numbers(values):
    return [np.asarray(v.cpu() if hasattr(v, "cpu") else v, dtype=float) for v in values]


def test_the_pass_rewrites_the_ir_and_the_one_emitter_prints_the_gate_loop():
    cell = lstm_cell(sizes=SIZES)
    hoisted = _hoisted(cell)
    fused = cell_loop.fuse_gates(hoisted)
    assert isinstance(fused, loop_ir.Function) and fused is not hoisted
    kinds = {type(s).__name__ for s in fused.body}
    assert {"Alloc", "Call", "Temporaries", "Loop", "Return"} <= kinds and "Stacked" not in kinds
    forward, backward = fused.loops()
    inside = {type(s).__name__ for loop in (forward, backward) for s in loop.body}
    assert {"View", "Write", "Call", "Loss"} <= inside and {"Rho", "Swap"} <= {type(s).__name__ for s in backward.body}
    assert not [s for s in backward.body if isinstance(s, loop_ir.Accumulate) and s.guard is None]  # every gate weight: after the loop
    gates = [s for s in fused.body if isinstance(s, loop_ir.Call) and s.helper == "_gate_inputs"]
    assert len(gates) == 1  # x_t W_x^T + b of every gate and every step: one stacked product
    for backend in ("numpy", "torch"):
        source, _ = _compile(cell, fused, backend)
        assert source == CellFunction(cell, backend).source  # the compiled loop is this IR through this emitter


def test_the_pass_leaves_a_cell_of_another_form_alone():
    hoisted = _hoisted(Cell(**TIED, sizes=SIZES))
    assert cell_loop.fuse_gates(hoisted) is hoisted


def test_the_step_buffers_are_allocated_before_the_loops():
    """Every buffer a step writes into (the Write statements' temporaries and targets) is taken before the first
    loop: inside the loops, only views and calls that name their output."""
    source = CellFunction(gru_cell(sizes=SIZES)).source
    before = source.split("for t in")[0]
    written = set(re.findall(r"out=(\w+)\)", source))
    declared = set(re.findall(r"^    (\w+) = _(?:empty_n|run_rows)\(", before, re.M))
    viewed = set(re.findall(r"^        (\w+) = \w+\[", source, re.M))
    assert written and written <= declared | viewed, written - declared - viewed
    assert {w for w in written if re.fullmatch(r"_t\d+", w)} <= declared  # the pool of temporaries


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("make", [peephole_lstm, mgu_cell], ids=["peephole_lstm", "mgu"])
def test_the_fused_loop_of_a_cell_it_was_not_written_for_equals_autograd(make, backend):
    cell = make(on=(1, 3, 6))
    hoisted = _hoisted(cell)
    fused = cell_loop.fuse_gates(hoisted)
    assert fused is not hoisted  # it is of gate form: the pass applies
    params, X, y = random_case(cell, np.random.default_rng(7), 7, 5)
    args = Arguments(cell, backend).prepare(params, X, y)
    source, f = _compile(cell, fused, backend)
    assert "_gate_inputs(" in source
    with torch.no_grad():
        ours = _numbers(f(*args))
        _, plain = _compile(cell, hoisted, backend)
        unfused = _numbers(plain(*Arguments(cell, backend).prepare(params, X, y)))
    ref = autograd_gradients(cell, params, X, y)
    keys = ["L"] + list(cell.parameter_names) + ["X"]
    assert len(ours) == len(keys)
    for key, a, b in zip(keys, ours, unfused):
        r = ref[key].detach().numpy()
        assert np.max(np.abs(a.reshape(r.shape) - r)) < 1e-12, key
        assert np.max(np.abs(a.reshape(r.shape) - b.reshape(r.shape))) < 1e-12, key


@pytest.mark.parametrize("make", [lstm_cell, gru_cell, peephole_lstm, mgu_cell], ids=["lstm", "gru", "peephole", "mgu"])
def test_a_view_is_a_statement_not_a_name(make):
    """Every symbol of the fused IR is named by an identifier (a view of a stack is a View statement that binds
    one, never a name spelled ``_Zh[t]``), and each View's target is a symbol of its own source and index."""
    fused = cell_loop.fuse_gates(_hoisted(make(sizes=SIZES)))
    bad = sorted(name for name in fused.names.values() if not name.isidentifier())
    assert not bad, bad[:5]
    views = [s for s in fused.body if isinstance(s, loop_ir.View)]
    views += [s for loop in fused.loops() for s in loop.body if isinstance(s, loop_ir.View)]
    assert views and all(s.source in fused.names and s.target in fused.names for s in views)


def _loop_reads(source):
    """(names assigned before the loops, [(names assigned in loop k, names read in loop k)])."""
    import ast

    fn = ast.parse(source).body[0]
    loops = [s for s in fn.body if isinstance(s, ast.For)]
    first = fn.body.index(loops[0])
    stores = lambda nodes: {n.id for s in nodes for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    loads = lambda nodes: {n.id for s in nodes for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return stores(fn.body[:first]), [(stores(loop.body) | {loop.target.id}, loads(loop.body)) for loop in loops]


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("make", [lstm_cell, gru_cell, peephole_lstm, mgu_cell], ids=["lstm", "gru", "peephole", "mgu"])
def test_no_loop_reads_a_name_only_the_other_loop_binds(make, backend):
    """A view bound in the forward loop is not read by the backward one (the backward binds its own): an
    expression printed in both loops is printed with each loop's names (a GELU's erf(z_t/sqrt 2) once printed
    the forward's view in the backward loop)."""
    before, [(fwd_set, fwd_read), (bwd_set, bwd_read)] = _loop_reads(CellFunction(make(sizes=SIZES), backend).source)
    assert not (bwd_read & fwd_set) - bwd_set - before
    assert not (fwd_read & bwd_set) - fwd_set - before


def test_a_gelu_cell_prints_its_backward_erf_with_the_backward_names():
    gelu = Cell("z = w_x*x + w_h*h_prev; h = gelu(z)", states="h", sizes=SIZES,
                params={"w_x": ("H", "D"), "w_h": ("H", "H"), "w_o": ("C", "H")}, head="w_o*h")
    before, [(fwd_set, _), (bwd_set, bwd_read)] = _loop_reads(CellFunction(gelu, "numpy").source)
    assert not (bwd_read & fwd_set) - bwd_set - before
