"""Numeric references for the recurrent network of the course text (numpy and torch).

* :func:`forward` and :func:`bptt`: numpy forward pass and manual
  backpropagation through time with the text's formulas (lines 282-324)::

      z_t = x_t W_x^T + h_{t-1} W_h^T + b_h,   h_t = phi(z_t),   h_{-1} = 0
      g_t^h = e_t W_o + g_{t+1}^z W_h,         g_t^z = g_t^h o phi'(z_t)
      grad W_x = sum_t (g_t^z)^T x_t,  grad W_h = sum_t (g_t^z)^T h_{t-1},
      grad W_o = sum_t e_t^T h_t,      grad b_h = sum_t g_t^z,  grad b_o = sum_t e_t

* :func:`autograd`: the same model written with torch operations and
  differentiated by torch autograd (the independent reference).
* :func:`seeded_example`: the text's ``nn.RNN`` + ``nn.Linear`` snippet with
  ``torch.manual_seed(6)`` (lines 413-448).

Shapes: ``X`` is (B, T, D); ``y`` is (B, C) for ``loss="final"`` and
(B, T, C) for ``loss="every"``; weights are stored out x in (PyTorch layout);
biases are (H,) and (C,).  The loss is summed over outputs and sequences and
summed or averaged (``reduction``) over positions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from seqgrad import validate
from seqgrad.errors import NonFiniteError, SeqgradTypeError, SeqgradValueError, ShapeError

from . import activations
from .device import resolve_device

__all__ = ["ACTIVATIONS", "RNNWeights", "Params", "forward", "bptt", "autograd", "seeded_example", "SEEDED_X", "SEEDED_TARGET"]

SEEDED_X = [[0.2, -0.1], [0.0, 0.3], [0.4, 0.1]]
SEEDED_TARGET = 0.5

ACTIVATIONS = activations.ACTIVATIONS


@dataclass(frozen=True, eq=False)
class RNNWeights:
    """The course's vanilla RNN, weights out x in (PyTorch layout), biases optional.

    The cell ``z_t = x_t W_x^T + h_{t-1} W_h^T + b_h``, ``h_t = phi(z_t)`` and the head
    ``yhat = h W_o^T + b_o``. One class for every use of the vanilla RNN: the BPTT reference
    (:func:`bptt`, :func:`autograd`, which need the head) and the path studies of
    :mod:`numeric.paths` (the cell alone: leave ``W_o`` out). ``activation`` is the cell's phi
    (one of :data:`ACTIVATIONS`); the functions here take it as their default.
    """

    W_x: np.ndarray
    W_h: np.ndarray
    W_o: np.ndarray | None = None
    b_h: np.ndarray | None = None
    b_o: np.ndarray | None = None
    activation: str = "tanh"

    def __post_init__(self):
        for name in ("W_x", "W_h", "W_o", "b_h", "b_o"):
            value = getattr(self, name)
            if value is None:
                if name in ("W_x", "W_h"):
                    raise SeqgradTypeError(name, value, "a matrix of real numbers (out x in); only W_o and the biases may be None")
                continue
            object.__setattr__(self, name, _real_array(name, value))
        if self.W_h.ndim != 2 or self.W_h.shape[0] != self.W_h.shape[1]:
            raise ShapeError("W_h", self.W_h.shape, "(H, H)")
        H = self.W_h.shape[0]
        if self.W_x.ndim != 2 or self.W_x.shape[0] != H:
            raise ShapeError("W_x", self.W_x.shape, f"(H, D) with H={H}, the width of W_h {self.W_h.shape}")
        if self.W_o is not None and (self.W_o.ndim != 2 or self.W_o.shape[1] != H):
            raise ShapeError("W_o", self.W_o.shape, f"(C, {H}) to match W_h")
        if self.b_h is not None and self.b_h.shape != (H,):
            raise ShapeError("b_h", self.b_h.shape, f"({H},)")
        if self.b_o is not None and (self.W_o is None or self.b_o.shape != (self.W_o.shape[0],)):
            raise ShapeError("b_o", self.b_o.shape, "(C,) with a head W_o (C, H)" if self.W_o is None else f"({self.W_o.shape[0]},)")
        activations.get(self.activation)

    @property
    def input_size(self) -> int:
        return self.W_x.shape[1]

    @property
    def hidden_size(self) -> int:
        return self.W_h.shape[0]

    @property
    def sizes(self) -> tuple[int, int, int]:
        """``(D, H, C)``; the weights must have their head."""
        return self.input_size, self.hidden_size, self.head().shape[0]

    def head(self) -> np.ndarray:
        """``W_o``, or a clear error for a cell without its head."""
        if self.W_o is None:
            raise SeqgradValueError("params", "RNNWeights without W_o",
                                    "weights with the head W_o (C, H): the loss is computed through it")
        return self.W_o

    @classmethod
    def random(cls, input_size: int, hidden_size: int, rng: np.random.Generator | None = None, *,
               spectral_norm: float | None = None, activation: str = "tanh", bias: bool = True,
               outputs: int | None = None) -> "RNNWeights":
        """PyTorch's initialisation (uniform in ``±1/sqrt(H)``); optionally rescale ``W_h`` to a given
        ``||W_h||_2``; a head of ``outputs`` rows when asked for."""
        D = validate.integer("input_size", input_size, minimum=1)
        H = validate.integer("hidden_size", hidden_size, minimum=1)
        rng = rng if rng is not None else np.random.default_rng()
        k = 1.0 / math.sqrt(H)
        W_h = rng.uniform(-k, k, (H, H))
        if spectral_norm is not None:
            W_h *= validate.real("spectral_norm", spectral_norm, positive=True) / np.linalg.norm(W_h, 2)
        b_h = rng.uniform(-k, k, H) if bias else None
        W_x = rng.uniform(-k, k, (H, D))
        if outputs is None:
            return cls(W_x, W_h, b_h=b_h, activation=activation)
        C = validate.integer("outputs", outputs, minimum=1)
        return cls(W_x, W_h, rng.uniform(-k, k, (C, H)), b_h, rng.uniform(-k, k, C) if bias else None, activation)


Params = RNNWeights  # the first round's name for the same weights


def _real_array(name: str, value) -> np.ndarray:
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().double().numpy()
    if isinstance(value, (str, bytes, bool)):
        raise SeqgradTypeError(name, value, "an array of real numbers")
    try:
        value = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise SeqgradTypeError(name, value, "a rectangular array of real numbers") from None
    if not np.all(np.isfinite(value)):
        raise NonFiniteError(name)
    return value


def _inputs(params: RNNWeights, X) -> np.ndarray:
    D = params.input_size
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 3 or X.shape[2] != D or X.shape[1] < 1:
        raise ShapeError("X", X.shape, f"(B, T, {D}) with T >= 1")
    if not np.all(np.isfinite(X)):
        raise NonFiniteError("X")
    return X


def _data(params: RNNWeights, X, y, loss: str):
    C = params.sizes[2]
    X = _inputs(params, X)
    y = np.asarray(y, dtype=np.float64)
    want = (X.shape[0], C) if loss == "final" else (X.shape[0], X.shape[1], C)
    if y.shape != want:
        raise ShapeError("y", y.shape, str(want))
    if not np.all(np.isfinite(y)):
        raise NonFiniteError("y")
    return X, y


def _check(params, activation, loss, reduction) -> str:
    """The activation to use (``params.activation`` unless given), after checking the other options."""
    if not isinstance(params, RNNWeights):
        raise SeqgradTypeError("params", params, "numeric.recurrent.RNNWeights (alias Params)")
    activation = params.activation if activation is None else activation
    if activation not in ACTIVATIONS:
        raise SeqgradValueError("activation", activation, "one of " + ", ".join(ACTIVATIONS))
    if loss not in ("final", "every"):
        raise SeqgradValueError("loss", loss, "final or every")
    if reduction not in ("sum", "mean"):
        raise SeqgradValueError("reduction", reduction, "sum or mean")
    return activation


def _finite_results(out: dict, activation: str, T: int) -> dict:
    """No silent inf/NaN: finite inputs and weights whose states or gradients overflow are a clear error."""
    bad = [k for k, v in out.items() if not np.all(np.isfinite(v))]
    if bad:
        raise SeqgradValueError(
            "params", f"weights that overflow over T={T} steps with activation={activation!r}",
            f"weights and inputs for which the states and gradients stay finite (non-finite: {', '.join(bad)}); "
            "with an unbounded activation (relu, identity) the states grow like ||W_h||^T: scale W_h down or "
            "shorten the sequence")
    return out


_QUIET = np.errstate(over="ignore", invalid="ignore")  # overflow is checked and refused by _finite_results


@_QUIET
def forward(params: RNNWeights, X, activation: str | None = None):
    """States ``h`` (B, T, H) and preactivations ``z`` (B, T, H) from h_{-1} = 0."""
    activation = _check(params, activation, "final", "sum")
    X = _inputs(params, X)
    B, T, _ = X.shape
    H = params.W_h.shape[0]
    z = np.empty((B, T, H))
    h = np.empty((B, T, H))
    prev = np.zeros((B, H))
    for t in range(T):
        z[:, t] = X[:, t] @ params.W_x.T + prev @ params.W_h.T + (params.b_h if params.b_h is not None else 0.0)
        h[:, t] = prev = activations.get(activation).phi(z[:, t])
    _finite_results({"z": z, "h": h}, activation, T)
    return z, h


@_QUIET
def bptt(params: RNNWeights, X, y, activation: str | None = None, loss: str = "final", reduction: str = "sum") -> dict:
    """Loss and gradients by the text's manual BPTT: keys L, W_x, W_h, W_o, b_h, b_o, X."""
    activation = _check(params, activation, loss, reduction)
    X, y = _data(params, X, y, loss)
    B, T, _ = X.shape
    z, h = forward(params, X, activation)
    b_o = params.b_o if params.b_o is not None else 0.0
    scale = 1.0 / T if (loss == "every" and reduction == "mean") else 1.0
    if loss == "final":
        yhat = h[:, -1] @ params.W_o.T + b_o
        e_direct = {T - 1: yhat - y}
    else:
        yhat = h @ params.W_o.T + b_o
        e_direct = {t: yhat[:, t] - y[:, t] for t in range(T)}
    L = scale * 0.5 * sum(float(np.sum(e**2)) for e in e_direct.values())
    grads = {k: np.zeros_like(v) for k, v in (("W_x", params.W_x), ("W_h", params.W_h), ("W_o", params.W_o))}
    grads["b_h"] = np.zeros(params.W_h.shape[0])
    grads["b_o"] = np.zeros(params.W_o.shape[0])
    grads["X"] = np.zeros_like(X)
    g_z_next = np.zeros((B, params.W_h.shape[0]))
    for t in range(T - 1, -1, -1):
        g_h = g_z_next @ params.W_h
        if t in e_direct:
            e = scale * e_direct[t]
            g_h = g_h + e @ params.W_o
            grads["W_o"] += e.T @ h[:, t]
            grads["b_o"] += e.sum(axis=0)
        g_z = g_h * activations.get(activation).prime(z[:, t], h[:, t])
        h_prev = h[:, t - 1] if t > 0 else np.zeros_like(h[:, 0])
        grads["W_x"] += g_z.T @ X[:, t]
        grads["W_h"] += g_z.T @ h_prev
        grads["b_h"] += g_z.sum(axis=0)
        grads["X"][:, t] = g_z @ params.W_x
        g_z_next = g_z
    grads["L"] = L
    return _finite_results(grads, activation, T)


