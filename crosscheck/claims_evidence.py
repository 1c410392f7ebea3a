"""Small computations behind the verdicts of the texts' prose statements (:mod:`crosscheck.claims_statements`).

Each function computes the evidence for one verdict and returns ``(holds, detail)``: ``holds`` is True when the
computation comes out as the recorded verdict says (the counterexample is one, the precise statement is so), and
``detail`` gives the numbers.  They use the numeric encoder's own parts (:mod:`numeric.attention`,
:mod:`numeric.layernorm`, :mod:`numeric.encoder`, :mod:`numeric.positions`) and SymPy, never a second
implementation; torch is imported inside the functions.
"""

from __future__ import annotations

import math
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
    return width == 12 and projected == 5, f"3 heads of d_v = 4 at d = 5: concatenation {width} wide, after W_O {projected}"


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


def moments(X, n: int) -> list:
    """E[X^0], ..., E[X^n] of a ``sympy.stats`` random variable: k! times the t^k coefficient of its moment
    generating function's Taylor series at 0 (exact; SymPy's own distribution, no joint integrals).

    >>> from sympy.stats import Normal
    >>> moments(Normal("x", 0, 1), 4)
    [1, 0, 1, 0, 3]
    """
    from sympy.stats import moment_generating_function

    t = sp.Symbol("t", real=True)
    series = sp.series(moment_generating_function(X)(t), t, 0, n + 1).removeO()
    return [sp.factorial(k) * series.coeff(t, k) for k in range(n + 1)]


@lru_cache(maxsize=1)
def dot_product_variance() -> tuple[bool, str]:
    """Var(q.k) = d_k needs q independent of k: with q = k a coordinate contributes Var(q_i^2) = E[q_i^4] - 1,
    which is 2 for N(0, 1) coordinates (so 2 d_k) and 4/5 for uniform ones of variance 1.

    From the coordinates' moments (:func:`moments`): Var(X Y) = E[X^2] E[Y^2] - (E[X] E[Y])^2 for X independent of
    Y, Var(X X) = E[X^4] - E[X^2]^2, Var(X) = E[X^2] - E[X]^2."""
    from sympy.stats import Normal, Uniform

    x, y = moments(Normal("x", 0, 1), 4), moments(Normal("y", 0, 1), 4)
    u = moments(Uniform("u", -sp.sqrt(3), sp.sqrt(3)), 4)
    independent, same = sp.simplify(x[2] * y[2] - (x[1] * y[1]) ** 2), sp.simplify(x[4] - x[2] ** 2)
    uniform, fourth = sp.simplify(u[4] - u[2] ** 2), sp.simplify(u[4] - 1)
    ok = independent == 1 and same == 2 and uniform == fourth == sp.Rational(4, 5) and sp.simplify(u[2] - u[1] ** 2) == 1
    return ok, (f"per coordinate: Var(q_i k_i) = {independent} for independent N(0, 1) coordinates; when k = q, "
                f"Var(q_i q_i) = E[q_i^4] - 1: {same} for N(0, 1), {uniform} for uniform coordinates of variance 1")


@lru_cache(maxsize=1)
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


# --------------------------------------------------------------------------- week 06 and the lesson, read whole

def _softmax(s):
    return _torch().softmax(_torch().tensor(s, dtype=_torch().float64), -1)


@lru_cache(maxsize=1)
def attention_layer_multiplications() -> tuple[bool, str]:
    """The multiplications of one self-attention layer of the numeric encoder (d = 64, 8 heads, n = 12 rows), read
    off the shapes of its own weights: the scores Q K^T and the mixing A V cost n^2 d each, the Q, K, V and output
    projections 4 n d^2 -- so a layer is O(n^2 d + n d^2), and at n < d the projections dominate (at the lesson's
    n = 100, d = 512: 104,857,600 against 2 n^2 d = 10,240,000)."""
    n, d = 12, 64
    attn = _attention(d, 8, 12)
    pairs = sum(n * n * head.d_k + n * n * head.d_v for head in attn.heads)              # Q K^T, A V
    projections = sum(n * head.D * (2 * head.d_k + head.d_v) for head in attn.heads)     # X W_Q, X W_K, X W_V
    projections += n * attn.W_O.shape[0] * attn.W_O.shape[1]                             # C W_O
    holds = pairs == 2 * n * n * d and projections == 4 * n * d * d and projections > pairs
    return holds, (f"n = {n}, d = {d}: Q K^T and A V {pairs:,} multiplications (2 n^2 d), the projections {projections:,} "
                   f"(4 n d^2): the n^2 d terms are {pairs / (pairs + projections):.1%} of the layer; at n = 100, d = 512 "
                   f"{4 * 100 * 512 ** 2:,} against {2 * 100 ** 2 * 512:,}")


