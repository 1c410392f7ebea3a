"""Turn user-supplied weights into checked ``nn.Parameter`` objects."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from seqgrad.errors import NonFiniteError, SeqgradTypeError, ShapeError


def as_tensor(name: str, value, dtype, device) -> torch.Tensor:
    """``value`` (nested lists, numpy or torch) as a finite tensor of ``dtype`` on ``device``."""
    try:
        if isinstance(value, torch.Tensor):
            t = value.detach().to(dtype=dtype, device=device)
        else:
            t = torch.as_tensor(np.asarray(value, dtype=np.float64), dtype=dtype, device=device)
    except (TypeError, ValueError) as exc:
        raise SeqgradTypeError(name, value, f"a numeric array ({exc})") from None
    if not bool(torch.isfinite(t).all()):
        raise NonFiniteError(name)
    return t


def parameter(name: str, value, shape: tuple, dtype, device) -> nn.Parameter:
    """A checked parameter: finite, of exactly ``shape``."""
    t = as_tensor(name, value, dtype, device)
    if tuple(t.shape) != tuple(shape):
        raise ShapeError(name, tuple(t.shape), " x ".join(str(s) for s in shape) + " (output x input)" * (len(shape) == 2))
    return nn.Parameter(t.clone())


def random_matrix(shape: tuple, generator: torch.Generator | None, dtype, scale: float | None = None) -> torch.Tensor:
    """Uniform(-a, a) with ``a = 1/sqrt(fan_in)`` (the torch.nn.Linear default scale)."""
    fan_in = shape[-1]
    a = scale if scale is not None else 1.0 / fan_in ** 0.5
    return (torch.rand(*shape, generator=generator, dtype=torch.float64) * 2 - 1).mul_(a).to(dtype)
