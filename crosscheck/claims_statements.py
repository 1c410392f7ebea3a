"""Every checkable prose statement of the four course texts, each with a verdict.

The texts (``shared/seeds/``) state results in words as well as in numbers: that an operation *is the same as*
another, *does not depend on* something, is *invariant*, *grows*, *always* or *never* does something.
:func:`statements` records them, read sentence by sentence, cited as the other claims are
(:func:`seqgrad.sources.cite`: ``"wiki §MHA:82"``), each with a **verdict**:

``holds``
    the registered checks in ``checked_by`` (an identity of the catalogue, a check against torch, a claims
    entry) or the small computation ``evidence`` (:mod:`crosscheck.claims_evidence`) show it; ``reason`` says how;
``imprecise``
    the text's wording is not the precise statement: ``precise`` gives the precise one and what is missing,
    ``evidence`` computes the difference;
``false``
    a counterexample or a computation contradicts it: ``precise`` gives it;
``not checkable``
    an opinion, a history, a description or a tendency without a value; ``reason`` says why.

Every statement with ``evidence`` is a check of group ``claims`` (``claims.statement_<text>_<line>``, see
:mod:`crosscheck.checks.claims`): it passes while the computation still comes out as the verdict says, and its
result carries the text's verdict in ``Result.textbook`` -- ``contradicted`` for an imprecise or false statement
(so that the reports list it among the errata, the reason beginning ``imprecise:`` or ``false:``), ``verified``
for one that holds.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Callable

from seqgrad.sources import cite

from . import claims_evidence as ev

VERDICTS = ("holds", "imprecise", "false", "not checkable")
#: the textbook verdict (derive.claims.STATUSES) a statement's check reports
TEXTBOOK = {"holds": "verified", "imprecise": "contradicted", "false": "contradicted"}


@dataclass(frozen=True)
class Statement:
    """One statement of a course text: its verdict, the checks that hold it (names or globs of registered checks),
    the computation behind the verdict (``evidence() -> (holds, detail)``), the reason, and for an imprecise or
    false statement the precise statement or the counterexample."""

    cite: str
    text: str
    checked_by: tuple[str, ...] = ()
    reason: str = ""
    verdict: str = ""
    precise: str = ""
    evidence: Callable[[], tuple[bool, str]] | None = field(default=None, compare=False, repr=False)
    name: str = ""
    #: the corrections ``precise`` is made of, each a text that other statements may share (the appendix gives each
    #: correction once, with the statements it applies to); by default ``precise`` is one correction
    corrections: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self):
        if isinstance(self.precise, tuple):  # several corrections: precise is their sentence
            object.__setattr__(self, "corrections", self.precise)
            object.__setattr__(self, "precise", "; and ".join(self.precise))
        elif self.precise and not self.corrections:
            object.__setattr__(self, "corrections", (self.precise,))
        if not self.verdict:
            object.__setattr__(self, "verdict", "holds" if self.checked_by or self.evidence else "not checkable")
        if self.verdict not in VERDICTS:
            raise ValueError(f"{self.cite}: verdict {self.verdict!r} is not one of {VERDICTS}")

    @property
    def key(self) -> str:
        """The text's key: week06, lesson, lecture07 or wiki."""
        return self.cite.split(" ")[0]

    @property
    def line(self) -> int:
        return int(self.cite.rsplit(":", 1)[1].split("-")[0])

    @property
    def erratum(self) -> bool:
        return self.verdict in ("imprecise", "false")

    @property
    def textbook(self) -> str:
        return TEXTBOOK.get(self.verdict, "")

    @property
    def summary(self) -> str:
        """The verdict with its reason, as the report shows it (``imprecise: ...``)."""
        why = self.precise if self.erratum else self.reason
        return f"{self.verdict}: {why}" if why else self.verdict


def _at(key: str):
    """A maker of statements of text ``key``: ``said(line, text, ...)`` with the citation built from the line."""
    def make(line, text, checked_by=(), *, why="", verdict="", precise="", evidence=None):
        first, last = (line, None) if isinstance(line, int) else line
        return Statement(cite(key, first, last), text, tuple(checked_by), why, verdict, precise, evidence)

    return make


_PERMUTATION = ("identity:attention-permutation-equivariance", "encoder.permutation_equivariance")
_CAUSAL = ("encoder.causal_prefix", "decoder.causal_blocks_zero", "identity:attention-mask-before-softmax")
_PRE_POST = ("identity:residual-pre-norm", "identity:residual-post-norm", "encoder.prenorm_layer_vs_torch",
             "encoder.postnorm_layer_vs_torch")
_DECODER_LAYER = ("decoder.layer_vs_torch", "decoder.stack_vs_torch")


#: one correction the lesson's and the lecture's statements about order share (lesson §Intro:9, §Mistakes:264,
#: §Takeaways:280; lecture07 §Positions:45)
_EQUIVARIANT = (
    "unmasked self-attention is permutation-equivariant, not invariant: permuting the tokens permutes the outputs "
    "(lesson §PE:87 says it so); only a pooled readout (a mean over positions) is invariant, and a masked "
    "self-attention (the decoder's) depends on the order even without positional encoding, since the mask is tied "
    "to the positions (the catalogue's identity for a causal mask shows it at an exact point)")

#: one correction of the wiki's two statements that the distance of two encodings grows with their offset
_DISTANCE_NOT_MONOTONE = (
    "||p_i - p_j||^2 = sum_k (2 - 2 cos(|i - j| w_k)) oscillates: for the encoding of wiki §PE:45-51 with "
    "d_model = 512 the distance first decreases at |i - j| = 44 (at d_model = 4 already at 4), so it is not monotone "
    "in |i - j|")

_LESSON_PRE_POST_FALSE = (
    "the lesson's own encoder layer (l.136-138) is post-norm, x_1 = LayerNorm(x + MultiHead(x)); y = x + Layer(Norm(x)) "
    "is pre-norm. They are different functions of the same parameters (week06 §Depth:1187 says so): for one block with "
    "equal weights the outputs differ")


