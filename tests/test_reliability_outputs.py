"""Outputs never clobber or lose data (issue 18).

* files get the mode the umask gives and keep an existing file's mode;
* a symlink is written through, a FIFO or device is refused, a directory is never taken for a file;
* ``seqgrad check`` writes its report and figures as one unit: a signal or a crash at any
  checkpoint of the write leaves the output wholly old or wholly new, and nothing temporary.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from seqgrad.crosscheck.cli import main
from seqgrad import atomic
from seqgrad.errors import SeqgradValueError

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def umask022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


# ----------------------------------------------------------------------------- modes

def test_new_file_gets_the_umask_mode(tmp_path, umask022):
    atomic.write_text(tmp_path / "a.txt", "x")
    assert _mode(tmp_path / "a.txt") == 0o644
    os.umask(0o027)
    atomic.write_bytes(tmp_path / "b.bin", b"x")
    assert _mode(tmp_path / "b.bin") == 0o640


def test_replaced_file_keeps_its_mode(tmp_path, umask022):
    target = tmp_path / "report.md"
    target.write_text("old")
    os.chmod(target, 0o664)
    atomic.write_text(target, "new")
    assert target.read_text() == "new" and _mode(target) == 0o664


def test_figure_gets_the_umask_mode(tmp_path, umask022):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(1, 1))
    fig.add_subplot().plot([0, 1])
    atomic.save_figure(fig, tmp_path / "f.png")
    assert _mode(tmp_path / "f.png") == 0o644


def test_report_directory_and_files_get_the_umask_mode(tmp_path, umask022):
    out = tmp_path / "rep"
    _write_report(out, "new")
    assert _mode(out) == 0o755
    assert {_mode(p) for p in out.rglob("*") if p.is_file()} == {0o644}
    os.chmod(out, 0o750)
    _write_report(out, "newer")
    assert _mode(out) == 0o750


# ----------------------------------------------------------------------------- targets

def test_symlink_is_written_through(tmp_path):
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    atomic.write_text(link, "new")
    assert link.is_symlink() and real.read_text() == "new"


def test_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "link.txt"
    link.symlink_to(tmp_path / "missing.txt")
    atomic.write_text(link, "new")
    assert link.is_symlink() and (tmp_path / "missing.txt").read_text() == "new"


def test_fifo_is_refused_and_left_alone(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(SeqgradValueError, match="FIFO"):
        atomic.write_text(fifo, "x")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_device_is_refused():
    with pytest.raises(SeqgradValueError, match="character device"):
        atomic.output_target("/dev/null", "--out")


@pytest.mark.parametrize("bad", ["", "newdir/", "."])
def test_directory_or_empty_path_is_not_a_file(tmp_path, bad):
    with pytest.raises(SeqgradValueError):
        atomic.output_target(bad)


def test_encoder_out_refuses_fifo_directory_and_empty(tmp_path, capsys, monkeypatch):
    # a FIFO stands for every non-regular target here: a test must never be able to replace a real
    # device (run as root before the fix, ``--out /dev/null`` replaced /dev/null with a regular file)
    monkeypatch.chdir(tmp_path)
    os.mkfifo("pipe")
    for out, words in (("pipe", "FIFO"), ("", "empty"), ("newdir/", "directory")):
        assert main(["encoder", "--show", "H0", "--json", "--out", out]) == 2
        assert words in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["pipe"] and stat.S_ISFIFO(os.lstat("pipe").st_mode)


def test_check_out_refuses_a_directory_with_other_files(tmp_path, capsys, monkeypatch):
    (tmp_path / "mine.txt").write_text("keep")
    assert main(["check", "--only", "claims", "--no-figures", "--out", str(tmp_path)]) == 2
    assert "mine.txt" in capsys.readouterr().err
    monkeypatch.chdir(tmp_path / "..")
    assert main(["check", "--only", "claims", "--no-figures", "--out", "."]) == 2
    assert "working directory" in capsys.readouterr().err
    assert main(["check", "--only", "claims", "--no-figures", "--out", ""]) == 2
    assert (tmp_path / "mine.txt").read_text() == "keep"


# ----------------------------------------------------------------------------- the report as one unit

class _AnyCaption(dict):
    """Every fake figure has a caption (report.tex refuses a figure without one)."""

    def __contains__(self, stem) -> bool:
        return True

    def __missing__(self, stem) -> str:
        return f"The fake figure {stem}, written as bytes to test the report's atomic swap."


class _FakeFigures:
    """A figure set of three figure files whose names carry the run's label (written as bytes:
    the checkpoints are those of every atomic file write; matplotlib would only slow the test)."""

    NAME = "fake"
    label = "old"
    CAPTIONS = _AnyCaption()

    @classmethod
    def write(cls, out_dir, fmt, device):
        return [atomic.write_bytes(Path(out_dir) / f"{cls.label}_{k}.png", b"\x89PNG fake %d" % k) for k in range(3)]


def _results(label: str):
    from seqgrad.crosscheck.registry import Result

    return [Result(f"{label}.check{k}", "test", label, "pass", True, 0.0, 0.0, "cpu", "float64", "", 0.0) for k in range(2)]


def _write_report(out: Path, label: str) -> None:
    from seqgrad.crosscheck import figures
    from seqgrad.crosscheck.commands import check

    _FakeFigures.label = label
    saved = figures.figure_sets
    figures.figure_sets = lambda: {"fake": _FakeFigures}
    try:
        check.write_outputs(out, lambda tasks, joins: (_results(label), [t.run() for t in tasks]), device="cpu", dtype="float64",
                            start=0.0, figures=True)
    finally:
        figures.figure_sets = saved


def _state(out: Path) -> str:
    """'old' or 'new' when ``out`` is wholly one report; anything else fails the test."""
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    for label in ("old", "new"):
        want = ["figures/fake/" + f"{label}_{k}.png" for k in range(3)] + ["report.json", "report.md", "report.tex"]
        if files == sorted(want):
            data = json.loads((out / "report.json").read_text())
            assert {c["name"].split(".")[0] for c in data["checks"]} == {label}
            assert data["figures"] == sorted(want[:3])
            assert f"{label}.check0" in (out / "report.md").read_text()
            assert f"{label}.\\allowbreak{{}}check0" in (out / "report.tex").read_text()  # a name that may break
            return label
    raise AssertionError(f"a mixed or partial report: {files}")


def _checkpoints(tmp_path) -> list[str]:
    seen: list[str] = []
    atomic.set_checkpoint_hook(seen.append)
    try:
        _write_report(tmp_path / "count", "new")
    finally:
        atomic.set_checkpoint_hook(None)
    return seen


def _interrupted_child(out: Path, at: int, how: str) -> int:
    """Fork; the child writes the new report and is interrupted at checkpoint number ``at``."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        from seqgrad import signals
        from seqgrad.signals import Terminated

        code = 0
        counter = itertools.count()

        def hook(name):
            if next(counter) == at:
                if how == "crash":
                    raise RuntimeError("crash")
                os.kill(os.getpid(), signal.SIGINT if how == "SIGINT" else signal.SIGTERM)

        try:
            signals.install()  # the command's policy
            atomic.set_checkpoint_hook(hook)
            _write_report(out, "new")
        except KeyboardInterrupt:
            code = 130
        except Terminated:
            code = 143
        except RuntimeError:
            code = 1
        except BaseException:
            code = 99
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_report_is_wholly_old_or_wholly_new_after_a_signal_or_crash_at_any_checkpoint(tmp_path):
    names = _checkpoints(tmp_path)
    assert names[0] == "dir:staging" and names[-1] == "dir:swapped"
    assert names.count("file:replaced") == 6  # three figures and three report files
    expected = {"SIGINT": 130, "SIGTERM": 143, "crash": 1}
    seen = {"old": 0, "new": 0}
    _write_report(tmp_path / "old", "old")
    for how, at in itertools.product(expected, range(len(names))):
        base = tmp_path / f"{how}-{at}"
        base.mkdir()
        out = base / "report"
        shutil.copytree(tmp_path / "old", out)
        code = _interrupted_child(out, at, how)
        assert code == expected[how], (how, at, names[at], code)
        state = _state(out)
        # the swap is the commit point: before it the old report, after it the new one
        assert state == ("new" if names[at] == "dir:swapped" else "old"), (how, names[at])
        seen[state] += 1
        assert [p.name for p in base.iterdir()] == ["report"], (how, names[at], list(base.iterdir()))
        assert not [p for p in out.rglob("*") if p.name.startswith(".")], (how, names[at])
    assert seen["old"] and seen["new"]


def test_a_first_report_interrupted_leaves_nothing(tmp_path):
    names = _checkpoints(tmp_path)
    for at in range(len(names) - 1):
        base = tmp_path / f"first-{at}"
        base.mkdir()
        assert _interrupted_child(base / "report", at, "SIGTERM") == 143
        assert list(base.iterdir()) == []


def test_sigterm_under_the_command_keeps_the_old_report(tmp_path):
    """The issue's case: the signal right after report.json is replaced, through the real CLI."""
    out = tmp_path / "report"
    _write_report(out, "old")
    driver = textwrap.dedent(f"""
        import os, signal, sys
        from seqgrad import atomic
        from seqgrad.crosscheck.cli import main
        def hook(name, seen=[]):
            seen.append(name)
            if name == "file:replaced":  # the first report file (report.json) is in place
                os.kill(os.getpid(), signal.SIGTERM)
        atomic.set_checkpoint_hook(hook)
        sys.exit(main(["check", "--only", "claims.b_att_60", "--no-figures", "--out", {str(out)!r}]))
    """)
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, "-c", driver], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 143, proc.stderr
    assert proc.stderr.strip() == "seqgrad: terminated"
    assert _state(out) == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report"]
