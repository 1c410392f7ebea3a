"""Jacobians of residual paths: plain, pre-norm, post-norm, the text's pre-norm encoder block, depth products.

Seed 000 L1183-L1191, seed 001 l.130-152.  A branch F is a generic
differentiable map (SymPy undefined functions f_i of all its inputs), so each
identity holds for every branch, not for one chosen example::

    u = x + F(x)             du/dx = I + J_F                    (the "+1" of the residual)
    u = x + F(LN(x))         du/dx = I + J_F J_LN               (pre-norm)
    u = LN(x + F(x))         du/dx = J_LN (I + J_F)             (post-norm: even the bypass passes LN)
    U = H + MHA(LN1(H)),  H' = U + MLP(LN2(U))
                             dH'/dH = (I + J_MLP J_LN2)(I + J_MHA J_LN1)   (the second bypass carries U)
    depth L:                 prod_{l=L..1} (I + J_{F_l}) = I + sum_l J_{F_l} + sum_{l>m} J_{F_l} J_{F_m} + ...  (He et al. 2016)
    lambda-scaled shortcuts: prod (lambda I + J_{F_l}) has identity-path term lambda^L I

(printed with the notes' symbols: x a row and u the connection's output, J_{F_l} the Jacobian of layer l's branch;
internally the code keeps y, h and J_l)
"""

from __future__ import annotations

import itertools
import re
from functools import cached_property, lru_cache

import sympy as sp

from seqgrad import runcache, validate
from seqgrad.errors import SeqgradValueError

from .identity import Derivation, Identity, mpmath_lambdify, numeric_sides
from .proof import Proof, proof_by
from .blocks import NORM_TAGS
from .layernorm import EPS
from .safe_parse import as_sympy


def chain_rule_zero(expr):
    """Exact: evaluate substitutions into derivatives of the undefined branches (Subs.doit), then expand."""
    return sp.expand(expr.doit())


def _symbols(name: str, n: int) -> list[sp.Symbol]:
    return list(sp.symbols(f"{name}_0:{n}", real=True))


class Branch:
    """A generic branch F: R^n -> R^m, f_i(u_0, ..., u_{n-1}) undefined functions."""

    def __init__(self, name: str, n_in: int, n_out: int | None = None):
        self.name, self.n_in = name, n_in
        self.n_out = n_in if n_out is None else n_out
        self.f = [sp.Function(f"{name}_{i}") for i in range(self.n_out)]
        self.u = list(sp.symbols(f"u_0:{n_in}", real=True))

    def __call__(self, args) -> sp.Matrix:
        args = list(args)
        return sp.Matrix([f(*args) for f in self.f])

    def jacobian_at(self, args) -> sp.Matrix:
        """J_F evaluated at ``args``: d f_i / d u_j with u = args.

        Entry (i, j) is what ``subs`` makes of the partial derivative at the point: the other arguments put in
        place, the differentiated one evaluated by ``Subs(Derivative(f_i(.., u_j, ..), u_j), u_j, args_j)``.  It is
        built so directly (``subs`` reaches the same expression through a renaming of every variable, three
        times slower); a point that names the branch's own variables u goes through ``subs``, which renames them."""
        args = [as_sympy(a, "args") for a in args]  # numbers too, as subs took them
        if any(a.free_symbols & set(self.u) for a in args):
            J = sp.Matrix([[sp.diff(f(*self.u), uj) for uj in self.u] for f in self.f])
            return J.subs(dict(zip(self.u, args)), simultaneous=True)
        return sp.Matrix([[self._partial_at(f, j, args) for j in range(self.n_in)] for f in self.f])

    def _partial_at(self, f, j: int, args: list):
        uj = self.u[j]
        partial = sp.Derivative(f(*(args[:j] + [uj] + args[j + 1:])), uj)
        return sp.Subs(partial, uj, args[j])


def norm_of(x, norm="layernorm", eps=EPS) -> sp.Matrix:
    """The block's normalisation (gamma = 1, beta = 0) at the row ``x``, as a column: the view
    :func:`derive.blocks.norm_row` of the one program of ``norm`` ("layernorm", "rmsnorm" or a Norm)."""
    from .blocks import norm_row

    return norm_row(norm, list(x), eps=eps)


@lru_cache(maxsize=None)
def _norm_jacobian(d: int, norm="layernorm") -> tuple:
    """J_N of the normalisation (gamma = 1, beta = 0) over d features in the symbols z_0 .. z_{d-1}: SymPy's
    jacobian of the program's forward pass (:func:`norm_of`), taken once per d and norm (immutable)."""
    z = _symbols("z", d)
    return z, sp.ImmutableMatrix(norm_of(z, norm).jacobian(z))


def norm_jacobian_at(args, norm="layernorm") -> sp.Matrix:
    """J_N at the point ``args`` (expressions or symbols): the Jacobian of :func:`_norm_jacobian` with its variables
    renamed to the point (differentiation commutes with the renaming; J_N holds no derivative to protect)."""
    args = list(args)
    z, J = _norm_jacobian(len(args), norm)
    return sp.Matrix(J.xreplace(dict(zip(z, args))))