def _week06() -> list[Statement]:
    said = _at("week06")
    return [
        said(83, "the same cell, with shared w_x, w_h and phi, is used at every time step", ("rnn.scalar.sum_over_uses",),
          why="one cell unrolled over T steps; its weight gradients are sums over the uses"),
        said(110, "every unrolled block uses the same w_x, w_h: more blocks add no independent weights",
          ("rnn.scalar.sum_over_uses", "rnn.vector.sum_over_uses")),
        said(152, "a shared weight: w_x^[t] = w_x for every t, so a change of w_x changes every use by the same amount",
          ("rnn.scalar.sum_over_uses", "rnn.manual_bptt"), why="hence dL/dw_x = sum_t g_t^z x_t"),
        said(200, "if every factor of a path has modulus at most r < 1, the signal passed back is at most r^(q - s) times the "
               "incoming one: long paths suppress it exponentially", ("rnn.path_products", "gated.pascanu_bound")),
        said(204, "even when an early contribution is negligible the shared weight can get a large gradient from late uses",
          ("rnn.scalar.sum_over_uses", "claims.figure3_saturation")),
        said(208, "the same recurrent weight can pass very different sensitivities on different input sequences",
          ("rnn.path_products",), why="dh_t/dh_(t-1) = w_h phi'(z_t) depends on the input through z_t"),
        said(213, "identity activation: each transition contributes the factor w_h; the activation does not weaken the signal",
          ("claims.week06_exercise2",)),
        said(214, "the tanh slope is close to one near zero and small in saturation", ("claims.tanh_slope_at_zero", "gated.fact.tanh_prime")),
        said(215, "the sigmoid slope never exceeds 1/4", ("claims.sigmoid_slope_bound", "gated.fact.sigmoid_prime_max")),
        said(218, "ReLU is not differentiable at zero; an implementation must fix a convention there",
          ("gated.fact.relu_at_zero", "gated.relu_convention_vs_torch")),
        said(220, "with the identity activation and fixed weights the final prediction is affine in the input sequence",
          evidence=ev.identity_rnn_is_affine, why="SymPy: every second derivative of yhat in x_1..x_3 vanishes"),
        said(224, "with tanh every state stays between -1 and 1 even after many transitions", ("gated.fact.saturation",),
          why="|tanh z| < 1 for every real z"),
        said(230, "repeated saturation can suppress the signal even with |w_h| > 1", ("claims.figure3_saturation", "gated.figure3_right")),
        said(230, "bounded states do not guarantee bounded gradients: along a path derivatives multiply with w_h",
          ("claims.figure3_growth", "gated.figure3_left")),
        said(240, "at a differentiable point with a nonzero gradient a small enough step against the gradient lowers the loss",
          ("claims.fact_step_size",)),
        said(262, "with all three widths equal to one the vector model is exactly the scalar model",
          ("rnn.scalar.autograd", "rnn.vector.autograd")),
        said(288, "the vector backward pass applies the same local chain rules as the scalar table",
          ("rnn.vector.autograd", "rnn.scalar.table3")),
        said(320, "the gradients of the input and recurrent weights keep the sums over uses", ("rnn.vector.sum_over_uses",)),
        said(336, "an entry of W_h above one is not a criterion for exploding gradients", ("claims.fact_nilpotent_w_h",)),
        said(342, "if the norms are uniformly below one, a long enough path suppresses every direction", ("gated.pascanu_bound",)),
        said(342, "norms above one allow amplification but do not guarantee that a signal lies along the amplified directions",
          ("claims.fact_nilpotent_w_h",), evidence=ev.norm_does_not_guarantee_growth,
          why="W = diag(2, 0) has norm 2 and sends (0, 1) to 0"),
        said(348, "with zero input every transition derivative is 1.2, so the sensitivity grows although the states stay bounded",
          ("claims.figure3_growth",)),
        said(360, "a gradient longer than tau keeps its direction and its length is reduced to tau",
          ("gated.clipping_vs_torch", "claims.fact_clipped_step_bound")),
        said(370, "a coordinate of u_t near one mostly keeps the old state, near zero it prefers the candidate",
          ("claims.gru_mixing", "gated.gru_mixing_example")),
        said(382, "a carry gate near one creates a useful path but guarantees neither stable gradients nor memory",
          ("gated.lstm_carry_jacobian", "gated.gru_carry_jacobian"),
          why="dc_t/dc_(t-1) = diag(f_t) is one term; the other terms of the Jacobian are not bounded by it"),
        said(462, "the cost of ordinary full attention grows quadratically with the sequence length",
          ("identity:count-attention", "identity:count-cost-crossover")),
        said(482, "the two occurrences of a have the same id but different positions", ("encoder.course_tables",)),
        said(520, "the first and fourth embedding rows (both a) coincide exactly", ("encoder.course_tables",)),
        said(552, "addition keeps five features per row; concatenation would give ten", ("encoder.course_tables", "claims.h0_row3")),
        said(749, "softmax over rows keeps both axes (a T x T weight matrix whose rows sum to one)",
          ("identity:softmax-sums-to-one",)),
        said(751, "another query creates other weights although it reads the same keys and values", ("encoder.course_tables",)),
        said(801, "for begins (t = 6) both rules allow all seven sources: the last rows of masked and unmasked attention coincide",
          ("encoder.causal_journey_row", "encoder.causal_prefix")),
        said(803, "for this single head, changing an input row after position one cannot change the causal output at position one",
          _CAUSAL),
        said(803, "in the full model the boundary must hold in every earlier layer: a late mask cannot remove future "
               "information already mixed into its input", ("claims.fact_leakage_through_earlier_block",)),
        said(807, "several heads return a contextual representation of the same width", ("identity:attention-multihead-concat",)),
        said(926, "with concatenated width D the output projection maps D to D and still mixes the heads",
          ("encoder.mha_vs_torch", "identity:attention-multihead-concat")),
        said(979, "for a constant row the centred features are zero, so LayerNorm returns beta; eps keeps the denominator nonzero",
          ("identity:layernorm-constant-row",)),
        said(1161, "the next block receives H^(1) and performs the same sequence of operations with its own parameters",
          ("encoder.stack_vs_torch",)),
        said(1171, "without a mask and without positions, permuting the input rows permutes the output rows the same way "
                "(permutation equivariance): the output follows the permutation", _PERMUTATION,
          evidence=ev.permutation, why="equivariance, stated as such; invariance holds only for a pooled readout"),
        said(1173, "LayerNorm and the shared MLP act row by row and commute with the permutation; A(PH) = P A(H) P^T, "
                "O(PH) = P O(H)", _PERMUTATION + ("identity:attention-gradients",)),
        said(1177, "residual sums keep the property; a fixed causal mask tied to the positions is in general not preserved "
                "by a permutation", ("identity:attention-equivariance-fails-causal",)),
        said(1177, "permuting the token embeddings while the positional vectors stay at their positions changes what enters "
                "the block", ("identity:attention-equivariance-fails-positions",)),
        said(1187, "moving the normalization changes the computation: the same parameters do not give the same intermediate "
                "numbers in pre-norm and post-norm", _PRE_POST, evidence=ev.pre_norm_is_not_post_norm),
        said(1193, "the first term comes from the identity bypass, the sum from the branch; residual connections do not "
                "guarantee bounded or non-vanishing gradients", ("identity:residual-pre-norm", "depth.prenorm_output_gradient_shrinks")),
        said(1193, "with post-norm even the bypass contribution passes through the normalization after the sum",
          ("identity:residual-post-norm", "depth.postnorm_gradients_grow_toward_output"), evidence=ev.post_norm_identity_path),
        said(1239, "the indicator of a valid target need not coincide with the indicator of a valid input",
          ("claims.fact_pooled_vs_per_sequence_mean",)),
        said(1261, "row-wise normalization, the MLP and the residual paths keep a correctly set information boundary but do "
                "not set it", ("claims.fact_leakage_through_earlier_block", "encoder.causal_prefix")),
        said(1285, "even with perfect memory a choice of four remains: the uniform predictor has accuracy 1/4 and "
                "cross-entropy log 4 = 1.39 nats", ("claims.uniform_baseline",)),
        said(1304, "a short dependency path helps information reach distant rows but does not guarantee successful training",
          why="a statement about training outcomes, not a value"),
        # Table 35: each misconception with what to check instead
        said(1332, "a longer RNN has no new cell parameters per step: one shared parameter gets gradient contributions from "
                "every use", ("rnn.scalar.sum_over_uses", "rnn.vector.sum_over_uses")),
        said(1333, "a nonzero gradient of a shared weight does not prove that long dependencies are learned: late uses can "
                "give gradient while the early paths have vanished", ("claims.figure3_saturation", "rnn.path_products")),
        said(1334, "seven attention weights index the source positions; the weighted values set the feature width",
          ("encoder.course_tables", "identity:attention-multihead-concat")),
        said(1336, "each head projects the whole input and uses its own mixture of the allowed sources", ("encoder.mha_vs_torch",)),
        said(1337, "LayerNorm takes its statistics over the features of the one current row, not over words or the batch",
          ("encoder.layernorm_vs_torch", "identity:layernorm-mean-zero"), evidence=ev.layernorm_per_vector),
        said(1338, "the second bypass carries U, the representation after the first addition, not the block's input",
          ("identity:residual-encoder-block", "encoder.prenorm_layer_vs_torch")),
        said(1340, "a causal mask in the last layer does not prevent all future leakage: check every earlier attention layer",
          ("claims.fact_leakage_through_earlier_block",)),
        said(1341, "parallel training is not parallel generation of unknown tokens", ("decoder.teacher_forcing_is_parallel_generation",)),
    ]


