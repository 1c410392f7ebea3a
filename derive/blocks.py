r"""Transformer blocks as programs over matrix symbols of symbolic shape: attention, LayerNorm, residual blocks.

Every block is a :class:`~derive.program.Program` whose forward lines are the
text's equations (rows are positions, weights applied as ``X W^T``)::

    Q = X W_Q^T,  K = X W_K^T,  V = X W_V^T,  S = Q K^T / sqrt(d_k) [+ M],  A = softmax(S),  O = A V
    C = [O^[1] | ... | O^[h]],  B = C W_O^T                                   (multi-head)
    x̂ = normalize(X) (eps inside the root),  Y = x̂ o (1 gamma) + 1 beta            (LayerNorm)
    x̂ = rmsnormalize(X) = X / rms(X),  Y = x̂ o (1 gamma)                              (RMSNorm)
    pre-norm:  U = H + MHA(N(H));   post-norm:  U = N(H + MHA(H))       (N: the block's norm=, a Norm)

and whose backward lines come from :meth:`Program.backward`, i.e. from the
rule table :mod:`derive.rules` (every rule proved at symbolic size).  So the
backward pass prints as the textbook writes it, for every T, d, d_k, d_v::

    dV = A^T G,  dA = G V^T,  dS = A o (dA - rowsum(dA o A)),  dQ = dS K / sqrt(d_k),  dK = dS^T Q / sqrt(d_k)

Nothing is typed by hand: change a forward line and the backward pass follows.
The sizes are symbols (``T``, ``d``, ``d_k``, ``d_v``); numeric code gets them
as arguments (:func:`crosscheck.lambdify.lambdify`), and crosscheck compares
the compiled programs with torch autograd at several sizes.

>>> att = attention_program()
>>> for name in ("dV", "dA", "dS", "dQ", "dK"):
...     print(att.program[name])
dV = A.T*G
dA = G*V.T
dS = A ∘ (dA - rowsum(dA ∘ A))
dQ = 1/sqrt(d_k)*dS*K
dK = 1/sqrt(d_k)*dS.T*Q
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import sympy as sp
from sympy.matrices.expressions.matexpr import MatrixExpr

from seqgrad import validate
from seqgrad.errors import SeqgradValueError

from .safe_parse import as_sympy

from .elementwise import Elementwise
from .program import Program, latex_aligned
from .rules import EPS, HConcat, Masked, Normalize, RMSNormalize, RowRMS, RowSoftmax, RowStd, index_form

__all__ = ["T", "T_src", "d", "d_k", "d_v", "d_ff", "BlockProgram", "Norm", "NORMS", "LAYERNORM", "RMSNORM", "norm_of",
           "attention_program", "cross_attention_program", "concat_program", "norm_program", "norm_row", "norm_row_block", "layernorm_program", "block_program", "mlp_program", "decoder_block_program",
           "multihead_rows", "HeadSum", "HeadConcat", "at_head", "n_head", "size"]

T, d, d_k, d_v = sp.symbols("T d d_k d_v", integer=True, positive=True)
T_src = sp.Symbol("T_src", integer=True, positive=True)
d_ff = sp.Symbol("d_ff", integer=True, positive=True)


def size(name: str, value) -> sp.Expr:
    """A block size: a positive integer, or a SymPy integer symbol declared positive (the default sizes)."""
    if isinstance(value, sp.Symbol):
        if value.is_integer and value.is_positive:
            return value
        raise SeqgradValueError(name, value, "a positive integer or a SymPy Symbol(..., integer=True, positive=True)")
    return sp.Integer(validate.integer(name, value, minimum=1))


@dataclass
class BlockProgram:
    """A block's program, its inputs (data, parameters, sizes), its upstream sensitivity ``G`` and its gradients."""

    program: Program
    inputs: dict
    G: sp.MatrixSymbol
    output: sp.MatrixSymbol
    gradients: dict = field(default_factory=dict)
    sizes: tuple = ()

    def __str__(self) -> str:
        return str(self.program)

    def backward_lines(self) -> list:
        return self.program.definitions(("backward", "gradient"))

    def latex(self, notation=None) -> str:
        """The block's program as a complete display (``align*``, see :meth:`derive.program.Program.latex`), under
        ``notation`` (:class:`derive.latex_settings.Notation`)."""
        return self.program.latex(notation=notation)

    def _repr_latex_(self) -> str:
        return self.program._repr_latex_()  # a complete display under the notebook's notation, rendered as it is

    def backward_at(self, values: dict, G, forward: dict, wrt) -> dict:
        """The backward pass at explicit matrices: ``values`` of the inputs (by name), the upstream ``G``, and
        the forward ``values`` of the intermediates named in ``forward`` (e.g. a head's own Q, K, V, S, A);
        returns the adjoint ``d<name>`` of each of those intermediates and the gradient of each input in ``wrt``."""
        env = {self.inputs[name]: value for name, value in values.items()}
        env[self.G] = G
        env.update((self.program[name].target, value) for name, value in forward.items())
        names = [*forward, *wrt]
        exprs = [self.program["d" + name].target for name in forward] + [self.gradients[name] for name in wrt]
        return dict(zip(names, self.program.evaluate(exprs, env)))  # the definitions they share evaluated once

    def forward_at(self, values: dict, names) -> list:
        """The forward intermediates ``names`` at explicit inputs ``values`` (matrices by input name): the
        program's own lines evaluated, so a concrete head's Q, K, V, S, A, O are a view of the one definition."""
        env = {self.inputs[name]: value for name, value in values.items()}
        targets = [self.program[name].target for name in names]
        return [sp.Matrix(v) for v in self.program.evaluate(targets, env)]

    def args(self) -> list:
        """Every leaf the compiled program needs: inputs, G, and the size symbols."""
        sizes = [s for s in self.sizes if isinstance(s, sp.Symbol)]
        return list(self.inputs.values()) + [self.G] + list(dict.fromkeys(sizes))


