"""derive.decoder: cross-attention backward pass, the causal block structure, parameter counts."""

from __future__ import annotations

import sympy as sp
import torch

from seqgrad.derive import counting
from seqgrad.derive import decoder as dd
from seqgrad.derive.catalogue import rational_zero


def test_cross_attention_backward_equals_differentiation():
    head = dd.CrossAttention(2, 3, 1, 1)
    back = head.backward()
    for name in ("X", "Z", "W_Q", "W_K", "W_V"):
        residual = back[name] - head.gradient_by_differentiation(name)
        assert all(rational_zero(e) == 0 for e in residual), name


def test_cross_attention_keys_and_values_come_from_the_memory():
    head = dd.CrossAttention(2, 3, 1, 1)
    assert head.A.shape == (2, 3) and head.O.shape == (2, 1)
    assert not (head.K.free_symbols & set(head.X))  # K reads Z only
    assert head.jacobian("Z").shape == (2, 3)


def test_causal_block_structure_and_counterexample():
    for norm_first in (True, False):
        holds, blocks = dd.DecoderBlock(norm_first=norm_first).causal_proof()
        assert holds and len(blocks) == 6
        free = dd.DecoderBlock(causal=False, norm_first=norm_first)
        holds, blocks = free.causal_proof()
        assert not holds and not any(blocks.values())
    assert dd.DecoderBlock().counterexample() == 0
    assert abs(float(sp.N(dd.DecoderBlock(causal=False).counterexample()))) > 1e-3
    assert dd.DecoderBlock().memory_reaches_every_row()


def test_decoder_counts_equal_torch_numel():
    assert dd.decoder_layer_params(256, 4, 1024) == 1053440
    assert dd.decoder_layer_params(256, 4, 1024) == sum(p.numel() for p in torch.nn.TransformerDecoderLayer(256, 4, 1024, device="meta").parameters())
    t = dd.task29()
    assert t["encoder_stack"] == 4718592 and t["cross_attention"] == 262144
    assert t["lesson_sum"] == t["decoder_stack"] == 6291456
    general = dd.decoder_layer_params()
    d, f = counting.d_model, counting.d_ff
    assert sp.expand(general - (8 * d ** 2 + 2 * d * f + 15 * d + f)) == 0
    assert dd.decoder_layer_params(cross=False) == counting.encoder_layer_params()
    stack = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(64, 4, 128, device="meta"), 3, norm=torch.nn.LayerNorm(64, device="meta"))
    assert dd.decoder_stack_params(3, final_norm=True, d_model=64, heads=4, d_ff=128) == sum(p.numel() for p in stack.parameters())


def test_cross_attention_is_a_program_of_the_rule_table_at_symbolic_size():
    from seqgrad.derive.blocks import T, T_src, cross_attention_program, prove_program

    block = cross_attention_program()
    line = lambda name: str(block.program[name])
    assert line("K") == "K = Z*W_K.T" and line("V") == "V = Z*W_V.T"      # keys and values read the memory
    assert line("dS") == "dS = A ∘ (dA - rowsum(dA ∘ A))"
    assert line("dZ") == "dZ = dK*W_K + dV*W_V"                           # the gradient into the encoder
    assert block.program["A"].target.shape == (T, T_src)
    assert prove_program(block).holds


def test_masked_cross_attention_backward_equals_differentiation():
    head = dd.CrossAttention(2, 3, 1, 1, mask=[[0, 0, -sp.oo], [0, -sp.oo, 0]])  # padded memory rows
    back = head.backward()
    for name in ("X", "Z", "W_Q", "W_K", "W_V"):
        residual = back[name] - head.gradient_by_differentiation(name)
        assert all(rational_zero(e) == 0 for e in residual), name


def test_cross_attention_latex_prints_the_explicit_matrices(capsys):
    """``seqgrad derive decoder --part cross --latex`` printed an internal error (an explicit matrix reached the line breaker)."""
    from seqgrad.crosscheck.cli import main

    assert main(["derive", "decoder", "--part", "cross", "--entries", "--latex"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("\\begin{align*}") and out.rstrip().endswith("\\end{align*}") and r"\mathrm{d}W_{V}" in out


def test_cross_attention_cli_prints_the_program_at_symbolic_size(capsys):
    """``--part cross`` printed only the entries of one query over two keys at width 1 (a page of exponentials);
    the general result is the block's program: each backward line a matrix equation, as the checks compile it."""
    from seqgrad.crosscheck.cli import main

    assert main(["derive", "decoder", "--part", "cross"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert {"dV = A.T*G", "dK = 1/sqrt(d_k)*dS.T*Q", "dZ = dK*W_K + dV*W_V", "dW_Q = dQ.T*X"} <= set(lines), lines
