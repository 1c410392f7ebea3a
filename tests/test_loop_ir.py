"""The IR of the compiled code (crosscheck.loop_ir): the hoist pass changes where work is done, never the
result (the loops before and after it agree to 1e-12); the straight-line program and the cell loop are
printed by one emitter; an operation without an implementation for the backend is refused at compile time,
naming the operation and the backend."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from seqgrad import operations as registry
from seqgrad.crosscheck import loop_ir
from seqgrad.crosscheck.cells import Arguments, CellFunction, loop_namespace, random_case
from seqgrad.crosscheck.lambdify import lambdify, run_generated
from seqgrad.derive.cell import Cell
from seqgrad.errors import SeqgradValueError

from test_cell import USER_CELLS, VEC, _make
from test_cell_loop import TIED

SCALAR = dict(equations="z = w_x*x + w_h*h_prev; h = tanh(z)", states="h", params="w_x w_h w_o", head="w_o*h")


def _cells():
    return {"scalar": Cell(**SCALAR), "scalar_user": _make(USER_CELLS["leaky_relu_elman"], False),
            "vector_tied": Cell(**TIED, sizes=VEC)}


def _run(cell, fn, backend, params, X, y):
    source = loop_ir.Emitter(backend, fn.names).source(fn)
    f = run_generated(source, "<test>", loop_namespace(cell, backend), "_generated")
    return source, f(*Arguments(cell, backend).prepare(params, X, y))


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("name", ["scalar", "scalar_user", "vector_tied"])
def test_hoist_moves_work_out_of_the_loops_and_keeps_every_result(name, backend):
    cell = _cells()[name]
    gen = cell.general()
    plain = loop_ir.cell_loop(cell, gen)
    hoisted = loop_ir.hoist(plain)
    # before: every gradient summed in the reversed loop; after: the outer-product ones are stacked products
    assert any(isinstance(s, loop_ir.Accumulate) for s in plain.loops()[1].body)
    assert not any(isinstance(s, loop_ir.Stacked) for s in plain.body)
    stacked = [s for s in hoisted.body if isinstance(s, loop_ir.Stacked)]
    assert stacked  # (the tied cell's shared W_x stays summed in the loop: its step term is two gates')
    forward = hoisted.loops()[0]
    projections = [s for s in hoisted.body[:hoisted.body.index(forward)] if isinstance(s, loop_ir.Assign)
                   and "xproj" in hoisted.names[s.target]]
    assert projections and all(gen.x not in s.value.free_symbols for s in projections)  # X: every step at once
    params, X, y = random_case(cell, np.random.default_rng(3), 6)
    src0, before = _run(cell, plain, backend, params, X, y)
    src1, after = _run(cell, hoisted, backend, params, X, y)
    assert "_outer(" not in src0 and "_outer(" in src1
    for a, b in zip(before, after):
        a, b = (np.asarray(v.cpu() if hasattr(v, "cpu") else v, dtype=float) for v in (a, b))
        assert a.shape == b.shape or a.size == b.size
        assert np.max(np.abs(a.reshape(b.shape) - b)) < 1e-12
    assert src1 == CellFunction(cell, backend).source  # the compiled loop is this IR through this emitter


def test_the_straight_line_program_is_the_ir_without_a_loop():
    from seqgrad.derive import rnn

    net = rnn.unroll(steps=3, activation="tanh")
    f = lambdify(net.program, [net.L, net.grad("w_h")], net.program.leaves())
    assert "for " not in f.source and f.source.count("_op_tanh(") == 3


@pytest.fixture
def numpy_only():
    """A primitive registered here with a numpy implementation only (no torch one)."""
    op = registry.Operation("npsin", sympy=lambda s: s.sin, numpy=lambda n: n.sin, sympy_diff=False,
                            derivative=lambda m, z, h: m.cos(z))
    registry.register(op)
    try:
        yield op
    finally:
        registry.unregister("npsin")


def test_an_operation_without_a_torch_implementation_is_a_compile_time_error(numpy_only):
    from seqgrad.derive.operations import node

    x = sp.Symbol("x")
    expr = node("npsin")(x)
    f = lambdify(None, [expr], [x])
    assert abs(float(f(0.5)[0]) - np.sin(0.5)) < 1e-15
    with pytest.raises(SeqgradValueError, match=r"npsin.*torch|torch.*npsin"):
        lambdify(None, [expr], [x], backend="torch")
    cell = Cell("z = w_x*x + w_h*h_prev; h = npsin(z)", states="h", params="w_x w_h w_o", head="w_o*h")
    with pytest.raises(SeqgradValueError, match=r"npsin.*torch|torch.*npsin"):
        CellFunction(cell, "torch")  # at construction: before any call
    # numpy has it: the loop's loss and gradients are those of the same cell with sin
    same = Cell("z = w_x*x + w_h*h_prev; h = sin(z)", states="h", params="w_x w_h w_o", head="w_o*h")
    params, X, y = random_case(cell, np.random.default_rng(0), 5)
    ours, ref = CellFunction(cell)(params, X, y), CellFunction(same)(params, X, y)
    assert all(np.max(np.abs(np.asarray(ours[k]) - np.asarray(ref[k]))) < 1e-13 for k in ref)
