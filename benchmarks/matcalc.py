"""Benchmark: ``seqgrad diff`` and ``seqgrad verify --shape`` from a shell, wall time against the interpreter's
start-up with SymPy in the same run.

Targets (issue 26): ``seqgrad diff "x.T*A*x" --wrt x`` and a three-operation attention expression < 1 s wall
each beyond the start-up (the baseline ``python -c "import sympy"``); ``seqgrad verify`` of a Matrix Cookbook
identity at symbolic size < 2 s wall.  Medians of ``--repeats`` alternate runs (the machine is shared: only the
same-run differences mean anything).  Run ``python benchmarks/matcalc.py``; it records its table in
docs/benchmarks.md (section ``matcalc``).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import benchdoc  # noqa: E402  (benchmarks/benchdoc.py, beside this script)

SEQGRAD = [sys.executable, "-m", "seqgrad"]
BASELINE = [sys.executable, "-c", "import sympy"]
TASKS = [
    ("seqgrad diff \"x.T*A*x\" --wrt x", SEQGRAD + ["diff", "x.T*A*x", "--wrt", "x", "--shape", "A:n,n x:n"], 1.0, "beyond"),
    ("seqgrad diff \"softmax(Q*K.T/sqrt(d))*V\" --wrt Q", SEQGRAD + ["diff", "softmax(Q*K.T/sqrt(d))*V", "--wrt", "Q", "--shape",
                                                                 "Q:T,d K:T,d V:T,e"], 1.0, "beyond"),
    ("seqgrad verify \"trace(A*B) = trace(B*A)\" --shape", SEQGRAD + ["verify", "trace(A*B) = trace(B*A)", "--shape", "A:n,m B:m,n"],
     2.0, "total"),
    ("seqgrad verify \"diff(log(det(X)), X) = inv(X).T\" --shape", SEQGRAD + ["verify", "diff(log(det(X)), X) = inv(X).T", "--shape",
                                                                          "X:n,n"], 2.0, "total"),
]


def _wall(cmd) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-record", action="store_true", help="print only, leave docs/benchmarks.md alone")
    parser.add_argument("--smoke", action="store_true", help="one repeat, nothing recorded (CI: the script still works)")
    args = parser.parse_args()
    if args.smoke:
        args.repeats, args.no_record = 1, True
    base, runs = [], {name: [] for name, *_ in TASKS}
    for _ in range(args.repeats):
        base.append(_wall(BASELINE))
        for name, cmd, _, _ in TASKS:
            runs[name].append(_wall(cmd))
    b = statistics.median(base)
    rows = []
    for name, _, target, kind in TASKS:
        t = statistics.median(runs[name])
        measured = t - b if kind == "beyond" else t
        rows.append([name, f"{t:.2f}", f"{measured:.2f}" + (" beyond start-up" if kind == "beyond" else " total"),
                     f"< {target:g} s", "yes" if measured < target else "no"])
    table = benchdoc.table(["command (wall, medians)", "seconds", "measured", "target", "met"], rows)
    note = f"Baseline `python -c \"import sympy\"`: {b:.2f} s (median of {args.repeats})."
    print(table)
    print(note)
    if not args.no_record:
        benchdoc.record("matcalc", "## Matrix calculus from one line (`benchmarks/matcalc.py`)\n\n" + table + "\n\n" + note)


if __name__ == "__main__":
    main()