def _attention_head(prog: Program, X, W_Q, W_K, W_V, dk, M=None, tag: str = "", scale=None, Z=None):
    """One head: queries from X; keys and values from X (self-attention) or from the memory Z (cross-attention)."""
    Z = X if Z is None else Z
    Q = prog.define(sp.MatrixSymbol("Q" + tag, X.shape[0], W_Q.shape[0]), X * W_Q.T)
    K = prog.define(sp.MatrixSymbol("K" + tag, Z.shape[0], W_K.shape[0]), Z * W_K.T)
    V = prog.define(sp.MatrixSymbol("V" + tag, Z.shape[0], W_V.shape[0]), Z * W_V.T)
    scores = sp.MatMul(1 / sp.sqrt(dk) if scale is None else scale, Q, K.T)
    S = prog.define(sp.MatrixSymbol("S" + tag, X.shape[0], Z.shape[0]), scores)
    A = prog.define(sp.MatrixSymbol("A" + tag, X.shape[0], Z.shape[0]), RowSoftmax(S if M is None else Masked(S, M)))
    return prog.define(sp.MatrixSymbol("O" + tag, X.shape[0], W_V.shape[0]), A * V)


def _weights(tag: str, dm, dk, dv) -> dict:
    return {"W_Q" + tag: sp.MatrixSymbol("W_Q" + tag, dk, dm), "W_K" + tag: sp.MatrixSymbol("W_K" + tag, dk, dm),
            "W_V" + tag: sp.MatrixSymbol("W_V" + tag, dv, dm)}


def _mha(prog: Program, X, inputs: dict, heads: int, dm, dk, dv, M=None, scale=None, Z=None, role: str = ""):
    """``heads`` heads on the rows X (keys and values from Z when given), concatenated and mapped by W_O; a ``role``
    (``self``, ``cross``) names a block's attention apart from another's: ``Q_self^[1]``, ``W_Q,self^[1]``, ``B_self``."""
    if role:
        outs = []
        for i in range(1, heads + 1):
            w = {f"W_{n},{role}^[{i}]": sp.MatrixSymbol(f"W_{n},{role}^[{i}]", dv if n == "V" else dk, dm) for n in "QKV"}
            inputs.update(w)
            outs.append(_attention_head(prog, X, *w.values(), dk, M, f"_{role}^[{i}]", scale, Z))
        W_O = inputs.setdefault(f"W_O,{role}", sp.MatrixSymbol(f"W_O,{role}", dm, heads * dv))
        rows = outs[0].shape[0]
        C = prog.define(sp.MatrixSymbol(f"C_{role}", rows, W_O.shape[1]), HConcat(*outs))
        return prog.define(sp.MatrixSymbol(f"B_{role}", rows, W_O.shape[0]), C * W_O.T)
    if heads == 1:
        w = _weights("", dm, dk, dv)
        inputs.update(w)
        return _attention_head(prog, X, *w.values(), dk, M, scale=scale)
    outs = []
    for i in range(1, heads + 1):
        tag = f"^[{i}]"
        w = _weights(tag, dm, dk, dv)
        inputs.update(w)
        outs.append(_attention_head(prog, X, *w.values(), dk, M, tag, scale))
    W_O = inputs.setdefault("W_O", sp.MatrixSymbol("W_O", dm, heads * dv))
    return _concat_project(prog, outs, W_O)


def _concat_project(prog: Program, outs: list, W_O):
    """The heads side by side and the output projection: ``C = [O^[1] | ... | O^[h]]``, ``B = C W_O^T``."""
    rows = outs[0].shape[0]
    C = prog.define(sp.MatrixSymbol("C", rows, W_O.shape[1]), HConcat(*outs))
    return prog.define(sp.MatrixSymbol("B", rows, W_O.shape[0]), C * W_O.T)


def concat_program(widths, T_=T, d_out=d) -> BlockProgram:
    """Multi-head attention's concatenation and output projection alone, for heads of value widths ``widths``
    (integers or positive integer symbols, one per head): inputs ``O^[n]`` (T x widths[n]) and ``W_O``
    (d_out x sum(widths)), ``C = [O^[1] | ... | O^[h]]``, ``B = C W_O^T`` (the lines :func:`attention_program`
    writes after its heads), with the backward pass from the rule table (``concat``, ``matmul``)."""
    widths = [size("widths", w) for w in widths]
    if not widths:
        raise SeqgradValueError("widths", widths, "one value width per head (at least one)")
    Tn, do = size("T", T_), size("d_out", d_out)
    prog = Program(f"concatenation of {len(widths)} heads")
    outs = {f"O^[{n + 1}]": sp.MatrixSymbol(f"O^[{n + 1}]", Tn, w) for n, w in enumerate(widths)}
    W_O = sp.MatrixSymbol("W_O", do, sp.Add(*widths))
    inputs = dict(outs, W_O=W_O)
    B = _concat_project(prog, list(outs.values()), W_O)
    G = sp.MatrixSymbol("G", *B.shape)
    grads = _backward(prog, B, G, inputs)
    return BlockProgram(prog, inputs, G, B, grads, (Tn, do, *widths))


