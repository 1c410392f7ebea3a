"""derive/gated.py: GRU and LSTM derivations (PyTorch conventions), BPTT and carry derivatives."""

from __future__ import annotations

import functools
import random

import pytest
import sympy as sp
import torch
from hypothesis import given, settings, strategies as st

from seqgrad.derive import gated
from seqgrad.derive.rnn import Diag
from seqgrad.errors import SeqgradTypeError, SeqgradValueError


@functools.lru_cache(maxsize=None)
def _net(kind: str, steps: int, vector: bool = False):
    build = gated.gru if kind == "GRU" else gated.lstm
    return build(steps, 2, 2, 1) if vector else build(steps)


def _random_point(net, seed: int) -> dict:
    rng = random.Random(seed)
    return {s: sp.Float(rng.uniform(-1, 1)) for s in net.program.leaves()}


@pytest.mark.parametrize("kind", ["GRU", "LSTM"])
def test_scalar_gradients_equal_sympy_diff_of_the_nested_loss(kind):
    net = _net(kind, 2)
    L = net.program.expand(net.L, kinds=None)  # the loss nested in parameters and data
    point = _random_point(net, 1)
    for name, symbol in list(net.parameters.items()) + [(str(x), x) for x in net.x]:
        expected = sp.diff(L, symbol).xreplace(point)
        got = net.program.evaluate(net.grad(name), point)
        assert float(got) == pytest.approx(float(expected), rel=1e-12, abs=1e-14), name


def test_gru_reset_multiplies_the_affine_map_including_b_hn():
    net = _net("GRU", 2)
    w_hn, b_hn, h_0 = (net.parameters["w_hn"], net.parameters["b_hn"], net.h[0])
    a_1 = net.program["a_1"]
    assert sp.expand(a_1.value - (w_hn * h_0 + b_hn)) == 0
    z = net.program["z_1^n"].value
    r_1 = net.program["r_1"].target
    assert sp.expand(z - (net.parameters["w_xn"] * net.x[1] + net.parameters["b_xn"] + r_1 * a_1.target)) == 0
    h_1 = net.program["h_1"].value  # u keeps the old state, 1 - u writes the candidate
    u_1, n_1 = net.program["u_1"].target, net.program["htilde_1"].target
    assert sp.expand(h_1 - (u_1 * h_0 + (1 - u_1) * n_1)) == 0


def test_lstm_uses_one_combined_bias_per_gate_and_pytorch_gate_order():
    net = _net("LSTM", 1)
    assert gated.GATES["LSTM"] == ("i", "f", "c", "o")
    assert {"b_i", "b_f", "b_c", "b_o"} <= set(net.parameters)
    assert not any(name.startswith("b_x") or name.startswith("b_h") for name in net.parameters)
    assert "w_o" in net.parameters and "w_xo" in net.parameters  # the head's w_o is not the output gate


@pytest.mark.parametrize("kind, symbol", [("GRU", "u_1"), ("LSTM", "f_1")])
def test_carry_at_fixed_gates(kind, symbol):
    net = _net(kind, 2)
    assert net.carry(1) == net.symbol(symbol)
    vec = _net(kind, 2, vector=True)
    assert vec.carry(1) == Diag(vec.program[symbol].target)


def test_gru_full_jacobian_is_carry_plus_gate_terms_and_equals_diff():
    net = _net("GRU", 2)
    split = net.step_jacobian(1)
    assert sp.simplify(split.full - split.carry - split.gate_terms) == 0
    assert split.gate_terms != 0
    # the full Jacobian is d h_1 / d h_0 with the step's intermediates expanded
    step = [d for d in net.program.definitions("forward") if d.step == 1]
    subs = {}
    for d in step:
        subs[d.target] = d.value.xreplace(subs)
    h_0 = net.h[0]
    direct = sp.diff(subs[net.h[1]].rewrite(sp.exp), h_0)
    point = _random_point(net, 2) | {h_0: sp.Float(0.3)}
    full = split.full.xreplace(subs).rewrite(sp.exp)
    assert float(full.xreplace(point)) == pytest.approx(float(direct.xreplace(point)), rel=1e-12)


