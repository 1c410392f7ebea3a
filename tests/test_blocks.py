"""derive.blocks: Transformer programs of symbolic shape print the textbook's backward pass, and the compiled
programs agree with torch autograd at the course's size and at random sizes."""

import pytest
import sympy as sp

from seqgrad.derive import blocks


def test_attention_backward_prints_as_the_text():
    prog = blocks.attention_program().program
    assert str(prog["dV"]) == "dV = A.T*G"
    assert str(prog["dA"]) == "dA = G*V.T"
    assert str(prog["dS"]) == "dS = A ∘ (dA - rowsum(dA ∘ A))"
    assert str(prog["dQ"]) == "dQ = 1/sqrt(d_k)*dS*K"
    assert str(prog["dK"]) == "dK = 1/sqrt(d_k)*dS.T*Q"
    assert prog["dS"].target.shape == (blocks.T, blocks.T)


def test_layernorm_backward_prints_in_xhat_and_sigma():
    prog = blocks.layernorm_program().program
    assert str(prog["dX"]) == "dX = (1/sigma) ∘ (dXhat - mean(dXhat) - Xhat ∘ mean(dXhat ∘ Xhat))"


def test_layernorm_backward_keeps_the_textbook_term_order_in_latex_and_blocks():
    """dX = (1/σ)(dx̂ − mean(dx̂) − x̂ ∘ mean(dx̂ ∘ x̂)): the printers' term sorting must not move mean(dx̂) last."""
    tex = blocks.backward_latex(blocks.layernorm_program())
    line = next(part for part in tex.split("\\\\") if r"\mathrm{d}\mathbf{X}" in part)
    minus_mean, inv_sigma, minus_product = (line.index(t) for t in (r"- \operatorname{mean}(\mathrm{d}\mathbf{\hat{X}})",
                                                      r"\frac{1}{\boldsymbol{\sigma}}", r"- \mathbf{\hat{X}} \odot"))
    assert inv_sigma < minus_mean < minus_product
    post = str(blocks.block_program("post-norm").program["dU"])
    assert post == "dU = (1/sigma_att) ∘ (dXhat_att - mean(dXhat_att) - Xhat_att ∘ mean(dXhat_att ∘ Xhat_att))"


def test_every_program_is_a_composition_of_proved_rules():
    for block in (blocks.attention_program(heads=2, masked=True), blocks.block_program("post-norm")):
        assert blocks.prove_program(block).holds


def test_sizes_must_be_positive_integers():
    from seqgrad.errors import SeqgradTypeError, SeqgradValueError

    with pytest.raises(SeqgradValueError, match="positive integer"):
        blocks.attention_program(T_=sp.Symbol("T"))
    with pytest.raises((SeqgradValueError, SeqgradTypeError)):
        blocks.attention_program(d_k_=0)


torch = pytest.importorskip("torch")

CASES = [("attention", 1, False), ("attention", 2, True), ("layernorm", 1, False), ("pre-norm", 2, False),
         ("post-norm", 1, False), ("mlp", 1, False)]
SIZES = [{"T": 7, "d": 5, "d_k": 3, "d_v": 3, "d_ff": 4}, {"T": 3, "d": 4, "d_k": 2, "d_v": 5, "d_ff": 6},
         {"T": 2, "d": 2, "d_k": 1, "d_v": 1, "d_ff": 1}]


@pytest.mark.parametrize("kind,heads,masked", CASES)
def test_compiled_programs_match_autograd(kind, heads, masked):
    from seqgrad.crosscheck import blocks as c_blocks

    g = torch.Generator().manual_seed(12)
    for sizes in SIZES:
        rows = c_blocks.compare_at(kind, sizes, g, heads, masked)
        assert len(rows) >= 3
        for name, derived, reference in rows:
            assert derived.shape == reference.shape, (kind, sizes, name)
            assert torch.allclose(derived, reference, atol=1e-10, rtol=1e-9), (kind, sizes, name)
            assert float(reference.abs().max()) > 0 or name == "dM", (kind, sizes, name)  # no silent zero


def test_the_mlp_sublayer_check_sees_a_wrong_slope():
    """The MLP sublayer's derived backward pass (dZ_mlp = dPhi_mlp o [Z_mlp > 0]) against a twin with another
    activation: the comparison fails, so a wrong slope cannot pass it."""
    from seqgrad.crosscheck import blocks as c_blocks

    def tanh_twin(v):
        x = torch.nn.functional.layer_norm(v["U"], (v["U"].shape[-1],), v["gamma_mlp"].reshape(-1), v["beta_mlp"].reshape(-1), 1e-5)
        return v["U"] + torch.tanh(x @ v["W_1"].T + v["b_1"]) @ v["W_2"].T + v["b_2"]

    rows = c_blocks.compare_at("mlp", SIZES[0], torch.Generator().manual_seed(3), reference_fn=tanh_twin)
    assert not all(torch.allclose(derived, reference, atol=1e-6) for _, derived, reference in rows)
