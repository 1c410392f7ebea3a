"""LayerNorm over the features of one row and its Jacobian in closed form.

Seed 000 L971-L975: population statistics over the d features of one row,
eps inside the square root (torch.nn.LayerNorm)::

    mu = (1/d) sum_c h_c,   sigma^2 = (1/d) sum_c (h_c - mu)^2,   s = sqrt(sigma^2 + eps)
    xhat_c = (h_c - mu) / s,   LN(h)_c = gamma_c xhat_c + beta_c

Closed-form Jacobian: dLN_i/dh_j = (gamma_i / s) (delta_ij - 1/d - xhat_i xhat_j / d).

:meth:`LayerNorm.derive` obtains it over the named intermediates mu, sigma^2
and s (chain rule on their local definitions), which stays fast at d = 64;
:meth:`LayerNorm.jacobian_direct` differentiates the fully substituted
expression (the slow baseline).
"""

from __future__ import annotations

import numbers

import sympy as sp

from seqgrad import validate
from seqgrad.errors import SeqgradTypeError, SeqgradValueError

from .identity import Derivation, Identity, numeric_sides
from .proof import Proof, proof_by
from .safe_parse import as_sympy

EPS = sp.Symbol("epsilon", positive=True)


def check_eps(eps) -> sp.Expr:
    """eps must be a number > 0 or a SymPy symbol declared positive (eps <= 0 leaves 0/0 for a constant row)."""
    if isinstance(eps, bool):
        raise SeqgradTypeError("eps", eps, "a number > 0 or a positive SymPy symbol")
    if isinstance(eps, numbers.Real) and not isinstance(eps, sp.Basic):
        eps = validate.real("eps", eps)
        if eps <= 0:
            raise SeqgradValueError("eps", eps, "a number > 0 (eps sits inside the square root; eps <= 0 divides 0 by 0 on a constant row)")
        return sp.nsimplify(eps, rational=True)
    eps = as_sympy(eps, "eps")
    if eps.is_positive is not True:
        raise SeqgradValueError("eps", eps, "a number > 0 or a SymPy expression known to be positive (Symbol(..., positive=True))")
    return eps


def radical_zero(expr):
    """Exact: name each radical base b (b**(n/2) -> B**n), then cancel the rational function."""
    bases = {p.base for p in expr.atoms(sp.Pow) if p.exp.is_Rational and not p.exp.is_Integer and p.exp.q == 2}
    names = {b: sp.Dummy("B", positive=True) for b in sorted(bases, key=sp.default_sort_key)}
    replaced = expr.replace(lambda e: e.is_Pow and e.base in names and e.exp.is_Rational,
                            lambda e: names[e.base] ** (e.exp * 2))
    return sp.cancel(sp.together(sp.expand(replaced)))


