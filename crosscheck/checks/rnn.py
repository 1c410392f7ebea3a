"""Checks of the unrolled RNN (seed000 lines 63-460): symbolic proofs, torch autograd, the seeded example."""

from __future__ import annotations

import numpy as np
import sympy as sp

from seqgrad.derive import rnn
from seqgrad.numeric import recurrent
from seqgrad import sigfig

from ..cells import RNNFunction
from ..lambdify import lambdify
from ..registry import Context, check
from ..tolerance import Outcome, combine, compare

SRC = "week06"
SCALAR_ACTIVATIONS = ("tanh", "sigmoid", "relu", "identity")


def random_case(net, rng: np.random.Generator, batch: int = 4) -> tuple[dict, np.ndarray, np.ndarray]:
    """Random parameters (named as ``net.parameters``), inputs and targets for ``net``."""
    T = net.steps
    if net.vector:
        D, H, C = net.shape
        shapes = {"W_x": (H, D), "W_h": (H, H), "W_o": (C, H), "b_h": (H,), "b_o": (C,)}
        X = rng.normal(size=(batch, T, D))
        y = rng.normal(size=(batch, C) if net.loss == "final" else (batch, T, C))
    else:
        shapes = {name: () for name in ("w_x", "w_h", "w_o", "b_h", "b_o")}
        X = rng.normal(size=(batch, T))
        y = rng.normal(size=(batch,) if net.loss == "final" else (batch, T))
    params = {name: rng.normal(size=shapes[name]) * (0.6 if name in ("w_h", "W_h") else 1.0) for name in net.parameters}
    return params, X, y


def reference(net, params: dict, X, y, device) -> dict:
    """torch autograd on the same model (numeric.recurrent), with the net's parameter names."""
    if net.vector:
        p = recurrent.Params(**params)
        return recurrent.autograd(p, X, y, net.activation.name, net.loss, net.reduction, device=device)
    vec = {name.replace("w_", "W_"): np.reshape(v, (1, 1) if name.startswith("w_") else (1,)) for name, v in params.items()}
    out = recurrent.autograd(recurrent.Params(**vec), X[..., None], y[..., None], net.activation.name, net.loss,
                             net.reduction, device=device)
    result = {name: float(np.ravel(out[name.replace("w_", "W_")])[0]) for name in params}
    result["X"], result["L"] = out["X"][..., 0], out["L"]
    return result


def against_autograd(net, ctx: Context, trials: int = 3, batch: int = 4) -> Outcome:
    """Every derived gradient (parameters and inputs) and the loss, lambdified to torch on ``ctx.dev`` (the run's
    device, supplied by the registry to a check with ``needs_torch=True``; None: the CPU), against torch
    autograd at random float64 points."""
    f = RNNFunction(net, "torch", device=ctx.dev)
    rng = ctx.rng()
    outcomes = []
    for _ in range(trials):
        params, X, y = random_case(net, rng, batch)
        ours = f(params, X, y)
        ref = reference(net, params, X, y, ctx.dev)
        for key, value in ref.items():
            mine = ours[key]
            mine = mine.detach().cpu().numpy() if hasattr(mine, "detach") else np.asarray(mine)
            outcomes.append(ctx.compare(mine.reshape(np.shape(value)), value,
                                    detail=f"{key}"))
    worst = max(outcomes, key=lambda o: o.max_abs_error)
    return combine(outcomes, detail=f"{net!r}: {len(outcomes)} arrays, worst {worst.detail}")


@check("rnn.scalar.sum_over_uses", source="week06 §BPTT:154-176 (boxed gradients, dL/dx_0)", group="recurrent")
def scalar_sum_over_uses(ctx: Context) -> Outcome:
    """The sums over uses equal sympy.diff of the fully nested loss (T = 3, generic phi and tanh)."""
    failures = []
    for act in ("phi", "tanh"):
        net = rnn.unroll(steps=3, activation=act)
        L = net.loss_closed_form()
        for name in ["w_x", "w_h", "w_o", "x_0", "x_1", "x_2"]:
            if sp.expand(net.grad(name, expand="all") - sp.diff(L, net.symbol(name))) != 0:
                failures.append(f"{act}:{name}")
    return Outcome.exact(not failures, "all equal" if not failures else "differ: " + ", ".join(failures))


@check("rnn.scalar.table3", source="week06 §BPTT:122-144 (Table 3, closed forms)", group="recurrent")
def scalar_table3(ctx: Context) -> Outcome:
    """Table 3's backward rows are the chain rule: g_t^h and g_t^z equal dL/dh_t, dL/dz_t of the nested graph."""
    net = rnn.unroll(steps=3, activation="phi")
    # differentiate L with respect to an intermediate: cut the graph there with a fresh symbol
    ok = True
    for t in range(3):
        for kind, node in (("h", net.h[t]), ("z", net.z[t])):
            cut = sp.Symbol(f"cut_{kind}{t}")
            L_cut = net.program.evaluate(net.L, {node: cut})
            lhs = sp.diff(L_cut, cut).xreplace({cut: net.program.expand(node, kinds=None)})
            derived = net.program.expand(net.sensitivity(kind, t), kinds=None)
            ok &= sp.expand(lhs - derived) == 0
    return Outcome.exact(ok, "g_t^h, g_t^z for t = 0, 1, 2 equal the chain rule")


