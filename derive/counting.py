"""Parameter and operation counts as symbolic functions (seed 001 l.31-37, l.77, l.150, l.242, l.308; seed 000 L1306).

Conventions match torch.nn: attention has W_Q, W_K, W_V (h d_k, h d_k, h d_v rows of d_model) and
W_O (d_model x h d_v), with optional biases on all four; the FFN has W_1 (d_ff x d), W_2 (d x d_ff) and
optional biases; each LayerNorm has gamma (and beta when it has a bias).
"""

from __future__ import annotations

import sympy as sp

from seqgrad.errors import SeqgradValueError

from .identity import Identity, NumericResult
from .proof import Proof, proof_by
from .safe_parse import as_sympy

d_model, h, d_k, d_v, d_ff, n, N = sp.symbols("d_model h d_k d_v d_ff n N", positive=True, integer=True)
d = sp.Symbol("d", positive=True)


class Letter(sp.Symbol):
    r"""A letter set as it is, in italic, whatever the notation makes of the symbol of that name (``L``: the number
    of layers, where the symbol ``L`` is the loss, ``\mathcal{L}``)."""

    def _latex(self, printer):
        return self.name


class ParamCount(sp.Symbol):
    """A number of parameters, ``|theta|`` with what it counts as a subscript (``layer``, ``stack``)."""

    def _latex(self, printer):
        return r"\lvert\theta\rvert_{\mathrm{%s}}" % self.name.split("_", 1)[1]

    def _sympystr(self, printer):
        return "|theta|_" + self.name.split("_", 1)[1]


#: the number of layers of a stack (its depth), one letter throughout the notes (the loss is \mathcal{L})
LAYERS = Letter("L")
#: the numbers of parameters of one (decoder) layer, of its weight matrices alone, and of a stack of L layers
PARAMS_LAYER, PARAMS_WEIGHTS, PARAMS_STACK = ParamCount("params_layer"), ParamCount("params_weights"), ParamCount("params_stack")


def _bias(bias: bool) -> int:
    return 1 if bias else 0


def size(argument: str, value) -> sp.Expr:
    """A size: a positive integer or a SymPy expression (text is parsed through the whitelist, never sympified)."""
    value = as_sympy(value, argument)
    if value.is_number and not (value.is_Integer and value > 0):
        raise SeqgradValueError(argument, value, "a positive integer or a SymPy symbol")
    return value


def attention_params(d_model=d_model, heads=h, d_k=None, d_v=None, bias: bool = False) -> sp.Expr:
    """h (2 d_model d_k + d_model d_v) + d_model h d_v, plus biases h (2 d_k + d_v) + d_model."""
    d_model, heads = size("d_model", d_model), size("heads", heads)
    if d_k is None and d_model.is_Integer and heads.is_Integer and d_model % heads:
        raise SeqgradValueError("heads", heads, f"a number of heads that divides d_model={d_model} "
                                                "(or give d_k and d_v explicitly)")
    d_k = d_model / heads if d_k is None else size("d_k", d_k)
    d_v = d_k if d_v is None else size("d_v", d_v)
    weights = heads * (2 * d_model * d_k + d_model * d_v) + d_model * heads * d_v
    biases = heads * (2 * d_k + d_v) + d_model
    return sp.expand(weights + _bias(bias) * biases)


def ffn_params(d_model=d_model, d_ff=d_ff, bias: bool = False) -> sp.Expr:
    """2 d_model d_ff, plus biases d_ff + d_model."""
    d_model, d_ff = size("d_model", d_model), size("d_ff", d_ff)
    return sp.expand(2 * d_model * d_ff + _bias(bias) * (d_ff + d_model))


def layernorm_params(d_model=d_model, bias: bool = True) -> sp.Expr:
    """gamma (d) and, with a bias, beta (d)."""
    return size("d_model", d_model) * (1 + _bias(bias))


def encoder_layer_params(d_model=d_model, heads=h, d_ff=d_ff, bias: bool = True, norms: bool = True) -> sp.Expr:
    """Attention + FFN (+ two LayerNorms), as torch.nn.TransformerEncoderLayer."""
    total = attention_params(d_model, heads, bias=bias) + ffn_params(d_model, d_ff, bias)
    if norms:
        total += 2 * layernorm_params(d_model, bias)
    return sp.expand(total)


def stack_params(layers=N, **kwargs) -> sp.Expr:
    return sp.expand(size("layers", layers) * encoder_layer_params(**kwargs))


def self_attention_cost(n=n, d=d) -> sp.Expr:
    """O(n^2 d): the n x n scores, each a d-dimensional dot product (seed 001 l.33)."""
    return size("n", n) ** 2 * size("d", d)


def recurrent_cost(n=n, d=d) -> sp.Expr:
    """O(n d^2): n sequential d x d matrix-vector products (seed 001 l.35)."""
    return size("n", n) * size("d", d) ** 2


def head_costs(T=n, D=d_model, d_k=d_k, d_v=d_v, F=d_ff) -> dict[str, sp.Expr]:
    """Seed 000 L1306: matching T^2 d_k, mixing T^2 d_v, T^2 stored weights per head, projections T D^2, MLP T D F."""
    T, D, d_k, d_v, F = (size(a, x) for a, x in (("T", T), ("D", D), ("d_k", d_k), ("d_v", d_v), ("F", F)))
    return {"matching": T ** 2 * d_k, "mixing": T ** 2 * d_v, "stored": T ** 2, "projections": T * D ** 2, "mlp": T * D * F}


def crossover():
    """The set of n > 0 where self-attention costs more than a recurrent layer: solve n^2 d > n d^2."""
    m, dd = sp.symbols("n d", positive=True)
    return sp.reduce_inequalities([m ** 2 * dd - m * dd ** 2 > 0], [m])


