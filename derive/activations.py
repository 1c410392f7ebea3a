"""The activation table of the course text (Table 4): phi and its local slope phi'.

Each :class:`Activation` carries

* ``phi(z)``: the activation applied to a scalar SymPy expression;
* ``prime(z, h)``: the local derivative phi'(z), written the way the text
  writes it, in terms of the output ``h = phi(z)`` where that is possible
  (tanh: ``1 - h**2``, text line 228; sigmoid: ``h*(1 - h)``);
* ``elementwise(Z)``: the activation applied entrywise to a matrix
  expression (:class:`derive.elementwise.Elementwise`).

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

from seqgrad import operations as registry
from seqgrad import validate

from . import operations

__all__ = ["Activation", "ACTIVATIONS", "NAMES", "get", "phi", "dphi", "sigmoid", "RELU_PRIME_AT_ZERO"]

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


#: the logistic sigmoid sigma(z) = 1 / (1 + exp(-z)): the registry's node (:mod:`derive.operations`)
sigmoid = operations.node("sigmoid")


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
        from .elementwise import Elementwise

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


def _from_registry(op) -> Activation:
    return Activation(op.name, operations.node(op.name), lambda z, h: operations.derivative(op, z, h), op.latex, op.note or op.kink)


def _table() -> dict[str, Activation]:
    """Every one-argument operation of the registry (:mod:`seqgrad.operations`), then the generic ``phi``."""
    table = {name: _from_registry(registry.get(name)) for name in registry.activation_names()}
    table["phi"] = Activation("phi", phi, lambda z, h: dphi(z), r"\phi", "generic differentiable activation; phi' stays a symbol")
    return table


ACTIVATIONS: dict[str, Activation] = _table()
NAMES: tuple[str, ...] = tuple(ACTIVATIONS)


def names() -> tuple[str, ...]:
    """The activation names: the registry's one-argument operations (a user's registered ones included) and phi."""
    return registry.activation_names() + ("phi",)


def get(name: str | Activation) -> Activation:
    """The activation called ``name`` (one of :func:`names`); refuses anything else."""
    if isinstance(name, Activation):
        return name
    validate.choice("activation", name, names())
    return ACTIVATIONS[name] if name in ACTIVATIONS else _from_registry(registry.get(name))  # a user's registered one


#: phi'(0) of ReLU, as the registry declares it (PyTorch's convention: 0)
RELU_PRIME_AT_ZERO = int(get("relu").prime(sp.Integer(0), sp.Integer(0)))