def _row_parameter(inputs: dict, name: str, cols):
    """A norm's gain or shift: one row of ``cols`` entries, broadcast over the rows by ``1 name``."""
    return inputs.setdefault(name, sp.MatrixSymbol(name, 1, cols))


#: The name of a norm's normalized rows, a matrix of the shape of its input X: capital and hatted, as every matrix of
#: rows is a capital (X, Y), not the lower case of a row (x-hat; its entries in a row's Jacobian are x-hat_i)
NORMALIZED = "Xhat"


def _layernorm(prog: Program, X, inputs: dict, tag: str = "", eps=EPS):
    """LayerNorm's forward lines: ``σ = std(X)``, ``x̂ = normalize(X)``, ``Y = x̂ o (1 gamma) + 1 beta``."""
    rows, cols = X.shape
    gamma, beta = _row_parameter(inputs, "gamma" + tag, cols), _row_parameter(inputs, "beta" + tag, cols)
    prog.define(sp.MatrixSymbol("sigma" + tag, rows, cols), RowStd(X, eps))
    xhat = prog.define(sp.MatrixSymbol(NORMALIZED + tag, rows, cols), Normalize(X, eps))
    one = sp.OneMatrix(rows, 1)
    return prog.define(sp.MatrixSymbol("Y" + tag if tag else "Y", rows, cols),
                       sp.HadamardProduct(xhat, sp.MatMul(one, gamma)) + sp.MatMul(one, beta))


def _rmsnorm(prog: Program, X, inputs: dict, tag: str = "", eps=EPS):
    """RMSNorm's forward lines (Zhang & Sennrich 2019): ``r = rms(X)``, ``x̂ = X / r``, ``Y = x̂ o (1 gamma)``."""
    rows, cols = X.shape
    gamma = _row_parameter(inputs, "gamma" + tag, cols)
    prog.define(sp.MatrixSymbol("r" + tag, rows, cols), RowRMS(X, eps))
    xhat = prog.define(sp.MatrixSymbol(NORMALIZED + tag, rows, cols), RMSNormalize(X, eps))
    return prog.define(sp.MatrixSymbol("Y" + tag if tag else "Y", rows, cols),
                       sp.HadamardProduct(xhat, sp.MatMul(sp.OneMatrix(rows, 1), gamma)))


@dataclass(frozen=True)
class Norm:
    """A normalisation over the features of every row, defined once as a program fragment: ``lines(prog, X,
    inputs, tag, eps)`` writes its forward lines into ``prog`` (its parameters added to ``inputs``, named with
    ``tag``) and returns its output; the backward pass comes from the rule table (:meth:`Program.backward`).
    Every block takes one as ``norm=`` (a name of :data:`NORMS`, or a ``Norm`` of your own)."""

    name: str
    lines: Callable
    statement: str = ""
    label: str = ""  # its short name in formulas (LN, RMS: J_LN, RMS(h)); the name when empty

    @property
    def symbol(self) -> str:
        return self.label or self.name

    def __call__(self, prog: Program, X, inputs: dict, tag: str = "", eps=EPS):
        return self.lines(prog, X, inputs, tag, eps)


LAYERNORM = Norm("layernorm", _layernorm, "Y = normalize(X) o (1 gamma) + 1 beta, population variance, eps inside the root",
                 "LN")
RMSNORM = Norm("rmsnorm", _rmsnorm, "Y = X / rms(X) o (1 gamma), rms(X) = sqrt(mean(X o X) + eps) (Zhang & Sennrich 2019)",
               "RMS")

#: name -> :class:`Norm`: the normalisations a block takes by name
NORMS: dict[str, Norm] = {n.name: n for n in (LAYERNORM, RMSNORM)}


def norm_of(norm) -> Norm:
    """The :class:`Norm` that ``norm`` names (a key of :data:`NORMS`) or is; anything else is one clear error."""
    if isinstance(norm, Norm):
        return norm
    if isinstance(norm, str) and norm in NORMS:
        return NORMS[norm]
    raise SeqgradValueError("norm", norm, "one of " + ", ".join(repr(n) for n in NORMS) + ", or a derive.blocks.Norm")


def _backward(prog: Program, output, G, inputs: dict) -> dict:
    names = {}

    def adjoint(target):
        if target == output:
            return None
        return names.setdefault(target, "d" + target.name)

    grads = prog.backward({output: G}, adjoint)
    out = {}
    for name, leaf in inputs.items():
        if leaf in grads:
            out[name] = prog.define(sp.MatrixSymbol("d" + name, *leaf.shape), grads[leaf], kind="gradient")
    return out


def attention_program(heads: int = 1, masked: bool = False, T_=T, d_=d, d_k_=d_k, d_v_=d_v, scale=None) -> BlockProgram:
    """Scaled dot-product self-attention (``heads`` heads of widths d_k, d_v, concatenated and mapped by W_O
    when heads > 1), with an additive mask M when ``masked``, as a program with its backward pass.

    The sizes default to the symbols T, d, d_k, d_v; pass integers for an instance.  ``scale`` replaces
    the text's 1/sqrt(d_k) (any SymPy scalar).
    """
    heads = validate.integer("heads", heads, minimum=1, maximum=16)
    Tn, dm, dk, dv = size("T", T_), size("d", d_), size("d_k", d_k_), size("d_v", d_v_)
    prog = Program("attention" if heads == 1 else f"multi-head attention ({heads} heads)")
    X = sp.MatrixSymbol("X", Tn, dm)
    inputs = {"X": X}
    M = None
    if masked:
        M = sp.MatrixSymbol("M", Tn, Tn)
    out = _mha(prog, X, inputs, heads, dm, dk, dv, M, scale)
    G = sp.MatrixSymbol("G", *out.shape)
    data = dict(inputs, **({"M": M} if masked else {}))
    grads = _backward(prog, out, G, inputs)
    return BlockProgram(prog, data, G, out, grads, (Tn, dm, dk, dv))