def _autograd_check(name, source, nets):
    @check(name, needs_torch=True, source=source, group="recurrent")
    def run(ctx: Context) -> Outcome:
        return combine([against_autograd(net(), ctx) for net in nets])

    run.__doc__ = f"Derived gradients vs torch autograd: {name}"
    return run


_autograd_check("rnn.scalar.autograd", "week06 §RNN:63-242 (scalar RNN, every activation)", [
    (lambda a=a, loss=loss, red=red, bias=bias: rnn.unroll(steps=6, activation=a, loss=loss, reduction=red, bias=bias))
    for a in SCALAR_ACTIVATIONS for (loss, red, bias) in (("final", "sum", False), ("every", "mean", True))
])
_autograd_check("rnn.vector.autograd", "week06 §Vector:264-308 (vector RNN, outer products, biases, dL/dx_t)", [
    (lambda a=a: rnn.unroll(steps=5, activation=a, inputs=3, hidden=4, outputs=2, bias=True)) for a in SCALAR_ACTIVATIONS
])
_autograd_check("rnn.vector.per_position", "week06 §Vector:310-324 (per-position loss, sum and mean)", [
    (lambda red=red: rnn.unroll(steps=5, activation="tanh", inputs=2, hidden=3, outputs=2, bias=True, loss="every",
                                reduction=red)) for red in ("sum", "mean")
])


@check("rnn.vector.sum_over_uses", source="week06 §Vector:290-308 (vector BPTT, exact)", group="recurrent")
def vector_exact(ctx: Context) -> Outcome:
    """The vector gradients equal sympy.diff of the explicit loss entry by entry (T = 2, D = H = 2, C = 1, tanh, biases)."""
    net = rnn.unroll(steps=2, activation="tanh", inputs=2, hidden=2, outputs=1, bias=True)
    values = {leaf: sp.Matrix(*leaf.shape, lambda i, j, n=leaf.name: sp.Symbol(f"{n}[{i},{j}]"))
              for leaf in net.program.leaves()}
    wrt = [symbol for symbol in net.gradients if symbol in values]
    L, *grads = net.program.evaluate([net.L] + [net.gradients[symbol] for symbol in wrt], values)  # one forward pass
    bad = 0
    for symbol, derived in zip(wrt, grads):
        for i in range(symbol.shape[0]):
            for j in range(symbol.shape[1]):
                bad += sp.expand(derived[i, j] - sp.diff(L, values[symbol][i, j])) != 0
    return Outcome.exact(bad == 0, f"{bad} entries differ" if bad else "every entry equal")


@check("rnn.manual_bptt", needs_torch=True, source="week06 §Vector:290-324 (numpy BPTT)", group="recurrent")
def manual_bptt(ctx: Context) -> Outcome:
    """numeric.recurrent's numpy BPTT (the text's formulas) against torch autograd."""
    rng = ctx.rng()
    outcomes = []
    for loss, red in (("final", "sum"), ("every", "mean")):
        net = rnn.unroll(steps=6, activation="tanh", inputs=3, hidden=4, outputs=2, bias=True, loss=loss, reduction=red)
        params, X, y = random_case(net, rng)
        p = recurrent.Params(**params)
        mine = recurrent.bptt(p, X, y, "tanh", loss, red)
        ref = recurrent.autograd(p, X, y, "tanh", loss, red, device=ctx.dev)
        outcomes += [ctx.compare(mine[k], ref[k], detail=k) for k in ref]
    return combine(outcomes, detail="W_x, W_h, W_o, b_h, b_o, X and L")


@check("rnn.seeded_example", needs_torch=True, source="week06 §PyTorch:413-448 (nn.RNN + nn.Linear, seed 6)", group="recurrent")
def seeded_example(ctx: Context) -> Outcome:
    """The text's printed h_0..h_2, prediction and loss (3 significant figures) and the derived gradients
    at the seeded weights against autograd."""
    ex = recurrent.seeded_example(device=ctx.dev)
    printed = {"h_0": [0.0128, 0.122], "h_1": [0.00930, 0.0915], "h_2": [0.0384, 0.314]}
    misses = [f"{k}[{i}]" for k, row in printed.items() for i, v in enumerate(row)
              if not sigfig.matches(ex["h"][int(k[2])][i], v)]
    misses += [k for k, v in (("prediction", -0.144), ("loss", 0.208)) if not sigfig.matches(ex[k], v)]
    net = rnn.unroll(steps=3, activation="tanh", inputs=2, hidden=2, outputs=1)
    p = ex["params"]
    ours = RNNFunction(net, "torch", device=ctx.dev)({"W_x": p.W_x, "W_h": p.W_h, "W_o": p.W_o}, ex["X"], ex["y"])
    outcomes = [compare(ours[k].detach().cpu().numpy(), ex[f"grad_{k}"], dtype="float32", device=ctx.device, detail=k)
                for k in ("W_x", "W_h", "W_o")]
    outcomes.append(compare(float(ours["L"]), ex["loss"], dtype="float32", device=ctx.device, detail="L"))
    printed_ok = Outcome(0.0, 0.0, not misses, "printed numbers " + ("reproduced" if not misses else "differ: " + ", ".join(misses)))
    return combine(outcomes + [printed_ok], detail=printed_ok.detail + "; gradients vs autograd (the module runs in float32)")


