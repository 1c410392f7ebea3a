"""Measure a command as a process tree: wall clock, CPU (user + system of every process), peak memory.

Shared by the main-job benchmarks (``check_main_job.py``, ``latex_notes.py``).
Memory is sampled every 20 ms from ``/proc`` over the process and all its
descendants (the worker processes of a parallel run): the peak of the summed
PSS (proportional set size: a page shared by the workers after ``fork`` is
counted once, split between them) is the memory the job holds; the peak RSS of
the largest single process is what ``/usr/bin/time`` would report.
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


def measure(cmd: list[str], env: dict | None = None, cwd: str | None = None, interval: float = 0.02) -> Measured:
    """Run ``cmd`` to the end and measure it."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})}, cwd=cwd)
    peak = [0.0, 0.0]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            pss, rss = _memory(proc.pid)
            peak[0], peak[1] = max(peak[0], pss), max(peak[1], rss)
            stop.wait(interval)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    stop.set()
    sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    pss = peak[0] if Path(f"/proc/{os.getpid()}/smaps_rollup").exists() else float("nan")
    return Measured(proc.returncode, wall, cpu, pss, peak[1], out, err)


def load_line() -> str:
    """The machine's load (1-minute average) against its cores, to say how shared the measurement was."""
    try:
        one = os.getloadavg()[0]
    except OSError:
        return "load unknown"
    return f"load average {one:.1f} on {os.cpu_count()} cores"
