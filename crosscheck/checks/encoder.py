"""Checks of the numeric Transformer encoder: the course's printed tables and
``torch.nn`` twins (LayerNorm, MultiheadAttention, TransformerEncoderLayer)."""

from __future__ import annotations

import torch

from seqgrad.numeric import course
from seqgrad.numeric.attention import attention_mask
from seqgrad.numeric.encoder import Encoder, EncoderBlock
from seqgrad.numeric.layernorm import LayerNorm

from .. import course_tables as tables, encoder_twins
from ..registry import check
from ..tolerance import Outcome, combine, tolerance

GROUP = "encoder"


def _randomize_norms(block: EncoderBlock, g: torch.Generator) -> None:
    with torch.no_grad():
        for ln in (block.ln1, block.ln2):
            ln.gamma.copy_(1 + 0.3 * torch.randn(ln.D, generator=g, dtype=torch.float64))
            ln.beta.copy_(0.3 * torch.randn(ln.D, generator=g, dtype=torch.float64))


@check("encoder.course_tables", needs_torch=True, source="week06 Tables 10-31 and the inline values, week06 §Tokens:518-1167", group=GROUP)
def course_tables(ctx) -> Outcome:
    """Every printed number of the worked example, within half a unit of the 3rd significant figure."""
    traces = {s: course.trace(s, device=ctx.dev, dtype=ctx.dt) for s in course.STAGES}
    slack = 0.0 if ctx.dtype == "float64" else tolerance(ctx.dtype, ctx.device).atol
    results = tables.compare(traces, slack)
    bad = [r for r in results if not r.ok]
    worst = max(results, key=lambda r: r.error_in_half_units)
    detail = (f"{len(results) - len(bad)}/{len(results)} printed numbers reproduced; "
              f"closest to the bound: {worst.cell.label()} computed {worst.computed:.9g} "
              f"({worst.error_in_half_units:.4f} half-units)")
    if bad:
        detail = f"{len(bad)} mismatches, first: {bad[0].cell.label()} computed {bad[0].computed:.6g}; " + detail
    rel = max(r.error / max(abs(r.cell.printed), 1e-12) for r in results)
    # a comparison with printed figures: its measure is the last printed digit, not double precision
    return Outcome(max(r.error for r in results), rel, not bad, detail, units=worst.error_in_half_units / 2)


@check("encoder.layernorm_vs_torch", needs_torch=True, source="LayerNorm, week06 §Block:971-981", group=GROUP)
def layernorm_vs_torch(ctx) -> Outcome:
    """Manual LayerNorm (population variance, eps=1e-5) against torch.nn.LayerNorm, random gamma and beta."""
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    g = ctx.torch_generator()
    D = 7
    ln = LayerNorm(D, gamma=1 + torch.randn(D, generator=g), beta=torch.randn(D, generator=g), dtype=dt, device=dev)
    twin = encoder_twins.layer_norm(ln)
    H = (torch.randn(4, 9, D, generator=g, dtype=torch.float64) * 3 + 1).to(dt).to(dev)
    record: dict = {}
    with torch.no_grad():
        ref = twin(H)
        outs = [ctx.compare(ln(H, record, "LN"), ref, detail="recorded path"),
                ctx.compare(ln(H), ref, detail="fused path"),
                ctx.compare(record["LN.var"], H.var(dim=-1, unbiased=False))]
    return combine(outs, "LN(H) equals torch.nn.LayerNorm on 4x9x7 random rows (both paths); variance is the population one")


