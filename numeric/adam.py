"""The Adam update (Kingma and Ba 2015, Algorithm 1), computed as ``torch.optim.Adam`` computes it.

For each parameter ``theta`` with gradient ``g`` at step ``t = 1, 2, ...``::

    m = beta_1 m + (1 - beta_1) g          (first moment, from 0)
    v = beta_2 v + (1 - beta_2) g^2        (second moment, from 0)
    theta = theta - lr (m / (1 - beta_1^t)) / (sqrt(v / (1 - beta_2^t)) + eps)

in the same operations and order as torch's single-tensor Adam (``lerp_``, ``addcmul_``,
``addcdiv_``), so the parameters agree with ``torch.optim.Adam`` bit for bit (tested).  It
is written out because a ``torch.optim`` optimizer's first construction imports
``torch._dynamo`` (about 0.8 s of CPU, a tenth of ``seqgrad latex``'s budget), and the
course's small training runs (:func:`numeric.decoder.lesson_example`) need nothing else of it.
"""

from __future__ import annotations

from typing import Iterable

import torch

from seqgrad import validate

__all__ = ["Adam"]


class Adam:
    """``Adam(params, lr)``: ``zero_grad()`` and ``step()`` as ``torch.optim.Adam(params, lr=lr)`` (no weight decay,
    no amsgrad)."""

    def __init__(self, params: Iterable[torch.Tensor], lr: float = 1e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8):
        self.params = list(params)
        self.lr = validate.real("lr", lr, positive=True)
        self.betas = (validate.real("betas[0]", betas[0], nonnegative=True), validate.real("betas[1]", betas[1], nonnegative=True))
        self.eps = validate.real("eps", eps, nonnegative=True)
        self.t = 0
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        beta1, beta2 = self.betas
        self.t += 1
        step_size = self.lr / (1 - beta1 ** self.t)
        bias_correction2_sqrt = (1 - beta2 ** self.t) ** 0.5
        for p, m, v in zip(self.params, self.m, self.v):
            if p.grad is None:
                continue
            g = p.grad
            m.lerp_(g, 1 - beta1)
            v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            p.addcdiv_(m, (v.sqrt() / bias_correction2_sqrt).add_(self.eps), value=-step_size)
