"""Property tests (hypothesis) of the encoder's pieces."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from seqgrad.numeric.attention import MultiHeadAttention, attention_mask
from seqgrad.numeric.encoder import Encoder
from seqgrad.numeric.layernorm import layer_norm

FAST = settings(max_examples=20, deadline=None)
finite = st.floats(-50, 50, allow_nan=False, allow_infinity=False)


@FAST
@given(arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(2, 9)), elements=finite))
def test_layer_norm_rows_have_mean_zero_and_variance_below_one(H):
    X, mu, var = layer_norm(torch.from_numpy(H))
    assert torch.allclose(X.mean(-1), torch.zeros(H.shape[0], dtype=torch.float64), atol=1e-9)
    assert bool((X.var(-1, unbiased=False) <= 1 + 1e-12).all())
    assert torch.allclose(X.var(-1, unbiased=False), var / (var + 1e-5), atol=1e-9)


@FAST
@given(st.integers(1, 7), st.data())
def test_softmax_rows_sum_to_one_under_any_valid_mask(T, data):
    excluded = np.array(data.draw(arrays(np.bool_, (T, T))))
    keep = data.draw(st.lists(st.integers(0, T - 1), min_size=T, max_size=T))
    excluded[np.arange(T), keep] = False  # every row keeps one source
    M = attention_mask(T, exclude=torch.from_numpy(excluded))
    mha = MultiHeadAttention.random(4, 2, generator=torch.Generator().manual_seed(T))
    X = torch.from_numpy(data.draw(arrays(np.float64, (T, 4), elements=st.floats(-3, 3))))
    record = {}
    mha(X, M, record)
    for i in (1, 2):
        A = record[f"head{i}.A"]
        assert torch.allclose(A.sum(-1), torch.ones(T, dtype=torch.float64))
        assert bool((A[torch.from_numpy(excluded)] == 0).all())


NO_POSITIONS = Encoder.random(9, 6, 3, 8, n_blocks=2, bias=True, positions=None, seed=1)
CAUSAL = Encoder.random(9, 6, 2, 8, n_blocks=2, seed=2)


@FAST
@given(st.permutations(list(range(6))), st.integers(0, 1000))
def test_permutation_equivariance_without_positions(perm, seed):
    enc = NO_POSITIONS
    H = torch.randn(6, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    pi = torch.tensor(perm)
    with torch.no_grad():
        assert torch.allclose(enc.encode(H[pi]), enc.encode(H)[pi], atol=1e-12)


@FAST
@given(st.integers(0, 4), st.integers(0, 1000))
def test_causal_output_ignores_the_future(t, seed):
    """Positions after t change (t <= 4 of 6, so there always is a future to change: with t = 5 the test
    once compared a tensor with itself); the causal outputs up to t do not, the unmasked ones do."""
    enc = CAUSAL
    g = torch.Generator().manual_seed(seed)
    H = torch.randn(6, 6, dtype=torch.float64, generator=g)
    H2 = H.clone()
    H2[t + 1:] = torch.randn(6 - t - 1, 6, dtype=torch.float64, generator=g)
    assert not torch.equal(H2[t + 1:], H[t + 1:])
    with torch.no_grad():
        assert torch.allclose(enc.encode(H, causal=True)[: t + 1], enc.encode(H2, causal=True)[: t + 1], atol=1e-12)
        assert not torch.allclose(enc.encode(H)[: t + 1], enc.encode(H2)[: t + 1], atol=1e-12)  # the probe can fail