def words_before_pronoun() -> tuple[bool, str]:
    """The lesson's sentence: how many words stand before 'она', and whether 'счастлива' is one of them."""
    sentence = "Девочка играла с собакой, которая была очень доброй, и она была счастлива"
    words = [w.strip(",.") for w in sentence.split()]
    at = words.index("она")
    before = words[:at]
    return len(before) == 9 and "счастлива" not in before, (
        f"{len(before)} words precede 'она' ({' '.join(before)}); 'счастлива' is word {words.index('счастлива') + 1}, "
        f"after it")


@lru_cache(maxsize=1)
def zeroing_scores_is_not_masking() -> tuple[bool, str]:
    """Setting a future score to 0 before softmax leaves it a positive weight; adding -inf gives it weight 0."""
    zeroed = _softmax([1.2, 0.5, 2.0, 0.0])
    masked = _softmax([1.2, 0.5, 2.0, float("-inf")])
    holds = float(zeroed[3]) > 0.05 and float(masked[3]) == 0.0
    return holds, (f"softmax(1.2, 0.5, 2.0, 0): the fourth weight {float(zeroed[3]):.3f}; softmax(1.2, 0.5, 2.0, -inf): "
                   f"{float(masked[3])}")


def rnn_depends_on_order() -> tuple[bool, str]:
    """A recurrent state depends on the order of its inputs: h_1 of tanh(w_x x_t + w_h h_(t-1)) changes when x_0 and
    x_1 are swapped (w_x = 1, w_h = 1/2, x = (1, 2))."""
    def final(xs):
        h = 0.0
        for x in xs:
            h = math.tanh(x + h / 2)
        return h
    a, b = final([1, 2]), final([2, 1])
    return abs(a - b) > 1e-3, f"h_1(1, 2) = {a:.6f}, h_1(2, 1) = {b:.6f}"


@lru_cache(maxsize=1)
def pe_frequencies_decrease() -> tuple[bool, str]:
    """omega_i = 10000^(-2i/d) is a geometric progression with ratio 10000^(-2/d) < 1: higher i, lower frequency."""
    i, d = sp.symbols("i d", positive=True)
    omega = 10000 ** (-2 * i / d)
    ratio = sp.powsimp(omega.subs(i, i + 1) / omega, force=True)
    holds = ratio.free_symbols == {d} and all(ratio.subs(d, k) < 1 for k in (4, 5, 512))
    return holds, f"omega_(i+1) / omega_i = {ratio}, below 1 for every d > 0"


def cancelling_contributions() -> tuple[bool, str]:
    """Two uses of w_x can give contributions of opposite sign that cancel: identity cell, w_h = w_o = 1, x = (1, -1, 0)."""
    wx = sp.Symbol("w_x")
    xs, y = (1, -1, 0), 3
    h, uses = sp.Integer(0), []
    ws = sp.symbols("w_0:3")
    for w, x in zip(ws, xs):
        h = w * x + h
    loss = (h - y) ** 2 / 2
    at = {w: wx for w in ws}
    parts = [sp.diff(loss, w).subs(at).subs(wx, 1) for w in ws]
    total = sp.diff(loss.subs(at), wx).subs(wx, 1)
    holds = total == sum(parts) and parts[0] * parts[1] < 0 and abs(total) < max(abs(p) for p in parts)
    return holds, f"the contributions of the three uses {parts} sum to dL/dw_x = {total}"


