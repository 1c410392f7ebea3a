"""The Transformer decoder and the encoder-decoder model (seed 001 l.160-188; seed 004 "Decoder").

Decoder block, pre-norm (as ``torch.nn.TransformerDecoderLayer(norm_first=True)``)::

    X1 = LN1(H),  B_self  = MHA_self(X1; M_self),            U1 = H  + B_self
    X2 = LN2(U1), B_cross = MHA_cross(X2, H_enc; M_cross),   U2 = U1 + B_cross
    R  = LN3(U2), B_mlp   = MLP(R),                          H' = U2 + B_mlp

Post-norm: ``U1 = LN1(H + MHA_self(H))``, ``U2 = LN2(U1 + MHA_cross(U1, H_enc))``,
``H' = LN3(U2 + MLP(U2))``.  Masked self-attention uses the causal mask
(``M_ij = -inf`` for j > i, l.170) plus the target padding; cross-attention takes
its queries from the decoder and its keys and values from the encoder output
``H_enc`` (the "memory", l.182), masked by the source padding only.

The encoder-decoder model trains by teacher forcing: the decoder reads
``<start> y_1 ... y_n`` and is scored against the same sequence shifted by one
(:func:`numeric.heads.shift_targets`), all positions in one parallel pass
(l.184).  :meth:`EncoderDecoder.generate` is the greedy loop: the encoder runs
once, its output is reused at every step, and position t sees positions 0..t.

Named intermediates (``record={}``): ``block{l}.LN1.mean/var``, ``block{l}.X1``,
``block{l}.self.head{i}.Q/K/V/S/A/O``, ``block{l}.self.B_att``, ``block{l}.U1``,
``block{l}.X2``, ``block{l}.cross.head{i}.Q/K/V/S/A/O``, ``block{l}.cross.B_att``,
``block{l}.U2``, ``block{l}.R``, ``block{l}.Z_mlp/J_mlp/B_mlp``, ``H{l+1}`` and
``H_dec``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import torch
from torch import nn

from seqgrad import runcache, validate
from seqgrad.errors import NonFiniteError, SeqgradTypeError, SeqgradValueError, ShapeError

from .attention import MultiHeadAttention, attention_mask, check_mask
from .encoder import MLP, Encoder, EncoderBlock, layer_norms, random_stack
from .heads import AffineHead, shift_targets, valid_target_loss
from .layernorm import LayerNorm


# ----------------------------------------------------------------------------- masks

def cross_mask(T: int, memory_padding, T_src: int, *, dtype=torch.float64, device=None) -> torch.Tensor | None:
    """The additive cross-attention mask, T x T_src (or B x T x T_src): padding sources of the memory get -inf.

    ``memory_padding`` is m_j per source position (T_src or B x T_src), 1/True for a real token.
    """
    if memory_padding is None:
        return None
    m = memory_padding if isinstance(memory_padding, torch.Tensor) else torch.as_tensor(memory_padding)
    if m.dim() not in (1, 2) or m.shape[-1] != T_src:
        raise ShapeError("memory_padding", tuple(m.shape), f"({T_src},) or (B, {T_src}) (one entry per source position)")
    if m.dtype != torch.bool:
        if not bool(((m == 0) | (m == 1)).all()):
            raise SeqgradValueError("memory_padding", "an array with entries other than 0/1", "booleans or 0/1 entries")
        m = m != 0
    m = m.to(device)
    if bool((~m).all(dim=-1).any()):
        raise SeqgradValueError("memory_padding", "a source sequence with no real token",
                                "at least one real source position per sequence (cross-attention needs a key)")
    excluded = (~m)[..., None, :].expand(*m.shape[:-1], T, T_src)
    return torch.zeros(excluded.shape, dtype=dtype, device=device).masked_fill(excluded, float("-inf"))


def check_cross_mask(M: torch.Tensor | None, T: int, T_src: int) -> None:
    """Refuse a user-built cross-attention mask of the wrong shape, with NaN/+inf, or with an all -inf row."""
    if M is None:
        return
    if not isinstance(M, torch.Tensor):
        raise SeqgradTypeError("memory_mask", type(M).__name__, f"a tensor of shape ({T}, {T_src}) or (B, {T}, {T_src})")
    if M.dim() not in (2, 3) or tuple(M.shape[-2:]) != (T, T_src):
        raise ShapeError("memory_mask", tuple(M.shape), f"({T}, {T_src}) or (B, {T}, {T_src}) (target x source)")
    if bool(torch.isnan(M).any()) or bool((M == float("inf")).any()):
        raise SeqgradValueError("memory_mask", "an array with NaN or +inf", "entries 0 for allowed, -inf for excluded")
    if bool(torch.isinf(M).all(dim=-1).any()):
        raise SeqgradValueError("memory_mask", "a row of -inf only", "every query row must allow at least one source")


# ----------------------------------------------------------------------------- one block

class DecoderBlock(nn.Module):
    """Masked self-attention, cross-attention and the MLP, each with a residual bypass and a LayerNorm."""

    def __init__(self, self_attention: MultiHeadAttention, cross_attention: MultiHeadAttention, mlp: MLP,
                 ln1: LayerNorm | None = None, ln2: LayerNorm | None = None, ln3: LayerNorm | None = None, *,
                 norm_first: bool = True, dtype=torch.float64, device=None):
        super().__init__()
        self.D = self_attention.D
        if cross_attention.D != self.D:
            raise ShapeError("cross_attention", (cross_attention.D,), f"({self.D},) (the self-attention width)")
        if mlp.D != self.D:
            raise ShapeError("W1", (mlp.F_width, mlp.D), f"F x {self.D} (the attention width)")
        self.self_attention, self.cross_attention, self.mlp = self_attention, cross_attention, mlp
        self.ln1, self.ln2, self.ln3 = layer_norms(self.D, dtype, device, ln1=ln1, ln2=ln2, ln3=ln3)
        self.norm_first = bool(norm_first)

    @classmethod
    def random(cls, D: int, n_heads: int, F_width: int, *, norm_first: bool = True, activation: str = "relu",
               bias: bool = False, generator=None, dtype=torch.float64, device=None) -> "DecoderBlock":
        """Random weights at the ``torch.nn.Linear`` default scale (the encoder block's, plus a cross-attention)."""
        enc = EncoderBlock.random(D, n_heads, F_width, norm_first=norm_first, activation=activation, bias=bias,
                                  generator=generator, dtype=dtype, device=device)
        cross = MultiHeadAttention.random(D, n_heads, bias=bias, generator=generator, dtype=dtype, device=device)
        return cls(enc.attention, cross, enc.mlp, norm_first=norm_first, dtype=dtype, device=device)

    def forward(self, H: torch.Tensor, H_enc: torch.Tensor, M_self: torch.Tensor | None = None,
                M_cross: torch.Tensor | None = None, record: dict | None = None, prefix: str = "") -> torch.Tensor:
        if self.norm_first:
            X1 = self.ln1(H, record, f"{prefix}LN1")
            U1 = H + self.self_attention(X1, M_self, record, f"{prefix}self.")
            X2 = self.ln2(U1, record, f"{prefix}LN2")
            U2 = U1 + self.cross_attention(X2, M_cross, record, f"{prefix}cross.", memory=H_enc)
            R = self.ln3(U2, record, f"{prefix}LN3")
            H_next = U2 + self.mlp(R, record, prefix)
        else:
            X1 = H
            U1 = self.ln1(H + self.self_attention(X1, M_self, record, f"{prefix}self."), record, f"{prefix}LN1")
            X2 = U1
            U2 = self.ln2(U1 + self.cross_attention(X2, M_cross, record, f"{prefix}cross.", memory=H_enc), record, f"{prefix}LN2")
            R = U2
            H_next = self.ln3(U2 + self.mlp(R, record, prefix), record, f"{prefix}LN3")
        if record is not None:
            record.update({f"{prefix}X1": X1, f"{prefix}U1": U1, f"{prefix}X2": X2, f"{prefix}U2": U2, f"{prefix}R": R})
        return H_next


# ----------------------------------------------------------------------------- the stack

class Decoder(Encoder):
    """Target embedding, positions, a stack of decoder blocks and an optional final LayerNorm.

    It shares the encoder's embedding, positions, token and weight checks and
    final norm (:class:`numeric.encoder.Encoder`); its stack reads the memory.
    """

    def __init__(self, E_vocab, blocks: Sequence[DecoderBlock], **kwargs):
        for l, b in enumerate(blocks):
            if not isinstance(b, DecoderBlock):
                raise SeqgradTypeError(f"blocks[{l}]", type(b).__name__, "DecoderBlock")
        super().__init__(E_vocab, blocks, **kwargs)

    @classmethod
    def random(cls, K: int, D: int, n_heads: int, F_width: int, n_blocks: int = 1, *, norm_first: bool = True,
               activation: str = "relu", bias: bool = False, seed: int = 0, dtype=torch.float64, device=None,
               **kwargs) -> "Decoder":
        """A decoder with random weights (for tests, checks and benchmarks)."""
        return random_stack(cls, DecoderBlock, K, D, n_heads, F_width, n_blocks, norm_first=norm_first,
                            activation=activation, bias=bias, seed=seed, dtype=dtype, device=device, **kwargs)

    def check_weights(self) -> None:
        """Refuse NaN or inf in any parameter.  One fused norm per parameter first (a NaN or inf entry makes its
        norm non-finite); only when a norm is not finite (or overflows) does the entrywise check of the encoder run
        and name the parameter."""
        with torch.no_grad():
            norms = torch.stack(torch._foreach_norm(list(self.parameters())))
        if not bool(torch.isfinite(norms).all()):
            super().check_weights()

    def check_memory(self, H_enc, H: torch.Tensor) -> torch.Tensor:
        """The memory must be (T_src, D) or (B, T_src, D) with the decoder's width D and batch, and finite."""
        if not isinstance(H_enc, torch.Tensor):
            raise SeqgradTypeError("H_enc", type(H_enc).__name__, f"a torch tensor of shape (T_src, {self.D}) or (B, T_src, {self.D})")
        if H_enc.dim() not in (2, 3) or H_enc.shape[-2] == 0:
            raise ShapeError("H_enc", tuple(H_enc.shape), f"(T_src, {self.D}) or (B, T_src, {self.D}) with T_src >= 1 source positions")
        if H_enc.shape[-1] != self.D:
            raise ShapeError("H_enc", tuple(H_enc.shape),
                             f"(T_src, {self.D}) or (B, T_src, {self.D}): the memory width must equal the decoder width D={self.D} "
                             f"(target states {tuple(H.shape)})")
        if H_enc.dim() == 3 and H.dim() == 3 and H_enc.shape[0] != H.shape[0]:
            raise ShapeError("H_enc", tuple(H_enc.shape), f"batch {H.shape[0]} like the target states {tuple(H.shape)}")
        if H_enc.dim() == 3 and H.dim() == 2:
            raise ShapeError("H_enc", tuple(H_enc.shape), f"(T_src, {self.D}) for unbatched target states {tuple(H.shape)}")
        if not bool(torch.isfinite(H_enc).all()):
            raise NonFiniteError("H_enc")
        return H_enc.to(dtype=self.dtype, device=self.device)

    def decode(self, H0: torch.Tensor, H_enc: torch.Tensor, *, causal: bool = True, padding=None, memory_padding=None,
               mask=None, memory_mask=None, record: dict | None = None) -> torch.Tensor:
        """Run the stack on target states ``H0`` (T x D or B x T x D) reading the memory ``H_enc``.

        The inputs are checked first; the weights only when the output is not finite (a full pass over every
        parameter costs about 7 % of a forward pass), so a NaN or inf weight that reaches the output is
        refused by name and no non-finite output is ever returned.

        ``causal`` (default on) and ``padding`` (target, 1 = real token) build the self-attention
        mask, or give the additive ``mask`` (T x T) yourself; ``memory_padding`` (1 = real source
        token) or ``memory_mask`` (T x T_src) mask the cross-attention.
        """
        H = self.check_states(H0)
        H_enc = self.check_memory(H_enc, H)
        T, T_src = H.shape[-2], H_enc.shape[-2]
        if mask is not None:
            check_mask(mask, T)
            M_self = mask.to(dtype=self.dtype, device=self.device)
        else:
            M_self = attention_mask(T, causal=bool(causal), padding=padding, dtype=self.dtype, device=self.device)
        if memory_mask is not None:
            check_cross_mask(memory_mask, T, T_src)
            M_cross = memory_mask.to(dtype=self.dtype, device=self.device)
        else:
            M_cross = cross_mask(T, memory_padding, T_src, dtype=self.dtype, device=self.device)
        if record is not None:
            record["H0"] = H
        try:
            for l, block in enumerate(self.blocks):
                H = block(H, H_enc, M_self, M_cross, record, f"block{l}.")
                if record is not None:
                    record[f"H{l + 1}"] = H
            if self.ln_final is not None:
                H = self.ln_final(H, record, "LN_final")
        except SeqgradValueError:  # a sublayer refused a non-finite result: a NaN or inf weight is named first
            self.check_weights()
            raise
        if record is not None:
            record["H_dec"] = H
        if not bool(torch.isfinite(H).all()):
            self.check_weights()  # names a NaN or inf parameter
            raise NonFiniteError("weights", "the decoder output is not finite (the inputs and the weights are): an overflow")
        return H

    def encode(self, H0: torch.Tensor, H_enc: torch.Tensor, **kwargs) -> torch.Tensor:  # type: ignore[override]
        """The decoder's stack needs the memory: the same as :meth:`decode`."""
        return self.decode(H0, H_enc, **kwargs)

    def forward(self, ids, H_enc: torch.Tensor, **kwargs) -> torch.Tensor:  # type: ignore[override]
        """``H_dec`` for target token ids (T or B x T) and the memory ``H_enc``."""
        record = kwargs.get("record")
        return self.decode(self.embed(ids, record), H_enc, **kwargs)


# ----------------------------------------------------------------------------- the encoder-decoder model

@dataclass
class Step:
    """One step of greedy generation: the decoder sees ``visible`` (positions 0..t) and predicts ``token``."""

    t: int
    visible: list[int]
    token: int
    probability: float
    cross_attention: torch.Tensor | None = field(default=None, repr=False)  # heads x T_src weights of the newest position


@dataclass
class Generation:
    ids: list[int]
    steps: list[Step]
    stopped: str  # "end" or "length"


class EncoderDecoder(nn.Module):
    """Encoder, decoder and the vocabulary head ``s_t = h_dec,t W_o^T + b_o`` over the target vocabulary.

    ``start`` and ``end`` are the target ids of <start> and <end>.
    """

    def __init__(self, encoder: Encoder, decoder: Decoder, head: AffineHead, *, start: int, end: int):
        super().__init__()
        if not isinstance(decoder, Decoder):
            raise SeqgradTypeError("decoder", type(decoder).__name__, "numeric.decoder.Decoder")
        if encoder.D != decoder.D:
            raise ShapeError("encoder", (encoder.K, encoder.D), f"K x {decoder.D} (the decoder width: memory and target widths must agree)")
        if head.D != decoder.D or head.C != decoder.K:
            raise ShapeError("head.W_o", (head.C, head.D), f"{decoder.K} x {decoder.D} (target vocabulary x decoder width)")
        self.encoder, self.decoder, self.head = encoder, decoder, head
        self.start = self._target_id("start", start)
        self.end = self._target_id("end", end)

    def _target_id(self, name: str, k) -> int:
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < self.decoder.K:
            raise SeqgradValueError(name, k, f"a target token id from 0 to {self.decoder.K - 1}")
        return k

    @classmethod
    def random(cls, K_src: int, K_tgt: int, D: int, n_heads: int, F_width: int, n_blocks: int = 1, *, start: int = 0,
               end: int = 1, norm_first: bool = True, bias: bool = True, seed: int = 0, dtype=torch.float64,
               device=None) -> "EncoderDecoder":
        enc = Encoder.random(K_src, D, n_heads, F_width, n_blocks, norm_first=norm_first, bias=bias, seed=seed,
                             dtype=dtype, device=device)
        dec = Decoder.random(K_tgt, D, n_heads, F_width, n_blocks, norm_first=norm_first, bias=bias, seed=seed + 1,
                             dtype=dtype, device=device)
        head = AffineHead.random(K_tgt, D, seed=seed + 2, dtype=dtype, device=device)
        return cls(enc, dec, head, start=start, end=end)

    def memory(self, src_ids, *, src_padding=None) -> torch.Tensor:
        """``H_enc``: the encoder output, computed once per source sentence."""
        return self.encoder(src_ids, padding=src_padding)

    def logits(self, src_ids, tgt_in, *, src_padding=None, tgt_padding=None, H_enc=None, record=None) -> torch.Tensor:
        """Next-token logits at every target position (the decoder reads ``tgt_in``, causal)."""
        H_enc = self.memory(src_ids, src_padding=src_padding) if H_enc is None else H_enc
        H_dec = self.decoder(tgt_in, H_enc, padding=tgt_padding, memory_padding=src_padding, record=record)
        return self.head(H_dec)

    def teacher_forcing_loss(self, src_ids, tgt_ids, *, src_padding=None, tgt_padding=None) -> torch.Tensor:
        """Cross-entropy of ``<start> y_1 .. y_n <end>`` shifted by one, all positions in one pass (l.184).

        ``tgt_ids`` is the whole target record including <start> and <end>; ``tgt_padding`` marks its real tokens.
        """
        tgt = self.decoder.token_ids(tgt_ids)
        y, v = shift_targets(tgt, tgt_padding)
        return valid_target_loss(self.logits(src_ids, tgt, src_padding=src_padding, tgt_padding=tgt_padding), y, v)

    def step(self, H_enc: torch.Tensor, prefix: torch.Tensor, record: dict | None = None) -> torch.Tensor:
        """Logits of the next token after ``prefix`` (T ids), reading a memory computed before."""
        H_dec = self.decoder(prefix, H_enc, record=record)
        return self.head(H_dec[..., -1, :])

    @torch.no_grad()
    def generate(self, src_ids, max_len: int, *, attention: bool = False) -> Generation:
        """Greedy decoding of one source sentence: stop at <end> or after ``max_len`` tokens.

        The encoder runs once; every step reuses its output.  ``attention=True``
        keeps each step's cross-attention weights (last block, newest position).
        """
        max_len = validate.integer("max_len", max_len, minimum=1)
        if isinstance(src_ids, (list, tuple)) and not src_ids:
            raise ShapeError("src_ids", (0,), "(T_src,) with T_src >= 1: an empty source sentence has nothing to encode")
        src = self.encoder.token_ids(src_ids)
        if src.dim() != 1:
            raise ShapeError("src_ids", tuple(src.shape), "(T_src,): one source sentence")
        H_enc = self.memory(src)
        ids = [self.start]
        steps: list[Step] = []
        for t in range(max_len):
            record = {} if attention else None
            p = torch.softmax(self.step(H_enc, torch.tensor(ids, device=H_enc.device), record), dim=-1)
            k = int(p.argmax())
            A = None
            if attention:
                last = len(self.decoder.blocks) - 1
                heads = len(self.decoder.blocks[last].cross_attention.heads)
                A = torch.stack([record[f"block{last}.cross.head{i}.A"][-1] for i in range(1, heads + 1)]).cpu()
            steps.append(Step(t, list(range(len(ids))), k, float(p[k]), A))
            ids.append(k)
            if k == self.end:
                return Generation(ids, steps, "end")
        return Generation(ids, steps, "length")


# ----------------------------------------------------------------------------- the lesson's example

SOURCE_WORDS = ("i", "love", "ml")
TARGET_WORDS = ("<start>", "<end>", "я", "люблю", "мо")


#: The lesson's toy model: width, heads, MLP width and blocks of the encoder and of the decoder (pre-norm), and the
#: learning rate of its Adam (the notes' caption of its figure states them, and the steps and seed below)
LESSON_SIZES = {"D": 16, "n_heads": 2, "F_width": 32, "n_blocks": 1}
LESSON_LR = 0.02


def lesson_example(*, steps: int = 60, seed: int = 0, dtype=torch.float64):
    """The lesson's "I love ML" -> «Я люблю МО» (l.184) with a toy vocabulary.

    A small encoder-decoder (D = 16, 2 heads, one block each) is trained by
    teacher forcing on the one sentence pair (:class:`numeric.optim.Adam`, ``steps`` updates); returns
    ``(model, source vocabulary, target vocabulary, losses)``.  Greedy
    generation then reproduces the target step by step.  Within one run of ``seqgrad check`` or
    ``seqgrad latex`` (:mod:`seqgrad.runcache`) the model is trained once and shared.
    """
    return _lesson_example(validate.integer("steps", steps, minimum=1), seed, dtype)


@runcache.memo  # the decoder checks and the decoder figure of one run use the same trained model: trained once
def _lesson_example(steps: int, seed: int, dtype):
    from .device import one_thread
    from .optim import Adam
    from .tokens import Vocabulary, tokenize

    src_vocab, tgt_vocab = Vocabulary(SOURCE_WORDS), Vocabulary(TARGET_WORDS)
    src = torch.tensor(src_vocab.encode("I love ML"))
    tgt = torch.tensor(tgt_vocab.ids(["<start>"] + tokenize("Я люблю МО") + ["<end>"]))
    model = EncoderDecoder.random(src_vocab.K, tgt_vocab.K, *LESSON_SIZES.values(), start=0, end=1, seed=seed, dtype=dtype)
    with one_thread():  # tiny tensors: intra-op threads only add synchronisation
        losses = teacher_forcing_steps(model, src, tgt, Adam(model.parameters(), lr=LESSON_LR), steps)
    return model, src_vocab, tgt_vocab, losses


def teacher_forcing_steps(model: "EncoderDecoder", src: torch.Tensor, tgt: torch.Tensor, optimizer, steps: int) -> list[float]:
    """``steps`` updates of ``optimizer`` (``zero_grad``/``step``) on the teacher-forcing loss of one pair; the losses."""
    losses = []
    for _ in range(validate.integer("steps", steps, minimum=1)):
        optimizer.zero_grad()
        loss = model.teacher_forcing_loss(src, tgt)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def describe(generation: Generation, vocab) -> list[str]:
    """One line per step: the positions the mask lets the decoder see, and its prediction."""
    words = vocab.decode(generation.ids)
    lines = []
    for s in generation.steps:
        seen = " ".join(words[j] for j in s.visible)
        lines.append(f"step {s.t + 1}: sees positions {s.visible[0]}..{s.visible[-1]} ({seen}) -> "
                     f"predicts {vocab.words[s.token]} (p = {s.probability:.3f})")
    lines.append(f"stopped at {'<end>' if generation.stopped == 'end' else 'the length limit'}: "
                 + " ".join(w for w in words[1:] if w != "<end>"))
    return lines
