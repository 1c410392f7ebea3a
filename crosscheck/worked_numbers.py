r"""The numbers of the notes' numeric worked examples, computed by the project's own derivations (never typed in).

:func:`rnn_example` evaluates the scalar RNN of the notes' first section at ``T = 3`` (:func:`derive.rnn.unroll`)
at stated values (:data:`RNN_VALUES`): every column of its table is a general-t expression of the section
(``h_t``, ``g_t^h``, ``g_t^z`` and the summands of the gradient sums, ``g_t^z h_{t-1}`` and ``g_t^z x_t``, from
``cell.general().gradient``), instantiated at ``t = 0, 1, 2`` and evaluated by one compiled program
(:func:`crosscheck.lambdify.lambdify`); the row of sums is the unrolled program's own gradient.

:func:`encoder_backward` runs the derived backward pass of the pre-norm attention sublayer
``U = H + MHA(LN_att(H))`` (:func:`derive.blocks.block_program`, two heads, compiled by
:func:`crosscheck.blocks.call`) on the course's worked example, ``H = H_0`` and the course's weights, for the loss
``L = sum of the entries of U`` (so ``G = dL/dU`` is a matrix of ones).

Both are checked against torch autograd of plain torch code in ``tests/test_notes_worked_numbers.py``.

>>> ex = rnn_example()
>>> [round(v, 4) for v in ex.column(1)]  # h_0, h_1, h_2
[0.4621, 0.1644, 0.499]
>>> round(ex.gradients["w_h"], 4), round(sum(ex.column(4)), 4)  # dL/dw_h, the sum of its terms
(0.2045, 0.2045)
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Mapping

import sympy as sp

from seqgrad.errors import SeqgradValueError

__all__ = ["RNN_VALUES", "RNNExample", "rnn_example", "EncoderBackward", "encoder_backward", "SOFTMAX_SCORES",
           "softmax_example", "ShiftExample", "shift_example", "residual_example", "GRU_VALUES", "GRUExample", "gru_example",
           "LSTM_VALUES", "LSTMExample", "lstm_example"]

#: The scores of the softmax's worked example (one row of three).
SOFTMAX_SCORES = (1.0, 2.0, 3.0)

#: The stated values of the scalar RNN's worked example (symbol name -> value; ``w_o`` is the head, printed ``w_y``
#: in the notes); the initial state is the cell's own, ``h_{-1} = 0``.
RNN_VALUES = {"w_x": 0.5, "w_h": 0.9, "w_o": 1.2, "x_0": 1.0, "x_1": -0.5, "x_2": 0.8, "y": 0.2}


class StepRows:
    """A worked example's table: ``rows``, one per step, of the values of its ``columns``."""

    rows: tuple

    def column(self, i: int) -> list[float]:
        """The values of column ``i`` at ``t = 0, ..., T - 1``."""
        return [row[i] for row in self.rows]


@dataclass(frozen=True)
class RNNExample(StepRows):
    """The scalar RNN at stated values: ``columns`` are general-t expressions, ``rows[k]`` their values at ``t = k``;
    ``gradients`` the unrolled program's ∂L/∂w (by parameter name), and the forward head ``yhat``, ``e`` and ``L``."""

    net: object
    values: dict
    columns: tuple
    rows: tuple
    gradients: dict
    yhat: float
    e: float
    L: float
    #: the columns that are terms of a gradient sum: column index -> parameter name
    terms: dict


