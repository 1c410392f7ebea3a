"""Fuzz of the numeric entry points (issue 18): extreme magnitudes, masks and dtypes never give a
silent NaN, inf or zero.  Every call either returns finite values that agree with a reference
(the other path, autograd, or 50-digit arithmetic) or raises one clear seqgrad error."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from seqgrad.numeric import clipping, course, recurrent
from seqgrad.numeric.attention import MultiHeadAttention, attention_mask
from seqgrad.numeric.layernorm import LayerNorm, layer_norm
from seqgrad.numeric.positions import sinusoidal
from seqgrad.errors import SeqgradError, SeqgradValueError

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: every magnitude float64 holds, from subnormal to nearly the largest, of either sign, and zero
extreme = st.one_of(
    st.just(0.0),
    st.builds(lambda m, e, s: s * m * 10.0**e, st.floats(1.0, 9.99), st.integers(-300, 300), st.sampled_from([-1.0, 1.0])),
    st.floats(-10, 10, allow_nan=False),
)


def _rows(draw, n_rows, D):
    return [[draw(extreme) for _ in range(D)] for _ in range(n_rows)]


@st.composite
def matrices(draw, max_D=6):
    D = draw(st.integers(1, max_D))
    return torch.tensor(_rows(draw, draw(st.integers(1, 3)), D), dtype=torch.float64)


def _ln_reference(row: list[float], eps: float) -> list[float]:
    with mpmath.workdps(60):
        h = [mpmath.mpf(x) for x in row]
        mu = mpmath.fsum(h) / len(h)
        var = mpmath.fsum((x - mu) ** 2 for x in h) / len(h)
        return [float((x - mu) / mpmath.sqrt(var + eps)) for x in h]


@FUZZ
@given(H=matrices())
def test_layernorm_is_finite_correct_and_the_same_on_both_paths(H):
    fused = LayerNorm(H.shape[-1])(H)
    record: dict = {}
    recorded = LayerNorm(H.shape[-1])(H, record)
    functional = layer_norm(H)[0]
    for Y in (fused, recorded, functional):
        assert bool(torch.isfinite(Y).all())
    reference = torch.tensor([_ln_reference(r, 1e-5) for r in H.tolist()], dtype=torch.float64)
    for Y in (fused, recorded, functional):
        assert torch.allclose(Y.detach(), reference, rtol=1e-9, atol=1e-12), (H, Y, reference)


@FUZZ
@given(H=matrices(), dtype=st.sampled_from([torch.float32, torch.float64]))
def test_layernorm_gradient_is_finite(H, dtype):
    H = H.clamp(-torch.finfo(dtype).max / 8, torch.finfo(dtype).max / 8).to(dtype).requires_grad_()
    Y = LayerNorm(H.shape[-1], dtype=dtype)(H, {})
    (g,) = torch.autograd.grad((Y * torch.linspace(-1, 1, Y.numel(), dtype=dtype).reshape(Y.shape)).sum(), H)
    assert bool(torch.isfinite(g).all())


@st.composite
def attention_cases(draw):
    T = draw(st.integers(1, 4))
    D = 4
    # the whole float64 range: beyond about 1e154 Q K^T overflows, and both paths must refuse alike
    scale = draw(st.one_of(st.builds(lambda e: 10.0**e, st.integers(-308, 308)), st.just(torch.finfo(torch.float64).max)))
    X = torch.tensor([[draw(st.floats(-1, 1)) * scale for _ in range(D)] for _ in range(T)], dtype=torch.float64)
    kind = draw(st.sampled_from(["none", "causal", "random", "all-inf row", "bool"]))
    if kind == "none":
        M = None
    elif kind == "causal":
        M = attention_mask(T, causal=True)
    elif kind == "bool":
        M = torch.tensor([[draw(st.booleans()) for _ in range(T)] for _ in range(T)])
    else:
        allowed = [[draw(st.booleans()) for _ in range(T)] for _ in range(T)]
        if kind == "random":
            for row in allowed:
                row[draw(st.integers(0, T - 1))] = True
        else:
            allowed[draw(st.integers(0, T - 1))] = [False] * T
        M = torch.tensor([[0.0 if a else -math.inf for a in row] for row in allowed], dtype=torch.float64)
    return X, M


@pytest.mark.parametrize("T", [1, 3])
@pytest.mark.parametrize("exponent", [150, 153, 154, 155, 156, 160])
def test_attention_paths_agree_where_the_scores_overflow(T, exponent):
    """Near 1e155 Q K^T overflows float64: the fused kernel (which scales q and k before the product) once
    returned a finite answer where the explicit path refused; now both answer alike."""
    X = torch.zeros(T, 4, dtype=torch.float64)
    X[:, 2] = 10.0**exponent
    X[0, 0] = -(10.0 ** (exponent - 1))
    mha = MultiHeadAttention.random(4, 2, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        fused, recorded = _outcome(lambda: mha(X)), _outcome(lambda: mha(X, None, {}))
    if isinstance(fused, type) or isinstance(recorded, type):
        assert fused == recorded == SeqgradValueError, (fused, recorded)
    else:
        assert bool(torch.isfinite(fused).all()) and torch.allclose(fused, recorded, rtol=1e-9, atol=0)


def test_ordinary_inputs_take_the_fused_path(monkeypatch):
    calls = []
    fused = torch.nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", lambda *a, **k: calls.append(1) or fused(*a, **k))
    mha = MultiHeadAttention.random(4, 2, generator=torch.Generator().manual_seed(1))
    X = torch.randn(3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(2)) * 1e100
    with torch.no_grad():
        assert torch.allclose(mha(X), mha(X, None, {}), rtol=1e-9, atol=0)
    assert calls == [1]  # the record path does not call it; the fused path did


def _outcome(f):
    try:
        return f()
    except SeqgradError as exc:
        return type(exc)


@FUZZ
@given(case=attention_cases(), seed=st.integers(0, 2**16))
def test_attention_paths_agree_on_every_edge_case(case, seed):
    X, M = case
    mha = MultiHeadAttention.random(4, 2, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        fused = _outcome(lambda: mha(X, M))
        recorded = _outcome(lambda: mha(X, M, {}))
    if isinstance(fused, type) or isinstance(recorded, type):
        assert fused == recorded, (fused, recorded)  # both refuse, with the same error class
        return
    assert bool(torch.isfinite(fused).all()) and bool(torch.isfinite(recorded).all())
    assert torch.allclose(fused, recorded, rtol=1e-9, atol=1e-12 * float(X.abs().max() + 1))


@FUZZ
@given(grads=st.lists(st.lists(extreme, min_size=1, max_size=4), min_size=1, max_size=3),
       tau=st.floats(1e-3, 1e3), kind=st.sampled_from(["numpy", "torch"]))
def test_clipping_never_zeroes_or_overflows(grads, tau, kind):
    arrays = [np.array(g) if kind == "numpy" else torch.tensor(g, dtype=torch.float64) for g in grads]
    out = clipping.clip_global_norm(arrays, tau)
    flat = np.concatenate([np.asarray(g, dtype=np.float64).ravel() for g in out.grads])
    before = np.concatenate([np.asarray(g).ravel() for g in grads])
    assert np.all(np.isfinite(flat))
    norm_after = math.hypot(*flat)
    assert norm_after <= tau * (1 + 1e-12)
    if math.hypot(*before) > tau * (1 + 1e-12):
        assert norm_after == pytest.approx(tau, rel=1e-12)  # clipped to tau, never to zero
        big = int(np.argmax(np.abs(before)))
        assert np.sign(flat[big]) == np.sign(before[big])  # the direction is kept
    else:
        assert np.array_equal(flat, before)


@FUZZ
@given(w=st.floats(-4, 4), exponent=st.integers(-3, 4), T=st.integers(1, 60),
       activation=st.sampled_from(recurrent.ACTIVATIONS))
def test_bptt_and_autograd_agree_or_both_refuse(w, exponent, T, activation):
    rng = np.random.default_rng(T)
    W_h = np.array([[w, 0.3], [-0.2, w]]) * 10.0**exponent
    params = recurrent.Params(rng.normal(size=(2, 2)), W_h, rng.normal(size=(1, 2)))
    X, y = rng.normal(size=(1, T, 2)), rng.normal(size=(1, 1))
    manual = _outcome(lambda: recurrent.bptt(params, X, y, activation))
    auto = _outcome(lambda: recurrent.autograd(params, X, y, activation))
    if isinstance(manual, type) or isinstance(auto, type):
        assert manual == auto == SeqgradValueError, (manual, auto)
        return
    for key in ("W_x", "W_h", "W_o", "L"):
        assert np.all(np.isfinite(manual[key]))
        np.testing.assert_allclose(manual[key], auto[key], rtol=1e-7, atol=1e-9 * (1 + np.max(np.abs(auto[key]))))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64])
def test_every_integer_dtype_of_token_ids_selects_the_same_rows(dtype):
    enc = course.encoder()
    ids = course.token_ids()
    with torch.no_grad():
        assert torch.equal(enc(torch.tensor(ids, dtype=dtype)), enc(ids))
        assert torch.equal(enc(np.array(ids, dtype=np.dtype(str(dtype)[6:]))), enc(ids))


@pytest.mark.parametrize("ids", [torch.tensor([True, False]), torch.tensor([0.0, 1.0]), "a journey", [[0, 1], [2]]])
def test_non_integer_token_ids_are_refused(ids):
    with pytest.raises(SeqgradError):
        course.encoder()(ids)


@FUZZ
@given(T=st.integers(1, 4096), D=st.integers(1, 64), base=st.floats(1.5, 1e6))
def test_sinusoidal_is_finite_and_bounded(T, D, base):
    P = sinusoidal(T, D, base)
    assert P.shape == (T, D) and bool(P.abs().le(1).all())
