"""Checks of group ``claims``: statements of the texts that need a computation, not a printed number.

Each was checked only inside the test suite before; as registered checks the
report shows them with the text's verdict.  All compare with values derived
here (the texts state the fact, not the numbers).

* parameter counts of derive.counting against the parameters of torch modules (seed 001 l.77, l.150);
* a causal mask in the last layer does not stop leakage through an earlier unmasked block (seed 000 Table 35, L1328);
* an entry of W_h above 1 is not a criterion for explosion: nilpotent W_h (seed 000 L336);
* the mean over valid targets differs from the mean of per-sequence means, and masked pooling ignores padding
  (seed 000 L1241, Table 35);
* a small enough gradient step lowers the loss and a large one can raise it (seed 000 L240);
* after clipping at tau, a plain gradient step has length at most eta tau, an Adam step need not (seed 000 L360).
"""

from __future__ import annotations

from ..registry import check
from ..tolerance import Outcome

GROUP = "claims"
DERIVED = "derived here (not printed in the text)"


def _fact(holds: bool, value: float, detail: str, reason: str) -> Outcome:
    verdict = "verified" if holds else "contradicted"
    return Outcome(0.0 if holds else float("inf"), 0.0 if holds else float("inf"), holds, f"{verdict}: {detail}",
                   textbook=verdict, reason=reason if holds else f"not so: {detail}", attribution=DERIVED)


@check("claims.fact_parameter_counts_vs_torch", source="lesson §2.10:77", group=GROUP,
       description="derive.counting's attention and encoder-layer counts equal the parameters of torch modules")
def parameter_counts(ctx) -> Outcome:
    import torch

    from seqgrad.derive import counting

    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    rows = []
    for d, h, d_ff, bias in [(8, 2, 32, True), (12, 3, 20, False), (16, 4, 64, True)]:
        rows.append((int(counting.attention_params(d, h, bias=bias)), count(torch.nn.MultiheadAttention(d, h, bias=bias))))
        layer = torch.nn.TransformerEncoderLayer(d, h, d_ff, dropout=0.0, bias=bias)
        rows.append((int(counting.encoder_layer_params(d, h, d_ff, bias=bias)), count(layer)))
    holds = all(a == b for a, b in rows)
    return _fact(holds, 0.0, f"{len(rows)} counts, formula vs torch: {rows}",
                 "the parameter-count formulas equal torch.nn.MultiheadAttention and TransformerEncoderLayer")


@check("claims.fact_leakage_through_earlier_block", source="week06 §7:1328", group=GROUP,
       description="a causal mask in the last layer does not stop future leakage through an earlier unmasked block")
def leakage(ctx) -> Outcome:
    import torch

    from seqgrad.numeric.encoder import Encoder

    enc = Encoder.random(9, 6, 2, 8, n_blocks=2, seed=5)
    H = torch.randn(7, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(1))

    def sees_future(flags) -> float:  # how much output row 5 depends on input row 6
        J = torch.autograd.functional.jacobian(lambda h: enc.encode(h, causal=flags)[5], H)
        return float(J[:, 6].abs().max())

    both, last_only = sees_future([True, True]), sees_future([False, True])
    holds = both == 0.0 and last_only > 1e-6
    return _fact(holds, last_only, f"|d out_5 / d in_6| = {both:.1e} with both blocks causal, {last_only:.2e} with "
                                   "only the last", "position 5 sees position 6 through block 0 when only the last block is causal")


@check("claims.fact_nilpotent_w_h", source="week06 §4:336", group=GROUP,
       description="W_h = [[0, 5], [0, 0]] has an entry above 1, yet its Jacobian products vanish after one step")
def nilpotent(ctx) -> Outcome:
    import numpy as np

    from seqgrad.numeric import paths

    w = paths.RNNWeights(np.eye(2), np.array([[0.0, 5.0], [0.0, 0.0]]), activation="identity")
    norms = paths.jacobian_product_norms(w, np.ones((6, 2))).measured
    holds = abs(norms[0] - 5.0) < 1e-12 and bool(np.all(norms[1:] == 0))
    return _fact(holds, float(norms[-1]), f"||J_q ... J_(s+1)||_2 over 1..{len(norms)} steps: {np.round(norms, 6).tolist()}",
                 "an entry of W_h above 1 is not a criterion for explosion: the nilpotent W_h's products are 0 after two steps")


