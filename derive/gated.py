r"""GRU and LSTM cells as derivation programs, in PyTorch's conventions (text lines 362-400).

GRU (``torch.nn.GRU``: gate order r, z, n; the text's update gate ``u_t`` is
PyTorch's ``z_t``; the reset gate multiplies the whole recurrent affine map,
``b_hn`` included)::

    z_t^r = x_t W_xr^T + b_xr + h_{t-1} W_hr^T + b_hr,      r_t = sigma(z_t^r)
    z_t^u = x_t W_xu^T + b_xu + h_{t-1} W_hu^T + b_hu,      u_t = sigma(z_t^u)
    a_t   = h_{t-1} W_hn^T + b_hn
    z_t^n = x_t W_xn^T + b_xn + r_t o a_t,                  htilde_t = tanh(z_t^n)
    h_t   = u_t o h_{t-1} + (1 - u_t) o htilde_t

LSTM (``torch.nn.LSTM``: gate order i, f, g, o; each bias ``b_a`` is PyTorch's
``b_ih + b_hh``; no peepholes, no projection)::

    z_t^a = x_t W_xa^T + h_{t-1} W_ha^T + b_a,  a in {i, f, o}:  a_t = sigma(z_t^a)
    z_t^c = x_t W_xc^T + h_{t-1} W_hc^T + b_c,                  ctilde_t = tanh(z_t^c)
    c_t   = f_t o c_{t-1} + i_t o ctilde_t,                     h_t = o_t o tanh(c_t)

A head ``yhat = h_{T-1} W_o^T`` (no bias: the LSTM's output gate already owns
``b_o``, and the text warns not to conflate the two) and ``L = 1/2 ||yhat - y||^2``.
The cells are definitions on the engine of :mod:`derive.cell`
(:mod:`derive.builtin_cells`; general t: ``lstm_cell().general()``).
Everything is a :class:`derive.program.Program` over these names, so T steps
cost O(T), the backward pass is the chain rule over the named intermediates
(``g_t^h``, ``g_t^c``, ``g_t^{z^a}``), and every weight gradient is a sum over
its uses.

Carry derivatives (:meth:`GatedRNN.carry`): at fixed gates and candidate,
``dh_t/dh_{t-1} = diag(u_t)`` (GRU) and ``dc_t/dc_{t-1} = diag(f_t)`` (LSTM).
:meth:`GatedRNN.step_jacobian` gives the full one-step Jacobian, the carry and
the gate terms separately, with ``full = carry + gate_terms``, all derived by
forward-mode chain rule over the step's definitions.

>>> from seqgrad.derive import gated
>>> net = gated.gru(steps=2)
>>> net.carry(1)
u_1
>>> split = net.step_jacobian(1)
>>> split.gate_terms
u_1*w_hu*(1 - u_1)*(h_0 - htilde_1) + (1 - htilde_1**2)*(1 - u_1)*(a_1*r_1*w_hr*(1 - r_1) + r_1*w_hn)
>>> gated.lstm(steps=2).carry(1)
f_1
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import sympy as sp
from sympy.matrices.expressions.matexpr import MatrixExpr

from seqgrad import runcache, validate

from . import rules
from .cell import definition_tangent, direction, propagate, scalar_tangent
from .cell_unrolled import UnrolledCell
from .latex_settings import notebook_notation
from .program import latex_aligned

__all__ = ["gru", "lstm", "GatedRNN", "CarrySplit", "KINDS", "GATES"]

KINDS = ("GRU", "LSTM")
#: the gates of each cell in PyTorch's order, by the text's names (GRU: u is PyTorch's z; LSTM: c is PyTorch's g)
GATES = {"GRU": ("r", "u", "n"), "LSTM": ("i", "f", "c", "o")}


@runcache.memo  # derived once per run of seqgrad check / latex, however many sections and checks ask
def gru(steps: int, inputs: int | None = None, hidden: int | None = None, outputs: int | None = None) -> "GatedRNN":
    """An unrolled GRU of ``steps`` positions (scalar without sizes, vector with any of them)."""
    return GatedRNN("GRU", steps, inputs, hidden, outputs)


@runcache.memo
def lstm(steps: int, inputs: int | None = None, hidden: int | None = None, outputs: int | None = None) -> "GatedRNN":
    """An unrolled LSTM of ``steps`` positions (scalar without sizes, vector with any of them)."""
    return GatedRNN("LSTM", steps, inputs, hidden, outputs)


@dataclass(frozen=True)
class CarrySplit:
    """A one-step Jacobian split as ``full = carry + gate_terms``."""

    full: sp.Basic
    carry: sp.Basic
    gate_terms: sp.Basic

    def latex(self, notation=None) -> str:
        J = sp.Symbol(r"\mathbf{J}") if isinstance(self.full, MatrixExpr) else sp.Symbol("J")
        rows = [(J, self.full), (sp.Symbol(r"\text{carry (fixed gates)}"), self.carry),
                (sp.Symbol(r"\text{gate terms}"), self.gate_terms)]
        return latex_aligned(rows, notation=notation)

    def _repr_latex_(self) -> str:
        return self.latex(notebook_notation())  # already a complete display (align*), which Jupyter renders as it is


class GatedRNN(UnrolledCell):
    """An unrolled GRU or LSTM and its derivation (build it with :func:`gru` or :func:`lstm`): the cell
    :func:`derive.builtin_cells.gru_cell` / :func:`~derive.builtin_cells.lstm_cell` unrolled by the engine."""

    def __init__(self, kind: str, steps: int, inputs=None, hidden=None, outputs=None):
        from .builtin_cells import gru_cell, lstm_cell

        self.kind = validate.choice("kind", kind, KINDS)
        steps = validate.integer("steps", steps, minimum=1)
        sizes = [None if v is None else validate.integer(n, v, minimum=1) for n, v in
                 (("inputs", inputs), ("hidden", hidden), ("outputs", outputs))]
        vector = any(s is not None for s in sizes)
        D, H, C = (1 if s is None else s for s in sizes)
        self.shape = (D, H, C) if vector else None
        self.H = H
        make = gru_cell if self.kind == "GRU" else lstm_cell
        super().__init__(make(sizes=dict(D=D, H=H, C=C) if vector else None), steps)

    @property
    def h(self) -> list:
        return self.states["h"]

    @property
    def c(self) -> list:
        return self.states.get("c", [])

    @property
    def h_init(self):
        return self.program["h_{-1}"].target

    @property
    def c_init(self):
        return self.program["c_{-1}"].target if self.kind == "LSTM" else None

    @property
    def gates(self) -> dict[str, list]:
        """Each gate's symbols at every step, by the text's names (GRU: r, u, n = htilde, a; LSTM: i, f,
        c = ctilde, o)."""
        if self.kind == "GRU":
            names = {"r": "r", "u": "u", "n": "htilde", "htilde": "htilde", "a": "a"}
        else:
            names = {"i": "i", "f": "f", "c": "ctilde", "ctilde": "ctilde", "o": "o"}
        return {g: self.sequence(n) for g, n in names.items()}

    # -- reading the derivation ---------------------------------------------
    def __repr__(self) -> str:
        cell = "scalar" if not self.vector else "D={}, H={}, C={}".format(*self.shape)
        return f"<{self.kind} T={self.steps} ({cell})>"

    def _step(self, t: int) -> int:
        return validate.integer("t", t, minimum=0, maximum=self.steps - 1)

    def _carried(self, t: int):
        """(state at t, state at t-1): h for the GRU, the cell memory c for the LSTM."""
        if self.kind == "GRU":
            return self.h[t], (self.h[t - 1] if t > 0 else self.h_init)
        return self.c[t], (self.c[t - 1] if t > 0 else self.c_init)

    def carry(self, t: int):
        """The carry derivative at fixed gates and candidate: ``diag(u_t)`` (GRU), ``diag(f_t)`` (LSTM).

        Derived from the definition of the carried state with every gate and
        candidate held fixed (their tangents set to zero)."""
        t = self._step(t)
        state, prev = self._carried(t)
        start = self._direction(prev)
        return self._jacobian(self._tangent(self.program[state], {prev: start}), start)

    def step_jacobian(self, t: int, wrt: str | None = None) -> CarrySplit:
        """The full one-step Jacobian of the carried state, split as ``carry + gate_terms``.

        GRU: ``dh_t/dh_{t-1}`` (``wrt`` is not used).  LSTM: the rows are
        ``c_t``; ``wrt="c"`` (default) gives ``dc_t/dc_{t-1} = diag(f_t)``,
        which has no gate term (no peepholes: the gates read ``h_{t-1}``, not
        ``c_{t-1}``), and ``wrt="h"`` gives ``dc_t/dh_{t-1}``, which is all
        gate terms (its carry part is zero).
        """
        t = self._step(t)
        state, prev = self._carried(t)
        if self.kind == "LSTM":
            wrt = validate.choice("wrt", wrt if wrt is not None else "c", ("c", "h"))
            if wrt == "h":
                prev = self.h[t - 1] if t > 0 else self.h_init
        before = itertools.takewhile(lambda d: d.target is not state,
                                     (d for d in self.program.definitions("forward") if d.step == t))
        start = self._direction(prev)
        seed = {prev: start}
        tangents = propagate(before, dict(seed), self.vector)
        full = self._jacobian(self._tangent(self.program[state], tangents), start)
        carry = (self._jacobian(self._tangent(self.program[state], seed), start) if (self.kind == "GRU" or wrt == "c")
                 else self._zero_jac())
        gate_only = {k: v for k, v in tangents.items() if k is not prev}
        gate_terms = self._jacobian(self._tangent(self.program[state], gate_only), start)
        return CarrySplit(full, carry, gate_terms)

    def _direction(self, prev):
        return direction(prev) if self.vector else sp.Integer(1)

    def _zero_jac(self):
        return sp.ZeroMatrix(self.H, self.H) if self.vector else sp.Integer(0)

    def _tangent(self, d, tangents: dict):
        """Forward-mode chain rule for one definition (the rule table's, :func:`derive.cell.definition_tangent`):
        the tangent of its value along the seeded state, given the tangents of the symbols it reads (missing
        symbols are held fixed); ``None`` is a structural zero."""
        return definition_tangent(d, tangents) if self.vector else scalar_tangent(d, tangents)

    def _jacobian(self, tangent, start):
        """The Jacobian read off a tangent along ``start`` (:func:`derive.rules.jacobian`); zero when it is ``None``."""
        J = rules.jacobian(tangent, start) if self.vector else tangent
        return self._zero_jac() if J is None else J


def lstm_total_derivative(net, carry):
    """``dc_1/dc_0`` of the unrolled LSTM ``net`` in total: ``carry`` (``f_1``) plus ``dc_1/dh_0 * dh_0/dc_0``."""
    h0_of_c0 = net.program[net.h[0]].value
    # the carry first, as the text names it, then the path through h_0
    return rules.WrittenSum(carry, sp.Mul(net.step_jacobian(1, wrt="h").full, sp.diff(h0_of_c0, net.c[0]),
                                          evaluate=False), evaluate=False)
