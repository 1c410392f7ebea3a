"""The cell engine: derive + compile time against T, the general-t derivation, the CLI check, and the
speed of the compiled loops against torch autograd of the same equations (and torch.nn's fused cells).

Same-run baselines: the straight-line lambdify of the unrolled program (the first round's path) for the
compile time; a plain torch loop of the same equations differentiated by autograd for the speed
(speed = autograd time / our time, one torch thread and one numpy BLAS thread, float64, CPU seconds of the process,
median of the ratios of interleaved rounds). ``--smoke`` runs tiny sizes and records nothing (CI's slow step runs it); ``--speed-only`` times the
compiled loops alone (nothing recorded), to iterate on one cell: ``--speed-only --cells lstm --repeats 3``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # numpy's BLAS on one thread too, like torch (set before numpy loads)
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import benchdoc  # noqa: E402  # benchmarks/benchdoc.py, beside this script
from rnn_derive import median_time as cpu_seconds  # noqa: E402  (median CPU seconds of this process)


def derive_and_compile_cell(T: int, D=None, H=None):
    """Through the cell API: the general derivation + the loop code (T only sizes the check call)."""
    from seqgrad.crosscheck.cells import CellFunction
    from seqgrad.derive.builtin_cells import rnn_cell

    return CellFunction(rnn_cell(sizes=None if D is None else {"D": D, "H": H, "C": 1}))


def derive_and_compile_unroll(T: int, D=None, H=None):
    """Through today's API: RNNFunction(rnn.unroll(...)) (the unrolled program is never built)."""
    from seqgrad.crosscheck.cells import RNNFunction
    from seqgrad.derive import rnn

    sizes = {} if D is None else {"inputs": D, "hidden": H, "outputs": 1}
    return RNNFunction(rnn.unroll(steps=T, activation="tanh", **sizes), "numpy")


def straight_line(T: int, D=None, H=None):
    """The first round's path: build the unrolled program and lambdify it as straight-line code."""
    from seqgrad.crosscheck.lambdify import lambdify
    from seqgrad.derive import rnn

    sizes = {} if D is None else {"inputs": D, "hidden": H, "outputs": 1}
    net = rnn.unroll(steps=T, activation="tanh", **sizes)
    outputs = [net.L] + [net.gradients[p] for p in net.parameters.values()]
    return lambdify(net.program, outputs, list(net.parameters.values()) + list(net.x) + [net.y], "numpy")


def section_compile(smoke: bool) -> str:
    rows = []
    Ts = [10, 100, 1000, 10000] if not smoke else [10, 100]
    derive_and_compile_cell(3)  # warm the imports
    for T in Ts:
        cell = cpu_seconds(lambda: derive_and_compile_cell(T, 32, 32), 3)
        unroll = cpu_seconds(lambda: derive_and_compile_unroll(T, 32, 32), 3)
        base = cpu_seconds(lambda: straight_line(T, 32, 32), 1) if T <= (1000 if not smoke else 10) else None
        rows.append([T, f"{cell:.3f} s", f"{unroll:.3f} s", f"{base:.2f} s" if base else "not run",
                     f"{base / unroll:.0f}x" if base else "-"])
    scalar_T = 100_000 if not smoke else 1000
    scalar = cpu_seconds(lambda: derive_and_compile_unroll(scalar_T), 3)
    md = ["### Derive + compile the loss and every gradient: vector tanh cell, D = H = 32, C = 1\n",
          benchdoc.table(["T", "cell API (Cell -> CellFunction)", "RNNFunction(rnn.unroll(T, 32, 32, 1))",
                          "straight-line lambdify of the unrolled program (first round)", "speed-up"], rows),
          f"\nScalar tanh cell through `RNNFunction(rnn.unroll(T))` at T = {scalar_T}: {scalar:.3f} s. "
          "Targets: < 0.5 s at T = 1000 (vector) and T = 100000 (scalar), constant in T: the compiled code is the "
          "step's, and the unrolled program is built only when printed. CPU seconds, median of 3.\n"]
    return "\n".join(md)


