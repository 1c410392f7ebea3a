r"""The unrolled recurrent network of the course text, as a derivation program.

Scalar cell (sizes omitted), text lines 65-176::

    z_t = w_x x_t + w_h h_{t-1} (+ b_h),   h_t = phi(z_t),   h_{-1} = 0,
    yhat = w_o h_{T-1} (+ b_o),            L = 1/2 (yhat - y)^2.

Vector cell (``inputs=D, hidden=H, outputs=C``), row vectors, weights stored
out x in (text lines 264-308)::

    z_t = x_t W_x^T + h_{t-1} W_h^T (+ b_h),   h_t = phi(z_t),
    yhat = h_{T-1} W_o^T (+ b_o),              L = 1/2 ||yhat - y||^2.

With ``loss="every"`` each position has a head and a target (lines 310-324),
``L = sum_t l_t`` or, with ``reduction="mean"``, ``(1/T) sum_t l_t`` (each
direct error becomes ``e_t / T``).

The cell is :func:`derive.builtin_cells.rnn_cell` on the engine of
:mod:`derive.cell` (general t: ``rnn_cell().general()``).  Everything is a
:class:`derive.program.Program` over the text's names
(``z_t``, ``h_t``, ``e``, ``g_t^h``, ``g_t^z``): the backward pass is the
text's recursion, the gradients of the shared weights are the text's sums
over uses, and closed forms are built only on request.

>>> from seqgrad.derive import rnn
>>> net = rnn.unroll(steps=3, activation="phi")
>>> net.grad("w_h")
g_0^z*h_{-1} + g_1^z*h_0 + g_2^z*h_1
>>> net.grad("w_o")
e*h_2
>>> net.grad("x_0")
g_0^z*w_x
>>> net.sensitivity("z", 0, expand=True)
e*w_h**2*w_o*phi'(z_0)*phi'(z_1)*phi'(z_2)
>>> net.transition(1)
w_h*phi'(z_1)
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from seqgrad import runcache, validate
from seqgrad.errors import SeqgradTypeError, SeqgradValueError

from . import activations
from .cell_unrolled import UnrolledCell
from .rules import Diag  # noqa: F401  (diag(v) of the text, one class for every module)
from .latex_settings import NotationPrinter
from .elementwise import Elementwise
from .program import Definition, _latex

__all__ = ["unroll", "RNN", "BackwardTable", "LOSSES", "REDUCTIONS"]

LOSSES = ("final", "every")
REDUCTIONS = ("sum", "mean")


def _size(argument: str, value) -> int | None:
    if value is None:
        return None
    return validate.integer(argument, value, minimum=1)


@runcache.memo  # the notes and the checks of one run ask for the same nets: each is derived once per run
def unroll(steps: int, activation: str = "tanh", inputs: int | None = None, hidden: int | None = None,
           outputs: int | None = None, bias: bool = False, loss: str = "final", reduction: str = "sum") -> "RNN":
    """Build the unrolled RNN of ``steps`` positions and derive its backward pass.

    ``activation`` is a one-argument operation of the registry (``identity, tanh, sigmoid, relu,
    softplus, gelu, ...``: :func:`derive.activations.names`, the names ``Cell`` accepts) or ``phi``
    (generic, phi' stays a symbol).  Leave ``inputs``, ``hidden`` and
    ``outputs`` out for the scalar cell; give any of them for the vector cell
    (the others default to 1).  ``loss`` is ``final`` (one target, read from
    the last state) or ``every`` (a target per position), ``reduction`` is
    ``sum`` or ``mean`` over positions.
    """
    steps = validate.integer("steps", steps, minimum=1)
    act = activations.get(activation)
    sizes = [_size("inputs", inputs), _size("hidden", hidden), _size("outputs", outputs)]
    if not isinstance(bias, bool):
        raise SeqgradTypeError("bias", bias, "True or False")
    loss = validate.choice("loss", loss, LOSSES)
    reduction = validate.choice("reduction", reduction, REDUCTIONS)
    shape = None if all(s is None for s in sizes) else tuple(1 if s is None else s for s in sizes)
    return RNN(steps, act, shape, bias, loss, reduction)


@dataclass
class BackwardTable:
    """The text's Table 3: forward operations read downward, their backward operations upward."""

    rows: list[tuple[Definition | None, Definition | None]]

    def __str__(self) -> str:
        left = [str(f) if f else "" for f, _ in self.rows]
        width = max(len(s) for s in left + ["forward pass"])
        lines = [f"{'forward pass':<{width}} | backward pass", f"{'-' * width}-+-{'-' * 13}"]
        lines += [f"{lhs:<{width}} | {str(b) if b else ''}" for lhs, (_, b) in zip(left, self.rows)]
        return "\n".join(lines)

    __repr__ = __str__

    def latex(self, notation=None) -> str:
        """A two-column ``tabular`` (forward pass | backward pass), each cell printed by the notation's printer."""
        printer = NotationPrinter(notation)

        def cell(d):
            return f"${printer.doprint(d.target)} = {printer.doprint(d.value)}$" if d else ""

        body = "\n".join(f"{cell(f)} & {cell(b)} \\\\" for f, b in self.rows)
        return ("\\begin{tabular}{ll}\n\\hline\nForward pass & Backward pass \\\\\n\\hline\n"
                + body + "\n\\hline\n\\end{tabular}")

    def _repr_markdown_(self) -> str:
        def cell(d):
            return f"${_latex(d.target)} = {_latex(d.value)}$" if d else ""

        return "| Forward pass | Backward pass |\n|---|---|\n" + "\n".join(f"| {cell(f)} | {cell(b)} |" for f, b in self.rows)


class RNN(UnrolledCell):
    """An unrolled RNN and its derivation (build it with :func:`unroll`): the cell
    :func:`derive.builtin_cells.rnn_cell` unrolled by the engine; the program is built when first read."""

    def __init__(self, steps: int, activation: activations.Activation, shape: tuple[int, int, int] | None,
                 bias: bool, loss: str, reduction: str):
        from .builtin_cells import rnn_cell

        sizes = None if shape is None else dict(zip("DHC", shape))
        super().__init__(rnn_cell(activation.name, sizes, bias, "squared", loss, reduction), steps)
        self.activation, self.shape = activation, shape
        self.bias, self.loss, self.reduction = bias, loss, reduction

    @property
    def z(self) -> list:
        return self.sequence("z")

    @property
    def h(self) -> list:
        return self.states["h"]

    @property
    def h_init(self):
        return self.program["h_{-1}"].target

    # -- reading the derivation ---------------------------------------------
    def __repr__(self) -> str:
        cell = "scalar" if not self.vector else "D={}, H={}, C={}".format(*self.shape)
        return f"<RNN T={self.steps} {self.activation.name} ({cell}), loss={self.loss}/{self.reduction}, bias={self.bias}>"

    def sensitivity(self, of: str, t: int, expand: bool | str = False, max_terms: int | None = None):
        """``g_t^h`` (``of="h"``) or ``g_t^z`` (``of="z"``): the symbol, or its closed form with ``expand``."""
        of = validate.choice("of", of, ("h", "z"))
        return super().sensitivity(of, t, expand, max_terms)

    def backward_table(self) -> BackwardTable:
        """Forward definitions top-down beside backward definitions bottom-up (the text's Table 3)."""
        forward = self.program.definitions(("forward", "loss"))
        backward = list(reversed(self.program.definitions(("error", "backward"))))
        n = max(len(forward), len(backward))
        pad = lambda xs: xs + [None] * (n - len(xs))  # noqa: E731
        return BackwardTable(list(zip(pad(forward), pad(backward))))

    # -- long paths -----------------------------------------------------------
    def _prime(self, t: int):
        d = self.program[self.h[t]]
        if self.vector:
            rule = (d.partials or {}).get(self.z[t])
            return rule if rule is not None else sp.OneMatrix(1, self.shape[1])
        return d.partials[self.z[t]]

    def transition(self, t: int):
        """dh_t/dh_{t-1}: ``phi'(z_t) w_h`` (scalar) or the Jacobian ``J_t = diag(phi'(z_t)) W_h`` (vector)."""
        t = validate.integer("t", t, minimum=0, maximum=self.steps - 1)
        if self.vector:
            return sp.MatMul(Diag(self._prime(t)), self.parameters["W_h"])
        return self.parameters["w_h"] * self._prime(t)

    jacobian = transition

    def path_product(self, q: int, s: int):
        """dh_q/dh_s for s < q: ``prod_{t=s+1}^{q} w_h phi'(z_t)``, or the ordered product ``J_q ... J_{s+1}``."""
        q = validate.integer("q", q, minimum=0, maximum=self.steps - 1)
        s = validate.integer("s", s, minimum=-1, maximum=q)
        factors = [self.transition(t) for t in range(q, s, -1)]
        if not factors:
            return sp.Identity(self.shape[1]) if self.vector else sp.Integer(1)
        return sp.MatMul(*(f for J in factors for f in J.args)) if self.vector else sp.Mul(*factors)

    def path_bound(self, q: int, s: int, r=sp.Symbol("r", positive=True), kind: str = "vanishing"):
        """The text's bound on the long path (scalar cell, no intermediate losses):
        ``|g_s^h| <= |g_q^h| r^(q-s)`` when every ``|w_h phi'(z_t)| <= r`` (vanishing),
        ``|g_s^h| >= |g_q^h| r^(q-s)`` when every factor is ``>= r`` (exploding)."""
        if self.vector:
            raise SeqgradValueError("path_bound", "vector cell", "the scalar cell (use path_product for J_q ... J_{s+1})")
        kind = validate.choice("kind", kind, ("vanishing", "exploding"))
        q = validate.integer("q", q, minimum=0, maximum=self.steps - 1)
        s = validate.integer("s", s, minimum=-1, maximum=q)
        lhs = sp.Abs(self.sensitivity("h", s))
        rhs = sp.Abs(self.sensitivity("h", q)) * r ** (q - s)
        return sp.Le(lhs, rhs, evaluate=False) if kind == "vanishing" else sp.Ge(lhs, rhs, evaluate=False)
