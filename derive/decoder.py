r"""The decoder's derivations (seed 001 l.160-188 and tasks 14-16, 29; seed 004 "Архитектура трансформера-декодировщика").

* :class:`CrossAttention`: queries from the decoder, keys and values from the encoder output Z
  (the wiki's ``Attn(Q^j h_t, K^j Z, V^j Z)``, the lesson's l.172)::

      Q = X W_Q^T,  K = Z W_K^T,  V = Z W_V^T,  S = Q K^T / sqrt(d_k) + M,  A = softmax_rows(S),  O = A V

  and its backward pass given G = dL/dO, with the Jacobians with respect to the decoder input X and
  to the memory Z::

      dV = A^T G,  dA = G V^T,  dS = A o (dA - rowsum(A o dA)),  dQ = dS K / sqrt(d_k),  dK = dS^T Q / sqrt(d_k)
      dX = dQ W_Q,   dZ = dK W_K + dV W_V,   dW_Q = dQ^T X,  dW_K = dK^T Z,  dW_V = dV^T Z

  Row j of dZ is ``sum_i A_ij (...)``: every memory position that some query may see receives gradient.

* :class:`DecoderBlock`: masked self-attention, cross-attention and a position-wise MLP with residuals and
  LayerNorms (pre- or post-norm).  Each sublayer's row dependence is read off its symbolic expression and
  composed; :meth:`DecoderBlock.causal_proof` shows that output row i depends on no target row j > i, so
  those Jacobian blocks are identically zero; :meth:`DecoderBlock.counterexample` evaluates a nonzero
  derivative of the future without the mask.

* Parameter counts as formulas (:func:`decoder_layer_params`, :func:`decoder_stack_params`): two
  attentions, the FFN and three LayerNorms per layer, as ``torch.nn.TransformerDecoderLayer`` stores them.
  A decoder-only layer (GPT, l.188) has no cross-attention: its count is the encoder layer's.

The rules used here (row softmax, mask, matmul, LayerNorm) are the encoder's: :meth:`CrossAttention.backward`
is the program :func:`derive.blocks.cross_attention_program`, whose backward lines come from the rule
table :mod:`derive.rules` like those of self-attention, with K and V read from the second input Z.
"""

from __future__ import annotations

import sympy as sp

from seqgrad import validate
from seqgrad.errors import SeqgradValueError

from . import counting
from .blocks import NORM_TAGS
from .attention import as_matrix, causal_mask, check_mask, head_backward, head_forward, symbol_matrix
from .identity import Derivation
from .safe_parse import as_sympy

d_model, h, d_ff, N = counting.d_model, counting.h, counting.d_ff, counting.N


# ----------------------------------------------------------------------------- cross-attention

