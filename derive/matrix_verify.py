r"""``verify`` for matrix and vector identities at symbolic size: ``trace(A*B) = trace(B*A)`` for A n x m, B m x n.

The sides are read by :mod:`derive.matrix_text` (``diff(f, X)`` through the rule table, :mod:`derive.matcalc`).
The proof, in a child process under the time limit, tries in turn

1. **matrix algebra**: ``L - R`` in SymPy's canonical matrix forms (``doit``) is the zero matrix (or 0);
2. **index notation** at symbolic size: every entry ``(L - R)_ij`` (a trace is ``sum_k M_kk``, a 1 x 1 product its
   entry) reduced by :func:`derive.rules.index_zero`, with rectangular sums brought to one nesting order (so
   ``sum_k sum_l A_kl B_lk`` and ``sum_l sum_k B_lk A_kl`` compare equal).  Determinants and inverses have no
   index form here: such identities are proved by (1) or checked numerically.

Whatever the proof says, both sides are also evaluated in float64 (numpy) at every size symbol = 1, random
small sizes (2..5), random sizes 9..20 and 64, with random standard-normal entries (square matrices of an
expression with det, inverse or log shifted to ``R/sqrt(n) + 2 I``, away from singular): a difference beyond
``1e-8 (1 + max |side|)`` refutes, even a proof (which would be a fault, reported as such).
"""

from __future__ import annotations

import random
import time

import sympy as sp

from seqgrad.errors import SeqgradValueError
from seqgrad.timebox import in_child

from .domains import _assumption_text, _draw_real, _interval
from .matrix_text import Declared, is_matrix, parse_matrix
from .rules import AsScalar, index_form, index_zero, rectangular_order
from .verdict import Verdict

__all__ = ["verify_matrix", "index_residual"]


def _minus(L, R):
    if is_matrix(L):
        return sp.MatAdd(L, sp.MatMul(-1, R))
    return L - R


def _structural_zero(residual) -> bool:
    try:
        r = residual.doit()
    except Exception:
        return False
    if is_matrix(r):
        return isinstance(r, sp.ZeroMatrix) or r == 0
    return sp.expand(r) == 0


def index_residual(residual):
    """The residual in index notation: entry (i, j) of a matrix, the scalar with traces and 1 x 1 products written
    as sums.  None when a determinant or an inverse has no index form."""
    if residual.has(sp.Determinant, sp.Inverse, sp.MatPow):
        return None
    if is_matrix(residual):
        i, j = sp.symbols("i j", integer=True, nonnegative=True)
        return index_form(residual, i, j)
    k = sp.Dummy("k", integer=True)

    def trace(M):
        return sp.Sum(index_form(M, k, k), (k, 0, M.shape[0] - 1))

    out = residual.replace(lambda e: isinstance(e, sp.Trace), lambda e: trace(e.arg))
    return out.replace(lambda e: isinstance(e, AsScalar), lambda e: index_form(e.arg, 0, 0))


def _prove(residual):
    if _structural_zero(residual):
        return ("proved", "matrix algebra at symbolic size (SymPy's canonical matrix forms)")
    indexed = index_residual(residual)
    if indexed is None:
        return ("open", "no proof by matrix algebra; determinants and inverses have no index form")
    reduced = index_zero(indexed)
    if reduced == 0 or rectangular_order(reduced) == 0:
        return ("proved", "index notation at symbolic size (KroneckerDelta sums, one nesting order, exact cancel)")
    return ("open", "no proof by matrix algebra or index notation")


def _draw(shape, rng, shift: bool):
    import numpy as np

    value = rng.standard_normal(shape)
    if shift and shape[0] == shape[1]:
        value = value / np.sqrt(shape[0]) + 2.0 * np.eye(shape[0])
    return value


def _size_plans(symbols, pick: random.Random, points: int) -> list:
    plans = [{s: 1 for s in symbols}]
    plans += [{s: pick.randint(2, 5) for s in symbols} for _ in range(2)]
    plans += [{s: pick.randint(9, 20) for s in symbols}]
    plans += [{s: 64 for s in symbols}]
    return plans if symbols else [{}]


