"""The conv weight gradient compiled from the derivation against torch.nn.functional.conv2d autograd, same run.

    python benchmarks/conv_weight_grad.py [--repeats 9] [--threads 1] [--no-record] [--smoke]

Shape: batch 64, one 64 x 64 channel, a 5 x 5 kernel, stride 1, no padding.  Ours:
``dL/dK_pq = sum_bij G_bij X_b,i+p,j+q`` from ``derive.conv.Conv2d.grad_K`` compiled by
``crosscheck.conv_compile`` (its plan written as ``crosscheck.loop_ir`` IR and printed by the IR's
emitter: a loop per kernel offset, one contraction of two strided slices per kernel entry).  Baseline: the backward pass
of ``conv2d`` for the kernel alone (``torch.autograd.grad(Y, K, G)`` on a graph built once), and also
forward + backward.  Target: ours <= 2x the backward-only baseline, float32 and float64, CPU.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from seqgrad.crosscheck.checks.conv import compiled_conv  # noqa: E402
from seqgrad.crosscheck.tolerance import compare  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchdoc  # noqa: E402  (benchmarks/benchdoc.py, beside this script)

B, H, KSIZE = 64, 64, 5


def measure(dtype_name: str, repeats: int) -> dict:
    dtype = getattr(torch, dtype_name)
    g = torch.Generator().manual_seed(0)
    X = torch.randn(B, H, H, generator=g, dtype=torch.float64).to(dtype)
    K = torch.randn(KSIZE, KSIZE, generator=g, dtype=torch.float64).to(dtype).requires_grad_()
    Ho = H - KSIZE + 1
    G = torch.randn(B, Ho, Ho, generator=g, dtype=torch.float64).to(dtype)
    _, dK_fn, _, _ = compiled_conv(H, H, KSIZE, 1, 0)
    Y = F.conv2d(X[:, None], K[None, None])[:, 0]
    fns = {
        "derived": lambda: dK_fn(G=G, X=X),
        "autograd backward": lambda: torch.autograd.grad(Y, K, G, retain_graph=True)[0],
        "autograd forward + backward": lambda: torch.autograd.grad(F.conv2d(X[:, None], K[None, None])[:, 0], K, G)[0],
    }
    agree = compare(fns["derived"](), fns["autograd backward"](), dtype=dtype_name)
    for fn in fns.values():
        fn()
    times = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - start)
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med["derived"] / med["autograd backward"]
    print(f"[{dtype_name}] agree {agree.passed} ({agree.max_abs_error:.1e}); "
          + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in med.items()) + f"; ratio derived / backward = {ratio:.2f}")
    return {"dtype": dtype_name, "med": med, "ratio": ratio, "agree": agree}


def main(argv=None) -> int:
    args = benchdoc.parse(benchdoc.arguments(__doc__, repeats=9), argv)
    torch.set_num_threads(args.threads)
    results = [measure(d, args.repeats) for d in ("float32", "float64")]
    if not args.no_record:
        md = ("## Convolution weight gradient: compiled derivation vs conv2d autograd\n\n"
              f"`dL/dK_pq = sum_bij G_bij X_b,i+p,j+q` (derive.conv, compiled by crosscheck.conv_compile through the IR of "
              f"crosscheck.loop_ir and its emitter, the generator of every compiled function: a loop per kernel offset, one "
              f"contraction of two strided slices per kernel entry) for batch {B}, a {H} x {H} input and a {KSIZE} x {KSIZE} kernel, against the backward "
              f"pass of `torch.nn.functional.conv2d` for the kernel (graph built once) and against forward + backward; CPU, "
              f"{args.threads} thread(s), median of {args.repeats} interleaved repeats (`python benchmarks/conv_weight_grad.py`).\n\n"
              + benchdoc.table(["dtype", "derived (ms)", "conv2d backward (ms)", "conv2d forward + backward (ms)", "ratio derived / backward",
                                "target", "agree"],
                               [[r["dtype"], f"{r['med']['derived'] * 1e3:.1f}", f"{r['med']['autograd backward'] * 1e3:.1f}",
                                 f"{r['med']['autograd forward + backward'] * 1e3:.1f}", f"{r['ratio']:.2f}", "<= 2",
                                 f"{r['agree'].passed} ({r['agree'].max_abs_error:.1e})"] for r in results]))
        print(benchdoc.record("conv_weight_grad", md))
    return 0 if all(r["agree"].passed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
