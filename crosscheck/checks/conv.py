"""The convolution layer of lecture 7, group "conv".

The derivations of derive/conv.py (gradients at symbolic size, compiled to torch by
:mod:`crosscheck.conv_compile` through the IR of :mod:`crosscheck.loop_ir`; the explicit-size formulas; max-pool routing; the receptive field; the ViT
patch arithmetic of week 06) against ``torch.nn.functional.conv1d`` / ``conv2d`` / ``max_pool2d`` autograd
and numeric/conv.py, float64, at sizes, strides and paddings drawn from the run's seed.
"""

from __future__ import annotations

import random
from functools import lru_cache

import sympy as sp
import torch
import torch.nn.functional as F

from seqgrad.derive import conv as d_conv
from seqgrad.numeric import conv as n_conv

from ..conv_compile import Compiled
from ..registry import check
from ..tolerance import Outcome, combine
from .identities import verify

GROUP = "conv"
LECTURE = "lecture07 §Convolutional network"


def _rand(g, dev, dt, *shape):
    return torch.randn(tuple(shape), generator=g, dtype=torch.float64).to(dt).to(dev)


def _sizes(ctx):
    """A random 2-D case: input H x W, square kernel k, stride s, padding P (the kernel fits the padded input)."""
    rng = ctx.rng()
    k = int(rng.integers(1, 5))
    s = int(rng.integers(1, 4))
    P = int(rng.integers(0, 3))
    H, W = int(rng.integers(max(1, k - 2 * P), 12)), int(rng.integers(max(1, k - 2 * P), 12))
    return H, W, k, s, P


def _padded(expr, P: int):
    """Read the derivation's X as the zero-padded input: X[a, c] -> X[a - P, c - P]."""
    if not P:
        return expr
    return expr.replace(lambda e: isinstance(e, sp.Indexed) and e.base == d_conv.X,
                        lambda e: d_conv.X[e.indices[0] - P, e.indices[1] - P])


@lru_cache(maxsize=None)
def compiled_conv(H: int, W: int, k: int, s: int, P: int):
    """Forward Y, dL/dK, dL/db and dL/dX (stride s, padding P) compiled from derive.conv.Conv2d; dL/dX is the
    dilated G correlated with the flipped kernel, the padding cropped."""
    Ho, Wo = d_conv.output_size(H, k, s, P), d_conv.output_size(W, k, s, P)
    conv = d_conv.Conv2d(stride=s)
    sizes = {d_conv.k: k, d_conv.H_o: Ho, d_conv.W_o: Wo}
    Y = Compiled(_padded(conv.Y, P), {d_conv.i: Ho, d_conv.j: Wo}, sizes, batch="keep")
    dK = Compiled(_padded(conv.grad_K(), P), {d_conv.p: k, d_conv.q: k}, sizes)
    db = Compiled(conv.grad_b(), {}, sizes)
    shifted = conv.grad_X_flipped().xreplace({d_conv.m: d_conv.m + P, d_conv.n: d_conv.n + P})  # crop the padding
    dX = Compiled(shifted, {d_conv.m: H, d_conv.n: W}, sizes, batch="keep")
    return Y, dK, db, dX


def _torch_conv2d(X, K, b, s, P):
    return F.conv2d(X[:, None], K[None, None], b.reshape(1), stride=s, padding=P)[:, 0]


