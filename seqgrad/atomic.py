"""Atomic output: write to a temporary file beside the target, then rename.

An interrupted run leaves no half-written file, and an existing output is
replaced only whole (``os.replace`` is atomic on POSIX and Windows).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator, IO


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temporary file for writing; rename it onto ``path`` on success only."""
    if mode not in ("w", "wb"):
        raise ValueError(f"mode={mode!r} is not allowed: 'w' or 'wb'")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` atomically and return the path."""
    with atomic_open(path, "w") as handle:
        handle.write(text)
    return Path(path)


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically and return the path."""
    with atomic_open(path, "wb") as handle:
        handle.write(data)
    return Path(path)


def save_figure(fig, path: str | os.PathLike, **kwargs) -> Path:
    """Save a matplotlib figure atomically; the format comes from the suffix."""
    target = Path(path)
    fmt = kwargs.pop("format", target.suffix.lstrip(".") or "png")
    with atomic_open(target, "wb") as handle:
        fig.savefig(handle, format=fmt, **kwargs)
    return target
