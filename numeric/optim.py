"""Adam (Kingma and Ba 2015, Algorithm 1), the update of ``torch.optim.Adam`` on the CPU.

With gradient ``g_t`` at step ``t`` (from 1), moments from zero and the defaults
β₁ = 0.9, β₂ = 0.999, ε = 1e-8:

    m_t = β₁ m_{t-1} + (1 − β₁) g_t,          v_t = β₂ v_{t-1} + (1 − β₂) g_t²,
    θ_t = θ_{t-1} − lr · m_t / (1 − β₁ᵗ) / (√v_t / √(1 − β₂ᵗ) + ε).

The arithmetic is that of ``torch.optim.Adam``'s single-tensor path (the one it
takes for CPU tensors), operation for operation, so the two agree to the last bit
(tests/test_optim.py).  Why not ``torch.optim.Adam`` itself: its first construction
in a process imports ``torch._dynamo`` (about 1.2 s of CPU), which is most of the
cost of the lesson's sixty-step example in ``seqgrad check``.
"""

from __future__ import annotations

from typing import Iterable

import torch

from seqgrad import validate
from seqgrad.errors import SeqgradValueError

BETAS = (0.9, 0.999)
EPS = 1e-8


class Adam:
    """Adam over ``params`` (tensors with ``requires_grad``): ``zero_grad()``, then ``backward()``, then ``step()``."""

    def __init__(self, params: Iterable[torch.Tensor], lr: float = 1e-3, betas: tuple[float, float] = BETAS,
                 eps: float = EPS):
        self.params = list(params)
        if not self.params or not all(isinstance(p, torch.Tensor) and p.requires_grad for p in self.params):
            raise SeqgradValueError("params", f"{len(self.params)} items",
                                    "one or more tensors with requires_grad=True (e.g. model.parameters())")
        self.lr = validate.real("lr", lr, positive=True)
        if len(betas) != 2 or not all(0.0 <= b < 1.0 for b in betas):
            raise SeqgradValueError("betas", betas, "two numbers in [0, 1)")
        self.betas = (float(betas[0]), float(betas[1]))
        self.eps = validate.real("eps", eps, positive=True)
        self.steps = [0] * len(self.params)  # per parameter, as torch counts: only the steps it had a gradient
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        """One update of every parameter that has a gradient (a parameter without one keeps its step count)."""
        beta1, beta2 = self.betas
        for i, (p, m, v) in enumerate(zip(self.params, self.m, self.v)):
            if p.grad is None:
                continue
            self.steps[i] += 1
            t = float(self.steps[i])
            step_size = self.lr / (1 - beta1 ** t)
            bias_correction2_sqrt = (1 - beta2 ** t) ** 0.5
            g = p.grad
            m.lerp_(g, 1 - beta1)
            v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            p.addcdiv_(m, (v.sqrt() / bias_correction2_sqrt).add_(self.eps), value=-step_size)