class LayerNorm(Derivation):
    """LN over d features with symbols h_c, gamma_c, beta_c (or given values) and eps (default the symbol epsilon)."""

    def __init__(self, d: int, eps=EPS, gamma=None, beta=None, h=None, name: str = "h"):
        self.d = validate.integer("d", d, minimum=1)
        self.eps = check_eps(eps)
        self.h = list(sp.symbols(f"{name}_0:{d}", real=True)) if h is None else self._vector("h", h)
        self.gamma = list(sp.symbols(f"gamma_0:{d}", real=True)) if gamma is None else self._vector("gamma", gamma)
        self.beta = list(sp.symbols(f"beta_0:{d}", real=True)) if beta is None else self._vector("beta", beta)
        self.mu = sp.Add(*self.h) / self.d
        self.var = sp.Add(*[(x - self.mu) ** 2 for x in self.h]) / self.d
        self.s = sp.sqrt(self.var + self.eps)
        self.xhat = [(x - self.mu) / self.s for x in self.h]
        self.y = sp.Matrix([g * x + b for g, x, b in zip(self.gamma, self.xhat, self.beta)])

    def _vector(self, argument, values) -> list:
        values = list(values)
        if len(values) != self.d:
            raise SeqgradValueError(argument, values, f"a vector of length d={self.d}")
        return [as_sympy(v, argument) for v in values]

    def __call__(self) -> sp.Matrix:
        return self.y

    def jacobian(self) -> sp.Matrix:
        """The closed form (gamma_i / s)(delta_ij - 1/d - xhat_i xhat_j / d)."""
        d = self.d
        return sp.Matrix(d, d, lambda i, j: self.gamma[i] / self.s * (sp.KroneckerDelta(i, j) - sp.Rational(1, d) - self.xhat[i] * self.xhat[j] / d))

    def jacobian_direct(self) -> sp.Matrix:
        """Plain differentiation of the fully substituted expression (slow for large d)."""
        return self.y.jacobian(self.h)

    def derive(self) -> "Derived":
        """The Jacobian by the chain rule over named intermediates mu, v = sigma^2 and s, proved equal to the closed form.

        The local derivatives come from SymPy's ``diff`` of each definition; the
        chain rule is assembled, and compared with the closed form, in SymPy's
        sparse polynomial ring over the symbols (with u = 1/s as one generator),
        where an entry is zero exactly when its residual polynomial is.
        """
        from sympy.polys.domains import QQ
        from sympy.polys.rings import ring

        d = self.d
        mu, v, s = sp.Symbol("mu", real=True), sp.Symbol("v", nonnegative=True), sp.Symbol("s", positive=True)
        u = sp.Symbol("u", positive=True)  # u = 1/s
        # local definitions and their derivatives
        mu_def = sp.Add(*self.h) / d
        v_def = sp.Add(*[(x - mu) ** 2 for x in self.h]) / d
        s_def = sp.sqrt(v + self.eps)
        dmu = [sp.diff(mu_def, x) for x in self.h]                  # d mu / d h_j = 1/d
        # d v / d mu = -(2/d) sum_c (h_c - mu), which is exactly 0 once mu is the mean
        dv_dmu = sp.expand(sp.diff(v_def, mu).subs(mu, mu_def))
        # only the j-th square of v contains h_j (mu is its own symbol here), so d v / d h_j|_mu is its derivative
        dv = [sp.diff((x - mu) ** 2 / d, x) + dv_dmu * dm for x, dm in zip(self.h, dmu)]   # 2 (h_j - mu) / d
        ds_dv = sp.diff(s_def, v).subs(s_def, s)                    # 1 / (2 s)
        # the ring: the centred intermediates c_i = h_i - mu and u = 1/s; LN = diag(gamma) xhat + beta, so
        # J_LN = diag(gamma) J_xhat and the chain rule is assembled for J_xhat
        c = list(sp.symbols(f"c_0:{d}", real=True))
        R = ring(c + [u], QQ)[0]
        centred = {x - mu: ci for x, ci in zip(self.h, c)}
        to_ring = lambda e: R(sp.factor_terms(as_sympy(e, "expression")).subs(s, 1 / u).subs(centred))
        U, C = R(u), [R(ci) for ci in c]
        DMU = [QQ(int(sp.fraction(x)[0]), int(sp.fraction(x)[1])) for x in dmu]
        DS = [to_ring(ds_dv * x) for x in dv]
        J, closed, holds = [], [], dv_dmu == 0
        third = QQ(1, d)
        for i in range(d):
            row_J, row_C = [], []
            for j in range(d):
                delta = 1 if i == j else 0
                # chain rule: d xhat_i / d h_j for xhat_i = (h_i - mu) u
                Jij = (delta - DMU[j]) * U - C[i] * U ** 2 * DS[j]
                Cij = U * (delta - third) - C[i] * C[j] * U ** 3 * third
                holds = holds and (Jij - Cij) == 0
                row_J.append(Jij)
                row_C.append(Cij)
            J.append(row_J)
            closed.append(row_C)
        back = {u: 1 / s, **{ci: x - mu for x, ci in zip(self.h, c)}}
        return Derived(self, J, closed, bool(holds), back, {s: s_def}, {mu: self.mu, v: self.var})

    def rows(self) -> list:
        """The closed form dLN(h)_i/dh_j = gamma_i / sqrt(sigma^2 + eps) (delta_ij - 1/d - xhat_i xhat_j / d)."""
        from .latex_settings import Partial

        i_, j_ = sp.symbols("i j", integer=True)
        h_, g_, xh = sp.IndexedBase("h"), sp.IndexedBase("gamma"), sp.IndexedBase("xhat")
        sigma2, eps_, mu_ = sp.Symbol("sigma^2"), sp.Symbol("epsilon"), sp.Symbol("mu")
        d_ = sp.Integer(self.d)
        s_ = sp.sqrt(sigma2 + eps_)
        return [(Partial(h_[j_], of=sp.Function("LN_i")(h_)),
                 g_[i_] / s_ * (sp.KroneckerDelta(i_, j_) - 1 / d_ - xh[i_] * xh[j_] / d_)),
                (xh[i_], (h_[i_] - mu_) / s_, ("with ", sp.Eq(sp.Symbol("d"), d_, evaluate=False), " features"))]

    def __repr__(self) -> str:
        return f"LayerNorm(d={self.d}, eps={self.eps})"


