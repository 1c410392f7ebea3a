"""numeric/clipping.py: global-norm clipping, its properties, and torch's clip_grad_norm_."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from seqgrad.crosscheck.tolerance import compare
from seqgrad.numeric import clipping
from seqgrad.errors import NonFiniteError, SeqgradTypeError, SeqgradValueError

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
gradient_lists = st.lists(arrays(np.float64, st.integers(1, 6), elements=finite), min_size=1, max_size=4)
taus = st.floats(1e-3, 1e3)


def _flat(grads):
    return np.concatenate([np.asarray(g, dtype=np.float64).ravel() for g in grads])


@settings(max_examples=200, deadline=None)
@given(grads=gradient_lists, tau=taus)
def test_property_direction_norm_and_identity(grads, tau):
    out = clipping.clip_global_norm(grads, tau)
    before, after = _flat(grads), _flat(out.grads)
    norm = math.hypot(*before)  # exact without underflow (np.linalg.norm squares: 1e-244 -> 0)
    assert out.total_norm == pytest.approx(norm, rel=1e-12, abs=1e-300)
    if norm <= tau:  # inside the ball (a zero gradient included): unchanged
        assert out.coefficient == 1.0 and np.array_equal(after, before)
    else:  # the norm becomes tau and the direction is kept
        assert np.linalg.norm(after) == pytest.approx(tau, rel=1e-12)
        assert after @ before / (np.linalg.norm(after) * norm) == pytest.approx(1.0, rel=1e-12)
    assert np.linalg.norm(after) <= tau * (1 + 1e-12)
    assert [g.shape for g in out.grads] == [g.shape for g in grads]


@settings(max_examples=100, deadline=None)
@given(grads=gradient_lists, tau=taus, eta=st.floats(1e-4, 10))
def test_property_plain_gd_step_at_most_eta_tau(grads, tau, eta):
    step = eta * _flat(clipping.clip_global_norm(grads, tau).grads)
    assert np.linalg.norm(step) <= eta * tau * (1 + 1e-12)


@settings(max_examples=100, deadline=None)
@given(grads=gradient_lists, tau=taus)
def test_property_matches_clip_grad_norm(grads, tau):
    assume(np.linalg.norm(_flat(grads)) > 0)
    params = [torch.nn.Parameter(torch.zeros(g.shape, dtype=torch.float64)) for g in grads]
    for p, g in zip(params, grads):
        p.grad = torch.as_tensor(g).clone()
    torch_norm = torch.nn.utils.clip_grad_norm_(params, tau)
    mine = clipping.clip_global_norm(grads, tau, eps=clipping.TORCH_EPS)
    assert compare(_flat(mine.grads), _flat([p.grad for p in params])).passed
    assert compare(mine.total_norm, float(torch_norm)).passed


def test_torch_tensors_in_tensors_out_and_input_untouched():
    g = [torch.tensor([3.0, 4.0], dtype=torch.float64)]
    out = clipping.clip_global_norm(g, 1.0)
    assert isinstance(out.grads[0], torch.Tensor)
    assert torch.allclose(out.grads[0], torch.tensor([0.6, 0.8], dtype=torch.float64))
    assert g[0].tolist() == [3.0, 4.0] and out.total_norm == 5.0 and out.coefficient == pytest.approx(0.2)


def test_torch_eps_makes_the_difference_visible():
    g = [np.array([3.0, 4.0])]
    assert np.linalg.norm(clipping.clip_global_norm(g, 1.0).grads[0]) == pytest.approx(1.0, abs=1e-15)
    torch_like = np.linalg.norm(clipping.clip_global_norm(g, 1.0, eps=clipping.TORCH_EPS).grads[0])
    assert torch_like == pytest.approx(5.0 / (5.0 + 1e-6), abs=1e-15) and torch_like < 1.0


def test_zero_gradient_left_alone():
    out = clipping.clip_global_norm([np.zeros((2, 2)), np.zeros(3)], 0.5)
    assert out.total_norm == 0.0 and out.coefficient == 1.0 and not np.any(_flat(out.grads))


def test_bad_inputs():
    g = [np.ones(3)]
    for tau in (0, -1.0):
        with pytest.raises(SeqgradValueError, match="tau"):
            clipping.clip_global_norm(g, tau)
    with pytest.raises(NonFiniteError, match="tau"):
        clipping.clip_global_norm(g, float("nan"))
    with pytest.raises(NonFiniteError, match=r"grads\[1\]"):
        clipping.clip_global_norm([np.ones(2), np.array([1.0, np.inf])], 1.0)
    with pytest.raises(SeqgradValueError, match="grads"):
        clipping.clip_global_norm([], 1.0)
    with pytest.raises(SeqgradTypeError, match="grads"):
        clipping.clip_global_norm(np.ones(3), 1.0)  # one array, not a list of gradients
    with pytest.raises(SeqgradTypeError, match=r"grads\[0\]"):
        clipping.clip_global_norm(["0.5"], 1.0)
    with pytest.raises(SeqgradValueError, match="eps"):
        clipping.clip_global_norm(g, 1.0, eps=-1e-6)
