"""``seqgrad check``: run every registered check on the course example and write the report."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ._common import add_device, output_dir, resolved_device


def register(sub) -> None:
    p = sub.add_parser("check", help="run every registered check and write report.json, report.md, report.tex and figures")
    p.add_argument("--out", default="seqgrad-report", metavar="DIR", help="output directory (default ./seqgrad-report)")
    add_device(p)
    p.add_argument("--only", metavar="PATTERN", help="run only checks whose name or group matches (glob or substring)")
    p.add_argument("--dtype", choices=("float64", "float32"), default="float64", help="numeric precision (default float64)")
    p.add_argument("--no-figures", action="store_true", help="skip writing the figures")
    p.add_argument("--list", action="store_true", help="list the checks that would run, and exit")
    p.set_defaults(handler=run)


def run(args) -> int:
    from seqgrad.errors import SeqgradValueError

    from .. import report
    from ..registry import all_checks, run_checks

    device = resolved_device(args.device)
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
    from numeric.device import one_thread

    with one_thread():  # the checks' tensors are tiny: extra torch threads only cost time
        results = run_checks(items, device=device, dtype=args.dtype)
        figures: list[str] = []
        if not args.no_figures and not args.only:
            figures = _write_figures(Path(args.out) / "figures", device)
    elapsed = time.perf_counter() - start
    paths = report.write(args.out, results, device=device, dtype=args.dtype, total_seconds=elapsed, figures=figures)
    _print_table(results)
    erratum_lines = report.errata_lines(results)
    if erratum_lines:
        print(f"\n{len(erratum_lines)} textbook errata (printed claims the computation contradicts):")
        print("\n".join(erratum_lines))
    s = report.summary(results)
    print(f"\n{s['passed']} passed, {s['failed']} failed, {s['skipped']} skipped in {elapsed:.1f} s; report in {paths['md'].parent}/")
    return 0 if s["ok"] else 1


def _write_figures(out: Path, device: str) -> list[str]:
    from seqgrad.progress import progress

    from ..figures import figure_sets

    written: list[str] = []
    sets = figure_sets()
    for name, module in progress(list(sets.items()), len(sets), "figures"):
        for path in module.write(out / name, "png", device):
            written.append(str(Path(path).relative_to(out.parent)))
    return written


def _print_table(results) -> None:
    from ..report import fmt_error

    width = max([len(r.name) for r in results] + [5])
    swidth = min(max([len(r.source) for r in results] + [6]), 40)
    print(f"{'check':<{width}}  {'source':<{swidth}}  {'max abs err':>11}  {'max rel err':>11}  result")
    for r in results:
        mark = {"pass": "PASS", "fail": "FAIL", "skip": "skip", "error": "ERROR"}[r.status]
        print(f"{r.name:<{width}}  {r.source[:swidth]:<{swidth}}  {fmt_error(r.max_abs_error):>11}  {fmt_error(r.max_rel_error):>11}  {mark}")
    sys.stdout.flush()