class ResidualJacobian(Derivation):
    """Jacobians of one residual wrapping of a generic branch over d features: plain, pre-norm or post-norm, with
    the normalisation ``norm`` ("layernorm", "rmsnorm" or a :class:`derive.blocks.Norm`; gamma = 1, beta = 0), read
    from its one program (:func:`norm_of`)."""

    PLACEMENTS = ("plain", "pre-norm", "post-norm")

    def __init__(self, d: int = 2, placement: str = "plain", norm="layernorm"):
        from .blocks import norm_of as named_norm

        self.d = validate.integer("d", d, minimum=1, maximum=6)
        self.placement = validate.choice("placement", placement, self.PLACEMENTS)
        self.norm = named_norm(norm)
        self.h = _symbols("h", d)
        self.F = Branch("f", d)
        h = sp.Matrix(self.h)
        I = sp.eye(d)
        if placement == "plain":
            self.y = h + self.F(self.h)
            self.closed = I + self.F.jacobian_at(self.h)
            self.formula = "I + J_F"
        elif placement == "pre-norm":
            x = norm_of(self.h, self.norm)
            self.y = h + self.F(x)
            self.closed = I + self.F.jacobian_at(x) * norm_jacobian_at(self.h, self.norm)
            self.formula = r"I + J_F J_{\mathrm{%s}}" % self._label
        else:
            z = h + self.F(self.h)
            self.y = norm_of(z, self.norm)
            J_LN = norm_jacobian_at(z, self.norm)  # at z = h + F(h)
            self.closed = J_LN * (I + self.F.jacobian_at(self.h))
            self.formula = r"J_{\mathrm{%s}}\,(I + J_F)" % self._label

    @property
    def _label(self) -> str:
        """The normalisation's name in the formulas: LN, RMS (:attr:`derive.blocks.Norm.symbol`)."""
        return self.norm.symbol

    def jacobian(self) -> sp.Matrix:
        """dy/dh by SymPy's own chain rule."""
        return self.y.jacobian(self.h)

    def residual(self) -> sp.Matrix:
        return self.jacobian() - self.closed

    def prove(self) -> bool:
        """SymPy's chain rule over the undefined branch functions against the closed form (:func:`instance_proof`)."""
        return instance_proof(self).holds

    VECTORS = frozenset({"h", "y"})

    def rows(self) -> list:
        """y and dy/dh for this placement: I + J_F, I + J_F J_LN (pre-norm) or J_LN (I + J_F) (post-norm)."""
        from .latex_settings import Partial

        label = self._label
        h, y, I, J_F, J_LN = sp.symbols(f"h y I J_F J_{label}", commutative=False)
        F, LN = sp.Function("F", commutative=False), sp.Function(label, commutative=False)
        value, jacobian = {"plain": (h + F(h), I + J_F), "pre-norm": (h + F(LN(h)), I + J_F * J_LN),
                           "post-norm": (LN(h + F(h)), J_LN * (I + J_F))}[self.placement]
        return [(y, value), (Partial(h, of=y), jacobian, ("for a generic branch ", sp.Symbol("F")))]

    def __repr__(self) -> str:
        norm = "" if self.norm.name == "layernorm" else f", norm={self.norm.name!r}"
        return f"ResidualJacobian(d={self.d}, placement={self.placement!r}{norm})"


