"""Task heads and losses on top of the encoder (text, lines 1201-1257).

* logits ``s_t = h_enc,t W_o^T + b_o`` (per position; with C = K it is the vocabulary head);
* masked mean pooling ``h_bar = sum_t m_t h_enc,t / sum_t m_t`` (the denominator must be > 0);
* the next-token shift ``y_t = k_{t+1}`` (the last position has no target unless the record continues);
* valid-target loss averaging ``L = sum_t v_t (-log p_{t,y_t}) / sum_t v_t``, numerators and
  denominators summed over the whole batch.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from seqgrad.errors import SeqgradValueError, ShapeError

from ._params import as_tensor, parameter, random_matrix


class AffineHead(nn.Module):
    """``s_t = h_t W_o^T + b_o`` with W_o of C x D (capital-O W_O is the attention projection)."""

    def __init__(self, W_o, b_o=None, *, dtype=torch.float64, device=None):
        super().__init__()
        W = as_tensor("W_o", W_o, dtype, device)
        if W.dim() != 2:
            raise ShapeError("W_o", tuple(W.shape), "C x D (output x input)")
        self.C, self.D = W.shape
        self.W_o = parameter("W_o", W, (self.C, self.D), dtype, device)
        self.b_o = parameter("b_o", b_o if b_o is not None else torch.zeros(self.C), (self.C,), dtype, device)

    @classmethod
    def random(cls, C: int, D: int, *, seed: int = 0, dtype=torch.float64, device=None) -> "AffineHead":
        g = torch.Generator().manual_seed(seed)
        return cls(random_matrix((C, D), g, dtype), random_matrix((C,), g, dtype, 1 / D ** 0.5), dtype=dtype, device=device)

    def forward(self, H_enc: torch.Tensor) -> torch.Tensor:
        if H_enc.shape[-1] != self.D:
            raise ShapeError("H_enc", tuple(H_enc.shape), f"(..., {self.D})")
        return F.linear(H_enc, self.W_o, self.b_o)


def _indicator(name: str, m, shape: tuple, device) -> torch.Tensor:
    t = m if isinstance(m, torch.Tensor) else torch.as_tensor(m)
    if tuple(t.shape) != tuple(shape):
        raise ShapeError(name, tuple(t.shape), str(tuple(shape)))
    if not bool(((t == 0) | (t == 1)).all()):
        raise SeqgradValueError(name, "an array with entries other than 0/1", "0/1 (or boolean) indicators")
    return t.to(device)


def masked_mean_pool(H_enc: torch.Tensor, m) -> torch.Tensor:
    """Mean of the real rows only: ``sum_t m_t h_t / sum_t m_t`` over the position axis."""
    m = _indicator("m", m, H_enc.shape[:-1], H_enc.device).to(H_enc.dtype)
    count = m.sum(dim=-1, keepdim=True)
    if bool((count == 0).any()):
        raise SeqgradValueError("m", "a sequence with no real token", "at least one real position (sum_t m_t > 0)")
    return (m[..., None] * H_enc).sum(dim=-2) / count


def shift_targets(ids, valid=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Next-token targets ``y_t = k_{t+1}`` and their validity ``v_t``.

    The last position of each row has no next token in the record, so ``v`` is 0
    there (its target entry is set to 0 and never used).  ``valid`` (1 = real
    token) marks padding: a target is valid only when both t and t+1 are real.
    """
    k = ids if isinstance(ids, torch.Tensor) else torch.as_tensor(ids)
    if k.dtype.is_floating_point or k.dim() not in (1, 2) or k.shape[-1] < 1:
        raise ShapeError("ids", tuple(k.shape), "integer ids of shape (T,) or (B, T)")
    y = torch.zeros_like(k)
    y[..., :-1] = k[..., 1:]
    v = torch.ones(k.shape, dtype=torch.bool, device=k.device)
    v[..., -1] = False
    if valid is not None:
        m = _indicator("valid", valid, k.shape, k.device).bool()
        v[..., :-1] &= m[..., :-1] & m[..., 1:]
        v[..., -1] = False
    return y, v


def valid_target_loss(logits: torch.Tensor, targets, v) -> torch.Tensor:
    """``sum v_t * CE_t / sum v_t`` over every position of every sequence (line 1237).

    Cross-entropy comes from ``log_softmax`` of the logits (stable for extreme logits).
    """
    C = logits.shape[-1]
    y = (targets if isinstance(targets, torch.Tensor) else torch.as_tensor(targets)).to(logits.device)
    if y.dtype.is_floating_point or y.dtype == torch.bool:
        raise SeqgradValueError("targets", str(y.dtype), "integer class ids")
    if tuple(y.shape) != tuple(logits.shape[:-1]):
        raise ShapeError("targets", tuple(y.shape), str(tuple(logits.shape[:-1])))
    v = _indicator("v", v, y.shape, logits.device).to(logits.dtype)
    bad = v.bool() & ((y < 0) | (y >= C))
    if bool(bad.any()):
        raise SeqgradValueError("targets", int(y[bad][0]), f"class ids from 0 to {C - 1}")
    total = v.sum()
    if float(total) == 0:
        raise SeqgradValueError("v", "no valid target", "at least one valid target (sum_t v_t > 0)")
    logp = torch.log_softmax(logits, dim=-1)
    ce = -logp.gather(-1, y.clamp(0, C - 1).long()[..., None]).squeeze(-1)
    return (v * ce).sum() / total
