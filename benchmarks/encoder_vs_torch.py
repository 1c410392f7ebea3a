"""Forward + backward of a 4-block pre-norm encoder against torch.nn.TransformerEncoder, same weights, same run.

    python benchmarks/encoder_vs_torch.py [--device cpu|cuda] [--repeats 9] [--dtype float32|float64|both] [--no-record] [--smoke]

Shape: T = 512, D = 256, 8 heads, F = 1024, batch 1, dropout 0, final LayerNorm.
Both sides compute the loss sum(H_enc) and its gradient with respect to the
input and every parameter.  Timings are interleaved (ours, torch, ours, ...)
and the median of the repeats is reported, with the ratio ours / torch.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from seqgrad.crosscheck import encoder_twins  # noqa: E402
from seqgrad.numeric.device import resolve_device, resolve_dtype  # noqa: E402
from seqgrad.numeric.encoder import Encoder  # noqa: E402
import benchdoc  # noqa: E402  # benchmarks/benchdoc.py, beside this script
from seqgrad.crosscheck.tolerance import compare  # noqa: E402

T, D, HEADS, F_WIDTH, BLOCKS = 512, 256, 8, 1024, 4


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def step(fn, H, device) -> float:
    H = H.detach().requires_grad_(True)
    _sync(device)
    start = time.perf_counter()
    fn(H).sum().backward()
    _sync(device)
    return time.perf_counter() - start


def measure(device, dtype_name: str, repeats: int) -> dict:
    """Median forward+backward times of both encoders (interleaved), and their agreement."""
    dtype = resolve_dtype(dtype_name)
    ours = Encoder.random(10, D, HEADS, F_WIDTH, n_blocks=BLOCKS, bias=True, seed=1, dtype=dtype, device=device).train()
    theirs = encoder_twins.encoder_stack(ours).train()
    H = torch.randn(1, T, D, generator=torch.Generator().manual_seed(2), dtype=torch.float64).to(dtype).to(device)
    with torch.no_grad():
        agree = compare(ours.encode(H), theirs(H), dtype=dtype_name, device=device.type)
    fns = {"seqgrad": lambda x: ours.encode(x), "torch": lambda x: theirs(x)}
    for fn in fns.values():  # warm-up
        step(fn, H, device)
    times = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            ours.zero_grad(set_to_none=True)
            theirs.zero_grad(set_to_none=True)
            times[k].append(step(fn, H, device))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"[{device.type} {dtype_name}] outputs agree: {agree.passed} (max abs error {agree.max_abs_error:.2e})")
    for k in fns:
        print(f"  {k:8s} median {med[k] * 1e3:8.1f} ms  (runs: {', '.join(f'{t * 1e3:.0f}' for t in times[k])})")
    ratio = med["seqgrad"] / med["torch"]
    print(f"  ratio seqgrad / torch = {ratio:.3f} (target <= 1.3)")
    return {"dtype": dtype_name, "ours": med["seqgrad"], "torch": med["torch"], "ratio": ratio, "agree": agree}


def main(argv=None) -> int:
    p = benchdoc.arguments(__doc__, repeats=9, threads=0, threads_help="torch CPU threads (0: leave torch's default)")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--dtype", default="both", choices=("float32", "float64", "both"))
    args = benchdoc.parse(p, argv, dtype="float64")
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    dtypes = ("float32", "float64") if args.dtype == "both" else (args.dtype,)
    results = [measure(device, d, args.repeats) for d in dtypes]
    if not args.no_record:
        threads = torch.get_num_threads() if device.type == "cpu" else "-"
        md = ("## Transformer encoder vs torch.nn.TransformerEncoder\n\n"
              f"Forward + backward (loss = sum of H_enc, gradients for the input and every parameter) of a {BLOCKS}-block "
              f"pre-norm encoder with final LayerNorm, T = {T}, D = {D}, {HEADS} heads, F = {F_WIDTH}, batch 1, dropout 0, "
              "the same weights copied into `torch.nn.TransformerEncoder`; median of "
              f"{args.repeats} interleaved repeats after a warm-up. Named-intermediate capture off (the fused QKV + "
              "`scaled_dot_product_attention` path). The machine was shared with other jobs, so single runs vary a lot; "
              "the ratio of medians from the same run is the figure to read.\n\n"
              + benchdoc.versus_torch_table(device.type, threads, results, "<= 1.3"))
        print(benchdoc.record(f"encoder_vs_torch_{device.type}", md))
    return 0 if all(r["agree"].passed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
