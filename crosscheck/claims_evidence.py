"""Small computations behind the verdicts of the texts' prose statements (:mod:`crosscheck.claims_statements`).

Each function computes the evidence for one verdict and returns ``(holds, detail)``: ``holds`` is True when the
computation comes out as the recorded verdict says (the counterexample is one, the precise statement is so), and
``detail`` gives the numbers.  They use the numeric encoder's own parts (:mod:`numeric.attention`,
:mod:`numeric.layernorm`, :mod:`numeric.encoder`, :mod:`numeric.positions`) and SymPy, never a second
implementation; torch is imported inside the functions.
"""

from __future__ import annotations

from functools import lru_cache

import sympy as sp

Evidence = "tuple[bool, str]"


def _torch():
    import torch

    return torch


def _rows(T: int, D: int, seed: int):
    torch = _torch()
    return torch.randn(T, D, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))


def _attention(D: int = 6, heads: int = 2, seed: int = 3):
    from seqgrad.numeric.attention import MultiHeadAttention

    return MultiHeadAttention.random(D, heads, generator=_torch().Generator().manual_seed(seed))


def _close(a, b) -> bool:
    return bool(_torch().allclose(a, b, atol=1e-12, rtol=1e-12))


# --------------------------------------------------------------------------- attention and order

@lru_cache(maxsize=1)
def permutation() -> tuple[bool, str]:
    """Unmasked self-attention is permutation-equivariant (outputs permute with the inputs), not invariant; a mean
    over positions (a pooled readout) is invariant; causal attention is not even equivariant."""
    from seqgrad.numeric.attention import attention_mask

    attn, X = _attention(), _rows(5, 6, 1)
    perm = _torch().tensor([3, 0, 4, 1, 2])
    out, out_p = attn(X), attn(X[perm])
    causal = attention_mask(5, causal=True)
    equivariant = _close(out_p, out[perm])
    invariant = _close(out_p, out)
    pooled = _close(out_p.mean(0), out.mean(0))
    causal_equivariant = _close(attn(X[perm], causal), attn(X, causal)[perm])
    holds = equivariant and not invariant and pooled and not causal_equivariant
    return holds, (f"permuting 5 rows: outputs permute with them {equivariant}, outputs unchanged {invariant}, "
                   f"mean-pooled output unchanged {pooled}, causal outputs permute with them {causal_equivariant}")


@lru_cache(maxsize=1)
def every_output_depends_on_every_input() -> tuple[bool, str]:
    """Without a mask each output row of attention depends on every input row (softmax weights are positive)."""
    torch = _torch()
    attn, X = _attention(), _rows(4, 6, 2)
    J = torch.autograd.functional.jacobian(attn, X)  # (T, D, T, D)
    strength = J.abs().sum(dim=(1, 3))  # output row i against input row j
    smallest = float(strength.min())
    return smallest > 1e-8, f"the smallest |d out_i / d x_j| summed over features, over all i, j: {smallest:.3g}"


@lru_cache(maxsize=1)
def concatenated_width() -> tuple[bool, str]:
    """Concatenating J heads of width d_v gives J d_v features: the model width D only when J d_v = D, and the
    output projection W_O (D x J d_v) is what returns to D."""
    from seqgrad.numeric.attention import MultiHeadAttention

    attn = MultiHeadAttention.random(5, 3, d_k=2, d_v=4, generator=_torch().Generator().manual_seed(4))
    record: dict = {}
    out = attn(_rows(7, 5, 3), record=record)
    width, projected = record["C"].shape[-1], out.shape[-1]
    return width == 12 and projected == 5, f"3 heads of d_v = 4 at D = 5: concatenation {width} wide, after W_O {projected}"


@lru_cache(maxsize=1)
def causal_mask_counts() -> tuple[bool, str]:
    """The causal mask lets position t (1-based) attend to t positions, itself included."""
    from seqgrad.numeric.attention import attention_mask

    M = attention_mask(6, causal=True)
    allowed = [int((row == 0).sum()) for row in M]
    return allowed == list(range(1, 7)), f"allowed sources per query row t = 1..6: {allowed}"


def softmax_tie() -> tuple[bool, str]:
    """softmax(c s) tends to one-hot as c grows only when the largest score is unique: a tie stays split."""
    c = sp.Symbol("c", positive=True)
    unique = sp.limit(sp.exp(c) / (sp.exp(c) + 1), c, sp.oo)
    tie = sp.simplify(sp.exp(c) / (sp.exp(c) + sp.exp(c)))
    return unique == 1 and tie == sp.Rational(1, 2), (f"softmax(c (1, 0))_0 -> {unique} as c -> oo; "
                                                       f"softmax(c (1, 1))_0 = {tie} for every c")


