"""The decoder and the encoder-decoder model, group "decoder".

The numeric decoder (numeric/decoder.py) against ``torch.nn.TransformerDecoderLayer``,
``TransformerDecoder`` and ``Transformer`` with the same weights (outputs and the gradient of every
weight, of the target input and of the encoder memory); the derivations of derive/decoder.py (the
cross-attention backward pass, the causal block structure and its counterexample, the parameter counts)
against direct differentiation, autograd and the torch modules' ``numel``; and the lesson's decoder
examples and tasks (seed 001 l.176-184, tasks 14-16 and 29).
"""

from __future__ import annotations

import random
import warnings
from functools import lru_cache

import sympy as sp
import torch

from seqgrad.derive import counting
from seqgrad.derive import decoder as d_decoder
from seqgrad.derive.proof import rational_zero
from seqgrad.numeric.attention import MultiHeadAttention, attention_mask
from seqgrad.numeric.decoder import Decoder, DecoderBlock, EncoderDecoder, cross_mask, lesson_example
from seqgrad.numeric.encoder import EncoderBlock
from seqgrad.numeric.layernorm import LayerNorm

from .. import decoder_twins
from ..registry import check
from ..tolerance import Outcome, combine

GROUP = "decoder"
B, T, T_SRC, D, HEADS, F_WIDTH = 3, 5, 4, 8, 2, 16
TGT_VALID = [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0]]  # right-padded targets
SRC_VALID = [[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]]


def _randomize_norms(module: torch.nn.Module, g: torch.Generator) -> None:
    with torch.no_grad():
        for ln in module.modules():
            if isinstance(ln, LayerNorm):
                ln.gamma.copy_(1 + 0.3 * torch.randn(ln.D, generator=g, dtype=torch.float64))
                ln.beta.copy_(0.3 * torch.randn(ln.D, generator=g, dtype=torch.float64))


def _inputs(ctx, g, dev, dt, *shapes):
    return [torch.randn(*s, generator=g, dtype=torch.float64).to(dt).to(dev) for s in shapes]


def _against_twin(ctx, ours, twin, run_ours, run_twin, inputs, names) -> Outcome:
    """Outputs, the gradients of every input and every weight, ours against the twin, loss sum(W o out)."""
    a = [x.clone().requires_grad_() for x in inputs]
    b = [x.clone().requires_grad_() for x in inputs]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Support for mismatched key_padding_mask")
        out_a, out_b = run_ours(*a), run_twin(*b)
        W = torch.randn(out_a.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64).to(out_a)
        (out_a * W).sum().backward()
        (out_b * W).sum().backward()
    outcomes = [ctx.compare(out_a, out_b, detail="outputs")]
    outcomes += [ctx.compare(x.grad, y.grad, detail=f"dL/d{n}") for n, x, y in zip(names, a, b)]
    pairs = decoder_twins.gradient_pairs(ours, twin)
    outcomes += [ctx.compare(x, y) for _, x, y in pairs]
    return combine(outcomes, f"outputs, gradients of {', '.join(names)} and of {len(pairs)} weights (batch {inputs[0].shape[0]}, "
                             "causal + target and source padding)")


def _masks(dev, dt):
    tgt, src = torch.tensor(TGT_VALID, dtype=torch.bool, device=dev), torch.tensor(SRC_VALID, dtype=torch.bool, device=dev)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(T, dtype=dt, device=dev)
    return tgt, src, causal


@check("decoder.layer_vs_torch", needs_torch=True, source="lesson §Formula:166-172; wiki §Decoder architecture:86-98", group=GROUP)
def layer_vs_torch(ctx) -> Outcome:
    """Decoder block (pre- and post-norm) against torch.nn.TransformerDecoderLayer, same weights."""
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    g = ctx.torch_generator()
    tgt, src, causal = _masks(dev, dt)
    outcomes = []
    for norm_first in (True, False):
        block = DecoderBlock.random(D, HEADS, F_WIDTH, norm_first=norm_first, bias=True, generator=g, dtype=dt, device=dev)
        _randomize_norms(block, g)
        twin = decoder_twins.decoder_layer(block)
        M_self = attention_mask(T, causal=True, padding=tgt, dtype=dt, device=dev)
        M_cross = cross_mask(T, src, T_SRC, dtype=dt, device=dev)
        outcomes.append(_against_twin(
            ctx, block, twin, lambda h, z: block(h, z, M_self, M_cross),
            lambda h, z: twin(h, z, tgt_mask=causal, tgt_key_padding_mask=~tgt, memory_key_padding_mask=~src),
            _inputs(ctx, g, dev, dt, (B, T, D), (B, T_SRC, D)), ("H", "H_enc")))
    return combine(outcomes)


