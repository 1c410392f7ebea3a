"""Derivations shared within one run: each is computed once per run, however many checks or sections ask.

``seqgrad check`` and ``seqgrad latex`` ask for the same derivations several
times (an activation fact proved by its own check and again inside another
fact's proof; the same fact proved for the notes' text and for the notes'
check table).  A function decorated with :func:`memo` keeps its results while a
:func:`scope` is open (a CLI command opens one around its work) and computes
afresh outside one, so a REPL user who calls it twice gets the computation
twice, exactly as its docstring describes, and no result outlives the run.

Only pure derivations belong here: functions of hashable arguments (numbers,
strings, tuples, SymPy expressions) whose result is never mutated by a caller
(frozen dataclasses, SymPy objects).  A worker process forked inside a scope
(:mod:`crosscheck.parallel`) inherits the scope and what was cached so far.

>>> from seqgrad import runcache
>>> calls = []
>>> @runcache.memo
... def square(n):
...     calls.append(n)
...     return n * n
>>> square(3), square(3), len(calls)          # outside a run: computed each time
(9, 9, 2)
>>> with runcache.scope():
...     square(4), square(4), len(calls)      # inside a run: once
(16, 16, 3)
>>> runcache.stats()["square"]                # computed, reused (this run)
(1, 1)
"""

from __future__ import annotations

import contextlib
import functools
import os
from typing import Callable, Iterator, TypeVar

F = TypeVar("F", bound=Callable)
T = TypeVar("T")

_depth = 0  # open scopes (re-entrant: latex inside check, tests inside a scope)
_values: dict[tuple, object] = {}
_counts: dict[str, list[int]] = {}  # name -> [computed, reused] in the current (or last) run


@contextlib.contextmanager
def scope() -> Iterator[None]:
    """One run: :func:`memo` functions keep their results until the outermost scope closes.

    With the environment variable ``SEQGRAD_RUNCACHE=0`` a scope keeps nothing (every call
    computes), so a benchmark can measure what the sharing saves in the same run."""
    global _depth
    if os.environ.get("SEQGRAD_RUNCACHE") == "0":
        yield
        return
    if _depth == 0:
        _values.clear()
        _counts.clear()
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            _values.clear()


def active() -> bool:
    """Whether a run is open (results are being kept)."""
    return _depth > 0


def memo(fn: F) -> F:
    """Keep ``fn``'s result per argument tuple while a :func:`scope` is open."""
    name = getattr(fn, "__qualname__", repr(fn))

    @functools.wraps(fn)
    def cached(*args, **kwargs):
        if _depth == 0:
            return fn(*args, **kwargs)
        key = (fn, args, tuple(sorted(kwargs.items())))
        try:
            hash(key)
        except TypeError:  # an unhashable argument: nothing to share it by
            return fn(*args, **kwargs)
        counts = _counts.setdefault(name, [0, 0])
        try:
            value = _values[key]
        except KeyError:
            value = _values[key] = fn(*args, **kwargs)
            counts[0] += 1
        else:
            counts[1] += 1
        return value

    cached.uncached = fn  # type: ignore[attr-defined]
    return cached  # type: ignore[return-value]


def once(key: tuple, compute: Callable[[], T]) -> T:
    """``compute()`` once per run for ``key`` (a hashable tuple naming what it computes), as :func:`memo` does
    for a function's arguments: for a result whose inputs are not hashable but are named (an identity of the
    catalogue by its name).  Outside a run, every call computes."""
    if _depth == 0:
        return compute()
    name = str(key[0])
    counts = _counts.setdefault(name, [0, 0])
    try:
        value = _values[("once",) + key]
    except KeyError:
        value = _values[("once",) + key] = compute()
        counts[0] += 1
    else:
        counts[1] += 1
    return value


def computed(name: str) -> dict:
    """What :func:`once` computed under ``name`` (its key's first element) in this run, in this process: the
    results a worker of the run hands back to its parent, which :func:`adopt` takes in."""
    return {key: value for key, value in _values.items() if key[:2] == ("once", name)}


def adopt(values: dict) -> None:
    """Take into this run the results that :func:`computed` gave in another process of the same run (a worker
    forked inside the scope): later calls of :func:`once` for those keys find them, here and in the workers forked
    from here.  Outside a run there is nothing to keep them in, so nothing is taken."""
    if _depth > 0:
        _values.update(values)


def stats() -> dict[str, tuple[int, int]]:
    """``{function: (computed, reused)}`` for the current (or last) run, in this process."""
    return {name: (c[0], c[1]) for name, c in _counts.items()}