def dot_product_variance() -> tuple[bool, str]:
    """Var(q.k) = d_k needs independent coordinates: with q = k (each N(0, 1)) it is 2 d_k."""
    from sympy.stats import Normal, variance

    x, y = Normal("x", 0, 1), Normal("y", 0, 1)
    independent, same = sp.simplify(variance(x * y)), sp.simplify(variance(x * x))
    return independent == 1 and same == 2, (f"per coordinate: Var(q_i k_i) = {independent} for independent N(0, 1) "
                                            f"coordinates, Var(q_i q_i) = {same} when k = q")


def heads_cost() -> tuple[bool, str]:
    """h heads of width d/h cost as many multiplications as one head of width d (projections, scores, values)."""
    n, d, h = sp.symbols("n d h", positive=True)
    per_head = 3 * n * d * (d / h) + 2 * n ** 2 * (d / h)
    difference = sp.simplify(h * per_head - (3 * n * d ** 2 + 2 * n ** 2 * d))
    return difference == 0, f"h * (3 n d (d/h) + 2 n^2 (d/h)) - (3 n d^2 + 2 n^2 d) = {difference}"


# --------------------------------------------------------------------------- normalization and residuals

def _layer_norm(H):
    from seqgrad.numeric.layernorm import layer_norm

    return layer_norm(H, eps=1e-300)[0]  # eps as good as 0, so that the statistics show exactly


@lru_cache(maxsize=1)
def layernorm_per_vector() -> tuple[bool, str]:
    """LayerNorm's mean and variance are over the features of one vector: each output row has mean 0 and variance
    1, the columns do not, and a row's output does not change with the rows (batch, sequence) around it."""
    torch = _torch()
    H = _rows(7, 5, 5) * 3 + 1
    out = _layer_norm(H)
    zeros, ones = torch.zeros(7, dtype=torch.float64), torch.ones(7, dtype=torch.float64)
    rows_standard = _close(out.mean(1), zeros) and _close(out.var(1, unbiased=False), ones)
    columns_standard = _close(out.mean(0), zeros[:5])
    alone = all(_close(_layer_norm(H[:k])[0], out[0]) for k in (1, 2, 7))
    holds = rows_standard and not columns_standard and alone
    return holds, (f"rows mean 0 / variance 1: {rows_standard}; columns mean 0: {columns_standard}; row 0 the same "
                   f"among 1, 2 or 7 rows: {alone}")


@lru_cache(maxsize=1)
def pre_norm_is_not_post_norm() -> tuple[bool, str]:
    """With the same parameters, y = x + F(LN(x)) (pre-norm) and y = LN(x + F(x)) (post-norm) differ."""
    from seqgrad.numeric.encoder import EncoderBlock

    torch = _torch()
    pre = EncoderBlock.random(4, 2, 8, norm_first=True, generator=torch.Generator().manual_seed(6))
    post = EncoderBlock.random(4, 2, 8, norm_first=False, generator=torch.Generator().manual_seed(6))
    post.load_state_dict(pre.state_dict())
    X = torch.tensor([[1.0, 2.0, -1.0, 0.0], [0.3, -0.1, 0.2, 0.05]], dtype=torch.float64)
    with torch.no_grad():
        gap = float((pre(X) - post(X)).abs().max())
    return gap > 1e-3, f"one block, the same weights, input rows (1, 2, -1, 0), (0.3, -0.1, 0.2, 0.05): outputs differ by {gap:.3g}"


@lru_cache(maxsize=1)
def post_norm_identity_path() -> tuple[bool, str]:
    """In a post-norm layer LN(x + F(x)) the identity path passes through LayerNorm: even with F = 0 the Jacobian is
    LN's, which sends the constant direction to 0 (not the identity)."""
    torch = _torch()
    x = torch.tensor([1.3, 1.9, -0.8, 0.05], dtype=torch.float64)
    J = torch.autograd.functional.jacobian(_layer_norm, x)
    constant = float((J @ torch.ones(4, dtype=torch.float64)).abs().max())
    off_identity = float((J - torch.eye(4, dtype=torch.float64)).abs().max())
    return constant < 1e-12 and off_identity > 0.1, (f"d LN(x)/dx at x = (1.3, 1.9, -0.8, 0.05): |J 1| = {constant:.1e}, "
                                                     f"|J - I| = {off_identity:.3g}")


