"""Symbolic parameter counts against the parameter counts of torch modules, and the cost crossover."""

import pytest
import sympy as sp
import torch

from seqgrad.derive import counting as C


def n_params(module) -> int:
    return sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize("d, h", [(8, 2), (12, 3), (16, 4)])
@pytest.mark.parametrize("bias", [True, False])
def test_attention_matches_multihead_attention(d, h, bias):
    assert C.attention_params(d, h, bias=bias) == n_params(torch.nn.MultiheadAttention(d, h, bias=bias))


def test_attention_with_unequal_widths_matches_explicit_linears():
    """The course example: two heads 5 -> 3 and an output map 6 -> 5 (nn.MultiheadAttention refuses 5 / 2)."""
    d, widths = 5, [(3, 3), (3, 3)]
    linears = [torch.nn.Linear(d, k, bias=False) for dk, dv in widths for k in (dk, dk, dv)] + [torch.nn.Linear(6, d, bias=False)]
    assert C.attention_params(5, 2, d_k=3, d_v=3) == sum(n_params(m) for m in linears) == 2 * 3 * (3 * 5) + 6 * 5


@pytest.mark.parametrize("d, h, d_ff", [(8, 2, 32), (12, 4, 20)])
@pytest.mark.parametrize("bias", [True, False])
def test_encoder_layer_matches_transformer_encoder_layer(d, h, d_ff, bias):
    layer = torch.nn.TransformerEncoderLayer(d, h, d_ff, dropout=0.0, bias=bias)
    assert C.encoder_layer_params(d, h, d_ff, bias=bias) == n_params(layer)
    stack = torch.nn.TransformerEncoder(layer, 3, enable_nested_tensor=False)
    assert C.stack_params(3, d_model=d, heads=h, d_ff=d_ff, bias=bias) == n_params(stack)


def test_ffn_matches_linears():
    for bias in (True, False):
        ffn = torch.nn.Sequential(torch.nn.Linear(8, 32, bias=bias), torch.nn.ReLU(), torch.nn.Linear(32, 8, bias=bias))
        assert C.ffn_params(8, 32, bias=bias) == n_params(ffn)


def test_textbook_numbers():
    assert C.attention_params() == 4 * C.d_model ** 2
    assert C.attention_params(512, 8) == 1048576
    assert C.ffn_params(512, 2048) == 2097152
    per_layer = C.encoder_layer_params(bias=False, norms=False).subs(C.d_ff, 4 * C.d_model)
    assert per_layer == 12 * C.d_model ** 2
    assert 96 * per_layer.subs(C.d_model, 12288) == 173946175488  # task 23: about 1.7e11


def test_costs_and_crossover():
    assert C.self_attention_cost(100, 512) == 5120000 and C.recurrent_cost(100, 512) == 26214400
    m, d = sp.symbols("n d", positive=True)
    assert C.crossover() == (d < m)
    costs = C.head_costs(7, 5, 3, 3, 4)
    assert costs == {"matching": 147, "mixing": 147, "stored": 49, "projections": 175, "mlp": 140}