def cross_attention_program(masked: bool = False, T_=T, T_src_=T_src, d_=d, d_k_=d_k, d_v_=d_v, scale=None) -> BlockProgram:
    """One cross-attention head of the decoder: queries from the decoder rows X (T x d), keys and values from
    the encoder output Z (T_src x d), with an additive T x T_src mask M when ``masked``; with its backward
    pass, whose dZ = dK W_K + dV W_V carries the gradient into the encoder."""
    Tn, Ts, dm, dk, dv = size("T", T_), size("T_src", T_src_), size("d", d_), size("d_k", d_k_), size("d_v", d_v_)
    prog = Program("cross-attention")
    X, Z = sp.MatrixSymbol("X", Tn, dm), sp.MatrixSymbol("Z", Ts, dm)
    inputs = {"X": X, "Z": Z, **_weights("", dm, dk, dv)}
    M = sp.MatrixSymbol("M", Tn, Ts) if masked else None
    out = _attention_head(prog, X, inputs["W_Q"], inputs["W_K"], inputs["W_V"], dk, M, scale=scale, Z=Z)
    G = sp.MatrixSymbol("G", *out.shape)
    grads = _backward(prog, out, G, inputs)
    return BlockProgram(prog, dict(inputs, **({"M": M} if masked else {})), G, out, grads, (Tn, Ts, dm, dk, dv))


def norm_program(norm="layernorm", T_=T, d_=d, eps=EPS) -> BlockProgram:
    """The normalisation ``norm`` (``"layernorm"``, ``"rmsnorm"`` or a :class:`Norm`) over the d features of every
    row, with its backward pass from the rule table: LayerNorm's ``dX = (1/σ) o (dx̂ - mean(dx̂) - x̂ o mean(dx̂ o x̂))``,
    RMSNorm's ``dX = (1/r) o (dx̂ - x̂ o mean(dx̂ o x̂))``."""
    norm = norm_of(norm)
    Tn, dm = size("T", T_), size("d", d_)
    prog = Program(norm.name)
    X = sp.MatrixSymbol("X", Tn, dm)
    inputs = {"X": X}
    Y = norm(prog, X, inputs, eps=eps)
    G = sp.MatrixSymbol("G", Tn, dm)
    grads = _backward(prog, Y, G, inputs)
    return BlockProgram(prog, inputs, G, Y, grads, (Tn, dm))


def norm_row(norm, x, params=None, eps=EPS) -> sp.Matrix:
    """The norm's output at one row ``x`` (a list of expressions) as an explicit column: a view of the program's
    forward lines (:func:`norm_program` at T = 1, d = len(x)), every definition substituted and evaluated on the
    explicit row.  ``params`` gives each parameter one value for every feature, or a list of d values (default
    ``gamma = 1``, ``beta = 0``: the initial LayerNorm of derive.residual)."""
    block, env = norm_row_block(norm, x, params, eps)
    Y = block.program.expand(block.output, kinds=("forward",))
    return sp.Matrix(Y.xreplace(env).doit()).T


def norm_row_block(norm, x, params=None, eps=EPS) -> tuple:
    """``(block, env)``: the program of ``norm`` at T = 1, d = len(x) and the explicit row ``x`` and parameter
    rows for its inputs (what :func:`norm_row` evaluates; :class:`derive.layernorm.LayerNorm` reads its
    statistics and backward pass from the same pair)."""
    x = [as_sympy(v, "x") for v in x]
    if not x:
        raise SeqgradValueError("x", x, "a row of at least one expression")
    params = {"gamma": 1, "beta": 0} if params is None else dict(params)
    block = norm_program(norm, T_=1, d_=len(x), eps=eps)
    env = {block.inputs["X"]: sp.ImmutableMatrix([x])}
    for name, leaf in block.inputs.items():
        if name != "X":
            if name not in params:
                raise SeqgradValueError("params", sorted(params), f"a value for the parameter {name!r} of {block.program.name}")
            env[leaf] = sp.ImmutableMatrix(1, len(x), _feature_values(name, params[name], len(x)))
    return block, env


def _feature_values(name: str, value, n: int) -> list:
    """A parameter's row: one value for every feature, or a list of exactly ``n`` values."""
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise SeqgradValueError(name, list(value), f"a vector of length d={n}")
        return [as_sympy(v, name) for v in value]
    return [as_sympy(value, "params")] * n


def row_jacobian_residual(norm, entry, i, j):
    """A claimed Jacobian of one row against the norm's program: ``sum_i G_i J_ij - dX_j`` in index notation at
    symbolic d, where ``J_ij = entry(i, j, inputs)`` (the program's inputs: the row ``X``, a 1 x d matrix symbol
    whose statistics the entry reads through the rule table's nodes, and the norm's parameters, ``gamma``, ...;
    an entry reads them with :func:`derive.rules.index_form`) and ``dX`` is the program's backward pass with every
    definition substituted.  :func:`derive.rules.index_zero` reduces it to 0 exactly when the closed form is
    the program's Jacobian: so a closed form is a statement proved equal to the one definition."""
    block = norm_program(norm, T_=1, d_=d, eps=EPS)
    G = block.G
    dX = block.program.expand(block.gradients["X"], kinds=None)
    paired = sp.Sum(index_form(G, 0, i) * entry(i, j, block.inputs), (i, 0, d - 1))
    return paired - index_form(dX, 0, j)


