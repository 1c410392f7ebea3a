"""Derived RNN gradients against torch autograd (property tests), numeric/recurrent, the checks."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seqgrad.crosscheck.checks import rnn as rnn_checks
from seqgrad.crosscheck.cells import RNNFunction
from seqgrad.crosscheck.registry import Context, all_checks, run_one
from seqgrad.crosscheck.tolerance import tolerance
from seqgrad.derive import rnn
from seqgrad.numeric import recurrent
from seqgrad import sigfig
from seqgrad.errors import NonFiniteError, SeqgradValueError, ShapeError

TOL = tolerance("float64", "cpu")


def _assert_close(ours: dict, ref: dict):
    for key, value in ref.items():
        mine = ours[key].detach().cpu().numpy() if hasattr(ours[key], "detach") else np.asarray(ours[key])
        np.testing.assert_allclose(mine.reshape(np.shape(value)), value, rtol=TOL.rtol, atol=TOL.atol, err_msg=key)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.integers(1, 5), D=st.integers(1, 3), H=st.integers(1, 3), C=st.integers(1, 2),
    activation=st.sampled_from(["tanh", "sigmoid", "relu", "identity"]),
    loss=st.sampled_from([("final", "sum"), ("every", "sum"), ("every", "mean")]),
    bias=st.booleans(), seed=st.integers(0, 2**16),
)
def test_vector_gradients_match_autograd(steps, D, H, C, activation, loss, bias, seed):
    net = rnn.unroll(steps=steps, activation=activation, inputs=D, hidden=H, outputs=C, bias=bias,
                     loss=loss[0], reduction=loss[1])
    params, X, y = rnn_checks.random_case(net, np.random.default_rng(seed), batch=3)
    ours = RNNFunction(net, "torch")(params, X, y)
    _assert_close(ours, rnn_checks.reference(net, params, X, y, "cpu"))


@settings(max_examples=12, deadline=None)
@given(steps=st.integers(1, 7), activation=st.sampled_from(["tanh", "sigmoid", "relu", "identity"]),
       loss=st.sampled_from([("final", "sum"), ("every", "mean")]), bias=st.booleans(), seed=st.integers(0, 2**16))
def test_scalar_gradients_match_autograd(steps, activation, loss, bias, seed):
    net = rnn.unroll(steps=steps, activation=activation, bias=bias, loss=loss[0], reduction=loss[1])
    params, X, y = rnn_checks.random_case(net, np.random.default_rng(seed), batch=4)
    ours = RNNFunction(net, "numpy")(params, X, y)
    _assert_close(ours, rnn_checks.reference(net, params, X, y, "cpu"))


def test_batch_rows_are_independent_sequences():
    net = rnn.unroll(steps=4, activation="tanh", inputs=2, hidden=3, outputs=2, bias=True)
    params, X, y = rnn_checks.random_case(net, np.random.default_rng(5), batch=6)
    f = RNNFunction(net, "numpy")
    whole = f(params, X, y)
    parts = [f(params, X[i:i + 1], y[i:i + 1]) for i in range(6)]
    for key in ("L", "W_x", "W_h", "W_o", "b_h", "b_o"):
        np.testing.assert_allclose(whole[key], sum(p[key] for p in parts), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(whole["X"], np.concatenate([p["X"] for p in parts]), rtol=1e-12, atol=1e-14)


def test_manual_bptt_and_seeded_example():
    ex = recurrent.seeded_example()
    assert sigfig.matches(ex["h"][0][0], 0.0128) and sigfig.matches(ex["h"][1][0], 0.00930)
    assert sigfig.matches(ex["prediction"], -0.144) and sigfig.matches(ex["loss"], 0.208)
    grads = recurrent.bptt(ex["params"], ex["X"], ex["y"])
    np.testing.assert_allclose(grads["W_x"], ex["grad_W_x"], atol=1e-6)
    np.testing.assert_allclose(grads["W_h"], ex["grad_W_h"], atol=1e-6)


def test_numeric_reference_refuses_bad_input():
    p = dict(W_x=np.zeros((2, 3)), W_h=np.zeros((2, 2)), W_o=np.zeros((1, 2)))
    with pytest.raises(ShapeError, match="W_h"):
        recurrent.Params(**dict(p, W_h=np.zeros((3, 3))))
    with pytest.raises(NonFiniteError, match="W_o"):
        recurrent.Params(**dict(p, W_o=np.full((1, 2), np.nan)))
    params = recurrent.Params(**p)
    with pytest.raises(ShapeError, match="X"):
        recurrent.bptt(params, np.zeros((1, 2, 2)), np.zeros((1, 1)))
    with pytest.raises(SeqgradValueError, match="activation"):
        recurrent.bptt(params, np.zeros((1, 2, 3)), np.zeros((1, 1)), activation="gelu")


@pytest.mark.parametrize("item", [c for c in all_checks("rnn.*")], ids=lambda c: c.name)
def test_registered_checks_pass(item):
    result = run_one(item, "cpu")
    assert result.status == "pass", result.detail


def test_checks_refuse_what_they_should():
    """A deliberately wrong gradient fails the autograd comparison (the checks can fail): the compiled
    code is printed from the cell's general-t derivation, so that is where the error is planted."""
    net = rnn.unroll(steps=3, activation="tanh")
    gen = net.cell.general()
    gen.step_grads["w_h"] = gen.step_grads["w_x"]
    outcome = rnn_checks.against_autograd(net, Context(name="wrong"))
    assert not outcome.passed


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_checks_on_cuda():
    for item in all_checks("rnn.*"):
        assert run_one(item, "cuda").status == "pass", item.name
