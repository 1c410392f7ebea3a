"""Property-based tests (hypothesis) for the Transformer derivations not covered elsewhere: random sizes within the
documented limits and random parameters, derivation against torch autograd or torch.nn."""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from seqgrad.crosscheck.tolerance import compare

FAST = settings(max_examples=8, deadline=None)
reals = st.floats(-1.5, 1.5, allow_nan=False, allow_infinity=False)


def _numbers(draw, rows: int, cols: int) -> list[list[float]]:
    return [[draw(reals) for _ in range(cols)] for _ in range(rows)]


@FAST
@given(data=st.data(), T=st.integers(1, 3), d_model=st.integers(1, 3), d_k=st.integers(1, 2), d_v=st.integers(1, 2),
       causal=st.booleans())
def test_attention_backward_against_autograd(data, T, d_model, d_k, d_v, causal):
    """derive.attention.SelfAttention.backward (dV = A^T G, dS = A * (dA - <A, dA>), ...) against autograd."""
    from seqgrad.derive.attention import SelfAttention, causal_mask

    X, W_Q, W_K = (_numbers(data.draw, *s) for s in ((T, d_model), (d_k, d_model), (d_k, d_model)))
    W_V, G = _numbers(data.draw, d_v, d_model), _numbers(data.draw, T, d_v)
    head = SelfAttention(T, d_model, d_k, d_v, X=X, W_Q=W_Q, W_K=W_K, W_V=W_V, mask=causal_mask(T) if causal else None)
    derived = head.backward(sp.Matrix(G))

    t = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in
         {"X": X, "W_Q": W_Q, "W_K": W_K, "W_V": W_V}.items()}
    S = (t["X"] @ t["W_Q"].T) @ (t["X"] @ t["W_K"].T).T / math.sqrt(d_k)
    if causal:
        S = S.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
    O = torch.softmax(S, -1) @ (t["X"] @ t["W_V"].T)
    (O * torch.tensor(G, dtype=torch.float64)).sum().backward()
    assert compare(np.array(head.O.evalf(), dtype=float), O.detach().numpy()).passed
    for name in ("X", "W_Q", "W_K", "W_V"):
        assert compare(np.array(derived[name].evalf(), dtype=float), t[name].grad.numpy()).passed, name


@FAST
@given(data=st.data(), n=st.integers(1, 5), shift=reals)
def test_softmax_shift_invariance_and_jacobian(data, n, shift):
    from seqgrad.derive import softmax

    z = [data.draw(reals) for _ in range(n)]
    a = np.array(softmax.softmax(z).evalf(), dtype=float).ravel()
    shifted = np.array(softmax.softmax([x + shift for x in z]).evalf(), dtype=float).ravel()
    assert compare(shifted, a).passed
    zt = torch.tensor(z, dtype=torch.float64)
    J = torch.autograd.functional.jacobian(lambda v: torch.softmax(v, 0), zt).numpy()
    closed = softmax.jacobian_closed_form(softmax.softmax(z))
    assert compare(np.array(closed.evalf(), dtype=float), J).passed


@FAST
@given(data=st.data(), T=st.integers(2, 4), d_model=st.integers(1, 3), d_k=st.integers(1, 2))
def test_attention_permutation_equivariance_numerically(data, T, d_model, d_k):
    from seqgrad.derive.attention import SelfAttention, permutation_matrix

    X = sp.Matrix(_numbers(data.draw, T, d_model))
    W = {k: _numbers(data.draw, d_k, d_model) for k in ("W_Q", "W_K", "W_V")}
    perm = data.draw(st.permutations(range(T)))
    P = permutation_matrix(perm)
    O = SelfAttention(T, d_model, d_k, X=X, **W).O
    O_perm = SelfAttention(T, d_model, d_k, X=P * X, **W).O
    assert compare(np.array((P * O).evalf(), dtype=float), np.array(O_perm.evalf(), dtype=float)).passed


@FAST
@given(heads=st.integers(1, 4), per_head=st.integers(1, 4), bias=st.booleans(), d_ff=st.integers(1, 9))
def test_parameter_counts_against_torch_modules(heads, per_head, bias, d_ff):
    from seqgrad.derive import counting

    d_model = heads * per_head
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert counting.attention_params(d_model, heads, bias=bias) == count(torch.nn.MultiheadAttention(d_model, heads, bias=bias))
    layer = torch.nn.TransformerEncoderLayer(d_model, heads, d_ff, bias=bias)
    assert counting.encoder_layer_params(d_model, heads, d_ff, bias=bias) == count(layer)


@FAST
@given(d=st.integers(1, 9), p=st.integers(-20, 20), q=st.integers(-20, 20))
def test_positional_dot_product_offset_form_numerically(d, p, q):
    """PE(p).PE(q) = sum over pairs of cos((p - q) omega_i) (+ the unpaired sine term for odd d), vs torch's encoding."""
    from seqgrad.derive import positional
    from seqgrad.numeric.positions import sinusoidal

    pe = positional.Sinusoidal(d)
    offset = float(positional.dot_product_offset_form(pe, p, q).evalf())
    P = sinusoidal(max(abs(p), abs(q)) + 1, d)  # numeric encoding at positions >= 0
    if p >= 0 and q >= 0:
        assert compare(offset, float(P[p] @ P[q])).passed
    assert compare(offset, float(positional.dot_product(pe, p, q).evalf())).passed
