"""Compile an index-notation formula of :mod:`derive.conv` (sums of products of ``Indexed`` entries) to torch.

A formula such as ``Sum(G[i, j] * X[s*i + p, s*j + q], (i, 0, H_o - 1), (j, 0, W_o - 1))`` with free indices
``p, q`` becomes a function of tensors ``G`` and ``X`` (each with a leading batch axis).  Every index
expression must be affine in the index variables with integer coefficients; an array read outside its
range is zero (the zero padding of the input and the zero extension ``Ghat`` of the derivation).

The compiled code vectorises the index variables with the largest ranges (strided slices, no copies) and
loops over the small ones (the kernel offsets, and any variable read backwards, such as u in K[k-1-u]), which is how the sum over positions of the weight-sharing
gradient runs fast: for every kernel entry one dot product of two strided slices.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import sympy as sp
import torch

from seqgrad.errors import SeqgradTypeError, SeqgradValueError


@dataclass
class _Factor:
    base: str
    coeffs: list[dict]  # per array axis: {variable: integer coefficient}
    consts: list[int]


def _affine(expr, variables) -> tuple[dict, int]:
    expr = sp.expand(expr)
    coeffs = {}
    for var in variables:
        c = expr.coeff(var)
        if c != 0:
            if not c.is_Integer:
                raise SeqgradTypeError("index", str(expr), "affine index expressions with integer coefficients")
            coeffs[var] = int(c)
    const = expr.subs({var: 0 for var in variables})
    if not const.is_Integer:
        raise SeqgradTypeError("index", str(expr), "index expressions whose sizes are all given")
    return coeffs, int(const)


class Compiled:
    """``f(**arrays) -> tensor`` of shape ``(B?, *free sizes)``; ``batch="sum"`` sums the leading batch axis too."""

    def __init__(self, expr, free: dict, sizes: dict, batch: str = "sum"):
        if batch not in ("sum", "keep"):
            raise SeqgradValueError("batch", batch, "sum or keep")
        self.batch = batch
        self.free = dict(free)  # variable -> range
        if not isinstance(expr, sp.Basic):
            raise SeqgradTypeError("expr", expr, "a SymPy expression of derive.conv (sums of Indexed products)")
        expr = expr.xreplace({k_: sp.Integer(v_) for k_, v_ in sizes.items()})
        self.terms = []
        for term in sp.Add.make_args(sp.expand(expr, deep=False)):
            limits = {}
            while isinstance(term, sp.Sum):
                for var, lo, hi in term.limits:
                    lo, hi = sp.Integer(lo), sp.Integer(hi)
                    if not (lo.is_Integer and hi.is_Integer):
                        raise SeqgradValueError("sizes", sizes, f"values for every size in the limits of {var}")
                    limits[var] = (int(lo), int(hi) - int(lo) + 1)
                term = term.function
            self.terms.append(self._plan(term, limits))

    def _plan(self, term, limits):
        variables = list(self.free) + list(limits)
        factors, scalars = [], []
        for f in sp.Mul.make_args(term):
            if isinstance(f, sp.Indexed):
                pairs = [_affine(e, variables) for e in f.indices]
                factors.append(_Factor(str(f.base), [c for c, _ in pairs], [k for _, k in pairs]))
            else:
                scalars.append(f)
        ranges = {var: (0, r) for var, r in self.free.items()}
        ranges.update(limits)
        # vectorise the largest ranges while every array axis reads at most one vectorised variable
        vec: list = []
        reversed_ = {var for fac in factors for axis in fac.coeffs for var, c in axis.items() if c < 0}
        for var in sorted(ranges, key=lambda x: -ranges[x][1]):
            if var not in reversed_ and all(sum(1 for w in vec + [var] if w in axis) <= 1 for fac in factors for axis in fac.coeffs):
                vec.append(var)
        loops = [var for var in ranges if var not in vec]
        return factors, sp.Mul(*scalars), ranges, vec, loops

    def __call__(self, **arrays) -> torch.Tensor:
        tensors = [a for a in arrays.values() if a.dim() > 0]
        like = tensors[0]
        B = max(a.shape[0] for a in tensors)  # an array without a batch enters with a batch axis of 1
        shape = [self.free[v] for v in self.free]
        out = like.new_zeros(([B] if self.batch == "keep" else []) + shape)
        for factors, scalar, ranges, vec, loops in self.terms:
            coeff, symbols = scalar.as_coeff_Mul()
            named = [arrays[str(f)] for f in sp.Mul.make_args(symbols) if f != 1]  # scalar inputs such as the bias b
            if not factors:
                value = float(coeff) * torch.stack(named).prod(0) if named else like.new_tensor(float(coeff))
                out += value if self.batch == "keep" or not shape else value
                continue
            for point in itertools.product(*[range(ranges[v][0], ranges[v][0] + ranges[v][1]) for v in loops]):
                at = dict(zip(loops, point))
                value = self._product(arrays, factors, ranges, vec, at, B, like)
                for t in named:
                    value = value * t
                if coeff != 1:
                    value = value * float(coeff)
                free_vec = [v for v in self.free if v in vec]
                if not free_vec and self.batch == "sum":  # a full contraction: one reduction
                    out[tuple(at[v] for v in self.free)] += value.sum()
                    continue
                # sum the vectorised summed variables (and the batch), keep the vectorised free ones in order
                summed = [k_ for k_, v in enumerate(vec) if v not in self.free]
                if summed:
                    value = value.sum(dim=[1 + k_ for k_ in summed])
                order = [v for v in vec if v in self.free]
                value = value.permute(0, *[1 + order.index(v) for v in free_vec]) if free_vec else value
                if self.batch == "sum":
                    value = value.sum(dim=0)
                index = tuple(at[v] if v in at else slice(None) for v in self.free)
                if self.batch == "keep":
                    index = (slice(None),) + index
                out[index] += value
        return out

    @staticmethod
    def _product(arrays, factors, ranges, vec, at, B, like):
        """The product of the factors' strided slices, axes (batch, *vec), broadcast where a factor lacks a variable."""
        total = None
        for fac in factors:
            A = arrays[fac.base]
            slices, axes, pads = [], [], []
            for coeffs, const in zip(fac.coeffs, fac.consts):
                start = const + sum(c * at[v] for v, c in coeffs.items() if v in at)
                var = next((v for v in coeffs if v in vec), None)
                step = coeffs[var] if var is not None else 0
                lo_v, n = ranges[var] if var is not None else (0, 1)
                first = start + step * lo_v
                last = first + step * (n - 1)
                pads.append((first, last, step, n))
                axes.append(var)
            A = _read(A, pads)  # (B, n_axis0, n_axis1, ...), zero outside the array
            # reorder/broadcast to (B, *vec)
            for var in vec:
                if var not in axes:
                    A = A.unsqueeze(-1)
                    axes.append(var)
            keep = [k_ for k_, var in enumerate(axes) if var is not None]
            names = [axes[k_] for k_ in keep]
            if len(keep) != len(axes):
                A = A.reshape(A.shape[0], *[A.shape[1 + k_] for k_ in keep])
            if names != vec:
                A = A.permute(0, *[1 + names.index(v) for v in vec])
            total = A if total is None else total * A
        return total


def _read(A: torch.Tensor, pads) -> torch.Tensor:
    """``A[:, first:last+1:step, ...]`` per axis, zero where an index falls outside the array (any step sign)."""
    lows = [min(f, l) for f, l, _, _ in pads]
    highs = [max(f, l) for f, l, _, _ in pads]
    pad_lo = [max(0, -lo) for lo in lows]
    pad_hi = [max(0, hi - (A.shape[1 + k] - 1)) for k, hi in enumerate(highs)]
    if any(pad_lo) or any(pad_hi):
        spec = []
        for lo, hi in zip(reversed(pad_lo), reversed(pad_hi)):
            spec += [lo, hi]
        A = torch.nn.functional.pad(A, spec)
    index = [slice(None)]
    for k, (first, last, step, n) in enumerate(pads):
        f = first + pad_lo[k]
        if step > 0:
            index.append(slice(f, f + step * (n - 1) + 1, step))
        elif step == 0:
            index.append(slice(f, f + 1))
        else:
            raise SeqgradValueError("index", step, "positive coefficients of the vectorised index variables")
    return A[tuple(index)]
