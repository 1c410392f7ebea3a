"""A fuzz of true and false identities against an independent oracle: no false "proved", no false "holds".

Each family is an identity written twice: as text for ``derive.verify`` and as numpy code (the oracle, which
shares nothing with SymPy).  Each is perturbed by terms that change it somewhere (a constant, a factor, a
term zero at small sizes, a piecewise term that matters only beyond a switch point, a small polynomial ...).
The oracle decides truth at hand-picked points (scales 1e-3 .. 1e3, integers, half-integers, switch points)
and random ones; ``verify`` must never say proved or holds of a false one, nor refute a true one.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction as F

import numpy as np
import pytest

from seqgrad import derive

# ---------------------------------------------------------------- scalar families: (lhs, rhs, oracle lhs, oracle rhs, domain)
# the oracle's functions take the variables by name; domain: "x>0" style or "" (all reals)
SCALAR = [
    ("sin(x)**2 + cos(x)**2", "1", lambda x: np.sin(x) ** 2 + np.cos(x) ** 2, lambda x: 1.0, ""),
    ("sin(2*x)", "2*sin(x)*cos(x)", lambda x: np.sin(2 * x), lambda x: 2 * np.sin(x) * np.cos(x), ""),
    ("cos(2*x)", "1 - 2*sin(x)**2", lambda x: np.cos(2 * x), lambda x: 1 - 2 * np.sin(x) ** 2, ""),
    ("(x + 1)**2", "x**2 + 2*x + 1", lambda x: (x + 1) ** 2, lambda x: x ** 2 + 2 * x + 1, ""),
    ("(x - 1)*(x + 1)", "x**2 - 1", lambda x: (x - 1) * (x + 1), lambda x: x ** 2 - 1, ""),
    ("x**3 - 1", "(x - 1)*(x**2 + x + 1)", lambda x: x ** 3 - 1, lambda x: (x - 1) * (x ** 2 + x + 1), ""),
    ("exp(2*x)", "exp(x)**2", lambda x: np.exp(2 * x), lambda x: np.exp(x) ** 2, "x<50"),
    ("tanh(x)", "2*sigmoid(2*x) - 1", lambda x: np.tanh(x), lambda x: 2 / (1 + np.exp(-2 * x)) - 1, ""),
    ("diff(tanh(x), x)", "1 - tanh(x)**2", lambda x: 1 / np.cosh(x) ** 2, lambda x: 1 - np.tanh(x) ** 2, ""),
    ("diff(sigmoid(x), x)", "sigmoid(x)*(1 - sigmoid(x))", lambda x: np.exp(-x) / (1 + np.exp(-x)) ** 2,
     lambda x: 1 / (1 + np.exp(-x)) * (1 - 1 / (1 + np.exp(-x))), "x>-50"),
    ("diff(x**3, x)", "3*x**2", lambda x: 3 * x ** 2, lambda x: 3 * x ** 2, ""),
    ("log(x**2)", "2*log(x)", lambda x: np.log(x ** 2), lambda x: 2 * np.log(x), "x>0"),
    ("log(x*y)", "log(x) + log(y)", lambda x, y: np.log(x * y), lambda x, y: np.log(x) + np.log(y), "x>0,y>0"),
    ("sqrt(x)*sqrt(y)", "sqrt(x*y)", lambda x, y: np.sqrt(x) * np.sqrt(y), lambda x, y: np.sqrt(x * y), "x>0,y>0"),
    ("exp(log(x))", "x", lambda x: np.exp(np.log(x)), lambda x: x, "x>0"),
    ("cosh(x)**2 - sinh(x)**2", "1", lambda x: np.cosh(x) ** 2 - np.sinh(x) ** 2, lambda x: 1.0, "x<5,x>-5"),
    ("(x + y)**2", "x**2 + 2*x*y + y**2", lambda x, y: (x + y) ** 2, lambda x, y: x ** 2 + 2 * x * y + y ** 2, ""),
    ("sin(x + y)", "sin(x)*cos(y) + cos(x)*sin(y)", lambda x, y: np.sin(x + y),
     lambda x, y: np.sin(x) * np.cos(y) + np.cos(x) * np.sin(y), ""),
    ("x/(x + 1)", "1 - 1/(x + 1)", lambda x: x / (x + 1), lambda x: 1 - 1 / (x + 1), "x>0"),
    ("1/(1 + exp(-x))", "exp(x)/(1 + exp(x))", lambda x: 1 / (1 + np.exp(-x)), lambda x: np.exp(x) / (1 + np.exp(x)), "x<30,x>-30"),
    ("atan(x) + atan(1/x)", "pi/2", lambda x: np.arctan(x) + np.arctan(1 / x), lambda x: np.pi / 2, "x>0"),
    ("softmax((a + c, b + c))", "softmax((a, b))", None, None, ""),  # vectors: no oracle needed for the true one
]

# piecewise families
PIECEWISE = [
    ("max(a, b) + min(a, b)", "a + b", lambda a, b: np.maximum(a, b) + np.minimum(a, b), lambda a, b: a + b, ""),
    ("max(a, b) - min(a, b)", "abs(a - b)", lambda a, b: np.maximum(a, b) - np.minimum(a, b), lambda a, b: np.abs(a - b), ""),
    ("abs(x)**2", "x**2", lambda x: np.abs(x) ** 2, lambda x: x ** 2, ""),
    ("abs(x*y)", "abs(x)*abs(y)", lambda x, y: np.abs(x * y), lambda x, y: np.abs(x) * np.abs(y), ""),
    ("sqrt(x**2)", "abs(x)", lambda x: np.sqrt(x ** 2), lambda x: np.abs(x), ""),
    ("max(x, 0) - max(-x, 0)", "x", lambda x: np.maximum(x, 0) - np.maximum(-x, 0), lambda x: x, ""),
    ("floor(x + 1)", "floor(x) + 1", lambda x: np.floor(x + 1), lambda x: np.floor(x) + 1, ""),
    ("min(x, 3)", "x", lambda x: np.minimum(x, 3), lambda x: x, "x<3"),
    ("abs(x - 2)", "2 - x", lambda x: np.abs(x - 2), lambda x: 2 - x, "x<2"),
    ("max(x, 1)", "x", lambda x: np.maximum(x, 1), lambda x: x, "x>1"),
]

# perturbations of the right side: (text, the change it makes to the right side's value, in numpy). The oracle
# judges a perturbed identity by its change alone (zero at every point or not), so a change of 1/2 next to a
# value of 1e17 is still seen (a float64 comparison of the two sides would miss it)
PERTURB = [
    ("({r}) + 1", lambda r, v: 1.0 + 0 * v[0]),
    ("2*({r})", lambda r, v: r),
    ("({r}) + {x}/1000", lambda r, v: v[0] / 1000),
    ("({r}) + min({x}, 3) - {x}", lambda r, v: np.minimum(v[0], 3) - v[0]),
    ("({r}) + abs({x}) - {x}", lambda r, v: np.abs(v[0]) - v[0]),
    ("({r}) + floor({x}) - {x}", lambda r, v: np.floor(v[0]) - v[0]),
    ("({r}) + max({x}, 20) - 20", lambda r, v: np.maximum(v[0], 20) - 20),
    ("({r}) + ({x} - 1)*({x} - 2)/10**6", lambda r, v: (v[0] - 1) * (v[0] - 2) / 1e6),
]

# sums with symbolic bounds: (lhs, rhs, oracle lhs(n), oracle rhs(n))
SUMS = [  # the oracle in exact arithmetic (Fraction): a difference of 1 at 2**43 is still seen
    ("sum(i, i, 1, n)", "n*(n + 1)/2", lambda n: sum(range(1, n + 1)), lambda n: F(n * (n + 1), 2)),
    ("sum(i**2, i, 1, n)", "n*(n + 1)*(2*n + 1)/6", lambda n: sum(i * i for i in range(1, n + 1)), lambda n: F(n * (n + 1) * (2 * n + 1), 6)),
    ("sum(i**3, i, 1, n)", "(n*(n + 1)/2)**2", lambda n: sum(i ** 3 for i in range(1, n + 1)), lambda n: F(n * (n + 1), 2) ** 2),
    ("sum(2*i - 1, i, 1, n)", "n**2", lambda n: sum(2 * i - 1 for i in range(1, n + 1)), lambda n: n ** 2),
    ("sum(2**i, i, 0, n - 1)", "2**n - 1", lambda n: sum(2 ** i for i in range(n)), lambda n: 2 ** n - 1),
    ("sum(1/(i*(i + 1)), i, 1, n)", "1 - 1/(n + 1)", lambda n: sum(F(1, i * (i + 1)) for i in range(1, n + 1)), lambda n: 1 - F(1, n + 1)),
    ("sum(i, i, 0, n - 1)", "n*(n - 1)/2", lambda n: sum(range(n)), lambda n: F(n * (n - 1), 2)),
    ("sum(1, i, 1, n)", "n", lambda n: n, lambda n: n),
]
SUM_PERTURB = [
    ("({r}) + 1", lambda r, n: r + 1),
    ("({r}) + (n-1)*(n-2)*(n-3)*(n-4)*(n-5)*(n-6)*(n-7)*(n-8)", lambda r, n: r + math.prod(n - k for k in range(1, 9))),
    ("({r}) + (n-1)*(n-2)*(n-3)*(n-4)*(n-5)*(n-6)*(n-7)*(n-8)*(n-9)*(n-10)/10**12",
     lambda r, n: r + F(math.prod(n - k for k in range(1, 11)), 10 ** 12)),
    ("({r})*n/(n + 1) + ({r})/(n + 1) + 1/n - 1/n + (n - 1)*(n - 2)/2", lambda r, n: r + F((n - 1) * (n - 2), 2)),
    ("({r}) + floor(n/40)", lambda r, n: r + n // 40),
]

# matrix identities: (lhs, rhs, shapes, oracle lhs, oracle rhs, square perturbation allowed)
MATRIX = [
    ("trace(A*B)", "trace(B*A)", "A:n,m B:m,n", lambda M: np.trace(M["A"] @ M["B"]), lambda M: np.trace(M["B"] @ M["A"])),
    ("trace(A + B)", "trace(A) + trace(B)", "A:n,n B:n,n", lambda M: np.trace(M["A"] + M["B"]), lambda M: np.trace(M["A"]) + np.trace(M["B"])),
    ("(A*B).T", "B.T*A.T", "A:n,m B:m,k", lambda M: (M["A"] @ M["B"]).T, lambda M: M["B"].T @ M["A"].T),
    ("det(A*B)", "det(A)*det(B)", "A:n,n B:n,n", lambda M: np.linalg.det(M["A"] @ M["B"]), lambda M: np.linalg.det(M["A"]) * np.linalg.det(M["B"])),
    ("inv(A*B)", "inv(B)*inv(A)", "A:n,n B:n,n", lambda M: np.linalg.inv(M["A"] @ M["B"]), lambda M: np.linalg.inv(M["B"]) @ np.linalg.inv(M["A"])),
    ("diff(trace(A*X), X)", "A.T", "A:n,n X:n,n", lambda M: M["A"].T, lambda M: M["A"].T),
    ("diff(x.T*A*x, x)", "(A + A.T)*x", "A:n,n x:n", lambda M: (M["A"] + M["A"].T) @ M["x"], lambda M: (M["A"] + M["A"].T) @ M["x"]),
    ("diff(log(det(X)), X)", "inv(X).T", "X:n,n", lambda M: np.linalg.inv(M["X"]).T, lambda M: np.linalg.inv(M["X"]).T),
    ("diff(trace(X*X), X)", "2*X.T", "X:n,n", lambda M: 2 * M["X"].T, lambda M: 2 * M["X"].T),
    ("dot(x, y)", "dot(y, x)", "x:n y:n", lambda M: M["x"].T @ M["y"], lambda M: M["y"].T @ M["x"]),
    ("det(X.T)", "det(X)", "X:n,n", lambda M: np.linalg.det(M["X"].T), lambda M: np.linalg.det(M["X"])),
    ("trace(X)", "sum(diag(X))", "X:n,n", lambda M: np.trace(M["X"]), lambda M: np.sum(np.diag(M["X"]))),
    ("norm(x)**2", "dot(x, x)", "x:n", lambda M: np.sum(M["x"] ** 2), lambda M: (M["x"].T @ M["x"])[0, 0]),
    ("trace(outer(x, y))", "dot(x, y)", "x:n y:n", lambda M: np.trace(M["x"] @ M["y"].T), lambda M: (M["x"].T @ M["y"])[0, 0]),
    ("diff(dot(a, x), x)", "a", "a:n x:n", lambda M: M["a"], lambda M: M["a"]),
]
MATRIX_PERTURB = [
    ("2*({r})", lambda r, M: 2 * r),
    ("({r}).T", lambda r, M: np.asarray(r).T),
    ("({r}) + ({r})*({r})", lambda r, M: np.asarray(r) + np.asarray(r) @ np.asarray(r)),
]

POINTS = [-1000.0, -37.5, -7.0, -3.0, -2.5, -1.0, -0.5, -0.001, 0.0, 0.001, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.001, 4.0,
          7.5, 20.5, 21.0, 100.0, 999.5]


def _domain_ok(values, domain):
    for cond in filter(None, domain.split(",")):
        name, op, bound = cond[0], cond[1], float(cond[2:])
        if (op == ">" and not values[name] > bound) or (op == "<" and not values[name] < bound):
            return False
    return True


def _points(names, domain, rng):
    grid = [dict(zip(names, p)) for p in (zip(*[rng.sample(POINTS, len(POINTS)) for _ in names]))]
    grid += [{n: rng.choice(POINTS) * rng.choice([1, 1.37]) for n in names} for _ in range(200)]
    grid += [{n: p for n in names} for p in POINTS]
    return [v for v in grid if _domain_ok(v, domain)]


def _oracle_scalar(fl, fr, names, domain, rng, change=None):
    """True / False by numpy at hand-picked and random points inside the domain: the base identity by its sides,
    a perturbed one by its change (nonzero at a point where the base is finite: false)."""
    seen = 0
    with np.errstate(all="ignore"):
        for values in _points(names, domain, rng):
            a, b = fl(**values), fr(**values)
            if not (np.isfinite(a) and np.isfinite(b)):
                continue
            seen += 1
            if abs(a - b) > 1e-9 * (1 + abs(b)):
                return False
            if change is not None and change(b, [values[n] for n in names[-1:]] if "x" not in names else [values["x"]]) != 0:
                return False
    assert seen > 10
    return True


def _assume(domain):
    return ", ".join(f"{c[0]} {c[1]} {c[2:]}" for c in filter(None, domain.split(","))) or None


def _scalar_cases():
    cases = []
    for lhs, rhs, fl, fr, domain in SCALAR + PIECEWISE:
        names = sorted({n for n in ("a", "b", "c", "x", "y")
                        if any(f"{n}{after}" in f"({lhs}) ({rhs})" for after in ")*,/-+ ") or lhs.endswith(n) or rhs.endswith(n)})
        cases.append((lhs, rhs, fl, fr, domain, names, None))
        if fl is None:
            continue
        x = "x" if "x" in names else names[-1]
        for text, change in PERTURB:
            cases.append((lhs, text.format(r=rhs, x=x), fl, fr, domain, names, change))
    return cases


def _sum_cases():
    cases = []
    for lhs, rhs, fl, fr in SUMS:
        cases.append((lhs, rhs, fl, fr))
        for text, f in SUM_PERTURB:
            cases.append((lhs, text.format(r=rhs), fl, (lambda fr=fr, f=f: lambda n: f(fr(n), n))()))
    return cases


def _matrix_cases():
    cases = []
    for lhs, rhs, shapes, fl, fr in MATRIX:
        cases.append((lhs, rhs, shapes, fl, fr))
        for text, f in MATRIX_PERTURB:
            cases.append((lhs, text.format(r=rhs), shapes, fl, (lambda fr=fr, f=f: lambda M: f(fr(M), M))()))
    return cases


def _oracle_matrix(lhs, rhs, shapes, fl, fr, rng):
    """True / False by numpy at sizes 1, 3 and 7 with random (well-conditioned) matrices; None where the perturbed
    text is not well formed (a transpose of a non-square result, a product of non-square results)."""
    dims = {}
    for piece in shapes.split():
        name, d = piece.split(":")
        dims[name] = d.split(",")
    for n in (1, 3, 7, 2):
        sizes = {s: n + (i % 2) for i, s in enumerate(sorted({d for v in dims.values() for d in v}))}
        for _ in range(3):
            M = {}
            for name, d in dims.items():
                shape = (sizes[d[0]], sizes[d[1]] if len(d) == 2 else 1)
                M[name] = rng.standard_normal(shape) / math.sqrt(shape[0]) + (2 * np.eye(shape[0]) if shape[0] == shape[1] else 0)
            try:
                a, b = np.asarray(fl(M), dtype=float), np.asarray(fr(M), dtype=float)
            except ValueError:
                return None
            if a.shape != b.shape and a.size == b.size == 1:
                a, b = a.reshape(()), b.reshape(())
            if a.shape != b.shape or np.max(np.abs(a - b)) > 1e-9 * (1 + np.max(np.abs(b))):
                return False
    return True


def _check(verdict, truth, label):
    if truth is False:
        assert verdict.status not in ("proved", "holds"), f"false {verdict.status}: {label}: {verdict.line()}"
    else:
        assert verdict.status != "refuted", f"a true identity refuted: {label}: {verdict.line()}"


def _run_scalar(case, seed=0):
    lhs, rhs, fl, fr, domain, names, change = case
    truth = True if fl is None else _oracle_scalar(fl, fr, names, domain, random.Random(seed), change)
    v = derive.verify(f"{lhs} = {rhs}", variables=",".join(names), assume=_assume(domain), time_limit=3, points=24, seed=seed)
    _check(v, truth, f"{lhs} = {rhs} [{domain}]")
    return truth, v.status


def _run_sum(case, seed=0):
    lhs, rhs, fl, fr = case
    truth = all(fl(n) == fr(n) for n in list(range(1, 12)) + [40, 64, 100])
    v = derive.verify(f"{lhs} = {rhs}", sizes="n", time_limit=3, points=24, seed=seed)
    _check(v, truth, f"{lhs} = {rhs}")
    return truth, v.status


def _run_matrix(case, seed=0):
    lhs, rhs, shapes, fl, fr = case
    truth = _oracle_matrix(lhs, rhs, shapes, fl, fr, np.random.default_rng(seed))
    try:
        v = derive.verify(f"{lhs} = {rhs}", shapes=shapes, time_limit=3, seed=seed)
    except derive.verification.SeqgradValueError:
        assert truth in (None, False), f"refused a well-formed identity: {lhs} = {rhs}"
        return None, "bad input"
    if truth is None:  # the oracle could not evaluate it but verify read it: the shapes did fit after all
        truth = False if v.status == "refuted" else True
    _check(v, truth, f"{lhs} = {rhs} ({shapes})")
    return truth, v.status


SCALAR_CASES, SUM_CASES, MATRIX_CASES = _scalar_cases(), _sum_cases(), _matrix_cases()
ALL = [("scalar", c) for c in SCALAR_CASES] + [("sum", c) for c in SUM_CASES] + [("matrix", c) for c in MATRIX_CASES]
RUN = {"scalar": _run_scalar, "sum": _run_sum, "matrix": _run_matrix}


def test_the_fuzz_is_large_and_mixed():
    assert len(ALL) >= 300
    assert len(SUM_CASES) >= 40 and len(MATRIX_CASES) >= 40 and len(PIECEWISE) * (1 + len(PERTURB)) >= 80


# the default run: every family's true form and one perturbation of each kind (< 20 s)
QUICK = ([c for c in ALL[::9]] + [("scalar", c) for c in SCALAR_CASES if c[0] in ("min(x, 3)", "floor(x + 1)")][:4]
         + [("sum", c) for c in SUM_CASES[:6]] + [("matrix", c) for c in MATRIX_CASES[:4]])


@pytest.mark.parametrize("kind,case", QUICK, ids=[f"{k}:{c[0]} = {c[1]}"[:70] for k, c in QUICK])
def test_fuzz_quick(kind, case):
    RUN[kind](case)


@pytest.mark.slow
def test_fuzz_all():
    outcomes = [(kind, *RUN[kind](case)) for kind, case in ALL]
    false = [o for o in outcomes if o[1] is False]
    assert len(false) >= 150 and all(o[2] == "refuted" or o[2] == "undecided" for o in false)