def layernorm_program(T_=T, d_=d, eps=EPS) -> BlockProgram:
    """:func:`norm_program` of LayerNorm, ``Y = x̂ o (1 gamma) + 1 beta``."""
    return norm_program(LAYERNORM, T_, d_, eps)


PLACEMENTS = ("pre-norm", "post-norm")

#: the subscript of a block's norm (``tag``), named after the sublayer it feeds: LN_att before (post-norm: after) the
#: attention, LN_mlp before the MLP (the decoder's LN_self, LN_cross, LN_mlp); never a number, since the subscripts 1
#: and 2 number the MLP's two layers, W_1 and W_2, as in Vaswani et al.
NORM_TAGS = {"attention": "_att", "mlp": "_mlp", "self": "_self", "cross": "_cross"}
#: the name the notes print for the encoder's output, the memory a decoder's cross-attention reads (the programs call
#: it Z, PyTorch's ``memory``): a block's rows are H, and Z_mlp is the MLP's pre-activation, so the memory is H_enc
MEMORY = "H_enc"


def block_program(placement: str = "pre-norm", heads: int = 1, T_=T, d_=d, d_k_=d_k, d_v_=d_v,
                  norm="layernorm") -> BlockProgram:
    """The attention sublayer with its residual and normalisation N (``norm``: ``"layernorm"``, ``"rmsnorm"`` or a
    :class:`Norm`): pre-norm ``U = H + MHA(N(H))`` or post-norm ``U = N(H + MHA(H))``; the backward pass shows
    the residual's ``I + J``: dH = dU + (branch)."""
    placement = validate.choice("placement", placement, PLACEMENTS)
    norm = norm_of(norm)
    heads = validate.integer("heads", heads, minimum=1, maximum=16)
    Tn, dm, dk, dv = size("T", T_), size("d", d_), size("d_k", d_k_), size("d_v", d_v_)
    if heads == 1 and dv != dm:
        dv = dm  # one head without W_O writes d_v = d columns, added to H
    prog = Program(f"{placement} attention block" + ("" if norm is LAYERNORM else f" ({norm.name})"))
    H = sp.MatrixSymbol("H", Tn, dm)
    inputs = {"H": H}
    if placement == "pre-norm":
        X = norm(prog, H, inputs, tag=NORM_TAGS["attention"])
        Bm = _mha(prog, X, inputs, heads, dm, dk, dv)
        U = prog.define(sp.MatrixSymbol("U", Tn, dm), H + Bm)
    else:
        Bm = _mha(prog, H, inputs, heads, dm, dk, dv)
        # the residual sum is U in both placements (Z is the encoder's memory in the decoder); post-norm normalises it
        U = norm(prog, prog.define(sp.MatrixSymbol("U", Tn, dm), H + Bm), inputs, tag=NORM_TAGS["attention"])
    G = sp.MatrixSymbol("G", Tn, dm)
    grads = _backward(prog, U, G, inputs)
    return BlockProgram(prog, inputs, G, U, grads, (Tn, dm, dk, dv))


def mlp_program(T_=T, d_=d, d_ff_=d_ff, norm="layernorm", activation: str = "relu") -> BlockProgram:
    """The pre-norm block's second sublayer (seed 000 L946, L1021): the MLP on the normalised rows of ``U``, the
    attention sublayer's output, and the second residual addition, with the course's names::

        Y_mlp = N(U),  Z_mlp = Y_mlp W_1^T + 1 b_1,  Phi_mlp = act(Z_mlp),  B_mlp = Phi_mlp W_2^T + 1 b_2,  H' = U + B_mlp

    (``activation`` an elementwise operation of the registry, ReLU as in the course; the hidden activation is Phi_mlp,
    not the course's J_mlp, since J names the Jacobians (J_MHA, J_MLP, J_LN); W_1 is d_ff x d, W_2 d x d_ff);
    the backward pass from the rule table shows the second shortcut, dU = dH' + (the branch's pullback).

    >>> mlp = mlp_program()
    >>> for name in ("dPhi_mlp", "dZ_mlp", "dW_1", "db_2"):
    ...     print(mlp.program[name])
    dPhi_mlp = dB_mlp*W_2
    dZ_mlp = dPhi_mlp ∘ Heaviside(Z_mlp, 0)
    dW_1 = dZ_mlp.T*Y_mlp
    db_2 = 1*dB_mlp
    """
    norm = norm_of(norm)
    Tn, dm, dff = size("T", T_), size("d", d_), size("d_ff", d_ff_)
    prog = Program("pre-norm MLP sublayer" + ("" if norm is LAYERNORM else f" ({norm.name})"))
    U = sp.MatrixSymbol("U", Tn, dm)
    inputs = {"U": U, "W_1": sp.MatrixSymbol("W_1", dff, dm), "b_1": sp.MatrixSymbol("b_1", 1, dff),
              "W_2": sp.MatrixSymbol("W_2", dm, dff), "b_2": sp.MatrixSymbol("b_2", 1, dm)}
    Y = norm(prog, U, inputs, tag=NORM_TAGS["mlp"])
    out = prog.define(sp.MatrixSymbol("H'", Tn, dm), U + _mlp(prog, Y, inputs, activation))
    G = sp.MatrixSymbol("G", Tn, dm)
    grads = _backward(prog, out, G, inputs)
    return BlockProgram(prog, inputs, G, out, grads, (Tn, dm, dff))


