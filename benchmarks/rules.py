"""Benchmark: the rule table's symbolic-size proofs, the symbolic attention backward pass, ``seqgrad verify``
and the identities group of ``seqgrad check``, each against a baseline in the same run.

1. Every rule of ``derive.rules`` proved at symbolic size (target < 1 s each).  Baseline for softmax and
   LayerNorm: SymPy's own IndexedBase route, ``diff(...).doit()``, the range Piecewise dropped by hand and
   ``sympy.simplify`` of the residual (stopped after a timeout).
2. Attention backward at symbolic T, d, d_k, d_v derived and printed (``derive.blocks.attention_program``,
   target < 2 s).  Baseline: the explicit-matrix route at one size, T = 3, d = 2, d_k = 2 (direct
   differentiation of sum G o O, ``SelfAttention.gradient_by_differentiation``).
3. ``seqgrad verify "sin(x)**2 + cos(x)**2 = 1" --vars x``, wall time including start-up (target < 2 s).
   Baseline: ``python -c "import sympy; sympy.simplify(...)"`` of the same identity, start-up included.
4. The identities group of ``seqgrad check`` (target < 3 s on 2 cores): this tree against ``--baseline-tree``
   (a checkout of the code before a change, when given), medians of the repeats: the group's wall time on the
   machine's cores (``seqgrad check --only identities``, default jobs: the report's ``total_seconds``, from the
   first check's start to the report, the process start-up excluded, which loads every group's modules and
   torch for them), the CPU seconds of the whole process tree and its wall time (start-up included), and the
   CPU seconds of the group's checks alone, run one after another in one process without the start-up.

CPU seconds (``resource`` usage of the child process) unless marked wall; the machine is shared, so only the
same-run ratios mean anything.  Run ``python benchmarks/rules.py [--quick]``; it records its table in
docs/benchmarks.md (section ``rules``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import benchdoc  # noqa: E402  (benchmarks/benchdoc.py, beside this script)

RULE_TIMES = textwrap.dedent("""
    import time
    from seqgrad.derive import rules
    for name, rule in rules.RULES.items():
        t0 = time.process_time()
        ok = rule.prove().holds
        print(name, time.process_time() - t0, ok)
""")

PLAIN_SOFTMAX = textwrap.dedent("""
    import time
    import sympy as sp
    t0 = time.process_time()
    n = sp.Symbol('n', integer=True, positive=True)
    i, j, k = sp.symbols('i j k', integer=True)
    z, g = sp.IndexedBase('z'), sp.IndexedBase('g')
    a = lambda i: sp.exp(z[i]) / sp.Sum(sp.exp(z[k]), (k, 0, n - 1))
    d = sp.diff(sp.Sum(g[i] * a(i), (i, 0, n - 1)), z[j]).doit()
    d = d.replace(lambda e: isinstance(e, sp.Piecewise), lambda e: e.args[0][0])
    r = sp.simplify(d - a(j) * (g[j] - sp.Sum(g[i] * a(i), (i, 0, n - 1))))
    print(time.process_time() - t0, r == 0)
""")

PLAIN_LAYERNORM = textwrap.dedent("""
    import time
    import sympy as sp
    t0 = time.process_time()
    d = sp.Symbol('d', integer=True, positive=True)
    eps = sp.Symbol('epsilon', positive=True)
    i, j, k = sp.symbols('i j k', integer=True)
    x, g = sp.IndexedBase('x'), sp.IndexedBase('g')
    mu = sp.Sum(x[k], (k, 0, d - 1)) / d
    s = sp.sqrt(sp.Sum((x[k] - mu) ** 2, (k, 0, d - 1)) / d + eps)
    xh = lambda i: (x[i] - mu) / s
    dd = sp.diff(sp.Sum(g[i] * xh(i), (i, 0, d - 1)), x[j])
    mean = lambda f: sp.Sum(f(i), (i, 0, d - 1)) / d
    claim = (g[j] - mean(lambda i: g[i]) - xh(j) * mean(lambda i: g[i] * xh(i))) / s
    r = sp.simplify((dd - claim).doit().replace(lambda e: isinstance(e, sp.Piecewise), lambda e: e.args[0][0]))
    print(time.process_time() - t0, r == 0)
""")

OURS_ATTENTION = textwrap.dedent("""
    import time
    t0 = time.process_time()
    from seqgrad.derive import blocks
    text = str(blocks.attention_program().program)
    print(time.process_time() - t0, 'dS = A o (dA - rowsum(dA o A))' in text)
