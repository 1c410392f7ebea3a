"""API misuse, call by call (issue 18): each call below once ended -- or could end -- in a raw torch,
numpy or SymPy error (or a silent wrong answer).  Each must now raise ONE seqgrad error of the
expected class, on one line, naming the argument.

The list covers the public entry points of numeric/ (LayerNorm, attention, masks, tokens, positions,
clipping, the recurrent references, the course example, the encoder), derive's softmax and Program,
and seqgrad.atomic.  ``tests/bad_input_cases.py`` documents a representative subset in docs/bad-input.md.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
import torch

from seqgrad.errors import NonFiniteError, ParseError, SeqgradError, SeqgradTypeError, SeqgradValueError, ShapeError

F64 = torch.float64
inf, nan = math.inf, math.nan


def t(*rows, dtype=F64):
    return torch.tensor(rows, dtype=dtype)


# lazily imported modules (a collection error would hide every case)
def ln():
    from seqgrad.numeric import layernorm

    return layernorm


def att():
    from seqgrad.numeric import attention

    return attention


def rec():
    from seqgrad.numeric import recurrent

    return recurrent


def course():
    from seqgrad.numeric import course as c

    return c


def enc():
    return course().encoder()


def pos():
    from seqgrad.numeric import positions

    return positions


def clip():
    from seqgrad.numeric import clipping

    return clipping


def tok():
    from seqgrad.numeric import tokens

    return tokens


def mha():
    return att().MultiHeadAttention.random(4, 2, generator=torch.Generator().manual_seed(0))


def params(**kw):
    base = dict(W_x=np.ones((2, 2)), W_h=np.eye(2) * 0.5, W_o=np.ones((1, 2)))
    base.update(kw)
    return rec().Params(**base)


def program():
    from seqgrad.derive import rnn

    return rnn.unroll(3)


X1 = np.ones((1, 3, 2))
Y1 = np.ones((1, 1))

CASES: list[tuple[str, object, type]] = []


def case(call: str, error: type):
    def add(fn):
        CASES.append((call, fn, error))
        return fn

    return add


def cases(rows):
    for call, fn, error in rows:
        CASES.append((call, fn, error))


# ----------------------------------------------------------------------------- numeric.layernorm
cases([
    ("layer_norm('abc')", lambda: ln().layer_norm("abc"), SeqgradTypeError),
    ("layer_norm([[1.0, 2.0]])  (a list)", lambda: ln().layer_norm([[1.0, 2.0]]), SeqgradTypeError),
    ("layer_norm(int tensor)", lambda: ln().layer_norm(torch.ones(2, 3, dtype=torch.int64)), SeqgradTypeError),
    ("layer_norm(empty last dim)", lambda: ln().layer_norm(torch.ones(2, 0, dtype=F64)), ShapeError),
    ("layer_norm(scalar tensor)", lambda: ln().layer_norm(torch.tensor(1.0, dtype=F64)), ShapeError),
    ("layer_norm(H with NaN)", lambda: ln().layer_norm(t([1.0, nan])), NonFiniteError),
    ("layer_norm(H with inf)", lambda: ln().layer_norm(t([1.0, inf])), NonFiniteError),
    ("layer_norm(H, eps=0)", lambda: ln().layer_norm(t([1.0, 2.0]), eps=0.0), SeqgradValueError),
    ("layer_norm(H, eps=-1)", lambda: ln().layer_norm(t([1.0, 2.0]), eps=-1.0), SeqgradValueError),
    ("layer_norm(H, eps=nan)", lambda: ln().layer_norm(t([1.0, 2.0]), eps=nan), NonFiniteError),
    ("layer_norm(H, eps='1e-5')", lambda: ln().layer_norm(t([1.0, 2.0]), eps="1e-5"), SeqgradTypeError),
    ("layer_norm(float32 H, eps=1e-50)", lambda: ln().layer_norm(t([1.0, 1.0], dtype=torch.float32), eps=1e-50),
     SeqgradValueError),
    ("LayerNorm(0)", lambda: ln().LayerNorm(0), SeqgradValueError),
    ("LayerNorm(2.5)", lambda: ln().LayerNorm(2.5), SeqgradTypeError),
    ("LayerNorm('4')", lambda: ln().LayerNorm("4"), SeqgradTypeError),
    ("LayerNorm(4, eps=0)", lambda: ln().LayerNorm(4, eps=0.0), SeqgradValueError),
    ("LayerNorm(4, eps=1e-50, dtype=float32)", lambda: ln().LayerNorm(4, eps=1e-50, dtype=torch.float32), SeqgradValueError),
    ("LayerNorm(4, eps=1e-320)", lambda: ln().LayerNorm(4, eps=1e-320), SeqgradValueError),
    ("LayerNorm(4, gamma=[1, 2])", lambda: ln().LayerNorm(4, gamma=[1.0, 2.0]), ShapeError),
    ("LayerNorm(4, beta=[nan]*4)", lambda: ln().LayerNorm(4, beta=[nan] * 4), NonFiniteError),
    ("LayerNorm(4, gamma='abc')", lambda: ln().LayerNorm(4, gamma="abc"), SeqgradTypeError),
    ("LayerNorm(4)(H of width 3)", lambda: ln().LayerNorm(4)(torch.ones(2, 3, dtype=F64)), ShapeError),
    ("LayerNorm(4)(H of width 3, record={})", lambda: ln().LayerNorm(4)(torch.ones(2, 3, dtype=F64), {}), ShapeError),
    ("LayerNorm(4)(float32 H)", lambda: ln().LayerNorm(4)(torch.ones(2, 4)), SeqgradTypeError),
    ("LayerNorm(4)(list)", lambda: ln().LayerNorm(4)([[1.0] * 4]), SeqgradTypeError),
    ("LayerNorm(4)(H with NaN)", lambda: ln().LayerNorm(4)(t([1.0, 2.0, nan, 0.0])), NonFiniteError),
    ("LayerNorm(4)(H with NaN, record={})", lambda: ln().LayerNorm(4)(t([1.0, 2.0, nan, 0.0]), {}), NonFiniteError),
])

# ----------------------------------------------------------------------------- numeric.attention
cases([
    ("attention_mask(0)", lambda: att().attention_mask(0), SeqgradValueError),
    ("attention_mask(2.0)", lambda: att().attention_mask(2.0), SeqgradTypeError),
    ("attention_mask(3, padding=[1, 1])", lambda: att().attention_mask(3, padding=[1, 1]), ShapeError),
    ("attention_mask(3, padding=[0, 0, 0])  (every source padding)", lambda: att().attention_mask(3, padding=[0, 0, 0]),
     SeqgradValueError),
    ("attention_mask(2, padding=[2, 1])", lambda: att().attention_mask(2, padding=[2, 1]), SeqgradValueError),
    ("attention_mask(2, exclude=[[True]])", lambda: att().attention_mask(2, exclude=[[True]]), ShapeError),
    ("attention_mask(2, exclude=all True)", lambda: att().attention_mask(2, exclude=[[True, True], [True, True]]),
     SeqgradValueError),
    ("check_mask(M of shape (2, 3), 2)", lambda: att().check_mask(torch.zeros(2, 3, dtype=F64), 2), ShapeError),
    ("check_mask(M with NaN, 2)", lambda: att().check_mask(t([0.0, nan], [0.0, 0.0]), 2), SeqgradValueError),
    ("check_mask(M with +inf, 2)", lambda: att().check_mask(t([0.0, inf], [0.0, 0.0]), 2), SeqgradValueError),
    ("check_mask(M with an all -inf row, 2)", lambda: att().check_mask(t([-inf, -inf], [0.0, 0.0]), 2), SeqgradValueError),
    ("check_mask(bool M, 2)", lambda: att().check_mask(torch.ones(2, 2, dtype=torch.bool), 2), SeqgradTypeError),
    ("check_mask(list M, 2)", lambda: att().check_mask([[0.0, 0.0], [0.0, 0.0]], 2), SeqgradTypeError),
    ("MultiHeadAttention.random(0, 2)", lambda: att().MultiHeadAttention.random(0, 2), SeqgradValueError),
    ("MultiHeadAttention.random(4, 0)", lambda: att().MultiHeadAttention.random(4, 0), SeqgradValueError),
    ("MultiHeadAttention.random(4.0, 2)", lambda: att().MultiHeadAttention.random(4.0, 2), SeqgradTypeError),
    ("MultiHeadAttention([], W_O)", lambda: att().MultiHeadAttention([], torch.ones(4, 4)), SeqgradValueError),
    ("mha(X of width 3)", lambda: mha()(torch.ones(2, 3, dtype=F64)), ShapeError),
    ("mha(X of width 3, record={})", lambda: mha()(torch.ones(2, 3, dtype=F64), None, {}), ShapeError),
    ("mha(X of width 5, fused)", lambda: mha()(torch.ones(2, 5, dtype=F64)), ShapeError),
    ("mha(1-D X)", lambda: mha()(torch.ones(4, dtype=F64)), ShapeError),
    ("mha(4-D X)", lambda: mha()(torch.ones(1, 1, 2, 4, dtype=F64)), ShapeError),
    ("mha(X with T=0)", lambda: mha()(torch.ones(0, 4, dtype=F64)), ShapeError),
    ("mha(float32 X)", lambda: mha()(torch.ones(2, 4)), SeqgradTypeError),
    ("mha(int X)", lambda: mha()(torch.ones(2, 4, dtype=torch.int64)), SeqgradTypeError),
    ("mha(list X)", lambda: mha()([[1.0] * 4] * 2), SeqgradTypeError),
    ("mha(X with NaN)", lambda: mha()(t([nan, 0, 0, 0], [0, 0, 0, 0])), NonFiniteError),
    ("mha(X with NaN, record={})", lambda: mha()(t([nan, 0, 0, 0], [0, 0, 0, 0]), None, {}), NonFiniteError),
    ("mha(X of 1e300: scores overflow)", lambda: mha()(torch.full((2, 4), 1e300, dtype=F64)), SeqgradValueError),
    ("mha(X of 1e300, record={})", lambda: mha()(torch.full((2, 4), 1e300, dtype=F64), None, {}), SeqgradValueError),
    ("mha(X, M with an all -inf row)  (fused)", lambda: mha()(torch.ones(2, 4, dtype=F64), t([-inf, -inf], [0.0, 0.0])),
     SeqgradValueError),
    ("mha(X, M with an all -inf row, record={})",
     lambda: mha()(torch.ones(2, 4, dtype=F64), t([-inf, -inf], [0.0, 0.0]), {}), SeqgradValueError),
    ("mha(X, M of the wrong size)", lambda: mha()(torch.ones(2, 4, dtype=F64), torch.zeros(3, 3, dtype=F64)), ShapeError),
    ("mha(X, bool M)", lambda: mha()(torch.ones(2, 4, dtype=F64), torch.ones(2, 2, dtype=torch.bool)), SeqgradTypeError),
    ("mha(X, float32 M)", lambda: mha()(torch.ones(2, 4, dtype=F64), torch.zeros(2, 2)), SeqgradTypeError),
    ("mha(2-D X, batched M)", lambda: mha()(torch.ones(2, 4, dtype=F64), torch.zeros(3, 2, 2, dtype=F64)), ShapeError),
    ("mha(X of batch 2, M of batch 3)", lambda: mha()(torch.ones(2, 2, 4, dtype=F64), torch.zeros(3, 2, 2, dtype=F64)),
     ShapeError),
    ("mha(X, M with NaN)", lambda: mha()(torch.ones(2, 4, dtype=F64), t([0.0, nan], [0.0, 0.0])), SeqgradValueError),
    ("Head(W_Q=[[1, 2]], W_K=[[1]], W_V=[[1]])", lambda: att().Head([[1.0, 2.0]], [[1.0]], [[1.0]]), ShapeError),
    ("Head(W_Q='abc', ...)", lambda: att().Head("abc", [[1.0]], [[1.0]]), SeqgradTypeError),
    ("Head(W_Q=[1, 2], ...)  (1-D)", lambda: att().Head([1.0, 2.0], [[1.0]], [[1.0]]), ShapeError),
    ("Head(...)(X of the wrong width)", lambda: att().Head([[1.0, 0.0]], [[1.0, 0.0]], [[1.0, 0.0]])(torch.ones(2, 3, dtype=F64)),
     ShapeError),
    ("Head(...)(X, M with an all -inf row)",
     lambda: att().Head([[1.0, 0.0]], [[1.0, 0.0]], [[1.0, 0.0]])(torch.ones(2, 2, dtype=F64), t([-inf, -inf], [0.0, 0.0])),
     SeqgradValueError),
])

# ----------------------------------------------------------------------------- numeric.recurrent
cases([
    ("Params(W_x=None, ...)", lambda: params(W_x=None), SeqgradTypeError),
    ("Params(W_h=None, ...)", lambda: params(W_h=None), SeqgradTypeError),
    ("bptt(Params(W_o=None, ...), X, y)  (a cell without its head)",
     lambda: rec().bptt(params(W_o=None), np.ones((1, 2, 2)), np.ones((1, 1))), SeqgradValueError),
    ("Params(..., activation='softsign')", lambda: params(activation="softsign"), SeqgradValueError),
    ("forward('weights', X)", lambda: rec().forward("weights", np.ones((1, 2, 2))), SeqgradTypeError),
    ("Params(W_x='abc', ...)", lambda: params(W_x="abc"), SeqgradTypeError),
    ("Params(W_x=[[1, 'a']], ...)", lambda: params(W_x=[[1.0, "a"]]), SeqgradTypeError),
    ("Params(W_x=[[1, 2], [3]], ...)  (ragged)", lambda: params(W_x=[[1.0, 2.0], [3.0]]), SeqgradTypeError),
    ("Params(W_x=ones(2), ...)  (1-D)", lambda: params(W_x=np.ones(2)), ShapeError),
    ("Params(W_h=ones((3, 3)), ...)", lambda: params(W_h=np.ones((3, 3))), ShapeError),
    ("Params(W_o=ones((1, 3)), ...)", lambda: params(W_o=np.ones((1, 3))), ShapeError),
    ("Params(b_h=ones(3), ...)", lambda: params(b_h=np.ones(3)), ShapeError),
    ("Params(b_o=ones(2), ...)", lambda: params(b_o=np.ones(2)), ShapeError),
    ("Params(W_x=[[inf, 0], [0, 0]], ...)", lambda: params(W_x=[[inf, 0.0], [0.0, 0.0]]), NonFiniteError),
    ("Params(b_h=[nan, 0], ...)", lambda: params(b_h=[nan, 0.0]), NonFiniteError),
    ("forward(params, X of width 3)", lambda: rec().forward(params(), np.ones((1, 3, 3))), ShapeError),
    ("forward(params, 2-D X)", lambda: rec().forward(params(), np.ones((3, 2))), ShapeError),
    ("forward(params, X with T=0)", lambda: rec().forward(params(), np.ones((1, 0, 2))), ShapeError),
    ("forward(params, X, activation='swish')", lambda: rec().forward(params(), X1, "swish"), SeqgradValueError),
    ("forward(params, X with inf)", lambda: rec().forward(params(), np.full((1, 3, 2), inf)), NonFiniteError),
    ("bptt(params, X, y of the wrong shape)", lambda: rec().bptt(params(), X1, np.ones((1, 2))), ShapeError),
    ("bptt(params, X, y, loss='every')  (y for 'final')", lambda: rec().bptt(params(), X1, Y1, loss="every"), ShapeError),
    ("bptt(params, X, y, loss='median')", lambda: rec().bptt(params(), X1, Y1, loss="median"), SeqgradValueError),
    ("bptt(params, X, y, reduction='max')", lambda: rec().bptt(params(), X1, Y1, reduction="max"), SeqgradValueError),
    ("bptt(params, X, y with NaN)", lambda: rec().bptt(params(), X1, [[nan]]), NonFiniteError),
    ("bptt(relu, W = 1e3, T = 60)  (overflow)",
     lambda: rec().bptt(params(W_h=np.full((2, 2), 1e3), W_x=np.full((2, 2), 1e3)), np.ones((1, 60, 2)), Y1, "relu"),
     SeqgradValueError),
    ("bptt(identity, W = 1e3, T = 60)  (overflow)",
     lambda: rec().bptt(params(W_h=np.full((2, 2), 1e3), W_x=np.full((2, 2), 1e3)), np.ones((1, 60, 2)), Y1, "identity"),
     SeqgradValueError),
    ("autograd(relu, W = 1e3, T = 60)  (overflow)",
     lambda: rec().autograd(params(W_h=np.full((2, 2), 1e3), W_x=np.full((2, 2), 1e3)), np.ones((1, 60, 2)), Y1, "relu"),
     SeqgradValueError),
    ("autograd(identity, W = 1e3, T = 60)  (overflow)",
     lambda: rec().autograd(params(W_h=np.full((2, 2), 1e3), W_x=np.full((2, 2), 1e3)), np.ones((1, 60, 2)), Y1,
                            "identity"), SeqgradValueError),
    ("autograd(params, X, y, device='tpu')", lambda: rec().autograd(params(), X1, Y1, device="tpu"), SeqgradValueError),
    ("autograd(params, X, y, activation='gelu')", lambda: rec().autograd(params(), X1, Y1, "gelu"), SeqgradValueError),
    ("forward(identity, W_h = 1e200, T = 5)  (overflow)",
     lambda: rec().forward(params(W_h=np.full((2, 2), 1e200)), np.ones((1, 5, 2)), "identity"), SeqgradValueError),
])

# ----------------------------------------------------------------------------- tokens, course, encoder
cases([
    ("tokenize(3)", lambda: tok().tokenize(3), SeqgradTypeError),
    ("tokenize(None)", lambda: tok().tokenize(None), SeqgradTypeError),
    ("Vocabulary(('a', 'a'))", lambda: tok().Vocabulary(("a", "a")), SeqgradValueError),
    ("VOCAB.ids(['zebra'])", lambda: course().VOCAB.ids(["zebra"]), SeqgradValueError),
    ("VOCAB.encode('...')  (no words)", lambda: course().VOCAB.encode("..."), SeqgradValueError),
    ("VOCAB.encode(42)", lambda: course().VOCAB.encode(42), SeqgradTypeError),
    ("VOCAB.decode([-1])", lambda: course().VOCAB.decode([-1]), SeqgradValueError),
    ("VOCAB.decode([1.5])", lambda: course().VOCAB.decode([1.5]), SeqgradValueError),
    ("VOCAB.decode([True])", lambda: course().VOCAB.decode([True]), SeqgradValueError),
    ("course.token_ids('a zebra')", lambda: course().token_ids("a zebra"), SeqgradValueError),
    ("course.token_ids(257 words)", lambda: course().token_ids(" ".join(["a"] * 257)), SeqgradValueError),
    ("course.token_ids(20,000 characters)", lambda: course().token_ids("a " * 10_000), SeqgradValueError),
    ("course.token_ids(b'a journey')", lambda: course().token_ids(b"a journey"), SeqgradTypeError),
    ("course.trace('decoder')", lambda: course().trace("decoder"), SeqgradValueError),
    ("course.trace(text='a zebra')", lambda: course().trace(text="a zebra"), SeqgradValueError),
    ("course.trace(device='tpu')", lambda: course().trace(device="tpu"), SeqgradValueError),
    ("course.trace(dtype='float16')", lambda: course().trace(dtype="float16"), SeqgradValueError),
    ("course.encoder(dtype='int8')", lambda: course().encoder(dtype="int8"), SeqgradValueError),
    ("course.encoder(activation='swish')", lambda: course().encoder(activation="swish"), SeqgradValueError),
    ("course.encoder()(ids='a journey')", lambda: enc()(ids="a journey"), SeqgradTypeError),
    ("course.encoder()(ids=b'a journey')", lambda: enc()(ids=b"a journey"), SeqgradTypeError),
    ("course.encoder()(ids=[[0, 1], [2]])  (ragged)", lambda: enc()([[0, 1], [2]]), SeqgradTypeError),
    ("course.encoder()(ids=[None])", lambda: enc()([None]), SeqgradTypeError),
    ("course.encoder()(ids=bool tensor)", lambda: enc()(torch.tensor([True, False])), SeqgradTypeError),
    ("course.encoder()(ids=float tensor)", lambda: enc()(torch.tensor([0.0, 1.0])), SeqgradTypeError),
    ("course.encoder()(ids=complex)", lambda: enc()(torch.tensor([1j])), SeqgradTypeError),
    ("course.encoder()(ids=[])", lambda: enc()([]), SeqgradError),
    ("course.encoder()(ids=[[[0]]])  (3-D)", lambda: enc()([[[0]]]), ShapeError),
    ("course.encoder()(ids=[-1])", lambda: enc()([-1]), SeqgradValueError),
    ("course.encoder()(ids=uint8 [9])", lambda: enc()(torch.tensor([9], dtype=torch.uint8)), SeqgradValueError),
    ("course.encoder()(ids, causal='yes')", lambda: enc()([0, 1], causal="yes"), SeqgradValueError),
    ("course.encoder()(ids, padding=[1])", lambda: enc()([0, 1], padding=[1]), ShapeError),
    ("course.encoder()(ids, mask=bool M)", lambda: enc()([0, 1], mask=torch.ones(2, 2, dtype=torch.bool)), SeqgradTypeError),
    ("course.encoder()(ids, mask=all -inf row)", lambda: enc()([0, 1], mask=t([-inf, -inf], [0.0, 0.0])), SeqgradValueError),
    ("course.encoder().encode([[1.0] * 5])  (a list)", lambda: enc().encode([[1.0] * 5]), SeqgradTypeError),
    ("course.encoder().encode(H of width 4)", lambda: enc().encode(torch.ones(2, 4, dtype=F64)), ShapeError),
    ("Encoder.random(9, 4, 2, F_width=0)", lambda: __import__("seqgrad.numeric.encoder").numeric.encoder.Encoder.random(9, 4, 2, 0),
     SeqgradValueError),
    ("Encoder.random(9, 4, 2, F_width=2.5)", lambda: __import__("seqgrad.numeric.encoder").numeric.encoder.Encoder.random(9, 4, 2, 2.5),
     SeqgradTypeError),
    ("Encoder.random(9, 0, 2, 4)", lambda: __import__("seqgrad.numeric.encoder").numeric.encoder.Encoder.random(9, 0, 2, 4),
     SeqgradValueError),
    ("Encoder.random(9, 4, 0, 4)", lambda: __import__("seqgrad.numeric.encoder").numeric.encoder.Encoder.random(9, 4, 0, 4),
     SeqgradValueError),
    ("Encoder.random(9, 4, 2, 4, n_blocks=0)",
     lambda: __import__("seqgrad.numeric.encoder").numeric.encoder.Encoder.random(9, 4, 2, 4, n_blocks=0), SeqgradValueError),
    ("EncoderBlock.random(4, 2, F_width=0)", lambda: __import__("seqgrad.numeric.encoder").numeric.encoder.EncoderBlock.random(4, 2, 0),
     SeqgradValueError),
    ("EncoderBlock.random(4, 2, F_width=-3)", lambda: __import__("seqgrad.numeric.encoder").numeric.encoder.EncoderBlock.random(4, 2, -3),
     SeqgradValueError),
])

# ----------------------------------------------------------------------------- positions
cases([
    ("sinusoidal(10**8, 64)  (size guard)", lambda: pos().sinusoidal(10**8, 64), SeqgradValueError),
    ("sinusoidal(2**24, 2)  (size guard)", lambda: pos().sinusoidal(2**24, 2), SeqgradValueError),
    ("sinusoidal(0, 4)", lambda: pos().sinusoidal(0, 4), SeqgradValueError),
    ("sinusoidal(4, 0)", lambda: pos().sinusoidal(4, 0), SeqgradValueError),
    ("sinusoidal('4', 4)", lambda: pos().sinusoidal("4", 4), SeqgradTypeError),
    ("sinusoidal(4, 4, base=0)", lambda: pos().sinusoidal(4, 4, base=0.0), SeqgradValueError),
    ("sinusoidal(4, 4, base=inf)", lambda: pos().sinusoidal(4, 4, base=inf), NonFiniteError),
    ("frequencies(0)", lambda: pos().frequencies(0), SeqgradValueError),
    ("frequencies(4, base=-1)", lambda: pos().frequencies(4, base=-1.0), SeqgradValueError),
    ("LearnedPositions(0, 4)", lambda: pos().LearnedPositions(0, 4), SeqgradValueError),
    ("LearnedPositions(10**8, 64)  (size guard)", lambda: pos().LearnedPositions(10**8, 64), SeqgradValueError),
    ("LearnedPositions(4, 2)(5)", lambda: pos().LearnedPositions(4, 2)(5), SeqgradValueError),
    ("LearnedPositions(4, 2)(2.0)", lambda: pos().LearnedPositions(4, 2)(2.0), SeqgradTypeError),
])

# ----------------------------------------------------------------------------- clipping
cases([
    ("clip_global_norm(ones(3), 1.0)  (an array, not a list)", lambda: clip().clip_global_norm(np.ones(3), 1.0),
     SeqgradTypeError),
    ("clip_global_norm(tensor, 1.0)", lambda: clip().clip_global_norm(torch.ones(3), 1.0), SeqgradTypeError),
    ("clip_global_norm([], 1.0)", lambda: clip().clip_global_norm([], 1.0), SeqgradValueError),
    ("clip_global_norm([[1, 2]], 1.0)  (nested lists)", lambda: clip().clip_global_norm([[1.0, 2.0]], 1.0), SeqgradTypeError),
    ("clip_global_norm(['abc'], 1.0)", lambda: clip().clip_global_norm(["abc"], 1.0), SeqgradTypeError),
    ("clip_global_norm([complex array], 1.0)", lambda: clip().clip_global_norm([np.ones(2, dtype=complex)], 1.0),
     SeqgradTypeError),
    ("clip_global_norm([g], tau=inf)", lambda: clip().clip_global_norm([np.ones(2)], inf), NonFiniteError),
    ("clip_global_norm([g], tau='1')", lambda: clip().clip_global_norm([np.ones(2)], "1"), SeqgradTypeError),
    ("clip_global_norm([g], 1.0, eps=-1)", lambda: clip().clip_global_norm([np.ones(2)], 1.0, eps=-1.0), SeqgradValueError),
    ("clip_global_norm([tensor with inf], 1.0)", lambda: clip().clip_global_norm([torch.tensor([inf])], 1.0), NonFiniteError),
    ("global_norm('abc')", lambda: clip().global_norm("abc"), SeqgradTypeError),
    ("global_norm([array with nan])", lambda: clip().global_norm([np.array([nan])]), NonFiniteError),
])

# ----------------------------------------------------------------------------- derive
cases([
    ("softmax.softmax([oo, 1])", lambda: __import__("seqgrad.derive.softmax").derive.softmax.softmax([sp.oo, 1]), NonFiniteError),
    ("softmax.softmax([-oo, 1])", lambda: __import__("seqgrad.derive.softmax").derive.softmax.softmax([-sp.oo, 1]), NonFiniteError),
    ("softmax.softmax([nan, 1])  (SymPy nan)", lambda: __import__("seqgrad.derive.softmax").derive.softmax.softmax([sp.nan, 1]),
     NonFiniteError),
    ("softmax.softmax(['oo', 1])", lambda: __import__("seqgrad.derive.softmax").derive.softmax.softmax(["oo", 1]), SeqgradError),
    ("softmax.softmax([zoo])", lambda: __import__("seqgrad.derive.softmax").derive.softmax.softmax([sp.zoo]), NonFiniteError),
    ("softmax.stable_softmax([oo, 1])", lambda: __import__("seqgrad.derive.softmax").derive.softmax.stable_softmax([sp.oo, 1]),
     NonFiniteError),
    ("Program.evaluate(expr, {})", lambda: program().program.evaluate(program().L, {}), SeqgradValueError),
    ("Program.evaluate(expr, {w_x: 'abc'})",
     lambda: program().program.evaluate(program().L, {sp.Symbol("w_x"): "abc"}), ParseError),
    ("Program.evaluate(expr, {q: 1})  (not a symbol of the program)",
     lambda: program().program.evaluate(program().L, {sp.Symbol("q"): 1}), SeqgradValueError),
    ("Program.evaluate(expr, [1, 2])", lambda: program().program.evaluate(program().L, [1, 2]), SeqgradTypeError),
    ("Program.evaluate(expr, {w_x: object()})",
     lambda: program().program.evaluate(program().L, {sp.Symbol("w_x"): object()}), SeqgradTypeError),
    ("Program.evaluate(expr, {w_x: nan})",
     lambda: program().program.evaluate(program().L, {sp.Symbol("w_x"): nan}), NonFiniteError),
])

# ----------------------------------------------------------------------------- seqgrad.atomic
cases([
    ("atomic.write_text('', ...)", lambda: __import__("seqgrad.atomic").atomic.write_text("", "x"), SeqgradValueError),
    ("atomic.write_text('dir/', ...)", lambda: __import__("seqgrad.atomic").atomic.write_text("newdir/", "x"),
     SeqgradValueError),
    # only checked, never written: a test must not be able to replace a device if the guard broke
    ("atomic.output_target('/dev/null')", lambda: __import__("seqgrad.atomic").atomic.output_target("/dev/null"),
     SeqgradValueError),
    ("atomic.write_text('.', ...)", lambda: __import__("seqgrad.atomic").atomic.write_text(".", "x"), SeqgradValueError),
    ("atomic.atomic_open(path, mode='a')", lambda: __import__("seqgrad.atomic").atomic.atomic_open("x.txt", "a").__enter__(),
     SeqgradValueError),
])


@pytest.mark.parametrize("call, run, error", CASES, ids=[c[0][:80] for c in CASES])
def test_misuse_raises_one_clear_seqgrad_error(call, run, error, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SeqgradError) as info:
        run()
    assert isinstance(info.value, error), f"{call}: {type(info.value).__name__} is not a {error.__name__}: {info.value}"
    message = str(info.value)
    assert "\n" not in message.strip() and " is not allowed: " in message, message
    assert list(tmp_path.iterdir()) == [], f"{call} wrote a file"


def test_the_list_is_the_probe_size():
    assert len(CASES) >= 175
    assert len({c[0] for c in CASES}) == len(CASES), "two cases with the same description"
