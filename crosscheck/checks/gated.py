"""Checks of gated cells, path products, clipping and the activation facts (group ``gated``).

GRU and LSTM references (numeric/gated.py) against ``torch.nn.GRU``/``LSTM``
carrying the same weights; carry derivatives against
``torch.autograd.functional.jacobian`` with the gates detached and the full
Jacobians without; clipping against ``clip_grad_norm_``; the Pascanu bound on
random trajectories; Figure 3's numbers; the activation facts, proved.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import torch

from seqgrad.derive import activation_facts
from seqgrad.numeric import clipping, gated, paths
from seqgrad.sigfig import half_unit, matches

from ..registry import check
from ..tolerance import Outcome, combine

GROUP = "gated"
SOURCE = "week06"


def _random_weights(kind, ctx, D=3, H=5):
    cls = gated.GRUWeights if kind == "GRU" else gated.LSTMWeights
    return cls.random(D, H, ctx.rng(), scale=0.8)


def _forward_and_grads(kind, ctx) -> Outcome:
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    rng = ctx.rng()
    w = _random_weights(kind, ctx)
    B, T = 2, 7
    X = torch.as_tensor(rng.standard_normal((B, T, w.input_size)), dtype=dt, device=dev)
    h0 = torch.as_tensor(0.5 * rng.standard_normal((B, w.hidden_size)), dtype=dt, device=dev)
    V = torch.as_tensor(rng.standard_normal((B, T, w.hidden_size)), dtype=dt, device=dev)  # L = sum(V * states)

    module = w.torch_module(dtype=dt, device=dev)
    mine = w.to_torch(dt, dev).requires_grad_()
    if kind == "GRU":
        ref_out, ref_hn = module(X, h0[None])
        out, _ = gated.gru_forward(mine, X, h0)
        last = [(out[:, -1], ref_hn[0], "h_{T-1}")]
    else:
        c0 = torch.as_tensor(0.5 * rng.standard_normal((B, w.hidden_size)), dtype=dt, device=dev)
        ref_out, (ref_hn, ref_cn) = module(X, (h0[None], c0[None]))
        out, cells, _ = gated.lstm_forward(mine, X, h0, c0)
        last = [(out[:, -1], ref_hn[0], "h_{T-1}"), (cells[:, -1], ref_cn[0], "c_{T-1}")]
    (ref_out * V).sum().backward()
    (out * V).sum().backward()
    outcomes = [ctx.compare(out.detach(), ref_out.detach(), "states")]
    outcomes += [ctx.compare(a.detach(), b.detach(), name) for a, b, name in last]
    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        outcomes.append(ctx.compare(getattr(mine, name).grad, getattr(module, name + "_l0").grad, f"dL/d{name}"))
    result = combine(outcomes)
    result.detail = f"{kind} D={w.input_size} H={w.hidden_size} B={B} T={T}: states and all weight gradients vs torch.nn.{kind}"
    return result


#: where each gated cell is defined and where its carry Jacobian is stated (the checks of the derived cells cite their
#: own cell's section, not both)
CELL_SOURCES = {"GRU": ("week06 §GRU:374-380 (the GRU, PyTorch convention)", "week06 §GRU:382 (the carry Jacobian)"),
                "LSTM": ("week06 §LSTM:388-398 (the LSTM)", "week06 §LSTM:400 (the carry Jacobian)")}

@check("gated.gru_vs_torch", needs_torch=True, source="week06 §GRU:374-380 (GRU, PyTorch convention)", group=GROUP)
def gru_vs_torch(ctx) -> Outcome:
    """GRU states and weight gradients against torch.nn.GRU with the same weights."""
    return _forward_and_grads("GRU", ctx)


@check("gated.lstm_vs_torch", needs_torch=True, source="week06 §LSTM:388-398 (LSTM, b_ih + b_hh)", group=GROUP)
def lstm_vs_torch(ctx) -> Outcome:
    """LSTM states, cells and weight gradients against torch.nn.LSTM with the same weights."""
    return _forward_and_grads("LSTM", ctx)


@check("gated.gru_reset_convention", source="week06 §GRU:378-380", group=GROUP)
def gru_reset_convention(ctx) -> Outcome:
    """Reset applied before W_hn is a different model: it must differ from torch.nn.GRU when b_hn != 0."""
    w = _random_weights("GRU", ctx).to_numpy()
    rng = ctx.rng()
    x, h = rng.standard_normal(w.input_size), rng.standard_normal(w.hidden_size)
    gap = float(np.max(np.abs(gated.gru_step_reset_before(w, x, h) - gated.gru_step(w, x, h).h)))
    return Outcome(0.0, 0.0, gap > 1e-6, f"max |h(reset before W_hn) - h(torch convention)| = {gap:.3g} (must be > 0)")


@check("gated.gru_mixing_example", source="week06 §GRU:370: 0.9(0.5)+0.1(-0.4)=0.410", group=GROUP)
def gru_mixing_example(ctx) -> Outcome:
    """The text's GRU mixing example, exactly and against the printed 0.410."""
    exact = gated.gru_mix(Fraction(9, 10), Fraction(1, 2), Fraction(-4, 10))
    value = float(gated.gru_mix(0.9, 0.5, -0.4))
    ok = exact == Fraction(41, 100) and matches(value, 0.410)
    return Outcome(abs(value - 0.41), abs(value - 0.41) / 0.41, ok, f"u h_prev + (1-u) h~ = {exact} exactly")


