"""Every code example in docs/ (and README.md) runs, so the docs cannot drift from the code.

Conventions for writing docs:

* Python examples are doctest sessions (``>>>`` lines with their expected
  output) inside fenced blocks; every ``.md`` file under docs/ is run with
  :mod:`doctest` (ELLIPSIS and NORMALIZE_WHITESPACE on), in a temporary
  working directory.
* Shell examples go in ```` ```console ```` fences; each line that starts with
  ``$ `` is run (``seqgrad`` means ``python -m seqgrad``) and must exit 0,
  or with the status written at the end of the line as ``# exit N``.
"""

from __future__ import annotations

import doctest
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
CONSOLE = re.compile(r"```console\n(.*?)```", re.S)


def _ids(paths):
    return [str(p.relative_to(ROOT)) for p in paths]


@pytest.mark.parametrize("path", DOCS, ids=_ids(DOCS))
def test_python_examples(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = path.read_text(encoding="utf-8")
    if ">>>" not in text:
        pytest.skip("no Python examples")
    parser = doctest.DocTestParser()
    test = parser.get_doctest(text, {}, path.name, str(path), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} example(s) in {path.name} failed (see output above)"


def _console_lines():
    for path in DOCS:
        for block in CONSOLE.findall(path.read_text(encoding="utf-8")):
            for line in block.splitlines():
                if line.startswith("$ "):
                    yield path, line[2:].strip()


CONSOLE_LINES = list(_console_lines())


@pytest.mark.parametrize("path, line", CONSOLE_LINES, ids=[f"{p.name}:{l[:40]}" for p, l in CONSOLE_LINES])
def test_console_examples(path, line, tmp_path):
    expected = 0
    m = re.search(r"#\s*exit\s+(\d+)\s*$", line)
    if m:
        expected = int(m.group(1))
        line = line[: m.start()].strip()
    words = shlex.split(line)
    if words and words[0] == "seqgrad":
        words = [sys.executable, "-m", "seqgrad", *words[1:]]
    elif words and words[0] in ("python", "python3"):
        words[0] = sys.executable
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    proc = subprocess.run(words, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == expected, f"{line!r} exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
