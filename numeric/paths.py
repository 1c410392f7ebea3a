"""Path products through time, vectorised: the numbers behind vanishing and exploding gradients.

Scalar cell (``shared/spec/seed000``, §2.1): ``z_t = w_x x_t + w_h h_{t-1}``,
``h_t = phi(z_t)``, ``h_{-1} = 0``, and the long path (text L198)::

    dh_q/dh_s = prod_{t=s+1}^{q} w_h phi'(z_t)

Every scalar sweep here runs many configurations ``(w_h, x)`` at once: the
configurations are array axes and only time is a Python loop.

Vector cell (§2.3, §2.5): ``z_t = x_t W_x^T + h_{t-1} W_h^T + b_h``,
``J_t = diag(phi'(z_t)) W_h`` and ``g_s^h = g_q^h J_q ... J_{s+1}``, with the
bounds ``||J_q...J_{s+1}||_2 <= prod ||J_t||_2 <= (gamma ||W_h||_2)^(q-s)``
(Pascanu, Mikolov and Bengio 2013), ``gamma = sup |phi'|``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from seqgrad import validate
from seqgrad.errors import NonFiniteError, SeqgradTypeError, SeqgradValueError, ShapeError
from seqgrad.progress import progress

from . import activations, gated, recurrent

# ---------------------------------------------------------------- activations (numeric side)
# phi and phi'(z, h) are numeric.recurrent's (tanh: 1 - h^2; ReLU's slope at 0 is 0, as torch's);
# gamma = sup|phi'| is what the Pascanu bound needs.

NumericActivation = activations.NumericActivation


def activation(name: str) -> NumericActivation:
    """phi, phi' and gamma for ``name`` in identity, tanh, sigmoid, relu (the one table :mod:`numeric.activations`)."""
    return activations.get(name)


def gamma(name: str) -> float:
    """``sup_z |phi'(z)|``: 1 for tanh, relu and identity, 1/4 for sigmoid."""
    return activation(name).gamma


# ---------------------------------------------------------------- validation

def values(argument: str, v, *, allow_scalar: bool = True) -> np.ndarray:
    """A non-empty, finite float array (a sweep range or a parameter)."""
    if isinstance(v, torch.Tensor):
        v = v.detach().cpu().numpy()
    if isinstance(v, bool) or not isinstance(v, (int, float, list, tuple, range, np.ndarray, np.number)):
        raise SeqgradTypeError(argument, v, "a real number or an array of real numbers")
    try:
        a = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError):
        raise SeqgradTypeError(argument, v, "a real number or a rectangular array of real numbers") from None
    if isinstance(v, np.ndarray) and v.dtype.kind not in "iuf":
        raise SeqgradTypeError(argument, v, "an array of real numbers")
    if a.size == 0:
        raise SeqgradValueError(argument, v, "a non-empty range of values")
    if a.ndim == 0 and not allow_scalar:
        raise SeqgradValueError(argument, v, "an array of values, not a single number")
    if not np.all(np.isfinite(a)):
        raise NonFiniteError(argument, v if a.size < 8 else "<array>")
    return a


def _steps(argument: str, T) -> int:
    return validate.integer(argument, T, minimum=1)


# ---------------------------------------------------------------- Figure 3, left

def power_curve(r, n) -> np.ndarray:
    """``|r|^n``: a fixed transition factor ``r`` raised to the number of transitions ``n``.

    ``r`` and ``n`` broadcast; ``n`` must be whole numbers >= 0.
    """
    r = values("r", r)
    n = values("n", n)
    if np.any(n < 0) or np.any(n != np.round(n)):
        raise SeqgradValueError("n", n.tolist() if n.size < 8 else "<array>", "whole numbers of transitions >= 0")
    return np.abs(r) ** n


# ---------------------------------------------------------------- scalar trajectories

@dataclass(frozen=True)
class ScalarTrajectory:
    """Scalar-RNN trajectories for a batch of configurations; time is the last axis."""

    z: np.ndarray        # preactivations z_t, shape S + (T,)
    h: np.ndarray        # states h_t
    factors: np.ndarray  # the transition derivatives w_h phi'(z_t) = dh_t/dh_{t-1}
    activation: str


