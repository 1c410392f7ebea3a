"""The numeric encoder on the course example: every printed number, and the text's claims."""

from __future__ import annotations

import math

import pytest
import torch

from seqgrad.crosscheck import course_tables
from seqgrad.numeric import course
from seqgrad.numeric.attention import attention_mask, contributions
from seqgrad.numeric.encoder import Encoder
from seqgrad.numeric.heads import AffineHead, masked_mean_pool, shift_targets, valid_target_loss
from seqgrad.numeric.layernorm import layer_norm
from seqgrad.numeric.positions import LearnedPositions, frequencies, sinusoidal
from seqgrad.numeric.tokens import tokenize
from seqgrad.sigfig import matches

# one worker runs this module, so that its module fixtures are built once, not once per xdist worker
pytestmark = pytest.mark.xdist_group("encoder")


@pytest.fixture(scope="module")
def traces():
    return {s: course.trace(s) for s in course.STAGES}


def _cells_by_source():
    groups: dict[str, list] = {}
    for cell in course_tables.cells():
        key = cell.where.split(",")[0].split(" (")[0]
        groups.setdefault(key, []).append(cell)
    return groups


GROUPS = _cells_by_source()


def test_transcription_holds_every_printed_number():
    doc = course_tables.load()
    assert doc["source"] == "shared/seeds/000_a7606e3a9f173091.txt"
    ids = [t["id"] for t in doc["tables"]]
    assert ids == [f"Table {n}" for n in list(range(10, 21)) + list(range(23, 32))]
    assert sum(len(r) for t in doc["tables"] for r in t["rows"]) == 544 == doc["table_numbers"]
    assert all(t["stage"] in course.STAGES for t in doc["tables"] + doc["inline"])


@pytest.mark.parametrize("source", sorted(GROUPS), ids=sorted(GROUPS))
def test_printed_numbers_reproduced(traces, source):
    bad = []
    for cell in GROUPS[source]:
        value = float(traces[cell.stage][cell.name][cell.index])
        if not matches(value, cell.printed):
            bad.append(f"{cell.label()}: computed {value:.6g}, printed {cell.printed}")
    assert not bad, "\n".join(bad)


def test_boundary_value_U64(traces):
    """U[6,4] = -0.0954499..., 6.8e-8 from the rounding boundary -0.09545; float64 keeps it on the printed side."""
    u = float(traces["prenorm_block"]["block0.U"][6, 4])
    assert abs(u - (-0.0954499324)) < 1e-8
    assert matches(u, -0.0954)
    assert not matches(u, -0.0955)


def test_float32_course_run_matches_with_slack():
    traces32 = {s: course.trace(s, dtype="float32") for s in course.STAGES}
    results = course_tables.compare(traces32, slack=1e-5)
    assert all(r.ok for r in results), [r.cell.label() for r in results if not r.ok][:5]


def test_tokenizer_rule_and_course_ids():
    assert tokenize("A journey, of a THOUSAND miles begins!") == "a journey of a thousand miles begins".split()
    assert course.token_ids() == [0, 1, 2, 0, 3, 4, 5]
    assert course.VOCAB.K == 9 and course.VOCAB.ids(["with"]) == [6]


def test_repeated_token_same_embedding_different_input(traces):
    tr = traces["attention_on_H0"]
    assert torch.equal(tr["E_seq"][0], tr["E_seq"][3])
    assert not torch.allclose(tr["H0"][0], tr["H0"][3])


def test_positions_formula_and_odd_width():
    omega = frequencies(5)
    assert omega[0] == omega[1] == 1
    assert math.isclose(float(omega[2]), 10000 ** (-2 / 5)) and math.isclose(float(omega[4]), 10000 ** (-4 / 5))
    P = sinusoidal(7, 5)
    assert P.shape == (7, 5)
    assert P[0].tolist() == [0, 1, 0, 1, 0]
    t = torch.arange(7, dtype=torch.float64)
    assert torch.allclose(P[:, 4], torch.sin(t * 10000 ** (-4 / 5)))  # unpaired sine
    assert sinusoidal(3, 1).flatten().tolist() == [0.0, math.sin(1), math.sin(2)]


def test_positions_shift_is_a_rotation_of_each_pair():
    P = sinusoidal(40, 8)
    omega = frequencies(8)
    k = 3
    for j in range(0, 8, 2):
        c, s = math.cos(k * omega[j]), math.sin(k * omega[j])
        R = torch.tensor([[c, -s], [s, c]], dtype=torch.float64)
        assert torch.allclose(P[k:, j:j + 2], P[:-k, j:j + 2] @ R, atol=1e-12)


def test_learned_positions_option():
    enc = Encoder.random(9, 6, 2, 8, positions="learned", max_len=12, seed=3)
    record = {}
    enc([1, 2, 3], record=record)
    assert torch.equal(record["P"], enc.learned.table[:3])
    assert enc.learned.table.requires_grad


def test_embedding_scale_option():
    enc = Encoder.random(9, 4, 2, 8, scale_embeddings=True, seed=3)
    record = {}
    enc([1, 2], record=record)
    assert torch.allclose(record["E_seq"], enc.E_vocab[[1, 2]] * 2)