class Derived(Derivation):
    """The result of :meth:`LayerNorm.derive`: J over the intermediates, the closed form, and whether they agree."""

    def __init__(self, ln, J, closed, holds, *definitions):
        self.ln, self._J, self._closed, self.holds, self.definitions = ln, J, closed, holds, definitions

    def __bool__(self) -> bool:
        return bool(self.holds)

    @property
    def J(self) -> sp.Matrix:
        """J over the intermediates mu, v, s (SymPy expressions)."""
        return self._expr(self._J)

    def _expr(self, rows) -> sp.Matrix:
        gamma = self.ln.gamma
        return sp.Matrix([[gamma[i] * e.as_expr().xreplace(self.definitions[0]) for e in row] for i, row in enumerate(rows)])

    @property
    def closed(self) -> sp.Matrix:
        return self._expr(self._closed)

    def substituted(self) -> sp.Matrix:
        """J with s, then mu and v, replaced by their definitions in h."""
        out = self.J
        for defs in self.definitions[1:]:
            out = out.xreplace(defs)  # symbols for their definitions: a plain replacement (subs would first try to match)
        return out

    def rows(self) -> list:
        return self.ln.rows()

    def __repr__(self) -> str:
        return f"Derived(LayerNorm d={self.ln.d}: J = closed form {'proved' if self.holds else 'NOT proved'})"


# --- index notation at symbolic d ----------------------------------------------------------------

d = sp.Symbol("d", integer=True, positive=True)
i, j, k = sp.symbols("i j k", integer=True, nonnegative=True)
x = sp.IndexedBase("x", real=True)
xhat = sp.IndexedBase("xhat")
gamma = sp.IndexedBase("gamma", real=True)
beta = sp.IndexedBase("beta", real=True)
mu = sp.Symbol("mu", real=True)
sigma = sp.Symbol("sigma", positive=True)
v = sp.Symbol("v", nonnegative=True)  # the population variance sigma^2 - eps


def mean_def(size=d):
    return sp.Sum(x[k], (k, 0, size - 1)) / size


def variance_def(size=d):
    return sp.Sum((x[k] - mu) ** 2, (k, 0, size - 1)) / size


def _definitions():
    """x̂_i = (x_i - mu) / sigma, sigma = sqrt(v + eps) = sqrt(mean_k ((x_k - mu)^2 + eps)), v = mean_k (x_k - mu)^2,
    mu = mean_k x_k: innermost last.  (The radicand as one sum: SymPy asks a sum plus eps whether it is
    infinite every time it builds its root, the slowest step of these proofs.)"""
    radicand = sp.Sum(((x[k] - mu) ** 2 + EPS) / d, (k, 0, d - 1))
    return {xhat: lambda idx: (x[idx] - mu) / sigma, sigma: sp.sqrt(radicand), v: variance_def(), mu: mean_def()}


def _expand(expr):
    from .rules import expand_indexed

    return expand_indexed(expr, _definitions())


def ln_entry(idx):
    """y_idx = gamma_idx x̂_idx + beta_idx with every name replaced by its definition (symbolic d)."""
    return _expand(gamma[idx] * xhat[idx] + beta[idx])


def _layernorm_closed(a, b, inputs):
    """(gamma_a / sigma)(delta_ab - 1/d - x̂_a x̂_b / d), x̂ and sigma the rule table's normalize(X) and std(X)."""
    from .rules import Normalize, RowStd, index_form

    X = inputs["X"]
    xh = lambda m: index_form(Normalize(X, EPS), 0, m)
    s = index_form(RowStd(X, EPS), 0, 0)
    n = X.shape[1]
    return index_form(inputs["gamma"], 0, a) / s * (sp.KroneckerDelta(a, b) - 1 / n - xh(a) * xh(b) / n)


def _rmsnorm_closed(a, b, inputs):
    """(gamma_a / r)(delta_ab - x̂_a x̂_b / d), x̂ and r the rule table's rmsnormalize(X) and rms(X)."""
    from .rules import RMSNormalize, RowRMS, index_form

    X = inputs["X"]
    xh = lambda m: index_form(RMSNormalize(X, EPS), 0, m)
    r = index_form(RowRMS(X, EPS), 0, 0)
    return index_form(inputs["gamma"], 0, a) / r * (sp.KroneckerDelta(a, b) - xh(a) * xh(b) / X.shape[1])


