"""Profile: where the time of the main job, ``seqgrad check``, goes (start-up, each task, the figures, the end).

Runs ``seqgrad check --out TMP`` (CPU, float64, the default jobs) as a subprocess
``--repeats`` times, each under a thin wrapper (this script with ``--inner``) that
records, in the command's own processes, the moments the workers are forked, each
task's start, end and CPU seconds in the worker that ran it (a group of checks, a
shard of one, a figure set), and the process's exit.  From those it prints and
records the medians of:

* the serial start-up: from the process's start to the fork of the head-start worker
  (the SymPy-only checks, ``crosscheck.registry.ChecksAhead``) and to the fork of the
  first full worker (torch, the checks and matplotlib imported), with the parent's CPU;
* every task's CPU seconds in a fresh worker (the figure :data:`TASK_SECONDS` and the
  figure sets' ``SECONDS`` are read from), and the sums for the checks and the figures;
* the end: from the last task's end to the exit (the report written, the workers ended).

A run on a shared machine waits for other jobs, so walls are inflated; the CPU
seconds much less so.  ``python benchmarks/check_profile.py [--repeats N] [--no-record] [--smoke]``
(``--smoke``: one run of ``--only encoder``, nothing recorded, for CI);
the wrapper is also usable alone: ``python benchmarks/check_profile.py --inner LOG -- check --out DIR``.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path


def trace(log: str):
    """``mark(what, **fields)``: append one JSON line to ``log`` with the process, the seconds since this call and the
    process's CPU seconds (a profiler's trace: the profiled command and its forked workers append as they run)."""
    t0 = time.perf_counter()
    out = open(log, "a", buffering=1)  # noqa: SIM115 - open to the end of the process (and of its forks)

    def mark(what, **kw):
        out.write(json.dumps(dict(what=what, pid=os.getpid(), t=time.perf_counter() - t0, cpu=time.process_time(), **kw)) + "\n")

    mark.t0 = t0
    return mark


def entry(argv, inner, profile) -> int:
    """A profiling script's entry: ``--inner LOG [--] ARGS`` runs ``inner(LOG, ARGS)`` (the wrapper, inside the profiled
    command); anything else is the script's own options, for ``profile(argv)``."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--inner"]:
        inner(argv[1], argv[3:] if argv[2:3] == ["--"] else argv[2:])
        return 0
    return profile(argv)


def inner(log: str, argv: list[str]) -> None:
    """Run ``seqgrad ARGV`` with the marks written to ``log`` (JSON lines)."""
    mark = trace(log)
    t0 = mark.t0

    import seqgrad.crosscheck.commands.check as check
    import seqgrad.crosscheck.parallel as parallel
    import seqgrad.crosscheck.registry as registry

    def timed(fn, what, name_of):
        def wrapper(*a, **k):
            t, c = time.perf_counter(), time.process_time()
            result = fn(*a, **k)
            mark(what, name=name_of(*a), start=t - t0, wall=time.perf_counter() - t, cpu_s=time.process_time() - c)
            return result
        return wrapper

    registry.run_group = timed(registry.run_group, "task", lambda items, *a: f"{items[0].group}/{items[0].shard}".rstrip("/"))
    check._write_figure_set = timed(check._write_figure_set, "task", lambda module, *a: f"figures {module.NAME}")
    fork = parallel._fork

    def _fork(tasks, owner):
        mark("fork", head=isinstance(owner, parallel.HeadStart))
        return fork(tasks, owner)

    parallel._fork = _fork
    import atexit

    atexit.register(lambda: mark("exit"))
    from seqgrad.crosscheck import cli

    sys.argv = ["seqgrad", *argv]
    cli.console()


def summary(rows: list[dict]) -> dict:
    parent = min(r["pid"] for r in rows if r["what"] == "fork")  # the forks are the parent's
    forks = [r for r in rows if r["what"] == "fork"]
    head = next((r for r in forks if r["head"]), None)
    full = next(r for r in forks if not r["head"])
    tasks = [r for r in rows if r["what"] == "task"]
    end = next(r for r in rows if r["what"] == "exit" and r["pid"] == parent)
    last = max(r["start"] + r["wall"] for r in tasks)
    return {"idle estimate": idle_estimate(head, full, tasks, cores=2) + end["cpu"] - full["cpu"],  # + the parent's own end
            "head fork wall": head["t"] if head else float("nan"), "head fork cpu": head["cpu"] if head else float("nan"),
            "full fork wall": full["t"], "full fork cpu": full["cpu"], "forks": len(forks),
            "tasks": {r["name"]: r["cpu_s"] for r in tasks},
            "checks cpu": sum(r["cpu_s"] for r in tasks if not r["name"].startswith("figures")),
            "figures cpu": sum(r["cpu_s"] for r in tasks if r["name"].startswith("figures")),
            "last task end": last, "exit": end["t"], "parent cpu": end["cpu"]}


