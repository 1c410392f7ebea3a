"""Figure sets for ``seqgrad plot NAME`` and the figures of ``seqgrad check``.

Each module here defines ``NAME``, ``HELP``, ``CAPTIONS`` and
``write(out_dir: Path, fmt: str, device: str, stems=None) -> list[Path]``, which first checks its
arguments with :func:`arguments` (a set whose data do not depend on the device, computed
on the CPU, still refuses a device that is not one) and draws the figures ``stems`` of its
``CAPTIONS`` (default: all; the notes' handout draws only the ones it includes, :func:`chosen`).  A set whose data a group of checks also
computes names that group as ``GROUP``: ``seqgrad check`` then draws it in the same worker, after the
group's checks, where the data are already in the caches.  ``SECONDS``, where given, is the CPU time the set
takes to draw in a fresh worker (measured, docs/benchmarks.md): ``seqgrad check`` hands the longest tasks out first.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from seqgrad import validate

FORMATS = ("png", "pdf", "svg")
DEVICES = ("cpu", "cuda")


def arguments(fmt: str, device: str) -> str:
    """The file format of a figure set's ``write``, checked, after its device (one clear error for a wrong value)."""
    validate.choice("device", device, DEVICES)
    return validate.choice("format", fmt, FORMATS)


def chosen(module, stems) -> list[str]:
    """The figures of the set ``module`` to draw: ``stems`` (any of its ``CAPTIONS``, in their order), or all of them
    for None; an unknown stem is refused naming the ones the set has."""
    known = list(module.CAPTIONS)
    if stems is None:
        return known
    if isinstance(stems, str) or not all(isinstance(s, str) for s in stems):
        from seqgrad.errors import SeqgradTypeError

        raise SeqgradTypeError("stems", stems, "a list of figure names of the set " + module.NAME)
    for stem in stems:
        validate.choice("stems", stem, known)
    return [stem for stem in known if stem in set(stems)]


def figure_sets() -> dict[str, ModuleType]:
    """Every figure set, by name, in a stable order."""
    out = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        out[module.NAME] = module
    return out