def section_general(smoke: bool) -> str:
    from seqgrad.derive.builtin_cells import lstm_cell

    t_lstm = cpu_seconds(lambda: lstm_cell(sizes={"D": 32, "H": 32, "C": 4}).general(), 1 if smoke else 3)
    cmd = [sys.executable, "-m", "seqgrad", "derive", "cell",
           "z = w_x*x + w_h*h_prev; c = 0.5*c_prev + sigmoid(z); h = tanh(c)", "--states", "h c",
           "--params", "w_x w_h w_o", "--head", "w_o*h", "--general", "--check"]
    walls = []
    for _ in range(1 if smoke else 3):
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent)
        walls.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(proc.stderr)
    return ("### General-t derivation and the command-line check\n\n"
            + benchdoc.table(["what", "measured", "target"], [
                ["general-t derivation of the vector LSTM (D = H = 32, C = 4)", f"{t_lstm:.2f} s CPU", "< 2 s"],
                ["`seqgrad derive cell \"...\" --general --check`, a two-state cell, end to end",
                 f"{statistics.median(walls):.2f} s wall (median of {len(walls)})", "< 3 s"]]) + "\n")


def _torch_reference(kind, params, X, y):
    """The same equations in plain torch ops, differentiated by autograd (the baseline)."""
    import torch

    P = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in params.items()}
    Xt, yt = torch.tensor(X, requires_grad=True), torch.tensor(y)  # dL/dX too: the compiled code returns it
    B, H = X.shape[0], P["W_o"].shape[1]

    def run():
        for p in (*P.values(), Xt):
            p.grad = None
        h = torch.zeros((B, H), dtype=torch.float64)
        c = torch.zeros((B, H), dtype=torch.float64)
        for x in Xt.unbind(1):  # per-step views whose backward stacks (X[:, t] would add a full-size zero per step)
            if kind == "rnn":
                h = torch.tanh(x @ P["W_x"].T + h @ P["W_h"].T)
            elif kind == "gru":
                r = torch.sigmoid(x @ P["W_xr"].T + P["b_xr"] + h @ P["W_hr"].T + P["b_hr"])
                u = torch.sigmoid(x @ P["W_xu"].T + P["b_xu"] + h @ P["W_hu"].T + P["b_hu"])
                n = torch.tanh(x @ P["W_xn"].T + P["b_xn"] + r * (h @ P["W_hn"].T + P["b_hn"]))
                h = u * h + (1 - u) * n
            else:
                i = torch.sigmoid(x @ P["W_xi"].T + h @ P["W_hi"].T + P["b_i"])
                f = torch.sigmoid(x @ P["W_xf"].T + h @ P["W_hf"].T + P["b_f"])
                g = torch.tanh(x @ P["W_xc"].T + h @ P["W_hc"].T + P["b_c"])
                o = torch.sigmoid(x @ P["W_xo"].T + h @ P["W_ho"].T + P["b_o"])
                c = f * c + i * g
                h = o * torch.tanh(c)
        (0.5 * (h @ P["W_o"].T - yt).square().sum()).backward()

    return run


def _nn_reference(kind, D, H, X, y):
    import torch

    mod = {"rnn": lambda: torch.nn.RNN(D, H, bias=False, batch_first=True), "gru": lambda: torch.nn.GRU(D, H, batch_first=True),
           "lstm": lambda: torch.nn.LSTM(D, H, batch_first=True)}[kind]().double()
    Wo = torch.randn(1, H, dtype=torch.float64)
    Xt, yt = torch.tensor(X, requires_grad=True), torch.tensor(y)

    def run():
        mod.zero_grad(set_to_none=True)
        Xt.grad = None
        out, _ = mod(Xt)
        (0.5 * (out[:, -1] @ Wo.T - yt).square().sum()).backward()

    return run


