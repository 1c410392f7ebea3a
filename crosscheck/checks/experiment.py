"""Checks of the recorded cue-recall experiment (week 06, Table 34), group ``experiment``.

The full experiment trains 117 models (3 models x 3 delays x 13 seeds: the text's three and ten
more), far too long for ``seqgrad check``; these checks read its recorded results, which ship with
the package (:data:`numeric.cue_recall.RECORD`, written by ``seqgrad experiment cue-recall
--record``; the command that made it is in the file), and skip when it is absent.  The record is held
to the text's setup and to itself (the tables are recomputed from the per-run records), then the
text's *trends* are asserted on the distribution over seeds (:func:`numeric.cue_recall.results.trends`,
criteria fixed before the distribution was trained), never its printed numbers.  A trend that does not
reproduce is a finding: the check fails and its detail says what was found, with the verdict in the
claims' taxonomy (*reproduced*, *reproduced in k of n seeds* with a 95 % Wilson interval and the chance
that three seeds all pass, *not reproduced*).  The training loop itself is tested by
``tests/test_cue_recall.py`` (the ``--quick`` run, determinism, clipping against ``clip_grad_norm_``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from seqgrad.numeric.cue_recall import RECORD

from ..registry import check
from ..tolerance import Outcome

GROUP = "experiment"
RESULTS = RECORD
SOURCE = "week06 §Что устанавливает эксперимент практикума?:1291"
SOURCE_SETUP = "week06 §Что устанавливает эксперимент практикума?:1287"
MIN_FURTHER_SEEDS = 10  # the distribution: at least ten initialisation seeds beyond the text's three
CHAIN_RULE_RTOL = 1e-8  # float64: g_q P against autograd, products of at most 36 Jacobians


def _load() -> dict | None:
    try:
        return json.loads(Path(RESULTS).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def _missing() -> Outcome:
    return Outcome.skip(f"no recorded results at {RESULTS}: run `seqgrad experiment cue-recall --record`")


def _trend(name: str) -> Outcome:
    from seqgrad.numeric.cue_recall import results

    doc = _load()
    if doc is None:
        return _missing()
    found = next(t for t in results.trends(doc["runs"]) if t.name == name)
    if found.verdict == "not measured":
        return Outcome(math.inf, math.inf, False, found.detail, reason=found.detail)
    return Outcome(0.0, 0.0, found.holds, f"{found.verdict}: {found.detail}", reason=found.verdict)


@check("experiment.cue_recall_record", source=SOURCE_SETUP, group=GROUP, finding=False)  # the record itself: a toolkit check
def record(ctx) -> Outcome:
    """The recorded run follows the text's setup (3 models x delays 8, 16, 32, 60 epochs, 4,096/512/1,024 episodes,
    the current initialisation streams) at the text's seeds 6206-6208 and at least ten more, its tables are the
    mean and sample std of its runs, and its parameter counts are the built models'."""
    doc = _load()
    if doc is None:
        return _missing()
    from seqgrad.numeric.cue_recall import experiment, models, results

    problems = []
    if doc["config"] != experiment.Config().as_dict():
        problems.append(f"config {doc['config']} is not the text's setup with the current initialisation")
    have = {(r["model"], r["delay"], r["seed"]) for r in doc["runs"]}
    seeds = sorted({s for _, _, s in have})
    grid = {(m, d, s) for m in models.MODELS for d in experiment.DELAYS for s in seeds}
    further = [s for s in seeds if s not in experiment.train.SEEDS]
    if not set(experiment.train.SEEDS) <= set(seeds) or len(further) < MIN_FURTHER_SEEDS:
        problems.append(f"seeds {experiment.format_seeds(seeds)}: the text's 6206-6208 and at least {MIN_FURTHER_SEEDS} more "
                        f"are needed ({len(further)} more recorded)")
    if have != grid:
        problems.append(f"the grid is incomplete: missing {sorted(grid - have)[:3]}")
    worst = 0.0
    for name, recomputed in (("table", [c.as_dict() for c in results.table(experiment.text_seed_records(doc["runs"]))]),
                             ("distribution", [d.as_dict() for d in results.distribution(doc["runs"])])):
        stored = doc.get(name, [])
        for a, b in zip(recomputed, stored):
            for key in ("mean", "std" if name == "table" else "sd"):
                if (a[key] is None) != (b[key] is None):
                    problems.append(f"{name} {a['model']} d={a['delay']} {key}: recorded {b[key]}, recomputed {a[key]}")
                elif a[key] is not None:
                    worst = max(worst, abs(a[key] - b[key]))
        if len(recomputed) != len(stored) or worst > 1e-12:
            problems.append(f"the {name} differs from its runs (by up to {worst:.3g})")
    for m, counts in doc["parameters"].items():
        for d, n in counts.items():
            if models.parameter_count(m, int(d)) != n:
                problems.append(f"{m} d={d}: recorded {n} parameters, the built model has {models.parameter_count(m, int(d))}")
    clip = max(r["clip_vs_torch"] for r in doc["runs"])
    if not clip <= 1e-6:
        problems.append(f"the project's clipping differs from clip_grad_norm_ by {clip:.3g} on a first step (float32)")
    command = doc["invocations"][-1]["command"] if doc.get("invocations") else "?"
    detail = "; ".join(problems) if problems else (f"{len(have)} runs as specified (seeds {experiment.format_seeds(seeds)}); "
                                                   f"made by `{command}`; clipping vs clip_grad_norm_ max {clip:.2g}")
    return Outcome(worst, 0.0, not problems, detail)


