"""Build the sections of ``seqgrad latex``'s document as one run: in parallel, each derivation once.

The sections are independent (each pulls its derivations, proofs, checks and
figures from the package that owns them), so with ``jobs > 1`` each is built
in its own task (:mod:`crosscheck.parallel`), the longest first, and the texts
are put back in document order.  The whole build is one :func:`seqgrad.runcache.scope`,
so a derivation that two parts of a section ask for (an activation fact proved
for the text and again by its check in the table) is computed once.

Each section names the figures it includes (set and file stem), and no two
sections include the same figure.  In parallel, a section leaves a placeholder
for each figure and every figure set it draws from is a task of its own,
written once; the placeholders are replaced when all are done, so the document
is the same as a serial build's.  The handout (``--standalone``, one figure per section) draws each
section's figure in the section's own task, and the parent draws a tiny figure before the workers that draw
fork, so that matplotlib's fonts and parsers are loaded once.  The sections that draw nothing in their own task
(every section of the chapter, whose figures are tasks of their own; the handout's sections without a figure)
do not wait for that: they start in a worker forked before matplotlib is imported
(:class:`crosscheck.parallel.HeadStart`), so that the second core works while this process imports it.
Sections that derive the same things (:data:`TOGETHER`) are one task, so that the later finds them in the run cache.
Before any of that, while this process has SymPy but not yet torch, the exact proofs of the identities the
sections' appendices state (:data:`crosscheck.notes.AUDITED`, about 2 s of CPU) start in a worker of their own
(:class:`crosscheck.parallel.Ahead`); their results are taken into the run cache before the section workers fork,
so the second core proves while this one imports torch and the checks, and no section proves them again.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Sequence

from seqgrad import runcache

#: Estimated CPU seconds per section in a worker (benchmarks/latex_profile.py, 2026-12-01: the handout's sections,
#: each with its one figure): the longest are handed out first.  Unknown sections: 1.
WEIGHTS = {"residual": 2.5, "decoder": 1.2, "rnn": 1.1, "gates": 0.9, "paths": 0.85, "encoder": 0.7, "attention": 0.65,
           "conv": 0.6, "positional": 0.45, "claims": 0.4}
#: Sections built one after the other in one task (one worker), when all are asked for: the later reuse what the
#: first derived and proved, in the run cache.  Measured (CPU, one process, 2026-12-01): the encoder section alone
#: 0.6 s, the residual section 1.65 s, both in one process 1.8 s (the pre-norm block's program proved and built once).
TOGETHER = (("residual", "encoder"),)
#: Estimated CPU seconds per figure set in a worker (the same profile, the chapter's sets), for the same ordering.
FIGURE_WEIGHTS = {"depth": 1.2, "paths": 0.9, "encoder": 0.7, "decoder": 0.3, "positional": 0.12, "conv": 0.11}


def build_sections(b, names: Sequence[str], sections, jobs: int = 1, progress: bool | None = None) -> list:
    """What each section in ``names`` builds (in that order: its text, or a ``notes.Part``), built with ``b``
    (a ``latex_parts.Build``); ``progress``: a bar that advances as each section is done (default: on a terminal)."""
    from seqgrad.progress import progress as bar

    with runcache.scope():
        in_workers = jobs > 1 and len(names) > 1
        proofs = _proofs_ahead(b, names) if in_workers else None  # forked before torch is imported (next line)
        from seqgrad.numeric.device import one_thread

        # One torch thread in every mode, as seqgrad check runs its checks: the tensors are tiny, and the
        # errors printed in the check tables must not depend on --jobs (a reduction's rounding follows the threads).
        with one_thread():
            if not in_workers:
                return [sections[name].build(b) for name in bar(names, len(names), "notes sections", enabled=progress)]
            return _parallel(b, names, sections, jobs, progress, proofs)


def _proofs_ahead(b, names: Sequence[str]):
    """The exact proofs of the identities the sections ``names`` state in their appendices
    (:data:`crosscheck.notes.AUDITED`), started now in a worker of their own (:class:`crosscheck.parallel.Ahead`):
    this process has SymPy but not yet torch, whose import (about 1.5 s on one core) the proofs fill on the
    other.  None where there is nothing to prove or this process cannot fork."""
    from .notes import AUDITED
    from .parallel import Ahead, Task, can_fork

    modules = [m for name in names for m in AUDITED.get(name, ())]
    if not modules or not can_fork():
        return None
    return Ahead(Task(partial(_prove, modules, b.proof_seconds), lambda reason: {}))


def _prove(modules: Sequence[str], seconds: float | None) -> dict:
    """Prove the catalogue's identities of ``modules``, each within ``seconds`` as the appendix would, and return
    what the run cache now holds of them (:func:`seqgrad.runcache.computed`; a proof out of time is not there)."""
    from .latex_parts import catalogue_identities, prove_within

    for entry in catalogue_identities(modules):
        prove_within(entry, seconds)
    return runcache.computed("Identity.prove")


FIGURES = "seqgrad.crosscheck.figures."


def figure_sets_needed(names: Sequence[str], sections) -> list[str]:
    """The figure sets the sections ``names`` draw from: the ``crosscheck.figures.*`` modules in their ``requires``."""
    needed: dict[str, None] = {}
    for name in names:
        for module in sections[name].requires:
            if module.startswith(FIGURES):
                needed.setdefault(module[len(FIGURES):], None)
    return list(needed)


def _parallel(b, names, sections, jobs: int, progress: bool | None = None, proofs=None):
    from seqgrad.progress import progress as bar

    from .latex_parts import place_figures
    from .parallel import HeadStart, Task, freeze_heap, run_tasks
    from .registry import load_builtin_checks

    load_builtin_checks()  # import torch, SymPy and the checks once, here, instead of once per worker
    if proofs is not None:  # the proofs started ahead (_proofs_ahead): every worker forked from now on finds them
        runcache.adopt(proofs.result())
    freeze_heap()  # before forking (and before matplotlib's import, which then need not walk them)
    # Every figure set the sections draw from is a task of its own; the handout's sections (one figure each) draw
    # their figure in their own task instead, where the data their checks computed are in the run cache.
    inline = b.handout is not None
    sets = figure_sets_needed(names, sections) if b.figures_dir is not None and not inline else []
    drawing = b.figures_dir is not None and bool(figure_sets_needed(names, sections))
    units = built_together(names)
    tasks = []
    for unit in units:  # each section leaves a placeholder for its figures; each figure set is a task of its own
        builds = [(sections[names[i]], dataclasses.replace(b, figures_written=[], sets_included=set(b.sets_included),
                                                           _sets={}, deferred=not inline)) for i in unit]
        tasks.append(Task(partial(_build_all, builds), partial(_lost, ", ".join(names[i] for i in unit)),
                          sum(WEIGHTS.get(names[i], 1.0) for i in unit),
                          raises=(OSError,)))  # a figure that cannot be written: one line with its path
    for set_name in sets:
        tasks.append(Task(partial(_draw, set_name, b.figures_dir, b.device), partial(_lost, f"figures {set_name}"),
                          FIGURE_WEIGHTS.get(set_name, 1.0), raises=(OSError,)))
    # The sections that draw nothing start now, in a worker forked before matplotlib is imported (about 0.6 s of
    # this process's time), so that the second core works meanwhile; the workers forked after it take the rest.
    ahead = ([k for k, unit in enumerate(units) if not (inline and any(draws(b, names[i]) for i in unit))]
             if drawing and jobs > 1 else [])
    with HeadStart([tasks[i] for i in ahead]) as head:
        if drawing:
            _warm_matplotlib()  # the figures draw with it
        rest = [i for i in range(len(tasks)) if i not in set(ahead)]
        results = run_tasks([tasks[i] for i in rest], jobs, head=head)
        index = rest + ahead  # run_tasks' index -> the task's place in tasks
        done: dict[int, tuple] = {index[i]: value for i, value in
                                  bar(results, len(tasks), "notes sections and figures", enabled=progress)}
    built = {i: one for k, unit in enumerate(units) for i, one in zip(unit, done[k])}
    written = {set_name: done[len(units) + k] for k, set_name in enumerate(sets)}
    for k, set_name in enumerate(sets):
        b.figures_written += list(written[set_name].values())
    for i, name in enumerate(names):  # what the serial build would have left in b
        b.figures_written += built[i][1]
        b.sets_included |= built[i][2]
        b.notation._used.update(built[i][3])  # the renames the worker's formulas applied
    place = partial(place_figures, written=written, b=b)
    return [_with_figures(built[i][0], place) for i in range(len(names))]


def built_together(names: Sequence[str]) -> list[list[int]]:
    """The sections ``names`` as the tasks that build them: lists of indices into ``names``, one section each except
    those of :data:`TOGETHER` that are all asked for, which are one task, in the order of ``names``."""
    units, taken = [], set()
    for i, name in enumerate(names):
        if i in taken:
            continue
        group = next((g for g in TOGETHER if name in g and all(n in names for n in g)), (name,))
        unit = sorted(names.index(n) for n in group)
        taken.update(unit)
        units.append(unit)
    return units


def draws(b, name: str) -> bool:
    """Whether the section ``name`` of a handout build ``b`` draws a figure in its own task (it includes one)."""
    from .latex_parts import handout_figures

    return bool(handout_figures(b.handout, [name]))


def _with_figures(built, place):
    """A section's text (or ``notes.Part``) with its figure placeholders replaced."""
    if isinstance(built, str):
        return place(built)
    return dataclasses.replace(built, body=place(built.body))