def scalar_trajectory(w_h, x, T: int, *, w_x=1.0, activation_name: str = "tanh", show_progress: bool | None = None) -> ScalarTrajectory:
    """Run ``z_t = w_x x_t + w_h h_{t-1}``, ``h_t = phi(z_t)`` from ``h_{-1} = 0`` for ``T`` steps.

    ``w_h``, ``w_x`` and a constant input ``x`` broadcast to the configuration shape
    ``S``; an input that varies in time is given with a last axis of length ``T``.
    """
    T = _steps("T", T)
    act = activation(activation_name)
    w_h, w_x, x = values("w_h", w_h), values("w_x", w_x), values("x", x)
    if x.ndim and x.shape[-1] == T and T > 1:
        x_at = lambda t: x[..., t]  # noqa: E731  (an input sequence)
        shape = np.broadcast_shapes(w_h.shape, w_x.shape, x.shape[:-1])
    else:
        x_at = lambda t: x  # noqa: E731  (a constant input)
        shape = np.broadcast_shapes(w_h.shape, w_x.shape, x.shape)
    z = np.empty(shape + (T,))
    h = np.empty(shape + (T,))
    h_prev = np.zeros(shape)
    for t in progress(range(T), T, "trajectory", enabled=show_progress if show_progress is not None else (False if z.size < 10**6 else None)):
        z[..., t] = w_x * x_at(t) + w_h * h_prev
        h[..., t] = h_prev = act.phi(z[..., t])
    return ScalarTrajectory(z, h, w_h[..., None] * act.prime(z, h), activation_name)


def sensitivity_vs_length(w_h, x, T_max: int, *, w_x=1.0, activation_name: str = "tanh") -> np.ndarray:
    """``|dh_{T-1}/dh_0|`` for ``T = 1..T_max`` (Figure 3, right): ``prod_{t=1}^{T-1} |w_h phi'(z_t)|``.

    At ``T = 1`` there is no transition and the sensitivity is 1.  Last axis: ``T - 1``.
    """
    traj = scalar_trajectory(w_h, x, T_max, w_x=w_x, activation_name=activation_name)
    ones = np.ones(traj.factors.shape[:-1] + (1,))
    return np.concatenate([ones, np.cumprod(np.abs(traj.factors[..., 1:]), axis=-1)], axis=-1)


def log10_path_products(w_h, x, T: int, *, w_x=1.0, activation_name: str = "tanh") -> np.ndarray:
    """``log10 |dh_{T-1}/dh_t|`` for ``t = 0..T-1`` (last axis), summed in log space so long
    products neither overflow nor underflow.  A zero factor gives ``-inf``."""
    traj = scalar_trajectory(w_h, x, T, w_x=w_x, activation_name=activation_name)
    with np.errstate(divide="ignore"):
        logs = np.log10(np.abs(traj.factors))
    # sum_{k=t+1}^{T-1} log|factor_k| : reverse cumulative sum, shifted by one
    tail = np.cumsum(logs[..., ::-1], axis=-1)[..., ::-1]
    zeros = np.zeros(logs.shape[:-1] + (1,))
    return np.concatenate([tail[..., 1:], zeros], axis=-1)


def path_product_sweep(w_h, x, T: int, *, w_x=1.0, activation_name: str = "tanh", show_progress: bool | None = None) -> np.ndarray:
    """``|dh_{T-1}/dh_0| = prod_{t=1}^{T-1} |w_h phi'(z_t)|`` for every configuration at once.

    ``w_h`` and ``x`` (a constant input per configuration) broadcast; the result
    has their broadcast shape.  Only the ``T`` time steps are a Python loop.
    """
    T = _steps("T", T)
    act = activation(activation_name)
    w_h, w_x, x = values("w_h", w_h), values("w_x", w_x), values("x", x)
    shape = np.broadcast_shapes(w_h.shape, w_x.shape, x.shape)
    h = np.zeros(shape)
    product = np.ones(shape)
    drive = w_x * x
    for t in progress(range(T), T, "path products", enabled=show_progress):
        z = drive + w_h * h
        h = act.phi(z)
        if t >= 1:
            product *= np.abs(w_h * act.prime(z, h))
    return product


