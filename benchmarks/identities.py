"""Benchmark: proving the PE shift identity at d = 512 and deriving the LayerNorm Jacobian at d = 64,
against plain ``sympy.simplify`` of the same expressions in the same run.

1. PE(pos + k) - R(k) PE(pos) for d = 512, symbolic pos and k: ``derive.positional`` builds the residual and
   reduces every entry by angle addition (target < 5 s); the baseline applies ``sympy.simplify`` to the
   same 512 residual entries, in a subprocess with a timeout.
2. LayerNorm Jacobian, d = 64: ``LayerNorm(64).derive()`` (the one LayerNorm program's backward pass over its
   named intermediates sigma, x̂, proved equal to the closed form by expansion; target < 10 s); the baseline differentiates the fully
   substituted LN and applies ``sympy.simplify`` to (direct - closed form), in a subprocess with a timeout.
   Smaller d, where the baseline finishes, give exact ratios.

3. Every catalogue entry as ``seqgrad check`` runs it (``crosscheck.checks.identities.verify``: the exact proof
   and the numeric check, all entries in one process as one shard would share them): CPU seconds per entry,
   this tree against ``--baseline-tree`` (a checkout of the code before a change, when given), run alternately;
   the slowest entries and the total.

Times are CPU seconds (``time.process_time``) of the measuring process, medians of repeats (the machine is
shared). Run: ``python benchmarks/identities.py [--quick] [--baseline-tree DIR]``; it prints the tables and
records them in docs/benchmarks.md (section ``identities``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import benchdoc  # noqa: E402  # benchmarks/benchdoc.py, beside this script

OURS_PE = textwrap.dedent("""
    import sys, time
    from seqgrad.derive import positional as P
    from seqgrad.derive.proof import angle_addition
    d = int(sys.argv[1])
    t0 = time.process_time()
    residual = P.Sinusoidal(d).shift_identity().residual()
    ok = all(angle_addition(e) == 0 for e in residual)
    print(time.process_time() - t0, ok, len(residual))
""")

PLAIN_PE = textwrap.dedent("""
    import sys, time
    import sympy as sp
    from seqgrad.derive import positional as P
    d = int(sys.argv[1])
    residual = P.Sinusoidal(d).shift_identity().residual()
    t0 = time.process_time()
    done = 0
    for e in residual:
        assert sp.simplify(e) == 0
        done += 1
        print(f"progress {done} {time.process_time() - t0}", flush=True)
    print(f"done {done} {time.process_time() - t0}", flush=True)
""")

OURS_LN = textwrap.dedent("""
    import sys, time
    from seqgrad.derive import layernorm as L
    d = int(sys.argv[1])
    t0 = time.process_time()
    derived = L.LayerNorm(d).derive()
    print(time.process_time() - t0, derived.holds, d * d)
""")

PLAIN_LN = textwrap.dedent("""
    import sys, time
    import sympy as sp
    from seqgrad.derive import layernorm as L
    d = int(sys.argv[1])
    t0 = time.process_time()
    ln = L.LayerNorm(d)
    residual = ln.jacobian_direct() - ln.jacobian()
    print(f"progress 0 {time.process_time() - t0}", flush=True)
    done = 0
    for e in residual:
        assert sp.simplify(e) == 0
        done += 1
        print(f"progress {done} {time.process_time() - t0}", flush=True)
    print(f"done {done} {time.process_time() - t0}", flush=True)
""")


ENTRIES = textwrap.dedent("""
    import time
    from seqgrad.crosscheck.checks import identities
    from seqgrad.derive import catalogue
    from seqgrad import runcache
    with runcache.scope():  # as seqgrad check runs them: a derivation two entries share is made once
        for entry in catalogue.entries():
            t0 = time.process_time()
            passed = identities.verify(entry, 0)[0].passed
            print(entry.name, time.process_time() - t0, passed)
