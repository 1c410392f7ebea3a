r"""Your own identity in one call: ``derive.verify(lhs, rhs)`` and ``seqgrad verify "LHS = RHS"``.

The verdict is one of four:

``proved``
    ``lhs - rhs`` reduces to exactly 0 (each entry, for vectors) within the time limit;
``holds``
    no proof within the limit, but both sides agree at ``points`` random points
    (30-digit evaluation; sizes such as ``n`` drawn from 1..8);
``refuted``
    the sides differ at a point, which is reported (a counterexample), or the
    residual reduces to a nonzero number;
``undecided``
    the time limit was hit before the numeric check could finish, or no point
    could be evaluated.

Text goes through :mod:`derive.safe_parse` (never ``eval``/``sympify``) with
``diff(f, x)``, ``sum(f, i, a, b)``, vectors ``(a, b, c)`` and the vector
functions (``softmax``, ``layernorm``, ``mean``, ``var``, ``dot``, ``norm``)
allowed.  Every free symbol must be declared (``variables``; ``sizes`` for
positive integers such as the ``n`` of a sum).  Every stage runs under the
time limit in a child process, so nothing can hang the caller.

>>> v = verify("softmax((a + c, b + c))", "softmax((a, b))", variables="a b c")
>>> v.status, v.exit_code
('proved', 0)
>>> verify("sum(i, i, 1, n)", "n*(n + 1)/2", sizes="n").status
'proved'
>>> v = verify("sin(x)**2", "sin(x)", variables="x")
>>> v.status, v.exit_code
('refuted', 1)
"""

from __future__ import annotations

import math
import multiprocessing
import random
import time
from dataclasses import dataclass, field
from typing import Iterable

import sympy as sp

from seqgrad import validate
from seqgrad.errors import ParseError, SeqgradTypeError, SeqgradValueError

from .safe_parse import parse_value

__all__ = ["verify", "Verdict", "STATUSES", "EXIT_CODES"]

STATUSES = ("proved", "holds", "refuted", "undecided")
#: exit status of ``seqgrad verify`` per verdict (2 is bad input, raised before any verdict)
EXIT_CODES = {"proved": 0, "holds": 0, "refuted": 1, "undecided": 3}
SIZE_RANGE = (1, 8)


@dataclass
class Verdict:
    """The outcome of :func:`verify`."""

    status: str
    lhs: object
    rhs: object
    detail: str
    points: int = 0
    counterexample: dict = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    def __bool__(self) -> bool:
        return self.status in ("proved", "holds")

    def words(self) -> str:
        if self.status == "proved":
            return "proved"
        if self.status == "holds":
            return f"holds numerically at {self.points} points (not proved)"
        if self.status == "refuted":
            at = ", ".join(f"{k} = {v}" for k, v in self.counterexample.items())
            return "refuted" + (f" at {at}" if at else "")
        return "undecided"

    def line(self) -> str:
        """One line of text: the statement, the verdict and how it was reached."""
        return f"{_text(self.lhs)} = {_text(self.rhs)}: {self.words()} ({self.detail}; {self.seconds:.2f} s)"

    def latex(self) -> str:
        """A complete display (``align*``) for notes: the statement and the verdict."""
        from .latex_layout import display

        lhs, rhs = (sp.Tuple(*x) if isinstance(x, tuple) else x for x in (self.lhs, self.rhs))
        relation = sp.Ne if self.status == "refuted" else sp.Eq
        return display([(relation(lhs, rhs, evaluate=False), f"({self.words()})")])

    def _repr_latex_(self) -> str:
        return self.latex()

    def as_dict(self) -> dict:
        return {"status": self.status, "lhs": _text(self.lhs), "rhs": _text(self.rhs), "verdict": self.words(),
                "detail": self.detail, "points": self.points,
                "counterexample": {k: str(v) for k, v in self.counterexample.items()}, "seconds": round(self.seconds, 3),
                "exit_code": self.exit_code}


