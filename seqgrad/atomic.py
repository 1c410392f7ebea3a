"""Atomic output: write beside the target, then rename (a file) or swap (a directory) in one step.

* :func:`atomic_open`, :func:`write_text`, :func:`write_bytes`, :func:`save_figure`:
  one file, written to a temporary file in the same directory and renamed onto
  the target.  An interrupted run leaves no half-written file and no temporary
  file; an existing output is replaced only whole.
* :func:`atomic_directory`: a set of files that belong together (the ``seqgrad
  check`` report and its figures) is written into a fresh directory that is
  then exchanged with the old one in one step, so the output is wholly old or
  wholly new.

Targets (documented in docs/cli.md, "Conventions shared by every command"):

* a new file gets the mode the umask gives (``0666 & ~umask``, 0644 typically);
  a file that is replaced keeps its mode.  Replacing makes a new file: other
  hard links to the old file keep the old content.
* a symbolic link is followed: the file it points to is replaced, the link stays.
* a FIFO, a device, a socket or a directory where a file is expected is refused
  with :class:`~seqgrad.errors.SeqgradValueError` (nothing is replaced).

SIGINT, and SIGTERM under the ``seqgrad`` command (which turns it into an
exception), are held back during the few system calls that create a temporary
file and rename it, and everything temporary is removed on the way out.
:func:`checkpoint` names the moments in between; a test installs a hook there
to send signals at each of them.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
import stat
import tempfile
import threading
from pathlib import Path
from typing import Callable, Iterator, IO

from . import signals
from .errors import SeqgradValueError

_HOOK: Callable[[str], None] | None = None


def set_checkpoint_hook(hook: Callable[[str], None] | None) -> None:
    """Call ``hook(name)`` at every :func:`checkpoint` (tests use it to interrupt a write there)."""
    global _HOOK
    _HOOK = hook


def checkpoint(name: str) -> None:
    """A named moment of an output write (no effect unless a hook is installed)."""
    if _HOOK is not None:
        _HOOK(name)


# ----------------------------------------------------------------------------- signals and modes

#: SIGINT and SIGTERM held back over a few system calls (seqgrad.signals.held)
signals_held = signals.held


_UMASK_LOCK = threading.Lock()


def umask() -> int:
    """The process umask, read without changing it where the system allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _UMASK_LOCK:  # pragma: no cover - systems without /proc
        mask = os.umask(0o022)
        os.umask(mask)
        return mask


def _mode_for(target: Path, default: int) -> int:
    """The mode the file or directory ``target`` should get: its own if it exists, else the umask's."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        return default & ~umask()


# ----------------------------------------------------------------------------- targets

def output_target(path: str | os.PathLike, argument: str = "path") -> Path:
    """The regular file an output named ``path`` is written to.

    Symbolic links are followed to their target; an empty path, a path that names a
    directory (an existing one, or one written with a trailing ``/``), a FIFO, a device
    or a socket is refused with a :class:`~seqgrad.errors.SeqgradValueError` naming ``argument``.
    """
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not text:
        raise SeqgradValueError(argument, text, "a file path (it is empty)")
    if text.endswith(("/", os.sep)) or Path(text).name in ("", ".", ".."):
        raise SeqgradValueError(argument, text, "a file path (this names a directory)")
    target = Path(os.path.realpath(text))
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return target
    except OSError as exc:
        raise SeqgradValueError(argument, text, f"a path seqgrad can reach ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise SeqgradValueError(argument, text, "a file path (this is a directory)")
    if not stat.S_ISREG(st.st_mode):
        raise SeqgradValueError(argument, text, f"a regular file or a new path (this is a {_kind(st.st_mode)}, "
                                                "which seqgrad does not replace)")
    return target


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "FIFO"), (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISDIR, "directory")):
        if test(mode):
            return name
    return "special file"  # pragma: no cover


# ----------------------------------------------------------------------------- one file

@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temporary file for writing; rename it onto ``path`` (through a symlink) on success only."""
    if mode not in ("w", "wb"):
        raise SeqgradValueError("mode", mode, "'w' or 'wb'")
    target = output_target(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = None
    try:
        with signals_held():
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        with _naming(target), os.fdopen(fd, mode, encoding=None if "b" in mode else encoding) as handle:
            checkpoint("file:open")
            os.chmod(handle.fileno(), _mode_for(target, 0o666))  # mkstemp makes 0600
            yield handle
            checkpoint("file:written")
            handle.flush()
            os.fsync(handle.fileno())
        checkpoint("file:closed")
        with signals_held():
            signals.raise_if_received()  # a signal Python dropped on the way: the old file stays
            os.replace(tmp, target)
            tmp = None
        checkpoint("file:replaced")
    finally:
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


@contextlib.contextmanager
def _naming(target: Path) -> Iterator[None]:
    """An OS error while the file is written (a full disk: "No space left on device") names the file."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None or isinstance(exc, BrokenPipeError) or exc.errno is None:
            raise
        raise type(exc)(exc.errno, exc.strerror or str(exc), os.fspath(target)) from exc


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` atomically and return the path."""
    with atomic_open(path, "w") as handle:
        handle.write(text)
    return Path(path)


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically and return the path."""
    with atomic_open(path, "wb") as handle:
        handle.write(data)
    return Path(path)


#: The PDF keyword a saved figure records its smallest font size in (points): a document that includes it at a
#: scale can tell how small its smallest label is set (:func:`smallest_font`).
FONT_KEYWORD = "seqgrad-smallest-font-pt="


def smallest_font(fig) -> float:
    """The smallest font size, in points, of the text in a matplotlib figure: every text with words in it, and the
    tick labels of every visible axis (read from the ticks, without drawing the figure: their texts are filled in
    only when it is drawn)."""
    from matplotlib.ticker import NullFormatter

    sizes = [t.get_fontsize() for t in fig.findobj(lambda a: hasattr(a, "get_fontsize") and hasattr(a, "get_text"))
             if t.get_visible() and t.get_text().strip()]
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        for axis in (ax.xaxis, ax.yaxis):
            if not axis.get_visible():
                continue
            for ticks, formatter in ((axis.get_major_ticks(), axis.get_major_formatter()),
                                     (axis.get_minor_ticks(), axis.get_minor_formatter())):
                if ticks and not isinstance(formatter, NullFormatter):
                    sizes += [label.get_fontsize() for label in (ticks[0].label1, ticks[0].label2) if label.get_visible()]
    return float(min(sizes)) if sizes else float("inf")


def save_figure(fig, path: str | os.PathLike, **kwargs) -> Path:
    """Save a matplotlib figure atomically; the format comes from the suffix.  A PDF records its smallest font
    size in its keywords (:data:`FONT_KEYWORD`).  Math text is parsed once per process, not once per renderer
    (:func:`seqgrad.mathtext_cache.share`: the same file, in half the time for a figure with log axes)."""
    from seqgrad import mathtext_cache

    mathtext_cache.share()
    target = Path(path)
    fmt = kwargs.pop("format", target.suffix.lstrip(".") or "png")
    if fmt == "pdf":
        kwargs["metadata"] = {**kwargs.get("metadata", {}), "Keywords": f"{FONT_KEYWORD}{smallest_font(fig):.2f}"}
    with atomic_open(target, "wb") as handle:
        fig.savefig(handle, format=fmt, **kwargs)
    return target


# ----------------------------------------------------------------------------- a directory as one unit

AT_FDCWD = -100
RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Swap the directories ``a`` and ``b`` in one system call (Linux renameat2); False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):  # pragma: no cover - not glibc >= 2.28
        return False
    renameat2.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    if renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):  # pragma: no cover - file system without exchange
        return False
    raise OSError(err, os.strerror(err), str(b))


def _swap_into_place(staging: Path, target: Path) -> None:
    """Put ``staging`` at ``target``; the old ``target`` (if any) ends up at ``staging``'s name."""
    if not target.exists():
        os.rename(staging, target)
        return
    if _exchange(staging, target):
        return
    # without an exchange call: two renames, with the signals held in between
    aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))  # pragma: no cover
    os.rmdir(aside)  # pragma: no cover
    os.rename(target, aside)  # pragma: no cover
    os.rename(staging, target)  # pragma: no cover
    os.rename(aside, staging)  # pragma: no cover


