"""Numerical edge cases: huge scores, fully masked rows, saturated activations, float32 vs float64, rounding boundaries."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
import torch

from seqgrad.crosscheck.tolerance import compare
from seqgrad.errors import SeqgradValueError
from seqgrad.sigfig import matches

SCORES = [1e4, -1e4, 0.0, 1e4 - 1.0, -9999.5]


# ---------------------------------------------------------------- softmax at scores around +-1e4


def test_derived_stable_softmax_lambdified_has_no_overflow():
    from seqgrad.derive import softmax

    z = softmax.scores(len(SCORES))
    f = sp.lambdify(z, list(softmax.stable_softmax(z)), "numpy")
    with np.errstate(over="raise", invalid="raise"):  # an overflow or a NaN would raise here
        a = np.array(f(*SCORES), dtype=np.float64)
    reference = torch.softmax(torch.tensor(SCORES, dtype=torch.float64), 0).numpy()
    assert np.all(np.isfinite(a)) and math.isclose(a.sum(), 1.0, rel_tol=1e-15)
    assert compare(a, reference).passed
    assert a[0] == pytest.approx(1 / (1 + math.exp(-1.0)))  # only the two top scores matter


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_compiled_plain_softmax_overflow_is_a_clear_error_never_nan(backend):
    """The textbook form exp(z_i)/sum exp(z_j) overflows at 1e4: crosscheck's compiled code says so
    instead of returning NaN; the max-subtracted form evaluates."""
    from seqgrad.crosscheck.lambdify import lambdify
    from seqgrad.derive import softmax

    z = softmax.scores(len(SCORES))
    values = SCORES if backend == "numpy" else [torch.tensor(v, dtype=torch.float64) for v in SCORES]
    plain = lambdify(None, list(softmax.softmax(z)), z, backend)
    with np.errstate(over="ignore", invalid="ignore"):
        with pytest.raises(SeqgradValueError, match="overflowed to NaN or inf.*stable_softmax"):
            plain(*values)
    stable = lambdify(None, list(softmax.stable_softmax(z)), z, backend)
    a = np.array([float(v) for v in stable(*values)])
    reference = torch.softmax(torch.tensor(SCORES, dtype=torch.float64), 0).numpy()
    assert compare(a, reference).passed


def test_derived_softmax_jacobian_at_huge_scores_matches_autograd():
    from seqgrad.derive import softmax

    z = softmax.scores(3)
    a = softmax.stable_softmax(z)
    J = sp.lambdify(z, softmax.jacobian_closed_form(a), "numpy")(1e4, -1e4, 1e4 - 0.5)
    zt = torch.tensor([1e4, -1e4, 1e4 - 0.5], dtype=torch.float64)
    reference = torch.autograd.functional.jacobian(lambda v: torch.softmax(v, 0), zt).numpy()
    assert np.all(np.isfinite(J)) and compare(np.array(J, dtype=float), reference).passed


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_numeric_attention_head_with_scores_around_1e4(dtype):
    from seqgrad.numeric.attention import Head

    D = 2
    X = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]], dtype=dtype)
    W = torch.eye(D, dtype=dtype) * 100.0 * 2 ** 0.25  # S = X X^T * 1e4 / sqrt(2) * sqrt(2): entries +-1e4 and 0
    head = Head(W, W, torch.eye(D, dtype=dtype), dtype=dtype)
    record: dict = {}
    O = head(X, record=record)
    S, A = record["head1.S"], record["head1.A"]
    assert 5e3 < float(S.detach().abs().max()) < 2e4
    assert bool(torch.isfinite(A).all()) and bool(torch.isfinite(O).all())
    assert torch.allclose(A.sum(-1), torch.ones(3, dtype=dtype))
    assert float(A[0, 0]) == pytest.approx(1.0) and float(A[0, 2]) == 0.0  # exp(-2e4) underflows to exactly 0


# ---------------------------------------------------------------- rows with every source masked


def test_all_masked_rows_are_clear_errors_everywhere():
    from seqgrad.derive import attention as dattn
    from seqgrad.numeric import attention as nattn
    from seqgrad.numeric import course

    oo = dattn.NEG_INF
    with pytest.raises(SeqgradValueError, match="every row"):
        dattn.softmax_rows(sp.Matrix([[1, 2], [3, 4]]), [[0, oo], [oo, oo]])
    with pytest.raises(SeqgradValueError, match="at least one source"):
        nattn.attention_mask(3, padding=[False, False, False])
    M = torch.zeros(7, 7, dtype=torch.float64)
    M[2] = -math.inf
    enc = course.encoder()
    with pytest.raises(SeqgradValueError, match="at least one source"):
        enc.encode(enc.embed(course.token_ids()), mask=M)


def test_a_partly_masked_row_renormalises_over_the_visible_sources():
    from seqgrad.derive import attention as dattn

    A = dattn.softmax_rows(sp.Matrix([[1, 2, 3]]), [[0, dattn.NEG_INF, 0]])
    assert A[0, 1] == 0 and sp.simplify(A[0, 0] + A[0, 2] - 1) == 0


# ---------------------------------------------------------------- saturated tanh and sigmoid


@pytest.mark.parametrize("name,torch_fn", [("tanh", torch.tanh), ("sigmoid", torch.sigmoid)])
def test_saturated_activation_derivative_is_finite_tiny_and_exact(name, torch_fn):
    from seqgrad.numeric.paths import activation

    act = activation(name)
    z = np.array([-40.0, -20.0, 20.0, 40.0])
    h = act.phi(z)
    prime = act.prime(z, h)
    zt = torch.tensor(z, requires_grad=True)
    torch_fn(zt).sum().backward()
    reference = zt.grad.numpy()
    assert np.all(np.isfinite(prime)) and np.all(prime >= 0) and np.all(prime < 1e-8)
    # 1 - tanh^2 cancels to exactly 0 at |z| = 20; autograd does the same: both are the float64 answer
    assert compare(prime, reference).passed


def test_saturated_rnn_gradients_match_autograd():
    from seqgrad.numeric import recurrent

    rng = np.random.default_rng(3)
    params = recurrent.Params(W_x=rng.normal(size=(3, 2)) * 30, W_h=rng.normal(size=(3, 3)) * 30,
                              W_o=rng.normal(size=(1, 3)))
    X, y = rng.normal(size=(2, 6, 2)), rng.normal(size=(2, 1))
    for act in ("tanh", "sigmoid"):
        z, _ = recurrent.forward(params, X, act)
        assert np.abs(z).max() > 20  # the cell is saturated
        manual = recurrent.bptt(params, X, y, act)
        auto = recurrent.autograd(params, X, y, act)
        for key in ("W_x", "W_h", "W_o", "X"):
            assert np.all(np.isfinite(manual[key]))
            assert compare(manual[key], auto[key]).passed, (act, key)


def test_saturated_derived_rnn_gradient_matches_autograd():
    from seqgrad.derive import rnn

    net = rnn.unroll(4, activation="tanh")
    w = {"w_x": 25.0, "w_h": 25.0, "w_o": 1.0}
    xs, y = [0.9, -1.1, 1.3, 0.7], 0.3
    tensors = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in w.items()}
    h = torch.zeros((), dtype=torch.float64)
    for x in xs:
        h = torch.tanh(tensors["w_x"] * x + tensors["w_h"] * h)
    loss = 0.5 * (tensors["w_o"] * h - y) ** 2
    loss.backward()
    leaves = {str(s): s for s in net.program.leaves()}
    subs = {leaves[k]: v for k, v in w.items()}
    subs.update({leaves[f"x_{t}"]: x for t, x in enumerate(xs)})
    subs[leaves["y"]] = y
    for k in w:
        derived = float(net.program.evaluate(net.grad(k), subs))
        assert math.isfinite(derived)
        assert compare(derived, float(tensors[k].grad)).passed, k


# ---------------------------------------------------------------- float32 against float64


def test_encoder_float32_agrees_with_float64_under_the_float32_policy_only():
    from seqgrad.numeric import course

    r64 = course.trace("prenorm_block")
    r32 = course.trace("prenorm_block", dtype="float32")
    for name in ("block0.head1.A", "block0.U", "H_enc"):
        assert r32[name].dtype == torch.float32
        assert compare(r32[name], r64[name], dtype="float32").passed, name
    assert not compare(r32["H_enc"], r64["H_enc"], dtype="float64").passed  # the float64 policy sees single precision


# ---------------------------------------------------------------- rounding boundary


def test_u64_near_the_rounding_boundary_is_judged_right_in_both_precisions():
    """The text prints U[6,4] = -0.0954; the value is -0.09544993, 6.8e-8 from the boundary -0.09545."""
    from seqgrad.numeric import course

    for dtype in ("float64", "float32"):
        u = float(course.trace("prenorm_block", dtype=dtype)["block0.U"][6, 4])
        assert abs(u - (-0.09545)) < 2e-7
        assert matches(u, -0.0954), (dtype, u)
        assert not matches(u, -0.0955), (dtype, u)
    assert matches(-0.09545, -0.0954) and not matches(-0.0954500001, -0.0954)  # the boundary itself is inclusive
