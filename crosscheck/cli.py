"""The ``seqgrad`` command line.

Subcommands live one per module in :mod:`crosscheck.commands`; each module
defines ``register(subparsers)`` which adds its parser and sets ``handler``.
Bad input ends with a one-line message on standard error and exit status 2;
set ``SEQGRAD_DEBUG=1`` to see the traceback of an unexpected failure.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
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


def build_parser(only: str | None = None) -> Parser:
    """The whole parser; with ``only``, just that subcommand (a run loads no other command's imports)."""
    from . import commands

    parser = Parser(prog="seqgrad", description="Symbolic-plus-numeric derivations for sequence models, checked against PyTorch.")
    parser.add_argument("--version", action="version", version=f"seqgrad {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_") or (only is not None and info.name != only):
            continue
        importlib.import_module(f"{commands.__name__}.{info.name}").register(sub)
    return parser


def _command(argv: list[str]) -> str | None:
    """The subcommand named first on the command line, when it is one (else None: build everything)."""
    from . import commands

    names = {m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_")}
    return argv[0] if argv and argv[0] in names else None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser(_command(argv))
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
    except OSError as exc:  # a file that cannot be read or written: the system's reason, on one line
        print(f"seqgrad: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("seqgrad: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # an internal failure: still one line unless debugging
        if os.environ.get("SEQGRAD_DEBUG"):
            raise
        print(f"seqgrad: internal error: {type(exc).__name__}: {exc} (set SEQGRAD_DEBUG=1 for the traceback)", file=sys.stderr)
        return EXIT_FAIL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
