"""The result table of the cue-recall grid beside the printed Table 34 (seed 000, line 1291).

Per model and delay: the mean and the *sample* standard deviation (``ddof = 1``, as
the text says) of the test cue-recall accuracy over the seeds, as Markdown, JSON
and a booktabs LaTeX table, and the distance of each mean to the printed one.
With a single seed the standard deviation is undefined and is left empty.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from seqgrad.latex_table import format_sigfig, tex_escape

from . import task
from .models import LABELS, MODELS

# Table 34 as printed: (mean, sample standard deviation) of held-out cue-recall accuracy
PRINTED = {
    "rnn": {8: (1.0, 0.0), 16: (0.44, 0.126), 32: (0.257, 0.0)},
    "gru": {8: (1.0, 0.0), 16: (0.814, 0.116), 32: (0.322, 0.102)},
    "transformer": {8: (1.0, 0.0), 16: (1.0, 0.0), 32: (1.0, 0.0)},
}
SOURCE = "week06 §Что устанавливает эксперимент практикума?:1291"


@dataclass(frozen=True)
class Cell:
    model: str
    delay: int
    values: tuple[float, ...]  # one test accuracy per seed, in seed order
    seeds: tuple[int, ...]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def std(self) -> float | None:
        return statistics.stdev(self.values) if len(self.values) > 1 else None

    @property
    def printed(self) -> tuple[float, float] | None:
        return PRINTED.get(self.model, {}).get(self.delay)

    def as_dict(self) -> dict:
        p = self.printed
        return {"model": self.model, "delay": self.delay, "seeds": list(self.seeds), "accuracy": list(self.values),
                "mean": self.mean, "std": self.std, "printed_mean": p[0] if p else None, "printed_std": p[1] if p else None,
                "distance_to_printed": (self.mean - p[0]) if p else None}


def table(records: list[dict], key: str = "test_accuracy") -> list[Cell]:
    """One cell per (model, delay) present in ``records``, models in the text's order, delays ascending."""
    groups: dict[tuple[str, int], list[dict]] = {}
    for r in records:
        groups.setdefault((r["model"], r["delay"]), []).append(r)
    cells = []
    for (model, delay) in sorted(groups, key=lambda k: (MODELS.index(k[0]), k[1])):
        rs = sorted(groups[(model, delay)], key=lambda r: r["seed"])
        cells.append(Cell(model, delay, tuple(float(r[key]) for r in rs), tuple(r["seed"] for r in rs)))
    return cells


def _pm(mean: float, std: float | None) -> str:
    return format_sigfig(mean) + (" ± " + format_sigfig(std) if std is not None else "")


def _grid(cells: list[Cell]):
    models = list(dict.fromkeys(c.model for c in cells))
    delays = sorted({c.delay for c in cells})
    at = {(c.model, c.delay): c for c in cells}
    return models, delays, at


def markdown(cells: list[Cell]) -> str:
    """Measured mean ± sample std beside the printed value, one row per model."""
    models, delays, at = _grid(cells)
    head = "| Model | " + " | ".join(f"Delay {d}: measured | Delay {d}: Table 34" for d in delays) + " |"
    rule = "|---|" + "---:|---:|" * len(delays)
    rows = []
    for m in models:
        parts = []
        for d in delays:
            c = at.get((m, d))
            p = c.printed if c else None
            parts.append(_pm(c.mean, c.std) if c else "")
            parts.append(_pm(*p) if p else "not printed")
        rows.append(f"| {LABELS[m]} | " + " | ".join(parts) + " |")
    seeds = sorted({s for c in cells for s in c.seeds})
    note = (f"\nHeld-out cue-recall accuracy, mean ± sample standard deviation over the seeds "
            f"{', '.join(map(str, seeds))} (3 significant figures); chance is {format_sigfig(task.CHANCE_ACCURACY)}.\n")
    return "\n".join([head, rule, *rows]) + "\n" + note


def per_seed_markdown(records: list[dict]) -> str:
    """Every run: test accuracy and cross-entropy at the recall position, selected epoch."""
    lines = ["| Model | Delay | Seed | Test accuracy | Test cross-entropy (nats) | Selected epoch | Validation cross-entropy |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in sorted(records, key=lambda r: (MODELS.index(r["model"]), r["delay"], r["seed"])):
        lines.append(f"| {LABELS[r['model']]} | {r['delay']} | {r['seed']} | {format_sigfig(r['test_accuracy'])} | "
                     f"{format_sigfig(r['test_cross_entropy'])} | {r['best_epoch']} | {format_sigfig(r['validation_cross_entropy'])} |")
    return "\n".join(lines) + "\n"


def latex(cells: list[Cell]) -> str:
    """A booktabs table: for each delay, the measured mean ± std and the printed value."""
    models, delays, at = _grid(cells)

    def pm(mean, std):
        return "$" + format_sigfig(mean) + (r" \pm " + format_sigfig(std) if std is not None else "") + "$"

    lines = [r"\begin{table}[htbp]", r"\centering",
             r"\caption{Held-out cue-recall accuracy (mean $\pm$ sample standard deviation over the seeds), "
             r"measured beside the printed Table 34}", r"\label{tab:cue-recall}",
             r"\begin{tabular}{l" + "rr" * len(delays) + "}", r"\toprule",
             " & " + " & ".join(rf"\multicolumn{{2}}{{c}}{{Delay {d}}}" for d in delays) + r" \\",
             "".join(rf"\cmidrule(lr){{{2 + 2 * i}-{3 + 2 * i}}}" for i in range(len(delays))),
             "Model & " + " & ".join("measured & printed" for _ in delays) + r" \\", r"\midrule"]
    for m in models:
        cells_ = []
        for d in delays:
            c = at.get((m, d))
            cells_.append(pm(c.mean, c.std) if c else "")
            cells_.append(pm(*c.printed) if c and c.printed else "---")
        lines.append(tex_escape(LABELS[m]) + " & " + " & ".join(cells_) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"