""")


def entry_times(tree: Path) -> dict[str, tuple[float, bool]]:
    """{entry: (CPU seconds, passed)} of every catalogue entry, proved and checked in one process of ``tree``."""
    proc = subprocess.run([sys.executable, "-c", ENTRIES], cwd=tree, env=benchdoc.tree_env(tree), capture_output=True, text=True, timeout=900)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-2000:])
    out = {}
    for line in proc.stdout.strip().splitlines():
        name, seconds, passed = line.split()
        out[name] = (float(seconds), passed == "True")
    return out


def entries_table(base_tree: Path, label: str, repeats: int, shown: int = 12) -> str:
    """Per-entry CPU seconds (medians of ``repeats``), this tree and ``base_tree`` run alternately: the ``shown``
    slowest entries of the baseline and the total over every entry."""
    runs: dict[str, list[dict]] = {"ours": [], "base": []}
    for _ in range(repeats):
        runs["ours"].append(entry_times(ROOT))
        runs["base"].append(entry_times(base_tree))
    median = {k: {n: statistics.median(r[n][0] for r in v) for n in v[0]} for k, v in runs.items()}
    passed = all(ok for r in runs["ours"] for _, ok in r.values())
    names = sorted(median["base"], key=lambda n: -median["base"][n])
    rows = [[f"`{n}`", f"{median['ours'].get(n, float('nan')):.3f}", f"{median['base'][n]:.3f}",
             f"{median['base'][n] / median['ours'][n]:.2f}x" if median["ours"].get(n) else ""] for n in names[:shown]]
    ours_total, base_total = sum(median["ours"].values()), sum(median["base"].values())
    rows.append([f"all {len(median['ours'])} entries" + ("" if passed else " (NOT all passed)"), f"{ours_total:.2f}",
                 f"{base_total:.2f}", f"{base_total / ours_total:.2f}x"])
    return ("Every catalogue entry proved and checked as `seqgrad check` runs it (`crosscheck.checks.identities.verify`, "
            f"every entry in one process), CPU seconds, medians of {repeats} alternate run(s) of this tree and the "
            f"baseline tree ({label}); the {shown} slowest entries of the baseline and the total.\n\n"
            + benchdoc.table(["entry", "seqgrad (CPU s)", "baseline (CPU s)", "baseline / seqgrad"], rows))


def _run(code: str, arg: int, timeout: float) -> str:
    proc = subprocess.run([sys.executable, "-c", code, str(arg)], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-2000:])
    return proc.stdout.strip().splitlines()[-1]


def ours(code: str, arg: int, repeats: int) -> tuple[float, bool]:
    times, ok = [], True
    for _ in range(repeats):
        seconds, holds, _n = _run(code, arg, 600).split()
        times.append(float(seconds))
        ok = ok and holds == "True"
    return statistics.median(times), ok


def baseline(code: str, arg: int, total: int, timeout: float) -> tuple[float, int, bool]:
    """(CPU seconds, entries finished, finished all) of plain sympy.simplify, stopped after ``timeout`` wall seconds."""
    proc = subprocess.Popen([sys.executable, "-c", code, str(arg)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    last = (0.0, 0)
    deadline = time.monotonic() + timeout
    try:
        import selectors

        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            line = proc.stdout.readline()
            if not line:
                break
            kind, done, seconds = line.split()
            last = (float(seconds), int(done))
            if kind == "done":
                return last[0], last[1], True
    finally:
        cpu = 0.0
        proc.kill()  # no-op signal when it already exited; reap it here to read its CPU time
        try:
            _pid, _status, usage = os.wait4(proc.pid, 0)
            cpu = usage.ru_utime + usage.ru_stime
        except ChildProcessError:
            pass
    # stopped: the child's whole CPU time (including its imports and any unfinished entry) is the lower bound
    return max(last[0], cpu), last[1], last[1] >= total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one repeat, short baseline timeouts")
    parser.add_argument("--smoke", action="store_true", help="the smallest sizes, 5 s baselines, not recorded (CI's slow step)")
    benchdoc.add_baseline_tree(parser, "the per-entry table (not in --smoke)")
    args = parser.parse_args()
    repeats = 1 if args.quick or args.smoke else 3
    timeout = 5 if args.smoke else 30 if args.quick else 120
    rows = []

    def row(task, size, target, ours_s, ok, base_s, done, total, finished):
        if finished:
            base = f"{base_s:.2f}"
            ratio = f"{base_s / ours_s:.1f}x"
        else:
            base = f"> {base_s:.0f} (stopped after {done}/{total} entries)"
            ratio = f"> {base_s / ours_s:.0f}x" + (f" (extrapolated {base_s * total / max(done, 1) / ours_s:.0f}x)" if done else "")
        rows.append([task, size, f"{ours_s:.2f}", target, "yes" if ok else "NO", base, ratio])
        print(rows[-1], flush=True)

    for d, target in ((64, ""),) if args.smoke else ((64, ""), (512, "< 5 s")):
        o, ok = ours(OURS_PE, d, repeats)
        b, done, fin = baseline(PLAIN_PE, d, d, timeout)
        row("PE shift PE(pos+k) = R(k) PE(pos)", f"d = {d}", target, o, ok, b, done, d, fin)
    for d, target in ((4, ""),) if args.smoke else ((4, ""), (8, ""), (64, "< 10 s")):
        o, ok = ours(OURS_LN, d, repeats)
        b, done, fin = baseline(PLAIN_LN, d, d * d, timeout)
        row("LayerNorm Jacobian = closed form", f"d = {d}", target, o, ok, b, done, d * d, fin)
    table = benchdoc.table(["identity", "size", "seqgrad (CPU s, median)", "target", "proved", "plain sympy.simplify (CPU s)", "ratio"], rows)
    markdown = ("## Identities: PE shift and LayerNorm Jacobian (`benchmarks/identities.py`)\n\n"
                "seqgrad: `Sinusoidal(d).shift_identity()` residual reduced by angle addition; `LayerNorm(d).derive()` "
                "(the LayerNorm program's backward pass over sigma, x̂, expanded against the closed form). Baseline: "
                f"`sympy.simplify` of the same residual entries (the LN baseline includes differentiating the substituted "
                f"expression), in a subprocess stopped after {timeout} s wall time; unfinished baselines report the CPU time "
                f"spent and the entries finished. Medians of {repeats} repeat(s) for seqgrad, CPU seconds.\n\n" + table)
    base_tree = benchdoc.baseline_tree(args, ROOT)
    if not args.smoke and base_tree is not None:
        markdown += "\n\n" + entries_table(base_tree, args.baseline_label or str(base_tree), repeats)
    print(markdown)
    if not args.smoke:
        benchdoc.record("identities", markdown)


if __name__ == "__main__":
    main()
