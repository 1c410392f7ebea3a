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


def global_norm(grads: Sequence) -> float:
    """``||g||_2`` of all gradients flattened and concatenated."""
    arrays = _arrays(grads)
    return math.sqrt(sum(float(np.sum(np.square(a, dtype=np.float64))) for a in arrays))


def clip_global_norm(grads: Sequence, tau: float, eps: float = 0.0) -> Clipped:
    """Clip the list ``grads`` (numpy arrays or torch tensors) to global norm ``tau``; nothing is modified in place."""
    tau = validate.real("tau", tau, positive=True)
    eps = validate.real("eps", eps, nonnegative=True)
    arrays = _arrays(grads)
    norm = global_norm(arrays)
    coefficient = min(1.0, tau / (norm + eps)) if norm > 0 else 1.0
    if coefficient >= 1.0:
        clipped = [g.clone() if isinstance(g, torch.Tensor) else np.array(g, copy=True) for g in grads]
        return Clipped(clipped, norm, 1.0)
    return Clipped([g * coefficient for g in grads], norm, coefficient)


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