#: The name, inside the fresh directory of :func:`atomic_directory`, of the file that goes beside it (``companion``).
COMPANION = ".companion"


def _named_at(exc: OSError, staging: Path, target: Path, companion) -> OSError:
    """``exc`` naming the place its file was going to (``notes-figures/x.pdf``, or the companion document),
    not the hidden fresh directory it was written in."""
    name = getattr(exc, "filename", None)
    if not isinstance(name, str):
        return exc
    try:
        rel = Path(os.path.realpath(name)).relative_to(os.path.realpath(staging))
    except ValueError:
        return exc
    where = Path(companion) if companion is not None and rel == Path(COMPANION) else target / rel
    return type(exc)(exc.errno, exc.strerror, str(where)) if exc.errno is not None else exc


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike, *, companion: str | os.PathLike | None = None,
                     keep_empty: bool = True) -> Iterator[Path]:
    """Yield a fresh directory beside ``path``; on success it replaces ``path`` in one step.

    On any exception (KeyboardInterrupt, the ``seqgrad`` command's SIGTERM, an error)
    the fresh directory is removed and ``path`` is left as it was.  Whatever ``path``
    held before is replaced as a whole: the caller decides what may be replaced.

    ``companion``: a file beside ``path`` that belongs with it (a document and the folder of its figures).  The
    caller writes it into the fresh directory as :data:`COMPANION`; it is renamed onto ``companion`` with the
    signals held together with the swap, so the two are both old or both new.  ``keep_empty=False``: a directory
    left empty (nothing but the companion was written) is removed instead of replacing ``path``'s old content.
    """
    if companion is not None:
        companion = output_target(companion, "companion")
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = None
    try:
        with signals_held():
            staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".new", dir=target.parent))
        checkpoint("dir:staging")
        os.chmod(staging, _mode_for(target, 0o777))  # mkdtemp makes 0700
        try:
            yield staging
        except OSError as exc:  # a file of the fresh directory that could not be written: named where it was going
            raise _named_at(exc, staging, target, companion) from None
        checkpoint("dir:written")
        if companion is not None and not (staging / COMPANION).is_file():
            raise SeqgradValueError("companion", str(companion), f"a file written into the fresh directory as {COMPANION}")
        with signals_held():
            signals.raise_if_received()  # a signal Python dropped on the way (an at-fork hook): the old output stays
            _swap_into_place(staging, target)
            if companion is not None:
                os.chmod(target / COMPANION, _mode_for(companion, 0o666))  # a replaced file keeps its mode
                os.replace(target / COMPANION, companion)
            if not keep_empty and not any(target.iterdir()):
                target.rmdir()
            shutil.rmtree(staging, ignore_errors=True)  # the old output now
            staging = None
        checkpoint("dir:swapped")
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
