"""Reference GRU and LSTM cells in PyTorch's conventions, for numpy arrays and torch tensors.

The same code runs on both: a step takes row vectors ``x_t`` (``(..., D)``) and
``h_{t-1}`` (``(..., H)``) and applies every weight as ``x W^T``, as the course
text and ``torch.nn`` do.  Names follow the text (``shared/spec/seed000``, §2.7–2.8):

GRU (``torch.nn.GRU``; gate order in ``weight_ih``/``weight_hh``: r, z, n;
the text's update gate ``u_t`` is PyTorch's ``z_t``)::

    r_t  = sigma(x_t W_xr^T + b_xr + h_{t-1} W_hr^T + b_hr)
    u_t  = sigma(x_t W_xu^T + b_xu + h_{t-1} W_hu^T + b_hu)
    h~_t = tanh(x_t W_xn^T + b_xn + r_t * (h_{t-1} W_hn^T + b_hn))   # reset AFTER the affine map, b_hn included
    h_t  = u_t * h_{t-1} + (1 - u_t) * h~_t

LSTM (``torch.nn.LSTM``; gate order i, f, g, o; each bias is ``b_ih + b_hh``)::

    a_t  = sigma(x_t W_xa^T + h_{t-1} W_ha^T + b_a),  a in {i, f, o}
    c~_t = tanh(x_t W_xc^T + h_{t-1} W_hc^T + b_c)                  # PyTorch's g
    c_t  = f_t * c_{t-1} + i_t * c~_t
    h_t  = o_t * tanh(c_t)

"At fixed gates" means the gates and the candidate are computed from a
separate ``gate_h`` (pass ``h_prev.detach()`` in torch): then the carry
derivative is exactly ``diag(u_t)`` (GRU) or ``diag(f_t)`` (LSTM).  The full
one-step Jacobians, with the gate terms, are written out in
:func:`gru_jacobian` and :func:`lstm_jacobian`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np
import torch

from seqgrad import validate
from seqgrad.errors import NonFiniteError, SeqgradTypeError, ShapeError

GRU_GATES = ("r", "u", "n")  # PyTorch order r, z, n; the text's u is PyTorch's z
LSTM_GATES = ("i", "f", "g", "o")  # PyTorch order; g is the text's candidate c~


# ---------------------------------------------------------------- array helpers

def _is_torch(a) -> bool:
    return isinstance(a, torch.Tensor)


def _tanh(v):
    return torch.tanh(v) if _is_torch(v) else np.tanh(v)


def sigmoid(v):
    """The logistic sigmoid ``1/(1+e^{-v})``, written as ``(1 + tanh(v/2))/2`` (no overflow)."""
    return 0.5 * (1.0 + _tanh(0.5 * v))


def _T(W):
    return W.transpose(-1, -2) if _is_torch(W) else np.swapaxes(W, -1, -2)


def diag(v):
    """``diag(v)`` for a row ``v`` of shape ``(..., H)``: shape ``(..., H, H)``."""
    if _is_torch(v):
        return torch.diag_embed(v)
    return v[..., :, None] * np.eye(v.shape[-1], dtype=v.dtype)


def _stack(items, axis):
    return torch.stack(items, dim=axis) if _is_torch(items[0]) else np.stack(items, axis=axis)


def _zeros_state(x, H: int):
    shape = tuple(x.shape[:-1]) + (H,)
    if _is_torch(x):
        return torch.zeros(shape, dtype=x.dtype, device=x.device)
    return np.zeros(shape, dtype=x.dtype)


def _finite(argument: str, a) -> None:
    ok = bool(torch.isfinite(a).all()) if _is_torch(a) else bool(np.isfinite(a).all())
    if not ok:
        raise NonFiniteError(argument)


def _array(argument: str, a, like=None):
    """``a`` as a float array of the same kind (numpy or torch) as ``like``."""
    if _is_torch(a) or isinstance(a, np.ndarray):
        pass
    elif isinstance(a, (list, tuple, float, int)) and not isinstance(a, bool):
        a = np.asarray(a, dtype=np.float64)
    else:
        raise SeqgradTypeError(argument, a, "a numpy array, a torch tensor or a nested list of numbers")
    if like is not None and _is_torch(like) and not _is_torch(a):
        a = torch.as_tensor(a, dtype=like.dtype, device=like.device)
    if _is_torch(a):
        if not a.is_floating_point():
            a = a.to(torch.float64)
    elif a.dtype.kind != "f":
        a = a.astype(np.float64)
    _finite(argument, a)
    return a


def _shape(argument: str, a, expected: tuple) -> None:
    if tuple(a.shape) != expected:
        raise ShapeError(argument, tuple(a.shape), str(expected))


# ---------------------------------------------------------------- weights

@dataclass(frozen=True, eq=False)
class _GatedWeights:
    """Stacked gate weights in PyTorch layout: ``weight_ih`` (G*H, D), ``weight_hh`` (G*H, H),
    ``bias_ih`` and ``bias_hh`` (G*H,), with G gates in ``GATES`` order."""

    weight_ih: object
    weight_hh: object
    bias_ih: object
    bias_hh: object

    GATES: ClassVar[tuple] = ()
    KIND: ClassVar[str] = ""

    def __post_init__(self):
        G = len(self.GATES)
        w_ih = _array("weight_ih", self.weight_ih)
        like = w_ih
        w_hh = _array("weight_hh", self.weight_hh, like)
        if w_ih.ndim != 2 or w_ih.shape[0] % G or w_ih.shape[0] == 0:
            raise ShapeError("weight_ih", tuple(w_ih.shape), f"({G}*H, D) for the {self.KIND} gates {', '.join(self.GATES)}")
        H, D = w_ih.shape[0] // G, w_ih.shape[1]
        _shape("weight_hh", w_hh, (G * H, H))
        b_ih = _array("bias_ih", self.bias_ih, like) if self.bias_ih is not None else None
        b_hh = _array("bias_hh", self.bias_hh, like) if self.bias_hh is not None else None
        for name, b in (("bias_ih", b_ih), ("bias_hh", b_hh)):
            if b is not None:
                _shape(name, b, (G * H,))
        zeros = (lambda: like.new_zeros(G * H)) if _is_torch(like) else (lambda: np.zeros(G * H, dtype=like.dtype))
        object.__setattr__(self, "weight_ih", w_ih)
        object.__setattr__(self, "weight_hh", w_hh)
        object.__setattr__(self, "bias_ih", b_ih if b_ih is not None else zeros())
        object.__setattr__(self, "bias_hh", b_hh if b_hh is not None else zeros())

    @property
    def hidden_size(self) -> int:
        return self.weight_hh.shape[1]

    @property
    def input_size(self) -> int:
        return self.weight_ih.shape[1]

    def gate(self, name: str) -> tuple:
        """``(W_x, W_h, b_x, b_h)`` of one gate, by the text's name (GRU: r, u, n; LSTM: i, f, g, o)."""
        k = self.GATES.index(validate.choice("gate", name, self.GATES))
        H = self.hidden_size
        rows = slice(k * H, (k + 1) * H)
        return self.weight_ih[rows], self.weight_hh[rows], self.bias_ih[rows], self.bias_hh[rows]

    @classmethod
    def random(cls, input_size: int, hidden_size: int, rng: np.random.Generator | None = None, scale: float | None = None):
        """PyTorch's default initialisation: every entry uniform in ``(-1/sqrt(H), 1/sqrt(H))``."""
        D = validate.integer("input_size", input_size, minimum=1)
        H = validate.integer("hidden_size", hidden_size, minimum=1)
        rng = rng if rng is not None else np.random.default_rng()
        k = 1.0 / math.sqrt(H) if scale is None else validate.real("scale", scale, positive=True)
        G = len(cls.GATES)
        u = lambda *shape: rng.uniform(-k, k, size=shape)  # noqa: E731
        return cls(u(G * H, D), u(G * H, H), u(G * H), u(G * H))

    @classmethod
    def from_torch(cls, module):
        """The layer-0 weights of a ``torch.nn.GRU``/``LSTM`` (or of a ``GRUCell``/``LSTMCell``), detached."""
        suffix = "_l0" if hasattr(module, "weight_ih_l0") else ""
        get = lambda n: getattr(module, n + suffix, None)  # noqa: E731
        if get("weight_ih") is None:
            raise SeqgradTypeError("module", module, f"a torch.nn.{cls.KIND} or {cls.KIND}Cell")
        if getattr(module, "num_layers", 1) != 1 or getattr(module, "bidirectional", False):
            raise SeqgradTypeError("module", module, f"a one-layer, one-direction torch.nn.{cls.KIND}")
        if getattr(module, "proj_size", 0):
            raise SeqgradTypeError("module", module, "an LSTM without projections (proj_size=0)")
        b_ih, b_hh = get("bias_ih"), get("bias_hh")
        return cls(get("weight_ih").detach().clone(), get("weight_hh").detach().clone(),
                   None if b_ih is None else b_ih.detach().clone(), None if b_hh is None else b_hh.detach().clone())

    def to_torch(self, dtype=torch.float64, device="cpu"):
        """The same weights as torch tensors."""
        conv = lambda a: torch.as_tensor(a, dtype=dtype, device=device).clone()  # noqa: E731
        return type(self)(conv(self.weight_ih), conv(self.weight_hh), conv(self.bias_ih), conv(self.bias_hh))

    def to_numpy(self):
        conv = lambda a: a.detach().cpu().numpy().astype(np.float64) if _is_torch(a) else np.asarray(a, np.float64)  # noqa: E731
        return type(self)(conv(self.weight_ih), conv(self.weight_hh), conv(self.bias_ih), conv(self.bias_hh))

    def torch_module(self, dtype=torch.float64, device="cpu"):
        """A ``torch.nn.GRU``/``LSTM`` (``batch_first=True``) carrying exactly these weights."""
        layer = getattr(torch.nn, self.KIND)(self.input_size, self.hidden_size, batch_first=True, dtype=dtype, device=device)
        t = self.to_torch(dtype, device)
        with torch.no_grad():
            layer.weight_ih_l0.copy_(t.weight_ih)
            layer.weight_hh_l0.copy_(t.weight_hh)
            layer.bias_ih_l0.copy_(t.bias_ih)
            layer.bias_hh_l0.copy_(t.bias_hh)
        return layer

    def requires_grad_(self):
        """Torch weights that autograd tracks (returns self for chaining)."""
        for a in (self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh):
            a.requires_grad_(True)
        return self

    def _check_inputs(self, x_t, h_prev, argument_h: str = "h_prev"):
        x_t = _array("x_t", x_t, self.weight_ih)
        h_prev = _array(argument_h, h_prev, self.weight_ih)
        if x_t.shape[-1:] != (self.input_size,):
            raise ShapeError("x_t", tuple(x_t.shape), f"(..., {self.input_size}): the cell's input width D")
        if h_prev.shape[-1:] != (self.hidden_size,):
            raise ShapeError(argument_h, tuple(h_prev.shape), f"(..., {self.hidden_size}): the cell's hidden width H")
        return x_t, h_prev


