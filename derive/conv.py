r"""The convolution layer of lecture 7 (seed 003, l.5-15): cross-correlation, its gradients, max-pooling, receptive fields.

The lecture writes the 2-D convolution of a k x k filter K over a feature map X as a cross-correlation
(seed 003 l.9)::

    (X * K)_ij = sum_{u=0}^{k-1} sum_{v=0}^{k-1} K_uv X_{i+u, j+v} + b

With stride s and zero padding P the input is X padded with P zeros on each side and output position
(i, j) reads ``X_{s i + u, s j + v}``; the output has ``floor((H + 2P - k) / s) + 1`` rows.

The same filter slides over the whole image (weight sharing, l.11), so with ``G_ij = dL/dY_ij`` its
gradient is a sum over every position::

    dL/dK_uv = sum_ij G_ij X_{s i + u, s j + v},     dL/db = sum_ij G_ij,
    dL/dX_mn = sum_uv K_uv Ghat_{m-u, n-v}           (stride 1; Ghat = G extended by zeros)
             = sum_uv K_{k-1-u, k-1-v} Ghat_{m-k+1+u, n-k+1+v}

the last line being a *full* cross-correlation of the zero-padded G with the flipped kernel.
:class:`Conv2d` derives these at symbolic size with ``IndexedBase`` and ``Sum`` (``diff`` of the
loss ``L = sum_ij G_ij Y_ij`` with respect to ``K[p, q]``, ``b`` and ``X[m, n]``, then ``doit``);
:class:`ExplicitConv` builds the layer at concrete sizes (1-D or 2-D, any stride and padding) from
matrices of symbols and proves that the formulas equal direct differentiation exactly.

Max-pooling (l.13) is cut off in the source: the line ends at ``\max_{0\le u,v`` and the text never
gives the window size or the stride.  Here it is the usual ``maxpool(X)_ij = max_{0<=u,v<p} X_{s i+u,
s j+v}``; its gradient routes ``G_ij`` to the position of the window's maximum.  At a tie the
derivative does not exist; PyTorch's ``max_pool2d`` sends the whole ``G_ij`` to the *first* maximal
entry of the window in row-major order (:func:`max_pool_routing` follows it).

Receptive field of a stack of convolutions with kernels k_l and strides s_l (l.15)::

    r_L = 1 + sum_{l=1}^{L} (k_l - 1) prod_{m=1}^{l-1} s_m        (r_l = r_{l-1} + (k_l - 1) j_{l-1}, j_l = j_{l-1} s_l)

Every rule here is the index-notation proof of the convolution primitive; it belongs in the rule table
(``derive/rules.py``) as the pullback of ``conv`` once that table exists.
"""

from __future__ import annotations

import functools
import itertools
from functools import cached_property, lru_cache

import sympy as sp

from seqgrad import runcache, validate
from seqgrad.errors import SeqgradTypeError, SeqgradValueError, ShapeError

from .identity import Derivation, Identity, NumericResult
from .latex_settings import Partial
from .proof import Proof, proof_by
from .safe_parse import as_sympy

# indices and sizes at symbolic size
i, j, u, v, m, n, p, q = sp.symbols("i j u v m n p q", integer=True, nonnegative=True)
k, s, H_o, W_o = sp.symbols("k s H_o W_o", integer=True, positive=True)
X, K, G, Ghat = sp.IndexedBase("X"), sp.IndexedBase("K"), sp.IndexedBase("G"), sp.IndexedBase("Ghat")
b = sp.Symbol("b", real=True)


def _zero_extended(piece):
    """``Piecewise((G[a, c] * rest, 0 <= a < H_o and 0 <= c < W_o), (0, True))`` is ``Ghat[a, c] * rest``."""
    (value, cond), (otherwise, _) = piece.args
    entries = [f for f in sp.Mul.make_args(value) if isinstance(f, sp.Indexed) and f.base == G]
    if otherwise != 0 or len(entries) != 1:
        raise SeqgradValueError("piecewise", str(piece)[:80], "a zero-extension of G")
    a, c = entries[0].indices
    in_range = sp.And(a >= 0, c >= 0, H_o >= a + 1, W_o >= c + 1)
    if set(sp.And.make_args(cond)) != set(sp.And.make_args(in_range)):
        raise SeqgradValueError("piecewise", str(cond), f"the condition that ({a}, {c}) is an output position")
    return value.xreplace({entries[0]: Ghat[a, c]})