class CrossAttention(Derivation):
    """One cross-attention head: queries from X (T x d_model), keys and values from Z (T_src x d_model)."""

    def __init__(self, T: int, T_src: int, d_model: int, d_k: int, d_v: int | None = None, *, X=None, Z=None,
                 W_Q=None, W_K=None, W_V=None, mask=None, scale=None):
        self.T = validate.integer("T", T, minimum=1)
        self.T_src = validate.integer("T_src", T_src, minimum=1)
        self.d_model = validate.integer("d_model", d_model, minimum=1)
        self.d_k = validate.integer("d_k", d_k, minimum=1)
        self.d_v = validate.integer("d_v", d_k if d_v is None else d_v, minimum=1)
        self.X = symbol_matrix("x", T, d_model) if X is None else as_matrix("X", X, (T, d_model))
        self.Z = symbol_matrix("z", T_src, d_model) if Z is None else as_matrix("Z", Z, (T_src, d_model))
        self.W_Q = symbol_matrix("w_Q", self.d_k, d_model) if W_Q is None else as_matrix("W_Q", W_Q, (self.d_k, d_model))
        self.W_K = symbol_matrix("w_K", self.d_k, d_model) if W_K is None else as_matrix("W_K", W_K, (self.d_k, d_model))
        self.W_V = symbol_matrix("w_V", self.d_v, d_model) if W_V is None else as_matrix("W_V", W_V, (self.d_v, d_model))
        self.M = None if mask is None else check_mask(mask, (T, T_src))
        self.scale = 1 / sp.sqrt(self.d_k) if scale is None else as_sympy(scale, "scale")
        self.Q, self.K, self.V, self.S, self.A, self.O = head_forward(self, self._block())

    def _block(self):
        """The head's program: :func:`derive.blocks.cross_attention_program` at this head's sizes, mask and scale."""
        from .blocks import cross_attention_program

        return cross_attention_program(masked=self.M is not None, T_=self.T, T_src_=self.T_src, d_=self.d_model,
                                       d_k_=self.d_k, d_v_=self.d_v, scale=self.scale)

    @property
    def parameters(self) -> dict[str, sp.Matrix]:
        return {"X": self.X, "Z": self.Z, "W_Q": self.W_Q, "W_K": self.W_K, "W_V": self.W_V}

    def upstream(self) -> sp.Matrix:
        """G = dL/dO as symbols g_{t,c} (T x d_v)."""
        return symbol_matrix("g", self.T, self.d_v)

    def backward(self, G=None) -> dict[str, sp.Matrix]:
        """The backward pass (module docstring) given G = dL/dO: the program of
        :func:`derive.blocks.cross_attention_program` (derived by the rule table, every rule proved at
        symbolic size) evaluated at this head, with the head's own Q, K, V, S, A as its intermediates."""
        return head_backward(self, self._block(), G, tuple(self.parameters))

    def gradient_by_differentiation(self, wrt: str, G=None) -> sp.Matrix:
        """sum_{t,c} G_tc dO_tc / d wrt by direct differentiation (the reference for :meth:`backward`)."""
        validate.choice("wrt", wrt, tuple(self.parameters))
        G = self.upstream() if G is None else G
        L = sp.Add(*[G[t, c] * self.O[t, c] for t in range(self.T) for c in range(self.d_v)])
        return self.parameters[wrt].applyfunc(lambda p: sp.diff(L, p))

    def jacobian(self, wrt: str) -> sp.Matrix:
        """d vec(O) / d vec(wrt), rows and columns flattened row by row (wrt: X or Z or a weight)."""
        validate.choice("wrt", wrt, tuple(self.parameters))
        return sp.Matrix(list(self.O)).jacobian(list(self.parameters[wrt]))

    def rows(self) -> list:
        """Queries from the decoder rows X, keys and values from the memory Z; the gradient reaching Z."""
        from .latex_settings import Partial
        from .rules import RowSoftmax

        T, Ts, dm, dk, dv = self.T, self.T_src, self.d_model, self.d_k, self.d_v
        X, Z = sp.MatrixSymbol("X", T, dm), sp.MatrixSymbol("Z", Ts, dm)
        Q, K, V = sp.MatrixSymbol("Q", T, dk), sp.MatrixSymbol("K", Ts, dk), sp.MatrixSymbol("V", Ts, dv)
        W_Q, W_K, W_V = sp.MatrixSymbol("W_Q", dk, dm), sp.MatrixSymbol("W_K", dk, dm), sp.MatrixSymbol("W_V", dv, dm)
        A, O, G = sp.MatrixSymbol("A", T, Ts), sp.MatrixSymbol("O", T, dv), sp.MatrixSymbol("G", T, dv)
        G_K, G_V = sp.MatrixSymbol("G_K", Ts, dk), sp.MatrixSymbol("G_V", Ts, dv)
        return [(Q, X * W_Q.T), (K, Z * W_K.T), (V, Z * W_V.T),
                (A, RowSoftmax(sp.MatMul(1 / sp.sqrt(sp.Symbol("d_k", positive=True)), Q, K.T))), (O, A * V),
                (G, Partial(O), "the gradient from above"), (G_V, [Partial(V), A.T * G]), (G_K, Partial(K)),
                (Partial(Z), G_K * W_K + G_V * W_V, "keys and values both read Z")]

    def __repr__(self) -> str:
        return f"CrossAttention(T={self.T}, T_src={self.T_src}, d_model={self.d_model}, d_k={self.d_k}, d_v={self.d_v})"


