"""The compiled gate loops allocate no step-sized array (crosscheck.buffered): every elementwise result of a
step is written into a buffer allocated before the loop, on both backends, and the gradients stay those of
torch autograd in float64.

Three checks: the generated loop bodies, read as Python (every call there names its output, no arithmetic
operator makes a new array); the loop run under tracemalloc line by line (numpy: no line of a loop body
allocates even a transient block of step size); and which operations fall back to an allocating call."""

from __future__ import annotations

import ast
import sys
import tracemalloc

import numpy as np
import pytest

from seqgrad.crosscheck import buffered
from seqgrad.crosscheck.cells import CellFunction, against_autograd, random_case
from seqgrad.derive.builtin_cells import gru_cell, lstm_cell, rnn_cell
from seqgrad.derive.cell import Cell

SIZES = {"D": 3, "H": 4, "C": 2}


def ugrnn_cell(sizes=SIZES, **kw):
    """The update-gate RNN (Collins, Sohl-Dickstein, Sussillo 2017): a user's cell of gate form."""
    return Cell("""
        zc = w_xc*x + w_hc*h_prev + b_c
        zg = w_xg*x + w_hg*h_prev + b_g
        g = sigmoid(zg)
        h = g*h_prev + (1 - g)*tanh(zc)
    """, states="h", params={"w_xc": ("H", "D"), "w_hc": ("H", "H"), "b_c": ("H",), "w_xg": ("H", "D"),
                             "w_hg": ("H", "H"), "b_g": ("H",), "w_o": ("C", "H")}, head="w_o*h", sizes=sizes,
                name="ugrnn", **kw)


def mgu_cell(sizes=SIZES, **kw):
    """The minimal gated unit (Zhou, Wu, Zhang, Zhou 2016): one forget gate; the candidate reads f * h_prev."""
    return Cell("""
        zf = w_xf*x + w_hf*h_prev + b_f
        f = sigmoid(zf)
        fh = f*h_prev
        zn = w_xn*x + w_hn*fh + b_n
        h = (1 - f)*h_prev + f*tanh(zn)
    """, states="h", params={"w_xf": ("H", "D"), "w_hf": ("H", "H"), "b_f": ("H",), "w_xn": ("H", "D"),
                             "w_hn": ("H", "H"), "b_n": ("H",), "w_o": ("C", "H")}, head="w_o*h", sizes=sizes,
                name="mgu", **kw)


CELLS = {"rnn": rnn_cell, "gru": gru_cell, "lstm": lstm_cell, "ugrnn": ugrnn_cell}
BACKENDS = ["numpy", "torch"]

#: calls a loop body may make: the kernels (each with out=) and the loops' own in-place helpers
IN_PLACE = set(buffered.KERNELS) - {"_alloc_into"} | {"_recur", "_recur_back", "_tanh_into", "_sigmoid_into", "_assign"}


def _loop_lines(source):
    """The line numbers of the statements inside the loops over t, less the loss positions' blocks
    (``if _index[t] >= 0:`` and ``if e_t is not None:``, which run once per loss position)."""
    tree = ast.parse(source)
    loops = [n for n in ast.walk(tree) if isinstance(n, ast.For)]
    lines, statements = set(), []
    for loop in loops:
        for stmt in loop.body:
            if isinstance(stmt, ast.If):
                continue
            statements.append(stmt)
            lines.add(stmt.lineno)
    return loops, statements, lines


def _allocations(stmt):
    """What in one loop statement makes a new array: an arithmetic operator (outside an index), or a call
    that is not an in-place kernel writing into ``out``."""
    found = []

    def visit(node, in_index=False):
        if isinstance(node, ast.Subscript):
            visit(node.value, in_index)
            visit(node.slice, True)
            return
        if isinstance(node, (ast.BinOp, ast.UnaryOp)) and not in_index:
            found.append(ast.unparse(node))
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
            if name not in IN_PLACE:
                found.append(ast.unparse(node))
            elif name.startswith("_k_") and name != "_k_fill" and not any(k.arg == "out" for k in node.keywords):
                found.append(ast.unparse(node))
        for child in ast.iter_child_nodes(node):
            visit(child, in_index)

    visit(stmt)
    return found


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(CELLS))
def test_loop_bodies_make_no_new_array(name, backend):
    f = CellFunction(CELLS[name](sizes=SIZES), backend)
    loops, statements, _ = _loop_lines(f.source)
    assert len(loops) == 2  # the forward loop and the backward loop
    bad = [(ast.unparse(s), found) for s in statements for found in [_allocations(s)] if found]
    assert not bad, bad
    assert f.fallbacks == []


