"""Checks of the cell engine (group ``recurrent``): users' own cells and the course's cells, derived at a
general step t, compiled as loops over t and compared with torch autograd through the same equations;
the general-t formulas against the text's boxed formulas and against the unrolled program."""

from __future__ import annotations

import sympy as sp

from seqgrad.derive.builtin_cells import gru_cell, lstm_cell, rnn_cell
from seqgrad.derive.cell import Cell
from seqgrad.derive.sequence import T, adjoint, stepped, t

from ..registry import Context, check
from ..tolerance import Outcome, combine

GROUP = "recurrent"
SRC = "week06"
SIZES = {"D": 3, "H": 4, "C": 2}

#: the tutorial's own cells (docs/tutorial-cells.md): a leaky-ReLU Elman cell, an IndRNN, a residual update,
#: a user activation and a two-state cell
USER_CELLS = {
    "leaky_relu_elman": dict(equations="z = w_x*x + w_h*h_prev + b_h; h = leaky_relu(z)",
                             params={"w_x": ("H", "D"), "w_h": ("H", "H"), "b_h": ("H",), "w_o": ("C", "H")}),
    "indrnn": dict(equations="z = w_x*x + u*h_prev + b_h; h = relu(z)",
                   params={"w_x": ("H", "D"), "u": ("H",), "b_h": ("H",), "w_o": ("C", "H")}),
    "residual": dict(equations="a = w_x*x + w_h*h_prev; h = h_prev + tanh(a)",
                     params={"w_x": ("H", "D"), "w_h": ("H", "H"), "w_o": ("C", "H")}),
    "softplus": dict(equations="z = w_x*x + w_h*h_prev; h = softplus(z)",
                     params={"w_x": ("H", "D"), "w_h": ("H", "H"), "w_o": ("C", "H")}),
    "two_state": dict(equations="z = w_x*x + w_h*h_prev; c = 0.5*c_prev + sigmoid(z); h = tanh(c)",
                      states="h c", params={"w_x": ("H", "D"), "w_h": ("H", "H"), "w_o": ("C", "H")}),
}


def user_cell(name: str, **kw) -> Cell:
    spec = {"states": "h", "head": "w_o*h", **USER_CELLS[name], **kw}
    return Cell(**spec, sizes=SIZES, name=name)


def _autograd(cell: Cell, ctx: Context, steps=(1, 6)) -> Outcome:
    from ..cells import against_autograd

    rows = against_autograd(cell, steps=steps, trials=1, seed=ctx.seed, device=ctx.device)
    worst = max(rows, key=lambda r: r[2])
    passed = all(err < 1e-10 or rel < 1e-10 for _, _, err, rel in rows)
    return Outcome(worst[2], max(r[3] for r in rows), passed,
                   f"{cell.name}: {len(rows)} arrays (T = {', '.join(map(str, steps))}), worst {worst[1]} at T = {worst[0]}")


@check("cells.user_cells.autograd", needs_torch=True, source=f"{SRC} §RNN:264-324 (any cell: BPTT is the chain rule over the step)",
       group=GROUP)
def user_cells_autograd(ctx: Context) -> Outcome:
    """Five users' cells (leaky-ReLU Elman, IndRNN, residual, softplus, two states), derived at general t and
    compiled as loops, against torch autograd through their own forward equations (float64)."""
    return combine([_autograd(user_cell(n), ctx) for n in USER_CELLS])


@check("cells.builtin.autograd", needs_torch=True, source=f"{SRC} §GRU:362-383, {SRC} §LSTM:384-410 (the GRU and the LSTM, each defined by its equations)", group=GROUP)
def builtin_cells_autograd(ctx: Context) -> Outcome:
    """The course's RNN, GRU and LSTM as definitions on the engine, every gradient against autograd."""
    return combine([_autograd(make(sizes=SIZES), ctx) for make in (rnn_cell, gru_cell, lstm_cell)])


@check("cells.general.boxed_formulas", source=f"{SRC} §BPTT:154-176, 290-322 (the boxed gradients, general t)",
       group=GROUP)
def general_boxed(ctx: Context) -> Outcome:
    """The RNN's general-t gradients equal the text's boxed formulas at T = 3, and its vector recursion is the
    text's L290/L318 (g_t^z = g_t^h o phi'(z_t), g_t^h = e_t W_o + g_{t+1}^z W_h, sum_t e_t^T h_t)."""
    s, M, v = sp.Symbol, sp.MatrixSymbol, stepped  # the text's step values: nodes (derive.sequence)
    gen = rnn_cell("phi").general()
    ok = [sp.expand(gen.grad("w_x").at(3) - sum(adjoint(v("z", k)) * v("x", k) for k in range(3))) == 0,
          sp.expand(gen.grad("w_h").at(3) - sum(adjoint(v("z", k)) * v("h", k - 1) for k in range(3))) == 0,
          gen.grad("w_o") == s("e") * v("h", T - 1), gen.grad("x") == adjoint(v("z", t)) * s("w_x")]
    every = rnn_cell(sizes=SIZES, on="every").general()
    g_h = next(r for r in every.backward_rows() if r.lhs == adjoint(v("h", t, (1, 4))))
    ok.append(g_h.rhs == v("e", t, (1, 2)) * M("W_o", 2, 4) + adjoint(v("z", t + 1, (1, 4))) * M("W_h", 4, 4))
    ok.append(every.grad("w_o").term == v("e", t, (1, 2)).T * v("h", t, (1, 4)))
    return Outcome.exact(all(ok), f"{sum(ok)} of {len(ok)} formulas equal the text's")


@check("cells.general.unrolled", source=f"{SRC} §BPTT:108-176 (Table 3 and the sums over uses, any T)", group=GROUP)
def general_unrolled(ctx: Context) -> Outcome:
    """The general-t formulas instantiated at T = 1..4 equal the unrolled program's backward pass (RNN, GRU,
    LSTM and the two-state cell, scalar), sensitivity by sensitivity and gradient by gradient."""
    cells = [rnn_cell("phi"), gru_cell(), lstm_cell(),
             Cell(USER_CELLS["two_state"]["equations"], states="h c", params="w_x w_h w_o", head="w_o*h", on="every")]
    diff = [f"{c.name} T={T}: {d}" for c in cells for T in (1, 2, 4) for d in c.unroll(T).check_general()]
    return Outcome.exact(not diff, "all equal" if not diff else "differ: " + ", ".join(diff[:5]))