def _numeric(L, R, declared: Declared, domains: dict, seed: int, points: int):
    """("refuted", point, note) or ("holds", count, note, sampled)."""
    import numpy as np

    from .matcalc import evaluate, numpy_ops

    rng, pick = np.random.default_rng(seed), random.Random(seed)
    ops = numpy_ops()
    shift = any(e.has(sp.Determinant, sp.Inverse, sp.MatPow, sp.log) for e in (L, R))
    free = (L.free_symbols | R.free_symbols)
    symbols = sorted({d for M in declared.matrices.values() if M in free for d in M.shape if isinstance(d, sp.Symbol)}
                     | {s for s in declared.sizes.values() if s in free}, key=str)
    matrices = [M for M in declared.matrices.values() if M in free]
    scalars = [s for s in declared.scalars.values() if s in free]
    per_plan = max(1, min(points // 5, 8))
    good, skipped, sizes_seen = 0, 0, set()
    for plan in _size_plans(symbols, pick, points):
        for _ in range(per_plan):
            env = {s: n for s, n in plan.items()}
            for M in matrices:
                env[M] = _draw(tuple(int(d.xreplace(plan)) if isinstance(d, sp.Basic) else int(d) for d in M.shape), rng, shift)
            for s in scalars:
                env[s] = float(_draw_real(pick, pick.choice(("scale", "integer", "half", "grid")),
                                          _interval(domains.get(s.name, []))))
            with np.errstate(all="ignore"):
                try:
                    a, b = np.asarray(evaluate(L, env, ops), dtype=float), np.asarray(evaluate(R, env, ops), dtype=float)
                except (np.linalg.LinAlgError, ValueError, ZeroDivisionError, OverflowError):
                    skipped += 1
                    continue
            if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
                skipped += 1
                continue
            good += 1
            sizes_seen.update(plan.values())
            scale = 1.0 + max(float(np.max(np.abs(a))), float(np.max(np.abs(b))))
            gap = float(np.max(np.abs(a - b)))
            if gap > 1e-8 * scale:
                where = {str(s): v for s, v in plan.items()}
                where.update({str(s): env[s] for s in scalars})
                return ("refuted", where, f"the sides differ by {gap:.3g} (relative {gap / scale:.3g}) at random values, "
                                          f"sizes {where or 'as declared'}")
    sampled = {"sizes": sorted(sizes_seen), "size_plans": ["1", "2..5", "9..20", "64"] if symbols else ["as declared"],
               "values": "standard normal entries" + (" (square matrices R/sqrt(n) + 2I)" if shift else ""),
               "points": good, "skipped": skipped}
    if good == 0:
        return ("undecided", 0, "no sample could be evaluated (every draw was singular or not finite)", sampled)
    note = (f"both sides agree in float64 at {good} random draws (tolerance 1e-8 x (1 + max |side|)), sizes "
            f"{', '.join(map(str, sorted(sizes_seen))) or 'as declared'}")
    return ("holds", good, note, sampled)


def _rests_on(used) -> str:
    """What a proof through ``diff(f, X)`` rests on: the rules of the table it used, each with its scope."""
    from .rules import RULES

    if not used:
        return ""
    return (", the derivative by the rule table, resting on its rules' proofs in derive.rules: "
            + "; ".join(f"{name} ({RULES[name].scope})" for name in used if name in RULES))


def verify_matrix(lhs, rhs, statement: str, shapes, variables, domains: dict, time_limit: float, seed: int,
                  start: float, points: int = 40):
    """The matrix form of :func:`derive.verify` (``shapes`` given): see the module docstring."""
    from .matcalc import derivative_of, rules_used

    declared = Declared(shapes, variables)
    if not isinstance(lhs, str) or not isinstance(rhs, str):
        raise SeqgradValueError("lhs", lhs, "text for both sides when shapes are given")
    with rules_used() as used:
        L = parse_matrix(lhs.strip(), declared=declared, argument="lhs", derivative=derivative_of)
        R = parse_matrix(rhs.strip(), declared=declared, argument="rhs", derivative=derivative_of)
    rests_on = _rests_on(used)
    if is_matrix(L) != is_matrix(R) or (is_matrix(L) and L.shape != R.shape):
        shape = lambda e: f"{sp.sstr(e.shape[0])} x {sp.sstr(e.shape[1])}" if is_matrix(e) else "a scalar"
        raise SeqgradValueError("rhs", rhs.strip(), f"the shape of the left side ({shape(L)}), not {shape(R)}")
    residual = _minus(L, R)
    common = dict(statement=statement, assumptions=_assumption_text(domains))
    outcome = in_child(_prove, (residual,), start + time_limit - time.perf_counter())
    numeric = _numeric(L, R, declared, domains, seed, points)
    seconds = time.perf_counter() - start
    if numeric[0] == "refuted":
        fault = "; the exact reduction said 0 (a fault, reported)" if outcome and outcome[0] == "proved" else ""
        return Verdict("refuted", L, R, numeric[2] + fault, 0, numeric[1], seconds, **common)
    if outcome is not None and outcome[0] == "proved":
        return Verdict("proved", L, R, f"{outcome[1]}{rests_on}; {numeric[2]}", numeric[1], seconds=seconds,
                       sampled=numeric[3], **common)
    note = "no proof within the time limit" if outcome is None else outcome[1]
    status = "holds" if numeric[0] == "holds" else "undecided"
    return Verdict(status, L, R, f"{note}; {numeric[2]}", numeric[1], seconds=seconds, sampled=numeric[3], **common)
