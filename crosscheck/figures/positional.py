"""Figure set ``positional``: the sinusoidal positional encoding of a wide model.

``seqgrad plot positional [--out DIR] [--format png|pdf|svg]`` writes it (data: :func:`numeric.positions.sinusoidal`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from . import arguments

NAME = "positional"
SECONDS = 0.2  # see crosscheck.figures
HELP = "the sinusoidal positional encoding for D = 128 and 100 positions"

#: What each figure shows and what to see in it (the caption in the notes and report.tex).
CAPTIONS = {
    "positional_encoding_d128": "Sinusoidal positions for width 128 and 100 positions: the first coordinates oscillate "
        "fast, the last ones hardly change over 100 positions (their wavelengths reach 10000 times `2*pi`).",
}


def plot_positional_encoding(ax, P) -> dict:
    """Heatmap of a sinusoidal encoding: positions down, coordinates across."""
    P = np.asarray(P, float)
    image = ax.imshow(P, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
    ax.set_xlabel("coordinate j")
    ax.set_ylabel("position t")
    ax.set_title(f"sinusoidal positions, D = {P.shape[1]}, T = {P.shape[0]}")
    return {"image": image}


def write(out_dir: Path, fmt: str = "png", device: str = "cpu") -> list[Path]:
    """Write the figure into ``out_dir`` as a ``fmt`` file and return its path."""
    from matplotlib.figure import Figure

    from seqgrad.atomic import save_figure
    from seqgrad.numeric.positions import sinusoidal

    fmt = arguments(fmt, device)  # the encoding is a formula: the device does not change it
    fig = Figure(figsize=(6.5, 4.2), layout="constrained")
    ax = fig.subplots()
    art = plot_positional_encoding(ax, sinusoidal(100, 128).numpy())
    fig.colorbar(art["image"], ax=ax, label=r"$PE(t, j)$, from $-1$ to $1$")
    return [save_figure(fig, Path(out_dir) / f"positional_encoding_d128.{fmt}")]