def adam_step_ignores_clipping_bound() -> tuple[bool, str]:
    """After clipping to tau a plain gradient step is at most eta tau long, but Adam's first step (Kingma and Ba,
    Algorithm 1: m_1 = (1 - b1) g, v_1 = (1 - b2) g^2, bias-corrected) is eta g_i / (|g_i| + eps) per coordinate:
    about eta whatever the gradient's length, so about eta sqrt(n) for n coordinates."""
    g, eta, b1, b2, eps = sp.symbols("g eta beta_1 beta_2 epsilon", positive=True)
    m_hat = (1 - b1) * g / (1 - b1)
    v_hat = (1 - b2) * g ** 2 / (1 - b2)
    step = eta * m_hat / (sp.sqrt(v_hat) + eps)
    limit = step.subs(eps, 0)
    return limit == eta, (f"Adam's first step per coordinate {step}, -> {limit} as eps -> 0, for every g > 0: "
                          f"with 4 coordinates 2 eta, above eta tau whenever tau < 2")


@lru_cache(maxsize=1)
def torch_rnn_conventions() -> tuple[bool, str]:
    """torch.nn.RNN: tanh by default, ReLU on request; with batch_first=True the output is (B, T, H) but the final
    state stays (layers, B, H); a head on the output gives (B, T, C)."""
    torch = _torch()
    rnn = torch.nn.RNN(2, 3, batch_first=True, bias=False).double()
    relu = torch.nn.RNN(2, 3, nonlinearity="relu")
    head = torch.nn.Linear(3, 1, bias=False).double()
    with torch.no_grad():
        output, final = rnn(_rows(8, 2, 14).reshape(2, 4, 2))
        per_position = head(output)
    shapes = tuple(output.shape), tuple(final.shape), tuple(per_position.shape)
    holds = rnn.nonlinearity == "tanh" and relu.nonlinearity == "relu" and shapes == ((2, 4, 3), (1, 2, 3), (2, 4, 1))
    return holds, (f"default nonlinearity {rnn.nonlinearity!r}, 'relu' accepted; B = 2, T = 4, H = 3, C = 1: output "
                   f"{shapes[0]}, final {shapes[1]}, head(output) {shapes[2]}")


@lru_cache(maxsize=1)
def proverb_counts() -> tuple[bool, str]:
    """The course tokens: seven positions, six distinct types, nine vocabulary entries with the continuation; six
    rows of the bare prefix have a next-token target."""
    from seqgrad.numeric import course

    ids = course.token_ids()
    targets = list(zip(ids[:-1], ids[1:]))
    K = len(course.VOCAB.encode("a journey of thousand miles begins with single step"))
    holds = len(ids) == 7 and len(set(ids)) == 6 and K == 9 and len(targets) == 6
    return holds, f"{len(ids)} positions, {len(set(ids))} types, K = {K} with the continuation, {len(targets)} next-token targets"


@lru_cache(maxsize=None)
def _course(stage: str):
    from seqgrad.numeric import course

    return course.trace(stage)


def rounded_weights_sum() -> tuple[bool, str]:
    """Table 13: the weights of begins sum to 1 at full precision; rounded to three significant figures they do not."""
    A = _course("attention_on_H0")["head1.A"][6]
    rounded = sum(float(f"{float(a):.3g}") for a in A)
    full = float(A.sum())
    return abs(full - 1) < 1e-15 and abs(rounded - 1) > 1e-4, f"full precision {full:.17g}; the rounded weights sum to {rounded:.4f}"


def dot_is_not_cosine() -> tuple[bool, str]:
    """Doubling a key doubles the dot product but leaves the cosine unchanged."""
    q, k = sp.Matrix([1, 2, 0]), sp.Matrix([2, -1, 1])
    dot = lambda a, b: (a.T * b)[0]
    cos = lambda a, b: dot(a, b) / (a.norm() * b.norm())
    q2 = sp.Matrix([1, 1, 1])
    holds = dot(q2, 2 * k) == 2 * dot(q2, k) and sp.simplify(cos(q2, 2 * k) - cos(q2, k)) == 0 and dot(q, k) == 0
    return holds, (f"q = (1, 1, 1), k = (2, -1, 1): q.k = {dot(q2, k)}, q.(2k) = {dot(q2, 2 * k)}, the cosine "
                   f"{cos(q2, k)} both times")


