r"""Facts about activation slopes, proved with SymPy: the reasons paths vanish or explode.

Each fact (:class:`Fact`) has a name, the place in the course text it comes
from, its statement as LaTeX (:meth:`Fact.latex`), and :meth:`Fact.prove`,
which redoes the proof from the definitions (sigmoid is rewritten as
``1/(1+exp(-z))`` first, so no step assumes the identity it proves) and
returns the proof's steps with a verdict.

* ``tanh_prime``: ``tanh'(z) = 1 - h^2`` with ``h = tanh z`` (text L228).
* ``sigmoid_prime``: ``sigma'(z) = s(1 - s)`` with ``s = sigma(z)`` (Table 4).
* ``sigmoid_prime_max``: ``sigma'(z) <= 1/4``, equality only at ``z = 0``
  (because ``1/4 - s(1-s) = (s - 1/2)^2``).
* ``tanh_prime_max``: ``tanh'(z) <= 1``, equality only at ``z = 0``.
* ``saturation``: ``tanh'`` and ``sigma'`` tend to 0 as ``|z| -> oo``; tanh tends
  to ``±1`` and sigma to 0 and 1 (text L218).
* ``relu_at_zero``: ReLU's one-sided slopes at 0 are 0 and 1, so phi'(0) is
  a convention; this toolkit states ``phi'(0) = 0`` (:data:`derive.activations.RELU_PRIME_AT_ZERO`, as torch).
* ``hochreiter``: ``|sigma'(z) w| < 1`` for every real ``z`` iff ``|w| < 4``.
* ``pascanu_tanh`` / ``pascanu_sigmoid``: ``||J_t||_2 <= gamma ||W_h||_2`` with
  ``gamma = sup|phi'|`` (1 for tanh, 1/4 for sigmoid), and the sufficient
  condition for vanishing ``sigma_max(W_h) < 1/gamma`` (Pascanu, Mikolov and
  Bengio 2013, §2).  The operator-norm inequality
  ``||diag(d) W||_2 <= ||diag(d)||_2 ||W||_2`` is cited, not re-proved; the
  numeric side checks the bound on random trajectories.

>>> from seqgrad.derive import activation_facts as af
>>> af.get("hochreiter").prove().holds
True
>>> print(af.get("tanh_prime").latex())
\begin{align*}
\frac{\mathrm{d}}{\mathrm{d} z} \tanh(z) &= 1 - h^{2}\quad \text{with }h = \tanh(z)
\end{align*}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import sympy as sp

from seqgrad import runcache, validate

from . import activations

__all__ = ["Fact", "Proof", "FACTS", "NAMES", "get", "gamma", "slope_maximum", "z", "w"]

z = sp.Symbol("z", real=True)
w = sp.Symbol("w", real=True)
h, s = sp.symbols("h s", real=True)
_sigma_exp = 1 / (1 + sp.exp(-z))  # the definition of the logistic sigmoid


@dataclass(frozen=True)
class Proof:
    """The steps of a proof (``(claim, SymPy result)`` pairs) and whether every step came out as needed."""

    holds: bool
    steps: tuple

    def __str__(self) -> str:
        return "\n".join(f"{claim}: {sp.sstr(result)}" for claim, result in self.steps) + f"\nholds: {self.holds}"


@dataclass(frozen=True)
class Fact:
    """One proved statement about an activation."""

    name: str
    source: str
    statement: tuple  # rows for derive.latex_layout.display: SymPy relations, each with an optional note
    _prove: Callable[[], Proof]

    def prove(self) -> Proof:
        """Redo the proof with SymPy (once per run of ``seqgrad check`` or ``latex``: :mod:`seqgrad.runcache`)."""
        return _proved(self)

    def latex(self, notation=None) -> str:
        """The statement as a complete display (``align*``, amsmath and amssymb)."""
        from .latex_layout import display

        return display(self.statement, notation)

    def _repr_latex_(self) -> str:
        return self.latex()

    def __repr__(self) -> str:
        return f"Fact({self.name!r})"


@runcache.memo
def _proved(fact: Fact) -> Proof:
    return fact._prove()


def _is_zero(expr) -> bool:
    return sp.simplify(expr) == 0


@runcache.memo  # the slope fact, and the maximum of the slope built on it
def _tanh_prime() -> Proof:
    derivative = sp.diff(sp.tanh(z), z)
    claimed = activations.get("tanh").prime(z, sp.tanh(z))  # 1 - h**2 at h = tanh z
    residual = sp.simplify(derivative - claimed)
    return Proof(residual == 0, (("d/dz tanh(z)", derivative), ("claimed phi'", claimed), ("difference", residual)))


@runcache.memo  # the slope fact, and the maximum of the slope built on it
def _sigmoid_prime() -> Proof:
    derivative = sp.diff(_sigma_exp, z)
    claimed = activations.get("sigmoid").prime(z, _sigma_exp)  # s(1 - s) at s = 1/(1+e^-z)
    residual = sp.simplify(derivative - claimed)
    return Proof(residual == 0, (("d/dz 1/(1+exp(-z))", derivative), ("s(1-s)", claimed), ("difference", residual)))


@runcache.memo  # one limit per run: the saturation fact and the maxima ask for the same ones
def _limit(expr, point):
    """``lim_{z -> point} expr``, of the same expression in SymPy's simplest hyperbolic form (``trigsimp`` is an
    exact rewriting: ``1 - tanh(z)^2`` is ``1/cosh(z)^2``, whose limits SymPy finds in a tenth of the time)."""
    return sp.limit(sp.trigsimp(expr), z, point)


@runcache.memo  # the slope facts and the claims' providers (slope_maximum) ask for the same suprema
def _sup_over_reals(f) -> tuple:
    """``sup_z f(z)`` over the reals of a smooth ``f``, exactly: a supremum is attained at a critical point
    (``f'(z) = 0``, solved by ``solveset``) or approached as ``z -> ±oo``; returns the sup and the critical
    points.  (What ``sympy.calculus.util.maximum`` does, in a tenth of its time: the limits are shared.)"""
    critical = sp.solveset(sp.diff(f, z), z, sp.S.Reals)
    if not (isinstance(critical, sp.FiniteSet) or critical is sp.S.EmptySet):  # infinitely many, or unsolved: no verdict
        return None, critical
    candidates = [sp.simplify(f.subs(z, c)) for c in critical] + [_limit(f, sp.oo), _limit(f, -sp.oo)]
    return sp.Max(*candidates), critical


def slope_maximum(activation: str) -> sp.Expr:
    """``max_z phi'(z)`` over the reals for tanh and the sigmoid, exactly, from the critical points of ``phi'`` and
    its limits at ±oo (:func:`_sup_over_reals`; once per run: :mod:`seqgrad.runcache`); None when SymPy cannot decide."""
    name = validate.choice("activation", activation, ("tanh", "sigmoid"))
    return _sup_over_reals(sp.diff(sp.tanh(z) if name == "tanh" else _sigma_exp, z))[0]


@runcache.memo  # the Pascanu and Hochreiter facts reuse this proof
def _sigmoid_prime_max() -> Proof:
    # sigma'(z) = s(1 - s) with s = sigma(z), and 1/4 - s(1 - s) = (s - 1/2)^2 >= 0: so sigma' <= 1/4,
    # with equality exactly where sigma(z) = 1/2, which is z = 0 alone; the supremum over the critical
    # points and z -> ±oo is the second evidence
    prime = sp.diff(_sigma_exp, z)
    as_s = dict(_sigmoid_prime().steps)["difference"]  # sigma' - s(1 - s) at s = sigma(z), the slope fact's residual
    gap = sp.expand(sp.Rational(1, 4) - s * (1 - s) - (s - sp.Rational(1, 2)) ** 2)  # 0: a perfect square
    at_half = sp.solveset(sp.Eq(_sigma_exp, sp.Rational(1, 2)), z, sp.S.Reals)
    peak = sp.simplify(prime.subs(z, 0))
    sup, critical = _sup_over_reals(prime)
    holds = (as_s == 0 and gap == 0 and at_half == sp.FiniteSet(0) and peak == sp.Rational(1, 4)
             and sup == sp.Rational(1, 4))
    return Proof(holds, (("sigma'(z) - s(1-s) at s = sigma(z)", as_s), ("1/4 - s(1-s) - (s-1/2)^2", gap),
                         ("{z : sigma(z) = 1/2}", at_half), ("sigma'(0)", peak), ("{z : sigma''(z) = 0}", critical),
                         ("max_z sigma'(z) (critical points and z -> ±oo)", sup)))


@runcache.memo  # the Pascanu fact reuses this proof
def _tanh_prime_max() -> Proof:
    # tanh'(z) = 1 - h^2 with h = tanh z, and 1 - (1 - h^2) = h^2 >= 0: so tanh' <= 1, with equality
    # exactly where tanh z = 0, which is z = 0 alone; the supremum is the second evidence
    prime = sp.diff(sp.tanh(z), z)
    as_h = dict(_tanh_prime().steps)["difference"]  # tanh' - (1 - h^2) at h = tanh z, the slope fact's residual
    gap = sp.expand(1 - (1 - h**2) - h**2)
    at_zero = sp.solveset(sp.Eq(sp.tanh(z), 0), z, sp.S.Reals)
    peak = sp.simplify(prime.subs(z, 0))
    sup, critical = _sup_over_reals(prime)
    holds = as_h == 0 and gap == 0 and at_zero == sp.FiniteSet(0) and peak == 1 and sup == 1
    return Proof(holds, (("tanh'(z) - (1 - h^2) at h = tanh z", as_h), ("1 - (1 - h^2) - h^2", gap),
                         ("{z : tanh z = 0}", at_zero), ("tanh'(0)", peak), ("{z : tanh''(z) = 0}", critical),
                         ("max_z tanh'(z) (critical points and z -> ±oo)", sup)))


def _saturation() -> Proof:
    tanh_prime = sp.diff(sp.tanh(z), z)
    sigma_prime = sp.diff(_sigma_exp, z)
    limits = {
        "tanh'(+oo)": (_limit(tanh_prime, sp.oo), 0),
        "tanh'(-oo)": (_limit(tanh_prime, -sp.oo), 0),
        "sigma'(+oo)": (_limit(sigma_prime, sp.oo), 0),
        "sigma'(-oo)": (_limit(sigma_prime, -sp.oo), 0),
        "tanh(+oo)": (_limit(sp.tanh(z), sp.oo), 1),
        "tanh(-oo)": (_limit(sp.tanh(z), -sp.oo), -1),
        "sigma(+oo)": (_limit(_sigma_exp, sp.oo), 1),
        "sigma(-oo)": (_limit(_sigma_exp, -sp.oo), 0),
    }
    holds = all(value == expected for value, expected in limits.values())
    return Proof(holds, tuple((k, v) for k, (v, _) in limits.items()))


def _relu_at_zero() -> Proof:
    t = sp.Symbol("t", real=True)
    relu = activations.get("relu")
    quotient = (relu.phi(t) - relu.phi(sp.Integer(0))) / t
    right = sp.limit(quotient, t, 0, "+")
    left = sp.limit(quotient, t, 0, "-")
    convention = relu.prime(sp.Integer(0), relu.phi(sp.Integer(0)))
    holds = right == 1 and left == 0 and right != left and convention == activations.RELU_PRIME_AT_ZERO == 0
    return Proof(holds, (("right derivative at 0", right), ("left derivative at 0", left),
                         ("phi'(0) by this toolkit's convention (torch's)", convention)))


def _hochreiter() -> Proof:
    sup_slope = _sigmoid_prime_max()
    sup = sp.Rational(1, 4)  # max_z sigma'(z), attained at z = 0 (sigmoid_prime_max)
    # sup_z |sigma'(z) w| = |w| sup_z sigma'(z) since sigma' > 0; "< 1 for every z" needs the sup below 1
    # only because the sup is attained (at z = 0): otherwise "<" could hold with sup = 1.
    allowed = sp.solveset(sp.Abs(w) * sup < 1, w, sp.S.Reals)
    at_boundary = sp.Abs(w * sp.diff(_sigma_exp, z)).subs({w: 4, z: 0})
    holds = sup_slope.holds and allowed == sp.Interval.open(-4, 4) and sp.simplify(at_boundary) == 1
    return Proof(holds, (("max_z sigma'(z), attained at z = 0", sup), ("{w : |w|/4 < 1}", allowed),
                         ("|sigma'(0) * 4|", sp.simplify(at_boundary))))


def gamma(activation: str) -> sp.Expr:
    """``sup_z |phi'(z)|`` for tanh (1) and sigmoid (1/4), proved by the ``*_prime_max`` facts."""
    name = validate.choice("activation", activation, ("tanh", "sigmoid"))
    return sp.Integer(1) if name == "tanh" else sp.Rational(1, 4)


def _pascanu(activation: str) -> Callable[[], Proof]:
    def prove() -> Proof:
        g = gamma(activation)
        slope = (_tanh_prime_max if activation == "tanh" else _sigmoid_prime_max)()
        d0, d1 = sp.symbols("d_0 d_1", real=True)
        singular = sp.Matrix([[d0, 0], [0, d1]]).singular_values()  # ||diag(d)||_2 = max_i |d_i|
        sigma_max = sp.Symbol("sigma_max", nonnegative=True)
        vanishing = sp.solveset(g * sigma_max < 1, sigma_max, sp.Interval(0, sp.oo))
        holds = (slope.holds and sorted(map(sp.Abs, (d0, d1)), key=str) == sorted(singular, key=str)
                 and vanishing == sp.Interval.Ropen(0, 1 / g))
        return Proof(holds, ((f"gamma = sup|{activation}'|", g), ("singular values of diag(d_0, d_1)", singular),
                             ("||diag(d) W||_2 <= ||diag(d)||_2 ||W||_2", "operator norm is submultiplicative (cited)"),
                             ("{sigma_max : gamma sigma_max < 1} (then the bound (gamma sigma_max)^n decays)", vanishing)))

    return prove


def _fact(name, source, statement, prove) -> tuple:
    return name, Fact(name, source, statement, prove)


sigma = sp.Function("sigma")
phi = sp.Function("phi")
_sigma_prime, _tanh_prime_z = sp.Derivative(sigma(z), z), sp.Derivative(sp.tanh(z), z)
_all_z = ("for all ", z, ", with equality only at ", sp.Eq(z, 0, evaluate=False))


class Norm2(sp.Function):
    """The spectral norm ``||A||_2`` of a statement (printed, never evaluated)."""

    def _latex(self, printer):
        return r"\left\lVert %s \right\rVert_2" % printer._print(self.args[0])

    def _sympystr(self, printer):
        return f"||{printer._print(self.args[0])}||_2"


def _pascanu_rows(activation: str, gamma_value) -> tuple:
    J_t, W_h, gamma_, s_max = sp.symbols("J_t W_h gamma sigma_max")
    return ((sp.Le(Norm2(J_t), gamma_ * Norm2(W_h)), ("with ", sp.Eq(gamma_, gamma_value, evaluate=False), f" for {activation}")),
            (sp.Lt(sp.Function("sigma_max")(W_h), 1 / gamma_value), "is enough for the gradient to vanish"))


FACTS: dict[str, Fact] = dict([
    _fact("tanh_prime", "week06 §Paths:228, Table 4",
          ((_tanh_prime_z, 1 - h ** 2, ("with ", sp.Eq(h, sp.tanh(z), evaluate=False))),), _tanh_prime),
    _fact("sigmoid_prime", "week06 Table 4 (week06 §Paths:212-216)",
          ((_sigma_prime, s * (1 - s), ("with ", sp.Eq(s, sigma(z), evaluate=False))), (sigma(z), 1 / (1 + sp.exp(-z)))),
          _sigmoid_prime),
    _fact("sigmoid_prime_max", "week06 Table 4: slope never exceeds 1/4",
          ((sp.Le(_sigma_prime, sp.Rational(1, 4)), _all_z),), _sigmoid_prime_max),
    _fact("tanh_prime_max", "week06 Table 4: slope about 1 near 0",
          ((sp.Le(_tanh_prime_z, 1), _all_z),), _tanh_prime_max),
    _fact("saturation", "week06 §Paths:218",
          ((sp.Limit(_tanh_prime_z, z, sp.oo), (sp.Limit(_sigma_prime, z, sp.oo), 0), ("and the same as ", z, " goes to minus infinity")),
           (sp.Limit(sp.tanh(z), z, sp.oo), 1), (sp.Limit(sp.tanh(z), z, -sp.oo), -1),
           (sp.Limit(sigma(z), z, sp.oo), 1), (sp.Limit(sigma(z), z, -sp.oo), 0)),
          _saturation),
    _fact("relu_at_zero", "week06 Table 4 and week06 §Paths:216: ReLU at 0 needs a convention",
          ((sp.Derivative(sp.Max(0, z), z), sp.Piecewise((1, z > 0), (0, z < 0)), "the one-sided slopes at 0 differ"),
           (sp.Subs(sp.Derivative(phi(z), z), z, 0), 0, ("by convention for ", sp.Eq(phi(z), sp.Max(0, z), evaluate=False), ", as torch"))),
          _relu_at_zero),
    _fact("hochreiter", "Hochreiter (1991); week06 Table 4",
          ((sp.Lt(sp.Abs(_sigma_prime * w), 1), ("for every real ", z, " exactly when ", sp.Lt(sp.Abs(w), 4))),), _hochreiter),
    _fact("pascanu_tanh", "Pascanu, Mikolov and Bengio (2013), section 2; week06 §Jacobian:338-340",
          _pascanu_rows("tanh", sp.Integer(1)), _pascanu("tanh")),
    _fact("pascanu_sigmoid", "Pascanu, Mikolov and Bengio (2013), section 2",
          _pascanu_rows("the sigmoid", sp.Rational(1, 4)), _pascanu("sigmoid")),
])

NAMES: tuple[str, ...] = tuple(FACTS)


def get(name: str) -> Fact:
    """The fact called ``name`` (one of :data:`NAMES`)."""
    return FACTS[validate.choice("fact", name, NAMES)]
