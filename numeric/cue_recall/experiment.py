"""The grid of the week-06 practicum: models x delays x seeds, resumable, with atomic outputs.

Every finished run writes ``runs/<model>-d<delay>-s<seed>.json`` (the :class:`~.train.Run`
and the configuration it was trained with) and ``.pt`` (the selected checkpoint),
each atomically.  A rerun with the same configuration reads the finished runs and
trains only the missing ones; a run file of another configuration (say a ``--quick``
run in the same directory) is trained again and replaced.  Ctrl-C therefore loses at
most the runs in progress, and never leaves a half-written file.

``--record`` also writes results.json into the package (:data:`RECORD`), the copy that
``seqgrad check`` reads from an installed seqgrad; docs/experiments/cue-recall/ holds the same
run's tables and figures.

Runs are independent and single-threaded (:func:`numeric.device.one_thread`), so
``jobs > 1`` worker processes give the same numbers as one process.
"""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch

from seqgrad import signals, validate
from seqgrad.atomic import write_bytes, write_text
from seqgrad.errors import SeqgradValueError

from ..device import one_thread, resolve_device
from . import RECORD, models, task, train  # noqa: F401  (RECORD: the package's recorded run)

DELAYS = (8, 16, 32)
FURTHER_SEEDS = tuple(range(7000, 7010))  # ten initialisation seeds beyond the text's three, fixed before any run
DISTRIBUTION_SEEDS = train.SEEDS + FURTHER_SEEDS  # the default grid: the text's seeds, then the distribution's

# Size guards of the command's own arguments (docs/limits.md)
MAX_DELAY = 1024        # an input of d + 4 tokens; 4,096 training episodes of d = 1,024 hold 4.2 M token ids
MAX_SEED = 2**32 - 1    # the seeds numpy's SeedSequence and torch take without folding
MAX_SEEDS = 1000        # runs per model and delay (a range such as 0-999 included)
MAX_JOBS = 64           # worker processes


@dataclass(frozen=True)
class Config:
    """Everything a run's numbers depend on (besides model, delay and seed)."""

    epochs: int = train.EPOCHS
    batch_size: int = train.BATCH_SIZE
    loss: str = train.LOSS
    learning_rate: float = train.LEARNING_RATE
    clip_norm: float = train.CLIP_NORM
    order_seed: int = train.ORDER_SEED
    sizes: dict = field(default_factory=lambda: dict(task.SIZES))
    generation_seeds: dict = field(default_factory=lambda: dict(task.GENERATION_SEEDS))
    quick: bool = False
    initialisation: str = models.INITIALISATION  # runs of an older initialisation scheme are trained again

    def as_dict(self) -> dict:
        return asdict(self)


QUICK = Config(epochs=4, sizes={"train": 512, "validation": 128, "test": 256}, quick=True)
QUICK_SEEDS = (6206,)
QUICK_PATH_EPISODES = 8


@dataclass(frozen=True)
class Job:
    model: str
    delay: int
    seed: int

    @property
    def stem(self) -> str:
        return f"{self.model}-d{self.delay}-s{self.seed}"


def parse_models(value) -> tuple[str, ...]:
    items = _items("--models", value)
    for m in items:
        validate.choice("--models", m, models.MODELS)
    return tuple(dict.fromkeys(items))


def parse_delays(value) -> tuple[int, ...]:
    return tuple(dict.fromkeys(_integers("--delays", value, minimum=1, maximum=MAX_DELAY, example="8,16,32")))


def parse_seeds(value) -> tuple[int, ...]:
    """Comma-separated seeds or inclusive ranges ``a-b``: ``6206-6208,7000-7009`` is 13 seeds."""
    seeds: list[int] = []
    for item in _items("--seeds", value):
        if isinstance(item, str) and item.count("-") == 1 and not item.startswith("-"):
            a, b = (_integers("--seeds", part, minimum=0, maximum=MAX_SEED, example="6206-6208,7000-7009")[0]
                    for part in item.split("-"))
            if b < a:
                raise SeqgradValueError("--seeds", value, f"ranges a-b with a <= b, e.g. 6206-6208 (not {item})")
            if b - a + 1 > MAX_SEEDS:
                raise SeqgradValueError("--seeds", value, f"at most {MAX_SEEDS} seeds (a range of {b - a + 1})")
            seeds.extend(range(a, b + 1))
        else:
            seeds.extend(_integers("--seeds", item if isinstance(item, str) else [item], minimum=0, maximum=MAX_SEED, example="6206,6207,6208"))
    seeds = list(dict.fromkeys(seeds))
    if len(seeds) > MAX_SEEDS:
        raise SeqgradValueError("--seeds", value, f"at most {MAX_SEEDS} seeds ({len(seeds)} given)")
    return tuple(seeds)


