"""The cell engine: derive + compile time against T, the general-t derivation, the CLI check, and the
speed of the compiled loops against their peers in the same run.

Same-run baselines: the straight-line lambdify of the unrolled program (the first round's path) for the
compile time; for the speed of the compiled loops (RNN, GRU, LSTM and a user's cell, the UGRNN), a plain torch
loop of the same equations differentiated by autograd (eager), the same loop with its step compiled by
``torch.compile`` (mode default; its compile time recorded apart), ``torch.nn``'s fused modules, and the limit:
the loop's matrix products alone, into preallocated outputs (speed = autograd time / our time, one torch thread
and one numpy BLAS thread, float64, CPU seconds of the process, median of the ratios of interleaved rounds).
``--smoke`` (or ``--quick``) runs tiny sizes, compiles the RNN's step only and records nothing (CI's slow step
runs it); ``--speed-only`` times the compiled loops alone (nothing recorded), to iterate on one cell:
``--speed-only --cells lstm --repeats 3``; ``--no-compile`` leaves torch.compile out.
"""

from __future__ import annotations

import gc
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


#: the recurrent gates of each benchmarked cell (the limit loop's stacked products: G H columns)
GATES = {"rnn": 1, "gru": 3, "lstm": 4, "ugrnn": 2}


def ugrnn_cell(sizes):
    """The update-gate RNN (Collins, Sohl-Dickstein, Sussillo 2017), written by a user: the benchmark's own cell."""
    from seqgrad.derive.cell import Cell

    params = {"w_xc": ("H", "D"), "w_hc": ("H", "H"), "b_c": ("H",), "w_xg": ("H", "D"), "w_hg": ("H", "H"),
              "b_g": ("H",), "w_o": ("C", "H")}
    return Cell("zc = w_xc*x + w_hc*h_prev + b_c; zg = w_xg*x + w_hg*h_prev + b_g; g = sigmoid(zg); "
                "h = g*h_prev + (1 - g)*tanh(zc)", states="h", params=params, head="w_o*h", sizes=sizes, name="ugrnn")


def _torch_step(kind, P):
    """One step of the cell in plain torch ops: (x, h, c) -> (h, c), differentiated by autograd."""
    import torch

    def step(x, h, c):
        if kind == "rnn":
            return torch.tanh(x @ P["W_x"].T + h @ P["W_h"].T), c
        if kind == "gru":
            r = torch.sigmoid(x @ P["W_xr"].T + P["b_xr"] + h @ P["W_hr"].T + P["b_hr"])
            u = torch.sigmoid(x @ P["W_xu"].T + P["b_xu"] + h @ P["W_hu"].T + P["b_hu"])
            n = torch.tanh(x @ P["W_xn"].T + P["b_xn"] + r * (h @ P["W_hn"].T + P["b_hn"]))
            return u * h + (1 - u) * n, c
        if kind == "ugrnn":
            g = torch.sigmoid(x @ P["W_xg"].T + h @ P["W_hg"].T + P["b_g"])
            return g * h + (1 - g) * torch.tanh(x @ P["W_xc"].T + h @ P["W_hc"].T + P["b_c"]), c
        i = torch.sigmoid(x @ P["W_xi"].T + h @ P["W_hi"].T + P["b_i"])
        f = torch.sigmoid(x @ P["W_xf"].T + h @ P["W_hf"].T + P["b_f"])
        g = torch.tanh(x @ P["W_xc"].T + h @ P["W_hc"].T + P["b_c"])
        o = torch.sigmoid(x @ P["W_xo"].T + h @ P["W_ho"].T + P["b_o"])
        c = f * c + i * g
        return o * torch.tanh(c), c

    return step


def _torch_reference(kind, params, X, y, compiled: bool = False):
    """The same equations in plain torch ops, differentiated by autograd (the baseline); ``compiled``: the
    step compiled by ``torch.compile`` (mode default), the loop and autograd's backward through it as before.
    Returns (run, compile seconds: the wall time of the first two calls, None when not compiled)."""
    import torch

    P = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in params.items()}
    Xt, yt = torch.tensor(X, requires_grad=True), torch.tensor(y)  # dL/dX too: the compiled code returns it
    B, H = X.shape[0], P["W_o"].shape[1]
    step = _torch_step(kind, P)
    if compiled:
        torch._dynamo.reset()  # a fresh compile for each shape (dynamo's recompile limit is per code object)
        step = torch.compile(step)

    def run():
        for p in (*P.values(), Xt):
            p.grad = None
        h = torch.zeros((B, H), dtype=torch.float64)
        c = torch.zeros((B, H), dtype=torch.float64)
        for x in Xt.unbind(1):  # per-step views whose backward stacks (X[:, t] would add a full-size zero per step)
            h, c = step(x, h, c)
        (0.5 * (h @ P["W_o"].T - yt).square().sum()).backward()

    seconds = None
    if compiled:
        start = time.perf_counter()
        run()
        run()  # the second step of the first call already saw h with a gradient; a second call compiles nothing new
        seconds = time.perf_counter() - start
    return run, seconds


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


