"""The unrolled BPTT of :mod:`derive.bptt` evaluated as printed: the double sum over ``t`` and ``tau <= t`` of the
displayed term, its path Jacobian the ordered product ``J_t J_{t-1} ... J_{tau+1}`` of the derivation's own
transition at those steps, beside torch autograd on the same vector RNN (biases, a loss at every step), float64."""

from __future__ import annotations

import numpy as np
import sympy as sp

from seqgrad.derive import bptt
from seqgrad.derive.step_sum import t

__all__ = ["autograd_case", "evaluate"]


def autograd_case(rng: np.random.Generator, steps: int, d_x: int, d_h: int):
    """Random parameters (named as the cell's), the trajectory ``{("h", k): h_k, ("x", k): ..., ("e", k): ...}`` and
    torch autograd's gradients of ``L = sum_t ||yhat_t - y_t||^2 / 2``."""
    import torch

    p = {"w_x": rng.normal(size=(d_h, d_x)), "w_h": 0.8 * rng.normal(size=(d_h, d_h)), "b_h": rng.normal(size=d_h),
         "w_o": rng.normal(size=(1, d_h)), "b_o": rng.normal(size=1)}
    x, y = rng.normal(size=(steps, d_x)), rng.normal(size=(steps, 1))
    leaves = {k: torch.tensor(v, requires_grad=True) for k, v in p.items()}
    h, values, loss = torch.zeros(d_h, dtype=torch.float64), {("h", -1): np.zeros(d_h)}, 0
    for k in range(steps):
        h = torch.tanh(torch.tensor(x[k]) @ leaves["w_x"].T + h @ leaves["w_h"].T + leaves["b_h"])
        e = h @ leaves["w_o"].T + leaves["b_o"] - torch.tensor(y[k])
        values.update({("h", k): h.detach().numpy(), ("x", k): x[k], ("e", k): e.detach().numpy()})
        loss = loss + 0.5 * (e ** 2).sum()
    loss.backward()
    return p, values, {k: v.grad.numpy() for k, v in leaves.items()}


def _at(gd, expr, steps: dict, p, values):
    """``expr`` with its step symbols at ``steps`` (``{t: 2, tau: 0}``) and its parameters numeric (rows)."""
    mapping = {gd.params[k]: sp.ImmutableMatrix(np.atleast_2d(v).tolist()) for k, v in p.items()}
    expr = expr.subs(steps)  # the step values are nodes (derive.sequence): substitute the steps, then the values
    for node in expr.atoms(sp.MatrixSymbol, sp.Symbol):
        base, index = getattr(node, "base", None), getattr(node, "index", None)
        if isinstance(base, str) and index is not None and index.is_Integer and (base, int(index)) in values:
            mapping[node] = sp.ImmutableMatrix(np.atleast_2d(values[(base, int(index))]).tolist())
    return expr.xreplace(mapping)


def _numeric(expr) -> np.ndarray:
    return np.array(sp.Matrix(expr.doit()), dtype=float)


def evaluate(u: "bptt.Unrolled", name: str, p, values, steps: int, latest_first: bool = True) -> np.ndarray:
    """dL/d``name`` from the printed double sum of ``u`` (``latest_first=False``: the product in the wrong order,
    to show the comparison can fail)."""
    inner = u.gradient(name).term
    term, (index, low, high) = inner.args[0], inner.args[1]
    assert index == bptt.tau and low == 0 and high == t
    J = {j: _numeric(_at(u.gd, u.gd.transition(), {t: j}, p, values)) for j in range(steps)}
    n = next(iter(J.values())).shape[0]
    total = 0
    for k in range(steps):
        for m in range(k + 1):
            product = np.eye(n)
            for j in (range(k, m, -1) if latest_first else range(m + 1, k + 1)):  # J_k J_{k-1} ... J_{m+1}
                product = product @ J[j]
            value = term.xreplace({u.path: sp.ImmutableMatrix(product.tolist())})
            total = total + _numeric(_at(u.gd, value, {t: k, bptt.tau: m}, p, values))
    return total
