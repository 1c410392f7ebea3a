"""The one registry of checks that ``seqgrad check`` runs.

A check is a function ``run(ctx) -> Outcome`` with a unique name, the place in
the course text it verifies (``source``) and a group.  Modules in
:mod:`crosscheck.checks` register their checks on import with :func:`check`.
"""

from __future__ import annotations

import fnmatch
import functools
import gc
import importlib
import pkgutil
import sys
import time
import traceback
import zlib
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Sequence

import numpy as np

from seqgrad.errors import SeqgradValueError
from seqgrad.progress import progress

from .parallel import HeadStart
from .tolerance import Outcome, compare


@dataclass(frozen=True)
class Context:
    """What a check runs with: the device, the dtype and a deterministic seed; for a check declared
    with ``needs_torch=True``, also ``dev`` and ``dt``, the run's ``torch.device`` and ``torch.dtype``
    (the registry supplies them, and skips the check when the run asks for CUDA and none is present)."""

    device: str = "cpu"
    dtype: str = "float64"
    seed: int = 0
    name: str = ""
    dev: object = None
    dt: object = None

    def rng(self) -> np.random.Generator:
        """A numpy generator seeded from the run seed and the check's name."""
        return np.random.default_rng([self.seed, zlib.crc32(self.name.encode())])

    def compare(self, computed, reference, detail: str = "") -> Outcome:
        """:func:`crosscheck.tolerance.compare` under the policy for this run's dtype and device."""
        return compare(computed, reference, dtype=self.dtype, device=self.device, detail=detail)

    def torch_device(self):
        """``(torch.device, torch.dtype)`` of this run, or None when it asks for CUDA and none
        is present (the check then returns :meth:`Outcome.skip`)."""
        import torch

        from seqgrad.numeric.device import resolve_device, resolve_dtype

        if self.device.startswith("cuda") and not torch.cuda.is_available():
            return None
        return resolve_device(self.device), resolve_dtype(self.dtype)

    def torch_generator(self):
        import torch

        return torch.Generator().manual_seed(self.seed * 1_000_003 + zlib.crc32(self.name.encode()))


@dataclass(frozen=True)
class Check:
    name: str
    source: str
    group: str
    run: Callable[[Context], Outcome] = field(compare=False)
    description: str = ""
    needs_torch: bool = False  # the check computes with torch on the run's device and dtype
    shard: str = ""  # checks of a group that share cached derivations carry one label; each (group, shard) is one task
    finding: bool | None = None  # a failure is a finding of an experiment, not a toolkit fault (None: by FINDING_GROUPS)


_REGISTRY: dict[str, Check] = {}


def register(item: Check) -> Check:
    if item.name in _REGISTRY and _REGISTRY[item.name].run is not item.run:
        raise SeqgradValueError("name", item.name, "a check name not registered yet")
    _REGISTRY[item.name] = item
    return item


def check(name: str, *, source: str, group: str, description: str = "", needs_torch: bool = False,
          finding: bool | None = None) -> Callable:
    """Decorator: register ``fn(ctx) -> Outcome`` as a check.  ``needs_torch=True`` declares that it
    computes with torch: it then finds the run's device and dtype in ``ctx.dev`` and ``ctx.dt``.
    ``finding``: whether a failure of the check is a finding of an experiment rather than a fault of the
    toolkit (see :func:`kind_of`); by default, true in the groups :data:`FINDING_GROUPS`.  A check of such a
    group that compares a derivation with autograd declares ``finding=False``: its failure is the toolkit's."""

    def decorate(fn: Callable[[Context], Outcome]) -> Callable[[Context], Outcome]:
        register(Check(name, source, group, fn, description or (fn.__doc__ or "").strip().split("\n")[0],
                       needs_torch, finding=finding))
        return fn

    return decorate


def load_builtin_checks() -> None:
    """Import every module of :mod:`crosscheck.checks` so its checks register.

    The first call imports torch, SymPy and the catalogues (about 2 s).  The cyclic garbage collector is
    paused meanwhile: its passes over the growing heap find only objects that stay alive (about 0.2 s of that
    time); its next pass collects whatever the imports left.  A command about to fork its workers then
    freezes the heap (:func:`crosscheck.parallel.freeze_heap`)."""
    from . import checks

    _import_paused([info.name for info in sorted(pkgutil.iter_modules(checks.__path__), key=lambda m: m.name)])


def _import_paused(names: Sequence[str]) -> list[str]:
    """Import the modules ``names`` of :mod:`crosscheck.checks` with the garbage collector paused; their full names."""
    from . import checks

    full = [f"{checks.__name__}.{name}" for name in names]
    if all(name in sys.modules for name in full):
        return full
    enabled = gc.isenabled()
    gc.disable()
    try:
        for name in full:
            importlib.import_module(name)
    finally:
        if enabled:
            gc.enable()
    return full


