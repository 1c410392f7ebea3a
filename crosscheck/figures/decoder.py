"""The decoder's generation example (seed 001 l.184): cross-attention weights of every step as heatmaps.

Each plotting function draws on a given matplotlib ``ax`` and returns the artists it made.
"""

from __future__ import annotations

from pathlib import Path

import sys

import numpy as np

from . import annotate_cells, arguments, chosen

NAME = "decoder"
SECONDS = 0.2  # see crosscheck.figures

#: What each figure shows and what to see in it (the caption in the notes and report.tex).
CAPTIONS = {
    "decoder_cross_attention": "Cross-attention in a toy translation model that turns the source words i, love, ml "
        "into three Russian words (the figure writes them in Cyrillic; transliterated ya, lyublyu, mo, where mo "
        "abbreviates machine learning), one panel per head, of the model trained on this one pair (the text gives "
        "its training). The model writes one word per step, greedily. Row `t` is the query of the newest target "
        "position at step `t` (positions from 0): its input is the word written at the step before (the start token at "
        "position 0), and the word after the arrow is the one it writes. Unlike the decoder's causal self-attention, "
        "cross-attention lets every row attend to all source words (the columns, keys and values); each row sums to 1. "
        "In head 2 each row from 1 on peaks on the source word of the word it reads, one word behind the word it "
        "writes; head 1 does so only in row 2.",
}
#: What the text says after its pointer to a figure: how the model was trained (too long for the caption).
READINGS = {
    "decoder_cross_attention": "The model (one pre-norm block in the encoder and one in the decoder, width 16, 2 "
        "heads, MLP width 32) is trained on this one sentence pair alone, by teacher forcing: 60 steps of Adam with "
        "learning rate 0.02 on the mean cross-entropy of each next word, from a random initialisation; the loss falls "
        "from 1.71 to 0.0003.",
}
HELP = "the lesson's generation example I love ML -> Я люблю МО: cross-attention weights of each step, per head"
#: the group of checks that computes this set's data: ``seqgrad check`` draws the set in that group's task
#: (the same worker, after its checks), so the data are computed once
GROUP = "decoder"


def plot_cross_attention(ax, weights: np.ndarray, source: list[str], steps: list[str], title: str = "") -> dict:
    """``weights``: steps x source positions (each row sums to 1); rows are the generation steps.  Every cell is
    written with three decimals (one format: 0.918, 0.017, 0.002), in black or white to contrast with its colour."""
    image = ax.imshow(weights, vmin=0.0, vmax=1.0, cmap="viridis")
    ax.set_xticks(range(len(source)), source)
    ax.set_yticks(range(len(steps)), steps)
    ax.set_xlabel("source word (keys, values)")
    ax.set_ylabel("position t: input \u2192 written (query)")
    if title:
        ax.set_title(title)
    texts = annotate_cells(ax, weights, image, decimals=3)
    return {"image": image, "texts": texts}


def step_labels(gen, words) -> list[str]:
    """A row's label: the position t (from 0), the token it reads (its input: the one written at step t - 1, or <start>)
    and the token it writes, ``"1: \u044f \u2192 \u043b\u044e\u0431\u043b\u044e"``."""
    return [f"{s.t}: {words[gen.ids[s.t]]} \u2192 {words[s.token]}" for s in gen.steps]


def write(out_dir: Path, fmt: str = "png", device: str = "cpu", stems=None) -> list[Path]:
    """Write the figure into ``out_dir`` as a ``fmt`` file and return its path (none for ``stems=[]``)."""
    from matplotlib.figure import Figure

    from seqgrad.numeric.decoder import lesson_example
    from seqgrad.atomic import save_figure

    fmt = arguments(fmt, device)  # the lesson's toy model runs on the CPU; the device does not change it
    if not chosen(sys.modules[__name__], stems):
        return []
    model, sv, tv, _ = lesson_example()
    gen = model.generate(sv.encode("I love ML"), 10, attention=True)
    A = np.stack([s.cross_attention.numpy() for s in gen.steps], axis=1)  # heads x steps x source
    steps = step_labels(gen, tv.words)
    # the heads side by side, the text's width, rows labelled once (the heads share them): a figure a third of a page
    # high, set beside the section's text (one head under the other took a page of its own, a third of it empty)
    fig = Figure(figsize=(6.5, 2.9), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, A.shape[0], sharey=True))
    art = None
    for h, ax in enumerate(axes):
        art = plot_cross_attention(ax, A[h], list(sv.words), steps, title=f"cross-attention, head {h + 1}")
        if h:
            ax.set_ylabel("")
            ax.tick_params(labelleft=False)
    fig.colorbar(art["image"], ax=list(axes), shrink=0.8)
    return [save_figure(fig, Path(out_dir) / f"decoder_cross_attention.{fmt}")]