def _lesson() -> list[Statement]:
    said = _at("lesson")
    pre_post_false = _LESSON_PRE_POST_FALSE
    return [
        said(3, "every large model named is the same architectural skeleton, almost unchanged since 2017",
          why="history and opinion, not a value"),
        said(7, "a recurrent network is strictly sequential: step t needs the state of step t - 1", ("rnn.scalar.autograd",),
          why="h_t = f(h_(t-1), x_t) (l.41) needs h_(t-1) as an argument"),
        said(9, "self-attention by itself does not distinguish the order of the tokens", _PERMUTATION,
          verdict="imprecise", evidence=ev.permutation,
          precise=_EQUIVARIANT),
        said(27, "self-attention computes every token's representation by the same operation for all positions at once (QK^T)",
          ("encoder.mha_vs_torch",)),
        said(41, "the number of sequential steps of self-attention is O(1): it does not grow with the sequence length",
          why="a count of the algorithm's sequential steps, not a value seqgrad computes"),
        said(43, "for n < d self-attention needs fewer operations per layer than a recurrent layer (5.1 times at n = 100, d = 512)",
          ("identity:count-cost-crossover", "claims.flops_attention_vs_recurrent"),
          why="n^2 d < n d^2 exactly when n < d"),
        said(49, "per operations alone self-attention does not always win at large n", ("identity:count-cost-crossover",)),
        said(55, "one attention computes exactly one distribution of weights per token, summing to one",
          ("identity:softmax-sums-to-one",)),
        said(57, "the heads' results are concatenated and passed through one more linear map to return to the original dimension",
          ("identity:attention-multihead-concat", "encoder.mha_vs_torch")),
        said(73, "eight heads of width 64 concatenate to 8 x 64 = 512, exactly d_model, so the output can be added to the input",
          ("claims.head_width", "identity:attention-multihead-concat")),
        said(77, "W^Q, W^K, W^V are single d_model x d_model matrices sliced into h heads (since h d_k = d_model)",
          ("encoder.mha_vs_torch",), why="torch's fused projection equals the per-head projections"),
        said(81, "the total cost of h heads of width d_model/h is about that of one head of full width d_model",
          ("identity:count-attention",), evidence=ev.heads_cost,
          why="the multiplications of projections, scores and values are equal exactly (SymPy)"),
        said(87, "swapping two tokens, every query-key pair gives the same dot product, from other positions; the outputs "
              "are the same set, only permuted", _PERMUTATION, evidence=ev.permutation,
          why="permutation equivariance, stated precisely"),
        said(89, "the positional vector has the same dimension as the embedding and is built from fixed sines and cosines, "
              "not trained", ("claims.pe_d4_pos*", "identity:pe-p0")),
        said(97, "the first layer's input is x = embedding(token) + PE(pos)", ("claims.h0_row0", "encoder.course_tables")),
        said(108, "the second pair (low frequency) changes slowly and almost linearly on pos = 0..3",
          evidence=ev.slow_pair_is_almost_linear, why="|sin u - u| <= u^3/6 = 4.5e-6 at u = 0.03"),
        said(108, "each position has a unique set of numbers, easily told from its neighbours", evidence=ev.positions_are_distinct,
          why="PE(p) = PE(q) needs p - q in 2 pi Z, impossible for integers p != q (pi is irrational); the first 2000 "
              "positions of d = 4 lie at least 0.04 apart"),
        said(110, "PE(pos + k, 2i) is a linear combination of PE(pos, 2i) and PE(pos, 2i + 1) with coefficients depending "
               "only on k, not on pos", ("identity:pe-shift", "identity:pe-rotation-group")),
        said(118, "the sum 0.8415 (-0.4161) + 0.5403 0.9093 coincides exactly with sin 3 = 0.1411",
          ("claims.pe_shift_sin3", "claims.pe_shift_sin3_printed_factors"),
          why="exactly at the four printed decimals; the addition formula itself is exact"),
        said(118, "a relative offset can be recognised by a linear map of the encodings that does not depend on the absolute "
               "position", ("identity:pe-shift", "identity:pe-rotation-group")),
        said(120, "without positional encoding the outputs for a permuted sentence are a permuted version of the same set; "
               "adding PE(pos) breaks this symmetry", _PERMUTATION + ("identity:attention-equivariance-fails-positions",)),
        said(130, "layer normalization normalizes over the features of one example, not over the batch, and so does not "
               "depend on the batch size or the sequence length", ("encoder.layernorm_vs_torch", "identity:layernorm-mean-zero"),
          evidence=ev.layernorm_per_vector),
        said(130, "the ResNet formula y = x + Layer(Norm(x)) is literally the same formula as the encoder's sublayers",
          _PRE_POST, verdict="false", evidence=ev.pre_norm_is_not_post_norm, precise=pre_post_false),
        said(150, "the feed-forward sublayer has exactly twice the parameters of the multi-head attention block",
          ("claims.ffn_and_layer_parameters", "identity:count-ffn")),
        said(152, "x_1 = x + MultiHead(x) (before normalization) guarantees the +1 in the derivative by x, which keeps the "
               "gradient from vanishing through dozens of layers",
          ("identity:residual-post-norm", "depth.postnorm_gradients_grow_toward_output"), verdict="imprecise",
          evidence=ev.post_norm_identity_path,
          precise="the derivative of x + F(x) by x, I + dF/dx, has the identity term, but the lesson's layer is post-norm "
                  "(x_1 = LayerNorm(x + MultiHead(x)), l.136): dx_1/dx = J_LN (I + dF/dx), and J_LN sends the "
                  "constant direction to 0, so the identity path through N layers is a product of N LayerNorm "
                  "Jacobians, not I (the pre-norm y = x + F(LN(x)) keeps I); and no residual guarantees "
                  "non-vanishing gradients (week06 §Depth:1193)"),
        said(156, "layer normalization stabilizes the scale of activations independently of the sequence length and the "
               "batch size", ("encoder.layernorm_vs_torch",), evidence=ev.layernorm_per_vector),
        said(162, "the decoder is a stack of N identical layers of three sublayers, each wrapped in the same skip connection "
               "and layer normalization as the encoder", _DECODER_LAYER),
        said(164, "self-attention without restriction lets every position see all the others, the future included",
          ("encoder.mha_vs_torch",), evidence=ev.every_output_depends_on_every_input),
        said(172, "cross-attention uses the same Attention(Q, K, V) without a mask, Q from the decoder, K and V from the "
               "encoder's final output", ("decoder.cross_attention_backward", "decoder.layer_vs_torch")),
        said(180, "after the mask the fourth weight is exactly 0 and the first three are renormalized to sum to one: "
               "position 2 sees itself and the two tokens before it", ("identity:attention-mask-before-softmax",
                                                                      "decoder.lesson_mask_example"),
          evidence=ev.causal_mask_counts, why="the printed weights themselves are the erratum claims.masked_softmax_example"),
        said(182, "cross-attention lets the decoder look at the whole input sequence for every output token, K and V being "
               "the encoder stack's output, fixed during generation", ("decoder.memory_gradient_every_position",
                                                                       "decoder.cross_attention_backward")),
        said(184, "the mask guarantees that the future tokens take no part in computing the current position", _CAUSAL),
        said(188, "the prediction at position t mathematically cannot use position t + 1 and later, although all positions "
               "are one matrix product", _CAUSAL + ("decoder.teacher_forcing_is_parallel_generation",)),
        said(260, "the heads work in parallel and independently on the same input; their results are combined once at the "
               "end, by concatenation and the projection W^O", ("identity:attention-multihead-concat", "encoder.mha_vs_torch")),
        said(262, "PE(pos) is a fixed function of the position without trainable parameters; the layer's input is the sum of "
               "it and the token embedding, not a concatenation", ("identity:pe-p0", "claims.h0_row0", "claims.h0_row3")),
        said(264, "without positional encoding self-attention processes the input as an unordered set", _PERMUTATION,
          verdict="imprecise", evidence=ev.permutation,
          precise=_EQUIVARIANT),
        said(266, "the mask deterministically and always forbids seeing future positions, independently of training or "
               "inference", ("decoder.teacher_forcing_is_parallel_generation", "identity:attention-mask-before-softmax")),
        said(268, "without the residual connection the gradient through dozens of layers practically vanishes, and without "
               "layer normalization training is destabilized: both are structurally necessary",
          why="a claim about training deep models, not a value"),
        said(270, "many large language models are decoder-only: masked self-attention blocks without an encoder and without "
               "cross-attention", ("decoder.decoder_only",)),
        said(280, "self-attention by itself does not distinguish the order of the tokens (it treats the sequence as a set)",
          _PERMUTATION, verdict="imprecise", evidence=ev.permutation,
          precise=_EQUIVARIANT),
        said(282, "a shift by k is a linear map of the encoding with coefficients cos(k omega), sin(k omega) depending only "
               "on the shift", ("identity:pe-shift", "identity:pe-rotation-group")),
        said(290, "without skip connections and layer normalization a deep transformer would suffer from vanishing gradients: "
               "both are structurally necessary", why="a claim about training deep models, not a value"),
        said(298, "the skip connection is used in literally the same form y = x + Layer(Norm(x)) around both the attention "
               "and the feed-forward block", _PRE_POST, verdict="false", evidence=ev.pre_norm_is_not_post_norm,
          precise=pre_post_false),
        said(298, "layer normalization does not depend on the batch size or the sequence length",
          ("encoder.layernorm_vs_torch",), evidence=ev.layernorm_per_vector),
        said(320, "the look-ahead mask and the padding mask are implemented the same way, -inf before softmax",
          ("identity:attention-mask-before-softmax", "claims.masked_softmax_example")),
    ]


