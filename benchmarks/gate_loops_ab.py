"""The compiled gate loops of this tree against another tree, in the same run: CPU time of one call.

Each tree runs in its own processes (its own Python, so each imports its own seqgrad), the two trees'
processes interleaved (A B A B ...); in each process, after a warm-up call, every loop is called ``--calls``
times and the median CPU time of a call is kept; the table gives the median over the processes and the
ratio this tree / the other.  One torch thread, one BLAS thread, float64.  Also derive + compile of the
D = H = 32 RNN, GRU and LSTM cells (``CellFunction(rnn_cell(...))``: the source is the step's, independent of T).

    python benchmarks/gate_loops_ab.py --other-python /path/to/venv-of-the-tree-before/bin/python
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

#: (name, cell, B, T, D=H)
CASES = [("RNN", "rnn", 4096, 64, 8), ("LSTM", "lstm", 64, 1000, 32), ("GRU", "gru", 64, 1000, 32)]


def child(calls: int, smoke: bool = False) -> dict:
    import numpy as np
    import torch

    torch.set_num_threads(1)
    import seqgrad
    from seqgrad.crosscheck.cells import CellFunction, random_case
    from seqgrad.derive.builtin_cells import gru_cell, lstm_cell, rnn_cell

    make = {"rnn": rnn_cell, "lstm": lstm_cell, "gru": gru_cell}
    out = {"tree": str(Path(seqgrad.__file__).parent.parent)}
    for name, kind, B, T, H in CASES:
        if smoke:
            B, T, H = 4, 3, 3
        cell = make[kind](sizes={"D": H, "H": H, "C": 1})
        params, X, y = random_case(cell, np.random.default_rng(0), T, B)
        for backend in ("numpy", "torch"):
            f = CellFunction(cell, backend)
            args = f.prepare(params, X, y)
            f.fn(*args)  # warm-up: the workspace's stacks are taken here
            times = []
            for _ in range(calls):
                start = time.process_time()
                f.fn(*args)
                times.append(time.process_time() - start)
            out[f"{name}, {backend}"] = statistics.median(times)
    for kind in ("rnn", "gru", "lstm"):  # the source is the step's: nothing here depends on T
        compile_times = []
        for _ in range(1 if smoke else 5):
            start = time.process_time()
            CellFunction(make[kind](sizes={"D": 32, "H": 32, "C": 1}))
            compile_times.append(time.process_time() - start)
        out[f"derive + compile, D=H=32 {kind} cell"] = statistics.median(compile_times)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other-python", help="the Python of the tree to compare against (its venv)")
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="one process, one call, tiny sizes, this tree only")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.calls, args.smoke)))
        return
    if args.smoke:
        args.processes, args.calls, args.other_python = 1, 1, None
    here = Path(__file__).resolve()
    trees = {"this": sys.executable, "other": args.other_python}
    runs: dict = {"this": [], "other": []}
    for _ in range(args.processes):
        for key, python in trees.items():
            if python is None:
                continue
            cmd = [python, str(here), "--child", "--calls", str(args.calls)] + (["--smoke"] if args.smoke else [])
            proc = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=os.getcwd())
            runs[key].append(json.loads(proc.stdout.strip().splitlines()[-1]))
    print(f"this tree: {runs['this'][0]['tree']}, tree before: {runs['other'][0]['tree'] if runs['other'] else '-'}\n")
    print("| loop | this tree | tree before | ratio |")
    print("|---|---|---|---|")
    for case in [c for c in runs["this"][0] if c != "tree"]:
        a = statistics.median(r[case] for r in runs["this"]) * 1e3
        if runs["other"]:
            b = statistics.median(r[case] for r in runs["other"]) * 1e3
            print(f"| {case} | {a:.1f} ms | {b:.1f} ms | {a / b:.2f} |")
        else:
            print(f"| {case} | {a:.1f} ms | | |")


if __name__ == "__main__":
    main()