class GRUWeights(_GatedWeights):
    """GRU weights; gates ``r, u, n`` (PyTorch ``r, z, n``)."""

    GATES = GRU_GATES
    KIND = "GRU"


class LSTMWeights(_GatedWeights):
    """LSTM weights; gates ``i, f, g, o`` (``g`` is the text's candidate ``c~``)."""

    GATES = LSTM_GATES
    KIND = "LSTM"

    def combined_bias(self, name: str):
        """The text's ``b_a = b_ih + b_hh`` of gate ``name``."""
        _, _, b_x, b_h = self.gate(name)
        return b_x + b_h


# ---------------------------------------------------------------- GRU

class GRUStep(NamedTuple):
    h: object        # h_t
    r: object        # reset gate r_t
    u: object        # update gate u_t (PyTorch z_t)
    h_tilde: object  # candidate (PyTorch n_t)
    a_n: object      # recurrent affine map h_{t-1} W_hn^T + b_hn (the reset multiplies all of it)


def _affine(x, W, b):
    return x @ _T(W) + b


def gru_step(w: GRUWeights, x_t, h_prev, gate_h=None) -> GRUStep:
    """One GRU step; the gates and candidate read ``gate_h`` (default ``h_prev``)."""
    x_t, h_prev = w._check_inputs(x_t, h_prev)
    g = h_prev if gate_h is None else w._check_inputs(x_t, gate_h, "gate_h")[1]
    W_xr, W_hr, b_xr, b_hr = w.gate("r")
    W_xu, W_hu, b_xu, b_hu = w.gate("u")
    W_xn, W_hn, b_xn, b_hn = w.gate("n")
    r = sigmoid(_affine(x_t, W_xr, b_xr) + _affine(g, W_hr, b_hr))
    u = sigmoid(_affine(x_t, W_xu, b_xu) + _affine(g, W_hu, b_hu))
    a_n = _affine(g, W_hn, b_hn)
    h_tilde = _tanh(_affine(x_t, W_xn, b_xn) + r * a_n)
    h = u * h_prev + (1.0 - u) * h_tilde
    return GRUStep(h, r, u, h_tilde, a_n)


