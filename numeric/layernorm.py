"""LayerNorm over the features of each row (text, lines 971-975).

``mu_t = mean_c h_tc``, ``sigma_t^2 = mean_c (h_tc - mu_t)^2`` (population
variance), ``LN(h_t)_c = gamma_c (h_tc - mu_t) / sqrt(sigma_t^2 + eps) + beta_c``.
No statistic crosses rows or a batch.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from seqgrad import validate
from seqgrad.errors import SeqgradTypeError

from ._params import parameter


def layer_norm(H: torch.Tensor, gamma=None, beta=None, eps: float = 1e-5):
    """Return ``(LN(H), mu, sigma^2)``; ``mu`` and ``sigma^2`` have one entry per row."""
    if not isinstance(H, torch.Tensor) or not H.is_floating_point() or H.dim() < 1 or H.shape[-1] == 0:
        raise SeqgradTypeError("H", type(H).__name__ if not isinstance(H, torch.Tensor) else tuple(H.shape),
                               "a floating-point tensor with at least one feature in its last dimension")
    eps = validate.real("eps", eps, positive=True)
    mu = H.mean(dim=-1, keepdim=True)
    var = ((H - mu) ** 2).mean(dim=-1, keepdim=True)
    Y = (H - mu) / torch.sqrt(var + eps)
    if gamma is not None:
        Y = Y * gamma
    if beta is not None:
        Y = Y + beta
    return Y, mu.squeeze(-1), var.squeeze(-1)


class LayerNorm(nn.Module):
    """One LayerNorm with its own ``gamma`` (default ones) and ``beta`` (default zeros)."""

    def __init__(self, D: int, *, eps: float = 1e-5, gamma=None, beta=None, dtype=torch.float64, device=None):
        super().__init__()
        self.D = validate.integer("D", D, minimum=1)
        self.eps = validate.real("eps", eps, positive=True)
        self.gamma = parameter("gamma", gamma if gamma is not None else torch.ones(D), (D,), dtype, device)
        self.beta = parameter("beta", beta if beta is not None else torch.zeros(D), (D,), dtype, device)

    def forward(self, H: torch.Tensor, record: dict | None = None, name: str = "LN") -> torch.Tensor:
        if record is None:
            return F.layer_norm(H, (self.D,), self.gamma, self.beta, self.eps)
        Y, mu, var = layer_norm(H, self.gamma, self.beta, self.eps)
        record[f"{name}.mean"] = mu
        record[f"{name}.var"] = var
        return Y
