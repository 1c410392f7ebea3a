"""Benchmark: ``seqgrad claim`` end to end, and the claims group of ``seqgrad check``.

1. ``seqgrad claim "sin(1)*cos(2) + cos(1)*sin(2) = 0.1411"`` as a user runs it: a fresh process,
   start-up included (target < 0.5 s).  Baselines in the same run: a bare ``python -c pass`` (what any
   command costs) and ``python -c "import sympy"`` (what the claim would cost if it went through SymPy,
   as it did before certified evaluation).  The claim process must import neither SymPy nor torch.
2. The claims group of ``seqgrad check`` (every catalogue entry, the 714 table numbers, the text facts):
   the sum of the checks' own times in one process, after the imports the main job has anyway (SymPy,
   torch, the numeric encoder; target < 2 s), beside the wall time of ``seqgrad check --only claims``.

Wall-clock medians of repeats (the machine is shared).  Run: ``python benchmarks/claims.py [--quick]``;
it prints the table and records it in docs/benchmarks.md (section ``claims``); ``--smoke`` runs each
measurement once, skips ``seqgrad check`` and records nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import benchdoc  # noqa: E402  # benchmarks/benchdoc.py, beside this script

CLAIM = "sin(1)*cos(2) + cos(1)*sin(2) = 0.1411"
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def wall(argv: list[str], repeats: int) -> tuple[float, float]:
    """Median wall-clock and CPU (user + system) seconds of running ``argv`` in a fresh process."""
    walls, cpus = [], []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, env=ENV, cwd=ROOT, check=True, capture_output=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def heavy_imports() -> list[str]:
    probe = ("import sys; from crosscheck.cli import main; main(['claim', %r]); "
             "print([m for m in ('sympy', 'torch', 'numpy') if m in sys.modules])" % CLAIM)
    out = subprocess.run([sys.executable, "-c", probe], env=ENV, cwd=ROOT, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1].replace("'", '"'))


def claims_group(repeats: int) -> tuple[float, float, int]:
    probe = (
        "import sympy, torch, numeric.course, statistics, time\n"
        "from crosscheck.registry import all_checks, run_checks\n"
        "checks = all_checks('claims')\n"
        "run_checks(checks, show_progress=False)  # warm: the imports and caches the main job has anyway\n"
        "walls, cpus = [], []\n"
        f"for _ in range({repeats}):\n"
        "    start = time.process_time()\n"
        "    walls.append(sum(r.seconds for r in run_checks(checks, show_progress=False)))\n"
        "    cpus.append(time.process_time() - start)\n"
        "print(statistics.median(walls), statistics.median(cpus), len(checks))\n")
    out = subprocess.run([sys.executable, "-c", probe], env=ENV, cwd=ROOT, check=True, capture_output=True, text=True)
    seconds, cpu, count = out.stdout.split()
    return float(seconds), float(cpu), int(count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--smoke", action="store_true", help="one repeat, no seqgrad check run, not recorded (CI's slow step)")
    args = parser.parse_args()
    repeats = 1 if args.smoke else 3 if args.quick else 7

    bare = wall([sys.executable, "-c", "pass"], repeats)
    sympy_import = wall([sys.executable, "-c", "import sympy"], repeats)
    claim = wall([sys.executable, "-m", "seqgrad", "claim", CLAIM], repeats)
    imported = heavy_imports()
    group, group_cpu, count = claims_group(1 if args.smoke else 3 if args.quick else 5)
    if args.smoke:
        print(f"claim {claim[0]:.3f} s (CPU {claim[1]:.3f}), bare {bare[0]:.3f} s, import sympy {sympy_import[0]:.3f} s, "
              f"claims group {group:.3f} s over {count} checks; heavy modules imported by the claim: {imported or 'none'}")
        return
    with tempfile.TemporaryDirectory() as out:
        check = wall([sys.executable, "-m", "seqgrad", "check", "--only", "claims", "--no-figures", "--out", out], 1)
    load = os.getloadavg()[0]

    rows = [
        ["`seqgrad claim` (scalar claim, fresh process)", f"{claim[0]:.3f}", f"{claim[1]:.3f}", "< 0.5",
         f"{claim[0] / bare[0]:.1f}x (CPU {claim[1] / bare[1]:.1f}x) a bare `python -c pass` ({bare[0]:.3f} s, CPU {bare[1]:.3f} s)"],
        ["`python -c \"import sympy\"` (the old path's floor)", f"{sympy_import[0]:.3f}", f"{sympy_import[1]:.3f}", "",
         f"{sympy_import[0] / claim[0]:.1f}x the claim"],
        [f"claims group, {count} checks (in process, imports done)", f"{group:.3f}", f"{group_cpu:.3f}", "< 2", ""],
        ["`seqgrad check --only claims` (imports and encoder included)", f"{check[0]:.1f}", f"{check[1]:.1f}", "", ""],
    ]
    table = benchdoc.table(["what", "wall s (median)", "CPU s (median)", "target", "ratio"], rows)
    text = (f"### `seqgrad claim` and the claims group\n\n{table}\n\n"
            f"Load average when measured: {load:.1f} (wall times on a busy machine are inflated; CPU times much less so).\n"
            f"Heavy modules imported by `seqgrad claim`: {', '.join(imported) or 'none (no SymPy, torch or numpy)'}.")
    print(text)
    benchdoc.record("claims", text)


if __name__ == "__main__":
    main()
