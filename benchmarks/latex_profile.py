"""Profile: where the time of ``seqgrad latex notes.tex`` goes (start-up, each section and figure set, by kind of work).

Runs ``seqgrad latex OUT.tex`` (the full notes, every figure) and ``--standalone`` (the handout) as
subprocesses, ``--repeats`` times each, each under a thin wrapper (this script with ``--inner``) that records in
the command's own processes:

* the parent's serial start-up: the imports (torch, SymPy, the checks: to the end of
  :func:`crosscheck.registry.load_builtin_checks`), matplotlib's warm-up, the moments the workers are forked;
* every task (a section, a figure set) in the worker that ran it: its wall and CPU seconds, and its CPU split by
  kind of work, each second counted once, in the innermost kind it was spent in: the numeric checks against
  torch (``section_checks``, ``run_pattern``), the exact proofs (``prove_within``), the figures' data and plots
  (``Build.figures``, a figure set's task), the figures' layout and rendering to PDF (``save_figure``), and the
  rest of the section (derivations and printing);
* the end: from the last task to the exit (the document assembled and written, the workers ended).

A run on a shared machine waits for other jobs, so walls are inflated; the CPU seconds much less so.
``python benchmarks/latex_profile.py [--repeats N] [--no-record] [--smoke]`` (``--smoke``: one run of the
positional section each way, nothing recorded); the wrapper alone:
``python benchmarks/latex_profile.py --inner LOG -- latex OUT.tex [--standalone]``.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_profile import entry, trace  # noqa: E402  (benchmarks/check_profile.py: the wrapper's trace and entry)

#: the kinds of work a task's CPU is split into, in the order they are printed
KINDS = ("checks", "proofs", "figure data and plots", "figure layout and PDF", "derivations and printing")


def inner(log: str, argv: list[str]) -> None:
    """Run ``seqgrad ARGV`` with the marks written to ``log`` (JSON lines, :func:`check_profile.trace`)."""
    mark = trace(log)
    t0 = mark.t0

    import importlib.util

    import seqgrad.atomic as atomic

    # the document's pieces (check and proof marks, the Build); a tree before crosscheck/latex_parts.py
    # (--before) kept them in latexdoc
    latex_parts = importlib.import_module("seqgrad.crosscheck.latex_parts"
                                          if importlib.util.find_spec("seqgrad.crosscheck.latex_parts")
                                          else "seqgrad.crosscheck.latexdoc")
    import seqgrad.crosscheck.latexrun as latexrun
    import seqgrad.crosscheck.notes as notes
    import seqgrad.crosscheck.parallel as parallel
    import seqgrad.crosscheck.registry as registry

    stack: list[list] = []  # [kind, CPU at entry, CPU of the nested kinds]
    spent: dict[str, float] = defaultdict(float)

    def kind(fn, name):
        def wrapper(*a, **k):
            stack.append([name, time.process_time(), 0.0])
            try:
                return fn(*a, **k)
            finally:
                _, start, nested = stack.pop()
                total = time.process_time() - start
                spent[name] += total - nested
                if stack:
                    stack[-1][2] += total
        return wrapper

    def task(fn, name_of, what=KINDS[-1]):
        timed = kind(fn, what)

        def wrapper(*a, **k):
            spent.clear()
            t, c = time.perf_counter(), time.process_time()
            result = timed(*a, **k)
            mark("task", name=name_of(*a), start=t - t0, wall=time.perf_counter() - t, cpu_s=time.process_time() - c,
                 kinds=dict(spent))
            return result
        return wrapper

    notes.section_checks = kind(notes.section_checks, "checks")
    latex_parts.run_pattern = kind(latex_parts.run_pattern, "checks")
    prove = kind(latex_parts.prove_within, "proofs")

    def timed_proof(entry, seconds):
        c = time.process_time()
        result = prove(entry, seconds)
        mark("proof", name=entry.name, cpu_s=time.process_time() - c)
        return result

    latex_parts.prove_within = timed_proof
    latex_parts.Build.figures = kind(latex_parts.Build.figures, KINDS[2])
    save = kind(atomic.save_figure, KINDS[3])
    _import_figure_sets(save, atomic.save_figure)
    latexrun._build = task(latexrun._build, lambda section, b: section.name)
    latexrun._draw = task(latexrun._draw, lambda set_name, *a: f"figures {set_name}", KINDS[2])
    if hasattr(latexrun, "_prove"):  # the proofs started ahead of torch's import, in a worker of their own
        latexrun._prove = task(latexrun._prove, lambda *a: "proofs ahead", KINDS[1])
    run_one = registry.run_one

    def timed_check(item, *a, **k):
        c = time.process_time()
        result = run_one(item, *a, **k)
        mark("check", name=item.name, cpu_s=time.process_time() - c)
        return result

    registry.run_one = timed_check
    load, loaded = registry.load_builtin_checks, set()

    def load_once():
        load()
        if os.getpid() not in loaded:  # the first call imports; the others find the checks loaded
            loaded.add(os.getpid())
            mark("imported")

    registry.load_builtin_checks = load_once
    warm = latexrun._warm_matplotlib
    latexrun._warm_matplotlib = lambda: (warm(), mark("matplotlib warm"))[0]
    fork = parallel._fork

    def _fork(tasks, owner):
        mark("fork")
        return fork(tasks, owner)

    parallel._fork = _fork
    import atexit

    atexit.register(lambda: mark("exit"))
    from seqgrad.crosscheck import cli

    sys.argv = ["seqgrad", *argv]
    mark("start")
    cli.console()


def _import_figure_sets(save, original) -> None:
    """Import the figure sets and the modules that save figures, and point their ``save_figure`` at ``save``."""
    from seqgrad.crosscheck.figures import figure_sets

    figure_sets()
    for module in list(sys.modules.values()):  # the name each module imported it by, and the one of later imports
        if getattr(module, "save_figure", None) is original:
            module.save_figure = save


def summary(rows: list[dict]) -> dict:
    forks = [r for r in rows if r["what"] == "fork"]
    parent = min(r["pid"] for r in forks)  # the forks are the parent's
    first = forks[0]
    tasks = [r for r in rows if r["what"] == "task"]
    end = next(r for r in rows if r["what"] == "exit" and r["pid"] == parent)
    imported = next(r for r in rows if r["what"] == "imported" and r["pid"] == parent)
    warm = next((r for r in rows if r["what"] == "matplotlib warm" and r["pid"] == parent), imported)
    last = max(r["start"] + r["wall"] for r in tasks)
    kinds = {k: sum(r["kinds"].get(k, 0.0) for r in tasks) for k in KINDS}
    return {"imported wall": imported["t"], "imported cpu": imported["cpu"],
            "warm wall": warm["t"] - imported["t"], "warm cpu": warm["cpu"] - imported["cpu"],
            "first fork wall": first["t"], "first fork cpu": first["cpu"], "forks": len(forks),
            "tasks": {r["name"]: r["cpu_s"] for r in tasks},
            "checks": {r["name"]: r["cpu_s"] for r in rows if r["what"] == "check"}, "tasks cpu": sum(r["cpu_s"] for r in tasks),
            "kinds": kinds, "last task end": last, "exit": end["t"], "parent cpu": end["cpu"],
            "idle estimate": idle_estimate(forks, tasks, cores=2) + (end["cpu"] - forks[min(1, len(forks) - 1)]["cpu"])}


def idle_estimate(forks: list[dict], tasks: list[dict], cores: int) -> float:
    """Seconds the run would take on ``cores`` idle cores, were every phase as long as its CPU seconds: the parent's
    start-up on one core, each core starting at the parent's CPU seconds when its first worker was forked (a worker
    forked ahead starts before the parent imports matplotlib), then the tasks in the order they started, each on the
    core free first; the caller adds the parent's end.  An estimate from the measured CPU, not a measurement: it
    leaves out the forks and the scheduler."""
    free = [forks[min(k, len(forks) - 1)]["cpu"] for k in range(cores)]
    for r in sorted(tasks, key=lambda r: r["start"]):
        k = min(range(cores), key=lambda c: free[c])
        free[k] += r["cpu_s"]
    return max(free)


#: how many of the slowest checks the profile lists
TOP_CHECKS = 12
WAYS = (("full", "`seqgrad latex notes.tex` (every figure)", []), ("standalone", "`--standalone` (the handout)", ["--standalone"]))


def main(argv=None) -> int:
    return entry(argv, inner, _profile)


def _profile(argv: list[str]) -> int:
    import benchdoc  # noqa: E402  (benchmarks/benchdoc.py, beside this script)
    import procstat

    parser = benchdoc.arguments(__doc__, repeats=3, threads=None)
    parser.add_argument("--before", metavar="PYTHON", help="also profile the code this interpreter imports (e.g. the "
                        "main checkout's), in the same rounds")
    parser.add_argument("--before-label", metavar="TEXT", default="the code before", help="what --before runs, for the record")
    args = benchdoc.parse(parser, argv)
    pythons = [("this", "this code", sys.executable)] + ([("before", args.before_label, args.before)] if args.before else [])
    ways = [(f"{key} {who}", f"{label}, {said}", flags, python) for key, label, flags in WAYS for who, said, python in pythons]
    runs: dict[str, list[dict]] = {key: [] for key, *_ in ways}
    loads = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            for key, _, flags, python in ways:
                log = Path(tmp) / f"{key.replace(' ', '-')}{i}.jsonl"
                out = Path(tmp) / f"{key.replace(' ', '-')}{i}" / "notes.tex"
                out.parent.mkdir()
                loads.append(procstat.load_line())
                only = ["--sections", "positional"] if args.smoke else []
                m = procstat.measure([python, __file__, "--inner", str(log), "--", "latex", str(out), *flags, *only],
                                     env={"MPLBACKEND": "Agg"}, cwd=tmp)
                if m.rc != 0:
                    print(m.stderr[-2000:], file=sys.stderr)
                    return 1
                s = summary([json.loads(line) for line in log.read_text().splitlines()])
                s["wall"], s["cpu"] = m.wall, m.cpu
                runs[key].append(s)
                print(f"{key} {i + 1}: wall {m.wall:.1f} s, CPU {m.cpu:.1f} s, first fork at {s['first fork wall']:.2f} s "
                      f"({loads[-1]})", flush=True)
    parts = []
    for key, label, *_ in ways:
        parts.append(f"#### {label}\n\n" + tables(runs[key], benchdoc))
        print(parts[-1])
    if args.no_record:
        return 0
    md = (f"### Course notes: where the time goes ({args.repeats} runs each way, medians)\n\n"
          "Each task's CPU seconds are measured in the worker that ran it; a task's CPU is split by the kind of work it "
          "was spent in (each second counted once, in the innermost kind). Walls include waiting for other jobs on this "
          "shared machine (" + "; ".join(sorted(set(loads))[:3]) + "), so read the CPU columns.\n\n" + "\n\n".join(parts))
    print(benchdoc.record("latex_profile", md))
    return 0


def tables(runs: list[dict], benchdoc) -> str:
    """The phases, the kinds of work and the tasks of ``runs`` (medians), as Markdown tables."""
    med = lambda key: statistics.median(r[key] for r in runs)  # noqa: E731
    phases = [
        ["whole run (wall; CPU of the process tree)", f"{med('wall'):.2f}", f"{med('cpu'):.2f}"],
        ["start-up: interpreter, torch, SymPy and the checks imported", f"{med('imported wall'):.2f}", f"{med('imported cpu'):.2f}"],
        ["matplotlib imported and warmed up (a tiny figure)", f"{med('warm wall'):.2f}", f"{med('warm cpu'):.2f}"],
        ["start-up to the first fork", f"{med('first fork wall'):.2f}", f"{med('first fork cpu'):.2f}"],
        ["the tasks (sum over workers)", "", f"{med('tasks cpu'):.2f}"],
        ["the parent after the first fork (pool, document assembled and written), CPU", "",
         f"{med('parent cpu') - med('first fork cpu'):.2f}"],
        ["from the last task's end to the exit", f"{med('exit') - med('last task end'):.2f}", ""],
        ["estimate for 2 idle cores (each phase as long as its CPU seconds)", f"{med('idle estimate'):.2f}", ""],
    ]
    kinds = [[k, f"{statistics.median(r['kinds'][k] for r in runs):.2f}"] for k in KINDS]
    per_task: dict[str, list[float]] = defaultdict(list)
    for r in runs:
        for name, cpu in r["tasks"].items():
            per_task[name].append(cpu)
    task_rows = sorted(((name, statistics.median(v)) for name, v in per_task.items()), key=lambda kv: -kv[1])
    per_check: dict[str, list[float]] = defaultdict(list)
    for r in runs:
        for name, cpu in r["checks"].items():
            per_check[name].append(cpu)
    check_rows = sorted(((name, statistics.median(v)) for name, v in per_check.items()), key=lambda kv: -kv[1])
    return (benchdoc.table(["phase", "wall s", "CPU s"], phases) + "\n\n"
            + benchdoc.table(["kind of work (all tasks)", "CPU s (median)"], kinds) + "\n\n"
            + benchdoc.table(["task", "CPU s (median)"], [[name, f"{cpu:.2f}"] for name, cpu in task_rows])
            + "\n\n" + benchdoc.table([f"check (the {TOP_CHECKS} slowest of {len(check_rows)})", "CPU s (median)"],
                                       [[name, f"{cpu:.2f}"] for name, cpu in check_rows[:TOP_CHECKS]])
            + f"\n\nWorkers forked per run: {med('forks'):.0f}.")


if __name__ == "__main__":
    sys.exit(main())
