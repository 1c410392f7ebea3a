"""Figure set ``paths``: the five plots of vanishing and exploding path products.

``seqgrad plot paths [--out DIR] [--format png|pdf|svg]`` writes them all.
"""

from __future__ import annotations

import sys
from pathlib import Path

from seqgrad.atomic import save_figure
from seqgrad.progress import progress

from . import arguments, chosen

NAME = "paths"
SECONDS = 1.1  # see crosscheck.figures
HELP = "Figure 3 (|r|^(t - tau) and tanh trajectories), the |dh_T/dh_t| heatmap, Jacobian-product norms and RNN/GRU/LSTM gradient flow"

#: What each figure shows and what to see in it (the caption in the notes and report.tex).
CAPTIONS = {
    "fig3-left-power-curves": "A factor `rho` raised to the path length `t - tau` (as the course notes draw it, week 6), the bound on a "
        "path product of the text. Below 1 the bound vanishes geometrically, and so does every product under it; above 1 "
        "the bound grows geometrically, which allows a product to grow but does not make it; on the log scale the curves "
        "are straight lines.",
    "fig3-right-tanh-sensitivity": "The sensitivity of the last state to the first on tanh trajectories with `w_h = 1.2` "
        "(as the course notes draw it, week 6). With input 0 the state stays at 0, where the slope of tanh is 1, and the "
        "product grows exactly like 1.2 to the power `T - 1` (right panel; the dots lie on the dashed reference); with "
        "input 1 the state saturates, the slope is small, and the sensitivity vanishes (left panel, dozens of "
        "decades) although `w_h > 1`.",
    "sensitivity-heatmap": "The sensitivity of the last state to the state at step `t` of a scalar tanh RNN (log10, "
        "colour), over the step `t` and the recurrent weight `w_h`; the black contour marks a sensitivity of "
        "exactly 1 (log10 0: no change). Blue: vanishing, red: exploding; colours are clipped at the colour bar's ends.",
    "jacobian-product-norms": "A vector tanh RNN, from the top: the Pascanu bound, the product of the single-step "
        "norms, and the spectral norm of the Jacobian product. Each is an upper bound of the one below it; the "
        "norm of the product itself falls far below both as the distance grows.",
    "gradient-flow-rnn-gru-lstm": "Gradient (solid) and carry product (dashed) against the steps back. Left: at "
        "PyTorch's default initialisation all three cells lose the gradient alike. Right: with the keeping gate's bias "
        "raised by 3 the carry product shrinks slowly; the GRU's gradient follows it, the LSTM's drops tenfold at "
        "once, then changes little.",
}

#: What the text says about a figure where it points to it: the reading of its curves, too long for a caption
#: (typeset words, :func:`crosscheck.latex_parts.words`; :meth:`crosscheck.latex_parts.Build.pointer` adds them).
READINGS = {
    "gradient-flow-rnn-gru-lstm": "At the default initialisation the gates sit near 0.5 and the gradient falls "
        "by more than twelve orders of magnitude over 59 steps back. With the bias of the keeping gate (the LSTM's "
        "forget gate `f`, the GRU's update gate `u`) raised by 3 the gates sit near 0.95, and the carry product (the "
        "product of that gate over the steps, averaged over the state's coordinates) shrinks only by a factor near "
        "0.95 a step, to about 0.05 after 59 steps; the gradient ends there too. With the raised bias the GRU's "
        "gradient follows its carry product all the way; the LSTM's falls about tenfold in its first step back, since "
        "the state `h` reaches the next step only through the gates' weights (the cell state `c`, not `h`, carries "
        "itself), and from there on stays between 0.02 and 0.12. At distance 0 every curve is 1 (the loss reads the "
        "last state out along a unit vector; the carry product is empty).",
}

#: The figures drawn as panels side by side (stem -> number of panels; the others have one): the plot function is
#: given that many axes.
PANELS = {"gradient-flow-rnn-gru-lstm": 2, "fig3-right-tanh-sensitivity": 2}


def figures() -> dict:
    """File stem -> (plotting function of :mod:`numeric.figures_paths`, figure size in inches).  A function,
    so that listing the figure sets (``seqgrad plot --help``) does not import torch."""
    from seqgrad.numeric import figures_paths as fp

    return {
        # at sizes two of them share a page: each stands on the page that cites it or the next
        "fig3-left-power-curves": (fp.plot_power_curves, (4.8, 3.3)),
        "fig3-right-tanh-sensitivity": (fp.plot_tanh_sensitivity, (6.2, 3.0)),  # two panels
        "sensitivity-heatmap": (fp.plot_sensitivity_heatmap, (6.2, 3.3)),
        "jacobian-product-norms": (fp.plot_jacobian_norms, (5.6, 3.4)),
        "gradient-flow-rnn-gru-lstm": (fp.plot_gradient_flow, (6.5, 3.6)),  # two panels, legends below
    }


def write(out_dir: Path, fmt: str, device: str = "cpu", stems=None) -> list[Path]:
    """Write the five figures (or those named in ``stems``) into ``out_dir`` as ``fmt`` files and return their paths."""
    from matplotlib.figure import Figure

    fmt = arguments(fmt, device)  # the sweeps are numpy; the device does not change them
    out_dir = Path(out_dir)
    wanted = chosen(sys.modules[__name__], stems)
    plots = {stem: plot for stem, plot in figures().items() if stem in wanted}
    written = []
    for stem, (plot, size) in progress(list(plots.items()), len(plots), "paths figures"):
        fig = Figure(figsize=size, layout="constrained")
        plot(fig.subplots(1, PANELS[stem]) if stem in PANELS else fig.add_subplot())
        written.append(save_figure(fig, out_dir / f"{stem}.{fmt}"))
    return written