def _jacobian_checks(kind, ctx) -> Outcome:
    dev, dt = ctx.dev, ctx.dt  # supplied by the registry (needs_torch=True)
    rng = ctx.rng()
    w = _random_weights(kind, ctx).to_torch(dt, dev)
    as_t = lambda a: torch.as_tensor(a, dtype=dt, device=dev)  # noqa: E731
    x, h = as_t(rng.standard_normal(w.input_size)), as_t(0.7 * rng.standard_normal(w.hidden_size))
    H = w.hidden_size
    jac = torch.autograd.functional.jacobian
    if kind == "GRU":
        J, carry, gate_terms = gated.gru_jacobian(w, x, h)
        fixed = jac(lambda hp: gated.gru_step(w, x, hp, gate_h=hp.detach()).h, h)
        full = jac(lambda hp: gated.gru_step(w, x, hp).h, h)
        carry_name, held = "diag(u_t)", "fixed gates and candidate"
    else:
        c = as_t(rng.standard_normal(H))
        J, carry, gate_terms = gated.lstm_jacobian(w, x, h, c)
        fixed = jac(lambda cp: gated.lstm_step(w, x, h, cp, gate_h=h.detach()).c, c)
        carry = carry[:H, :H]

        def state(sv):
            st = gated.lstm_step(w, x, sv[H:], sv[:H])
            return torch.cat([st.c, st.h])

        full = jac(state, torch.cat([c, h]))
        carry_name, held = "diag(f_t)", "fixed gates"
    gate_size = float(gate_terms.abs().max())
    outcomes = [ctx.compare(fixed, carry, f"{held}: autograd = {carry_name}"),
                ctx.compare(full, J, "full Jacobian: autograd = carry + gate terms")]
    result = combine(outcomes)
    result.passed = result.passed and gate_size > 1e-6  # the gate terms are really there
    result.detail = f"{kind}: {carry_name} at {held}; full Jacobian matches; max |gate terms| = {gate_size:.3g}"
    return result


@check("gated.gru_carry_jacobian", needs_torch=True, source="week06 §GRU:382: dh_t/dh_(t-1) = diag(u_t) at fixed gates and candidate", group=GROUP)
def gru_carry_jacobian(ctx) -> Outcome:
    """GRU carry derivative diag(u_t) with gates and candidate detached, and the full Jacobian with gate terms."""
    return _jacobian_checks("GRU", ctx)


@check("gated.lstm_carry_jacobian", needs_torch=True, source="week06 §LSTM:400: dc_t/dc_(t-1) = diag(f_t) at fixed gates", group=GROUP)
def lstm_carry_jacobian(ctx) -> Outcome:
    """LSTM carry derivative diag(f_t) with gates detached, and the full (c, h) Jacobian."""
    return _jacobian_checks("LSTM", ctx)