# ----------------------------------------------------------------------------- the block

def _row_map(out: sp.Matrix, inputs: dict[str, sp.Matrix]) -> list[set]:
    """For every row t of ``out``: the input rows (name, r) whose symbols it contains (read off the expression)."""
    owners = {s_: (name, r) for name, M in inputs.items() for r in range(M.rows) for s_ in M.row(r)}
    return [{owners[s_] for s_ in sp.Matrix(out.row(t)).free_symbols if s_ in owners} for t in range(out.rows)]


def _through(row_map: list[set], sources: dict[str, list[set]]) -> list[set]:
    """Compose: a sublayer's row map over its inputs, each input's rows already mapped to the block's inputs."""
    return [set().union(*[sources[name][r] for name, r in deps]) if deps else set() for deps in row_map]


class DecoderBlock(Derivation):
    """Which input rows each output row of a decoder block depends on, read off the symbolic sublayers.

    Each sublayer is built with symbolic entries at a small width (one head, d_k = 1): masked
    self-attention (T x T), cross-attention (T x T_src), LayerNorm of a row of two features and the MLP
    ``phi(R W_1^T) W_2^T`` with a generic elementwise phi.  The row map of each (output row t -> the input
    rows its expression contains) is read off its free symbols, and the block's map is their composition
    along the residual stream (pre- or post-norm).  ``causal=False`` drops the self-attention mask.
    """

    def __init__(self, T: int = 4, T_src: int = 3, *, causal: bool = True, norm_first: bool = True):
        from .attention import SelfAttention
        from .blocks import norm_row

        self.T = validate.integer("T", T, minimum=1)
        self.T_src = validate.integer("T_src", T_src, minimum=1)
        self.causal, self.norm_first = bool(causal), bool(norm_first)
        x, z = symbol_matrix("x", T, 1), symbol_matrix("z", T_src, 1)
        self.self_attention = SelfAttention(T, 1, 1, X=x, mask=causal_mask(T) if causal else None)
        self.cross = CrossAttention(T, T_src, 1, 1, X=x, Z=z)
        rows2 = symbol_matrix("r", T, 2)
        gains = {"gamma": list(symbol_matrix("gamma", 1, 2)), "beta": list(symbol_matrix("beta", 1, 2))}
        ln = sp.Matrix.vstack(*[norm_row("layernorm", list(rows2.row(t)), gains).T for t in range(T)])
        phi = sp.Function("phi")
        mlp = (rows2 * symbol_matrix("w_1", 2, 2).T).applyfunc(phi) * symbol_matrix("w_2", 2, 2).T
        self.maps = {"self": _row_map(self.self_attention.O, {"X": x}), "cross": _row_map(self.cross.O, {"X": x, "Z": z}),
                     "LN": _row_map(ln, {"X": rows2}), "MLP": _row_map(mlp, {"X": rows2})}

    def dependencies(self) -> list[set]:
        """For every output row t: the target rows ("h", j) and memory rows ("z", j) it depends on."""
        m = self.maps
        H = [{("h", t)} for t in range(self.T)]
        Zr = [{("z", j)} for j in range(self.T_src)]
        plus = lambda a, b: [x | y for x, y in zip(a, b)]
        apply = lambda name, X: _through(m[name], {"X": X, "Z": Zr})
        if self.norm_first:
            U1 = plus(H, apply("self", apply("LN", H)))
            U2 = plus(U1, apply("cross", apply("LN", U1)))
            return plus(U2, apply("MLP", apply("LN", U2)))
        U1 = apply("LN", plus(H, apply("self", H)))
        U2 = apply("LN", plus(U1, apply("cross", U1)))
        return apply("LN", plus(U2, apply("MLP", U2)))

    def causal_proof(self) -> tuple[bool, dict]:
        """``d out_i / d h_j = 0`` identically for every j > i: no expression on a path to row i contains row j.

        Returns ``(holds, {(i, j): True when the block is structurally zero})`` for every i < j."""
        deps = self.dependencies()
        blocks = {(i_, j_): ("h", j_) not in deps[i_] for i_ in range(self.T) for j_ in range(i_ + 1, self.T)}
        return all(blocks.values()), blocks

    def memory_reaches_every_row(self) -> bool:
        """Every output row depends on every memory row (through cross-attention, no memory mask)."""
        return all({("z", j) for j in range(self.T_src)} <= d for d in self.dependencies())

    def counterexample(self, i_: int = 0, j_: int = None) -> sp.Expr:
        """``d O_i / d x_j`` of the self-attention sublayer at an exact rational point (j > i): nonzero without the
        mask, so the future leaks into row i; with the mask it is exactly 0."""
        j_ = self.T - 1 if j_ is None else j_
        att = self.self_attention
        d = sp.diff(att.O[i_, 0], att.X[j_, 0])
        point = {s_: sp.Rational((7 * n_) % 11 - 5, 3) for n_, s_ in enumerate(sorted(d.free_symbols, key=lambda q: q.name))}
        return sp.nsimplify(d.xreplace(point)) if d != 0 else sp.Integer(0)

    VECTORS = frozenset({"H", "U", "M", "Z", "H'"})

    def rows(self) -> list:
        """The pre-norm decoder block: masked self-attention, cross-attention to the memory Z, the MLP."""
        # each residual sum named after its sublayer as the LayerNorms are: U_self, U_cross (1, 2 number W_1, W_2)
        H, U_1, U_2, H2, M, Z = sp.symbols("H U_self U_cross H' M Z", commutative=False)
        # each LayerNorm named after the sublayer it feeds (derive.blocks.NORM_TAGS), not numbered as W_1, W_2 are
        LN1, LN2, LN3, self_att, cross, MLP = (sp.Function(n, commutative=False) for n in
                                                (*("LN" + NORM_TAGS[s] for s in ("self", "cross", "mlp")),
                                                 "MHA_self", "MHA_cross", "MLP"))
        return [(U_1, H + self_att(LN1(H), M), ("with the causal mask ", M)), (U_2, U_1 + cross(LN2(U_1), Z)),
                (H2, U_2 + MLP(LN3(U_2)))]

    def __repr__(self) -> str:
        return f"DecoderBlock(T={self.T}, T_src={self.T_src}, causal={self.causal}, norm_first={self.norm_first})"