def _mlp(prog: Program, Y, inputs: dict, activation: str = "relu"):
    """The MLP's lines on the rows Y: ``Z_mlp = Y W_1^T + 1 b_1``, ``Phi_mlp = act(Z_mlp)`` (the course writes J;
    J is the notes' letter for a Jacobian), ``B_mlp = Phi_mlp W_2^T + 1 b_2`` (its weights taken from ``inputs``)."""
    from .operations import node

    rows, dff = Y.shape[0], inputs["W_1"].shape[0]
    one = sp.OneMatrix(rows, 1)
    Z = prog.define(sp.MatrixSymbol("Z_mlp", rows, dff), Y * inputs["W_1"].T + one * inputs["b_1"])
    u = sp.Dummy("u")
    Phi = prog.define(sp.MatrixSymbol("Phi_mlp", rows, dff), Elementwise(sp.Lambda(u, node(activation)(u)), Z))
    return prog.define(sp.MatrixSymbol("B_mlp", rows, inputs["W_2"].shape[0]), Phi * inputs["W_2"].T + one * inputs["b_2"])


def decoder_block_program(heads: int = 2, T_=T, T_src_=T_src, d_=d, d_k_=d_k, d_v_=d_v, d_ff_=d_ff,
                          activation: str = "relu") -> BlockProgram:
    """The pre-norm decoder block as one program (:class:`derive.decoder.DecoderBlock` states its row dependence)::

        U_self = H + MHA_self(LN_self(H), M),  U_cross = U_self + MHA_cross(LN_cross(U_self), Z),
        H' = U_cross + MLP(LN_mlp(U_cross))

    ``heads`` heads in each attention (the causal mask M added to the self-attention's scores, the cross-attention's
    keys and values from the memory Z, T_src x d), the MLP of :func:`mlp_program`; the backward pass from the rule
    table shows each residual sum (dU_self = dU_cross + ..., dH = dU_self + ...) and the gradient dZ that reaches the memory
    through the cross-attention's keys and values."""
    heads = validate.integer("heads", heads, minimum=1, maximum=16)
    Tn, Ts, dm, dk, dv, dff = (size("T", T_), size("T_src", T_src_), size("d", d_), size("d_k", d_k_), size("d_v", d_v_),
                               size("d_ff", d_ff_))
    prog = Program("pre-norm decoder block")
    H, Z, M = sp.MatrixSymbol("H", Tn, dm), sp.MatrixSymbol("Z", Ts, dm), sp.MatrixSymbol("M", Tn, Tn)
    inputs = {"H": H, "Z": Z}
    # the LayerNorms and residual sums named after the sublayer they feed (NORM_TAGS), as the notes' decoder prints them
    U1 = prog.define(sp.MatrixSymbol("U" + NORM_TAGS["self"], Tn, dm),
                     H + _mha(prog, LAYERNORM(prog, H, inputs, NORM_TAGS["self"]), inputs, heads, dm, dk, dv, M, role="self"))
    U2 = prog.define(sp.MatrixSymbol("U" + NORM_TAGS["cross"], Tn, dm),
                     U1 + _mha(prog, LAYERNORM(prog, U1, inputs, NORM_TAGS["cross"]), inputs, heads, dm, dk, dv, Z=Z,
                               role="cross"))
    inputs.update({"W_1": sp.MatrixSymbol("W_1", dff, dm), "b_1": sp.MatrixSymbol("b_1", 1, dff),
                   "W_2": sp.MatrixSymbol("W_2", dm, dff), "b_2": sp.MatrixSymbol("b_2", 1, dm)})
    out = prog.define(sp.MatrixSymbol("H'", Tn, dm),
                      U2 + _mlp(prog, LAYERNORM(prog, U2, inputs, NORM_TAGS["mlp"]), inputs, activation))
    G = sp.MatrixSymbol("G", Tn, dm)
    grads = _backward(prog, out, G, inputs)
    return BlockProgram(prog, dict(inputs, M=M), G, out, grads, (Tn, Ts, dm, dk, dv, dff))


def rules_used(block: BlockProgram) -> list[str]:
    """The rule-table rules the block's backward pass composes (every primitive of every forward line)."""
    from .rules import _constant, rule_for

    used: dict = {}

    def walk(expr):
        if isinstance(expr, sp.MatrixSymbol) or not getattr(expr, "is_Matrix", False) or _constant(expr):
            return
        used[rule_for(expr).name] = None
        children = expr.as_coeff_matrices()[1] if isinstance(expr, sp.MatMul) else expr.args
        for child in children:
            walk(child)

    for d_ in block.program.definitions("forward"):
        walk(d_.value)
    return list(used)


def prove_program(block: BlockProgram):
    """The backward pass is the chain rule over the program's lines; each line's pullback is a rule of the
    table, each proved at symbolic size: so the program's gradients hold for every size.  Proves every rule used."""
    from .proof import Proof
    from .rules import proved

    names = rules_used(block)
    proofs = {n: proved(n) for n in names}
    failed = [n for n, p in proofs.items() if not p.holds]
    return Proof(not failed, "composition of rules proved at symbolic size (chain rule over the program)",
                 sp.Integer(0) if not failed else failed, "rules: " + ", ".join(names))


