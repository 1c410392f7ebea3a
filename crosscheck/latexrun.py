"""Build the sections of ``seqgrad latex``'s document as one run: in parallel, each derivation once.

The sections are independent (each pulls its derivations, proofs, checks and
figures from the package that owns them), so with ``jobs > 1`` each is built
in its own task (:mod:`crosscheck.parallel`), the longest first, and the texts
are put back in document order.  The whole build is one :func:`seqgrad.runcache.scope`,
so a derivation that two parts of a section ask for (an activation fact proved
for the text and again by its check in the table) is computed once.

Each section names the figures it includes (set and file stem), and no two
sections include the same figure, so the document is the same as a serial
build's; a set two sections draw from is written by each (the same files).
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Sequence

from seqgrad import runcache

# Estimated seconds per section (CPU, measured 2026-11-30 on the standalone document, after issue 13's cuts): the longest are handed
# out first.  Unknown sections: 1.
WEIGHTS = {"residual": 3.2, "gates": 2.1, "decoder": 1.8, "rnn": 1.4, "paths": 1.4, "attention": 1.2, "conv": 0.7,
           "positional": 0.6, "encoder": 0.5}
FIGURES = "seqgrad.crosscheck.figures."


def figure_owners(names: Sequence[str], sections) -> dict[str, str]:
    """Each figure set's section: the first of ``names`` whose ``requires`` lists its module."""
    owners: dict[str, str] = {}
    for name in names:
        for module in sections[name].requires:
            if module.startswith(FIGURES):
                owners.setdefault(module[len(FIGURES):], name)
    return owners


def build_sections(b, names: Sequence[str], sections, jobs: int = 1, progress: bool | None = None) -> list:
    """What each section in ``names`` builds (in that order: its text, or a ``notes.Part``), built with ``b``
    (a ``latexdoc.Build``); ``progress``: a bar that advances as each section is done (default: on a terminal)."""
    from seqgrad.numeric.device import one_thread
    from seqgrad.progress import progress as bar

    # One torch thread in every mode, as seqgrad check runs its checks: the tensors are tiny, and the
    # errors printed in the check tables must not depend on --jobs (a reduction's rounding follows the threads).
    with runcache.scope(), one_thread():
        if jobs <= 1 or len(names) <= 1:
            return [sections[name].build(b) for name in bar(names, len(names), "notes sections", enabled=progress)]
        return _parallel(b, names, sections, jobs, progress)


def _parallel(b, names, sections, jobs: int, progress: bool | None = None):
    from seqgrad.progress import progress as bar

    from .parallel import Task, freeze_heap, run_tasks
    from .registry import load_builtin_checks

    load_builtin_checks()  # import torch, SymPy and the checks once, here, instead of once per worker
    freeze_heap()  # before forking (and before matplotlib's import, which then need not walk them)
    if b.figures_dir is not None:
        import matplotlib.figure  # noqa: F401  (the figure sets draw with it)
    tasks = []
    for name in names:
        own = dataclasses.replace(b, figures_written=[], sets_included=set(b.sets_included), _sets={})
        tasks.append(Task(partial(_build, sections[name], own), partial(_lost, name), WEIGHTS.get(name, 1.0)))
    texts: dict[int, tuple] = dict(bar(run_tasks(tasks, jobs), len(tasks), "notes sections", enabled=progress))
    for i, name in enumerate(names):  # what the serial build would have left in b
        b.figures_written += [p for p in texts[i][1] if p not in b.figures_written]
        b.sets_included |= texts[i][2]
        b.notation._used.update(texts[i][3])  # the renames the worker's formulas applied
    return [texts[i][0] for i in range(len(names))]


def _build(section, b) -> tuple:
    text = section.build(b)
    return text, list(b.figures_written), set(b.sets_included), set(b.notation._used)


def _lost(name: str, reason: str):
    raise RuntimeError(f"the LaTeX section {name} could not be built: {reason}")