@check("decoder.stack_vs_torch", needs_torch=True, source="lesson §Formula:166-172 (N = 6 layers, l.130)", group=GROUP)
def stack_vs_torch(ctx) -> Outcome:
    """A 3-block decoder with final LayerNorm against torch.nn.TransformerDecoder."""
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    g = ctx.torch_generator()
    tgt, src, causal = _masks(dev, dt)
    dec = Decoder.random(7, D, 4, F_WIDTH, 3, bias=True, seed=ctx.seed, dtype=dt, device=dev)
    _randomize_norms(dec, g)
    twin = decoder_twins.decoder_stack(dec)
    return _against_twin(ctx, dec, twin, lambda h, z: dec.decode(h, z, padding=tgt, memory_padding=src),
                         lambda h, z: twin(h, z, tgt_mask=causal, tgt_key_padding_mask=~tgt, memory_key_padding_mask=~src),
                         _inputs(ctx, g, dev, dt, (B, T, D), (B, T_SRC, D)), ("H", "H_enc"))


@check("decoder.transformer_vs_torch", needs_torch=True, source="lesson §Intuition:160-164; wiki §Decoder architecture:88", group=GROUP)
def transformer_vs_torch(ctx) -> Outcome:
    """Encoder-decoder stacks (2 + 2 blocks) against torch.nn.Transformer: the gradient reaches the source through the memory."""
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    g = ctx.torch_generator()
    tgt, src, causal = _masks(dev, dt)
    model = EncoderDecoder.random(5, 6, D, HEADS, F_WIDTH, 2, seed=ctx.seed, dtype=dt, device=dev)
    _randomize_norms(model, g)
    twin = decoder_twins.transformer(model)
    out = _against_twin(
        ctx, model, twin,
        lambda s, t: model.decoder.decode(t, model.encoder.encode(s, padding=src), padding=tgt, memory_padding=src),
        lambda s, t: twin(s, t, tgt_mask=causal, src_key_padding_mask=~src, tgt_key_padding_mask=~tgt, memory_key_padding_mask=~src),
        _inputs(ctx, g, dev, dt, (B, T_SRC, D), (B, T, D)), ("source", "target"))
    return out


# ----------------------------------------------------------------------------- derivations

@check("decoder.cross_attention_backward", needs_torch=True, source="lesson §Formula:172; wiki §Decoder architecture:96", group=GROUP)
def cross_attention_backward(ctx) -> Outcome:
    """The cross-attention backward pass (dX, dZ, dW_Q, dW_K, dW_V) is the program of
    derive.blocks.cross_attention_program, derived by the rule table at symbolic T, T_src, d, d_k, d_v and so
    proved for every size; second evidence: exact against differentiation at T = T_src = 2, width 1; then the
    program, compiled once, against autograd of the numeric cross-attention at T = 3, T_src = 2 and at the
    decoder checks' T = 5, T_src = 4, d = 8, d_k = 3, d_v = 2."""
    from seqgrad.derive.blocks import prove_program

    from .. import blocks as c_blocks

    block = c_blocks.program("cross-attention")
    general = prove_program(block)
    small = d_decoder.CrossAttention(2, 2, 1, 1)
    back = small.backward()
    residual = [e for n in small.parameters for e in (back[n] - small.gradient_by_differentiation(n)) if rational_zero(e) != 0]
    out = [Outcome.exact(general.holds, f"symbolic size: {general.summary()}"),
           Outcome.exact(not residual, "exact at T = T_src = 2: backward pass = differentiation of sum G o O")]
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    g = ctx.torch_generator()
    for T_, T_src_, d_, d_k_, d_v_ in ((3, 2, 2, 2, 2), (T, T_SRC, D, 3, 2)):
        mha = MultiHeadAttention.random(d_, 1, d_k=d_k_, d_v=d_v_, generator=g, dtype=dt, device=dev)
        X, Z, G = _inputs(ctx, g, dev, dt, (T_, d_), (T_src_, d_), (T_, d_v_))
        X.requires_grad_(), Z.requires_grad_()
        h0 = mha.heads[0]
        (h0(X, memory=Z) * G).sum().backward()
        leaves = {"X": X, "Z": Z, "W_Q": h0.W_Q, "W_K": h0.W_K, "W_V": h0.W_V}
        sizes = {"T": T_, "T_src": T_src_, "d": d_, "d_k": d_k_, "d_v": d_v_}
        derived = c_blocks.call("cross-attention", {n: t.detach() for n, t in leaves.items()}, G, sizes)
        out += [ctx.compare(value, leaves[n].grad, detail=f"d{n} at T = {T_}, T_src = {T_src_}")
                for n, value in zip(block.gradients, derived[1:])]
    return combine(out)