def idle_estimate(head: dict | None, full: dict, tasks: list[dict], cores: int) -> float:
    """Seconds the run would take on ``cores`` idle cores, were every phase as long as its CPU seconds: the parent's
    start-up on one core (the head-start worker, from its fork, on another), then the tasks in the order they
    started, each on the core free first (the head-start worker's tasks on its own core while it has them).  An
    estimate from the measured CPU, not a measurement: it leaves out the forks and the scheduler."""
    free = [full["cpu"]] + [head["cpu"] if head else full["cpu"]] * (cores - 1)
    mine = {r["pid"] for r in tasks if head and r["start"] < full["t"]}  # the head-start worker started before the parent forked again
    for r in sorted(tasks, key=lambda r: r["start"]):
        k = 1 if r["pid"] in mine else min(range(cores), key=lambda c: free[c])
        free[k] += r["cpu_s"]
    return max(free)


def main(argv=None) -> int:
    return entry(argv, inner, _profile)


def _profile(argv: list[str]) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import benchdoc  # noqa: E402  (benchmarks/benchdoc.py, beside this script)
    import procstat

    parser = benchdoc.arguments(__doc__, repeats=3, threads=None)
    args = parser.parse_args(argv)
    repeats = 1 if args.smoke else args.repeats
    runs, loads = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeats):
            log = Path(tmp) / f"run{i}.jsonl"
            loads.append(procstat.load_line())
            only = ["--only", "encoder"] if args.smoke else []
            m = procstat.measure([sys.executable, __file__, "--inner", str(log), "--", "check", "--out", str(Path(tmp) / f"out{i}"),
                                  *only], env={"MPLBACKEND": "Agg"})
            if m.rc != 0:
                print(m.stderr[-2000:], file=sys.stderr)
                return 1
            s = summary([json.loads(line) for line in log.read_text().splitlines()])
            s["wall"], s["cpu"] = m.wall, m.cpu
            runs.append(s)
            print(f"run {i + 1}: wall {m.wall:.1f} s, CPU {m.cpu:.1f} s, head start forked at {s['head fork wall']:.2f} s, "
                  f"first full worker at {s['full fork wall']:.2f} s ({loads[-1]})", flush=True)
    med = lambda key: statistics.median(r[key] for r in runs)  # noqa: E731
    per_task: dict[str, list[float]] = defaultdict(list)
    for r in runs:
        for name, cpu in r["tasks"].items():
            per_task[name].append(cpu)
    task_rows = sorted(((name, statistics.median(v)) for name, v in per_task.items()), key=lambda kv: -kv[1])
    phases = [
        ["whole run (wall; CPU of the process tree)", f"{med('wall'):.2f}", f"{med('cpu'):.2f}"],
        ["start-up to the head-start fork (SymPy and the identity catalogue imported)", f"{med('head fork wall'):.2f}",
         f"{med('head fork cpu'):.2f}"],
        ["start-up to the first full worker's fork (torch, the checks, matplotlib imported)",
         f"{med('full fork wall'):.2f}", f"{med('full fork cpu'):.2f}"],
        ["the checks' tasks (sum over workers)", "", f"{med('checks cpu'):.2f}"],
        ["the figure sets' tasks (sum over workers)", "", f"{med('figures cpu'):.2f}"],
        ["the parent after its imports (pool, report), CPU to the exit", "", f"{med('parent cpu') - med('full fork cpu'):.2f}"],
        ["from the last task's end to the exit", f"{med('exit') - med('last task end'):.2f}", ""],
        ["estimate for 2 idle cores (each phase as long as its CPU seconds; see idle_estimate)", f"{med('idle estimate'):.2f}", ""],
    ]
    table = benchdoc.table(["phase", "wall s", "CPU s"], phases)
    tasks = benchdoc.table(["task", "CPU s (median)"], [[name, f"{cpu:.2f}"] for name, cpu in task_rows])
    print(f"workers forked per run: {med('forks'):.0f}\n" + table + "\n\n" + tasks)
    if args.smoke or args.no_record:
        return 0
    md = (f"### The main job: where the time goes (`seqgrad check`, default jobs, {repeats} runs, medians)\n\n"
          "Each task's CPU seconds are measured in the worker that ran it (a fresh fork for most); walls include waiting "
          "for other jobs on this shared machine (" + "; ".join(sorted(set(loads))[:3]) + "), so read the CPU column. "
          f"Workers forked per run: {med('forks'):.0f}.\n\n" + table + "\n\n" + tasks)
    print(benchdoc.record("check_profile", md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
