"""What an identity of the catalogue is: :class:`Identity`, its numeric check and their helpers.

An entry (:class:`Identity`) has a ``name``, the ``source`` it comes from (seed
file and line or section), its ``scope`` (the sizes it is proved for: ``"all n >= 1"``
for a statement proved at symbolic size in index notation, ``"instance d = 2"`` where
only an instance is stated or provable; a :class:`derive.prose.Prose`, plain text whose sizes and
relations the notes typeset) and its ``assumptions``, the statement as SymPy objects (``lhs`` and ``rhs``;
``relation`` is ``"="`` or, for a documented failure, ``"!="``), an exact proof
method and a numeric check:

* ``method="simplify"``: the residual ``lhs - rhs`` is reduced to zero by the
  named exact simplifier (:attr:`Identity.simplifier`, see :mod:`derive.proof`);
* ``method="counterexample"``: a failure is shown at an exact point where the
  residual is provably non-zero;
* ``method="numeric"``: only a numeric check applies, for the reason in
  :attr:`Identity.reason` (for example a number printed to 3 significant figures).

The numeric check (:meth:`Identity.check_numeric`) evaluates both sides
independently of the proof (at random points with ``math``/``mpmath``, by
high-precision finite differences, or by Monte Carlo) and returns the numbers;
``crosscheck`` compares them under its tolerance policy.

:class:`Derivation` is the base every derivation shares (an identity, a block, a layer):
it prints readably and exports LaTeX.  The catalogue of every entry is :mod:`derive.catalogue`.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import sympy as sp

from seqgrad.errors import SeqgradValueError

from .proof import Proof
from .safe_parse import as_sympy
from .tape import free_symbols, mpmath_function

METHODS = ("simplify", "counterexample", "numeric")
RULES = ("policy", "printed", "statistical", "differs")


class Derivation:
    """Mixin: a derivation prints readably and exports LaTeX.

    A subclass says what it shows as :meth:`rows` (SymPy relations or ``(lhs, rhs)`` pairs, each with an
    optional note; see :func:`derive.latex_layout.display`); :meth:`latex` lays them out as a complete display,
    one or more ``align*`` environments, that pastes into a document body whose preamble loads
    :data:`derive.latex_layout.PACKAGES` (``amsmath`` and ``amssymb``).  ``VECTORS`` are the names it sets in bold.
    """

    VECTORS: frozenset = frozenset()

    def rows(self) -> list:  # pragma: no cover - every subclass overrides
        raise NotImplementedError

    def latex(self, notation=None, *, width: int = 60) -> str:
        """A complete display (``align*``, amsmath) of :meth:`rows`, printed with ``notation``."""
        from .latex_layout import display
        from .latex_settings import Notation

        notation = Notation() if notation is None else notation
        return display(self.rows(), notation.with_vectors(self.VECTORS) if self.VECTORS else notation, width=width)

    def _repr_latex_(self) -> str:
        return self.latex()  # a complete display (align*), which Jupyter renders as it is

    def document(self) -> str:
        """A complete compilable LaTeX document holding :meth:`latex`."""
        return latex_document(self.latex())


def latex_document(body: str) -> str:
    """Put a complete display (what every ``latex()`` returns) in a minimal compilable article."""
    from .latex_layout import PACKAGES

    return ("\\documentclass{article}\n\\usepackage{" + ",".join(PACKAGES) + "}\n\\begin{document}\n"
            f"{body}\n\\end{{document}}\n")


@dataclass
class NumericResult:
    """Numbers for crosscheck to compare: ``computed`` against ``reference``.

    ``rule`` says how: ``"policy"`` (the float64 tolerance policy), ``"printed"``
    (half a unit in the 3rd significant figure of the printed reference) or
    ``"statistical"`` (a Monte Carlo estimate within ``tolerance``, stated with its reason) or
    ``"differs"`` (a documented failure: passes only when the sides are NOT equal within the policy).
    """

    computed: list[float]
    reference: list[float]
    rule: str = "policy"
    tolerance: float | None = None
    detail: str = ""


@dataclass(eq=False)
class Identity(Derivation):
    """One catalogue entry; see the module docstring."""

    name: str
    source: str
    title: str
    lhs_: object = field(repr=False)
    rhs_: object = field(repr=False)
    method: str
    prover: Callable[[], Proof] = field(repr=False)
    numeric: Callable[[random.Random], NumericResult] = field(repr=False)
    relation: str = "="
    simplifier: str = ""
    reason: str = ""
    symbols_note: str = ""
    scope: str = ""
    assumptions: tuple = ()
    shown: Callable[[], tuple] | None = field(default=None, repr=False)
    family: str = ""  # the module of derive that states it (positional, attention, ...), set by catalogue.entries()

    def __post_init__(self):
        from .prose import Prose, scope

        self.assumptions = tuple(self.assumptions)
        self.source = Prose(self.source)  # plain text; the notes typeset the formulas written in backquotes
        self.scope = scope(self.scope)  # the recorded text, its sizes and relations read as formulas (derive.prose)
        if self.method not in METHODS:
            raise SeqgradValueError("method", self.method, "one of " + ", ".join(METHODS))
        if self.method == "numeric" and not self.reason:
            raise SeqgradValueError("reason", self.reason, "a documented reason why only a numeric check applies")

    @property
    def lhs(self):
        """The left side (built on first use when given as a zero-argument function)."""
        if callable(self.lhs_) and not isinstance(self.lhs_, sp.Basic):
            self.lhs_ = self.lhs_()
        return self.lhs_

    @property
    def rhs(self):
        if callable(self.rhs_) and not isinstance(self.rhs_, sp.Basic):
            self.rhs_ = self.rhs_()
        return self.rhs_

    def prove(self) -> Proof:
        """Run the exact proof (for ``method="numeric"`` this is the numeric check's verdict); within one run of
        ``seqgrad check`` or ``seqgrad latex`` (:mod:`seqgrad.runcache`) an entry is proved once, however many
        sections and checks ask."""
        from seqgrad import runcache

        return runcache.once(("Identity.prove", self.name, self.title, self.method), self._prove_now)

    def _prove_now(self) -> Proof:
        start = time.perf_counter()
        proof = self.prover()
        proof.seconds = time.perf_counter() - start
        return proof

    def check_numeric(self, seed: int = 0) -> NumericResult:
        """Evaluate both sides numerically, independently of the proof."""
        return self.numeric(random.Random(f"{self.name}:{seed}"))

    def sides(self) -> tuple:
        """The statement's two sides as printed: the general formula when the entry has one (``shown``; the
        checked sides may be an instance of it, see :attr:`scope`), else the checked sides."""
        if self.shown is not None:
            return self.shown()
        return _sym(self.lhs), _sym(self.rhs)

    def statement(self):
        """The statement as a SymPy relation (``Eq`` or ``Ne``)."""
        lhs, rhs = self.sides()
        if self.relation == "=":
            return sp.Eq(lhs, rhs, evaluate=False)
        return sp.Ne(lhs, rhs, evaluate=False)

    def rows(self) -> list:
        return [self.statement()]

    def math(self, notation=None) -> str:
        """The statement as one line of math-mode LaTeX (for ``$$ ... $$`` in Markdown); :meth:`latex` is the display."""
        from .latex_settings import latex

        return latex(self.statement(), notation)

    def __str__(self) -> str:
        from .program_text import sstr

        lhs, rhs = self.sides()
        return f"{self.name} [{self.source}]: {self.title}\n  {sstr(lhs)} {self.relation} {sstr(rhs)}"


def _sym(x):
    if isinstance(x, (list, tuple)):
        return sp.Matrix(x)
    return x


# --- numeric helpers ---------------------------------------------------------------------------

def evaluate(exprs: Sequence, values: dict) -> list[float]:
    """Evaluate SymPy expressions at ``values`` with ``mpmath`` (30 digits) and return floats."""
    return compile_numeric(exprs, sorted(values, key=lambda s: s.name))(values)


#: ``expr`` as a function of ``args`` evaluated with ``mpmath`` for the numeric checks, returning what
#: ``sympy.lambdify(args, expr, "mpmath")`` returns, through a tape (:func:`derive.tape.mpmath_function`)
mpmath_lambdify = mpmath_function


def compile_numeric(exprs: Sequence, symbols: Sequence) -> Callable[[dict], list[float]]:
    """One function evaluating ``exprs`` at a dict of values, at 30 digits (:func:`mpmath_lambdify`: a tape)."""
    import mpmath

    symbols = list(symbols)
    fn = mpmath_lambdify(symbols, list(exprs))

    def run(values: dict) -> list[float]:
        with mpmath.workdps(30):
            return [float(x) for x in fn(*[mpmath.mpf(values[s]) for s in symbols])]

    return run


def random_values(symbols, rng: random.Random, low: float = -1.5, high: float = 1.5, positive=()) -> dict:
    """Random values for ``symbols``; those in ``positive`` are drawn from [0.1, high]."""
    positive = set(positive)
    return {s: (rng.uniform(0.1, abs(high)) if s in positive else rng.uniform(low, high)) for s in symbols}


def numeric_sides(lhs, rhs, rng: random.Random, trials: int = 3, positive=(), fixed: dict | None = None, low=-1.5, high=1.5) -> NumericResult:
    """Evaluate both sides at ``trials`` random points of their free symbols."""
    lhs_l, rhs_l = _flat(lhs), _flat(rhs)
    both_sides = [as_sympy(e, "expression") for e in lhs_l + rhs_l]
    free = sorted(free_symbols(both_sides) - set(fixed or {}), key=lambda s: s.name)
    fn = compile_numeric(both_sides, free + sorted(fixed or {}, key=lambda s: s.name))
    computed, reference = [], []
    for _ in range(trials):
        values = random_values(free, rng, low, high, positive)
        values.update(fixed or {})
        both = fn(values)
        computed += both[:len(lhs_l)]
        reference += both[len(lhs_l):]
    return NumericResult(computed, reference, "policy", None, f"both sides at {trials} random points ({len(free)} symbols)")


def _flat(x) -> list:
    if isinstance(x, sp.MatrixBase):
        return list(x)
    if isinstance(x, (list, tuple)):
        return [e for item in x for e in _flat(item)]
    return [x]
