"""Position information added to the token embeddings.

Sinusoidal (text, line 530): ``omega_j = 10000^(-2 floor(j/2) / D)``,
``P[t, j] = sin(t omega_j)`` for even j and ``cos(t omega_j)`` for odd j.  An
odd width D leaves one unpaired sine coordinate.  Learned positions are a
trainable table of rows instead.
"""

from __future__ import annotations

import torch
from torch import nn

from seqgrad import validate
from seqgrad.errors import SeqgradValueError

#: size guard: the most entries T x D of a sinusoidal table (2^24: 128 MiB in float64; with the
#: angle, sine and cosine temporaries about 0.5 GiB and well under a second; docs/limits.md)
MAX_ENTRIES = 2**24


def frequencies(D: int, base: float = 10000.0, *, dtype=torch.float64, device=None) -> torch.Tensor:
    """``omega_j = base^(-2 floor(j/2) / D)`` for j = 0..D-1 (radians per position)."""
    D = validate.integer("D", D, minimum=1)
    base = validate.real("base", base, positive=True)
    j = torch.arange(D, dtype=dtype, device=device)
    return base ** (-2 * torch.div(j, 2, rounding_mode="floor") / D)


def sinusoidal(T: int, D: int, base: float = 10000.0, *, dtype=torch.float64, device=None) -> torch.Tensor:
    """The T x D sinusoidal encoding P: sine on even coordinates, cosine on odd ones."""
    T = validate.integer("T", T, minimum=1)
    D = validate.integer("D", D, minimum=1)
    if T * D > MAX_ENTRIES:
        raise SeqgradValueError("T x D", f"{T} x {D}", f"at most {MAX_ENTRIES} entries (the size guard of "
                                "numeric.positions.MAX_ENTRIES; compute rows in slices for longer tables)")
    omega = frequencies(D, base, dtype=dtype, device=device)
    t = torch.arange(T, dtype=dtype, device=device)[:, None]
    angle = t * omega
    even = (torch.arange(D, device=device) % 2 == 0)
    return torch.where(even, torch.sin(angle), torch.cos(angle))


class LearnedPositions(nn.Module):
    """A trainable table of ``max_len`` position rows; position t reads row t."""

    def __init__(self, max_len: int, D: int, *, dtype=torch.float64, device=None, generator=None):
        super().__init__()
        self.max_len = validate.integer("max_len", max_len, minimum=1)
        D = validate.integer("D", D, minimum=1)
        if self.max_len * D > MAX_ENTRIES:
            raise SeqgradValueError("max_len x D", f"{self.max_len} x {D}",
                                    f"at most {MAX_ENTRIES} entries (numeric.positions.MAX_ENTRIES)")
        table = torch.randn(self.max_len, D, dtype=dtype, generator=generator) * 0.02
        self.table = nn.Parameter(table.to(device))

    def forward(self, T: int) -> torch.Tensor:
        T = validate.integer("T", T, minimum=1, maximum=self.max_len)
        return self.table[:T]
