"""The encoder against independent torch.nn implementations, through the registered checks and directly."""

from __future__ import annotations

import pytest
import torch

from seqgrad.crosscheck import encoder_twins
from seqgrad.crosscheck.registry import all_checks, run_checks
from seqgrad.crosscheck.tolerance import tolerance
from seqgrad.numeric.encoder import Encoder, EncoderBlock

CHECKS = [c.name for c in all_checks("encoder.*")]


def test_encoder_checks_are_registered():
    assert {"encoder.course_tables", "encoder.layernorm_vs_torch", "encoder.mha_vs_torch", "encoder.prenorm_layer_vs_torch",
            "encoder.postnorm_layer_vs_torch", "encoder.stack_vs_torch", "encoder.causal_journey_row",
            "encoder.permutation_equivariance", "encoder.causal_prefix"} <= set(CHECKS)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_encoder_checks_pass_on_cpu(dtype):
    results = run_checks(all_checks("encoder.*"), device="cpu", dtype=dtype, show_progress=False)
    failed = [f"{r.name}: {r.detail}" for r in results if r.status != "pass"]
    assert not failed, failed


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_encoder_checks_pass_on_cuda(dtype):
    results = run_checks(all_checks("encoder.*"), device="cuda", dtype=dtype, show_progress=False)
    failed = [f"{r.name}: {r.detail}" for r in results if r.status != "pass"]
    assert not failed, failed


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_block_equals_transformer_encoder_layer(norm_first, seed):
    g = torch.Generator().manual_seed(seed)
    block = EncoderBlock.random(12, 3, 20, norm_first=norm_first, bias=bool(seed % 2), generator=g)
    twin = encoder_twins.encoder_layer(block)
    H = torch.randn(4, 5, 12, generator=g, dtype=torch.float64)
    tol = tolerance()
    with torch.no_grad():
        assert torch.allclose(block(H), twin(H), atol=tol.atol, rtol=tol.rtol)


def test_gradients_equal_torch_stack():
    enc = Encoder.random(9, 8, 2, 16, n_blocks=2, bias=True, seed=7)
    twin = encoder_twins.encoder_stack(enc)
    H = torch.randn(2, 6, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(8), requires_grad=True)
    enc.encode(H).pow(2).sum().backward()
    g_ours = H.grad.clone()
    H.grad = None
    twin(H).pow(2).sum().backward()
    assert torch.allclose(g_ours, H.grad, atol=1e-10)
    w_ours = enc.blocks[0].mlp.W1.grad
    w_theirs = twin.layers[0].linear1.weight.grad
    assert torch.allclose(w_ours, w_theirs, atol=1e-10)


def test_course_attention_has_no_torch_twin():
    from seqgrad.numeric import course
    from seqgrad.errors import SeqgradValueError

    with pytest.raises(SeqgradValueError, match="D/n_heads"):
        encoder_twins.multihead_attention(course.attention())