class Dilated(sp.Expr):
    """``Ghat^(s)``: the array ``array`` dilated by the stride s and extended by zeros: entry ``s o`` (per axis) is
    ``array_o``, every other entry 0 (s - 1 zeros between two entries, zeros outside).  The label of an
    ``IndexedBase``, so ``IndexedBase(Dilated(G, s))[a, c]`` is its entry (a, c); at s = 1 it is ``Ghat``."""

    is_commutative = True

    def __new__(cls, array, stride):
        if not isinstance(array, sp.IndexedBase):
            raise SeqgradTypeError("array", array, "an IndexedBase (the upstream gradient G)")
        return sp.Expr.__new__(cls, array, as_sympy(stride, "stride"))

    @property
    def array(self) -> sp.IndexedBase:
        return self.args[0]

    @property
    def stride(self) -> sp.Basic:
        return self.args[1]

    def _latex(self, printer):
        return r"\hat{%s}^{(%s)}" % (printer._print(self.array.label), printer._print(self.stride))

    def _sympystr(self, printer):
        return f"{printer._print(self.array.label)}hat^({printer._print(self.stride)})"


def _flat_sum(expr):
    """``Sum(a * Sum(f, *inner), *outer)`` as the summand ``a * f`` and the limits ``outer + inner`` (the inner
    limits free of the outer variables)."""
    limits = []
    while isinstance(expr, sp.Sum):
        limits += list(expr.limits)
        factors = sp.Mul.make_args(expr.function)
        sums = [f for f in factors if isinstance(f, sp.Sum)]
        outer = [lim[0] for lim in limits]
        if len(sums) > 1 or any(bound.has(*outer) for inner in sums for lim in inner.limits for bound in lim[1:]):
            raise SeqgradValueError("raw", str(expr)[:80], "one sum inside the sum over the output positions, "
                                                           "its limits free of the output indices")
        rest = sp.Mul(*[f for f in factors if f not in sums])
        expr = sp.Sum(rest * sums[0].function, *sums[0].limits) if sums else expr.function
    return expr, limits


def dilated_input_gradient(raw, stride, upstream: sp.IndexedBase = G):
    """The input gradient with stride s from the raw derivative of ``L = sum_o G_o Y_o`` at an input entry x:
    ``sum_o G_o sum_w [x = s o + c(w)] K_w`` (deltas, as ``diff`` leaves them).  The sums over the output
    positions o are taken first: ``sum_o G_o prod_a [x_a = s o_a + c_a] = Ghat^(s)_{x - c}`` (entry s o of the
    dilated G is G_o, every other 0: :class:`Dilated`), leaving ``sum_w K_w Ghat^(s)_{x - c(w)}`` -- the
    upstream gradient dilated by the stride, correlated with the kernel.  Each output index of G must be
    summed from 0 and met by exactly one delta whose index moves by s with it."""
    body, limits = _flat_sum(raw)
    entries = [f for f in sp.Mul.make_args(body) if isinstance(f, sp.Indexed) and f.base == upstream]
    summed = {lim[0]: lim for lim in limits}
    if len(entries) != 1 or not all(o in summed and summed[o][1] == 0 for o in entries[0].indices):
        raise SeqgradValueError("raw", str(raw)[:80], f"one entry of {upstream} at output positions summed from 0")
    outputs, st = entries[0].indices, as_sympy(stride, "stride")
    rest, at = [], {}
    for f in sp.Mul.make_args(body):
        if f is entries[0]:
            continue
        moved = [o for o in outputs if isinstance(f, sp.KroneckerDelta) and (f.args[0] - f.args[1]).has(o)]
        if not moved:
            rest.append(f)
            continue
        d = sp.expand(f.args[0] - f.args[1])
        c = d.coeff(moved[0])
        if len(moved) != 1 or moved[0] in at or sp.expand(c ** 2 - st ** 2) != 0:
            raise SeqgradValueError("raw", str(f), f"a delta [x = {st}*o + c] of one output index o")
        at[moved[0]] = sp.expand(-st / c * d + st * moved[0])  # x - c, with d = +-(x - s o - c)
    if set(at) != set(outputs) or any(e.has(*outputs) for e in at.values()):
        raise SeqgradValueError("raw", str(raw)[:80], "one delta per output index of " + str(upstream))
    entry = sp.IndexedBase(Dilated(upstream, st))[tuple(at[o] for o in outputs)]
    left = [lim for lim in limits if lim[0] not in outputs]
    return sp.Sum(sp.Mul(*rest) * entry, *left) if left else sp.Mul(*rest) * entry