def rnn_example(values: Mapping[str, float] | None = None, steps: int = 3) -> RNNExample:
    """The scalar tanh RNN of the notes unrolled over ``steps`` at ``values`` (default :data:`RNN_VALUES`; every leaf
    of the program by name), its table evaluated from the section's general-t formulas (see the module docstring)."""
    from seqgrad.derive import rnn
    from seqgrad.derive.sequence import adjoint, stepped, t

    from .lambdify import lambdify

    values = dict(RNN_VALUES if values is None else values)
    net = rnn.unroll(steps=steps, activation="tanh")
    general = net.cell.general()
    leaves = {str(s): s for s in net.program.leaves()}
    if set(values) != set(leaves):
        raise SeqgradValueError("values", sorted(values), "a value for every leaf of the program: " + ", ".join(leaves))
    # the initial state as the cell defines it (h_{-1} = 0): the term of step 0 of dL/dw_h reads it
    initial = {general.instantiate(row.lhs, 0, steps): row.rhs for row in general.forward_rows()[:len(net.cell.states)]}
    grads = ("w_h", "w_x")
    columns = (stepped("x", t), stepped("h", t), adjoint(stepped("h", t)), adjoint(stepped("z", t)),
               *(general.gradient(p).term for p in grads))
    at_steps = [general.instantiate(c, k, steps).xreplace(initial) for k in range(steps) for c in columns]
    head = [net.yhat, net.e, net.L]
    params = list(net.parameters)
    compiled = lambdify(net.program, at_steps + head + [net.grad(p) for p in params], list(leaves.values()))
    out = [float(v) for v in compiled(*(float(values[name]) for name in leaves))]
    n = len(columns)
    rows = tuple(tuple(out[k * n:(k + 1) * n]) for k in range(steps))
    yhat, e, L = out[steps * n:steps * n + 3]
    return RNNExample(net, values, columns, rows, dict(zip(params, out[steps * n + 3:])), yhat, e, L,
                      {n - len(grads) + i: p for i, p in enumerate(grads)})


@dataclass(frozen=True)
class EncoderBackward:
    """The backward pass of the course's pre-norm attention sublayer: the block program, its inputs (tensors by
    input name), its output ``U`` and the gradients of ``L = sum of U's entries`` by input name."""

    block: object
    inputs: dict
    U: object
    gradients: dict


def encoder_inputs(device: str = "cpu") -> dict:
    """The inputs of the course's attention sublayer by the block program's names: ``H`` the rows ``H_0`` of the
    worked example, LayerNorm's scale 1 and shift 0, the two heads' maps and the output map ``W_O``."""
    import torch

    from seqgrad.derive.blocks import NORM_TAGS
    from seqgrad.numeric import course

    H0 = course.trace("attention_on_H0", device=device)["H0"]
    as_tensor = lambda m: torch.tensor(m, dtype=H0.dtype, device=H0.device)  # noqa: E731
    d = H0.shape[1]
    ln = NORM_TAGS["attention"]  # the LayerNorm before the attention
    inputs = {"H": H0, "gamma" + ln: as_tensor([[1.0] * d]), "beta" + ln: as_tensor([[0.0] * d]), "W_O": as_tensor(course.W_O)}
    for i, head in enumerate((course.HEAD1, course.HEAD2), start=1):
        inputs.update({f"{name}^[{i}]": as_tensor(head[name]) for name in ("W_Q", "W_K", "W_V")})
    return inputs


def encoder_backward(device: str = "cpu") -> EncoderBackward:
    """The derived backward pass of ``U = H + MHA(LN_att(H))`` at the course's worked example (:func:`encoder_inputs`),
    for ``L`` the sum of ``U``'s entries: the upstream gradient ``G = dL/dU`` is a matrix of ones."""
    import torch

    from . import blocks

    inputs = encoder_inputs(device)
    T, d = inputs["H"].shape
    d_k, d_v = inputs["W_Q^[1]"].shape[0], inputs["W_V^[1]"].shape[0]
    block, _ = blocks.compiled("pre-norm", heads=2)
    G = torch.ones(T, d, dtype=inputs["H"].dtype, device=inputs["H"].device)
    out = blocks.call("pre-norm", inputs, G, {"T": T, "d": d, "d_k": d_k, "d_v": d_v}, heads=2)
    return EncoderBackward(block, inputs, out[0], dict(zip(block.gradients, out[1:])))


