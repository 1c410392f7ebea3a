"""Figures of the course's encoder example (text, Figures 6, 8-11); the wide positional encoding is the set ``positional``.

Each plotting function draws on a given matplotlib ``ax`` (object-oriented API
only) and returns the artists it made, so tests can read the plotted data.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from . import annotate_cells, arguments, chosen

NAME = "encoder"
SECONDS = 0.95  # see crosscheck.figures
HELP = "the course encoder: E_seq/P/H0 (Fig. 6), begins contributions (Fig. 8), S, A, causal A (Figs. 9-11)"

#: What each figure shows and what to see in it (the caption in the notes and report.tex).
#: The matrices the captions name, set in bold as the text's displays set them.
MATRICES = frozenset({"E_seq", "P", "H_0", "S", "A"})

CAPTIONS = {
    "fig06_identity_position": "The token identity `E_seq`, the position `P` and their sum `H_0` of the worked example on "
        "one colour scale. Rows 0 and 3 are the same word, a, with the same embedding; the position makes their rows of "
        "`H_0` differ.",
    "fig08_begins_contributions": "Head 1 of the worked example on `H_0` (as the course applies it), the query of "
        "the token “begins” (row 6): each source token's row of the "
        "head's values, weighted by the attention weight the query gives that source, one row per source, and their sum "
        "(bold), row 6 of the head's output. The largest rows, in norm, are those of “journey”, “miles” and "
        "“begins”.",
    "fig09_S": "The scaled scores `S` of head 1, applied to `H_0` directly as the course's attention example does "
        "(not to the block's LayerNorm of it): rows are queries, columns sources; the colour scale is fitted to the "
        "values.",
    "fig10_A": "The weights `A` of head 1 on `H_0`, the softmax of each row of `S`. Every row sums to 1, and no weight is near 0 or 1: "
        "every weight lies within a factor 3 of the uniform `1/7`, so every query mixes all seven sources. The colour "
        "scale is fitted to the values (0.054 to 0.291).",
    "fig11_A_causal": "What the decoder's causal mask does, shown on the encoder example's head 1 on `H_0` (the same "
        "scores, masked): a query sees only itself and earlier sources: the masked weights are exactly 0 "
        "(crosses) and each row renormalises over what it sees, so row 0 puts weight 1 on itself. The colour scale is "
        "fitted to the unmasked weights.",
}


#: The decimals of the numbers in the cells, one format per figure: the scores S (from -0.84 to 1.34) at two, the
#: weights A (all below 1, most below 0.3) and the weighted values of Fig. 8 (most below 0.2) at three.
DECIMALS = {"scores": 2, "weights": 3, "contributions": 3}


def _ticks(ax, rows: list[str] | None, cols: list[str] | None) -> None:
    if rows is not None:
        ax.set_yticks(range(len(rows)), rows)
    if cols is not None:
        ax.set_xticks(range(len(cols)), cols, rotation=45, ha="right")


def plot_identity_position_sum(axes, E_seq, P, H0, tokens: list[str], annotate: bool = False) -> dict:
    """Figure 6: E_seq, P and H0 = E_seq + P as heatmaps on one shared colour scale (the rows labelled on the
    first panel only; each cell's value written in it with ``annotate``, for a figure wide enough to read them)."""
    mats = [np.asarray(E_seq, float), np.asarray(P, float), np.asarray(H0, float)]
    bound = max(float(np.abs(m).max()) for m in mats)
    images, texts = [], []
    rows = [f"{t}: {w}" for t, w in enumerate(tokens)]
    for k, (ax, m, title) in enumerate(zip(axes, mats, (r"$\mathbf{E}_{\mathrm{seq}}$ (token identity)", r"$\mathbf{P}$ (position)",
                                                      r"$\mathbf{H}_0 = \mathbf{E}_{\mathrm{seq}} + \mathbf{P}$"))):
        images.append(ax.imshow(m, cmap="RdBu_r", vmin=-bound, vmax=bound))
        if annotate:
            texts += annotate_cells(ax, m, images[-1], decimals=2)
        ax.set_title(title, fontsize=9)
        _ticks(ax, rows if k == 0 else [""] * len(rows), [f"{j}" for j in range(m.shape[1])])
        ax.set_xlabel("coordinate j", fontsize=8)
        ax.tick_params(labelsize=8)
    return {"images": images, "texts": texts}


def plot_attention_matrix(ax, M, tokens: list[str], *, title: str, masked=None, vmin=None, vmax=None, cmap="viridis",
                          decimals: int = DECIMALS["weights"]) -> dict:
    """A 7x7 score or weight matrix (rows = queries, columns = sources), each cell's value written in it with
    ``decimals`` decimals; masked cells get a cross."""
    M = np.asarray(M, float)
    mask = np.zeros(M.shape, bool) if masked is None else np.asarray(masked, bool)
    shown = M[~mask]
    vmin = float(shown.min()) if vmin is None else vmin  # the colour scale fits the values drawn
    vmax = float(shown.max()) if vmax is None else vmax
    image = ax.imshow(np.where(mask, np.nan, M), cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")  # cells wider than tall: a number fits
    texts = annotate_cells(ax, M, image, decimals, skip=mask)
    ii, jj = np.nonzero(mask)
    crosses = ax.scatter(jj, ii, marker="x", color="0.3", s=40, label="masked (weight exactly 0)")
    ax.set_title(title)
    ax.set_xlabel("source j")
    ax.set_ylabel("query t")
    _ticks(ax, [f"{t}: {w}" for t, w in enumerate(tokens)], [f"{j}: {w}" for j, w in enumerate(tokens)])
    return {"image": image, "texts": texts, "crosses": crosses}


def plot_contributions(ax, contrib, tokens: list[str], *, query: int = 6, head: int = 1) -> dict:
    """Figure 8: the weighted values A_tj v_j of one query of head ``head``, with their column sums (row ``query`` of
    the head's output O^[head]) below a gap; rows, columns and the colour bar named with the symbols of the text."""
    C = np.asarray(contrib, float)
    sums = C.sum(axis=0)
    bound = max(float(np.abs(C).max()), float(np.abs(sums).max()))
    T = C.shape[0]
    grid = np.full((T + 2, C.shape[1]), np.nan)
    grid[:T] = C
    grid[T + 1] = sums
    image = ax.imshow(grid, cmap="RdBu_r", vmin=-bound, vmax=bound, aspect="auto")  # cells wider than tall: a number fits
    below = np.full_like(grid, np.nan)
    below[T + 1] = sums  # the sums' row alone, in bold
    texts = (annotate_cells(ax, C, image, DECIMALS["contributions"])
             + annotate_cells(ax, below, image, DECIMALS["contributions"], fontweight="bold"))
    h = f"^{{[{head}]}}"
    ax.set_title(f"head {head}, query {query} ({tokens[query]}):\nrows of "
                 f"$\\mathbf{{V}}{h}$ weighted by $A{h}_{{{query}j}}$ and their sum", fontsize=9)
    _ticks(ax, None, [str(c) for c in range(C.shape[1])])
    # the sum's row below a gap: the gap gets no tick
    ax.set_yticks(list(range(T)) + [T + 1], [f"{j}: {w}" for j, w in enumerate(tokens)]
                  + [f"sum: row {query} of $\\mathbf{{O}}{h}$"])
    ax.set_ylabel("source token $j$")
    ax.set_xlabel(f"column $c$ of $\\mathbf{{V}}{h}$")
    return {"image": image, "texts": texts, "contributions": C, "sums": sums}


def write(out_dir: Path, fmt: str = "png", device: str = "cpu", stems=None) -> list[Path]:
    """Write the five figures (or those named in ``stems``) into ``out_dir`` as ``fmt`` files and return their paths."""
    from matplotlib.figure import Figure

    from seqgrad.numeric import course
    from seqgrad.numeric.tokens import tokenize
    from seqgrad.atomic import save_figure

    fmt = arguments(fmt, device)
    out_dir = Path(out_dir)
    wanted = chosen(sys.modules[__name__], stems)
    if not wanted:
        return []
    tr = course.trace("attention_on_H0", device=device)
    tokens = tokenize(course.TEXT)
    np_ = {k: v.detach().cpu().numpy() for k, v in tr.items()}

    def identity_position():
        fig = Figure(figsize=(6.5, 3.2), layout="constrained")  # no wider than the notes' text: labels at their size
        axes = fig.subplots(1, 3)
        art = plot_identity_position_sum(axes, np_["E_seq"], np_["P"], np_["H0"], tokens)
        bar = fig.colorbar(art["images"][0], ax=list(axes), shrink=0.8)
        bar.set_label("value (one scale for all three)", fontsize=8)
        bar.ax.tick_params(labelsize=8)
        return fig

    def contributions():
        fig = Figure(figsize=(4.8, 3.9), layout="constrained")
        art = plot_contributions(fig.subplots(), np_["head1.contrib"][6], tokens, query=6, head=1)
        fig.colorbar(art["image"], ax=fig.axes[0], shrink=0.8, label=r"$A^{[1]}_{6j}\,V^{[1]}_{jc}$")
        return fig

    def attention(key, title, masked, label, decimals):
        fig = Figure(figsize=(5.8, 3.7), layout="constrained")
        ax = fig.subplots()
        art = plot_attention_matrix(ax, np_[key], tokens, title=title, masked=masked, decimals=decimals)
        fig.colorbar(art["image"], ax=ax, label=label)  # the quantity; the bar shows its range
        return fig

    causal = np.triu(np.ones_like(np_["head1.A_causal"], bool), 1)
    draw = {
        "fig06_identity_position": identity_position,
        "fig08_begins_contributions": contributions,
        # the matrices bold, as the text sets them (S = QK^T / sqrt(d_k), A = softmax(S): softmax of each row)
        "fig09_S": lambda: attention("head1.S", r"scores $\mathbf{S} = \mathbf{Q}\mathbf{K}^\top/\sqrt{3}$", None,
                                     r"score $S_{tj}$", DECIMALS["scores"]),
        "fig10_A": lambda: attention("head1.A", r"weights $\mathbf{A} = \mathrm{softmax}(\mathbf{S})$", None,
                                     r"weight $A_{tj}$", DECIMALS["weights"]),
        "fig11_A_causal": lambda: attention("head1.A_causal",
                                            r"causal weights $\mathrm{softmax}(\mathbf{S} + \mathbf{M})$", causal,
                                            r"weight $A_{tj}$ ($\times$: masked, exactly 0)", DECIMALS["weights"]),
    }
    return [save_figure(draw[stem](), out_dir / f"{stem}.{fmt}") for stem in wanted]