def _drop_range_conditions(expr):
    """After ``diff(...).doit()`` SymPy guards each collapsed delta with "index in range"; here it always is."""
    return expr.replace(lambda e: isinstance(e, sp.Piecewise), lambda e: e.args[0][0])


def output_size(H, k_size, stride=1, padding=0):
    """``floor((H + 2P - k) / s) + 1`` output positions along one axis (concrete or symbolic)."""
    if all(isinstance(a, int) for a in (H, k_size, stride, padding)):
        H = validate.integer("H", H, minimum=1)
        k_size = validate.integer("kernel", k_size, minimum=1)
        stride = validate.integer("stride", stride, minimum=1)
        padding = validate.integer("padding", padding, minimum=0)
        if k_size > H + 2 * padding:
            raise SeqgradValueError("kernel", k_size, f"at most the padded input size H + 2P = {H} + 2*{padding} = {H + 2 * padding}")
        return (H + 2 * padding - k_size) // stride + 1
    H, k_size, stride, padding = (as_sympy(v, a) for v, a in ((H, "H"), (k_size, "kernel"), (stride, "stride"), (padding, "padding")))
    return sp.floor((H + 2 * padding - k_size) / stride) + 1


def _once_per_stride(method):
    """A derivation of :class:`Conv2d` computed once per run (:mod:`seqgrad.runcache`) for each stride: the notes,
    the catalogue and the checks all ask for the same gradients."""
    @functools.wraps(method)
    def shared(self):
        return runcache.once((f"Conv2d.{method.__name__}", self.stride), lambda: method(self))

    return shared


class Conv2d(Derivation):
    """The 2-D convolution of the lecture at symbolic size: ``Y_ij = sum_uv K_uv X_{s i+u, s j+v} + b``.

    ``stride`` is an integer or the symbol ``s``.  The gradients are derived by differentiating
    ``L = sum_{i<H_o, j<W_o} G_ij Y_ij`` (G = dL/dY) with respect to ``K[p, q]``, ``b`` and ``X[m, n]``.
    """

    def __init__(self, stride=1):
        self.stride = stride if isinstance(stride, sp.Basic) else validate.integer("stride", stride, minimum=1)
        st = self.stride
        self.Y = sp.Sum(K[u, v] * X[st * i + u, st * j + v], (u, 0, k - 1), (v, 0, k - 1)) + b
        self.L = sp.Sum(G[i, j] * self.Y, (i, 0, H_o - 1), (j, 0, W_o - 1))

    @_once_per_stride
    def grad_K(self):
        """``dL/dK_pq = sum_ij G_ij X_{s i+p, s j+q}``: the weight-sharing sum over every position."""
        return _drop_range_conditions(sp.diff(self.L, K[p, q]).doit())

    @_once_per_stride
    def grad_b(self):
        """``dL/db = sum_ij G_ij``."""
        return sp.diff(self.L, b).doit()

    def grad_X_raw(self):
        """``dL/dX_mn`` as differentiation leaves it: deltas ``[m = s i + u][n = s j + v]`` inside the sums."""
        return sp.diff(self.L, X[m, n])

    @_once_per_stride
    def grad_X(self):
        """``dL/dX_mn = sum_uv K_uv Ghat_{m-u, n-v}`` (stride 1), derived: the deltas of :meth:`grad_X_raw`
        are summed over i, j first, which picks ``i = m - u``, ``j = n - v`` when that output position exists;
        ``Ghat`` is G extended by zeros, exactly the "exists" condition SymPy attaches.  With a stride s > 1 the
        sum over i, j picks ``s i = m - u``, ``s j = n - v``: ``sum_uv K_uv Ghat^(s)_{m-u, n-v}``, G dilated by
        the stride (:func:`dilated_input_gradient`)."""
        inner = sp.diff(self.Y, X[m, n])  # Sum(delta delta K, (u), (v))
        flat = sp.Sum(G[i, j] * inner.function, (i, 0, H_o - 1), (j, 0, W_o - 1), *inner.limits)
        if self.stride != 1:
            return dilated_input_gradient(flat, self.stride)
        return flat.doit().replace(lambda e: isinstance(e, sp.Piecewise), _zero_extended)

    @_once_per_stride
    def grad_X_flipped(self):
        """The same sum reindexed ``u -> k-1-u``, ``v -> k-1-v``: a full cross-correlation with the flipped kernel."""
        return self.grad_X().change_index(u, k - 1 - u).change_index(v, k - 1 - v)

    def rows(self) -> list:
        """Y, and the gradients for K, b and (stride 1) X, the last also as a full correlation with the flipped
        kernel; with a stride the input gradient is derived at concrete sizes (:class:`ExplicitConv`)."""
        from .latex_settings import Partial

        rows = [(sp.Symbol("Y_ij"), self.Y), (Partial(sp.Symbol("K_pq")), self.grad_K()), (Partial(sp.Symbol("b")), self.grad_b())]
        if self.stride == 1:
            rows.append((Partial(sp.Symbol("X_mn")), [self.grad_X(), self.grad_X_flipped()]))
        return rows

    def __repr__(self) -> str:
        return f"Conv2d(stride={self.stride})"


