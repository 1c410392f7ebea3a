"""The unrolled BPTT of derive.bptt: the double sum over t and tau with the ordered product of Jacobians, as the
notes print it, evaluated at T = 4 entry by entry and compared with torch autograd in float64."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from seqgrad.derive import bptt, builtin_cells
from seqgrad.derive.latex_settings import DEFAULT
from seqgrad.derive.step_sum import T, t
from seqgrad.errors import SeqgradValueError

torch = pytest.importorskip("torch")

STEPS, D, H = 4, 2, 3


def _derivation():
    return builtin_cells.rnn_cell(sizes={"D": D, "H": H, "C": 1}, bias=True, on="every").general()


def _trajectory(seed=0):
    rng = np.random.default_rng(seed)
    p = {"w_x": rng.normal(size=(H, D)), "w_h": 0.8 * rng.normal(size=(H, H)), "b_h": rng.normal(size=H),
         "w_o": rng.normal(size=(1, H)), "b_o": rng.normal(size=1)}
    x, y = rng.normal(size=(STEPS, D)), rng.normal(size=(STEPS, 1))
    leaves = {k: torch.tensor(v, requires_grad=True) for k, v in p.items()}
    h, hs, es, loss = torch.zeros(H, dtype=torch.float64), [], [], 0
    for k in range(STEPS):
        h = torch.tanh(torch.tensor(x[k]) @ leaves["w_x"].T + h @ leaves["w_h"].T + leaves["b_h"])
        e = h @ leaves["w_o"].T + leaves["b_o"] - torch.tensor(y[k])
        hs.append(h.detach().numpy()), es.append(e.detach().numpy())
        loss = loss + 0.5 * (e ** 2).sum()
    loss.backward()
    values = {("h", -1): np.zeros(H)} | {("h", k): hs[k] for k in range(STEPS)}
    values |= {("x", k): x[k] for k in range(STEPS)} | {("e", k): es[k] for k in range(STEPS)}
    return p, values, {k: v.grad.numpy() for k, v in leaves.items()}


def _row(v):
    return sp.ImmutableMatrix(np.atleast_2d(v).tolist())


def _at(gd, expr, steps: dict, p, values):
    """``expr`` with its step symbols at the steps ``steps`` ({t: 2, tau: 0}) and the parameters numeric."""
    mapping = {gd.params[k]: sp.ImmutableMatrix(np.atleast_2d(v).T.tolist() if k in ("b_h", "b_o") else np.atleast_2d(v).tolist())
               for k, v in p.items()}
    mapping = {s: (m.T if m.shape[1] == 1 and s.shape[0] == 1 else m) for s, m in mapping.items()}
    for key, s in gd.sym.cache.items():
        if key[0] == "seq" and key[1] in ("h", "x", "e"):
            i = sp.sympify(key[2]).subs(steps)
            if i.is_Integer and (key[1], int(i)) in values:
                mapping[s] = _row(values[(key[1], int(i))])
    return expr.xreplace(mapping)


def _evaluate(u, name, p, values, latest_first=True):
    """The closed form of dL/d``name``: sum over t, tau <= t of the printed term, the path Jacobian the product
    J_t J_{t-1} ... J_{tau+1} of the derivation's transition at those steps (the identity when t = tau)."""
    inner = u.gradient(name).term
    term, (index, low, high) = inner.args[0], inner.args[1]
    assert index == bptt.tau and low == 0 and high == t
    J = {j: np.array(sp.Matrix(_at(u.gd, u.gd.transition(), {t: j}, p, values).doit()), dtype=float) for j in range(STEPS)}
    total = 0
    for k in range(STEPS):
        for m in range(k + 1):
            product = np.eye(H)
            for j in (range(k, m, -1) if latest_first else range(m + 1, k + 1)):  # J_k J_{k-1} ... J_{m+1}
                product = product @ J[j]
            value = _at(u.gd, term.xreplace({u.path: sp.ImmutableMatrix(product.tolist())}), {t: k, bptt.tau: m}, p, values)
            total = total + np.array(sp.Matrix(value.doit()), dtype=float)
    return total


@pytest.mark.parametrize("name", ["w_h", "w_x", "b_h"])
def test_the_double_sum_matches_torch_autograd(name):
    u = bptt.Unrolled(_derivation())
    p, values, grads = _trajectory()
    closed = _evaluate(u, name, p, values)
    expected = grads[name].reshape(closed.shape)
    assert np.max(np.abs(closed - expected)) < 1e-12, (closed, expected)


def test_the_wrong_order_of_the_product_is_caught():
    """The check can fail: with the Jacobians multiplied earliest first the sum disagrees with autograd."""
    u = bptt.Unrolled(_derivation())
    p, values, grads = _trajectory()
    wrong = _evaluate(u, "w_h", p, values, latest_first=False)
    assert np.max(np.abs(wrong - grads["w_h"])) > 1e-3


def test_the_induction_step_is_the_derivations_recursion():
    u = bptt.Unrolled(_derivation())
    assert u.one_step_holds()


def test_the_rows_print_the_textbook_product_and_sums():
    u = bptt.Unrolled(_derivation())
    tex = [DEFAULT.latex(lhs) + " = " + DEFAULT.latex(rhs) for lhs, rhs in u.rows(("w_h",))]
    assert tex[0] == (r"\frac{\partial \mathbf{h}_{t}}{\partial \mathbf{h}_{\tau}} = {J}_{t} {J}_{t - 1} \cdots "
                      r"{J}_{\tau + 1}")
    assert tex[1] == r"{J}_{t} = \operatorname{diag}(1 - \mathbf{h}_{t}^{2}) \mathbf{W}_{h}"
    assert tex[2].startswith(r"\mathbf{g}^{h}_{\tau} = \sum_{t=\tau}^{T - 1} \mathbf{e}_{t} \mathbf{W}_{o} \frac{")
    assert tex[3].startswith(r"\frac{\partial \mathcal{L}}{\partial \mathbf{W}_{h}} = \sum_{t=0}^{T - 1} \sum_{\tau=0}^{t} ")
    assert r"\right)^{\top} \mathbf{h}_{\tau-1}" in tex[3] and "tau" not in tex[3].replace(r"\tau", "")


def test_a_cell_it_does_not_cover_is_one_clear_error():
    with pytest.raises(SeqgradValueError, match="on='every'"):
        bptt.Unrolled(builtin_cells.rnn_cell(sizes={"D": 2, "H": 3, "C": 1}).general())
    with pytest.raises(SeqgradValueError, match="one state"):
        bptt.Unrolled(builtin_cells.lstm_cell(on="every").general())
    with pytest.raises(SeqgradValueError, match="used at every step"):
        bptt.Unrolled(_derivation()).gradient("w_o")