def elementwise_inverse(expr):
    """``1/expr`` entrywise (used to print the LayerNorm rule's division by σ)."""
    u = sp.Dummy("u")
    return Elementwise(sp.Lambda(u, 1 / u), expr)


def backward_latex(block: BlockProgram, width: int = 60) -> str:
    """The backward lines as an aligned LaTeX block."""
    return latex_aligned([(d_.target, d_.value) for d_ in block.backward_lines()], width)


# ----------------------------------------------------------------------------- every head i of n_head heads

#: the number of heads and a head's number in the multi-head formulas written for every n_head (heads counted from 1)
n_head = sp.Symbol("n_head", integer=True, positive=True)
#: the index of a query's position (a row of the scores, of the weights and of a block's output): t, the step index,
#: as the attention figures write A_tj (not i, the LSTM's input gate elsewhere)
QUERY_INDEX = "t"
#: the index of a general head, in brackets (W_Q^[h]): h, as in "head h", not i, the LSTM's input gate elsewhere
#: (a query's row is t, :data:`QUERY_INDEX`)
HEAD_INDEX = "h"
head = sp.Symbol(HEAD_INDEX, integer=True, positive=True)


def at_head(expr, k, heads=None, index=head):
    """``expr``, written for head ``index`` (its symbols named ``W_Q^[h]``, ...), at head ``k``: every symbol of head
    ``index`` renamed to head ``k``'s and ``index`` set to ``k``; ``heads`` (when given) set for ``n_head``."""
    mark = f"^[{index}]"
    renamed = {s: sp.MatrixSymbol(s.name.replace(mark, f"^[{k}]"), *s.shape)
               for s in expr.atoms(sp.MatrixSymbol) if mark in s.name}
    values = {index: k} if isinstance(index, sp.Symbol) else {}  # a numbered head's symbols only renamed
    values.update({n_head: heads} if heads is not None else {})
    return expr.xreplace(renamed).xreplace(values)


class _OverHeads(MatrixExpr):
    """A matrix formula over the heads ``i = 1 .. n``, its term written for head ``i`` (``args``: term, i, n)."""

    def __new__(cls, term, index=head, count=n_head):
        return MatrixExpr.__new__(cls, term, index, count)

    @property
    def term(self):
        return self.args[0]

    def terms(self, heads: int) -> list:
        """The term at every head ``1 .. heads`` (``n_head`` set to ``heads``)."""
        return [at_head(self.term, k, heads, self.args[1]) for k in range(1, heads + 1)]


class HeadSum(_OverHeads):
    """``sum_{i=1}^{n_head} term``: the sum of a term over the heads; :meth:`at` writes it out for a number of heads."""

    @property
    def shape(self):
        return self.term.shape

    def at(self, heads: int):
        return sp.MatAdd(*(a for term in self.terms(heads) for a in sp.MatAdd.make_args(term)))

    def _latex(self, printer, exp=None):
        return r"\sum_{%s=1}^{%s} %s" % (printer._print(self.args[1]), printer._print(self.args[2]),
                                         printer.parenthesize(self.term, 45))

    def _sympystr(self, printer):
        return "Sum_{%s=1}^{%s} (%s)" % (printer._print(self.args[1]), printer._print(self.args[2]), printer._print(self.term))


class HeadConcat(_OverHeads):
    """``[O^[1] | O^[2] | ... | O^[n_head]]``: the heads' outputs side by side; :meth:`at` is the concatenation
    (:class:`derive.rules.HConcat`) for a number of heads."""

    @property
    def shape(self):
        return self.term.shape[0], self.args[2] * self.term.shape[1]

    def at(self, heads: int):
        return HConcat(*self.terms(heads))

    def _latex(self, printer, exp=None):
        first, second, last = (at_head(self.term, k, None, self.args[1]) for k in (1, 2, self.args[2]))
        return r"\left[%s\right]" % r"\;\middle|\;".join([printer._print(first), printer._print(second), r"\cdots",
                                                          printer._print(last)])

    def _sympystr(self, printer):
        first, last = (at_head(self.term, k, None, self.args[1]) for k in (1, self.args[2]))
        return "[%s | ... | %s]" % (printer._print(first), printer._print(last))


