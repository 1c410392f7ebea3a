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


#: The size, in points, of the numbers written in the cells of a heatmap (the attention weights, the scores): the
#: notes include a figure no wider than the text at its own size (:func:`crosscheck.latex_parts.figure_scale`), so
#: they are printed at this size, above the notes' 7 pt minimum and a step below the tick labels.
CELL_FONT_PT = 9.0


def cell_label(value: float, decimals: int) -> str:
    """A cell's number with ``decimals`` decimals, one format for every cell of a figure, and a true minus sign
    (none on a number that rounds to 0): ``cell_label(-0.00776, 2) == "−0.01"``."""
    text = f"{value:.{decimals}f}"
    if float(text) == 0:
        text = text.lstrip("-")
    return text.replace("-", "\u2212")


def contrast_color(image, value: float) -> str:
    """Black or white, whichever contrasts more with the colour ``image`` gives ``value`` (the relative luminance
    of the cell's colour, WCAG 2: black above 0.179, where the two contrast ratios are equal)."""
    r, g, b, _ = image.cmap(image.norm(value))
    return "black" if luminance((r, g, b)) > 0.179 else "white"


def luminance(rgb) -> float:
    """The relative luminance of an sRGB colour (components in [0, 1]), as WCAG 2 defines it."""
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb[:3]]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def annotate_cells(ax, values, image, decimals: int, skip=None, **style) -> list:
    """Write each cell's value of the heatmap ``image`` (drawn from ``values`` on ``ax``) in it, with ``decimals``
    decimals (:func:`cell_label`), at :data:`CELL_FONT_PT`, in black or white to contrast with the cell
    (:func:`contrast_color`); cells where ``skip`` is true, and values that are not finite, get none."""
    import numpy as np

    texts = []
    for (i, j), v in np.ndenumerate(np.asarray(values, float)):
        if (skip is not None and skip[i, j]) or not np.isfinite(v):
            continue
        texts.append(ax.text(j, i, cell_label(v, decimals), ha="center", va="center", fontsize=CELL_FONT_PT,
                             color=contrast_color(image, v), **style))
    return texts


def figure_sets() -> dict[str, ModuleType]:
    """Every figure set, by name, in a stable order."""
    out = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        out[module.NAME] = module
    return out