class EncoderBlock(Derivation):
    """The text's pre-norm block on T rows of D features (seed 000 L946), branches generic.

    X = LN1(H) row-wise, B_att = MHA(X) (every output may depend on every entry of X),
    U = H + B_att, R = LN2(U) row-wise, B_mlp = MLP(R) (the same map on every row), H' = U + B_mlp.

    U is a named intermediate (symbols u_{t,c}): the two residual updates are
    differentiated separately and joined by the chain rule
    dH'/dH = (dH'/dU)|_{U(H)} (dU/dH), every matrix over the flattened rows (index t*D + c).
    """

    def __init__(self, T: int = 2, D: int = 2, norm="layernorm"):
        from .blocks import norm_of as named_norm

        self.T = validate.integer("T", T, minimum=1, maximum=3)
        self.D = validate.integer("D", D, minimum=1, maximum=3)
        self.norm = named_norm(norm)  # both normalisations of the block (LayerNorm, or RMSNorm: norm="rmsnorm")
        n = T * D
        self.H = sp.Matrix(T, D, lambda t, c: sp.Symbol(f"h_{{{t},{c}}}", real=True))
        self.Usym = sp.Matrix(T, D, lambda t, c: sp.Symbol(f"u_{{{t},{c}}}", real=True))
        self.mha = Branch("a", n)
        self.mlp = Branch("m", D)

    # The two updates are derived when first asked for (about a second at T = D = 2): printing the block
    # (rows(), latex()) needs neither.
    @cached_property
    def _first(self) -> tuple:
        """U = H + MHA(LN1(H)): X, U, J_LN1, J_MHA, dU/dH and its closed form I + J_MHA J_LN1."""
        T = self.T
        X = sp.Matrix([list(norm_of(self.H.row(t), self.norm)) for t in range(T)])
        U = self.H + self.mha(list(X)).reshape(T, self.D)
        J_LN1 = sp.diag(*[norm_jacobian_at(self.H.row(t), self.norm) for t in range(T)])
        J_MHA = self.mha.jacobian_at(list(X))
        dU = sp.Matrix(list(U)).jacobian(list(self.H))
        return X, U, J_LN1, J_MHA, dU, sp.eye(T * self.D) + J_MHA * J_LN1

    @cached_property
    def _second(self) -> tuple:
        """Over the intermediate U, H' = U + MLP(LN2(U)) (the bypass carries U): R, H'(U), J_LN2, J_MLP, dH'/dU and
        its closed form I + J_MLP J_LN2."""
        T = self.T
        R = sp.Matrix([list(norm_of(self.Usym.row(t), self.norm)) for t in range(T)])
        out_U = self.Usym + sp.Matrix([list(self.mlp(list(R.row(t)))) for t in range(T)])
        J_LN2 = sp.diag(*[norm_jacobian_at(self.Usym.row(t), self.norm) for t in range(T)])
        J_MLP = sp.diag(*[self.mlp.jacobian_at(list(R.row(t))) for t in range(T)])
        dOut = sp.Matrix(list(out_U)).jacobian(list(self.Usym))
        return R, out_U, J_LN2, J_MLP, dOut, sp.eye(T * self.D) + J_MLP * J_LN2

    X = property(lambda self: self._first[0])
    U = property(lambda self: self._first[1])
    J_LN1 = property(lambda self: self._first[2])
    J_MHA = property(lambda self: self._first[3])
    dU = property(lambda self: self._first[4])
    closed_1 = property(lambda self: self._first[5])
    R = property(lambda self: self._second[0])
    out_U = property(lambda self: self._second[1])
    J_LN2 = property(lambda self: self._second[2])
    J_MLP = property(lambda self: self._second[3])
    dOut = property(lambda self: self._second[4])
    closed_2 = property(lambda self: self._second[5])

    def output(self) -> sp.Matrix:
        """H' as a function of H (the intermediate U substituted)."""
        return self.out_U.subs(dict(zip(list(self.Usym), list(self.U))), simultaneous=True)

    def residual(self) -> sp.Matrix:
        """[dU/dH - (I + J_MHA J_LN1); dH'/dU - (I + J_MLP J_LN2)]: both zero gives the block formula by the chain rule."""
        return sp.Matrix.vstack(self.dU - self.closed_1, self.dOut - self.closed_2)

    def numeric(self, rng):
        """The block formula against central differences of the whole composed block (branches made concrete)."""
        return _numeric_block(self, rng)

    VECTORS = frozenset({"H", "X", "U", "R", "H'"})

    def rows(self) -> list:
        """The pre-norm block and its Jacobian: the two residual updates joined by the chain rule."""
        from .latex_settings import Partial

        N = self.norm.symbol  # LN, RMS
        H, X, U, R, H2, I = sp.symbols("H X U R H' I", commutative=False)
        # the two norms named after the sublayer each feeds (derive.blocks.NORM_TAGS), not numbered as W_1, W_2 are
        J_MLP, J_MHA = sp.symbols("J_MLP J_MHA", commutative=False)
        J_LN1, J_LN2 = (sp.Symbol(_norm_jacobian_name(N, s), commutative=False) for s in ("attention", "mlp"))
        LN1, LN2, MHA, MLP, vec = (sp.Function(n, commutative=False) for n in
                                   (N + NORM_TAGS["attention"], N + NORM_TAGS["mlp"], "MHA", "MLP", "vec"))
        return [(X, LN1(H)), (U, H + MHA(X)), (R, LN2(U)), (H2, U + MLP(R)),
                (Partial(vec(H), of=vec(H2)), (I + J_MLP * J_LN2) * (I + J_MHA * J_LN1))]

    def __repr__(self) -> str:
        norm = "" if self.norm.name == "layernorm" else f", norm={self.norm.name!r}"
        return f"EncoderBlock(T={self.T}, D={self.D}{norm})"


class DepthProduct(Derivation):
    """prod_{l=L..1} (lambda I + J_l) and its expansion into paths (He et al. 2016)."""

    def __init__(self, L: int = 3, d: int = 2, scale=1):
        self.L = validate.integer("L", L, minimum=1, maximum=6)
        self.d = validate.integer("d", d, minimum=1, maximum=4)
        self.scale = as_sympy(scale, "scale")
        self.J = [sp.Matrix(d, d, lambda i, j, l=l: sp.Symbol(f"j^{{({l})}}_{{{i}{j}}}", real=True)) for l in range(1, L + 1)]
        self.symbolic = [sp.MatrixSymbol(f"J_{l}", d, d) for l in range(1, L + 1)]

    def product(self) -> sp.Matrix:
        """(lambda I + J_L) ... (lambda I + J_1): later layers on the left."""
        out = sp.eye(self.d)
        for J in self.J:
            out = (self.scale * sp.eye(self.d) + J) * out
        return out

    def expansion(self) -> sp.Matrix:
        """sum over subsets S of layers of lambda^(L - |S|) prod_{l in S, descending} J_l."""
        total = sp.zeros(self.d, self.d)
        for r in range(self.L + 1):
            for subset in itertools.combinations(range(self.L), r):
                term = sp.eye(self.d) * self.scale ** (self.L - r)
                for l in sorted(subset):
                    term = self.J[l] * term
                total += term
        return total

    def identity_path(self) -> sp.Matrix:
        """The term with no branch: lambda^L I."""
        return self.scale ** self.L * sp.eye(self.d)

    def rows(self) -> list:
        """The product of the L layers' (lambda I + J_l), later layers on the left, as the sum over paths."""
        I = sp.Identity(self.d)
        lam = self.scale
        prod = sp.MatMul(*[(lam * I + J) for J in reversed(self.symbolic)])
        paths = [sp.Integer(1) * lam ** self.L * I]
        for r in range(1, self.L + 1):
            for subset in itertools.combinations(range(self.L), r):
                paths.append(lam ** (self.L - r) * sp.MatMul(*[self.symbolic[l] for l in sorted(subset, reverse=True)]))
        return [(prod, sp.MatAdd(*paths, evaluate=False))]

    def __repr__(self) -> str:
        return f"DepthProduct(L={self.L}, d={self.d}, scale={self.scale})"


