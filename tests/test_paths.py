"""numeric/paths.py: path products, trajectories, Jacobian-product norms, gradient flow."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from seqgrad.crosscheck.tolerance import compare
from seqgrad.numeric import gated, paths
from seqgrad.errors import NonFiniteError, SeqgradTypeError, SeqgradValueError, ShapeError
from seqgrad.sigfig import matches

# spec §3.3: |dh_{T-1}/dh_0| for w_h = 1.2, w_x = 1, constant input 0 and 1
TABLE = {1: (1, 1), 2: (1.2, 0.100033), 3: (1.44, 0.00635543), 5: (2.0736, 2.37779e-05), 10: (5.15978, 2.0227e-11),
         20: (31.948, 1.46365e-23), 30: (197.814, 1.05911e-35)}


def _ok(computed, reference):
    outcome = compare(computed, reference)
    assert outcome.passed, (outcome.max_abs_error, outcome.max_rel_error)


def test_power_curve_matches_spec_values():
    n = [5, 10, 20, 30]
    for got, printed in zip(paths.power_curve(0.8, n), (0.3277, 0.1074, 0.01153, 0.001238)):
        assert matches(got, printed, 4)
    for got, printed in zip(paths.power_curve(1.2, n), (2.488, 6.192, 38.34, 237.4)):
        assert matches(got, printed, 4)
    assert np.all(paths.power_curve(-1.0, n) == 1)


def test_sensitivity_reproduces_the_section_3_3_table():
    sens = paths.sensitivity_vs_length(1.2, [0.0, 1.0], 30)
    for T, (zero_input, one_input) in TABLE.items():
        assert matches(sens[0, T - 1], zero_input, 6)
        assert matches(sens[1, T - 1], one_input, 6)
    _ok(sens[0], 1.2 ** np.arange(30))  # input 0: every factor is exactly 1.2


def test_saturation_fixed_point_and_factor():
    traj = paths.scalar_trajectory(1.2, 1.0, 40)
    for got, printed in zip(traj.h[:6], (0.761594, 0.957413, 0.973168, 0.974151, 0.974211, 0.974214)):
        assert matches(got, printed, 6)
    assert matches(traj.h[-1], 0.974) and matches(traj.factors[-1], 0.061, 2)
    assert matches(traj.factors[-1], 0.0610873, 6)


def test_factors_are_w_h_times_slope_and_loss_sensitivity_is_the_product():
    traj = paths.scalar_trajectory(0.9, [0.3, -0.5, 1.0, 0.2, 0.0, 0.7], 6)
    _ok(traj.factors, 0.9 * (1 - np.tanh(traj.z) ** 2))
    got = paths.loss_sensitivity(2.0, traj.factors, [0, 2, 5], q=5)
    _ok(got, [2.0 * np.prod(traj.factors[1:6]), 2.0 * np.prod(traj.factors[3:6]), 2.0])


def test_loss_sensitivity_agrees_with_autograd():
    x = [0.3, -0.5, 1.0, 0.2, 0.0, 0.7]
    w_h, w_x = torch.tensor(1.1, dtype=torch.float64, requires_grad=True), 0.8
    h = torch.zeros((), dtype=torch.float64)
    states = []
    for xt in x:
        h = torch.tanh(w_x * xt + w_h * h)
        h.retain_grad()
        states.append(h)
    (0.5 * (0.7 * states[-1] - 0.2) ** 2).backward()
    traj = paths.scalar_trajectory(1.1, x, 6, w_x=w_x)
    g_q = float(states[-1].grad)
    _ok(paths.loss_sensitivity(g_q, traj.factors, range(6), q=5), [float(s.grad) for s in states])


@pytest.mark.parametrize("act", ["tanh", "sigmoid", "relu", "identity"])
def test_vectorised_sweep_equals_log_products_and_loop(act):
    w_h = np.linspace(0.2, 1.8, 9)
    x = np.array([-1.0, 0.0, 0.5])
    T = 25
    sweep = paths.path_product_sweep(w_h[:, None], x[None, :], T, activation_name=act)
    logs = paths.log10_path_products(w_h[:, None], x[None, :], T, activation_name=act)[..., 0]
    nonzero = sweep > 0
    _ok(np.log10(sweep[nonzero]), logs[nonzero])
    assert np.all(np.isneginf(logs[~nonzero]))
    for i in (0, 4, 8):
        for j in range(3):
            traj = paths.scalar_trajectory(w_h[i], x[j], T, activation_name=act)
            assert sweep[i, j] == pytest.approx(np.prod(np.abs(traj.factors[1:])), rel=1e-12, abs=0)


def test_log_products_over_t_with_zero_input_are_powers_of_w_h():
    w_h = np.array([0.5, 1.0, 1.5])
    logs = paths.log10_path_products(w_h, 0.0, 12)
    distance = 11 - np.arange(12)
    _ok(logs, distance[None, :] * np.log10(w_h)[:, None])


def test_gamma_values():
    assert paths.gamma("tanh") == 1 and paths.gamma("sigmoid") == 0.25


def test_jacobian_product_norms_respect_both_bounds_and_definition():
    rng = np.random.default_rng(7)
    for act in ("tanh", "sigmoid", "relu"):
        w = paths.RNNWeights.random(3, 5, rng, spectral_norm=2.0, activation=act)
        X = rng.standard_normal((15, 3))
        norms = paths.jacobian_product_norms(w, X)
        assert norms.violations() == 0
        traj = paths.rnn_trajectory(w, X)
        P = traj.J[14] @ traj.J[13] @ traj.J[12]  # J_q J_{q-1} J_{q-2}: distance 3
        assert norms.measured[2] == pytest.approx(np.linalg.norm(P, 2), rel=1e-12)
        assert norms.pascanu[2] == pytest.approx((paths.gamma(act) * 2.0) ** 3, rel=1e-12)


def test_step_jacobian_matches_autograd():
    rng = np.random.default_rng(2)
    w = paths.RNNWeights.random(2, 3, rng)
    X = rng.standard_normal((4, 2))
    traj = paths.rnn_trajectory(w, X)
    f = lambda h: torch.tanh(torch.as_tensor(X[2]) @ torch.as_tensor(w.W_x).T + h @ torch.as_tensor(w.W_h).T + torch.as_tensor(w.b_h))  # noqa: E731
    _ok(torch.autograd.functional.jacobian(f, torch.as_tensor(traj.h[1])), traj.J[2])


def test_nilpotent_w_h_with_large_entry_does_not_explode():
    # text L336: an entry of W_h above 1 is not a criterion for explosion
    w = paths.RNNWeights(np.eye(2), np.array([[0.0, 5.0], [0.0, 0.0]]), activation="identity")
    norms = paths.jacobian_product_norms(w, np.ones((6, 2)))
    assert norms.measured[0] == pytest.approx(5.0) and np.all(norms.measured[1:] == 0)


def test_gradient_flow_rnn_equals_readout_times_jacobian_products():
    rng = np.random.default_rng(5)
    w = paths.RNNWeights.random(2, 4, rng)
    X = rng.standard_normal((8, 2))
    flow = paths.gradient_flow(w, X)
    J = paths.rnn_trajectory(w, X).J
    g = np.full(4, 0.5)  # v = 1/sqrt(H)
    expected = [np.linalg.norm(g)]
    for t in range(7, 0, -1):  # g_{t-1} = g_t J_t
        g = g @ J[t]
        expected.append(np.linalg.norm(g))
    _ok(flow.grad_norm, expected[::-1])
    assert list(flow.distance) == list(range(7, -1, -1))


@pytest.mark.parametrize("cls", [gated.GRUWeights, gated.LSTMWeights])
def test_gradient_flow_gated_carry_products(cls):
    rng = np.random.default_rng(1)
    w = cls.random(2, 3, rng)
    X = rng.standard_normal((6, 2))
    flow = paths.gradient_flow(w, X)
    steps = gated.gru_forward(w, X)[1] if cls is gated.GRUWeights else gated.lstm_forward(w, X)[2]
    gates = np.array([s.u if cls is gated.GRUWeights else s.f for s in steps])
    _ok(flow.carry_at_fixed_gates[2], np.mean(np.prod(gates[3:], axis=0)))
    assert flow.carry_at_fixed_gates[-1] == 1.0 and flow.grad_norm[-1] == pytest.approx(1.0)


def test_progress_bar_on_long_sweep(capsys):
    paths.path_product_sweep(np.linspace(0.5, 1.5, 4), 0.0, 30, show_progress=True)
    err = capsys.readouterr().err
    assert "path products" in err and "30/30" in err


def test_bad_inputs():
    with pytest.raises(SeqgradValueError, match="w_h"):
        paths.path_product_sweep([], 0.0, 10)  # empty sweep range
    with pytest.raises(SeqgradValueError, match="x"):
        paths.sensitivity_vs_length(1.2, np.array([]), 10)
    with pytest.raises(NonFiniteError, match="w_h"):
        paths.path_product_sweep([1.0, np.nan], 0.0, 10)
    with pytest.raises(NonFiniteError, match="x"):
        paths.scalar_trajectory(1.0, math.inf, 5)
    with pytest.raises(SeqgradValueError, match="T"):
        paths.path_product_sweep(1.0, 0.0, 0)
    with pytest.raises(SeqgradValueError, match="activation"):
        paths.path_product_sweep(1.0, 0.0, 5, activation_name="softplus")
    with pytest.raises(SeqgradTypeError, match="w_h"):
        paths.path_product_sweep("1.2", 0.0, 5)
    with pytest.raises(SeqgradValueError, match="n"):
        paths.power_curve(0.8, [1, -2])
    with pytest.raises(ShapeError, match="W_x"):
        paths.RNNWeights(np.zeros((3, 2)), np.zeros((4, 4)))  # mismatched widths
    with pytest.raises(ShapeError, match="X"):
        paths.rnn_trajectory(paths.RNNWeights(np.zeros((4, 2)), np.zeros((4, 4))), np.zeros((5, 3)))
    with pytest.raises(SeqgradTypeError, match="weights"):
        paths.gradient_flow("rnn", np.zeros((3, 2)))
    with pytest.raises(SeqgradValueError, match="s_values"):
        paths.loss_sensitivity(1.0, np.ones(5), [6], q=4)
