"""One signal policy for the ``seqgrad`` command and every worker process it starts.

The command (:func:`crosscheck.cli.console`) installs it first and keeps it to the end of the process:

* SIGINT raises :class:`KeyboardInterrupt` and SIGTERM raises :class:`Terminated`, so that ``finally``
  blocks remove whatever is half-written; the command ends with one line and exit 130 or 143.
* The first signal is remembered (:func:`received`).  Python drops an exception raised where it cannot
  propagate (an at-fork hook such as logging's ``_releaseLock``, a ``__del__``, a weakref callback) with
  "Exception ignored in ..."; the places that commit work (the swap of an output directory, the loop that
  waits for the workers) call :func:`raise_if_received`, so such a signal is never lost, and the policy's
  ``sys.unraisablehook`` drops that message for the policy's own exception (the command's one line says it).
* A second signal is ignored while the command unwinds: a second Ctrl-C cannot cut short the clean-up
  (ending the workers, 5 s at most each, and removing temporary files).
* No exception is raised inside an import.  A native extension's initialisation runs Python code from C++
  (``import torch`` does, through pybind11) where an exception cannot pass: the process aborts with
  "terminate called after throwing an instance of 'pybind11::error_already_set'".  A signal that comes
  while any import is under way is sent again every :data:`RETRY_S` seconds until the import is over
  (:data:`IMPORT_PATIENCE_S` at most), then handled as usual.
* :func:`held` holds both back over a few steps that must not be cut: the fork of a worker (the exception
  comes after the fork, in code that can raise, never inside the at-fork hooks), the renames that commit
  an output, the shut-down of a pool of workers.  Once the command has finished, both are held to the end
  of the process, and one that came is answered at exit (:func:`crosscheck.cli.console`).

A worker (:func:`worker`) ignores SIGINT (Ctrl-C reaches the whole process group, and the parent ends its
workers), raises :class:`Terminated` on SIGTERM (what the parent sends to end it) or keeps the default
(a ``multiprocessing.Pool`` worker, which the pool terminates), and is sent SIGTERM when its parent dies
(Linux ``prctl(PR_SET_PDEATHSIG)``): no worker outlives the command.  A worker is forked or spawned with
both signals held, so nothing reaches it before its policy is in place.

This module imports only the standard library.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from typing import Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM)

#: exit status and the word of the command's one line, per signal (128 + the signal's number, as shells do)
EXIT_STATUS = {signal.SIGINT: 130, signal.SIGTERM: 143}
WORD = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}


class Terminated(BaseException):
    """SIGTERM, raised like KeyboardInterrupt so that ``finally`` blocks clean up."""


_first: int | None = None  # the first SIGINT or SIGTERM the policy saw
_holding = 0  # depth of held(): the handler defers the exception to the end of the outermost one
_deferred: int | None = None  # a signal that came while held, raised when the outermost held() ends
_postponed_since: float | None = None  # when a signal first came inside an import (it is sent again later)

#: how soon a signal that came inside an import is sent again, and for how long at most it is put off
RETRY_S = 0.02
IMPORT_PATIENCE_S = 30.0


def received() -> int | None:
    """The first SIGINT or SIGTERM the policy has seen in this process (None: none yet)."""
    return _first


def exception_for(signum: int) -> BaseException:
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated()


def _inside_an_import(frame) -> bool:
    """Whether the interrupted Python code runs on behalf of an import (importlib's frames are on the stack)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _postpone(signum: int) -> bool:
    """Put ``signum`` off if it came inside an import (True); it is sent to this process again shortly."""
    global _postponed_since
    now = time.monotonic()
    if _postponed_since is None:
        _postponed_since = now
    elif now - _postponed_since > IMPORT_PATIENCE_S:
        _postponed_since = None
        return False
    timer = threading.Timer(RETRY_S, os.kill, (os.getpid(), signum))
    timer.daemon = True
    timer.start()
    return True


def _on_signal(signum, frame):
    global _first, _deferred, _postponed_since
    if _first is not None:  # a second signal: the first one's clean-up is under way, and is not cut short
        return
    if _inside_an_import(frame) and _postpone(signum):
        return
    _postponed_since = None
    _first = signum
    if _holding:  # a step that must not be cut: the exception comes at its end
        _deferred = signum
        return
    raise exception_for(signum)


def raise_if_received() -> None:
    """Raise the exception of the first signal seen, if there was one (it may have been dropped by Python
    where it was first raised: an at-fork hook, a ``__del__``)."""
    if _first is not None:
        raise exception_for(_first)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _mask(how: int):
    return signal.pthread_sigmask(how, SIGNALS) if hasattr(signal, "pthread_sigmask") else None


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back over a few steps; the exception of one that came meanwhile is raised
    at the end.  Both the thread's signal mask (a process forked here starts with them blocked) and the
    policy's handler (which another thread may run on the main thread's behalf) hold them."""
    global _holding, _deferred
    old = _mask(signal.SIG_BLOCK)
    _holding += 1
    try:
        yield
    finally:
        _holding -= 1
        if old is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
        if not _holding and _deferred is not None:
            signum, _deferred = _deferred, None
            raise exception_for(signum)


def hold_to_the_end() -> None:
    """Hold both signals from now on (the command has finished; :func:`received` tells of a late one)."""
    global _holding
    _holding += 1
    _mask(signal.SIG_BLOCK)


def pending() -> int | None:
    """A SIGINT or SIGTERM that is blocked and waiting, or None."""
    if not hasattr(signal, "sigpending"):  # pragma: no cover - not POSIX
        return None
    waiting = signal.sigpending()
    return next((s for s in SIGNALS if s in waiting), None)


def _reset() -> None:
    global _first, _holding, _deferred, _postponed_since
    _first, _holding, _deferred, _postponed_since = None, 0, None, None


class _QuietUnraisable:
    """``sys.unraisablehook`` that drops the policy's own exception where Python could not raise it (a
    weakref callback, a ``__del__``, an at-fork hook): the signal is remembered (:func:`received`) and
    raised again where work is committed, so "Exception ignored in ..." would only be noise before the
    command's one line.  Anything else goes to the hook it replaced."""

    def __init__(self, previous):
        self.previous = previous

    def __call__(self, unraisable) -> None:
        if _first is not None and isinstance(unraisable.exc_value, (KeyboardInterrupt, Terminated)):
            return
        self.previous(unraisable)