def mlp_without_activation(d: int = 2, hidden: int = 3):
    """MLP(x) = (x W1^T + b1) W2^T + b2 on a row x (weights output x input, as the notes) and the affine form
    x (W2 W1)^T + (b1 W2^T + b2)."""
    x = sp.Matrix(1, d, _symbols("x", d))
    W1 = sp.Matrix(hidden, d, lambda i, j: sp.Symbol(f"w1_{{{i}{j}}}", real=True))
    W2 = sp.Matrix(d, hidden, lambda i, j: sp.Symbol(f"w2_{{{i}{j}}}", real=True))
    b1, b2 = sp.Matrix(1, hidden, _symbols("b1", hidden)), sp.Matrix(1, d, _symbols("b2", d))
    mlp = (x * W1.T + b1) * W2.T + b2
    affine = x * (W2 * W1).T + (b1 * W2.T + b2)
    return mlp, affine, x


def branch_jacobians(expr):
    """``expr`` with the layers' Jacobians ``J_l`` of a :class:`DepthProduct` named ``J_{F_l}``, the Jacobian of
    layer l's branch F_l, as the notes write them (``J_t`` is the transition Jacobian of step t there)."""
    return expr.xreplace({m: sp.MatrixSymbol(f"J_{{F_{m.name[2:]}}}", *m.shape) for m in expr.free_symbols
                          if isinstance(m, sp.MatrixSymbol) and re.fullmatch(r"J_\d+", m.name)})


def depth_formula(dp: "DepthProduct") -> tuple:
    """prod (lambda I + J_{F_l}) and its sum over paths, in matrix symbols J_{F_l} (:func:`branch_jacobians`)."""
    I = sp.Identity(dp.d)
    lam = dp.scale
    prod = sp.MatMul(*[(lam * I + J) for J in reversed(dp.symbolic)], evaluate=False)
    paths = [lam ** dp.L * I]
    for r in range(1, dp.L + 1):
        for subset in itertools.combinations(range(dp.L), r):
            paths.append(lam ** (dp.L - r) * sp.MatMul(*[dp.symbolic[l] for l in sorted(subset, reverse=True)]))
    return branch_jacobians(prod), branch_jacobians(sp.MatAdd(*paths, evaluate=False))


def jacobian_formula(placement: str) -> tuple:
    """The printed statement: du/dx of the connection u = x + F(x) on a row x (``y`` and ``h`` are the target and the
    hidden state in the notes), and its formula in matrix symbols J_F, J_LN of symbolic size d (or T d for the block)."""
    from .bptt import PathJacobian

    n = sp.Symbol("d", integer=True, positive=True)
    I = sp.Identity(n)
    J = lambda name: sp.MatrixSymbol(name, n, n)
    lhs = PathJacobian(sp.MatrixSymbol("u", 1, n), sp.MatrixSymbol("x", 1, n))
    if placement == "plain":
        return lhs, I + J("J_F")
    if placement == "pre-norm":
        return lhs, I + J("J_F") * J("J_LN")
    if placement == "post-norm":
        return lhs, sp.MatMul(J("J_LN"), I + J("J_F"), evaluate=False)
    lhs = sp.MatrixSymbol(r"\partial H' / \partial H", n, n)
    return lhs, sp.MatMul(I + J("J_MLP") * J(_norm_jacobian_name("LN", "mlp")),
                          I + J("J_MHA") * J(_norm_jacobian_name("LN", "attention")), evaluate=False)


def block_jacobian(l="l"):
    """The Jacobian of block ``l`` of a stack with respect to its input rows, all tokens at once (``T d`` by ``T d``):
    ``J_{block,l}``, so that neither the step Jacobian ``J_j`` of a recurrent cell nor the branch's ``J_{F_l}`` is
    read in it. The depth figures' axis and captions and the notation table print this one symbol."""
    n = sp.Symbol("T") * sp.Symbol("d")
    return sp.MatrixSymbol("J_{block,%s}" % l, n, n)


def _norm_jacobian_name(norm: str, sublayer: str) -> str:
    """The Jacobian of the block's norm before ``sublayer`` (a key of :data:`derive.blocks.NORM_TAGS`), named as the
    norm is: ``J_{LN,att}`` of ``LN_att``, ``J_{LN,mlp}`` of ``LN_mlp``."""
    return "J_{%s,%s}" % (norm, NORM_TAGS[sublayer].lstrip("_"))