# ----------------------------------------------------------------------------- parameter counts

def decoder_layer_params(d_model=d_model, heads=h, d_ff=d_ff, bias: bool = True, norms: bool = True, cross: bool = True) -> sp.Expr:
    """Self-attention + cross-attention + FFN (+ three LayerNorms), as torch.nn.TransformerDecoderLayer.

    ``cross=False`` is a decoder-only (GPT-style) layer: no cross-attention and two LayerNorms, the
    encoder layer's count."""
    if not cross:
        return counting.encoder_layer_params(d_model, heads, d_ff, bias=bias, norms=norms)
    total = 2 * counting.attention_params(d_model, heads, bias=bias) + counting.ffn_params(d_model, d_ff, bias)
    if norms:
        total += 3 * counting.layernorm_params(d_model, bias)
    return sp.expand(total)


def decoder_stack_params(layers=N, final_norm: bool = False, **kwargs) -> sp.Expr:
    """N decoder layers (plus the final LayerNorm of torch.nn.TransformerDecoder when ``final_norm``)."""
    d = kwargs.get("d_model", d_model)
    total = counting.size("layers", layers) * decoder_layer_params(**kwargs)
    if final_norm:
        total += counting.layernorm_params(d, kwargs.get("bias", True))
    return sp.expand(total)


