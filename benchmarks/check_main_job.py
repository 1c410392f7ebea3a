"""Benchmark: the main job, ``seqgrad check`` (every registered check, the report and the figures).

Runs ``seqgrad check --out TMP`` as a subprocess (CPU, float64) several times
and measures its wall-clock time and its CPU time (user + system of the child,
which does not grow when other processes share the machine).  The same-run
baselines come from the run's own report.json: the sum of the per-check
``seconds`` (the checks alone) and ``total_seconds`` (checks and figures), so
the ratios show what the process adds (imports, figures, report files) and
which groups dominate.  Target: under 60 s on a 2-core machine without a GPU.

Run: ``python benchmarks/check_main_job.py [--repeats N] [--no-record]``.
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
from collections import defaultdict
from pathlib import Path

import benchdoc  # benchmarks/benchdoc.py, beside this script

TARGET_S = 60.0


def one_run(out: Path) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "crosscheck", "check", "--out", str(out)], capture_output=True, text=True,
                          env={**os.environ, "MPLBACKEND": "Agg"})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    report = json.loads((out / "report.json").read_text())
    groups: dict[str, float] = defaultdict(float)
    for c in report["checks"]:
        groups[c["group"]] += c["seconds"]
    return {"rc": proc.returncode, "wall": wall, "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "checks": sum(c["seconds"] for c in report["checks"]), "total": report["total_seconds"], "n": len(report["checks"]),
            "groups": dict(groups), "slowest": sorted(((c["seconds"], c["name"]) for c in report["checks"]), reverse=True)[:5],
            "summary": report["summary"]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-record", action="store_true", help="print only; do not update docs/benchmarks.md")
    args = parser.parse_args(argv)
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            r = one_run(Path(tmp) / f"run{i}")
            runs.append(r)
            print(f"run {i + 1}: exit {r['rc']}, wall {r['wall']:.1f} s, CPU {r['cpu']:.1f} s, checks {r['checks']:.1f} s, "
                  f"checks+figures {r['total']:.1f} s, {r['n']} checks", flush=True)
    med = {k: statistics.median(r[k] for r in runs) for k in ("wall", "cpu", "checks", "total")}
    groups = {g: statistics.median(r["groups"].get(g, 0.0) for r in runs) for g in runs[0]["groups"]}
    ok = all(r["rc"] == 0 for r in runs)
    print(f"median: wall {med['wall']:.1f} s, CPU {med['cpu']:.1f} s; process / checks alone {med['wall'] / med['checks']:.2f}; "
          f"CPU time vs target {TARGET_S:.0f} s: {med['cpu'] / TARGET_S:.2f}; every run passed: {ok}")
    if not args.no_record:
        s = runs[-1]["summary"]
        rows = [["`seqgrad check` process, wall clock", f"{med['wall']:.1f}", f"{med['wall'] / med['checks']:.2f}"],
                ["`seqgrad check` process, CPU (user + sys)", f"{med['cpu']:.1f}", f"{med['cpu'] / med['checks']:.2f}"],
                ["checks and figures (report `total_seconds`)", f"{med['total']:.1f}", f"{med['total'] / med['checks']:.2f}"],
                ["checks alone (sum of per-check `seconds`)", f"{med['checks']:.1f}", "1"]]
        group_rows = [[g, f"{t:.1f}"] for g, t in sorted(groups.items(), key=lambda kv: -kv[1])]
        slow = ", ".join(f"`{n}` {t:.1f} s" for t, n in runs[-1]["slowest"])
        md = (f"### The main job: `seqgrad check` (CPU, float64, {runs[-1]['n']} checks, all figure sets)\n\n"
              f"Median of {args.repeats} runs as a subprocess; {s['passed']} passed, {s['failed']} failed, {s['skipped']} skipped. "
              f"Target: under {TARGET_S:.0f} s on a 2-core machine without a GPU. The CPU time is the figure to compare with the "
              "target when the machine is shared (the wall clock then includes waiting for the other processes).\n\n"
              + benchdoc.table(["measured", "seconds", "relative to the checks alone"], rows)
              + "\n\nSeconds per group (median):\n\n" + benchdoc.table(["group", "seconds"], group_rows)
              + f"\n\nSlowest checks (last run): {slow}.")
        print(benchdoc.record("check_main_job", md))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
