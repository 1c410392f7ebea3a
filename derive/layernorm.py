"""LayerNorm over the features of one row: a concrete-size view of the one definition, and its closed form.

Seed 000 L971-L975: population statistics over the d features of one row,
eps inside the square root (torch.nn.LayerNorm)::

    mu = (1/d) sum_c h_c,   sigma^2 = (1/d) sum_c (h_c - mu)^2,   s = sqrt(sigma^2 + eps)
    xhat_c = (h_c - mu) / s,   LN(h)_c = gamma_c xhat_c + beta_c

The definition is the program :func:`derive.blocks.norm_program` ("layernorm"): :class:`LayerNorm` evaluates its
forward lines on an explicit row and reads its Jacobian off the program's backward pass (the rule table).
The closed form dLN_i/dh_j = (gamma_i / s) (delta_ij - 1/d - xhat_i xhat_j / d) is a *statement*
(:data:`CLOSED`), proved equal to the program at symbolic d (catalogue ``layernorm-jacobian``) and, over the
named intermediates σ and x̂ at a concrete d, by :meth:`LayerNorm.derive`; nothing computes with it.
:meth:`LayerNorm.jacobian_direct` differentiates the fully substituted forward values (the slow baseline).

>>> ln = LayerNorm(2, gamma=[1, 1], beta=[0, 0])
>>> (ln.jacobian() - ln.derive().substituted()).applyfunc(radical_zero) == sp.zeros(2, 2)
True
>>> ln.derive().holds
True
"""

from __future__ import annotations