def format_seeds(seeds) -> str:
    """The seeds as :func:`parse_seeds` reads them, runs of consecutive seeds as ranges: ``6206-6208,7000-7009``."""
    parts: list[list[int]] = []
    for s in seeds:
        if parts and s == parts[-1][1] + 1:
            parts[-1][1] = s
        else:
            parts.append([s, s])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in parts)


def parse_jobs(value) -> int:
    """The number of worker processes, 1 to :data:`MAX_JOBS`."""
    jobs = _integers("--jobs", [value] if isinstance(value, int) else value, minimum=1, maximum=MAX_JOBS, example="2",
                      what="an integer")
    if len(jobs) != 1:
        raise SeqgradValueError("--jobs", value, f"one integer from 1 to {MAX_JOBS}")
    return jobs[0]


def _items(argument: str, value) -> list:
    if isinstance(value, str):
        items = [s.strip() for s in value.split(",")]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise SeqgradValueError(argument, value, "a comma-separated list")
    if not items or any(s == "" for s in items):
        raise SeqgradValueError(argument, value, "a non-empty comma-separated list without empty items")
    return items


def _integers(argument: str, value, minimum: int, maximum: int, example: str, what: str = "comma-separated integers") -> list[int]:
    out = []
    allowed = f"{what} from {minimum} to {maximum}, e.g. {example}"
    for s in _items(argument, value):
        if isinstance(s, str):
            if not s.lstrip("-").isdigit():
                raise SeqgradValueError(argument, value, allowed)
            if len(s.lstrip("-0")) > len(str(maximum)):  # refused before int() of a huge digit string
                raise SeqgradValueError(argument, value, allowed)
            s = int(s)
        out.append(validate.integer(argument, s, minimum=minimum, maximum=maximum))
    return out


def _load_run(out: Path, job: Job, config: Config) -> dict | None:
    path = out / "runs" / f"{job.stem}.json"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(record.get("config"), dict) and "loss" not in record["config"]:
        record["config"]["loss"] = train.LOSS  # recorded before the loss was an option: it was trained with this one
    if record.get("config") != config.as_dict() or not (out / "runs" / f"{job.stem}.pt").exists():
        return None
    return record


def load_state(out: Path, job: Job) -> dict:
    return torch.load(Path(out) / "runs" / f"{job.stem}.pt", map_location="cpu", weights_only=True)


def _run_job(job: Job, config: Config, out: str, device: str, slot: int | None = None) -> dict:
    """Train one job and write its two files (called in this process or in a worker)."""
    from tqdm.auto import tqdm

    with one_thread():
        data = {name: task.split(name, job.delay, config.sizes[name]) for name in task.SIZES}
        with tqdm(total=config.epochs, desc=f"{models.LABELS[job.model]:>11} d={job.delay:<3} seed {job.seed}",
                  position=slot, leave=slot is None, unit="epoch", dynamic_ncols=True) as bar:
            run, state = train.train(job.model, job.delay, job.seed, data, epochs=config.epochs,
                                     batch_size=config.batch_size, loss=config.loss, device=device, bar=bar)
    record = {"config": config.as_dict(), "device": device, **run.as_dict()}
    buffer = io.BytesIO()
    torch.save(state, buffer)
    runs = Path(out) / "runs"
    write_bytes(runs / f"{job.stem}.pt", buffer.getvalue())  # the checkpoint first: a .json means both exist
    write_text(runs / f"{job.stem}.json", json.dumps(record, indent=1) + "\n")
    return record


def _worker(args) -> dict:
    job, config, out, device, jobs = args
    slot = multiprocessing.current_process()._identity[0] % jobs if jobs > 1 else None
    return _run_job(job, config, out, device, slot)