@check("encoder.mha_vs_torch", needs_torch=True, source="multi-head attention, week06 §Heads:813-930", group=GROUP)
def mha_vs_torch(ctx) -> Outcome:
    """Two-head attention with biases against torch.nn.MultiheadAttention: outputs and per-head weights, with and without masks."""
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    g = ctx.torch_generator()
    from seqgrad.numeric.attention import MultiHeadAttention

    B, T, D, n = 3, 6, 8, 2
    mha = MultiHeadAttention.random(D, n, bias=True, generator=g, dtype=dt, device=dev)
    twin = encoder_twins.multihead_attention(mha)
    X = torch.randn(B, T, D, generator=g, dtype=torch.float64).to(dt).to(dev)
    pad = torch.ones(B, T, dtype=torch.bool)
    pad[1, 4:] = False
    pad[2, 5:] = False
    causal = torch.triu(torch.ones(T, T, dtype=torch.bool), 1).to(dev)
    outs = []
    with torch.no_grad():
        for label, M, kw in (
            ("no mask", None, {}),
            ("causal", attention_mask(T, causal=True, dtype=dt, device=dev), dict(attn_mask=causal)),
            ("padding+causal", attention_mask(T, causal=True, padding=pad, dtype=dt, device=dev),
             dict(attn_mask=causal, key_padding_mask=~pad.to(dev))),
        ):
            ref, weights = twin(X, X, X, need_weights=True, average_attn_weights=False, **kw)
            record: dict = {}
            outs.append(ctx.compare(mha(X, M, record), ref, detail=label))
            outs.append(ctx.compare(mha(X, M), ref, detail=label + " fused"))
            for i in range(n):
                outs.append(ctx.compare(record[f"head{i + 1}.A"], weights[:, i]))
    return combine(outs, "outputs (recorded and fused paths) and per-head weights equal nn.MultiheadAttention; masks: none, causal, padding+causal")


def _layer_check(ctx, norm_first: bool) -> Outcome:
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    g = ctx.torch_generator()
    outs = []
    B, T, D = 2, 7, 8
    for activation in ("relu", "gelu"):
        block = EncoderBlock.random(D, 2, 12, norm_first=norm_first, activation=activation, bias=True, generator=g, dtype=dt, device=dev)
        _randomize_norms(block, g)
        twin = encoder_twins.encoder_layer(block)
        H = torch.randn(B, T, D, generator=g, dtype=torch.float64).to(dt).to(dev)
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool, device=dev), 1)
        with torch.no_grad():
            for label, M, kw in (("unrestricted", None, {}),
                                 ("causal", attention_mask(T, causal=True, dtype=dt, device=dev), dict(src_mask=causal))):
                ref = twin(H, **kw)
                outs.append(ctx.compare(block(H, M, {}, ""), ref, detail=f"{activation} {label}"))
                outs.append(ctx.compare(block(H, M), ref, detail=f"{activation} {label} fused"))
    kind = "pre-norm" if norm_first else "post-norm"
    return combine(outs, f"{kind} block equals nn.TransformerEncoderLayer(norm_first={norm_first}, dropout=0); ReLU and GELU; unrestricted and causal")


@check("encoder.prenorm_layer_vs_torch", needs_torch=True, source="pre-norm block, week06 §Block:946", group=GROUP)
def prenorm_layer_vs_torch(ctx) -> Outcome:
    """Pre-norm block against torch.nn.TransformerEncoderLayer(norm_first=True), random weights, biases and LN parameters."""
    return _layer_check(ctx, True)


@check("encoder.postnorm_layer_vs_torch", needs_torch=True, source="post-norm block, week06 §Depth:1185", group=GROUP)
def postnorm_layer_vs_torch(ctx) -> Outcome:
    """Post-norm block against torch.nn.TransformerEncoderLayer(norm_first=False), random weights, biases and LN parameters."""
    return _layer_check(ctx, False)


@check("encoder.stack_vs_torch", needs_torch=True, source="stack with final LayerNorm, week06 §Depth:1165", group=GROUP)
def stack_vs_torch(ctx) -> Outcome:
    """A 3-block pre-norm stack with final LayerNorm against torch.nn.TransformerEncoder, with padding."""
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    enc = Encoder.random(11, 8, 4, 16, n_blocks=3, bias=True, seed=ctx.seed + 5, dtype=dt, device=dev)
    twin = encoder_twins.encoder_stack(enc)
    g = ctx.torch_generator()
    H = torch.randn(2, 9, 8, generator=g, dtype=torch.float64).to(dt).to(dev)
    pad = torch.ones(2, 9, dtype=torch.bool)
    pad[0, 6:] = False
    with torch.no_grad():
        ref = twin(H, src_key_padding_mask=~pad.to(dev))
        mine = enc.encode(H, padding=pad)
    return ctx.compare(mine, ref,
                   detail="3 pre-norm blocks, 4 heads of width 2, padding mask, final LayerNorm")