@check("rnn.bptt_closed_form", needs_torch=True, source="week06 §Paths, week06 §Jacobian (long paths, J_t)",
       group="recurrent")
def bptt_closed_form(ctx: Context) -> Outcome:
    """dL/dW_h, dL/dW_x, dL/db_h as the notes print them, a sum over t and tau <= t with the ordered product
    J_t ... J_{tau+1} (derive.bptt), evaluated at T = 4 against torch autograd (vector RNN, biases, a loss at every step)."""
    from seqgrad.derive import bptt, builtin_cells

    from ..bptt_eval import autograd_case, evaluate

    u = bptt.Unrolled(builtin_cells.rnn_cell(sizes={"D": 2, "H": 3, "C": 1}, bias=True, on="every").general())
    p, values, grads = autograd_case(ctx.rng(), 4, 2, 3)
    closed = {n: evaluate(u, n, p, values, 4) for n in ("w_h", "w_x", "b_h")}  # b_h: a row, as the cell's rows
    return combine([compare(v, grads[n].reshape(v.shape), detail=n) for n, v in closed.items()],
                   detail="the double sum over t and tau, T = 4, against autograd")


@check("rnn.path_products", needs_torch=True, source="week06 §Paths:188-204, week06 §Jacobian:326-342 (long paths, J_t)", group="recurrent")
def path_products(ctx: Context) -> Outcome:
    """dL/dh_s = dL/dh_q prod w_h phi'(z_t) (scalar) and g_s^h = g_q^h J_q ... J_{s+1} (vector), numerically,
    against autograd's dL/dh_s; the r^(q-s) bound holds with r the largest factor."""
    import torch

    rng = ctx.rng()
    outcomes = []
    # scalar: the derived g_s^h against the path product formula
    T = 8
    net = rnn.unroll(steps=T, activation="tanh")
    args = list(net.parameters.values()) + net.x + [net.y]
    sens = [net.sensitivity("h", s) for s in range(T)]
    paths = [net.path_product(T - 1, s) for s in range(T)]
    factors = [net.transition(t) for t in range(1, T)]
    f = lambdify(net.program, sens + paths + factors, args, "numpy")
    params, X, y = random_case(net, rng, batch=1)
    values = f(*[params[n] for n in net.parameters], *X[0], y[0])
    g, P, F = values[:T], values[T:2 * T], values[2 * T:]
    outcomes.append(compare([g[T - 1] * P[s] for s in range(T)], g, detail="scalar path product"))
    r = max(abs(v) for v in F)
    bound_ok = all(abs(g[s]) <= abs(g[T - 1]) * r ** (T - 1 - s) * (1 + 1e-12) for s in range(T))
    outcomes.append(Outcome(0.0, 0.0, bound_ok, "r^(q-s) bound"))
    # vector: ordered Jacobian product against autograd's dL/dh_s
    vnet = rnn.unroll(steps=5, activation="tanh", inputs=2, hidden=3, outputs=2)
    params, X, y = random_case(vnet, rng, batch=1)
    args = list(vnet.parameters.values()) + vnet.x + [vnet.y]
    q = vnet.steps - 1
    exprs = [vnet.sensitivity("h", q)] + [vnet.path_product(q, s) for s in range(q)]
    fv = lambdify(vnet.program, exprs, args, "torch")
    dev = ctx.dev  # supplied by the registry (needs_torch=True)
    tens = lambda a: torch.as_tensor(np.asarray(a), dtype=torch.float64, device=dev)  # noqa: E731
    out = fv(*[tens(params[n]) for n in vnet.parameters], *[tens(X[:, t]) for t in range(vnet.steps)], tens(y))
    W = {k: tens(v).requires_grad_(True) for k, v in params.items()}
    h = torch.zeros((1, 3), dtype=torch.float64, device=dev)
    hs = []
    for t in range(vnet.steps):
        h = torch.tanh(tens(X[:, t]) @ W["W_x"].T + h @ W["W_h"].T)
        h.retain_grad()
        hs.append(h)
    L = 0.5 * (hs[-1] @ W["W_o"].T - tens(y)).square().sum()
    L.backward()
    for s in range(q):
        outcomes.append(compare(out[0] @ out[1 + s], hs[s].grad, device=dev, detail=f"g_{s}^h"))
    return combine(outcomes, detail="scalar and vector path products, bound")
