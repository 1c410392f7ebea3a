"""``seqgrad check``: run every registered check on the course example and write the report."""

from __future__ import annotations

import contextlib
import functools
import sys
import time
from pathlib import Path

from ._common import add_device, jobs_option, report_dir, resolved_device


def register(sub) -> None:
    p = sub.add_parser("check", help="run every registered check and write report.json, report.md, report.tex and figures")
    p.add_argument("--out", default="seqgrad-report", metavar="DIR",
                   help="output directory (default ./seqgrad-report); it is replaced as a whole, in one step, "
                        "so it must be new, empty or a previous report")
    add_device(p)
    p.add_argument("--only", metavar="PATTERN", action="append",
                   help="run only checks whose name or group matches (glob or substring); repeat to add patterns")
    p.add_argument("--dtype", choices=("float64", "float32"), default="float64", help="numeric precision (default float64)")
    p.add_argument("--no-figures", action="store_true", help="skip writing the figures")
    p.add_argument("--list", action="store_true", help="list the checks that would run, and exit")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 on textbook errata and experiment findings too (by default only a toolkit failure, "
                        "a derivation that disagrees with its reference or a crashed check, exits 1)")
    p.add_argument("--jobs", type=int, metavar="N",
                   help="worker processes: groups of checks and figure sets run in parallel "
                        "(default: one per usable CPU core on cpu, 1 on cuda; 1 runs everything in this process)")
    p.set_defaults(handler=run)


def run(args) -> int:
    from seqgrad import runcache

    from ..registry import ChecksAhead

    device = resolved_device(args.device)
    jobs = jobs_option(args.jobs, device)
    if not args.list:
        report_dir("--out", args.out)
    if jobs > 1 and not args.list:
        import_first_use(FIRST_USE_SYMPY)  # before the head start's fork: it and every later worker share it
    # a run on several cores: the SymPy-only groups start in a worker of their own before torch is imported
    # (crosscheck.registry.ChecksAhead), inside the run's cache scope like every other worker
    with runcache.scope(), (ChecksAhead(device, args.dtype, patterns=args.only) if jobs > 1 and not args.list
                            else contextlib.nullcontext()) as ahead:
        return _run(args, device, jobs, ahead)


def _run(args, device: str, jobs: int, ahead) -> int:
    from seqgrad.errors import SeqgradValueError

    from .. import report
    from ..registry import all_checks, run_with_tasks

    items = _selected(all_checks, args.only)
    if not items and not args.only:
        print("seqgrad: no checks are registered; nothing was verified", file=sys.stderr)
        return 1
    for pattern in args.only or ():
        if not all_checks(pattern):
            raise SeqgradValueError("--only", pattern, "a pattern matching at least one check (see seqgrad check --list)")
    if args.list:
        for item in items:
            print(f"{item.name}\t{item.group}\t{item.source}")
        return 0
    start = time.perf_counter()
    from seqgrad.numeric.device import one_thread

    if jobs > 1:  # about to fork the workers, and first to import matplotlib for their figures
        from ..parallel import freeze_heap

        import_first_use(FIRST_USE + (FIRST_USE_FIGURES if not args.no_figures and not args.only else ()))
        freeze_heap()

    with one_thread():  # the checks' tensors are tiny: extra torch threads only cost time
        results, elapsed = write_outputs(
            Path(args.out), functools.partial(run_with_tasks, items, device=device, dtype=args.dtype, jobs=jobs,
                                              recycle_mib=RECYCLE_MIB, ahead=ahead),
            device=device, dtype=args.dtype, start=start, figures=not args.no_figures and not args.only)
    print(report.terminal(results, strict=args.strict, ran=f" in {elapsed:.1f} s; report in {args.out}/"))
    sys.stdout.flush()
    return report.exit_status(results, args.strict)