#: modules of :mod:`crosscheck.checks` whose checks compute with SymPy, mpmath and numpy only, never torch or
#: matplotlib (tests/test_parallel.py holds them to it): ``seqgrad check`` imports them first and starts their
#: groups in a worker forked before it imports the rest (:class:`ChecksAhead`), so that the second core works
#: while the first imports torch, the other checks and matplotlib (about 1.5 s of CPU)
SYMPY_ONLY_MODULES = ("identities",)


class ChecksAhead(HeadStart):
    """The groups of the checks of :data:`SYMPY_ONLY_MODULES` (those matching one of ``patterns``, as
    :func:`all_checks` matches, where given), started now in a worker of their own
    (:class:`crosscheck.parallel.HeadStart`); :func:`run_with_tasks` takes it over with ``ahead=``."""

    def __init__(self, device: str = "cpu", dtype: str = "float64", seed: int = 0, patterns: Sequence[str] | None = None):
        modules = _import_paused(SYMPY_ONLY_MODULES)
        mine = [c for c in _REGISTRY.values() if c.run.__module__ in modules]
        chosen = {c.name for p in (patterns or [None]) for c in _matching(mine, p)}
        self.items = [c for c in _matching(mine, None) if c.name in chosen]
        self.device, self.dtype, self.seed = device, dtype, seed
        super().__init__(group_tasks(self.items, device, dtype, seed))


def all_checks(pattern: str | None = None) -> list[Check]:
    """Registered checks in a stable order, optionally filtered by a glob or substring
    matched against the name and the group."""
    load_builtin_checks()
    return _matching(_REGISTRY.values(), pattern)


def _matching(checks: Iterable[Check], pattern: str | None) -> list[Check]:
    items = sorted(checks, key=lambda c: (c.group, c.name))
    if pattern:
        glob = pattern if any(ch in pattern for ch in "*?[") else f"*{pattern}*"
        items = [c for c in items if fnmatch.fnmatchcase(c.name, glob) or fnmatch.fnmatchcase(c.group, glob)]
    return items


#: Whose error a check that did not pass shows.  ``toolkit``: seqgrad's (a derivation that disagrees with autograd,
#: a check that crashed); ``seqgrad check`` fails on it.  ``erratum``: the course text's (a printed claim the
#: computation contradicts).  ``finding``: an experiment's (a trend the text states that the recorded run does not
#: show).  Errata and findings are reported in sections of their own and fail the run only under ``--strict``.
KINDS = ("toolkit", "erratum", "finding")
#: textbook verdicts (derive.claims.STATUSES) that make a check an erratum: the text is wrong
ERRATUM_VERDICTS = ("contradicted",)
#: groups whose failing checks are findings (a check there may declare ``finding=False``)
FINDING_GROUPS = ("experiment",)


def kind_of(status: str, textbook: str | None, group: str, finding: bool | None = None) -> str:
    """The one classification of a result (:data:`KINDS`).  A crash is always the toolkit's; a check whose
    textbook verdict is in :data:`ERRATUM_VERDICTS` is an erratum, whether the catalogue recorded it (the check
    passes: it confirms the erratum) or not; a failing check that is a finding (``finding``, by default the
    groups :data:`FINDING_GROUPS`) is a finding; everything else is the toolkit's."""
    if status == "error":
        return "toolkit"
    if textbook in ERRATUM_VERDICTS:
        return "erratum"
    if status == "fail" and (group in FINDING_GROUPS if finding is None else finding):
        return "finding"
    return "toolkit"