@lru_cache(maxsize=1)
def masking_before_softmax() -> tuple[bool, str]:
    """Masking renormalizes the allowed weights; zeroing normalized weights leaves a sum below 1; a row of only
    -inf gives NaN."""
    torch = _torch()
    s = [0.0, math.log(2), math.log(3)]
    masked = _softmax(s[:2] + [float("-inf")])
    zeroed = _softmax(s) * torch.tensor([1.0, 1.0, 0.0], dtype=torch.float64)
    empty = _softmax([float("-inf")] * 3)
    holds = abs(float(masked.sum()) - 1) < 1e-15 and abs(float(zeroed.sum()) - 1) > 0.1 and bool(empty.isnan().all())
    return holds, (f"scores (0, log 2, log 3), source 2 excluded: masked weights {[round(float(a), 4) for a in masked]}, "
                   f"zeroed ones sum to {float(zeroed.sum()):.4f}; softmax of (-inf, -inf, -inf) = {empty.tolist()}")


def head2_more_uniform() -> tuple[bool, str]:
    """Table 17: the entropy of head 2's weights for begins is larger than head 1's (log 7 is the uniform one)."""
    record = _course("attention_on_H0")
    entropy = lambda p: float(-(p * p.log()).sum())
    h1, h2 = entropy(record["head1.A"][6]), entropy(record["head2.A"][6])
    return h1 < h2 <= math.log(7), f"entropy head 1 {h1:.4f}, head 2 {h2:.4f}, uniform log 7 = {math.log(7):.4f}"


@lru_cache(maxsize=1)
def layernorm_without_running_statistics() -> tuple[bool, str]:
    """torch.nn.LayerNorm keeps no running statistics: its output is the same in train and eval mode, and a row's
    output does not change when another row (position or example) changes."""
    torch = _torch()
    ln = torch.nn.LayerNorm(5).double()
    X = _rows(6, 5, 15).reshape(2, 3, 5)
    with torch.no_grad():
        train = ln.train()(X)
        evaluated = ln.eval()(X)
        Y = X.clone()
        Y[1, 2] += 7.0
        other = ln(Y)
    holds = not list(ln.buffers()) and _close(train, evaluated) and _close(other[0], train[0]) and _close(other[1, :2], train[1, :2])
    return holds, f"buffers {len(list(ln.buffers()))}; train = eval {_close(train, evaluated)}; other rows unchanged by a change of one row {_close(other[0], train[0])}"


@lru_cache(maxsize=1)
def position_wise_mlp() -> tuple[bool, str]:
    """The MLP acts on each row with the same weights: changing one row changes only that row's output."""
    from seqgrad.numeric.encoder import EncoderBlock

    torch = _torch()
    mlp = EncoderBlock.random(5, 1, 4, generator=torch.Generator().manual_seed(16)).mlp
    H = _rows(7, 5, 17)
    G = H.clone()
    G[2] += 1.5
    with torch.no_grad():
        a, b = mlp(H), mlp(G)
        alone = mlp(H[4:5])
    changed = [int(t) for t in range(7) if not _close(a[t], b[t])]
    holds = changed == [2] and _close(alone[0], a[4])
    return holds, f"changing row 2 changes the output rows {changed}; row 4 alone gives the same output {_close(alone[0], a[4])}"


@lru_cache(maxsize=1)
def cross_entropy_from_logits() -> tuple[bool, str]:
    """-log softmax computed naively overflows to inf for a far logit; torch's cross_entropy on the logits is exact."""
    torch = _torch()
    s = torch.tensor([[1000.0, 0.0]], dtype=torch.float64)
    naive = float(-torch.log(torch.exp(s) / torch.exp(s).sum())[0, 1])
    direct = float(torch.nn.functional.cross_entropy(s, torch.tensor([1])))
    return math.isnan(naive) or math.isinf(naive), f"logits (1000, 0), target 1: naive -log p = {naive}, cross_entropy = {direct}"


