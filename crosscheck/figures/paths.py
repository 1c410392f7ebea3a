"""Figure set ``paths``: the five plots of vanishing and exploding path products.

``seqgrad plot paths [--out DIR] [--format png|pdf|svg]`` writes them all.
"""

from __future__ import annotations

from pathlib import Path

from seqgrad import validate
from seqgrad.atomic import save_figure
from seqgrad.progress import progress

NAME = "paths"
HELP = "Figure 3 (|r|^n and tanh trajectories), the |dh_T/dh_t| heatmap, Jacobian-product norms and RNN/GRU/LSTM gradient flow"

# file stem -> (plotting function name, figure size)
FIGURES = {
    "fig3-left-power-curves": ("plot_power_curves", (5.0, 4.0)),
    "fig3-right-tanh-sensitivity": ("plot_tanh_sensitivity", (5.0, 4.0)),
    "sensitivity-heatmap": ("plot_sensitivity_heatmap", (6.5, 4.5)),
    "jacobian-product-norms": ("plot_jacobian_norms", (6.0, 4.5)),
    "gradient-flow-rnn-gru-lstm": ("plot_gradient_flow", (6.5, 4.5)),
}


def write(out_dir: Path, fmt: str, device: str = "cpu") -> list[Path]:
    """Write the five figures into ``out_dir`` as ``fmt`` files and return their paths."""
    from matplotlib.figure import Figure

    from numeric import figures_paths

    from . import FORMATS

    fmt = validate.choice("format", fmt, FORMATS)
    validate.choice("device", device, ("cpu", "cuda"))  # the sweeps are numpy; the device does not change them
    out_dir = Path(out_dir)
    written = []
    for stem, (function, size) in progress(list(FIGURES.items()), len(FIGURES), "paths figures"):
        fig = Figure(figsize=size, layout="constrained")
        getattr(figures_paths, function)(fig.add_subplot())
        written.append(save_figure(fig, out_dir / f"{stem}.{fmt}"))
    return written
