"""Benchmark: a sweep of 10^4 (w_h, input) configurations at T = 200 for scalar path products.

``numeric.paths.path_product_sweep`` (configurations as array axes, a Python
loop over time only) against a per-configuration Python loop (``math.tanh``,
one configuration after another) in the same run; both compute
``|dh_{T-1}/dh_0| = prod_{t=1}^{T-1} |w_h tanh'(z_t)|`` and must agree.
The target is under 2 s for the vectorised sweep.  Medians of several repeats.

Run: ``python benchmarks/path_sweep.py [--repeats N] [--no-record] [--smoke]``.
"""

from __future__ import annotations

import math
import statistics
import time

import numpy as np

from seqgrad.numeric.paths import path_product_sweep
import benchdoc  # benchmarks/benchdoc.py, beside this script

T = 200
W_H = np.linspace(0.1, 3.0, 100)
INPUTS = np.linspace(-2.0, 2.0, 100)


def loop_baseline(w_h_values, inputs, T: int, w_x: float = 1.0) -> np.ndarray:
    """One configuration at a time, in plain Python."""
    out = np.empty((len(w_h_values), len(inputs)))
    for i, w_h in enumerate(w_h_values):
        for j, x in enumerate(inputs):
            h, product = 0.0, 1.0
            for t in range(T):
                z = w_x * x + w_h * h
                h = math.tanh(z)
                if t >= 1:
                    product *= abs(w_h * (1.0 - h * h))
            out[i, j] = product
    return out


def _median_time(fn, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main(argv=None) -> int:
    args = benchdoc.parse(benchdoc.arguments(__doc__, repeats=5, threads=None), argv)

    vec_s, vec = _median_time(lambda: path_product_sweep(W_H[:, None], INPUTS[None, :], T, show_progress=False), args.repeats)
    loop_s, loop = _median_time(lambda: loop_baseline(W_H, INPUTS, T), max(1, args.repeats // 2))
    both = (vec > 0) & (loop > 0) & np.isfinite(vec) & np.isfinite(loop)
    agree = np.allclose(vec[both], loop[both], rtol=1e-9, atol=0) and np.array_equal(vec == 0, loop == 0)
    ratio = loop_s / vec_s
    n = W_H.size * INPUTS.size
    print(f"{n} configurations, T = {T}: vectorised {vec_s:.4f} s (target < 2 s), per-configuration loop {loop_s:.3f} s, "
          f"ratio {ratio:.0f}x; results agree: {agree}")
    if not agree:
        print("ERROR: the vectorised sweep and the loop disagree")
        return 1
    if not args.no_record:
        rows = [["numeric.paths.path_product_sweep (vectorised)", f"{vec_s:.4f}", "1"],
                ["per-configuration Python loop (math.tanh)", f"{loop_s:.3f}", f"{ratio:.0f}x slower"]]
        md = (f"### Scalar path products: {n} (w_h, input) configurations at T = {T}\n\n"
              f"tanh cell, `|dh_(T-1)/dh_0|` for w_h in [0.1, 3] x constant input in [-2, 2] (100 x 100). "
              f"Median of {args.repeats} runs (loop: {max(1, args.repeats // 2)}). Target: vectorised sweep under 2 s.\n\n"
              + benchdoc.table(["method", "seconds", "relative"], rows)
              + f"\n\nSpeed-up of the vectorised sweep over the loop: **{ratio:.0f}x**; both give the same products "
              "(relative difference below 1e-9).")
        print(benchdoc.record("path_sweep", md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
