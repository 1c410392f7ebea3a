"""Measure a command as a process tree: wall clock, CPU (user + system of every process), peak memory.

Shared by the main-job benchmarks (``check_main_job.py``, ``latex_notes.py``).
With ``memory=True`` memory is sampled every 20 ms from ``/proc`` over the
process and all its descendants (the worker processes of a parallel run): the
peak of the summed PSS (proportional set size: a page shared by the workers
after ``fork`` is counted once, split between them) is the memory the job
holds; the peak RSS of the largest single process is what ``/usr/bin/time``
would report.  Sampling is not free: reading every process's ``smaps_rollup``
fifty times a second takes a core's time away from a job that uses every core
(on 2 cores it added about 0.9 s to an 8 s run), so the timed runs are run
without it and the memory is read from a separate run.
"""

from __future__ import annotations

import os
import resource
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

MIB = 1024 * 1024


@dataclass
class Measured:
    rc: int
    wall: float  # seconds
    cpu: float  # seconds, user + system, the process and its children
    pss_mib: float  # peak of the summed PSS over the tree (nan where /proc has no smaps_rollup)
    rss_mib: float  # peak RSS of the largest single process of the tree
    stdout: str
    stderr: str


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def _memory(pid: int) -> tuple[float, float]:
    pss = rss = 0.0
    biggest = 0.0
    for p in _tree(pid):
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    pss += float(line.split()[1]) * 1024
                elif line.startswith("Rss:"):
                    rss = float(line.split()[1]) * 1024
            biggest = max(biggest, rss)
        except OSError:
            continue
    return pss / MIB, biggest / MIB


def measure(cmd: list[str], env: dict | None = None, cwd: str | None = None, memory: bool = False,
            interval: float = 0.02) -> Measured:
    """Run ``cmd`` to the end and measure it; ``memory`` samples the tree's memory (which costs the job time, see
    the module docstring), else ``pss_mib`` and ``rss_mib`` are nan."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})}, cwd=cwd)
    peak = [float("nan"), float("nan")]
    stop = threading.Event()

    def sample():
        peak[:] = [0.0, 0.0]
        while not stop.is_set():
            pss, rss = _memory(proc.pid)
            peak[0], peak[1] = max(peak[0], pss), max(peak[1], rss)
            stop.wait(interval)

    sampler = threading.Thread(target=sample, daemon=True)
    if memory:
        sampler.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    stop.set()
    if memory:
        sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    pss = peak[0] if Path(f"/proc/{os.getpid()}/smaps_rollup").exists() else float("nan")
    return Measured(proc.returncode, wall, cpu, pss, peak[1], out, err)


def rounds(keys, repeats: int, run) -> tuple[dict, dict]:
    """``repeats`` timed rounds of ``run(key, i, memory=False)`` over ``keys`` in turn (alternating, so that every
    way sees the same machine load), then one round of ``run(key, repeats, memory=True)`` for the peak memory
    (sampling slows the run it samples): the timed results of each key (a list) and its sampled result."""
    timed: dict = {key: [] for key in keys}
    sampled: dict = {}
    for i in range(repeats + 1):
        for key in keys:
            if i < repeats:
                timed[key].append(run(key, i, memory=False))
            else:
                sampled[key] = run(key, i, memory=True)
    return timed, sampled


def load_line() -> str:
    """The machine's load (1-minute average) against its cores, to say how shared the measurement was."""
    try:
        one = os.getloadavg()[0]
    except OSError:
        return "load unknown"
    return f"load average {one:.1f} on {os.cpu_count()} cores"
