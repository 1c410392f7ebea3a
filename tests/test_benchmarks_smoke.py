"""CI's slow step runs every benchmark script once at its smallest sizes (``--smoke``): the scripts keep
working as the code moves.  No timing is asserted (the machines are shared); a script must exit 0 (its
own consistency checks passed: same report serial and parallel, same document every way, outputs agree)
and must not touch docs/benchmarks.md."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py") if p.name != "procstat.py")


def test_every_benchmark_has_a_smoke_run():
    for name in SCRIPTS:
        assert "--smoke" in (ROOT / "benchmarks" / name).read_text(encoding="utf-8"), f"benchmarks/{name} has no --smoke run"


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS)
def test_benchmark_smoke_run(script, tmp_path):
    doc = ROOT / "docs" / "benchmarks.md"
    before = doc.read_bytes()
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--smoke"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{script} --smoke failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    assert doc.read_bytes() == before, f"{script} --smoke changed docs/benchmarks.md"