def _limit(kind, B, T, D, H, backend):
    """The loop's matrix products alone, into preallocated outputs: X W_x^T for every step before the loop, per
    step h W_h^T (forward) and g W_h (backward) with the G gates stacked, after it dW_x, dW_h and dL/dX."""
    G = GATES[kind]
    rng = np.random.default_rng(1)
    arrays = [rng.normal(size=s) for s in [(T * B, D), (G * H, D), (G * H, H), (T, B, G * H), (B, H)]]
    if backend == "torch":
        import torch

        X, Wx, Wh, GZ, h = (torch.tensor(a) for a in arrays)
        mm, empty = torch.mm, lambda *s: torch.empty(s, dtype=torch.float64)
    else:
        X, Wx, Wh, GZ, h = arrays
        mm, empty = np.matmul, lambda *s: np.empty(s)
    Z, zt, carry = empty(T * B, G * H), empty(B, G * H), empty(B, H)
    dWx, dWh, dX, Hs = empty(G * H, D), empty(G * H, H), empty(T * B, D), empty(T * B, H)
    WxT, WhT, GZf = Wx.T, Wh.T, GZ.reshape(T * B, G * H)
    steps = list(GZ)

    def run():
        mm(X, WxT, out=Z)
        for _ in range(T):
            mm(h, WhT, out=zt)
        for g in reversed(steps):
            mm(g, Wh, out=carry)
        mm(GZf.T, X, out=dWx)
        mm(GZf.T, Hs, out=dWh)
        mm(GZf, Wx, out=dX)

    return run


def _rounds(methods: dict, reps: int) -> dict:
    """CPU seconds of each method in ``reps`` interleaved rounds (after one warm-up call each), the garbage
    collector off while a method runs (as timeit does)."""
    for fn in methods.values():
        fn()
    samples = {k: [] for k in methods}
    for _ in range(reps):
        for k, fn in methods.items():
            gc.collect()
            gc.disable()
            try:
                start = time.process_time()
                fn()
                samples[k].append(time.process_time() - start)
            finally:
                gc.enable()
    return samples