def _text(x) -> str:
    if isinstance(x, tuple):
        return "(" + ", ".join(sp.sstr(e) for e in x) + ")"
    return sp.sstr(x)


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


def _side(argument: str, value, variables, sizes):
    if isinstance(value, str):
        out = parse_value(value, variables=variables, argument=argument, calculus=True, sizes=sizes)
        return tuple(out) if isinstance(out, tuple) else out
    if isinstance(value, (list, tuple, sp.MatrixBase)):
        return tuple(_side(argument, v, variables, sizes) for v in value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return sp.nsimplify(value, rational=True)
    if isinstance(value, sp.Basic):
        return value
    raise SeqgradTypeError(argument, value, "a SymPy expression, a number, text, or a vector of them")


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


def verify(lhs, rhs=None, *, variables: Iterable[str] | str | None = None, sizes: Iterable[str] | str | None = None,
           time_limit: float = 5.0, points: int = 20, seed: int = 0) -> Verdict:
    """Prove ``lhs = rhs``, else check it at random points: a :class:`Verdict` (see the module docstring).

    ``lhs`` may be the whole text ``"LHS = RHS"`` (then ``rhs`` is None).  Sides are text (parsed safely),
    SymPy expressions, numbers, or vectors (tuples) of them.  ``variables`` and ``sizes`` name the free
    symbols (real variables, positive integer sizes); for SymPy input they default to its own symbols.
    """
    start = time.perf_counter()
    time_limit = validate.real("time_limit", time_limit, positive=True)
    if not 0.1 <= time_limit <= 600:
        raise SeqgradValueError("time_limit", time_limit, "a number of seconds from 0.1 to 600")
    points = validate.integer("points", points, minimum=1, maximum=10_000)
    variables, sizes = _names("variables", variables), _names("sizes", sizes)
    as_text = isinstance(lhs, str)
    if rhs is None:
        if not as_text or lhs.count("=") != 1 or any(op in lhs for op in ("==", "<=", ">=", "!=")):
            raise ParseError("identity", lhs, 'one "LHS = RHS" (or two sides: verify(lhs, rhs))')
        lhs, rhs = lhs.split("=")
    as_text = as_text or isinstance(rhs, str)
    L, R = _side("lhs", lhs, variables, sizes), _side("rhs", rhs, variables, sizes)
    if isinstance(L, tuple) != isinstance(R, tuple) or (isinstance(L, tuple) and len(L) != len(R)):
        raise SeqgradValueError("rhs", _text(R), f"the same shape as the left side {_text(L)}")
    _check_declared(L, R, variables, sizes, as_text)
    residual = [a - b for a, b in zip(L, R)] if isinstance(L, tuple) else [L - R]
    deadline = start + time_limit

    outcome = _run(_prove, (residual,), deadline - time.perf_counter())
    if outcome is not None and outcome[0] == "proved":
        return Verdict("proved", L, R, outcome[1], seconds=time.perf_counter() - start)
    if outcome is not None and outcome[0] == "refuted":
        return Verdict("refuted", L, R, outcome[1], seconds=time.perf_counter() - start)
    proof_note = "no proof within the time limit" if outcome is None else outcome[1]
    left = deadline - time.perf_counter()
    numeric = _run(_numeric, (L, R, points, seed), left) if left > 0.05 else None
    seconds = time.perf_counter() - start
    if numeric is None:
        return Verdict("undecided", L, R, f"{proof_note}; time limit of {time_limit:g} s hit before the numeric check finished",
                       seconds=seconds)
    status, count, point, note = numeric
    if status == "refuted":
        return Verdict("refuted", L, R, f"{proof_note}; {note}", count, point, seconds)
    if status == "holds":
        return Verdict("holds", L, R, f"{proof_note}; {note}", count, seconds=seconds)
    return Verdict("undecided", L, R, f"{proof_note}; {note}", count, seconds=seconds)


# --- the stages (run in a child process under the time limit) ---------------------------------------

def _run(stage, args, seconds: float):
    """``stage(*args)`` in a forked child, at most ``seconds``; None when the time ran out."""
    if seconds <= 0:
        return None
    try:
        ctx = multiprocessing.get_context("fork")
    except ValueError:  # no fork (Windows): run here, without a hard limit
        return stage(*args)
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(send, stage, args), daemon=True)
    child.start()
    send.close()
    ready = receive.poll(seconds)
    result = receive.recv() if ready else None
    if child.is_alive():
        child.kill()
    child.join(1)
    receive.close()
    return result


