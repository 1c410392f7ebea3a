"""Compile an index-notation formula of :mod:`derive.conv` (sums of products of ``Indexed`` entries) to numpy or torch.

A formula such as ``Sum(G[i, j] * X[s*i + p, s*j + q], (i, 0, H_o - 1), (j, 0, W_o - 1))`` with free indices
``p, q`` becomes a function of arrays ``G`` and ``X`` (each with a leading batch axis).  Every index
expression must be affine in the index variables with integer coefficients; an array read outside its
range is zero (the zero padding of the input and the zero extension ``Ghat`` of the derivation).  An array
``IndexedBase(Dilated(G, s))`` (a strided convolution's input gradient, :func:`derive.conv.dilated_input_gradient`)
is G dilated by the stride: the compiled function takes ``G`` and dilates it once (:class:`~crosscheck.loop_ir.Dilate`);
a stride without a value in ``sizes``, or not a positive integer, is refused naming it.

The plan of each term vectorises the index variables with the largest ranges (strided slices, no copies)
and loops over the small ones (the kernel offsets, and any variable read backwards, such as u in
K[k-1-u]), which is how the sum over positions of the weight-sharing gradient runs fast: for every kernel
entry one contraction of two strided slices.  The plan is written as the IR of :mod:`crosscheck.loop_ir`
(:func:`conv_function`): a :class:`~crosscheck.loop_ir.Loop` per looped variable, inside it a
:class:`~crosscheck.loop_ir.Strided` read per factor (placed in the outermost loop whose indices it reads)
and one :class:`~crosscheck.loop_ir.Contract` that adds the product, summed over the vectorised summation
variables (and the batch), into the output.  Its :class:`~crosscheck.loop_ir.Emitter` prints the same source
for numpy and torch; only the helpers it calls are bound per backend (:func:`helpers`).

>>> import numpy as np
>>> from seqgrad.derive import conv as dc
>>> dK = Compiled(dc.Conv2d(stride=2).grad_K(), {dc.p: 3, dc.q: 3}, {dc.k: 3, dc.H_o: 4, dc.W_o: 4}, backend="numpy")
>>> print(dK.source.strip())
def _conv(G, X):
    out = _output((G, X,), (3, 3), False)
    G_1 = _strided(G, ((0, 1, 4), (0, 1, 4),))
    for p in range(0, 3):
        for q in range(0, 3):
            X_1 = _strided(X, ((p, 2, 4), (q, 2, 4),))
            out[p, q] += _einsum('Bij,Bij->', G_1, X_1)
    return (out,)
>>> X, G = np.arange(2 * 9 * 9.0).reshape(2, 9, 9), np.ones((2, 4, 4))
>>> float(dK(G=G, X=X)[1, 2]) == float(X[:, 1:9:2, 2:9:2].sum())
True
"""

from __future__ import annotations

import string
from dataclasses import dataclass

import sympy as sp

from seqgrad import validate
from seqgrad.errors import SeqgradTypeError, SeqgradValueError

from seqgrad.derive.conv import Dilated

from . import loop_ir
from .code_printer import identifier

__all__ = ["Compiled", "conv_function", "helpers"]

_SHAPE = "sums of products of Indexed entries (and numbers or scalar symbols) of derive.conv"


@dataclass(frozen=True)
class _Factor:
    base: sp.IndexedBase
    coeffs: tuple  # per array axis: {variable: integer coefficient}
    consts: tuple  # per array axis: the integer constant


@dataclass(frozen=True)
class _Term:
    """One product to add: its factors, scalar part, index ranges (variable -> (first, count)), the
    vectorised and the looped variables."""
    factors: tuple
    scale: sp.Basic
    ranges: dict
    vec: tuple
    loops: tuple