@check("decoder.block_backward", needs_torch=True, source="lesson §Formula:166-172 (the pre-norm decoder layer); wiki §Decoder architecture:96",
       group=GROUP)
def block_backward(ctx) -> Outcome:
    """The decoder block's backward pass at the level of its sublayers (derive.blocks.decoder_block_rows: dU_cross = dH' +
    the MLP branch's, dU_self = dU_cross + the cross-attention branch's, dH = dU_self + the self-attention branch's, and the
    memory's dZ = sum over the heads of dK_cross^[i] W_K,cross^[i] + dV_cross^[i] W_V,cross^[i]): the rows are the
    lines of derive.blocks.decoder_block_program (checked as they are read off), and that program, compiled once,
    agrees with autograd of a plain torch decoder block (causal mask, two heads in each attention) at random sizes."""
    from seqgrad.derive import blocks as d_blocks

    from .. import blocks as c_blocks

    rows = d_blocks.decoder_block_rows(heads=HEADS)  # raises unless every printed row is the program's line
    dev, dt = ctx.dev, ctx.dt
    g = ctx.torch_generator()
    draw = lambda lo, hi: int(torch.randint(lo, hi + 1, (1,), generator=g))  # noqa: E731
    sizes = [{"T": draw(1, 6), "T_src": draw(1, 6), "d": draw(2, 6), "d_k": draw(1, 4), "d_v": draw(1, 4),
              "d_ff": draw(1, 8)} for _ in range(2)]
    out = [Outcome.exact(len(rows) == len(d_blocks.DECODER_SUBLAYER_LINES), "the printed rows are the program's lines")]
    out += [ctx.compare(derived, reference, detail=f"n_head={HEADS} " + " ".join(f"{k}={v}" for k, v in s.items()) + f": {name}")
            for s in sizes for name, derived, reference in c_blocks.compare_decoder_at(s, g, HEADS, dt, dev)]
    return combine(out, "causal mask; sizes " + "; ".join(", ".join(f"{k}={v}" for k, v in s.items()) for s in sizes))


@check("decoder.causal_blocks_zero", needs_torch=True, source="lesson §Formula:170 (M_ij = -inf for j > i); lesson §Why it matters:188", group=GROUP)
def causal_blocks_zero(ctx) -> Outcome:
    """Output row i of a decoder block does not depend on target rows j > i: proved from the symbolic sublayers
    (pre- and post-norm), and the autograd Jacobian blocks of a numeric 2-block decoder are exactly 0."""
    proofs = [d_decoder.DecoderBlock(norm_first=nf).causal_proof()[0] for nf in (True, False)]
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    g = ctx.torch_generator()
    dec = Decoder.random(4, D, HEADS, F_WIDTH, 2, seed=ctx.seed, dtype=dt, device=dev)
    H0, Z = _inputs(ctx, g, dev, dt, (T, D), (T_SRC, D))
    J = torch.autograd.functional.jacobian(lambda h: dec.decode(h, Z), H0).abs().sum(dim=(1, 3))  # (T out, T in)
    upper = torch.triu_indices(T, T, 1)
    future = J[upper[0], upper[1]]
    ok = all(proofs) and bool((future == 0).all()) and bool((J.diagonal() > 0).all())
    return Outcome(float(future.max()), float(future.max()), ok,
                   f"symbolic proof pre-norm {proofs[0]}, post-norm {proofs[1]}; autograd: max |dH'_i/dH_j| for j > i = "
                   f"{float(future.max()):.3g} (must be exactly 0), diagonal blocks all nonzero")