def section_speed(smoke: bool, reps: int = 7, threads: int = 1, cells=("rnn", "gru", "lstm", "ugrnn"),
                  compiled: bool = True) -> str:
    import torch

    from seqgrad.crosscheck.cells import CellFunction, random_case
    from seqgrad.derive.builtin_cells import BUILTIN

    torch.set_num_threads(threads)
    shapes = [(4096, 64, 8), (256, 256, 64), (64, 1000, 32)] if not smoke else [(16, 8, 4)]
    cases = []  # (kind, shape text, samples, the autograd run, the compiled step's inputs)
    for kind in cells:
        for B, T, D in (shapes if kind == "rnn" else shapes[:1] + shapes[2:]):
            sizes = {"D": D, "H": D, "C": 1}
            cell = ugrnn_cell(sizes) if kind == "ugrnn" else BUILTIN[kind](sizes=sizes)
            params, X, y = random_case(cell, np.random.default_rng(0), T, B)
            f_np, f_t = CellFunction(cell), CellFunction(cell, "torch")
            a_np, a_t = f_np.prepare(params, X, y), f_t.prepare(params, X, y)
            methods = {"autograd": _torch_reference(kind, params, X, y)[0],
                       "numpy": lambda: f_np.fn(*a_np), "torch": lambda: f_t.fn(*a_t),
                       "limit_numpy": _limit(kind, B, T, D, D, "numpy"), "limit_torch": _limit(kind, B, T, D, D, "torch")}
            if kind in ("rnn", "gru", "lstm"):
                methods["nn"] = _nn_reference(kind, D, D, X, y)
            cases.append((kind, f"B={B}, T={T}, D=H={D}", _rounds(methods, reps), methods["autograd"], (params, X, y)))
    compile_rows = []
    for kind, shape, samples, autograd, (params, X, y) in cases:
        # torch.compile after every other measurement (its compilation and worker processes stay out of the other
        # rounds), in rounds of its own beside eager autograd again
        if compiled and not (smoke and kind != "rnn"):
            run, seconds = _torch_reference(kind, params, X, y, compiled=True)
            compile_rows.append([kind.upper(), shape, f"{seconds:.1f} s"])
            again = _rounds({"autograd": autograd, "compiled": run}, reps)
            samples["compiled"] = [c * a1 / a2 for c, a1, a2 in zip(again["compiled"], samples["autograd"],
                                                                    again["autograd"])]  # on the first pass's scale
    rows, limits, spread = [], [], {}
    for kind, shape, samples, _, _ in cases:
        med = {k: statistics.median(v) for k, v in samples.items()}
        # each round's ratio against the run beside it, then the median: robust to load that drifts

        def ratio(num, den):
            return statistics.median(a / o for a, o in zip(samples[num], samples[den])) if den in samples else None

        speed = {k: ratio("autograd", k) for k in samples}
        x = lambda v: f"{v:.2f}x" if v is not None else "-"  # noqa: E731

        def vs(k, other):  # our speed / theirs, each against autograd in its own rounds
            return x(speed[k] / speed[other]) if other in speed else "-"

        rows.append([kind.upper(), shape, f"{med['autograd'] * 1e3:.0f} ms",
                     f"{med['numpy'] * 1e3:.0f} ms", f"{med['torch'] * 1e3:.0f} ms",
                     x(speed["numpy"]), x(speed["torch"]), x(speed.get("nn")), x(speed.get("compiled")),
                     f"{vs('numpy', 'compiled')} / {vs('torch', 'compiled')}",
                     f"{vs('numpy', 'nn')} / {vs('torch', 'nn')}"])
        limits.append([kind.upper(), shape, f"{med['limit_numpy'] * 1e3:.0f} ms",
                       f"{med['limit_torch'] * 1e3:.0f} ms", x(ratio("numpy", "limit_numpy")),
                       x(ratio("torch", "limit_torch"))])
        if kind == "lstm":
            r = [a / o for a, o in zip(samples["autograd"], samples["numpy"])]
            spread[shape] = (min(r), statistics.median(r), max(r))
    note = (f"\n\nSpeed = autograd time / time (higher is faster), the median over {reps} interleaved rounds of each round's "
            f"ratio; times are CPU seconds of this process (one torch thread and one numpy BLAS thread, so they are the "
            f"work done, not the waits of a shared machine), medians; float64, CPU; 1-minute load average "
            f"{os.getloadavg()[0]:.1f} at the end on {os.cpu_count()} cores: the machine was shared, so read the "
            "same-run ratios, not the times. Targets (speed issue): numpy >= 1.5x, torch >= 1.2x eager autograd. "
            "`torch.compile`: the same autograd loop with its step compiled by `torch.compile` (mode default, "
            "inductor, gcc), autograd's backward through the compiled step, timed after all the other columns, in "
            "rounds of its own beside eager autograd again (its speed is against that autograd); \"vs compile\" and \"vs fused\" are our speed / "
            "theirs (numpy / torch), so above 1x is ours faster. The garbage collector is off while a method runs. The UGRNN (update-gate RNN) is a user's "
            "cell of gate form: no fused torch.nn module exists for it. Both loops use the gate layout of "
            "`crosscheck.cell_loop`, each step's elementwise work written into preallocated buffers "
            "(`crosscheck.buffered`).\n")
    md = ["### Compiled loops against torch autograd, torch.compile and torch.nn (loss and every gradient, dL/dX included)\n",
          benchdoc.table(["cell", "shape", "autograd", "numpy loop", "torch loop", "numpy speed", "torch speed",
                          "torch.nn fused speed", "torch.compile speed", "vs compile (numpy / torch)",
                          "vs fused (numpy / torch)"], rows), note]
    if compile_rows:
        md += ["#### torch.compile: compile time (wall seconds of the first two calls, forward and backward graphs)\n",
               benchdoc.table(["cell", "shape", "compile"], compile_rows), ""]
    md += ["#### The limit: the same matrix products alone\n",
           benchdoc.table(["cell", "shape", "limit (numpy)", "limit (torch)", "numpy loop / limit", "torch loop / limit"],
                          limits),
           "\nThe limit loop makes only the loop's matrix products of the same shapes, into preallocated outputs, on the "
           "same thread: X W_x^T of every step at once, per step h W_h^T and g W_h with the gates stacked (one product "
           "of G H columns), and after the loop dW_x, dW_h and dL/dX. A multiple near 1 means the time is the products'; "
           "goal <= 1.5x at H >= 32.\n"]
    if spread:
        md += ["#### LSTM numpy speed from round to round\n",
               benchdoc.table(["shape", "lowest", "median", "highest", "spread around the median"],
                              [[k, f"{lo:.2f}x", f"{mid:.2f}x", f"{hi:.2f}x",
                                f"-{(mid - lo) / mid * 100:.0f} % / +{(hi - mid) / mid * 100:.0f} %"]
                               for k, (lo, mid, hi) in spread.items()]),
               f"\nThe numpy loop's speed in each of the {reps} rounds of the table above (goal: within +-10 %).\n"]
    return "\n".join(md)


def main() -> None:
    parser = benchdoc.arguments(__doc__, repeats=7)
    parser.add_argument("--speed-only", action="store_true", help="time the compiled loops alone; nothing recorded")
    parser.add_argument("--cells", nargs="+", choices=tuple(GATES), default=list(GATES),
                        help="the cells of the speed table (with --speed-only)")
    parser.add_argument("--no-compile", action="store_true", help="leave torch.compile out (it compiles for about a "
                        "minute per shape)")
    parser.add_argument("--quick", action="store_true", help="the same as --smoke: tiny sizes, one repeat, nothing "
                        "recorded, torch.compile for the RNN only (a few seconds plus one compile)")
    opts = benchdoc.parse(parser)
    if opts.quick and not opts.smoke:
        opts = benchdoc.parse(parser, sys.argv[1:] + ["--smoke"])
    speed = section_speed(opts.smoke, opts.repeats, opts.threads, opts.cells, not opts.no_compile)
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
