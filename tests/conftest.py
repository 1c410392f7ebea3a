import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args: str, cwd=None, timeout: int = 600) -> subprocess.CompletedProcess:
    """Run ``python -m seqgrad ARGS`` in a subprocess and capture its output."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "seqgrad", *args], cwd=cwd or ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(scope="session")
def standalone_notes(tmp_path_factory):
    """The handout as ``seqgrad latex notes.tex --standalone`` writes it (its figures beside it), built once for
    the whole run: the tests of the notes read it (and compile it elsewhere), none changes it."""
    import contextlib
    import io

    from seqgrad.crosscheck.cli import main

    path = tmp_path_factory.mktemp("standalone-notes") / "notes.tex"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["latex", str(path), "--standalone"]) == 0
    return path


@pytest.fixture(scope="session")
def standalone_pdf(standalone_notes, tmp_path_factory):
    """:func:`standalone_notes` compiled (pdflatex, twice) once for the whole run; skips without a TeX engine."""
    import shutil

    from seqgrad.crosscheck import latexdoc

    if not shutil.which("pdflatex"):
        pytest.skip("no TeX engine")
    return latexdoc.compile_pdf(standalone_notes, tmp_path_factory.mktemp("standalone-pdf"), passes=2)