def _lecture07() -> list[Statement]:
    said = _at("lecture07")
    return [
        said(3, "an MLP does not know that neighbouring pixels are related; special architectures build these inductive "
             "biases into the formulas", why="a motivation, not a value"),
        said(9, "2-D convolution (X * K)_ij = sum_u sum_v K_uv X_(i+u, j+v) + b", ("conv.forward_vs_torch",),
          why="the formula is a cross-correlation, as torch's conv2d computes it"),
        said(11, "one filter slides over the whole image: the weights are shared",
          ("conv.weight_sharing_gradient", "identity:conv-weight-sharing-gradient")),
        said(13, "max-pooling formula", why="the formula is cut off in the text (line 13 ends inside the subscript)"),
        said(15, "the receptive field grows with depth", ("conv.receptive_field",)),
        said(21, "h_t = tanh(W_xh x_t + W_hh h_(t-1) + b)", ("rnn.vector.autograd", "rnn.manual_bptt")),
        said(23, "the LSTM adds gates to remember longer", ("gated.lstm_carry_jacobian",),
          why="the carry path dc_t/dc_(t-1) = diag(f_t) has no weight matrix and no tanh' factor; a purpose, not a guarantee"),
        said(25, "the LSTM equations (f, i, c~, c, o, h on [h_(t-1); x_t])", ("gated.lstm_vs_torch",)),
        said(27, "f decides what to forget, i what to write, o what to show", ("gated.lstm_carry_jacobian",),
          why="the forget gate's role is the carry derivative dc_t/dc_(t-1) = diag(f_t); the rest is a description"),
        said(31, "the transformer does not pass a state through time but looks at the whole sequence at once",
          ("encoder.mha_vs_torch",), evidence=ev.every_output_depends_on_every_input,
          why="every output row depends on every input row (positive softmax weights)"),
        said(33, "Q = X W_Q, K = X W_K, V = X W_V", ("encoder.mha_vs_torch",)),
        said(37, "Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V", ("encoder.mha_vs_torch", "identity:attention-gradients")),
        said(39, "dividing by sqrt(d_k) keeps the variance of the dot products near one",
          ("identity:attention-dot-variance", "claims.lecture07_scaling_variance"), verdict="imprecise",
          evidence=ev.dot_product_variance,
          precise="Var(q.k) = d_k, so Var(q.k/sqrt(d_k)) = 1, when the coordinates of q and k are independent with "
                  "mean 0 and variance 1; that assumption is missing: with k = q the variance is d_k (E[q_a^4] - 1), "
                  "which is 2 d_k (scaled: 2) only when E[q_a^4] = 3, as for Gaussian coordinates, and trained projections give "
                  "no such guarantee"),
        said(39, "otherwise softmax becomes almost one-hot", verdict="imprecise",
          evidence=ev.softmax_tie,
          precise="softmax(c s) tends to one-hot as c grows only when the largest score is unique; tied scores stay "
                  "split (softmax(c (1, 1)) = (1/2, 1/2) for every c); unscaled scores have a spread growing like "
                  "sqrt(d_k), which makes saturation likely, not certain"),
        said(39, "many heads compute several such maps in parallel and concatenate the result",
          ("identity:attention-multihead-concat",)),
        said(41, "MultiHead(X) = Concat(H_1, ..., H_h) W_O", ("identity:attention-multihead-concat", "encoder.mha_vs_torch")),
        said(45, "without order, attention is permutation-invariant", _PERMUTATION + ("claims.fact_pooled_vs_per_sequence_mean",),
          verdict="imprecise", evidence=ev.permutation,
          precise=_EQUIVARIANT),
        said(47, "PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...)",
          ("identity:pe-shift", "identity:pe-p0", "claims.pe_d4_pos*")),
        said(49, "modern language models are the same layers at another scale", why="an opinion, not checkable"),
    ]


