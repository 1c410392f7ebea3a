"""Two runs of ``seqgrad check`` on the same machine write the same report.json, apart from the timing fields."""

from __future__ import annotations

import json
import subprocess
import sys

from seqgrad.crosscheck.report import TIMING_FIELDS

# a fast subset: random parameters from the seeded generators, the course trace, derivations compiled in a fresh process
SUBSET = "transformer.[ls]*"


def _run(out) -> dict:
    proc = subprocess.run([sys.executable, "-m", "seqgrad", "check", "--only", SUBSET, "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads((out / "report.json").read_text())


def _without_timings(value):
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k not in TIMING_FIELDS}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def test_two_runs_give_identical_reports(tmp_path):
    first, second = _run(tmp_path / "a"), _run(tmp_path / "b")
    assert [c["name"] for c in first["checks"]] == ["transformer.layernorm_jacobian", "transformer.layernorm_program",
                                                    "transformer.softmax_jacobian"]
    assert all(isinstance(c["seconds"], float) for c in first["checks"]) and "total_seconds" in first
    assert _without_timings(first) == _without_timings(second)
