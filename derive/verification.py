r"""Your own identity in one call: ``derive.verify(lhs, rhs)`` and ``seqgrad verify "LHS = RHS"``.

The verdict is one of four:

``proved``
    ``lhs - rhs`` reduces to exactly 0 (each entry, for vectors and matrices) within the time limit; a proof
    that needs a domain says so ("proved for x > 0" under ``assume``; "proved where defined: ..." when a side
    is undefined somewhere in the reals and no assumption excludes it);
``holds``
    no proof within the limit, but both sides agree at every sampled point: *evidence, not a proof*.  The
    points cover several scales (±1e-3 .. ±1e3), both signs, 0, integers and half-integers, points near the
    declared boundaries and at and beside the values where each piecewise function (abs, max, min, floor,
    sign, Piecewise) switches; sizes 1 .. 8 and up to 64; the verdict lists what was sampled;
``refuted``
    the sides differ at a point (the counterexample), or the difference reduces to a nonzero constant or
    polynomial (confirmed at sampled points, then refuted whatever its size);
``undecided``
    the time limit was hit before the numeric check could finish, or no point could be evaluated.

Text goes through :mod:`derive.safe_parse` (never ``eval``/``sympify``) with ``diff(f, x)``, ``sum(f, i, a, b)``,
vectors ``(a, b, c)`` and the vector functions allowed; with ``shapes`` (``"A:n,m B:m,n"``) the sides are
matrix expressions at symbolic size read by :mod:`derive.matrix_text` (``trace(A*B) = trace(B*A)``,
``diff(trace(A*X), X) = transpose(A)``).  Every free symbol must be declared (``variables``; ``sizes`` for
positive integers such as the ``n`` of a sum).  ``assume`` (``"x > 0, y >= 1"``) restricts variables to
intervals: the proof runs under them, the points are drawn inside them.  Every stage runs under the time
limit in a child process, so nothing can hang the caller.  The statement is echoed as typed.

>>> v = verify("softmax((a + c, b + c))", "softmax((a, b))", variables="a b c")
>>> v.status, v.exit_code
('proved', 0)
>>> verify("sum(i, i, 1, n) = n*(n + 1)/2", sizes="n").status
'proved'
>>> v = verify("sin(x)**2", "sin(x)", variables="x")
>>> v.status, v.exit_code
('refuted', 1)
>>> verify("log(x*y) = log(x) + log(y)", variables="x,y", assume="x > 0, y > 0").words()
'proved for x > 0, y > 0'
>>> verify("exp(log(x)) = x", variables="x").line().split(" (")[0]
'exp(log(x)) = x: proved where defined: x > 0'
"""

from __future__ import annotations

import math
import random
import time
from typing import Iterable

import mpmath
import sympy as sp

from seqgrad import validate
from seqgrad.errors import NonFiniteError, ParseError, SeqgradTypeError, SeqgradValueError
from seqgrad.timebox import in_child

from .domains import (SCALES, _assumed_symbols, _assumption_text, _draw_real, _in_domain, _interval, _interval_free,
                      _KINDS, parse_assumptions)
from .safe_parse import parse_expression, parse_value
from .verdict import EXIT_CODES, STATUSES, Verdict, _text

__all__ = ["verify", "Verdict", "STATUSES", "EXIT_CODES", "SCALES", "SIZE_POOL", "parse_assumptions"]

#: the sizes sampled for positive integer symbols (plus random ones from 9 to 63)
SIZE_POOL = (1, 2, 3, 4, 5, 6, 7, 8, 64)
#: relative tolerance of the 30-digit comparison of the two sides
TOLERANCE = 1e-20
#: the sizes of the numeric check of matrix identities: every size symbol 1, small, and at least 64
MATRIX_SIZES = ("1", "2..5", "9..20", "64")
MATRIX_TOLERANCE = 1e-8


def _names(argument: str, value) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(n for n in value.replace(",", " ").split() if n)
    try:
        return tuple(str(v) if isinstance(v, (str, sp.Symbol)) else _bad(argument, value) for v in value)
    except TypeError:
        raise SeqgradTypeError(argument, value, "names as a string 'x y' / 'x,y' or a list of names") from None


