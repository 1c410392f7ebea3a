"""Figure sets for ``seqgrad plot NAME`` and the figures of ``seqgrad check``.

Each module here defines ``NAME``, ``HELP`` and
``write(out_dir: Path, fmt: str, device: str) -> list[Path]``.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

FORMATS = ("png", "pdf", "svg")


def figure_sets() -> dict[str, ModuleType]:
    """Every figure set, by name, in a stable order."""
    out = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        out[module.NAME] = module
    return out