def _affine(expr, variables) -> tuple[dict, int]:
    """``expr = sum_v c_v v + c`` with integer c_v, c: ({v: c_v}, c)."""
    expr = sp.expand(expr)
    coeffs = {}
    for var in variables:
        c = expr.coeff(var)
        if c != 0:
            if not c.is_Integer:
                raise SeqgradTypeError("index", str(expr), "affine index expressions with integer coefficients")
            coeffs[var] = int(c)
    const = expr - sum(c * var for var, c in coeffs.items())
    if const.free_symbols & set(variables):  # i**2, i*j: not affine
        raise SeqgradTypeError("index", str(expr), "affine index expressions with integer coefficients")
    if not const.is_Integer:
        raise SeqgradTypeError("index", str(expr), "index expressions whose sizes are all given")
    return coeffs, int(const)


def _terms(expr, sizes):
    """(product, limits) for every term of ``expr``: sums unwrapped, their limits as (first, count)."""
    out = []
    for term in sp.Add.make_args(sp.expand(expr, deep=False)):
        limits = {}
        while isinstance(term, sp.Sum):
            for var, lo, hi in term.limits:
                if not (lo.is_Integer and hi.is_Integer):
                    raise SeqgradValueError("sizes", sizes, f"values for every size in the limits of {var}")
                limits[var] = (int(lo), int(hi) - int(lo) + 1)
            term = term.function
        out += [(product, dict(limits)) for product in sp.Add.make_args(sp.expand(term))]
    return out


def _plan(product, limits, free: dict) -> _Term:
    variables = list(free) + list(limits)
    factors, scalars = [], []
    for f in sp.Mul.make_args(product):
        base, times = (f.base, f.exp) if isinstance(f, sp.Pow) else (f, sp.Integer(1))
        if isinstance(base, sp.Indexed) and times.is_Integer and times >= 1:
            pairs = [_affine(e, variables) for e in base.indices]
            factors += [_Factor(base.base, tuple(c for c, _ in pairs), tuple(k for _, k in pairs))] * int(times)
        elif f.has(sp.Indexed) or f.free_symbols & set(variables):
            raise SeqgradTypeError("expr", str(f), _SHAPE)
        else:
            scalars.append(f)
    ranges = {var: (0, n) for var, n in free.items()}
    ranges.update(limits)
    read = {var for fac in factors for axis in fac.coeffs for var in axis}
    scale = sp.Mul(*scalars)
    for var in [v for v in limits if v not in read]:  # a sum of something that does not depend on it
        scale *= ranges.pop(var)[1]
    if not factors:  # a number or a scalar symbol (the bias b): added to every entry at once
        return _Term((), scale, ranges, (), ())
    # vectorise the largest ranges while every array axis reads at most one vectorised variable; a variable
    # read backwards (u in K[k-1-u]) or by no factor (a free index of a term that lacks it) is looped
    backwards = {var for fac in factors for axis in fac.coeffs for var, c in axis.items() if c < 0}
    vec: list = []
    for var in sorted(ranges, key=lambda x: -ranges[x][1]):
        if var in read and var not in backwards and all(sum(1 for w in vec + [var] if w in axis) <= 1
                                                        for fac in factors for axis in fac.coeffs):
            vec.append(var)
    loops = tuple(var for var in ranges if var not in vec)
    return _Term(tuple(factors), scale, ranges, tuple(vec), loops)


def conv_function(terms, free: dict, batch: bool, names: dict, taken: set, args: tuple, dilated: tuple = ()) -> loop_ir.Function:
    """The IR of the planned ``terms``: the output, each ``dilated`` array (an IndexedBase of a
    :class:`~derive.conv.Dilated`) made from its argument, then per term its loops, strided reads and contraction."""
    fn = loop_ir.Function("conv", args, [], names, taken)
    out = fn.fresh("out")
    arrays = tuple(a for a in args if isinstance(a, sp.IndexedBase))
    fn.body.append(loop_ir.Output(out, arrays, tuple(free.values()), batch))
    fn.body += [loop_ir.Dilate(d, d.label.array, int(d.label.stride)) for d in dilated]
    for term in terms:
        fn.body += _term_ir(fn, term, out, free, batch)
    fn.body.append(loop_ir.Return((out,)))
    return fn