@check("conv.weight_sharing_gradient", needs_torch=True, source=f"{LECTURE}:9-11 (one filter slides over the whole image)", group=GROUP)
def weight_sharing_gradient(ctx) -> Outcome:
    """dL/dK_uv = sum_ij G_ij X_{s i+u, s j+v} and dL/db = sum_ij G_ij, derived at symbolic size (proved), compiled,
    against conv2d autograd at random sizes, stride and padding; the forward formula against conv2d too."""
    entry = next(e for e in d_conv.identities() if e.name == "conv-weight-sharing-gradient")
    proof = verify(entry, ctx.seed)[0]  # exact proof and a numeric check in derive: no device or dtype
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    g = ctx.torch_generator()
    H, W, k, s, P = _sizes(ctx)
    Y_fn, dK_fn, db_fn, _ = compiled_conv(H, W, k, s, P)
    X, K, b = _rand(g, dev, dt, 3, H, W), _rand(g, dev, dt, k, k).requires_grad_(), _rand(g, dev, dt).requires_grad_()
    Y = _torch_conv2d(X, K, b, s, P)
    G = torch.randn(Y.shape, generator=g, dtype=torch.float64).to(dt).to(dev)
    gK, gb = torch.autograd.grad(Y, (K, b), G)
    case = f"input 3 x {H} x {W}, kernel {k} x {k}, stride {s}, padding {P}"
    return combine([proof, ctx.compare(Y_fn(X=X, K=K.detach()[None], b=b.detach()), Y, detail="forward"),
                    ctx.compare(dK_fn(G=G, X=X), gK, detail="dK"), ctx.compare(db_fn(G=G), gb, detail="db")],
                   f"{proof.detail}; compiled vs conv2d autograd: {case}")


@check("conv.input_gradient", needs_torch=True, source=f"{LECTURE}:9", group=GROUP)
def input_gradient(ctx) -> Outcome:
    """dL/dX_mn = sum_uv K_uv Ghat_{m-u,n-v}: a full cross-correlation of the zero-padded G with the flipped kernel,
    derived (proved at stride 1); with a stride s, G dilated by s first (Conv2d(stride=s).grad_X_flipped()); compiled
    and compared with conv2d autograd at a random stride and padding."""
    entry = next(e for e in d_conv.identities() if e.name == "conv-input-gradient-full-correlation")
    proof = verify(entry, ctx.seed)[0]  # exact proof and a numeric check in derive: no device or dtype
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    g = ctx.torch_generator()
    H, W, k, s, P = _sizes(ctx)
    *_, dX_fn = compiled_conv(H, W, k, s, P)
    X, K, b = _rand(g, dev, dt, 3, H, W).requires_grad_(), _rand(g, dev, dt, k, k), _rand(g, dev, dt)
    Y = _torch_conv2d(X, K, b, s, P)
    G = torch.randn(Y.shape, generator=g, dtype=torch.float64).to(dt).to(dev)
    gX, = torch.autograd.grad(Y, X, G)
    return combine([proof, ctx.compare(dX_fn(**{_upstream(dX_fn): G, "K": K[None]}), gX, detail="dX")],
                   f"{proof.detail}; compiled vs conv2d autograd: input 3 x {H} x {W}, kernel {k} x {k}, stride {s}, "
                   f"padding {P}")


def _upstream(fn) -> str:
    """The argument of a compiled input gradient that takes the upstream gradient: Ghat (G extended by zeros) at
    stride 1, G (dilated inside the compiled code) at a larger stride."""
    return next(name for name in fn.arguments if name != "K")


def _explicit_against_torch(ctx, ec: d_conv.ExplicitConv, dev, dt, g) -> list[Outcome]:
    """The explicit formulas (dK, db, dX) evaluated at random values against conv1d/conv2d autograd."""
    X = _rand(g, dev, dt, *ec.size).requires_grad_()
    K = _rand(g, dev, dt, *ec.kernel).requires_grad_()
    b = _rand(g, dev, dt).requires_grad_()
    conv = F.conv1d if len(ec.size) == 1 else F.conv2d
    Y = conv(X[None, None], K[None, None], b.reshape(1), stride=ec.stride, padding=ec.padding)[0, 0]
    G = torch.randn(Y.shape, generator=g, dtype=torch.float64).to(dt).to(dev)
    gX, gK, gb = torch.autograd.grad(Y, (X, K, b), G)
    values = {}
    for table, t in ((ec.x, X), (ec.k, K), (ec.g, G)):
        values.update({sym: float(t.detach()[idx]) for idx, sym in table.items()})
    values[ec.b] = float(b.detach())
    f = ec.by_formula()
    ev = lambda name, shape: torch.tensor([float(f[name][key].xreplace(values)) for key in sorted(f[name])],
                                          dtype=torch.float64).reshape(shape)
    return [ctx.compare(ev("K", ec.kernel), gK, detail="dK"), ctx.compare(ev("b", ()), gb, detail="db"),
            ctx.compare(ev("X", ec.size), gX, detail="dX")]


