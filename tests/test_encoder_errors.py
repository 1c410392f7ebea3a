"""Bad input to the encoder gets a clear seqgrad error, never a NaN or a deep traceback."""

from __future__ import annotations

import pytest
import torch

from seqgrad.numeric import course
from seqgrad.numeric.attention import Head, MultiHeadAttention, attention_mask, check_mask
from seqgrad.numeric.encoder import MLP, Encoder, EncoderBlock
from seqgrad.numeric.heads import masked_mean_pool, shift_targets, valid_target_loss
from seqgrad.numeric.positions import LearnedPositions
from seqgrad.errors import NonFiniteError, SeqgradTypeError, SeqgradValueError, ShapeError


@pytest.fixture(scope="module")
def enc():
    return course.encoder()


def test_unknown_word_is_named():
    with pytest.raises(SeqgradValueError, match="'kilometres'"):
        course.token_ids("a journey of a thousand kilometres")


def test_empty_text():
    with pytest.raises(SeqgradValueError, match="at least one word"):
        course.token_ids(" ,. ")


@pytest.mark.parametrize("ids", [[0, 9], [-1, 2], [[0, 1], [12, 0]]])
def test_token_ids_out_of_range(enc, ids):
    with pytest.raises(SeqgradValueError, match="from 0 to 8"):
        enc(ids)


@pytest.mark.parametrize("ids", [[0.5, 1.0], [], [[[1]]]])
def test_token_ids_wrong_type_or_shape(enc, ids):
    with pytest.raises((SeqgradTypeError, ShapeError)):
        enc(torch.tensor(ids) if ids != [] else torch.tensor([], dtype=torch.long))


def test_weight_shapes_that_do_not_fit():
    with pytest.raises(ShapeError, match="W_K"):
        Head(torch.zeros(3, 5), torch.zeros(3, 4), torch.zeros(3, 5))
    with pytest.raises(ShapeError, match="W_O"):
        MultiHeadAttention([Head(**course.HEAD1), Head(**course.HEAD2)], torch.zeros(5, 5))
    with pytest.raises(ShapeError, match="head2"):
        MultiHeadAttention([Head(**course.HEAD1), Head(torch.zeros(3, 4), torch.zeros(3, 4), torch.zeros(3, 4))], torch.zeros(5, 6))
    with pytest.raises(ShapeError, match="b1"):
        MLP(course.W1, [0.1, 0.2], course.W2, course.b2)
    with pytest.raises(ShapeError, match="W1"):
        EncoderBlock(course.attention(), MLP(torch.zeros(4, 6), torch.zeros(4), torch.zeros(6, 4), torch.zeros(6)))
    with pytest.raises(ShapeError, match="blocks"):
        Encoder(torch.zeros(9, 6), course.encoder().blocks)
    with pytest.raises(ShapeError, match="H"):
        course.encoder().encode(torch.zeros(7, 4, dtype=torch.float64))


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_weights_refused_at_construction(bad):
    W = torch.tensor(course.W1, dtype=torch.float64)
    W[1, 2] = bad
    with pytest.raises(NonFiniteError, match="W1"):
        MLP(W, course.b1, course.W2, course.b2)


def test_non_finite_weights_set_later_are_caught(enc):
    enc = course.encoder()
    with torch.no_grad():
        enc.blocks[0].mlp.b1[0] = float("-inf")  # ReLU would hide it in the output
    with pytest.raises(NonFiniteError, match="b1"):
        enc(course.token_ids())


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_input_states(enc, bad):
    H = torch.zeros(7, 5, dtype=torch.float64)
    H[2, 3] = bad
    with pytest.raises(NonFiniteError, match="H"):
        enc.encode(H)


def test_every_source_masked_is_an_error_not_nan(enc):
    with pytest.raises(SeqgradValueError, match="at least one source"):
        attention_mask(4, padding=[0, 0, 0, 0])
    with pytest.raises(SeqgradValueError, match="at least one source"):
        attention_mask(4, causal=True, padding=[0, 1, 1, 1])  # left padding: query 0 sees nothing
    with pytest.raises(SeqgradValueError, match="at least one source"):
        enc(course.token_ids(), exclude=torch.eye(7, dtype=torch.bool) | torch.ones(7, 7, dtype=torch.bool))
    M = torch.zeros(7, 7, dtype=torch.float64)
    M[3] = float("-inf")
    with pytest.raises(SeqgradValueError, match="-inf"):
        enc(course.token_ids(), mask=M)
    with pytest.raises(SeqgradValueError):
        check_mask(torch.full((7, 7), float("nan")), 7)


def test_mask_shapes(enc):
    with pytest.raises(ShapeError, match="padding"):
        enc(course.token_ids(), padding=[1, 1, 1])
    with pytest.raises(SeqgradValueError, match="0/1"):
        attention_mask(3, padding=[1, 2, 1])
    with pytest.raises(SeqgradValueError, match="causal"):
        enc(course.token_ids(), causal=[True, False])


def test_heads_bad_input():
    H = torch.zeros(2, 3, 4, dtype=torch.float64)
    with pytest.raises(SeqgradValueError, match="real position"):
        masked_mean_pool(H, [[1, 0, 0], [0, 0, 0]])
    with pytest.raises(SeqgradValueError, match="valid target"):
        valid_target_loss(torch.zeros(3, 5, dtype=torch.float64), [1, 2, 3], [0, 0, 0])
    with pytest.raises(SeqgradValueError, match="class ids"):
        valid_target_loss(torch.zeros(3, 5, dtype=torch.float64), [1, 7, 3], [1, 1, 1])
    with pytest.raises(ShapeError):
        shift_targets(torch.zeros(2, 2, 2, dtype=torch.long))


def test_option_values():
    with pytest.raises(SeqgradValueError, match="activation"):
        course.encoder(activation="tanh")
    with pytest.raises(SeqgradValueError, match="positions"):
        Encoder.random(9, 4, 2, 8, positions="rotary")
    with pytest.raises(SeqgradValueError, match="max_len"):
        Encoder.random(9, 4, 2, 8, positions="learned")
    with pytest.raises(SeqgradValueError, match="T"):
        LearnedPositions(4, 3)(5)
    with pytest.raises(SeqgradValueError, match="stage"):
        course.trace("decoder")
    with pytest.raises(SeqgradValueError, match="dtype"):
        course.encoder(dtype="float16")


def test_non_finite_weight_caught_when_encoding_states():
    enc = course.encoder()
    with torch.no_grad():
        enc.blocks[0].attention.heads[1].W_K[0, 0] = float("nan")
    with pytest.raises(NonFiniteError, match="W_K"):
        enc.encode(torch.zeros(7, 5, dtype=torch.float64))


def test_ragged_or_non_numeric_weights():
    with pytest.raises(SeqgradTypeError, match="E_vocab"):
        Encoder([[0.1, 0.2], [0.3]], course.encoder().blocks)
    with pytest.raises(SeqgradTypeError, match="W1"):
        MLP("weights", course.b1, course.W2, course.b2)
    with pytest.raises(ShapeError, match="W1"):
        MLP([1.0, 2.0], course.b1, course.W2, course.b2)