def autograd(params: RNNWeights, X, y, activation: str | None = None, loss: str = "final", reduction: str = "sum",
             device: str = "cpu", dtype=None) -> dict:
    """Loss and gradients of the same model by torch autograd (keys as :func:`bptt`), as numpy arrays."""
    import torch

    activation = _check(params, activation, loss, reduction)
    X, y = _data(params, X, y, loss)
    dev = resolve_device(device)
    dt = dtype or torch.float64
    t = {k: torch.tensor(v, dtype=dt, device=dev, requires_grad=True)
         for k, v in (("W_x", params.W_x), ("W_h", params.W_h), ("W_o", params.W_o), ("b_h", params.b_h), ("b_o", params.b_o))
         if v is not None}
    Xt = torch.tensor(X, dtype=dt, device=dev, requires_grad=True)
    yt = torch.tensor(y, dtype=dt, device=dev)
    act = activations.get(activation).torch
    B, T, _ = X.shape
    h = torch.zeros((B, params.W_h.shape[0]), dtype=dt, device=dev)
    outs = []
    for s in range(T):
        z = Xt[:, s] @ t["W_x"].T + h @ t["W_h"].T + (t["b_h"] if "b_h" in t else 0.0)
        h = act(z)
        outs.append(h)
    head = lambda v: v @ t["W_o"].T + (t["b_o"] if "b_o" in t else 0.0)  # noqa: E731
    if loss == "final":
        L = 0.5 * (head(outs[-1]) - yt).square().sum()
    else:
        per = torch.stack([0.5 * (head(o) - yt[:, s]).square().sum() for s, o in enumerate(outs)])
        L = per.mean() if reduction == "mean" else per.sum()
    L.backward()
    out = {k: v.grad.detach().cpu().numpy() for k, v in t.items()}
    out["X"] = Xt.grad.detach().cpu().numpy()
    out["L"] = float(L.detach().cpu())
    return _finite_results(out, activation, T)