def test_the_source_check_sees_an_allocating_expression():
    """The check above fails on the loops as they were printed before (``c_t = f_t*c_prev + i_t*ctilde_t``)."""
    src = "def f():\n    for t in range(3):\n        _add_into(c_t, c_prev*f_t, ctilde_t*i_t)\n        h = _tanh_of(c_t)\n"
    _, statements, _ = _loop_lines(src)
    assert [_allocations(s) for s in statements] == [["_add_into(c_t, c_prev * f_t, ctilde_t * i_t)", "c_prev * f_t",
                                                      "ctilde_t * i_t"], ["_tanh_of(c_t)"]]


def _step_sized_lines(f, cell, B, T):
    """Lines of the loop bodies during which numpy allocated a block of at least a quarter of a (B, H) row
    block (traced line by line: the peak since the line began, above the memory at its start)."""
    params, X, y = random_case(cell, np.random.default_rng(0), T, B)
    args = f.prepare(params, X, y)
    _, _, lines = _loop_lines(f.source)
    threshold = B * cell.sizes["H"] * 8 // 4
    code = f.fn.__code__
    hits, state = {}, {"line": None, "start": 0}

    def tracer(frame, event, arg):
        if frame.f_code is not code:
            return None
        if event in ("line", "return"):
            current, peak = tracemalloc.get_traced_memory()
            line = state["line"]
            if line in lines and peak - state["start"] >= threshold:
                hits[line] = max(hits.get(line, 0), peak - state["start"])
            tracemalloc.reset_peak()
            state["line"], state["start"] = frame.f_lineno, tracemalloc.get_traced_memory()[0]
        return tracer

    tracemalloc.start()
    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        f.fn(*args)
    finally:
        sys.settrace(old)
        tracemalloc.stop()
    source = f.source.splitlines()
    return {source[n - 1].strip(): size for n, size in hits.items()}


@pytest.mark.parametrize("name", sorted(CELLS))
def test_numpy_loops_allocate_nothing_step_sized(name):
    cell = CELLS[name](sizes={"D": 8, "H": 8, "C": 1})
    f = CellFunction(cell)
    assert _step_sized_lines(f, cell, B=512, T=6) == {}


def test_the_traced_check_sees_a_temporary():
    """The same trace flags a loop line that makes a step-sized temporary and frees it at once."""
    cell = lstm_cell(sizes={"D": 8, "H": 8, "C": 1})
    f = CellFunction(cell)
    f.source = f.source.replace("_k_mul(c_prev, f_t, out=c_t)", "_assign(c_t, c_prev*f_t)")
    from seqgrad.crosscheck.lambdify import run_generated

    namespace = dict(f.fn.__globals__)
    f.fn = run_generated(f.source, "<test>", namespace, "_generated")
    assert list(_step_sized_lines(f, cell, B=512, T=6)) == ["_assign(c_t, c_prev*f_t)"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(CELLS) + ["mgu"])
def test_buffered_loops_equal_autograd(name, backend):
    make = (lambda **kw: rnn_cell(bias=True, **kw)) if name == "rnn" else CELLS.get(name, mgu_cell)
    cell = make(sizes=SIZES, on="every")
    rows = against_autograd(cell, steps=(1, 4, 9), trials=1, backend=backend, batch=5)
    assert {r[1] for r in rows} == set(cell.parameter_names) | {"L", "X"}
    assert max(r[2] for r in rows) < 1e-12, max(rows, key=lambda r: r[2])