def _term_ir(fn: loop_ir.Function, term: _Term, out, free: dict, batch: bool) -> list:
    at = tuple(var if var in term.loops else None for var in free)
    if not term.factors:
        return [loop_ir.Contract(out, (), "", term.scale, at, batch)]
    letters = _letters(term.vec)
    levels: list[list] = [[] for _ in range(len(term.loops) + 1)]  # the statements at each loop depth
    slices = []
    for fac in term.factors:
        reads, used, labels = [], set(), "B"
        for coeffs, const in zip(fac.coeffs, fac.consts):
            var = next((v for v in coeffs if v in term.vec), None)
            step = coeffs[var] if var is not None else 0
            first = sp.Integer(const) + sum(c * v for v, c in coeffs.items() if v in term.loops)
            first += step * term.ranges[var][0] if var is not None else 0
            reads.append((first, step, term.ranges[var][1] if var is not None else 1))
            used |= {v for v in coeffs if v in term.loops}
            labels += letters[var] if var is not None else ""
        sym = fn.fresh(f"{fn.names[fac.base]}_1")
        depth = max((term.loops.index(v) + 1 for v in used), default=0)
        levels[depth].append(loop_ir.Strided(sym, fac.base, tuple(reads)))
        slices.append((sym, labels))
    keep = ("B" if batch else "") + "".join(letters[v] for v in free if v in term.vec)
    spec = ",".join(labels for _, labels in slices) + "->" + keep
    levels[-1].append(loop_ir.Contract(out, tuple(sym for sym, _ in slices), spec, term.scale, at, batch))
    body = levels[-1]
    for depth in range(len(term.loops), 0, -1):  # innermost first
        var = term.loops[depth - 1]
        first, count = term.ranges[var]
        body = levels[depth - 1] + [loop_ir.Loop(var, tuple(body), length=count, start=first)]
    return body


def _letters(vec) -> dict:
    """An einsum letter per vectorised variable (its own name where that is one free letter; B is the batch)."""
    out, taken = {}, {"B"}
    for var in vec:
        name = str(var)
        letter = name if len(name) == 1 and name in string.ascii_letters and name not in taken else \
            next(c for c in string.ascii_letters if c not in taken)
        out[var] = letter
        taken.add(letter)
    return out


class Compiled:
    """``f(**arrays) -> array`` of shape ``(B?, *free sizes)``; ``batch="sum"`` sums the leading batch axis too.

    ``expr`` is a formula of :mod:`derive.conv`, ``free`` its free index variables with their ranges,
    ``sizes`` a value for every other size it names; ``backend`` numpy or torch (the same IR, the same source).
    Every array argument has a leading batch axis (an array without one enters with an axis of 1, ``K[None]``);
    scalar symbols (the bias b) are numbers or 0-d arrays."""

    def __init__(self, expr, free: dict, sizes: dict, batch: str = "sum", backend: str = "torch"):
        if batch not in ("sum", "keep"):
            raise SeqgradValueError("batch", batch, "sum or keep")
        self.batch = batch
        self.backend = validate.choice("backend", backend, ("numpy", "torch"))
        if not isinstance(expr, sp.Basic):
            raise SeqgradTypeError("expr", expr, "a SymPy expression of derive.conv (sums of Indexed products)")
        self.expr, self.sizes = expr, dict(sizes)
        self.free = {var: validate.integer("free", n, minimum=1) for var, n in dict(free).items()}  # variable -> range
        values = {key: sp.Integer(validate.integer("sizes", n)) for key, n in sizes.items()}
        self.terms = [_plan(product, limits, self.free) for product, limits in _terms(expr.xreplace(values), sizes)]
        read = {fac.base for term in self.terms for fac in term.factors}
        if not read:
            raise SeqgradTypeError("expr", str(expr)[:80], _SHAPE + ", with at least one Indexed entry")
        dilated = sorted((a for a in read if isinstance(a.label, Dilated)), key=str)
        for a in dilated:
            _dilation_stride(a.label, sizes)
        bases = sorted((read - set(dilated)) | {a.label.array for a in dilated}, key=str)  # the arrays passed
        scalars = sorted({s for term in self.terms for s in term.scale.free_symbols}, key=str)
        taken: set[str] = set()
        names = {a: identifier(str(a), taken) for a in bases + scalars}
        names.update({a: identifier(f"{a.label.array}hat_{a.label.stride}", taken) for a in dilated})
        looped = sorted({v for term in self.terms for v in term.loops}, key=str)
        names.update({var: identifier(str(var), taken) for var in looped})
        self.arguments = tuple(str(a) for a in bases + scalars)  # the keyword names, in the order of the arguments
        self.function = conv_function(self.terms, self.free, batch == "keep", names, taken, tuple(bases + scalars),
                                      tuple(dilated))
        emitter = loop_ir.Emitter(self.backend, names)
        self.source = emitter.source(self.function, "_conv")
        namespace = dict(emitter.used)
        namespace.update(helpers(self.backend))
        from .lambdify import run_generated

        self._fn = run_generated(self.source, "<seqgrad:conv>", namespace, "_conv")

    def __call__(self, **arrays):
        missing = [a for a in self.arguments if a not in arrays]
        if missing:
            raise SeqgradValueError("arrays", sorted(arrays), "a value for each of " + ", ".join(self.arguments))
        return self._fn(*[arrays[a] for a in self.arguments])[0]


