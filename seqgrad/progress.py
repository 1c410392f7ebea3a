"""Progress bars (tqdm) on standard error, drawn only on a terminal unless asked for.

>>> list(progress(range(3), label="demo", enabled=False))
[0, 1, 2]
"""

from __future__ import annotations

import sys
from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")


def progress(items: Iterable[T], total: int | None = None, label: str = "", stream=None,
             enabled: bool | None = None) -> Iterator[T]:
    """Yield ``items`` while ``tqdm`` draws ``label  40%|####      | 2/5 [00:01<00:01]`` on ``stream``
    (standard error); by default only when ``stream`` is a terminal, so logs and pipes stay clean."""
    from tqdm import tqdm

    stream = stream or sys.stderr
    if enabled is None:
        enabled = hasattr(stream, "isatty") and stream.isatty()
    yield from tqdm(items, total=total, desc=label or None, file=stream, disable=not enabled, leave=True,
                    dynamic_ncols=True, mininterval=0.2)