def section_speed(smoke: bool, reps: int = 7, threads: int = 1, cells=("rnn", "gru", "lstm")) -> str:
    import torch

    from seqgrad.crosscheck.cells import CellFunction, random_case
    from seqgrad.derive.builtin_cells import BUILTIN

    torch.set_num_threads(threads)
    shapes = [(4096, 64, 8), (256, 256, 64), (64, 1000, 32)] if not smoke else [(16, 8, 4)]
    rows = []
    for kind in cells:
        for B, T, D in (shapes if kind == "rnn" else shapes[:1] + shapes[2:]):
            cell = BUILTIN[kind](sizes={"D": D, "H": D, "C": 1})
            params, X, y = random_case(cell, np.random.default_rng(0), T, B)
            f_np, f_t = CellFunction(cell), CellFunction(cell, "torch")
            a_np, a_t = f_np.prepare(params, X, y), f_t.prepare(params, X, y)
            methods = {"autograd": _torch_reference(kind, params, X, y),
                       "numpy": lambda: f_np.fn(*a_np), "torch": lambda: f_t.fn(*a_t),
                       "nn": _nn_reference(kind, D, D, X, y)}
            for fn in methods.values():
                fn()
            samples = {k: [] for k in methods}
            for _ in range(reps):
                for k, fn in methods.items():
                    start = time.process_time()
                    fn()
                    samples[k].append(time.process_time() - start)
            med = {k: statistics.median(v) for k, v in samples.items()}
            # each round's ratio against the autograd run beside it, then the median: robust to load that drifts
            speed = {k: statistics.median(a / o for a, o in zip(samples["autograd"], samples[k])) for k in methods}
            rows.append([kind.upper(), f"B={B}, T={T}, D=H={D}", f"{med['autograd'] * 1e3:.0f} ms",
                         f"{med['numpy'] * 1e3:.0f} ms", f"{med['torch'] * 1e3:.0f} ms",
                         f"{speed['numpy']:.2f}x", f"{speed['torch']:.2f}x", f"{speed['nn']:.2f}x"])
    return ("### Compiled loops against torch autograd of the same equations (loss and every gradient, dL/dX included)\n\n"
            + benchdoc.table(["cell", "shape", "autograd", "numpy loop", "torch loop", "numpy loop speed",
                              "torch loop speed", "torch.nn fused speed"], rows)
            + f"\n\nSpeed = autograd time / time (higher is faster), the median over {reps} interleaved rounds of each round's "
              f"ratio; times are CPU seconds of this process (one torch thread and one numpy BLAS thread, so they are the "
              f"work done, not the waits of a shared machine), medians; float64, CPU; 1-minute load average "
              f"{os.getloadavg()[0]:.1f} at the end "
              f"on {os.cpu_count()} cores. Targets (speed issue): numpy >= 1.5x, torch >= 1.2x. Both loops use the gate layout "
              "of `crosscheck.cell_loop`.\n")


def main() -> None:
    parser = benchdoc.arguments(__doc__, repeats=7)
    parser.add_argument("--speed-only", action="store_true", help="time the compiled loops alone; nothing recorded")
    parser.add_argument("--cells", nargs="+", choices=("rnn", "gru", "lstm"), default=["rnn", "gru", "lstm"],
                        help="the cells of the speed table (with --speed-only)")
    opts = benchdoc.parse(parser)
    speed = section_speed(opts.smoke, opts.repeats, opts.threads, opts.cells)
    if opts.speed_only:
        print(speed)
        return
    text = "## cell_engine: your own cell, derived at general t, compiled as a loop\n\n" + "\n".join(
        [section_compile(opts.smoke), section_general(opts.smoke), speed])
    print(text)
    if not opts.no_record:
        print(f"\nrecorded in {benchdoc.record('cell_engine', text)}")


if __name__ == "__main__":
    main()
