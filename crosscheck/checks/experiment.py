"""Checks of the recorded cue-recall experiment (week 06, Table 34), group ``experiment``.

The full experiment trains 27 models (about a quarter of an hour on two cores), far
too long for ``seqgrad check``; these checks read its recorded results,
``docs/experiments/cue-recall/results.json`` (written by ``seqgrad experiment
cue-recall``; the command that made it is in the file), and skip when it is absent.
The record is held to the text's setup and to itself (the table is recomputed from
the per-run records), then the text's *trends* are asserted, never its printed
numbers: each detail reports the distance of every measured mean to the printed
one instead.  The training loop itself is tested by ``tests/test_cue_recall.py``
(the ``--quick`` run, determinism, clipping against ``clip_grad_norm_``).

Thresholds: "perfect" is a mean accuracy of at least 0.99 (at most about 10 of the
1,024 test episodes wrong); "near chance" is within 0.1 of 1/4 (the printed RNN value
0.257 is 0.007 above it; 0.1 is about a third of the way to the GRU's 0.322).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from ..registry import check
from ..tolerance import Outcome

GROUP = "experiment"
RESULTS = Path(__file__).resolve().parents[2] / "docs" / "experiments" / "cue-recall" / "results.json"
SOURCE = "week06 §Что устанавливает эксперимент практикума?:1291"
SOURCE_SETUP = "week06 §Что устанавливает эксперимент практикума?:1287"
PERFECT = 0.99
NEAR_CHANCE = 0.1
CHAIN_RULE_RTOL = 1e-8  # float64: g_q P against autograd, products of at most 36 Jacobians


def _load() -> dict | None:
    try:
        return json.loads(RESULTS.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def _missing() -> Outcome:
    return Outcome.skip(f"no recorded results at {RESULTS}: run `seqgrad experiment cue-recall --out docs/experiments/cue-recall`")


def _means(doc: dict) -> dict[tuple[str, int], dict]:
    return {(c["model"], c["delay"]): c for c in doc["table"]}


def _distances(doc: dict, keys) -> str:
    at = _means(doc)
    parts = []
    for k in keys:
        c = at.get(k)
        if c is None:
            parts.append(f"{k[0]} d={k[1]}: not recorded")
            continue
        printed = "" if c["printed_mean"] is None else f", printed {c['printed_mean']:g} (distance {c['mean'] - c['printed_mean']:+.3f})"
        parts.append(f"{k[0]} d={k[1]}: {c['mean']:.3f}{printed}")
    return "; ".join(parts)


def _trend(keys, holds) -> Outcome:
    doc = _load()
    if doc is None:
        return _missing()
    at = _means(doc)
    if any(k not in at for k in keys):
        return Outcome(math.inf, math.inf, False, "the record lacks " + ", ".join(f"{m} d={d}" for m, d in keys if (m, d) not in at))
    return Outcome(0.0, 0.0, bool(holds(at)), _distances(doc, keys))


@check("experiment.cue_recall_record", source=SOURCE_SETUP, group=GROUP)
def record(ctx) -> Outcome:
    """The recorded run follows the text's setup (3 models x delays 8, 16, 32 x seeds 6206-6208, 60 epochs,
    4,096/512/1,024 episodes), its table is the mean and sample std of its runs, and its parameter counts are the built models'."""
    doc = _load()
    if doc is None:
        return _missing()
    from seqgrad.numeric.cue_recall import experiment, models, results

    problems = []
    if doc["config"] != experiment.Config().as_dict():
        problems.append(f"config {doc['config']} is not the text's setup")
    grid = {(m, d, s) for m in models.MODELS for d in experiment.DELAYS for s in experiment.train.SEEDS}
    have = {(r["model"], r["delay"], r["seed"]) for r in doc["runs"]}
    if have != grid:
        problems.append(f"runs missing: {sorted(grid - have)[:3]}, extra: {sorted(have - grid)[:3]}")
    recomputed = [c.as_dict() for c in results.table(doc["runs"])]
    worst = 0.0
    for a, b in zip(recomputed, doc["table"]):
        for key in ("mean", "std"):
            if (a[key] is None) != (b[key] is None):
                problems.append(f"{a['model']} d={a['delay']} {key}: recorded {b[key]}, recomputed {a[key]}")
            elif a[key] is not None:
                worst = max(worst, abs(a[key] - b[key]))
    if len(recomputed) != len(doc["table"]) or worst > 1e-12:
        problems.append(f"the table differs from its runs (by up to {worst:.3g})")
    for m, counts in doc["parameters"].items():
        for d, n in counts.items():
            if models.parameter_count(m, int(d)) != n:
                problems.append(f"{m} d={d}: recorded {n} parameters, the built model has {models.parameter_count(m, int(d))}")
    clip = max(r["clip_vs_torch"] for r in doc["runs"])
    if not clip <= 1e-6:
        problems.append(f"the project's clipping differs from clip_grad_norm_ by {clip:.3g} on a first step (float32)")
    command = doc["invocations"][-1]["command"] if doc.get("invocations") else "?"
    detail = "; ".join(problems) if problems else f"{len(have)} runs as specified; made by `{command}`; clipping vs clip_grad_norm_ max {clip:.2g}"
    return Outcome(worst, 0.0, not problems, detail)


@check("experiment.cue_recall_delay8_perfect", source=SOURCE, group=GROUP)
def delay8_perfect(ctx) -> Outcome:
    """At delay 8 every model recalls the cue (mean test accuracy >= 0.99)."""
    keys = [(m, 8) for m in ("rnn", "gru", "transformer")]
    return _trend(keys, lambda at: all(at[k]["mean"] >= PERFECT for k in keys))


@check("experiment.cue_recall_transformer_every_delay", source=SOURCE, group=GROUP)
def transformer_every_delay(ctx) -> Outcome:
    """The Transformer recalls the cue at every delay, 8, 16 and 32 (mean test accuracy >= 0.99)."""
    keys = [("transformer", d) for d in (8, 16, 32)]
    return _trend(keys, lambda at: all(at[k]["mean"] >= PERFECT for k in keys))


@check("experiment.cue_recall_ordering", source=SOURCE, group=GROUP)
def ordering(ctx) -> Outcome:
    """At delays 16 and 32 the mean accuracies order RNN < GRU < Transformer."""
    keys = [(m, d) for d in (16, 32) for m in ("rnn", "gru", "transformer")]
    return _trend(keys, lambda at: all(at[("rnn", d)]["mean"] < at[("gru", d)]["mean"] < at[("transformer", d)]["mean"]
                                       for d in (16, 32)))


@check("experiment.cue_recall_rnn_chance_at_32", source=SOURCE, group=GROUP)
def rnn_chance_at_32(ctx) -> Outcome:
    """At delay 32 the RNN is near chance: its mean accuracy is within 0.1 of 1/4."""
    keys = [("rnn", 32)]
    return _trend(keys, lambda at: abs(at[("rnn", 32)]["mean"] - 0.25) <= NEAR_CHANCE)


def _geometric_means(rows: list[dict], model: str, key: str) -> tuple[list[int], list[float]]:
    delays = sorted({p["delay"] for p in rows if p["model"] == model})
    means = []
    for d in delays:
        values = [p[key] for p in rows if p["model"] == model and p["delay"] == d]
        means.append(math.exp(sum(math.log(v) for v in values) / len(values)) if all(v > 0 for v in values) else 0.0)
    return delays, means


@check("experiment.cue_recall_gradient_paths", source="week06 §Что произведения говорят о градиентах дальних зависимостей:198; " + SOURCE, group=GROUP)
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