def run_grid(out, *, models_: tuple[str, ...] = models.MODELS, delays: tuple[int, ...] = DELAYS,
             seeds: tuple[int, ...] = DISTRIBUTION_SEEDS, config: Config = Config(), device: str = "cpu",
             jobs: int = 1) -> list[dict]:
    """Train every (model, delay, seed) not finished yet in ``out``; return all run records
    in grid order.  The runs are trained seed by seed in the order of ``seeds``, and within a seed the
    longest first so that a pool stays busy."""
    out = Path(out)
    device = resolve_device(device).type
    jobs = validate.integer("jobs", jobs, minimum=1, maximum=MAX_JOBS)
    grid = [Job(m, d, s) for m in models_ for d in delays for s in seeds]
    done = {job: rec for job in grid if (rec := _load_run(out, job, config)) is not None}
    # seed by seed (an interrupted grid has every model and delay at about as many seeds), longest first within one
    todo = sorted((j for j in grid if j not in done), key=lambda j: (seeds.index(j.seed), -j.delay))
    if todo and (jobs == 1 or device == "cuda" or len(todo) == 1):
        for job in todo:
            done[job] = _run_job(job, config, str(out), device)
    elif todo:
        ctx = multiprocessing.get_context("spawn")
        with signals.held():  # the workers start with the signals held; their policy lets them through
            pool = ctx.Pool(min(jobs, len(todo)), initializer=signals.pool_worker, initargs=(os.getpid(),))
        with pool:  # a worker dies with this process (seqgrad.signals), and the pool terminates it
            for record in pool.imap_unordered(_worker, [(j, config, str(out), device, jobs) for j in todo]):
                done[Job(record["model"], record["delay"], record["seed"])] = record
    return [done[job] for job in grid]


# ---------------------------------------------------------------- analysis and outputs

def analyse(out, records: list[dict], *, episodes: int | None = None, trained: bool = True,
            show_progress: bool | None = None) -> list[dict]:
    """Gradient-path summaries (:mod:`.paths`) of every run (CPU, float64): of its saved checkpoint
    (``trained``), or of the same model at its initialisation (``trained=False``, the weights whose
    gradients must first teach the model to keep the cue)."""
    from tqdm.auto import tqdm

    from . import paths

    summaries = []
    tests: dict[int, task.Episodes] = {}
    label = "gradient paths, " + ("trained" if trained else "initial")
    with one_thread():
        for r in tqdm(records, desc=label, disable=show_progress is False, dynamic_ncols=True):
            job = Job(r["model"], r["delay"], r["seed"])
            model = models.build(job.model, job.delay, job.seed)
            if trained:
                model.load_state_dict(load_state(out, job))
            if job.delay not in tests:
                tests[job.delay] = task.split("test", job.delay, r["config"]["sizes"]["test"])
            summaries.append(paths.summarize(model, tests[job.delay], job.seed, episodes or paths.EPISODES).as_dict())
    return summaries


