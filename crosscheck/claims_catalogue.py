"""The course texts' own printed numeric claims, each with its source file and line.

Every entry is one printed statement of the texts in ``shared/seeds/`` (the
digests in ``shared/spec/`` list them): worked arithmetic, inline values,
closed forms and the stated results of exercises.  Most are written in the
claim syntax of :func:`derive.claims.parse_claim` -- the same text a user types
after ``seqgrad claim`` -- so each is read by the whitelist parser and
evaluated exactly.  Claims whose value needs a computation that is not a
closed form use a *provider*, a function returning the value: the maximum of
the sigmoid slope (SymPy), the Figure 3 fixed point (SymPy ``nsolve``), the
seeded ``nn.RNN`` of lines 413-448 (torch), and every number of the printed
Tables 10-31 and the inline values of the Transformer walk-through (the
numeric encoder, :func:`numeric.course.trace`, cell by cell from the
transcription :mod:`crosscheck.course_tables`).

A claim that the text gets wrong is *contradicted*; it stays in the catalogue
as printed.  Entries with an ``erratum`` are the ones this catalogue found
contradicted when it was written, and the erratum says why: their check
verifies that the printed claim is still contradicted (the tool agrees with
the recorded erratum) and the report lists them as textbook errata.  Any other
contradicted claim fails its check.

The prose statements of all four texts -- sameness, invariance, monotonicity,
"always", "does not depend on" -- are in :mod:`crosscheck.claims_statements`
(:func:`statements`, re-exported here), each with its verdict; the numeric
claims among them (the wiki's "the farther apart, the larger the distance",
the lecture's scaling by sqrt(d_k)) are entries.  The lesson's exercises (tasks 1-27, the decoder's 29 aside) and
week 06's optional exercises 1-4 are entries too; the lesson prints no answers,
so these compare with values derived here (``derived=True``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Callable, Iterator

import sympy

from seqgrad.derive import counting
from seqgrad.derive.claims import Claim, VectorClaim, parse_claim
from seqgrad.sources import normalize

from .claims_statements import Statement, statements  # noqa: F401 - the texts' prose statements, with verdicts

SEED000 = "000_a7606e3a9f173091.txt"
SEED001 = "001_3500d0056f1475d7.txt"
SPEC000_PART1 = "spec/seed000-part1-recurrent.md"


@dataclass(frozen=True)
class Entry:
    """One statement of the texts: one or more claims (a printed vector gives several).

    ``expect`` is the verdict the catalogue found for the entry (the worst of its
    claims'): ``verified`` unless recorded otherwise -- ``contradicted`` for an
    ``erratum``, ``rounding-consistent`` or ``truncated`` with a ``note`` saying
    why.  ``derived`` marks an entry that compares with values derived here, not
    numbers printed in the text (the text's statement is checked, its numbers are
    ours).  ``cite`` is the citation ``"<key> §<section>:<line>"`` (keys week06,
    lesson, lecture07, wiki); older entries cite ``file:line``.
    """

    name: str
    seed: str
    line: str
    what: str
    claims: tuple[Claim | VectorClaim, ...] = field(compare=False)
    note: str = ""
    erratum: str = ""  # why the text is wrong here, for a printed claim known to be contradicted
    expect: str = ""
    derived: bool = False
    cite: str = ""
    implies: str = ""  # a derived entry whose printed side is a search bound: what the text's statement implies, in words

    @property
    def source(self) -> str:
        return normalize(self.cite or f"{self.seed}:{self.line}")  # week06 §GRU:370 (seqgrad.sources)

    @property
    def expected(self) -> str:
        return self.expect or ("contradicted" if self.erratum else "verified")

    @property
    def attribution(self) -> str:
        return "derived here (not printed in the text)" if self.derived else f"printed in the text ({self.source})"


def _claim(item, source, **kw):
    """A claim from its text, or from ``(text, intermediates)`` where intermediates maps a description
    of values the text itself used to the inputs they replace."""
    text, intermediates = item if isinstance(item, tuple) else (item, ())
    return parse_claim(text, source=source, intermediates=intermediates, **kw)


def _entry(name, seed, line, what, texts, *, figures=None, exact=False, note="", erratum="", expect="", derived=False,
           cite="") -> Entry:
    source = normalize(cite or f"{seed}:{line}")
    claims = tuple(_claim(t, source, figures=figures, exact=exact) for t in texts)
    return Entry(name, seed, str(line), what, claims, note, erratum, expect, derived, cite)


def _provided(name, seed, line, what, items, *, figures=None, note="", erratum="", expect="", derived=False, cite="",
              implies="") -> Entry:
    """An entry whose claims get their values from providers: items are (text, provider, printed)."""
    source = normalize(cite or f"{seed}:{line}")
    claims = tuple(Claim.from_provider(text, provider, printed, figures=figures, source=source) for text, provider, printed in items)
    return Entry(name, seed, str(line), what, claims, note, erratum, expect, derived, cite, implies)


# ---------------------------------------------------------------------------
# closed forms of the course example's input rows (Table 8 + the PE formula)

D = 5


def omega(i: int, d: int = D) -> str:
    """omega_i = 10000^(-2i/d), the frequency of pair i (coordinates 2i and 2i + 1), as claim text (line 530)."""
    return f"10000**(-2*{i}/{d})"


def pe(t: int, j: int, d: int = D) -> str:
    """P_{t,j} as claim text: coordinate j of pair j // 2, sin on even j, cos on odd j (line 530)."""
    return f"{'sin' if j % 2 == 0 else 'cos'}({t}*{omega(j // 2, d)})"


def h0(t: int, j: int) -> str:
    """h_{t,j}^(0) = E_vocab[k_t, j] + P_{t,j} as claim text (line 550)."""
    from seqgrad.numeric.course import E_VOCAB, token_ids

    return f"({E_VOCAB[token_ids()[t]][j]!r} + {pe(t, j)})"


def at_row(t: int, claim: str) -> str:
    """``claim`` with a where-clause giving each h0..h4 it uses the closed form of h_{t,j}^(0)."""
    used = sorted({int(m) for m in re.findall(r"\bh([0-4])\b", claim.split("=")[0])})
    return f"{claim} where " + ", ".join(f"h{j} = {h0(t, j)}" for j in used)


_H0_ROW0 = "(0.2, 0.9, 0.4, 1, -0.2)"  # h_0^(0), line 556
_MEAN = "(h0 + h1 + h2 + h3 + h4)/5"
_VAR = f"(h0**2 + h1**2 + h2**2 + h3**2 + h4**2)/5 - ({_MEAN})**2"


# ---------------------------------------------------------------------------
# providers

def sigmoid_slope_maximum() -> sympy.Expr:
    """max over real z of sigma(z)(1 - sigma(z)), by SymPy (exact): the largest value of the slope at its critical
    points and in its limits at ±oo (:func:`derive.activation_facts.slope_maximum`, the proof of the slope facts,
    computed once per run)."""
    from seqgrad.derive.activation_facts import slope_maximum

    return slope_maximum("sigmoid")


@lru_cache(maxsize=1)
def tanh_fixed_point() -> sympy.Float:
    """The state h* = tanh(1.2 h* + 1) that constant input x = 1 drives the Figure 3 RNN to."""
    h = sympy.Symbol("h")
    return sympy.nsolve(sympy.tanh(sympy.Rational(6, 5) * h + 1) - h, h, 0.9, prec=60)


def saturated_factor() -> sympy.Float:
    """|dh_t/dh_{t-1}| = w_h (1 - h*^2) at the Figure 3 fixed point."""
    return sympy.Rational(6, 5) * (1 - tanh_fixed_point() ** 2)


@lru_cache(maxsize=1)
def rnn_snippet() -> dict:
    """The seeded nn.RNN + head of lines 413-440, run as printed (torch, CPU, float32):
    :func:`numeric.recurrent.seeded_example`, by the names the text prints."""
    from seqgrad.numeric.recurrent import seeded_example

    run = seeded_example("cpu")
    h = run["h"]
    values = {f"h_{t}[{i}]": float(h[t, i]) for t in range(h.shape[0]) for i in range(h.shape[1])}
    values["prediction"] = run["prediction"]
    values["loss"] = run["loss"]
    return values


@lru_cache(maxsize=1)
def unrounded_a60() -> float:
    """A_60 of head 1 on H0 as the numeric encoder computes it (float64), unrounded."""
    from seqgrad.numeric import course

    return float(course.trace("attention_on_H0", device="cpu", dtype="float64")["head1.A"][6, 0])


_UNROUNDED_A60 = {"the unrounded A_60 of the encoder (the text computes later steps unrounded, line 991)": (("A60", unrounded_a60),)}


def sequential_steps(kind: str, n: int) -> int:
    """The longest chain of dependent steps from the first input to the last output of a length-n layer:
    a recurrent layer computes h_t from h_{t-1}; self-attention computes every output from every input at once."""
    depth = [0] * n  # steps before output t can be computed
    for t in range(n):
        inputs = range(t) if kind == "attention" else ([t - 1] if t else [])
        depth[t] = 1 + (0 if kind == "attention" else max((depth[j] for j in inputs), default=0))
    return max(depth)


def pe_distance_first_decrease(d: int, reach: int = 2000) -> int:
    """The smallest |i - j| at which ||p_i - p_j|| of the sinusoidal encoding is smaller than at |i - j| - 1."""
    omegas = [10000.0 ** (-2 * k / d) for k in range(d // 2)]
    last = 0.0
    for delta in range(1, reach + 1):
        now = math.fsum(2 - 2 * math.cos(delta * w) for w in omegas)
        if now < last:
            return delta
        last = now
    return reach + 1


def readout_gradient_residual() -> int:
    """Week 06 optional exercise 1: with losses on y_1 and y_2, dL/dh_1 = w_o(yhat_1 - y_1) + g_2^h dh_2/dh_1;
    SymPy's derivative of the explicit loss minus that formula, simplified (0 when the formula holds)."""
    import sympy

    w_x, w_h, w_o, x1, x2, y1, y2, H1 = sympy.symbols("w_x w_h w_o x_1 x_2 y_1 y_2 h_1", real=True)
    h2 = sympy.tanh(w_x * x2 + w_h * H1)
    loss = (w_o * H1 - y1) ** 2 / 2 + (w_o * h2 - y2) ** 2 / 2
    g2 = w_o * (w_o * h2 - y2)
    formula = w_o * (w_o * H1 - y1) + g2 * sympy.diff(h2, H1)
    return sympy.simplify(sympy.diff(loss, H1) - formula)


def causal_mask_entry(T: int, t: int, j: int):
    from seqgrad.derive.attention import causal_mask

    value = causal_mask(T)[t, j]
    return float(value)


def practicum_parameters(model: str, delay: int = 32) -> int:
    """Trainable scalars of the week-06 practicum model ``model`` as built by :mod:`numeric.cue_recall.models`."""
    from seqgrad.numeric.cue_recall.models import parameter_count

    return parameter_count(model, delay)


# ---------------------------------------------------------------------------
# the catalogue

def _seed000_recurrent() -> list[Entry]:
    return [
        _entry("gru_mixing", SEED000, 370, "GRU single-coordinate mixing u h_prev + (1 - u) h_cand",
               ["u*h_prev + (1 - u)*h_cand = 0.410 where u = 0.9, h_prev = 0.5, h_cand = -0.4",
                "0.9*0.5 + 0.1*(-0.4) = 0.410"]),
        _provided("sigmoid_slope_bound", SEED000, 215, "the sigmoid slope sigma(1 - sigma) never exceeds 1/4",
                  [("max over z of sigmoid(z)*(1 - sigmoid(z))", sigmoid_slope_maximum, "1/4")]),
        _entry("tanh_slope_at_zero", SEED000, 214, "tanh slope is 1 at zero (Table 4: 'slope about 1 near zero')",
               ["1 - tanh(0)**2 = 1"], exact=True),
        _provided("figure3_saturation", SEED000, "346-350",
                  "Figure 3, w_h = 1.2, w_x = 1, x_t = 1: the states saturate near 0.974 and the sensitivity is multiplied by about 0.061 per step",
                  [("fixed point h* of h = tanh(1.2 h + 1)", tanh_fixed_point, "0.974"),
                   ("per-step factor 1.2 (1 - h*^2)", saturated_factor, "0.061")],
                  note=f"the values 0.974 and 0.061 are derived (stated in {SPEC000_PART1}, section 5, for the curves of Figure 3); "
                       "the course text prints neither", derived=True),
        _entry("figure3_growth", SEED000, "346-350",
               "Figure 3, x_t = 0: every state stays 0, so each transition factor w_h tanh'(z) is w_h = 1.2",
               ["tanh(1*0 + 1.2*0) = 0", "1.2*(1 - tanh(1*0 + 1.2*0)**2) = 1.2"], exact=True, derived=True,
               note="the text prints Figure 3's parameters, not these values; they are derived here"),
        _provided("rnn_snippet_output", SEED000, "442-448",
                  "printed output of the seeded nn.RNN example (torch.manual_seed(6), three significant digits)",
                  [(f"{key} of the seeded nn.RNN", (lambda key=key: rnn_snippet()[key]), printed) for key, printed in [
                      ("h_0[0]", "0.0128"), ("h_0[1]", "0.122"), ("h_1[0]", "0.00930"), ("h_1[1]", "0.0915"),
                      ("h_2[0]", "0.0384"), ("h_2[1]", "0.314"), ("prediction", "-0.144"), ("loss", "0.208")]],
                  figures=3),
    ]


def _seed000_transformer() -> list[Entry]:
    return [
        _entry("pe_omega", SEED000, "530-534", "omega_i = 10000^(-2i/d) for pair i (coordinates 2i, 2i + 1) at d = 5 "
               "gives the frequencies of line 534 (coordinate 4 an unpaired sine of omega_2)",
               [f"{omega(j // 2)} = {v}" for j, v in enumerate(["1", "1", "10000**(-2/5)", "10000**(-2/5)", "10000**(-4/5)"])],
               exact=True),
        _entry("pe_p0", SEED000, 536, "p_0 = (0, 1, 0, 1, 0)", [f"{pe(0, j)} = {v}" for j, v in enumerate("01010")], exact=True),
        _entry("pe_p3", SEED000, 538, "p_3 = (0.141, -0.990, 0.0753, 0.997, 0.00189)",
               [f"{pe(3, j)} = {v}" for j, v in enumerate(["0.141", "-0.990", "0.0753", "0.997", "0.00189"])], figures=3),
        _entry("h0_row0", SEED000, 556, "h_0^(0) = e_0 + p_0 = (0.2, 0.9, 0.4, 1, -0.2)",
               [f"{h0(0, j)} = {v}" for j, v in enumerate(["0.2", "0.9", "0.4", "1", "-0.2"])], exact=True),
        _entry("h0_row3", SEED000, "560-562", "h_3^(0) = (0.341, -1.09, 0.475, 0.997, -0.198); 0.2 + sin 3 = 0.341, -0.1 + cos 3 = -1.09",
               [f"{h0(3, j)} = {v}" for j, v in enumerate(["0.341", "-1.09", "0.475", "0.997", "-0.198"])]
               + ["0.2 + sin(3) = 0.341", "-0.1 + cos(3) = -1.09"], figures=3),
        _entry("h0_row6", SEED000, 985, "h_6^(0) = (-0.579, 1.06, 0.650, 0.789, 0.204)",
               [f"{h0(6, j)} = {v}" for j, v in enumerate(["-0.579", "1.06", "0.650", "0.789", "0.204"])], figures=3),
        _entry("key_value_row0", SEED000, "620-632",
               "k_t = h_t W_K^T and v_t = h_t W_V^T with the printed W_K^T, W_V^T: from h_0 = (0.2, 0.9, 0.4, 1, -0.2), "
               "key (0.6, 0.9, 0.1) and value (0.2, 0.4, 0.4)",
               ["(dot(h, (0.5, 0, 0, 0.5, 0)), dot(h, (0, 1, 0, 0, 0)), dot(h, (0, 0, 0.5, 0, 0.5))) = (0.6, 0.9, 0.1)".replace("h,", _H0_ROW0 + ","),
                "(dot(h, (1, 0, 0, 0, 0)), dot(h, (0, 0, 1, 0, 0)), dot(h, (0, 0, 0, 0.5, 0.5))) = (0.2, 0.4, 0.4)".replace("h,", _H0_ROW0 + ",")],
               exact=True),
        _entry("query_row6", SEED000, 671, "q_6 = (h_60, h_61, h_62) = (-0.579, 1.06, 0.650)",
               [f"{h0(6, j)} = {v}" for j, v in enumerate(["-0.579", "1.06", "0.650"])], figures=3),
        _entry("score_q6_k0", SEED000, "675-681", "q_6 k_0 = (-0.579)(0.6) + (1.06)(0.9) + (0.650)(0.1) = 0.672 and S_60 = 0.672/sqrt(3) = 0.388",
               ["(-0.579)*(0.6) + (1.06)*(0.9) + (0.650)*(0.1) = 0.672", "0.672/sqrt(3) = 0.388",
                at_row(6, "h0*0.6 + h1*0.9 + h2*0.1 = 0.672"), at_row(6, "(h0*0.6 + h1*0.9 + h2*0.1)/sqrt(3) = 0.388")], figures=3),
        _entry("contribution_A60_v0", SEED000, 722, "A_60 v_0 = 0.185 (0.2, 0.4, 0.4) = (0.0371, 0.0741, 0.0741), with the printed A_60",
               [("A60*0.2 = 0.0371 where A60 = 0.185", _UNROUNDED_A60), ("A60*0.4 = 0.0741 where A60 = 0.185", _UNROUNDED_A60)],
               figures=3, expect="rounding-consistent",
               note="with the printed weight 0.185 the products are 0.0370 and 0.0740; the printed 0.0371 and 0.0741 "
                    "come from the unrounded A_60 (the text says at line 991 that later steps use unrounded values)"),
        _entry("head2_row6", SEED000, 829, "q_6^[2] = (h_63, h_64, 0.5 h_60 + 0.5 h_61) = (0.789, 0.204, 0.240); v_6^[2] = (h_61, h_63, 0.5 h_60 + 0.5 h_64) = (1.06, 0.789, -0.188)",
               [at_row(6, "h3 = 0.789"), at_row(6, "h4 = 0.204"), at_row(6, "0.5*h0 + 0.5*h1 = 0.240"),
                at_row(6, "h1 = 1.06"), at_row(6, "h3 = 0.789"), at_row(6, "0.5*h0 + 0.5*h4 = -0.188")], figures=3),
        _entry("b_att_60", SEED000, 896, "B_att,6,0 = c_60 + 0.5 c_63 = -0.0248 + 0.5(0.196) = 0.0732",
               ["-0.0248 + 0.5*(0.196) = 0.0732"], figures=3),
        _entry("layernorm_row6_stats", SEED000, 985, "mu_6 = 0.425 and sigma_6^2 = 0.329 (population variance of h_6^(0))",
               [at_row(6, f"{_MEAN} = 0.425"), at_row(6, f"{_VAR} = 0.329")], figures=3),
        _entry("layernorm_x60_printed", SEED000, 989, "X_60 = (h_60 - mu_6)/sqrt(sigma_6^2 + 1e-5) = -1.75 from the printed h_60, mu_6, sigma_6^2",
               ["(-0.579 - 0.425)/sqrt(0.329 + 10**-5) = -1.75"], figures=3),
        _entry("layernorm_x6", SEED000, "989-991", "x_6 = LN(h_6^(0)) = (-1.75, 1.11, 0.393, 0.635, -0.385), eps = 1e-5",
               [at_row(6, f"(h{j} - {_MEAN})/sqrt({_VAR} + 10**-5) = {v}") for j, v in enumerate(["-1.75", "1.11", "0.393", "0.635", "-0.385"])],
               figures=3),
        _entry("mlp_output_60", SEED000, 1041, "first MLP output 0.5 j_60 + 0.2 j_62 + 0.05 = 0.224 with the printed j_6 = (0, 0.962, 0.872, 0)",
               ["0.5*0 + 0.2*0.872 + 0.05 = 0.224"], figures=3),
        _entry("uniform_baseline", SEED000, 1285, "a uniform predictor over four moves: accuracy 1/4, cross-entropy log 4 = 1.39 nats",
               ["log(4) = 1.39", "-log(1/4) = log(4)"]),
        _provided("experiment_parameter_counts", SEED000, 1289,
                  "parameter counts 1,943 / 2,023 / 1,915 of the practicum RNN, GRU and Transformer, counted on the built models",
                  [(f"trainable parameters of the built {label} (numeric.cue_recall.models, delay 32)",
                    (lambda model=model: practicum_parameters(model)), printed)
                   for model, label, printed in [("rnn", "RNN", "1943"), ("gru", "GRU", "2023"), ("transformer", "Transformer", "1915")]],
                  note="the models are built as the text describes them (numeric.cue_recall.models): nn.Embedding(7, d), nn.RNN/nn.GRU "
                       "and an affine head; the Transformer is the project's one-block pre-norm encoder with biased heads, final "
                       "LayerNorm and a learned position row per input position (d + 4); its count depends on the delay: "
                       "1,627 / 1,723 / 1,915 at d = 8 / 16 / 32, so the printed 1,915 is the delay-32 model"),
    ]


def _seed001() -> list[Entry]:
    pos = [[f"{pe(p, j, 4)} = {v}" for j, v in enumerate(row)] for p, row in enumerate([
        ["0.0000", "1.0000", "0.0000", "1.0000"], ["0.8415", "0.5403", "0.0100", "0.9999"],
        ["0.9093", "-0.4161", "0.0200", "0.9998"], ["0.1411", "-0.9900", "0.0300", "0.9996"]])]
    return [
        _entry("flops_attention_vs_recurrent", SEED001, 43,
               "n = 100, d = 512: n^2 d = 5,120,000, n d^2 = 26,214,400, self-attention about 5.1 times cheaper",
               ["100**2*512 = 5120000", "100*512**2 = 26214400", "(100*512**2)/(100**2*512) = 5.1"]),
        _entry("head_width", SEED001, "69-73", "d_k = d_v = 512/8 = 64 and 8 x 64 = 512", ["512/8 = 64", "8*64 = 512"]),
        _entry("mha_parameters", SEED001, 77, "512 x 512 = 262,144 per matrix, 4 x 262,144 = 1,048,576 per multi-head block",
               ["512*512 = 262144", "4*262144 = 1048576"]),
        _entry("example_head_distributions", SEED001, 75, "the two illustrative head distributions each sum to 1 (implied: they are distributions)",
               ["0.70 + 0.03 + 0.02 + 0.05 + 0.02 + 0.03 + 0.10 + 0.05 = 1", "6*0.05 + 0.60 + 0.10 = 1"], exact=True, derived=True,
               note="the text prints the weights, not their sum; that each sums to 1 is implied"),
        _entry("pe_d4_frequency", SEED001, 101, "for d = 4, i = 1: 10000^(2/4) = 100", ["10000**(2*1/4) = 100"], exact=True),
        _entry("pe_d4_pos0", SEED001, 103, "PE(0) for d = 4 at four decimals", pos[0]),
        _entry("pe_d4_pos1", SEED001, 104, "PE(1) for d = 4 at four decimals", pos[1], expect="truncated",
               note="cos(0.01) = 0.99995000042 rounds to 1.0000 at four decimals; the printed 0.9999 is it truncated "
                    "(4.2e-10 past the rounding boundary)"),
        _entry("pe_d4_pos2", SEED001, 105, "PE(2) for d = 4 at four decimals", pos[2]),
        _entry("pe_d4_pos3", SEED001, 106, "PE(3) for d = 4 at four decimals", pos[3]),
        _entry("pe_shift_sin3", SEED001, 116, "sin(1+2) = sin 1 cos 2 + cos 1 sin 2 = -0.3502 + 0.4913 = 0.1411",
               ["sin(1)*cos(2) + cos(1)*sin(2) = 0.1411", "sin(1)*cos(2) = -0.3502", "cos(1)*sin(2) = 0.4913",
                "-0.3502 + 0.4913 = 0.1411", "sin(3) = 0.1411"]),
        _entry("pe_shift_sin3_printed_factors", SEED001, "114-116",
               "the same sum with the printed four-decimal factors: 0.8415 (-0.4161) + 0.5403 (0.9093) = -0.3502 + 0.4913 = 0.1411",
               [("s1*c2 = -0.3502 where s1 = 0.8415, c2 = -0.4161",
                 {"the unrounded sin 1 and cos 2 that the text rounded to 0.8415 and -0.4161": "s1 = sin(1), c2 = cos(2)"}),
                "0.5403*0.9093 = 0.4913", "0.8415*(-0.4161) + 0.5403*0.9093 = 0.1411"],
               expect="rounding-consistent",
               note="0.8415 x (-0.4161) = -0.35014815, which is -0.3501 at four decimals; the printed -0.3502 is sin 1 cos 2 "
                    "from the unrounded factors"),
        _entry("layernorm_example", SEED001, 148,
               "x + F(x) = (1.30, 1.90, -0.80, 0.05), mu = 2.45/4 = 0.6125, squares 0.4727 1.6577 1.9952 0.3164, sum 4.4420, "
               "sigma^2 = 1.1105, sigma = 1.0538",
               ["1.0 + 0.30 = 1.30", "2.0 + (-0.10) = 1.90", "-1.0 + 0.20 = -0.80", "0.0 + 0.05 = 0.05",
                "1.30 + 1.90 - 0.80 + 0.05 = 2.45", "2.45/4 = 0.6125",
                "(1.30 - 0.6125)**2 = 0.4727", "(1.90 - 0.6125)**2 = 1.6577", "(-0.80 - 0.6125)**2 = 1.9952", "(0.05 - 0.6125)**2 = 0.3164",
                ("s0 + s1 + s2 + s3 = 4.4420 where s0 = (1.30 - 0.6125)**2, s1 = (1.90 - 0.6125)**2, s2 = (-0.80 - 0.6125)**2, "
                 "s3 = (0.05 - 0.6125)**2",
                 {"the text's own rounded squares 0.4727, 1.6577, 1.9952, 0.3164": "s0 = 0.4727, s1 = 1.6577, s2 = 1.9952, s3 = 0.3164"}),
                "((1.30 - 0.6125)**2 + (1.90 - 0.6125)**2 + (-0.80 - 0.6125)**2 + (0.05 - 0.6125)**2)/4 = 1.1105",
                "sqrt(((1.30 - 0.6125)**2 + (1.90 - 0.6125)**2 + (-0.80 - 0.6125)**2 + (0.05 - 0.6125)**2)/4) = 1.0538"],
               expect="rounding-consistent",
               note="the squared deviations sum to 4.441875 (4.4419 at four decimals); the printed 4.4420 is the sum of the "
                    "text's rounded squares"),
        _entry("layernorm_example_xhat", SEED001, 148, "x_hat = (0.652, 1.222, -1.341, -0.534)",
               ["layernorm(1.30, 1.90, -0.80, 0.05) = (0.652, 1.222, -1.341, -0.534)",
                "(-0.80 - 0.6125)/1.0538 = -1.341"],
               erratum="x_hat_2 = -1.4125/1.05379 = -1.3404, which is -1.340 at three decimals, not -1.341 "
                       "(also from the text's rounded mean 0.6125 and sigma 1.0538)"),
        _entry("ffn_and_layer_parameters", SEED001, 150,
               "W_1, W_2: 512 x 2048 = 1,048,576 each, 2,097,152 per feed-forward sublayer, 3,145,728 per layer, "
               "6 x 3,145,728 = 18,874,368 (about 18.9 million) per encoder stack",
               ["512*2048 = 1048576", "2*512*2048 = 2097152", "1048576 + 2097152 = 3145728", "6*3145728 = 18874368",
                "6*3145728/10**6 = 18.9", "(2*512*2048)/(4*512**2) = 2"]),
        _entry("masked_softmax_example", SEED001, 180,
               "scores [1.2, 0.5, 2.0, -inf] give the masked softmax weights [0.31, 0.15, 0.54, 0.00]",
               ["softmax(1.2, 0.5, 2.0, -inf) = (0.31, 0.15, 0.54, 0.00)"],
               erratum="the softmax of (1.2, 0.5, 2.0, -inf) is (0.269, 0.133, 0.598, 0); the printed (0.31, 0.15, 0.54) is not it"),
        _entry("twelve_d_squared_per_layer", SEED001, 242,
               "with d_ff = 4 d_model a layer has 4 d^2 + 2 d d_ff = 12 d^2 parameters (d = 512 and the task-23 model d = 12288)",
               ["4*512**2 + 2*512*(4*512) = 12*512**2", "4*12288**2 + 2*12288*49152 = 12*12288**2", "4*12288 = 49152"], exact=True),
        _entry("task29_encoder_stack", SEED001, 254,
               "task 29: encoder stack about 4.72 million parameters at d_model = 256, d_ff = 1024, N = 6; task 14: 262,144",
               ["6*(4*256**2 + 2*256*1024)/10**6 = 4.72", "4*256**2 = 262144"]),
    ]


def _lesson_exercises() -> list[Entry]:
    """The lesson's exercises with a checkable answer (tasks 1-19, 21-23, 25-27; 29 is the decoder's).
    The lesson prints no answers: every answer here is derived (the task's numbers are printed)."""

    def task(n, line, what, texts=(), provided=(), **kw):
        cite = f"lesson §6:{line}"
        claims = tuple(_claim(t, cite, figures=kw.get("figures")) for t in texts)
        claims += tuple(Claim.from_provider(text, provider, printed, source=cite) for text, provider, printed in provided)
        return Entry(f"lesson_task{n:02d}", "lesson", str(line), f"task {n}: {what}", claims, kw.get("note", ""),
                     "", "", True, cite)

    mask = [(f"causal_mask(4)[1, {j}]", (lambda j=j: causal_mask_entry(4, 1, j)), p) for j, p in enumerate(["0", "0", "-inf", "-inf"])]
    full = [(f"causal_mask(3)[{t}, {j}]", (lambda t=t, j=j: causal_mask_entry(3, t, j)), "0" if j <= t else "-inf")
            for t in range(3) for j in range(3)]
    return [
        task(1, 194, "an RNN needs n = 200 sequential steps, self-attention one (O(1))",
             provided=[("sequential steps of a recurrent layer, n = 200", lambda: sequential_steps("recurrent", 200), "200"),
                       ("sequential steps of self-attention, n = 200", lambda: sequential_steps("attention", 200), "1")]),
        task(2, 196, "d_model = 512, h = 8: d_k = d_model/h = 64", ["512/8 = 64"]),
        task(3, 198, "8 heads of 64 concatenate to 512 before W^O", ["8*64 = 512"]),
        task(4, 200, "PE(0, 0) = 0 and PE(0, 1) = 1", [f"{pe(0, 0, 512)} = 0", f"{pe(0, 1, 512)} = 1"]),
        task(5, 202, "d = 512, i = 0: the sine has period 2 pi = 6.2832",
             [f"2*pi/{omega(0, 512)} = 2*pi", f"2*pi/{omega(0, 512)} = 6.2832"]),
        task(6, 204, "FFN d_model = 8, d_ff = 32 without biases: W_1 and W_2 have 256 each, 512 together",
             ["8*32 = 256", "32*8 = 256"], provided=[("ffn_params(8, 32)", partial(counting.ffn_params, 8, 32), "512")]),
        task(7, 206, "x = (2.0, -1.0), F(x) = (0.5, 0.2): x + F(x) = (2.5, -0.8)", ["(2.0 + 0.5, -1.0 + 0.2) = (2.5, -0.8)"]),
        task(8, 208, "z = (2.5, -0.8): mu = 0.85, sigma^2 = 2.7225 (population variance)",
             ["mean(2.5, -0.8) = 0.85", "var(2.5, -0.8) = 2.7225"]),
        task(9, 210, "length 4, query i = 1: the causal mask hides j = 2 and 3", provided=mask),
        task(10, 212, "n = 10, d = 100: n^2 d = 10,000 < n d^2 = 100,000", ["10**2*100 = 10000", "10*100**2 = 100000"],
             provided=[("self_attention_cost(10, 100)", partial(counting.self_attention_cost, 10, 100), "10000"),
                       ("recurrent_cost(10, 100)", partial(counting.recurrent_cost, 10, 100), "100000")]),
        task(11, 216, "d = 4, pos = 5, i = 0: PE(5, 0) = sin 5 = -0.9589, PE(5, 1) = cos 5 = 0.2837",
             [f"{pe(5, 0, 4)} = -0.9589", f"{pe(5, 1, 4)} = 0.2837"]),
        task(12, 218, "d = 4, pos = 5, i = 1: PE(5, 2) = sin 0.05 = 0.0500, PE(5, 3) = cos 0.05 = 0.9988",
             [f"{pe(5, 2, 4)} = 0.0500", f"{pe(5, 3, 4)} = 0.9988"]),
        task(13, 220, "sin 1 cos 2 + cos 1 sin 2 with the printed four-decimal factors is 0.1411 = sin 3",
             ["0.8415*(-0.4161) + 0.5403*0.9093 = 0.1411", "sin(3) = 0.1411"]),
        task(14, 222, "d_model = 256, h = 4: W^Q, W^K, W^V, W^O have 262,144 parameters together (the text confirms it at l.254)",
             ["4*256*256 = 262144"], provided=[("attention_params(256, 4)", partial(counting.attention_params, 256, 4), "262144")]),
        task(15, 224, "d_model = 256, d_ff = 1024: FFN 524,288; with task 14 the layer has 786,432",
             provided=[("ffn_params(256, 1024)", partial(counting.ffn_params, 256, 1024), "524288"),
                       ("encoder_layer_params(256, 4, 1024), no biases or norms",
                        partial(counting.encoder_layer_params, 256, 4, 1024, bias=False, norms=False), "786432")]),
        task(16, 226, "a stack of N = 6 such layers: 4,718,592, about 4.72 million (the text confirms it at l.254)",
             ["6*786432 = 4718592", "6*786432/10**6 = 4.72"],
             provided=[("stack_params(6), no biases or norms",
                        partial(counting.stack_params, 6, d_model=256, heads=4, d_ff=1024, bias=False, norms=False), "4718592")]),
        task(17, 228, "12 h on 8 GPUs is about 96 h on one GPU without parallel-efficiency loss", ["12*8 = 96"]),
        task(18, 230, "n^2 d exceeds n d^2 exactly when n > d: the ratio of the costs is n/d",
             ["(513**2*512)/(513*512**2) = 513/512", "(511**2*512)/(511*512**2) = 511/512"]),
        task(19, 232, "the full 3 x 3 causal mask is [[0, -inf, -inf], [0, 0, -inf], [0, 0, 0]]", provided=full),
        Entry("lesson_task21", "lesson", "238", "task 21: PE(pos + k, 2i) = PE(pos, 2i) cos(k w) + PE(pos, 2i + 1) sin(k w): "
              "the two sides are equal at pos = 3, k = 2, i = 1, d = 4 (the identity itself is proved for "
              "symbolic pos and k by the positional-encoding shift identities of the catalogue)",
              (parse_claim("sin((3 + 2)*w) - (sin(3*w)*cos(2*w) + cos(3*w)*sin(2*w)) = 0 where w = 10000**(-2*1/4)",
                           decimals=100, source="lesson §6:238"),), derived=True, cite="lesson §6:238"),
        task(22, 240, "x = (0.5, -2.0, 1.0, 0.5), F(x) = (0.1, 0.3, -0.2, 0.0): z = (0.6, -1.7, 0.8, 0.5), mu = 0.05, "
                      "squared deviations sum to 4.13, sigma^2 = 1.0325",
             ["(0.5 + 0.1, -2.0 + 0.3, 1.0 - 0.2, 0.5 + 0.0) = (0.6, -1.7, 0.8, 0.5)", "mean(0.6, -1.7, 0.8, 0.5) = 0.05",
              "4*var(0.6, -1.7, 0.8, 0.5) = 4.13", "var(0.6, -1.7, 0.8, 0.5) = 1.0325"]),
        task(23, 242, "d_model = 12288, N = 96, 12 d^2 per layer: 1,811,939,328 per layer, 173,946,175,488 (about 1.74e11) in all",
             ["12*12288**2 = 1811939328", "96*12*12288**2 = 173946175488", "96*12*12288**2/10**11 = 1.74"],
             provided=[("encoder_layer_params(12288, 96, 49152), no biases or norms",
                        partial(counting.encoder_layer_params, 12288, 96, 49152, bias=False, norms=False), "1811939328")]),
        task(25, 246, "n = 1000: a path of 1 step through attention, 1000 steps through a recurrent layer",
             provided=[("sequential steps of a recurrent layer, n = 1000", lambda: sequential_steps("recurrent", 1000), "1000"),
                       ("sequential steps of self-attention, n = 1000", lambda: sequential_steps("attention", 1000), "1")]),
        task(26, 248, "h heads of d_k = d_model/h cost h n^2 (d_model/h) = n^2 d_model, as one full head",
             ["h*n**2*(d/h) = n**2*d where h = 8, n = 100, d = 512", "h*n**2*(d/h) = n**2*d where h = 96, n = 7, d = 12288"]),
        task(27, 250, "weights (0.1, 0.1, 0.8) and (0.5, 0.3, 0.2) over V = [(1, 0), (0, 1), (2, 2)]: heads (1.7, 1.7) and "
                      "(0.9, 0.7), concatenation (1.7, 1.7, 0.9, 0.7)",
             ["(dot((0.1, 0.1, 0.8), (1, 0, 2)), dot((0.1, 0.1, 0.8), (0, 1, 2))) = (1.7, 1.7)",
              "(dot((0.5, 0.3, 0.2), (1, 0, 2)), dot((0.5, 0.3, 0.2), (0, 1, 2))) = (0.9, 0.7)",
              "(dot((0.1, 0.1, 0.8), (1, 0, 2)), dot((0.1, 0.1, 0.8), (0, 1, 2)), dot((0.5, 0.3, 0.2), (1, 0, 2)), "
              "dot((0.5, 0.3, 0.2), (0, 1, 2))) = (1.7, 1.7, 0.9, 0.7)"]),
    ]


def _week06_exercises() -> list[Entry]:
    """Week 06's optional exercises 1-4 (L1344-1353; no answers in the text, so derived)."""
    def ex(n, what, texts=(), provided=(), note=""):
        cite = "week06 §7:1348"
        claims = tuple(_claim(t, cite) for t in texts)
        claims += tuple(Claim.from_provider(text, provider, printed, source=cite) for text, provider, printed in provided)
        return Entry(f"week06_exercise{n}", "week06", "1348", f"optional exercise {n}: {what}", claims, note, "", "", True, cite)

    return [
        ex(1, "with losses on y_1 and y_2, g_1^h = w_o (yhat_1 - y_1) + g_2^h dh_2/dh_1",
           provided=[("dL/dh_1 minus the formula, simplified", readout_gradient_residual, "0")]),
        ex(2, "identity activation, w_h = -0.8: dh_{s+5}/dh_s = (-0.8)^5 = -0.32768, negative with modulus 0.328",
           ["(-0.8)**5 = -0.32768", "abs((-0.8)**5) = 0.328"]),
        ex(3, "scores (0, log 2, log 3), values (2, -1, 4): output 2 unrestricted, 0 with j = 2 masked and renormalised; "
              "zeroing without renormalising gives weights summing to 1/2",
           ["dot(softmax(0, log(2), log(3)), (2, -1, 4)) = 2", "dot(softmax(0, log(2), -inf), (2, -1, 4)) = 0",
            "softmax(0, log(2), -inf) = (1/3, 2/3, 0)", "sum(1/6, 1/3, 0) = 1/2"],
           note="the unrenormalised weights (1/6, 1/3, 0) also give output 0 with these numbers: only the weights differ"),
        ex(4, "3 heads, d_k = 2, d_v = 4, d = 5, T = 7: concatenation 7 x 12, W_O stored 5 x 12; 5 is not divisible by 3",
           ["3*4 = 12", "5 - 3*floor(5/3) = 2"],
           provided=[("attention_params(5, 3, d_k=2, d_v=4)", partial(counting.attention_params, 5, 3, d_k=2, d_v=4), "180")]),
    ]


def _lecture07() -> list[Entry]:
    """Seed 003 (lecture 7, a summary): its checkable numeric statements (the formulas are held by
    registered checks, see :func:`statements`)."""
    return [
        _entry("lecture07_scaling_variance", "lecture07", 39,
               "dividing by sqrt(d_k) keeps the variance of the dot products near one: Var(q.k) = d_k for independent "
               "unit-variance coordinates, so Var(q.k/sqrt(d_k)) = 1 (at d_k = 64)", ["64/sqrt(64)**2 = 1"], derived=True,
               cite="lecture07 §Attention:39", note="Var(q.k) = d_k itself is proved by identity:attention-dot-variance"),
    ]


def _wiki() -> list[Entry]:
    """Seed 004 (the wiki article, newest revision): its checkable prose claims."""
    return [
        _provided("wiki_pe_distance_monotone", "wiki", 43,
                  "'the larger |i - j|, the larger ||p_i - p_j||' for the sinusoidal encoding it gives (d_model = 512): "
                  "the distance first falls at |i - j| = 44",
                  [("the first |i - j| where ||p_i - p_j|| decreases, d_model = 512", lambda: pe_distance_first_decrease(512),
                    "2001")],
                  erratum="||p_i - p_j||^2 = sum_k 2 - 2 cos(|i - j| w_k) oscillates: at d_model = 512 it first decreases "
                          "at |i - j| = 44 (at d_model = 4 already at 4), so the distance is not monotone in |i - j|",
                  derived=True, cite="wiki §2.1:43",
                  implies="||p_i - p_j|| never decreases as |i - j| grows"),
        _entry("wiki_pe_formula", "wiki", "45-51", "p_(i,s) = sin(i 10000^(-2k/d)) for s = 2k, cos for s = 2k + 1: "
               "the same encoding as the lesson's (d = 4, i = 3)", [f"sin(3*10000**(-2*1/4)) = {pe(3, 2, 4)}",
                                                                   f"cos(3*10000**(-2*1/4)) = {pe(3, 3, 4)}"],
               derived=True, cite="wiki §2.1:45"),
    ]


@lru_cache(maxsize=1)
def entries() -> tuple[Entry, ...]:
    """Every catalogue entry, in text order (week 06, the lesson and its exercises, week 06's exercises,
    lecture 7, the wiki article)."""
    items = (_seed000_recurrent() + _seed000_transformer() + _seed001() + _lesson_exercises() + _week06_exercises()
             + _lecture07() + _wiki())
    names = [e.name for e in items]
    assert len(set(names)) == len(names), "catalogue entry names are unique"
    return tuple(items)


# ---------------------------------------------------------------------------
# the printed tables of the Transformer walk-through, against the numeric encoder

def table_entries(traces: Callable[[str], dict]) -> Iterator[Entry]:
    """One entry per printed table (and one for all inline values) of :mod:`crosscheck.course_tables`.

    ``traces(stage)`` returns the encoder's named intermediates for a stage of
    :func:`numeric.course.trace`; every printed cell becomes a claim at three
    significant figures whose provider reads ``traces(stage)[name][index]``.
    """
    from . import course_tables

    groups: dict[str, list] = {}
    for cell in course_tables.cells():
        key = cell.where.split(" (")[0] if cell.where.startswith("Table") else "inline"
        groups.setdefault(key, []).append(cell)
    for key, cells in groups.items():
        lines = sorted({c.where.split("line ")[1].split(")")[0] for c in cells}, key=int)
        line = lines[0] if len(lines) == 1 else f"{lines[0]}-{lines[-1]}"
        claims = tuple(
            Claim.from_provider(cell.label(), (lambda c=cell: float(traces(c.stage)[c.name][c.index])), repr(cell.printed),
                                figures=3, source=f"{SEED000}:{line}")
            for cell in cells)
        name = "table" + key.split()[1] if key != "inline" else "table_inline"
        what = (f"{key}: every printed number against the numeric encoder" if key != "inline"
                else "inline values of the walk-through (lines 518-1167) against the numeric encoder")
        yield Entry(name, SEED000, line, what, claims)
