"""Greedy generation of 64 tokens: the encoder memory computed once and reused, against recomputing it every step.

    python benchmarks/generation_memory.py [--repeats 5] [--threads 1] [--no-record] [--smoke]

Model: encoder and decoder of 2 pre-norm blocks each, D = 256, 8 heads, F = 1024, T_src = 256 source
tokens, float32 on CPU.  ``EncoderDecoder.generate`` runs the encoder once; the baseline is the same
greedy loop calling the encoder at every step.  The <end> token is made unreachable (its logit bias
-1e4), so both generate exactly 64 tokens, and both must produce the same tokens.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from seqgrad.numeric.decoder import EncoderDecoder  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchdoc  # noqa: E402  (benchmarks/benchdoc.py, beside this script)

T_SRC, D, HEADS, F_WIDTH, BLOCKS, TOKENS, K = 256, 256, 8, 1024, 2, 64, 100


@torch.no_grad()
def recompute_every_step(model: EncoderDecoder, src: torch.Tensor, n: int) -> list[int]:
    """The baseline: the same greedy loop, but the encoder runs again at every step."""
    ids = [model.start]
    for _ in range(n):
        H_enc = model.memory(src)
        ids.append(int(model.step(H_enc, torch.tensor(ids)).argmax()))
    return ids


def main(argv=None) -> int:
    args = benchdoc.parse(benchdoc.arguments(__doc__, repeats=5), argv)
    torch.set_num_threads(args.threads)
    model = EncoderDecoder.random(K, K, D, HEADS, F_WIDTH, BLOCKS, start=0, end=1, seed=3, dtype=torch.float32).eval()
    with torch.no_grad():
        model.head.b_o[model.end] = -1e4  # never stop early: exactly 64 tokens on both sides
    src = torch.randint(2, K, (T_SRC,), generator=torch.Generator().manual_seed(4))
    reused = model.generate(src, TOKENS).ids
    same = reused == recompute_every_step(model, src, TOKENS) and len(reused) == TOKENS + 1
    times = {"reuse": [], "recompute": []}
    for _ in range(args.repeats):
        start = time.perf_counter()
        model.generate(src, TOKENS)
        times["reuse"].append(time.perf_counter() - start)
        start = time.perf_counter()
        recompute_every_step(model, src, TOKENS)
        times["recompute"].append(time.perf_counter() - start)
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med["recompute"] / med["reuse"]
    print(f"same tokens: {same}; reuse {med['reuse']:.2f} s, recompute {med['recompute']:.2f} s, ratio recompute / reuse = {ratio:.2f}")
    if not args.no_record:
        md = ("## Greedy generation reuses the encoder memory\n\n"
              f"Greedy generation of {TOKENS} tokens from a {T_SRC}-token source, encoder and decoder of {BLOCKS} pre-norm blocks "
              f"each (D = {D}, {HEADS} heads, F = {F_WIDTH}), float32, CPU, {args.threads} thread(s), median of {args.repeats} "
              "interleaved repeats (`python benchmarks/generation_memory.py`). `EncoderDecoder.generate` computes the encoder "
              "output once; the baseline runs the same loop with the encoder at every step. Both produce the same tokens. "
              "(Neither caches the decoder's keys and values: each step re-runs the decoder over the prefix.)\n\n"
              + benchdoc.table(["generate (memory reused, s)", "recomputed every step (s)", "ratio recompute / reuse", "same tokens"],
                               [[f"{med['reuse']:.2f}", f"{med['recompute']:.2f}", f"{ratio:.2f}", same]]))
        print(benchdoc.record("generation_memory", md))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