def multihead_rows(heads: int = 3, T_=T, d_=d, d_k_=d_k, d_v_=d_v) -> tuple[list, list]:
    """Multi-head attention written for every head ``h`` of ``n_head`` heads: ``(forward, backward)`` rows
    ``(target, value)`` read off the engine's program of ``heads`` heads (:func:`attention_program`): head 1's lines
    with head ``h``'s symbols, ``C = [O^[1] | ... | O^[n_head]]``, ``B = C W_O^T``; backwards ``dC = dB W_O``, head
    ``h``'s column block ``dO^[h]`` of ``dC``, head ``h``'s lines, ``dX = sum_h (dQ^[h] W_Q^[h] + dK^[h] W_K^[h] +
    dV^[h] W_V^[h])``, the heads' weight gradients and ``dW_O = dB^T C``.  Every row is the engine's line at each head
    ``k = 1 .. heads`` (with ``n_head = heads``), or this raises: the general rows are the program, generalised."""
    from .rules import ColumnBlock

    heads = validate.integer("heads", heads, minimum=2, maximum=16)
    mha = attention_program(heads=heads, T_=T_, d_=d_, d_k_=d_k_, d_v_=d_v_)
    prog = mha.program
    Tn, dv = mha.output.shape[0], mha.inputs["W_V^[1]"].shape[0]
    general = lambda e: at_head(e, head, None, 1)  # noqa: E731  (head 1's symbols as head i's)
    C = sp.MatrixSymbol("C", Tn, n_head * dv)
    W_O = sp.MatrixSymbol("W_O", mha.output.shape[1], n_head * dv)
    B, dB, dC = sp.MatrixSymbol("B", *mha.output.shape), sp.MatrixSymbol("dB", *mha.output.shape), sp.MatrixSymbol("dC", *C.shape)
    joint = {prog["C"].target: C, mha.inputs["W_O"]: W_O, mha.G: dB, prog["dC"].target: dC}  # the heads' shared symbols

    def generalised(name_of_head_1):
        line = prog[name_of_head_1]
        return general(line.target), general(line.value).xreplace(joint)

    per_head = ["Q", "K", "V", "S", "A", "O"]
    forward = [generalised(n + "^[1]") for n in per_head]
    forward += [(C, HeadConcat(forward[-1][0])), (B, C * W_O.T)]
    dO = general(prog["dO^[1]"].target)
    backward = [(dC, dB * W_O), (dO, ColumnBlock(dC, (head - 1) * dv, dv))]
    backward += [generalised("d" + n + "^[1]") for n in ("A", "S", "V", "K", "Q")]
    dX = prog["dX"].target
    backward.append((dX, HeadSum(sp.MatAdd(*(general(prog["d" + n + "^[1]"].target) * general(mha.inputs[f"W_{n}^[1]"])
                                             for n in "QKV")))))
    backward += [generalised(f"dW_{n}^[1]") for n in "QKV"]
    backward.append((sp.MatrixSymbol("dW_O", *W_O.shape), dB.T * C))
    _check_general(prog, forward + backward, heads, {v: k for k, v in joint.items()})
    return forward, backward


def _check_general(prog: Program, rows: list, heads: int, shared: dict) -> None:
    """Every general row at every head ``k`` is the program's own line (a sum over the heads, a concatenation: at
    ``n_head = heads``, term for term)."""
    def instance(expr, k):
        expr = at_head(expr, k, heads)
        expr = expr.xreplace({s: shared.get(at_head(s, k, heads), at_head(s, k, heads)) for s in expr.atoms(sp.MatrixSymbol)})
        return expr.xreplace({e: e.at(heads) for e in expr.atoms(_OverHeads)})

    for target, value in rows:
        for k in range(1, heads + 1) if head in target.free_symbols or f"^[{head}]" in target.name else (1,):
            lhs = instance(target, k)
            lhs = shared.get(lhs, lhs)
            if lhs not in shared.values() and lhs.name not in (d_.target.name for d_ in prog):
                raise SeqgradValueError("rows", str(target), f"a line of the program {prog.name!r}")
            line = next(d_ for d_ in prog if d_.target.name == lhs.name)
            got = instance(value, k)
            if set(sp.MatAdd.make_args(got)) != set(sp.MatAdd.make_args(line.value)) and sp.simplify(got - line.value) != 0:
                raise SeqgradValueError("rows", f"{target} = {value}", f"the program's line {line} at head {k}")


def over_heads(value, heads: int):
    """A sum over the heads of the engine's program (``dQ^[1] W_Q^[1] + dQ^[2] W_Q^[2] + ...``, at ``heads`` heads)
    as :class:`HeadSum`: head 1's terms written for head ``i``, summed over ``i = 1 .. n_head``; raises unless the
    sum written out at ``heads`` heads has exactly the program's terms."""
    terms = sp.MatAdd.make_args(value)
    first = [t_ for t_ in terms if any(s.name.endswith("^[1]") for s in t_.atoms(sp.MatrixSymbol))]
    per_head = [at_head(t_, head, None, 1) for t_ in first]
    general = HeadSum(per_head[0] if len(per_head) == 1 else sp.MatAdd(*per_head))
    if set(sp.MatAdd.make_args(general.at(heads))) != set(terms):
        raise SeqgradValueError("value", str(value), f"a sum over {heads} heads of one term per head and map")
    return general


#: The decoder block's backward pass at the level of its sublayers: the lines printed, by the program's names
DECODER_SUBLAYER_LINES = ("dB_mlp", "dPhi_mlp", "dZ_mlp", "dY_mlp", "dXhat_mlp", "dU_cross", "dB_cross", "dY_cross", "dZ", "dXhat_cross",
                          "dU_self", "dB_self", "dY_self", "dXhat_self", "dH")


def decoder_block_rows(heads: int = 2) -> list:
    """The backward pass of :func:`decoder_block_program` at the level of its sublayers, rows ``(target, value)``:
    each sublayer's output gradient, what it passes back to its LayerNorm (a sum over the heads for an attention:
    :func:`over_heads`, checked against the program at ``heads`` heads), the residual sums ``dU_cross``, ``dU_self``, ``dH``,
    and ``dZ``, the memory's gradient through the cross-attention's keys and values; the upstream ``G`` is ``dH'``."""
    block = decoder_block_program(heads=heads)
    dout = sp.MatrixSymbol("d" + block.output.name, *block.G.shape)
    rows = []
    for name in DECODER_SUBLAYER_LINES:
        line = block.program[name]
        value = line.value.xreplace({block.G: dout})
        if any("^[" in s.name for s in value.atoms(sp.MatrixSymbol)):
            value = over_heads(value, heads)
        rows.append((line.target, value))
    return rows
