"""Figure set ``depth``: gradient norms per layer at initialisation and the depth Jacobian product.

``seqgrad plot depth [--out DIR] [--format png|pdf|svg]`` writes them all
(data: :mod:`numeric.depth`; plots: :mod:`numeric.figures_depth`).
"""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

from seqgrad.atomic import save_figure

from . import arguments, chosen

NAME = "depth"
SECONDS = 0.9  # see crosscheck.figures
HELP = "gradient norms per layer of pre-/post-norm stacks (depth 1-48, Xiong et al. 2020) and singular values of the depth Jacobian product"
#: the group of checks that computes this set's data: ``seqgrad check`` draws the set in that group's task
#: (the same worker, after its checks), so the data are computed once
GROUP = "depth"

#: What each figure shows and what to see in it (the caption in the notes and report.tex).
#: The matrices the captions name, set in bold as the text's displays set them.
MATRICES = frozenset()


def _block_jacobian(l="l"):
    from seqgrad.derive.residual import block_jacobian

    return block_jacobian(l)


def _layer_weight(l="l"):
    """The second MLP weight of layer ``l`` of a stack, W_2^(l), as the gradient profiles' axes write it (a superscript
    in parentheses names a layer, as the notation table says)."""
    import sympy as sp

    return sp.MatrixSymbol(f"W_2^({l})", sp.Symbol("d"), sp.Symbol("d_ff"))


def _double_epsilon():
    """The machine epsilon of double precision, the unit of the singular values' noise floor
    (:func:`numeric.figures_depth.noise_floor`), at two significant figures: 2.2 10^-16."""
    import sympy as sp

    return sp.Float(sys.float_info.epsilon, 2)


#: the symbols the captions name as ``{name}``: the Jacobian of block l, the one symbol of derive.residual that the
#: axis of the figures and the notation table print too (J_j is a recurrent cell's step Jacobian), the second MLP
#: weight of layer l and of the last layer L, whose gradients the profiles' axes show, and double precision's epsilon
FORMULAS = {"Jl": _block_jacobian(), "W2l": _layer_weight(), "W2L": _layer_weight("L"), "eps": _double_epsilon()}


def product_label() -> str:
    """The axis label of the depth Jacobian product, ``J_{block,L} ... J_{block,1}``, printed by the notes' printer."""
    from seqgrad.derive.latex_settings import Notation

    latex = Notation().latex
    return f"singular values of ${latex(_block_jacobian('L'))} \\cdots {latex(_block_jacobian(1))}$"

CAPTIONS = {
    "gradient-profile-pre-norm": "Pre-norm stacks at initialisation, the experiment of Xiong et al. (2020) in a "
        "smaller setting: the gradient of each layer's second MLP weight {W2l}, median of 8 seeds (line) and their "
        "range (band). At every depth it is largest next to the input and falls toward the output, the more so the "
        "deeper the stack (sixfold at `L = 48`).",
    "gradient-profile-post-norm": "Post-norm stacks at initialisation (median of 8 seeds, band: their range): in the "
        "deep stack (`L = 48`) the gradient grows toward the output layers, more than tenfold from the first layer; "
        "at the first layer the seeds spread over more than two decades.",
    "gradient-near-output-vs-depth": "The gradient with respect to the second MLP weight of block `L`, {W2L}, the block "
        "nearest the output, against the depth `L` of stacks at initialisation. Pre-norm: it falls with depth, "
        "about as fast as `1/sqrt(L)` (dotted); post-norm: it keeps its size.",
    "jacobian-product-singular-values-pre-norm": "Singular values of the product of the `L` blocks' Jacobians {Jl} "
        "of pre-norm stacks at initialisation. With the residual bypass (solid) all 32 stay above the rounding-noise "
        "floor at every depth; without it (dashed), from `L = 4` on at most 6 stay above the floor.",
    "jacobian-product-singular-values-post-norm": "The same for post-norm stacks: the LayerNorm after each addition "
        "shrinks directions on every path, the shortcut's too, so that fewer stay at ordinary size, and in the deep "
        "stack most are small.",
}

#: What the text says about each figure where it points to it: the experiment's sizes and the numbers of its curves,
#: too long for a caption (:meth:`crosscheck.latex_parts.Build.pointer` adds them after the pointer's sentence).
READINGS = {
    "gradient-near-output-vs-depth": "The stacks are of `L` encoder blocks of width 16, 2 heads, MLP width 32, 8 tokens "
        "(Xavier-normal weights, zero biases; median of 8 seeds). "
        "Pre-norm: fitted log-log slope -0.53, against -0.5 for the dotted `1/sqrt(L)` line of Theorem 1 of "
        "Xiong et al. (2020): the curve falls slower than that "
        "line for shallow stacks and faster for deep ones, so it crosses it. Post-norm: fitted slope -0.01.",
    "gradient-profile-pre-norm": "The stacks have width 16, 2 heads, MLP width 32, 8 tokens (median of 8 seeds; the "
        "band runs from the smallest seed to the largest, widest at the first layers). Xiong et al. report nearly "
        "equal norms across the layers of their pre-norm models; here the gradient falls toward the output already "
        "in the stack of 4 blocks (by a factor 2.2). Both are untrained, at initialisation; the settings differ: "
        "theirs are much wider translation models with a cross-entropy loss on real sentences, these are random "
        "inputs with a fixed random linear read-out, depths up to 48. The `1/sqrt(L)` of their Theorem 1 concerns "
        "the layer nearest the output alone, and it holds here too (slope -0.53); the profile over the other "
        "layers, which their figure shows and their theorem does not bound, is what differs.",
    "gradient-profile-post-norm": "Xiong et al. tie this to the learning-rate warm-up that post-norm Transformers need.",
    "jacobian-product-singular-values-pre-norm": "Each {Jl} is the Jacobian of block `l`'s output with respect to its "
        "input, all 4 tokens of width 8 at once (32 by 32; MLP width 16). With the residual bypass the smallest "
        "singular value stays above 0.004; without it a single block keeps 24 of ordinary size: LayerNorm's Jacobian "
        "sends each token's constant direction to 0 (4 values at the floor) and shrinks each token's own centred row "
        "by `epsilon/(v + epsilon)`, `v` the row's variance (4 values, each more than 100000 times below the rest). "
        "No curve can go below rounding noise, about 32 times {eps} times its largest singular value, so each stops "
        "there; the dotted line marks the lowest of these floors.",
    "jacobian-product-singular-values-post-norm": "The centred row is shrunk by `epsilon/(v + epsilon)`, so even one "
        "block with the residual keeps only 24 of the 32 at ordinary size (two directions fewer per token; 4 values lie more than "
        "100000 times below the rest). For two or more layers the residual keeps more directions above the noise "
        "floor than the stack without it (18 against 2 at `L = 48`), but in the deep stack most are small: at "
        "`L = 48` only 2 of 32 are within a factor 1000 of the largest.",
}


