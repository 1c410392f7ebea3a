"""Benchmark: the main job, ``seqgrad check`` (every registered check, the report and the figures).

Runs ``seqgrad check --out TMP`` as a subprocess (CPU, float64), alternating
the serial run (``--jobs 1``: everything in one process, the baseline) with
the parallel run (default ``--jobs``: one worker per usable core), so both see
the same machine load; medians of ``--repeats`` pairs.  For each it measures
the wall clock, the CPU time of the whole process tree (which does not grow
when other processes share the machine, so it is the figure to read on a
shared machine) and the peak memory (summed PSS over the process tree, and
the largest single process's RSS; see ``procstat.py``).  Both runs must write
the same report (timings aside).

Per group it then measures the CPU seconds of each group's checks run in this
process (one thread, one run cache, the serial order), the figure the
"no group over 2 s" target is about, and the wall seconds the parallel runs'
reports give.

Targets: under 6 s wall (median) on 2 cores (issue 31; 8 s in issue 17), no group
over 2 s, peak memory at most 400 MiB (issue 17).  Where the time of a run goes,
phase by phase and task by task: ``check_profile.py``.

Run: ``python benchmarks/check_main_job.py [--repeats N] [--no-record] [--smoke]``.
``--smoke`` runs one pair on the ``encoder`` group only, asserts nothing about
time and records nothing (CI's slow step).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchdoc  # noqa: E402  (benchmarks/benchdoc.py, beside this script)
import procstat  # noqa: E402

TARGET_WALL_S, TARGET_GROUP_S, TARGET_MEMORY_MIB = 6.0, 2.0, 400.0


def one_run(out: Path, jobs: int | None, only: str | None, memory: bool = False) -> dict:
    cmd = [sys.executable, "-m", "seqgrad", "check", "--out", str(out)]
    cmd += ["--jobs", str(jobs)] if jobs else []
    cmd += ["--only", only] if only else []
    m = procstat.measure(cmd, env={"MPLBACKEND": "Agg"}, memory=memory)
    report = json.loads((out / "report.json").read_text())
    groups: dict[str, float] = defaultdict(float)
    for c in report["checks"]:
        groups[c["group"]] += c["seconds"]
    content = [{k: v for k, v in c.items() if k != "seconds"} for c in report["checks"]]
    return {"rc": m.rc, "wall": m.wall, "cpu": m.cpu, "pss": m.pss_mib, "rss": m.rss_mib, "n": len(report["checks"]),
            "groups": dict(groups), "content": content, "figures": report["figures"], "summary": report["summary"]}


def group_cpu(only: str | None) -> dict[str, float]:
    """CPU seconds of each group's checks, run in this process as one serial run."""
    from seqgrad.crosscheck.registry import all_checks, groups_of, run_group
    from seqgrad.numeric.device import one_thread
    from seqgrad import runcache

    out = {}
    with one_thread(), runcache.scope():
        for group in groups_of(all_checks(only)):
            start = time.process_time()
            run_group(group)
            out[group[0].group] = out.get(group[0].group, 0.0) + time.process_time() - start  # a group may run in shards
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="serial/parallel pairs (default 3)")
    parser.add_argument("--no-record", action="store_true", help="print only; do not update docs/benchmarks.md")
    parser.add_argument("--smoke", action="store_true", help="one pair on the encoder group; no record (CI)")
    args = parser.parse_args(argv)
    only = "encoder" if args.smoke else None
    repeats = 1 if args.smoke else args.repeats
    from seqgrad.crosscheck.parallel import usable_cores

    cores = usable_cores()
    loads = []

    def run(kind, i, memory):
        loads.append(procstat.load_line())
        r = one_run(Path(tmp) / f"{kind}{i}", {"serial": 1, "parallel": None}[kind], only, memory=memory)
        print(f"{kind}, memory run: exit {r['rc']}, peak PSS {r['pss']:.0f} MiB, largest RSS {r['rss']:.0f} MiB ({loads[-1]})"
              if memory else f"{kind} {i + 1}: exit {r['rc']}, wall {r['wall']:.1f} s, CPU {r['cpu']:.1f} s, {r['n']} checks "
              f"({loads[-1]})", flush=True)
        return r

    with tempfile.TemporaryDirectory() as tmp:
        runs, memory = procstat.rounds(["serial", "parallel"], repeats, run)
    everything = [r for rs in runs.values() for r in rs] + list(memory.values())
    same = all(r["content"] == everything[0]["content"] and r["figures"] == everything[0]["figures"] for r in everything)
    ok = all(r["rc"] == 0 for r in everything)
    med = {kind: {k: statistics.median(r[k] for r in rs) for k in ("wall", "cpu")} | {k: memory[kind][k] for k in ("pss", "rss")}
           for kind, rs in runs.items()}
    speedup = med["serial"]["wall"] / med["parallel"]["wall"]
    cpu_groups = group_cpu(only)
    wall_groups = {g: statistics.median(r["groups"].get(g, 0.0) for r in runs["parallel"]) for g in runs["parallel"][0]["groups"]}
    print(f"median wall: serial {med['serial']['wall']:.1f} s, parallel {med['parallel']['wall']:.1f} s "
          f"(speed-up {speedup:.2f}x with {cores} cores); CPU serial {med['serial']['cpu']:.1f} s, parallel {med['parallel']['cpu']:.1f} s; "
          f"peak PSS parallel {med['parallel']['pss']:.0f} MiB; same report: {same}; every run passed: {ok}")
    for g, t in sorted(cpu_groups.items(), key=lambda kv: -kv[1]):
        print(f"  group {g}: CPU {t:.2f} s in-process, wall {wall_groups.get(g, 0):.2f} s in the parallel runs")
    if args.smoke:
        return 0 if ok and same else 1
    if not args.no_record:
        rows = []
        for kind, label in (("serial", "`--jobs 1` (one process, the baseline)"), ("parallel", f"default `--jobs` ({cores} workers)")):
            m = med[kind]
            rows.append([label, f"{m['wall']:.1f}", f"{med['serial']['wall'] / m['wall']:.2f}", f"{m['cpu']:.1f}",
                         f"{m['pss']:.0f}", f"{m['rss']:.0f}"])
        group_rows = [[g, f"{t:.2f}", f"{wall_groups.get(g, 0):.2f}", "yes" if t <= TARGET_GROUP_S else "**no**"]
                      for g, t in sorted(cpu_groups.items(), key=lambda kv: -kv[1])]
        s = runs["parallel"][-1]["summary"]
        par = med["parallel"]
        verdict = (f"wall {par['wall']:.1f} s against < {TARGET_WALL_S:.0f} s: {'met' if par['wall'] < TARGET_WALL_S else '**not met**'}; "
                   f"CPU {par['cpu']:.1f} s, i.e. at least {par['cpu'] / cores:.1f} s of wall on {cores} idle cores; "
                   f"peak memory {par['pss']:.0f} MiB against <= {TARGET_MEMORY_MIB:.0f} MiB: "
                   f"{'met' if par['pss'] <= TARGET_MEMORY_MIB else '**not met**'}; groups over {TARGET_GROUP_S:.0f} s (CPU): "
                   + (", ".join(f"{g} ({t:.1f} s)" for g, t in cpu_groups.items() if t > TARGET_GROUP_S) or "none"))
        md = (f"### The main job: `seqgrad check` (CPU, float64, {runs['parallel'][-1]['n']} checks, all figure sets)\n\n"
              f"Medians of {repeats} serial/parallel pairs run alternately as subprocesses, and one more pair for the peak memory "
              f"(sampling it slows the run it samples); {s['passed']} passed, {s['failed']} failed, "
              f"{s['skipped']} skipped; the serial and the parallel runs wrote the same report (timings aside): {same}. "
              "The 1-minute load average before the runs (it counts this benchmark's own earlier runs too): "
              + "; ".join(sorted(set(loads))[:3]) + ". Where other jobs share the machine the wall clock includes waiting "
              "for them; the CPU time (user + system of the whole process tree) does not, and the ratio of the two medians "
              "from the same run is the figure to compare. Peak memory: the "
              "summed PSS of the process tree (pages the forked workers share counted once), and the RSS of its largest process.\n\n"
              + benchdoc.table(["run", "wall s", "speed-up vs serial", "CPU s", "peak PSS MiB", "largest RSS MiB"], rows)
              + f"\n\nTargets: {verdict}.\n\nSeconds per group: CPU of the group's checks run in one process "
              "(one torch thread, one run cache), and the sum of its checks' wall seconds in the parallel runs' reports:\n\n"
              + benchdoc.table(["group", "CPU s", "wall s (parallel run)", f"<= {TARGET_GROUP_S:.0f} s"], group_rows))
        print(benchdoc.record("check_main_job", md))
    return 0 if ok and same else 1


if __name__ == "__main__":
    sys.exit(main())
