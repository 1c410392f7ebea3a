"""Run independent tasks in forked worker processes, one per core, and hand back every result.

``seqgrad check`` runs its groups of checks and its figure sets this way.
The workers are forked from the process that already imported the checks
(torch, SymPy, the registry), so they start at once and share those pages
instead of each importing its own copy.  Tasks are handed out one at a time
to whichever worker is free (the longest first when the caller orders them
so); results come back as ``(index, result)`` pairs in the order they finish,
and the caller puts them in its own order, so what a run reports does not
depend on the schedule.

Before forking, the parent freezes its objects out of the garbage collector's reach
(``gc.freeze``), so that the workers' collections do not copy the pages they share
with it; a worker whose own memory grew past ``recycle_mib`` (:data:`RECYCLE_MIB` unless the
caller trades otherwise) is replaced by a fresh fork after its task, which bounds the memory of a run.

A task that raises, or a worker that dies (a crash in a C extension, the
out-of-memory killer), never takes the run down: the task's ``lost``
function turns it into a result that says what happened, and a fresh worker
takes the remaining tasks.

Signals follow :mod:`seqgrad.signals`: a worker is forked with SIGINT and SIGTERM held back and
lets them through once its own policy is in place (SIGINT ignored, SIGTERM raising ``Terminated``, and
SIGTERM from the kernel when the parent dies), so a signal in the moment of a fork is neither dropped in
the at-fork hooks nor met by the parent's handler in the child; the parent registers each worker in the
same held step (an interruption right after a fork still ends that worker), checks for a signal that
Python dropped while it waits, and shuts the pool down with the signals held (the shut-down is bounded:
a worker gets 5 s, then is killed).

A caller that still has imports ahead of it (``seqgrad check`` imports SymPy in a fraction of a second,
torch and matplotlib in about 1.5 s more) can hand the tasks that need only what it has imported so far to a
:class:`HeadStart`: one worker forked at once, which works through them while the caller imports the rest, so
the second core does not idle through the caller's start-up.  :func:`run_tasks` then takes that worker over as
one of its ``jobs``; it runs only its own tasks, and the workers forked later take those it has not reached.

Without ``fork`` (Windows, or macOS where forking after importing torch is
unsafe), or with ``jobs <= 1``, the tasks run one after another in this process.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import signal
import sys
import traceback
from collections import deque
from multiprocessing.connection import wait
from dataclasses import dataclass
from typing import Callable, Generic, Iterator, Sequence, TypeVar

from seqgrad import signals

R = TypeVar("R")


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask, not the machine's total)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not Linux
        return max(os.cpu_count() or 1, 1)


def can_fork() -> bool:
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


@dataclass
class Task(Generic[R]):
    """One unit of work: ``run()`` gives its result; ``lost(reason)`` stands for it when it raised or its
    worker died; the heaviest (by ``weight``, e.g. estimated seconds) are handed out first.  An exception of a
    kind in ``raises`` (e.g. ``OSError``: a file that cannot be written, the user's to mend) is raised in the
    parent as it is, instead of ``lost``."""

    run: Callable[[], R]
    lost: Callable[[str], R]
    weight: float = 1.0
    raises: tuple = ()


def _by_weight(tasks: Sequence[Task], first: int = 0) -> list[int]:
    """Indices ``first``, ``first + 1``, ... of ``tasks``, heaviest first (stable: ties keep the given order)."""
    return sorted(range(first, first + len(tasks)), key=lambda i: -tasks[i - first].weight)


class HeadStart:
    """``tasks`` handed, heaviest first, to one worker forked now: it starts on them while this process goes on
    importing what its other tasks need.  Use it as a context manager around the :func:`run_tasks` call that
    takes it over (``head=``); leaving the block ends the worker if it is still there (an interruption before
    ``run_tasks``, an error).  Where this process cannot fork, no worker starts and ``run_tasks`` runs the
    tasks like its own.  The tasks must not need anything imported after this point (they would import it
    themselves, once per worker)."""

    def __init__(self, tasks: Sequence[Task[R]]):
        self.tasks = list(tasks)
        self.order = deque(_by_weight(self.tasks))
        self.process = self.conn = self.running = None
        if self.tasks and can_fork():
            freeze_heap()
            try:
                _fork(self.tasks, self)  # registers the worker here, so that a signal right after the fork ends it
                self.running = self.order.popleft()
                self.conn.send(self.running)
            except BaseException:
                self.close()
                raise

    def __enter__(self) -> "HeadStart":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """End the worker unless :func:`run_tasks` took it over (and then ended it)."""
        if self.process is None:
            return
        with signals.held():
            process, conn, self.process = self.process, self.conn, None
            if process.is_alive():
                process.terminate()
            _end(process, conn)


class Ahead(HeadStart):
    """One task started now in a worker of its own, whose result this process takes later with :meth:`result`
    (before it forks the workers that use it, say).  Where this process cannot fork, :meth:`result` runs the task
    here.  A worker that dies gives the task's ``lost`` result, as in :func:`run_tasks`."""

    def __init__(self, task: Task[R]):
        super().__init__([task])

    def result(self) -> R:
        """Wait for the task's result (its ``lost`` result if it raised or its worker died); the worker then ends."""
        task = self.tasks[0]
        if self.process is None:
            return _call(task)
        try:
            _, ok, payload, _ = self.conn.recv()
        except (EOFError, OSError):
            self.process.join(timeout=5)
            ok, payload = False, f"its worker process ended (exit code {self.process.exitcode})"
            self.close()
        except BaseException:  # interrupted while waiting: the worker is ended
            self.close()
            raise
        else:
            with signals.held():  # done: told to stop, it exits by itself (a SIGTERM now would meet its exit)
                process, conn, self.process = self.process, self.conn, None
                with contextlib.suppress(OSError):
                    conn.send(None)
                _end(process, conn)
        if not ok and isinstance(payload, BaseException):
            raise payload
        return payload if ok else task.lost(payload)


def run_tasks(tasks: Sequence[Task[R]], jobs: int, recycle_mib: float | None = None,
              head: HeadStart | None = None) -> Iterator[tuple[int, R]]:
    """Yield ``(i, result of tasks[i])`` for every task, as each finishes, using up to ``jobs`` worker processes;
    a worker that has written more than ``recycle_mib`` MiB of its own (default :data:`RECYCLE_MIB`) is replaced
    by a fresh fork after its task.  With ``head``, its tasks are done too, yielded as ``len(tasks) + j`` for
    ``head.tasks[j]``, and its worker counts as one of the ``jobs`` until it has no task of its own left."""
    extra = head.tasks if head is not None else []
    every = list(extra) + list(tasks)  # the head's tasks first: the indices its worker already knows
    shift = lambda k: k - len(extra) if k >= len(extra) else len(tasks) + k  # noqa: E731 - index in every -> yielded
    jobs = min(jobs, len(every))
    if jobs <= 1 or not can_fork():
        if head is not None:
            head.close()
        for k in _by_weight(extra) + _by_weight(tasks, len(extra)):
            yield shift(k), _call(every[k])
        return
    pool = _Pool(every, jobs, RECYCLE_MIB if recycle_mib is None else recycle_mib)
    for k, value in pool.run(deque(_by_weight(tasks, len(extra))), head):
        yield shift(k), value


def _call(task: Task[R]) -> R:
    try:
        return task.run()
    except Exception as exc:
        if isinstance(exc, task.raises):
            raise
        return task.lost(describe(exc))


def describe(exc: BaseException) -> str:
    """An exception in one line, with the file and line it came from (what a lost task's ``lost`` is told)."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" ({frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def _worker(tasks, conn, parent: int) -> None:
    """A worker: serve tasks until told to stop.  When the parent ends it (SIGTERM: the run was interrupted or
    failed, or the parent died), its policy raises ``Terminated``: its ``finally`` blocks clean up, e.g. a
    half-written file, and it exits 143 without printing a traceback for what is not an error of its own."""
    try:
        signals.worker(parent)  # Ctrl-C is the parent's to handle: it ends the workers
        if "torch" in sys.modules:  # as torch's DataLoader workers do: an OpenMP thread pool the parent started
            sys.modules["torch"].set_num_threads(1)  # does not survive fork; a parallel region would wait forever
        _serve(tasks, conn)
    except (SystemExit, Exception):  # an exit of its own; a bug in the loop itself (a task's errors are sent back)
        raise
    except BaseException:  # the policy's Terminated, after the unwinding
        raise SystemExit(signals.EXIT_STATUS[signal.SIGTERM]) from None


def _serve(tasks, conn) -> None:
    """A worker's loop: receive a task index, send back ``(i, ok, result or reason)``; None ends it."""
    while True:
        try:
            i = conn.recv()
        except EOFError:  # the parent is gone
            return
        if i is None:
            return
        try:
            message = (i, True, tasks[i].run(), _private_mib())
        except Exception as exc:  # a kind the task raises goes back as it is (an OSError pickles with its path)
            message = (i, False, exc if isinstance(exc, tasks[i].raises) else describe(exc), _private_mib())
        try:
            conn.send(message)
        except OSError:  # the parent is gone (killed): nobody to report to
            return
        except Exception as exc:  # a result that cannot be pickled
            conn.send((i, False, f"the result could not be sent back: {describe(exc)}", _private_mib()))


#: a worker whose own memory (pages it wrote since the fork, the caches of the tasks it ran) grew past this
#: is ended after its task and a fresh one forked for the next: the memory of a run stays near that of its
#: parent plus this much per worker, at the price of redoing what a later task would have found cached
RECYCLE_MIB = 64


def freeze_heap() -> None:
    """For a process about to fork workers: collect its garbage, then move every object alive into a generation
    the collector never walks (``gc.freeze``), so that the workers' collections do not write to (and copy) the
    pages they share with it (the refcounts a worker touches still do), and this process's later collections,
    e.g. while it imports matplotlib for the figure workers, do not walk torch's and SymPy's objects either.
    Those objects stay alive until the process ends, so only a command that is about to fork calls this."""
    gc.collect()
    gc.freeze()


def _private_mib() -> float:
    """This process's private dirty memory in MiB (Linux; 0 where /proc has no smaps_rollup)."""
    try:
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                if line.startswith("Private_Dirty:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _fork(tasks, registry):
    """Fork a worker serving ``tasks`` with the signals held, and register it in ``registry`` (a pool, registering
    it idle in ``busy``, or a :class:`HeadStart` or :class:`Ahead`, in ``process`` and ``conn``) in the same step."""
    sys.stdout.flush()
    sys.stderr.flush()
    context = multiprocessing.get_context("fork")
    with signals.held():
        here, there = context.Pipe()
        process = context.Process(target=_worker, args=(tasks, there, os.getpid()), daemon=True)
        process.start()
        if isinstance(registry, _Pool):
            registry.busy[process] = (here, None)
        else:
            registry.process, registry.conn = process, here
        there.close()
    return process, here


class _Pool:
    def __init__(self, tasks, jobs: int, recycle_mib: float):
        self.tasks, self.jobs, self.recycle_mib = tasks, jobs, recycle_mib
        self.busy: dict = {}  # worker process -> (connection, task index or None)
        self.head = None  # the HeadStart worker while it has tasks of its own, and its queue
        self.head_queue: deque = deque()

    def _start(self):
        """Fork a worker with the signals held, and register it (idle) in the same step."""
        return _fork(self.tasks, self)

    def _next(self, process, pending: deque):
        """The next task for ``process``: the head start's worker takes only its own tasks; the others take the
        run's, then those the head start's worker has not reached."""
        if process is self.head:
            return self.head_queue.popleft() if self.head_queue else None
        for queue in (pending, self.head_queue):
            if queue:
                return queue.popleft()
        return None

    def _hand_out(self, process, conn, pending: deque) -> None:
        i = self._next(process, pending)
        if i is None and process is self.head:  # it has done its part: a worker forked now takes its place
            self.head = None
            self._retire(process, conn)
            if pending or self.head_queue:
                self._hand_out(*self._start(), pending)
            return
        try:
            conn.send(i)
        except OSError:  # the worker died between two tasks: the task goes to a fresh one
            self.busy.pop(process, None)
            conn.close()
            process.join(timeout=5)
            if i is not None:
                (self.head_queue if process is self.head else pending).appendleft(i)
                if process is self.head:
                    self.head = None
                self._hand_out(*self._start(), pending)
            return
        self.busy[process] = (conn, i)

    def _take_over(self, head: HeadStart | None) -> int:
        """Register the head start's worker (busy with its first task); the number of workers it stands for."""
        if head is None:
            return 0
        self.head_queue = head.order
        if head.process is None:
            return 0
        with signals.held():
            self.head, self.busy[head.process] = head.process, (head.conn, head.running)
            head.process = None  # the pool ends it from now on
        return 1

    def run(self, pending: deque, head: HeadStart | None = None) -> Iterator[tuple[int, object]]:
        done = 0
        total = len(pending) + (len(head.tasks) if head is not None else 0)
        try:
            freeze_heap()
            for _ in range(self.jobs - self._take_over(head)):
                process, conn = self._start()
                self._hand_out(process, conn, pending)
            while done < total:
                signals.raise_if_received()  # a signal Python dropped (e.g. in an at-fork hook) ends the run here
                by_handle = {}
                for process, (conn, i) in self.busy.items():
                    if i is not None:
                        by_handle[conn] = process
                        by_handle[process.sentinel] = process
                for handle in wait(list(by_handle)):
                    process = by_handle[handle]
                    if process not in self.busy or self.busy[process][1] is None:
                        continue  # already handled through its other handle
                    conn, i = self.busy[process]
                    try:
                        j, ok, payload, private = conn.recv() if conn.poll() else _raise_eof()
                    except (EOFError, OSError):
                        process.join(timeout=5)
                        reason = f"its worker process ended (exit code {process.exitcode})"
                        del self.busy[process]
                        conn.close()
                        if process is self.head:  # its other tasks go to the workers forked later
                            self.head = None
                        done += 1
                        yield i, self.tasks[i].lost(reason)
                        if pending or self.head_queue:
                            process, conn = self._start()
                            self._hand_out(process, conn, pending)
                        continue
                    done += 1
                    if private > self.recycle_mib and process is not self.head and (pending or self.head_queue):
                        process, conn = self._recycle(process, conn)  # (the head start's worker keeps its caches
                        # for its own tasks: it ends when they do)
                    self._hand_out(process, conn, pending)
                    if not ok and isinstance(payload, BaseException):
                        raise payload
                    yield j, (payload if ok else self.tasks[j].lost(payload))
        finally:
            with signals.held():  # a signal now is delivered once every worker is ended
                self._close()

    def _recycle(self, process, conn):
        """End an idle worker and fork a fresh one in its place."""
        self._retire(process, conn)
        return self._start()

    def _retire(self, process, conn) -> None:
        """Tell an idle worker to stop, and wait for it."""
        del self.busy[process]
        try:
            conn.send(None)
        except OSError:
            pass
        _end(process, conn)

    def _close(self) -> None:
        for process, (conn, i) in self.busy.items():
            if i is not None and process.is_alive():  # interrupted mid-task: stop it now
                process.terminate()
            elif i is None and process.is_alive():  # idle: told to stop, unless the run ended before it was
                with contextlib.suppress(OSError):
                    conn.send(None)
        for process, (conn, _) in self.busy.items():
            _end(process, conn)
        self.busy.clear()


def _end(process, conn) -> None:
    """Wait for a worker that was told to stop (or terminated), killing it after 5 s; close its pipe."""
    process.join(timeout=5)
    if process.is_alive():
        process.kill()
        process.join()
    conn.close()


def _raise_eof():
    raise EOFError