def general_residual(placement: str):
    """The residual Jacobian at symbolic size d, in index notation (entry i of J ḣ for a tangent ḣ):
    SymPy's derivative of y(h + t ḣ) at t = 0 minus the claimed Jacobian applied to ḣ.

    The branch F is any differentiable map R^d -> R^d: its tangent is J_F ẋ (the definition of its
    Jacobian, an ``IndexedBase`` J_F at the point the branch is applied to); LayerNorm (gamma = 1,
    beta = 0) is differentiated by SymPy from its definition (:class:`derive.rules.Normalize`), and its
    Jacobian in the claim is the catalogue's closed form (delta_kj - 1/d - x̂_k x̂_j / d) / σ
    (:func:`derive.layernorm._layernorm_closed`, gamma = 1).  Reduced by
    :func:`derive.rules.index_zero`, zero for every d.
    """
    from .layernorm import _layernorm_closed
    from .rules import EPS as eps, Normalize, directional, expand_indexed

    placement = validate.choice("placement", placement, ResidualJacobian.PLACEMENTS)
    d = sp.Symbol("d", integer=True, positive=True)
    i, j, k = sp.symbols("i j k", integer=True, nonnegative=True)
    J_F = sp.IndexedBase("J_F", real=True)
    h, hdot = sp.MatrixSymbol("h", 1, d), sp.MatrixSymbol("hdot", 1, d)
    dh = lambda m: sp.IndexedBase(hdot.name)[0, m]
    delta = sp.KroneckerDelta

    def J_LN(X, a, b):  # the catalogue's closed form (layernorm-jacobian) with gamma = 1
        return _layernorm_closed(a, b, {"X": X, "gamma": sp.OneMatrix(1, d)})

    if placement == "plain":  # y = h + F(h):  ẏ = ḣ + J_F ḣ  against  (I + J_F) ḣ
        tangent = dh(i) + sp.Sum(J_F[i, k] * dh(k), (k, 0, d - 1))
        claimed = sp.Sum((delta(i, k) + J_F[i, k]) * dh(k), (k, 0, d - 1))
    elif placement == "pre-norm":  # y = h + F(x), x = LN(h):  ẏ = ḣ + J_F ẋ  against  (I + J_F J_LN) ḣ
        xdot = lambda m: directional(Normalize(h, eps), {h: hdot}, 0, m)
        tangent = dh(i) + sp.Sum(J_F[i, k] * xdot(k), (k, 0, d - 1))
        claimed = (sp.Sum(delta(i, j) * dh(j), (j, 0, d - 1))
                   + sp.Sum(J_F[i, k] * sp.Sum(J_LN(h, k, j) * dh(j), (j, 0, d - 1)), (k, 0, d - 1)))
    else:  # y = LN(z), z = h + F(h):  ẏ = LN's derivative at z in the direction ż = ḣ + J_F ḣ  against  J_LN (I + J_F) ḣ
        z, zdot = sp.MatrixSymbol("z", 1, d), sp.MatrixSymbol("zdot", 1, d)
        dz = lambda m: dh(m) + sp.Sum(J_F[m, j] * dh(j), (j, 0, d - 1))
        tangent = expand_indexed(directional(Normalize(z, eps), {z: zdot}, 0, i), {sp.IndexedBase(zdot.name): lambda _, m: dz(m)})
        claimed = sp.Sum(J_LN(z, i, k) * sp.Sum((delta(k, j) + J_F[k, j]) * dh(j), (j, 0, d - 1)), (k, 0, d - 1))
    return tangent - claimed


def instance_proof(rj: ResidualJacobian) -> Proof:
    """The instance's residual dy/dh - closed form, every entry reduced by :func:`chain_rule_zero`.  An instance is
    fixed by its width and placement, so within one run of ``seqgrad check`` or ``seqgrad latex``
    (:mod:`seqgrad.runcache`) it is proved once, however many entries and sections ask (the catalogue entry and
    the notes' residual section both prove d = 2)."""
    return runcache.once(("residual.instance_proof", rj.d, rj.placement, rj.norm),
                         proof_by(rj.residual, _chain_rule_radical_zero, "chain rule, expand"))


def _chain_rule_radical_zero(expr):
    """:func:`chain_rule_zero`, then, where a residual is left (RMSNorm's root does not cancel by expanding), its
    radical named and the rational function cancelled (:func:`derive.layernorm.radical_zero`): exact either way."""
    from .layernorm import radical_zero

    reduced = chain_rule_zero(expr)
    return reduced if reduced == 0 else radical_zero(reduced)


def _general_and_instance(placement: str, rj) -> Proof:
    """The symbolic-size proof (:func:`general_residual`) and, as second evidence, the d = 2 instance by SymPy's
    own chain rule over undefined branch functions; the entry holds when both do."""
    from .rules import index_proof

    general = index_proof(lambda: general_residual(placement), "every d, every differentiable F")()
    instance = instance_proof(rj())
    return Proof(general.holds and instance.holds, f"{general.method}; instance d = 2: {instance.method}",
                 general.residual if not general.holds else instance.residual,
                 "every d (index notation, J_F the branch's Jacobian); d = 2 with undefined branch functions")


