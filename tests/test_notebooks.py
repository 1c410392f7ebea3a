"""The notebooks of docs/notebooks/ run top to bottom in a real Jupyter kernel (nbclient + ipykernel),
and what they display is what a reader should see: LaTeX displays and figures."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "docs" / "notebooks").glob("*.ipynb"))


def run(path: Path, tmp_path: Path):
    nb = nbformat.read(path, as_version=4)
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = str(ROOT) + (os.pathsep + env_path if env_path else "")
    try:
        nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        os.environ["PYTHONPATH"] = env_path
    return nb


def outputs(nb, mime: str) -> list:
    return [o["data"][mime] for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])
            if "data" in o and mime in o["data"]]


def test_one_notebook_per_use():
    assert [p.name for p in NOTEBOOKS] == ["decoder-generation.ipynb", "deriving-gradient-formulas.ipynb",
                                           "exporting-notes.ipynb", "from-pytorch-to-bptt.ipynb",
                                           "verifying-identities.ipynb"]
    readme = (ROOT / "docs" / "notebooks" / "README.md").read_text()
    assert all(p.name in readme for p in NOTEBOOKS)


def _png(data: str) -> bytes:
    return base64.b64decode(data)


def figures_display(nb) -> list[bytes]:
    """Every figure the notebook draws displays as a PNG (a matplotlib Figure without the inline backend
    shows only its repr, ``<Figure size 1000x380 with 2 Axes>``); returns the PNGs."""
    bundles = [o["data"] for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", []) if "data" in o]
    reprs = [b["text/plain"] for b in bundles if "<Figure size" in "".join(b.get("text/plain", "")) and "image/png" not in b]
    assert not reprs, f"figures shown as text, not drawn: {reprs}"
    pngs = [_png(data) for data in outputs(nb, "image/png")]
    assert all(png[:8] == b"\x89PNG\r\n\x1a\n" for png in pngs)
    return pngs


def printed(nb) -> str:
    """Everything the notebook's code cells printed (their stream outputs), joined."""
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


@pytest.mark.slow
def test_deriving_gradient_formulas(tmp_path):
    nb = run(ROOT / "docs/notebooks/deriving-gradient-formulas.ipynb", tmp_path)
    latex = outputs(nb, "text/latex")
    assert any("\\begin{align*}" in t and "w_{x} x_{0}" in t for t in latex)  # the derivation, textbook order
    assert "$\\displaystyle g^{z}_{0} h_{-1} + g^{z}_{1} h_{0} + g^{z}_{2} h_{1}$" in latex  # net.grad in the text's notation
    assert any("\\Bigl(" in t or "\\quad" in t for t in latex)  # the closed form, broken over lines
    assert any("Forward pass" in t and "g^{h}_{2}" in t for t in outputs(nb, "text/markdown"))  # Table 3
    text = printed(nb)
    assert "z₁ = wₓ x₁ + wₕ h₀" in text and "(ŷ − y)²/2" in text
    assert len(figures_display(nb)) == 1  # the |r|^n figure


@pytest.mark.slow
def test_verifying_identities(tmp_path):
    nb = run(ROOT / "docs/notebooks/verifying-identities.ipynb", tmp_path)
    latex = outputs(nb, "text/latex")
    assert any("operatorname{diag}" in t or "softmax" in t or "\\frac" in t for t in latex)
    assert len(latex) >= 2
    text = printed(nb)
    assert "pass" in text and "week06 §" in text  # the checks passed, cited in the one style
    assert len(figures_display(nb)) == 1  # the gradient flow


@pytest.mark.slow
def test_exporting_notes(tmp_path):
    nb = run(ROOT / "docs/notebooks/exporting-notes.ipynb", tmp_path)
    latex = outputs(nb, "text/latex")
    assert any("\\frac{\\partial \\mathcal{L}}{\\partial W_{hh}}" in t and "\\delta^{z}_{2}" in t for t in latex)
    assert (tmp_path / "notes-snippet.tex").read_text().startswith("\\documentclass{article}")
    text = printed(nb)
    assert "\\begin{align*}" in text and "\\toprule" in text
    assert figures_display(nb) == []  # it draws none


@pytest.mark.slow  # a kernel start and a training run: about 35 s on a loaded 2-core machine
def test_decoder_generation(tmp_path):
    nb = run(ROOT / "docs/notebooks/decoder-generation.ipynb", tmp_path)
    text = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "step 2: sees positions 0..1 (<start> я) -> predicts люблю" in text
    assert "stopped at <end>: я люблю мо" in text
    assert float(text.strip().splitlines()[-1]) < 1e-10  # parallel pass = step-by-step logits
    assert len(figures_display(nb)) == 1  # the cross-attention of both heads, as a picture


@pytest.mark.slow
def test_from_pytorch_to_bptt(tmp_path):
    nb = run(ROOT / "docs/notebooks/from-pytorch-to-bptt.ipynb", tmp_path)
    latex = outputs(nb, "text/latex")
    assert any("\\begin{align*}" in t and "{W}_{ir}" in t for t in latex)  # the GRU's derivation, torch's names
    assert any("\\operatorname{diag}" in t or "diag" in t for t in latex)  # the peephole LSTM's carry Jacobian
    text = printed(nb)
    assert "< 1e-10: True" in text and "weight_ih_l0" in text
    assert "peephole LSTM against its own autograd:" in text and "minimal gated unit against its own autograd:" in text
    assert text.count(" True") >= 3
    assert figures_display(nb)  # the path-product figure, as a picture
