"""The activations of the recurrent references, in one numeric table (numpy and torch).

Each entry gives phi and its slope phi' written through the output where the text writes it so (tanh:
``1 - h**2``, sigmoid: ``h (1 - h)``), the torch function, and ``gamma = sup |phi'|`` of the Pascanu bound.
ReLU's slope at 0 is 0, as ``torch.relu``'s; the sigmoid is the overflow-free ``exp(-log(1 + exp(-z)))``.
(The symbolic table is :mod:`derive.activations`; ``crosscheck`` compiles that one.)

>>> get("sigmoid").gamma, float(get("tanh").prime(0.0, 0.5))
(0.25, 0.75)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from seqgrad import validate

__all__ = ["NumericActivation", "ACTIVATIONS", "get", "sigmoid"]


def sigmoid(z):
    """The logistic sigmoid without overflow for large |z|."""
    return np.exp(-np.logaddexp(0.0, -z))


@dataclass(frozen=True)
class NumericActivation:
    """phi, its slope (through h = phi(z) where the text writes it so), the torch function and gamma."""

    name: str
    gamma: float
    _phi: Callable
    _prime: Callable
    torch_name: str

    def phi(self, z):
        return self._phi(z)

    def prime(self, z, h):
        """phi'(z) written through h = phi(z) where the text does."""
        return self._prime(z, h)

    def dphi(self, z):
        return self.prime(z, self.phi(z))

    def torch(self, v):
        """phi applied to a torch tensor (differentiable by autograd)."""
        import torch

        return v if self.torch_name == "identity" else getattr(torch, self.torch_name)(v)


_TABLE = {
    "identity": NumericActivation("identity", 1.0, lambda z: z, lambda z, h: np.ones_like(z), "identity"),
    "tanh": NumericActivation("tanh", 1.0, np.tanh, lambda z, h: 1.0 - h**2, "tanh"),
    "sigmoid": NumericActivation("sigmoid", 0.25, sigmoid, lambda z, h: h * (1.0 - h), "sigmoid"),
    "relu": NumericActivation("relu", 1.0, lambda z: np.maximum(z, 0.0),
                              lambda z, h: (np.asarray(z) > 0).astype(np.asarray(z).dtype), "relu"),
}

ACTIVATIONS: tuple[str, ...] = tuple(_TABLE)


def get(name: str) -> NumericActivation:
    """The activation called ``name`` (identity, tanh, sigmoid, relu)."""
    return _TABLE[validate.choice("activation", name, ACTIVATIONS)]