def identities() -> list[Identity]:
    from functools import lru_cache

    out = []
    rj_cache = lru_cache(None)(ResidualJacobian)  # shared by the entries of one placement (the proof and the block program's evidence)
    for placement, source in (("plain", "seed 001 l.152 ('+1' in the derivative); seed 000 L1191"),
                              ("pre-norm", "seed 000 L1183; seed 001 l.130 (`y = x + Layer(Norm(x))`)"),
                              ("post-norm", "seed 000 L1185; seed 001 l.136-138")):
        rj = lambda placement=placement: rj_cache(2, placement)
        formula = {"plain": "I + J_F", "pre-norm": "I + J_F J_LN", "post-norm": "J_LN (I + J_F)"}[placement]
        out.append(Identity(
            f"residual-{placement}", source, f"Jacobian du/dx of the {placement} residual = {formula} (generic F, every d)",
            lambda rj=rj: rj().jacobian(), lambda rj=rj: rj().closed, "simplify",
            lambda placement=placement, rj=rj: _general_and_instance(placement, rj),
            lambda rng, rj=rj: _numeric_generic(rj().y, rj().h, rj().closed, rng),
            simplifier="index notation at symbolic d; chain rule, expand at d = 2",
            shown=lambda placement=placement: jacobian_formula(placement),
            scope="all d >= 1, every differentiable branch F",
            assumptions=("F differentiable", "LN with gamma = 1, beta = 0, eps > 0"),
            symbols_note="Proved at symbolic d in index notation (the branch through its Jacobian J_F, LayerNorm "
                         "differentiated from its definition) and at d = 2 with undefined branch functions; "
                         "numeric evidence: concrete branches at d = 2 against central differences."))
    block = lru_cache(None)(lambda: EncoderBlock(2, 2))
    out.append(Identity(
        "residual-encoder-block", "seed 000 L946 (pre-norm block; the second bypass carries `U`), L1191",
        "dH'/dH = (I + J_MLP J_LN2)(I + J_MHA J_LN1) for the whole pre-norm block (generic MHA and MLP, T = 2, d = 2)",
        lambda: sp.Matrix.vstack(block().dU, block().dOut), lambda: sp.Matrix.vstack(block().closed_1, block().closed_2), "simplify",
        lambda: proof_by(block().residual, chain_rule_zero, "chain rule over the intermediate U, expand")(),
        lambda rng: block().numeric(rng), simplifier="chain rule over the intermediate U, expand",
        symbols_note="Proved as two factors over the named intermediate U (dU/dH and dH'/dU); their product is dH'/dH by the chain rule. "
                     "The numeric check differentiates the whole composed block.", shown=lambda: jacobian_formula("encoder-block"),
        scope="instance T = 2, d = 2, generic MHA and MLP", assumptions=("branches differentiable", "LN with gamma = 1, beta = 0, eps > 0")))
    for placement in ("pre-norm", "post-norm"):
        def shown(placement=placement):
            from .blocks import block_program

            block = block_program(placement)
            line = block.program["dH"]
            # the program's upstream gradient G is the gradient of the block's output, named as the body names every
            # gradient, d and the matrix's name: dU of the pre-norm block's U, dY_att of the post-norm block's LN(U)
            named = sp.MatrixSymbol("d" + block.output.name, *block.G.shape)
            return line.target, line.value.xreplace({block.G: named})

        def proved(placement=placement):
            from .blocks import block_program, prove_program

            return prove_program(block_program(placement))

        rj = lambda placement=placement: rj_cache(2, placement)
        formula = {"pre-norm": "U = H + MHA(LN(H)): dH = dU + LN's pullback of the branch's dX (I + J_MHA J_LN)",
                   "post-norm": "U = H + MHA(H), Y_att = LN(U): dH = dU + the branch's pullback of dU, dU = LN's pullback of dY_att (J_LN (I + J_MHA))"}[placement]
        out.append(Identity(
            f"residual-{placement}-block-program", "seed 000 L1183-1191; seed 001 l.130-138 (pre- vs post-norm)",
            f"{formula}, every T, d, d_k, one head with d_v = d (derive.blocks program)",
            lambda shown=shown: shown()[0], lambda shown=shown: shown()[1], "simplify", proved,
            lambda rng, rj=rj: _numeric_generic(rj().y, rj().h, rj().closed, rng),
            simplifier="composition of the rule table's proved rules", scope="all T, d, d_k >= 1, one head with d_v = d",
            assumptions=("one attention head as the branch", "LN with gain gamma and bias beta, eps > 0 inside the root"),
            symbols_note="Numeric evidence: the Jacobian formula with a generic branch at d = 2 against central differences; "
                         "crosscheck's transformer.block_programs compares the compiled program with torch autograd."))
    dp = DepthProduct(3, 2)
    out.append(Identity(
        "residual-depth-expansion", "seed 001 l.152 (`N` layers); He et al. 2016 (identity mappings)",
        "prod_{l=3..1}(I + J_{F_l}) = I + sum_l J_{F_l} + sum_{l>m} J_{F_l} J_{F_m} + J_{F_3} J_{F_2} J_{F_1} (d = 2)",
        dp.product, dp.expansion, "simplify", proof_by(lambda: dp.product() - dp.expansion(), sp.expand, "expand"),
        lambda rng: numeric_sides(dp.product(), dp.expansion(), rng), simplifier="expand", scope="instance L = 3, d = 2",
        shown=lambda: depth_formula(dp)))
    lam = sp.Symbol("lambda", real=True)
    dl = DepthProduct(4, 2, scale=lam)
    zero = {s: 0 for J in dl.J for s in J}
    out.append(Identity(
        "residual-scaled-shortcut", "He et al. 2016 (scaled shortcuts); derived",
        "shortcuts h -> lambda h: prod(lambda I + J_l) with zero branches = lambda^L I (L = 4), and the expansion holds",
        lambda: sp.Matrix.hstack(dl.product().xreplace(zero), dl.product()), lambda: sp.Matrix.hstack(dl.identity_path(), dl.expansion()),
        "simplify",
        proof_by(lambda: sp.Matrix.hstack(dl.product().xreplace(zero) - dl.identity_path(), dl.product() - dl.expansion()), sp.expand, "expand"),
        lambda rng: numeric_sides(dl.product(), dl.expansion(), rng), simplifier="expand", scope="instance L = 4, d = 2, symbolic lambda",
        shown=lambda: (sp.MatMul(*[lam * sp.Identity(2) + sp.ZeroMatrix(2, 2) for _ in range(4)], evaluate=False), lam ** 4 * sp.Identity(2))))
    mlp, affine, x = mlp_without_activation()
    hessian_terms = sp.Matrix([sp.diff(e, a, b) for e in mlp for a in x for b in x])
    out.append(Identity(
        "mlp-without-activation-affine", "seed 000 L1023 ('without the activation the composition is affine')",
        "(x W1^T + b1) W2^T + b2 = x (W2 W1)^T + (b1 W2^T + b2) on a row x, and every second derivative is 0",
        sp.Matrix.vstack(mlp.T, hessian_terms), sp.Matrix.vstack(affine.T, sp.zeros(*hessian_terms.shape)), "simplify",
        proof_by(lambda: sp.Matrix.vstack((mlp - affine).T, hessian_terms), sp.expand, "expand"),
        lambda rng: numeric_sides(mlp, affine, rng), simplifier="expand", scope="instance d = 2, hidden 3",
        shown=_mlp_formula))
    return out