def _bad(argument, value):
    raise SeqgradTypeError(argument, value, "names as a string 'x y' / 'x,y' or a list of names")


def _finite_side(argument: str, value) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise NonFiniteError(argument, value)
    if isinstance(value, sp.Basic) and value.has(sp.nan, sp.oo, -sp.oo, sp.zoo):
        raise SeqgradValueError(argument, sp.sstr(value), "a finite expression (no nan, oo or zoo)")


def _side(argument: str, value, variables, sizes, evaluate: bool = True):
    if isinstance(value, str):
        with sp.evaluate(evaluate):
            out = parse_value(value, variables=variables, argument=argument, calculus=True, sizes=sizes)
        return tuple(out) if isinstance(out, tuple) else out
    if isinstance(value, (list, tuple, sp.MatrixBase)):
        return tuple(_side(argument, v, variables, sizes) for v in value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _finite_side(argument, value)
        return sp.nsimplify(value, rational=True)
    if isinstance(value, sp.Basic):
        _finite_side(argument, value)
        return value
    raise SeqgradTypeError(argument, value, "a SymPy expression, a number, text, or a vector of them")


def _derivatives_done(e):
    return e.replace(lambda x: isinstance(x, sp.Derivative), lambda x: x.doit()) if e.has(sp.Derivative) else e


def _free(x) -> set:
    if isinstance(x, tuple):
        return set().union(*[_free(e) for e in x]) if x else set()
    return set(x.free_symbols)


def _check_declared(lhs, rhs, variables, sizes, given_as_text: bool):
    free = _free(lhs) | _free(rhs)
    declared = set(variables) | set(sizes)
    undeclared = sorted(str(s) for s in free if str(s) not in declared)
    if undeclared and (given_as_text or variables or sizes):
        raise SeqgradValueError("variables", ", ".join(undeclared),
                                "every free symbol declared: pass variables=... (sizes=... for positive integers)")
    for s in free:
        if str(s) in sizes and not (s.is_integer and s.is_positive):
            raise SeqgradValueError("sizes", str(s), "a positive integer symbol: Symbol(name, integer=True, positive=True)")


# --- assumptions ---------------------------------------------------------------------------------


# --- domains: where a side is defined in the reals ------------------------------------------------

def _conditions(*sides) -> list:
    """Conditions for the sides to be defined in the reals, read off the unevaluated sides: log(u) needs u > 0,
    sqrt(u) and even roots u >= 0, 1/u needs u != 0, asin/acos |u| <= 1."""
    out: dict = {}
    for side in sides:
        for e in (side if isinstance(side, tuple) else (side,)):
            if not isinstance(e, sp.Basic):
                continue
            for node in sp.preorder_traversal(e):
                if isinstance(node, sp.log) and node.args[0].free_symbols:
                    out[sp.Gt(node.args[0], 0, evaluate=False)] = None
                elif node.is_Pow and node.base.free_symbols and node.exp.is_Rational:
                    if not node.exp.is_Integer and node.exp.q % 2 == 0:
                        out[sp.Ge(node.base, 0, evaluate=False)] = None
                    if node.exp < 0:
                        out[sp.Ne(node.base, 0, evaluate=False)] = None
                elif isinstance(node, (sp.asin, sp.acos)) and node.args[0].free_symbols:
                    out[sp.Le(sp.Abs(node.args[0]), 1, evaluate=False)] = None
    return list(out)


_TESTS = {sp.StrictGreaterThan: ("is_positive", ">"), sp.GreaterThan: ("is_nonnegative", ">="), sp.Unequality: ("is_nonzero", "!="),
          sp.LessThan: (None, "<=")}


def _unmet(conditions, subs, free) -> list[str]:
    """The conditions on the identity's own variables that the assumptions do not imply (as text), each once."""
    left = []
    for c in conditions:
        if not c.lhs.free_symbols <= free:
            continue  # a bound summation index: not a condition on the variables
        test, op = _TESTS[type(c)]
        if test is not None and getattr(c.lhs.xreplace(subs), test) is True:
            continue
        left.append(f"{sp.sstr(c.lhs)} {op} {sp.sstr(c.rhs)}")
    return list(dict.fromkeys(left))


def verify(lhs, rhs=None, *, variables: Iterable[str] | str | None = None, sizes: Iterable[str] | str | None = None,
           shapes=None, assume: str | None = None, assumptions: str | None = None,
           time_limit: float = 5.0, points: int = 40, seed: int = 0) -> Verdict:
    """Prove ``lhs = rhs``, else check it at sampled points: a :class:`Verdict` (see the module docstring).

    ``lhs`` may be the whole text ``"LHS = RHS"`` (then ``rhs`` is None).  Sides are text (parsed safely),
    SymPy expressions, numbers, or vectors (tuples) of them.  ``variables`` and ``sizes`` name the free
    symbols (real variables, positive integer sizes); for SymPy input they default to its own symbols.
    ``shapes`` declares matrices and column vectors (``"A:n,m x:n"``): the sides are then matrix expressions.
    ``assume`` (or ``assumptions``) bounds variables: ``"x > 0, y >= -1"``.
    """
    start = time.perf_counter()
    time_limit = validate.real("time_limit", time_limit, positive=True)
    if not 0.1 <= time_limit <= 600:
        raise SeqgradValueError("time_limit", time_limit, "a number of seconds from 0.1 to 600")
    points = validate.integer("points", points, minimum=1, maximum=10_000)
    variables, sizes = _names("variables", variables), _names("sizes", sizes)
    if assume is not None and assumptions is not None and assume != assumptions:
        raise SeqgradValueError("assumptions", assumptions, "one of assume= and assumptions= (they are the same option)")
    domains = parse_assumptions(assume if assume is not None else assumptions, variables)
    as_text = isinstance(lhs, str)
    statement = lhs.strip() if as_text and rhs is None else ""
    if rhs is None:
        if not as_text or lhs.count("=") != 1 or any(op in lhs for op in ("==", "<=", ">=", "!=")):
            raise ParseError("identity", lhs, 'one "LHS = RHS" (or two sides: verify(lhs, rhs))')
        lhs, rhs = lhs.split("=")
    elif as_text and isinstance(rhs, str):
        statement = f"{lhs.strip()} = {rhs.strip()}"
    as_text = as_text or isinstance(rhs, str)
    if shapes:
        from .matrix_verify import verify_matrix

        return verify_matrix(lhs, rhs, statement, shapes, variables, domains, time_limit, seed, start, points)
    L, R = _side("lhs", lhs, variables, sizes), _side("rhs", rhs, variables, sizes)
    if isinstance(L, tuple) != isinstance(R, tuple) or (isinstance(L, tuple) and len(L) != len(R)):
        raise SeqgradValueError("rhs", _text(R), f"the same shape as the left side {_text(L)}")
    for side, name in ((L, "lhs"), (R, "rhs")):
        for e in side if isinstance(side, tuple) else (side,):
            _finite_side(name, e)
    _check_declared(L, R, variables, sizes, as_text)
    free = _free(L) | _free(R)
    try:  # the sides as typed (no auto-evaluation): where each is defined
        raw = [_side(n, s, variables, sizes, evaluate=False) if isinstance(s, str) else v
               for n, s, v in (("lhs", lhs, L), ("rhs", rhs, R))]
    except Exception:
        raw = [L, R]
    subs, back = _assumed_symbols(free, domains)
    domain = _unmet(_conditions(*raw), subs, free)
    assumed_text = _assumption_text(domains)
    residual = [a - b for a, b in zip(L, R)] if isinstance(L, tuple) else [L - R]
    residual = [_derivatives_done(r).xreplace(subs) for r in residual]  # d/dx before x is written through its bound
    deadline = start + time_limit
    common = dict(statement=statement, assumptions=assumed_text, typed=tuple(raw))

    outcome = in_child(_prove, (residual,), deadline - time.perf_counter())
    if outcome is not None and outcome[0] == "proved":
        return Verdict("proved", L, R, outcome[1], seconds=time.perf_counter() - start, domain=domain, **common)
    if outcome is not None and outcome[0] == "constant":  # back in the variables as declared
        outcome = ("constant", outcome[1], outcome[2].xreplace(back), outcome[3])
        proof_note = f"the difference reduces to {_shown(outcome[2])}"
    else:
        proof_note = "no proof within the time limit" if outcome is None else str(outcome[1])
    left = deadline - time.perf_counter()
    done = lambda side: tuple(_derivatives_done(e) for e in side) if isinstance(side, tuple) else _derivatives_done(side)
    # the sides with their derivatives taken, as the proof had them (an unevaluated d/dx cannot be evaluated at a point)
    numeric = in_child(_numeric, (done(L), done(R), points, seed, domains, outcome), left) if left > 0.05 else None
    seconds = time.perf_counter() - start
    if numeric is None:
        return Verdict("undecided", L, R, f"{proof_note}; time limit of {time_limit:g} s hit before the numeric check finished",
                       seconds=seconds, **common)
    if numeric[0] == "failed":
        return Verdict("undecided", L, R, f"{proof_note}; the numeric check failed ({numeric[1]})", seconds=seconds, **common)
    status, count, point, note, sampled = numeric
    if status == "refuted":
        return Verdict("refuted", L, R, note, count, point, seconds, sampled=sampled, **common)
    if status == "holds":
        return Verdict("holds", L, R, f"{proof_note}; {note}", count, seconds=seconds, domain=domain, sampled=sampled, **common)
    return Verdict("undecided", L, R, f"{proof_note}; {note}", count, seconds=seconds, sampled=sampled, **common)


# --- the stages (run in a child process under the time limit) ---------------------------------------


def _reducers():
    """(name, reduce, exact value): ``exact`` when the reduced form equals the residual (a nonzero one is then the
    difference itself); index notation reduces a numerator, which says only zero or not."""
    from .operations import primitives
    from .proof import pythagorean, rational_zero
    from .rules import index_zero

    return (("evaluation", lambda e: e.doit(), True), ("expansion", lambda e: sp.expand(e.doit()), True),
            ("cancelling exponentials", lambda e: rational_zero(e.doit()), True),
            ("trigonometric reduction", lambda e: pythagorean(e.doit()), True),
            ("logarithm expansion", lambda e: sp.expand(sp.expand_log(e.doit())), True),
            ("index notation", _index_reducer(index_zero), False), ("simplify", lambda e: sp.simplify(e.doit()), True),
            ("the operations' definitions (seqgrad.operations) and simplify",
             lambda e: sp.simplify(primitives(e.doit())), True))


def _index_reducer(index_zero):
    def reduce(e):
        if e.has(sp.Piecewise, sp.Min, sp.Max, sp.Abs, sp.floor, sp.ceiling, sp.sign):
            raise ValueError("index notation drops Piecewise ranges: not for piecewise functions")
        return index_zero(e)

    return reduce


def _polynomial(r) -> bool:
    """A nonzero constant or a polynomial in the free symbols (no functions): nonzero somewhere on any open set."""
    if r.is_number:
        return r.is_zero is False and not r.has(sp.nan, sp.zoo, sp.oo)
    syms = sorted(r.free_symbols, key=sp.default_sort_key)
    return bool(syms) and r.is_polynomial(*syms) and not r.atoms(sp.Function, sp.Sum)


def _prove(residual: list):
    """("proved", how); ("constant", index, reduced) when an entry reduces exactly to a nonzero constant or
    polynomial (the numeric stage confirms it and finds where it is nonzero); ("open", why) otherwise."""
    methods = []
    for k, entry in enumerate(residual):
        for name, reduce, exact in _reducers():
            try:
                r = reduce(entry)
            except Exception:  # a reducer that cannot handle this form: try the next
                continue
            if r == 0:
                methods.append(name)
                break
            if exact and _polynomial(sp.expand(r)):
                return ("constant", k, sp.expand(r), name)
        else:
            return ("open", "no proof found")
    return ("proved", "exact reduction to 0 by " + ", ".join(dict.fromkeys(methods)))


def _switches(exprs) -> list:
    """The expressions whose zeros are where a piecewise function switches (abs, sign, max/min, floor, Piecewise)."""
    out: dict = {}
    for e in exprs:
        for node in sp.preorder_traversal(e):
            if isinstance(node, (sp.Abs, sp.sign, sp.Heaviside, sp.floor, sp.ceiling, sp.frac)):
                out[node.args[0]] = None
            elif isinstance(node, (sp.Max, sp.Min)):
                for a in node.args:
                    for b in node.args:
                        if a is not b:
                            out[a - b] = None
            elif isinstance(node, sp.Piecewise):
                for _, cond in node.args:
                    if isinstance(cond, sp.core.relational.Relational):
                        out[cond.lhs - cond.rhs] = None
    return [u for u in out if u.free_symbols]


def _size_value(rng: random.Random, k: int) -> int:
    pool = list(SIZE_POOL) + [rng.randint(9, 63)]
    return pool[k % len(pool)] if k < 2 * len(pool) else rng.choice(pool)


_OFFSETS = (0, sp.Rational(1, 2), -sp.Rational(1, 2), sp.Rational(1, 1000), -sp.Rational(1, 1000))


def _switch_point(rng, at, switches, reals, intervals, target=None):
    """Move one variable onto (or beside) a zero of a switch expression, the others as drawn; ``target`` =
    (switch, variable, offset) chooses them, else they are drawn."""
    if not switches:
        return
    u, v, offset = target if target is not None else (rng.choice(switches), None, rng.choice(_OFFSETS))
    candidates = [s for s in reals if s in u.free_symbols]
    if not candidates:
        return
    v = v if v is not None else rng.choice(candidates)
    fixed = u.xreplace({s: at[s] for s in u.free_symbols if s != v})
    try:
        roots = [r for r in sp.solve(fixed, v) if r.is_real]
    except Exception:
        return
    if not roots:
        return
    x = sp.nsimplify(rng.choice(roots)) + offset
    if x.is_number and x.is_real and _in_domain(x, intervals[v]):
        at[v] = x


def _schedule(points: int, reals, switches):
    """The kinds of the points, in order: each kind for every variable; then every switch expression and variable
    at the zero and 1/2 and 1/1000 on either side; then each variable of its own random kind."""
    plan = [("all", kind, None) for kind in _KINDS]
    targets = [(u, v, off) for u in switches for v in reals if v in u.free_symbols for off in _OFFSETS]
    plan += [("all", "switch", t) for t in targets[: max(points // 2, 10)]]
    return plan


def _sampled_summary(used_kinds, sizes_used, reals, switches, domains) -> dict:
    return {"real_values": {"scales": [f"±{s:g}" for s in SCALES], "integers": True, "half_integers": True,
                            "grid": "[-2, 2] in steps of 1/1000", "near_boundaries": sorted(domains),
                            "switch_points": [sp.sstr(u) + " = 0" for u in switches]} if reals else {},
            "kinds": sorted(used_kinds), "sizes": sorted(set(sizes_used))}


def _numeric(L, R, points: int, seed: int, domains: dict, proof=None):
    import mpmath

    rng = random.Random(seed)
    lhs, rhs = (list(L), list(R)) if isinstance(L, tuple) else ([L], [R])
    free = sorted(_free(L) | _free(R), key=lambda s: s.name)
    sizes = [s for s in free if s.is_integer]
    reals = [s for s in free if not s.is_integer]
    intervals = {s: _interval(domains.get(s.name, [])) for s in reals}
    for s in reals:
        if s.is_positive and intervals[s][0] is None:
            intervals[s] = (sp.Integer(0), True, intervals[s][2], intervals[s][3])
    switches = _switches(lhs + rhs)
    used_kinds, sizes_used = set(), []
    good, skipped = 0, 0
    constant = proof if proof is not None and proof[0] == "constant" else None
    plan = _schedule(points, reals, switches)
    for k in range(points * 4):
        if good >= points:
            break
        _, kind, target = plan[k] if k < len(plan) else ("mixed", "mixed", None)
        at, kinds_here = {}, set()
        for s in sizes:
            at[s] = sp.Integer(_size_value(rng, k))
        for s in reals:
            own = rng.choice(_KINDS[:4] + ("boundary",)) if kind == "mixed" else kind
            own = "scale" if own in ("switch", "boundary") and (own == "switch" or _interval_free(intervals[s])) else own
            at[s] = _draw_real(rng, own, intervals[s])
            kinds_here.add(own)
        if kind == "switch" or (kind == "mixed" and rng.random() < 0.25):
            _switch_point(rng, at, switches, reals, intervals, target)
            kinds_here.add("switch")
        try:
            with mpmath.workdps(30):  # compared at 30 digits (a float64 comparison would not see 1 in 2**64)
                a = [_mp(sp.N(e.xreplace(at).doit(), 30)) for e in lhs]
                b = [_mp(sp.N(e.xreplace(at).doit(), 30)) for e in rhs]
        except Exception:
            skipped += 1
            continue
        if not all(mpmath.isfinite(v.real) and mpmath.isfinite(v.imag) and abs(v.imag) < 1e-25 * (1 + abs(v.real))
                   for v in a + b):
            skipped += 1  # outside the real domain of a side: not a point of the claim
            continue
        good += 1
        used_kinds |= kinds_here
        sizes_used += [int(at[s]) for s in sizes]
        summary = _sampled_summary(used_kinds, sizes_used, reals, switches, domains)
        if constant is not None:  # the reduction confirmed here (50 digits of the difference itself), then believed
            _, index, reduced, how = constant
            r = complex(sp.N(reduced.xreplace(at), 50))
            with mpmath.workdps(50):
                d = complex(sp.N((lhs[index] - rhs[index]).xreplace(at).doit(), 50))
            if abs(r) > 0 and abs(d - r) <= 1e-10 * abs(r):
                return ("refuted", good, {str(s): v for s, v in at.items()},
                        f"the difference reduces ({how}) to {_shown(reduced)}, nonzero here: it is refuted whatever its size",
                        summary)
        for x, y in zip(a, b):
            with mpmath.workdps(30):
                differ = abs(x - y) > TOLERANCE * (1 + abs(y))
            if differ:
                return ("refuted", good, {str(s): v for s, v in at.items()},
                        f"the sides differ at a point: {_short(x)} vs {_short(y)} (difference {_nstr(x - y)}, 30 digits)",
                        summary)
    summary = _sampled_summary(used_kinds, sizes_used, reals, switches, domains)
    if good == 0:
        return ("undecided", 0, {}, "no point could be evaluated (every sampled point lies outside the real domain)", summary)
    what = (f"both sides agree at {good} points (30 digits, tolerance {TOLERANCE:g} relative)"
            + (f"; real values at scales ±1e-3 .. ±1e3, integers, half-integers, 0" if reals else "")
            + (f"; switch points of {', '.join(sp.sstr(u) + ' = 0' for u in switches)}" if switches and "switch" in used_kinds else "")
            + (f"; near the bounds of {', '.join(sorted(domains))}" if domains else "")
            + (f"; sizes {', '.join(map(str, sorted(set(sizes_used))))}" if sizes else "")
            + (f"; {skipped} points outside the real domain skipped" if skipped else ""))
    return ("holds", good, {}, what, summary)


def _shown(reduced) -> str:
    """A reduced difference for a message: the number, or the polynomial (its degree when it is long)."""
    text = sp.sstr(reduced)
    if len(text) <= 80:
        return text
    syms = sorted(reduced.free_symbols, key=sp.default_sort_key)
    return f"a nonzero polynomial of degree {sp.Poly(reduced, *syms).total_degree()} in {', '.join(map(str, syms))}"


def _mp(v):
    """A SymPy number as an mpmath complex at the working precision (nan where it has no value)."""
    re, im = v.as_real_imag()
    return mpmath.mpc(sp.Float(re, 30)._mpf_, sp.Float(im, 30)._mpf_)


def _nstr(v) -> str:
    """An mpmath number to 6 digits: a real one without the ``+ 0.0j`` an mpc prints."""
    return mpmath.nstr(v.real if mpmath.im(v) == 0 else v, 6)


def _short(v) -> str:
    v = complex(v)
    return f"{v.real:.12g}" if v.imag == 0 else f"{v.real:.6g}{v.imag:+.6g}j"
