"""Figure set ``positional``: the sinusoidal positional encoding of a wide model.

``seqgrad plot positional [--out DIR] [--format png|pdf|svg]`` writes it (data: :func:`numeric.positions.sinusoidal`).
"""

from __future__ import annotations

from pathlib import Path

import sys

import numpy as np

from . import arguments, chosen

NAME = "positional"
SECONDS = 0.2  # see crosscheck.figures
HELP = "the sinusoidal positional encoding for D = 128 and 100 positions"

#: What each figure shows and what to see in it (the caption in the notes and report.tex).
CAPTIONS = {
    "positional_encoding_d128": "Sinusoidal positions for width 128 and 100 positions: the first coordinates oscillate "
        "fast (coordinate 0 changes sign 31 times), the last ones hardly change over 100 positions (the last pair's "
        "wavelength, `2*pi` over its frequency, is about 54000 positions).",
}


def plot_positional_encoding(ax, P) -> dict:
    """Heatmap of a sinusoidal encoding: positions down, coordinates across."""
    P = np.asarray(P, float)
    image = ax.imshow(P, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
    ax.set_xlabel("coordinate (pair j holds coordinates 2j and 2j + 1)")
    ax.set_ylabel("position pos")
    ax.set_title(f"Sinusoidal positions, width d = {P.shape[1]}, {P.shape[0]} positions")
    return {"image": image}


def write(out_dir: Path, fmt: str = "png", device: str = "cpu", stems=None) -> list[Path]:
    """Write the figure into ``out_dir`` as a ``fmt`` file and return its path (none for ``stems=[]``)."""
    from matplotlib.figure import Figure

    from seqgrad.atomic import save_figure
    from seqgrad.numeric.positions import sinusoidal

    fmt = arguments(fmt, device)  # the encoding is a formula: the device does not change it
    if not chosen(sys.modules[__name__], stems):
        return []
    fig = Figure(figsize=(6.5, 4.2), layout="constrained")
    ax = fig.subplots()
    art = plot_positional_encoding(ax, sinusoidal(100, 128).numpy())
    fig.colorbar(art["image"], ax=ax, label=r"$\mathrm{PE}(\mathrm{pos}, \cdot)$, from $-1$ to $1$")
    return [save_figure(fig, Path(out_dir) / f"positional_encoding_d128.{fmt}")]
