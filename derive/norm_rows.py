"""LayerNorm's and RMSNorm's entries of one row, stated once.

A row is given by its entries ``x(k)``, its width ``n`` and a row sum ``total(term) = sum_k term(k)`` (a
``Sum`` with symbolic bounds at a symbolic width, the explicit sum of the terms at a concrete one)::

    std(x)       = sqrt(sum_k ((x_k - mu)^2 + eps) / n),   mu = sum_k x_k / n      (population variance)
    normalized_j = (x_j - mu) / std(x)                                              (LayerNorm, gain 1, shift 0)
    rms(x)       = sqrt(sum_k (x_k^2 + eps) / n)                                    (Zhang & Sennrich 2019)
    rms_normalized_j = x_j / rms(x)                                                 (RMSNorm, gain 1)

The radicand is one sum (``sqrt(var + eps)`` written as ``sqrt(sum_k (... + eps) / n)``): SymPy asks a sum
plus a term whether it is infinite every time it builds its root, the slowest step of every LayerNorm proof.
The rule table's nodes (:mod:`derive.rules`: ``RowStd``, ``Normalize``, ``RowRMS``, ``RMSNormalize``, whose
entries :mod:`derive.blocks`' LayerNorm and RMSNorm programs are written with) and the vector language's
``layernorm(v, eps)`` and ``rmsnorm(v, eps)`` (:mod:`derive.safe_parse`, which the rule table imports) and the
certified evaluator of claims (:mod:`derive.certified`, in its exact and interval arithmetic, with its own checked
square root) all read these, so none states a norm of its own.

>>> import sympy as sp
>>> a, b = sp.symbols("a b")
>>> row = [a, b]
>>> total = lambda term: sp.Add(*[term(k) for k in range(2)])
>>> rms_normalized(row.__getitem__, 0, 2, total, 0)
a/sqrt(a**2/2 + b**2/2)
"""

from __future__ import annotations

__all__ = ["variance", "std", "normalized", "mean_square", "rms", "rms_normalized"]


def _sqrt(x):
    """SymPy's square root, imported on first use: the certified evaluator (which gives its own root) reads this
    module without SymPy, so that ``seqgrad claim`` starts fast."""
    import sympy

    return sympy.sqrt(x)


# The squares are written as products (SymPy makes the same power of them): in the certified evaluator's interval
# arithmetic a product of an entry that may be 0 with itself is a bound, where a power of a base that may be 0 is
# a question it cannot settle.


def _mean(x, n, total):
    return total(x) / n


def variance(x, n, total, eps):
    """LayerNorm's radicand, ``mean_k (x_k - mu)^2 + eps``: the population variance plus eps, as one sum."""
    mu = _mean(x, n, total)
    return total(lambda k: ((x(k) - mu) * (x(k) - mu) + eps) / n)  # squares as products (see above)


def std(x, n, total, eps, sqrt=_sqrt):
    """``sqrt(mean_k (x_k - mu)^2 + eps)``, the population standard deviation with eps inside the root.  ``sqrt``:
    the root in the caller's arithmetic (SymPy's by default; the certified evaluator's checks its radicand)."""
    return sqrt(variance(x, n, total, eps))


def normalized(x, j, n, total, eps, sqrt=_sqrt):
    """LayerNorm's entry j before its gain and shift: ``(x_j - mu) / std(x)``."""
    return (x(j) - _mean(x, n, total)) / std(x, n, total, eps, sqrt)


def mean_square(x, n, total, eps):
    """RMSNorm's radicand, ``mean_k x_k^2 + eps``."""
    return total(lambda k: (x(k) * x(k) + eps) / n)


def rms(x, n, total, eps, sqrt=_sqrt):
    """``sqrt(mean_k x_k^2 + eps)``: RMSNorm's scale (no mean subtracted)."""
    return sqrt(mean_square(x, n, total, eps))


def rms_normalized(x, j, n, total, eps, sqrt=_sqrt):
    """RMSNorm's entry j before its gain: ``x_j / rms(x)``."""
    return x(j) / rms(x, n, total, eps, sqrt)