@check("gated.clipping_vs_torch", source="week06 §Clip:356-360, week06 §PyTorch:456 (clip_grad_norm_)", group=GROUP)
def clipping_vs_torch(ctx) -> Outcome:
    """Global-norm clipping against torch.nn.utils.clip_grad_norm_, and its stated properties."""
    rng = ctx.rng()
    outcomes = []
    for trial in range(20):
        shapes = [(3, 4), (5,), (2, 2, 2)]
        scale = 10.0 ** rng.uniform(-2, 2)
        grads = [scale * rng.standard_normal(s) for s in shapes]
        tau = float(10.0 ** rng.uniform(-1, 1))
        params = [torch.nn.Parameter(torch.zeros(s, dtype=torch.float64)) for s in shapes]
        for p, g in zip(params, grads):
            p.grad = torch.as_tensor(g).clone()
        torch_norm = float(torch.nn.utils.clip_grad_norm_(params, tau))
        mine = clipping.clip_global_norm(grads, tau, eps=clipping.TORCH_EPS)
        outcomes += [ctx.compare(np.concatenate([g.ravel() for g in mine.grads]),
                          np.concatenate([p.grad.numpy().ravel() for p in params])),
                     ctx.compare(mine.total_norm, torch_norm)]
        exact = clipping.clip_global_norm(grads, tau)  # the text's formula, eps = 0
        flat, before = np.concatenate([g.ravel() for g in exact.grads]), np.concatenate([g.ravel() for g in grads])
        expected_norm = min(tau, exact.total_norm)
        cosine = float(flat @ before / (np.linalg.norm(flat) * np.linalg.norm(before)))
        outcomes += [ctx.compare(np.linalg.norm(flat), expected_norm), ctx.compare(cosine, 1.0)]
    zero = clipping.clip_global_norm([np.zeros(3)], 1.0)
    outcomes.append(Outcome.exact(zero.coefficient == 1.0 and not np.any(zero.grads[0]), "zero gradient left alone"))
    result = combine(outcomes)
    result.detail = "20 random gradient sets: equal to clip_grad_norm_; norm -> min(tau, ||g||), cosine 1; zero gradient unchanged"
    return result


@check("gated.pascanu_bound", source="week06 §Jacobian:338-340; Pascanu et al. 2013", group=GROUP)
def pascanu_bound(ctx) -> Outcome:
    """||J_q...J_{s+1}||_2 <= prod ||J_t||_2 <= (gamma ||W_h||_2)^(q-s) on random trajectories: never violated."""
    rng = ctx.rng()
    worst, count, violations = 0.0, 0, 0
    for trial in range(60):
        act = ("tanh", "sigmoid")[trial % 2]
        w = paths.RNNWeights.random(3, 6, rng, spectral_norm=float(rng.uniform(0.3, 3.0)), activation=act)
        norms = paths.jacobian_product_norms(w, 2.0 * rng.standard_normal((30, 3)))
        violations += norms.violations()
        count += len(norms.distance)
        worst = max(worst, float(np.max(norms.measured / norms.pascanu)), float(np.max(norms.norm_product / norms.pascanu)))
    return Outcome(max(0.0, worst - 1.0), max(0.0, worst - 1.0), violations == 0,
                   f"{violations} violations in {count} (trajectory, distance) pairs; largest measured/bound = {worst:.3g}")


