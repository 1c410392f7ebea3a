"""Two runs of ``seqgrad check`` give identical report.json apart from the fields docs/report-schema.md marks as timings."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "docs" / "report-schema.md"


def timing_fields() -> set[str]:
    """The field names the schema documents as timings (rows marked **timing**)."""
    fields = set(re.findall(r"^\| `([a-z_]+)` \|[^\n]*\*\*timing\*\*", SCHEMA.read_text(encoding="utf-8"), re.M))
    assert fields, "docs/report-schema.md marks no field as a timing"
    return fields


def without_timings(value, timings: set[str]):
    if isinstance(value, dict):
        return {k: without_timings(v, timings) for k, v in value.items() if k not in timings}
    if isinstance(value, list):
        return [without_timings(v, timings) for v in value]
    return value


def representatives() -> list[str]:
    """The first check of every group: a subset of ``seqgrad check`` that covers each group."""
    from seqgrad.crosscheck.registry import all_checks

    first: dict[str, str] = {}
    for c in all_checks():
        first.setdefault(c.group, c.name)
    return sorted(first.values())


_RUN = """
import sys
from seqgrad.crosscheck import cli
out = sys.argv[1]
for i, name in enumerate(sys.argv[2:]):
    code = cli.main(["check", "--only", name, "--no-figures", "--out", f"{out}/{i}"])
    assert code == 0, (name, code)
"""


def _run(out: Path, names: list[str], hashseed: str) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg", PYTHONHASHSEED=hashseed)
    p = subprocess.run([sys.executable, "-c", _RUN, str(out), *names], env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    return [json.loads((out / str(i) / "report.json").read_text()) for i in range(len(names))]


def test_two_runs_give_the_same_report_on_every_group(tmp_path):
    names = representatives()
    timings = timing_fields()
    first = _run(tmp_path / "a", names, "1")
    second = _run(tmp_path / "b", names, "2")  # another hash seed: set and dict order must not leak into the report
    groups = {c["group"] for r in first for c in r["checks"]}
    from seqgrad.crosscheck.registry import all_checks

    assert groups == {c.group for c in all_checks()}
    for a, b in zip(first, second):
        assert without_timings(a, timings) == without_timings(b, timings)


def test_timings_are_the_only_fields_left_out():
    assert timing_fields() == {"total_seconds", "seconds"}
    report = {"total_seconds": 1.0, "checks": [{"name": "x", "seconds": 0.1, "max_abs_error": 0.0}]}
    assert without_timings(report, timing_fields()) == {"checks": [{"name": "x", "max_abs_error": 0.0}]}


@pytest.mark.slow
def test_two_full_runs_give_the_same_report(tmp_path):
    timings = timing_fields()
    reports = []
    for run, seed in (("a", "1"), ("b", "2")):
        env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg", PYTHONHASHSEED=seed)
        p = subprocess.run([sys.executable, "-m", "seqgrad", "check", "--out", str(tmp_path / run)], env=env,
                           capture_output=True, text=True, timeout=3600)
        assert p.returncode in (0, 1), p.stderr[-2000:]
        reports.append(json.loads((tmp_path / run / "report.json").read_text()))
    assert without_timings(reports[0], timings) == without_timings(reports[1], timings)