@check("conv.explicit_sizes", needs_torch=True, source=f"{LECTURE}:9 (stride and zero padding as options)", group=GROUP)
def explicit_sizes(ctx) -> Outcome:
    """1-D and 2-D convolutions at concrete sizes with stride and padding: dK, db and dX by the formulas (dX from the
    stride-dilated G) equal sympy.diff exactly, and conv1d / conv2d autograd numerically."""
    rng = random.Random(ctx.seed)
    cases = [d_conv.ExplicitConv((rng.randint(4, 8),), (rng.randint(1, 4),), stride=rng.randint(1, 3), padding=rng.randint(0, 2)),
             d_conv.ExplicitConv((rng.randint(3, 5), rng.randint(3, 5)), (rng.randint(1, 3), rng.randint(1, 3)),
                                 stride=rng.randint(1, 3), padding=rng.randint(0, 1))]
    proofs = [d_conv.prove_explicit(c) for c in cases]
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    g = ctx.torch_generator()
    out = [Outcome.exact(p.holds, p.detail) for p in proofs]
    for c in cases:
        out += _explicit_against_torch(ctx, c, dev, dt, g)
    return combine(out, "; ".join(p.summary() for p in proofs))


@check("conv.forward_vs_torch", needs_torch=True, source=f"{LECTURE}:9 (each output entry the sum over the kernel's entries of an entry times the input entry under it, plus the bias)", group=GROUP)
def forward_vs_torch(ctx) -> Outcome:
    """numeric.conv (the lecture's sum, one strided slice per kernel entry) against conv1d and conv2d, forward and autograd."""
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    g = ctx.torch_generator()
    H, W, k, s, P = _sizes(ctx)
    out = []
    for shape, kernel, conv in (((4, W), (k,), F.conv1d), ((4, H, W), (k, k), F.conv2d)):
        X1, K1, b1 = _rand(g, dev, dt, *shape), _rand(g, dev, dt, *kernel), _rand(g, dev, dt)
        leaves = [t.clone().requires_grad_() for t in (X1, K1, b1)]
        twins = [t.clone().requires_grad_() for t in (X1, K1, b1)]
        ours = n_conv.conv(leaves[0], leaves[1], leaves[2], stride=s, padding=P)
        ref = conv(twins[0][:, None], twins[1][None, None], twins[2].reshape(1), stride=s, padding=P)[:, 0]
        Gw = torch.randn(ref.shape, generator=g, dtype=torch.float64).to(dt).to(dev)
        (ours * Gw).sum().backward()
        (ref * Gw).sum().backward()
        out.append(ctx.compare(ours, ref, detail=f"{len(kernel)}-D forward"))
        out += [ctx.compare(a.grad, c.grad) for a, c in zip(leaves, twins)]
    return combine(out, f"1-D and 2-D: input sizes {H} x {W}, kernel {k}, stride {s}, padding {P}, batch 4")


