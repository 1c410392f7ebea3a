"""Path products of any cell: its derived transition Jacobians ``J_t`` evaluated along a trajectory.

``J_t = d s_t / d s_{t-1}`` comes from the cell's general-t derivation
(:meth:`derive.cell.GeneralDerivation.transition`), compiled with the loop
compiler's printer; along one input sequence this module gives every ``J_t``,
the long-path products ``J_q ... J_{s+1}`` and their spectral norms beside the
norm product ``prod ||J_t||_2`` and a Pascanu-style bound ``r^(q-s)`` with
``r = max_t ||J_t||_2`` (the text's lines 326-340, for a user's cell as for the
RNN), and draws them as the path figure.

>>> import numpy as np
>>> from seqgrad.derive.builtin_cells import rnn_cell
>>> cell = rnn_cell()
>>> J = transition_jacobians(cell, {"w_x": 1.0, "w_h": 1.2, "w_o": 1.0}, np.zeros(5))
>>> [round(float(j), 3) for j in J]     # input 0: every factor is w_h * (1 - 0**2)
[1.2, 1.2, 1.2, 1.2, 1.2]
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import sympy as sp

from seqgrad.derive.cell import Cell
from seqgrad.numeric.paths import PathNorms, spectral_norm
from seqgrad.errors import SeqgradValueError

from .cell_source import Source
from .loop_ir import Emitter
from .cells import CellFunction
from .code_printer import identifier
from .lambdify import _numpy_namespace, run_generated

__all__ = ["transition_jacobians", "path_norms", "plot_path_norms"]


def _compile(cell: Cell, of: str, wrt: str):
    gen = cell.general()
    J = gen.transition(of=of, wrt=wrt)
    taken: set[str] = set()
    names = {}
    params = [gen.params[p] for p in cell.param_shapes]
    for sym in params + [gen.x] + list(gen.prev.values()) + [d.target for d in gen.step.definitions("forward")]:
        names[sym] = identifier(sym.name, taken)
    emitter = Emitter("numpy", names)
    printer = emitter.code
    emitter.printer._print_Diag = lambda expr: f"_diag({printer(expr.args[0])})"
    emitter.printer._print_Identity = lambda expr: f"_eye({expr.shape[0]})"
    src = Source()
    src(f"def _jacobians({', '.join(names[p] for p in params)}, X):", 0)
    for s, prev in gen.prev.items():
        src(f"{names[prev]} = _zeros({cell.shape_of(s)[1] if cell.vector else 'None'})")
    src("out = []")
    src("for t in range(X.shape[1]):")
    src(f"{names[gen.x]} = X[:, t]", 2)
    for d in gen.step.definitions("forward"):
        src(f"{names[d.target]} = {printer(d.value)}", 2)
    src(f"out.append({printer(J)})", 2)
    for s, prev in gen.prev.items():
        src(f"{names[prev]} = {names[gen.at_t[s]]}", 2)
    src("return out")
    namespace = _numpy_namespace()
    namespace.update(emitter.used)  # the registry's operations the code calls
    namespace.update({"_diag": lambda v: np.diag(np.ravel(v)), "_eye": np.eye,
                      "_zeros": lambda H: np.zeros((1, H)) if H is not None else np.zeros(1)})
    return run_generated(src.text(), f"<seqgrad:{cell.name}_jacobians>", namespace, "_jacobians"), params


def transition_jacobians(cell: Cell, params: Mapping, x, of: str | None = None, wrt: str | None = None) -> np.ndarray:
    """``J_t`` for t = 0..T-1 along one input sequence ``x`` ((T,) scalar cell, (T, D) vector cell):
    shape (T,) for a scalar cell, (T, H, H) for a vector cell."""
    f = CellFunction.__new__(CellFunction)  # only its argument checks: the parameters and X
    f.cell, f.backend, f.names = cell, "numpy", cell.parameter_names
    x = np.asarray(x, dtype=np.float64)
    X = x[None]
    C = cell.sizes[cell.output_size] if cell.vector else None
    y = np.zeros((1, C)) if cell.vector else np.zeros(1)
    if cell.loss.on != "final":
        P = len(cell.loss.positions(X.shape[1]))
        y = np.zeros((1, P, C)) if cell.vector else np.zeros((1, P))
    if cell.loss.kind == "cross_entropy":
        y = np.zeros(y.shape[:-1], dtype=np.int64)
    args = f.prepare(params, X, y)[: len(f.names)]
    fn, _ = _compile(cell, of or cell.states[0], wrt or of or cell.states[0])
    J = fn(*args, X)
    return np.array([np.squeeze(np.asarray(j, dtype=np.float64)) for j in J]) if not cell.vector else np.stack(J)


def path_norms(cell: Cell, params: Mapping, x, of: str | None = None) -> PathNorms:
    """``||J_q ... J_{s+1}||_2`` (q = T-1) by distance, beside ``prod ||J_t||_2`` and ``r^(q-s)``,
    ``r = max_t ||J_t||_2``."""
    J = transition_jacobians(cell, params, x, of, of)
    T = J.shape[0]
    if T < 2:
        raise SeqgradValueError("x", f"T={T}", "at least 2 steps, so that there is a transition")
    mats = J if J.ndim == 3 else J[:, None, None]
    norms = spectral_norm(mats)
    P = np.eye(mats.shape[1])
    measured, products, running = [], [], 1.0
    for s in range(T - 2, -1, -1):
        P = P @ mats[s + 1]
        running *= norms[s + 1]
        measured.append(spectral_norm(P))
        products.append(running)
    d = np.arange(1, T)
    return PathNorms(d, np.array(measured), np.array(products), float(np.max(norms[1:])) ** d)


def plot_path_norms(ax, cell: Cell, params: Mapping, x, of: str | None = None) -> list:
    """The path figure for any cell: measured path-product norms, the norm product and ``r^(q-s)``."""
    norms = path_norms(cell, params, x, of)
    d = norms.distance
    lines = [ax.plot(d, norms.measured, marker=".", label=r"measured $\|J_q\cdots J_{s+1}\|_2$")[0],
             ax.plot(d, norms.norm_product, ls="--", label=r"$\prod_t \|J_t\|_2$")[0],
             ax.plot(d, norms.pascanu, ls=":", label=r"$r^{q-s}$, $r = \max_t \|J_t\|_2$")[0]]
    ax.set_yscale("log")
    ax.set_xlabel("distance q - s")
    ax.set_ylabel("spectral norm")
    ax.set_title(f"cell {cell.name!r}: " + r"$J_t = \partial " + sp.latex(cell.general().at_t[of or cell.states[0]])
                 + r"/\partial " + sp.latex(cell.general().prev[of or cell.states[0]]) + "$")
    ax.legend(loc="upper right", fontsize="small")
    return lines
