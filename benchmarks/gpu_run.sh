#!/usr/bin/env bash
# The GPU checks as one prepared script, for a machine with a CUDA GPU
# (run from the repository root, after installing seqgrad with a CUDA build of torch):
#   seqgrad check --device cuda, the GPU tests, and the encoder benchmark on the GPU.
# Results go to ${OUT:-gpu-out}/; the encoder benchmark records its GPU section in docs/benchmarks.md.
set -u
out="${OUT:-gpu-out}"
mkdir -p "$out"
python -c "import torch, sys; print(torch.__version__, torch.cuda.get_device_name(0)) if torch.cuda.is_available() else sys.exit('no CUDA GPU here')" || exit 2
status=0
( time python -m seqgrad check --device cuda --out "$out/report" ) > "$out/check.log" 2>&1 || status=1
python -m pytest -q -p no:cacheprovider -m "gpu or not slow" -k "cuda or gpu" > "$out/pytest-gpu.log" 2>&1 || status=1
python benchmarks/encoder_vs_torch.py --device cuda > "$out/encoder-bench.log" 2>&1 || status=1
python benchmarks/decoder_vs_torch.py --device cuda > "$out/decoder-bench.log" 2>&1 || status=1
tail -n 3 "$out/check.log" "$out/pytest-gpu.log" "$out/encoder-bench.log" "$out/decoder-bench.log"
exit "$status"