@dataclass
class Result:
    name: str
    source: str
    group: str
    status: str  # "pass", "fail", "skip" or "error"
    passed: bool
    max_abs_error: float
    max_rel_error: float
    device: str
    dtype: str
    detail: str
    seconds: float  # a timing: the only field that differs between identical runs
    textbook: str | None = None  # for the texts' claims: the verdict (derive.claims.STATUSES)
    reason: str | None = None  # why the text got that verdict
    attribution: str | None = None  # printed in the text (with its citation) or derived here
    units: float | None = None  # the largest discrepancy in units of the last printed digit
    kind: str = ""  # KINDS: whose error a check that did not pass shows; "" on construction: by kind_of
    tol_ratio: float | None = None  # the largest error over the tolerance it was held to (Outcome.tol_ratio)
    single: bool = False  # compared in float32 (a module that runs in single precision), whatever the run's dtype

    def __post_init__(self) -> None:
        if not self.kind:
            self.kind = kind_of(self.status, self.textbook, self.group)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def run_one(item: Check, device: str, dtype: str = "float64", seed: int = 0) -> Result:
    ctx = Context(device=device, dtype=dtype, seed=seed, name=item.name)
    start = time.perf_counter()
    try:
        outcome = _supplied(item, ctx)
        if not isinstance(outcome, Outcome):
            raise TypeError(f"check {item.name} returned {type(outcome).__name__}, not Outcome")
        status = "skip" if outcome.skipped else ("pass" if outcome.passed else "fail")
        result = Result(item.name, item.source, item.group, status, status == "pass", float(outcome.max_abs_error),
                        float(outcome.max_rel_error), device, dtype, outcome.detail, 0.0, outcome.textbook,
                        outcome.reason, outcome.attribution, outcome.units,
                        kind_of(status, outcome.textbook, item.group, item.finding), outcome.tol_ratio,
                        outcome.single)
    except Exception as exc:  # a crashing check is a failed check, reported, not a crashed run
        last = traceback.extract_tb(exc.__traceback__)[-1]
        where = f"{last.filename.rsplit('/', 1)[-1]}:{last.lineno}"
        result = Result(item.name, item.source, item.group, "error", False, float("inf"), float("inf"), device, dtype,
                        f"{type(exc).__name__}: {exc} ({where})", 0.0, tol_ratio=float("inf"))
    result.seconds = round(time.perf_counter() - start, 4)
    return result


def _supplied(item: Check, ctx: Context) -> Outcome:
    """Run ``item`` with what it declared it needs: the torch device and dtype of the run, or a skip
    when the run asks for CUDA and none is present."""
    if item.needs_torch:
        setup = ctx.torch_device()
        if setup is None:
            return Outcome.skip("no CUDA GPU")
        ctx = replace(ctx, dev=setup[0], dt=setup[1])
    return item.run(ctx)


def lost_result(item: Check, device: str, dtype: str, reason: str) -> Result:
    """The result of a check that never reported (its worker process died, or its group crashed outside it)."""
    return Result(item.name, item.source, item.group, "error", False, float("inf"), float("inf"), device, dtype,
                  f"not run to the end: {reason}", 0.0, tol_ratio=float("inf"))


def groups_of(items: Iterable[Check]) -> list[list[Check]]:
    """``items`` split by group, and within a group by shard (:attr:`Check.shard`: a large group whose parts
    share no derivations runs as several tasks, in parallel), each part in the given order, parts in order
    of first appearance."""
    out: dict[tuple[str, str], list[Check]] = {}
    for item in items:
        out.setdefault((item.group, item.shard), []).append(item)
    return list(out.values())


def run_group(items: Sequence[Check], device: str = "cpu", dtype: str = "float64", seed: int = 0) -> list[Result]:
    """Run one group's (or one shard's) checks, in order, in this process (they may share derivations through caches)."""
    return [run_one(item, device, dtype, seed) for item in items]


def default_jobs(device: str = "cpu") -> int:
    """Worker processes for a run: one per usable CPU core; one on CUDA (a forked process cannot use a
    CUDA context its parent opened, and the checks would queue on the one GPU anyway)."""
    from .parallel import usable_cores

    return 1 if device.startswith("cuda") else usable_cores()


#: estimated CPU seconds of each task of ``seqgrad check``, by (group, shard), as measured in fresh workers
#: (docs/benchmarks.md, "The main job: where the time goes"): the pool hands the longest out first, so that the
#: last task to finish is a short one.  Only the order depends on them; a group not listed counts
#: :data:`GROUP_WEIGHT_S` per check.
TASK_SECONDS = {("identities", "residual"): 1.3, ("recurrent", ""): 1.1, ("gated", ""): 1.05, ("decoder", ""): 0.9,
                ("claims", ""): 0.85, ("depth", ""): 0.7, ("identities", "attention"): 0.65, ("transformer", ""): 0.55,
                ("conv", ""): 0.45, ("identities", "layernorm"): 0.27, ("identities", "conv"): 0.2,
                ("identities", "positional"): 0.2, ("encoder", ""): 0.1, ("experiment", ""): 0.09}
GROUP_WEIGHT_S = 0.05  # a group's estimated seconds per check, for a group not in TASK_SECONDS


def group_tasks(items: Sequence[Check], device: str = "cpu", dtype: str = "float64", seed: int = 0) -> list:
    """One :class:`crosscheck.parallel.Task` per group of ``items`` (per shard, for a group split into shards):
    it runs the group whole, in order, in one process (checks of a group share derivations through caches)
    and returns its results."""
    from .parallel import Task

    return [Task(functools.partial(run_group, g, device, dtype, seed),
                 functools.partial(_lost_group, g, device, dtype), task_seconds(g)) for g in groups_of(items)]


