"""``torch.nn`` twins of the numeric decoder, with the same weights copied in.

``nn.TransformerDecoderLayer``, ``nn.TransformerDecoder`` and ``nn.Transformer``
(dropout 0, batch_first) are the independent implementations the decoder and the
encoder-decoder model are checked against; the attention and LayerNorm copies
are :mod:`crosscheck.encoder_twins`'.
"""

from __future__ import annotations

import torch
from torch import nn

from seqgrad.numeric.decoder import Decoder, DecoderBlock, EncoderDecoder

from .encoder_twins import _copy, encoder_stack, layer_norm, multihead_attention


def decoder_layer(block: DecoderBlock) -> nn.TransformerDecoderLayer:
    mlp = block.mlp
    twin = nn.TransformerDecoderLayer(block.D, len(block.self_attention.heads), dim_feedforward=mlp.F_width, dropout=0.0,
                                      activation=mlp.activation, batch_first=True, norm_first=block.norm_first,
                                      layer_norm_eps=block.ln1.eps, dtype=mlp.W1.dtype, device=mlp.W1.device)
    twin.self_attn = multihead_attention(block.self_attention)
    twin.multihead_attn = multihead_attention(block.cross_attention)
    _copy(twin.linear1.weight, mlp.W1)
    _copy(twin.linear1.bias, mlp.b1)
    _copy(twin.linear2.weight, mlp.W2)
    _copy(twin.linear2.bias, mlp.b2)
    for t, ln in ((twin.norm1, block.ln1), (twin.norm2, block.ln2), (twin.norm3, block.ln3)):
        _copy(t.weight, ln.gamma)
        _copy(t.bias, ln.beta)
    return twin.eval()


def decoder_stack(dec: Decoder) -> nn.TransformerDecoder:
    """The blocks of ``dec`` (not its embedding) as ``nn.TransformerDecoder`` with the final norm."""
    layers = [decoder_layer(b) for b in dec.blocks]
    twin = nn.TransformerDecoder(layers[0], num_layers=len(layers), norm=layer_norm(dec.ln_final) if dec.ln_final else None)
    twin.layers = nn.ModuleList(layers)
    return twin.eval()


def transformer(model: EncoderDecoder) -> nn.Transformer:
    """The encoder and decoder stacks of ``model`` as ``nn.Transformer`` (it has no embeddings and no head)."""
    enc, dec = model.encoder, model.decoder
    block = dec.blocks[0]
    # placeholders as custom_encoder/custom_decoder: nn.Transformer then builds no default encoder, whose
    # construction warns (enable_nested_tensor with norm_first) on every run; the copies go in afterwards, past
    # the xavier initialisation the constructor gives its parameters
    twin = nn.Transformer(dec.D, len(block.self_attention.heads), num_encoder_layers=len(enc.blocks),
                          num_decoder_layers=len(dec.blocks), dim_feedforward=block.mlp.F_width, dropout=0.0,
                          custom_encoder=nn.Identity(), custom_decoder=nn.Identity(),
                          activation=block.mlp.activation, batch_first=True, norm_first=block.norm_first,
                          dtype=block.mlp.W1.dtype, device=block.mlp.W1.device)
    twin.encoder = encoder_stack(enc)
    twin.decoder = decoder_stack(dec)
    return twin.eval()


# ----------------------------------------------------------------------------- gradients in the twins' layout

def _grad(p):
    return None if p is None or p.grad is None else p.grad


def _attention_grads(mha, prefix: str) -> dict:
    hs = mha.heads
    out = {f"{prefix}in_proj_weight": torch.cat([h.W_Q.grad for h in hs] + [h.W_K.grad for h in hs] + [h.W_V.grad for h in hs]),
           f"{prefix}out_proj.weight": mha.W_O.grad}
    if hs[0].b_Q is not None:
        out[f"{prefix}in_proj_bias"] = torch.cat([h.b_Q.grad for h in hs] + [h.b_K.grad for h in hs] + [h.b_V.grad for h in hs])
    if mha.b_O is not None:
        out[f"{prefix}out_proj.bias"] = mha.b_O.grad
    return out


def _block_grads(block, prefix: str) -> dict:
    out = {}
    if isinstance(block, DecoderBlock):
        out.update(_attention_grads(block.self_attention, f"{prefix}self_attn."))
        out.update(_attention_grads(block.cross_attention, f"{prefix}multihead_attn."))
        norms = (block.ln1, block.ln2, block.ln3)
    else:
        out.update(_attention_grads(block.attention, f"{prefix}self_attn."))
        norms = (block.ln1, block.ln2)
    mlp = block.mlp
    out.update({f"{prefix}linear1.weight": mlp.W1.grad, f"{prefix}linear1.bias": mlp.b1.grad,
                f"{prefix}linear2.weight": mlp.W2.grad, f"{prefix}linear2.bias": mlp.b2.grad})
    for i, ln in enumerate(norms, 1):
        out.update({f"{prefix}norm{i}.weight": ln.gamma.grad, f"{prefix}norm{i}.bias": ln.beta.grad})
    return out


def _stack_grads(stack, prefix: str) -> dict:
    out = {}
    for l, block in enumerate(stack.blocks):
        out.update(_block_grads(block, f"{prefix}layers.{l}."))
    if stack.ln_final is not None:
        out.update({f"{prefix}norm.weight": stack.ln_final.gamma.grad, f"{prefix}norm.bias": stack.ln_final.beta.grad})
    return out


def gradients(ours) -> dict:
    """The gradients of ``ours`` (a DecoderBlock, Decoder or EncoderDecoder after ``backward``), keyed by the
    twin's parameter names and laid out as the twin stores them (heads concatenated into ``in_proj``)."""
    if isinstance(ours, EncoderDecoder):
        return {**_stack_grads(ours.encoder, "encoder."), **_stack_grads(ours.decoder, "decoder.")}
    if isinstance(ours, Decoder):
        return _stack_grads(ours, "")
    return _block_grads(ours, "")


def gradient_pairs(ours, twin) -> list[tuple[str, "torch.Tensor", "torch.Tensor"]]:
    """``(name, our gradient, the twin's gradient)`` for every parameter of ``ours``; the twin's zero biases that
    ``ours`` does not have are left out.  A parameter without a gradient is an error (no silent zero)."""
    from seqgrad.errors import SeqgradValueError

    theirs = dict(twin.named_parameters())
    pairs = []
    for name, g in gradients(ours).items():
        if g is None or theirs[name].grad is None:
            raise SeqgradValueError("gradients", name, "a parameter that received a gradient (run backward first)")
        pairs.append((name, g, theirs[name].grad))
    return pairs
