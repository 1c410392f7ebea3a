"""Checks of the depth studies (numeric/depth.py), group "depth".

They assert the trends the figures of ``seqgrad plot depth`` show (the studies
are cached, so the checks and the figures share one computation; they always
run in float64, whatever ``--dtype`` says):

* Xiong et al. (2020), Theorem 1: near the output the post-norm gradient keeps
  its size as the stack deepens while the pre-norm one shrinks like 1/sqrt(L);
  in a deep post-norm stack the gradients grow from the input towards the output.
* The depth Jacobian product J_L ... J_1: the chain rule (it equals autograd's
  Jacobian of the whole stack); with pre-norm residual bypasses it keeps full
  rank at every depth; without bypasses, or with the post-norm LayerNorm after
  the bypass, the LayerNorm's null space (the mean of each row) makes at least T
  singular values vanish, and without bypasses the largest ones decay with depth.
"""

from __future__ import annotations

import numpy as np
import torch

from seqgrad.numeric import depth

from ..registry import check
from ..tolerance import Outcome, combine, compare

GROUP = "depth"
SOURCE_XIONG = "Xiong et al. 2020 (Thm. 1, Fig. 3); week06 §Depth:1183-1185"
SOURCE_DEPTH = "lesson §Encoder:152 (N layers); He et al. 2016; week06 §Depth:1185"
ZERO = 1e-10  # a singular value below ZERO * sigma_max is zero to working precision (float64 products of <= 48 factors)


def _band(values: np.ndarray, reference: float, factor: float) -> tuple[bool, float]:
    """All ``values`` within ``[reference / factor, reference * factor]``; the largest deviation as a ratio."""
    ratios = np.asarray(values) / reference
    worst = float(np.max(np.maximum(ratios, 1 / ratios)))
    return worst <= factor, worst


@check("depth.prenorm_output_gradient_shrinks", source=SOURCE_XIONG, group=GROUP)
def prenorm_output_gradient_shrinks(ctx) -> Outcome:
    """Pre-norm: the gradient of the layer nearest the output scales like 1/sqrt(L) for depths 1 to 48."""
    s = depth.gradient_study()
    last, L = s.last("pre-norm"), np.array(s.depths, float)
    ok, worst = _band(last * np.sqrt(L), last[0], 2.0)
    shrinks = bool(last[-1] < last[0] / 3)
    return Outcome(0.0, 0.0, ok and shrinks,
                   f"||dL/dW2^(L)|| * sqrt(L) stays within x{worst:.2f} of its L=1 value (bound x2); "
                   f"L=1: {last[0]:.3g}, L={s.depths[-1]}: {last[-1]:.3g}")


@check("depth.postnorm_output_gradient_keeps_size", source=SOURCE_XIONG, group=GROUP)
def postnorm_output_gradient_keeps_size(ctx) -> Outcome:
    """Post-norm: the gradient of the layer nearest the output does not shrink with depth (1 to 48), so it grows relative to pre-norm."""
    s = depth.gradient_study()
    post, pre = s.last("post-norm"), s.last("pre-norm")
    ok, worst = _band(post, post[0], 2.0)
    ratio = post / pre
    grows = bool(ratio[-1] > 3 * ratio[0])
    return Outcome(0.0, 0.0, ok and grows,
                   f"post-norm ||dL/dW2^(L)|| within x{worst:.2f} of its L=1 value (bound x2); "
                   f"post/pre at the output: {ratio[0]:.2f} at L=1, {ratio[-1]:.2f} at L={s.depths[-1]}")


@check("depth.postnorm_gradients_grow_toward_output", source=SOURCE_XIONG, group=GROUP)
def postnorm_gradients_grow_toward_output(ctx) -> Outcome:
    """In the deepest post-norm stack the last quarter of the layers has larger gradients than the first quarter (and than pre-norm's ratio)."""
    s = depth.gradient_study()
    L = s.depths[-1]
    q = max(L // 4, 1)
    ratio = {p: float(s.profiles[(p, L)][-q:].mean() / s.profiles[(p, L)][:q].mean()) for p in depth.PLACEMENTS}
    ok = ratio["post-norm"] > 2 and ratio["post-norm"] > ratio["pre-norm"]
    return Outcome(0.0, 0.0, ok, f"L={L}: mean gradient of the last {q} layers / first {q}: post-norm {ratio['post-norm']:.2f} "
                                 f"(bound > 2), pre-norm {ratio['pre-norm']:.2f}")


@check("depth.jacobian_product_chain_rule", needs_torch=True, source=SOURCE_DEPTH, group=GROUP)
def jacobian_product_chain_rule(ctx) -> Outcome:
    """J_3 J_2 J_1 from per-block autograd Jacobians equals the Jacobian of the whole 3-block stack (pre/post-norm, with/without bypasses)."""
    sizes = depth.Sizes(T=3, D=4, n_heads=2, F_width=8)
    H0, _ = depth.inputs(sizes, ctx.seed, ctx.device)
    outs = []
    with depth.one_thread():
        for placement in depth.PLACEMENTS:
            blocks = depth.stack(3, placement, sizes, seed=ctx.seed + 7, device=ctx.device)
            for residual in (True, False):
                maps = [b if residual else depth.branch_only(b) for b in blocks]

                def whole(H):
                    for f in maps:
                        H = f(H)
                    return H

                n = H0.numel()
                reference = torch.autograd.functional.jacobian(whole, H0).reshape(n, n)
                product = depth.products(depth.block_jacobians(blocks, H0, residual))[-1]
                outs.append(compare(product, reference, dtype="float64", device=ctx.device,
                                    detail=f"{placement} {'with' if residual else 'without'} residual"))
    return combine(outs, "T=3, D=4, 3 blocks; the product of block Jacobians against autograd of the composed stack")


@check("depth.residual_keeps_jacobian_rank", source=SOURCE_DEPTH, group=GROUP)
def residual_keeps_jacobian_rank(ctx) -> Outcome:
    """Singular values of J_L...J_1: pre-norm bypasses keep full rank at every depth; without bypasses, and in post-norm, >= T vanish."""
    s = depth.jacobian_study()
    T, deepest = s.sizes.T, s.depths[-1]
    zeros = {k: int((v < ZERO * v[0]).sum()) for k, v in s.singular_values.items()}
    pre_full = all(zeros[("pre-norm", True, L)] == 0 for L in s.depths)
    worst_spread = max(s.condition("pre-norm", True, L) for L in s.depths)
    ln_null = all(zeros[(p, r, L)] >= T for p in depth.PLACEMENTS for r in (False, True) for L in s.depths
                  if not (p == "pre-norm" and r))
    top = {p: s.singular_values[(p, False, deepest)][0] / s.singular_values[(p, False, s.depths[0])][0] for p in depth.PLACEMENTS}
    decays = all(v < 1e-2 for v in top.values())
    ok = pre_full and worst_spread < 1e6 and ln_null and decays
    return Outcome(0.0, 0.0, ok,
                   f"pre-norm with bypasses: no zero singular value, sigma_max/sigma_min <= {worst_spread:.3g} (bound 1e6); "
                   f"without bypasses and post-norm: >= T={T} zero singular values at every depth ({'yes' if ln_null else 'NO'}); "
                   f"without bypasses sigma_max(L={deepest})/sigma_max(L={s.depths[0]}): "
                   + ", ".join(f"{p} {v:.2g}" for p, v in top.items()) + " (bound 1e-2)")
