"""numeric.decoder against torch.nn.TransformerDecoderLayer / TransformerDecoder / Transformer (same weights, float64)."""

from __future__ import annotations

import warnings

import pytest
import torch

from seqgrad.crosscheck import decoder_twins
from seqgrad.crosscheck.tolerance import compare
from seqgrad.numeric.attention import MultiHeadAttention
from seqgrad.numeric.decoder import Decoder, DecoderBlock, EncoderDecoder, describe, lesson_example
from seqgrad.numeric.encoder import EncoderBlock

warnings.filterwarnings("ignore", message="Support for mismatched key_padding_mask")

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _close(a, b, device="cpu"):
    out = compare(a, b, dtype="float64", device=device)
    assert out.passed, (out.max_abs_error, out.max_rel_error)
    return out


def _inputs(B, T, S, D, device, seed=0):
    g = torch.Generator().manual_seed(seed)
    H = torch.randn(B, T, D, generator=g, dtype=torch.float64).to(device)
    M = torch.randn(B, S, D, generator=g, dtype=torch.float64).to(device)
    return H, M


def _run_both(ours_fn, twin_fn, H, M, weight):
    H1, M1 = H.clone().requires_grad_(), M.clone().requires_grad_()
    H2, M2 = H.clone().requires_grad_(), M.clone().requires_grad_()
    out1, out2 = ours_fn(H1, M1), twin_fn(H2, M2)
    (out1 * weight).sum().backward()
    (out2 * weight).sum().backward()
    return (out1, out2), (H1.grad, H2.grad), (M1.grad, M2.grad)


TGT_PAD = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0]]).bool()
SRC_PAD = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]]).bool()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("norm_first", [True, False])
def test_block_matches_transformer_decoder_layer(norm_first, device):
    block = DecoderBlock.random(8, 2, 16, norm_first=norm_first, bias=True, generator=torch.Generator().manual_seed(1),
                                device=device)
    twin = decoder_twins.decoder_layer(block)
    H, M = _inputs(3, 5, 4, 8, device)
    from seqgrad.numeric.attention import attention_mask
    from seqgrad.numeric.decoder import cross_mask

    M_self = attention_mask(5, causal=True, padding=TGT_PAD, device=device)
    M_cross = cross_mask(5, SRC_PAD, 4, device=device)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64, device=device)
    weight = torch.randn(3, 5, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(2)).to(device)
    outs, dH, dM = _run_both(lambda h, m: block(h, m, M_self, M_cross),
                             lambda h, m: twin(h, m, tgt_mask=causal, tgt_key_padding_mask=~TGT_PAD.to(device),
                                               memory_key_padding_mask=~SRC_PAD.to(device)), H, M, weight)
    for a, b in (outs, dH, dM):
        _close(a, b, device)
    pairs = decoder_twins.gradient_pairs(block, twin)
    assert len(pairs) == 2 * 4 + 4 + 6  # two attentions (in/out weights and biases), the MLP, three norms
    for _, a, b in pairs:
        _close(a, b, device)


@pytest.mark.parametrize("norm_first", [True, False])
def test_stack_matches_transformer_decoder(norm_first):
    dec = Decoder.random(7, 8, 4, 16, 3, norm_first=norm_first, bias=True, seed=3)
    twin = decoder_twins.decoder_stack(dec)
    H, M = _inputs(3, 5, 4, 8, "cpu", seed=4)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    weight = torch.randn(3, 5, 8, dtype=torch.float64)
    outs, dH, dM = _run_both(lambda h, m: dec.decode(h, m, padding=TGT_PAD, memory_padding=SRC_PAD),
                             lambda h, m: twin(h, m, tgt_mask=causal, tgt_key_padding_mask=~TGT_PAD,
                                               memory_key_padding_mask=~SRC_PAD), H, M, weight)
    for a, b in (outs, dH, dM):
        _close(a, b)
    pairs = decoder_twins.gradient_pairs(dec, twin)
    assert len(pairs) == 3 * 18 + 2
    for _, a, b in pairs:
        _close(a, b)


def test_encoder_decoder_matches_torch_transformer():
    model = EncoderDecoder.random(5, 6, 8, 2, 16, 2, seed=5)
    twin = decoder_twins.transformer(model)
    g = torch.Generator().manual_seed(6)
    src = torch.randn(3, 4, 8, generator=g, dtype=torch.float64)
    tgt = torch.randn(3, 5, 8, generator=g, dtype=torch.float64)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)

    def ours(s, t):
        return model.decoder.decode(t, model.encoder.encode(s, padding=SRC_PAD), padding=TGT_PAD, memory_padding=SRC_PAD)

    def theirs(s, t):
        return twin(s, t, tgt_mask=causal, src_key_padding_mask=~SRC_PAD, tgt_key_padding_mask=~TGT_PAD,
                    memory_key_padding_mask=~SRC_PAD)

    weight = torch.randn(3, 5, 8, dtype=torch.float64, generator=g)
    outs, dsrc, dtgt = _run_both(ours, theirs, src, tgt, weight)
    for a, b in (outs, dsrc, dtgt):
        _close(a, b)
    assert float(dsrc[0].abs().max()) > 0  # the gradient reaches the source through the memory
    pairs = decoder_twins.gradient_pairs(model, twin)
    assert len(pairs) == 2 * 12 + 2 + 2 * 18 + 2
    for _, a, b in pairs:
        _close(a, b)


