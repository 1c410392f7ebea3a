"""Cell.from_torch: reading an LSTM step from torch and deriving it at general t, beyond the imports.

Each measurement runs in a fresh process (no cache of an earlier derivation helps): the imports of torch,
SymPy and seqgrad.derive.cell are timed first, then ``Cell.from_torch(module)`` + ``.general()``.  The
same-run baseline is the hand-written LSTM of the engine, ``lstm_cell(sizes).general()``, in a fresh
process of its own: the ratio is what reading the module adds.  Modules: ``nn.LSTMCell(32, 32)`` and the
peephole LSTM step module of ``crosscheck.torch_examples`` (traced with torch.fx), D = H = 32.  Target:
< 1 s beyond the imports (issue 27).  Wall seconds, median of ``--repeats`` runs; ``--smoke``: one run, nothing recorded.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import benchdoc  # noqa: E402  # benchmarks/benchdoc.py, beside this script

INNER = r"""
import json, sys, time
t0 = time.perf_counter()
import torch, sympy
from seqgrad.derive.cell import Cell
from seqgrad.derive.builtin_cells import lstm_cell
t1 = time.perf_counter()
what = sys.argv[1]
if what == "nn":
    torch.manual_seed(0)
    module = torch.nn.LSTMCell(32, 32)
    t1 = time.perf_counter()
    Cell.from_torch(module).general()
elif what == "step":
    from seqgrad.crosscheck.torch_examples import PeepholeLSTM
    torch.manual_seed(0)
    module = PeepholeLSTM(32, 32)
    example = (torch.zeros(1, 32), (torch.zeros(1, 32), torch.zeros(1, 32)))
    t1 = time.perf_counter()
    Cell.from_torch(module, states="h c", example=example).general()
else:
    lstm_cell(sizes={"D": 32, "H": 32, "C": 32}).general()
t2 = time.perf_counter()
print(json.dumps({"imports": t1 - t0, "work": t2 - t1}))
"""


def measure(what: str, repeats: int) -> dict:
    runs = []
    for _ in range(repeats):
        proc = subprocess.run([sys.executable, "-c", INNER, what], capture_output=True, text=True,
                              cwd=Path(__file__).resolve().parent.parent)
        if proc.returncode != 0:
            raise SystemExit(proc.stderr)
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return {k: statistics.median(r[k] for r in runs) for k in ("imports", "work")}


def main(argv=None) -> int:
    args = benchdoc.parse(benchdoc.arguments(__doc__, repeats=3, threads=None), argv)
    base = measure("engine", args.repeats)
    rows = []
    for what, label in (("nn", "`Cell.from_torch(nn.LSTMCell(32, 32)).general()`"),
                        ("step", "`Cell.from_torch(PeepholeLSTM(32, 32), states=..., example=...).general()` (torch.fx)")):
        m = measure(what, args.repeats)
        rows.append([label, f"{m['work']:.2f} s", f"{m['imports']:.2f} s", f"{m['work'] / base['work']:.2f}x", "< 1 s",
                     "met" if m["work"] < 1 else "missed"])
    rows.append(["baseline: `lstm_cell(sizes).general()` (the engine's own LSTM equations)", f"{base['work']:.2f} s",
                 f"{base['imports']:.2f} s", "1x", "-", "-"])
    md = ("## from_torch: an LSTM step read from torch and derived at general t (`benchmarks/from_torch.py`)\n\n"
          + benchdoc.table(["what", "read + general-t derivation", "imports (torch, SymPy, seqgrad.derive.cell)",
                            "vs the engine's LSTM", "target", ""], rows)
          + f"\n\nWall seconds in a fresh process each, median of {args.repeats}.\n")
    print(md)
    if not args.no_record:
        benchdoc.record("from_torch", md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
