"""derive.conv, numeric.conv and crosscheck.conv_compile: the lecture's convolution, its gradients, max-pooling."""

from __future__ import annotations

import random

import pytest
import sympy as sp
import torch
import torch.nn.functional as F

from seqgrad.crosscheck.checks.conv import compiled_conv
from seqgrad.derive import conv as dc
from seqgrad.numeric import conv as nc


def test_weight_gradient_is_a_sum_over_positions_at_symbolic_size():
    c = dc.Conv2d(stride=dc.s)
    g = c.grad_K()
    assert isinstance(g, sp.Sum)
    assert g == sp.Sum(dc.G[dc.i, dc.j] * dc.X[dc.s * dc.i + dc.p, dc.s * dc.j + dc.q], (dc.i, 0, dc.H_o - 1), (dc.j, 0, dc.W_o - 1))
    assert c.grad_b() == sp.Sum(dc.G[dc.i, dc.j], (dc.i, 0, dc.H_o - 1), (dc.j, 0, dc.W_o - 1))


def test_input_gradient_is_the_full_correlation_with_the_flipped_kernel():
    c = dc.Conv2d()
    assert c.grad_X() == sp.Sum(dc.K[dc.u, dc.v] * dc.Ghat[dc.m - dc.u, dc.n - dc.v], (dc.u, 0, dc.k - 1), (dc.v, 0, dc.k - 1))
    flipped = c.grad_X_flipped()
    assert flipped.function.has(dc.K[dc.k - 1 - dc.u, dc.k - 1 - dc.v])
    dilated = sp.IndexedBase(dc.Dilated(dc.G, 2))  # with a stride: G dilated by it (was refused)
    assert dc.Conv2d(stride=2).grad_X() == sp.Sum(dc.K[dc.u, dc.v] * dilated[dc.m - dc.u, dc.n - dc.v],
                                                  (dc.u, 0, dc.k - 1), (dc.v, 0, dc.k - 1))