def _mlp_formula():
    d_, h_ = sp.symbols("d h", integer=True, positive=True)
    W1, W2 = sp.MatrixSymbol("W_1", h_, d_), sp.MatrixSymbol("W_2", d_, h_)
    x, b1, b2 = sp.MatrixSymbol("x", 1, d_), sp.MatrixSymbol("b_1", 1, h_), sp.MatrixSymbol("b_2", 1, d_)
    hidden = sp.MatAdd(sp.MatMul(x, W1.T, evaluate=False), b1, evaluate=False)
    return (sp.MatAdd(sp.MatMul(hidden, W2.T, evaluate=False), b2, evaluate=False),
            sp.MatAdd(sp.MatMul(x, sp.Transpose(sp.MatMul(W2, W1, evaluate=False)), evaluate=False),
                      sp.MatAdd(sp.MatMul(b1, W2.T, evaluate=False), b2, evaluate=False), evaluate=False))


# --- numeric check for identities over generic branches -------------------------------------------

class _Concrete:
    """Every undefined branch function made concrete for the numeric check: f(args) -> tanh(w . args + b) with
    random w, b (fixed per function), as a numeric function (``implemented_function``, evaluated by mpmath),
    and each first partial derivative of f, ``Derivative(f(u), u_j)`` (also inside the ``Subs`` that
    evaluates it at the branch's arguments), as the numeric function w_j (1 - tanh(w . args + b)^2).

    Nothing is differentiated or evaluated symbolically (SymPy's own evaluation of tanh over a LayerNorm
    argument was the slowest step of these checks); the central differences of the model, which see only
    the values, check the formula with these slopes."""

    def __init__(self, rng):
        self.rng, self.weights, self.made = rng, {}, {}

    def _params(self, func):
        if func not in self.weights:
            self.weights[func] = ([self.rng.uniform(-1, 1) for _ in range(16)], self.rng.uniform(-0.5, 0.5))
        return self.weights[func]

    def _numeric(self, func, j=None):
        """The numeric value (``j`` None) or slope along argument ``j`` of the concrete ``func``."""
        import mpmath
        from sympy.utilities.lambdify import implemented_function

        key = (func, j)
        if key not in self.made:
            w, b = self._params(func)

            def tanh_of(args):
                return mpmath.tanh(mpmath.fsum(mpmath.mpf(wi) * a for wi, a in zip(w, args)) + mpmath.mpf(b))

            name = f"{func.__name__}_concrete" + ("" if j is None else f"_slope{j}")
            self.made[key] = implemented_function(name, (lambda *args: tanh_of(args)) if j is None
                                                  else (lambda *args: mpmath.mpf(w[j]) * (1 - tanh_of(args) ** 2)))
        return self.made[key]

    def __call__(self, M) -> sp.Matrix:
        undefined = lambda e: isinstance(e, sp.core.function.AppliedUndef)

        def slope(derivative, args):
            (var, count), = derivative.variable_count
            f = derivative.expr
            if not undefined(f) or count != 1 or var not in f.args:
                raise SeqgradValueError("branch derivative", derivative, "a first partial derivative of one branch function")
            return self._numeric(f.func, f.args.index(var))(*args)

        at_point = lambda e: isinstance(e, sp.Subs) and isinstance(e.expr, sp.Derivative) and undefined(e.expr.expr)
        out = sp.Matrix(M)
        # first the slopes evaluated at a point (the Subs around a derivative), then bare derivatives, then values
        out = out.replace(at_point, lambda e: slope(e.expr, [dict(zip(e.variables, e.point)).get(a, a) for a in e.expr.expr.args]))
        out = out.replace(lambda e: isinstance(e, sp.Derivative) and undefined(e.expr), lambda e: slope(e, e.expr.args))
        out = out.replace(lambda e: undefined(e) and not hasattr(e, "_imp_"), lambda e: self._numeric(e.func)(*e.args))
        if out.has(sp.Subs, sp.Derivative) or any(undefined(a) and not hasattr(a, "_imp_") for a in out.atoms(sp.Function)):
            raise SeqgradValueError("model", M, "undefined functions only as values or first partial derivatives")
        return out