def _wiki() -> list[Statement]:
    said = _at("wiki")
    # the missing skip connection of the decoder's three sublayers: one correction, given once
    no_residual = ("the skip connection is missing: the encoder adds it before each LN (l.27, l.32: LN(h' + h)), and "
                   "the decoder's sublayers are LN(h + Sublayer(h)) in the original (the decoder layer checked against "
                   "PyTorch's); without it LN o MH o Attn and LN o FNN are other functions")
    return [
        said(3, "the biggest advantage of transformers over RNNs is their efficiency under parallelization",
          why="a comparison of training efficiency, not a value"),
        said(7, "the pipeline: embedding plus positions, the encoder, then the decoder on part of the sequence and the "
             "encoder's output", why="a description of the architecture; its parts are the statements below"),
        said(9, "there is no recurrence inside the encoder and decoder components",
          ("encoder.stack_vs_torch", "decoder.teacher_forcing_is_parallel_generation")),
        said(19, "h_i = x_i + p_i: positions are added to the embeddings", ("claims.h0_row0", "claims.h0_row3", "encoder.course_tables")),
        said(20, "the farther apart two positions, the larger the distance of their vectors", ("claims.wiki_pe_distance_monotone",),
          verdict="false", precise=_DISTANCE_NOT_MONOTONE),
        said(23, "h_i^j = Attn(Q^j h_i, K^j H, V^j H)", ("encoder.mha_vs_torch",)),
        said(25, "concatenation is needed to return to the original dimension: h'_i = [h_i^1 ... h_i^J]",
          ("identity:attention-multihead-concat", "claims.week06_exercise4"), verdict="imprecise",
          evidence=ev.concatenated_width,
          precise="the concatenation of J heads of width d_v is J d_v wide: the original dimension only when "
                  "d_v = d_model/J; the output projection W_O (the 'compression' of l.80) is what returns to "
                  "d_model, and it is missing from h'_i"),
        said(27, "a skip connection is just adding the input vector to the output: h'_i + h_i", ("identity:residual-post-norm",)),
        said(27, "layer normalization has two trainable parameters; the mean and the variance are computed for each "
              "dimension of the vector", ("encoder.layernorm_vs_torch", "identity:layernorm-mean-zero"),
          verdict="imprecise", evidence=ev.layernorm_per_vector,
          precise="LayerNorm computes one mean and one variance per vector, over its d features (per-dimension "
                  "statistics are batch normalization's); its trainable parameters are the vectors gamma and beta "
                  "(2 d numbers), while mu and sigma in LN(.; mu_1, sigma_1) are statistics, not parameters"),
        said(30, "h'''_i = W_2 ReLU(W_1 h''_i + b_1) + b_2", ("encoder.postnorm_layer_vs_torch",)),
        said(32, "z_i = LN(h'''_i + h''_i), and steps 3-7 repeat", ("encoder.postnorm_layer_vs_torch", "encoder.stack_vs_torch")),
        said(34, "repeating steps 3-7 increases the number of parameters", ("identity:count-layer", "encoder.stack_vs_torch"),
          why="each repetition is a layer with its own parameters"),
        said(41, "processing a set instead of a sequence loses the order of the elements (hence positional encoding)",
          _PERMUTATION + ("identity:attention-equivariance-fails-positions",),
          why="without positions the output at a token does not depend on where it stands (equivariance)"),
        said(43, "positions are encoded so that the larger |i - j|, the larger ||p_i - p_j||, and n is unbounded",
          ("claims.wiki_pe_distance_monotone",), verdict="false",
          precise=_DISTANCE_NOT_MONOTONE),
        said(45, "p_(i,s) = sin(i 10000^(-2k/d_model)) for s = 2k, cos for s = 2k + 1", ("claims.wiki_pe_formula", "identity:pe-shift")),
        said(58, "q_i = Q x_i, k_i = K x_i, v_i = V x_i", ("encoder.mha_vs_torch",)),
        said(62, "the importance of x_j for x_i is the dot product of q_i with k_j", ("encoder.mha_vs_torch",)),
        said(65, "w_ji = exp(<q_i, k_j>/sqrt(d)) / sum_p exp(<q_i, k_p>/sqrt(d))",
          ("identity:softmax-sums-to-one", "identity:softmax-max-subtracted", "encoder.mha_vs_torch")),
        said(72, "z_i = sum_p w_pi v_p", ("encoder.mha_vs_torch",)),
        said(73, "self-attention is a soft-arg-max with temperature sqrt(d)", ("identity:softmax-sums-to-one",),
          why="a restatement of l.65: softmax(s/T) with T = sqrt(d)"),
        said(73, "every element depends on all input elements", ("encoder.mha_vs_torch",),
          evidence=ev.every_output_depends_on_every_input),
        said(78, "each set of query/key/value matrices is created randomly", why="the initialization, not a value"),
        said(80, "attention is done several times in parallel, concatenated, then compressed to a vector of the same "
              "dimension for each element", ("identity:attention-multihead-concat",)),
        said(82, "c^j = Attn(Q^j q, K^j X, V^j X), j = 1 ... J, where W are trainable matrices",
          ("identity:attention-multihead-concat",), verdict="imprecise", evidence=ev.concatenated_width,
          precise="W appears in no formula: the compression of l.80 is c = [c^1 ... c^J] W with W of size "
                  "J d_v x d_model; and q (the query input) is not defined"),
        said(88, "every block of the decoder receives the output of the encoder's last block",
          ("decoder.stack_vs_torch", "decoder.memory_gradient_every_position")),
        said(90, "generating element t, only the first t - 1 elements may be looked at: h_t = y_(t-1) + p_t; "
              "H_t = (h_1, ..., h_t)", ("identity:attention-mask-before-softmax", "decoder.lesson_mask_example"),
          verdict="imprecise", evidence=ev.causal_mask_counts,
          precise="position t attends to the t positions h_1 ... h_t, itself included (the causal mask allows j <= t), "
                  "whose inputs carry y_0 ... y_(t-1); 'the first t - 1 elements' counts the generated outputs, not "
                  "the positions H_t holds"),
        said(93, "h'_t = LN o MH o Attn(Q^j h_t, K^j H_t, V^j H_t), after 'linear normalization'", _DECODER_LAYER,
          verdict="imprecise", evidence=ev.missing_residual,
          precise=("LN is layer normalization (the text's own l.27), not a 'linear normalization'", no_residual)),
        said(96, "h''_t = LN o MH o Attn(Q^j h_t, K^j Z, V^j Z): cross-attention to the encoder output", _DECODER_LAYER,
          verdict="imprecise", evidence=ev.missing_residual, precise=no_residual),
        said(99, "a linear fully-connected network (by analogy with the encoder): y_t = LN o FNN(h''_t)", _DECODER_LAYER,
          verdict="imprecise", evidence=ev.ffn_is_not_linear,
          precise=("the network is the encoder's two-layer W_2 ReLU(W_1 h + b_1) + b_2 (l.30), which is not linear",
                   no_residual)),
        said(101, "the result, the index of the word with the largest probability, is SoftArgMax(W_y y_t + b_y)",
          ("identity:softmax-sums-to-one",), verdict="imprecise", evidence=ev.softargmax_is_a_distribution,
          precise="SoftArgMax (softmax) gives the probability vector over the vocabulary, not an index; the index is "
                  "its argmax, which is the argmax of the logits W_y y_t + b_y (softmax is increasing)"),
        said(101, "every element of the output vocabulary gets a probability", ("identity:softmax-sums-to-one",),
          evidence=ev.softargmax_is_a_distribution),
        said(103, "the last stage runs after steps 1-4 were repeated for all decoder blocks", ("decoder.stack_vs_torch",)),
    ]


# --------------------------------------------------------------------------- the whole reading of week 06 and the lesson
# The first pass over the chapter and the lesson searched them for keywords; these are the statements a sentence-by-
# sentence reading of every section added (issue 29).  ``_in_text_order`` merges them with the first pass by line
# (a stable sort: a statement of the first pass keeps its name on a shared line).

def _in_text_order(*parts: list[Statement]) -> list[Statement]:
    return sorted((s for part in parts for s in part), key=lambda s: s.line)