@lru_cache(maxsize=1)
def missing_residual() -> tuple[bool, str]:
    """LN o MH o Attn without the skip connection is another function than LN(h + MH(h)), the decoder's sublayer."""
    attn, H = _attention(6, 2, 7), _rows(4, 6, 8)
    with _torch().no_grad():
        gap = float((_layer_norm(attn(H)) - _layer_norm(H + attn(H))).abs().max())
    return gap > 1e-3, f"LN(MH(h)) and LN(h + MH(h)) differ by {gap:.3g} on random rows"


@lru_cache(maxsize=1)
def ffn_is_not_linear() -> tuple[bool, str]:
    """The position-wise network W_2 ReLU(W_1 h + b_1) + b_2 is not linear: FFN(-h) != -FFN(h)."""
    from seqgrad.numeric.encoder import EncoderBlock

    torch = _torch()
    mlp = EncoderBlock.random(4, 2, 8, generator=torch.Generator().manual_seed(9)).mlp
    h = _rows(1, 4, 10)
    with torch.no_grad():
        gap = float((mlp(-h) + mlp(h)).abs().max())
    return gap > 1e-3, f"|FFN(-h) + FFN(h)| = {gap:.3g} for a random h"


@lru_cache(maxsize=1)
def softargmax_is_a_distribution() -> tuple[bool, str]:
    """softmax of the logits is a probability vector (positive, summing to 1), not an index; its argmax is the
    logits' argmax (softmax is increasing)."""
    torch = _torch()
    s = _rows(1, 9, 11)[0]
    p = torch.softmax(s, 0)
    holds = bool((p > 0).all()) and abs(float(p.sum()) - 1) < 1e-12 and int(p.argmax()) == int(s.argmax())
    return holds, f"9 logits: softmax gives 9 positive numbers summing to {float(p.sum()):.15g}; argmax {int(p.argmax())} = {int(s.argmax())}"


# --------------------------------------------------------------------------- recurrence, positions, norms

def identity_rnn_is_affine() -> tuple[bool, str]:
    """With phi(z) = z and fixed weights, yhat = w_o h_3 + b_o of h_t = w_x x_t + w_h h_(t-1) + b is affine in x_1..x_3."""
    wx, wh, b, wo, bo, h0 = sp.symbols("w_x w_h b w_o b_o h_0")
    xs = sp.symbols("x_1:4")
    h = h0
    for x in xs:
        h = wx * x + wh * h + b
    yhat = sp.expand(wo * h + bo)
    second = {sp.diff(yhat, a, c) for a in xs for c in xs}
    return second == {0}, f"every second derivative of yhat in x_1..x_3 is {sorted(map(str, second))}"


def norm_does_not_guarantee_growth() -> tuple[bool, str]:
    """A matrix of norm 2 can send a vector to 0: W = diag(2, 0), v = (0, 1)."""
    W, v = sp.diag(2, 0), sp.Matrix([0, 1])
    norm = max(sp.Matrix(W.T * W).eigenvals())
    return sp.sqrt(norm) == 2 and (W * v).norm() == 0, f"||W||_2 = {sp.sqrt(norm)}, ||W v|| = {(W * v).norm()}"


@lru_cache(maxsize=1)
def slow_pair_is_almost_linear() -> tuple[bool, str]:
    """For pos = 0..3 the low-frequency pair (sin(pos/100), cos(pos/100)) of d = 4 is within 5e-6 of (pos/100, 1)
    in its sine (|sin u - u| <= u^3/6)."""
    from seqgrad.numeric.positions import sinusoidal

    torch = _torch()
    P = sinusoidal(4, 4)
    u = torch.arange(4, dtype=torch.float64) / 100
    gap = float((P[:, 2] - u).abs().max())
    return gap < 5e-6, f"max |PE(pos, 2) - pos/100| over pos = 0..3: {gap:.2e}"


@lru_cache(maxsize=1)
def positions_are_distinct() -> tuple[bool, str]:
    """No two positions 0..1999 of the d = 4 encoding coincide (PE(p) = PE(q) needs p - q in 2 pi Z)."""
    torch = _torch()
    from seqgrad.numeric.positions import sinusoidal

    P = sinusoidal(2000, 4)
    d = torch.cdist(P, P) + torch.eye(2000, dtype=torch.float64) * 10
    smallest = float(d.min())
    return smallest > 1e-4, f"the smallest distance between two of the positions 0..1999 (d = 4): {smallest:.3g}"
