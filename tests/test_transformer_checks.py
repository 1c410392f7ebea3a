"""crosscheck/checks/transformer.py and crosscheck/transformer_bridge.py: derived Transformer Jacobians against autograd."""

from __future__ import annotations

import pytest
import sympy as sp
import torch

from seqgrad.crosscheck import transformer_bridge as bridge
from seqgrad.crosscheck.checks import transformer as tc
from seqgrad.crosscheck.registry import all_checks, run_checks, run_one
from seqgrad.crosscheck.tolerance import compare
from seqgrad.derive import residual as d_residual
from seqgrad.errors import NonFiniteError, SeqgradValueError


def test_compile_matrix_batches_and_shapes():
    x, y = sp.symbols("x y", real=True)
    f = bridge.compile_matrix(sp.Matrix([[x * y, sp.exp(x)], [1, y ** 2]]), [x, y])
    X = torch.tensor([1.0, 2.0], dtype=torch.float64)
    Y = torch.tensor([3.0, -1.0], dtype=torch.float64)
    out = f(X, Y)
    assert out.shape == (2, 2, 2)
    expected = torch.stack([torch.stack([X * Y, X.exp()], -1), torch.stack([torch.ones(2, dtype=torch.float64), Y ** 2], -1)], -2)
    assert compare(out, expected).passed
    with pytest.raises(NonFiniteError):
        f(torch.tensor([float("nan")], dtype=torch.float64), torch.tensor([1.0], dtype=torch.float64))
    with pytest.raises(SeqgradValueError, match="values"):
        f(X)


def test_branch_inputs_replaces_every_branch_term():
    rj = d_residual.ResidualJacobian(2, "post-norm")
    bs = bridge.branch_inputs(rj.closed, rj.F)
    assert not bs.expr.atoms(sp.Subs, sp.Derivative)
    assert set(bs.F) | {s for row in bs.J for s in row} >= bs.expr.free_symbols - set(rj.h) - {sp.Symbol("epsilon", positive=True)}
    with pytest.raises(SeqgradValueError, match="expr"):
        bridge.branch_inputs(sp.Matrix([sp.diff(rj.F.f[0](*rj.h), rj.h[0], 2)]), rj.F)


@pytest.mark.parametrize("norm_first", [True, False])
def test_block_formula_tells_pre_from_post(norm_first):
    """The check can fail: the other placement's formula does not match the block."""
    g = torch.Generator().manual_seed(3)
    block = tc.random_block(norm_first, g, torch.device("cpu"))
    H = torch.randn(tc.T_ATT, tc.D_BLOCK, generator=g, dtype=torch.float64)
    reference = tc._jacobian(lambda h: block(h), H)
    assert compare(tc.block_jacobian_formula(block, H), reference).passed
    block.norm_first = not norm_first
    wrong = tc.block_jacobian_formula(block, H)
    block.norm_first = norm_first
    assert not compare(wrong, reference).passed


def test_transformer_checks_pass_on_cpu():
    results = run_checks(all_checks("transformer.*"), show_progress=False)
    assert len(results) == 14  # with transformer.rmsnorm_programs, transformer.mlp_program and transformer.multihead_rows
    assert all(r.status == "pass" for r in results), [(r.name, r.detail) for r in results if r.status != "pass"]


def test_float32_runs_under_the_float32_policy():
    results = run_checks(all_checks("transformer.[ls]*"), dtype="float32", show_progress=False)
    assert [r.status for r in results] == ["pass", "pass", "pass"]  # layernorm_jacobian, layernorm_program, softmax_jacobian
    assert all(1e-9 < r.max_abs_error < 1e-5 for r in results)  # single precision, not silently float64


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the skip without a GPU")
def test_cuda_without_gpu_skips_cleanly():
    """The check declares needs_torch=True; the registry skips it when CUDA is asked for and absent."""
    (item,) = all_checks("transformer.softmax_jacobian")
    result = run_one(item, "cuda")
    assert result.status == "skip" and result.detail == "no CUDA GPU"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_transformer_checks_pass_on_cuda():
    results = run_checks(all_checks("transformer.*"), device="cuda", show_progress=False)
    assert all(r.status == "pass" for r in results), [(r.name, r.detail) for r in results if r.status != "pass"]
