"""The pieces of a compiled cell loop's Python source that both loop layouts share (the plain loop of
:mod:`crosscheck.loop_ir` and the gate layout of :mod:`crosscheck.cell_loop`): the source buffer, the
identifiers of the step's symbols, and the lines that add a loss term and start an adjoint from what the next
step sent (printed for the IR's :class:`~crosscheck.loop_ir.Loss` and :class:`~crosscheck.loop_ir.Rho`).
"""

from __future__ import annotations

import sympy as sp

from seqgrad.derive.cell import Cell
from seqgrad.derive.sequence import t

from .code_printer import identifier

__all__ = ["Source", "shape_of", "step_names", "emit_loss", "emit_rho", "param_key"]


class Source:
    def __init__(self):
        self.lines: list[str] = []

    def __call__(self, text: str, depth: int = 1):
        self.lines.append("    " * depth + text)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def shape_of(sym):
    return tuple(int(n) for n in sym.shape) if isinstance(sym, sp.MatrixSymbol) else ()


def step_names(cell: Cell, gen):
    """Identifiers for the step's symbols (parameters, x_t, the previous states, the forward and backward
    definitions, rho, the head's yhat_t, e_t, y_t): the naming both loop layouts share.  Returns (names, name, y_t)."""
    taken: set[str] = set()
    names: dict = {}

    def name(sym, text=None):
        if sym not in names:
            names[sym] = identifier(text or (sym.name if hasattr(sym, "name") else str(sym)), taken)
        return names[sym]

    for p in cell.param_shapes:
        name(gen.params[p])
    name(gen.x, "x_t")
    for s, prev in gen.prev.items():
        name(prev, f"{s}_prev")
    for d in gen.step.definitions("forward"):
        name(d.target)
    name(gen.yhat, "yhat_t")
    name(gen.e, "e_t")
    y_t = gen.sym.seq("y", t, cell.target_shape())  # the target at step t
    name(y_t, "y_t")
    for d in gen.backward_defs:
        name(d.target)
    for s, r in gen.rho.items():
        name(r, f"rho_{s}")
    return names, name, y_t


def emit_loss(src: "Source", printer, names: dict, gen, cell: Cell, y_t) -> None:
    """At a loss position of the forward loop: yhat_t, the loss term added to L, e_t = dL/dyhat_t in e_all[t]."""
    from seqgrad.derive.cell import B as batch_size, T as length

    scale = gen.scale
    scale_text = printer(scale.xreplace({length: sp.Symbol("_T"), batch_size: sp.Symbol("_B")})) if scale != 1 else None
    src("if _index[t] >= 0:", 2)
    src(f"{names[gen.yhat]} = {printer(gen.head.definitions('forward')[0].value)}", 3)
    src(f"{names[y_t]} = Y if _npos == 1 and Y.ndim == X.ndim - 1 else Y[_index[t]]", 3)
    if cell.loss.kind == "squared":
        src(f"_d = {names[gen.yhat]} - {names[y_t]}", 3)
        src("L = L + 0.5 * _sumsq(_d)" if scale_text is None else f"L = L + ({scale_text}) * 0.5 * _sumsq(_d)", 3)
    else:
        src(f"_lse = _logsumexp({names[gen.yhat]})", 3)
        src(f"_ce = _sum(_lse) - _sum({names[y_t]} * {names[gen.yhat]})", 3)
        src("L = L + _ce" if scale_text is None else f"L = L + ({scale_text}) * _ce", 3)
        src(f"_d = _softmax({names[gen.yhat]}) - {names[y_t]}", 3)
    src("e_all[t] = _d" if scale_text is None else f"e_all[t] = ({scale_text}) * _d", 3)


def emit_rho(src: "Source", printer, names: dict, gen, cell: Cell, carry: dict, zero: dict | None = None) -> None:
    """rho_s = what step t+1 sent to s_t (``carry[s]``; ``zero[s]`` while that is None) + the loss's direct term."""
    for s in cell.states:
        r = names[gen.rho[s]]
        src(f"{r} = {carry[s]}" if zero is None else f"{r} = {carry[s]} if {carry[s]} is not None else {zero[s]}", 2)
        if gen.direct[s] is not None:
            src(f"if {names[gen.e]} is not None:", 2)
            src(f"{r} = {r} + {printer(gen.direct[s])}", 3)


def param_key(gen, sym):
    return next(k for k, v in gen.params.items() if v == sym)
