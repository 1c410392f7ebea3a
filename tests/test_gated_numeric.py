"""numeric/gated.py: GRU and LSTM references in PyTorch's conventions."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from seqgrad.crosscheck.tolerance import compare
from seqgrad.numeric import gated
from seqgrad.errors import NonFiniteError, SeqgradTypeError, SeqgradValueError, ShapeError
from seqgrad.sigfig import matches


def _ok(computed, reference):
    outcome = compare(computed, reference)
    assert outcome.passed, (outcome.max_abs_error, outcome.max_rel_error)


@pytest.fixture
def rng():
    return np.random.default_rng(3)


def test_gru_mixing_example_is_0410():
    assert gated.gru_mix(Fraction(9, 10), Fraction(1, 2), Fraction(-4, 10)) == Fraction(41, 100)
    assert matches(gated.gru_mix(0.9, 0.5, -0.4), 0.410)
    assert not matches(gated.gru_mix(0.1, 0.5, -0.4), 0.410)  # the other mixing convention gives -0.31


def test_gate_order_follows_pytorch(rng):
    w = gated.GRUWeights.random(2, 3, rng)
    W_x, W_h, b_x, b_h = w.gate("u")  # the text's u is PyTorch's z: the second block
    np.testing.assert_array_equal(W_x, w.weight_ih[3:6])
    np.testing.assert_array_equal(b_h, w.bias_hh[3:6])
    lw = gated.LSTMWeights.random(2, 3, rng)
    np.testing.assert_array_equal(lw.gate("f")[0], lw.weight_ih[3:6])  # i, f, g, o
    np.testing.assert_array_equal(lw.combined_bias("o"), lw.bias_ih[9:12] + lw.bias_hh[9:12])


@pytest.mark.parametrize("kind", ["GRU", "LSTM"])
def test_forward_matches_torch_module_numpy_and_torch(kind, rng):
    cls = gated.GRUWeights if kind == "GRU" else gated.LSTMWeights
    w = cls.random(3, 4, rng)
    X = rng.standard_normal((2, 6, 3))
    ref, _ = w.torch_module()(torch.as_tensor(X))
    fwd = gated.gru_forward if kind == "GRU" else gated.lstm_forward
    _ok(fwd(w, X)[0], ref.detach())                              # numpy arrays
    _ok(fwd(w.to_torch(), torch.as_tensor(X))[0], ref.detach())  # torch tensors
    _ok(fwd(w, X[0])[0], ref.detach()[0])                        # unbatched (T, D)


def test_from_torch_round_trip(rng):
    torch.manual_seed(0)
    module = torch.nn.GRU(3, 4, dtype=torch.float64)
    w = gated.GRUWeights.from_torch(module)
    X = torch.randn(5, 3, dtype=torch.float64)
    ref, _ = module(X)
    _ok(gated.gru_forward(w, X)[0], ref.detach())
    cell = torch.nn.LSTMCell(3, 4, bias=False, dtype=torch.float64)
    lw = gated.LSTMWeights.from_torch(cell)
    assert float(lw.bias_ih.abs().sum()) == 0.0
    h, c = cell(X[0])
    step = gated.lstm_step(lw, X[0], torch.zeros(4, dtype=torch.float64), torch.zeros(4, dtype=torch.float64))
    _ok(step.h, h.detach())
    _ok(step.c, c.detach())


def test_reset_before_is_a_different_model(rng):
    w = gated.GRUWeights.random(2, 3, rng)
    x, h = rng.standard_normal(2), rng.standard_normal(3)
    assert np.max(np.abs(gated.gru_step_reset_before(w, x, h) - gated.gru_step(w, x, h).h)) > 1e-4


def test_gate_values_lie_in_open_unit_interval(rng):
    w = gated.LSTMWeights.random(3, 5, rng, scale=3.0)
    _, _, steps = gated.lstm_forward(w, 4 * rng.standard_normal((20, 3)))
    for s in steps:
        for g in (s.i, s.f, s.o):
            assert np.all((g > 0) & (g < 1))


@pytest.mark.parametrize("kind", ["GRU", "LSTM"])
def test_jacobians_fixed_gates_and_full(kind, rng):
    cls = gated.GRUWeights if kind == "GRU" else gated.LSTMWeights
    w = cls.random(3, 4, rng, scale=0.9).to_torch()
    x, h, c = (torch.as_tensor(rng.standard_normal(n)) for n in (3, 4, 4))
    jac = torch.autograd.functional.jacobian
    if kind == "GRU":
        J, carry, gate_terms = gated.gru_jacobian(w, x, h)
        _ok(jac(lambda hp: gated.gru_step(w, x, hp, gate_h=hp.detach()).h, h), carry)
        _ok(carry, torch.diag(gated.gru_step(w, x, h).u))
        _ok(jac(lambda hp: gated.gru_step(w, x, hp).h, h), J)
    else:
        J, carry, gate_terms = gated.lstm_jacobian(w, x, h, c)
        _ok(jac(lambda cp: gated.lstm_step(w, x, h, cp, gate_h=h.detach()).c, c), carry[:4, :4])
        _ok(carry[:4, :4], torch.diag(gated.lstm_step(w, x, h, c).f))
        full = jac(lambda s: torch.cat(gated.lstm_step(w, x, s[4:], s[:4])[1::-1]), torch.cat([c, h]))
        _ok(full, J)
        # without peepholes the c -> c block has no gate term
        assert float(gate_terms[:4, :4].abs().max()) == 0.0
    _ok(J, carry + gate_terms)
    assert float(gate_terms.abs().max()) > 1e-3  # the full Jacobian really differs from the carry


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), D=st.integers(1, 3), H=st.integers(1, 4), T=st.integers(1, 4),
       kind=st.sampled_from(["GRU", "LSTM"]))
def test_property_weight_gradients_match_torch(seed, D, H, T, kind):
    rng = np.random.default_rng(seed)
    cls = gated.GRUWeights if kind == "GRU" else gated.LSTMWeights
    w = cls.random(D, H, rng, scale=1.5)
    X = torch.as_tensor(rng.standard_normal((1, T, D)))
    V = torch.as_tensor(rng.standard_normal((1, T, H)))
    module = w.torch_module()
    (module(X)[0] * V).sum().backward()
    mine = w.to_torch().requires_grad_()
    out = gated.gru_forward(mine, X)[0] if kind == "GRU" else gated.lstm_forward(mine, X)[0]
    (out * V).sum().backward()
    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        _ok(getattr(mine, name).grad, getattr(module, name + "_l0").grad)


def test_bad_gate_weight_shapes():
    with pytest.raises(ShapeError, match="weight_ih"):
        gated.GRUWeights(np.zeros((4, 2)), np.zeros((3, 1)), None, None)  # 4 rows is not 3*H
    with pytest.raises(ShapeError, match="weight_hh"):
        gated.GRUWeights(np.zeros((6, 2)), np.zeros((6, 3)), None, None)  # H=2 needs (6, 2)
    with pytest.raises(ShapeError, match="bias_hh"):
        gated.LSTMWeights(np.zeros((8, 2)), np.zeros((8, 2)), np.zeros(8), np.zeros(6))
    with pytest.raises(NonFiniteError, match="weight_ih"):
        gated.LSTMWeights(np.full((8, 2), np.nan), np.zeros((8, 2)), None, None)
    with pytest.raises(SeqgradTypeError, match="weight_ih"):
        gated.GRUWeights("W", np.zeros((3, 1)), None, None)
    with pytest.raises(SeqgradValueError, match="gate"):
        gated.GRUWeights.random(2, 2).gate("z")  # the text's names: r, u, n
    with pytest.raises(SeqgradTypeError, match="module"):
        gated.GRUWeights.from_torch(torch.nn.GRU(2, 3, num_layers=2))
    with pytest.raises(SeqgradTypeError, match="module"):
        gated.LSTMWeights.from_torch(torch.nn.Linear(2, 3))


def test_bad_inputs_to_cells(rng):
    w = gated.GRUWeights.random(3, 4, rng)
    with pytest.raises(ShapeError, match="x_t"):
        gated.gru_step(w, np.zeros(2), np.zeros(4))  # mismatched input width
    with pytest.raises(ShapeError, match="h_prev"):
        gated.gru_step(w, np.zeros(3), np.zeros(5))  # mismatched hidden width
    with pytest.raises(NonFiniteError, match="x_t"):
        gated.gru_step(w, np.array([0.0, np.inf, 0.0]), np.zeros(4))
    lw = gated.LSTMWeights.random(3, 4, rng)
    with pytest.raises(ShapeError, match="c_prev"):
        gated.lstm_step(lw, np.zeros(3), np.zeros(4), np.zeros(3))
    with pytest.raises(ShapeError, match="X"):
        gated.lstm_forward(lw, np.zeros((0, 3)))
    with pytest.raises(SeqgradValueError, match="hidden_size"):
        gated.LSTMWeights.random(3, 0)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("kind", ["GRU", "LSTM"])
def test_gated_references_on_cuda(kind):
    from seqgrad.crosscheck.registry import Context
    from seqgrad.crosscheck.checks import gated as checks

    for dtype in ("float64", "float32"):
        ctx = Context(device="cuda", dtype=dtype, name=f"gated.{kind.lower()}_vs_torch")
        assert checks._forward_and_grads(kind, ctx).passed
        assert checks._jacobian_checks(kind, Context(device="cuda", dtype=dtype, name="jac")).passed
