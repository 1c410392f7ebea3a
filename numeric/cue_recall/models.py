"""The three models of the week-06 practicum (seed 000, line 1289), as the text describes them.

* RNN: embedding 7 x 16, a tanh ``torch.nn.RNN`` of hidden width 32, head 32 -> 7;
* GRU: embedding 7 x 16, a ``torch.nn.GRU`` of hidden width 17, head 17 -> 7;
* Transformer: one causal pre-norm block of the project's numeric encoder
  (:class:`numeric.encoder.Encoder`, :class:`~numeric.attention.MultiHeadAttention`,
  :class:`~numeric.layernorm.LayerNorm`) with embedding width 12, learned positions
  (one row per input position, ``d + 4``), 2 heads of width 6 with biases, a ReLU MLP of
  width 24, a final LayerNorm, then the head 12 -> 7.

Every head is :class:`numeric.heads.AffineHead`.  Each module draws its initial values from its own
stream (:func:`streams`): the run's seed is split by :class:`numpy.random.SeedSequence` into one
independent child per module (embedding, recurrent layer, block, positions, head), so no two
parameter tensors start from the same random numbers, and building a model leaves torch's global
generator as it was.  The recurrent cells are
``torch.nn`` modules (one fused kernel per sequence, no per-token Python loop in
training); :mod:`numeric.gated` and :mod:`numeric.paths` read their weights for the
gradient-path analysis.  The printed parameter counts are 1,943 / 2,023 / 1,915; the
counts of these built modules are :func:`parameter_count`.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from seqgrad import validate

from ..encoder import Encoder, EncoderBlock
from ..heads import AffineHead
from . import task

MODELS = ("rnn", "gru", "transformer")
LABELS = {"rnn": "RNN", "gru": "GRU", "transformer": "Transformer"}
EMBEDDING = {"rnn": 16, "gru": 16, "transformer": 12}
HIDDEN = {"rnn": 32, "gru": 17}
HEADS, HEAD_WIDTH, MLP_WIDTH = 2, 6, 24
PRINTED_PARAMETERS = {"rnn": 1943, "gru": 2023, "transformer": 1915}  # line 1289
STREAMS = ("embedding", "recurrent", "block", "positions", "head")  # one initialisation stream per module
INITIALISATION = "SeedSequence(seed).spawn(5): one stream per module"  # recorded in every run's configuration


def streams(seed: int) -> dict[str, int]:
    """The torch seed of every module's initialisation stream, from the run's ``seed``.

    ``SeedSequence(seed).spawn`` gives one independent child per name of :data:`STREAMS` (in that
    fixed order, so a stream does not depend on which modules a model has)."""
    seed = validate.integer("seed", seed, minimum=0)
    children = np.random.SeedSequence(seed).spawn(len(STREAMS))
    return {name: int(child.generate_state(1, np.uint64)[0]) for name, child in zip(STREAMS, children)}


def generator(seed: int, stream: str) -> torch.Generator:
    """A fresh ``torch.Generator`` on the stream ``stream`` of the run's ``seed``."""
    return torch.Generator().manual_seed(streams(seed)[validate.choice("stream", stream, STREAMS)])


def _on_stream(seed: int, stream: str, build):
    """``build()`` with torch's global generator on the given stream (``torch.nn`` modules draw from
    it), restored afterwards."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(streams(seed)[stream])
        return build()


class RecurrentModel(nn.Module):
    """Embedding, one recurrent layer (``nn.RNN`` with tanh or ``nn.GRU``), head at every position."""

    def __init__(self, kind: str, *, seed: int, dtype=torch.float32, device=None):
        super().__init__()
        self.kind = validate.choice("model", kind, ("rnn", "gru"))
        D, H = EMBEDDING[kind], HIDDEN[kind]
        layer = nn.RNN if kind == "rnn" else nn.GRU
        # drawn on the CPU (the same initial values on every device), then moved
        self.embedding = _on_stream(seed, "embedding", lambda: nn.Embedding(task.K, D, dtype=dtype)).to(device)
        self.cell = _on_stream(seed, "recurrent", lambda: layer(D, H, batch_first=True, dtype=dtype)).to(device)
        self.head = AffineHead.random(task.K, H, seed=streams(seed)["head"], dtype=dtype, device=device)

    def states(self, inputs: torch.Tensor) -> torch.Tensor:
        """``h_t`` for every position, ``(n, T, H)``."""
        return self.cell(self.embedding(inputs))[0]

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.head(self.states(inputs))


class TransformerModel(nn.Module):
    """One causal pre-norm block of :class:`numeric.encoder.Encoder`, learned positions, head."""

    kind = "transformer"

    def __init__(self, delay: int, *, seed: int, dtype=torch.float32, device=None):
        super().__init__()
        D = EMBEDDING["transformer"]
        block = EncoderBlock.random(D, HEADS, MLP_WIDTH, bias=True, generator=generator(seed, "block"), dtype=dtype,
                                    device=device)
        assert all(h.d_k == HEAD_WIDTH and h.d_v == HEAD_WIDTH for h in block.attention.heads)
        E_vocab = torch.randn(task.K, D, generator=generator(seed, "embedding"), dtype=torch.float64)
        self.encoder = Encoder(E_vocab, [block], positions="learned", max_len=task.input_length(delay),
                               final_norm=True, dtype=dtype, device=device, generator=generator(seed, "positions"))
        self.head = AffineHead.random(task.K, D, seed=streams(seed)["head"], dtype=dtype, device=device)

    def forward(self, inputs: torch.Tensor, record: dict | None = None) -> torch.Tensor:
        return self.head(self.encoder(inputs, causal=True, record=record))


def build(model: str, delay: int, seed: int, *, dtype=torch.float32, device=None) -> nn.Module:
    """The model ``rnn``, ``gru`` or ``transformer`` for delay ``delay``, initialised from ``seed``."""
    model = validate.choice("model", model, MODELS)
    delay = validate.integer("delay", delay, minimum=1)
    seed = validate.integer("seed", seed, minimum=0)
    if model == "transformer":
        return TransformerModel(delay, seed=seed, dtype=dtype, device=device)
    return RecurrentModel(model, seed=seed, dtype=dtype, device=device)


def parameter_count(model: str, delay: int = 32) -> int:
    """Number of trainable scalars of the built model (the Transformer's depends on the delay:
    its position table has ``d + 4`` rows)."""
    return sum(p.numel() for p in build(model, delay, 0).parameters() if p.requires_grad)


def parameter_breakdown(model: str, delay: int = 32) -> dict[str, int]:
    """Scalars per named parameter of the built model."""
    return {name: p.numel() for name, p in build(model, delay, 0).named_parameters()}
