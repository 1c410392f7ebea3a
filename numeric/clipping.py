"""Global-norm gradient clipping (text L356–360), as a pure function.

``g`` is every parameter gradient flattened and concatenated; with threshold ``tau > 0``::

    g_clip = g                    if ||g||_2 <= tau
           = tau * g / ||g||_2    if ||g||_2 >  tau

Properties (tested): the direction is kept (cosine 1), a clipped gradient has
norm exactly ``tau``, a gradient already inside the ball (a zero gradient
included) is returned unchanged, and with plain gradient descent the update
``-eta g_clip`` is at most ``eta tau`` long.

``torch.nn.utils.clip_grad_norm_`` computes ``coef = tau / (||g|| + 1e-6)``
clamped to 1; ``eps=1e-6`` reproduces it exactly, ``eps=0`` (the default) is
the text's formula.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Sequence

import numpy as np
import torch

from seqgrad import validate
from seqgrad.errors import NonFiniteError, SeqgradTypeError, SeqgradValueError

TORCH_EPS = 1e-6  # the constant inside torch.nn.utils.clip_grad_norm_


class Clipped(NamedTuple):
    grads: list          # the clipped gradients, same kinds and shapes as the input
    total_norm: float    # ||g||_2 before clipping
    coefficient: float   # the factor every gradient was multiplied by (1 when unchanged)


def _scaled_norm(arrays: list[np.ndarray]) -> tuple[float, float]:
    """``(m, r)`` with ``||g||_2 = m r``: ``m = max |g_i|`` and ``r = ||g / m||_2`` (in [1, sqrt(n)]),
    so that no square overflows or underflows (as LAPACK's ``dnrm2``)."""
    m = max((float(np.max(np.abs(a))) for a in arrays if a.size), default=0.0)
    if m == 0.0:
        return 0.0, 0.0
    return m, math.sqrt(sum(float(np.sum(np.square(a / m))) for a in arrays))


def global_norm(grads: Sequence) -> float:
    """``||g||_2`` of all gradients flattened and concatenated (computed without overflow;
    ``inf`` only when the norm itself exceeds the largest float64)."""
    m, r = _scaled_norm(_arrays(grads))
    return m * r


def clip_global_norm(grads: Sequence, tau: float, eps: float = 0.0) -> Clipped:
    """Clip the list ``grads`` (numpy arrays or torch tensors) to global norm ``tau``; nothing is modified in place.

    Gradients whose norm overflows float64 are still clipped correctly: they are scaled by
    ``tau / r`` after division by ``m`` (see :func:`_scaled_norm`), never multiplied by a
    coefficient that rounded to 0."""
    tau = validate.real("tau", tau, positive=True)
    eps = validate.real("eps", eps, nonnegative=True)
    m, r = _scaled_norm(_arrays(grads))
    norm = m * r
    coefficient = min(1.0, tau / (norm + eps)) if norm > 0 else 1.0
    if coefficient >= 1.0:
        clipped = [g.clone() if isinstance(g, torch.Tensor) else np.array(g, copy=True) for g in grads]
        return Clipped(clipped, norm, 1.0)
    if coefficient > 0.0 and math.isfinite(norm):
        return Clipped([g * coefficient for g in grads], norm, coefficient)
    # the norm (or the coefficient) is beyond float64: eps is negligible there, g_clip = (g/m) (tau/r)
    return Clipped([(g / m) * (tau / r) for g in grads], norm, coefficient)


def _arrays(grads: Sequence) -> list[np.ndarray]:
    if isinstance(grads, (np.ndarray, torch.Tensor)) or not isinstance(grads, (list, tuple)):
        raise SeqgradTypeError("grads", grads, "a list of gradient arrays or tensors (one per parameter)")
    if not grads:
        raise SeqgradValueError("grads", grads, "at least one gradient")
    out = []
    for k, g in enumerate(grads):
        if isinstance(g, torch.Tensor):
            a = g.detach().cpu().double().numpy()
        elif isinstance(g, np.ndarray) and g.dtype.kind in "iuf":
            a = g.astype(np.float64, copy=False)
        else:
            raise SeqgradTypeError(f"grads[{k}]", g, "a numpy array or torch tensor of real numbers")
        if not np.all(np.isfinite(a)):
            raise NonFiniteError(f"grads[{k}]")
        out.append(a)
    return out
