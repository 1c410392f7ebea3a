"""Every public derive/ entry point that takes a symbolic argument, called with a text payload.

Shared by the injection test (tests/test_reliability_injection.py) and the bad-input table
(tests/bad_input_cases.py): each target is ``(description, call)`` where ``call(payload)``
hands ``payload`` to the function where a number or SymPy expression is expected.
"""

from __future__ import annotations


def _softmax():
    from seqgrad.derive import softmax

    return [
        ("derive.softmax.softmax([payload, 1])", lambda p: softmax.softmax([p, 1])),
        ("derive.softmax.stable_softmax([payload, 1])", lambda p: softmax.stable_softmax([p, 1])),
        ("derive.softmax.jacobian([payload, 1])", lambda p: softmax.jacobian([p, 1])),
        ("derive.softmax.jacobian_closed_form([payload])", lambda p: softmax.jacobian_closed_form([p])),
    ]


def _positional():
    from seqgrad.derive import positional

    pe = lambda: positional.Sinusoidal(4)  # noqa: E731
    return [
        ("Sinusoidal(4).coordinate(payload, 0)", lambda p: pe().coordinate(p, 0)),
        ("Sinusoidal(4).vector(payload)", lambda p: pe().vector(p)),
        ("Sinusoidal(4).rotation(payload)", lambda p: pe().rotation(p)),
        ("Sinusoidal(4).rotation_block(0, payload)", lambda p: pe().rotation_block(0, p)),
        ("Sinusoidal(payload)", lambda p: positional.Sinusoidal(p)),
        ("Sinusoidal(4, base=payload)", lambda p: positional.Sinusoidal(4, base=p)),
        ("positional.dot_product(pe, payload)", lambda p: positional.dot_product(pe(), p)),
        ("positional.dot_product_offset_form(pe, payload)", lambda p: positional.dot_product_offset_form(pe(), p)),
    ]


def _attention():
    from seqgrad.derive import attention

    return [
        ("SelfAttention(2, 2, 2, scale=payload)", lambda p: attention.SelfAttention(2, 2, 2, scale=p)),
        ("SelfAttention(1, 1, 1, X=[[payload]])", lambda p: attention.SelfAttention(1, 1, 1, X=[[p]])),
        ("SelfAttention(1, 1, 1, W_Q=[[payload]])", lambda p: attention.SelfAttention(1, 1, 1, W_Q=[[p]])),
        ("SelfAttention(1, 1, 1, mask=[[payload]])", lambda p: attention.SelfAttention(1, 1, 1, mask=[[p]])),
        ("attention.padding_mask([payload])", lambda p: attention.padding_mask([p])),
        ("attention.softmax_rows(Matrix([[payload]]))", lambda p: attention.softmax_rows([[p]])),
        ("attention.permutation_matrix(payload)", lambda p: attention.permutation_matrix(p)),
        ("attention.head_widths(payload, 2)", lambda p: attention.head_widths(p, 2)),
    ]


def _layernorm():
    from seqgrad.derive import layernorm

    return [
        ("layernorm.check_eps(payload)", lambda p: layernorm.check_eps(p)),
        ("LayerNorm(2, eps=payload)", lambda p: layernorm.LayerNorm(2, eps=p)),
        ("LayerNorm(2, h=[payload, 1])", lambda p: layernorm.LayerNorm(2, h=[p, 1])),
        ("LayerNorm(2, gamma=[payload, 1])", lambda p: layernorm.LayerNorm(2, gamma=[p, 1])),
        ("LayerNorm(2, beta=[payload, 1])", lambda p: layernorm.LayerNorm(2, beta=[p, 1])),
    ]


def _residual():
    from seqgrad.derive import residual

    return [
        ("residual.DepthProduct(2, 2, scale=payload)", lambda p: residual.DepthProduct(2, 2, scale=p)),
    ]


def _counting():
    from seqgrad.derive import counting

    return [
        ("counting.attention_params(d_model=payload)", lambda p: counting.attention_params(d_model=p)),
        ("counting.ffn_params(d_ff=payload)", lambda p: counting.ffn_params(d_ff=p)),
        ("counting.layernorm_params(d_model=payload)", lambda p: counting.layernorm_params(d_model=p)),
        ("counting.encoder_layer_params(heads=payload)", lambda p: counting.encoder_layer_params(heads=p)),
        ("counting.stack_params(layers=payload)", lambda p: counting.stack_params(layers=p)),
        ("counting.self_attention_cost(n=payload)", lambda p: counting.self_attention_cost(n=p)),
        ("counting.recurrent_cost(d=payload)", lambda p: counting.recurrent_cost(d=p)),
        ("counting.head_costs(T=payload)", lambda p: counting.head_costs(T=p)),
    ]


def _program():
    import sympy as sp

    from seqgrad.derive import program

    return [
        ("Program().define(Symbol('a'), payload)", lambda p: program.Program().define(sp.Symbol("a"), p)),
        ("program.Template(payload, [])", lambda p: program.Template(p, [])),
    ]


def _rnn():
    from seqgrad.derive import gated, rnn

    return [
        ("rnn.unroll(2, activation=payload)", lambda p: rnn.unroll(2, activation=p)),
        ("rnn.unroll(payload)", lambda p: rnn.unroll(p)),
        ("rnn.unroll(2).grad(payload)", lambda p: rnn.unroll(2).grad(p)),
        ("rnn.unroll(2).symbol(payload)", lambda p: rnn.unroll(2).symbol(p)),
        ("rnn.unroll(2).sensitivity(payload, 0)", lambda p: rnn.unroll(2).sensitivity(p, 0)),
        ("gated.gru(payload)", lambda p: gated.gru(p)),
        ("gated.lstm(2).grad(payload)", lambda p: gated.lstm(2).grad(p)),
    ]


def _text():
    from seqgrad.derive import activation_facts, catalogue, claims, safe_parse

    return [
        ("claims.parse_claim(payload + ' = 1')", lambda p: claims.parse_claim(f"{p} = 1")),
        ("claims.parse_claim('x = 1 where x = ' + payload)", lambda p: claims.parse_claim(f"x = 1 where x = {p}")),
        ("safe_parse.parse_expression(payload)", lambda p: safe_parse.parse_expression(p)),
        ("safe_parse.as_sympy(payload)", lambda p: safe_parse.as_sympy(p)),
        ("catalogue.get(payload)", lambda p: catalogue.get(p)),
        ("activation_facts.get(payload)", lambda p: activation_facts.get(p)),
        ("activation_facts.gamma(payload)", lambda p: activation_facts.gamma(p)),
    ]


def _decoder_conv():
    from seqgrad.derive import conv, decoder

    return [
        ("derive.conv.receptive_field([payload, 3])", lambda p: conv.receptive_field([p, 3])),
        ("derive.conv.receptive_field([3], strides=[payload])", lambda p: conv.receptive_field([3], [p])),
        ("derive.conv.output_size(payload, 3)", lambda p: conv.output_size(p, 3)),
        ("derive.decoder.CrossAttention(1, 2, 1, 1, scale=payload)", lambda p: decoder.CrossAttention(1, 2, 1, 1, scale=p)),
        ("derive.decoder.decoder_layer_params(payload)", lambda p: decoder.decoder_layer_params(p)),
    ]


def targets() -> list[tuple[str, object]]:
    """(description, call) for every entry point; call(payload) passes the payload as the symbolic argument."""
    out = []
    for group in (_softmax, _positional, _attention, _layernorm, _residual, _counting, _program, _rnn, _text, _decoder_conv):
        out += group()
    return out