""")

PLAIN_ATTENTION = textwrap.dedent("""
    import time
    t0 = time.process_time()
    from seqgrad.derive import attention
    head = attention.SelfAttention(3, 2, 2)
    grads = [head.gradient_by_differentiation(n) for n in ('X', 'W_Q', 'W_K', 'W_V')]
    text = str(grads[0])
    print(time.process_time() - t0, len(text) > 0)
""")

GROUP_CPU = textwrap.dedent("""
    import time
    from seqgrad.crosscheck.registry import all_checks, groups_of, run_group
    items = all_checks("identities")
    start = time.process_time()
    results = [r for part in groups_of(items) for r in run_group(part)]
    print(time.process_time() - start, all(r.passed for r in results), len(results))
""")

PLAIN_VERIFY = "import sympy as sp; x = sp.Symbol('x', real=True); assert sp.simplify(sp.sin(x)**2 + sp.cos(x)**2 - 1) == 0"


def _cpu(cmd: list[str], env: dict | None = None, timeout: float = 600, cwd: Path = ROOT) -> tuple[float, str, bool]:
    """(CPU seconds of the child, its stdout, finished) for ``cmd`` run in ``cwd``; stopped after ``timeout`` wall seconds.

    ``cwd`` matters: ``python -c`` and ``python -m`` put the working directory first on ``sys.path``, before
    ``PYTHONPATH``, so a run of another tree must start in that tree (or it imports this one)."""
    _children_cpu_delta()  # start counting from here
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        out, _ = proc.communicate(timeout=timeout)
        finished = True
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        finished = False
    return _children_cpu_delta(), out, finished  # communicate() reaped the child: its CPU time is counted


_LAST = [0.0]


def _children_cpu_delta() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = r.ru_utime + r.ru_stime
    delta, _LAST[0] = total - _LAST[0], total
    return delta


def _python(code: str, env=None, timeout: float = 600, cwd: Path = ROOT):
    return _cpu([sys.executable, "-c", code], env, timeout, cwd)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one repeat, short baseline timeouts")
    parser.add_argument("--smoke", action="store_true", help="one repeat, 5 s baselines, no identities group, not recorded (CI's slow step)")
    benchdoc.add_baseline_tree(parser, "the identities group")
    args = parser.parse_args()
    repeats = 1 if args.quick or args.smoke else 3
    timeout = 5 if args.smoke else 60 if args.quick else 300
    env = benchdoc.tree_env(ROOT)
    _children_cpu_delta()
    rows = []

    # 1. rule proofs (one process, every rule), medians over repeats
    per_rule: dict[str, list[float]] = {}
    ok_rules = True
    for _ in range(repeats):
        _, out, _ = _python(RULE_TIMES, env)
        for line in out.strip().splitlines():
            name, seconds, ok = line.split()
            per_rule.setdefault(name, []).append(float(seconds))
            ok_rules = ok_rules and ok == "True"
    medians = {n: statistics.median(v) for n, v in per_rule.items()}
    for name, baseline_code in (("softmax", PLAIN_SOFTMAX), ("layernorm", PLAIN_LAYERNORM)):
        cpu, out, finished = _python(baseline_code, env, timeout)
        plain = float(out.split()[0]) if finished and out.strip() else cpu
        proved = finished and out.strip().endswith("True")
        base = f"{plain:.2f}" + ("" if finished else f" (stopped after {timeout} s)") + ("" if proved else ", not reduced to 0")
        rows.append([f"rule proof: {name} (symbolic size)", f"{medians[name]:.2f}", "< 1 s", base,
                     f"{plain / medians[name]:.1f}x" if finished else f"> {plain / medians[name]:.0f}x"])
    slowest = max(medians, key=medians.get)
    rows.append([f"rule proofs: all {len(medians)} (slowest: {slowest})", f"{sum(medians.values()):.2f} (max {medians[slowest]:.2f})",
                 "< 1 s each", "", "proved" if ok_rules else "NOT proved"])

    # 2. symbolic attention backward derived and printed
    ours = statistics.median(float(_python(OURS_ATTENTION, env)[1].split()[0]) for _ in range(repeats))
    runs = [_python(PLAIN_ATTENTION, env, timeout) for _ in range(repeats)]
    finished = all(done and out.strip() for _, out, done in runs)
    plain = statistics.median(float(out.split()[0]) if done and out.strip() else cpu for cpu, out, done in runs)
    rows.append(["attention backward at symbolic T, d, d_k, d_v, derived + printed", f"{ours:.2f}", "< 2 s",
                 f"{plain:.2f} (explicit matrices, T = 3 only" + ("" if finished else f"; stopped after {timeout} s") + ")",
                 f"{plain / ours:.1f}x" if finished else f"> {plain / ours:.0f}x"])

    # 3. seqgrad verify, wall time with start-up
    def wall(cmd, e):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, env=e, capture_output=True, check=False)
        return time.perf_counter() - t0

    ours = statistics.median(wall([sys.executable, "-m", "seqgrad", "verify", "sin(x)**2 + cos(x)**2 = 1", "--vars", "x"], env)
                             for _ in range(repeats))
    plain = statistics.median(wall([sys.executable, "-c", PLAIN_VERIFY], env) for _ in range(repeats))
    rows.append(["seqgrad verify of a one-line identity (wall, start-up included)", f"{ours:.2f}", "< 2 s",
                 f"{plain:.2f} (python -c sympy.simplify)", f"{plain / ours:.2f}x"])

    # 4. identities group of seqgrad check: this tree against the baseline tree
    if args.smoke:
        print(benchdoc.table(["task", "seqgrad (s)", "target", "baseline (s)", "baseline / seqgrad"], rows))
        return
    out_dir = "/tmp/seqgrad-bench-identities"
    cmd = [sys.executable, "-m", "seqgrad", "check", "--only", "identities", "--no-figures", "--out", out_dir]
    base_tree = benchdoc.baseline_tree(args, ROOT)
    trees = {"ours": ROOT} | ({"base": base_tree} if base_tree is not None else {})
    measured: dict[str, dict[str, list[float]]] = {name: {"group": [], "cpu": [], "wall": [], "checks": []} for name in trees}
    for _ in range(repeats):  # interleaved, so a change in the machine's load hits both trees alike
        for name, tree in trees.items():
            t0 = time.perf_counter()
            cpu, _, _ = _cpu(cmd, benchdoc.tree_env(tree), cwd=tree)
            measured[name]["wall"].append(time.perf_counter() - t0)
            measured[name]["cpu"].append(cpu)
            measured[name]["group"].append(json.loads((Path(out_dir) / "report.json").read_text())["total_seconds"])
            measured[name]["checks"].append(float(_python(GROUP_CPU, benchdoc.tree_env(tree), cwd=tree)[1].split()[0]))
    for key, label in (("group", "identities group of seqgrad check on 2 cores (wall s of the run, start-up excluded: the "
                                 "report's total)"),
                       ("cpu", "identities group of seqgrad check (CPU s, whole process tree)"),
                       ("wall", "identities group of seqgrad check (wall s, default jobs, start-up included)"),
                       ("checks", "identities group: the checks' own CPU s (one process, no start-up)")):
        ours_v = statistics.median(measured["ours"][key])
        if "base" in trees:
            base_v = statistics.median(measured["base"][key])
            base_text, ratio = f"{base_v:.2f} ({args.baseline_label or base_tree})", f"{base_v / ours_v:.2f}x"
        else:
            base_text, ratio = "(no baseline tree)", ""
        rows.append([label, f"{ours_v:.2f}", "< 3 s" if key == "group" else "", base_text, ratio])

    table = benchdoc.table(["task", "seqgrad (s)", "target", "baseline (s)", "baseline / seqgrad"], rows)
    markdown = ("## The rule table, symbolic-size Transformer programs and `seqgrad verify` (`benchmarks/rules.py`)\n\n"
                f"CPU seconds of a child process unless marked wall; medians of {repeats} repeat(s) for seqgrad. "
                "Baselines run in the same session: SymPy's IndexedBase route with `simplify`, the explicit-matrix "
                "attention derivation at one size, a bare `python -c` SymPy simplify, and the identities group of the "
                "tree before this change (`--baseline-tree`: the same catalogue, proved and checked the same way, "
                "without this change's speed-ups). The machine is shared by other jobs, so wall times vary from run "
                "to run; the CPU rows are the stable ones.\n\n" + table)
    print(markdown)
    benchdoc.record("rules", markdown)


if __name__ == "__main__":
    main()