def test_record_path_equals_fused_path_and_names_intermediates():
    dec = Decoder.random(7, 8, 2, 16, 2, seed=7)
    H, M = _inputs(2, 5, 3, 8, "cpu")
    record = {}
    a = dec.decode(H, M, record=record)
    b = dec.decode(H, M)
    _close(a, b)
    for name in ("block0.X1", "block0.U1", "block1.cross.head2.A", "block0.self.head1.A", "block1.R", "H_dec"):
        assert name in record
    A = record["block0.self.head1.A"]
    assert torch.all(A.triu(1) == 0)  # causal: weights on later positions are exactly zero
    assert record["block1.cross.head1.A"].shape == (2, 5, 3)  # target x source


def test_heads_of_any_width_and_causality_by_autograd():
    g = torch.Generator().manual_seed(8)
    r = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64) * 0.4
    from seqgrad.numeric.attention import Head
    from seqgrad.numeric.encoder import MLP

    def mha():
        return MultiHeadAttention([Head(r(3, 5), r(3, 5), r(3, 5)), Head(r(2, 5), r(2, 5), r(4, 5))], r(5, 7))

    block = DecoderBlock(mha(), mha(), MLP(r(6, 5), r(6), r(5, 6), r(5)))
    dec = Decoder(r(4, 5), [block])
    H0, M = r(4, 5), r(3, 5)
    J = torch.autograd.functional.jacobian(lambda h: dec.decode(h, M), H0)  # (T, D, T, D)
    blocks = J.abs().sum(dim=(1, 3))  # |d out_i / d in_j| summed over features
    assert torch.all(blocks.triu(1) == 0) and torch.all(blocks.diagonal() > 0)
    J_free = torch.autograd.functional.jacobian(lambda h: dec.decode(h, M, causal=False), H0)
    upper = torch.triu_indices(4, 4, 1)
    assert float(J_free.abs().sum(dim=(1, 3))[upper[0], upper[1]].min()) > 0  # without the mask every later position leaks


def test_decoder_only_block_is_a_causal_encoder_block():
    """A decoder-only (GPT-style) model has no cross-attention: its block is the encoder block with the causal mask."""
    blk = EncoderBlock.random(8, 2, 16, generator=torch.Generator().manual_seed(9))
    H = torch.randn(6, 8, dtype=torch.float64)
    from seqgrad.numeric.attention import attention_mask

    J = torch.autograd.functional.jacobian(lambda h: blk(h, attention_mask(6, causal=True)), H)
    assert torch.all(J.abs().sum(dim=(1, 3)).triu(1) == 0)


def test_teacher_forcing_loss_is_the_shifted_cross_entropy():
    model = EncoderDecoder.random(4, 6, 8, 2, 16, seed=10)
    src, tgt = torch.tensor([1, 2, 3]), torch.tensor([0, 4, 5, 2, 1])
    logits = model.logits(src, tgt)
    manual = torch.nn.functional.cross_entropy(logits[:-1], tgt[1:])
    _close(model.teacher_forcing_loss(src, tgt), manual)


def test_lesson_generation_example():
    model, sv, tv, losses = lesson_example()
    assert losses[-1] < 0.01 * losses[0]
    gen = model.generate(sv.encode("I love ML"), 10, attention=True)
    assert tv.decode(gen.ids) == ["<start>", "я", "люблю", "мо", "<end>"] and gen.stopped == "end"
    assert [s.visible for s in gen.steps] == [[0], [0, 1], [0, 1, 2], [0, 1, 2, 3]]
    assert gen.steps[0].cross_attention.shape == (2, 3)
    assert torch.allclose(gen.steps[0].cross_attention.sum(-1), torch.ones(2, dtype=torch.float64))
    lines = describe(gen, tv)
    assert lines[0].startswith("step 1: sees positions 0..0 (<start>) -> predicts я")
    short = model.generate(sv.encode("I love ML"), 2)
    assert short.stopped == "length" and len(short.ids) == 3


def test_generation_reuses_the_encoder_memory():
    model = EncoderDecoder.random(4, 6, 8, 2, 16, seed=11, end=5)
    calls = []
    hook = model.encoder.register_forward_hook(lambda *a: calls.append(1))
    try:
        gen = model.generate([1, 2, 3], 8)
    finally:
        hook.remove()
    assert len(calls) == 1 and len(gen.steps) >= 1


def test_nan_weight_is_refused_by_name():
    from seqgrad.errors import NonFiniteError

    dec = Decoder.random(5, 8, 2, 16, seed=12)
    with torch.no_grad():
        dec.blocks[0].cross_attention.W_O[0, 0] = float("nan")
    with pytest.raises(NonFiniteError, match="cross_attention.W_O"):
        dec.decode(torch.zeros(3, 8, dtype=torch.float64), torch.zeros(2, 8, dtype=torch.float64))
    big = Decoder.random(5, 8, 2, 16, seed=12, dtype=torch.float32)
    with torch.no_grad():
        for p in big.parameters():
            p.fill_(3e37)  # sums overflow to inf, every entry is finite: still accepted
    big.check_weights()
