"""The course's worked example, built in: "a journey of a thousand miles begins".

T = 7 tokens, a 9-word vocabulary, D = 5, two heads of width 3, F = 4, ReLU,
no attention biases, no sqrt(D) embedding scale, every LayerNorm with
gamma = 1, beta = 0, eps = 1e-5 (text, lines 466-1167; parameters in the spec
digest section 3.4).  :func:`trace` returns every named intermediate of the
text's two walk-throughs: ``"attention_on_H0"`` (two heads read H0 directly,
Tables 10-20) and ``"prenorm_block"`` (one pre-norm block plus the final
LayerNorm, Tables 23-31).
"""

from __future__ import annotations

import torch

from seqgrad import validate
from seqgrad.errors import SeqgradValueError

from .attention import Head, MultiHeadAttention, attention_mask, contributions
from .device import resolve_device, resolve_dtype
from .encoder import MLP, Encoder, EncoderBlock
from .tokens import Vocabulary

TEXT = "a journey of a thousand miles begins"
VOCAB = Vocabulary(("a", "journey", "of", "thousand", "miles", "begins", "with", "single", "step"))

# Table 8 (line 503): one row per vocabulary id
E_VOCAB = [
    [0.2, -0.1, 0.4, 0, -0.2],
    [0.5, 0.3, -0.2, 0.1, 0.4],
    [-0.1, 0.2, 0, -0.3, 0.1],
    [0.4, -0.4, 0.2, 0.5, -0.1],
    [0.1, 0.5, -0.3, 0.2, 0.3],
    [-0.3, 0.1, 0.5, -0.2, 0.2],
    [0, -0.2, 0.1, 0.3, -0.4],
    [0.3, 0, -0.1, 0.4, 0.2],
    [-0.2, 0.4, 0.3, -0.1, 0.5],
]

# Head 1 (lines 620-622, printed as transposes; stored here output x input)
HEAD1 = dict(
    W_Q=[[1, 0, 0, 0, 0], [0, 1, 0, 0, 0], [0, 0, 1, 0, 0]],
    W_K=[[0.5, 0, 0, 0.5, 0], [0, 1, 0, 0, 0], [0, 0, 0.5, 0, 0.5]],
    W_V=[[1, 0, 0, 0, 0], [0, 0, 1, 0, 0], [0, 0, 0, 0.5, 0.5]],
)
# Head 2 (lines 821-823, printed as stored)
HEAD2 = dict(
    W_Q=[[0, 0, 0, 1, 0], [0, 0, 0, 0, 1], [0.5, 0.5, 0, 0, 0]],
    W_K=[[0, 0, 0, 1, 0], [0, 0, 1, 0, 0], [0, 0.5, 0, 0, 0.5]],
    W_V=[[0, 1, 0, 0, 0], [0, 0, 0, 1, 0], [0.5, 0, 0, 0, 0.5]],
)
# Output projection (line 890), 5 x 6
W_O = [
    [1, 0, 0, 0.5, 0, 0],
    [0, 1, 0, 0, 0.5, 0],
    [0, 0, 1, 0, 0, 0.5],
    [0.5, 0, 0, 0, 1, 0],
    [0, 0.5, 0, 1, 0, 0],
]
# MLP (lines 1027-1033)
W1 = [[1, 0, -0.5, 0, 0], [0, 1, 0, 0, -0.5], [0, 0, 1, 0.5, 0], [0.5, 0, 0, 0, 1]]
b1 = [0.1, -0.2, 0.15, 0.05]
W2 = [[0.5, 0, 0.2, 0], [0, 0.5, 0, 0.2], [0.2, 0, 0.5, 0], [0, 0.2, 0, 0.5], [0.3, 0, 0, 0.3]]
b2 = [0.05, -0.05, 0, 0.1, -0.1]

STAGES = ("attention_on_H0", "prenorm_block")

#: size guard on the phrase of :func:`trace`: the trace keeps T x T x d_v contributions per head, so
#: its size grows as T^2 (5,000 characters once wrote 546 MB of JSON); at this many words every output
#: form of ``seqgrad encoder`` takes a few seconds and well under 1 GB (docs/limits.md)
MAX_WORDS = 256


def attention(*, device="cpu", dtype="float64") -> MultiHeadAttention:
    """The course's two-head attention (5 -> 3 per head, 6 -> 5 output map)."""
    dev, dt = resolve_device(device), resolve_dtype(dtype)
    heads = [Head(**HEAD1, dtype=dt, device=dev), Head(**HEAD2, dtype=dt, device=dev)]
    return MultiHeadAttention(heads, W_O, dtype=dt, device=dev)


def encoder(*, norm_first: bool = True, activation: str = "relu", device="cpu", dtype="float64") -> Encoder:
    """The course's one-block encoder with its final LayerNorm."""
    dev, dt = resolve_device(device), resolve_dtype(dtype)
    mlp = MLP(W1, b1, W2, b2, activation=activation, dtype=dt, device=dev)
    block = EncoderBlock(attention(device=dev, dtype=dt), mlp, norm_first=norm_first, dtype=dt, device=dev)
    return Encoder(E_VOCAB, [block], dtype=dt, device=dev)


def token_ids(text: str | None = None) -> list[int]:
    """Token ids of ``text`` (default: the course phrase) under the course vocabulary, at most
    :data:`MAX_WORDS` of them."""
    text = TEXT if text is None else text
    if isinstance(text, str) and len(text) > 64 * MAX_WORDS:  # refuse a huge string before splitting it
        raise SeqgradValueError("text", text, f"at most {MAX_WORDS} words (the size guard of the course example)")
    ids = VOCAB.encode(text)
    if len(ids) > MAX_WORDS:
        raise SeqgradValueError("text", f"{len(ids)} words", f"at most {MAX_WORDS} words (the size guard of the "
                                                             "course example, numeric.course.MAX_WORDS)")
    return ids


def trace(stage: str = "prenorm_block", text: str | None = None, *, device="cpu", dtype="float64") -> dict[str, torch.Tensor]:
    """Every named intermediate of one of the text's walk-throughs.

    ``attention_on_H0``: ``E_seq``, ``P``, ``H0``, per head ``head{i}.Q/K/V/QKt/S/A/O``,
    ``head{i}.contrib`` (``A_tj v_j``, T x T x d_v), the causal variants
    ``head{i}.A_causal`` and ``head{i}.O_causal``, ``C`` and ``B_att``.
    ``prenorm_block``: the names of :class:`numeric.encoder.Encoder` for one block.
    """
    validate.choice("stage", stage, STAGES)
    ids = token_ids(text)
    enc = encoder(device=device, dtype=dtype)
    with torch.no_grad():
        if stage == "prenorm_block":
            return enc.trace(ids)
        record: dict[str, torch.Tensor] = {}
        H0 = enc.embed(ids, record)
        record["H0"] = H0
        mha = enc.blocks[0].attention
        mha(H0, None, record)
        causal: dict[str, torch.Tensor] = {}
        M = attention_mask(len(ids), causal=True, dtype=H0.dtype, device=H0.device)
        mha(H0, M, causal)
        for i in range(1, len(mha.heads) + 1):
            record[f"head{i}.contrib"] = contributions(record[f"head{i}.A"], record[f"head{i}.V"])
            record[f"head{i}.A_causal"] = causal[f"head{i}.A"]
            record[f"head{i}.O_causal"] = causal[f"head{i}.O"]
        return record