@check("decoder.causal_counterexample", needs_torch=True, source="lesson §Medium tasks:234 (task 20: without the mask the model copies the future)", group=GROUP)
def causal_counterexample(ctx) -> Outcome:
    """Without the mask the future leaks: the dependence proof fails, d O_0/d x_3 is nonzero at an exact point, and the
    numeric decoder's Jacobian has nonzero blocks above the diagonal."""
    unmasked = d_decoder.DecoderBlock(causal=False)
    leaked = not unmasked.causal_proof()[0]
    value = abs(float(sp.N(unmasked.counterexample(), 30)))
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    g = ctx.torch_generator()
    dec = Decoder.random(4, D, HEADS, F_WIDTH, 1, seed=ctx.seed, dtype=dt, device=dev)
    H0, Z = _inputs(ctx, g, dev, dt, (T, D), (T_SRC, D))
    J = torch.autograd.functional.jacobian(lambda h: dec.decode(h, Z, causal=False), H0).abs().sum(dim=(1, 3))
    upper = torch.triu_indices(T, T, 1)
    smallest = float(J[upper[0], upper[1]].min())
    return Outcome(0.0, 0.0, leaked and value > 1e-6 and smallest > 1e-8,
                   f"dependence proof fails without the mask: {leaked}; |dO_0/dx_3| = {value:.4g} at an exact point; "
                   f"smallest future block of the numeric Jacobian {smallest:.3g}")


@check("decoder.memory_gradient_every_position", needs_torch=True, source="lesson §Worked examples:182 (K, V from the encoder)", group=GROUP)
def memory_gradient_every_position(ctx) -> Outcome:
    """Every memory position receives gradient through cross-attention (every decoder row depends on every memory
    row, proved from the sublayers), and a padded source position receives exactly none."""
    proved = d_decoder.DecoderBlock().memory_reaches_every_row()
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    g = ctx.torch_generator()
    dec = Decoder.random(4, D, HEADS, F_WIDTH, 1, seed=ctx.seed, dtype=dt, device=dev)
    H0, Z = _inputs(ctx, g, dev, dt, (T, D), (T_SRC, D))
    Z.requires_grad_()
    dec.decode(H0, Z).pow(2).sum().backward()
    full = Z.grad.abs().sum(-1)
    Z2 = Z.detach().clone().requires_grad_()
    valid = torch.tensor([1, 1, 1, 0], dtype=torch.bool, device=dev)
    dec.decode(H0, Z2, memory_padding=valid).pow(2).sum().backward()
    padded = Z2.grad.abs().sum(-1)
    ok = proved and bool((full > 0).all()) and float(padded[-1]) == 0.0 and bool((padded[:-1] > 0).all())
    return Outcome(float(padded[-1]), 0.0, ok, f"proof {proved}; |dL/dZ_j| per memory row {[f'{v:.3g}' for v in full.tolist()]}; "
                                             f"with the last source position padded: {[f'{v:.3g}' for v in padded.tolist()]}")


# ----------------------------------------------------------------------------- counts

