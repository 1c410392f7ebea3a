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
    assert (mlp - affine).applyfunc(sp.expand) == sp.zeros(1, 3)  # x a row, as the notes
    assert all(sp.diff(e, a, b) == 0 for e in mlp for a in x for b in x)


def test_pre_norm_jacobian_against_torch():
    """y = h + W LN(h) with a concrete linear branch: I + W J_LN (J_LN of the program's LayerNorm) against autograd."""
    d = 3
    rng = np.random.default_rng(0)
    W, h = rng.normal(size=(d, d)), rng.normal(size=d)
    hs = list(sp.symbols("h_0:3", real=True))
    J = sp.eye(d) + sp.Matrix(W) * R.norm_jacobian_at(hs)
    got = np.array(J.subs({**dict(zip(hs, h)), R.EPS: sp.Rational(1, 10**5)}).evalf(), dtype=float)
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


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_norm_jacobian_renamed_to_a_point_is_the_jacobian_there(norm):
    h = list(sp.symbols("a_0:3", real=True))
    assert R.norm_jacobian_at(h, norm) == R.norm_of(h, norm).jacobian(h)
    z = [h[0] + h[1] ** 2, sp.sin(h[2]), h[1]]  # a point that is itself an expression (the post-norm z = h + F(h))
    b = list(sp.symbols("b_0:3", real=True))
    direct = R.norm_of(b, norm).jacobian(b)
    assert R.norm_jacobian_at(z, norm) == direct.xreplace(dict(zip(b, z)))


def test_the_residual_normalisation_is_a_view_of_the_one_program():
    """derive.residual reads LayerNorm from derive.blocks' program (norm_row), which is the text's LN: the
    same expression as the concrete-size derive.layernorm.LayerNorm (gamma = 1, beta = 0), entry for entry."""
    from seqgrad.derive import layernorm

    h = list(sp.symbols("h_0:3", real=True))
    assert R.norm_of(h) == layernorm.LayerNorm(3, h=h, gamma=[1] * 3, beta=[0] * 3).y
    assert not hasattr(R, "_ln_of") and not hasattr(R, "ln_jacobian_at")  # the second definition is gone


@pytest.mark.parametrize("placement", ["pre-norm", "post-norm"])
def test_residual_jacobians_take_the_norm_as_an_argument(placement):
    rj = R.ResidualJacobian(2, placement, norm="rmsnorm")
    assert rj.prove()
    assert "RMS" in rj.formula and "rmsnorm" in repr(rj)
    assert r"\operatorname{RMS}" in rj.latex() and r"\|" not in rj.latex()  # not SymPy's norm modifier: ||rms||
    with pytest.raises(SeqgradValueError, match="norm"):
        R.ResidualJacobian(2, placement, norm="groupnorm")


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
    points = [h, list(R.norm_of(h)), [h[0] + h[1], sp.Integer(2), sp.sin(h[2])],
              [F.u[1], F.u[0], h[0]],  # names the branch's own variables, swapped: subs renames them
              [2, 3.5, h[1]]]  # plain Python numbers, as subs took them
    for args in points:
        assert F.jacobian_at(args) == by_subs(args)


def test_the_encoder_block_takes_the_norm_as_an_argument():
    """EncoderBlock(norm="rmsnorm"): both normalisations are RMSNorm's program (norm_of), the block formula holds
    by the chain rule (the residual reduced exactly), and the rows name RMS, not LN."""
    block = R.EncoderBlock(1, 2, norm="rmsnorm")
    assert all(R._chain_rule_radical_zero(e) == 0 for e in block.residual())
    assert block.X == R.norm_of(block.H.row(0), "rmsnorm").T
    assert "J_{RMS,att}" in str(block.rows()[-1][1]) and "LN" not in str(block.rows())