def identities() -> list[Identity]:
    out = []
    at_equal = attention_params(d_model, h, bias=False)
    out.append(Identity(
        "count-attention", "seed 001 l.77 (4 times 262,144 = 1,048,576 at `d_model = 512`)",
        "attention parameters without biases, d_k = d_v = d_model / h: 4 d_model^2; 1,048,576 at d_model = 512",
        sp.Matrix([at_equal, at_equal.subs(d_model, 512)]), sp.Matrix([4 * d_model ** 2, 1048576]), "simplify",
        proof_by(lambda: sp.Matrix([at_equal - 4 * d_model ** 2, at_equal.subs(d_model, 512) - 1048576]), sp.expand, "expand"),
        lambda rng: _count_numeric(at_equal, 4 * d_model ** 2, rng), simplifier="expand",
        scope="all d_model, h >= 1 (symbolic); the number at d_model = 512", assumptions=("no biases", "d_k = d_v = d_model / h")))
    ffn = ffn_params(bias=False)
    out.append(Identity(
        "count-ffn", "seed 001 l.150, l.308 (2,097,152 at 512 / 2048; twice the attention)",
        "FFN parameters without biases: 2 d_model d_ff; at d_ff = 4 d_model twice the attention's",
        sp.Matrix([ffn, ffn.subs({d_model: 512, d_ff: 2048}), ffn.subs(d_ff, 4 * d_model) / at_equal]),
        sp.Matrix([2 * d_model * d_ff, 2097152, 2]), "simplify",
        proof_by(lambda: sp.Matrix([ffn - 2 * d_model * d_ff, ffn.subs({d_model: 512, d_ff: 2048}) - 2097152,
                                    sp.cancel(ffn.subs(d_ff, 4 * d_model) / at_equal) - 2]), sp.expand, "expand"),
        lambda rng: _count_numeric(ffn, 2 * d_model * d_ff, rng), simplifier="expand",
        scope="all d_model, d_ff >= 1 (symbolic); the numbers at 512 / 2048", assumptions=("no biases",)))
    layer = encoder_layer_params(bias=False, norms=False).subs(d_ff, 4 * d_model)
    out.append(Identity(
        "count-layer", "seed 001 l.242 (task 23: `12*d_model**2` per layer), l.150 (3,145,728; times 6: 18,874,368)",
        "per layer at d_ff = 4 d_model without biases or norms: 12 d_model^2; 3,145,728 at 512 and 18,874,368 for N = 6",
        sp.Matrix([layer, layer.subs(d_model, 512), 6 * layer.subs(d_model, 512)]), sp.Matrix([12 * d_model ** 2, 3145728, 18874368]),
        "simplify", proof_by(lambda: sp.Matrix([layer - 12 * d_model ** 2, layer.subs(d_model, 512) - 3145728,
                                                6 * layer.subs(d_model, 512) - 18874368]), sp.expand, "expand"),
        lambda rng: _count_numeric(layer, 12 * d_model ** 2, rng), simplifier="expand",
        scope="all d_model >= 1 (symbolic); the numbers at 512, N = 6", assumptions=("no biases or norms", "d_ff = 4 d_model")))
    ratio = sp.cancel(recurrent_cost() / self_attention_cost())
    out.append(Identity(
        "count-cost-crossover", "seed 001 l.31-43 (`O(n**2*d)` vs `O(n*d**2)`; `n = 100`, `d = 512`: 5,120,000 vs 26,214,400)",
        "recurrent / attention cost = d / n, so attention costs more exactly when n > d; 5,120,000 and 26,214,400 at n = 100, d = 512",
        sp.Matrix([ratio, self_attention_cost().subs({n: 100, d: 512}), recurrent_cost().subs({n: 100, d: 512})]),
        sp.Matrix([d / n, 5120000, 26214400]), "simplify",
        lambda: _crossover_proof(ratio),
        lambda rng: _count_numeric(self_attention_cost() - recurrent_cost(), n * d * (n - d), rng), simplifier="cancel; solve the inequality",
        scope="all n, d > 0 (symbolic); the numbers at n = 100, d = 512", assumptions=("costs O(n^2 d) and O(n d^2) with unit constants",)))
    return out


def _crossover_proof(ratio) -> Proof:
    m, dd = sp.symbols("n d", positive=True)
    solved = sp.solve(sp.Eq(m ** 2 * dd, m * dd ** 2), m)  # the only positive root is n = d
    sign_above = sp.factor(m ** 2 * dd - m * dd ** 2)  # n d (n - d): positive exactly when n > d
    holds = (sp.cancel(ratio - d / n) == 0 and solved == [dd] and sp.expand(sign_above - m * dd * (m - dd)) == 0
             and self_attention_cost().subs({n: 100, d: 512}) == 5120000 and recurrent_cost().subs({n: 100, d: 512}) == 26214400)
    return Proof(holds, "simplification to zero (cancel) and the factorisation n d (n - d)", sign_above,
                 "n^2 d - n d^2 = n d (n - d) > 0 iff n > d for n, d > 0")


def _count_numeric(expr, reference, rng) -> NumericResult:
    computed, expected = [], []
    for _ in range(5):
        values = {d_model: 8 * rng.randint(1, 128), d_ff: rng.randint(1, 4096), h: 1, n: rng.randint(1, 2048), d: rng.randint(1, 2048)}
        computed.append(float(expr.subs(values)))
        expected.append(float(as_sympy(reference, "reference").subs(values)))
    return NumericResult(computed, expected, "policy", None, "evaluated at 5 random integer sizes")