def loss_sensitivity(g_q, factors, s_values, q: int) -> np.ndarray:
    """``dL/dh_s = dL/dh_q prod_{t=s+1}^{q} w_h phi'(z_t)`` (text L198) for each ``s`` in ``s_values``.

    ``factors`` is the last axis of :attr:`ScalarTrajectory.factors` (no intermediate losses).
    """
    factors = values("factors", factors, allow_scalar=False)
    q = validate.integer("q", q, minimum=0, maximum=factors.shape[-1] - 1)
    s = values("s_values", s_values)
    if np.any(s < 0) or np.any(s > q) or np.any(s != np.round(s)):
        raise SeqgradValueError("s_values", s.tolist() if s.size < 8 else "<array>", f"whole steps from 0 to q={q}")
    g_q = validate.real("g_q", g_q)
    return np.array([g_q * np.prod(factors[..., int(si) + 1: q + 1], axis=-1) for si in np.atleast_1d(s)])


# ---------------------------------------------------------------- vector RNN

RNNWeights = recurrent.RNNWeights  # the one class of the vanilla RNN's weights; the head W_o may be left out here


@dataclass(frozen=True)
class VectorTrajectory:
    z: np.ndarray  # (T, H)
    h: np.ndarray  # (T, H)
    J: np.ndarray  # (T, H, H): J_t = diag(phi'(z_t)) W_h = dh_t/dh_{t-1}


def _inputs(w, X) -> np.ndarray:
    X = values("X", X, allow_scalar=False)
    if X.ndim != 2 or X.shape[1] != w.input_size or X.shape[0] == 0:
        raise ShapeError("X", X.shape, f"(T, {w.input_size}) with T >= 1: the cell's input width D={w.input_size}")
    return X


def rnn_trajectory(w: RNNWeights, X) -> VectorTrajectory:
    """States and step Jacobians ``J_t = diag(phi'(z_t)) W_h`` along ``X`` (shape ``(T, D)``).

    The forward pass is :func:`numeric.recurrent.forward` (the head does not enter the states)."""
    X = _inputs(w, X)
    z, h = (a[0] for a in recurrent.forward(w, X[None]))
    J = activation(w.activation).prime(z, h)[:, :, None] * w.W_h[None]
    return VectorTrajectory(z, h, J)


@dataclass(frozen=True)
class PathNorms:
    """Along one trajectory, for the distances ``d = q - s = 1..q``."""

    distance: np.ndarray      # q - s
    measured: np.ndarray      # ||J_q J_{q-1} ... J_{s+1}||_2
    norm_product: np.ndarray  # prod_{t=s+1}^{q} ||J_t||_2
    pascanu: np.ndarray       # (gamma ||W_h||_2)^(q-s)

    def violations(self, rtol: float = 1e-12) -> int:
        """How many distances break ``measured <= norm_product <= pascanu`` (beyond round-off)."""
        a = self.measured > self.norm_product * (1 + rtol)
        b = self.norm_product > self.pascanu * (1 + rtol)
        return int(np.sum(a | b))


def spectral_norm(M) -> np.ndarray:
    """Largest singular value of each matrix in ``M`` (shape ``(..., m, n)``)."""
    return np.linalg.svd(M, compute_uv=False)[..., 0]


def jacobian_product_norms(w: RNNWeights, X, q: int | None = None) -> PathNorms:
    """Measured ``||J_q ... J_{s+1}||_2`` beside the norm product and the Pascanu bound."""
    traj = rnn_trajectory(w, X)
    T = traj.J.shape[0]
    q = T - 1 if q is None else validate.integer("q", q, minimum=1, maximum=T - 1)
    if q < 1:
        raise SeqgradValueError("X", f"T={T}", "at least 2 steps, so that there is a transition")
    step_norms = spectral_norm(traj.J)
    P = np.eye(w.hidden_size)
    measured, products = [], []
    running = 1.0
    for s in range(q - 1, -1, -1):  # P = J_q ... J_{s+1}: multiply on the right
        P = P @ traj.J[s + 1]
        running *= step_norms[s + 1]
        measured.append(spectral_norm(P))
        products.append(running)
    d = np.arange(1, q + 1)
    bound = (gamma(w.activation) * np.linalg.norm(w.W_h, 2)) ** d
    return PathNorms(d, np.array(measured), np.array(products), bound)


