r"""One definition per scalar operation: the registry every parser, printer, compiler and autograd twin reads.

Each scalar operation (an activation such as tanh or GELU, a function such as exp, erf or abs) is one
:class:`Operation`, declared once, below, with

* ``name`` and ``arity``: how the parser calls it (``log`` takes 1 or 2 arguments);
* ``definition``: the operation written over the other operations (``softplus(z) = log(1 + exp(z))``), or
  ``None`` for a primitive, which names its implementations instead;
* ``sympy``, ``numpy``, ``torch``, ``mpmath``: a primitive's implementation in each backend, as a function
  of that backend's module (``lambda np: np.tanh``), so that this module imports nothing but the standard
  library and each layer resolves the declaration with its own modules;
* ``derivative``: ``phi'(z)``, written through the output ``h = phi(z)`` where the text writes it so
  (tanh: ``1 - h**2``), with ``kink`` stating the convention at the points where the derivative is not
  defined (relu: ``relu'(0) = 0``, as ``torch.relu``);
* ``latex``: the glyph the LaTeX printer uses (the text printer writes the name; SymPy's own functions
  keep SymPy's glyphs, ``\tanh``, ``\left|z\right|``);
* ``gamma``: ``sup |phi'|`` where it is finite (the Pascanu bound of the numeric path figures);
* ``interval``: how the certified evaluator of claims (:mod:`derive.certified`) bounds it -- ``"increasing"``
  or ``"decreasing"`` (a monotone primitive: its mpmath implementation at the two ends of the argument's
  interval, with guard bits, rounded outward by a margin far above mpmath's accuracy), ``"definition"`` (a
  composite: its definition in the evaluator's own exact and interval arithmetic; the default of every
  composite), or ``"rule"`` (a rule of its own there, for a pole, a domain, a period or a jump: ``f_NAME``).
  A primitive without one is read by the SymPy parser but refused by ``seqgrad claim``.

Definitions and derivatives are written once over a *namespace* ``m`` whose attributes are the registry's
operations in one backend (``m.exp``, ``m.erf``, ...) plus the structural helpers ``maximum``, ``minimum``,
``heaviside`` and the constants ``pi`` and ``e``; :mod:`derive.operations` gives the SymPy and mpmath
namespaces, :mod:`numeric.activations` the numpy and torch ones.  So one declaration yields the SymPy node
that derivations differentiate, the numeric implementations that the compiled code calls and the autograd
twin differentiates, and the parser's whitelist.

>>> get("gelu").arity, get("relu").kink
((1, 1), "relu'(0) = 0, as torch.relu")
>>> get("erf").interval, get("gelu").interval, get("log").interval
('increasing', 'definition', 'rule')
>>> set(claims_names()) == set(parser_names())   # every built-in operation has an interval rule
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from .errors import SeqgradTypeError, SeqgradValueError

__all__ = ["Operation", "register", "unregister", "get", "find", "operations", "parser_names", "claims_names",
           "activation_names", "Namespace", "HELPERS"]

#: how the certified evaluator bounds an operation ("": it does not; see the module docstring)
INTERVAL_KINDS = ("", "increasing", "decreasing", "definition", "rule")

#: the structural helpers every namespace provides besides the operations
HELPERS = ("maximum", "minimum", "heaviside", "pi", "e")

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")


@dataclass(frozen=True, eq=False)
class Operation:
    """One scalar operation, declared once (see the module docstring)."""

    name: str
    definition: Callable | None = None  # lambda m, z: ... over a namespace of the registry's operations
    derivative: Callable | None = None  # lambda m, z, h: phi'(z), h = phi(z)
    arity: tuple[int, int] = (1, 1)
    sympy: Callable | None = None       # lambda sp: the SymPy node (a primitive's)
    numpy: Callable | None = None       # lambda np: the numpy function
    torch: Callable | None = None       # lambda torch: the torch function
    mpmath: Callable | None = None      # lambda mp: the mpmath function
    latex: str = ""
    kink: str = ""
    inline: bool = False                # a composite printed as its definition (softplus: log(1 + exp(z)))
    sympy_diff: bool = True             # False: SymPy's own derivative is not the real one (abs: re/im parts)
    interval: str = ""                  # how derive.certified bounds it (see the module docstring)
    gamma: float | None = None          # sup |phi'(z)| over the reals, where finite
    note: str = ""
    builtin: bool = field(default=False, repr=False)

    def __post_init__(self):
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise SeqgradValueError("name", self.name, "an operation name is a plain identifier such as gelu")
        if self.definition is None and self.sympy is None:
            raise SeqgradValueError(f"operation {self.name!r}", self.name,
                                    "a definition over other operations, or a primitive's sympy implementation")
        if self.definition is not None and not callable(self.definition):
            raise SeqgradTypeError(f"operation {self.name!r}: definition", self.definition, "a function (m, z) -> expression")
        if self.derivative is None and self.definition is None:
            raise SeqgradValueError(f"operation {self.name!r}: derivative", None,
                                    "a derivative (m, z, h) -> phi'(z) for a primitive operation (only an operation "
                                    "with a definition may leave it to SymPy)")
        if self.derivative is not None and not callable(self.derivative):
            raise SeqgradTypeError(f"operation {self.name!r}: derivative", self.derivative, "a function (m, z, h) -> phi'(z)")
        lo, hi = self.arity
        if not 1 <= lo <= hi:
            raise SeqgradValueError(f"operation {self.name!r}: arity", self.arity, "(smallest, largest) with 1 <= smallest <= largest")
        if self.interval not in INTERVAL_KINDS:
            raise SeqgradValueError(f"operation {self.name!r}: interval", self.interval,
                                    "one of " + ", ".join(repr(k) for k in INTERVAL_KINDS if k))
        if self.interval in ("increasing", "decreasing") and self.mpmath is None:
            raise SeqgradValueError(f"operation {self.name!r}: interval", self.interval,
                                    "a monotone rule needs the primitive's mpmath implementation (mpmath=)")
        if self.interval == "definition" and self.definition is None:
            raise SeqgradValueError(f"operation {self.name!r}: interval", self.interval, "a definition= to evaluate")
        if not self.interval and self.definition is not None:
            object.__setattr__(self, "interval", "definition")
        if not self.latex:
            object.__setattr__(self, "latex", r"\operatorname{%s}" % self.name.replace("_", r"\_"))

    @property
    def primitive(self) -> bool:
        return self.definition is None

    @property
    def claims(self) -> bool:
        """True when the certified evaluator of claims bounds it (it has an ``interval`` rule)."""
        return bool(self.interval)

    def implementation(self, backend: str) -> Callable | None:
        """The declared implementation of a primitive in ``backend`` (a function of the backend's module)."""
        return {"sympy": self.sympy, "numpy": self.numpy, "torch": self.torch, "mpmath": self.mpmath}[backend]

    def __repr__(self) -> str:
        return f"Operation({self.name!r})"


_REGISTRY: dict[str, Operation] = {}
_VERSION = [0]  # bumped by every change, so namespaces built from the registry know when to rebuild


def register(op: Operation, *, replace: bool = False) -> Operation:
    """Add ``op`` to the registry (every parser, printer and compiler then knows it); a name already
    taken is refused unless ``replace`` (never a built-in one)."""
    if not isinstance(op, Operation):
        raise SeqgradTypeError("op", op, "a seqgrad.operations.Operation")
    old = _REGISTRY.get(op.name)
    if old is not None and (old.builtin or not replace):
        raise SeqgradValueError("op", op.name, "a name no operation has yet (taken: " + ", ".join(_REGISTRY) + ")")
    _REGISTRY[op.name] = op
    _VERSION[0] += 1
    return op


def unregister(name: str) -> None:
    """Remove an operation a user registered (the built-in ones stay)."""
    op = _REGISTRY.get(name)
    if op is None or op.builtin:
        raise SeqgradValueError("name", name, "an operation a user registered (" +
                                ", ".join(n for n, o in _REGISTRY.items() if not o.builtin) + ")")
    del _REGISTRY[name]
    _VERSION[0] += 1


def get(name: str) -> Operation:
    """The operation called ``name``; refuses anything else, naming what is registered."""
    op = _REGISTRY.get(name) if isinstance(name, str) else None
    if op is None:
        raise SeqgradValueError("operation", name, "one of " + ", ".join(_REGISTRY))
    return op


def find(name: str) -> Operation | None:
    return _REGISTRY.get(name) if isinstance(name, str) else None


def operations() -> tuple[Operation, ...]:
    return tuple(_REGISTRY.values())


def version() -> int:
    return _VERSION[0]


def parser_names() -> tuple[str, ...]:
    """Every operation the parser reads by name."""
    return tuple(_REGISTRY)


def claims_names() -> tuple[str, ...]:
    """The operations the certified evaluator of claims reads (each has an interval rule there)."""
    return tuple(n for n, op in _REGISTRY.items() if op.claims)


def activation_names() -> tuple[str, ...]:
    """The one-argument operations a recurrent cell may apply by name (``rnn.unroll``'s and ``Cell``'s)."""
    return tuple(n for n, op in _REGISTRY.items() if op.arity[0] == 1)


class Namespace:
    """The registry's operations in one backend, as attributes: ``ns.tanh(v)``, ``ns.gelu(v)``.

    A primitive is its declared implementation resolved with ``module``; a composite is its definition
    evaluated over this namespace (so GELU's numpy implementation is ``z*(1 + erf(z/sqrt(2)))/2`` with numpy's
    erf); ``helpers`` gives :data:`HELPERS`.  ``wrap`` (optional) adapts each primitive (torch: accept
    Python numbers).  An operation without an implementation here raises one error naming it and the backend.
    """

    def __init__(self, backend: str, module, helpers: dict, wrap: Callable | None = None, extra: dict | None = None):
        missing = [h for h in HELPERS if h not in helpers]
        if missing:
            raise SeqgradValueError("helpers", sorted(helpers), "every helper of " + ", ".join(HELPERS))
        self._backend, self._module, self._wrap = backend, module, wrap
        self._ops = dict(extra or {})
        self.__dict__.update(helpers)

    def implementation(self, op: Operation, wrapped: bool = True) -> Callable:
        """``op`` in this backend; ``wrapped=False``: a primitive without the adapter (generated code, which
        passes it arrays only)."""
        spec = op.implementation(self._backend)
        if spec is not None:
            fn = spec(self._module)
            return self._wrap(fn) if self._wrap is not None and wrapped else fn
        if op.primitive:
            raise SeqgradValueError("operation", op.name, f"an operation with a {self._backend} implementation "
                                    f"(the {op.name!r} operation has none)")
        definition = op.definition
        return lambda *args: definition(self, *args)

    def function(self, name: str) -> Callable:
        """The operation ``name`` for generated code: a primitive unwrapped, a composite by its definition."""
        op = self._ops.get(name) or get(name)
        return self.implementation(op, wrapped=False)

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        op = self._ops.get(name) or _REGISTRY.get(name)
        if op is None:
            raise SeqgradValueError("operation", name, "a registered operation (" + ", ".join(_REGISTRY) + ")")
        fn = self.implementation(op)
        if name not in self._ops:
            self.__dict__[name] = fn  # cached: the registry's built-in entries do not change
        return fn


def _builtin(**kw) -> None:
    register(Operation(builtin=True, **kw))


# ---------------------------------------------------------------------------------------------------------
# The built-in operations.  Each is one entry: adding an operation is adding an entry here (or a call of
# register() in your own code; see docs/adding-an-operation.md).

_builtin(name="identity", definition=lambda m, z: z, derivative=lambda m, z, h: 1, inline=True, latex="z", gamma=1.0,
         note="each transition contributes w_h; the state update is linear")
_builtin(name="tanh", sympy=lambda sp: sp.tanh, numpy=lambda np: np.tanh, torch=lambda t: t.tanh,
         mpmath=lambda mp: mp.tanh, derivative=lambda m, z, h: 1 - h**2, latex=r"\tanh", interval="rule", gamma=1.0,
         note="slope about 1 near 0, small in saturation; phi'(z_t) = 1 - h_t^2")
_builtin(name="sigmoid", definition=lambda m, z: 1 / (1 + m.exp(-z)), derivative=lambda m, z, h: h * (1 - h),
         numpy=lambda np: lambda z: np.exp(-np.logaddexp(0.0, -z)),  # the overflow-free form
         torch=lambda t: t.sigmoid, latex=r"\sigma", interval="rule", gamma=0.25,
         note="slope never above 1/4, small in saturation")
_builtin(name="relu", definition=lambda m, z: m.maximum(0, z), derivative=lambda m, z, h: m.heaviside(z, 0),
         inline=True, latex=r"\max(0, z)", kink="relu'(0) = 0, as torch.relu", gamma=1.0,
         note="slope 1 for z > 0 and 0 for z < 0; phi'(0) = 0 by convention (as torch.relu)")
_builtin(name="leaky_relu", definition=lambda m, z: m.maximum(z, z / 100),
         derivative=lambda m, z, h: m.heaviside(z - z / 100, 0.5) + m.heaviside(z / 100 - z, 0.5) / 100, inline=True,
         kink="the slope at 0 is the mean of 1 and 1/100 (max splits a tie evenly, as torch.maximum)", gamma=1.0)
_builtin(name="softplus", definition=lambda m, z: m.log(1 + m.exp(z)), derivative=lambda m, z, h: m.exp(z) / (1 + m.exp(z)),
         inline=True, gamma=1.0)
_builtin(name="gelu", definition=lambda m, z: z * (1 + m.erf(z / m.sqrt(2))) / 2,
         derivative=lambda m, z, h: (1 + m.erf(z / m.sqrt(2))) / 2 + z * m.exp(-z**2 / 2) / m.sqrt(2 * m.pi),
         latex=r"\operatorname{GELU}", note="the exact (erf) GELU of torch.nn.GELU()")
_builtin(name="gelu_tanh", definition=lambda m, z: z * (1 + m.tanh(_gelu_tanh_argument(m, z))) / 2,
         derivative=lambda m, z, h: (1 + m.tanh(_gelu_tanh_argument(m, z))) / 2
         + z * (1 - m.tanh(_gelu_tanh_argument(m, z))**2) * m.sqrt(2 / m.pi) * (1 + 3 * 44715 * z**2 / 1000000) / 2,
         latex=r"\operatorname{GELU}_{\tanh}", note="the tanh approximation of GELU, torch.nn.GELU(approximate='tanh')")
_builtin(name="silu", definition=lambda m, z: z * m.sigmoid(z),
         derivative=lambda m, z, h: m.sigmoid(z) * (1 + z * (1 - m.sigmoid(z))),
         latex=r"\operatorname{SiLU}", note="z sigmoid(z), torch.nn.SiLU (the swish of Ramachandran et al.)")
_builtin(name="exp", sympy=lambda sp: sp.exp, numpy=lambda np: np.exp, torch=lambda t: t.exp, mpmath=lambda mp: mp.exp,
         derivative=lambda m, z, h: h, latex=r"\exp", interval="rule")
_builtin(name="log", arity=(1, 2), sympy=lambda sp: sp.log,
         numpy=lambda np: np.log, torch=lambda t: t.log, mpmath=lambda mp: mp.log, derivative=lambda m, z, h: 1 / z,
         latex=r"\log", interval="rule", note="natural logarithm; log(x, b) in base b")
_builtin(name="sqrt", sympy=lambda sp: sp.sqrt, numpy=lambda np: np.sqrt, torch=lambda t: t.sqrt, mpmath=lambda mp: mp.sqrt,
         derivative=lambda m, z, h: 1 / (2 * h), latex=r"\sqrt", interval="rule")
_builtin(name="sin", sympy=lambda sp: sp.sin, numpy=lambda np: np.sin, torch=lambda t: t.sin, mpmath=lambda mp: mp.sin,
         derivative=lambda m, z, h: m.cos(z), latex=r"\sin", interval="rule", gamma=1.0)
_builtin(name="cos", sympy=lambda sp: sp.cos, numpy=lambda np: np.cos, torch=lambda t: t.cos, mpmath=lambda mp: mp.cos,
         derivative=lambda m, z, h: -m.sin(z), latex=r"\cos", interval="rule", gamma=1.0)
_builtin(name="tan", sympy=lambda sp: sp.tan, numpy=lambda np: np.tan, torch=lambda t: t.tan, mpmath=lambda mp: mp.tan,
         derivative=lambda m, z, h: 1 + h**2, latex=r"\tan", interval="rule")
_builtin(name="asin", sympy=lambda sp: sp.asin, numpy=lambda np: np.arcsin, torch=lambda t: t.asin, mpmath=lambda mp: mp.asin,
         derivative=lambda m, z, h: 1 / m.sqrt(1 - z**2), latex=r"\operatorname{asin}", interval="rule")
_builtin(name="acos", sympy=lambda sp: sp.acos, numpy=lambda np: np.arccos, torch=lambda t: t.acos, mpmath=lambda mp: mp.acos,
         derivative=lambda m, z, h: -1 / m.sqrt(1 - z**2), latex=r"\operatorname{acos}", interval="rule")
_builtin(name="atan", sympy=lambda sp: sp.atan, numpy=lambda np: np.arctan, torch=lambda t: t.atan, mpmath=lambda mp: mp.atan,
         derivative=lambda m, z, h: 1 / (1 + z**2), latex=r"\operatorname{atan}", interval="rule", gamma=1.0)
_builtin(name="sinh", sympy=lambda sp: sp.sinh, numpy=lambda np: np.sinh, torch=lambda t: t.sinh, mpmath=lambda mp: mp.sinh,
         derivative=lambda m, z, h: m.cosh(z), latex=r"\sinh", interval="rule")
_builtin(name="cosh", sympy=lambda sp: sp.cosh, numpy=lambda np: np.cosh, torch=lambda t: t.cosh, mpmath=lambda mp: mp.cosh,
         derivative=lambda m, z, h: m.sinh(z), latex=r"\cosh", interval="rule")
_builtin(name="erf", sympy=lambda sp: sp.erf, numpy=lambda np: _numpy_erf(np), torch=lambda t: t.erf,
         mpmath=lambda mp: mp.erf, derivative=lambda m, z, h: 2 * m.exp(-z**2) / m.sqrt(m.pi), latex=r"\operatorname{erf}",
         interval="increasing", gamma=1.1283791670955126)
_builtin(name="abs", sympy=lambda sp: sp.Abs, numpy=lambda np: np.abs, torch=lambda t: t.abs, mpmath=lambda mp: mp.fabs,
         derivative=lambda m, z, h: m.sign(z), sympy_diff=False, interval="rule", latex=r"\left|z\right|",
         kink="abs'(0) = 0 (sign(0) = 0), as torch.abs", gamma=1.0)
_builtin(name="sign", sympy=lambda sp: sp.sign, numpy=lambda np: np.sign, torch=lambda t: t.sign, mpmath=lambda mp: mp.sign,
         derivative=lambda m, z, h: 0, sympy_diff=False, latex=r"\operatorname{sign}", interval="rule",
         kink="sign' = 0 everywhere, 0 included (as torch.sign): no gradient passes a sign", gamma=0.0)
_builtin(name="floor", sympy=lambda sp: sp.floor, numpy=lambda np: np.floor, torch=lambda t: t.floor,
         mpmath=lambda mp: mp.floor, derivative=lambda m, z, h: 0, sympy_diff=False, interval="rule",
         latex=r"\operatorname{floor}",
         kink="floor' = 0 everywhere, the integers included (as torch.floor): no gradient passes a floor", gamma=0.0)


def _gelu_tanh_argument(m, z):
    """The tanh GELU's ``sqrt(2/pi) (z + 0.044715 z^3)``, in the namespace ``m``'s arithmetic."""
    return m.sqrt(2 / m.pi) * (z + 44715 * z**3 / 1000000)


def _numpy_erf(np):
    """numpy has no erf: the standard library's, entrywise (exact to float64 rounding)."""
    import math

    scalar = np.vectorize(math.erf, otypes=[float])
    return lambda x: scalar(x) if np.ndim(x) else math.erf(float(x))
