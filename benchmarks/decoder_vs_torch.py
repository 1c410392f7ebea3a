"""Forward + backward of a 4-block pre-norm decoder against torch.nn.TransformerDecoder, same weights, same run.

    python benchmarks/decoder_vs_torch.py [--device cpu|cuda] [--repeats 7] [--dtype float32|float64|both] [--threads 1] [--no-record] [--smoke]

Shape: T_tgt = T_src = 256, D = 256, 8 heads, F = 1024, batch 1, dropout 0, causal mask, final LayerNorm.
Both sides compute the loss sum(H_dec) and its gradient with respect to the target input, the memory
and every parameter.  Timings are interleaved (ours, torch, ours, ...) and the median of the repeats is
reported, with the ratio ours / torch (target <= 1.1).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from seqgrad.crosscheck import decoder_twins  # noqa: E402
from seqgrad.crosscheck.tolerance import compare  # noqa: E402
from seqgrad.numeric.decoder import Decoder  # noqa: E402
from seqgrad.numeric.device import resolve_device, resolve_dtype  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchdoc  # noqa: E402  (benchmarks/benchdoc.py, beside this script)

T, T_SRC, D, HEADS, F_WIDTH, BLOCKS = 256, 256, 256, 8, 1024, 4


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def step(fn, H, Z, device) -> float:
    H, Z = H.detach().requires_grad_(True), Z.detach().requires_grad_(True)
    _sync(device)
    start = time.perf_counter()
    fn(H, Z).sum().backward()
    _sync(device)
    return time.perf_counter() - start


def measure(device, dtype_name: str, repeats: int) -> dict:
    dtype = resolve_dtype(dtype_name)
    ours = Decoder.random(10, D, HEADS, F_WIDTH, n_blocks=BLOCKS, bias=True, seed=1, dtype=dtype, device=device).train()
    theirs = decoder_twins.decoder_stack(ours).train()
    g = torch.Generator().manual_seed(2)
    H = torch.randn(1, T, D, generator=g, dtype=torch.float64).to(dtype).to(device)
    Z = torch.randn(1, T_SRC, D, generator=g, dtype=torch.float64).to(dtype).to(device)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(T, dtype=dtype, device=device)
    fns = {"seqgrad": lambda h, z: ours.decode(h, z), "torch": lambda h, z: theirs(h, z, tgt_mask=causal, tgt_is_causal=True)}
    with torch.no_grad():
        agree = compare(fns["seqgrad"](H, Z), fns["torch"](H, Z), dtype=dtype_name, device=device.type)
    for fn in fns.values():  # warm-up
        step(fn, H, Z, device)
    times = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            ours.zero_grad(set_to_none=True)
            theirs.zero_grad(set_to_none=True)
            times[k].append(step(fn, H, Z, device))
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med["seqgrad"] / med["torch"]
    print(f"[{device.type} {dtype_name}] outputs agree: {agree.passed} (max abs error {agree.max_abs_error:.2e})")
    for k in fns:
        print(f"  {k:8s} median {med[k] * 1e3:8.1f} ms  (runs: {', '.join(f'{t * 1e3:.0f}' for t in times[k])})")
    print(f"  ratio seqgrad / torch = {ratio:.3f} (target <= 1.1)")
    return {"dtype": dtype_name, "ours": med["seqgrad"], "torch": med["torch"], "ratio": ratio, "agree": agree}


def main(argv=None) -> int:
    p = benchdoc.arguments(__doc__, repeats=7)
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--dtype", default="both", choices=("float32", "float64", "both"))
    args = benchdoc.parse(p, argv)
    torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    dtypes = ("float32", "float64") if args.dtype == "both" else (args.dtype,)
    results = [measure(device, d, args.repeats) for d in dtypes]
    if not args.no_record:
        threads = torch.get_num_threads() if device.type == "cpu" else "-"
        md = ("## Transformer decoder vs torch.nn.TransformerDecoder\n\n"
              f"Forward + backward (loss = sum of H_dec; gradients for the target input, the memory and every parameter) of a "
              f"{BLOCKS}-block pre-norm decoder with final LayerNorm, T_tgt = T_src = {T}, D = {D}, {HEADS} heads, F = {F_WIDTH}, "
              "batch 1, causal mask, dropout 0, the same weights copied into `torch.nn.TransformerDecoder`; median of "
              f"{args.repeats} interleaved repeats after a warm-up (`python benchmarks/decoder_vs_torch.py`). "
              "The machine was shared with other jobs; the ratio of medians from the same run is the figure to read.\n\n"
              + benchdoc.versus_torch_table(device.type, threads, results, "<= 1.1"))
        print(benchdoc.record(f"decoder_vs_torch_{device.type}", md))
    return 0 if all(r["agree"].passed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
