"""Figures of the depth studies (:mod:`numeric.depth`), matplotlib's object-oriented API only.

Each ``plot_*`` function draws on a given ``ax`` and returns the artists it
made, so tests read the plotted data back (``line.get_ydata()``).

1. :func:`plot_layer_profile` — ``||dL/dW2^(l)||_F`` against the layer index l
   for several depths of one placement (Xiong et al. 2020, Figure 3).
2. :func:`plot_output_gradient_vs_depth` — the gradient of the layer nearest the
   output against the depth L, both placements, with the ``1/sqrt(L)`` slope of
   Xiong et al.'s Theorem 1 for pre-norm.
3. :func:`plot_singular_values` — the singular values of the depth Jacobian
   product ``J_L ... J_1`` of one placement, with and without residual bypasses.
"""

from __future__ import annotations

import numpy as np

from seqgrad import validate
from seqgrad.errors import SeqgradValueError

from . import depth
from .figures_paths import top_down

_FLOOR = 1e-300  # a zero singular value is drawn at the bottom of the log axis, not dropped


def plain_log_ticks(axis) -> None:
    """Tick labels of a log ``axis`` that spans a few decades as plain numbers (2, 3, 4, 6, 10, 20, 30), not as
    ``3 \\times 10^1``: the gradient norms of these figures lie between about 0.1 and 100."""
    from matplotlib import ticker

    class Plain(ticker.LogFormatter):
        """The ticks LogFormatter labels, each as ``%g`` writes it (0.6, not 6e-01)."""

        def __call__(self, x, pos=None):
            return f"{x:g}" if super().__call__(x, pos) else ""

    axis.set_major_formatter(Plain())
    axis.set_minor_formatter(Plain(labelOnlyBase=False, minor_thresholds=(2, 0.4)))


def plot_layer_profile(ax, study: depth.GradientStudy, placement: str, depths=(4, 16, 48)) -> list:
    """Gradient norm per layer (1 = nearest the input) for each depth in ``depths``: the median over the seeds (a
    line; the lines are returned) and, in the line's colour, a band from the smallest to the largest seed."""
    placement = validate.choice("placement", placement, depth.PLACEMENTS)
    lines = []
    for L in depths:
        if (placement, L) not in study.profiles:
            raise SeqgradValueError("depths", L, "depths computed by the study: " + ", ".join(map(str, study.depths)))
        norms, layers = study.profiles[(placement, L)], np.arange(1, L + 1)
        line = ax.plot(layers, norms, marker="." if L <= 16 else None, label=f"$L = {L}$")[0]
        if study.seeds > 1:
            ax.fill_between(layers, *study.spread(placement, L), color=line.get_color(), alpha=0.15, lw=0)
        lines.append(line)
    ax.set_yscale("log")
    plain_log_ticks(ax.yaxis)
    ax.set_xlabel("layer $l$ (1 = nearest the input)")
    ax.set_ylabel(r"$\|\partial \mathcal{L}/\partial \mathbf{W}_2^{(l)}\|_F$")
    ax.set_title(f"{placement} stack at initialisation: median of {study.seeds} seeds")
    ax.legend()
    return lines


def plot_output_gradient_vs_depth(ax, study: depth.GradientStudy) -> list:
    """The last layer's gradient norm against the depth L, both placements, and the 1/sqrt(L) reference."""
    L = np.array(study.depths, dtype=float)
    lines = [ax.plot(L, study.last(p), marker="o", label=f"{p}: layer $L$ (nearest the output)")[0] for p in depth.PLACEMENTS]
    pre = study.last("pre-norm")
    lines.append(ax.plot(L, pre[0] / np.sqrt(L), linestyle=":", color="0.4", label=r"pre-norm at $L = 1$, times $1/\sqrt{L}$")[0])
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):
        plain_log_ticks(axis)
    ax.set_xlabel("depth $L$ (blocks)")
    ax.set_ylabel(r"$\|\partial \mathcal{L}/\partial \mathbf{W}_2^{(L)}\|_F$")
    ax.set_title("Gradient near the output vs depth")
    ax.legend(handles=top_down(lines))  # post-norm, the highest at the right end, first
    return lines


def noise_floor(s: np.ndarray) -> float:
    """The level below which a computed singular value is rounding noise: ``n * eps * sigma_1`` (float64)."""
    s = np.asarray(s, dtype=np.float64)
    return float(len(s) * np.finfo(np.float64).eps * (s.max() if s.size else 0.0))


def plot_singular_values(ax, study: depth.JacobianStudy, placement: str,
                         ylabel: str = "singular values of the depth Jacobian product") -> list:
    """Descending singular values of J_L ... J_1 for every depth of the study; solid with residuals, dashed
    without; ``ylabel`` names the product (the notes give it their symbol, :func:`crosscheck.figures.depth.product_label`).  Values below each product's noise floor ``n eps sigma_1`` are rounding noise of float64 and are
    not drawn (a curve ends there); the lowest floor is marked."""
    placement = validate.choice("placement", placement, depth.PLACEMENTS)
    lines = []
    floors = []
    colors = [f"C{i}" for i in range(len(study.depths))]
    for color, L in zip(colors, study.depths):
        for residual, style in ((True, "-"), (False, "--")):
            s = np.asarray(study.singular_values[(placement, residual, L)], dtype=np.float64)
            floor = noise_floor(s)
            floors.append(floor)
            label = f"$L = {L}$, {'with' if residual else 'without'} residual"
            lines.append(ax.plot(np.arange(1, len(s) + 1), np.where(s > floor, s, np.nan), style, color=color, label=label)[0])
    lowest = min(f for f in floors if f > 0) if any(f > 0 for f in floors) else _FLOOR
    ax.set_yscale("log")
    ax.set_ylim(bottom=lowest / 10)
    ax.axhline(lowest, color="0.6", lw=0.8, ls=":")  # the lowest noise floor (the caption says what it is)
    ax.set_xlabel("rank of the singular value (1 = the largest)")
    ax.set_ylabel(ylabel)
    ax.set_title(f"{placement}: singular values of the depth Jacobian product")
    # below the axes, where it covers no curve and no floor: the colour says the depth, the line style the bypass
    # (six short entries in two rows, not eight long ones in four: two of these figures share a page of the notes)
    from matplotlib.lines import Line2D

    keys = ([Line2D([], [], color=color, label=f"$L = {L}$") for color, L in zip(colors, study.depths)]
            + [Line2D([], [], color="0.2", ls=style, label=f"{word} residual")
               for word, style in (("with", "-"), ("without", "--"))])
    ax.legend(handles=keys, fontsize=7.5, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.2))
    return lines
