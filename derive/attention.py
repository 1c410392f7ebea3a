"""Scaled dot-product attention, masks, multi-head attention, their gradients and permutation equivariance.

Conventions (seed 000 L620-L900): positions are rows, weights are stored
output x input and applied as ``X W^T``::

    Q = X W_Q^T,  K = X W_K^T,  V = X W_V^T          (T x d_k, T x d_k, T x d_v)
    S = Q K^T / sqrt(d_k) + M                         (T x T; M added before the softmax)
    A = softmax_rows(S),  O = A V                     (T x T, T x d_v)
    C = [O^[1] | ... | O^[h]],  B_att = C W_O^T       (multi-head)

Masks are additive matrices of 0 and -oo (seed 000 L784, L1231); a row with
every source masked is refused, never turned into NaN.
"""

from __future__ import annotations

import itertools
import random

import sympy as sp

from seqgrad import validate
from seqgrad.errors import SeqgradTypeError, SeqgradValueError, ShapeError

from .identity import Derivation, Identity, NumericResult, evaluate, numeric_sides
from .proof import Proof, proof_by, rational_zero
from .safe_parse import as_sympy

NEG_INF = -sp.oo


# --- inputs ------------------------------------------------------------------------------------

def symbol_matrix(name: str, rows: int, cols: int) -> sp.Matrix:
    """A matrix of real symbols ``name_{r,c}``; a name with its own index joins it (``w_K`` gives ``w_{K,r,c}``),
    so the LaTeX never has a double subscript."""
    base, _, index = name.rpartition("_") if "_" in name else (name, "", "")
    prefix = f"{base}_{{{index}," if index else f"{name}_{{"
    return sp.Matrix(rows, cols, lambda r, c: sp.Symbol(f"{prefix}{r},{c}}}", real=True))


def to_matrix(argument: str, value) -> sp.Matrix:
    """``value`` (a SymPy matrix, nested lists, or a flat list read as a column) as a Matrix.

    Every entry goes through :func:`derive.safe_parse.as_sympy`: text is parsed
    through the whitelist, never handed to ``sympify``.
    """
    if isinstance(value, sp.MatrixBase):
        return sp.Matrix(value)
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise SeqgradTypeError(argument, value, "a matrix (nested lists of numbers or SymPy expressions)")
    rows = list(value)
    nested = [hasattr(r, "__iter__") and not isinstance(r, (str, bytes)) for r in rows]
    if any(nested) and not all(nested):
        raise SeqgradTypeError(argument, value, "a matrix (nested lists of numbers or SymPy expressions)")
    entries = [[as_sympy(x, argument) for x in r] for r in rows] if all(nested) and rows else \
        [[as_sympy(x, argument)] for x in rows]
    if len({len(r) for r in entries}) > 1:
        raise SeqgradTypeError(argument, value, "a rectangular matrix (every row of the same length)")
    return sp.Matrix(entries)


def as_matrix(argument: str, value, shape: tuple[int, int]) -> sp.Matrix:
    """``value`` (nested lists or a SymPy matrix) as a Matrix of exactly ``shape``."""
    M = to_matrix(argument, value)
    if M.shape != tuple(shape):
        raise ShapeError(argument, M.shape, f"{shape[0]} x {shape[1]}")
    return M


# --- masks -------------------------------------------------------------------------------------

def causal_mask(T: int) -> sp.Matrix:
    """M_tj = 0 for j <= t and -oo for j > t (seed 000 L784; seed 001 l.170)."""
    T = validate.integer("T", T, minimum=1)
    return sp.Matrix(T, T, lambda t, j: 0 if j <= t else NEG_INF)


def padding_mask(valid) -> sp.Matrix:
    """M_tj = -oo where source j is padding (valid[j] false), else 0; every query row alike (seed 000 L1231)."""
    valid = list(valid)
    if not valid or not all(isinstance(v, bool) for v in valid):
        raise SeqgradValueError("valid", valid, "a non-empty list of True (real token) / False (padding)")
    T = len(valid)
    return sp.Matrix(T, T, lambda t, j: 0 if valid[j] else NEG_INF)


def combine_masks(*masks) -> sp.Matrix:
    """The sum of additive masks: a source is visible only if every mask allows it."""
    if not masks:
        raise SeqgradValueError("masks", masks, "at least one mask")
    shape = to_matrix("masks[0]", masks[0]).shape
    out = sp.zeros(*shape)
    for n, M in enumerate(masks):
        M = check_mask(M, shape, f"masks[{n}]", allow_empty_rows=True)
        out = out + M
    return check_mask(out, shape, "combined mask")


def check_mask(M, shape: tuple[int, int], argument: str = "mask", allow_empty_rows: bool = False) -> sp.Matrix:
    """Validate an additive mask: the right shape, entries 0 or -oo, and at least one visible source per row."""
    M = as_matrix(argument, M, shape)
    bad = [x for x in M if not (x == 0 or x == NEG_INF)]
    if bad:
        raise SeqgradValueError(argument, bad[0], "mask entries 0 (visible) or -oo (masked), added before the softmax")
    if not allow_empty_rows:
        for t in range(M.rows):
            if all(x == NEG_INF for x in M.row(t)):
                raise SeqgradValueError(argument, f"row {t}", "at least one visible source in every row; a row with every "
                                                               "source masked has no softmax (0/0), it is refused rather than made NaN")
    return M


