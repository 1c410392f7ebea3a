"""The Transformer derivations of derive/ against torch autograd and the numeric encoder, group "transformer".

Every derived Jacobian or gradient is compiled to torch (:mod:`crosscheck.transformer_bridge`,
through :mod:`crosscheck.lambdify`) and evaluated on ``ctx.device`` in ``ctx.dtype``
(float64 by default; float32 under its looser tolerance);
the reference is ``torch.autograd.functional.jacobian`` or ``backward`` of the
numeric encoder's own modules (numeric/attention.py, layernorm.py, encoder.py).
Points: the course example's own parameters and intermediates (the rows of S,
H0, U and H1 of "a journey of a thousand miles begins") where the derivation
is per row, and random parameters otherwise.

Whole-sequence attention is the program of :func:`derive.blocks.attention_program`:
derived once at symbolic T, d, d_k, d_v by the rule table, compiled once, and
run at T = 3 and at the course's size (T = 7, D = 5, heads 5 -> 3).  The
backward pass gives the Jacobian row by row (G = each basis matrix), which the
block checks reuse.  The ``*_program`` checks compare whole programs
(attention, LayerNorm, pre-/post-norm blocks) with autograd at several sizes.
"""

from __future__ import annotations

from functools import lru_cache

import sympy as sp
import torch

from seqgrad.derive import attention as d_attention
from seqgrad.derive import layernorm as d_layernorm
from seqgrad.derive import residual as d_residual
from seqgrad.derive import softmax as d_softmax
from seqgrad.numeric import course
from seqgrad.numeric.attention import MultiHeadAttention
from seqgrad.numeric.encoder import MLP, EncoderBlock
from seqgrad.numeric.layernorm import LayerNorm

from .. import transformer_bridge as bridge
from ..registry import check
from ..tolerance import Outcome, combine

GROUP = "transformer"
EPS = 1e-5
T_ATT, D_BLOCK, D_K = 3, 3, 2  # whole-sequence derivations: 3 positions, width 3, two heads of width 2


def _jacobian(f, x: torch.Tensor) -> torch.Tensor:
    """Autograd's Jacobian of f at x, flattened to (out, in)."""
    J = torch.autograd.functional.jacobian(f, x)
    return J.reshape(-1, x.numel())


def _rows_jacobian(f, rows: torch.Tensor) -> torch.Tensor:
    """Autograd's Jacobian of a per-row map at every row: (B, d, d)."""
    return torch.stack([_jacobian(f, r) for r in rows])


# ----------------------------------------------------------------------------- compiled derivations (built once)

@lru_cache(maxsize=None)
def compiled_softmax(n: int):
    """derive.softmax: the closed form diag(a) - a a^T and the direct Jacobian, both as functions of the scores."""
    z = d_softmax.scores(n)
    return (bridge.compile_matrix(d_softmax.jacobian_closed_form(d_softmax.softmax(z)), z, "softmax_closed"),
            bridge.compile_matrix(d_softmax.jacobian(z), z, "softmax_direct"))


def ln_jacobian_rows(H: torch.Tensor, gamma: torch.Tensor) -> torch.Tensor:
    """The derived LayerNorm Jacobian at every row of H (B, d) -> (B, d, d), read off the one LayerNorm program
    (:func:`derive.blocks.norm_program`, backward from the rule table): row i of J_b is row b of dX for the
    upstream G whose every row is e_i (the closed form of derive.layernorm is a statement proved equal to it,
    catalogue ``layernorm-jacobian``, never what is compiled here)."""
    from .. import blocks as c_blocks

    B, d = H.shape
    values = {"X": H, "gamma": gamma.reshape(1, d), "beta": torch.zeros(1, d, dtype=H.dtype, device=H.device)}
    basis = torch.eye(d, dtype=H.dtype, device=H.device)
    at = 1 + list(c_blocks.program("layernorm").gradients).index("X")  # after the output
    rows = [c_blocks.call("layernorm", values, basis[i].expand(B, d), {"T": B, "d": d})[at] for i in range(d)]
    return torch.stack(rows, 1)  # [b, i, :] = dX_b for G_b = e_i


