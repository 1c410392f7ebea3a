"""Benchmark: deriving and lambdifying RNN gradients as programs, against plain SymPy and torch autograd.

Three measurements, each against its baseline in the same run (issue 2):

1. scalar tanh RNN, all weight gradients: derive + lambdify for T up to 1000
   (target < 1 s at T = 1000, linear in T) against plain ``sympy.diff`` +
   ``sympy.lambdify`` of the nested loss, run in a subprocess with a timeout
   (it raises RecursionError for long sequences), and against symengine's
   ``diff`` + ``Lambdify`` of the same nested loss (a C++ baseline);
2. dense vector tanh RNN, H = D = 8, T = 64, all parameter gradients: derive +
   lambdify (target < 2 s) against plain SymPy on explicit component symbols
   at small T;
3. evaluating the derived gradient on a batch of 4096 sequences (T = 64,
   H = D = 8, float64, CPU) against torch autograd on the same data.

Run: ``python benchmarks/rnn_derive.py [--quick]``; it prints the table and
records it in docs/benchmarks.md (section ``rnn_derive``).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import benchdoc  # noqa: E402  # benchmarks/benchdoc.py, beside this script

PLAIN_SCALAR = textwrap.dedent("""
    import sys, time
    import sympy as sp
    T = int(sys.argv[1])
    t0 = time.process_time()
    w_x, w_h, w_o, y = sp.symbols("w_x w_h w_o y")
    xs = sp.symbols(f"x_0:{T}")
    h = sp.Integer(0)
    for x in xs:
        h = sp.tanh(w_x * x + w_h * h)
    L = (w_o * h - y) ** 2 / 2
    grads = [sp.diff(L, p) for p in (w_x, w_h, w_o)]
    t1 = time.process_time()
    f = sp.lambdify((w_x, w_h, w_o, *xs, y), grads, "numpy")
    t2 = time.process_time()
    print(f"{t1 - t0} {t2 - t1}")
""")

SYMENGINE_SCALAR = textwrap.dedent("""
    import sys, time
    import symengine as se
    T = int(sys.argv[1])
    t0 = time.process_time()
    w_x, w_h, w_o, y = se.symbols("w_x w_h w_o y")
    xs = [se.Symbol(f"x_{t}") for t in range(T)]
    h = se.Integer(0)
    for x in xs:
        h = se.tanh(w_x * x + w_h * h)
    L = (w_o * h - y) ** 2 / 2
    grads = [se.diff(L, p) for p in (w_x, w_h, w_o)]
    t1 = time.process_time()
    f = se.Lambdify([w_x, w_h, w_o, *xs, y], grads)
    t2 = time.process_time()
    print(f"{t1 - t0} {t2 - t1}")
""")

PLAIN_VECTOR = textwrap.dedent("""
    import sys, time
    import sympy as sp
    T, D, H = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    t0 = time.process_time()
    M = lambda n, r, c: sp.Matrix(r, c, lambda i, j: sp.Symbol(f"{n}[{i},{j}]"))
    W_x, W_h, W_o = M("W_x", H, D), M("W_h", H, H), M("W_o", 1, H)
    xs = [M(f"x_{t}", 1, D) for t in range(T)]
    y = sp.Symbol("y")
    h = sp.zeros(1, H)
    for x in xs:
        h = (x * W_x.T + h * W_h.T).applyfunc(sp.tanh)
    L = ((h * W_o.T)[0, 0] - y) ** 2 / 2
    params = list(W_x) + list(W_h) + list(W_o)
    grads = [sp.diff(L, p) for p in params]
    t1 = time.process_time()
    f = sp.lambdify(params + [v for x in xs for v in x] + [y], grads, "numpy")
    t2 = time.process_time()
    print(f"{t1 - t0} {t2 - t1}")
