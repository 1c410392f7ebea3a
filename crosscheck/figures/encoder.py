"""Figures of the course's encoder example (text, Figures 6, 8-11) and a wide positional encoding.

Each plotting function draws on a given matplotlib ``ax`` (object-oriented API
only) and returns the artists it made, so tests can read the plotted data.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

NAME = "encoder"
HELP = "the course encoder: E_seq/P/H0 (Fig. 6), begins contributions (Fig. 8), S, A, causal A (Figs. 9-11), PE for d=128"


def _annotate(ax, values: np.ndarray, fmt=None, skip=None) -> list:
    from seqgrad.latex_table import format_sigfig

    fmt = fmt or format_sigfig
    texts = []
    for (i, j), v in np.ndenumerate(values):
        if skip is not None and skip[i, j]:
            continue
        texts.append(ax.text(j, i, fmt(v), ha="center", va="center", fontsize=7))
    return texts


def _ticks(ax, rows: list[str] | None, cols: list[str] | None) -> None:
    if rows is not None:
        ax.set_yticks(range(len(rows)), rows)
    if cols is not None:
        ax.set_xticks(range(len(cols)), cols, rotation=45, ha="right")


def plot_identity_position_sum(axes, E_seq, P, H0, tokens: list[str]) -> dict:
    """Figure 6: E_seq, P and H0 = E_seq + P as heatmaps on one shared colour scale."""
    mats = [np.asarray(E_seq, float), np.asarray(P, float), np.asarray(H0, float)]
    bound = max(float(np.abs(m).max()) for m in mats)
    images, texts = [], []
    rows = [f"{t}: {w}" for t, w in enumerate(tokens)]
    for ax, m, title in zip(axes, mats, ("E_seq (token identity)", "P (position)", "H0 = E_seq + P")):
        images.append(ax.imshow(m, cmap="RdBu_r", vmin=-bound, vmax=bound))
        texts += _annotate(ax, m)
        ax.set_title(title)
        _ticks(ax, rows, [f"j={j}" for j in range(m.shape[1])])
    return {"images": images, "texts": texts}


def plot_attention_matrix(ax, M, tokens: list[str], *, title: str, masked=None, vmin=None, vmax=None, cmap="viridis") -> dict:
    """A 7x7 score or weight matrix (rows = queries, columns = sources); masked cells get a cross."""
    M = np.asarray(M, float)
    image = ax.imshow(M, cmap=cmap, vmin=vmin, vmax=vmax)
    mask = np.zeros(M.shape, bool) if masked is None else np.asarray(masked, bool)
    texts = _annotate(ax, M, skip=mask)
    ii, jj = np.nonzero(mask)
    crosses = ax.scatter(jj, ii, marker="x", color="0.3", s=40, label="masked (weight exactly 0)")
    ax.set_title(title)
    ax.set_xlabel("source j")
    ax.set_ylabel("query t")
    _ticks(ax, [f"{t}: {w}" for t, w in enumerate(tokens)], [f"{j}: {w}" for j, w in enumerate(tokens)])
    return {"image": image, "texts": texts, "crosses": crosses}


def plot_contributions(ax, contrib, tokens: list[str], *, query: int = 6) -> dict:
    """Figure 8: the weighted values A_tj v_j of one query, with their column sums (= o_t) below a gap."""
    C = np.asarray(contrib, float)
    sums = C.sum(axis=0)
    bound = max(float(np.abs(C).max()), float(np.abs(sums).max()))
    T = C.shape[0]
    grid = np.full((T + 2, C.shape[1]), np.nan)
    grid[:T] = C
    grid[T + 1] = sums
    image = ax.imshow(grid, cmap="RdBu_r", vmin=-bound, vmax=bound)
    from seqgrad.latex_table import format_sigfig

    texts = _annotate(ax, C) + [ax.text(j, T + 1, format_sigfig(v), ha="center", va="center", fontsize=7, fontweight="bold",
                                        color="white" if abs(v) > 0.6 * bound else "black") for j, v in enumerate(sums)]
    ax.set_title(f"contributions A[{query}, j] v_j and their sum o_{query}")
    _ticks(ax, [f"{j}: {w}" for j, w in enumerate(tokens)] + ["", f"sum = o_{query}"], [f"value {c}" for c in range(C.shape[1])])
    return {"image": image, "texts": texts, "contributions": C, "sums": sums}


def plot_positional_encoding(ax, P) -> dict:
    """Heatmap of a sinusoidal encoding: positions down, coordinates across."""
    P = np.asarray(P, float)
    image = ax.imshow(P, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
    ax.set_xlabel("coordinate j")
    ax.set_ylabel("position t")
    ax.set_title(f"sinusoidal positions, D = {P.shape[1]}, T = {P.shape[0]}")
    return {"image": image}


def write(out_dir: Path, fmt: str = "png", device: str = "cpu") -> list[Path]:
    from matplotlib.figure import Figure

    from numeric import course
    from numeric.positions import sinusoidal
    from numeric.tokens import tokenize
    from seqgrad.atomic import save_figure

    out_dir = Path(out_dir)
    tr = course.trace("attention_on_H0", device=device)
    tokens = tokenize(course.TEXT)
    np_ = {k: v.detach().cpu().numpy() for k, v in tr.items()}
    paths = []

    fig = Figure(figsize=(13, 4), layout="constrained")
    axes = fig.subplots(1, 3)
    art = plot_identity_position_sum(axes, np_["E_seq"], np_["P"], np_["H0"], tokens)
    fig.colorbar(art["images"][0], ax=list(axes), shrink=0.8)
    paths.append(save_figure(fig, out_dir / f"fig06_identity_position.{fmt}"))

    fig = Figure(figsize=(5, 5), layout="constrained")
    plot_contributions(fig.subplots(), np_["head1.contrib"][6], tokens, query=6)
    paths.append(save_figure(fig, out_dir / f"fig08_begins_contributions.{fmt}"))

    A, Ac = np_["head1.A"], np_["head1.A_causal"]
    vmax = float(max(A.max(), Ac.max()))
    for number, key, title, masked, scale in (
        (9, "head1.S", "scores S = Q K^T / sqrt(3)", None, (None, None)),
        (10, "head1.A", "weights A = softmax_rows(S)", None, (0.0, vmax)),
        (11, "head1.A_causal", "causal weights softmax_rows(S + M)", np.triu(np.ones_like(Ac, bool), 1), (0.0, vmax)),
    ):
        fig = Figure(figsize=(6, 5), layout="constrained")
        ax = fig.subplots()
        art = plot_attention_matrix(ax, np_[key], tokens, title=title, masked=masked, vmin=scale[0], vmax=scale[1])
        fig.colorbar(art["image"], ax=ax)
        paths.append(save_figure(fig, out_dir / f"fig{number:02d}_{key.split('.')[1]}.{fmt}"))

    fig = Figure(figsize=(8, 5), layout="constrained")
    ax = fig.subplots()
    art = plot_positional_encoding(ax, sinusoidal(100, 128).numpy())
    fig.colorbar(art["image"], ax=ax)
    paths.append(save_figure(fig, out_dir / f"positional_encoding_d128.{fmt}"))
    return paths
