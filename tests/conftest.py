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


def built_once(tmp_path_factory, name: str, make) -> Path:
    """A folder that ``make(folder)`` fills once for the whole test run, shared by the xdist workers: the first
    worker to ask builds it under a file lock, the others wait for it (never longer than building it themselves).
    The notes' builds and compiles were repeated in every worker and every module that read them."""
    import fcntl
    import shutil

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's folder, above each worker's own
    folder, done = root / name, root / f"{name}.done"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            done.touch()
    return folder


def _write_notes(path: Path, *options: str) -> None:
    """``seqgrad latex PATH OPTIONS`` in this process (its progress lines kept out of the test's output)."""
    import contextlib
    import io

    from seqgrad.crosscheck.cli import main

    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["latex", str(path), *options]) == 0


def _compiled(tmp_path_factory, name: str, tex: Path) -> Path:
    """``tex`` compiled with pdflatex (twice: contents and references), once for the whole run; skips without a
    TeX engine."""
    import shutil

    from seqgrad.crosscheck import latexdoc

    if not shutil.which("pdflatex"):
        pytest.skip("no TeX engine")
    return built_once(tmp_path_factory, name, lambda build: latexdoc.compile_pdf(tex, build, passes=2)) / f"{tex.stem}.pdf"


@pytest.fixture(scope="session")
def standalone_notes(tmp_path_factory):
    """The handout as ``seqgrad latex notes.tex --standalone`` writes it (its figures beside it), built once for
    the whole run: the tests of the notes read it (and compile it elsewhere), none changes it."""
    return built_once(tmp_path_factory, "standalone-notes",
                      lambda folder: _write_notes(folder / "notes.tex", "--standalone")) / "notes.tex"


@pytest.fixture(scope="session")
def standalone_pdf(standalone_notes, tmp_path_factory):
    """:func:`standalone_notes` compiled (pdflatex, twice) once for the whole run; skips without a TeX engine."""
    return _compiled(tmp_path_factory, "standalone-pdf", standalone_notes)


@pytest.fixture(scope="session")
def chapter_notes(tmp_path_factory):
    """The whole chapter as ``seqgrad latex notes.tex`` writes it (every section, every figure of their sets,
    the appendix), built once for the whole run; no test changes it."""
    return built_once(tmp_path_factory, "chapter-notes", lambda folder: _write_notes(folder / "notes.tex")) / "notes.tex"


@pytest.fixture(scope="session")
def chapter_pdf(chapter_notes, tmp_path_factory):
    """:func:`chapter_notes` compiled (pdflatex, twice) once for the whole run; skips without a TeX engine."""
    return _compiled(tmp_path_factory, "chapter-pdf", chapter_notes)
