"""The package is the product: what ``pip install`` puts in place, and what the sdist carries.

The wheel itself is built, installed in a fresh environment and run by a step of ``.ci/run`` (its
``seqgrad check`` report must equal the editable install's); these tests check the metadata, the
import names from any folder, and (slow, needs the package index for the build backend) the sdist.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _python_elsewhere(code: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python -c code`` from a folder of the user's, with nothing of the checkout on its path."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_import_names_live_under_seqgrad_and_derive_stays_free_of_torch(tmp_path):
    proc = _python_elsewhere("import sys, seqgrad.derive as d; print(d.__name__, 'torch' in sys.modules)", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["seqgrad.derive", "False"]


@pytest.mark.parametrize("name", ["derive", "numeric", "crosscheck"])
def test_no_generic_top_level_name_is_installed(name, tmp_path):
    proc = _python_elsewhere(f"import {name}", tmp_path)
    assert proc.returncode == 1 and f"ModuleNotFoundError: No module named '{name}'" in proc.stderr


def test_a_users_own_numeric_py_does_not_shadow_seqgrad(tmp_path):
    """The issue's case: a notebook folder with its own numeric.py broke the cross-checks' imports."""
    (tmp_path / "numeric.py").write_text("raise RuntimeError('the user file was imported')\n")
    (tmp_path / "derive.py").write_text("raise RuntimeError('the user file was imported')\n")
    proc = _python_elsewhere("from seqgrad.crosscheck.checks.rnn import against_autograd; print('ok')", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_license_is_an_spdx_string_with_its_file():
    project = PYPROJECT["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "THE SOFTWARE IS PROVIDED \"AS IS\"" in text
    # an SPDX license string needs setuptools 77 (PEP 639); a License :: classifier beside it is an error there
    assert "setuptools>=77" in PYPROJECT["build-system"]["requires"][0]
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]


def test_classifiers_name_the_supported_pythons():
    project = PYPROJECT["project"]
    minimum = project["requires-python"].removeprefix(">=")
    versions = [c.rsplit(" :: ", 1)[1] for c in project["classifiers"] if c.startswith("Programming Language :: Python :: 3.")]
    assert versions and versions[0] == minimum
    assert f"{sys.version_info.major}.{sys.version_info.minor}" in versions


def test_the_program_is_the_console_entry_with_its_signal_policy():
    assert PYPROJECT["project"]["scripts"] == {"seqgrad": "seqgrad.crosscheck.cli:console"}
    assert "console()" in (ROOT / "seqgrad" / "__main__.py").read_text()


def test_the_ci_compares_the_installed_wheel_with_the_editable_install():
    run = (ROOT / ".ci" / "run").read_text()
    tests_at = run.index("pytest -m slow")
    wheel_at = run.index("python -m build")
    assert tests_at < wheel_at  # after the test commands
    assert "seqgrad check --no-figures" in run[wheel_at:] and ".ci/same_report.py" in run[wheel_at:]


def _referenced_files() -> set[str]:
    """Files outside the packages that the tests open (docs, benchmarks, the README, the CI script)."""
    wanted = {"LICENSE", "README.md", ".ci/run", "docs/index.md", "tests/conftest.py"}
    wanted |= {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*")
               if p.is_file() and p.suffix in {".md", ".ipynb", ".png", ".json", ".tex"} and "runs" not in p.parts}
    wanted |= {p.relative_to(ROOT).as_posix() for p in (ROOT / "benchmarks").glob("*.py")}
    return wanted


@pytest.mark.slow
@pytest.mark.xdist_group("source-tree-build")  # builds from the source tree, as test_cue_recall's wheel does
def test_the_sdist_carries_docs_tests_and_benchmarks(tmp_path):
    pytest.importorskip("build")
    proc = subprocess.run([sys.executable, "-m", "build", "--sdist", "--outdir", str(tmp_path), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (sdist,) = tmp_path.glob("seqgrad-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    missing = sorted(_referenced_files() - names)
    assert not missing, missing
    assert {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").glob("*.py")} <= names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