def _quiet_unraisable() -> None:
    if not isinstance(sys.unraisablehook, _QuietUnraisable):
        sys.unraisablehook = _QuietUnraisable(sys.unraisablehook)


def install() -> tuple:
    """Install the command's policy in this process; returns what :func:`restore` needs to undo it
    (a command run as a function, e.g. by a test, gives the process back as it found it)."""
    if not _in_main_thread():
        return ()
    _reset()
    previous = tuple(signal.signal(s, _on_signal) for s in SIGNALS)
    hook = sys.unraisablehook
    _quiet_unraisable()
    return previous, _mask(signal.SIG_UNBLOCK), hook


def restore(state: tuple) -> None:
    """Undo :func:`install` (a signal blocked meanwhile is delivered under the handler restored)."""
    if not state:
        return
    previous, mask, hook = state
    for s, handler in zip(SIGNALS, previous):
        signal.signal(s, handler)
    sys.unraisablehook = hook
    _reset()
    if mask is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


# ----------------------------------------------------------------------------- workers

PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int, signum: int = signal.SIGTERM) -> None:
    """Have the kernel send ``signum`` to this process when its parent ends (Linux); if the parent
    ``parent_pid`` has already ended, end now (exit 143)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent died before the request took effect
        os._exit(EXIT_STATUS[signal.SIGTERM])


def worker(parent_pid: int, raise_on_sigterm: bool = True) -> None:
    """The policy of a worker process, then both signals let through (a worker starts with them held):
    SIGINT ignored, SIGTERM raising :class:`Terminated` (or, with ``raise_on_sigterm=False``, ending
    the process as by default), and SIGTERM sent when the parent ``parent_pid`` dies.  A SIGTERM that
    reached the worker between its fork and now is raised here."""
    came = _deferred
    _reset()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_signal if raise_on_sigterm else signal.SIG_DFL)
    _quiet_unraisable()
    die_with_parent(parent_pid)
    _mask(signal.SIG_UNBLOCK)
    if came == signal.SIGTERM and raise_on_sigterm:
        _on_signal(signal.SIGTERM, None)


def pool_worker(parent_pid: int) -> None:
    """``initializer`` of a ``multiprocessing.Pool`` whose workers the pool terminates (SIGTERM ends them
    quietly); create the pool under :func:`held` so that its workers start with the signals held."""
    worker(parent_pid, raise_on_sigterm=False)
