"""LayerNorm: closed-form Jacobian (direct and over intermediates), mean 0, constant row, eps checks, against torch."""

import functools

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings, strategies as st

from seqgrad.derive import layernorm as L
from seqgrad.errors import SeqgradTypeError, SeqgradValueError


def test_closed_form_equals_direct_differentiation():
    ln = L.LayerNorm(3)
    assert all(L.radical_zero(e) == 0 for e in ln.jacobian_direct() - ln.jacobian())


@pytest.mark.parametrize("d", [1, 2, 5, 16])
def test_derive_over_intermediates(d):
    derived = L.LayerNorm(d).derive()
    assert derived.holds and derived.J.shape == (d, d)


def test_derived_jacobian_substitutes_back_to_the_direct_one():
    ln = L.LayerNorm(3)
    J = ln.derive().substituted()
    assert all(L.radical_zero(e) == 0 for e in J - ln.jacobian_direct())


def test_mean_zero_and_constant_row():
    ln = L.LayerNorm(4, gamma=[1] * 4, beta=[0] * 4)
    assert L.radical_zero(sp.Add(*ln.y)) == 0
    a = sp.Symbol("a", real=True)
    const = L.LayerNorm(3, h=[a] * 3)
    assert sp.simplify(const.y - sp.Matrix(const.beta)) == sp.zeros(3, 1)


def test_against_torch_layernorm():
    d = 5
    ln = L.LayerNorm(d, eps=1e-5)
    syms = ln.h + ln.gamma + ln.beta
    f_y = sp.lambdify(syms, list(ln.y), "math")
    f_J = sp.lambdify(syms, list(ln.jacobian()), "math")
    rng = np.random.default_rng(1)
    h, g, b = rng.normal(size=d), rng.normal(size=d), rng.normal(size=d)
    mod = torch.nn.LayerNorm(d, eps=1e-5, dtype=torch.float64)
    with torch.no_grad():
        mod.weight.copy_(torch.tensor(g))
        mod.bias.copy_(torch.tensor(b))
    x = torch.tensor(h)
    assert np.allclose(f_y(*h, *g, *b), mod(x).detach().numpy(), atol=1e-12)
    ref = torch.autograd.functional.jacobian(mod, x).numpy()
    assert np.allclose(np.array(f_J(*h, *g, *b)).reshape(d, d), ref, atol=1e-10)


@pytest.mark.parametrize("eps", [0, -1e-5, 0.0])
def test_eps_must_be_positive(eps):
    with pytest.raises(SeqgradValueError, match="eps"):
        L.LayerNorm(3, eps=eps)


def test_eps_symbol_must_be_known_positive():
    with pytest.raises(SeqgradValueError, match="positive"):
        L.LayerNorm(3, eps=sp.Symbol("e"))
    with pytest.raises(SeqgradTypeError):
        L.LayerNorm(3, eps=True)
    with pytest.raises(SeqgradValueError):
        L.LayerNorm(3, eps=float("nan"))
    assert L.LayerNorm(2, eps=sp.Symbol("e", positive=True)).eps.is_positive


def test_bad_sizes():
    with pytest.raises(SeqgradValueError):
        L.LayerNorm(0)
    with pytest.raises(SeqgradValueError, match="length d=3"):
        L.LayerNorm(3, gamma=[1, 1])


def test_latex():
    tex = L.LayerNorm(4).latex()
    assert r"\delta_{i j}" in tex and tex.startswith(r"\begin{align*}") and L.LayerNorm(4)._repr_latex_() == tex


@functools.cache
def _compiled_jacobian(d: int):
    """LayerNorm(d)'s symbolic Jacobian compiled once per width (with common subexpressions: the entries at d = 8
    hold ~380,000 operations, and compiling them afresh for every example took most of the suite's time)."""
    ln = L.LayerNorm(d)
    return sp.lambdify(ln.h + ln.gamma + ln.beta + [L.EPS], list(ln.jacobian()), "math", cse=True)


@settings(max_examples=20, deadline=None)
@given(d=st.integers(2, 8), seed=st.integers(0, 10 ** 6), eps=st.floats(1e-8, 1.0))
def test_property_jacobian_against_torch(d, seed, eps):
    """Random widths (2..8), inputs, gamma, beta and eps in [1e-8, 1]."""
    f_J = _compiled_jacobian(d)
    rng = np.random.default_rng(seed)
    h, g, b = rng.normal(size=d), rng.normal(size=d), rng.normal(size=d)
    mod = torch.nn.LayerNorm(d, eps=eps, dtype=torch.float64)
    with torch.no_grad():
        mod.weight.copy_(torch.tensor(g))
        mod.bias.copy_(torch.tensor(b))
    ref = torch.autograd.functional.jacobian(mod, torch.tensor(h)).numpy()
    got = np.array(f_J(*h, *g, *b, eps)).reshape(d, d)
    assert np.allclose(got, ref, atol=1e-8, rtol=1e-8)