def test_fallbacks_are_listed():
    """An operation without an out= form in a backend is evaluated as before and copied in, visibly: the
    exact GELU's erf on numpy (numpy has no erf ufunc); torch's erf takes out=.  A parameter outside the
    gates (the MGU's W_hn, applied to f * h_prev) keeps its in-loop gradient sum."""
    gelu = Cell("z = w_x*x + w_h*h_prev; h = gelu(z)", states="h", sizes=SIZES,
                params={"w_x": ("H", "D"), "w_h": ("H", "H"), "w_o": ("C", "H")}, head="w_o*h")
    assert CellFunction(gelu, "numpy").fallbacks == ["the 'erf' operation"] * 2
    assert CellFunction(gelu, "torch").fallbacks == []
    assert CellFunction(mgu_cell(), "numpy").fallbacks == ["the step term of dL/dW_hn"]
    assert max(r[2] for r in against_autograd(gelu, steps=(3,), trials=1, backend="numpy")) < 1e-12


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_kernel_writes_into_its_output(backend):
    """Each ``_k_*`` kernel returns the array it was given as ``out`` (none makes a new one)."""
    k = buffered.kernels(backend)
    if backend == "torch":
        import torch

        a = torch.linspace(0.2, 0.8, 6, dtype=torch.float64).reshape(2, 3)
        out, sq = torch.empty_like(a), torch.eye(3, dtype=torch.float64)
    else:
        a = np.linspace(0.2, 0.8, 6).reshape(2, 3)
        out, sq = np.empty_like(a), np.eye(3)
    calls = {"_k_mul": (a, a), "_k_add": (a, 1.0), "_k_sub": (a, a), "_k_rsub": (a, 1.0), "_k_div": (a, a),
             "_k_rdiv": (a, 2.0), "_k_neg": (a,), "_k_square": (a,), "_k_pow": (a, 3.0), "_k_mm": (a, sq),
             "_k_maximum": (a, 0.5), "_k_minimum": (a, a), "_k_heaviside": (a - 0.5, 0.0)}
    expect = {"_k_rsub": 1.0 - np.asarray(a), "_k_rdiv": 2.0 / np.asarray(a), "_k_maximum": np.maximum(np.asarray(a), 0.5)}
    for name, args in calls.items():
        assert k[name](*args, out=out) is out, name
        if name in expect:
            assert np.array_equal(np.asarray(out), expect[name]), name


def _torch_allocating_ops(f, cell, T):
    """(number of torch operations that allocated memory, bytes) in one call of the compiled loop at T steps."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    params, X, y = random_case(cell, np.random.default_rng(0), T, 16)
    args = f.prepare(params, X, y)
    f.fn(*args)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        f.fn(*args)
    events = [e for e in prof.events() if e.cpu_memory_usage > 0]
    del torch
    return len(events), sum(e.cpu_memory_usage for e in events)


@pytest.mark.parametrize("name", sorted(CELLS))
def test_torch_loops_allocate_as_often_at_any_length(name):
    """torch's profiler counts the operations that allocate: the same number at T = 4 and T = 12 (the stacks
    before the loop grow with T; nothing inside the loop allocates).  The loops as printed before made about 30
    allocations a step (LSTM)."""
    cell = CELLS[name](sizes={"D": 3, "H": 4, "C": 1})
    f = CellFunction(cell, "torch")
    (short, short_bytes), (long, long_bytes) = _torch_allocating_ops(f, cell, 4), _torch_allocating_ops(f, cell, 12)
    assert long == short and long_bytes > short_bytes


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_second_call_reuses_the_stacks_and_leaves_the_first_results_alone(backend):
    """The stacks of a call are kept for the next (cell_loop.Workspace): a second call with other values and
    the same shapes, and a third with another batch size, give what a fresh function gives, and the results
    of the first call do not change."""
    cell = lstm_cell(sizes=SIZES)
    f = CellFunction(cell, backend)
    rng = np.random.default_rng(3)
    cases = [random_case(cell, rng, 6, 5), random_case(cell, rng, 6, 5), random_case(cell, rng, 4, 7)]
    first = {k: np.array(np.asarray(v), copy=True) for k, v in f(*cases[0]).items()}
    kept = f(*cases[0])
    for case in cases[1:]:
        again = f(*case)
        fresh = CellFunction(cell, backend)(*case)
        for k in fresh:
            assert np.array_equal(np.asarray(again[k]), np.asarray(fresh[k])), k
    for k in first:
        assert np.array_equal(np.asarray(kept[k]), first[k]), k
