"""Step modules written the way a PyTorch user writes them, read by :meth:`derive.cell.Cell.from_torch`.

They are the examples of docs/tutorial-torch.md and of ``seqgrad derive torch``; nothing in seqgrad
depends on them.  Each ``forward`` is one step: the input ``x`` (B, D) and the previous state(s) in,
the new state(s) out.

* :class:`ResetBeforeGRU`: a GRU variant (the reset gate applied to ``h_{t-1}`` *before* ``W_hn``, the
  original Cho et al. form; torch's ``nn.GRU`` applies it after);
* :class:`PeepholeLSTM`: an LSTM whose gates also read the cell memory (Gers and Schmidhuber), its four
  gates one ``nn.Linear`` chunked into i, f, g, o;
* :class:`MinimalGatedUnit`: one forget gate (Zhou et al. 2016), each map reading ``torch.cat([x, h])``.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["ResetBeforeGRU", "PeepholeLSTM", "MinimalGatedUnit", "gru_variant", "peephole_lstm", "minimal_gated_unit"]


class ResetBeforeGRU(nn.Module):
    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.W_r = nn.Linear(input_size + hidden_size, hidden_size)
        self.W_z = nn.Linear(input_size + hidden_size, hidden_size)
        self.W_n = nn.Linear(input_size, hidden_size)
        self.U_n = nn.Linear(hidden_size, hidden_size, bias=False)

    def forward(self, x, h):
        xh = torch.cat([x, h], dim=1)
        r = torch.sigmoid(self.W_r(xh))
        z = torch.sigmoid(self.W_z(xh))
        n = torch.tanh(self.W_n(x) + self.U_n(r * h))
        return (1 - z) * n + z * h


class PeepholeLSTM(nn.Module):
    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.W = nn.Linear(input_size, 4 * hidden_size)
        self.U = nn.Linear(hidden_size, 4 * hidden_size, bias=False)
        self.p_i = nn.Parameter(0.5 * torch.randn(hidden_size))
        self.p_f = nn.Parameter(0.5 * torch.randn(hidden_size))
        self.p_o = nn.Parameter(0.5 * torch.randn(hidden_size))

    def forward(self, x, state):
        h, c = state
        zi, zf, zg, zo = (self.W(x) + self.U(h)).chunk(4, dim=1)
        i = torch.sigmoid(zi + self.p_i * c)
        f = torch.sigmoid(zf + self.p_f * c)
        g = torch.tanh(zg)
        c_new = f * c + i * g
        o = torch.sigmoid(zo + self.p_o * c_new)
        return o * torch.tanh(c_new), c_new


class MinimalGatedUnit(nn.Module):
    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.W_f = nn.Linear(input_size + hidden_size, hidden_size)
        self.W_h = nn.Linear(input_size + hidden_size, hidden_size)

    def forward(self, x, h):
        f = torch.sigmoid(self.W_f(torch.cat([x, h], dim=1)))
        fh = f * h
        h_tilde = torch.tanh(self.W_h(torch.cat([x, fh], dim=1)))
        return (1 - f) * h + f * h_tilde


def _example(D, H, states):
    x = torch.zeros(1, D)
    h = [torch.zeros(1, H) for _ in states.split()]
    return (x, tuple(h)) if len(h) > 1 else (x, h[0])


def gru_variant(D: int = 3, H: int = 4):
    """:class:`ResetBeforeGRU` read as a cell (a zero-argument factory for ``seqgrad derive torch``)."""
    from seqgrad.derive.cell import Cell

    torch.manual_seed(1)
    m = ResetBeforeGRU(D, H)
    return Cell.from_torch(m, states="h", example=_example(D, H, "h"))


def peephole_lstm(D: int = 3, H: int = 4):
    """:class:`PeepholeLSTM` read as a cell."""
    from seqgrad.derive.cell import Cell

    torch.manual_seed(2)
    m = PeepholeLSTM(D, H)
    return Cell.from_torch(m, states="h c", example=_example(D, H, "h c"))


def minimal_gated_unit(D: int = 3, H: int = 4):
    """:class:`MinimalGatedUnit` read as a cell."""
    from seqgrad.derive.cell import Cell

    torch.manual_seed(3)
    m = MinimalGatedUnit(D, H)
    return Cell.from_torch(m, states="h", example=_example(D, H, "h"))
