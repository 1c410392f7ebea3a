"""The command line answers every bad option of docs/bad-input.md with one line on stderr and exit 2, never a traceback.

Every CLI case of tests/bad_input_cases.py goes through ``crosscheck.cli.main`` (what the ``seqgrad`` script
runs); a few per subcommand also run as real processes in the default run, and all of them do in the slow run.
``test_bad_input_table.py`` checks the exception class and the message of the same cases.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bad_input_cases import CASES  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CLI_CASES = [c for c in CASES if c.argv is not None]


def _problem(case, returncode: int, stderr: str) -> str | None:
    lines = stderr.strip().splitlines()
    if returncode != 2 or len(lines) != 1 or "Traceback" in stderr or "internal error" in stderr \
            or case.fragment not in stderr:
        return f"seqgrad {' '.join(case.argv)}: exit {returncode}, stderr {stderr!r}"
    return None


@pytest.mark.parametrize("case", CLI_CASES, ids=[" ".join(c.argv)[:80] for c in CLI_CASES])
def test_main_answers_one_line_and_exit_2(case, tmp_path, monkeypatch, capsys):
    from seqgrad.crosscheck import cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SEQGRAD_DEBUG", raising=False)
    code = cli.main(list(case.argv))
    captured = capsys.readouterr()
    assert _problem(case, code, captured.err) is None, _problem(case, code, captured.err)
    assert not (tmp_path / "pwned").exists()


def _run(case, cwd: Path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    env.pop("SEQGRAD_DEBUG", None)
    p = subprocess.run([sys.executable, "-m", "seqgrad", *case.argv], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=120)
    return _problem(case, p.returncode, p.stderr)


def _processes(cases, cwd: Path) -> None:
    with ThreadPoolExecutor(max_workers=4) as pool:
        problems = [p for p in pool.map(lambda c: _run(c, cwd), cases) if p]
    assert not problems, "\n".join(problems)
    assert not (cwd / "pwned").exists()


def test_a_bad_option_of_each_subcommand_as_a_process(tmp_path):
    first: dict[str, object] = {}
    for c in CLI_CASES:
        first.setdefault(c.argv[0], c)
    assert {"check", "derive", "encoder", "identities", "claim", "latex", "plot"} <= set(first)
    _processes(list(first.values()), tmp_path)


@pytest.mark.slow
def test_every_bad_option_as_a_process(tmp_path):
    _processes(CLI_CASES, tmp_path)