def _central_jacobian(model, inputs, point: dict, others=()):
    """d model / d inputs by central differences at 40 digits (mpmath), rows = outputs."""
    import mpmath

    inputs, others = list(inputs), list(others)
    f = mpmath_lambdify(inputs + others, list(model))
    with mpmath.workdps(40):
        x0 = [mpmath.mpf(point[s]) for s in inputs]
        rest = [mpmath.mpf(point[s]) for s in others]
        step = mpmath.mpf(10) ** -12
        cols = []
        for j in range(len(inputs)):
            plus, minus = list(x0), list(x0)
            plus[j] += step
            minus[j] -= step
            cols.append([(a - b) / (2 * step) for a, b in zip(f(*plus, *rest), f(*minus, *rest))])
        return mpmath.matrix([[cols[j][i] for j in range(len(inputs))] for i in range(len(cols[0]))])


def _at(M, point: dict):
    import mpmath

    symbols = sorted(M.free_symbols, key=lambda s: s.name)
    f = mpmath_lambdify(symbols, M)
    with mpmath.workdps(40):
        return mpmath.matrix(f(*[mpmath.mpf(point[s]) for s in symbols]))


def _point(symbols, rng) -> dict:
    return {s: (rng.uniform(0.1, 1) if s == EPS else rng.uniform(-1, 1)) for s in symbols}


def _numeric_generic(model, inputs, rhs: sp.Matrix, rng, trials: int = 2):
    """Branches made concrete; the factorised formula against central differences of the composed model."""
    from .identity import NumericResult

    concrete = _Concrete(rng)
    model_c, rhs_c = concrete(model), concrete(rhs)
    inputs = list(inputs)
    others = sorted((model_c.free_symbols | rhs_c.free_symbols) - set(inputs), key=lambda s: s.name)
    computed, reference = [], []
    for _ in range(trials):
        point = _point(inputs + others, rng)
        computed += [float(x) for x in _central_jacobian(model_c, inputs, point, others)]
        reference += [float(x) for x in _at(rhs_c, point)]
    return NumericResult(computed, reference, "policy", None,
                         "branches made concrete (tanh of random affine maps); formula against central differences of the model at 40 digits")


def _numeric_block(block: "EncoderBlock", rng):
    """The block formula (I + J_MLP J_LN2)|_U (I + J_MHA J_LN1), evaluated factor by factor, against central
    differences of the whole block H -> U -> H' (the two concrete updates composed numerically)."""
    import mpmath

    from .identity import NumericResult

    concrete = _Concrete(rng)
    U_c, out_c = concrete(sp.Matrix(list(block.U))), concrete(sp.Matrix(list(block.out_U)))
    H, Us = list(block.H), list(block.Usym)
    T, D = block.T, block.D
    f_U = mpmath_lambdify(H + [EPS], list(U_c))
    f_out = mpmath_lambdify(Us + [EPS], list(out_c))
    # the factors from their own definitions: branch Jacobians in plain argument symbols, LN Jacobians
    a_u, m_u = block.mha.u, block.mlp.u
    J_a = mpmath_lambdify(a_u, concrete(sp.Matrix([[sp.diff(f(*a_u), u) for u in a_u] for f in block.mha.f])))
    J_m = mpmath_lambdify(m_u, concrete(sp.Matrix([[sp.diff(f(*m_u), u) for u in m_u] for f in block.mlp.f])))
    X_f = mpmath_lambdify(H + [EPS], list(block.X))
    R_f = mpmath_lambdify(Us + [EPS], list(block.R))
    JLN1_f = mpmath_lambdify(H + [EPS], block.J_LN1)
    JLN2_f = mpmath_lambdify(Us + [EPS], block.J_LN2)
    point = _point(H + [EPS], rng)
    n = T * D
    with mpmath.workdps(40):
        eps = mpmath.mpf(point[EPS])
        x0 = [mpmath.mpf(point[s]) for s in H]
        whole = lambda x: f_out(*f_U(*x, eps), eps)
        step = mpmath.mpf(10) ** -12
        cols = []
        for j in range(n):
            plus, minus = list(x0), list(x0)
            plus[j] += step
            minus[j] -= step
            cols.append([(a - b) / (2 * step) for a, b in zip(whole(plus), whole(minus))])
        fd = [cols[j][i] for i in range(n) for j in range(n)]
        I = mpmath.eye(n)
        first = I + mpmath.matrix(J_a(*X_f(*x0, eps))) * mpmath.matrix(JLN1_f(*x0, eps))
        U_val = list(f_U(*x0, eps))
        R_val = R_f(*U_val, eps)
        J_mlp = mpmath.zeros(n, n)
        for t in range(T):
            block_t = mpmath.matrix(J_m(*R_val[t * D:(t + 1) * D]))
            for i in range(D):
                for j in range(D):
                    J_mlp[t * D + i, t * D + j] = block_t[i, j]
        second = I + J_mlp * mpmath.matrix(JLN2_f(*U_val, eps))
        formula = second * first
    return NumericResult([float(x) for x in fd], [float(x) for x in formula], "policy", None,
                         "branches made concrete; the two factors at U(H) against central differences of H -> H' at 40 digits")
