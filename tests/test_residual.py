"""Residual Jacobians: plain, pre-norm, post-norm, the pre-norm encoder block, depth products, lambda^L, affine MLP."""

import random

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings, strategies as st

from seqgrad.derive import residual as R
from seqgrad.errors import SeqgradValueError


@pytest.mark.parametrize("placement", R.ResidualJacobian.PLACEMENTS)
def test_placements(placement):
    rj = R.ResidualJacobian(2, placement)
    assert rj.prove()
    tex = rj.latex()
    assert tex.startswith(r"\begin{align*}") and "J_{F}" in tex and r"\frac{\partial \mathbf{y}}{\partial \mathbf{h}}" in tex


def test_encoder_block_factors():
    block = R.EncoderBlock(2, 2)
    assert all(R.chain_rule_zero(e) == 0 for e in block.residual())
    result = block.numeric(random.Random(3))
    assert np.allclose(result.computed, result.reference, atol=1e-10)


def test_depth_expansion_and_scaled_shortcuts():
    dp = R.DepthProduct(3, 2)
    assert (dp.product() - dp.expansion()).applyfunc(sp.expand) == sp.zeros(2, 2)
    lam = sp.Symbol("lambda")
    dl = R.DepthProduct(3, 2, scale=lam)
    zero = {s: 0 for J in dl.J for s in J}
    assert dl.product().subs(zero) == lam ** 3 * sp.eye(2)
    assert r"\mathbf{J}_{3} \mathbf{J}_{2} \mathbf{J}_{1}" in R.DepthProduct(3, 2).latex()


def test_mlp_without_activation_is_affine():
    mlp, affine, x = R.mlp_without_activation(3, 4)
    assert (mlp - affine).applyfunc(sp.expand) == sp.zeros(3, 1)
    assert all(sp.diff(e, a, b) == 0 for e in mlp for a in x for b in x)


def test_pre_norm_jacobian_against_torch():
    """y = h + W LN(h) with a concrete linear branch: I + W J_LN against autograd."""
    d = 3
    rng = np.random.default_rng(0)
    W, h = rng.normal(size=(d, d)), rng.normal(size=d)
    ln = R.LayerNorm(d, eps=1e-5, gamma=[1] * d, beta=[0] * d)
    J = sp.eye(d) + sp.Matrix(W) * ln.jacobian()
    got = np.array(J.subs(dict(zip(ln.h, h))).evalf(), dtype=float)
    f = lambda x: x + torch.tensor(W) @ torch.nn.functional.layer_norm(x, (d,), eps=1e-5)
    ref = torch.autograd.functional.jacobian(f, torch.tensor(h)).numpy()
    assert np.allclose(got, ref, atol=1e-10)


def test_bad_input():
    with pytest.raises(SeqgradValueError):
        R.ResidualJacobian(2, "sideways")
    with pytest.raises(SeqgradValueError):
        R.DepthProduct(0)
    with pytest.raises(SeqgradValueError):
        R.EncoderBlock(9, 2)


def test_latex_documents():
    for obj in (R.ResidualJacobian(2, "post-norm"), R.DepthProduct(2, 2), R.EncoderBlock(1, 2)):
        doc = obj.document()
        assert doc.count(r"\begin{document}") == 1 and obj.latex() in doc


@settings(max_examples=10, deadline=None)
@given(L=st.integers(1, 4), d=st.integers(1, 3), lam=st.integers(-3, 3))
def test_property_depth_product_expansion(L, d, lam):
    """Random depth (1..4), width (1..3) and shortcut scale: the product equals the path expansion."""
    dp = R.DepthProduct(L, d, scale=lam)
    assert (dp.product() - dp.expansion()).applyfunc(sp.expand) == sp.zeros(d, d)