def _plain(expr):
    """Index-notation entries at a concrete size as plain symbols: ``X[0, 2]`` -> ``X_2`` (for numeric evidence)."""
    return expr.replace(lambda e: isinstance(e, sp.Indexed),
                        lambda e: sp.Symbol(f"{e.base.label}_{e.indices[-1]}", real=True))


def rmsnorm_jacobians(n: int = 3) -> tuple:
    """RMSNorm's Jacobian at d = n two ways: SymPy's jacobian of the program's own forward pass (derive.blocks,
    made explicit) and the closed form, both in the plain symbols X_k, gamma_k, epsilon."""
    from .blocks import norm_program
    from .rules import index_form

    block = norm_program("rmsnorm", T_=1, d_=n, eps=EPS)
    Y = block.program.expand(block.output, kinds=None)
    xs = [sp.Symbol(f"X_{k}", real=True) for k in range(n)]
    direct = sp.Matrix([_plain(index_form(Y, 0, c)) for c in range(n)]).jacobian(xs)
    closed = sp.Matrix(n, n, lambda a, b: _plain(_rmsnorm_closed(a, b, block.inputs)))
    return direct, closed


def program_residual(norm, closed):
    """``sum_i G_i J_ij - dX_j`` for the closed form ``closed(i, j, X)`` and the program of ``norm``
    (:func:`derive.blocks.row_jacobian_residual`); 0 after :func:`derive.rules.index_zero` when they agree."""
    from .blocks import row_jacobian_residual

    return row_jacobian_residual(norm, closed, i, j)