@check("gated.figure3_right", source="week06 §Jacobian:346-350 (Figure 3, right; its values computed from the printed parameters)", group=GROUP)
def figure3_right(ctx) -> Outcome:
    """|dh_{T-1}/dh_0| for w_h=1.2, w_x=1, input 0 and 1, against the §3.3 table, 1.2^(T-1), 0.974 and 0.061."""
    table = {1: (1, 1), 2: (1.2, 0.100033), 3: (1.44, 0.00635543), 5: (2.0736, 2.37779e-05), 10: (5.15978, 2.0227e-11),
             20: (31.948, 1.46365e-23), 30: (197.814, 1.05911e-35)}
    sens = paths.sensitivity_vs_length(1.2, [0.0, 1.0], 30)
    ok = all(matches(sens[0, T - 1], a, 6) and matches(sens[1, T - 1], b, 6) for T, (a, b) in table.items())
    growth = ctx.compare(sens[0], 1.2 ** np.arange(30), "input 0: 1.2^(T-1)")
    h = paths.scalar_trajectory(1.2, 1.0, 60).h[-1]
    factor = 1.2 * (1 - h**2)
    ok = ok and matches(h, 0.974) and matches(factor, 0.061, 2) and growth.passed
    rel = max(abs(sens[1, T - 1] - b) / b for T, (a, b) in table.items())
    # the table's numbers have 6 significant figures: half a unit of the sixth is each one's tolerance
    units = max([abs(sens[i, T - 1] - v) / half_unit(v, 6) for T, row in table.items() for i, v in enumerate(row)]
                + [abs(h - 0.974) / half_unit(0.974, 3), abs(factor - 0.061) / half_unit(0.061, 2)])
    return Outcome(growth.max_abs_error, max(rel, growth.max_rel_error), ok, tol_ratio=max(units, growth.tol_ratio),
                   detail=f"table reproduced to 6 figures; saturated state {h:.7f}, factor per step {factor:.7f}")


@check("gated.figure3_left", source="week06 §Jacobian:346-348 (Figure 3, left)", group=GROUP)
def figure3_left(ctx) -> Outcome:
    """|r|^n for r = 0.8, 1.2 against the §3.3 values 0.3277 ... 237.4."""
    printed = {0.8: (0.3277, 0.1074, 0.01153, 0.001238), 1.2: (2.488, 6.192, 38.34, 237.4)}
    n = np.array([5, 10, 20, 30])
    computed = [v for r in printed for v in paths.power_curve(r, n)]
    ones = paths.power_curve(1.0, n)
    # the printed values have 4 significant figures: their measure is the last printed digit (never a silent 0)
    return combine([Outcome.printed(computed, [p for vals in printed.values() for p in vals], figures=4),
                    Outcome.exact(bool(np.all(ones == 1)))], "0.8^n and 1.2^n at n = 5, 10, 20, 30 to 4 figures; 1^n = 1")


def _fact_check(name: str):
    fact = activation_facts.get(name)

    @check(f"gated.fact.{name}", source=fact.source, group=GROUP)
    def run(ctx) -> Outcome:
        proof = fact.prove()
        return Outcome.exact(proof.holds, f"proved with SymPy: {fact.name}")

    run.__doc__ = f"Activation fact {name}, proved symbolically."
    return run


for _name in activation_facts.NAMES:
    _fact_check(_name)


@check("gated.relu_convention_vs_torch", source="week06 Table 4: ReLU at 0 needs a convention", group=GROUP)
def relu_convention_vs_torch(ctx) -> Outcome:
    """The stated ReLU slope at 0 is the one torch.relu's backward uses."""
    from seqgrad.derive.activations import RELU_PRIME_AT_ZERO

    z = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    torch.relu(z).sum().backward()
    return ctx.compare(float(z.grad), float(RELU_PRIME_AT_ZERO), "d relu/dz at 0: torch vs the stated convention")


# ---------------------------------------------------------------- derive/gated.py against torch

def _derived_values(net, w: "gated._GatedWeights", W_o: np.ndarray, X: np.ndarray, y: np.ndarray) -> dict:
    """Leaf values of a derive.gated network from PyTorch-layout weights (rows of the stacked gate matrices)."""
    names = {"GRU": {"r": "r", "u": "u", "n": "n"}, "LSTM": {"i": "i", "f": "f", "c": "g", "o": "o"}}[net.kind]
    shape = (lambda a: np.atleast_2d(a)) if net.vector else (lambda a: float(np.asarray(a).reshape(())))
    prefix = "W" if net.vector else "w"
    values = {}
    for g, torch_name in names.items():
        W_x, W_h, b_x, b_h = w.gate(torch_name)
        values[f"{prefix}_x{g}"], values[f"{prefix}_h{g}"] = shape(W_x), shape(W_h)
        if net.kind == "GRU":
            values[f"b_x{g}"], values[f"b_h{g}"] = shape(b_x), shape(b_h)
        else:
            values[f"b_{g}"] = shape(b_x + b_h)
    values[f"{prefix}_o"] = shape(W_o)
    out = {net.parameters[k]: v for k, v in values.items()}
    for t, x in enumerate(net.x):
        out[x] = shape(X[t])
    out[net.y] = shape(y)
    return out


