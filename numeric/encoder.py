"""The Transformer encoder of the course (text, lines 932-1195), pre-norm or post-norm.

Pre-norm block (line 946)::

    X = LN1(H),  B_att = MHA(X),  U = H + B_att,  R = LN2(U),  B_mlp = MLP(R),  H' = U + B_mlp

Post-norm block (line 1185): ``U = LN1(H + MHA(H))``, ``H' = LN2(U + MLP(U))``
(there X = H and R = U).  A stack of blocks ends in a final LayerNorm
(``H_enc = LN_final(H^(N))``, line 1165).

Every intermediate can be read by name: pass ``record={}`` (or call
:meth:`Encoder.trace`) and it fills with ``E_seq``, ``P``, ``H0``,
``block{l}.LN1.mean``, ``block{l}.LN1.var``, ``block{l}.X``,
``block{l}.head{i}.Q/K/V/QKt/S/A/O``, ``block{l}.C``, ``block{l}.B_att``,
``block{l}.U``, ``block{l}.LN2.mean/var``, ``block{l}.R``, ``block{l}.Z_mlp``,
``block{l}.J_mlp``, ``block{l}.B_mlp``, ``H{l+1}``, ``LN_final.mean/var`` and
``H_enc``.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from seqgrad import validate
from seqgrad.errors import NonFiniteError, SeqgradTypeError, SeqgradValueError, ShapeError

from ._params import as_tensor, parameter, random_matrix
from .attention import MultiHeadAttention, attention_mask, check_mask
from .layernorm import LayerNorm
from .positions import LearnedPositions, sinusoidal

ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


class MLP(nn.Module):
    """Position-wise ``Z = R W1^T + b1``, ``J = act(Z)``, ``B_mlp = J W2^T + b2`` (line 1021)."""

    def __init__(self, W1, b1, W2, b2, *, activation: str = "relu", dtype=torch.float64, device=None):
        super().__init__()
        self.activation = validate.choice("activation", activation, ACTIVATIONS)
        W1 = as_tensor("W1", W1, dtype, device)
        if W1.dim() != 2:
            raise ShapeError("W1", tuple(W1.shape), "F x D (output x input)")
        self.F_width, self.D = W1.shape
        self.W1 = parameter("W1", W1, (self.F_width, self.D), dtype, device)
        self.b1 = parameter("b1", b1, (self.F_width,), dtype, device)
        self.W2 = parameter("W2", W2, (self.D, self.F_width), dtype, device)
        self.b2 = parameter("b2", b2, (self.D,), dtype, device)

    def forward(self, R: torch.Tensor, record: dict | None = None, prefix: str = "") -> torch.Tensor:
        Z = F.linear(R, self.W1, self.b1)
        J = ACTIVATIONS[self.activation](Z)
        B = F.linear(J, self.W2, self.b2)
        if record is not None:
            record.update({f"{prefix}Z_mlp": Z, f"{prefix}J_mlp": J, f"{prefix}B_mlp": B})
        return B


def layer_norms(D: int, dtype, device, **given) -> list:
    """The block's LayerNorms in the order given: each one passed in checked against the width ``D``, a
    fresh one (gamma = 1, beta = 0) for each left out."""
    out = []
    for name, ln in given.items():
        ln = ln or LayerNorm(D, dtype=dtype, device=device)
        if ln.D != D:
            raise ShapeError(f"{name}.gamma", (ln.D,), f"({D},)")
        out.append(ln)
    return out


def random_stack(cls, block, K: int, D: int, n_heads: int, F_width: int, n_blocks: int, *, norm_first: bool,
                 activation: str, bias: bool, seed: int, dtype, device, **kwargs):
    """``cls`` (an encoder or decoder stack) of ``n_blocks`` random ``block`` s and a random embedding of
    ``K`` tokens, all drawn from one generator seeded with ``seed``."""
    K = validate.integer("K", K, minimum=1)
    n_blocks = validate.integer("n_blocks", n_blocks, minimum=1)
    g = torch.Generator().manual_seed(seed)
    blocks = [block.random(D, n_heads, F_width, norm_first=norm_first, activation=activation, bias=bias,
                           generator=g, dtype=dtype, device=device) for _ in range(n_blocks)]
    E = torch.randn(K, D, generator=g, dtype=torch.float64)
    return cls(E, blocks, dtype=dtype, device=device, generator=g, **kwargs)


class EncoderBlock(nn.Module):
    """One block: attention branch and MLP branch, each with a residual bypass and a LayerNorm."""

    def __init__(self, attention: MultiHeadAttention, mlp: MLP, ln1: LayerNorm | None = None, ln2: LayerNorm | None = None,
                 *, norm_first: bool = True, dtype=torch.float64, device=None):
        super().__init__()
        if mlp.D != attention.D:
            raise ShapeError("W1", (mlp.F_width, mlp.D), f"F x {attention.D} (the attention width)")
        self.D = attention.D
        self.attention, self.mlp = attention, mlp
        self.ln1, self.ln2 = layer_norms(self.D, dtype, device, ln1=ln1, ln2=ln2)
        self.norm_first = bool(norm_first)

    @classmethod
    def random(cls, D: int, n_heads: int, F_width: int, *, norm_first: bool = True, activation: str = "relu",
               bias: bool = False, generator=None, dtype=torch.float64, device=None) -> "EncoderBlock":
        """Random weights at the ``torch.nn.Linear`` default scale; LayerNorm gamma=1, beta=0."""
        D = validate.integer("D", D, minimum=1)
        F_width = validate.integer("F_width", F_width, minimum=1)
        attention = MultiHeadAttention.random(D, n_heads, bias=bias, generator=generator, dtype=dtype, device=device)
        r = lambda *shape: random_matrix(shape, generator, dtype)
        mlp = MLP(r(F_width, D), random_matrix((F_width,), generator, dtype, 1 / D ** 0.5), r(D, F_width),
                  random_matrix((D,), generator, dtype, 1 / F_width ** 0.5), activation=activation, dtype=dtype, device=device)
        return cls(attention, mlp, norm_first=norm_first, dtype=dtype, device=device)

    def forward(self, H: torch.Tensor, M: torch.Tensor | None = None, record: dict | None = None, prefix: str = "") -> torch.Tensor:
        if self.norm_first:
            X = self.ln1(H, record, f"{prefix}LN1")
            B_att = self.attention(X, M, record, prefix)
            U = H + B_att
            R = self.ln2(U, record, f"{prefix}LN2")
            B_mlp = self.mlp(R, record, prefix)
            H_next = U + B_mlp
        else:
            X = H
            B_att = self.attention(X, M, record, prefix)
            U = self.ln1(H + B_att, record, f"{prefix}LN1")
            R = U
            B_mlp = self.mlp(R, record, prefix)
            H_next = self.ln2(U + B_mlp, record, f"{prefix}LN2")
        if record is not None:
            record.update({f"{prefix}X": X, f"{prefix}U": U, f"{prefix}R": R})
        return H_next


class Encoder(nn.Module):
    """Embedding lookup, positions, a stack of blocks and an optional final LayerNorm.

    ``positions``: ``"sinusoidal"`` (default), ``"learned"`` (needs ``max_len``) or ``None``.
    ``scale_embeddings``: multiply embeddings by sqrt(D) first (off, as in the text).
    """

    def __init__(self, E_vocab, blocks: Sequence[EncoderBlock], *, positions: str | None = "sinusoidal",
                 max_len: int | None = None, scale_embeddings: bool = False, final_norm: bool = True,
                 ln_final: LayerNorm | None = None, dtype=torch.float64, device=None, generator=None):
        super().__init__()
        E = as_tensor("E_vocab", E_vocab, dtype, device)
        if E.dim() != 2:
            raise ShapeError("E_vocab", tuple(E.shape), "K x D")
        self.K, self.D = E.shape
        self.E_vocab = parameter("E_vocab", E, (self.K, self.D), dtype, device)
        if not blocks:
            raise SeqgradValueError("blocks", blocks, "at least one encoder block")
        for l, b in enumerate(blocks):
            if b.D != self.D:
                raise ShapeError(f"blocks[{l}]", (b.D,), f"blocks of width D={self.D} (the embedding width)")
        self.blocks = nn.ModuleList(blocks)
        self.positions = positions
        if positions not in ("sinusoidal", "learned", None):
            raise SeqgradValueError("positions", positions, "sinusoidal, learned or None")
        self.learned = None
        if positions == "learned":
            if max_len is None:
                raise SeqgradValueError("max_len", max_len, "an integer >= 1 when positions='learned'")
            self.learned = LearnedPositions(max_len, self.D, dtype=dtype, device=device, generator=generator)
        self.scale_embeddings = bool(scale_embeddings)
        self.ln_final = (ln_final or LayerNorm(self.D, dtype=dtype, device=device)) if final_norm else None

    @property
    def dtype(self) -> torch.dtype:
        return self.E_vocab.dtype

    @property
    def device(self) -> torch.device:
        return self.E_vocab.device

    # ------------------------------------------------------------------ inputs
    def token_ids(self, ids) -> torch.Tensor:
        """``ids`` (T or B x T integers) as a long tensor; ids outside 0..K-1 are refused."""
        if isinstance(ids, (str, bytes)):
            raise SeqgradTypeError("ids", ids, "integer token ids (for text use numeric.course.token_ids or "
                                               "a Vocabulary's encode)")
        try:
            t = ids if isinstance(ids, torch.Tensor) else torch.as_tensor(ids)
        except (TypeError, ValueError, RuntimeError):
            raise SeqgradTypeError("ids", ids, "integer token ids (T or B x T)") from None
        if t.dtype.is_floating_point or t.dtype == torch.bool or t.dtype.is_complex:
            raise SeqgradTypeError("ids", ids, "integer token ids")
        if t.dim() not in (1, 2) or t.shape[-1] == 0:
            raise ShapeError("ids", tuple(t.shape), "(T,) or (B, T) with T >= 1")
        bad = (t < 0) | (t >= self.K)
        if bool(bad.any()):
            raise SeqgradValueError("ids", int(t[bad][0]), f"token ids from 0 to {self.K - 1} (vocabulary size K={self.K})")
        # int64 indices: a uint8 (or bool) index tensor would be read by torch as a mask that selects rows
        return t.to(device=self.device, dtype=torch.long)

    def embed(self, ids, record: dict | None = None) -> torch.Tensor:
        """``H0 = E_seq (* sqrt(D)) + P`` (line 550)."""
        ids = self.token_ids(ids)
        E_seq = self.E_vocab[ids]
        if self.scale_embeddings:
            E_seq = E_seq * math.sqrt(self.D)
        T = ids.shape[-1]
        if self.positions == "sinusoidal":
            P = sinusoidal(T, self.D, dtype=self.dtype, device=self.device)
        elif self.positions == "learned":
            P = self.learned(T)
        else:
            P = torch.zeros(T, self.D, dtype=self.dtype, device=self.device)
        H0 = E_seq + P
        if record is not None:
            record.update({"E_seq": E_seq, "P": P})
        return H0

    def check_weights(self) -> None:
        """Refuse NaN or inf in any parameter (also ones set after construction)."""
        with torch.no_grad():
            for name, p in self.named_parameters():
                if not bool(torch.isfinite(p).all()):
                    raise NonFiniteError(name)

    def check_states(self, H: torch.Tensor) -> torch.Tensor:
        if not isinstance(H, torch.Tensor):
            raise SeqgradTypeError("H", type(H).__name__, "a torch tensor of shape (T, D) or (B, T, D)")
        if H.dim() not in (2, 3) or H.shape[-1] != self.D or H.shape[-2] == 0:
            raise ShapeError("H", tuple(H.shape), f"(T, {self.D}) or (B, T, {self.D})")
        if not bool(torch.isfinite(H).all()):
            raise NonFiniteError("H")
        return H.to(dtype=self.dtype, device=self.device)

    def masks(self, T: int, causal, padding, exclude) -> list[torch.Tensor | None]:
        """One additive mask per block; ``causal`` may be one flag or one flag per block."""
        flags = [causal] * len(self.blocks) if isinstance(causal, bool) else list(causal)
        if len(flags) != len(self.blocks) or not all(isinstance(f, bool) for f in flags):
            raise SeqgradValueError("causal", causal, f"True/False or a list of {len(self.blocks)} flags (one per block)")
        cache = {}
        out = []
        for f in flags:
            if f not in cache:
                cache[f] = attention_mask(T, causal=f, padding=padding, exclude=exclude, dtype=self.dtype, device=self.device)
            out.append(cache[f])
        return out

    # ------------------------------------------------------------------ forward
    def encode(self, H0: torch.Tensor, *, causal=False, padding=None, exclude=None, mask=None,
               record: dict | None = None) -> torch.Tensor:
        """Run the stack on given input states ``H0`` (T x D or B x T x D)."""
        self.check_weights()
        H = self.check_states(H0)
        T = H.shape[-2]
        if mask is not None:
            check_mask(mask, T)
            Ms = [mask.to(dtype=self.dtype, device=self.device)] * len(self.blocks)
        else:
            Ms = self.masks(T, causal, padding, exclude)
        if record is not None:
            record["H0"] = H
        for l, (block, M) in enumerate(zip(self.blocks, Ms)):
            H = block(H, M, record, f"block{l}.")
            if record is not None:
                record[f"H{l + 1}"] = H
        if self.ln_final is not None:
            H = self.ln_final(H, record, "LN_final")
        if record is not None:
            record["H_enc"] = H
        if not bool(torch.isfinite(H).all()):
            raise NonFiniteError("weights", "the encoder output is not finite: check the weights for NaN or inf")
        return H

    def forward(self, ids, *, causal=False, padding=None, exclude=None, mask=None, record: dict | None = None) -> torch.Tensor:
        """``H_enc`` for token ids (T or B x T)."""
        self.check_weights()
        H0 = self.embed(ids, record)
        return self.encode(H0, causal=causal, padding=padding, exclude=exclude, mask=mask, record=record)

    def trace(self, ids, **kwargs) -> dict[str, torch.Tensor]:
        """Every named intermediate of one forward pass (see the module docstring)."""
        record: dict[str, torch.Tensor] = {}
        self.forward(ids, record=record, **kwargs)
        return record

    @classmethod
    def random(cls, K: int, D: int, n_heads: int, F_width: int, n_blocks: int = 1, *, norm_first: bool = True,
               activation: str = "relu", bias: bool = False, seed: int = 0, dtype=torch.float64, device=None, **kwargs) -> "Encoder":
        """An encoder with random weights (for tests, checks and benchmarks)."""
        return random_stack(cls, EncoderBlock, K, D, n_heads, F_width, n_blocks, norm_first=norm_first,
                            activation=activation, bias=bias, seed=seed, dtype=dtype, device=device, **kwargs)