def _draw(set_name: str, figures_dir, device: str) -> dict:
    from pathlib import Path

    from .figures import figure_sets

    return {Path(p).stem: Path(p) for p in figure_sets()[set_name].write(Path(figures_dir) / set_name, "pdf", device)}


def _build(section, b) -> tuple:
    text = section.build(b)
    return text, list(b.figures_written), set(b.sets_included), set(b.notation._used)


def _build_all(builds) -> list[tuple]:
    """:func:`_build` of each ``(section, build)``, one after the other in this process (their run cache shared)."""
    return [_build(section, b) for section, b in builds]


def _lost(name: str, reason: str):
    raise RuntimeError(f"the LaTeX section {name} could not be built: {reason}")


def _warm_matplotlib() -> None:
    """Draw a tiny figure to memory before the workers that draw fork: matplotlib's fonts, its mathtext parser and
    its layout engine are then loaded once, in the parent, and shared by every such worker instead of loaded again
    by each; the math-text parses are shared by every renderer of a process (:mod:`seqgrad.mathtext_cache`)."""
    import io

    from matplotlib.figure import Figure

    from seqgrad import mathtext_cache

    mathtext_cache.share()
    fig = Figure(figsize=(1, 1), layout="constrained")
    ax = fig.add_subplot()
    ax.semilogy([1, 2], [1e-3, 1e3], label=r"$\rho^n$")
    ax.set_xlabel("x")
    ax.legend()
    fig.savefig(io.BytesIO(), format="pdf")