def softmax_example(scores=SOFTMAX_SCORES) -> tuple[list[float], list[list[float]]]:
    """The softmax ``a`` of one row of ``scores`` and its Jacobian ``da/dz``, both from the derived three-score
    Jacobian (:class:`derive.softmax.SoftmaxJacobian`: the softmax and its derivative by differentiation), evaluated
    at the scores.

    >>> a, J = softmax_example()
    >>> [round(x, 4) for x in a], abs(sum(J[0])) < 1e-15
    ([0.09, 0.2447, 0.6652], True)
    """
    from seqgrad.derive import softmax

    allowed = "two or more finite scores (real numbers) of magnitude below 1000"
    if isinstance(scores, (str, bytes)) or not hasattr(scores, "__iter__"):
        raise SeqgradValueError("scores", scores, allowed)  # text is never read as numbers
    scores = list(scores)
    if not all(isinstance(x, numbers.Real) and not isinstance(x, bool) for x in scores):
        raise SeqgradValueError("scores", scores, allowed)
    scores = [float(x) for x in scores]
    if len(scores) < 2 or not all(abs(x) < 1e3 for x in scores):  # NaN and inf fail the bound
        raise SeqgradValueError("scores", scores, allowed)
    jac = softmax.SoftmaxJacobian(len(scores))
    at = dict(zip(jac.z, scores))
    a = [float(e.evalf(30, subs=at)) for e in jac.a]
    J = [[float(e.evalf(30, subs=at)) for e in row] for row in jac.direct.tolist()]
    return a, J


#: The positional encodings' worked example: the width, a position and an offset (PE(pos) shifted to PE(pos + k)).
PE_WIDTH, PE_POSITION, PE_SHIFT = 4, 1, 2


@dataclass(frozen=True)
class ShiftExample:
    """The shift of a positional encoding with numbers: ``PE(pos)`` and ``PE(pos + k)`` (rows), the rotation ``R(k)``
    in the notes' row convention (``PE(pos + k) = PE(pos) R(k)``) and the product ``PE(pos) R(k)``, each evaluated
    from the derivation's exact expressions (:class:`derive.positional.Sinusoidal`, its :class:`Rotation`)."""

    d: int
    position: int
    shift: int
    encoding: list  # PE(pos)
    rotation: list  # R(k), d x d, acting on the right of a row
    rotated: list  # PE(pos) R(k)
    shifted: list  # PE(pos + k)


def shift_example(d: int = PE_WIDTH, position: int = PE_POSITION, shift: int = PE_SHIFT) -> ShiftExample:
    """The sinusoidal encoding of even width ``d`` at ``position`` and ``position + shift``, and the rotation by
    ``shift`` applied to the first: the exact product of the derivation's matrices, evaluated to 30 digits.

    >>> ex = shift_example()
    >>> [round(v, 4) for v in ex.rotated] == [round(v, 4) for v in ex.shifted]
    True
    """
    from seqgrad import validate
    from seqgrad.derive import positional

    d = validate.integer("d", d, minimum=2, maximum=16)
    if d % 2:
        raise SeqgradValueError("d", d, "an even width (every coordinate in a pair, so that R(k) shifts all of them)")
    position = validate.integer("position", position, minimum=0, maximum=10000)
    shift = validate.integer("shift", shift, minimum=0, maximum=10000)
    pe = positional.Sinusoidal(d)
    R = pe.rotation(shift).matrix().T  # the proof's rotation acts on columns; the notes' rows take its transpose
    row = pe.vector(position).T
    value = lambda m: [[float(e.evalf(30)) for e in m.row(i)] for i in range(m.rows)]  # noqa: E731
    return ShiftExample(d, position, shift, value(row)[0], value(R), value(row * R)[0], value(pe.vector(position + shift).T)[0])


#: The residual connection's worked example: the row x and the branch F(x) = tanh(x W^T), W stored output by input.
RESIDUAL_X = (0.5, -1.0)
RESIDUAL_W = ((0.8, -0.3), (0.2, 0.6))