@lru_cache(maxsize=None)
def compiled_residual(d: int, placement: str):
    """derive.residual: the closed form (I + J_F, I + J_F J_LN or J_LN (I + J_F)) with the branch terms as inputs."""
    rj = d_residual.ResidualJacobian(d, placement)
    bs = bridge.branch_inputs(rj.closed, rj.F)
    args = rj.h + bs.F + [s for row in bs.J for s in row] + [d_layernorm.EPS]
    return bridge.compile_matrix(bs.expr, args, f"residual_{placement}")


def head_gradients(head, X: torch.Tensor, G: torch.Tensor) -> dict[str, torch.Tensor]:
    """The derived gradients dX, dW_Q, dW_K, dW_V of one numeric head for a batch of upstream G (B, T, d_v).

    The formulas are :func:`derive.blocks.attention_program`'s backward pass (symbolic T, d, d_k, d_v; the rule
    table's dV = A^T G, dA = G V^T, dS = A o (dA - rowsum(dA o A)), dQ, dK), compiled once through
    crosscheck.lambdify and run here at the head's own sizes.
    """
    from .. import blocks as c_blocks

    block, f = c_blocks.compiled("attention")
    T, D = X.shape
    weights = [getattr(head, n).detach() for n in ("W_Q", "W_K", "W_V")]
    sizes = [torch.tensor(float(n), dtype=X.dtype, device=X.device) for n in (T, D, head.d_k, head.d_v)]
    rows = [f(X.detach(), *weights, g, *sizes)[1:] for g in G]
    names = list(block.gradients)
    return {n: torch.stack([r[i] for r in rows]) for i, n in enumerate(names)}


def mha_jacobian(mha: MultiHeadAttention, X: torch.Tensor) -> torch.Tensor:
    """d vec(B_att) / d vec(X) from the derived backward pass: G_B = each basis matrix, G_C = G_B W_O, split per head."""
    T, D = X.shape
    n = T * D
    G_B = torch.eye(n, dtype=X.dtype, device=X.device).reshape(n, T, D)
    G_C = G_B @ mha.W_O.detach()
    rows, start = 0, 0
    for head in mha.heads:
        rows = rows + head_gradients(head, X, G_C[..., start:start + head.d_v])["X"]
        start += head.d_v
    return rows.reshape(n, n)  # row k: the gradient of output entry k


def block_diag_rows(blocks: torch.Tensor) -> torch.Tensor:
    return torch.block_diag(*blocks.unbind())


def mlp_jacobian_rows(mlp: MLP, R: torch.Tensor) -> torch.Tensor:
    """The MLP branch is generic in derive.residual: its own Jacobian, per row, by autograd."""
    return _rows_jacobian(lambda r: mlp(r), R)


def block_jacobian_formula(block: EncoderBlock, H: torch.Tensor) -> torch.Tensor:
    """derive.residual's block formulas with the derived LayerNorm and attention Jacobians:

    pre-norm   dH'/dH = (I + J_MLP(R) J_LN2(U)) (I + J_MHA(X) J_LN1(H))   (the second bypass carries U)
    post-norm  dH'/dH = J_LN2(U + MLP(U)) (I + J_MLP(U)) J_LN1(H + MHA(H)) (I + J_MHA(H))
    """
    T, D = H.shape
    I = torch.eye(T * D, dtype=H.dtype, device=H.device)
    with torch.no_grad():
        if block.norm_first:
            X = block.ln1(H)
            U = H + block.attention(X)
            R = block.ln2(U)
            first = I + mha_jacobian(block.attention, X) @ block_diag_rows(ln_jacobian_rows(H, block.ln1.gamma))
            second = I + block_diag_rows(mlp_jacobian_rows(block.mlp, R)) @ block_diag_rows(ln_jacobian_rows(U, block.ln2.gamma))
            return second @ first
        Z1 = H + block.attention(H)
        U = block.ln1(Z1)
        Z2 = U + block.mlp(U)
        first = block_diag_rows(ln_jacobian_rows(Z1, block.ln1.gamma)) @ (I + mha_jacobian(block.attention, H))
        second = block_diag_rows(ln_jacobian_rows(Z2, block.ln2.gamma)) @ (I + block_diag_rows(mlp_jacobian_rows(block.mlp, U)))
        return second @ first


