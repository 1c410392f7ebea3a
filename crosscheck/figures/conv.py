"""The receptive field of stacked convolutions (lecture 7, l.15), measured by autograd, beside the formula.

Each plotting function draws on a given matplotlib ``ax`` and returns the artists it made.
"""

from __future__ import annotations

from pathlib import Path

import sys

import numpy as np

from . import arguments, chosen

NAME = "conv"
SECONDS = 0.17  # see crosscheck.figures

#: What each figure shows and what to see in it (the caption in the notes and report.tex).
CAPTIONS = {
    "conv_receptive_field": "Receptive fields of three stacked convolutions, kernel 3 at every layer, strides 1, 1, "
        "1 (left) and 2, 2, 1 (right). The squares of each layer are the units that influence the central output of "
        "the last layer, drawn at the centre of the input they read. The black bar spans the receptive field of that "
        "output: 7 input positions at strides 1, 1, 1 and 15 at strides 2, 2, 1, the values of `rf_3` at kernel 3 "
        "(each layer adds `k - 1` times the product of the strides below it).",
}
HELP = "receptive field of stacked 1-D convolutions (kernel 3; stride 1 and 2): positions one output reads, layer by layer"


def influence(kernels, strides, width: int = 41) -> list[np.ndarray]:
    """For layer 0 (the input) to layer L: the positions of that layer that influence the central top output
    (measured: the nonzero gradient entries, positive kernels so nothing cancels)."""
    import torch

    from seqgrad.numeric.conv import conv

    X = torch.ones(1, width, dtype=torch.float64, requires_grad=True)
    layers = [X]
    for k, s in zip(kernels, strides):
        Y = conv(layers[-1], torch.ones(k, dtype=torch.float64), stride=s)
        Y.retain_grad()
        layers.append(Y)
    top = layers[-1]
    top[0, top.shape[1] // 2].backward()
    return [np.nonzero(t.grad[0].numpy())[0] for t in layers]


def centres(kernels, strides, layer: int, positions: np.ndarray) -> np.ndarray:
    """Unit p of layer l reads input positions p J_l .. p J_l + r_l - 1 (jump J_l = prod s, field r_l); its centre."""
    from seqgrad.derive.conv import receptive_field

    J = int(np.prod(strides[:layer])) if layer else 1
    r = int(receptive_field(kernels[:layer], strides[:layer])) if layer else 1
    return positions * J + (r - 1) / 2


def plot_receptive_field(ax, reads: list[np.ndarray], kernels, strides, formula: int) -> dict:
    points = []
    for l, pos in enumerate(reads):
        x = centres(kernels, strides, l, pos)
        points.append(ax.scatter(x, np.full(len(x), l), s=60, marker="s"))
    first, last = int(reads[0].min()), int(reads[0].max())
    extent = last - first + 1
    ax.hlines(-0.45, first - 0.5, last + 0.5, lw=4, color="k")
    ax.set_yticks(range(len(reads)), ["input"] + [f"layer {l}" for l in range(1, len(reads))])
    ax.set_ylim(-0.8, len(reads) - 0.5)
    ax.set_xlabel("input position")
    if extent != formula:  # the picture would contradict the section's formula r_l: say so, never draw it
        raise ValueError(f"the receptive field drawn for kernels {kernels}, strides {strides} is {extent} input "
                         f"positions, the formula gives {formula}")
    ax.set_title(f"kernels {', '.join(map(str, kernels))}, strides {', '.join(map(str, strides))}\n"
                 f"receptive field {extent}", fontsize=10)
    return {"points": points, "extent": extent}


def write(out_dir: Path, fmt: str = "png", device: str = "cpu", stems=None) -> list[Path]:
    """Write the figure into ``out_dir`` as a ``fmt`` file and return its path (none for ``stems=[]``)."""
    from matplotlib.figure import Figure

    from seqgrad.derive.conv import receptive_field
    from seqgrad.atomic import save_figure

    fmt = arguments(fmt, device)  # the influence maps are computed on the CPU; the device does not change them
    if not chosen(sys.modules[__name__], stems):
        return []
    # the text's width, labels at the size drawn; the two stacks side by side, so the figure leaves room on its
    # page for the text around it
    fig = Figure(figsize=(6.5, 2.8), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True, sharex=True)  # one input axis: the fields 7 and 15 drawn to scale
    for ax, strides in zip(axes, ([1, 1, 1], [2, 2, 1])):
        kernels = [3, 3, 3]
        plot_receptive_field(ax, influence(kernels, strides), kernels, strides, int(receptive_field(kernels, strides)))
    return [save_figure(fig, Path(out_dir) / f"conv_receptive_field.{fmt}")]
