"""Device and dtype selection shared by every numeric module."""

from __future__ import annotations

import contextlib

import torch

from seqgrad.errors import SeqgradValueError

DEVICES = ("cpu", "cuda", "auto")
DTYPES = {"float64": torch.float64, "float32": torch.float32}


def resolve_device(device: str | torch.device | None = "cpu") -> torch.device:
    """``cpu``, ``cuda`` or ``auto`` (CUDA when present) as a ``torch.device``.

    Asking for ``cuda`` on a machine without a GPU is a clear error.
    """
    if device is None:
        device = "cpu"
    if isinstance(device, torch.device):
        device = device.type
    if device not in DEVICES:
        raise SeqgradValueError("device", device, "one of cpu, cuda, auto")
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise SeqgradValueError("device", device, "cuda needs a CUDA GPU, and none is present; use cpu or auto")
    return torch.device(device)


def resolve_dtype(dtype: str | torch.dtype = "float64") -> torch.dtype:
    """``float64`` (the default) or ``float32`` as a ``torch.dtype``."""
    if isinstance(dtype, torch.dtype):
        if dtype in DTYPES.values():
            return dtype
        raise SeqgradValueError("dtype", dtype, "torch.float64 or torch.float32")
    if dtype not in DTYPES:
        raise SeqgradValueError("dtype", dtype, "float64 or float32")
    return DTYPES[dtype]


@contextlib.contextmanager
def one_thread():
    """Run torch on one CPU thread, then restore the thread count.  The checks' and
    studies' tensors are tiny (at most a few hundred entries), so intra-op threads only
    add synchronisation; on a loaded 2-core machine they cost far more than they give
    (measured: the encoder checks 4.7 s with the default threads, 0.35 s with one; the
    depth gradient study 65 s against 3.5 s)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