@check("conv.max_pool_routing", needs_torch=True, source=f"{LECTURE}:13 (max-pooling; the text's formula breaks off after its maximum over the window)", group=GROUP)
def max_pool_routing(ctx) -> Outcome:
    """Max-pool gradient routing: G_ij goes to the window's argmax, at a tie to the first maximal entry in row-major order
    (torch's convention): derive.conv.max_pool_routing and numeric.conv.max_pool2d_backward against max_pool2d autograd,
    on data with many ties and on continuous data; SymPy's derivative of max is the argmax indicator where unique."""
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    g = ctx.torch_generator()
    rng = ctx.rng()
    out = []
    for pool, stride in ((2, 2), (3, 1), (2, 1)):
        for ties in (True, False):
            X = (torch.randint(0, 3, (2, 7, 6), generator=g).to(torch.float64) if ties
                 else torch.randn(2, 7, 6, generator=g, dtype=torch.float64)).to(dt).to(dev).requires_grad_()
            Y = F.max_pool2d(X[:, None], pool, stride=stride)[:, 0]
            G = torch.randn(Y.shape, generator=g, dtype=torch.float64).to(dt).to(dev)
            gX, = torch.autograd.grad(Y, X, G)
            out.append(ctx.compare(n_conv.max_pool2d(X.detach(), pool, stride), Y, detail="forward"))
            out.append(ctx.compare(n_conv.max_pool2d_backward(X.detach(), G, pool, stride), gX, detail="routing"))
            routed = torch.zeros_like(gX)
            for bi in range(X.shape[0]):
                for a, row in enumerate(d_conv.max_pool_routing(X[bi].tolist(), pool, stride)):
                    for c, (r0, c0) in enumerate(row):
                        routed[bi, r0, c0] += G[bi, a, c]
            out.append(ctx.compare(routed, gX, detail="derive routing"))
    dmax, xs = d_conv.max_derivative(4)
    point = [float(v) for v in rng.normal(size=4)]
    indicator = 1.0 if point[0] == max(point) else 0.0
    value = float(dmax.xreplace(dict(zip(xs, point))))
    point[0] = max(point[1:]) + 0.5
    value_max = float(dmax.xreplace(dict(zip(xs, point))))
    out.append(Outcome.exact(value == indicator and value_max == 1.0, "d max / d x_0 is the argmax indicator"))
    return combine(out, "windows (2, 2), (3, 1), (2, 1) on integer data with ties and on Gaussian data")


@check("conv.receptive_field", source=f"{LECTURE}:15 (the receptive field grows with depth)", group=GROUP)
def receptive_field(ctx) -> Outcome:
    """r_L = 1 + sum_l (k_l - 1) prod_{m<l} s_m: the closed form equals the unrolled recurrence for L = 1..6 (symbolic k_l, s_l)
    and the receptive field measured by autograd on random stacks of convolutions."""
    proofs = []
    for L in range(1, 7):
        r, closed = d_conv.receptive_field_recurrence(L)
        proofs.append(sp.expand(r - closed) == 0)
    rng = random.Random(ctx.seed)
    measured, formula = [], []
    for _ in range(6):
        L = rng.randint(1, 4)
        ks, ss = [rng.randint(1, 5) for _ in range(L)], [rng.randint(1, 3) for _ in range(L)]
        measured.append(n_conv.receptive_field(ks, ss))
        formula.append(int(d_conv.receptive_field(ks, ss)))
    out = Outcome.exact(all(proofs) and measured == formula,
                        f"recurrence = closed form for L = 1..6: {all(proofs)}; measured {measured}, formula {formula}")
    return out


@check("conv.vit_patches", source="week06 §Images can be tokens too:1310-1314 (N_patch = (H/p)(W/p))", group=GROUP)
def vit_patches(ctx) -> Outcome:
    """N_patch = (H/p)(W/p) is the output size of a convolution with kernel = stride = p (exact for H = a p, W = c p); the
    lecture's 6 x 6 image gives 4 patches of 9 values, and torch's unfold returns exactly those 3 x 3 blocks."""
    a, c, p_ = sp.symbols("a c p", positive=True, integer=True)
    general = sp.simplify(d_conv.output_size(a * p_, p_, p_) * d_conv.output_size(c * p_, p_, p_) - a * c) == 0
    n_patch, values = d_conv.vit_patches(6, 6, 3)
    image = torch.arange(36, dtype=torch.float64).reshape(1, 1, 6, 6)
    cols = F.unfold(image, kernel_size=3, stride=3)  # (1, 9, 4)
    blocks = [image[0, 0, r:r + 3, q:q + 3].reshape(-1) for r in (0, 3) for q in (0, 3)]
    same = all(torch.equal(cols[0, :, n], blocks[n]) for n in range(4))
    ok = general and (n_patch, values) == (4, 9) and tuple(cols.shape) == (1, 9, 4) and same
    return Outcome.exact(ok, f"floor((a p - p)/p) + 1 = a, so N_patch = a c: {general}; 6 x 6, p = 3: {n_patch} patches of {values} "
                             f"values; unfold shape {tuple(cols.shape)}, blocks match: {same}")