import numbers
from functools import cached_property

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
    """LN over d features with symbols h_c, gamma_c, beta_c (or given values) and eps (default the symbol epsilon):
    a concrete-size view of the one LayerNorm definition, :func:`derive.blocks.norm_program` ("layernorm").

    Its values (``y``, ``xhat``, ``s``, ``var``) are the program's forward lines evaluated on the explicit row,
    and :meth:`jacobian` is the program's backward pass (from the rule table); the closed form
    (gamma_i / s)(delta_ij - 1/d - xhat_i xhat_j / d) is only the statement :meth:`derive` proves equal to it.
    """

    def __init__(self, d: int, eps=EPS, gamma=None, beta=None, h=None, name: str = "h"):
        from .blocks import NORMALIZED, norm_row_block

        self.d = validate.integer("d", d, minimum=1)
        self.eps = check_eps(eps)
        self.h = list(sp.symbols(f"{name}_0:{d}", real=True)) if h is None else self._vector("h", h)
        self.gamma = list(sp.symbols(f"gamma_0:{d}", real=True)) if gamma is None else self._vector("gamma", gamma)
        self.beta = list(sp.symbols(f"beta_0:{d}", real=True)) if beta is None else self._vector("beta", beta)
        self.block, self._env = norm_row_block("layernorm", self.h, {"gamma": self.gamma, "beta": self.beta}, self.eps)
        prog = self.block.program
        y, xhat, sigma = prog.evaluate([self.block.output, prog[NORMALIZED].target, prog["sigma"].target], self._env)
        self.y = sp.Matrix(y).T
        self.xhat = list(sp.Matrix(xhat))
        self.s = sp.Matrix(sigma)[0]           # sqrt(sigma^2 + eps), the same in every column of the row
        self.var = self.s ** 2 - self.eps     # the population variance sigma^2

    def _vector(self, argument, values) -> list:
        values = list(values)
        if len(values) != self.d:
            raise SeqgradValueError(argument, values, f"a vector of length d={self.d}")
        return [as_sympy(v, argument) for v in values]

    def __call__(self) -> sp.Matrix:
        return self.y

    def _backward(self, intermediates: dict | None = None) -> sp.Matrix:
        """J_ij = d dX_j / d G_i: the program's backward pass dX (linear in the upstream row G) at this row, with
        the forward values of ``intermediates`` (program line -> row) given instead of computed."""
        G = sp.symbols(f"G_0:{self.d}", real=True)
        prog = self.block.program
        env = {**self._env, self.block.G: sp.ImmutableMatrix([G])}
        env.update((prog[name].target, sp.ImmutableMatrix([row])) for name, row in (intermediates or {}).items())
        J = sp.zeros(self.d, self.d)
        for b, entry in enumerate(prog.evaluate([self.block.gradients["X"]], env)[0]):
            for a, coefficient in _linear_coefficients(entry, G).items():
                J[a, b] = coefficient
        return J

    def jacobian(self) -> sp.Matrix:
        """dLN_i/dh_j from the program's backward pass: row i is dX for the upstream G = e_i."""
        return self._backward()

    def jacobian_direct(self) -> sp.Matrix:
        """Plain differentiation of the fully substituted forward values (slow for large d)."""
        return self.y.jacobian(self.h)

    def derive(self) -> "Derived":
        """The program's backward pass over the named intermediates σ and x̂ (symbols, not substituted), proved
        equal to the catalogue's closed form at this d (``layernorm-jacobian``'s statement, :data:`CLOSED`): in the
        polynomial ring over the upstream G, gamma, 1/σ and x̂, each entry of the program's dX equals
        sum_a G_a J_ab with J the closed form, for every gain (the proof keeps gamma generic).  Made once per object."""
        if getattr(self, "_derived", None) is None:
            from .blocks import NORMALIZED

            n = self.d
            xs = [xhat[c] for c in range(n)]
            J = lambda: self._backward({"sigma": [sigma] * n, NORMALIZED: xs})
            closed = lambda: sp.Matrix(n, n, lambda a, b: _closed_entry(n, a, b).xreplace({gamma[a]: self.gamma[a]}))
            self._derived = Derived(self, J, closed, _closed_form_proved(n), {sigma: self.s, **dict(zip(xs, self.xhat))})
        return self._derived

    def rows(self) -> list:
        """The closed form dLN(h)_i/dh_j = gamma_i / sqrt(sigma^2 + eps) (delta_ij - 1/d - xhat_i xhat_j / d)."""
        from .latex_settings import Partial

        h_ = sp.IndexedBase("h")
        sigma2, eps_, mu_ = sp.Symbol("sigma^2"), sp.Symbol("epsilon"), sp.Symbol("mu")
        d_ = sp.Integer(self.d)
        s_ = sp.sqrt(sigma2 + eps_)
        # the statement itself (CLOSED) at this d, with sigma written out as sqrt(sigma^2 + eps)
        return [(Partial(h_[j], of=sp.Function("LN_i")(h_)), CLOSED.xreplace({d: d_, sigma: s_})),
                (xhat[i], (h_[i] - mu_) / s_, ("with ", sp.Eq(sp.Symbol("d"), d_, evaluate=False), " features"))]

    def __repr__(self) -> str:
        return f"LayerNorm(d={self.d}, eps={self.eps})"


def _closed_entry(n: int, a: int, b: int) -> sp.Expr:
    """Entry (a, b) of :data:`CLOSED` at d = n."""
    return CLOSED.xreplace({d: sp.Integer(n), i: sp.Integer(a), j: sp.Integer(b)})


