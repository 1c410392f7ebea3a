"""The command line contract: help, one-line errors, check --list, report files."""

import json

from seqgrad.crosscheck.cli import main


def test_help_lists_commands(capsys):
    try:
        main(["--help"])
    except SystemExit as exc:
        assert exc.code == 0
    out = capsys.readouterr().out
    assert "check" in out and "plot" in out


def test_unknown_command_is_one_line_exit_2(capsys):
    assert main(["frobnicate"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "frobnicate" in err


def test_bad_device_choice_is_one_line(capsys):
    assert main(["check", "--device", "tpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "tpu" in err


def test_only_matching_nothing_is_an_error(capsys, tmp_path):
    assert main(["check", "--only", "no-such-check-xyz", "--out", str(tmp_path)]) == 2
    assert "--only" in capsys.readouterr().err


def test_python_m_crosscheck_runs(cli):
    proc = cli("--version")
    assert proc.returncode == 0 and "seqgrad" in proc.stdout


def test_readme_test_command_is_what_ci_runs():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text()
    ci = (root / ".ci" / "run").read_text()
    commands = [line.strip() for line in readme.splitlines() if line.strip().startswith("pip install torch==2.13.0")]
    assert len(commands) == 2, "README must give exactly two set-up commands"
    main_job, tests = commands
    assert main_job.endswith("seqgrad check")
    assert tests.endswith("pytest") and tests in ci
