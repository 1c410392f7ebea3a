"""Sinusoidal positional encodings and their shift identity PE(pos + k) = R(k) PE(pos).

The course rule (seed 000, L530; seed 001, l.95): ``omega_j = base^(-2 floor(j/2) / d)``,
sine on even j and cosine on odd j ("interleaved").  The other layout found in
the wild puts every sine first and every cosine second ("half").  For odd d
one sine coordinate has no cosine partner: it gets no rotation, and
:func:`unpaired_has_no_scalar_shift` proves that no scalar a(k) can shift it.

PE vectors are SymPy column matrices (d x 1); R(k) acts on the left.  The text
stores positions as rows, so its form is ``p_{t+k} = p_t R(k)^T``.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from seqgrad import validate
from seqgrad.errors import SeqgradValueError

from .identity import Derivation, Identity, NumericResult, numeric_sides
from .proof import Proof, angle_addition, proof_by, pythagorean
from .safe_parse import as_sympy

LAYOUTS = ("interleaved", "half")
pos = sp.Symbol("pos", real=True)
k = sp.Symbol("k", real=True)
q = sp.Symbol("q", real=True)


i_ = sp.Symbol("i", integer=True, nonnegative=True)
omega_ = sp.IndexedBase("omega")  # omega_i: the frequency of pair i, as the text writes it


#: the coordinates of pair i of an encoding, in each layout (the scope of an instance of the shift identity); the half
#: layout's cosines start after its ceil(d/2) sines, at d/2 only for an even d
PAIR_COORDINATES = {"interleaved": "`2*i` and `2*i + 1`", "half": "`i` and `i + d/2`"}


def pair_coordinates(d: int, layout: str) -> str:
    """Where pair i of a ``layout`` encoding of width ``d`` lies, and for odd d which coordinate has no pair: the
    scope of an instance of the shift identity.

    >>> pair_coordinates(8, "half")
    'pair i at coordinates `i` and `i + d/2`'
    >>> pair_coordinates(5, "half")
    'pair i at coordinates `i` and `i + 3`, for i < 2; coordinate 2, the unpaired sine, has no pair'
    """
    pe = Sinusoidal(d, layout=layout)
    if pe.unpaired() is None:
        return f"pair i at coordinates {PAIR_COORDINATES[layout]}"
    where = PAIR_COORDINATES[layout] if layout == "interleaved" else f"`i` and `i + {pe.pairs()[0].cos_index}`"
    return f"pair i at coordinates {where}, for i < {d // 2}; coordinate {pe.unpaired()}, the unpaired sine, has no pair"

def frequency_definition(base, d: int):
    """The row omega_i = base^(-2i/d) of every positional display, with d stated."""
    d_ = sp.Symbol("d", integer=True, positive=True)
    return (omega_[i_], sp.Pow(sp.Rational(base), -2 * i_ / d_), ("with ", sp.Eq(d_, d, evaluate=False)))


def rotation_matrix(omega, shift) -> sp.ImmutableMatrix:
    """The 2 x 2 rotation by shift * omega that takes (sin, cos) at pos to (sin, cos) at pos + shift."""
    c, s = sp.cos(shift * omega), sp.sin(shift * omega)
    return sp.ImmutableMatrix([[c, s], [-s, c]])


@dataclass(frozen=True)
class Pair:
    """One sin/cos pair: the coordinates that hold sin(pos omega) and cos(pos omega)."""

    i: int
    sin_index: int
    cos_index: int
    omega: sp.Expr


class Sinusoidal(Derivation):
    """The sinusoidal encoding of width ``d`` (even or odd) with frequency ``base``."""

    def __init__(self, d: int, base=10000, layout: str = "interleaved"):
        self.d = validate.integer("d", d, minimum=1)
        if isinstance(base, bool) or not isinstance(base, (int, sp.Integer, sp.Rational)) or sp.Rational(base) <= 1:
            raise SeqgradValueError("base", base, "an integer or rational number > 1")
        self.base = sp.Rational(base)
        self.layout = validate.choice("layout", layout, LAYOUTS)
        self._omegas: dict[int, sp.Expr] = {}
        n_sin = (self.d + 1) // 2
        if self.layout == "interleaved":
            self._sin = [2 * i for i in range(n_sin)]
            self._cos = [2 * i + 1 for i in range(self.d // 2)]
        else:
            self._sin = list(range(n_sin))
            self._cos = [n_sin + i for i in range(self.d // 2)]

    # --- the definition ---
    def omega_i(self, i: int) -> sp.Expr:
        """Frequency of pair i: base^(-2i/d) (radians per position)."""
        if i not in self._omegas:
            self._omegas[i] = self.base ** sp.Rational(-2 * i, self.d)
        return self._omegas[i]

    def omega(self, j: int) -> sp.Expr:
        """Frequency of coordinate j (the text's omega_j = base^(-2 floor(j/2)/d) when interleaved)."""
        return self.omega_i(self._pair_of(j))

    def _pair_of(self, j: int) -> int:
        j = validate.integer("j", j, minimum=0, maximum=self.d - 1)
        return self._sin.index(j) if j in self._sin else self._cos.index(j)

    def coordinate(self, position, j: int) -> sp.Expr:
        """PE(position, j)."""
        arg = sp.expand_mul(as_sympy(position, "position") * self.omega(j))
        # sin/cos of a symbolic angle with no sign to extract evaluate to themselves; skipping that
        # no-op evaluation keeps d = 512 fast (the object is identical either way)
        evaluate = bool(arg.is_number or arg.could_extract_minus_sign() or arg.has(sp.pi))
        return (sp.sin if j in self._sin else sp.cos)(arg, evaluate=evaluate)

    def vector(self, position=pos) -> sp.Matrix:
        """PE(position) as a d x 1 column."""
        return sp.Matrix([self.coordinate(position, j) for j in range(self.d)])

    __call__ = vector

    def pairs(self) -> list[Pair]:
        return [Pair(i, self._sin[i], self._cos[i], self.omega_i(i)) for i in range(self.d // 2)]

    def unpaired(self) -> int | None:
        """The index of the sine coordinate with no cosine partner (odd d), else None."""
        return self._sin[-1] if self.d % 2 else None

    def partner(self, j: int) -> int:
        """The other coordinate of j's sin/cos pair; refuses the unpaired coordinate."""
        i = self._pair_of(j)
        if j == self.unpaired():
            raise SeqgradValueError("j", j, f"a coordinate with a sin/cos partner; for odd d={self.d} coordinate {j} "
                                            "is an unpaired sine with no rotation (see unpaired_has_no_scalar_shift)")
        return self._cos[i] if j in self._sin else self._sin[i]

    def wavelength(self, i: int) -> sp.Expr:
        """2 pi / omega_i = 2 pi base^(2i/d): the period (in positions) of pair i."""
        i = validate.integer("i", i, minimum=0, maximum=(self.d + 1) // 2 - 1)
        return 2 * sp.pi * self.base ** sp.Rational(2 * i, self.d)

    # --- the rotation ---
    def rotation_block(self, j: int, shift=k) -> sp.Matrix:
        """The 2 x 2 rotation of the pair holding coordinate j: (sin, cos) at pos+k from (sin, cos) at pos."""
        self.partner(j)
        return _block(self.omega(j), shift)

    def rotation(self, shift=k) -> "Rotation":
        return Rotation(self, as_sympy(shift, "shift"))

    def shift_identity(self) -> "ShiftIdentity":
        return ShiftIdentity(self)

    def rows(self) -> list:
        """The rule as the text writes it: one sine and one cosine per pair ``i`` at frequency
        omega_i, and omega_i = base^(-2i/d) (never its expanded numbers)."""
        interleaved = self.layout == "interleaved"
        sin_at, cos_at = ("2i", "2i+1") if interleaved else ("i", "i+" + str((self.d + 1) // 2))
        out = [(sp.Function(f"PE_{{{sin_at}}}")(pos), sp.sin(pos * omega_[i_]))]
        if self.d > 1:
            out.append((sp.Function(f"PE_{{{cos_at}}}")(pos), sp.cos(pos * omega_[i_]),
                        ("for ", sp.Contains(i_, sp.Range(0, self.d // 2), evaluate=False))))
        j = self.unpaired()
        if j is not None and self.d > 1:
            out.append((sp.Function(f"PE_{{{j}}}")(pos), sp.sin(pos * omega_[self.d // 2]), "the unpaired sine (odd d)"))
        return out + [frequency_definition(self.base, self.d)]

    def __repr__(self) -> str:
        return f"Sinusoidal(d={self.d}, base={self.base}, layout={self.layout!r})"


def _block(omega, shift) -> sp.Matrix:
    a = sp.expand_mul(as_sympy(shift, "shift") * omega)
    evaluate = bool(a.is_number or a.could_extract_minus_sign())
    c, s = sp.cos(a, evaluate=evaluate), sp.sin(a, evaluate=evaluate)
    return sp.Matrix([[c, s], [-s, c]])


class Rotation(Derivation):
    """R(k): block-diagonal 2 x 2 rotations acting on the paired coordinates (in coordinate order)."""

    def __init__(self, pe: Sinusoidal, shift):
        self.pe, self.shift = pe, shift
        self.blocks = [(p, _block(p.omega, shift)) for p in pe.pairs()]
        self.coordinates = sorted([p.sin_index for p in pe.pairs()] + [p.cos_index for p in pe.pairs()])

    def matrix(self) -> sp.Matrix:
        """The full matrix over the paired coordinates (d x d for even d, (d-1) x (d-1) for odd d)."""
        where = {j: n for n, j in enumerate(self.coordinates)}
        n = len(self.coordinates)
        R = sp.zeros(n, n)
        for p, B in self.blocks:
            idx = (where[p.sin_index], where[p.cos_index])
            for a in range(2):
                for b in range(2):
                    R[idx[a], idx[b]] = B[a, b]
        return R

    def apply(self, v: sp.Matrix) -> sp.Matrix:
        """R v over the paired coordinates, block by block (never forms the dense product)."""
        out = {}
        for p, B in self.blocks:
            s, c = v[p.sin_index], v[p.cos_index]
            out[p.sin_index] = B[0, 0] * s + B[0, 1] * c
            out[p.cos_index] = B[1, 0] * s + B[1, 1] * c
        return sp.Matrix([out[j] for j in self.coordinates])

    def free_symbols(self):
        return set().union(*[B.free_symbols for _, B in self.blocks]) if self.blocks else set()

    def rows(self) -> list:
        """R(k) as the text writes it: one 2 x 2 rotation by k omega_i per pair, and the frequencies."""
        m = len(self.blocks)
        B = sp.Function("R_i")  # block i of R(k) (B is the attention output)
        out = [(sp.Function("R")(self.shift), sp.Function("blockdiag")(B(self.shift)),
                ("one block per pair, ", sp.Contains(i_, sp.Range(0, m), evaluate=False)) if m else "no pairs")]
        out.append((B(self.shift), rotation_matrix(omega_[i_], self.shift)))
        return out + [frequency_definition(self.pe.base, self.pe.d)]

    def __repr__(self) -> str:
        return f"Rotation(d={self.pe.d}, layout={self.pe.layout!r}, shift={self.shift}, blocks={len(self.blocks)})"


@dataclass
class ShiftReport:
    """What :meth:`ShiftIdentity.prove` established, property by property."""

    shift: bool
    orthogonal: bool
    determinant_one: bool
    composition: bool
    pos_independent: bool
    unpaired: int | None
    unpaired_no_scalar: bool | None
    #: the frequency omega_i of the unpaired sine, by its index i (the last pair's frequency, d // 2)
    unpaired_frequency: int | None = None
    #: the coordinates R(k) acts on, in order (every coordinate for even d; all but the unpaired sine for odd d)
    paired: tuple = ()

    @property
    def holds(self) -> bool:
        parts = [self.shift, self.orthogonal, self.determinant_one, self.composition, self.pos_independent]
        return all(parts) and self.unpaired_no_scalar in (None, True)

    def __bool__(self) -> bool:
        return self.holds

    def __str__(self) -> str:
        lines = [f"PE(pos+k) = R(k) PE(pos) on the paired coordinates: {self.shift}",
                 f"R(k)^T R(k) = I: {self.orthogonal}", f"det R(k) = 1: {self.determinant_one}",
                 f"R(a) R(b) = R(a+b): {self.composition}", f"R(k) independent of pos: {self.pos_independent}"]
        if self.unpaired is not None:
            lines.append(f"coordinate {self.unpaired} is an unpaired sine: no rotation; no scalar a(k) shifts it: {self.unpaired_no_scalar}")
        return "\n".join(lines)


class ShiftIdentity(Derivation):
    """PE(pos + k) = R(k) PE(pos), proved exactly for symbolic pos and k."""

    def __init__(self, pe: Sinusoidal):
        self.pe = pe
        self.R = pe.rotation(k)

    def residual(self) -> sp.Matrix:
        """PE(pos + k) - R(k) PE(pos) over the paired coordinates (before simplification)."""
        shifted = self.pe.vector(pos + k)
        return sp.Matrix([shifted[j] for j in self.R.coordinates]) - self.R.apply(self.pe.vector(pos))

    def prove(self) -> ShiftReport:
        """Prove every property exactly: the shift, orthogonality, det 1, composition, pos-independence."""
        a, b = sp.symbols("a b", real=True)
        shift = all(angle_addition(e) == 0 for e in self.residual())
        orthogonal = determinant = composition = True
        for p, B in self.R.blocks:
            orthogonal &= all(pythagorean(e) == 0 for e in (B.T * B - sp.eye(2)))
            determinant &= pythagorean(B.det() - 1) == 0
            composition &= all(pythagorean(e) == 0 for e in (_block(p.omega, a) * _block(p.omega, b) - _block(p.omega, a + b)))
        unpaired = self.pe.unpaired()
        no_scalar = unpaired_has_no_scalar_shift(self.pe).holds if unpaired is not None else None
        return ShiftReport(shift, orthogonal, determinant, composition, pos not in self.R.free_symbols(), unpaired, no_scalar,
                           None if unpaired is None else self.pe.d // 2, tuple(self.R.coordinates))

    def rows(self) -> list:
        """The statement, R(k) block by block, the shift of one pair written out, the unpaired sine (odd d)."""
        PE, R = sp.Function("PE", commutative=False), sp.Function("R", commutative=False)
        out = [sp.Eq(PE(pos + k), R(k) * PE(pos), evaluate=False)] + self.R.rows()[:2]
        w = omega_[i_]
        B, old = rotation_matrix(w, k), (sp.sin(pos * w), sp.cos(pos * w))
        out.append((sp.sin((pos + k) * w), B[0, 0] * old[0] + B[0, 1] * old[1], "for every pair i"))
        out.append((sp.cos((pos + k) * w), B[1, 0] * old[0] + B[1, 1] * old[1]))
        j = self.pe.unpaired()
        if j is not None:
            out.append((sp.Function(f"PE_{{{j}}}")(pos + k), sp.sin((pos + k) * omega_[self.pe.d // 2]),
                        "the unpaired sine: no rotation"))
        return out + [frequency_definition(self.pe.base, self.pe.d)]

    def __repr__(self) -> str:
        return f"ShiftIdentity({self.pe!r})"


class NoScalarShift(Derivation):
    """For the unpaired sine s(pos) = sin(pos omega): no a(k) gives s(pos + k) = a(k) s(pos) for all pos.

    Proof: at pos = 0 the right side is a(k) sin 0 = 0 whatever a(k) is, so the
    claim needs sin(k omega) = 0 for every k; but at k = 1, 0 < omega <= 1 < pi
    gives sin(omega) > 0.
    """

    def __init__(self, pe: Sinusoidal):
        j = pe.unpaired()
        if j is None:
            raise SeqgradValueError("d", pe.d, "an odd width (only odd d has an unpaired sine coordinate)")
        self.pe, self.j, self.omega = pe, j, pe.omega(j)
        self.a = sp.Function("a")

    @property
    def holds(self) -> bool:
        at_zero = (self.pe.coordinate(pos + k, self.j) - self.a(k) * self.pe.coordinate(pos, self.j)).subs(pos, 0)
        needed = sp.expand(at_zero)  # = sin(k omega): a(k) sin(0) = 0 has dropped out
        witness = needed.subs(k, 1)
        in_open_interval = bool(sp.And(self.omega > 0, self.omega < sp.pi))
        return self.a(k) not in needed.atoms(sp.Function) and in_open_interval and witness == sp.sin(self.omega) and bool(witness > 0)

    def __repr__(self) -> str:
        return f"NoScalarShift(d={self.pe.d}, coordinate={self.j})"

    def rows(self) -> list:
        """The proof: at pos = 0 the claim forces sin(k omega) = 0 for every k, but sin(omega) > 0."""
        a, w = self.a, omega_[self.pe.d // 2]
        return [(sp.sin((pos + k) * w), a(k) * sp.sin(pos * w), ("for every ", pos, " (the claim)")),
                (sp.sin(k * w), 0, ("for every ", k, " (the claim at ", sp.Eq(pos, 0, evaluate=False), ")")),
                (sp.StrictGreaterThan(sp.sin(w), 0), ("at ", sp.Eq(k, 1, evaluate=False), ", since ",
                                                     sp.StrictLessThan(0, w), " and ", sp.StrictLessThan(w, sp.pi),
                                                     ": a contradiction")),
                frequency_definition(self.pe.base, self.pe.d)]


def shift_identity(d: int, base=10000, layout: str = "interleaved") -> ShiftIdentity:
    """PE(pos + k) = R(k) PE(pos) for width d; ``.prove()`` proves it exactly for symbolic pos and k."""
    return Sinusoidal(d, base, layout).shift_identity()


def unpaired_has_no_scalar_shift(pe: Sinusoidal) -> NoScalarShift:
    return NoScalarShift(pe)


def dot_product(pe: Sinusoidal, p=pos, other=q):
    """PE(p) . PE(other), as built from the coordinates (built once when p and other are one position: the norm)."""
    left = pe.vector(p)
    right = left if as_sympy(other, "other") == as_sympy(p, "p") else pe.vector(other)
    return sum((a * b for a, b in zip(left, right)), sp.Integer(0))


def dot_product_offset_form(pe: Sinusoidal, p=pos, other=q):
    """sum over pairs of cos((p - other) omega_i), plus the unpaired sin(p w) sin(other w) for odd d."""
    p, other = as_sympy(p, "p"), as_sympy(other, "other")
    total = sum((sp.cos(sp.expand_mul((p - other) * pr.omega)) for pr in pe.pairs()), sp.Integer(0))
    j = pe.unpaired()
    if j is not None:
        total += pe.coordinate(p, j) * pe.coordinate(other, j)
    return total


# --- catalogue entries ---

def _dot_formula(d: int) -> tuple:
    """PE(pos) . PE(q) as the text writes it, with the frequencies omega_i: a sum over the d/2 pairs."""
    w = omega_[i_]
    pairs = (i_, 0, d // 2 - 1)
    return (sp.Sum(sp.sin(pos * w) * sp.sin(q * w) + sp.cos(pos * w) * sp.cos(q * w), pairs),
            sp.Sum(sp.cos((pos - q) * w), pairs))


def _wavelength_formula() -> tuple:
    """Coordinate 2i repeats after lambda_i = 2 pi / omega_i positions: the shift by lambda_i turns the angle by 2 pi."""
    w, lam = omega_[i_], sp.IndexedBase("lambda")[i_]
    return sp.Tuple(sp.sin((pos + lam) * w), lam * w), sp.Tuple(sp.sin(pos * w), 2 * sp.pi)


def identities() -> list[Identity]:
    """The positional-encoding entries of the catalogue (statements are built on first use)."""
    from functools import lru_cache

    S0 = "seed 001 l.95, l.110-112, l.238 (task 21); seed 000 L530-544"
    out = []
    for d, layout in ((8, "interleaved"), (8, "half"), (5, "interleaved"), (5, "half")):
        @lru_cache(None)
        def sides(d=d, layout=layout):
            pe = Sinusoidal(d, layout=layout)
            ident = ShiftIdentity(pe)
            R = ident.R
            lhs = sp.Matrix([pe.vector(pos + k)[j] for j in R.coordinates])
            rhs = R.matrix() * sp.Matrix([pe.vector(pos)[j] for j in R.coordinates])
            return ident, lhs, rhs

        unpaired = Sinusoidal(d, layout=layout).unpaired()
        note = "" if unpaired is None else f"Coordinate {unpaired} is the unpaired sine: it is left out of R(k)."
        out.append(Identity(
            f"pe-shift-d{d}-{layout}", S0, f"PE(pos+k) = R(k) PE(pos), d={d}, {layout} layout, symbolic pos and k",
            lambda sides=sides: sides()[1], lambda sides=sides: sides()[2], "simplify",
            lambda sides=sides: proof_by(sides()[0].residual, angle_addition, "angle addition")(),
            lambda rng, sides=sides: numeric_sides(sides()[1], sides()[2], rng, low=-50, high=50), simplifier="angle addition",
            symbols_note=note, scope=f"instance d = {d}, {layout} layout: {pair_coordinates(d, layout)}", assumptions=("pos, k real",),
            shown=_pair_formula))

    def rotation_props():
        rep = ShiftIdentity(Sinusoidal(8)).prove()
        ok = rep.orthogonal and rep.determinant_one and rep.composition and rep.pos_independent
        return Proof(ok, "simplification to zero (Pythagorean reduction)", sp.Integer(0) if ok else str(rep), str(rep).replace("\n", "; "))

    a, b = sp.symbols("a b", real=True)

    @lru_cache(None)
    def group():
        pe = Sinusoidal(8)
        Ra, Rb, Rab = pe.rotation(a).matrix(), pe.rotation(b).matrix(), pe.rotation(a + b).matrix()
        lhs = sp.Matrix.vstack(Ra * Rb, Ra.T * Ra, sp.Matrix([[Ra.det()] + [0] * 7]))
        rhs = sp.Matrix.vstack(Rab, sp.eye(8), sp.Matrix([[1] + [0] * 7]))
        return lhs, rhs

    out.append(Identity(
        "pe-rotation-group", "seed 001 l.282 (rotation form derived, not in the text)",
        "R(a) R(b) = R(a+b); R(k)^T R(k) = I, det R(k) = 1, R(k) free of pos (d=8)",
        lambda: group()[0], lambda: group()[1], "simplify", rotation_props,
        lambda rng: numeric_sides(group()[0], group()[1], rng, low=-20, high=20), simplifier="Pythagorean reduction",
        scope="instance d = 8, one pair (`R(k)` is this block, repeated on every pair)", assumptions=("a, b, k real",), shown=lambda: _group_formula()))
    pe5 = Sinusoidal(5)
    w4 = pe5.omega(4)
    out.append(Identity(
        "pe-unpaired-no-scalar", "seed 000 L544 (`d = 5`: coordinate 4 has no pair relation)",
        "odd d: no scalar a(k) gives PE(pos+k, 4) = a(k) PE(pos, 4); at pos=0 it would need sin(k w_4) = 0",
        sp.sin(k * w4), sp.Integer(0), "counterexample",
        lambda: Proof(NoScalarShift(pe5).holds, "counterexample at pos = 0, k = 1", sp.sin(w4), "sin(omega_2) > 0, since 0 < omega_2 < pi"),
        lambda rng: NumericResult([abs(float(sp.sin(w4).evalf(30)))], [0.0], "differs", None,
                                  "|sin(w_4)| must exceed the tolerance: the check passes when the sides differ"),
        relation="!=", simplifier="substitution pos=0, k=1",
        scope="counterexample `d = 5` at `pos = 0`, `k = 1` (one `k` suffices): the right side below vanishes for "
              "every `alpha(1)`, the left side `sin(omega_2) > 0` (every odd `d` has one unpaired sine)",
        assumptions=("0 < omega_4 < pi",), shown=lambda: _unpaired_counterexample(pe5.d // 2)))
    for d in (8, 6):
        dot = lru_cache(None)(lambda d=d: (dot_product(Sinusoidal(d)), dot_product_offset_form(Sinusoidal(d))))
        out.append(Identity(
            f"pe-dot-offset-d{d}", "derived here (the course texts do not state it); Vaswani et al. 2017, section 3.5",
            f"PE(p) . PE(q) = sum_i cos((p - q) w_i) depends only on p - q, d={d}", lambda dot=dot: dot()[0], lambda dot=dot: dot()[1],
            "simplify", lambda dot=dot: proof_by(lambda: dot()[0] - dot()[1], angle_addition, "angle addition")(),
            lambda rng, dot=dot: numeric_sides(dot()[0], dot()[1], rng, low=-30, high=30), simplifier="angle addition", scope=f"instance d = {d}", assumptions=("p, q real",),
            shown=lambda d=d: _dot_formula(d)))
    for d in (8, 64):
        norm = lru_cache(None)(lambda d=d: dot_product(Sinusoidal(d), pos, pos))
        out.append(Identity(
            f"pe-norm-d{d}", "derived (seed 001 l.95: every pair is the sine and the cosine of one angle)",
            f"||PE(pos)||^2 = d/2 for even d = {d}", norm, sp.Rational(d, 2), "simplify",
            lambda norm=norm, d=d: proof_by(lambda: norm() - sp.Rational(d, 2), pythagorean, "Pythagorean reduction")(),
            lambda rng, norm=norm, d=d: numeric_sides(norm(), sp.Rational(d, 2), rng, low=-100, high=100),
            shown=lambda d=d: (sp.Sum(sp.sin(pos * sp.IndexedBase("omega")[sp.Symbol("i")]) ** 2
                                     + sp.cos(pos * sp.IndexedBase("omega")[sp.Symbol("i")]) ** 2, (sp.Symbol("i"), 0, d // 2 - 1)),
                               sp.Rational(d, 2)),
            simplifier="Pythagorean reduction", scope=f"instance d = {d}", assumptions=("pos real",)))
    # the general statements: one pair with a symbolic frequency (R is block diagonal over the pairs, so this is every
    # even d and both layouts), and the norm for symbolic even d = 2m
    omega = sp.Symbol("omega", positive=True)
    # the pair as a row, rotated on its right, as the notes write the encodings (PE(pos + k) = PE(pos) R(k))
    pair_lhs = sp.Matrix([[sp.sin(pos * omega + k * omega), sp.cos(pos * omega + k * omega)]])
    pair_rhs = sp.MatMul(sp.ImmutableMatrix([[sp.sin(pos * omega), sp.cos(pos * omega)]]), _row_block(omega, k), evaluate=False)
    out.append(Identity(
        "pe-shift", S0,
        "(sin((pos+k) omega), cos((pos+k) omega)) = (sin(pos omega), cos(pos omega)) R(k omega), rows, for symbolic "
        "frequency omega, position pos and offset k: "
        "every pair, so PE(pos+k) = PE(pos) R(k) for every even d and either layout",
        pair_lhs, pair_rhs, "simplify", proof_by(lambda: pair_lhs - pair_rhs.doit(), angle_addition, "angle addition"),
        lambda rng: numeric_sides(pair_lhs, pair_rhs.doit(), rng, low=-50, high=50), simplifier="angle addition",
        scope="all even d (every pair), symbolic omega, pos, k", assumptions=("omega > 0", "pos, k real")))
    m_ = sp.Symbol("m", integer=True, positive=True)
    i_ = sp.Symbol("i", integer=True, nonnegative=True)
    w_ = sp.IndexedBase("omega", positive=True)
    norm_sum = sp.Sum(sp.sin(pos * w_[i_]) ** 2 + sp.cos(pos * w_[i_]) ** 2, (i_, 0, m_ - 1))

    def norm_proof():
        summand = pythagorean(norm_sum.function)  # sin^2 + cos^2 of one angle: 1
        total = sp.Sum(summand, *norm_sum.limits).doit()
        return Proof(sp.expand(total - m_) == 0, "simplification to zero (Pythagorean reduction of the summand)", sp.expand(total - m_),
                     "d = 2m coordinates in m (sin, cos) pairs")

    out.append(Identity(
        "pe-norm", "derived (seed 001 l.95: every pair is the sine and the cosine of one angle)",
        "||PE(pos)||^2 = sum_{i<m} (sin^2(pos w_i) + cos^2(pos w_i)) = m = d/2 for every even d = 2m, any frequencies",
        norm_sum, m_, "simplify", norm_proof,
        lambda rng: numeric_sides(dot_product(Sinusoidal(8), pos, pos), sp.Integer(4), rng, low=-100, high=100),
        simplifier="Pythagorean reduction", scope="all even d = 2m >= 2: the sum is the squared norm of PE(pos), so the norm is `sqrt(m)`",
        assumptions=("pos real", "any frequencies w_i"),
        symbols_note="Numeric evidence: d = 8 with the course's frequencies."))
    shown = (0, 10, 31)

    @lru_cache(None)
    def wave():
        pe = Sinusoidal(64)
        lam = [pe.wavelength(i) for i in range(32)]
        lhs = sp.Matrix([pe.coordinate(pos + lam[i], 2 * i) for i in shown] + [lam[0]])
        rhs = sp.Matrix([pe.coordinate(pos, 2 * i) for i in shown] + [2 * sp.pi])
        return pe, lam, lhs, rhs

    def periodic():
        pe, lam, _, _ = wave()
        residual = sp.Matrix([pe.coordinate(pos + lam[i], 2 * i) - pe.coordinate(pos, 2 * i) for i in range(32)]
                             + [lam[0] - 2 * sp.pi])
        # the longest wavelength at d = 64 is 2 pi 10000^(62/64), about 15000 pi: the 10000 * 2 pi of the text is the
        # limit as d grows, not the value at this d
        longest = lam[-1] / sp.pi
        holds = (all(e == 0 for e in residual.applyfunc(sp.expand_mul)) and bool(longest < 20000)
                 and abs(float(longest) - 15000) < 50)
        return Proof(holds, "simplification to zero (periodicity of sin)", residual,
                     "and lambda_31 = 2 pi 10000^(31/32), about 15000 pi (below the limit 20000 pi as d grows)")

    out.append(Identity(
        "pe-wavelength", "seed 001 l.306 (wavelengths from `2*pi` up; the longest tends to `10000*2*pi` as `d` grows)",
        "PE(pos + lambda_i, 2i) = PE(pos, 2i) for lambda_i = 2 pi 10000^(2i/d); lambda_0 = 2 pi; "
        "lambda_31 = 2 pi 10000^(31/32), about 15000 pi (d=64)",
        lambda: wave()[2], lambda: wave()[3], "simplify", periodic,
        lambda rng: numeric_sides(wave()[2], wave()[3], rng, low=-100, high=100), simplifier="periodicity of sin",
        scope="instance d = 64: wavelengths from `2*pi` to `lambda_31`, about `15000*pi`", assumptions=("pos real", "base 10000"),
        shown=_wavelength_formula))
    out.append(Identity(
        "pe-p0", "seed 000 L536", "p_0 = (0, 1, 0, 1, 0) for d = 5", pe5.vector(0), sp.Matrix([0, 1, 0, 1, 0]), "simplify",
        proof_by(lambda: pe5.vector(0) - sp.Matrix([0, 1, 0, 1, 0]), sp.simplify, "exact evaluation"),
        lambda rng: NumericResult([float(x) for x in pe5.vector(0)], [0.0, 1.0, 0.0, 1.0, 0.0], "policy"),
        simplifier="exact evaluation", scope="instance d = 5, the example of the course", shown=lambda: _course_row(0, pe5)))
    printed = [0.141, -0.990, 0.0753, 0.997, 0.00189]
    out.append(Identity(
        "pe-p3-printed", "seed 000 L538", "p_3 ~ (0.141, -0.990, 0.0753, 0.997, 0.00189) for d = 5",
        pe5.vector(3), sp.Matrix([sp.Float(x, 3) for x in printed]), "numeric",
        lambda: _printed_proof(pe5.vector(3), printed),
        lambda rng: NumericResult([float(x.evalf(20)) for x in pe5.vector(3)], printed, "printed"),
        reason="the text prints 3 significant figures, so only a comparison at half a unit of the 3rd figure applies", scope="instance d = 5, the example of the course (omega_1 about 0.0251, omega_2 about 0.000631), printed to 3 "
        "significant figures",
        shown=lambda: _course_row(3, pe5, printed)))
    return out


def _unpaired_counterexample(i: int) -> tuple:
    """The unpaired sine of frequency omega_i at pos = 0, k = 1: PE(1) = sin(omega_i) against alpha(1) PE(0) =
    alpha(1) sin(0), kept unevaluated so that the step shows."""
    return sp.sin(omega_[i]), sp.Mul(sp.Function("alpha")(1), sp.sin(sp.Integer(0), evaluate=False), evaluate=False)


def _row_block(omega, shift) -> sp.ImmutableMatrix:
    """One pair's rotation as the encodings' rows take it, on their right (``PE(pos + k) = PE(pos) R(k)``, the notes'
    convention): the transpose of :func:`_block`, which acts on columns."""
    return sp.ImmutableMatrix(_block(omega, shift).T)


def _pair_formula():
    """One (sin, cos) pair of frequency omega_i: the shift as a rotation of the pair's row (printed for the instance
    entries, in the rows' form of the text); the pair's index a symbol of its own (:data:`i_`), so that a notation can
    rename it as every other index."""
    w = omega_[i_]
    lhs = sp.ImmutableMatrix([[sp.sin(pos * w + k * w), sp.cos(pos * w + k * w)]])
    return lhs, sp.MatMul(sp.ImmutableMatrix([[sp.sin(pos * w), sp.cos(pos * w)]]), _row_block(w, k), evaluate=False)


def _group_formula():
    """R(a) R(b) = R(a+b), R^T R = I, det R(a) = 1 on one pair, a and b the angles k omega_i (R is block diagonal over
    the pairs), in the rows' form of the text, the determinant written det as the text writes it."""
    a, b = sp.Symbol("a", real=True), sp.Symbol("b", real=True)
    R = lambda t: _row_block(1, t)  # angles a = k omega_i, b
    return (sp.Tuple(sp.MatMul(R(a), R(b), evaluate=False), sp.MatMul(R(a).T, R(a), evaluate=False),
                     sp.Function("det")(sp.Function("R")(a))),
            sp.Tuple(R(a + b), sp.ImmutableMatrix(sp.eye(2)), sp.Integer(1)))


def _printed_proof(exact: sp.Matrix, printed: list[float]) -> Proof:
    from seqgrad.sigfig import matches

    values = [float(x.evalf(30)) for x in exact]
    ok = all(matches(v, p) for v, p in zip(values, printed))
    return Proof(ok, "numeric only: printed to 3 significant figures", sp.Matrix(values), f"computed {', '.join(f'{v:.6g}' for v in values)}")


def _course_row(position: int, pe, printed=None) -> tuple:
    """Row ``position`` of the course's d = 5 encoding as the text defines it, coordinate by coordinate: the sines and
    cosines of ``position * omega_i`` (unevaluated: the formula, not the numbers), and each frequency after the first
    as the power of ten it is (``omega_1 = 10^{-8/5}``); the right side its values, or the ``printed`` ones."""
    angles = [sp.Mul(position, omega_[j // 2], evaluate=False) for j in range(pe.d)]
    row = sp.ImmutableMatrix([(sp.sin if j % 2 == 0 else sp.cos)(a, evaluate=False) for j, a in enumerate(angles)])
    values = pe.vector(position) if printed is None else sp.ImmutableMatrix([sp.Float(x, 3) for x in printed])
    if not position:
        return row, values
    pairs = range(1, (pe.d + 1) // 2)
    powers = [sp.Pow(10, sp.UnevaluatedExpr(sp.Rational(-8 * i, pe.d)), evaluate=False) for i in pairs]
    return sp.Tuple(row, *[omega_[i] for i in pairs]), sp.Tuple(values, *powers)