#: a singular value above the noise floor but at most this is "tiny" in the captions: each token's centred row,
#: which LayerNorm's Jacobian shrinks by epsilon / (v + epsilon)
TINY = 1e-8


def caption_facts(grads=None, jacs=None) -> dict:
    """The numbers the captions state, computed from the data the figures draw (a test compares them with the
    captions): the fitted log-log slopes of the gradient near the output against the depth, where the pre-norm
    curve lies against its 1/sqrt(L) reference, and the singular values of the depth Jacobian products."""
    import numpy as np

    from seqgrad.numeric import depth, figures_depth

    grads = depth.gradient_study() if grads is None else grads
    jacs = depth.jacobian_study() if jacs is None else jacs
    L = np.array(grads.depths, dtype=float)
    slope = {p: float(np.polyfit(np.log(L), np.log(np.asarray(grads.last(p), float)), 1)[0]) for p in depth.PLACEMENTS}
    pre = np.asarray(grads.last("pre-norm"), float)
    above_reference = (pre - pre[0] / np.sqrt(L))[1:] > 0
    facts = {"slope": slope, "above_reference": above_reference.tolist(), "depths": list(jacs.depths),
             "seeds": grads.seeds}
    for p in depth.PLACEMENTS:  # the layer profiles: where each peaks, how far it falls or grows, the seeds' spread
        for Ld in (4, 16, 48):
            norms, (lo, hi) = np.asarray(grads.profiles[(p, Ld)], float), grads.spread(p, Ld)
            facts[("profile", p, Ld)] = {"peak": int(norms.argmax()) + 1, "first_over_last": float(norms[0] / norms[-1]),
                                         "peak_over_first": float(norms.max() / norms[0]),
                                         "first_spread": float(hi[0] / lo[0])}
    for p in depth.PLACEMENTS:
        for residual in (True, False):
            for Ld in jacs.depths:
                s = np.asarray(jacs.singular_values[(p, residual, Ld)], float)
                floor = figures_depth.noise_floor(s)
                ordinary, tiny = s[s > TINY], s[(s > floor) & (s <= TINY)]
                facts[(p, residual, Ld)] = {
                    "n": len(s), "above_floor": int((s > floor).sum()), "within_1000": int((s > 1e-3 * s.max()).sum()),
                    "smallest": float(s.min()), "ordinary": len(ordinary), "tiny": len(tiny),
                    "tiny_range": (float(tiny.min()), float(tiny.max())) if tiny.size else None,
                    "gap": float(ordinary.min() / tiny.max()) if tiny.size else None}
    return facts


def size(stem: str) -> tuple[float, float]:
    """The size in inches figure ``stem`` is drawn at: two share a page of the notes (the singular values' legend
    stands below the axes)."""
    return (5.6, 3.5 if stem.startswith("jacobian") else 3.2)


def write(out_dir: Path, fmt: str, device: str = "cpu", stems=None) -> list[Path]:
    """Write the five figures (or those named in ``stems``) into ``out_dir`` as ``fmt`` files and return their
    paths; a study no chosen figure draws is not run."""
    from matplotlib.figure import Figure

    from seqgrad.numeric import depth, figures_depth

    fmt = arguments(fmt, device)  # tiny float64 stacks: the studies run on the CPU either way
    grads, jacs = cache(depth.gradient_study), cache(depth.jacobian_study)
    plots = {
        "gradient-profile-pre-norm": lambda ax: figures_depth.plot_layer_profile(ax, grads(), "pre-norm"),
        "gradient-profile-post-norm": lambda ax: figures_depth.plot_layer_profile(ax, grads(), "post-norm"),
        "gradient-near-output-vs-depth": lambda ax: figures_depth.plot_output_gradient_vs_depth(ax, grads()),
        "jacobian-product-singular-values-pre-norm": lambda ax: figures_depth.plot_singular_values(ax, jacs(), "pre-norm",
                                                                                                     product_label()),
        "jacobian-product-singular-values-post-norm": lambda ax: figures_depth.plot_singular_values(ax, jacs(), "post-norm",
                                                                                                      product_label()),
    }
    written = []
    for stem in chosen(sys.modules[__name__], stems):
        plot = plots[stem]
        # the singular values' legend stands below the axes
        fig = Figure(figsize=size(stem), layout="constrained")
        plot(fig.add_subplot())
        written.append(save_figure(fig, Path(out_dir) / f"{stem}.{fmt}"))
    return written
