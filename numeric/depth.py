"""Depth studies at initialisation: gradient norms per layer and the depth Jacobian product.

Built on the numeric encoder's blocks (:class:`numeric.encoder.EncoderBlock`),
initialised as Xiong et al. (2020, "On Layer Normalization in the Transformer
Architecture") assume: Xavier-normal weight matrices (variance ``2 / (fan_in + fan_out)``),
zero biases, LayerNorm ``gamma = 1``, ``beta = 0``.

Gradient norms (:func:`gradient_study`).  A stack of L blocks reads ``H0`` (T x D);
the pre-norm stack ends in a final LayerNorm (text, line 1165), the post-norm
stack ends in its last block's LayerNorm.  The loss is a fixed random read-out
``L = sum(W_read * H_out)``; the measured quantity is ``||dL/dW2^(l)||_F``, the
gradient of the second MLP matrix of block l (Xiong et al.'s ``W^{FFN,2}``).
Xiong et al.'s Theorem 1: near the output the post-norm gradient keeps its size
as the stack deepens, the pre-norm one shrinks like ``1/sqrt(L)``; so the
post-norm gradients near the output grow with depth relative to the pre-norm ones.

Depth Jacobian product (:func:`jacobian_study`).  ``J_l = d vec(H_l) / d vec(H_{l-1})``
(rows flattened, index ``t*D + c``) and ``P_L = J_L ... J_1``.  With the residual
bypasses every factor is ``I`` plus branch terms (He et al. 2016), so the
singular values of ``P_L`` stay spread around 1; without them
(:func:`branch_only`) each factor passes a LayerNorm, whose Jacobian annihilates
the mean direction of every row, so at least T singular values of ``P_L`` are 0
and the others vanish or explode geometrically in L.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from seqgrad import validate
from seqgrad.errors import SeqgradValueError

from .device import one_thread, resolve_device
from .encoder import EncoderBlock

PLACEMENTS = ("pre-norm", "post-norm")
DEPTHS = (1, 2, 4, 8, 16, 32, 48)
SV_DEPTHS = (1, 4, 12, 48)


@dataclass(frozen=True)
class Sizes:
    """Block sizes of the studies (small: the figure set runs in seconds on 2 cores)."""

    D: int = 16
    n_heads: int = 2
    F_width: int = 32
    T: int = 8

    def __post_init__(self):
        for name in ("D", "n_heads", "F_width", "T"):
            validate.integer(name, getattr(self, name), minimum=1)
        if self.D % self.n_heads:
            raise SeqgradValueError("n_heads", self.n_heads, f"a divisor of D={self.D}")


def xavier_(block: EncoderBlock, generator: torch.Generator) -> EncoderBlock:
    """Xavier-normal weight matrices and zero biases, in place (Xiong et al.'s initialisation)."""
    with torch.no_grad():
        for name, p in block.named_parameters():
            if name.startswith(("ln1.", "ln2.")):
                continue
            if p.dim() == 2:
                fan_out, fan_in = p.shape
                std = (2.0 / (fan_in + fan_out)) ** 0.5
                p.copy_(torch.randn(p.shape, generator=generator, dtype=torch.float64).mul_(std).to(p))
            else:
                p.zero_()
    return block


def stack(depth: int, placement: str, sizes: Sizes = Sizes(), seed: int = 0, device="cpu") -> list[EncoderBlock]:
    """``depth`` freshly initialised blocks (float64), pre-norm or post-norm."""
    depth = validate.integer("depth", depth, minimum=1, maximum=512)
    placement = validate.choice("placement", placement, PLACEMENTS)
    g = torch.Generator().manual_seed(seed)
    dev = resolve_device(device)
    blocks = []
    for _ in range(depth):
        block = EncoderBlock.random(sizes.D, sizes.n_heads, sizes.F_width, norm_first=placement == "pre-norm", generator=g)
        blocks.append(xavier_(block, g).to(dev))
    return blocks


def inputs(sizes: Sizes, seed: int, device="cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """Input states H0 (T x D, unit-variance entries) and the read-out W_read of the loss."""
    g = torch.Generator().manual_seed(10_000 + seed)
    H0 = torch.randn(sizes.T, sizes.D, generator=g, dtype=torch.float64)
    W_read = torch.randn(sizes.T, sizes.D, generator=g, dtype=torch.float64)
    dev = resolve_device(device)
    return H0.to(dev), W_read.to(dev)


def output(blocks: list[EncoderBlock], H0: torch.Tensor) -> torch.Tensor:
    """H_out: the stack on H0, plus the final LayerNorm of a pre-norm stack."""
    H = H0
    for block in blocks:
        H = block(H)
    if blocks[0].norm_first:
        H = F.layer_norm(H, (H.shape[-1],))
    return H


def layer_gradient_norms(blocks: list[EncoderBlock], H0: torch.Tensor, W_read: torch.Tensor) -> np.ndarray:
    """``||dL/dW2^(l)||_F`` for l = 1..L with ``L = sum(W_read * H_out)``."""
    W2 = [b.mlp.W2 for b in blocks]
    loss = (W_read * output(blocks, H0)).sum()
    grads = torch.autograd.grad(loss, W2)
    return np.array([float(torch.linalg.norm(g)) for g in grads])


@dataclass
class GradientStudy:
    """Per-layer gradient norms for every depth and placement: ``runs`` per seed, ``profiles`` their median over the
    seeds (a mean is led by one seed: at a deep post-norm stack's first layer the seeds spread over 2.5 decades)."""

    sizes: Sizes
    depths: tuple[int, ...]
    seeds: int
    profiles: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)  # (placement, L) -> norms of layers 1..L
    runs: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)  # (placement, L) -> seeds x L norms

    def spread(self, placement: str, L: int) -> tuple[np.ndarray, np.ndarray]:
        """The smallest and the largest norm over the seeds at each layer of the stack of depth ``L``."""
        runs = self.runs[(placement, L)]
        return runs.min(axis=0), runs.max(axis=0)

    def last(self, placement: str) -> np.ndarray:
        """The gradient norm of the layer nearest the output, by depth."""
        return np.array([self.profiles[(placement, L)][-1] for L in self.depths])

    def first(self, placement: str) -> np.ndarray:
        """The gradient norm of the layer nearest the input, by depth."""
        return np.array([self.profiles[(placement, L)][0] for L in self.depths])


def _depths(depths) -> tuple[int, ...]:
    try:
        depths = tuple(sorted({validate.integer("depth", L, minimum=1, maximum=512) for L in depths}))
    except TypeError:
        raise SeqgradValueError("depths", depths, "a sequence of integers from 1 to 512") from None
    if not depths:
        raise SeqgradValueError("depths", depths, "at least one depth")
    return depths


def gradient_study(depths=DEPTHS, seeds: int = 8, sizes: Sizes = Sizes(), device: str = "cpu") -> GradientStudy:
    """Gradient norms per layer at initialisation (cached: the checks and the figures share one run)."""
    return _gradient_study(_depths(depths), validate.integer("seeds", seeds, minimum=1), sizes, str(device))


@lru_cache(maxsize=8)
def _gradient_study(depths: tuple[int, ...], seeds: int, sizes: Sizes, device: str) -> GradientStudy:
    study = GradientStudy(sizes, depths, seeds)
    with one_thread():
        _fill_gradients(study, device)
    return study


def _fill_gradients(study: GradientStudy, device: str) -> None:
    """Per seed one stack of max(depths) i.i.d. blocks; the stack of depth L is its first L blocks."""
    sizes, seeds = study.sizes, study.seeds
    for placement in PLACEMENTS:
        runs: dict[int, list] = {L: [] for L in study.depths}
        for s in range(seeds):
            H0, W_read = inputs(sizes, s, device)
            blocks = stack(max(study.depths), placement, sizes, seed=1000 * s, device=device)
            for L in study.depths:
                runs[L].append(layer_gradient_norms(blocks[:L], H0, W_read))
        for L in study.depths:
            study.runs[(placement, L)] = np.array(runs[L])
            study.profiles[(placement, L)] = np.median(study.runs[(placement, L)], axis=0)


# ----------------------------------------------------------------------------- the depth Jacobian product

def branch_only(block: EncoderBlock) -> Callable[[torch.Tensor], torch.Tensor]:
    """The block with both residual bypasses removed (same modules, same LayerNorm placement).

    Pre-norm: ``U = MHA(LN1(H))``, ``H' = MLP(LN2(U))``; post-norm: ``U = LN1(MHA(H))``, ``H' = LN2(MLP(U))``.
    """
    if block.norm_first:
        return lambda H: block.mlp(block.ln2(block.attention(block.ln1(H))))
    return lambda H: block.ln2(block.mlp(block.ln1(block.attention(H))))


def block_jacobians(blocks: list[EncoderBlock], H0: torch.Tensor, residual: bool = True) -> list[torch.Tensor]:
    """``J_l = d vec(H_l) / d vec(H_{l-1})`` along the forward pass (T*D x T*D each)."""
    out, H = [], H0.detach()
    n = H.numel()
    for block in blocks:
        f = block if residual else branch_only(block)
        J = torch.autograd.functional.jacobian(f, H, vectorize=True).reshape(n, n)
        out.append(J)
        with torch.no_grad():
            H = f(H)
    return out


def products(jacobians: list[torch.Tensor]) -> list[torch.Tensor]:
    """``P_L = J_L ... J_1`` for L = 1..len(jacobians) (later layers on the left)."""
    out, P = [], None
    for J in jacobians:
        P = J if P is None else J @ P
        out.append(P)
    return out


@dataclass
class JacobianStudy:
    """Singular values of ``P_L`` for each placement, with and without residual bypasses."""

    sizes: Sizes
    depths: tuple[int, ...]
    singular_values: dict[tuple[str, bool, int], np.ndarray] = field(default_factory=dict)  # (placement, residual, L) -> descending

    def condition(self, placement: str, residual: bool, L: int) -> float:
        """sigma_max / sigma_min (inf when the product is singular to working precision)."""
        s = self.singular_values[(placement, residual, L)]
        return float(s[0] / s[-1]) if s[-1] > s[0] * np.finfo(float).eps else float("inf")


def jacobian_study(depths=SV_DEPTHS, sizes: Sizes = Sizes(T=4, D=8, F_width=16), seed: int = 0, device: str = "cpu") -> JacobianStudy:
    """Singular values of the depth Jacobian product at initialisation (one stack of max(depths) blocks per case; cached)."""
    return _jacobian_study(_depths(depths), sizes, validate.integer("seed", seed, minimum=0), str(device))


@lru_cache(maxsize=8)
def _jacobian_study(depths: tuple[int, ...], sizes: Sizes, seed: int, device: str) -> JacobianStudy:
    study = JacobianStudy(sizes, depths)
    H0, _ = inputs(sizes, seed, device)
    with one_thread():
        for placement in PLACEMENTS:
            blocks = stack(depths[-1], placement, sizes, seed=seed, device=device)
            for residual in (True, False):
                P = products(block_jacobians(blocks, H0, residual))
                for L in depths:
                    study.singular_values[(placement, residual, L)] = torch.linalg.svdvals(P[L - 1]).cpu().numpy()
    return study