def random_block(norm_first: bool, g: torch.Generator, dev, dt=torch.float64) -> EncoderBlock:
    """Two heads of width D_K reading width D_BLOCK, F = 4, biases in the MLP, random LayerNorm gamma and beta."""
    mha = MultiHeadAttention.random(D_BLOCK, 2, d_k=D_K, d_v=D_K, generator=g)
    mlp = EncoderBlock.random(D_BLOCK, 1, 4, generator=g).mlp
    ln = lambda: LayerNorm(D_BLOCK, gamma=1 + 0.3 * torch.randn(D_BLOCK, generator=g, dtype=torch.float64),
                           beta=0.3 * torch.randn(D_BLOCK, generator=g, dtype=torch.float64))
    return EncoderBlock(mha, mlp, ln(), ln(), norm_first=norm_first).to(dev, dt)


# ----------------------------------------------------------------------------- the checks

@check("transformer.softmax_jacobian", needs_torch=True, source="week06 §Attention:700-706 (row softmax); week06 Tables 12, 18 (the course's S)", group=GROUP)
def softmax_jacobian(ctx) -> Outcome:
    """derive.softmax's diag(a) - a a^T and direct Jacobian against autograd of torch.softmax: the course's 14 score rows and random rows."""
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    tr = course.trace("attention_on_H0", device=dev, dtype=ctx.dtype)
    S_course = torch.cat([tr["head1.S"], tr["head2.S"]])
    S_random = 3 * torch.randn(16, 7, generator=ctx.torch_generator(), dtype=torch.float64).to(dev, dt)
    closed, direct = compiled_softmax(7)
    outs = []
    for label, S in (("course S rows", S_course), ("random rows", S_random)):
        reference = _rows_jacobian(lambda z: torch.softmax(z, -1), S)
        for name, f in (("closed form", closed), ("direct", direct)):
            outs.append(ctx.compare(f(*bridge.columns(S)), reference, detail=f"{name}, {label}"))
    return combine(outs, "7 scores per row: 14 course rows (both heads) and 16 random rows; closed form and direct derivative")


@check("transformer.layernorm_jacobian", needs_torch=True, source="week06 §Block:971-975; course H0, U, H1 rows", group=GROUP)
def layernorm_jacobian(ctx) -> Outcome:
    """The LayerNorm program's Jacobian (derive.blocks, rows of its backward pass) against autograd of numeric LayerNorm: the course's LN1, LN2, LN_final inputs and random rows and gamma."""
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    tr = course.trace("prenorm_block", device=dev, dtype=ctx.dtype)
    g = ctx.torch_generator()
    outs = []
    ones = torch.ones(5, dtype=dt, device=dev)
    for name in ("H0", "block0.U", "H1"):
        ln = LayerNorm(5, dtype=dt, device=dev)
        outs.append(ctx.compare(ln_jacobian_rows(tr[name], ones), _rows_jacobian(ln, tr[name]), detail=f"course {name}"))
    gamma = (1 + torch.randn(5, generator=g, dtype=torch.float64)).to(dev, dt)
    ln = LayerNorm(5, gamma=gamma, beta=torch.randn(5, generator=g, dtype=torch.float64), dtype=dt, device=dev)
    H = (2 * torch.randn(12, 5, generator=g, dtype=torch.float64) + 1).to(dev, dt)
    outs.append(ctx.compare(ln_jacobian_rows(H, gamma), _rows_jacobian(ln, H), detail="random rows and gamma"))
    return combine(outs, "d = 5, eps = 1e-5 inside the root: 7 rows each of the course's H0, U, H1, and 12 random rows with random gamma, beta")