@pytest.mark.parametrize("placement", R.ResidualJacobian.PLACEMENTS)
def test_residual_jacobians_proved_at_symbolic_d(placement):
    """I + J_F, I + J_F J_LN and J_LN (I + J_F) for every d: the index-notation residual reduces to 0."""
    from seqgrad.derive.rules import index_zero

    residual = R.general_residual(placement)
    d = next(s for s in residual.free_symbols if s.name == "d")
    assert d.is_integer and d.is_positive  # no size was substituted
    assert index_zero(residual) == 0


def test_symbolic_d_proof_refutes_wrong_jacobians():
    """The proof can fail: a wrong LayerNorm Jacobian in the pre-norm claim, the plain claim without the bypass's I."""
    from seqgrad.derive.rules import index_zero

    pre = R.general_residual("pre-norm")
    k, j = sp.symbols("k j", integer=True, nonnegative=True)
    wrong_pre = pre.replace(lambda e: isinstance(e, sp.KroneckerDelta) and set(e.args) == {k, j},
                            lambda e: sp.Integer(2) * e)  # delta_kj -> 2 delta_kj inside the claimed J_LN
    assert wrong_pre != pre and index_zero(wrong_pre) != 0
    plain = R.general_residual("plain")
    without_bypass = plain.replace(lambda e: isinstance(e, sp.KroneckerDelta), lambda e: sp.Integer(0))  # claim J_F, not I + J_F
    assert index_zero(without_bypass) != 0


def test_residual_entries_record_their_general_scope():
    from seqgrad.derive import catalogue

    for name in ("residual-plain", "residual-pre-norm", "residual-post-norm"):
        entry = catalogue.get(name)
        assert entry.scope.startswith("all d >= 1")
        proof = entry.prove()
        assert proof.holds and "symbolic size" in proof.method and "instance d = 2" in proof.method


def test_layernorm_jacobian_renamed_to_a_point_is_the_jacobian_there():
    h = list(sp.symbols("a_0:3", real=True))
    assert R.ln_jacobian_at(h) == R._ln_of(h).y.jacobian(h)
    z = [h[0] + h[1] ** 2, sp.sin(h[2]), h[1]]  # a point that is itself an expression (the post-norm z = h + F(h))
    direct = R._ln_of(list(sp.symbols("b_0:3", real=True))).y.jacobian(list(sp.symbols("b_0:3", real=True)))
    assert R.ln_jacobian_at(z) == direct.xreplace(dict(zip(sp.symbols("b_0:3", real=True), z)))


def test_instance_proof_is_shared_within_a_run_and_redone_outside():
    from seqgrad.derive import catalogue
    from seqgrad import runcache

    with runcache.scope():
        assert R.ResidualJacobian(2, "pre-norm").prove()
        assert catalogue.get("residual-pre-norm").prove().holds
        assert runcache.stats()["residual.instance_proof"] == (1, 1)  # the notes' section and the entry: proved once
    calls = []
    original = R.chain_rule_zero
    try:
        R.chain_rule_zero = lambda e: calls.append(e) or original(e)
        assert R.ResidualJacobian(2, "plain").prove() and R.ResidualJacobian(2, "plain").prove()
    finally:
        R.chain_rule_zero = original
    assert len(calls) == 8  # outside a run every call proves again (4 entries each)


def test_branch_jacobian_at_a_point_is_what_subs_gives():
    F = R.Branch("f", 3)
    by_subs = lambda args: sp.Matrix([[sp.diff(f(*F.u), u) for u in F.u] for f in F.f]).subs(dict(zip(F.u, args)), simultaneous=True)
    h = list(sp.symbols("h_0:3", real=True))
    points = [h, list(R._ln_of(h).y), [h[0] + h[1], sp.Integer(2), sp.sin(h[2])],
              [F.u[1], F.u[0], h[0]],  # names the branch's own variables, swapped: subs renames them
              [2, 3.5, h[1]]]  # plain Python numbers, as subs took them
    for args in points:
        assert F.jacobian_at(args) == by_subs(args)