def task_seconds(items: Sequence[Check]) -> float:
    """The estimated seconds of one group's (or shard's) task (:data:`TASK_SECONDS`)."""
    return TASK_SECONDS.get((items[0].group, items[0].shard), GROUP_WEIGHT_S * len(items))


def _lost_group(items: Sequence[Check], device: str, dtype: str, reason: str) -> list[Result]:
    return [lost_result(item, device, dtype, reason) for item in items]


def run_checks(items: Iterable[Check], device: str = "cpu", dtype: str = "float64", seed: int = 0,
               show_progress: bool | None = None, jobs: int = 1) -> list[Result]:
    """Run ``items`` and return their results in the order given.

    With ``jobs > 1`` the groups run in parallel, each group whole in one worker process (see
    :mod:`crosscheck.parallel`); every check's result is the same as in a serial run, since a check
    depends only on its context (device, dtype, seed and name), never on what ran before it.
    """
    items = list(items)
    return run_with_tasks(items, [], device, dtype, seed, show_progress, jobs)[0]


def run_with_tasks(items: Sequence[Check], extra: Sequence, device: str = "cpu", dtype: str = "float64", seed: int = 0,
                   show_progress: bool | None = None, jobs: int = 1, joins: Sequence[str | None] = (),
                   recycle_mib: float | None = None, ahead: ChecksAhead | None = None) -> tuple[list[Result], list]:
    """The checks ``items`` and the ``extra`` tasks (e.g. figure sets) in one pool of ``jobs`` processes:
    the checks' results in the order of ``items``, and each extra task's result in the order of ``extra``.

    ``joins[j]``, where given, names the group of checks that computes what ``extra[j]`` needs (a figure set
    draws the data its group checks): the extra task then runs in that group's task, after its checks, in the
    same process, so the cached data are computed once instead of once per worker.  ``recycle_mib``: see
    :func:`crosscheck.parallel.run_tasks`.  ``ahead``: the checks it started early (a subset of ``items``, run
    with the same device, dtype and seed), taken over as one of the ``jobs``."""
    from .parallel import Task, run_tasks

    early = {c.name for c in ahead.items} if ahead is not None else set()
    if early - {c.name for c in items} or (ahead is not None and (ahead.device, ahead.dtype, ahead.seed) != (device, dtype, seed)):
        raise SeqgradValueError("ahead", "checks started early", "a subset of items, run with the same device, dtype and seed")
    own = [c for c in items if c.name not in early]
    groups = groups_of(own)
    tasks = group_tasks(own, device, dtype, seed)
    first_of = {}
    for k, part in enumerate(groups):
        first_of.setdefault(part[0].group, k)
    joined: dict[int, list[int]] = {}  # group task -> the extra tasks it runs after its checks
    alone: list[int] = []
    for j in range(len(extra)):
        k = first_of.get(joins[j]) if j < len(joins) else None
        (joined.setdefault(k, []) if k is not None else alone).append(j)
    for k, js in joined.items():
        part = [extra[j] for j in js]
        tasks[k] = Task(functools.partial(_run_joined, tasks[k], part), functools.partial(_lost_joined, tasks[k], part),
                        tasks[k].weight + sum(t.weight for t in part))
    tasks += [extra[j] for j in alone]
    label = "checks" if not extra else "checks and figures"
    by_name: dict[str, Result] = {}
    others: dict[int, object] = {}
    total = len(tasks) + (len(ahead.tasks) if ahead is not None else 0)
    for i, value in progress(run_tasks(tasks, jobs, recycle_mib, head=ahead), total, label, enabled=show_progress):
        if i >= len(tasks):  # a group the worker started ahead
            by_name.update((r.name, r) for r in value)
            continue
        if i >= len(groups):
            others[alone[i - len(groups)]] = value
            continue
        if i in joined:
            value, values = value
            others.update((j, v if ok else extra[j].lost(v)) for j, (ok, v) in zip(joined[i], values))
        by_name.update((r.name, r) for r in value)
    return [by_name[item.name] for item in items], [others[j] for j in range(len(extra))]


def _run_joined(checks, extra: Sequence) -> tuple[list[Result], list[tuple[bool, object]]]:
    """A group's checks, then the extra tasks that join it, one after another in this process: the checks'
    results and, for each extra task, ``(True, its result)`` or ``(False, why it raised)``; the caller turns the
    latter into the task's ``lost`` result, as the pool does for a task of its own."""
    from .parallel import describe

    results = checks.run()
    out = []
    for task in extra:
        try:
            out.append((True, task.run()))
        except Exception as exc:
            out.append((False, describe(exc)))
    return results, out


def _lost_joined(checks, extra: Sequence, reason: str) -> tuple[list[Result], list[tuple[bool, object]]]:
    return checks.lost(reason), [(False, reason)] * len(extra)
