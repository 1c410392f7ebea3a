"""The two figures of the cue-recall experiment (matplotlib's object-oriented API).

* :func:`plot_accuracy` -- test cue-recall accuracy against the delay, one line per
  model (mean over seeds, each seed a small dot), the printed Table 34 means as open
  markers, and the chance level 1/4;
* :func:`plot_gradient_paths` -- why: the path-product norm ``||J_q ... J_{c+1}||_2`` and
  the share of the recall gradient that reaches the cue for the RNN and GRU, at
  initialisation and trained, against the Transformer's one-step path (its input-gradient
  share and the attention weight from the recall query to the cue);
* :func:`plot_plateau` -- the chance plateau and its escape: validation cue-recall cross-entropy
  against the epoch, one line per seed, one panel per delay.
"""

from __future__ import annotations

import numpy as np

from . import task
from .models import LABELS, MODELS
from .results import ESCAPE_CROSS_ENTROPY, PRINTED, Cell, escape_epoch

COLORS = {"rnn": "tab:red", "gru": "tab:orange", "transformer": "tab:blue"}
PRINTED_MARKERS = {"rnn": "s", "gru": "D", "transformer": "^"}
LINES = {"rnn": dict(linestyle="-", linewidth=1.5, zorder=4), "gru": dict(linestyle="--", linewidth=2.0, zorder=3),
         "transformer": dict(linestyle="-", linewidth=4.0, alpha=0.6, zorder=2)}  # equal means stay visible: thin over wide
OFFSETS = {"rnn": 0.96, "gru": 1.0, "transformer": 1.04}  # horizontal nudge (log axis) so equal values stay visible


def plot_accuracy(ax, cells: list[Cell]) -> list:
    """Accuracy against delay; returns the measured mean lines (one per model)."""
    lines = []
    for m in MODELS:
        cs = sorted((c for c in cells if c.model == m), key=lambda c: c.delay)
        if not cs:
            continue
        d = np.array([c.delay for c in cs])
        line, = ax.plot(d, [c.mean for c in cs], marker="o", color=COLORS[m], label=f"{LABELS[m]} (measured mean)", **LINES[m])
        lines.append(line)
        for c in cs:
            ax.plot([c.delay] * len(c.values), c.values, linestyle="none", marker=".", color=COLORS[m], alpha=0.5)
        printed = [(dd * OFFSETS[m], PRINTED[m][dd][0]) for dd in d if dd in PRINTED[m]]
        if printed:
            ax.plot(*zip(*printed), linestyle="none", marker=PRINTED_MARKERS[m], markersize=10, markerfacecolor="none",
                    markeredgewidth=1.5, markeredgecolor=COLORS[m], label=f"{LABELS[m]} (Table 34, printed)")
    ax.axhline(task.CHANCE_ACCURACY, color="gray", linestyle="--", label="chance 1/4")
    delays = sorted({c.delay for c in cells})
    ax.set_xscale("log", base=2)
    ax.set_xticks(delays, [str(d) for d in delays])
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("delay d (random moves between cue and RECALL)")
    ax.set_ylabel("held-out cue-recall accuracy")
    seeds = max((len(c.values) for c in cells), default=0)
    ax.set_title(f"Cue recall against delay (mean of up to {seeds} seeds; dots: seeds)")
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.02, 0.5))
    return lines


def _by(summaries: list[dict], model: str, key: str):
    rows = [s for s in summaries if s["model"] == model and s.get(key) is not None]
    delays = sorted({s["delay"] for s in rows})
    per = {d: [s[key] for s in rows if s["delay"] == d] for d in delays}
    return np.array(delays), per


def _geometric_lines(ax, summaries: list[dict], models, key: str, state: str) -> list:
    """Per model: the geometric mean over seeds against delay (each seed a dot); ``state`` is
    ``trained`` (solid) or ``initial`` (dashed, open markers)."""
    lines = []
    for m in models:
        d, per = _by(summaries, m, key)
        if not len(d):
            continue
        style = dict(linestyle="-", marker="o") if state == "trained" else dict(linestyle="--", marker="o", markerfacecolor="none")
        label = LABELS[m] + (r" ($h^{(0)}$)" if m == "transformer" and key == "ratio" else "") + f", {state}"
        lines.append(ax.plot(d, [np.exp(np.mean(np.log(per[x]))) for x in d], color=COLORS[m], label=label, **style)[0])
        for x in d:
            ax.plot([x] * len(per[x]), per[x], linestyle="none", marker="." if state == "trained" else "x",
                    color=COLORS[m], alpha=0.5)
    return lines