def test_lstm_memory_jacobian_has_no_gate_term_but_h_column_does():
    net = _net("LSTM", 2)
    by_c = net.step_jacobian(1)  # wrt c_0
    assert by_c.full == by_c.carry == net.symbol("f_1") and by_c.gate_terms == 0
    by_h = net.step_jacobian(1, wrt="h")
    assert by_h.carry == 0 and by_h.full == by_h.gate_terms != 0


def test_vector_gradient_shapes_and_latex():
    net = _net("GRU", 2, vector=True)
    for name, symbol in net.parameters.items():
        g = net.grad(name)
        assert g.shape == symbol.shape, name
    text = net.latex()
    assert r"\widetilde{\mathbf{h}}" in text or r"\widetilde{h}" in text
    assert r"\begin{align*}" in text
    split = net.step_jacobian(1)
    assert r"\operatorname{diag}" in split.latex()
    assert "digraph" in net.dot()


def test_scalar_program_grows_linearly():
    sizes = {T: len(gated.lstm(T).program) for T in (2, 4, 8)}
    assert sizes[8] - sizes[4] == 2 * (sizes[4] - sizes[2])


def test_expand_is_size_guarded():
    from seqgrad.errors import SizeGuardError

    with pytest.raises(SizeGuardError):
        _net("GRU", 2).grad("w_hr", expand=True, max_terms=10)


def test_bad_input():
    with pytest.raises(SeqgradValueError, match="steps"):
        gated.gru(0)
    with pytest.raises(SeqgradValueError, match="hidden"):
        gated.lstm(2, hidden=0)
    with pytest.raises(SeqgradTypeError, match="inputs"):
        gated.gru(2, inputs=2.5)
    with pytest.raises(SeqgradValueError, match="name"):
        _net("GRU", 2).grad("w_hz")  # the text's update gate is u, not PyTorch's z
    with pytest.raises(SeqgradValueError, match="t"):
        _net("GRU", 2).carry(2)
    with pytest.raises(SeqgradValueError, match="wrt"):
        _net("LSTM", 2).step_jacobian(1, wrt="x")
    with pytest.raises(SeqgradValueError, match="expand"):
        _net("GRU", 2).grad("w_hr", expand="everything")


@functools.lru_cache(maxsize=None)
def _compiled_scalar_gru():
    from seqgrad.crosscheck.lambdify import lambdify

    net = _net("GRU", 3)
    params = list(net.parameters.values())
    args = params + list(net.x) + [net.y]
    return net, params, lambdify(net.program, [net.L] + [net.gradients[p] for p in params], args)


@settings(max_examples=30, deadline=None)
@given(values=st.lists(st.floats(-2, 2), min_size=17, max_size=17))
def test_property_derived_scalar_gru_gradients_match_autograd(values):
    from seqgrad.numeric import gated as ref

    net, params, f = _compiled_scalar_gru()
    got = f(*values)
    P = dict(zip([str(p) for p in params], values[:13]))
    xs, y = values[13:16], values[16]
    leaves = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in P.items()}
    stack = lambda *names: torch.stack([leaves[n] for n in names]).reshape(3, 1)  # noqa: E731
    w = ref.GRUWeights(stack("w_xr", "w_xu", "w_xn"), stack("w_hr", "w_hu", "w_hn"),
                       torch.stack([leaves[n] for n in ("b_xr", "b_xu", "b_xn")]),
                       torch.stack([leaves[n] for n in ("b_hr", "b_hu", "b_hn")]))
    H, _ = ref.gru_forward(w, torch.tensor(xs, dtype=torch.float64).reshape(3, 1))
    L = 0.5 * (leaves["w_o"] * H[-1, 0] - y) ** 2
    L.backward()
    assert float(got[0]) == pytest.approx(L.item(), rel=1e-9, abs=1e-12)
    for k, p in enumerate(params):
        assert float(got[1 + k]) == pytest.approx(leaves[str(p)].grad.item(), rel=1e-8, abs=1e-12), str(p)