def gru_step_reset_before(w: GRUWeights, x_t, h_prev) -> object:
    """The OTHER GRU variant (Cho et al. 2014): reset applied before W_hn, ``(r * h_{t-1}) W_hn^T + b_hn``.

    A different model from ``torch.nn.GRU``; kept to show that the convention matters.
    """
    x_t, h_prev = w._check_inputs(x_t, h_prev)
    W_xr, W_hr, b_xr, b_hr = w.gate("r")
    W_xu, W_hu, b_xu, b_hu = w.gate("u")
    W_xn, W_hn, b_xn, b_hn = w.gate("n")
    r = sigmoid(_affine(x_t, W_xr, b_xr) + _affine(h_prev, W_hr, b_hr))
    u = sigmoid(_affine(x_t, W_xu, b_xu) + _affine(h_prev, W_hu, b_hu))
    h_tilde = _tanh(_affine(x_t, W_xn, b_xn) + _affine(r * h_prev, W_hn, b_hn))
    return u * h_prev + (1.0 - u) * h_tilde


def gru_mix(u, h_prev, h_tilde):
    """The GRU's per-coordinate mix ``u h_{t-1} + (1 - u) h~_t`` (text: 0.9(0.5) + 0.1(-0.4) = 0.410)."""
    return u * h_prev + (1 - u) * h_tilde