def _numel(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


@check("decoder.count_tasks_14_16", source="lesson §Medium tasks:222-226 (tasks 14-16; l.254 confirms 262,144 and 4.72M)", group=GROUP)
def count_tasks_14_16(ctx) -> Outcome:
    """Task 14: 4 d^2 = 262,144; task 15: FFN 524,288, layer 786,432; task 16: N = 6 stack 4,718,592 (no biases, no norms),
    as formulas and as torch module numel (bias=False, norms excluded)."""
    att = counting.attention_params(256, 4)
    ffn = counting.ffn_params(256, 1024)
    layer = counting.encoder_layer_params(256, 4, 1024, bias=False, norms=False)
    stack = counting.stack_params(6, d_model=256, heads=4, d_ff=1024, bias=False, norms=False)
    mha = torch.nn.MultiheadAttention(256, 4, bias=False, device="meta")
    enc = torch.nn.TransformerEncoderLayer(256, 4, 1024, bias=False, device="meta")
    enc_numel = _numel(enc) - sum(p.numel() for n, p in enc.named_parameters() if n.startswith("norm"))
    computed = [int(att), int(ffn), int(layer), int(stack), _numel(mha), enc_numel]
    expected = [262144, 524288, 786432, 4718592, 262144, 786432]
    ok = computed == expected
    return Outcome(0.0 if ok else float("inf"), 0.0 if ok else float("inf"), ok,
                   f"attention {computed[0]:,}, FFN {computed[1]:,}, layer {computed[2]:,}, stack {computed[3]:,}; "
                   f"torch numel: MultiheadAttention {computed[4]:,}, TransformerEncoderLayer without norms {computed[5]:,}")


@check("decoder.count_task_29", source="lesson §Advanced tasks:254 (task 29: 4,718,592 + 6 x 262,144)", group=GROUP)
def count_task_29(ctx) -> Outcome:
    """Task 29: the N = 6 decoder stack = encoder stack + one cross-attention per layer = 6,291,456 without biases, equal to
    torch.nn.TransformerDecoder numel (bias=False, norms excluded); TransformerDecoderLayer(256, 4, 1024) = 1,053,440."""
    t = d_decoder.task29()
    layer = d_decoder.decoder_layer_params(256, 4, 1024)
    general = d_decoder.decoder_layer_params() - (8 * counting.d_model ** 2 + 2 * counting.d_model * counting.d_ff
                                                  + 15 * counting.d_model + counting.d_ff)
    dec = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(256, 4, 1024, bias=False, device="meta"), 6)
    no_norms = _numel(dec) - sum(p.numel() for n, p in dec.named_parameters() if ".norm" in n)
    with_bias = _numel(torch.nn.TransformerDecoderLayer(256, 4, 1024, device="meta"))
    stack_torch = _numel(torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(256, 4, 1024, device="meta"), 6,
                                                     norm=torch.nn.LayerNorm(256, device="meta")))
    stack_formula = d_decoder.decoder_stack_params(6, final_norm=True, d_model=256, heads=4, d_ff=1024)
    ok = (t["lesson_sum"] == t["decoder_stack"] == no_norms == 6291456 and layer == with_bias == 1053440
          and sp.expand(general) == 0 and stack_formula == stack_torch)
    return Outcome(0.0 if ok else float("inf"), 0.0 if ok else float("inf"), ok,
                   f"4,718,592 + 6 x 262,144 = {int(t['lesson_sum']):,}; decoder stack formula {int(t['decoder_stack']):,}, "
                   f"torch numel {no_norms:,}; layer with biases and norms: formula {int(layer):,}, torch {with_bias:,}; "
                   f"stack of 6 with final norm: formula {int(stack_formula):,}, torch {stack_torch:,}; "
                   f"general: 8 d^2 + 2 d d_ff + 15 d + d_ff")


@check("decoder.decoder_only", needs_torch=True, source="lesson §Why it matters:188; lesson §Common mistakes:258-270 (GPT is decoder-only)", group=GROUP)
def decoder_only(ctx) -> Outcome:
    """A decoder-only layer needs no cross-attention: its count is the encoder layer's (torch numel of
    TransformerEncoderLayer), one attention fewer than the decoder layer, and a causal encoder block is causal."""
    formula = d_decoder.decoder_layer_params(256, 4, 1024, cross=False)
    torch_enc = _numel(torch.nn.TransformerEncoderLayer(256, 4, 1024, device="meta"))
    diff = d_decoder.decoder_layer_params(256, 4, 1024) - formula
    extra = counting.attention_params(256, 4, bias=True) + counting.layernorm_params(256)
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    block = EncoderBlock.random(D, HEADS, F_WIDTH, generator=ctx.torch_generator(), dtype=dt, device=dev)
    H = torch.randn(T, D, generator=ctx.torch_generator(), dtype=torch.float64).to(dt).to(dev)
    J = torch.autograd.functional.jacobian(lambda h: block(h, attention_mask(T, causal=True, dtype=dt, device=dev)), H)
    upper = torch.triu_indices(T, T, 1)
    future = float(J.abs().sum(dim=(1, 3))[upper[0], upper[1]].max())
    ok = formula == torch_enc and diff == extra and future == 0.0
    return Outcome(future, future, ok, f"decoder-only layer {int(formula):,} = TransformerEncoderLayer numel {torch_enc:,}; "
                                       f"the encoder-decoder's layer has one attention and one norm more ({int(diff):,}); "
                                       f"causal encoder block: future Jacobian blocks {future:.3g}")