def _week06_read_whole() -> list[Statement]:
    said = _at("week06")
    return [
        said(7, "a rising and a falling temperature can have the same mean but suggest different next values",
          evidence=ev.same_mean_other_order, why="(1, 2, 3) and (3, 2, 1) have mean 2; their linear continuations are 4 and 0"),
        said(45, "a model given future measurements in training solves an easier task than the one it faces in use",
          why="a statement about the task's design, not a value"),
        said(61, "a longer sequence adds uses of the transformation but needs no separate set of cell parameters per position",
          ("rnn.scalar.sum_over_uses", "rnn.vector.sum_over_uses")),
        said((124, 132), "Table 3: each forward operation and its backward computation by the chain rule",
          ("rnn.scalar.table3", "rnn.manual_bptt")),
        said(144, "g_2^z = e w_o phi'(z_2), g_1^z = g_2^z w_h phi'(z_1), g_0^z = g_1^z w_h phi'(z_0): the head stays "
               "visible through w_o in every expression", ("rnn.scalar.table3", "rnn.manual_bptt")),
        said(158, "the earlier dependence of h_(t-1) on w_h is already counted by the earlier uses: the local contribution "
               "is g_t^z h_(t-1), not differentiated again", ("rnn.scalar.sum_over_uses", "rnn.manual_bptt"),
          why="the sum of the local contributions equals autograd's total derivative"),
        said((162, 166), "dL/dw_x = sum_t g_t^z x_t, dL/dw_h = sum_t g_t^z h_(t-1), dL/dw_o = e h_2",
          ("rnn.scalar.sum_over_uses", "rnn.scalar.autograd")),
        said((170, 172), "the expanded path sums of dL/dw_x and dL/dw_h", ("rnn.scalar.autograd", "rnn.path_products")),
        said(174, "the first contribution of the recurrent weight is zero since h_(-1) = 0, yet x_0 still reaches the loss: "
               "dL/dx_0 = g_0^z w_x need not be zero", ("rnn.scalar.autograd", "rnn.manual_bptt")),
        said(178, "contributions to a shared weight can have opposite signs and cancel; the sum need not exceed each one",
          evidence=ev.cancelling_contributions, why="identity cell, w_h = w_o = 1, x = (1, -1, 0), y = 3: contributions -3, 3, 0"),
        said(190, "an early use's contribution passes more recurrent transitions than a late one's", ("rnn.path_products",)),
        said((194, 198), "dh_t/dh_(t-1) = phi'(z_t) w_h, and dL/dh_s = dL/dh_q prod_(t=s+1..q) w_h phi'(z_t)",
          ("rnn.path_products", "rnn.manual_bptt")),
        said(202, "a constant lower bound r > 1 on the factors' moduli gives growth at least r^(q - s) along the scalar path",
          ("rnn.path_products", "claims.figure3_growth")),
        said(202, "with small and large factors mixed the result depends on the whole product: one large weight or one long "
               "sequence alone does not decide it", ("claims.figure3_saturation", "claims.figure3_growth"),
          why="at w_h = 1.2 the same weight amplifies with zero input and suppresses with x_t = 1 (Figure 3, right)"),
        said(216, "ReLU: a positive preactivation passes the signal through the activation, a negative one cuts the path",
          ("gated.relu_convention_vs_torch", "gated.fact.relu_at_zero")),
        said(218, "for tanh and sigmoid saturation happens far from zero, where the derivatives tend to zero",
          ("gated.fact.saturation", "gated.fact.tanh_prime", "gated.fact.sigmoid_prime")),
        said(220, "on an active ReLU path the factors are still w_h: repeated moduli above one can amplify gradients and states",
          ("gated.relu_convention_vs_torch", "rnn.path_products")),
        said(226, "PyTorch's RNN uses tanh by default and offers ReLU as the alternative", evidence=ev.torch_rnn_conventions),
        said(228, "phi'(z_t) = 1 - h_t^2 for h_t = tanh(z_t)", ("gated.fact.tanh_prime",)),
        said(240, "a zero gradient gives no update, and a large step can increase the loss", ("claims.fact_step_size",)),
        said(282, "z_t = x_t W_x^T + h_(t-1) W_h^T + b_h, h_t = phi(z_t), yhat = h_(T-1) W_o^T + b_o, "
               "L = 1/2 sum_c (yhat_c - y_c)^2", ("rnn.vector.autograd",)),
        said((290, 294), "g_(T-1)^h = e W_o, g_t^z = g_t^h (.) phi'(z_t), g_(t-1)^h = g_t^z W_h", ("rnn.vector.autograd",)),
        said(304, "the gradients of W_x, W_h, W_o, b_h and b_o are sums over the uses of outer products (g_t^z)^T x_t, ...",
          ("rnn.vector.sum_over_uses", "rnn.vector.autograd")),
        said(308, "dL/dx_t = g_t^z W_x; with D = H = C = 1 the equations give the three scalar weight gradients",
          ("rnn.vector.autograd", "rnn.scalar.autograd")),
        said(318, "with a target at every position g_t^h = e_t W_o + g_(t+1)^z W_h: both paths added before phi'",
          ("rnn.vector.per_position",)),
        said(324, "averaging over positions replaces each e_t by e_t / T; the recurrent signal is not divided by T again",
          ("rnn.vector.per_position",)),
        said((330, 334), "J_t = diag(phi'(z_t)) W_h and g_s^h = g_q^h J_q J_(q-1) ... J_(s+1)", ("gated.pascanu_bound", "rnn.vector.autograd")),
        said(336, "the order matters: matrix products are in general not commutative", evidence=ev.matrices_do_not_commute),
        said(340, "||g_s^h||_2 <= ||g_q^h||_2 prod_t ||J_t||_2", ("gated.pascanu_bound",)),
        said(348, "with x_t = 1 the states approach saturation and the sensitivity decreases; at T = 1 it equals one",
          ("claims.figure3_saturation", "gated.figure3_right")),
        said(360, "with plain gradient descent the update is at most eta tau long; an adaptive optimizer's step is not "
               "bounded by it", ("claims.fact_clipped_step_bound",), evidence=ev.adam_step_ignores_clipping_bound,
          why="Adam's first step is about eta per coordinate whatever the clipped gradient's length"),
        said(368, "h_t = u_t (.) h_(t-1) + (1 - u_t) (.) h~_t", ("gated.gru_vs_torch", "gated.gru_mixing_example")),
        said((374, 378), "the GRU gates a_t = sigma(x_t W_xa^T + b_xa + h_(t-1) W_ha^T + b_ha) and its candidate, in "
                      "PyTorch's convention", ("gated.gru_vs_torch",)),
        said(380, "applying the reset gate to the previous state before the multiplication by W_hn gives in general "
               "another model", ("gated.gru_reset_convention",)),
        said(388, "c_t = f_t (.) c_(t-1) + i_t (.) c~_t, h_t = o_t (.) tanh(c_t)", ("gated.lstm_vs_torch",)),
        said((392, 396), "the LSTM gates and candidate with the merged biases of PyTorch's LSTM", ("gated.lstm_vs_torch",)),
        said(400, "with gates and candidate fixed the carry derivative is diag(f_t); the dependences through h_(t-1) add "
               "other paths to the full derivative", ("gated.lstm_carry_jacobian", "gated.derived_lstm_vector_jacobian")),
        said(452, "batch_first=True changes the layout of the sequence axes but not of the final state",
          evidence=ev.torch_rnn_conventions),
        said(454, "head(output) makes a prediction at every position, of size (B, T, C)", evidence=ev.torch_rnn_conventions),
        said(480, "the prefix has six different types; with, single and step make the vocabulary K = 9",
          ("encoder.course_tables",), evidence=ev.proverb_counts),
        said(493, "an id is an index, not a measurement: the order of the vocabulary entries is arbitrary as long as lookup "
               "and output labels agree", evidence=ev.vocabulary_order_is_arbitrary),
        said(536, "the first pair changes fast, the second slower, the last sine slower still; p_0 = (0, 1, 0, 1, 0)",
          ("identity:pe-p0", "claims.pe_p0"), evidence=ev.pe_frequencies_decrease),
        said(544, "each full sine-cosine pair at t + Delta is a linear map of the pair at t with coefficients depending on "
               "Delta; the unpaired last sine has no such relation of its own",
          ("identity:pe-shift-d5-interleaved", "identity:pe-unpaired-no-scalar")),
        said(568, "the original Transformer multiplies the embeddings by sqrt(D) before adding the positions",
          why="a fact about the 2017 paper's model, which the course example leaves out"),
        said(562, "the two occurrences of a now differ, although their embedding is shared",
          ("claims.h0_row0", "claims.h0_row3", "encoder.course_tables")),
        said(630, "q_t = (h_t0, h_t1, h_t2), k_t = ((h_t0 + h_t3)/2, h_t1, (h_t2 + h_t4)/2), v_t = (h_t0, h_t2, (h_t3 + h_t4)/2)",
          ("encoder.course_tables",)),
        said(677, "the dot product depends on lengths and directions, so in general it is not the cosine similarity",
          evidence=ev.dot_is_not_cosine),
        said(683, "for independent zero-mean unit-variance coordinates the unscaled dot product has variance d_k and the "
               "scaled one 1: a choice of scale, not a guarantee about trained queries",
          ("identity:attention-dot-variance",), evidence=ev.dot_product_variance,
          why="stated with its assumption, which lecture07 §Transformer:39 leaves out"),
        said(702, "each query's weights sum to one, a larger score gets a larger weight, and changing one score changes the "
               "other weights", ("identity:softmax-sums-to-one", "identity:softmax-jacobian")),
        said(708, "subtracting the row maximum leaves the distribution unchanged and keeps the largest exponent at zero",
          ("identity:softmax-max-subtracted", "identity:softmax-shift-invariance")),
        said(712, "the weights sum to one at full precision; the rounded values may not", evidence=ev.rounded_weights_sum),
        said(739, "the weights are nonnegative but the values can be negative, so contributions can cancel; the output is a "
               "weighted average of the value vectors", ("identity:softmax-sums-to-one", "encoder.course_tables")),
        said(747, "S = Q K^T / sqrt(3) (7 x 7), A = softmax_rows(S), O = A V (7 x 3)", ("encoder.course_tables", "encoder.mha_vs_torch")),
        said(786, "excluded sources get weight 0 and the allowed ones are renormalized; zeroing normalized weights leaves a "
               "wrong sum; softmax of an all -inf row is undefined", ("identity:attention-mask-before-softmax",
                                                                     "claims.week06_exercise3"),
          evidence=ev.masking_before_softmax),
        said(831, "each head's weights for one query sum to one: the two heads are not normalized together",
          ("identity:softmax-sums-to-one", "encoder.course_tables")),
        said(844, "the second head gives a more uniform distribution in this example", evidence=ev.head2_more_uniform,
          why="the entropy of its weights for begins is larger (1.94 against 1.80; log 7 = 1.95)"),
        said(928, "torch's nn.MultiheadAttention splits embed_dim equally between the heads, so embed_dim = 5, num_heads = 2 "
               "is not supported", ("encoder.course_heads_not_in_torch",)),
        said(946, "X = LN_1(H), B_att = MHA(X), U = H + B_att, R = LN_2(U), B_mlp = MLP(R), H' = U + B_mlp",
          ("encoder.prenorm_layer_vs_torch", "identity:residual-encoder-block", "encoder.course_tables")),
        said(948, "the first addition keeps the block input, the second U; neither carries the normalized branch input",
          ("identity:residual-encoder-block",)),
        said((971, 975), "LN(h_t)_c = gamma_c (h_tc - mu_t)/sqrt(sigma_t^2 + eps) + beta_c with the population variance",
          ("encoder.layernorm_vs_torch", "identity:layernorm-mean-zero")),
        said(977, "one parameter vector is shared by the positions, but each position sets its own statistics",
          ("encoder.layernorm_vs_torch",), evidence=ev.layernorm_per_vector),
        said(979, "with gamma = 1, beta = 0 the normalized row has mean zero and variance sigma^2/(sigma^2 + eps), "
               "slightly below one", ("identity:layernorm-variance", "identity:layernorm-mean-zero")),
        said(981, "nn.LayerNorm(D) normalizes the last axis for each example and position separately, with the current "
               "row's statistics in training and in use; it carries no information between positions",
          ("encoder.layernorm_vs_torch",), evidence=ev.layernorm_without_running_statistics),
        said(1023, "the same MLP parameters act at every position: the MLP mixes features within a row, attention mixes rows",
          evidence=ev.position_wise_mlp),
        said(1047, "without an activation between the maps their composition would stay affine",
          ("identity:mlp-without-activation-affine",)),
        said(1161, "the stack changes the depth, not the sequence length: every block receives seven rows of five features",
          ("encoder.stack_vs_torch",)),
        said(1177, "permuting the position-encoded rows together with their position features permutes the output too",
          _PERMUTATION, evidence=ev.permutation),
        said(1191, "dL/dh_i = g_i + sum_j g_j df_j/dh_i: the bypass term and the branch's sum", ("identity:residual-pre-norm",)),
        said(1207, "implementations compute the cross-entropy directly from the logits, for numerical stability",
          evidence=ev.cross_entropy_from_logits),
        said(1225, "even a zero padding embedding can become nonzero once the position is added", ("identity:pe-norm",),
          why="every positional vector has norm at least one (sin^2 + cos^2 = 1 per pair)"),
        said(1233, "with right padding and at least one real token every padded query keeps real sources to read",
          evidence=ev.padded_query_row),
        said(1235, "the source mask does not remove a padded query's output: it reads real values and gives a nonzero row",
          evidence=ev.padded_query_row),
        said(1239, "averaging each sequence first and then the sequences weights them differently when the lengths differ",
          ("claims.fact_pooled_vs_per_sequence_mean",)),
        said(1239, "a loss computed at an invalid target before the valid entries are selected is not undone by a zero "
                "weight applied later", evidence=ev.late_zero_weight, why="the loss there is inf, and inf * 0 = NaN"),
        said(1241, "in nn.MultiheadAttention a True entry of a boolean mask excludes it; other attention functions need not "
                "follow the same rule", evidence=ev.torch_mask_conventions),
        said(1259, "with only the seven prefix tokens the first six rows have next-token targets and begins has none",
          evidence=ev.proverb_counts),
        said(1275, "all rows of a known record can be computed together under the causal mask",
          ("encoder.causal_prefix", "decoder.teacher_forcing_is_parallel_generation")),
        said(1279, "a causal stack can process the positions of a known sequence in parallel, but generating unknown tokens "
                "stays sequential", ("decoder.teacher_forcing_is_parallel_generation", "encoder.causal_prefix")),
        said(1289, "the parameter counts are close (1,943 / 2,023 / 1,915), which does not equalize computation or capacity",
          evidence=ev.practicum_recurrent_parameters,
          why="the RNN's and the GRU's counts come out of torch modules of the stated widths; the Transformer's depends "
              "on the length of its learned positions, which the text does not give"),
        said(1298, "at delay 8 all three are perfect; at 16 the RNN's mean is below half, the GRU's about four fifths and "
                "the Transformer succeeds for every seed; a small spread can mean consistently poor results (RNN, 32)",
          evidence=ev.practicum_prose_and_table,
          why="the prose agrees with its Table 34; the values are the practicum's saved results, which are not here"),
        said(1300, "the results do not establish universal superiority, extrapolation to other lengths or language generation",
          why="a statement about what an experiment shows"),
        said(1304, "full attention can connect any allowed pair of positions in one layer", ("encoder.mha_vs_torch",),
          evidence=ev.every_output_depends_on_every_input),
        said(1306, "for one head matching costs about T^2 d_k operations and mixing T^2 d_v; projections scale as T D^2",
          ("identity:count-attention",), evidence=ev.attention_layer_multiplications),
        said(1314, "four patches of nine input features; with a class token T = 5 rows", evidence=ev.vit_patches),
        said(1335, "attention's softmax normalizes the scores of the sources; the vocabulary head normalizes class logits",
          ("encoder.course_tables", "identity:softmax-sums-to-one")),
        said(1339, "masking the padding sources is not enough: padded outputs must also leave the pooling and invalid "
                "targets the loss", ("claims.fact_pooled_vs_per_sequence_mean",), evidence=ev.padded_query_row),
    ]