def gru_forward(w: GRUWeights, X, h0=None) -> tuple:
    """Run the GRU over ``X`` of shape ``(T, D)`` or ``(B, T, D)`` from ``h_{-1} = h0`` (default 0).

    Returns ``(H_all, steps)``: the states ``(..., T, H)`` and the list of :class:`GRUStep`.
    """
    X = _sequence(w, X)
    h = _zeros_state(X[..., 0, :], w.hidden_size) if h0 is None else w._check_inputs(X[..., 0, :], h0, "h0")[1]
    steps = []
    for t in range(X.shape[-2]):
        step = gru_step(w, X[..., t, :], h)
        steps.append(step)
        h = step.h
    return _stack([s.h for s in steps], -2), steps


def _sequence(w, X):
    X = _array("X", X, w.weight_ih)
    if X.ndim not in (2, 3) or X.shape[-1] != w.input_size or X.shape[-2] == 0:
        raise ShapeError("X", tuple(X.shape), f"(T, {w.input_size}) or (B, T, {w.input_size}) with T >= 1")
    return X


def gru_carry_jacobian(step: GRUStep):
    """``dh_t/dh_{t-1}`` at fixed gates and candidate: ``diag(u_t)``."""
    return diag(step.u)


def gru_jacobian(w: GRUWeights, x_t, h_prev) -> tuple:
    """The full one-step Jacobian ``J[i, j] = dh_{t,i}/dh_{t-1,j}`` and its split.

    Returns ``(J, carry, gate_terms)`` with ``J = carry + gate_terms``::

        carry      = diag(u_t)
        gate_terms = diag(h_{t-1} - h~_t) diag(u(1-u)) W_hu
                   + diag(1 - u_t) diag(1 - h~^2) [diag(r_t) W_hn + diag(a_n r(1-r)) W_hr]
    """
    s = gru_step(w, x_t, h_prev)
    _, W_hr, _, _ = w.gate("r")
    _, W_hu, _, _ = w.gate("u")
    _, W_hn, _, _ = w.gate("n")
    du = diag(s.u * (1 - s.u)) @ W_hu
    dn = diag(1 - s.h_tilde ** 2) @ (diag(s.r) @ W_hn + diag(s.a_n * s.r * (1 - s.r)) @ W_hr)
    carry = diag(s.u)
    gate_terms = diag(w._check_inputs(x_t, h_prev)[1] - s.h_tilde) @ du + diag(1 - s.u) @ dn
    return carry + gate_terms, carry, gate_terms


# ---------------------------------------------------------------- LSTM

class LSTMStep(NamedTuple):
    h: object        # h_t = o_t * tanh(c_t)
    c: object        # c_t
    i: object        # input gate
    f: object        # forget gate
    c_tilde: object  # candidate (PyTorch g_t)
    o: object        # output gate (not the head's W_o)


