"""LayerNorm over the features of each row (text, lines 971-975).

``mu_t = mean_c h_tc``, ``sigma_t^2 = mean_c (h_tc - mu_t)^2`` (population
variance), ``LN(h_t)_c = gamma_c (h_tc - mu_t) / sqrt(sigma_t^2 + eps) + beta_c``.
No statistic crosses rows or a batch.

Extreme magnitudes (the scaling trick).  For any ``s > 0``,
``(h - mu) / sqrt(sigma^2 + eps) = (h/s - mu/s) / sqrt(sigma^2/s^2 + eps/s^2)``
exactly.  With ``s_t = max(1, max_c |h_tc|)`` the scaled row has entries in
[-1, 1], so neither the mean nor the squares can overflow (rows already small
are left as they are, so ``eps/s^2`` never overflows): ``layer_norm`` always works
on the scaled row (``s`` is a constant of the formula, so autograd's
derivative is the exact one).  The fused :class:`LayerNorm` path
(:func:`torch.nn.functional.layer_norm`) is used while the entries are small
enough for its squares not to overflow, and the same scaled formula beyond.
Both paths give ``LN([1e200, -1e200, 0, 0]) = [1.41, -1.41, 0, 0]``.  The
returned ``sigma^2`` is ``s^2`` times the scaled variance, which is ``inf``
only where the true variance exceeds the largest number of the dtype.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from seqgrad import validate
from seqgrad.errors import NonFiniteError, SeqgradTypeError, SeqgradValueError, ShapeError

from ._params import parameter


def check_eps(eps: float, dtype: torch.dtype) -> float:
    """``eps`` as a float: finite, > 0 and not below the smallest normal number of ``dtype``
    (a smaller eps rounds to 0 or loses precision there, and a constant row would give 0/0)."""
    eps = validate.real("eps", eps, positive=True)
    tiny = torch.finfo(dtype).tiny
    if eps < tiny:
        raise SeqgradValueError("eps", eps, f"a number >= {tiny:.3g} (the smallest normal {str(dtype)[6:]}; "
                                            "a smaller eps is 0 in that precision)")
    return eps


def check_input(H, D: int | None = None, dtype: torch.dtype | None = None, device=None) -> torch.Tensor:
    """Refuse anything but a finite floating-point tensor whose last dimension is ``D``."""
    if not isinstance(H, torch.Tensor) or not H.is_floating_point():
        raise SeqgradTypeError("H", type(H).__name__ if not isinstance(H, torch.Tensor) else H.dtype,
                               "a floating-point torch tensor (..., D)")
    if H.dim() < 1 or H.shape[-1] == 0 or (D is not None and H.shape[-1] != D):
        raise ShapeError("H", tuple(H.shape), f"(..., {D if D is not None else 'D'}) with D >= 1")
    if dtype is not None and H.dtype != dtype:
        raise SeqgradTypeError("H", H.dtype, f"a tensor of dtype {dtype} (the LayerNorm's)")
    if device is not None and H.device != torch.device(device):
        raise SeqgradValueError("H", f"a tensor on {H.device}", f"a tensor on {device} (the LayerNorm's device)")
    return H


def magnitude(H: torch.Tensor) -> float:
    """``max |H|`` (one device sync); NaN or inf anywhere is refused."""
    a = float(H.detach().abs().amax()) if H.numel() else 0.0
    if not math.isfinite(a):
        raise NonFiniteError("H")
    return a


def layer_norm(H: torch.Tensor, gamma=None, beta=None, eps: float = 1e-5):
    """Return ``(LN(H), mu, sigma^2)``; ``mu`` and ``sigma^2`` have one entry per row.

    Finite for every finite ``H`` (the scaling trick of the module docstring)."""
    H = check_input(H)
    eps = check_eps(eps, H.dtype)
    magnitude(H)
    s = H.detach().abs().amax(dim=-1, keepdim=True).clamp(min=1.0)  # scale large rows down, never small ones up
    u = H / s
    mu_u = u.mean(dim=-1, keepdim=True)
    c = u - mu_u
    var_u = (c**2).mean(dim=-1, keepdim=True)
    # a constant row (var = 0) is (h - mu) / sqrt(eps) exactly, also where eps / s^2 underflows to 0;
    # written in h itself (mean of h/D: no overflow) so that its derivative (I - 1/D)/sqrt(eps) has no
    # huge intermediate factor s/sqrt(eps)
    varying = var_u > 0
    safe = torch.where(varying, var_u + eps / s**2, torch.ones_like(var_u))  # no 1/sqrt(0) in either branch
    constant_row = (H - (H / H.shape[-1]).sum(dim=-1, keepdim=True)) / eps**0.5
    Y = torch.where(varying, c / torch.sqrt(safe), constant_row)
    if gamma is not None:
        Y = Y * gamma
    if beta is not None:
        Y = Y + beta
    return Y, (mu_u * s).squeeze(-1), (var_u * s**2).squeeze(-1)


def fused_limit(dtype: torch.dtype, D: int) -> float:
    """The largest ``max |h|`` for which ``F.layer_norm``'s sums of squares cannot overflow."""
    return (torch.finfo(dtype).max / (4.0 * D)) ** 0.5 / 4.0


class LayerNorm(nn.Module):
    """One LayerNorm with its own ``gamma`` (default ones) and ``beta`` (default zeros)."""

    def __init__(self, D: int, *, eps: float = 1e-5, gamma=None, beta=None, dtype=torch.float64, device=None):
        super().__init__()
        self.D = validate.integer("D", D, minimum=1)
        self.eps = check_eps(eps, dtype)
        self.gamma = parameter("gamma", gamma if gamma is not None else torch.ones(D), (D,), dtype, device)
        self.beta = parameter("beta", beta if beta is not None else torch.zeros(D), (D,), dtype, device)

    def forward(self, H: torch.Tensor, record: dict | None = None, name: str = "LN") -> torch.Tensor:
        check_input(H, self.D, self.gamma.dtype, self.gamma.device)
        if record is None and magnitude(H) <= fused_limit(H.dtype, self.D):
            return F.layer_norm(H, (self.D,), self.gamma, self.beta, self.eps)
        Y, mu, var = layer_norm(H, self.gamma, self.beta, self.eps)
        if record is not None:
            record[f"{name}.mean"] = mu
            record[f"{name}.var"] = var
        return Y