@check("transformer.residual_jacobians", needs_torch=True, source="week06 §Depth:1183-1191; lesson §Encoder:130-152", group=GROUP)
def residual_jacobians(ctx) -> Outcome:
    """derive.residual's plain (I + J_F), pre-norm (I + J_F J_LN) and post-norm (J_LN (I + J_F)) Jacobians with the numeric MLP as the branch, against autograd."""
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    g = ctx.torch_generator()
    d = 3
    mlp = EncoderBlock.random(d, 1, 4, generator=g).mlp.to(dev, dt)
    ln = LayerNorm(d, dtype=dt, device=dev)
    H = (1.5 * torch.randn(8, d, generator=g, dtype=torch.float64)).to(dev, dt)
    outs = []
    for placement, sublayer, branch_input in (
        ("plain", lambda h: h + mlp(h), lambda h: h),
        ("pre-norm", lambda h: h + mlp(ln(h)), ln),
        ("post-norm", lambda h: ln(h + mlp(h)), lambda h: h),
    ):
        with torch.no_grad():
            x = branch_input(H)
            F_x = mlp(x)
        J_F = mlp_jacobian_rows(mlp, x)
        f = compiled_residual(d, placement)
        B = H.shape[0]
        derived = f(*bridge.columns(H), *bridge.columns(F_x), *bridge.columns(J_F), H.new_full((B,), EPS))
        outs.append(ctx.compare(derived, _rows_jacobian(sublayer, H), detail=placement))
    return combine(outs, "d = 3, generic branch F = the numeric ReLU MLP (3 -> 4 -> 3, biases), 8 random rows")


@check("transformer.course_mlp_sublayer", needs_torch=True, source="week06 §Block:946, week06 §Block:1021-1033, week06 §Depth:1185 (course U rows)", group=GROUP)
def course_mlp_sublayer(ctx) -> Outcome:
    """At the course's own U rows and MLP: pre-norm I + J_MLP J_LN2 and post-norm J_LN2 (I + J_MLP), derived LN Jacobian, against autograd."""
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    tr = course.trace("prenorm_block", device=dev, dtype=ctx.dtype)
    block = course.encoder(device=dev, dtype=ctx.dtype).blocks[0]
    U = tr["block0.U"]
    I = torch.eye(5, dtype=U.dtype, device=dev)
    ones = torch.ones(5, dtype=U.dtype, device=dev)
    with torch.no_grad():
        R = block.ln2(U)
        Z = U + block.mlp(U)
    pre = I + mlp_jacobian_rows(block.mlp, R) @ ln_jacobian_rows(U, ones)
    post = ln_jacobian_rows(Z, ones) @ (I + mlp_jacobian_rows(block.mlp, U))
    return combine([
        ctx.compare(pre, _rows_jacobian(lambda u: u + block.mlp(block.ln2(u)), U), detail="pre-norm"),
        ctx.compare(post, _rows_jacobian(lambda u: block.ln2(u + block.mlp(u)), U), detail="post-norm"),
    ], "the course's 7 rows of U, its MLP (5 -> 4 -> 5, ReLU) and LN2 (gamma = 1, beta = 0)")


