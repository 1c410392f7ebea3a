"""The activation table of the course text (Table 4): phi and its local slope phi'.

Each :class:`Activation` carries

* ``phi(z)``: the activation applied to a scalar SymPy expression;
* ``prime(z, h)``: the local derivative phi'(z), written the way the text
  writes it, in terms of the output ``h = phi(z)`` where that is possible
  (tanh: ``1 - h**2``, text line 228; sigmoid: ``h*(1 - h)``);
* ``elementwise(Z)``: the activation applied entrywise to a matrix
  expression (:class:`derive.program.Elementwise`).

Names are looked up through a whitelist (:func:`get`); user text is never
handed to ``sympify``.

Conventions:

* ReLU is ``Max(0, z)``; its derivative is undefined at 0 and this toolkit
  takes **phi'(0) = 0** (``Heaviside(z, 0)``), the value PyTorch's autograd
  uses for ``torch.relu``.
* ``"phi"`` is a generic, undefined activation: phi' stays the symbol
  ``phi'(z)``, so formulas stay general. SymPy's ``diff`` of ``phi(z)`` gives
  ``phi'(z)`` too, which is what lets the tests compare derived formulas with
  ``sympy.diff`` of the loss.

>>> from seqgrad.derive.activations import get
>>> import sympy as sp
>>> z, h = sp.symbols("z h")
>>> get("tanh").prime(z, h)
1 - h**2
>>> get("phi").prime(z, h)
phi'(z)
>>> sp.diff(get("phi").phi(z**2), z)
2*z*phi'(z**2)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import sympy as sp

from seqgrad import validate

__all__ = ["Activation", "ACTIVATIONS", "NAMES", "get", "phi", "dphi", "sigmoid", "RELU_PRIME_AT_ZERO"]

#: The value this toolkit gives ReLU's derivative at 0 (PyTorch's convention).
RELU_PRIME_AT_ZERO = 0


class dphi(sp.Function):
    """phi'(z): the derivative of the generic activation, kept as a symbol."""

    nargs = 1

    def _latex(self, printer):
        return r"\phi'\left(%s\right)" % printer._print(self.args[0])

    def _sympystr(self, printer):
        return "phi'(%s)" % printer._print(self.args[0])

    _pretty = None


class phi(sp.Function):
    """A generic, undefined activation whose derivative is :class:`dphi`."""

    nargs = 1

    def fdiff(self, argindex=1):
        return dphi(self.args[0])


class sigmoid(sp.Function):
    """The logistic sigmoid sigma(z) = 1 / (1 + exp(-z))."""

    nargs = 1

    @classmethod
    def eval(cls, arg):
        if arg.is_Number:
            return 1 / (1 + sp.exp(-arg))

    def fdiff(self, argindex=1):
        return self * (1 - self)

    def _eval_rewrite_as_exp(self, arg, **kwargs):
        return 1 / (1 + sp.exp(-arg))

    def _latex(self, printer, exp=None):
        base = r"\sigma\left(%s\right)" % printer._print(self.args[0])
        return base if exp is None else r"%s^{%s}" % (base, exp)


def _relu(z):
    return sp.Max(0, z)


@dataclass(frozen=True)
class Activation:
    """One row of the text's Table 4."""

    name: str
    phi: Callable[[sp.Expr], sp.Expr]
    prime: Callable[[sp.Expr, sp.Expr], sp.Expr]
    latex_name: str
    note: str

    def elementwise(self, Z):
        """phi applied entrywise to the matrix expression ``Z`` (the identity returns ``Z``)."""
        if self.name == "identity":
            return Z
        from .program import Elementwise

        return Elementwise(self.phi, Z)

    def explicit_prime(self, z: sp.Expr) -> sp.Expr:
        """phi'(z) in terms of z alone (h replaced by phi(z))."""
        return self.prime(z, self.phi(z))

    def __repr__(self) -> str:
        return f"Activation({self.name!r})"

    def __reduce__(self):
        """Pickled by name (its functions are lambdas): a derivation that uses it pickles."""
        return _by_name, (self.name,)


def _by_name(name: str) -> "Activation":
    return ACTIVATIONS[name]


ACTIVATIONS: dict[str, Activation] = {
    "identity": Activation("identity", lambda z: z, lambda z, h: sp.Integer(1), r"z",
                           "each transition contributes w_h; the state update is linear"),
    "tanh": Activation("tanh", sp.tanh, lambda z, h: 1 - h**2, r"\tanh",
                       "slope about 1 near 0, small in saturation; phi'(z_t) = 1 - h_t^2"),
    "sigmoid": Activation("sigmoid", sigmoid, lambda z, h: h * (1 - h), r"\sigma",
                          "slope never above 1/4, small in saturation"),
    "relu": Activation("relu", _relu, lambda z, h: sp.Heaviside(z, RELU_PRIME_AT_ZERO), r"\max(0, z)",
                       "slope 1 for z > 0 and 0 for z < 0; phi'(0) = 0 by convention (as torch.relu)"),
    "phi": Activation("phi", phi, lambda z, h: dphi(z), r"\phi",
                      "generic differentiable activation; phi' stays a symbol"),
}

NAMES: tuple[str, ...] = tuple(ACTIVATIONS)


def get(name: str | Activation) -> Activation:
    """The activation called ``name`` (one of :data:`NAMES`); refuses anything else."""
    if isinstance(name, Activation):
        return name
    return ACTIVATIONS[validate.choice("activation", name, NAMES)]