def _derived_vs_torch(kind: str, ctx, vector: bool) -> Outcome:
    from seqgrad.derive import gated as derived

    from ..lambdify import lambdify

    rng = ctx.rng()
    D, H, C, T = (2, 3, 2, 3) if vector else (1, 1, 1, 4)
    net = (derived.gru if kind == "GRU" else derived.lstm)(T, *((D, H, C) if vector else ()))
    w = (gated.GRUWeights if kind == "GRU" else gated.LSTMWeights).random(D, H, rng, scale=0.9)
    W_o, X, y = rng.uniform(-1, 1, (C, H)), rng.standard_normal((T, D)), rng.standard_normal(C)
    values = _derived_values(net, w, W_o, X, y)
    params = list(net.parameters.values())
    args = list(values)
    f = lambdify(net.program, [net.L] + [net.gradients[p] for p in params], args)
    got = f(*[values[a] for a in args])
    # torch: the module with the same weights and a bias-free head
    module = w.torch_module()
    head = torch.nn.Linear(H, C, bias=False, dtype=torch.float64)
    with torch.no_grad():
        head.weight.copy_(torch.as_tensor(W_o))
    out, _ = module(torch.as_tensor(X)[None])
    loss = 0.5 * ((head(out[0, -1]) - torch.as_tensor(y)) ** 2).sum()
    loss.backward()
    outcomes = [ctx.compare(float(np.asarray(got[0]).sum()), loss.item(), "L")]
    order = {"GRU": ("r", "u", "n"), "LSTM": ("i", "f", "c", "o")}[kind]
    prefix = "W" if vector else "w"
    for k, g in enumerate(order):
        rows = slice(k * H, (k + 1) * H)
        for which, torch_name in (("x", "weight_ih_l0"), ("h", "weight_hh_l0")):
            mine = got[1 + params.index(net.parameters[f"{prefix}_{which}{g}"])]
            outcomes.append(ctx.compare(np.reshape(mine, (H, -1)), getattr(module, torch_name).grad[rows], f"dL/d{prefix}_{which}{g}"))
        biases = [(f"b_x{g}", "bias_ih_l0"), (f"b_h{g}", "bias_hh_l0")] if kind == "GRU" else [(f"b_{g}", "bias_ih_l0"), (f"b_{g}", "bias_hh_l0")]
        for name, torch_name in biases:
            mine = got[1 + params.index(net.parameters[name])]
            outcomes.append(ctx.compare(np.reshape(mine, (H,)), getattr(module, torch_name).grad[rows], f"dL/d{name}"))
    mine = got[1 + params.index(net.parameters[f"{prefix}_o"])]
    outcomes.append(ctx.compare(np.reshape(mine, (C, H)), head.weight.grad, "dL/dW_o"))
    result = combine(outcomes)
    result.detail = (f"derive.gated.{kind.lower()} ({'vector D=%d H=%d C=%d' % (D, H, C) if vector else 'scalar'}, T={T}) "
                     f"lambdified: L and all {len(params)} parameter gradients vs torch.nn.{kind} + Linear head")
    return result


