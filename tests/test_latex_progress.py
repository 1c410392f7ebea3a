"""``seqgrad latex`` shows its progress per section (tqdm, on standard error) on a terminal, and only there."""

from __future__ import annotations

import os
import struct
import subprocess
import sys

import pytest

from seqgrad.crosscheck import parallel

pty = pytest.importorskip("pty")
fcntl = pytest.importorskip("fcntl")
termios = pytest.importorskip("termios")

#: two sections and the figure set one of them draws from: three tasks of the parallel build
COMMAND = ["latex", "--sections", "positional,attention", "--no-appendix", "--jobs", "2"]
LABEL = "notes sections and figures"


def _run(out, stderr_to_terminal: bool) -> tuple[int, str, str]:
    """Run the command; its standard error on a pseudo-terminal or a pipe: (exit status, stdout, stderr)."""
    env = {**os.environ, "MPLBACKEND": "Agg"}
    argv = [sys.executable, "-m", "seqgrad", COMMAND[0], str(out), *COMMAND[1:]]
    if not stderr_to_terminal:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=300)
        return proc.returncode, proc.stdout, proc.stderr
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a terminal 100 columns wide
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:  # read the terminal until the command has closed it (EIO on Linux once every writer is gone)
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    stdout = proc.stdout.read().decode()
    proc.stdout.close()
    return proc.wait(timeout=300), stdout, b"".join(chunks).decode(errors="replace")


@pytest.mark.skipif(not parallel.can_fork(), reason="the parallel build needs fork (Linux)")
def test_a_bar_per_section_on_a_terminal_and_none_in_a_pipe(tmp_path):
    rc, stdout, terminal = _run(tmp_path / "tty" / "notes.tex", stderr_to_terminal=True)
    assert rc == 0, terminal
    assert LABEL in terminal and "3/3" in terminal  # advanced to the end: each section and the figure set counted
    assert stdout.strip().endswith("notes.tex")  # the path on stdout, the bar on stderr only

    rc, stdout, piped = _run(tmp_path / "pipe" / "notes.tex", stderr_to_terminal=False)
    assert rc == 0, piped
    assert LABEL not in piped and "|" not in piped  # a log or a pipe stays clean
