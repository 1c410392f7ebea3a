"""The unrolled BPTT of :mod:`derive.bptt` evaluated as printed: the double sum over ``t`` and ``tau <= t`` of the
displayed term, its path Jacobian the ordered product ``J_t J_{t-1} ... J_{tau+1}`` of the derivation's own
transition at those steps, beside torch autograd on the same vector RNN (biases, a loss at every step), float64."""

from __future__ import annotations

import numpy as np
import sympy as sp

from seqgrad.derive import bptt
from seqgrad.derive.step_sum import t

from .lambdify import lambdify

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


def _compiled(expr, gd, extra=()):
    """``expr`` compiled once (:func:`crosscheck.lambdify.lambdify`, the printed expression as it is) over its step
    values, the parameters and ``extra`` (the path Jacobian); returns (function, the atoms in argument order)."""
    params = {v: k for k, v in gd.params.items()}
    atoms = sorted((a for a in expr.atoms(sp.MatrixSymbol) if a not in extra), key=str) + list(extra)
    unknown = [a for a in atoms if a not in params and a not in extra and not isinstance(getattr(a, "base", None), str)]
    assert not unknown, unknown  # every atom is a step value, a parameter or the path
    args = [sp.MatrixSymbol(f"a{i}", *a.shape) for i, a in enumerate(atoms)]
    return lambdify(None, [expr.xreplace(dict(zip(atoms, args)))], args, "numpy"), atoms


def _arguments(atoms, gd, steps: dict, p, values, extra: dict | None = None) -> list:
    """The values of ``atoms`` at ``steps`` (``{t: 2, tau: 0}``): a step value from the trajectory, a parameter
    from ``p`` (rows), ``extra`` as given."""
    params = {v: k for k, v in gd.params.items()}
    out = []
    for a in atoms:
        if extra and a in extra:
            out.append(extra[a])
        elif a in params:
            out.append(np.atleast_2d(p[params[a]]))
        else:
            out.append(np.atleast_2d(values[(a.base, int(a.index.subs(steps)))]))
    return out


def evaluate(u: "bptt.Unrolled", name: str, p, values, steps: int, latest_first: bool = True) -> np.ndarray:
    """dL/d``name`` from the printed double sum of ``u`` (``latest_first=False``: the product in the wrong order,
    to show the comparison can fail): the summed term and the transition each compiled once, then evaluated at
    every (t, tau <= t)."""
    inner = u.gradient(name).term
    term, (index, low, high) = inner.args[0], inner.args[1]
    assert index == bptt.tau and low == 0 and high == t
    transition, j_atoms = _compiled(u.gd.transition(), u.gd)
    J = {j: np.asarray(transition(*_arguments(j_atoms, u.gd, {t: j}, p, values))[0]) for j in range(steps)}
    summand, atoms = _compiled(term, u.gd, extra=(u.path,))
    n = next(iter(J.values())).shape[0]
    total = 0
    for k in range(steps):
        for m in range(k + 1):
            product = np.eye(n)
            for j in (range(k, m, -1) if latest_first else range(m + 1, k + 1)):  # J_k J_{k-1} ... J_{m+1}
                product = product @ J[j]
            args = _arguments(atoms, u.gd, {t: k, bptt.tau: m}, p, values, extra={u.path: product})
            total = total + np.asarray(summand(*args)[0])
    return total