@pytest.mark.parametrize("size,k,stride", [((7, 6), 3, 2), ((8, 7), 2, 3), ((5, 5), 3, 1)])
def test_strided_input_gradient_equals_differentiation_at_concrete_sizes(size, k, stride):
    """Conv2d(stride=s).grad_X() at concrete sizes, the dilated G's entry (s i, s j) replaced by g_ij and every
    other entry by 0, is exactly sympy.diff of sum G o Y (ExplicitConv) at every input entry."""
    ec = dc.ExplicitConv(size, (k, k), stride=stride)
    formula = dc.Conv2d(stride=stride).grad_X().subs(dc.k, k).doit()
    D = sp.IndexedBase(dc.Dilated(dc.G, stride)) if stride > 1 else dc.Ghat  # stride 1: G extended by zeros

    def entry(e):
        if e.base == D:
            idx = tuple(int(a) for a in e.indices)
            return ec.g.get(tuple(a // stride for a in idx), 0) if all(a % stride == 0 for a in idx) else sp.Integer(0)
        return ec.k[tuple(int(a) for a in e.indices)]

    by_diff = ec.by_differentiation()["X"]
    for (a, c), expected in by_diff.items():
        value = formula.xreplace({dc.m: a, dc.n: c}).replace(lambda e: isinstance(e, sp.Indexed), entry)
        assert sp.expand(value - expected) == 0, (a, c)


@pytest.mark.parametrize("size,kernel,stride,padding", [((6,), (3,), 1, 0), ((7,), (2,), 3, 2), ((4, 5), (3, 2), 2, 1),
                                                         ((3, 3), (3, 3), 1, 0), ((5, 4), (1, 2), 1, 2)])
def test_explicit_formulas_equal_differentiation(size, kernel, stride, padding):
    assert dc.prove_explicit(dc.ExplicitConv(size, kernel, stride=stride, padding=padding)).holds


def test_a_wrong_formula_is_caught():
    ec = dc.ExplicitConv((4,), (2,))
    f = ec.by_formula()
    first = next(iter(f["K"]))
    d = ec.by_differentiation()
    assert sp.expand(d["K"][first] - f["K"][first]) == 0
    assert sp.expand(d["K"][first] - (f["K"][first] + ec.g[(0,)] * ec.x[(0,)])) != 0  # a missing/extra term does not pass


@pytest.mark.parametrize("seed", range(4))
def test_compiled_derivation_matches_conv2d_autograd(seed):
    rng = random.Random(seed)
    k, s, P = rng.randint(1, 4), rng.randint(1, 3), rng.randint(0, 2)
    H, W = rng.randint(max(1, k - 2 * P), 10), rng.randint(max(1, k - 2 * P), 10)
    Y_fn, dK_fn, db_fn, dX_fn = compiled_conv(H, W, k, s, P)
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(2, H, W, generator=g, dtype=torch.float64, requires_grad=True)
    K = torch.randn(k, k, generator=g, dtype=torch.float64, requires_grad=True)
    b = torch.randn((), generator=g, dtype=torch.float64, requires_grad=True)
    Y = F.conv2d(X[:, None], K[None, None], b.reshape(1), stride=s, padding=P)[:, 0]
    G = torch.randn(Y.shape, generator=g, dtype=torch.float64)
    gK, gb, gX = torch.autograd.grad(Y, (K, b, X), G)  # gX: the input gradient at the same stride
    torch.testing.assert_close(Y_fn(X=X.detach(), K=K.detach()[None], b=b.detach()), Y.detach(), rtol=1e-9, atol=1e-10)
    torch.testing.assert_close(dK_fn(G=G, X=X.detach()), gK, rtol=1e-9, atol=1e-10)
    torch.testing.assert_close(db_fn(G=G), gb, rtol=1e-9, atol=1e-10)
    upstream = str(dc.Ghat) if s == 1 else str(dc.G)
    assert dX_fn.arguments == (upstream, "K")
    torch.testing.assert_close(dX_fn(**{upstream: G, "K": K.detach()[None]}), gX, rtol=1e-9, atol=1e-10)


def test_numeric_conv_1d_and_2d_match_torch():
    g = torch.Generator().manual_seed(3)
    X1, K1 = torch.randn(3, 11, generator=g, dtype=torch.float64), torch.randn(4, generator=g, dtype=torch.float64)
    torch.testing.assert_close(nc.conv(X1, K1, 0.25, stride=2, padding=1),
                               F.conv1d(X1[:, None], K1[None, None], torch.tensor([0.25], dtype=torch.float64), stride=2, padding=1)[:, 0])
    X2, K2 = torch.randn(3, 7, 9, generator=g, dtype=torch.float64), torch.randn(3, 2, generator=g, dtype=torch.float64)
    torch.testing.assert_close(nc.conv(X2, K2, stride=(1), padding=2), F.conv2d(X2[:, None], K2[None, None], padding=2)[:, 0])


def test_max_pool_routing_follows_torch_at_ties():
    X = torch.tensor([[[1., 1, 0, 2], [1, 0, 2, 2], [3, 3, 3, 3], [3, 3, 3, 3]]], dtype=torch.float64)
    assert dc.max_pool_routing(X[0].tolist(), 2) == [[(0, 0), (0, 3)], [(2, 0), (2, 2)]]
    G = torch.tensor([[[1., 2], [3, 4]]], dtype=torch.float64)
    Xg = X.clone().requires_grad_()
    ref, = torch.autograd.grad(F.max_pool2d(Xg[:, None], 2)[:, 0], Xg, G)
    torch.testing.assert_close(nc.max_pool2d_backward(X, G, 2), ref)
    Z = torch.zeros(1, 4, 4, dtype=torch.float64, requires_grad=True)  # overlapping windows, all tied
    ref, = torch.autograd.grad(F.max_pool2d(Z[:, None], 3, stride=1)[:, 0], Z, torch.ones(1, 2, 2, dtype=torch.float64))
    torch.testing.assert_close(nc.max_pool2d_backward(Z.detach(), torch.ones(1, 2, 2, dtype=torch.float64), 3, 1), ref)


def test_sympy_derivative_of_max_is_the_argmax_indicator():
    d, xs = dc.max_derivative(3)
    assert d.xreplace({xs[0]: 2, xs[1]: 1, xs[2]: 0}) == 1
    assert d.xreplace({xs[0]: 0, xs[1]: 1, xs[2]: 0}) == 0
    assert d.xreplace({xs[0]: 1, xs[1]: 1, xs[2]: 0}) == sp.Rational(1, 2)  # a tie: no derivative (torch picks the first)


def test_receptive_field_formula_recurrence_and_measurement():
    assert dc.receptive_field([3, 3, 3]) == 7
    assert dc.receptive_field([3, 3], [2, 1]) == 1 + 2 + 2 * 2
    r, closed = dc.receptive_field_recurrence(5)
    assert sp.expand(r - closed) == 0
    k1, k2 = sp.symbols("k1 k2")
    assert sp.expand(dc.receptive_field([k1, k2], [2, 1]) - (1 + (k1 - 1) + 2 * (k2 - 1))) == 0
    assert nc.receptive_field([1, 5], [3, 1]) == dc.receptive_field([1, 5], [3, 1]) == 13  # skipped positions inside count


def test_output_size_and_vit_patches():
    assert dc.output_size(64, 5) == 60 and dc.output_size(7, 3, 2, 1) == 4
    assert dc.vit_patches(6, 6, 3) == (4, 9)
    assert dc.vit_patches(224, 224, 16, 3) == (196, 768)


def test_latex_renders_every_formula():
    text = dc.Conv2d().latex()
    assert r"\sum" in text and r"\hat{G}" in text and "K_{pq}" in text