def write_outputs(out, records: list[dict], summaries: list[dict], initial: list[dict], *, command: str,
                  wall_seconds: float, trained: int, device: str, record: bool = False) -> list[Path]:
    """results.json, table.md, table.tex and the figures, each written atomically; with ``record``, the
    same results.json also as the package's recorded run (:data:`RECORD`)."""
    from matplotlib.figure import Figure

    from seqgrad.atomic import save_figure

    from . import figures, results

    out = Path(out)
    cells = results.table(text_seed_records(records))
    dists = results.distribution(records)
    found = results.trends(records)
    config = records[0]["config"]
    previous = _previous_invocations(out / "results.json", config)
    doc = {
        "experiment": "cue-recall",
        "source": results.SOURCE,
        "config": config,
        "models": list(dict.fromkeys(r["model"] for r in records)),
        "delays": sorted({r["delay"] for r in records}),
        "seeds": sorted({r["seed"] for r in records}),
        "chance": {"accuracy": task.CHANCE_ACCURACY, "cross_entropy": task.CHANCE_CROSS_ENTROPY},
        "parameters": {m: {str(d): models.parameter_count(m, d) for d in sorted({r["delay"] for r in records})}
                       for m in dict.fromkeys(r["model"] for r in records)},
        "printed_parameters": models.PRINTED_PARAMETERS,
        "invocations": previous + [{"command": command, "device": device, "wall_seconds": round(wall_seconds, 1),
                                    "runs_trained": trained, "threads_per_process": 1}],
        "table": [c.as_dict() for c in cells],
        "distribution": [d.as_dict() for d in dists],
        "trends": [asdict(t) for t in found],
        "runs": records,
        "paths": summaries,
        "paths_initial": initial,
    }
    text = json.dumps(doc, indent=1) + "\n"
    written = [write_text(out / "results.json", text),
               write_text(out / "table.md", results.markdown(cells) + "\n" + results.distribution_markdown(dists) + "\n"
                          + results.trends_markdown(found) + "\n" + results.per_seed_markdown(records)),
               write_text(out / "table.tex", results.latex(cells))]
    fig = Figure(figsize=(8.0, 4.5), layout="constrained")
    figures.plot_accuracy(fig.add_subplot(), results.table(records))  # every seed
    written.append(save_figure(fig, out / "accuracy-vs-delay.png", dpi=130))
    if record:
        written.append(write_text(RECORD, text))
    fig = Figure(figsize=(14.0, 4.6), layout="constrained")
    figures.plot_gradient_paths(fig.subplots(1, 3), summaries, initial)
    written.append(save_figure(fig, out / "gradient-paths.png", dpi=130))
    if any(r["model"] == "transformer" for r in records):
        n = len({r["delay"] for r in records if r["model"] == "transformer"})
        fig = Figure(figsize=(5.2 * n, 4.2), layout="constrained")
        figures.plot_plateau(fig.subplots(1, n, sharey=True, squeeze=False)[0], records, highlight=train.SEEDS)
        written.append(save_figure(fig, out / "plateau-escape.png", dpi=130))
    return written


def text_seed_records(records: list[dict]) -> list[dict]:
    """The runs of the text's seeds (:data:`~.train.SEEDS`), for the table beside Table 34; all runs
    when none of them is among ``records``."""
    mine = [r for r in records if r["seed"] in train.SEEDS]
    return mine or list(records)


def _previous_invocations(path: Path, config: dict) -> list[dict]:
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return list(old.get("invocations", [])) if old.get("config") == config else []


def configuration(*, quick: bool = False, batch_size: int | None = None, loss: str | None = None,
                  record: bool = False) -> Config:
    """The :class:`Config` of a grid: the default (or :data:`QUICK`) with ``batch_size`` and ``loss``
    replaced; ``record`` refuses anything but the text's setup."""
    config = QUICK if quick else Config()
    if batch_size is not None:
        config = replace(config, batch_size=validate.integer("batch_size", batch_size, minimum=1))
    if loss is not None:
        config = replace(config, loss=validate.choice("loss", loss, train.LOSSES))
    if record and config != Config():
        raise SeqgradValueError("--record", True, "only with the text's setup (no --quick, --batch-size or --loss)")
    return config


def run(out, *, models_=models.MODELS, delays=DELAYS, seeds=DISTRIBUTION_SEEDS, quick: bool = False, device: str = "cpu",
        jobs: int = 1, batch_size: int | None = None, loss: str | None = None, command: str = "",
        record: bool = False) -> list[Path]:
    """Train what is missing, analyse the gradient paths, write every output; return the written paths.

    ``batch_size`` and ``loss`` replace the defaults (:data:`~.train.BATCH_SIZE`, :data:`~.train.LOSS`);
    they are part of the configuration, so runs of another batch size or loss are never mixed with the
    default's.  ``record`` also writes results.json as the package's recorded run (:data:`RECORD`): only
    the text's setup (the default configuration, not ``quick``) may be recorded."""
    config = configuration(quick=quick, batch_size=batch_size, loss=loss, record=record)
    start = time.perf_counter()
    before = sum(_load_run(Path(out), Job(m, d, s), config) is not None for m in models_ for d in delays for s in seeds)
    records = run_grid(out, models_=models_, delays=delays, seeds=seeds, config=config, device=device, jobs=jobs)
    n = QUICK_PATH_EPISODES if quick else None
    summaries = analyse(out, records, episodes=n)
    initial = analyse(out, records, episodes=n, trained=False)
    wall = time.perf_counter() - start
    return write_outputs(out, records, summaries, initial, command=command, wall_seconds=wall, trained=len(records) - before,
                         device=resolve_device(device).type, record=record)
