"""The notebooks under docs/notebooks/ run from top to bottom (nbclient), so their examples cannot rot."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "docs" / "notebooks").glob("*.ipynb"))


@pytest.mark.slow  # a kernel start and a training run: about 35 s on a loaded 2-core machine
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    nb = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    text = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    if path.name == "decoder-generation.ipynb":
        assert "step 2: sees positions 0..1 (<start> я) -> predicts люблю" in text
        assert "stopped at <end>: я люблю мо" in text
        assert float(text.strip().splitlines()[-1]) < 1e-10  # parallel pass = step-by-step logits