def task29() -> dict[str, sp.Expr]:
    """Lesson task 29: the N = 6 decoder stack = the encoder stack (task 16) + one cross-attention (task 14) per layer,
    no biases, no norms (d_model = 256, h = 4, d_ff = 1024)."""
    sizes = dict(d_model=256, heads=4, d_ff=1024, bias=False, norms=False)
    encoder = 6 * counting.encoder_layer_params(**sizes)
    cross = counting.attention_params(256, 4, bias=False)
    return {"encoder_stack": encoder, "cross_attention": cross, "lesson_sum": encoder + 6 * cross,
            "decoder_stack": decoder_stack_params(6, **sizes)}


# ----------------------------------------------------------------------------- catalogue entries

def identities() -> list:
    """The decoder's catalogue entry: the decoder layer count."""
    from .identity import Identity, numeric_sides
    from .proof import proof_by

    out = []  # the cross-attention backward pass is the registered check decoder.cross_attention_backward
    # (its explicit statement is too long for the catalogue's one-display form)
    layer = decoder_layer_params()
    expected = 8 * d_model ** 2 + 2 * d_model * d_ff + 15 * d_model + d_ff
    t = task29()
    lhs = sp.Matrix([layer, decoder_layer_params(256, 4, 1024), t["lesson_sum"], t["decoder_stack"]])
    rhs = sp.Matrix([expected, 1053440, 6291456, 6291456])
    out.append(Identity(
        "count-decoder-layer", "lesson §Advanced tasks:254 (task 29)",
        "decoder layer with biases and norms: 8 d^2 + 2 d d_ff + 15 d + d_ff (1,053,440 at 256/4/1024, torch numel); "
        "task 29: 4,718,592 + 6 x 262,144 = 6,291,456 = the N = 6 decoder stack without biases or norms",
        lhs, rhs, "simplify", proof_by(lambda: lhs - rhs, sp.expand, "expand"),
        lambda rng: numeric_sides(lhs[:1, :], rhs[:1, :], rng, positive=[d_model, d_ff], low=1, high=4096),
        simplifier="expand",
        scope="all d_model, d_ff >= 1 (any n_head dividing d_model); the values at d_model = 256, n_head = 4, "
              "d_ff = 1024, the stack of L = 6 layers without biases or LayerNorms (task 29)",
        shown=lambda: _count_formula(expected)))
    return out


def _count_formula(expected: sp.Expr) -> tuple:
    """|theta|_layer, in general and at the lesson's sizes, and |theta|_stack of task 29 (L layers without biases or
    LayerNorms: L (8 d^2 + 2 d d_ff), then L = 6 at those sizes, the factor and its product), each an equation with its
    value (the number of heads n_head drops out when d_k = d_v = d_model / n_head)."""
    heads = sp.Symbol("n_head", positive=True, integer=True)
    t = task29()
    sizes = dict(d_model=256, heads=4, d_ff=1024, bias=False, norms=False)
    bare = decoder_layer_params(bias=False, norms=False)  # one layer without biases or LayerNorms
    stack = sp.Mul(counting.LAYERS, sp.expand(bare), evaluate=False)
    at = sp.Mul(6, decoder_layer_params(**sizes), evaluate=False)  # 6 x 1,048,576, printed as a product
    return (sp.Tuple(counting.PARAMS_LAYER, sp.Subs(counting.PARAMS_LAYER, (d_model, heads, d_ff), (256, 4, 1024)),
                     counting.PARAMS_STACK, sp.Subs(counting.PARAMS_STACK, counting.LAYERS, 6)),
            sp.Tuple(expected, decoder_layer_params(256, 4, 1024), stack,
                     sp.Eq(at, t["decoder_stack"], evaluate=False)))


__all__ = ["CrossAttention", "DecoderBlock", "decoder_layer_params", "decoder_stack_params", "task29"]