def test_layer_norm_statistics(traces):
    tr = traces["prenorm_block"]
    X, mu, var = layer_norm(tr["H0"])
    assert torch.allclose(X, tr["block0.X"]) and torch.allclose(mu, tr["block0.LN1.mean"])
    assert torch.allclose(X.mean(-1), torch.zeros(7, dtype=torch.float64), atol=1e-15)
    assert torch.allclose(X.var(-1, unbiased=False), var / (var + 1e-5))
    const, _, _ = layer_norm(torch.full((2, 5), 3.0, dtype=torch.float64), beta=torch.arange(5.0, dtype=torch.float64))
    assert torch.equal(const, torch.arange(5.0, dtype=torch.float64).expand(2, 5))


def test_attention_rows_and_causal_mask(traces):
    tr = traces["attention_on_H0"]
    A, Ac = tr["head1.A"], tr["head1.A_causal"]
    assert torch.allclose(A.sum(-1), torch.ones(7, dtype=torch.float64)) and torch.allclose(Ac.sum(-1), torch.ones(7, dtype=torch.float64))
    assert bool((torch.triu(Ac, 1) == 0).all())
    assert torch.allclose(Ac[6], A[6])
    zeroed = A[1].clone()
    zeroed[2:] = 0
    assert abs(float(zeroed.sum()) - 0.476) < 5e-4  # zeroing after the softmax is not masking
    assert torch.allclose(contributions(A, tr["head1.V"]).sum(-2), tr["head1.O"])


def test_concatenation_and_output_projection(traces):
    tr = traces["attention_on_H0"]
    assert torch.equal(tr["C"], torch.cat([tr["head1.O"], tr["head2.O"]], -1))
    assert tr["C"].shape == (7, 6) and tr["B_att"].shape == (7, 5)
    assert torch.allclose(tr["B_att"][6, 0], tr["C"][6, 0] + 0.5 * tr["C"][6, 3])


def test_second_bypass_carries_U(traces):
    tr = traces["prenorm_block"]
    assert torch.allclose(tr["H1"], tr["block0.U"] + tr["block0.B_mlp"])
    assert torch.allclose(tr["block0.U"], tr["H0"] + tr["block0.B_att"])
    assert torch.allclose(tr["block0.J_mlp"], torch.relu(tr["block0.Z_mlp"]))


def test_post_norm_differs_and_gelu_option():
    ids = course.token_ids()
    pre = course.encoder()(ids)
    post = course.encoder(norm_first=False)(ids)
    gelu = course.encoder(activation="gelu").trace(ids)
    assert not torch.allclose(pre, post)
    assert torch.allclose(gelu["block0.J_mlp"], torch.nn.functional.gelu(gelu["block0.Z_mlp"]))


def test_fused_path_equals_recorded_path():
    enc = Encoder.random(9, 8, 4, 16, n_blocks=2, bias=True, seed=4)
    ids = torch.randint(0, 9, (3, 6), generator=torch.Generator().manual_seed(0))
    pad = torch.ones(3, 6, dtype=torch.bool)
    pad[0, 4:] = False
    assert torch.allclose(enc(ids, padding=pad, causal=True), enc(ids, padding=pad, causal=True, record={}), atol=1e-13)


def test_leakage_through_an_earlier_unrestricted_block():
    enc = Encoder.random(9, 6, 2, 8, n_blocks=2, seed=5)
    H = torch.randn(7, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(1))

    def jac(flags):
        J = torch.autograd.functional.jacobian(lambda h: enc.encode(h, causal=flags)[5], H)
        return float(J[:, 6].abs().max())

    assert jac([True, True]) == 0.0
    assert jac([False, True]) > 1e-6  # miles sees begins through block 0


def test_padding_and_causal_mask():
    M = attention_mask(4, causal=True, padding=[1, 1, 1, 0])
    assert M[3].tolist() == [0, 0, 0, float("-inf")]
    assert M[1].tolist() == [0, 0, float("-inf"), float("-inf")]


def test_heads_pooling_shift_and_loss():
    H = torch.randn(2, 5, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    m = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    pooled = masked_mean_pool(H, m)
    assert torch.allclose(pooled[0], H[0, :3].mean(0))
    H2 = H.clone()
    H2[0, 3:] = 1e6
    assert torch.allclose(masked_mean_pool(H2, m), pooled)
    ids = torch.tensor(course.token_ids())
    y, v = shift_targets(ids)
    assert y[:6].tolist() == ids[1:].tolist() and v.tolist() == [True] * 6 + [False]
    y2, v2 = shift_targets(torch.tensor(course.token_ids("a journey of a thousand miles begins with")))
    assert y2[6] == 6 and v2[6]
    head = AffineHead.random(9, 4, seed=1)
    logits = head(H)
    yy = torch.randint(0, 9, (2, 5), generator=torch.Generator().manual_seed(3))
    loss = valid_target_loss(logits, yy, m)
    ce = torch.nn.functional.cross_entropy(logits[m.bool()], yy[m.bool()])
    assert torch.allclose(loss, ce)
    per_seq = torch.stack([torch.nn.functional.cross_entropy(logits[b][m[b].bool()], yy[b][m[b].bool()]) for b in range(2)]).mean()
    assert not torch.allclose(loss, per_seq)  # a mean of per-sequence means weights differently


def test_gradients_flow_to_every_parameter():
    enc = Encoder.random(9, 8, 2, 16, n_blocks=2, bias=True, positions="learned", max_len=8, seed=6)
    enc(torch.tensor([1, 2, 3, 4])).sum().backward()
    missing = [n for n, p in enc.named_parameters() if p.grad is None]
    assert missing == []