# ----------------------------------------------------------------------------- concrete sizes

def _grid(shape):
    return list(itertools.product(*[range(d) for d in shape]))


def _symbols(name: str, shape) -> dict:
    return {idx: sp.Symbol(f"{name}_{{{','.join(map(str, idx))}}}", real=True) for idx in _grid(shape)}


class ExplicitConv(Derivation):
    """A 1-D or 2-D convolution at concrete sizes, entries as symbols (x, k, b, g).

    ``size`` is the input shape (``(W,)`` or ``(H, W)``), ``kernel`` the kernel shape; ``stride`` and
    ``padding`` apply to every axis.  :meth:`by_differentiation` is ``sympy.diff`` of ``L = sum G o Y``;
    :meth:`by_formula` evaluates the lecture's gradient formulas (module docstring).
    """

    def __init__(self, size, kernel, *, stride: int = 1, padding: int = 0):
        size, kernel = tuple(size), tuple(kernel)
        if len(size) not in (1, 2) or len(kernel) != len(size):
            raise ShapeError("kernel", kernel, f"one size per input axis, like the input {size} (1-D or 2-D)")
        self.stride = validate.integer("stride", stride, minimum=1)
        self.padding = validate.integer("padding", padding, minimum=0)
        self.size = tuple(validate.integer("size", d, minimum=1) for d in size)
        self.kernel = tuple(validate.integer("kernel", d, minimum=1) for d in kernel)
        self.out = tuple(output_size(d, kd, self.stride, self.padding) for d, kd in zip(self.size, self.kernel))
        self.x, self.k, self.g = _symbols("x", self.size), _symbols("k", self.kernel), _symbols("g", self.out)
        self.b = sp.Symbol("b", real=True)

    def x_padded(self, idx):
        """The zero-padded input: ``x`` shifted by P, 0 outside."""
        src = tuple(a - self.padding for a in idx)
        return self.x.get(src, sp.Integer(0))

    @cached_property
    def Y(self) -> dict:
        st = self.stride
        return {o: sp.Add(*[self.k[w] * self.x_padded(tuple(st * a + c for a, c in zip(o, w))) for w in _grid(self.kernel)]) + self.b
                for o in _grid(self.out)}

    @cached_property
    def L(self):
        return sp.Add(*[self.g[o] * self.Y[o] for o in self.Y])

    def by_differentiation(self) -> dict[str, dict]:
        return {"K": {w: sp.diff(self.L, s_) for w, s_ in self.k.items()}, "b": {(): sp.diff(self.L, self.b)},
                "X": {c: sp.diff(self.L, s_) for c, s_ in self.x.items()}}

    def by_formula(self) -> dict[str, dict]:
        """dK_w = sum_o g_o x_{s o + w} (padded x); db = sum_o g_o; dX = the full cross-correlation of the
        stride-dilated, zero-extended G with the flipped kernel, cropped by the padding."""
        st, P = self.stride, self.padding
        dK = {w: sp.Add(*[self.g[o] * self.x_padded(tuple(st * a + c for a, c in zip(o, w))) for o in self.g]) for w in self.k}
        db = {(): sp.Add(*self.g.values())}

        def g_hat(idx):  # G dilated by the stride (s - 1 zeros between entries) and extended by zeros
            if any(a % st for a in idx):
                return sp.Integer(0)
            return self.g.get(tuple(a // st for a in idx), sp.Integer(0))

        flipped = {w: self.k[tuple(kd - 1 - c for kd, c in zip(self.kernel, w))] for w in self.k}
        dX = {}
        for c in self.x:
            padded = tuple(a + P for a in c)  # position in the padded input
            dX[c] = sp.Add(*[flipped[w] * g_hat(tuple(a - kd + 1 + ww for a, kd, ww in zip(padded, self.kernel, w)))
                             for w in self.k])
        return {"K": dK, "b": db, "X": dX}

    def residuals(self) -> list:
        d, f = self.by_differentiation(), self.by_formula()
        return [sp.expand(d[name][key] - f[name][key]) for name in d for key in d[name]]

    def rows(self) -> list:
        return Conv2d(self.stride).rows()

    def __repr__(self) -> str:
        return f"ExplicitConv(size={self.size}, kernel={self.kernel}, stride={self.stride}, padding={self.padding})"


# ----------------------------------------------------------------------------- max-pooling

def max_pool_routing(values, pool: int, stride: int | None = None) -> list[list[tuple[int, int]]]:
    """For a 2-D array of numbers: the input position each output's gradient goes to.

    ``maxpool(X)_ij = max_{0<=u,v<p} X_{s i+u, s j+v}``; the gradient G_ij goes to the argmax of
    its window, and at a tie to the first maximal entry in row-major order (PyTorch's convention).
    """
    rows = [list(r) for r in values]
    pool = validate.integer("pool", pool, minimum=1)
    stride = pool if stride is None else validate.integer("stride", stride, minimum=1)
    H, W = len(rows), len(rows[0]) if rows else 0
    Ho, Wo = output_size(H, pool, stride), output_size(W, pool, stride)
    out = []
    for a in range(Ho):
        line = []
        for c in range(Wo):
            window = [(stride * a + du, stride * c + dv) for du in range(pool) for dv in range(pool)]
            best = window[0]
            for pos in window[1:]:
                if rows[pos[0]][pos[1]] > rows[best[0]][best[1]]:  # strictly greater: the first maximum wins a tie
                    best = pos
            line.append(best)
        out.append(line)
    return out


class WindowMax(sp.Expr):
    """``max_{0 <= u, v <= p-1} X_{s i+u, s j+v}`` (``last`` = p - 1): the largest entry of a pooling window, as an expression that
    prints as the text writes it (``\\max`` with the window under it); a label for the notes, evaluated by
    :func:`max_pool_routing`."""

    is_commutative = True

    def __new__(cls, entry, u_, v_, last):
        return sp.Expr.__new__(cls, entry, u_, v_, as_sympy(last, "last"))

    def _latex(self, printer):
        entry, u_, v_, last = self.args
        return r"\max_{0 \le %s, %s \le %s} %s" % (printer._print(u_), printer._print(v_), printer._print(last),
                                                   printer._print(entry))

    def _sympystr(self, printer):
        entry, u_, v_, last = self.args
        return f"max_{{0<={u_},{v_}<={printer._print(last)}}} {printer._print(entry)}"


class WindowArgmax(sp.Function):
    """``a_ij``: the input position (row, column) of the largest entry of window (i, j), the first in row-major
    order at a tie (PyTorch's convention, :func:`max_pool_routing`)."""

    def _latex(self, printer):
        """``a_{i,j}``: the letter through the printer (the notation's letters reach it), the indices as an entry's."""
        return printer._print(sp.Indexed(sp.IndexedBase("a"), *self.args))


def max_pool_rows(pool=None, stride=None) -> list[tuple]:
    """Max-pooling at symbolic size, forward and backward: ``Y_ij = max_{0<=u,v<=p-1} X_{s i+u, s j+v}`` and
    ``dL/dX_mn = sum_ij G_ij [(m, n) = a_ij]`` with ``a_ij`` the window's argmax (the whole ``G_ij`` goes there)."""
    from .latex_settings import Partial

    size = sp.Symbol("p", integer=True, positive=True) if pool is None else as_sympy(pool, "pool")
    st = s if stride is None else as_sympy(stride, "stride")
    forward = WindowMax(X[st * i + u, st * j + v], u, v, size - 1)
    routed = sp.Sum(G[i, j] * _Routed(sp.Tuple(m, n), WindowArgmax(i, j)), (i, 0, H_o - 1), (j, 0, W_o - 1))
    return [(sp.Symbol("Y_ij"), forward), (Partial(sp.Symbol("X_mn")), routed)]


class _Routed(sp.Expr):
    """``[(m, n) = a_ij]``: 1 where the position is the window's argmax, else 0 (an Iverson bracket)."""

    is_commutative = True

    def _latex(self, printer):
        return r"[(%s) = %s]" % (", ".join(printer._print(a) for a in self.args[0]), printer._print(self.args[1]))

    def _sympystr(self, printer):
        return f"[{printer._print(self.args[0])} = {printer._print(self.args[1])}]"


def receptive_field_formula():
    """``r_L = 1 + sum_{l=1}^{L} (k_l - 1) prod_{l'=1}^{l-1} s_{l'}`` for any number of layers L, as a SymPy sum over
    indexed kernels and strides (its ``subs(L, n).doit()`` is :func:`receptive_field` of n layers).  Both indices
    count layers, l and the layers l' below it (j is a column of the output)."""
    L_, l_, below = (sp.Symbol(name, integer=True, positive=True) for name in ("L", "l", "l'"))
    kk, ss = sp.IndexedBase("k"), sp.IndexedBase("s")
    return sp.Indexed("r", L_), 1 + sp.Sum((kk[l_] - 1) * sp.Product(ss[below], (below, 1, l_ - 1)), (l_, 1, L_))


def max_derivative(n: int = 4):
    """``d max(x_0..x_{n-1}) / d x_0`` as SymPy writes it (products of Heaviside steps): 1 where x_0 is the
    unique maximum, 0 where another entry is larger; at a tie SymPy's Heaviside(0) = 1/2 shows that no
    derivative exists there (PyTorch routes to the first maximal entry)."""
    xs = sp.symbols(f"x_0:{validate.integer('n', n, minimum=2)}", real=True)
    return sp.diff(sp.Max(*xs), xs[0]), xs


# ----------------------------------------------------------------------------- receptive field

def _size(argument: str, value):
    """A layer size: a positive integer, or a SymPy expression (text goes through the whitelist parser, never sympify)."""
    if isinstance(value, bool):
        raise SeqgradTypeError(argument, value, "positive integers or SymPy symbols")
    if isinstance(value, int):
        return validate.integer(argument, value, minimum=1)
    return as_sympy(value, argument)


def receptive_field(kernels, strides=None):
    """``r_L = 1 + sum_l (k_l - 1) prod_{l'<l} s_{l'}`` for concrete or symbolic kernel sizes and strides."""
    if isinstance(kernels, (str, bytes)) or not hasattr(kernels, "__iter__"):
        raise SeqgradTypeError("kernels", kernels, "a list of kernel sizes (positive integers or SymPy symbols)")
    kernels = [_size("kernels", k_) for k_ in kernels]
    if not kernels:
        raise SeqgradValueError("kernels", kernels, "at least one layer")
    strides = [1] * len(kernels) if strides is None else [_size("strides", s_) for s_ in strides]
    if len(strides) != len(kernels):
        raise SeqgradValueError("strides", strides, f"one stride per layer ({len(kernels)})")
    total, jump = sp.Integer(1), sp.Integer(1)
    for kl, sl in zip(kernels, strides):
        total += (kl - 1) * jump
        jump *= sl
    return total


def receptive_field_recurrence(L: int):
    """``r_l = r_{l-1} + (k_l - 1) j_{l-1}``, ``j_l = j_{l-1} s_l``, ``r_0 = j_0 = 1`` unrolled over L layers of
    symbolic k_l, s_l, and the closed form; both as expressions (the proof: their difference expands to 0)."""
    L = validate.integer("L", L, minimum=1)
    ks, ss = sp.symbols(f"k_1:{L + 1}", positive=True, integer=True), sp.symbols(f"s_1:{L + 1}", positive=True, integer=True)
    r, jump = sp.Integer(1), sp.Integer(1)
    for l in range(L):
        r, jump = r + (ks[l] - 1) * jump, jump * ss[l]
    closed = 1 + sp.Add(*[(ks[l] - 1) * sp.Mul(*ss[:l]) for l in range(L)])
    return r, closed


# ----------------------------------------------------------------------------- ViT patches

def vit_patches(H_img, W_img, p, C_img=1):
    """Non-overlapping p x p patches (seed 000 L1310): a convolution with kernel = stride = p and no padding,
    so ``N_patch = (H/p)(W/p)`` when p divides both, each flattened to ``p^2 C`` values."""
    return output_size(H_img, p, p) * output_size(W_img, p, p), p * p * C_img


# ----------------------------------------------------------------------------- catalogue entries

def identities() -> list[Identity]:
    out = []
    conv = Conv2d(stride=s)
    expect_K = sp.Sum(G[i, j] * X[s * i + p, s * j + q], (i, 0, H_o - 1), (j, 0, W_o - 1))
    out.append(Identity(
        "conv-weight-sharing-gradient", "lecture07 §Convolutional network:9-11",
        "dL/dK_pq = sum_ij G_ij X_{s i+p, s j+q} (the shared filter's gradient sums over every position), symbolic sizes",
        lambda: conv.grad_K(), expect_K, "simplify",
        proof_by(lambda: sp.Matrix([conv.grad_K() - expect_K, conv.grad_b() - sp.Sum(G[i, j], (i, 0, H_o - 1), (j, 0, W_o - 1))]),
                 sp.simplify, "diff of IndexedBase sums, doit, in-range guards dropped"),
        lambda rng: _explicit_numeric(rng), simplifier="diff + doit",
        scope="all H_o, W_o, k >= 1 and every stride s (symbolic sizes)",
        shown=lambda: (Partial(K[p, q]), expect_K)))  # printed with its left-hand side, the gradient it computes
    unit = Conv2d(stride=1)
    expect_X = sp.Sum(K[k - 1 - u, k - 1 - v] * Ghat[m - k + 1 + u, n - k + 1 + v], (u, 0, k - 1), (v, 0, k - 1))
    out.append(Identity(
        "conv-input-gradient-full-correlation", "lecture07 §Convolutional network:9",
        "dL/dX_mn = sum_uv K_uv Ghat_{m-u,n-v} = a full cross-correlation of zero-padded G with the flipped kernel (stride 1)",
        lambda: unit.grad_X_flipped(), expect_X, "simplify",
        proof_by(lambda: sp.Matrix([unit.grad_X_flipped() - expect_X]), sp.simplify,
                 "diff, the deltas summed over i, j (zero extension Ghat), reindexing u -> k-1-u, v -> k-1-v"),
        lambda rng: _explicit_numeric(rng), simplifier="change of summation index",
        scope="all H_o, W_o, k >= 1, stride 1 (symbolic sizes; any stride and padding at concrete sizes)",
        shown=lambda: (Partial(X[m, n]), expect_X)))
    return out


@lru_cache(None)
def _explicit_sides():
    """The explicit-size convolution (2-D, stride 2, padding 1) and its gradients both ways, built once for both entries."""
    ec = ExplicitConv((4, 5), (3, 2), stride=2, padding=1)
    return ec, ec.by_differentiation(), ec.by_formula()


def _explicit_numeric(rng) -> NumericResult:
    """Both sides of the explicit-size gradients at a random point (2-D, stride 2, padding 1)."""
    ec, d, f = _explicit_sides()
    values = {sym: sp.Float(rng.uniform(-1, 1)) for table in (ec.x, ec.k, ec.g) for sym in table.values()}
    values[ec.b] = sp.Float(rng.uniform(-1, 1))
    keys = [(name, key) for name in d for key in d[name]]
    at = lambda e: float(e.xreplace(values) if isinstance(e, sp.Basic) else e)  # every symbol replaced by its number at once
    return NumericResult([at(d[a][c]) for a, c in keys], [at(f[a][c]) for a, c in keys],
                         "policy", None, "explicit 4x5 input, 3x2 kernel, stride 2, padding 1, random point")


def prove_explicit(conv: ExplicitConv) -> Proof:
    res = [r for r in conv.residuals() if r != 0]
    return Proof(not res, "simplification to zero (expand)", sp.Matrix(res) if res else sp.Integer(0),
                 f"{repr(conv)}: dK, db, dX by the formulas equal sympy.diff of sum G o Y")


__all__ = ["Conv2d", "Dilated", "dilated_input_gradient", "ExplicitConv", "output_size", "max_pool_routing", "max_derivative", "receptive_field",
           "receptive_field_recurrence", "vit_patches", "identities", "prove_explicit"]