def _closed_form_proved(n: int) -> bool:
    """Whether the LayerNorm program's dX (derive.blocks) at d = n, over the intermediates σ = 1/u and x̂ and a
    generic gain gamma, is sum_a G_a CLOSED_ab for every b: exact, in the polynomial ring over QQ."""
    from sympy.polys.domains import QQ
    from sympy.polys.rings import ring

    from .blocks import NORMALIZED, norm_program

    block = norm_program("layernorm", T_=1, d_=n, eps=EPS)
    prog = block.program
    G = sp.symbols(f"G_0:{n}", real=True)
    gs, xs, u = [gamma[c] for c in range(n)], [xhat[c] for c in range(n)], sp.Dummy("u", positive=True)
    env = {block.inputs["X"]: sp.ImmutableMatrix([sp.symbols(f"X_0:{n}", real=True)]),
           block.inputs["gamma"]: sp.ImmutableMatrix([gs]), block.inputs["beta"]: sp.ImmutableMatrix(1, n, [0] * n),
           block.G: sp.ImmutableMatrix([G]), prog["sigma"].target: sp.ImmutableMatrix(1, n, [1 / u] * n),
           prog[NORMALIZED].target: sp.ImmutableMatrix([xs])}
    dX = prog.evaluate([block.gradients["X"]], env)[0]
    tg, ta, tb, td = sp.symbols("t_g t_a t_b t_delta", cls=sp.Dummy)
    R, *gens = ring([*G, *gs, u, *xs, tg, ta, tb, td], QQ)
    G_, g_, xs_ = gens[:n], gens[n:2 * n], gens[2 * n + 1:3 * n + 1]
    Tg, Ta, Tb, Td = gens[3 * n + 1:]
    # the statement once, as a template in gamma_a, x̂_a, x̂_b, delta_ab (every entry of CLOSED is one of these)
    template = R.from_expr(CLOSED.xreplace({d: sp.Integer(n), sigma: 1 / u, gamma[i]: tg, xhat[i]: ta, xhat[j]: tb,
                                            sp.KroneckerDelta(i, j): td}))
    try:
        program = [R.from_expr(e) for e in dX]
    except (ValueError, TypeError, sp.polys.polyerrors.PolynomialError):
        return False  # not a polynomial in these intermediates: not the closed form's shape
    for b, entry in enumerate(program):
        stated = R.zero
        for a in range(n):
            stated += G_[a] * template.compose([(Tg, g_[a]), (Ta, xs_[a]), (Tb, xs_[b]), (Td, R(int(a == b)))])
        if entry != stated:
            return False
    return True


def _linear_coefficients(expr, variables) -> dict:
    """{k: the coefficient of variables[k]} of an expression linear and homogeneous in ``variables``."""
    position = {v_: k_ for k_, v_ in enumerate(variables)}
    out: dict = {}
    for term in sp.Add.make_args(sp.expand_mul(expr)):
        (var,) = term.free_symbols & position.keys()
        out[position[var]] = out.get(position[var], 0) + term.xreplace({var: 1})
    return out


class Derived(Derivation):
    """The result of :meth:`LayerNorm.derive`: the program's J over the intermediates σ, x̂, the closed form in the
    same symbols, and whether they agree."""

    def __init__(self, ln, J, closed, holds, definitions):
        self.ln, self._J, self._closed, self.holds, self.definitions = ln, J, closed, holds, definitions

    @cached_property
    def J(self) -> sp.Matrix:
        """The program's Jacobian over the intermediates σ, x̂ (made when first asked for)."""
        return self._J()

    @cached_property
    def closed(self) -> sp.Matrix:
        """The closed form (:data:`CLOSED`) at this d, in the same symbols."""
        return self._closed()

    def __bool__(self) -> bool:
        return bool(self.holds)

    def substituted(self) -> sp.Matrix:
        """J with σ and x̂ replaced by their values at the row (the program's forward lines)."""
        return self.J.xreplace(self.definitions)

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

#: the catalogue's closed-form LayerNorm Jacobian (``layernorm-jacobian``), the statement proved equal to the program
CLOSED = gamma[i] / sigma * (sp.KroneckerDelta(i, j) - 1 / d - xhat[i] * xhat[j] / d)


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


def norm_jacobians(norm, closed, n: int = 3) -> tuple:
    """A norm's Jacobian at d = n two ways: SymPy's jacobian of the program's own forward pass (derive.blocks,
    made explicit) and the closed form ``closed(a, b, inputs)``, both in the plain symbols X_k, gamma_k, epsilon."""
    from .blocks import norm_program
    from .rules import index_form

    block = norm_program(norm, T_=1, d_=n, eps=EPS)
    Y = block.program.expand(block.output, kinds=None)
    xs = [sp.Symbol(f"X_{k}", real=True) for k in range(n)]
    direct = sp.Matrix([_plain(index_form(Y, 0, c)) for c in range(n)]).jacobian(xs)
    stated = sp.Matrix(n, n, lambda a, b: _plain(closed(a, b, block.inputs)))
    return direct, stated


