"""Run a computation for at most a given time: the answer, or None when it takes longer.

A timer signal interrupts the computation, so this works in the main thread of
a POSIX process; elsewhere (another thread, no ``setitimer``) the computation
runs to the end.  Used where an exact proof may take unboundedly long and "not
proved here" is an honest answer (SymPy simplification of a claim, the proofs
of the LaTeX document).
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
from typing import Callable, TypeVar

T = TypeVar("T")


class _OutOfTime(Exception):
    pass


def within(seconds: float | None, compute: Callable[[], T], *, cpu: bool = False) -> T | None:
    """``compute()``, or None when it takes longer than ``seconds`` (no limit when ``seconds`` is falsy).

    With ``cpu=True`` the seconds are CPU time of this process (a budget that does not shrink on a busy
    machine); otherwise wall-clock time."""
    if not seconds or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        return compute()

    def out_of_time(signum, frame):
        raise _OutOfTime

    which, timer = (signal.SIGVTALRM, signal.ITIMER_VIRTUAL) if cpu else (signal.SIGALRM, signal.ITIMER_REAL)
    previous = signal.signal(which, out_of_time)
    signal.setitimer(timer, seconds)
    try:
        return compute()
    except _OutOfTime:
        return None
    finally:
        signal.setitimer(timer, 0)
        signal.signal(which, previous)


def in_child(stage, args, seconds: float):
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
