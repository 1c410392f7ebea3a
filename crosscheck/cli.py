"""The ``seqgrad`` command line.

Subcommands live one per module in :mod:`crosscheck.commands`; each module
defines ``register(subparsers)`` which adds its parser and sets ``handler``.
Bad input ends with a one-line message on standard error and exit status 2;
set ``SEQGRAD_DEBUG=1`` to see the traceback of an unexpected failure.

The streams are handled as standard tools do: a reader that goes away (``seqgrad
identities --list | head -1``) ends the command quietly with exit 0; a closed
standard output or error (``>&-``) is treated as ``/dev/null``; a terminal or
file whose encoding cannot show a symbol gets an ASCII spelling of it
(``+/-`` for ``±``).  SIGTERM interrupts like SIGINT, so that outputs in the
middle of being written are left whole (exit 143).
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import importlib
import os
import pkgutil
import signal
import sys

from seqgrad import __version__
from seqgrad.errors import SeqgradError

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Raised instead of argparse's multi-line usage dump."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (no usage block)."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def build_parser() -> Parser:
    from . import commands

    parser = Parser(prog="seqgrad", description="Symbolic-plus-numeric derivations for sequence models, checked against PyTorch.")
    parser.add_argument("--version", action="version", version=f"seqgrad {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        importlib.import_module(f"{commands.__name__}.{info.name}").register(sub)
    return parser


#: ASCII spellings of the symbols seqgrad prints, for output encodings that lack them
ASCII_SYMBOLS = {"±": "+/-", "−": "-", "×": "x", "·": "*", "≤": "<=", "≥": ">=", "≠": "!=", "≈": "~=",
                 "→": "->", "←": "<-", "∞": "inf", "—": "--", "–": "-", "…": "...", "√": "sqrt", "∘": "o",
                 "∑": "sum", "Σ": "Sum", "∂": "d", "‖": "||", "“": '"', "”": '"', "‘": "'", "’": "'"}


def _ascii_symbols(exc: UnicodeEncodeError):
    """Codec error handler: a known symbol in its ASCII spelling, anything else as ``\\uXXXX``."""
    text = exc.object[exc.start:exc.end]
    return "".join(ASCII_SYMBOLS.get(ch) or ch.encode("ascii", "backslashreplace").decode("ascii") for ch in text), exc.end


codecs.register_error("seqgrad-ascii", _ascii_symbols)


class Terminated(BaseException):
    """SIGTERM, raised like KeyboardInterrupt so that ``finally`` blocks clean up."""


def _on_sigterm(signum, frame):
    raise Terminated


@contextlib.contextmanager
def _standard_streams():
    """Closed streams read as /dev/null; streams that cannot encode a symbol spell it in ASCII;
    SIGTERM raises :class:`Terminated` while the command runs (the previous handler comes back)."""
    saved = sys.stdout, sys.stderr
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if _closed(stream):
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115 - closed below
        elif getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            with contextlib.suppress(Exception):
                stream.reconfigure(errors="seqgrad-ascii")
    previous = None
    if threading_main():
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        for name, stream in zip(("stdout", "stderr"), saved):
            current = getattr(sys, name)
            if current is not stream:
                with contextlib.suppress(Exception):
                    current.close()
                setattr(sys, name, stream)


def _closed(stream) -> bool:
    """True for a stream that cannot be written: None (``>&-``), closed, or on a closed descriptor."""
    if stream is None or getattr(stream, "closed", False):
        return True
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return False  # a stream without a descriptor (pytest's capture, StringIO): usable as it is
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False


def threading_main() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _silence_stdout() -> None:
    """After EPIPE: point the descriptor at /dev/null so that the final flush at exit is silent."""
    with contextlib.suppress(Exception):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    with _standard_streams():
        try:
            code = _main(argv)
            sys.stdout.flush()
            return code
        except BrokenPipeError:  # the reader went away (| head): the output was not wanted further
            _silence_stdout()
            return EXIT_OK


def _main(argv: list[str]) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "handler", None):
            parser.print_help()
            return EXIT_USAGE
        return int(args.handler(args) or 0)
    except UsageError as exc:
        print(f"{exc} (see seqgrad --help)", file=sys.stderr)
        return EXIT_USAGE
    except SeqgradError as exc:
        print(f"seqgrad: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        raise
    except OSError as exc:  # a file that cannot be read or written: the system's reason, on one line
        print(f"seqgrad: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("seqgrad: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print("seqgrad: terminated", file=sys.stderr)
        return 143
    except Exception as exc:  # an internal failure: still one line unless debugging
        if os.environ.get("SEQGRAD_DEBUG"):
            raise
        print(f"seqgrad: internal error: {type(exc).__name__}: {exc} (set SEQGRAD_DEBUG=1 for the traceback)", file=sys.stderr)
        return EXIT_FAIL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