#: Modules that the tasks import on first use, each in its own worker (found by listing the new entries of
#: ``sys.modules`` after every task of a run: each of these turned up in 4 to 6 of the run's workers).  Imported once
#: in the parent before the forks, they are shared by every worker instead (docs/benchmarks.md, "The main job,
#: round 3"; CPU of one import in a process that has torch, SymPy and matplotlib: SymPy's units 0.09 s, the
#: Agg backend with PIL's plugins 0.02 s, the others under 0.01 s each).
#: ``sympy.simplify`` imports SymPy's units on its first call; the head-start worker's identities call it too.
FIRST_USE_SYMPY = ("sympy.physics.units",)
#: the draws of random numbers (numpy.random), lambdify's printers (sympy.codegen), torch's symbolic shapes (which
#: torch imports on first use)
FIRST_USE = ("numpy.random", "sympy.codegen.ast", "torch.fx.experimental.symbolic_shapes")
#: what ``savefig`` of a PNG imports: the Agg canvas, and PIL's common plugins (``PIL.Image.preinit``)
FIRST_USE_FIGURES = ("matplotlib.backends.backend_agg", "PIL.Image")


def import_first_use(names) -> None:
    """Import ``names`` (and, with PIL, its common image plugins, as its first ``save`` would) in this process.  Only
    a saving of time: a module that this installation lacks (another torch, say) is left to the task that needs it."""
    import importlib

    for name in names:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if name == "PIL.Image":
            module.preinit()


#: seqgrad check replaces a worker that has written more than this many MiB of its own after its task (see
#: crosscheck.parallel.run_tasks).  A fresh worker writes 12 to 45 MiB in its first task (the reference counts of
#: the parent's objects it touches, SymPy's and torch's caches), so nearly every task gets a fresh fork: the peak
#: is about 390 MiB summed PSS instead of about 450 MiB at the pool's default 64, for about 0.3 s more wall on
#: 2 cores (docs/benchmarks.md).  seqgrad latex, which has a time target and no memory target, keeps the default.
RECYCLE_MIB = 32


def _selected(all_checks, patterns: list[str] | None) -> list:
    """Checks matching any of the ``--only`` patterns (all checks without one), in registry order."""
    if not patterns:
        return all_checks(None)
    chosen = {c.name for p in patterns for c in all_checks(p)}
    return [c for c in all_checks(None) if c.name in chosen]


def write_outputs(out: Path, run, *, device: str, dtype: str, start: float, figures: bool) -> tuple[list, float]:
    """Run the checks and draw the figures with ``run``, write the report, all into a fresh directory,
    and swap it into place at ``out`` in one step: after an interruption at any moment ``out`` is wholly
    the old report or wholly the new one, and nothing temporary remains.

    ``run(figure_tasks, joins=groups)`` returns the checks' results and each figure task's result (its
    paths), in order; ``seqgrad check`` passes :func:`crosscheck.registry.run_with_tasks`, which runs the
    groups of checks and the figure sets in one pool, so a worker that finishes its checks early draws
    figures while the other still checks, and a set that draws its group's data follows that group.
    Returns the results and the elapsed seconds the report records."""
    from seqgrad.atomic import atomic_directory

    from .. import report

    with atomic_directory(out) as fresh:
        tasks, joins = _figure_tasks(fresh / "figures", device) if figures else ([], [])
        results, sets = run(tasks, joins=joins)
        written = [path for paths in sets for path in paths]
        elapsed = time.perf_counter() - start
        report.write(fresh, results, device=device, dtype=dtype, total_seconds=elapsed, figures=written)
    return results, elapsed


FIGURE_SET_WEIGHT_S = 1.0  # estimated seconds to draw a figure set without its own SECONDS (the longest are handed out first)


def _figure_tasks(out: Path, device: str) -> tuple[list, list]:
    """One task per figure set, and for each the group of checks it joins (its ``GROUP``, None for none)."""
    from functools import partial

    import matplotlib.figure  # noqa: F401  (imported once here, not once per worker that draws a set)

    from ..figures import figure_sets
    from ..parallel import Task

    sets = figure_sets()
    return ([Task(partial(_write_figure_set, module, out / name, device), partial(_figure_set_lost, name),
                  getattr(module, "SECONDS", FIGURE_SET_WEIGHT_S))
             for name, module in sets.items()], [getattr(module, "GROUP", None) for module in sets.values()])


def _write_figure_set(module, out: Path, device: str) -> list[str]:
    return [str(Path(path).relative_to(out.parent.parent)) for path in module.write(out, "png", device)]


def _figure_set_lost(name: str, reason: str) -> list[str]:
    raise RuntimeError(f"figure set {name} was not written: {reason}")