def residual_example(x=RESIDUAL_X, W=RESIDUAL_W) -> tuple[list[list[float]], list[list[float]]]:
    """The Jacobian ``J_F`` of the branch ``F(x) = tanh(x W^T)`` and the connection's ``du/dx = I + J_F`` at the row
    ``x``: the plain residual Jacobian of :class:`derive.residual.ResidualJacobian` (its generic branch replaced by
    this one, its derivatives then taken), evaluated at ``x``.

    >>> J_F, J = residual_example()
    >>> [[round(v, 4) for v in row] for row in J]
    [[1.5078, -0.1904], [0.1573, 1.4719]]
    """
    from seqgrad.derive import residual

    allowed = "a square matrix W (rows of real numbers) and a row x of its width, every entry finite"
    try:
        x = [float(v) for v in x]
        W = [[float(v) for v in row] for row in W]
    except (TypeError, ValueError):
        raise SeqgradValueError("x, W", (x, W), allowed) from None
    d = len(x)
    if not 1 <= d <= 6 or len(W) != d or any(len(row) != d for row in W) or not all(
            abs(v) < 1e6 for v in x + [v for row in W for v in row]):
        raise SeqgradValueError("x, W", (x, W), allowed + ", of width 1 to 6")
    jac = residual.ResidualJacobian(d, "plain")
    u = jac.F.u
    branch = {f: sp.Lambda(tuple(u), sp.tanh(sum(sp.Float(W[i][j], 30) * u[j] for j in range(d))))
              for i, f in enumerate(jac.F.f)}
    closed = jac.closed.subs(branch).doit().subs({h: sp.Float(v, 30) for h, v in zip(jac.h, x)})
    J = [[float(closed[i, j].evalf(30)) for j in range(d)] for i in range(d)]
    return [[J[i][j] - (i == j) for j in range(d)] for i in range(d)], J


def as_figures(x: float, figures: int) -> sp.Float:
    """``x`` as a SymPy number of ``figures`` significant figures, printed with all of them (``0.0591``, ``0.200``):
    a number set in a sentence by the notation's printer, as the tables print it.

    >>> as_figures(0.2, 3), as_figures(-0.0590839, 3), as_figures(0.0, 3)
    (0.200, -0.0591, 0)
    """
    from seqgrad.latex_table import format_sigfig

    if x == 0:  # exactly zero (a term with h_{-1} = 0): 0, not 0.00
        return sp.Integer(0)
    return sp.Float(format_sigfig(x, figures, trailing_zeros=True), figures)


def printed_sum(values, figures: int) -> sp.Rational:
    """The sum of ``values`` as printed at ``figures`` significant figures (:func:`as_figures`), exactly: what a
    reader gets adding up a table's column, which may differ in the last digit from the sum of the unrounded values.

    >>> printed_sum([0.2234, -0.1566, 0.2884], 3), as_figures(0.2234 - 0.1566 + 0.2884, 3)
    (177/500, 0.355)
    """
    return sum((sp.Rational(str(as_figures(v, figures))) for v in values), sp.Integer(0))


#: The stated values of the GRU's worked example (two steps, scalar state; symbol name -> value; ``w_o`` is the head,
#: printed ``w_y`` in the notes); the initial state is the cell's own, ``h_{-1} = 0``.
GRU_VALUES = {"w_xr": 0.5, "w_hr": -0.4, "b_xr": 0.1, "b_hr": 0.0, "w_xu": 0.3, "w_hu": 0.8, "b_xu": -0.2, "b_hu": 0.1,
              "w_xn": 0.9, "w_hn": 0.6, "b_xn": 0.0, "b_hn": 0.2, "w_o": 1.5, "x_0": 1.0, "x_1": -0.5, "y": 0.3}


@dataclass(frozen=True)
class GRUExample(StepRows):
    """The scalar GRU at stated values: ``columns`` are the general-t quantities of the section (forward values, then
    the adjoints), ``rows[k]`` their values at ``t = k``; ``jacobian``, ``carry`` and ``gate_terms`` are the one-step
    Jacobian ``dh_1/dh_0`` of the worked example, its carry ``u_1`` and the rest; ``gradients`` the unrolled program's
    ∂L/∂w by parameter name; and the head ``yhat``, ``e`` and ``L``."""

    net: object
    values: dict
    columns: tuple
    rows: tuple
    split: object  # the symbolic one-step Jacobian (full, carry, gate_terms)
    jacobian: float
    carry: float
    gate_terms: float
    gradients: dict
    yhat: float
    e: float
    L: float


def gru_example(values: Mapping[str, float] | None = None, steps: int = 2) -> GRUExample:
    """The scalar GRU (:func:`derive.gated.gru`, PyTorch's gate order and biases) unrolled over ``steps`` at ``values``
    (default :data:`GRU_VALUES`, every leaf of the program by name): the section's general-t quantities instantiated
    at every step, the worked example's ``dh_1/dh_0`` (:meth:`step_jacobian`, the derivation's split) and every
    weight's gradient, all evaluated by one compiled program of the unrolled cell."""
    from seqgrad.derive import gated

    net = gated.gru(steps=steps)
    *fields, _ = _gated_numbers(net, GRU_VALUES if values is None else values, steps, net.step_jacobian(1))
    return GRUExample(*fields)


