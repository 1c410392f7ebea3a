"""Run a computation for at most a given time: the answer, or None when it takes longer.

A timer signal interrupts the computation, so this works in the main thread of
a POSIX process; elsewhere (another thread, no ``setitimer``) the computation
runs to the end.  Used where an exact proof may take unboundedly long and "not
proved here" is an honest answer (SymPy simplification of a claim, the proofs
of the LaTeX document).
"""

from __future__ import annotations

import signal
import threading
from typing import Callable, TypeVar

T = TypeVar("T")


class _OutOfTime(Exception):
    pass


def within(seconds: float | None, compute: Callable[[], T]) -> T | None:
    """``compute()``, or None when it takes longer than ``seconds`` (no limit when ``seconds`` is falsy)."""
    if not seconds or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        return compute()

    def out_of_time(signum, frame):
        raise _OutOfTime

    previous = signal.signal(signal.SIGALRM, out_of_time)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return compute()
    except _OutOfTime:
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
