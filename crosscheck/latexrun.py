"""Build the sections of ``seqgrad latex``'s document as one run: in parallel, each derivation once.

The sections are independent (each pulls its derivations, proofs, checks and
figures from the package that owns them), so with ``jobs > 1`` each is built
in its own task (:mod:`crosscheck.parallel`), the longest first, and the texts
are put back in document order.  The whole build is one :func:`seqgrad.runcache.scope`,
so a derivation that two parts of a section ask for (an activation fact proved
for the text and again by its check in the table) is computed once.

A figure set appears once per document, in the first section (in document
order) that needs it: in parallel, each section is told beforehand which sets
belong to an earlier section (those a section needs are the
``crosscheck.figures.*`` modules in its ``requires``), so the document is the
same as a serial build's.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Sequence

from seqgrad import runcache

# Estimated seconds per section (CPU, measured 2026-11-30 on the standalone document, after issue 13's cuts): the longest are handed
# out first.  Unknown sections: 1.
WEIGHTS = {"residual": 3.2, "gates": 2.1, "decoder": 1.8, "rnn": 1.4, "attention": 1.2, "conv": 0.7, "positional": 0.6,
           "claims": 0.5, "encoder": 0.2}
FIGURES = "seqgrad.crosscheck.figures."


def figure_owners(names: Sequence[str], sections) -> dict[str, str]:
    """Each figure set's section: the first of ``names`` whose ``requires`` lists its module."""
    owners: dict[str, str] = {}
    for name in names:
        for module in sections[name].requires:
            if module.startswith(FIGURES):
                owners.setdefault(module[len(FIGURES):], name)
    return owners


def build_sections(b, names: Sequence[str], sections, jobs: int = 1) -> list[str]:
    """The text of each section in ``names`` (in that order), built with ``b`` (a ``latexdoc.Build``)."""
    from seqgrad.numeric.device import one_thread

    # One torch thread in every mode, as seqgrad check runs its checks: the tensors are tiny, and the
    # errors printed in the check tables must not depend on --jobs (a reduction's rounding follows the threads).
    with runcache.scope(), one_thread():
        if jobs <= 1 or len(names) <= 1:
            return [sections[name].build(b) for name in names]
        return _parallel(b, names, sections, jobs)


def _parallel(b, names, sections, jobs: int) -> list[str]:
    from .parallel import Task, freeze_heap, run_tasks
    from .registry import load_builtin_checks

    load_builtin_checks()  # import torch, SymPy and the checks once, here, instead of once per worker
    freeze_heap()  # before forking (and before matplotlib's import, which then need not walk them)
    if b.figures_dir is not None:
        import matplotlib.figure  # noqa: F401  (the figure sets draw with it)
    owners = figure_owners(names, sections)
    tasks = []
    for name in names:
        elsewhere = {s for s, owner in owners.items() if owner != name} | set(b.sets_included)
        own = dataclasses.replace(b, figures_written=[], sets_included=elsewhere)
        tasks.append(Task(partial(_build, sections[name], own), partial(_lost, name), WEIGHTS.get(name, 1.0)))
    texts: dict[int, tuple[str, list, set, set]] = dict(run_tasks(tasks, jobs))
    for i, name in enumerate(names):  # what the serial build would have left in b
        b.figures_written += texts[i][1]
        b.sets_included |= texts[i][2]
        b.notation._used.update(texts[i][3])  # the renames the worker's formulas applied
    return [texts[i][0] for i in range(len(names))]


def _build(section, b) -> tuple[str, list, set, set]:
    text = section.build(b)
    return text, list(b.figures_written), set(b.sets_included), set(b.notation._used)


def _lost(name: str, reason: str):
    raise RuntimeError(f"the LaTeX section {name} could not be built: {reason}")