@check("encoder.causal_journey_row", needs_torch=True, source="week06 Table 16, week06 §Mask:788", group=GROUP)
def causal_journey_row(ctx) -> Outcome:
    """The causal weights of journey (t=1) are (0.389, 0.611, 0, 0, 0, 0, 0); begins' causal row equals its unrestricted row."""
    tr = course.trace("attention_on_H0", device=ctx.dev, dtype=ctx.dt)
    Ac, A = tr["head1.A_causal"], tr["head1.A"]
    row = [float(a) for a in Ac[1]]
    # the printed row (Table 16) has 3 decimals: its measure is the last printed digit, not double precision
    printed = Outcome.printed(row, (0.389, 0.611, 0, 0, 0, 0, 0), detail=f"row 1 = ({', '.join(f'{a:.4g}' for a in row)})")
    zeros = Outcome.exact(bool((torch.triu(Ac, 1) == 0).all()), "the weights above the diagonal are exactly 0")
    last = ctx.compare(Ac[6], A[6])
    sums = ctx.compare(Ac.sum(-1), torch.ones(7, dtype=Ac.dtype, device=Ac.device))
    return combine([printed, zeros, last, sums])


@check("encoder.permutation_equivariance", needs_torch=True, source="week06 §Depth:1175", group=GROUP)
def permutation_equivariance(ctx) -> Outcome:
    """Without positions and with unrestricted attention, encoder(Pi H) = Pi encoder(H); the weights permute as Pi A Pi^T."""
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    enc = Encoder.random(9, 6, 2, 10, n_blocks=2, bias=True, seed=ctx.seed + 11, positions=None, dtype=dt, device=dev)
    g = ctx.torch_generator()
    H = torch.randn(8, 6, generator=g, dtype=torch.float64).to(dt).to(dev)
    pi = torch.randperm(8, generator=g).to(dev)
    r1, r2 = {}, {}
    with torch.no_grad():
        out = enc.encode(H, record=r1)
        out_p = enc.encode(H[pi], record=r2)
    A, A_p = r1["block0.head1.A"], r2["block0.head1.A"]
    return combine([ctx.compare(out_p, out[pi], detail="H_enc(Pi H) = Pi H_enc(H)"),
                    ctx.compare(A_p, A[pi][:, pi], detail="A(Pi H) = Pi A(H) Pi^T")])


@check("encoder.causal_prefix", needs_torch=True, source="week06 §Tasks:1275-1279", group=GROUP)
def causal_prefix(ctx) -> Outcome:
    """Row t of a causal stack on the whole sequence equals the last row of the same stack run on the prefix up to t."""
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    enc = Encoder.random(9, 8, 2, 16, n_blocks=2, seed=ctx.seed + 13, dtype=dt, device=dev)
    ids = torch.randint(0, 9, (10,), generator=ctx.torch_generator())
    with torch.no_grad():
        full = enc(ids, causal=True)
        outs = [ctx.compare(enc(ids[: t + 1], causal=True)[-1], full[t]) for t in range(10)]
    return combine(outs, "2-block causal stack, sinusoidal positions, T=10: every prefix")


@check("encoder.course_heads_not_in_torch", needs_torch=True, source="week06 §Heads:926", group=GROUP)
def course_heads_not_in_torch(ctx) -> Outcome:
    """torch.nn.MultiheadAttention refuses embed_dim=5 with 2 heads, so the course needs explicit 5->3 heads and a 6->5 map."""
    try:
        torch.nn.MultiheadAttention(5, 2)
        refused = False
    except AssertionError:
        refused = True
    mha = course.attention(device=ctx.dev, dtype=ctx.dt)
    shapes_ok = [tuple(h.W_Q.shape) for h in mha.heads] == [(3, 5), (3, 5)] and tuple(mha.W_O.shape) == (5, 6)
    return Outcome.exact(refused and shapes_ok, "torch refuses (5, 2); the course attention has heads 3x5 and W_O 5x6")
