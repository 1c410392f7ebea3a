"""Options shared by several subcommands, and the checks of output paths made before any long work."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Iterator


def add_notation(p: argparse.ArgumentParser) -> None:
    """The notation options of every command that prints LaTeX (``seqgrad latex``, ``seqgrad derive ... --latex``),
    read by :func:`notation_from`: ``--symbol NAME=LATEX`` (repeatable), ``--plain``, ``--decimal-comma``."""
    p.add_argument("--decimal-comma", action="store_true", help="write numbers with a decimal comma (Russian-language notes)")
    p.add_argument("--plain", action="store_true", help="set vectors and matrices in plain, not bold, type")
    p.add_argument("--symbol", action="append", default=[], metavar="NAME=LATEX",
                   help="print the symbol NAME as LATEX (repeatable; plain text prints it as typed), e.g. --symbol 'w_h=W_{hh}'; a bare letter renames every symbol with that base letter, keeping its indices, e.g. --symbol 'g=\\delta'; the step and the length are the letters t and T: --symbol t=k --symbol T=N")


def notation_from(args):
    """The notation of the command line: ``--symbol NAME=LATEX`` renames the symbol NAME (``w_h``) or,
    for a bare letter (``g``), every symbol with that base letter, keeping its indices; the LaTeX must be
    well formed (balanced braces, no ``$``), and a name that no formula of the document prints is refused."""
    from seqgrad.derive.latex_settings import TEXTBOOK_LETTERS, Notation, check_math
    from seqgrad.errors import SeqgradValueError

    names, letters = {}, dict(TEXTBOOK_LETTERS)
    for item in args.symbol:
        name, sep, tex = item.partition("=")
        name, tex = name.strip(), tex.strip()
        if not sep or not name or not tex:
            raise SeqgradValueError("--symbol", item, "NAME=LATEX, e.g. 'w_h=W_{hh}'")
        check_math("--symbol", tex)
        (letters if name.isalpha() else names)[name] = tex
    return Notation(symbol_names=names, letters=letters, bold=not args.plain, decimal_comma=args.decimal_comma)


def add_device(parser: argparse.ArgumentParser, default: str = "cpu") -> None:
    parser.add_argument("--device", choices=("cpu", "cuda", "auto"), default=default,
                        help=f"where numeric work runs (default {default}; auto picks cuda when present)")


def resolved_device(name: str) -> str:
    if name == "cpu":  # no torch import for that: it costs seconds, and a command may not need torch at all
        return "cpu"
    from seqgrad.numeric.device import resolve_device

    return resolve_device(name).type


def jobs_option(requested: int | None, device: str) -> int:
    """``--jobs``: worker processes, >= 1; None gives one per usable CPU core (1 on CUDA).  More than the
    usable cores is capped at them, with a note on standard error (more processes than cores only cost
    memory and switching, and ``--jobs 100000`` would fork a hundred thousand)."""
    from ..parallel import usable_cores
    from ..registry import default_jobs

    if requested is None:
        return default_jobs(device)
    if requested < 1:
        _refuse("--jobs", str(requested), "a number of worker processes >= 1")
    cores = usable_cores()
    if requested > cores:
        print(f"seqgrad: note: --jobs {requested} is more than the {cores} usable CPU core{'s' * (cores > 1)}; "
              f"using {cores}", file=sys.stderr)
        return cores
    return requested


def output_dir(argument: str, path: str) -> Path:
    """Create the output directory ``path`` now and prove it writable, so that a bad ``--out`` fails
    in a second with one line instead of after the whole run."""
    if not path:
        _refuse(argument, path, "a directory path (it is empty; use . for the current directory)")
    target = Path(path)
    if target.exists() and not target.is_dir():
        _refuse(argument, path, "a directory (this path is a file)")
    _probe(argument, path, target)
    return target


@contextlib.contextmanager
def removed_if_failed(path: str) -> Iterator[None]:
    """The directories of ``path`` that do not exist yet (the body creates them, e.g. :func:`output_dir`)
    are removed again if the body fails and they are still empty: a failed run leaves no empty folder."""
    target = Path(os.path.abspath(path)) if path else None
    missing = [d for d in ([target, *target.parents] if target else []) if not d.exists()]  # deepest first
    try:
        yield
    except BaseException:
        for directory in missing:
            try:
                directory.rmdir()
            except OSError:  # not empty (or never created): leave it and everything above it
                break
        raise


#: what ``seqgrad check`` writes into its output directory (and so may replace there)
REPORT_ENTRIES = frozenset({"report.json", "report.md", "report.tex", "figures"})


def report_dir(argument: str, path: str) -> Path:
    """The directory ``seqgrad check`` replaces as a whole: new, empty, or a previous report.

    The report is written into a fresh directory beside it and swapped into place in one
    step, so the directory must hold nothing else (a user's own files would be swapped out
    with the old report), must not be the working directory or one above it, and its parent
    must be writable."""
    if not path:
        _refuse(argument, path, "a directory path (it is empty)")
    target = Path(os.path.realpath(path))
    if target.exists() and not target.is_dir():
        _refuse(argument, path, "a directory (this path is a file)")
    cwd = Path.cwd().resolve()
    if target == cwd or target in cwd.parents or target.parent == target:
        _refuse(argument, path, "a directory below the working directory or elsewhere, not the working "
                                "directory or one above it (the report directory is replaced as a whole)")
    if target.is_dir():
        foreign = sorted(p.name for p in target.iterdir() if p.name not in REPORT_ENTRIES)
        if foreign:
            shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
            _refuse(argument, path, "a new or empty directory, or one holding a previous report only "
                                    f"(this one also holds {shown}; the report directory is replaced as a whole)")
    _probe(argument, path, target.parent)
    return target


def output_file(argument: str, path: str) -> Path:
    """Check that the file ``path`` can be written (its directory is created if missing).

    A symbolic link is written through (its target is replaced); a directory (also a new one
    written with a trailing ``/``), FIFO, device or socket is refused."""
    from seqgrad.atomic import output_target

    target = output_target(path, argument)
    _probe(argument, path, target.parent)
    return target


def _probe(argument: str, path: str, directory: Path) -> None:
    """Whether ``directory`` takes a file: a probe file made and removed with SIGINT and SIGTERM held, so that a
    signal in between cannot leave it behind (it is answered once the probe is gone)."""
    from seqgrad import signals

    try:
        directory.mkdir(parents=True, exist_ok=True)
        with signals.held():
            fd, probe = tempfile.mkstemp(prefix=".seqgrad-probe-", dir=directory)
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        _refuse(argument, path, f"a path in a directory seqgrad can write ({exc.strerror or exc})")


def _refuse(argument: str, path: str, allowed: str):
    from seqgrad.errors import SeqgradValueError

    raise SeqgradValueError(argument, path, allowed)
