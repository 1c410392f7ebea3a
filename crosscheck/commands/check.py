"""``seqgrad check``: run every registered check on the course example and write the report."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ._common import add_device, jobs_option, output_dir, resolved_device


def register(sub) -> None:
    p = sub.add_parser("check", help="run every registered check and write report.json, report.md, report.tex and figures")
    p.add_argument("--out", default="seqgrad-report", metavar="DIR", help="output directory (default ./seqgrad-report)")
    add_device(p)
    p.add_argument("--only", metavar="PATTERN", help="run only checks whose name or group matches (glob or substring)")
    p.add_argument("--dtype", choices=("float64", "float32"), default="float64", help="numeric precision (default float64)")
    p.add_argument("--no-figures", action="store_true", help="skip writing the figures")
    p.add_argument("--list", action="store_true", help="list the checks that would run, and exit")
    p.add_argument("--jobs", type=int, metavar="N",
                   help="worker processes: groups of checks and figure sets run in parallel "
                        "(default: one per usable CPU core on cpu, 1 on cuda; 1 runs everything in this process)")
    p.set_defaults(handler=run)


def run(args) -> int:
    from seqgrad.errors import SeqgradValueError

    from .. import report
    from ..registry import all_checks

    device = resolved_device(args.device)
    jobs = jobs_option(args.jobs, device)
    items = all_checks(args.only)
    if not args.list:
        output_dir("--out", args.out)
    if not items and not args.only:
        print("seqgrad: no checks are registered; nothing was verified", file=sys.stderr)
        return 1
    if args.only and not items:
        raise SeqgradValueError("--only", args.only, "a pattern matching at least one check (see seqgrad check --list)")
    if args.list:
        for item in items:
            print(f"{item.name}\t{item.group}\t{item.source}")
        return 0
    start = time.perf_counter()
    figures_dir = None if args.no_figures or args.only else Path(args.out) / "figures"
    results, figures = run_checks_and_figures(items, device, args.dtype, figures_dir, jobs)
    elapsed = time.perf_counter() - start
    paths = report.write(args.out, results, device=device, dtype=args.dtype, total_seconds=elapsed, figures=figures)
    _print_table(results)
    s = report.summary(results)
    print(f"\n{s['passed']} passed, {s['failed']} failed, {s['skipped']} skipped in {elapsed:.1f} s; report in {paths['md'].parent}/")
    return 0 if s["ok"] else 1


def run_checks_and_figures(items, device: str, dtype: str, figures_dir: Path | None, jobs: int) -> tuple[list, list[str]]:
    """Run the checks and write the figure sets under ``figures_dir`` (None: no figures), in up to ``jobs``
    processes: each group of checks and each figure set is one task.  Derivations are shared within the run
    (:mod:`seqgrad.runcache`); the results come back in the order of ``items`` and the figure paths
    (relative to ``figures_dir``'s parent) in figure-set order, whatever the schedule."""
    from numeric.device import one_thread
    from seqgrad import runcache

    from ..registry import run_with_tasks

    with one_thread(), runcache.scope():  # the checks' tensors are tiny: extra torch threads only cost time
        figure_tasks = [] if figures_dir is None else _figure_tasks(figures_dir, device)
        results, written = run_with_tasks(items, figure_tasks, device, dtype, jobs=jobs)
    return results, [path for paths in written for path in paths]


FIGURE_SET_WEIGHT_S = 2.0  # estimated seconds to draw one figure set (for handing out the longest tasks first)


def _figure_tasks(out: Path, device: str) -> list:
    from functools import partial

    import matplotlib.figure  # noqa: F401  (imported once here, not once per worker that draws a set)

    from ..figures import figure_sets
    from ..parallel import Task

    return [Task(partial(_write_figure_set, module, out / name, device), partial(_figure_set_lost, name), FIGURE_SET_WEIGHT_S)
            for name, module in figure_sets().items()]


def _write_figure_set(module, out: Path, device: str) -> list[str]:
    return [str(Path(path).relative_to(out.parent.parent)) for path in module.write(out, "png", device)]


def _figure_set_lost(name: str, reason: str) -> list[str]:
    raise RuntimeError(f"figure set {name} was not written: {reason}")


def _print_table(results) -> None:
    from ..report import fmt_error

    width = max([len(r.name) for r in results] + [5])
    swidth = min(max([len(r.source) for r in results] + [6]), 40)
    print(f"{'check':<{width}}  {'source':<{swidth}}  {'max abs err':>11}  {'max rel err':>11}  result")
    for r in results:
        mark = {"pass": "PASS", "fail": "FAIL", "skip": "skip", "error": "ERROR"}[r.status]
        print(f"{r.name:<{width}}  {r.source[:swidth]:<{swidth}}  {fmt_error(r.max_abs_error):>11}  {fmt_error(r.max_rel_error):>11}  {mark}")
    sys.stdout.flush()
