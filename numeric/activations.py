"""The numpy and torch side of the operation registry (:mod:`seqgrad.operations`), and the activations of
the recurrent references.

:func:`namespace` resolves every registered operation in numpy or torch: a primitive by its declared
implementation, a composite (GELU, softplus, a user's function) by its definition evaluated over the
same namespace; the compiled code of :mod:`crosscheck` calls these (so the derived code and the autograd
twin run the registry's implementations).  The torch implementations accept Python numbers as well as
tensors (``sqrt(2)`` inside a definition).

:func:`get` gives an activation of the references: phi, its slope phi' written through the output where
the registry writes it so (tanh: ``1 - h**2``, sigmoid: ``h (1 - h)``), the torch function, and
``gamma = sup |phi'|`` of the Pascanu bound -- every one read from the registry's single declaration.
ReLU's slope at 0 is 0, as ``torch.relu``'s; the sigmoid is the overflow-free ``exp(-log(1 + exp(-z)))``.

>>> get("sigmoid").gamma, float(get("tanh").prime(0.0, 0.5))
(0.25, 0.75)
>>> round(float(namespace("numpy").gelu(1.0)), 6)
0.841345
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from seqgrad import operations as registry
from seqgrad import validate

__all__ = ["NumericActivation", "ACTIVATIONS", "get", "sigmoid", "namespace"]


def _torch_helpers(torch) -> dict:
    def fold(tensors, bound):  # maximum / minimum of two values, either a tensor or a number (clamped)
        def apply(a, b):
            if not isinstance(a, torch.Tensor):
                a, b = b, a
            if not isinstance(a, torch.Tensor):
                return bound[0](a, b)
            return tensors(a, b) if isinstance(b, torch.Tensor) else torch.clamp(a, **{bound[1]: b})
        return apply

    def heaviside(x, h0):
        x = torch.as_tensor(x, dtype=torch.float64) if not isinstance(x, torch.Tensor) else x
        return torch.heaviside(x, torch.full((), float(h0), dtype=x.dtype, device=x.device))

    return {"maximum": fold(torch.maximum, (max, "min")), "minimum": fold(torch.minimum, (min, "max")),
            "heaviside": heaviside, "pi": math.pi, "e": math.e}


def _torch_numbers(torch):
    """A torch function that also takes a Python number (as a float64 tensor of no dimensions)."""
    def wrap(fn):
        def apply(*args):
            return fn(*[a if isinstance(a, torch.Tensor) else torch.tensor(float(a), dtype=torch.float64) for a in args])
        return apply
    return wrap


def _numpy_heaviside(x, h0):
    return np.heaviside(x, float(h0))


@functools.lru_cache(maxsize=None)
def _namespace(backend: str, version: int) -> registry.Namespace:
    if backend == "numpy":
        return registry.Namespace("numpy", np, {"maximum": np.maximum, "minimum": np.minimum,
                                                "heaviside": _numpy_heaviside, "pi": math.pi, "e": math.e})
    import torch

    return registry.Namespace("torch", torch, _torch_helpers(torch), wrap=_torch_numbers(torch))


def namespace(backend: str) -> registry.Namespace:
    """The registry's operations in ``backend`` (``"numpy"`` or ``"torch"``), as attributes."""
    return _namespace(validate.choice("backend", backend, ("numpy", "torch")), registry.version())


def sigmoid(z):
    """The logistic sigmoid without overflow for large |z| (the registry's numpy sigmoid)."""
    return namespace("numpy").sigmoid(z)


@dataclass(frozen=True)
class NumericActivation:
    """phi, its slope (through h = phi(z) where the registry writes it so), the torch function and gamma."""

    name: str
    gamma: float
    op: registry.Operation

    def phi(self, z):
        return getattr(namespace("numpy"), self.name)(z)

    def prime(self, z, h):
        """phi'(z) written through h = phi(z) where the registry does."""
        value = self.op.derivative(namespace("numpy"), z, h)
        return np.asarray(value, dtype=float) + np.zeros(np.shape(z))  # a constant slope as an array of z's shape

    def dphi(self, z):
        return self.prime(z, self.phi(z))

    def torch(self, v):
        """phi applied to a torch tensor (differentiable by autograd)."""
        return getattr(namespace("torch"), self.name)(v)


#: the activations of the recurrent references (the course's table of phi, phi' and gamma)
ACTIVATIONS: tuple[str, ...] = ("identity", "tanh", "sigmoid", "relu")


def get(name: str) -> NumericActivation:
    """The activation called ``name`` (identity, tanh, sigmoid, relu)."""
    op = registry.get(validate.choice("activation", name, ACTIVATIONS))
    return NumericActivation(op.name, op.gamma, op)