def softmax_rows(S: sp.Matrix, M: sp.Matrix | None = None) -> sp.Matrix:
    """Row softmax of S + M; masked sources get exactly 0 and the visible ones renormalise."""
    S = to_matrix("S", S)
    M = None if M is None else check_mask(M, S.shape, "M")
    T_q, T_k = S.shape
    A = sp.zeros(T_q, T_k)
    for t in range(T_q):
        visible = [j for j in range(T_k) if M is None or M[t, j] == 0]
        e = {j: sp.exp(S[t, j]) for j in visible}
        total = sp.Add(*e.values())
        for j in visible:
            A[t, j] = e[j] / total
    return A


# --- one head ----------------------------------------------------------------------------------

class SelfAttention(Derivation):
    """One scaled dot-product self-attention head on X (T x d_model).

    Every input defaults to a matrix of fresh symbols; pass numbers or SymPy
    expressions (``X=..., W_Q=...``) to specialise.  ``mask`` is an additive
    T x T matrix (see :func:`causal_mask`, :func:`padding_mask`).
    """

    def __init__(self, T: int, d_model: int, d_k: int, d_v: int | None = None, *, X=None, W_Q=None, W_K=None, W_V=None,
                 mask=None, scale=None, head: str = ""):
        self.T = validate.integer("T", T, minimum=1)
        self.d_model = validate.integer("d_model", d_model, minimum=1)
        self.d_k = validate.integer("d_k", d_k, minimum=1)
        self.d_v = validate.integer("d_v", d_k if d_v is None else d_v, minimum=1)
        tag = f"^{{[{head}]}}" if head else ""
        self.X = symbol_matrix("x", T, d_model) if X is None else as_matrix("X", X, (T, d_model))
        self.W_Q = symbol_matrix(f"w{tag}_Q", self.d_k, d_model) if W_Q is None else as_matrix("W_Q", W_Q, (self.d_k, d_model))
        self.W_K = symbol_matrix(f"w{tag}_K", self.d_k, d_model) if W_K is None else as_matrix("W_K", W_K, (self.d_k, d_model))
        self.W_V = symbol_matrix(f"w{tag}_V", self.d_v, d_model) if W_V is None else as_matrix("W_V", W_V, (self.d_v, d_model))
        self.M = None if mask is None else check_mask(mask, (T, T))
        self.scale = 1 / sp.sqrt(self.d_k) if scale is None else as_sympy(scale, "scale")
        self.Q, self.K, self.V, self.S, self.A, self.O = head_forward(self, self._block())

    def _block(self):
        """The head's program: :func:`derive.blocks.attention_program` at this head's sizes, mask and scale."""
        from .blocks import attention_program

        return attention_program(masked=self.M is not None, T_=self.T, d_=self.d_model, d_k_=self.d_k, d_v_=self.d_v,
                                 scale=self.scale)

    @property
    def parameters(self) -> dict[str, sp.Matrix]:
        return {"X": self.X, "W_Q": self.W_Q, "W_K": self.W_K, "W_V": self.W_V}

    def outputs(self) -> dict[str, sp.Matrix]:
        """The named intermediates Q, K, V, S, A, O."""
        return {"Q": self.Q, "K": self.K, "V": self.V, "S": self.S, "A": self.A, "O": self.O}

    def jacobian(self, wrt: str) -> sp.Matrix:
        """d vec(O) / d vec(wrt), both flattened row by row (wrt in X, W_Q, W_K, W_V)."""
        P = self._param(wrt)
        return sp.Matrix(list(self.O)).jacobian(list(P))

    def _param(self, wrt: str) -> sp.Matrix:
        validate.choice("wrt", wrt, tuple(self.parameters))
        return self.parameters[wrt]

    def upstream(self) -> sp.Matrix:
        """G = dL/dO as symbols g_{t,c} (T x d_v)."""
        return symbol_matrix("g", self.T, self.d_v)

    def backward(self, G: sp.Matrix | None = None) -> dict[str, sp.Matrix]:
        """The backward pass given G = dL/dO: the program of :func:`derive.blocks.attention_program`
        (derived by the rule table, every rule proved at symbolic size) evaluated at this head.

        dV = A^T G,  dA = G V^T,  dS = A o (dA - rowsum(dA o A)),  dQ = s dS K,  dK = s dS^T Q,
        dW_Q = dQ^T X,  dW_K = dK^T X,  dW_V = dV^T X,  dX = dQ W_Q + dK W_K + dV W_V   (s = the scale).
        The head's own Q, K, V, S, A are used as the values of the program's intermediates.
        """
        return head_backward(self, self._block(), G, ("W_Q", "W_K", "W_V", "X"))

    def gradient_by_differentiation(self, wrt: str, G: sp.Matrix | None = None) -> sp.Matrix:
        """sum_{t,c} G_tc dO_tc / d wrt, by direct differentiation (the reference for :meth:`backward`)."""
        G = self.upstream() if G is None else G
        P = self._param(wrt)
        L = sum((G[t, c] * self.O[t, c] for t in range(self.T) for c in range(self.d_v)), sp.Integer(0))
        return P.applyfunc(lambda p: sp.diff(L, p))

    def rows(self) -> list:
        """The head's definitions: Q, K, V, the scaled scores S, the row softmax A (entry by entry), O = A V."""
        from .rules import Masked, RowSoftmax

        T, dm, dk, dv = self.T, self.d_model, self.d_k, self.d_v
        X, Q, K, V = (sp.MatrixSymbol(n, T, w) for n, w in (("X", dm), ("Q", dk), ("K", dk), ("V", dv)))
        W = {n: sp.MatrixSymbol(f"W_{n}", w, dm) for n, w in (("Q", dk), ("K", dk), ("V", dv))}
        S, A, O = sp.MatrixSymbol("S", T, T), sp.MatrixSymbol("A", T, T), sp.MatrixSymbol("O", T, dv)
        scores = sp.MatMul(self.scale, Q, K.T)
        a, t, s, u = sp.IndexedBase("A"), *sp.symbols("t s u", integer=True, nonnegative=True)
        e = sp.IndexedBase("S" if self.M is None else "E")
        return [(Q, X * W["Q"].T), (K, X * W["K"].T), (V, X * W["V"].T), (S, scores),
                (A, RowSoftmax(S if self.M is None else Masked(S, sp.MatrixSymbol("M", T, T)))), (O, A * V),
                (a[t, s], sp.exp(e[t, s]) / sp.Sum(sp.exp(e[t, u]), (u, 0, T - 1)),
                 ("for ", sp.Eq(sp.Symbol("T"), T, evaluate=False))
                 + (() if self.M is None else (", with the masked scores ", sp.Eq(sp.Symbol("E"), sp.Symbol("S") + sp.Symbol("M"), evaluate=False))))]

    def __repr__(self) -> str:
        return f"SelfAttention(T={self.T}, d_model={self.d_model}, d_k={self.d_k}, d_v={self.d_v}, masked={self.M is not None})"