def rmsnorm_jacobians(n: int = 3) -> tuple:
    """:func:`norm_jacobians` of RMSNorm against its closed form."""
    return norm_jacobians("rmsnorm", _rmsnorm_closed, n)


def program_residual(norm, closed):
    """``sum_i G_i J_ij - dX_j`` for the closed form ``closed(i, j, X)`` and the program of ``norm``
    (:func:`derive.blocks.row_jacobian_residual`); 0 after :func:`derive.rules.index_zero` when they agree."""
    from .blocks import row_jacobian_residual

    return row_jacobian_residual(norm, closed, i, j)


def identities() -> list[Identity]:
    from functools import lru_cache

    from .rules import index_proof

    out = []
    J3 = lru_cache(None)(lambda: norm_jacobians("layernorm", _layernorm_closed))
    closed = CLOSED
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
                     "Numeric evidence: SymPy's 3 x 3 Jacobian of that program's forward pass against the closed form."))
    ln8 = LayerNorm(8)
    out.append(Identity(
        "layernorm-jacobian-intermediates", "seed 000 L971-975; the chain rule over the intermediates `sigma`, `xhat`",
        "the LayerNorm program's backward pass over its named intermediates sigma, x̂ equals the closed form (d = 8)",
        lambda: ln8.derive().J, lambda: ln8.derive().closed, "simplify",
        lambda: Proof(ln8.derive().holds, "cancellation to zero over the intermediates sigma, x̂", sp.Integer(0)),
        lambda rng: numeric_sides(ln8.derive().substituted(), ln8.derive().closed.xreplace(ln8.derive().definitions),
                                  rng, positive=[EPS]),
        simplifier="cancel over intermediates", scope="instance d = 8 (the general statement: layernorm-jacobian)",
        shown=lambda: (sp.Derivative(xhat[i], x[j]), (sp.KroneckerDelta(i, j) - 1 / d - xhat[i] * xhat[j] / d) / sigma),
        assumptions=defs))
    r_ = sp.Function("rms")(sp.Symbol("x"))  # the root mean square of the row, named as the function (r is the GRU's reset gate)
    xtilde = sp.IndexedBase("xtilde")  # the RMS-normalised row x / rms(x) (x̂ is LayerNorm's (x - mu) / s)
    rms_closed = gamma[i] / r_ * (sp.KroneckerDelta(i, j) - xtilde[i] * xtilde[j] / d)
    J3_rms = lru_cache(None)(rmsnorm_jacobians)
    out.append(Identity(
        "rmsnorm-jacobian", "Zhang & Sennrich 2019 (RMSNorm: entry `i` of the row `x` maps to `gamma_i*xtilde_i`, "
                            "`xtilde_i = x_i/rms(x)`); derived Jacobian",
        "d y_i / d x_j = (gamma_i / r) (delta_ij - x̃_i x̃_j / d) for y = RMSNorm(x), x̃ = x / r, r = rms(x), every d",
        sp.Derivative(gamma[i] * xtilde[i], x[j]), rms_closed, "simplify",
        index_proof(lambda: program_residual("rmsnorm", _rmsnorm_closed),
                    "sum_i G_i J_ij against dX_j of the RMSNorm program (derive.blocks, rule table)"),
        lambda rng: numeric_sides(J3_rms()[0], J3_rms()[1], rng, positive=[EPS]), simplifier="index notation, symbolic d",
        scope="all d >= 1, with `rms(x)` the square root of `epsilon` plus the mean of the `x_j**2` (no mean "
              "subtracted), and `xtilde_i = x_i/rms(x)`",
        assumptions=("r = sqrt((1/d) sum_k x_k^2 + eps) (no mean subtracted, eps inside the root)",
                     "x̃_i = x_i / r", "eps > 0"),
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
        "layernorm-variance", "seed 000 L981 (variance `v/(v + epsilon)`, `v` the row's population variance: slightly below 1)",
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