def lstm_step(w: LSTMWeights, x_t, h_prev, c_prev, gate_h=None) -> LSTMStep:
    """One LSTM step; the gates and candidate read ``gate_h`` (default ``h_prev``)."""
    x_t, h_prev = w._check_inputs(x_t, h_prev)
    c_prev = w._check_inputs(x_t, c_prev, "c_prev")[1]
    g = h_prev if gate_h is None else w._check_inputs(x_t, gate_h, "gate_h")[1]

    def pre(name):
        W_x, W_h, _, _ = w.gate(name)
        return x_t @ _T(W_x) + g @ _T(W_h) + w.combined_bias(name)

    i, f, o = sigmoid(pre("i")), sigmoid(pre("f")), sigmoid(pre("o"))
    c_tilde = _tanh(pre("g"))
    c = f * c_prev + i * c_tilde
    return LSTMStep(o * _tanh(c), c, i, f, c_tilde, o)


def lstm_forward(w: LSTMWeights, X, h0=None, c0=None) -> tuple:
    """Run the LSTM over ``X`` (``(T, D)`` or ``(B, T, D)``) from ``h_{-1}``, ``c_{-1}`` (default 0).

    Returns ``(H_all, C_all, steps)``.
    """
    X = _sequence(w, X)
    x0 = X[..., 0, :]
    h = _zeros_state(x0, w.hidden_size) if h0 is None else w._check_inputs(x0, h0, "h0")[1]
    c = _zeros_state(x0, w.hidden_size) if c0 is None else w._check_inputs(x0, c0, "c0")[1]
    steps = []
    for t in range(X.shape[-2]):
        step = lstm_step(w, X[..., t, :], h, c)
        steps.append(step)
        h, c = step.h, step.c
    return _stack([s.h for s in steps], -2), _stack([s.c for s in steps], -2), steps


def lstm_carry_jacobian(step: LSTMStep):
    """``dc_t/dc_{t-1}`` at fixed gates and candidate: ``diag(f_t)``."""
    return diag(step.f)


def lstm_jacobian(w: LSTMWeights, x_t, h_prev, c_prev) -> tuple:
    """The full one-step Jacobian of the state ``(c_t, h_t)`` with respect to ``(c_{t-1}, h_{t-1})``.

    Returns ``(J, carry, gate_terms)``; ``J`` is ``2H x 2H`` in blocks
    ``[[dc/dc_prev, dc/dh_prev], [dh/dc_prev, dh/dh_prev]]``, ``carry`` is the
    block matrix with ``diag(f_t)`` in the top-left corner and zeros elsewhere,
    and ``gate_terms = J - carry``.  Without peepholes the gates do not read
    ``c_{t-1}``, so the top-left block IS ``diag(f_t)``; the gate terms enter
    through ``h_{t-1}``::

        dc/dh_prev = diag(c_{t-1} f(1-f)) W_hf + diag(c~ i(1-i)) W_hi + diag(i (1-c~^2)) W_hc
        dh/dc_prev = diag(o (1 - tanh^2 c_t)) diag(f_t)
        dh/dh_prev = diag(tanh(c_t) o(1-o)) W_ho + diag(o (1 - tanh^2 c_t)) dc/dh_prev
    """
    s = lstm_step(w, x_t, h_prev, c_prev)
    c_prev = w._check_inputs(x_t, c_prev, "c_prev")[1]
    W_hi = w.gate("i")[1]
    W_hf = w.gate("f")[1]
    W_hc = w.gate("g")[1]
    W_ho = w.gate("o")[1]
    tc = _tanh(s.c)
    dc_dc = diag(s.f)
    dc_dh = diag(c_prev * s.f * (1 - s.f)) @ W_hf + diag(s.c_tilde * s.i * (1 - s.i)) @ W_hi + diag(s.i * (1 - s.c_tilde ** 2)) @ W_hc
    dh_dc = diag(s.o * (1 - tc ** 2)) @ dc_dc
    dh_dh = diag(tc * s.o * (1 - s.o)) @ W_ho + diag(s.o * (1 - tc ** 2)) @ dc_dh
    J = _blocks(dc_dc, dc_dh, dh_dc, dh_dh)
    zero = dc_dc * 0
    carry = _blocks(dc_dc, zero, zero, zero)
    return J, carry, J - carry


def _blocks(a, b, c, d):
    if _is_torch(a):
        return torch.cat([torch.cat([a, b], -1), torch.cat([c, d], -1)], -2)
    return np.block([[a, b], [c, d]])