def plot_gradient_paths(axes, summaries: list[dict], initial: list[dict] | None = None) -> list:
    """Three panels against the delay, for the trained models (solid) and the same models at
    initialisation (dashed): the path-product norm ``||J_q ... J_{c+1}||_2`` of the RNN and GRU, the share
    ``||dL/dh_c|| / ||dL/dh_q||`` of the recall gradient that reaches the cue (the Transformer's on its
    input representation), and the Transformer's attention weight from the recall query to the cue."""
    ax_path, ax_ratio, ax_att = axes
    lines = []
    for state, rows in (("trained", summaries), ("initial", initial or [])):
        lines += _geometric_lines(ax_path, rows, ("rnn", "gru"), "path_norm", state)
        lines += _geometric_lines(ax_ratio, rows, MODELS, "ratio", state)
        tf = [s for s in rows if s["model"] == "transformer" and s.get("attention")]
        if tf:
            d = np.array(sorted({s["delay"] for s in tf}))
            best = {x: [max(s["attention"]) for s in tf if s["delay"] == x] for x in d}
            style = dict(linestyle="-", marker="o") if state == "trained" else dict(linestyle="--", marker="o", markerfacecolor="none")
            lines.append(ax_att.plot(d, [np.mean(best[x]) for x in d], color=COLORS["transformer"],
                                     label=f"Transformer, strongest head, {state}", **style)[0])
            for x in d:
                ax_att.plot([x] * len(best[x]), best[x], linestyle="none", marker="." if state == "trained" else "x",
                            color=COLORS["transformer"], alpha=0.5)
    delays = sorted({s["delay"] for s in summaries})
    ax_att.plot(delays, [1 / (task.recall_position(x) + 1) for x in delays], linestyle=":", color="gray",
                label="uniform causal weight 1/(q+1)")
    ax_path.set_yscale("log")
    ax_path.set_title(r"path product $\|J_q \cdots J_{c+1}\|_2$, cue $\to$ recall")
    ax_path.set_ylabel("mean over test episodes (geometric mean over seeds)")
    ax_ratio.set_yscale("log")
    ax_ratio.set_title(r"$\|\partial L/\partial h_c\| \,/\, \|\partial L/\partial h_q\|$: recall gradient reaching the cue")
    ax_att.set_ylim(0, 1.05)
    ax_att.set_title(r"Transformer: attention weight $A_{q,c}$, recall $\to$ cue")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xticks(delays, [str(x) for x in delays])
        ax.set_xlabel("delay d")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    return lines


def plot_plateau(axes, records: list[dict], model: str = "transformer", highlight=()) -> list:
    """One panel per delay: the validation cue-recall cross-entropy of every seed of ``model`` against the
    epoch, chance (log 4) and the escape threshold as horizontal lines, each run's escape epoch as a dot;
    the seeds in ``highlight`` (the text's) drawn darker.  Returns the seed lines."""
    rows = [r for r in records if r["model"] == model]
    delays = sorted({r["delay"] for r in rows})
    axes = list(np.atleast_1d(axes))
    lines = []
    for ax, d in zip(axes, delays):
        runs = sorted((r for r in rows if r["delay"] == d), key=lambda r: r["seed"])
        never = 0
        for r in runs:
            ce = r["history"]["val_ce"]
            strong = r["seed"] in highlight
            line, = ax.plot(range(1, len(ce) + 1), ce, color=COLORS[model] if strong else "0.55",
                            linewidth=1.6 if strong else 0.9, alpha=1.0 if strong else 0.7, zorder=3 if strong else 2)
            lines.append(line)
            e = escape_epoch(r["history"])
            if e is None:
                never += 1
            else:
                ax.plot([e], [ce[e - 1]], linestyle="none", marker="o", markersize=4, color=line.get_color(), zorder=4)
        ax.axhline(task.CHANCE_CROSS_ENTROPY, color="black", linestyle=":", linewidth=1, label="chance, log 4")
        ax.axhline(ESCAPE_CROSS_ENTROPY, color="gray", linestyle="--", linewidth=1, label="escape threshold, 0.9 log 4")
        ax.set_title(f"{LABELS[model]}, d = {d}: {len(runs) - never} of {len(runs)} seeds leave the plateau", fontsize=10)
        ax.set_xlabel("epoch")
        ax.set_ylim(0, 1.6)
    if axes:
        axes[0].set_ylabel("validation cue-recall cross-entropy (nats)")
        handles, labels = axes[0].get_legend_handles_labels()
        if highlight and lines:
            from matplotlib.lines import Line2D
            handles += [Line2D([], [], color=COLORS[model], linewidth=1.6), Line2D([], [], color="0.55", linewidth=0.9)]
            labels += ["the text's seeds " + ", ".join(map(str, highlight)), "further seeds"]
        axes[0].legend(handles, labels, fontsize=7, loc="center right")
    return lines