@lru_cache(maxsize=1)
def padded_query_row() -> tuple[bool, str]:
    """A padding mask on the sources leaves the padded query's own output row nonzero (it reads the real values),
    and with right padding every row keeps a source, causal or not."""
    from seqgrad.numeric.attention import attention_mask

    torch = _torch()
    attn = _attention(6, 2, 18)
    padding = torch.tensor([1, 1, 1, 0, 0])
    M = attention_mask(5, padding=padding)
    causal = attention_mask(5, causal=True, padding=padding)
    with torch.no_grad():
        out = attn(_rows(5, 6, 19), M)
    sources = [int(torch.isfinite(row).sum()) for row in causal]
    size = float(out[4].abs().max())
    return size > 1e-3 and min(sources) >= 1, f"padded query row 4: max |output| = {size:.3g}; allowed sources per causal row {sources}"


@lru_cache(maxsize=1)
def late_zero_weight() -> tuple[bool, str]:
    """The loss at an excluded (-inf) target is inf; a weight of 0 applied afterwards gives NaN, not 0."""
    torch = _torch()
    s = torch.tensor([[0.5, float("-inf")]], dtype=torch.float64)
    loss = torch.nn.functional.cross_entropy(s, torch.tensor([1]), reduction="none")
    late = float((loss * 0.0).sum())
    return math.isinf(float(loss[0])) and math.isnan(late), f"cross-entropy at the excluded target {float(loss[0])}; times 0: {late}"


@lru_cache(maxsize=1)
def torch_mask_conventions() -> tuple[bool, str]:
    """nn.MultiheadAttention: a True entry of a boolean mask excludes it; scaled_dot_product_attention: True takes part."""
    torch = _torch()
    X = _rows(3, 4, 20).unsqueeze(0)
    mask = torch.tensor([[False, True, True], [False, False, True], [False, False, False]])
    mha = torch.nn.MultiheadAttention(4, 1, batch_first=True).double()
    with torch.no_grad():
        _, weights = mha(X, X, X, attn_mask=mask)
        value = torch.eye(3, dtype=torch.float64).unsqueeze(0)
        sdpa = torch.nn.functional.scaled_dot_product_attention(X[..., :3], X[..., :3], value, attn_mask=mask)
    mha_excludes = bool((weights[0][mask] == 0).all())
    sdpa_excludes = bool((sdpa[0][mask] == 0).all())  # with V = I the output rows are the weights
    return mha_excludes and not sdpa_excludes, (f"the same boolean mask: MultiheadAttention gives weight 0 where True "
                                                f"{mha_excludes}, scaled_dot_product_attention {sdpa_excludes}")


@lru_cache(maxsize=1)
def vit_patches() -> tuple[bool, str]:
    """A 6 x 6 one-channel image cut into 3 x 3 patches: 4 patches of 9 numbers; a class token makes T = 5."""
    torch = _torch()
    image = torch.arange(36, dtype=torch.float64).reshape(1, 1, 6, 6)
    patches = torch.nn.functional.unfold(image, kernel_size=3, stride=3)[0].T  # one row per patch
    tokens = torch.cat([torch.zeros(1, 9, dtype=torch.float64), patches])
    return tuple(patches.shape) == (4, 9) and tokens.shape[0] == 5, f"patches {tuple(patches.shape)}, with the class token T = {tokens.shape[0]}"


def same_mean_other_order() -> tuple[bool, str]:
    """A rising and a falling sequence can share their mean: (1, 2, 3) and (3, 2, 1), whose next values by the
    trend would be 4 and 0."""
    rising, falling = [sp.Integer(v) for v in (1, 2, 3)], [sp.Integer(v) for v in (3, 2, 1)]
    mean = lambda xs: sum(xs) / len(xs)
    trend = lambda xs: 2 * xs[-1] - xs[-2]
    holds = mean(rising) == mean(falling) and trend(rising) != trend(falling)
    return holds, f"means {mean(rising)} and {mean(falling)}; linear continuations {trend(rising)} and {trend(falling)}"