@check("transformer.attention_gradients", needs_torch=True, source="week06 §Attention:747 (S, A, O); derived backward pass", group=GROUP)
def attention_gradients(ctx) -> Outcome:
    """derive.attention's closed-form backward pass (dX, dW_Q, dW_K, dW_V) against backward of a numeric head, and the Jacobian dO/dX it gives."""
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    g = ctx.torch_generator()
    head = MultiHeadAttention.random(D_BLOCK, 1, d_k=D_K, d_v=D_K, generator=g).heads[0].to(dev, dt)
    X = torch.randn(T_ATT, D_BLOCK, generator=g, dtype=torch.float64).to(dev, dt).requires_grad_(True)
    G = torch.randn(T_ATT, D_K, generator=g, dtype=torch.float64).to(dev, dt)
    (head(X) * G).sum().backward()
    derived = head_gradients(head, X.detach(), G[None])
    outs = [ctx.compare(derived["X"][0], X.grad, detail="dX")]
    outs += [ctx.compare(derived[n][0], getattr(head, n).grad, detail=f"d{n}") for n in ("W_Q", "W_K", "W_V")]
    n_out = T_ATT * D_K
    basis = torch.eye(n_out, dtype=X.dtype, device=dev).reshape(n_out, T_ATT, D_K)
    J = head_gradients(head, X.detach(), basis)["X"].reshape(n_out, -1)
    outs.append(ctx.compare(J, _jacobian(lambda x: head(x), X.detach()), detail="dO/dX"))
    return combine(outs, f"T = {T_ATT}, d_model = {D_BLOCK}, d_k = d_v = {D_K}, random weights and G")


@check("transformer.course_attention_backward", needs_torch=True, source="week06 §Attention:620-930 (course heads, W_O); derived backward pass", group=GROUP)
def course_attention_backward(ctx) -> Outcome:
    """At the course's own heads and H0: the symbolic-size attention program's backward pass against backward, and the 35 x 35 Jacobian of B_att against autograd."""
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    mha = course.attention(device=dev, dtype=ctx.dtype)
    H0 = course.trace("attention_on_H0", device=dev, dtype=ctx.dtype)["H0"]
    T, D = H0.shape
    outs = []
    g = ctx.torch_generator()
    G = torch.randn(T, D, generator=g, dtype=torch.float64).to(dev, dt)
    X = H0.clone().requires_grad_(True)
    (mha(X) * G).sum().backward()
    G_C = (G @ mha.W_O.detach())[None]
    dX, start = 0, 0
    for i, head in enumerate(mha.heads, 1):
        grads = head_gradients(head, H0, G_C[..., start:start + head.d_v])
        start += head.d_v
        dX = dX + grads["X"][0]
        outs += [ctx.compare(grads[n][0], getattr(head, n).grad, detail=f"head {i} d{n}") for n in ("W_Q", "W_K", "W_V")]
    outs.append(ctx.compare(dX, X.grad, detail="dH0 through both heads and W_O"))
    n = T * D
    basis = (torch.eye(n, dtype=H0.dtype, device=dev).reshape(n, T, D) @ mha.W_O.detach())
    J, start = 0, 0
    for i, head in enumerate(mha.heads, 1):
        J = J + head_gradients(head, H0, basis[..., start:start + head.d_v])["X"].reshape(n, n)
        start += head.d_v
    outs.append(ctx.compare(J, _jacobian(lambda x: mha(x), H0), detail="d vec(B_att) / d vec(H0)"))
    return combine(outs, "the course's two heads (5 -> 3) and W_O (6 -> 5) at H0 (T = 7), random upstream G; the 35 x 35 Jacobian row by row")


def _block_check(ctx, norm_first: bool) -> Outcome:
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    g = ctx.torch_generator()
    block = random_block(norm_first, g, dev, dt)
    H = torch.randn(T_ATT, D_BLOCK, generator=g, dtype=torch.float64).to(dev, dt)
    G = torch.randn(T_ATT, D_BLOCK, generator=g, dtype=torch.float64).to(dev, dt)
    J = block_jacobian_formula(block, H)
    Hg = H.clone().requires_grad_(True)
    (block(Hg) * G).sum().backward()
    return combine([
        ctx.compare(J, _jacobian(lambda h: block(h), H), detail="dH'/dH"),
        ctx.compare(J.T @ G.reshape(-1), Hg.grad.reshape(-1), detail="gradient J^T g against backward"),
    ], f"T = {T_ATT}, D = {D_BLOCK}, two heads of width {D_K}, F = 4, random weights, LN gamma and beta")