# ----------------------------------------------------------------------------- the lesson's examples

@check("decoder.lesson_mask_example", needs_torch=True, source="lesson §Worked examples:176-180 (Ex. 1)", group=GROUP)
def lesson_mask_example(ctx) -> Outcome:
    """Ex. 1: the 4 x 4 causal mask, row i = 2 is [0, 0, 0, -inf]; with scores [1.2, 0.5, 2.0, 1.8] the 4th weight is
    exactly 0 and the rest renormalise: (0.2687, 0.1334, 0.5979, 0) (the printed 0.31, 0.15, 0.54 is a separate erratum)."""
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    M = attention_mask(4, causal=True, dtype=dt, device=dev)
    row = M[2]
    scores = torch.tensor([1.2, 0.5, 2.0, 1.8], dtype=dt, device=dev)
    A = torch.softmax(scores + row, dim=-1)
    e = torch.exp(torch.tensor([1.2, 0.5, 2.0], dtype=torch.float64))
    ref = torch.cat([e / e.sum(), torch.zeros(1, dtype=torch.float64)])
    shape_ok = row[:3].eq(0).all() and bool(torch.isinf(row[3])) and float(A[3]) == 0.0
    out = ctx.compare(A, ref, detail=f"weights {[round(float(a), 4) for a in A]}")
    return Outcome(out.max_abs_error, out.max_rel_error, out.passed and bool(shape_ok), out.detail + "; 4th weight exactly 0")


@lru_cache(maxsize=2)
def _trained(seed: int):
    return lesson_example(seed=seed)


@check("decoder.lesson_generation", source="lesson §Worked examples:184 (Ex. 3: I love ML -> Ya lyublyu MO)", group=GROUP)
def lesson_generation(ctx) -> Outcome:
    """Ex. 3 with a toy vocabulary: after teacher forcing on the pair, greedy generation sees position 0 and predicts 'ya',
    sees 0-1 and predicts 'lyublyu', then 'MO' and <end> (Cyrillic in the vocabulary); the encoder runs once."""
    model, sv, tv, losses = _trained(ctx.seed)
    calls = []
    hook = model.encoder.register_forward_hook(lambda *a: calls.append(1))
    try:
        gen = model.generate(sv.encode("I love ML"), 10)
    finally:
        hook.remove()
    words = tv.decode(gen.ids)
    ok = (words == ["<start>", "я", "люблю", "мо", "<end>"] and [s.visible for s in gen.steps] == [[0], [0, 1], [0, 1, 2], [0, 1, 2, 3]]
          and len(calls) == 1 and losses[-1] < losses[0])
    latin = {"я": "ya", "люблю": "lyublyu", "мо": "MO"}  # transliterated, so the LaTeX report prints it
    return Outcome(0.0, 0.0, ok, f"generated {' '.join(latin.get(w, w) for w in words)} in {len(gen.steps)} steps (stopped at {gen.stopped}); encoder calls "
                                 f"{len(calls)}; teacher-forcing loss {losses[0]:.3f} -> {losses[-1]:.2e}")


@check("decoder.teacher_forcing_is_parallel_generation", needs_torch=True, source="lesson §Worked examples:184 (training runs all steps in one pass)", group=GROUP)
def teacher_forcing_parallel(ctx) -> Outcome:
    """The teacher-forced pass over <start> y_1 .. y_n gives at position t the same logits as the generation step that
    sees positions 0..t (the causal mask makes the parallel pass equal the sequential one)."""
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    model = EncoderDecoder.random(5, 7, D, HEADS, F_WIDTH, 2, seed=ctx.seed, dtype=dt, device=dev)
    rng = random.Random(ctx.seed)
    src = torch.tensor([rng.randrange(5) for _ in range(4)], device=dev)
    tgt = torch.tensor([0] + [rng.randrange(7) for _ in range(5)], device=dev)
    with torch.no_grad():
        parallel = model.logits(src, tgt)
        H_enc = model.memory(src)
        steps = torch.stack([model.step(H_enc, tgt[:t + 1]) for t in range(len(tgt))])
    return ctx.compare(parallel, steps, detail=f"{len(tgt)} positions: parallel teacher-forced logits = step-by-step logits")