def identities() -> list[Identity]:
    from functools import lru_cache

    from .rules import index_proof

    out = []
    ln = LayerNorm(3)
    J3 = lru_cache(None)(lambda: (ln.jacobian_direct(), ln.jacobian()))
    closed = gamma[i] / sigma * (sp.KroneckerDelta(i, j) - 1 / d - xhat[i] * xhat[j] / d)
    prove_closed = index_proof(lambda: program_residual("layernorm", _layernorm_closed),
                               "sum_i G_i J_ij against dX_j of the LayerNorm program (derive.blocks, rule table)")
    defs = ("mu = (1/d) sum_k x_k", "sigma = sqrt((1/d) sum_k (x_k - mu)^2 + eps) (population variance, eps inside the root)",
            "x̂_i = (x_i - mu) / sigma", "eps > 0")
    out.append(Identity(
        "layernorm-jacobian", "seed 000 L971-975 (LN definition); derived Jacobian",
        "d y_i / d x_j = (gamma_i / sigma) (delta_ij - 1/d - x̂_i x̂_j / d) for y = LN(x), every d",
        sp.Derivative(gamma[i] * xhat[i] + beta[i], x[j]), closed, "simplify",
        prove_closed, lambda rng: numeric_sides(J3()[0], J3()[1], rng, positive=[EPS]), simplifier="index notation, symbolic d",
        scope="all d >= 1", assumptions=defs,
        symbols_note="Proved equal to the one LayerNorm definition: sum_i G_i J_ij is the backward pass dX_j of "
                     "derive.blocks.norm_program('layernorm') (the rule table), at symbolic d. "
                     "Numeric evidence: the direct 3 x 3 Jacobian of the fully substituted LN against the closed form."))
    ln8 = LayerNorm(8)
    out.append(Identity(
        "layernorm-jacobian-intermediates", "seed 000 L971-975; chain rule over `mu`, `sigma**2`, `s`",
        "the Jacobian by the chain rule over named intermediates equals the closed form (d = 8)",
        lambda: ln8.derive().J, lambda: ln8.derive().closed, "simplify",
        lambda: Proof(ln8.derive().holds, "simplification to zero (name the radical, cancel) over intermediates", sp.Integer(0)),
        lambda rng: numeric_sides(ln8.derive().substituted(), ln8.jacobian(), rng, positive=[EPS]),
        simplifier="name the radical, cancel", scope="instance d = 8 (the general statement: layernorm-jacobian)",
        shown=lambda: (sp.Derivative(xhat[i], x[j]), (sp.KroneckerDelta(i, j) - 1 / d - xhat[i] * xhat[j] / d) / sigma),
        assumptions=defs))
    r_ = sp.Symbol("r", positive=True)
    rms_closed = gamma[i] / r_ * (sp.KroneckerDelta(i, j) - xhat[i] * xhat[j] / d)
    J3_rms = lru_cache(None)(rmsnorm_jacobians)
    out.append(Identity(
        "rmsnorm-jacobian", "Zhang & Sennrich 2019 (RMSNorm: y = x / rms(x) o gamma); derived Jacobian",
        "d y_i / d x_j = (gamma_i / r) (delta_ij - x̂_i x̂_j / d) for y = RMSNorm(x), x̂ = x / r, every d",
        sp.Derivative(gamma[i] * xhat[i], x[j]), rms_closed, "simplify",
        index_proof(lambda: program_residual("rmsnorm", _rmsnorm_closed),
                    "sum_i G_i J_ij against dX_j of the RMSNorm program (derive.blocks, rule table)"),
        lambda rng: numeric_sides(J3_rms()[0], J3_rms()[1], rng, positive=[EPS]), simplifier="index notation, symbolic d",
        scope="all d >= 1", assumptions=("r = sqrt((1/d) sum_k x_k^2 + eps) (no mean subtracted, eps inside the root)",
                                         "x̂_i = x_i / r", "eps > 0"),
        symbols_note="Proved equal to the one RMSNorm definition: sum_i G_i J_ij is the backward pass dX_j of "
                     "derive.blocks.norm_program('rmsnorm') (the rule table), at symbolic d. "
                     "Numeric evidence: SymPy's 3 x 3 Jacobian of that program's forward pass against the closed form."))
    row_sum = sp.Sum(closed, (j, 0, d - 1))
    out.append(Identity(
        "layernorm-jacobian-kills-constants", "seed 000 L971-981 (LN removes the row mean); derived",
        "J 1 = 0: sum_j d y_i / d x_j = 0, so adding a constant to a row changes nothing, every d",
        row_sum, sp.Integer(0), "simplify",
        index_proof(lambda: sp.Sum(sp.diff(ln_entry(i), x[j]), (j, 0, d - 1)), "the derivative, summed over j"),
        lambda rng: numeric_sides(J3()[0] * sp.ones(3, 1), sp.zeros(3, 1), rng, positive=[EPS]),
        simplifier="index notation, symbolic d", scope="all d >= 1", assumptions=defs))
    ln4 = LayerNorm(4, gamma=[1] * 4, beta=[0] * 4)
    mean4 = sp.Add(*ln4.y) / 4
    out.append(Identity(
        "layernorm-mean-zero", "seed 000 L979-981 (`gamma = 1`, `beta = 0`: mean 0)", "mean_i x̂_i = 0 (LN with gamma = 1, beta = 0), every d",
        sp.Sum(xhat[i], (i, 0, d - 1)) / d, sp.Integer(0), "simplify",
        index_proof(lambda: _expand(sp.Sum(xhat[i], (i, 0, d - 1)) / d), "sum_i (x_i - mu) = 0"),
        lambda rng: numeric_sides(mean4, sp.Integer(0), rng, positive=[EPS]), simplifier="index notation, symbolic d",
        scope="all d >= 1", assumptions=defs))
    var_out = sp.Add(*[e ** 2 for e in ln4.y]) / 4
    target4 = ln4.var / (ln4.var + EPS)
    out.append(Identity(
        "layernorm-variance", "seed 000 L981 (variance `sigma**2/(sigma**2 + epsilon)`, slightly below 1)",
        "mean_i x̂_i^2 = v / (v + eps), v the population variance of the row: slightly below 1, every d",
        sp.Sum(xhat[i] ** 2, (i, 0, d - 1)) / d, v / (v + EPS), "simplify",
        index_proof(lambda: _expand(sp.Sum(xhat[i] ** 2, (i, 0, d - 1)) / d - v / (v + EPS)), "v = mean_k (x_k - mu)^2"),
        lambda rng: numeric_sides(var_out, target4, rng, positive=[EPS]), simplifier="index notation, symbolic d",
        scope="all d >= 1", assumptions=defs))
    a_ = sp.Symbol("a", real=True)
    const = LayerNorm(5, h=[a_] * 5)
    constant_row = lambda: ln_entry(i).replace(lambda e: isinstance(e, sp.Indexed) and e.base == x, lambda e: a_)
    out.append(Identity(
        "layernorm-constant-row", "seed 000 L981 (a constant row maps to `beta`)", "LN(a, a, ..., a)_i = beta_i for eps > 0, every d",
        sp.Subs(gamma[i] * (x[i] - mu) / sigma + beta[i], x[k], a_), beta[i], "simplify",
        index_proof(lambda: constant_row() - beta[i], "every x_k = a: mu = a, x̂ = 0 / sqrt(eps)"),
        lambda rng: numeric_sides(const.y, sp.Matrix(const.beta), rng, positive=[EPS]), simplifier="index notation, symbolic d",
        scope="all d >= 1", assumptions=("eps > 0 (eps = 0 would leave 0/0)",)))
    return out
