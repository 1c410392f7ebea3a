"""``torch.nn`` twins of the numeric encoder, with the same weights copied in.

They are the independent implementations the encoder is checked against:
``nn.LayerNorm``, ``nn.MultiheadAttention``, ``nn.TransformerEncoderLayer`` and
``nn.TransformerEncoder`` (dropout 0, batch_first).  PyTorch splits the model
width evenly between heads, so only attentions whose heads all have width
D / n_heads have a twin (the course's 5 -> 3 heads do not, line 926).
"""

from __future__ import annotations

import torch
from torch import nn

from seqgrad.numeric.attention import MultiHeadAttention
from seqgrad.numeric.encoder import Encoder, EncoderBlock
from seqgrad.numeric.layernorm import LayerNorm
from seqgrad.errors import SeqgradValueError


def _copy(dst: torch.Tensor, src: torch.Tensor) -> None:
    with torch.no_grad():
        dst.copy_(src.detach())


def layer_norm(ln: LayerNorm) -> nn.LayerNorm:
    twin = nn.LayerNorm(ln.D, eps=ln.eps, dtype=ln.gamma.dtype, device=ln.gamma.device)
    _copy(twin.weight, ln.gamma)
    _copy(twin.bias, ln.beta)
    return twin


def multihead_attention(mha: MultiHeadAttention) -> nn.MultiheadAttention:
    n = len(mha.heads)
    if not mha.uniform or mha.heads[0].d_k * n != mha.D or mha.heads[0].d_v * n != mha.D:
        raise SeqgradValueError("mha", [(h.d_k, h.d_v) for h in mha.heads],
                                f"heads of width D/n_heads = {mha.D}/{n} (the only layout torch.nn.MultiheadAttention supports)")
    hs = mha.heads
    W = mha.W_O
    # biases the numeric attention does not have are zeros in the twin
    twin = nn.MultiheadAttention(mha.D, n, bias=True, batch_first=True, dtype=W.dtype, device=W.device)
    _copy(twin.in_proj_weight, torch.cat([h.W_Q for h in hs] + [h.W_K for h in hs] + [h.W_V for h in hs]))
    _copy(twin.out_proj.weight, mha.W_O)
    z = lambda p, d: p if p is not None else W.new_zeros(d)
    _copy(twin.in_proj_bias, torch.cat([z(h.b_Q, h.d_k) for h in hs] + [z(h.b_K, h.d_k) for h in hs] + [z(h.b_V, h.d_v) for h in hs]))
    _copy(twin.out_proj.bias, z(mha.b_O, mha.D))
    return twin


def encoder_layer(block: EncoderBlock) -> nn.TransformerEncoderLayer:
    mlp = block.mlp
    attn = multihead_attention(block.attention)
    twin = nn.TransformerEncoderLayer(block.D, len(block.attention.heads), dim_feedforward=mlp.F_width, dropout=0.0,
                                      activation=mlp.activation, batch_first=True, norm_first=block.norm_first,
                                      layer_norm_eps=block.ln1.eps, dtype=mlp.W1.dtype, device=mlp.W1.device)
    twin.self_attn = attn
    _copy(twin.linear1.weight, mlp.W1)
    _copy(twin.linear1.bias, mlp.b1)
    _copy(twin.linear2.weight, mlp.W2)
    _copy(twin.linear2.bias, mlp.b2)
    for t, ln in ((twin.norm1, block.ln1), (twin.norm2, block.ln2)):
        _copy(t.weight, ln.gamma)
        _copy(t.bias, ln.beta)
    return twin.eval()


def encoder_stack(enc: Encoder) -> nn.TransformerEncoder:
    """The blocks of ``enc`` (not its embedding) as ``nn.TransformerEncoder`` with the final norm."""
    layers = [encoder_layer(b) for b in enc.blocks]
    twin = nn.TransformerEncoder(layers[0], num_layers=len(layers), norm=layer_norm(enc.ln_final) if enc.ln_final else None,
                                 enable_nested_tensor=False)
    twin.layers = nn.ModuleList(layers)
    return twin.eval()
