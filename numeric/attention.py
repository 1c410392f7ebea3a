"""Scaled dot-product attention with several heads of any width (text, lines 608-930).

Per head i: ``Q = X W_Q^T``, ``K = X W_K^T``, ``V = X W_V^T`` (weights stored
output x input), ``S = Q K^T / sqrt(d_k)``, ``A = softmax_rows(S + M)``,
``O = A V``; then ``C = [O^[1] | ... | O^[N]]`` and ``B_att = C W_O^T``.
The mask M holds 0 for allowed and -inf for excluded sources and is added
*before* the softmax; a query row with no allowed source is refused.

With ``record=None`` and heads of one width, the heads run as one fused QKV
product and :func:`torch.nn.functional.scaled_dot_product_attention` (when no score can overflow,
:func:`scores_fit`); with a ``record`` dict every intermediate is computed explicitly and stored by
name.  Both paths give the same finite answer or the same clear error on every input.

Cross-attention (the decoder, seed 001 l.182): pass ``memory=H_enc`` and the
queries come from X while the keys and values come from the memory,
``Q = X W_Q^T``, ``K = H_enc W_K^T``, ``V = H_enc W_V^T``; S and A are then
T_q x T_k and a mask has that shape.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from seqgrad import validate
from seqgrad.errors import NonFiniteError, SeqgradTypeError, SeqgradValueError, ShapeError

from ._params import as_tensor, parameter, random_matrix


# ----------------------------------------------------------------------------- masks

def _bool_tensor(name: str, value, device) -> torch.Tensor:
    t = value if isinstance(value, torch.Tensor) else torch.as_tensor(value)
    if t.dtype != torch.bool:
        if not bool(((t == 0) | (t == 1)).all()):
            raise SeqgradValueError(name, "an array with entries other than 0/1", "booleans or 0/1 entries")
        t = t != 0
    return t.to(device)


def attention_mask(T: int, *, causal: bool = False, padding=None, exclude=None,
                   dtype=torch.float64, device=None) -> torch.Tensor | None:
    """The additive mask M (0 allowed, -inf excluded) of shape T x T or B x T x T.

    ``causal``: source j is allowed for query t only when j <= t (line 784).
    ``padding``: m_j per position (T or B x T), 1/True for a real token, 0/False for
    padding; padding sources are excluded (line 1231).
    ``exclude``: extra boolean mask, True = excluded (the PyTorch convention).
    Returns ``None`` when nothing is masked.  A query row that allows no source is
    a clear error (its softmax would be 0/0).
    """
    T = validate.integer("T", T, minimum=1)
    excluded = None
    if causal:
        excluded = torch.triu(torch.ones(T, T, dtype=torch.bool, device=device), diagonal=1)
    if padding is not None:
        m = _bool_tensor("padding", padding, device)
        if m.shape[-1] != T or m.dim() not in (1, 2):
            raise ShapeError("padding", tuple(m.shape), f"({T},) or (B, {T})")
        pad = ~m[..., None, :]  # excluded sources, broadcast over queries
        pad = pad.expand(*m.shape[:-1], T, T)
        excluded = pad if excluded is None else (excluded | pad)
    if exclude is not None:
        e = _bool_tensor("exclude", exclude, device)
        if e.dim() not in (2, 3) or tuple(e.shape[-2:]) != (T, T):
            raise ShapeError("exclude", tuple(e.shape), f"({T}, {T}) or (B, {T}, {T})")
        excluded = e if excluded is None else (excluded | e)
    if excluded is None:
        return None
    empty = (~excluded).sum(dim=-1) == 0
    if bool(empty.any()):
        where = [tuple(int(i) for i in idx) for idx in torch.nonzero(empty)[:3].tolist()]
        raise SeqgradValueError("mask", f"query rows {where} exclude every source",
                                "every query row must allow at least one source (an all -inf row has no softmax)")
    M = torch.zeros(excluded.shape, dtype=dtype, device=device)
    return M.masked_fill(excluded, float("-inf"))


def check_mask(M: torch.Tensor | None, T: int) -> None:
    """Refuse a user-built additive mask that is not a floating-point tensor, has the wrong shape,
    holds NaN or +inf, or has an all -inf row (whose softmax is 0/0)."""
    if M is None:
        return
    if not isinstance(M, torch.Tensor) or not M.is_floating_point():
        raise SeqgradTypeError("mask", M if not isinstance(M, torch.Tensor) else f"a {M.dtype} tensor",
                               "an additive floating-point tensor (0 allowed, -inf excluded); build one from "
                               "booleans with attention_mask(T, exclude=...)")
    if M.dim() not in (2, 3) or tuple(M.shape[-2:]) != (T, T):
        raise ShapeError("mask", tuple(M.shape), f"({T}, {T}) or (B, {T}, {T})")
    if bool(torch.isnan(M).any()) or bool((M == float("inf")).any()):
        raise SeqgradValueError("mask", "an array with NaN or +inf", "entries 0 (or finite) for allowed, -inf for excluded")
    if bool((torch.isinf(M).all(dim=-1)).any()):
        raise SeqgradValueError("mask", "a row of -inf only", "every query row must allow at least one source")


def check_inputs(X, M, D: int, dtype: torch.dtype, device: torch.device) -> None:
    """Refuse inputs ``X`` that are not a (T, D) or (B, T, D) tensor of the weights' dtype and device,
    and a mask that does not fit them (see :func:`check_mask`); both attention paths call this."""
    if not isinstance(X, torch.Tensor) or not X.is_floating_point():
        raise SeqgradTypeError("X", type(X).__name__ if not isinstance(X, torch.Tensor) else X.dtype,
                               f"a floating-point torch tensor (T, {D}) or (B, T, {D})")
    if X.dim() not in (2, 3) or X.shape[-1] != D or X.shape[-2] == 0:
        raise ShapeError("X", tuple(X.shape), f"(T, {D}) or (B, T, {D}) with T >= 1")
    if X.dtype != dtype:
        raise SeqgradTypeError("X", X.dtype, f"a tensor of dtype {dtype} (the weights')")
    if X.device != device:
        raise SeqgradValueError("X", f"a tensor on {X.device}", f"a tensor on {device} (the weights' device)")
    check_mask(M, X.shape[-2])
    if M is not None:
        if M.dim() == 3 and (X.dim() != 3 or M.shape[0] != X.shape[0]):
            raise ShapeError("mask", tuple(M.shape), f"({X.shape[-2]}, {X.shape[-2]}) or (B, T, T) with the B of X")
        if M.dtype != dtype or M.device != device:
            raise SeqgradTypeError("mask", f"a {M.dtype} tensor on {M.device}", f"a {dtype} tensor on {device}")


def check_attention_inputs(X, M, memory, D: int, dtype: torch.dtype, device: torch.device) -> None:
    """:func:`check_inputs` for self-attention; for cross-attention (``memory`` given) X and the memory are
    checked alike and a mask must be (T, T_memory) or (B, T, T_memory)."""
    if memory is None:
        return check_inputs(X, M, D, dtype, device)
    check_inputs(X, None, D, dtype, device)
    try:
        check_inputs(memory, None, D, dtype, device)
    except ShapeError as exc:
        raise ShapeError("memory", tuple(memory.shape), f"(T_src, {D}) or (B, T_src, {D})") from exc
    if M is not None:
        want = (X.shape[-2], memory.shape[-2])
        if not isinstance(M, torch.Tensor) or M.dim() not in (2, 3) or tuple(M.shape[-2:]) != want:
            raise ShapeError("mask", tuple(getattr(M, "shape", ())), f"{want} or (B, {want[0]}, {want[1]})")
        if M.dtype != dtype or M.device != device:
            raise SeqgradTypeError("mask", f"a {M.dtype} tensor on {M.device}", f"a {dtype} tensor on {device}")


def check_finite_output(out: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """No silent NaN or inf: finite inputs whose projections, scores or outputs overflow are a clear error."""
    if not bool(torch.isfinite(out).all()):
        if not bool(torch.isfinite(X).all()):
            raise NonFiniteError("X")
        raise SeqgradValueError("X", "inputs whose projections, attention scores Q K^T or outputs overflow",
                                f"inputs and weights small enough that Q, K, V, Q K^T and the outputs are "
                                f"finite in {X.dtype}")
    return out


def scores_fit(Q: torch.Tensor, K: torch.Tensor, d_k: int) -> bool:
    """True when no entry (nor partial sum) of ``Q K^T`` can overflow: ``|q . k| <= d_k max|Q| max|K|`` stays
    below half the dtype's largest number.  Only then does the fused path run; otherwise the heads run
    explicitly, so both paths give the same finite answer or the same clear error however the fused
    kernel orders its scaling."""
    bound = Q.abs().amax() * K.abs().amax() * d_k  # inf (or NaN) when it overflows: not below the limit
    return bool(bound < torch.finfo(Q.dtype).max / 2)


def contributions(A: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    """``A_tj v_j`` for every query t and source j: shape (..., T, T, d_v); summing over j gives O."""
    return A[..., :, :, None] * V[..., None, :, :]


# ----------------------------------------------------------------------------- heads

class Head(nn.Module):
    """One head's maps: W_Q, W_K (d_k x D) and W_V (d_v x D), optional biases."""

    def __init__(self, W_Q, W_K, W_V, b_Q=None, b_K=None, b_V=None, *, dtype=torch.float64, device=None):
        super().__init__()
        W_Q = as_tensor("W_Q", W_Q, dtype, device)
        if W_Q.dim() != 2:
            raise ShapeError("W_Q", tuple(W_Q.shape), "d_k x D (output x input)")
        self.d_k, self.D = W_Q.shape
        W_V_t = as_tensor("W_V", W_V, dtype, device)
        if W_V_t.dim() != 2:
            raise ShapeError("W_V", tuple(W_V_t.shape), f"d_v x {self.D} (output x input)")
        self.d_v = W_V_t.shape[0]
        self.W_Q = parameter("W_Q", W_Q, (self.d_k, self.D), dtype, device)
        self.W_K = parameter("W_K", W_K, (self.d_k, self.D), dtype, device)
        self.W_V = parameter("W_V", W_V_t, (self.d_v, self.D), dtype, device)
        self.b_Q = None if b_Q is None else parameter("b_Q", b_Q, (self.d_k,), dtype, device)
        self.b_K = None if b_K is None else parameter("b_K", b_K, (self.d_k,), dtype, device)
        self.b_V = None if b_V is None else parameter("b_V", b_V, (self.d_v,), dtype, device)

    def project(self, X: torch.Tensor, memory: torch.Tensor | None = None):
        """Q from X; K and V from ``memory`` when given (cross-attention), else from X."""
        Y = X if memory is None else memory
        Q = F.linear(X, self.W_Q, self.b_Q)
        K = F.linear(Y, self.W_K, self.b_K)
        V = F.linear(Y, self.W_V, self.b_V)
        return Q, K, V

    def forward(self, X: torch.Tensor, M: torch.Tensor | None = None, record: dict | None = None, name: str = "head1",
                checked: bool = False, *, memory: torch.Tensor | None = None):
        if not checked:
            check_attention_inputs(X, M, memory, self.D, self.W_Q.dtype, self.W_Q.device)
        Q, K, V = self.project(X, memory)
        QKt = Q @ K.transpose(-1, -2)
        S = QKt / math.sqrt(self.d_k)
        A = torch.softmax(S if M is None else S + M, dim=-1)
        O = A @ V
        if record is not None:
            record.update({f"{name}.Q": Q, f"{name}.K": K, f"{name}.V": V, f"{name}.QKt": QKt,
                           f"{name}.S": S, f"{name}.A": A, f"{name}.O": O})
        return O if checked else check_finite_output(O, X)


