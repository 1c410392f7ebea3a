"""Figure set ``depth``: gradient norms per layer at initialisation and the depth Jacobian product.

``seqgrad plot depth [--out DIR] [--format png|pdf|svg]`` writes them all
(data: :mod:`numeric.depth`; plots: :mod:`numeric.figures_depth`).
"""

from __future__ import annotations

from pathlib import Path

from seqgrad.atomic import save_figure

from . import arguments

NAME = "depth"
HELP = "gradient norms per layer of pre-/post-norm stacks (depth 1-48, Xiong et al. 2020) and singular values of the depth Jacobian product"
#: the group of checks that computes this set's data: ``seqgrad check`` draws the set in that group's task
#: (the same worker, after its checks), so the data are computed once
GROUP = "depth"

#: What each figure shows and what to see in it (the caption in the notes and report.tex).
CAPTIONS = {
    "gradient-profile-pre-norm": "Pre-norm stacks at initialisation (Xiong et al. 2020, Fig. 3): the gradient norm of each "
        "layer's second MLP weight is largest near the input, falls gently toward the output, and every layer's gradient "
        "gets smaller as the stack gets deeper.",
    "gradient-profile-post-norm": "Post-norm stacks at initialisation: in the deep stack (L = 48) the gradient grows toward "
        "the output layers, by two orders of magnitude here; Xiong et al. tie this to the learning-rate warm-up that "
        "post-norm Transformers need.",
    "gradient-near-output-vs-depth": "The gradient of the layer nearest the output against the depth L: pre-norm follows "
        "the 1/sqrt(L) slope of Xiong et al.'s Theorem 1 (dotted), post-norm keeps its size.",
    "jacobian-product-singular-values-pre-norm": "Singular values of the depth Jacobian product of pre-norm stacks "
        "(week06 §Depth:1179-1191): with the residual bypass (solid) they stay near 1 at every depth; without it "
        "(dashed) all but a few collapse. Each curve stops at its float64 noise floor.",
    "jacobian-product-singular-values-post-norm": "The same for post-norm stacks: the LayerNorm after each addition "
        "rescales the path, but the residual still keeps many directions open. Each curve stops at its float64 noise floor.",
}


def write(out_dir: Path, fmt: str, device: str = "cpu") -> list[Path]:
    """Write the five figures into ``out_dir`` as ``fmt`` files and return their paths."""
    from matplotlib.figure import Figure

    from seqgrad.numeric import depth, figures_depth

    fmt = arguments(fmt, device)  # tiny float64 stacks: the studies run on the CPU either way
    grads, jacs = depth.gradient_study(), depth.jacobian_study()
    plots = {
        "gradient-profile-pre-norm": lambda ax: figures_depth.plot_layer_profile(ax, grads, "pre-norm"),
        "gradient-profile-post-norm": lambda ax: figures_depth.plot_layer_profile(ax, grads, "post-norm"),
        "gradient-near-output-vs-depth": lambda ax: figures_depth.plot_output_gradient_vs_depth(ax, grads),
        "jacobian-product-singular-values-pre-norm": lambda ax: figures_depth.plot_singular_values(ax, jacs, "pre-norm"),
        "jacobian-product-singular-values-post-norm": lambda ax: figures_depth.plot_singular_values(ax, jacs, "post-norm"),
    }
    written = []
    for stem, plot in plots.items():
        fig = Figure(figsize=(6.0, 4.5), layout="constrained")
        plot(fig.add_subplot())
        written.append(save_figure(fig, Path(out_dir) / f"{stem}.{fmt}"))
    return written