#: The stated values of the LSTM's worked example (two steps, scalar state; symbol name -> value; ``w_o`` is the
#: head, printed ``w_y`` in the notes); the initial states are the cell's own, ``h_{-1} = c_{-1} = 0``.
LSTM_VALUES = {"w_xi": 0.5, "w_hi": -0.3, "b_i": 0.1, "w_xf": 0.4, "w_hf": 0.6, "b_f": 0.5, "w_xc": 0.9, "w_hc": -0.5,
               "b_c": 0.3, "w_xo": -0.3, "w_ho": 0.7, "b_o": 0.2, "w_o": 1.5, "x_0": 1.0, "x_1": -0.5, "y": 0.3}


@dataclass(frozen=True)
class LSTMExample(GRUExample):
    """The scalar LSTM at stated values, as :class:`GRUExample`: the one-step Jacobian is ``dc_1/dc_0`` at fixed
    ``h_0``, which is its carry ``f_1`` alone (``gate_terms`` 0); ``total`` is the total derivative ``dc_1/dc_0``,
    the carry plus the path through ``h_0`` (:func:`derive.gated.lstm_total_derivative`)."""

    total: float = 0.0


def lstm_example(values: Mapping[str, float] | None = None, steps: int = 2) -> LSTMExample:
    """The scalar LSTM (:func:`derive.gated.lstm`, PyTorch's gate order, the two biases of a gate as one) unrolled
    over ``steps`` at ``values`` (default :data:`LSTM_VALUES`), evaluated as :func:`gru_example` evaluates the GRU,
    with the worked example's total derivative ``dc_1/dc_0`` as well."""
    from seqgrad.derive import gated

    from seqgrad.derive.gated import lstm_total_derivative

    net = gated.lstm(steps=steps)
    split = net.step_jacobian(1, wrt="c")
    *fields, (total,) = _gated_numbers(net, LSTM_VALUES if values is None else values, steps, split,
                                       [lstm_total_derivative(net, split.full)])
    return LSTMExample(*fields, total=total)


def _gated_numbers(net, values: Mapping[str, float], steps: int, split, extra=()) -> tuple:
    """The fields of a gated cell's worked example (:class:`GRUExample`'s, in order) for the unrolled ``net`` at
    ``values`` (every leaf of its program by name), then the values of the expressions ``extra``: one compiled
    program evaluates them all."""
    from seqgrad.derive.sequence import t

    from .lambdify import lambdify

    values = dict(values)
    general = net.cell.general()
    leaves = {str(s): s for s in net.program.leaves()}
    if set(values) != set(leaves):
        raise SeqgradValueError("values", sorted(values), "a value for every leaf of the program: " + ", ".join(leaves))
    # the rows at a general step t (not h_{-1}, the head, or the adjoint of the last step)
    stepwise = lambda rows: tuple(r.lhs for r in rows if getattr(r.lhs, "index", None) == t)  # noqa: E731
    columns = stepwise(general.forward_rows()) + stepwise(general.backward_rows())
    at_steps = [general.instantiate(c, k, steps) for k in range(steps) for c in columns]
    params = list(net.parameters)
    outputs = (at_steps + [split.full, split.carry, split.gate_terms, net.yhat, net.e, net.L]
               + [net.grad(p) for p in params] + list(extra))
    out = [float(v) for v in lambdify(net.program, outputs, list(leaves.values()))(*(float(values[n]) for n in leaves))]
    n = len(columns)
    rows = tuple(tuple(out[k * n:(k + 1) * n]) for k in range(steps))
    J, carry, rest, yhat, e, L = out[steps * n:steps * n + 6]
    grads = out[steps * n + 6:steps * n + 6 + len(params)]
    return (net, values, columns, rows, split, J, carry, rest, dict(zip(params, grads)), yhat, e, L,
            tuple(out[steps * n + 6 + len(params):]))