@check("claims.fact_pooled_vs_per_sequence_mean", source="week06 §2.10:1241", group=GROUP,
       description="the loss over valid targets is not the mean of per-sequence means; masked pooling ignores padding")
def pooled_mean(ctx) -> Outcome:
    import torch

    from seqgrad.numeric.heads import AffineHead, masked_mean_pool, valid_target_loss

    H = torch.randn(2, 5, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    m = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    pooled = masked_mean_pool(H, m)
    H2 = H.clone()
    H2[0, 3:] = 1e6  # padded rows changed: the pooled vector must not move
    ignores_padding = torch.allclose(masked_mean_pool(H2, m), pooled) and torch.allclose(pooled[0], H[0, :3].mean(0))
    with torch.no_grad():
        logits = AffineHead.random(9, 4, seed=1)(H)
    y = torch.randint(0, 9, (2, 5), generator=torch.Generator().manual_seed(3))
    pooled_loss = valid_target_loss(logits, y, m)
    per_sequence = torch.stack([torch.nn.functional.cross_entropy(logits[b][m[b].bool()], y[b][m[b].bool()])
                                for b in range(2)]).mean()
    gap = float(abs(pooled_loss - per_sequence))
    holds = ignores_padding and gap > 1e-6
    return _fact(holds, gap, f"masked pooling ignores padding: {ignores_padding}; pooled loss {float(pooled_loss):.6f} vs "
                             f"mean of per-sequence means {float(per_sequence):.6f}",
                 "the two means weight tokens differently (3 and 5 valid targets); padding never enters the pooled vector")


def _scalar_rnn_loss(theta, x, y):
    import torch

    w_x, w_h, w_o = theta
    h = torch.zeros((), dtype=torch.float64)  # h_{-1} = 0: the states are recomputed from scratch
    for x_t in x:
        h = torch.tanh(w_x * x_t + w_h * h)
    return 0.5 * (w_o * h - y) ** 2


@check("claims.fact_step_size", source="week06 §2.1:240", group=GROUP,
       description="a small enough step against a nonzero gradient lowers the loss; a large one can raise it")
def step_size(ctx) -> Outcome:
    import torch

    x, y = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64), torch.tensor(0.7, dtype=torch.float64)
    theta = torch.tensor([0.8, 0.5, 1.5], dtype=torch.float64, requires_grad=True)
    loss = _scalar_rnn_loss(theta, x, y)
    (grad,) = torch.autograd.grad(loss, theta)
    loss = float(loss.detach())
    with torch.no_grad():
        after = {eta: float(_scalar_rnn_loss(theta - eta * grad, x, y)) for eta in (1e-3, 10.0)}
    holds = float(grad.norm()) > 0 and after[1e-3] < loss < after[10.0]
    return _fact(holds, after[10.0] - loss, f"loss {loss:.6f}; after eta = 0.001: {after[1e-3]:.6f}; "
                                                   f"after eta = 10: {after[10.0]:.6f}",
                 "the loss falls after a small step and rises after a large one (states recomputed from h_-1 = 0)")


def adam_first_step(g, lr: float):
    """The first Adam update for gradient ``g`` from zero moments (:class:`numeric.optim.Adam`, the update of
    torch.optim.Adam): the moments bias-correct to g and g², so the step is -lr g / (|g| + eps)."""
    import torch

    from seqgrad.numeric.optim import Adam

    theta = torch.zeros_like(g, requires_grad=True)
    theta.grad = g.clone()
    Adam([theta], lr).step()
    return theta.detach()


@check("claims.fact_clipped_step_bound", source="week06 §2.6:360", group=GROUP,
       description="after clipping at tau a plain gradient step has length <= eta tau; an Adam step need not")
def clipped_step(ctx) -> Outcome:
    import torch

    from seqgrad.numeric.clipping import clip_global_norm

    eta, tau = 0.1, 0.01
    g = torch.linspace(-3.0, 5.0, 50, dtype=torch.float64)
    clipped = clip_global_norm([g], tau).grads[0]
    sgd_step = float((eta * clipped).norm())
    adam_step = float(adam_first_step(clipped, eta).norm())
    holds = sgd_step <= eta * tau * (1 + 1e-12) and adam_step > eta * tau
    return _fact(holds, sgd_step, f"eta tau = {eta * tau:g}; SGD step {sgd_step:.6g}; Adam step {adam_step:.6g}",
                 "the clipped SGD step is at most eta tau long; Adam's first step (about eta per coordinate) is not")