def seeded_example(device: str = "cpu") -> dict:
    """The text's snippet: ``torch.manual_seed(6)``, ``nn.RNN(2, 2, tanh, bias=False, batch_first=True)``
    and ``nn.Linear(2, 1, bias=False)`` on X = [[0.2,-0.1],[0,0.3],[0.4,0.1]] with target 0.5.

    Returns the states ``h`` (T, H), ``prediction``, ``loss``, the weights
    (as :class:`RNNWeights`) and the autograd gradients ``grad_W_x``, ``grad_W_h``, ``grad_W_o``.
    """
    import torch
    from torch import nn

    dev = resolve_device(device)
    with torch.random.fork_rng(devices=[]):  # the seed is the text's; the caller's random state is left alone
        torch.manual_seed(6)
        B, T, D, H, C = 1, 3, 2, 2, 1
        # float32 as printed, whatever torch's default dtype is here
        X = torch.tensor([SEEDED_X], dtype=torch.float32)
        rnn = nn.RNN(D, H, nonlinearity="tanh", bias=False, batch_first=True, dtype=torch.float32)
        head = nn.Linear(H, C, bias=False, dtype=torch.float32)
    rnn, head, X = rnn.to(dev), head.to(dev), X.to(dev)
    output, final = rnn(X)
    prediction = head(final[0])
    target = X.new_tensor([[SEEDED_TARGET]])
    loss = 0.5 * (prediction - target).square().sum()
    rnn.zero_grad(set_to_none=True)
    head.zero_grad(set_to_none=True)
    loss.backward()
    arr = lambda v: v.detach().cpu().double().numpy()  # noqa: E731
    return {
        "h": arr(output[0]),
        "prediction": float(prediction.item()),
        "loss": float(loss.item()),
        "params": RNNWeights(arr(rnn.weight_ih_l0), arr(rnn.weight_hh_l0), arr(head.weight)),
        "grad_W_x": arr(rnn.weight_ih_l0.grad),
        "grad_W_h": arr(rnn.weight_hh_l0.grad),
        "grad_W_o": arr(head.weight.grad),
        "X": np.asarray([SEEDED_X]),
        "y": np.asarray([[SEEDED_TARGET]]),
    }