# --- several heads -----------------------------------------------------------------------------

def head_widths(d_model: int, heads) -> list[tuple[int, int]]:
    """Per-head (d_k, d_v): an int h splits d_model evenly (d_model must divide); a list gives widths explicitly."""
    d_model = validate.integer("d_model", d_model, minimum=1)
    if isinstance(heads, bool):
        raise SeqgradTypeError("heads", heads, "an int or a list of (d_k, d_v) pairs")
    if isinstance(heads, int):
        h = validate.integer("heads", heads, minimum=1)
        if d_model % h:
            raise SeqgradValueError("heads", h, f"a divisor of d_model={d_model} (d_k = d_v = d_model / heads), or give "
                                                "per-head widths explicitly, e.g. heads=[(3, 3), (3, 3)] as the course example does")
        return [(d_model // h, d_model // h)] * h
    try:
        widths = [(validate.integer("d_k", a, minimum=1), validate.integer("d_v", b, minimum=1)) for a, b in heads]
    except (TypeError, ValueError) as exc:
        if isinstance(exc, SeqgradValueError):
            raise
        raise SeqgradTypeError("heads", heads, "an int or a list of (d_k, d_v) pairs") from None
    if not widths:
        raise SeqgradValueError("heads", heads, "at least one head")
    return widths


class MultiHeadAttention(Derivation):
    """h heads with arbitrary widths, feature concatenation C and the output projection B_att = C W_O^T."""

    def __init__(self, T: int, d_model: int, heads, *, X=None, weights=None, W_O=None, mask=None, d_out: int | None = None):
        self.widths = head_widths(d_model, heads)
        self.T, self.d_model = validate.integer("T", T, minimum=1), d_model
        X = symbol_matrix("x", T, d_model) if X is None else as_matrix("X", X, (T, d_model))
        weights = weights or [{} for _ in self.widths]
        if len(weights) != len(self.widths):
            raise SeqgradValueError("weights", len(weights), f"one dict of W_Q, W_K, W_V per head ({len(self.widths)})")
        self.heads = [SelfAttention(T, d_model, dk, dv, X=X, mask=mask, head=str(i + 1), **w)
                      for i, ((dk, dv), w) in enumerate(zip(self.widths, weights))]
        self.X = X
        width = sum(dv for _, dv in self.widths)
        self.d_out = d_model if d_out is None else validate.integer("d_out", d_out, minimum=1)
        self.W_O = symbol_matrix("w_O", self.d_out, width) if W_O is None else as_matrix("W_O", W_O, (self.d_out, width))
        # the concatenation and the output projection: the program's lines (derive.blocks.concat_program) at the
        # heads' own outputs, as each head is a view of the attention program
        block = self.block()
        self.C, self.B = block.forward_at(dict({f"O^[{n + 1}]": h.O for n, h in enumerate(self.heads)}, W_O=self.W_O),
                                          ("C", "B"))

    def block(self):
        """The program of the concatenation and output projection at these widths (:func:`derive.blocks.concat_program`)."""
        from .blocks import concat_program

        return concat_program([dv for _, dv in self.widths], self.T, self.d_out)

    def backward(self, G: sp.Matrix | None = None) -> dict[str, sp.Matrix]:
        """The concatenation's backward pass at these heads: ``dW_O = G^T C`` and each head's ``dO^[n]``, its
        columns of ``dC = G W_O`` (the program's lines, from the rule table); G defaults to symbols g."""
        G = symbol_matrix("g", self.T, self.d_out) if G is None else as_matrix("G", G, (self.T, self.d_out))
        block = self.block()
        values = dict({f"O^[{n + 1}]": h.O for n, h in enumerate(self.heads)}, W_O=self.W_O)
        env = {block.inputs[name]: value for name, value in values.items()}
        env[block.G] = G
        names = [*(f"O^[{n + 1}]" for n in range(len(self.heads))), "W_O"]
        return dict(zip(names, (sp.Matrix(v) for v in block.program.evaluate([block.gradients[n] for n in names], env))))

    def rows(self) -> list:
        """B_att = [O^[1] | ... | O^[h]] W_O^T: the heads side by side, then the output projection."""
        from .rules import HConcat

        heads = [sp.MatrixSymbol(f"O^[{n + 1}]", self.T, dv) for n, (_, dv) in enumerate(self.widths)]
        W_O = sp.MatrixSymbol("W_O", self.d_out, self.W_O.cols)
        return [(sp.MatrixSymbol("B_att", self.T, self.d_out), sp.MatMul(HConcat(*heads), W_O.T),
                 ("with ", W_O, f" of size {self.d_out} × {self.W_O.cols}"))]

    def __repr__(self) -> str:
        return f"MultiHeadAttention(T={self.T}, d_model={self.d_model}, heads={self.widths}, d_out={self.d_out})"


# --- permutation equivariance ------------------------------------------------------------------

def permutation_matrix(perm) -> sp.Matrix:
    """Pi with (Pi H)_t = H_{perm[t]}."""
    perm = list(perm)
    if sorted(perm) != list(range(len(perm))):
        raise SeqgradValueError("perm", perm, "a permutation of 0 .. T-1")
    P = sp.zeros(len(perm), len(perm))
    for t, s in enumerate(perm):
        P[t, s] = 1
    return P


class Equivariance(Derivation):
    """A(Pi H) = Pi A(H) Pi^T and O(Pi H) = Pi O(H) (seed 000 L1175), for every permutation of T positions.

    With ``positions`` a fixed matrix P is added after permuting (H -> Pi H + P);
    with ``causal`` the causal mask is applied.  Both break the identity in general.
    """

    def __init__(self, T: int = 3, d_model: int = 2, d_k: int = 1, d_v: int = 1, *, positions=None, causal: bool = False, values=None):
        self.T, self.positions, self.causal = T, positions, causal
        mask = causal_mask(T) if causal else None
        self.H = symbol_matrix("h", T, d_model)
        base = SelfAttention(T, d_model, d_k, d_v, X=self.H, mask=mask)
        self.W = dict(W_Q=base.W_Q, W_K=base.W_K, W_V=base.W_V)
        self.P = sp.zeros(T, d_model) if positions is None else as_matrix("positions", positions, (T, d_model))
        self.values = values
        self.mask = mask
        self._residuals: dict = {}

    def residuals(self, perm) -> tuple[sp.Matrix, sp.Matrix]:
        """A(Pi H) - Pi A(H) Pi^T and O(Pi H) - Pi O(H) for the permutation ``perm`` (built once per permutation:
        a counterexample's proof and its numeric check read the same residuals)."""
        perm = tuple(perm)
        if perm not in self._residuals:
            self._residuals[perm] = self._residuals_now(perm)
        return self._residuals[perm]

    def _residuals_now(self, perm) -> tuple[sp.Matrix, sp.Matrix]:
        Pi = permutation_matrix(perm)
        H = self.H if self.values is None else self.H.subs(self.values)
        W = {n: (M if self.values is None else M.subs(self.values)) for n, M in self.W.items()}
        plain = SelfAttention(self.T, H.cols, W["W_Q"].rows, W["W_V"].rows, X=H + self.P, mask=self.mask, **W)
        permuted = SelfAttention(self.T, H.cols, W["W_Q"].rows, W["W_V"].rows, X=Pi * H + self.P, mask=self.mask, **W)
        return permuted.A - Pi * plain.A * Pi.T, permuted.O - Pi * plain.O

    def permutations(self):
        return list(itertools.permutations(range(self.T)))

    VECTORS = frozenset({"H"})

    def rows(self) -> list:
        """A(Pi H) = Pi A(H) Pi^T and O(Pi H) = Pi O(H), for every permutation matrix Pi."""
        Pi, PiT, H = sp.symbols("Pi Pi^T H", commutative=False)
        A, O = sp.Function("A", commutative=False), sp.Function("O", commutative=False)
        return [(A(Pi * H), Pi * A(H) * PiT, "for every permutation matrix"), (O(Pi * H), Pi * O(H))]

    def __repr__(self) -> str:
        return f"Equivariance(T={self.T}, positions={self.positions is not None}, causal={self.causal})"


def head_forward(head, block) -> list:
    """Q, K, V, S, A, O of an attention head of explicit size (:class:`SelfAttention`,
    :class:`derive.decoder.CrossAttention`): ``block``'s forward lines at the head's inputs and mask (a view of the
    one program; masked sources get exactly 0, as exp(-oo) = 0)."""
    values = dict(head.parameters, **({"M": head.M} if head.M is not None else {}))
    return block.forward_at(values, ("Q", "K", "V", "S", "A", "O"))


def head_backward(head, block, G, wrt) -> dict[str, sp.Matrix]:
    """``block``'s backward pass (a :class:`derive.blocks.BlockProgram`) at an attention head of explicit size
    (:class:`SelfAttention`, :class:`derive.decoder.CrossAttention`): the head's inputs and mask as the program's,
    its own Q, K, V, S, A as the intermediates, the upstream ``G`` (default: the head's symbols g); the adjoint of
    each intermediate and the gradient of each input in ``wrt``."""
    G = head.upstream() if G is None else as_matrix("G", G, (head.T, head.d_v))
    values = dict(head.parameters, **({"M": head.M} if head.M is not None else {}))
    return block.backward_at(values, G, {n: getattr(head, n) for n in ("V", "A", "S", "Q", "K")}, wrt)


def _max_abs(M: sp.Matrix) -> float:
    """The largest |entry| of a matrix of exact numbers, each evaluated with mpmath at 30 digits (:func:`evaluate`)."""
    return max((abs(value) for value in evaluate(list(M), {})), default=0.0)


def _where_largest(M: sp.Matrix, what: str, column: str) -> str:
    """``"0.62 in the weights A (entry t = 1, s = 2)"``: the largest |entry| of a residual of exact numbers, in which
    matrix and at which entry (0-based: row t, column named ``column``), as a counterexample's note states it."""
    values = evaluate(list(M), {})
    k = max(range(len(values)), key=lambda n: abs(values[n]))
    return f"{abs(values[k]):.3g} in {what} (entry t = {k // M.cols}, {column} = {k % M.cols})"


# --- concatenation of heads at symbolic widths ------------------------------------------------------

def _concat_symbols():
    """The program of two heads of symbolic widths a, b (:func:`derive.blocks.concat_program`) and its inputs."""
    from .blocks import concat_program

    a, b = sp.symbols("a b", integer=True, positive=True)
    block = concat_program([a, b])
    return block, block.inputs["O^[1]"], block.inputs["O^[2]"], block.inputs["W_O"], a, b


def concat_statement():
    """The program's ``B = [O^[1] | O^[2]] W_O^T`` (its forward lines, expanded) and the statement
    ``O^[1] W_O[:, :a]^T + O^[2] W_O[:, a:a+b]^T``, as matrix expressions of symbolic shape."""
    from .rules import ColumnBlock

    block, O1, O2, W_O, a, b = _concat_symbols()
    return (block.program.expand(block.output, kinds=("forward",)),
            sp.MatAdd(O1 * ColumnBlock(W_O, 0, a).T, O2 * ColumnBlock(W_O, a, b).T, evaluate=False))


def _split_blocks(expr):
    """A sum over the columns of a concatenation, ``sum_j Piecewise((f_k(j - s_k), s_k <= j < s_k + w_k), ...)``
    with the pieces the blocks in order (what :meth:`derive.rules.HConcat._entry` writes), as one sum per block,
    ``sum_k sum_{j=0}^{w_k - 1} f_k(j)``: the column range split at the blocks' offsets."""
    def split(S):
        (j, lo, hi), = S.limits
        pieces = S.function.args
        out, start = [], lo
        for value, cond in pieces:
            bounds = [c for c in (cond.args if isinstance(cond, sp.And) else (cond,))]
            low = next((c.rhs for c in bounds if isinstance(c, sp.GreaterThan) and c.lhs == j), lo)
            high = next((c.rhs for c in bounds if isinstance(c, sp.StrictLessThan) and c.lhs == j), hi + 1)
            if sp.simplify(low - start) != 0:
                return S  # not the blocks of one concatenation in order: left as it is
            out.append(sp.Sum(value.xreplace({j: j + low}), (j, 0, high - low - 1)))
            start = high
        return sp.Add(*out) if sp.simplify(start - (hi + 1)) == 0 else S

    return expr.replace(lambda e: isinstance(e, sp.Sum) and len(e.limits) == 1 and isinstance(e.function, sp.Piecewise), split)


def concat_residual():
    """Entry (t, c) of both sides: the program's B, its column sum split at a (the definition of [ | ]), minus
    the statement's."""
    from .rules import index_form

    program, stated = concat_statement()
    return _split_blocks(index_form(program, _t, _c)) - index_form(stated, _t, _c)


# --- permutation equivariance at symbolic T ---------------------------------------------------------

def _symbolic_head():
    T_, d_, dk, dv = sp.symbols("T d d_k d_v", integer=True, positive=True)
    X = sp.MatrixSymbol("X", T_, d_)
    W_Q, W_K, W_V = sp.MatrixSymbol("W_Q", dk, d_), sp.MatrixSymbol("W_K", dk, d_), sp.MatrixSymbol("W_V", dv, d_)
    from .rules import RowSoftmax

    A = RowSoftmax(sp.MatMul(1 / sp.sqrt(dk), X * W_Q.T, (X * W_K.T).T))
    return A, A * (X * W_V.T)


_pi = sp.Function("pi")
_t, _s, _c = sp.symbols("t s c", integer=True, nonnegative=True)


def _permuted(expr):
    """X_tb -> X_pi(t)b: the rows of X permuted."""
    X = sp.IndexedBase("X")
    return expr.replace(lambda e: isinstance(e, sp.Indexed) and e.base == X, lambda e: X[_pi(e.indices[0]), e.indices[1]])


def _reindex(expr):
    """sum_r f(pi(r)) = sum_r f(r) when r occurs only as pi(r): pi is a bijection of the summation range."""
    def fix(S):
        f = S.function
        for (r, _, _) in S.limits:
            marker = sp.Dummy("r")
            g = f.replace(lambda e: isinstance(e, sp.Function) and e.func == _pi and e.args == (r,), lambda e: marker)
            if r not in g.free_symbols:
                f = g.xreplace({marker: r})
        return sp.Sum(f, *S.limits)

    return expr.replace(lambda e: isinstance(e, sp.Sum), fix)


def equivariance_statement():
    """(A(Pi X)_ts, O(Pi X)_tc) and (A(X)_pi(t)pi(s), O(X)_pi(t)c) as symbols of the statement."""
    A_, O_ = sp.Function("A"), sp.Function("O")
    PiX = sp.Symbol(r"\Pi X")
    X = sp.Symbol("X")
    return (sp.Tuple(sp.Indexed(sp.IndexedBase(A_(PiX)), _t, _s), sp.Indexed(sp.IndexedBase(O_(PiX)), _t, _c)),
            sp.Tuple(sp.Indexed(sp.IndexedBase(A_(X)), _pi(_t), _pi(_s)), sp.Indexed(sp.IndexedBase(O_(X)), _pi(_t), _c)))


def failure_statement(positions: bool):
    """A(Pi X + P)_ts vs A(X + P)_pi(t)pi(s) (positions), or the causal A_M(Pi X)_ts vs A_M(X)_pi(t)pi(s)."""
    A_ = sp.Function("A_M") if not positions else sp.Function("A")
    X, PiX, P = sp.Symbol("X"), sp.Symbol(r"\Pi X"), sp.Symbol("P")
    inner, moved = (PiX + P, X + P) if positions else (PiX, X)
    return (sp.Indexed(sp.IndexedBase(A_(inner)), _t, _s), sp.Indexed(sp.IndexedBase(A_(moved)), _pi(_t), _pi(_s)))


def equivariance_residuals() -> list:
    """A(Pi X)_ts - A(X)_pi(t)pi(s) and O(Pi X)_tc - O(X)_pi(t)c in index notation at symbolic T, reindexed by pi."""
    from .rules import index_form

    A, O = _symbolic_head()
    A_ts, O_tc = index_form(A, _t, _s), index_form(O, _t, _c)  # entry (pi(t), pi(s)): the same entry, its indices renamed
    return [_reindex(_permuted(A_ts) - A_ts.xreplace({_t: _pi(_t), _s: _pi(_s)})),
            _reindex(_permuted(O_tc) - O_tc.xreplace({_t: _pi(_t)}))]


# --- Var(q . k) = d_k -------------------------------------------------------------------------

def expectation(expr, variables) -> sp.Expr:
    """E[expr] for a polynomial in independent variables with E[x] = 0 and E[x^2] = 1.

    Higher moments stay as symbols mu_n (they do not enter second moments).
    """
    variables = set(variables)
    poly = sp.Poly(sp.expand(expr), *sorted(variables, key=lambda s: s.name))
    total = sp.Integer(0)
    for powers, coeff in poly.terms():
        term = coeff
        for n in powers:
            term *= {0: 1, 1: 0, 2: 1}.get(n, sp.Symbol(f"mu_{n}"))
        total += term
    return sp.expand(total)


def dot_product_variance(d_k: int) -> tuple[sp.Expr, list[sp.Symbol], list[sp.Symbol]]:
    """Var(q . k) = E[(q.k)^2] - E[q.k]^2 for independent zero-mean unit-variance coordinates."""
    d_k = validate.integer("d_k", d_k, minimum=1)
    qs = list(sp.symbols(f"q_0:{d_k}", real=True))
    ks = list(sp.symbols(f"k_0:{d_k}", real=True))
    s = sum((a * b for a, b in zip(qs, ks)), sp.Integer(0))
    var = expectation(s ** 2, qs + ks) - expectation(s, qs + ks) ** 2
    return var, qs, ks


def _monte_carlo_variance(d_k: int, rng: random.Random, n: int = 4000) -> NumericResult:
    samples = []
    for _ in range(n):
        samples.append(sum(rng.gauss(0, 1) * rng.gauss(0, 1) for _ in range(d_k)))
    mean = sum(samples) / n
    var = sum((x - mean) ** 2 for x in samples) / (n - 1)
    se = ((2 * d_k ** 2 + 6 * d_k) / n) ** 0.5  # Var of (q.k)^2 for Gaussian coordinates is 2 d^2 + 6 d
    return NumericResult([var, var / d_k], [float(d_k), 1.0], "statistical", 5 * se,
                         f"Monte Carlo with {n} Gaussian samples; tolerance 5 standard errors ({5 * se:.3g})")


# --- catalogue entries -------------------------------------------------------------------------

def identities() -> list[Identity]:
    """The attention entries of the catalogue (heavy statements are built on first use)."""
    from functools import lru_cache

    from .rules import index_proof

    out = []
    # masks are added before the softmax: exp(-oo) = 0 renormalises the visible sources
    T = 3
    z = symbol_matrix("s", T, T)
    M = combine_masks(causal_mask(T), padding_mask([True, True, False]))
    literal = sp.Matrix(T, T, lambda t, j: sp.exp(z[t, j] + M[t, j]) / sum(sp.exp(z[t, r] + M[t, r]) for r in range(T)))
    renorm = softmax_rows(z, M)
    S_, M_, m_ = sp.IndexedBase("S", real=True), sp.IndexedBase("M"), sp.IndexedBase("m", nonnegative=True)
    t_, j_, r_ = sp.symbols("t j r", integer=True, nonnegative=True)
    Tn = sp.Symbol("T", integer=True, positive=True)
    masked_general = sp.exp(S_[t_, j_] + M_[t_, j_]) / sp.Sum(sp.exp(S_[t_, r_] + M_[t_, r_]), (r_, 0, Tn - 1))
    renorm_general = m_[t_, j_] * sp.exp(S_[t_, j_]) / sp.Sum(m_[t_, r_] * sp.exp(S_[t_, r_]), (r_, 0, Tn - 1))

    def mask_residual():
        from .rules import expand_indexed

        return masked_general - expand_indexed(renorm_general, {m_: lambda *idx: sp.exp(M_[idx])})

    out.append(Identity(
        "attention-mask-before-softmax", "seed 000 L784, L1231; seed 001 l.170",
        "softmax(S + M)_tj = m_tj exp(S_tj) / sum_r m_tr exp(S_tr), m = exp(M) in {0, 1}: the visible sources renormalised, every T",
        masked_general, renorm_general, "simplify", index_proof(mask_residual, "exp(S + M) = exp(S) exp(M), symbolic T"),
        lambda rng: numeric_sides(literal, renorm, rng, low=-3, high=3), simplifier="index notation, symbolic T",
        scope="all T >= 1", assumptions=("M_tj in {0, -oo}, so m_tj = exp(M_tj) in {0, 1}",
                                         "every row keeps one visible source (else 0/0: refused)"),
        symbols_note="Numeric evidence: causal + padding mask at T = 3 with exp(-oo) = 0 against the renormalised weights."))

    # gradients of one head, closed-form backward pass against direct differentiation
    names = ("X", "W_Q", "W_K", "W_V")

    def flat(g):
        return g.reshape(g.rows * g.cols, 1)

    for name, mask, text, source in (
        ("attention-gradients", None, "", "seed 000 L747 (`S`, `A`, `O`); derived backward pass"),
        ("attention-gradients-causal", True, " with the causal mask", "seed 000 L784-799 (causal mask before the softmax: a masked `A_ts = 0`, so `dS_ts = 0`, and "
         "the backward pass is the unmasked one)"),
    ):
        @lru_cache(None)
        def grads(mask=mask):
            head = SelfAttention(2, 1, 1, 1, mask=causal_mask(2) if mask else None)
            back = head.backward()
            lhs = sp.Matrix.vstack(*[flat(back[n]) for n in names])
            rhs = sp.Matrix.vstack(*[flat(head.gradient_by_differentiation(n)) for n in names])
            return lhs, rhs

        def program_proof(mask=mask):
            from .blocks import attention_program, prove_program

            return prove_program(attention_program(masked=bool(mask)))

        def shown(mask=mask):
            from .blocks import attention_program

            block = attention_program(masked=bool(mask))
            lines = [d_ for d_ in block.program.definitions("backward") if d_.target.name in ("dV", "dA", "dS", "dQ", "dK")]
            return sp.Tuple(*[d_.target for d_ in lines]), sp.Tuple(*[d_.value for d_ in lines])

        out.append(Identity(
            name, source,
            f"backward pass{text}: dV = A^T G, dA = G V^T, dS = A o (dA - rowsum(dA o A)), dQ = dS K / sqrt(d_k), "
            "dK = dS^T Q / sqrt(d_k), dW = d(.)^T X, for every T, d, d_k, d_v",
            lambda shown=shown: shown()[0], lambda shown=shown: shown()[1], "simplify", program_proof,
            lambda rng, grads=grads: numeric_sides(grads()[0], grads()[1], rng, low=-1, high=1),
            simplifier="composition of the rule table's proved rules", scope="all T, d, d_k, d_v >= 1",
            assumptions=("rows are positions; weights applied as X W^T", "scale 1/sqrt(d_k)")
            + (("additive mask M of 0 and -oo, every row with a visible source",) if mask else ()),
            symbols_note="Numeric evidence: at T = 2, d_model = d_k = d_v = 1 the program evaluated exactly against "
                         "direct differentiation of sum G o O."))

    # multi-head with unequal widths: B_att = sum_i O^[i] W_O[:, block i]^T
    @lru_cache(None)
    def heads():
        mha = MultiHeadAttention(2, 3, [(1, 2), (2, 1)])
        blocks, start = [], 0
        for head, (_, dv) in zip(mha.heads, mha.widths):
            blocks.append(head.O * mha.W_O[:, start:start + dv].T)
            start += dv
        return mha.B, sum(blocks[1:], blocks[0])

    out.append(Identity(
        "attention-multihead-concat", "seed 000 L817-890; seed 001 l.63-67",
        "[O^[1] | O^[2]] W_O^T = O^[1] (W_O[:, :a])^T + O^[2] (W_O[:, a:a+b])^T for heads of any widths a, b and any T, d",
        lambda: concat_statement()[0], lambda: concat_statement()[1], "simplify",
        index_proof(concat_residual, "the program's B (derive.blocks.concat_program): column j < a of [O^[1] | O^[2]] "
                                     "is O^[1]'s, column a + j is O^[2]'s"),
        lambda rng: numeric_sides(heads()[0], heads()[1], rng, low=-1, high=1), simplifier="index notation, symbolic widths",
        scope="all T, d, a, b >= 1", assumptions=("W_O split by columns per head",),
        symbols_note="Numeric evidence: two heads of widths (d_k, d_v) = (1, 2), (2, 1) at T = 2, d_model = 3."))

    # permutation equivariance and its failures
    eq = Equivariance(3, 2, 1, 1)

    def equivariant():
        worst = []
        for perm in eq.permutations():
            rA, rO = eq.residuals(perm)
            worst += [e for e in list(rA) + list(rO) if sp.expand(e) != 0]
        return Proof(not worst, "simplification to zero (expand), all 6 permutations of T = 3", sp.Matrix(worst) if worst else sp.Integer(0))

    @lru_cache(None)
    def moved():
        Pi = permutation_matrix((2, 0, 1))
        base = SelfAttention(3, 2, 1, 1, X=eq.H, **eq.W)
        perm = SelfAttention(3, 2, 1, 1, X=Pi * eq.H, **eq.W)
        return sp.Matrix.hstack(perm.A, perm.O), sp.Matrix.hstack(Pi * base.A * Pi.T, Pi * base.O)

    out.append(Identity(
        "attention-permutation-equivariance", "seed 000 L1175; seed 001 l.87, task 24",
        "A(Pi X)_ts = A(X)_pi(t)pi(s) and O(Pi X)_tc = O(X)_pi(t)c, unmasked, no positions, every permutation pi, every T",
        lambda: equivariance_statement()[0], lambda: equivariance_statement()[1], "simplify",
        index_proof(lambda: equivariance_residuals(), "sum_r f(pi(r)) = sum_r f(r) for a bijection pi of 0..T-1"),
        lambda rng: numeric_sides(moved()[0], moved()[1], rng), simplifier="index notation, symbolic T, reindexing by pi",
        scope="all T, d, d_k, d_v >= 1", assumptions=("pi a bijection of {0, ..., T-1}", "no mask", "no positional encoding"),
        symbols_note="Numeric evidence: T = 3, one permutation, at random points."))

    point = {s: sp.Rational(n % 5 - 2, 2) + sp.Rational(1, 7) * (n % 3) for n, s in
             enumerate(list(eq.H) + list(eq.W["W_Q"]) + list(eq.W["W_K"]) + list(eq.W["W_V"]))}
    from .positional import Sinusoidal

    P = Sinusoidal(2).vector(0).T
    for t in (1, 2):
        P = P.col_join(Sinusoidal(2).vector(t).T)
    for name, kwargs, text in (
        ("attention-equivariance-fails-positions", dict(positions=P), "with positions added (H -> Pi H + P, sinusoidal P, d = 2)"),
        ("attention-equivariance-fails-causal", dict(causal=True), "with a causal mask"),
    ):
        broken = Equivariance(3, 2, 1, 1, values=point, **kwargs)

        def counterexample(broken=broken):
            rA, rO = broken.residuals((2, 0, 1))
            size = max(_max_abs(rA), _max_abs(rO))
            return Proof(size > 1e-6, "counterexample at an exact rational point, evaluated to 30 digits",
                         sp.Float(size, 6), "for the permutation (2, 0, 1) the two sides differ by up to "
                         + _where_largest(rA, "the weights A", "s") + " and by up to " + _where_largest(rO, "the outputs O", "c"))

        def numeric(rng, broken=broken):
            rA, rO = broken.residuals((2, 0, 1))
            return NumericResult([_max_abs(rA) + _max_abs(rO)], [0.0], "differs", None,
                                 "passes when the residual is NOT within tolerance of 0 (the identity must fail)")

        out.append(Identity(
            name, "seed 000 L1175-1177 (positions, causal mask break equivariance)",
            f"A(Pi H) != Pi A(H) Pi^T {text}", lambda kw=tuple(kwargs): failure_statement("positions" in kw)[0],
            lambda kw=tuple(kwargs): failure_statement("positions" in kw)[1],
            "counterexample", counterexample, numeric,
            relation="!=", simplifier="exact evaluation",
            scope="counterexample at T = 3 (one failure refutes the identity for positions / causal masks in general)",
            assumptions=("the permutation (2, 0, 1)", "an exact rational point")))

    dk = sp.Symbol("d_k", integer=True, positive=True)
    q_, k_ = sp.IndexedBase("q", real=True), sp.IndexedBase("k", real=True)
    a_, b_ = sp.symbols("a b", integer=True, nonnegative=True)
    Var = sp.Function("Var")
    dot = sp.Sum(q_[a_] * k_[a_], (a_, 0, dk - 1))

    def variance_residual():
        # E[(q.k)^2] = sum_a sum_b E[q_a q_b] E[k_a k_b] (q independent of k) = sum_a sum_b delta_ab delta_ab;
        # E[q.k] = sum_a E[q_a] E[k_a] = 0
        second = sp.Sum(sp.KroneckerDelta(a_, b_) * sp.KroneckerDelta(a_, b_), (b_, 0, dk - 1), (a_, 0, dk - 1))
        first = sp.Sum(sp.Integer(0) * q_[a_], (a_, 0, dk - 1))
        var = second - first ** 2
        return [var - dk, var / dk - 1]

    out.append(Identity(
        "attention-dot-variance", "seed 003 L39 ('division by `sqrt(d_k)` keeps the variance near one'); seed 000 L667-694",
        "Var(q . k) = d_k and Var(q . k / sqrt(d_k)) = 1 for independent zero-mean unit-variance coordinates, every d_k",
        sp.Tuple(Var(dot), Var(dot / sp.sqrt(dk))), sp.Tuple(dk, sp.Integer(1)), "simplify",
        index_proof(variance_residual, "E[q_a q_b] = E[k_a k_b] = delta_ab, E[q_a] = 0, q independent of k"),
        lambda rng: _monte_carlo_variance(4, rng), simplifier="expectation algebra in index notation, symbolic d_k",
        scope="all d_k >= 1, for a query independent of the key, their coordinates uncorrelated with mean 0 and variance 1",
        assumptions=("q_a, k_b independent", "E[q_a] = E[k_a] = 0", "E[q_a q_b] = E[k_a k_b] = delta_ab"),
        symbols_note="Numeric evidence: a Monte Carlo estimate at d_k = 4 (4000 Gaussian samples)."))
    return out


__all__ = ["SelfAttention", "MultiHeadAttention", "Equivariance", "causal_mask", "padding_mask", "combine_masks",
           "check_mask", "softmax_rows", "head_forward", "head_backward", "head_widths", "permutation_matrix", "expectation",
           "dot_product_variance", "evaluate"]