class MultiHeadAttention(nn.Module):
    """Heads of any widths, concatenated along features, then ``B_att = C W_O^T (+ b_O)``."""

    def __init__(self, heads: list[Head], W_O, b_O=None, *, dtype=torch.float64, device=None):
        super().__init__()
        if not heads:
            raise SeqgradValueError("heads", heads, "at least one head")
        D = heads[0].D
        for i, h in enumerate(heads, 1):
            if h.D != D:
                raise ShapeError(f"head{i}.W_Q", (h.d_k, h.D), f"d_k x {D} (every head reads the same width)")
        self.heads = nn.ModuleList(heads)
        self.D = D
        width = sum(h.d_v for h in heads)
        self.W_O = parameter("W_O", W_O, (D, width), dtype, device)
        self.b_O = None if b_O is None else parameter("b_O", b_O, (D,), dtype, device)
        self.uniform = len({(h.d_k, h.d_v) for h in heads}) == 1

    @classmethod
    def random(cls, D: int, n_heads: int, d_k: int | None = None, d_v: int | None = None, *, bias: bool = False,
               generator=None, dtype=torch.float64, device=None) -> "MultiHeadAttention":
        """Random weights at the ``torch.nn.Linear`` default scale (for tests and benchmarks)."""
        D = validate.integer("D", D, minimum=1)
        n_heads = validate.integer("n_heads", n_heads, minimum=1)
        d_k = d_k or max(D // n_heads, 1)
        d_v = d_v or d_k
        r = lambda *shape: random_matrix(shape, generator, dtype, 1.0 / D ** 0.5)
        heads = [Head(r(d_k, D), r(d_k, D), r(d_v, D), *((r(d_k), r(d_k), r(d_v)) if bias else ()),
                      dtype=dtype, device=device) for _ in range(n_heads)]
        return cls(heads, random_matrix((D, n_heads * d_v), generator, dtype), r(D) if bias else None,
                   dtype=dtype, device=device)

    def forward(self, X: torch.Tensor, M: torch.Tensor | None = None, record: dict | None = None, prefix: str = "",
                *, memory: torch.Tensor | None = None):
        """``B_att`` for inputs X (T x D or B x T x D) and an optional additive mask M; with ``memory`` the keys
        and values come from it (cross-attention).  Both paths (fused, and explicit with ``record``) check X,
        the memory and M the same way and refuse an overflow."""
        check_attention_inputs(X, M, memory, self.D, self.W_O.dtype, self.W_O.device)
        C = self._fused(X, M, memory) if record is None and self.uniform else None
        if C is None:
            O = [h(X, M, record, f"{prefix}head{i}", checked=True, memory=memory) for i, h in enumerate(self.heads, 1)]
            C = torch.cat(O, dim=-1)
        B_att = F.linear(C, self.W_O, self.b_O)
        if record is not None:
            record[f"{prefix}C"] = C
            record[f"{prefix}B_att"] = B_att
        return check_finite_output(B_att, X)

    def _fused(self, X: torch.Tensor, M: torch.Tensor | None, memory: torch.Tensor | None = None) -> torch.Tensor | None:
        """All heads in one QKV product (Q and one KV product for cross-attention) and one fused attention call;
        None when the scores might overflow (:func:`scores_fit`): the explicit path then decides."""
        hs = self.heads
        n, d_k, d_v = len(hs), hs[0].d_k, hs[0].d_v
        W = torch.cat([h.W_Q for h in hs] + [h.W_K for h in hs] + [h.W_V for h in hs], dim=0)
        b = None
        if any(h.b_Q is not None or h.b_K is not None or h.b_V is not None for h in hs):
            z = lambda p, d: p if p is not None else X.new_zeros(d)
            b = torch.cat([z(h.b_Q, d_k) for h in hs] + [z(h.b_K, d_k) for h in hs] + [z(h.b_V, d_v) for h in hs])
        if memory is None:
            Q, K, V = F.linear(X, W, b).split([n * d_k, n * d_k, n * d_v], dim=-1)
        else:
            Q = F.linear(X, W[:n * d_k], None if b is None else b[:n * d_k])
            K, V = F.linear(memory, W[n * d_k:], None if b is None else b[n * d_k:]).split([n * d_k, n * d_v], dim=-1)
        if not scores_fit(Q, K, d_k):
            return None
        lead, T = X.shape[:-2], X.shape[-2]
        T_k = K.shape[-2]
        Q = Q.reshape(*lead, T, n, d_k).transpose(-2, -3)
        K = K.reshape(*K.shape[:-2], T_k, n, d_k).transpose(-2, -3)
        V = V.reshape(*V.shape[:-2], T_k, n, d_v).transpose(-2, -3)
        if M is not None and M.dim() == 3:
            M = M.unsqueeze(-3)
        O = F.scaled_dot_product_attention(Q, K, V, attn_mask=M)
        return O.transpose(-2, -3).reshape(*lead, T, n * d_v)
