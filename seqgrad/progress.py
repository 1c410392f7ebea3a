"""A minimal progress bar on standard error, drawn only on a terminal."""

from __future__ import annotations

import sys
import time
from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")


def progress(items: Iterable[T], total: int | None = None, label: str = "", stream=None, enabled: bool | None = None) -> Iterator[T]:
    """Yield ``items`` while drawing ``label [#####.....] k/n`` on a terminal."""
    stream = stream or sys.stderr
    if enabled is None:
        enabled = hasattr(stream, "isatty") and stream.isatty()
    if total is None:
        try:
            total = len(items)  # type: ignore[arg-type]
        except TypeError:
            total = None
    start = time.monotonic()
    count = 0
    for item in items:
        yield item
        count += 1
        if enabled:
            _draw(stream, label, count, total, time.monotonic() - start)
    if enabled:
        stream.write("\n")
        stream.flush()


def _draw(stream, label: str, count: int, total: int | None, elapsed: float) -> None:
    width = 30
    if total:
        filled = int(width * count / total)
        bar = "#" * filled + "." * (width - filled)
        stream.write(f"\r{label} [{bar}] {count}/{total} {elapsed:5.1f}s")
    else:
        stream.write(f"\r{label} {count} {elapsed:5.1f}s")
    stream.flush()
