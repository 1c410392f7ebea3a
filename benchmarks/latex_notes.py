"""Benchmark: ``seqgrad latex notes.tex --standalone`` (every section: derivations, proofs, checks, tables).

Three ways of writing the same document, run alternately as subprocesses so
they see the same machine load (medians of ``--repeats`` rounds):

* ``--jobs 1`` with ``SEQGRAD_RUNCACHE=0``: one process, every derivation
  recomputed wherever it is asked for (the baseline: how the notes were
  written before the run cache);
* ``--jobs 1``: one process, derivations shared within the run
  (:mod:`seqgrad.runcache`);
* default ``--jobs``: the sections built in parallel, one worker per usable core.

For each: wall clock, CPU time of the whole process tree (the figure to read on
a shared machine) and peak memory (summed PSS of the process tree).  The three
documents must be byte for byte the same.  Target (issue 17): under 8 s wall.

``--before DIR`` adds a fourth way: the default ``--jobs`` run of the code in DIR (a checkout of an earlier
commit, e.g. ``git archive BASE | tar -x -C DIR``), in the same rounds, so that a change is measured
against the code before it on the same machine load (``--before-label`` names it in the record).

Run: ``python benchmarks/latex_notes.py [--repeats N] [--no-record] [--smoke] [--before DIR --before-label TEXT]``.
``--smoke`` writes only the ``positional`` section once per way, asserts
nothing about time and records nothing (CI's slow step).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import procstat  # noqa: E402

import benchdoc  # noqa: E402  (benchmarks/benchdoc.py, beside this script)

TARGET_WALL_S = 8.0
WAYS = (("no-cache", "`--jobs 1`, no run cache (baseline)", ["--jobs", "1"], {"SEQGRAD_RUNCACHE": "0"}),
        ("cache", "`--jobs 1`, run cache", ["--jobs", "1"], {}),
        ("parallel", "default `--jobs`, run cache", [], {}))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="rounds of the three ways (default 3)")
    parser.add_argument("--no-record", action="store_true", help="print only; do not update docs/benchmarks.md")
    parser.add_argument("--smoke", action="store_true", help="the positional section, one round; no record (CI)")
    parser.add_argument("--before", metavar="DIR", help="also run the code in DIR (an earlier checkout) as a fourth way")
    parser.add_argument("--before-label", metavar="TEXT", default="an earlier checkout", help="what DIR holds, for the record")
    args = parser.parse_args(argv)
    ways = WAYS + ((("before", f"default `--jobs`, {args.before_label}", [], {"PYTHONPATH": str(Path(args.before).resolve())}),)
                   if args.before else ())
    repeats = 1 if args.smoke else args.repeats
    sections = ["--sections", "positional"] if args.smoke else []
    from seqgrad.crosscheck.parallel import usable_cores

    cores = usable_cores()
    documents: set[str] = set()
    loads = []
    ok = True
    flags_env = {key: (flags, env) for key, _, flags, env in ways}

    def run(key, i, memory):
        nonlocal ok
        flags, env = flags_env[key]
        out = Path(tmp) / f"{key}{i}" / "notes.tex"  # one name: the document includes its figures from notes-figures/
        out.parent.mkdir()
        loads.append(procstat.load_line())
        m = procstat.measure([sys.executable, "-m", "seqgrad", "latex", str(out), "--standalone", *sections, *flags],
                             env={"MPLBACKEND": "Agg", **env}, cwd=env.get("PYTHONPATH"), memory=memory)
        ok = ok and m.rc == 0
        if m.rc != 0:
            print(m.stderr[-2000:], file=sys.stderr)
        elif key != "before":  # the earlier code writes its own document
            documents.add(out.read_text(encoding="utf-8"))
        print(f"{key}, memory round: exit {m.rc}, peak PSS {m.pss_mib:.0f} MiB ({loads[-1]})" if memory else
              f"{key} {i + 1}: exit {m.rc}, wall {m.wall:.1f} s, CPU {m.cpu:.1f} s ({loads[-1]})", flush=True)
        return m

    with tempfile.TemporaryDirectory() as tmp:
        runs, memory = procstat.rounds(list(flags_env), repeats, run)
    same = len(documents) == 1
    med = {key: {k: statistics.median(getattr(m, k) for m in ms) for k in ("wall", "cpu")} | {"pss_mib": memory[key].pss_mib}
           for key, ms in runs.items()}
    base = med["no-cache"]
    for key, label, *_ in ways:
        m = med[key]
        print(f"{label}: wall {m['wall']:.1f} s ({base['wall'] / m['wall']:.2f}x), CPU {m['cpu']:.1f} s ({base['cpu'] / m['cpu']:.2f}x), "
              f"peak PSS {m['pss_mib']:.0f} MiB")
    print(f"same document every way: {same}; every run exited 0: {ok}")
    if not args.smoke and not args.no_record:
        rows = [[label, f"{med[key]['wall']:.1f}", f"{base['wall'] / med[key]['wall']:.2f}", f"{med[key]['cpu']:.1f}",
                 f"{base['cpu'] / med[key]['cpu']:.2f}", f"{med[key]['pss_mib']:.0f}"] for key, label, *_ in ways]
        wall = med["parallel"]["wall"]
        md = ("### Course notes: `seqgrad latex notes.tex --standalone` (every section)\n\n"
              f"Medians of {repeats} timed rounds, the {len(ways)} ways alternating as subprocesses, and one more round "
              "for the peak memory (sampling it slows the run it samples); the documents "
              + ("of this code's three ways " if args.before else "") + f"are byte for byte the same: {same}. The 1-minute load average before "
              "the runs (it counts this benchmark's own earlier runs too): " + "; ".join(sorted(set(loads))[:3]) + ". Where other "
              "jobs share the machine, read the ratios and the CPU time (user + system of the process tree); peak memory is the "
              "summed PSS of the process tree.\n\n"
              + benchdoc.table(["way", "wall s", "speed-up (wall)", "CPU s", "CPU saved (ratio)", "peak PSS MiB"], rows)
              + (f"\n\nAgainst {args.before_label} in the same rounds: wall {med['before']['wall'] / wall:.2f}x, CPU "
                 f"{med['before']['cpu'] / med['parallel']['cpu']:.2f}x faster (default `--jobs` both)." if args.before else "")
              + f"\n\nTarget: under {TARGET_WALL_S:.0f} s wall; measured {wall:.1f} s: "
              + ("met." if wall < TARGET_WALL_S else f"**not met** (CPU {med['parallel']['cpu']:.1f} s, i.e. at least "
                 f"{med['parallel']['cpu'] / cores:.1f} s on {cores} idle cores)."))
        print(benchdoc.record("latex_notes", md))
    return 0 if ok and same else 1


if __name__ == "__main__":
    sys.exit(main())