# ---------------------------------------------------------------- gradient flow: RNN, GRU, LSTM

@dataclass(frozen=True)
class GradientFlow:
    """``||dL/dh_s||_2`` for ``s = 0..T-1`` with ``L = h_{T-1} . v`` (so ``dL/dh_{T-1} = v``)."""

    cell: str
    grad_norm: np.ndarray            # ||dL/dh_s||_2, index s
    carry_at_fixed_gates: np.ndarray  # mean over coordinates of prod_{t=s+1}^{T-1} u_t (GRU) / f_t (LSTM); None for RNN

    @property
    def distance(self) -> np.ndarray:
        return np.arange(len(self.grad_norm))[::-1]


def gradient_flow(weights, X, v=None) -> GradientFlow:
    """``dL/dh_s`` against ``s`` by torch autograd for an :class:`RNNWeights`,
    :class:`~numeric.gated.GRUWeights` or :class:`~numeric.gated.LSTMWeights` cell.

    ``v`` (default ``1/sqrt(H)`` in every coordinate) is the readout: ``L = h_{T-1} . v``.
    """
    if not isinstance(weights, (RNNWeights, gated.GRUWeights, gated.LSTMWeights)):
        raise SeqgradTypeError("weights", weights, "RNNWeights, GRUWeights or LSTMWeights")
    X = _inputs(weights, X)
    H = weights.hidden_size
    v = np.full(H, 1 / math.sqrt(H)) if v is None else values("v", v, allow_scalar=False)
    if v.shape != (H,):
        raise ShapeError("v", v.shape, f"({H},): the hidden width")
    Xt = torch.as_tensor(X)
    states, carries = [], []
    if isinstance(weights, RNNWeights):
        name = "RNN"
        act = activation(weights.activation).torch
        W_x, W_h = torch.as_tensor(weights.W_x), torch.as_tensor(weights.W_h)
        b = 0.0 if weights.b_h is None else torch.as_tensor(weights.b_h)
        h = torch.zeros(H, dtype=torch.float64, requires_grad=True)  # h_{-1}: a leaf, so the states are tracked
        for t in range(X.shape[0]):
            h = act(Xt[t] @ W_x.T + h @ W_h.T + b)
            h.retain_grad()
            states.append(h)
    elif isinstance(weights, gated.GRUWeights):
        name = "GRU"
        w = weights.to_torch()
        h = torch.zeros(H, dtype=torch.float64, requires_grad=True)  # h_{-1}: a leaf, so the states are tracked
        for t in range(X.shape[0]):
            step = gated.gru_step(w, Xt[t], h)
            h = step.h
            h.retain_grad()
            states.append(h)
            carries.append(step.u.detach().numpy())
    else:
        name = "LSTM"
        w = weights.to_torch()
        h = torch.zeros(H, dtype=torch.float64, requires_grad=True)  # h_{-1}: a leaf, so the states are tracked
        c = torch.zeros(H, dtype=torch.float64)
        for t in range(X.shape[0]):
            step = gated.lstm_step(w, Xt[t], h, c)
            h, c = step.h, step.c
            h.retain_grad()
            states.append(h)
            carries.append(step.f.detach().numpy())
    loss = states[-1] @ torch.as_tensor(v)
    loss.backward()
    grad_norm = np.array([float(torch.linalg.vector_norm(s.grad)) for s in states])
    carry = None
    if carries:
        G = np.array(carries)  # (T, H)
        T = len(carries)
        carry = np.array([np.mean(np.prod(G[s + 1:], axis=0)) for s in range(T)])
    return GradientFlow(name, grad_norm, carry)
