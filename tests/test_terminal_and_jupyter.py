"""What reaches a user's terminal and notebook: no third-party warning from seqgrad's own calls, PDFs whose
references have settled, the notebooks' instructions installable from the extras."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_torch_transformer_twin_warns_nothing():
    """``nn.Transformer(...)`` built its own encoder first and warned (enable_nested_tensor) on every check
    and latex run, breaking the progress bar."""
    from seqgrad.crosscheck import decoder_twins
    from seqgrad.numeric.decoder import EncoderDecoder

    model = EncoderDecoder.random(5, 6, 8, 2, 16, 2, seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        twin = decoder_twins.transformer(model)
    assert [str(w.message) for w in caught] == []
    assert twin.encoder is not None and len(twin.encoder.layers) == 2 and len(twin.decoder.layers) == 2


def test_the_check_that_builds_the_twin_prints_nothing_on_stderr(tmp_path):
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, "-m", "seqgrad", "check", "--only", "decoder.transformer_vs_torch",
                           "--out", str(tmp_path / "report")], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


TEX = r"""\documentclass{article}
\begin{document}
See Section~\ref{later}: it comes after this line.
\section{Later}\label{later}
Here.
\end{document}
"""


@pytest.mark.tex
@pytest.mark.skipif(shutil.which("pdflatex") is None or shutil.which("pdftotext") is None,
                    reason="needs pdflatex and pdftotext (texlive-latex-base, poppler-utils)")
def test_compile_pdf_reruns_until_the_references_settle(tmp_path):
    from seqgrad.crosscheck.latexdoc import compile_pdf

    tex = tmp_path / "forward.tex"
    tex.write_text(TEX)
    pdf = compile_pdf(tex, tmp_path / "out")
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    assert "See Section 1:" in text and "??" not in text
    log = (tmp_path / "out" / "forward.log").read_text(errors="replace")
    assert "Rerun" not in log  # the last run's log: nothing left to settle


def test_the_notebooks_command_is_installed_by_an_extra():
    readme = (ROOT / "docs" / "notebooks" / "README.md").read_text()
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    (install,) = re.findall(r"pip install -e '\.\[([\w,]+)\]'", readme)
    wanted = [req for name in install.split(",") for req in extras[name]]
    assert "jupyter lab docs/notebooks/" in readme
    assert any(req.startswith("jupyterlab") for req in wanted), wanted
    assert any(req.startswith("ipykernel") for req in wanted), wanted


def test_the_docs_say_which_run_executes_the_notebooks():
    """The notebook tests are slow (a kernel each): the default run deselects them, CI's second step runs them."""
    source = (ROOT / "tests" / "test_notebooks.py").read_text()
    assert source.count("@pytest.mark.slow") == source.count("\ndef test_") - 1  # all but the listing test
    readme = (ROOT / "docs" / "notebooks" / "README.md").read_text()
    assert "pytest -m slow" in readme
    assert "'not slow'" in (ROOT / "pyproject.toml").read_text() and "pytest -m slow" in (ROOT / ".ci" / "run").read_text()