def _lesson_read_whole() -> list[Statement]:
    said = _at("lesson")
    return [
        said(15, "training time grew almost linearly with the sequence length because the steps could not be parallelized",
          why="an empirical statement about training time, not a value"),
        said(19, "28.4 BLEU for the big model; about 12 hours (base) and 3.5 days (big) on 8 P100 GPUs",
          why="results reported by the 2017 paper, not computable here"),
        said(33, "self-attention: per-layer complexity O(n^2 d), sequential steps O(1), maximum path length O(1)",
          # the worked ratio (5.1 times cheaper at n = 100, d = 512) counts the attention products only
          ("identity:count-cost-crossover", "identity:count-attention", "claims.flops_attention_vs_recurrent"),
          verdict="imprecise",
          evidence=ev.attention_layer_multiplications,
          precise="the scores Q K^T and the mixing A V cost n^2 d multiplications each, but the Q, K, V and output "
                  "projections of the same layer (the 4 d_model^2 parameters of l.77, applied to n rows) cost 4 n d^2: "
                  "a self-attention layer is O(n^2 d + n d^2); O(n^2 d) counts the attention products only (as the 2017 "
                  "paper's table does), and for n < d, the lesson's typical case (l.43), the left-out projections "
                  "dominate: 104,857,600 against 10,240,000 multiplications at n = 100, d = 512"),
        said(35, "recurrent layer: per-layer complexity O(n d^2) and maximum path length O(n)",
          ("rnn.path_products", "identity:count-cost-crossover"),
          why="n steps, each a product of the state with a d x d matrix; the path from x_1 to h_n passes n - 1 transitions"),
        said((63, 67), "head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V); MultiHead = Concat(head_1, ..., head_h) W^O, "
                    "W^O in R^(h d_v x d_model)", ("encoder.mha_vs_torch", "identity:attention-multihead-concat")),
        said(69, "d_k = d_v = 512/8 = 64", ("claims.head_width", "claims.lesson_task02")),
        said(75, "the weights of 'она' are a distribution over the eight previous tokens, and a syntactic head may peak on "
              "the neighbouring 'счастлива' or on 'и'", verdict="false", evidence=ev.words_before_pronoun,
          precise="nine words precede 'она' (Девочка играла с собакой которая была очень доброй и), so a tokenization "
                  "that keeps the words whole gives nine previous tokens, not the eight weights printed; and "
                  "'счастлива' is the last word, after 'она', so it is not one of the previous tokens"),
        said(87, "in a recurrent network the order is built into the computation: permuting the tokens changes h_1, h_2, ...",
          evidence=ev.rnn_depends_on_order),
        said(95, "PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i + 1) = cos(pos / 10000^(2i/d))",
          ("claims.pe_d4_pos*", "identity:pe-shift")),
        said(101, "for i = 1 at d = 4 the exponent is 0.5 and 10000^0.5 = 100: a frequency 100 times lower",
          ("claims.pe_d4_frequency",)),
        said(124, "the sine-cosine construction uses geometrically decreasing frequencies", evidence=ev.pe_frequencies_decrease),
        said(124, "high and low frequencies together give each position a unique fingerprint, also at lengths not seen in "
               "training", evidence=ev.positions_are_distinct,
          why="the formula is defined for every pos, and PE(p) = PE(q) needs p - q in 2 pi Z"),
        said(130, "one encoder block is repeated N = 6 times, each time with its own trainable weights",
          ("encoder.stack_vs_torch", "identity:count-layer")),
        said(130, "the feed-forward network is applied independently to each position", evidence=ev.position_wise_mlp),
        said((136, 138), "x_1 = LayerNorm(x + MultiHead(x, x, x)), x_2 = LayerNorm(x_1 + FFN(x_1))",
          ("encoder.postnorm_layer_vs_torch", "identity:residual-post-norm")),
        said(142, "FFN(x) = max(0, x W_1 + b_1) W_2 + b_2", ("encoder.postnorm_layer_vs_torch", "identity:count-ffn")),
        said(144, "in MultiHead(x, x, x) queries, keys and values all come from the same x", ("encoder.mha_vs_torch",)),
        said(150, "the scale and shift parameters of the two layer normalizations are negligible next to the rest",
          ("identity:count-layer", "claims.ffn_and_layer_parameters"), why="2 x 2 x 512 = 2,048 against 3,145,728"),
        said(164, "before softmax is applied, all 'future' positions of the attention weight matrix are forcibly zeroed",
          ("identity:attention-mask-before-softmax",), verdict="imprecise", evidence=ev.zeroing_scores_is_not_masking,
          precise="the mask adds -inf to the future scores before softmax (the lesson's own l.170), so that their "
                  "weights after softmax are exactly 0; zeroing is another operation: a score set to 0 keeps a "
                  "positive weight (0.075 in the lesson's scores 1.2, 0.5, 2.0 with the fourth set to 0), and weights "
                  "zeroed after softmax no longer sum to one (week06 §Mask:786)"),
        said(170, "MaskedAttention(Q, K, V) = softmax(Q K^T / sqrt(d_k) + M) V with M_ij = 0 for j <= i, -inf for j > i",
          ("identity:attention-mask-before-softmax", "decoder.lesson_mask_example")),
        said(172, "after adding -inf and softmax the probability of looking at any future position j > i is exactly zero",
          ("decoder.causal_blocks_zero", "identity:attention-mask-before-softmax")),
        said(178, "the 4 x 4 mask: 0 on and below the diagonal, -inf above it", ("decoder.lesson_mask_example",),
          evidence=ev.causal_mask_counts),
        said(184, "at the second step the mask lets positions 0 and 1 see only each other (but not the future)",
          ("identity:attention-mask-before-softmax", "decoder.lesson_generation"), verdict="imprecise",
          evidence=ev.causal_mask_counts,
          precise="under the causal mask (l.170) position 0 sees only itself and position 1 sees positions 0 and 1: "
                  "query row t allows t + 1 sources; position 0 does not see position 1, and each position sees itself"),
        said(184, "at the first step the mask allows only position 0, and cross-attention gives access to all three encoder "
               "representations", ("decoder.lesson_generation", "decoder.memory_gradient_every_position")),
        said(238, "task 21: PE(pos + k, 2i) = PE(pos, 2i) cos(k omega) + PE(pos, 2i + 1) sin(k omega), omega = 1/10000^(2i/d)",
          ("identity:pe-shift", "claims.lesson_task21")),
        said(244, "task 24: without PE the sets of output representations of 'кот спит' and 'спит кот' coincide up to the "
               "permutation", _PERMUTATION, evidence=ev.permutation),
        said(248, "task 26: h heads of width d_model/h cost about as much as one head of full width",
          ("claims.lesson_task26",), evidence=ev.heads_cost),
        said(252, "task 28: layer normalization works for batches of any size, down to a batch of one",
          ("encoder.layernorm_vs_torch",), evidence=ev.layernorm_per_vector),
        said(254, "task 29: a decoder layer has one more cross-attention block of the size of self-attention (262,144)",
          ("decoder.count_task_29", "identity:count-decoder-layer")),
        said(274, "the number of obligatory sequential steps falls from O(n) to O(1)",
          why="a count of the algorithm's sequential steps, as at l.41, not a value seqgrad computes"),
        said(276, "parallelization is not about fewer computations but about spreading them over thousands of cores",
          why="a statement about hardware and training time, not a value"),
        said(278, "multi-head attention computes h independent self-attention blocks in parallel, combined by concatenation "
               "and the projection W^O", ("identity:attention-multihead-concat", "encoder.mha_vs_torch")),
        said(284, "the formula y = x + Layer(Norm(x)) of lesson 337 literally repeats twice in a row inside one layer",
          _PRE_POST, verdict="false", evidence=ev.pre_norm_is_not_post_norm, precise=_LESSON_PRE_POST_FALSE),
        said(286, "the decoder's masked self-attention forbids seeing future positions through M_ij = -inf for j > i",
          ("identity:attention-mask-before-softmax", "decoder.causal_blocks_zero")),
        said(294, "the formula Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V is used here without changes",
          ("encoder.mha_vs_torch",)),
        said(304, "the task-23 configuration gives the order of hundreds of billions of parameters", ("claims.lesson_task23",),
          why="96 x 12 x 12288^2 = 173,946,175,488, about 1.7e11"),
        said(306, "the wavelengths range from 2 pi to about 10000 2 pi", ("identity:pe-wavelength",)),
        said(308, "at d_ff = 4 d_model the feed-forward sublayer has twice the parameters of the multi-head attention block",
          ("identity:count-ffn", "claims.ffn_and_layer_parameters"), why="2 d (4 d) = 8 d^2 = 2 (4 d^2)"),
        said(314, "d_model must be divisible by h, since d_k = d_model/h must be an integer", ("encoder.course_heads_not_in_torch",),
          why="torch's module refuses embed_dim = 5 with 2 heads"),
        said(316, "low-frequency coordinates (large i) look like smooth stripes, high-frequency ones (small i) alternate fast",
          evidence=ev.pe_frequencies_decrease),
        said(318, "two algorithms with comparable operation counts can differ by orders of magnitude in training time",
          why="a statement about hardware and wall time, not a value"),
    ]


@lru_cache(maxsize=1)
def statements() -> tuple[Statement, ...]:
    """Every checkable prose statement of the four texts (week 06, the lesson, lecture 7, the newest revision of
    the wiki article), in text order, each with its verdict; those with a computation are named
    ``statement_<text>_<line>`` (a letter added for a second one on a line)."""
    items = (_in_text_order(_week06(), _week06_read_whole()) + _in_text_order(_lesson(), _lesson_read_whole())
             + _lecture07() + _wiki())
    seen: Counter = Counter()
    named = []
    for s in items:
        base = f"statement_{s.key}_{s.line}"
        seen[base] += 1
        suffix = "" if seen[base] == 1 else chr(ord("a") + seen[base] - 1)
        named.append(replace(s, name=base + suffix))
    return tuple(named)


def counts() -> dict[str, Counter]:
    """Per text, how many statements have each verdict."""
    out: dict[str, Counter] = {}
    for s in statements():
        out.setdefault(s.key, Counter())[s.verdict] += 1
    return out