@check("experiment.cue_recall_delay8_perfect", source=SOURCE, group=GROUP)
def delay8_perfect(ctx) -> Outcome:
    """At delay 8 every model recalls the cue (test accuracy >= 0.99) on most seeds."""
    return _trend("delay8_perfect")


@check("experiment.cue_recall_transformer_every_delay", source=SOURCE, group=GROUP)
def transformer_every_delay(ctx) -> Outcome:
    """The Transformer recalls the cue (test accuracy >= 0.99) at every delay, 8, 16 and 32, on most seeds."""
    return _trend("transformer_every_delay")


@check("experiment.cue_recall_ordering", source=SOURCE, group=GROUP)
def ordering(ctx) -> Outcome:
    """At delays 16 and 32 the mean accuracies over the seeds order RNN < GRU < Transformer."""
    return _trend("ordering")


@check("experiment.cue_recall_rnn_chance_at_32", source=SOURCE, group=GROUP)
def rnn_chance_at_32(ctx) -> Outcome:
    """At delay 32 the RNN is near chance: its mean accuracy, and most seeds', within 0.1 of 1/4."""
    return _trend("rnn_chance_at_32")


def _geometric_means(rows: list[dict], model: str, key: str) -> tuple[list[int], list[float]]:
    delays = sorted({p["delay"] for p in rows if p["model"] == model})
    means = []
    for d in delays:
        values = [p[key] for p in rows if p["model"] == model and p["delay"] == d]
        means.append(math.exp(sum(math.log(v) for v in values) / len(values)) if all(v > 0 for v in values) else 0.0)
    return delays, means


@check("experiment.cue_recall_gradient_paths", source="week06 §Что произведения говорят о градиентах дальних зависимостей:198; " + SOURCE, group=GROUP,
       finding=False)  # the derived path product against autograd: a toolkit check, whatever the experiment finds
def gradient_paths(ctx) -> Outcome:
    """The derived path product g_q J_q...J_{c+1} has autograd's norm of dL/dh_cue on every RNN and GRU (initial and
    trained), and at initialisation the path norm and the share of the recall gradient reaching the cue shrink as the delay grows."""
    doc = _load()
    if doc is None:
        return _missing()
    trained, initial = doc["paths"], doc.get("paths_initial", [])
    errors = [p["chain_rule_error"] for p in trained + initial if p["chain_rule_error"] is not None]
    worst = max(errors) if errors else math.inf
    ok = worst <= CHAIN_RULE_RTOL and bool(initial)
    parts = [f"chain rule on the initial and trained weights: max relative error {worst:.2g} (bound {CHAIN_RULE_RTOL:g})"]
    if not initial:
        parts.append("the record has no initial-weight gradient paths")
    for m in ("rnn", "gru"):
        for key, what in (("path_norm", "||J_q...J_(c+1)||_2"), ("ratio", "||dL/dh_c||/||dL/dh_q||")):
            delays, geo = _geometric_means(initial, m, key)
            shrinks = len(geo) > 1 and all(a > b for a, b in zip(geo, geo[1:]))
            ok = ok and shrinks
            _, after = _geometric_means(trained, m, key)
            parts.append(f"{m} {what} at d={delays}: initial " + ", ".join(f"{g:.2g}" for g in geo)
                         + ("" if shrinks else " (does not shrink)") + "; trained " + ", ".join(f"{g:.2g}" for g in after))
    att: dict[int, list[float]] = {}
    for p in trained:
        if p["model"] == "transformer":
            att.setdefault(p["delay"], []).append(max(p["attention"]))
    parts.append("transformer trained, strongest-head A_(q,c): " + ", ".join(
        f"d={d}: {sum(v) / len(v):.2f} (uniform {1 / (d + 3):.3f})" for d, v in sorted(att.items())))
    return Outcome(worst, worst, ok, "; ".join(parts))