def _child(send, stage, args):  # pragma: no cover - runs in the child process
    try:
        send.send(stage(*args))
    except Exception as exc:  # a stage that fails says so; it never becomes a verdict by accident
        send.send(("failed", f"{type(exc).__name__}: {exc}"))
    finally:
        send.close()


def _reducers():
    from .proof import pythagorean, rational_zero
    from .rules import index_zero

    return (("evaluation", lambda e: e.doit()), ("expansion", lambda e: sp.expand(e.doit())),
            ("cancelling exponentials", lambda e: rational_zero(e.doit())), ("trigonometric reduction", lambda e: pythagorean(e.doit())),
            ("index notation", index_zero), ("simplify", lambda e: sp.simplify(e.doit())))


def _prove(residual: list):
    """("proved", how) when every entry reduces to 0; ("refuted", why) when one reduces to a nonzero number."""
    methods = []
    for entry in residual:
        for name, reduce in _reducers():
            try:
                r = reduce(entry)
            except Exception:  # a reducer that cannot handle this form: try the next
                continue
            if r == 0:
                methods.append(name)
                break
            if r.is_number and r.is_zero is False and not r.has(sp.nan, sp.zoo):
                return ("refuted", f"the difference reduces to {sp.sstr(r)}")
        else:
            return ("open", "no proof found")
    return ("proved", "exact reduction to 0 by " + ", ".join(dict.fromkeys(methods)))


def _numeric(L, R, points: int, seed: int):
    import mpmath

    rng = random.Random(seed)
    lhs, rhs = (list(L), list(R)) if isinstance(L, tuple) else ([L], [R])
    free = sorted(_free(L) | _free(R), key=lambda s: s.name)
    sizes = [s for s in free if s.is_integer]
    good = 0
    for _ in range(points * 3):
        if good >= points:
            break
        at = {s: (rng.randint(*SIZE_RANGE) if s.is_integer else
                  sp.Rational(rng.randint(1, 2000), 1000) if s.is_positive else sp.Rational(rng.randint(-2000, 2000), 1000))
              for s in free}
        try:
            with mpmath.workdps(30):
                a = [complex(sp.N(e.subs(at).doit(), 30)) for e in lhs]
                b = [complex(sp.N(e.subs(at).doit(), 30)) for e in rhs]
        except Exception:
            continue
        if not all(math.isfinite(v.real) and math.isfinite(v.imag) for v in a + b):
            continue
        good += 1
        for x, y in zip(a, b):
            if abs(x - y) > 1e-12 * (1 + abs(y)):
                return ("refuted", good, {str(k): v for k, v in at.items()},
                        f"the sides differ at a point: {_short(x)} vs {_short(y)}")
    if good == 0:
        return ("undecided", 0, {}, "no point could be evaluated")
    what = f"both sides agree at {good} random points (30 digits, tolerance 1e-12 relative)"
    return ("holds", good, {}, what + (f"; sizes drawn from {SIZE_RANGE[0]}..{SIZE_RANGE[1]}" if sizes else ""))


def _short(v: complex) -> str:
    return f"{v.real:.12g}" if v.imag == 0 else f"{v.real:.6g}{v.imag:+.6g}j"