def matrices_do_not_commute() -> tuple[bool, str]:
    """Two Jacobians of the form diag(s) W need not commute: J_2 J_1 != J_1 J_2."""
    J1 = sp.diag(1, sp.Rational(1, 2)) * sp.Matrix([[1, 1], [0, 1]])
    J2 = sp.diag(sp.Rational(1, 2), 1) * sp.Matrix([[1, 0], [1, 1]])
    return J2 * J1 != J1 * J2, f"J_2 J_1 = {(J2 * J1).tolist()}, J_1 J_2 = {(J1 * J2).tolist()}"


@lru_cache(maxsize=1)
def practicum_recurrent_parameters() -> tuple[bool, str]:
    """The practicum's recurrent variants as torch modules: an embedding of the 7 robot tokens in 16 features, an
    RNN of width 32 or a GRU of width 17, and a linear head back to the 7 tokens have 1,943 and 2,023 parameters."""
    torch = _torch()
    count = lambda *modules: sum(p.numel() for m in modules for p in m.parameters())
    embedding, head = torch.nn.Embedding(7, 16), lambda H: torch.nn.Linear(H, 7)
    rnn = count(embedding, torch.nn.RNN(16, 32), head(32))
    gru = count(embedding, torch.nn.GRU(16, 17), head(17))
    return (rnn, gru) == (1943, 2023), f"RNN {rnn:,}, GRU {gru:,} parameters"


def practicum_prose_and_table() -> tuple[bool, str]:
    """Week 06, l.1298 against its own Table 34 (the values as printed, l.1294-1296: mean and sample deviation over
    three seeds at delays 8, 16, 32): every variant is perfect at delay 8; at 16 the RNN is below half, the GRU
    about four fifths and the Transformer perfect for every seed; at 32 the RNN's spread is 0 at a low mean."""
    table = {"RNN": ((1, 0), (0.44, 0.126), (0.257, 0)), "GRU": ((1, 0), (0.814, 0.116), (0.322, 0.102)),
             "Transformer": ((1, 0), (1, 0), (1, 0))}
    delay8 = all(row[0] == (1, 0) for row in table.values())
    delay16 = table["RNN"][1][0] < 0.5 and abs(table["GRU"][1][0] - 0.8) < 0.05 and table["Transformer"][1] == (1, 0)
    delay32 = table["RNN"][2][1] == 0 and table["RNN"][2][0] < 0.5 and table["Transformer"][2] == (1, 0)
    return delay8 and delay16 and delay32, (f"delay 8 all 1 +- 0: {delay8}; delay 16 RNN {table['RNN'][1][0]}, GRU "
                                             f"{table['GRU'][1][0]}, Transformer 1 +- 0: {delay16}; delay 32 RNN "
                                             f"{table['RNN'][2][0]} +- 0: {delay32}")


def vocabulary_order_is_arbitrary() -> tuple[bool, str]:
    """Reordering the vocabulary (the rows of E_vocab and the ids with them) selects the same embedding rows: an id
    is an index, and the lookup is the product of a one-hot row with the table."""
    from seqgrad.numeric import course

    torch = _torch()
    E = torch.tensor(course.E_VOCAB, dtype=torch.float64)
    ids = torch.tensor(course.token_ids())
    order = torch.tensor([8, 3, 0, 6, 1, 7, 2, 5, 4])          # new id of each old id
    E_new = torch.empty_like(E)
    E_new[order] = E
    same = bool(torch.equal(E_new[order[ids]], E[ids]))
    one_hot = torch.nn.functional.one_hot(ids, len(E)).to(torch.float64) @ E
    return same and bool(torch.equal(one_hot, E[ids])), (f"ids renumbered by a permutation of the 9 entries: the "
                                                          f"same 7 rows {same}; one-hot times E_vocab is the lookup")
