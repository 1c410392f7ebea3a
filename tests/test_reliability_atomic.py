"""Output files are written atomically: an interrupted write leaves no half-written file and the old output whole."""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from seqgrad import atomic
from seqgrad.errors import SeqgradValueError

ROOT = Path(__file__).resolve().parent.parent


class Interrupted(Exception):
    pass


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_interrupted_write_keeps_the_old_file_whole(tmp_path):
    target = tmp_path / "report.json"
    target.write_text('{"old": true}\n')
    with pytest.raises(Interrupted):
        with atomic.atomic_open(target) as handle:
            handle.write('{"new": ')  # half of the new content is on disk in the temporary file ...
            handle.flush()
            raise Interrupted  # ... when the run is interrupted
    assert target.read_text() == '{"old": true}\n'
    assert _leftovers(tmp_path) == []


def test_interrupted_first_write_leaves_no_file(tmp_path):
    target = tmp_path / "sub" / "report.md"
    with pytest.raises(KeyboardInterrupt):
        with atomic.atomic_open(target) as handle:
            handle.write("# half")
            raise KeyboardInterrupt
    assert not target.exists()
    assert _leftovers(target.parent) == []


def test_failed_figure_save_leaves_no_file(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    target = tmp_path / "fig.png"
    atomic.save_figure(fig, target)
    before = target.read_bytes()

    class Boom:
        def __init__(self, fig):
            self.fig = fig

        def savefig(self, handle, **kwargs):
            handle.write(b"\x89PNG half")
            raise Interrupted

    with pytest.raises(Interrupted):
        atomic.save_figure(Boom(fig), target)
    plt.close(fig)
    assert target.read_bytes() == before
    assert _leftovers(tmp_path) == []


def test_report_write_interrupted_keeps_previous_report(tmp_path, monkeypatch):
    from seqgrad.crosscheck import report

    old = {"report.json": "{}\n", "report.md": "# old\n", "report.tex": "% old\n"}
    for name, text in old.items():
        (tmp_path / name).write_text(text)

    def broken(*args, **kwargs):
        raise Interrupted

    monkeypatch.setattr(report, "as_json", broken)
    with pytest.raises(Interrupted):
        report.write(tmp_path, [], device="cpu", dtype="float64", total_seconds=0.0, figures=[])
    assert {n: (tmp_path / n).read_text() for n in old} == old
    assert _leftovers(tmp_path) == []


# ---------------------------------------------------------------- a real run, killed


def test_killed_check_leaves_the_old_report_or_a_whole_new_one(tmp_path):
    """Kill ``seqgrad check`` at several moments: report.json is always the old file or a complete new one."""
    out = tmp_path / "out"
    out.mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    old = '{"old": true}\n'
    for delay in (0.5, 1.5, 3.0, 6.0):
        (out / "report.json").write_text(old)
        p = subprocess.Popen([sys.executable, "-m", "seqgrad", "check", "--only", "claims", "--no-figures",
                              "--out", str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=60)
        text = (out / "report.json").read_text()
        if text != old:
            json.loads(text)  # whole: it parses
    # the report is written in a fresh directory beside ``out``; after SIGKILL (nothing runs after
    # it) that hidden directory can survive, but never a temporary file under the output's name
    assert _leftovers(out) == []
    assert all(p.name.startswith(".out.") and p.name.endswith(".new") for p in tmp_path.iterdir() if p != out)


# ---------------------------------------------------------------- no direct writes in the source

WRITERS = {"savefig", "write_text", "write_bytes", "dump"}
#: appends that are not outputs: the profiler's trace, JSON lines that the profiled command and its forked
#: workers append as they run, in the profiler's own temporary directory, read back by the same script
SCRATCH_APPENDS = {("benchmarks/check_profile.py", "open")}


def _direct_writes(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        if name == "open" and node.args and ast.unparse(node.args[0]) == "os.devnull":
            continue  # the null device (a closed standard stream's stand-in) is not an output
        if (path.relative_to(ROOT).as_posix(), name) in SCRATCH_APPENDS:
            continue
        if name == "open":
            mode = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"), None)
            if isinstance(mode, ast.Constant) and isinstance(mode.value, str) and set(mode.value) & set("wax+"):
                yield f"{path.relative_to(ROOT)}:{node.lineno}: open(..., {mode.value!r})"
        elif name in WRITERS and isinstance(f, ast.Attribute):
            owner = f.value
            if isinstance(owner, ast.Name) and owner.id in ("atomic", "sys"):
                continue
            if name == "dump" and node.args and _is_stdout(node.args[1] if len(node.args) > 1 else None):
                continue
            if name == "savefig" and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "handle":
                continue
            if name == "savefig" and node.args and ast.unparse(node.args[0]) == "io.BytesIO()":
                continue  # drawn into memory and thrown away (matplotlib warmed before a fork): not an output
            yield f"{path.relative_to(ROOT)}:{node.lineno}: .{name}(...)"


def _is_stdout(node) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "stdout"


def test_every_output_goes_through_seqgrad_atomic():
    found = []
    for package in ("derive", "numeric", "crosscheck", "seqgrad", "benchmarks"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ROOT / "seqgrad" / "atomic.py":
                continue
            found += list(_direct_writes(path))
    assert not found, "write outputs with seqgrad.atomic (write_text, write_bytes, save_figure):\n" + "\n".join(found)


def test_the_write_scan_finds_direct_writes(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    bad = tmp_path / "bad.py"
    bad.write_text("open(p, 'w').write(t)\nfig.savefig(p)\nPath(p).write_text(t)\nopen(p).read()\n"
                   "open(os.devnull, 'w')\n")
    assert len(list(_direct_writes(bad))) == 3


def test_a_directory_and_its_companion_file_are_replaced_together(tmp_path):
    """The notes and their figures: both new on success; both old on an error, with nothing temporary left."""
    folder, doc = tmp_path / "n-figures", tmp_path / "n.tex"
    folder.mkdir()
    (folder / "old.pdf").write_text("old")
    doc.write_text("old")
    os.chmod(doc, 0o640)
    with pytest.raises(RuntimeError):
        with atomic.atomic_directory(folder, companion=doc) as fresh:
            (fresh / "new.pdf").write_text("new")
            atomic.write_text(fresh / atomic.COMPANION, "new")
            raise RuntimeError("interrupted")
    assert doc.read_text() == "old" and [p.name for p in folder.iterdir()] == ["old.pdf"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n-figures", "n.tex"]
    with atomic.atomic_directory(folder, companion=doc) as fresh:
        (fresh / "new.pdf").write_text("new")
        atomic.write_text(fresh / atomic.COMPANION, "new")
    assert doc.read_text() == "new" and [p.name for p in folder.iterdir()] == ["new.pdf"]
    assert oct(os.stat(doc).st_mode & 0o777) == oct(0o640)  # a replaced file keeps its mode
    with atomic.atomic_directory(folder, companion=doc, keep_empty=False) as fresh:  # no figures: no folder
        atomic.write_text(fresh / atomic.COMPANION, "alone")
    assert doc.read_text() == "alone" and sorted(p.name for p in tmp_path.iterdir()) == ["n.tex"]
    with pytest.raises(SeqgradValueError, match="companion"):
        with atomic.atomic_directory(folder, companion=doc):
            pass  # the companion was not written: nothing is replaced
    assert doc.read_text() == "alone" and sorted(p.name for p in tmp_path.iterdir()) == ["n.tex"]