@check("transformer.prenorm_block", needs_torch=True, source="week06 §Block:946, week06 §Depth:1191; the class derive.residual.EncoderBlock", group=GROUP)
def prenorm_block(ctx) -> Outcome:
    """(I + J_MLP J_LN2)(I + J_MHA J_LN1) with derived LN and attention Jacobians against autograd of the numeric pre-norm block, and its gradient against backward."""
    return _block_check(ctx, True)


@check("transformer.postnorm_block", needs_torch=True, source="week06 §Depth:1185; lesson §Encoder:136-138", group=GROUP)
def postnorm_block(ctx) -> Outcome:
    """J_LN2 (I + J_MLP) J_LN1 (I + J_MHA) with derived LN and attention Jacobians against autograd of the numeric post-norm block, and its gradient against backward."""
    return _block_check(ctx, False)


# ----------------------------------------------------------------------------- the programs of derive.blocks (rule table)

#: sizes the symbolic-size programs are compiled once and run at: the course's (T = 7, d = 5, heads 5 -> 3)
#: and random ones
BLOCK_SIZES = ({"T": 7, "d": 5, "d_k": 3, "d_v": 3},)


def _random_sizes(g: torch.Generator, n: int) -> list[dict]:
    draw = lambda lo, hi: int(torch.randint(lo, hi + 1, (1,), generator=g))
    return [{"T": draw(1, 9), "d": draw(2, 8), "d_k": draw(1, 6), "d_v": draw(1, 6)} for _ in range(n)]


def _program_check(ctx, cases, what: str, norm: str = "layernorm") -> Outcome:
    from .. import blocks as c_blocks

    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    g = ctx.torch_generator()
    sizes = list(BLOCK_SIZES) + _random_sizes(g, 3)
    outs = []
    for kind, heads, masked in cases:
        for s in sizes:
            for name, derived, reference in c_blocks.compare_at(kind, s, g, heads, masked, dt, dev, norm):
                label = (f"{kind}{' masked' if masked else ''}{'' if norm == 'layernorm' else ' ' + norm} h={heads} "
                         f"T={s['T']} d={s['d']} d_k={s['d_k']} d_v={s['d_v']}: {name}")
                outs.append(ctx.compare(derived, reference, detail=label))
    return combine(outs, what + "; sizes " + ", ".join(f"(T={s['T']}, d={s['d']}, d_k={s['d_k']}, d_v={s['d_v']})" for s in sizes))


@check("transformer.attention_program", needs_torch=True, source="week06 §2.4:747 (S, A, O); week06 §2.6:817 (heads, W_O); week06 §2.5:784 (causal mask)",
       group=GROUP)
def attention_program(ctx) -> Outcome:
    """derive.blocks.attention_program (symbolic T, d, d_k, d_v; backward from the rule table: dV = A^T G, dA = G V^T,
    dS = A o (dA - rowsum(dA o A)), dQ, dK) compiled once, against torch autograd at the course's size and random sizes:
    one head, two heads with W_O, and a causal mask."""
    return _program_check(ctx, (("attention", 1, False), ("attention", 2, False), ("attention", 2, True)),
                          "one compiled program per variant, every size from the same code")


@check("transformer.layernorm_program", needs_torch=True, source="week06 §2.7:971 (LayerNorm, eps inside the root)", group=GROUP)
def layernorm_program(ctx) -> Outcome:
    """derive.blocks.layernorm_program (symbolic T, d; dX = (dx̂ - mean(dx̂) - x̂ o mean(dx̂ o x̂)) / σ from the rule table)
    against torch.nn.functional.layer_norm's autograd at the course's size and random sizes."""
    return _program_check(ctx, (("layernorm", 1, False),), "eps = 1e-5 inside the root, random gamma and beta")


@check("transformer.block_programs", needs_torch=True, source="week06 §2.9:1183 (pre- vs post-norm); week06 §2.7:946 (pre-norm block)",
       group=GROUP)
def block_programs(ctx) -> Outcome:
    """derive.blocks.block_program, pre-norm U = H + MHA(LN(H)) and post-norm U = LN(H + MHA(H)) (dH = dU + branch:
    the residual's I + J), against torch autograd at the course's size and random sizes."""
    return _program_check(ctx, (("pre-norm", 2, False), ("post-norm", 2, False), ("pre-norm", 1, False)),
                          "two heads with W_O, and one head")