def _derived_step_jacobian(kind: str, ctx, vector: bool) -> Outcome:
    """derive.gated's carry, full Jacobian and gate terms, evaluated, against numeric/gated and autograd."""
    from seqgrad.derive import gated as derived

    from ..lambdify import lambdify

    rng = ctx.rng()
    D, H, T = (2, 3, 2) if vector else (1, 1, 2)
    net = (derived.gru if kind == "GRU" else derived.lstm)(T, *((D, H, 1) if vector else ()))
    w = (gated.GRUWeights if kind == "GRU" else gated.LSTMWeights).random(D, H, rng, scale=1.2)
    X = rng.standard_normal((T, D))
    values = _derived_values(net, w, rng.uniform(-1, 1, (1, H)), X, rng.standard_normal(1))
    # the step's intermediates come from the numeric reference: the derived formula is evaluated there
    if kind == "GRU":
        h0 = gated.gru_forward(w, X[:1])[0][0]
        step = gated.gru_step(w, X[1], h0)
        named = {"h_0": h0, "r_1": step.r, "u_1": step.u, "htilde_1": step.h_tilde, "a_1": step.a_n}
    else:
        H_all, C_all, _ = gated.lstm_forward(w, X[:1])
        step = gated.lstm_step(w, X[1], H_all[0], C_all[0])
        named = {"h_0": H_all[0], "c_0": C_all[0], "i_1": step.i, "f_1": step.f, "ctilde_1": step.c_tilde,
                 "o_1": step.o, "c_1": step.c}
    by_name = {str(k): k for k in net.program.leaves()} | {str(d.target): d.target for d in net.program}
    values |= {by_name[n]: (v if vector else float(v[0])) for n, v in named.items()}
    values = {k: np.atleast_2d(v) if vector else v for k, v in values.items()}

    def value(expr):
        if not vector:
            return np.asarray(float(expr.xreplace(values))).reshape(H, H)
        leaves = sorted((s for s in expr.free_symbols if s in values), key=str)
        v, = lambdify(None, [expr], leaves, check_finite=False)(*(values[s] for s in leaves))  # the one compiler
        return np.asarray(v, dtype=float).reshape(H, H)

    def ref(a):
        return np.asarray(a, dtype=float).reshape(H, H)

    outcomes = []
    if kind == "GRU":
        split = net.step_jacobian(1)
        J, carry, gate_terms = gated.gru_jacobian(w, X[1], h0)
        outcomes += [ctx.compare(value(net.carry(1)), ref(carry), "carry = diag(u_1)")]
    else:
        J, carry, gate_terms = gated.lstm_jacobian(w, X[1], H_all[0], C_all[0])
        outcomes += [ctx.compare(value(net.carry(1)), ref(carry[:H, :H]), "carry = diag(f_1)")]
        split = net.step_jacobian(1, wrt="h")  # dc_1/dh_0: only gate terms
        J, carry, gate_terms = J[:H, H:], carry[:H, H:], gate_terms[:H, H:]
    outcomes += [ctx.compare(value(split.full), ref(J), "full one-step Jacobian"),
                 ctx.compare(value(split.gate_terms), ref(gate_terms), "gate terms"),
                 ctx.compare(value(split.carry), ref(carry), "carry part")]
    result = combine(outcomes)
    result.detail = (f"derive.gated.{kind.lower()} ({'vector' if vector else 'scalar'}): carry, full Jacobian "
                     f"{'dh_1/dh_0' if kind == 'GRU' else 'dc_1/dh_0'} and gate terms, evaluated, vs numeric/gated (itself checked against autograd)")
    return result


for _kind in ("GRU", "LSTM"):
    for _vector in (False, True):
        _tag = "vector" if _vector else "scalar"

        def _make(kind=_kind, vector=_vector, tag=_tag):
            @check(f"gated.derived_{kind.lower()}_{tag}_vs_torch", source=CELL_SOURCES[kind][0], group=GROUP)
            def run_grads(ctx) -> Outcome:
                return _derived_vs_torch(kind, ctx, vector)

            @check(f"gated.derived_{kind.lower()}_{tag}_jacobian", source=CELL_SOURCES[kind][1], group=GROUP)
            def run_jac(ctx) -> Outcome:
                return _derived_step_jacobian(kind, ctx, vector)

            run_grads.__doc__ = f"derive.gated {kind} ({tag}) loss and parameter gradients vs torch.nn.{kind}."
            run_jac.__doc__ = f"derive.gated {kind} ({tag}) carry / full / gate-term Jacobians vs numeric and autograd."

        _make()