""")


def plain(script: str, args: list[str], timeout: float) -> str:
    """Run plain SymPy in a subprocess: its seconds, or what stopped it."""
    try:
        proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"> {timeout:.0f} s (stopped)"
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return "RecursionError" if "RecursionError" in proc.stderr else last[:60]
    diff_s, lam_s = map(float, proc.stdout.split())
    return f"{diff_s + lam_s:.2f} s"


def median_time(fn, repeats: int) -> float:
    """Median CPU seconds of this process (the shared machine's load inflates wall time; both
    seqgrad and the plain-SymPy subprocess are timed the same way, single-threaded)."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)


def ours_derive(T: int, **sizes):
    from seqgrad.crosscheck.cells import RNNFunction
    from seqgrad.derive import rnn

    return RNNFunction(rnn.unroll(steps=T, activation="tanh", **sizes), "numpy")


def seconds(value) -> float:
    return float(value.split()[0]) if isinstance(value, str) and value.endswith(" s") and not value.startswith(">") else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", "--smoke", action="store_true", dest="quick",
                        help="fewer sizes and repeats (a smoke run, as CI's slow step runs it; not recorded)")
    opts = parser.parse_args()
    repeats = 1 if opts.quick else 3
    md = []

    # 1. scalar tanh RNN
    scalar_T = [50, 100, 250, 500, 1000] if not opts.quick else [50, 100]
    plain_T = [10, 20, 40, 80] if not opts.quick else [10]
    ours_derive(5)  # warm the imports
    ours = {T: median_time(lambda T=T: ours_derive(T), repeats) for T in scalar_T}
    base = {T: plain(PLAIN_SCALAR, [str(T)], 90) for T in plain_T}
    symengine_T = [10, 20, 40, 60, 80] if not opts.quick else [10]
    se_base = {T: plain(SYMENGINE_SCALAR, [str(T)], 60) for T in symengine_T}
    rows = []
    for T in sorted(set(scalar_T) | set(plain_T) | set(symengine_T)):
        o = ours.get(T)
        if o is None:
            o = ours[T] = median_time(lambda T=T: ours_derive(T), repeats)
        b = base.get(T, "not run")
        ratio = seconds(b) / o if o and seconds(b) == seconds(b) else None
        e = se_base.get(T, "not run")
        se_ratio = seconds(e) / o if o and seconds(e) == seconds(e) else None
        rows.append([T, f"{o:.3f} s", f"{o / T * 1e3:.2f} ms", b, f"{ratio:.0f}x" if ratio else "-",
                     e, f"{se_ratio:.2g}x" if se_ratio else "-"])
    md.append("### Scalar tanh RNN: derive + lambdify all weight gradients\n")
    md.append(benchdoc.table(["T", "seqgrad (program)", "per step", "plain SymPy diff + lambdify", "speed-up",
                              "symengine diff + Lambdify", "symengine / seqgrad"], rows))
    big = max(scalar_T)
    md.append(f"\nTarget: under 1 s at T = 1000 and linear in T. Measured: {ours[big]:.3f} s at T = {big} "
              f"({ours[big] / big * 1e3:.2f} ms per step; {ours[scalar_T[0]] / scalar_T[0] * 1e3:.2f} ms per step at "
              f"T = {scalar_T[0]}). Times are CPU seconds (median of {repeats}); plain SymPy runs in a subprocess with a 90 s wall-clock limit "
              "and Python's default recursion limit.\n")

    # 2. dense vector RNN
    D = H = 8
    T_vec = 64 if not opts.quick else 8
    ours_vec = median_time(lambda: ours_derive(T_vec, inputs=D, hidden=H, outputs=1), repeats)
    small = [1, 2] if not opts.quick else [1]
    rows = [[T, f"{median_time(lambda T=T: ours_derive(T, inputs=D, hidden=H, outputs=1), repeats):.3f} s",
             plain(PLAIN_VECTOR, [str(T), str(D), str(H)], 120)] for T in small]
    rows.append([T_vec, f"{ours_vec:.3f} s", "not run (far beyond the small-T times)"])
    md.append(f"### Dense vector tanh RNN, D = H = {H}, C = 1: derive + lambdify all parameter gradients\n")
    md.append(benchdoc.table(["T", "seqgrad (matrix program)", "plain SymPy (component symbols)"], rows))
    md.append(f"\nTarget: under 2 s at T = 64. Measured: {ours_vec:.3f} s at T = {T_vec}.\n")

    # 3. batch evaluation against torch autograd
    import torch

    # one thread: on the shared, oversubscribed 2-core machine torch's thread pool spins and its times
    # swing by 10x; numpy's products here are single-threaded too, so this is the like-for-like setting
    torch.set_num_threads(1)

    B, T = (4096, 64) if not opts.quick else (256, 16)
    f_np = ours_derive(T, inputs=D, hidden=H, outputs=1)
    from seqgrad.crosscheck.checks.rnn import random_case
    from seqgrad.crosscheck.cells import RNNFunction

    params, X, y = random_case(f_np.net, np.random.default_rng(0), batch=B)
    args_np = f_np.prepare(params, X, y)
    f_t = RNNFunction(f_np.net, "torch")
    args_t = f_t.prepare(params, X, y)
    t_params = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in params.items()}
    Xt, yt = torch.tensor(X), torch.tensor(y)

    def autograd():
        for p in t_params.values():
            p.grad = None
        h = torch.zeros((B, H), dtype=torch.float64)
        for t in range(T):
            h = torch.tanh(Xt[:, t] @ t_params["W_x"].T + h @ t_params["W_h"].T)
        loss = 0.5 * (h @ t_params["W_o"].T - yt).square().sum()
        loss.backward()

    rnn_mod = torch.nn.RNN(D, H, nonlinearity="tanh", bias=False, batch_first=True).double()

    def nn_rnn():
        rnn_mod.zero_grad(set_to_none=True)
        out, final = rnn_mod(Xt)
        loss = 0.5 * (final[0] @ t_params["W_o"].detach().T - yt).square().sum()
        loss.backward()

    def ours_np():
        f_np.fn(*args_np)

    def ours_t():
        with torch.no_grad():
            f_t.fn(*args_t)

    reps = 15 if not opts.quick else 3
    for fn in (autograd, ours_np, ours_t, nn_rnn):
        fn()  # warm up
    # interleave the repeats so that load changes on the shared machine hit every method alike
    samples: dict = {fn.__name__: [] for fn in (autograd, ours_np, ours_t, nn_rnn)}
    for _ in range(reps):
        for fn in (autograd, ours_np, ours_t, nn_rnn):
            start = time.perf_counter()
            fn()
            samples[fn.__name__].append(time.perf_counter() - start)
    med = {k: statistics.median(v) for k, v in samples.items()}
    rows = [
        ["torch autograd (same model, torch ops)", f"{med['autograd'] * 1e3:.1f} ms", "1.00"],
        ["seqgrad compiled loop -> numpy", f"{med['ours_np'] * 1e3:.1f} ms", f"{med['autograd'] / med['ours_np']:.2f}"],
        ["seqgrad compiled loop -> torch", f"{med['ours_t'] * 1e3:.1f} ms", f"{med['autograd'] / med['ours_t']:.2f}"],
        ["torch.nn.RNN forward + backward (fused kernel, for reference)", f"{med['nn_rnn'] * 1e3:.1f} ms",
         f"{med['autograd'] / med['nn_rnn']:.2f}"],
    ]
    md.append(f"### Gradient of a batch: B = {B}, T = {T}, D = H = {H}, C = 1, float64, CPU "
              f"(wall time, median of {reps} interleaved repeats)\n")
    md.append(benchdoc.table(["method", "time", "speed vs autograd"], rows))
    md.append(f"\nTarget: at least as fast as torch autograd (speed >= 1). torch threads: {torch.get_num_threads()}.")
    text = "## rnn_derive: RNN gradients as programs\n\n" + "\n".join(md)
    print(text)
    if not opts.quick:
        path = benchdoc.record("rnn_derive", text)
        print(f"\nrecorded in {path}")


if __name__ == "__main__":
    main()