@check("transformer.mlp_program", needs_torch=True, source="week06 §Block:1021 (the MLP sublayer: LN_mlp, the MLP with ReLU, the second addition)",
       group=GROUP)
def mlp_program(ctx) -> Outcome:
    """derive.blocks.mlp_program, the pre-norm block's second sublayer H' = U + MLP(LN_mlp(U)) with ReLU (dU = dH' + the
    branch's pullback: the second shortcut; dZ_mlp = dPhi_mlp o [Z_mlp > 0]), against torch autograd at the course's size
    (T = 7, d = 5, d_ff = 4) and random sizes."""
    dev, dt = ctx.dev, ctx.dt
    g = ctx.torch_generator()
    draw = lambda lo, hi: int(torch.randint(lo, hi + 1, (1,), generator=g))  # noqa: E731
    sizes = [{"T": 7, "d": 5, "d_ff": 4}] + [{"T": draw(1, 9), "d": draw(2, 8), "d_ff": draw(1, 12)} for _ in range(3)]
    from .. import blocks as c_blocks

    outs = [ctx.compare(derived, reference, detail=f"mlp T={s['T']} d={s['d']} d_ff={s['d_ff']}: {name}")
            for s in sizes for name, derived, reference in c_blocks.compare_at("mlp", s, g, dtype=dt, device=dev)]
    return combine(outs, "ReLU, random gamma_mlp and beta_mlp; sizes " + ", ".join(f"(T={s['T']}, d={s['d']}, d_ff={s['d_ff']})"
                                                                             for s in sizes))


@check("transformer.multihead_rows", needs_torch=True, source="week06 §2.6:817 (n_head heads, C = [O^[1] | ... | O^[n_head]], W_O)",
       group=GROUP)
def multihead_rows(ctx) -> Outcome:
    """derive.blocks.multihead_rows, multi-head attention written for every head i of n_head (dC = dB W_O, dO^[i] head
    i's column block of dC, head i's one-head pass, dX = sum over the heads of dQ^[i] W_Q^[i] + dK^[i] W_K^[i] +
    dV^[i] W_V^[i], dW_O = dB^T C), instantiated at n_head = 3 and compiled as printed, against torch autograd at
    random sizes."""
    dev, dt = ctx.dev, ctx.dt
    g = ctx.torch_generator()
    from .. import blocks as c_blocks

    sizes = _random_sizes(g, 3)
    outs = [ctx.compare(derived, reference, detail=f"n_head=3 T={s['T']} d={s['d']} d_k={s['d_k']} d_v={s['d_v']}: "
                                                   + ("B" if name == "forward" else "d" + name))
            for s in sizes for name, derived, reference in c_blocks.compare_multihead_at(s, g, 3, dt, dev)]
    return combine(outs, "n_head = 3; sizes " + ", ".join(f"(T={s['T']}, d={s['d']}, d_k={s['d_k']}, d_v={s['d_v']})"
                                                          for s in sizes))


@check("transformer.rmsnorm_programs", needs_torch=True, source="Zhang & Sennrich 2019 (RMSNorm); week06 §2.9:1183 (pre- vs post-norm)",
       group=GROUP)
def rmsnorm_programs(ctx) -> Outcome:
    """derive.blocks with norm="rmsnorm" (Y = X / rms(X) o gamma; dX = (1/r) o (dx̂ - x̂ o mean(dx̂ o x̂)) from the rule
    table): the norm alone, pre-norm and post-norm blocks, against torch.nn.functional.rms_norm's autograd at the
    course's size and random sizes."""
    return _program_check(ctx, (("norm", 1, False), ("pre-norm", 2, False), ("post-norm", 1, False)),
                          "eps = 1e-5 inside the root, random gamma; the norm, pre-norm with two heads, post-norm with one",
                          norm="rmsnorm")