def _dilation_stride(dilation, sizes) -> int:
    """The stride of a :class:`~derive.conv.Dilated` array once the sizes are given: a positive integer."""
    stride = dilation.stride
    if stride.free_symbols:
        raise SeqgradValueError("sizes", sizes, f"a value for the stride {stride} of the dilated {dilation.array}")
    if not (stride.is_Integer and stride >= 1):
        raise SeqgradValueError("stride", stride, f"a positive integer (the dilation of {dilation.array})")
    return int(stride)


def helpers(backend: str) -> dict:
    """The names the compiled source calls besides the operations, bound in ``backend``."""
    if backend == "numpy":
        import numpy as np

        def output(like, shape, batch):
            arrays = [np.asarray(a) for a in like]
            B = max((a.shape[0] for a in arrays if a.ndim), default=1)
            return np.zeros(((B,) if batch else ()) + tuple(shape), dtype=np.result_type(*arrays))

        def pad(A, low, high):
            return np.pad(A, [(0, 0)] + list(zip(low, high)))

        return {"_output": output, "_strided": lambda A, reads: _strided(A, reads, pad), "_einsum": np.einsum,
                "_dilate": lambda A, stride: _dilate(np.asarray(A), stride, lambda shape: np.zeros(shape, np.asarray(A).dtype))}
    import torch

    def output(like, shape, batch):
        tensors = [a for a in like if a.dim()]
        B = max((a.shape[0] for a in tensors), default=1)
        return like[0].new_zeros(((B,) if batch else ()) + tuple(shape))

    def pad(A, low, high):
        return torch.nn.functional.pad(A, [n for pair in zip(reversed(low), reversed(high)) for n in pair])

    return {"_output": output, "_strided": lambda A, reads: _strided(A, reads, pad), "_einsum": torch.einsum,
            "_dilate": lambda A, stride: _dilate(A, stride, A.new_zeros)}


def _dilate(A, stride, zeros):
    """``A`` dilated by ``stride`` after its batch axis: entry ``stride * o`` is ``A[:, o]``, zeros between."""
    out = zeros((A.shape[0],) + tuple(stride * (n - 1) + 1 for n in A.shape[1:]))
    out[(slice(None),) + (slice(None, None, stride),) * (A.ndim - 1)] = A
    return out


def _strided(A, reads, pad):
    """``A[:, first : first + step*(count-1) + 1 : step, ...]`` per axis (step 0: ``A[:, first, ...]``), zero where
    an index falls outside the array: the array is padded with zeros first when a read leaves it."""
    low = [max(0, -first) for first, _, _ in reads]
    high = [max(0, first + step * (n - 1) - (A.shape[1 + k] - 1)) for k, (first, step, n) in enumerate(reads)]
    if any(low) or any(high):
        A = pad(A, low, high)
    index = [slice(None)]
    for (first, step, n), lo in zip(reads, low):
        f = first + lo
        index.append(f if step == 0 else slice(f, f + step * (n - 1) + 1, step))
    return A[tuple(index)]
