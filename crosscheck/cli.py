"""The ``seqgrad`` command line.

Subcommands live one per module in :mod:`crosscheck.commands`; each module
defines ``register(subparsers)`` which adds its parser and sets ``handler``.
Bad input ends with a one-line message on standard error and exit status 2;
set ``SEQGRAD_DEBUG=1`` to see the traceback of an unexpected failure.

The streams are handled as standard tools do: a reader that goes away (``seqgrad
identities --list | head -1``) ends the command quietly with exit 0; a closed
standard output or error (``>&-``) is treated as ``/dev/null``; a terminal or
file whose encoding cannot show a symbol gets an ASCII spelling of it
(``+/-`` for ``±``).

Signals follow one policy (:mod:`seqgrad.signals`), installed by :func:`console` (the
``seqgrad`` program) before anything else and kept to the end of the process: SIGINT and
SIGTERM at any moment end the command with one line and exit 130 or 143, outputs are left
wholly old or wholly new, and no worker outlives the command.  :func:`main`, the same command
as a function, installs the policy for its call and restores what it found.
"""

from __future__ import annotations

import argparse
import atexit
import codecs
import contextlib
import importlib
import json
import os
import pkgutil
import signal
import sys

from seqgrad import __version__, signals
from seqgrad.errors import ParseError, SeqgradError, SeqgradTypeError, SeqgradValueError

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


#: ASCII spellings of the symbols seqgrad prints, for output encodings that lack them
ASCII_SYMBOLS = {"±": "+/-", "−": "-", "×": "x", "·": "*", "≤": "<=", "≥": ">=", "≠": "!=", "≈": "~=",
                 "→": "->", "←": "<-", "∞": "inf", "—": "--", "–": "-", "…": "...", "√": "sqrt", "∘": "o",
                 "∑": "sum", "Σ": "Sum", "∂": "d", "‖": "||", "“": '"', "”": '"', "‘": "'", "’": "'"}


def _ascii_symbols(exc: UnicodeEncodeError):
    """Codec error handler: a known symbol in its ASCII spelling, anything else as ``\\uXXXX``."""
    text = exc.object[exc.start:exc.end]
    return "".join(ASCII_SYMBOLS.get(ch) or ch.encode("ascii", "backslashreplace").decode("ascii") for ch in text), exc.end


codecs.register_error("seqgrad-ascii", _ascii_symbols)


Terminated = signals.Terminated  # SIGTERM, raised like KeyboardInterrupt (seqgrad.signals)


@contextlib.contextmanager
def _standard_streams():
    """Closed streams read as /dev/null; streams that cannot encode a symbol spell it in ASCII."""
    saved = sys.stdout, sys.stderr
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if _closed(stream):
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115 - closed below
        elif getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            with contextlib.suppress(Exception):
                stream.reconfigure(errors="seqgrad-ascii")
    try:
        yield
    finally:
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


def _silence_stdout() -> None:
    """After EPIPE: point the descriptor at /dev/null so that the final flush at exit is silent."""
    with contextlib.suppress(Exception):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def main(argv: list[str] | None = None) -> int:
    """The ``seqgrad`` command as a function: its exit status.  The signal policy holds for the call
    and what the process had before comes back after it."""
    state = signals.install()
    try:
        return _run(sys.argv[1:] if argv is None else list(argv))
    finally:
        signals.restore(state)


def console(argv: list[str] | None = None):
    """The ``seqgrad`` program: :func:`main` under the signal policy, installed first and kept to the
    very end of the process.  Once the command has finished, both signals are held back; one that
    arrived by the time the process exits (while the interpreter shuts down) is still answered with
    its line and exit 130 or 143, instead of a raw death by the signal or "Exception ignored"."""
    signals.install()
    atexit.register(_answer_late_signal)  # registered first, so it runs after every other exit function
    try:
        code = _run(sys.argv[1:] if argv is None else list(argv))
    except (KeyboardInterrupt, Terminated) as exc:  # in the few steps between the command's end and the hold
        code = _interrupted(exc)
    signals.hold_to_the_end()
    global _answered
    _answered = code in signals.EXIT_STATUS.values() and signals.received() is not None
    sys.exit(code)


_answered = True  # until console() has run the command: nothing to answer at exit


def _answer_late_signal() -> None:
    """At exit: a signal the finished command did not answer (it came late, or Python dropped its
    exception) ends the process with its one line and status."""
    if _answered:
        return
    signum = signals.received() or signals.pending()
    if signum is None:
        return
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    os._exit(_interrupted(signals.exception_for(signum)))


def _run(argv: list[str]) -> int:
    try:
        with _standard_streams():
            try:
                code = _main(argv)
                sys.stdout.flush()
                return code
            except BrokenPipeError:  # the reader went away (| head): the output was not wanted further
                _silence_stdout()
                return EXIT_OK
    except (KeyboardInterrupt, Terminated) as exc:  # a signal while the output was flushed or the streams put back
        return _interrupted(exc)


def _interrupted(exc: BaseException) -> int:
    """The command's one line for a signal, and its exit status (130 for SIGINT, 143 for SIGTERM)."""
    signum = signal.SIGINT if isinstance(exc, KeyboardInterrupt) else signal.SIGTERM
    with contextlib.suppress(Exception):
        print(f"seqgrad: {signals.WORD[signum]}", file=sys.stderr, flush=True)
    return signals.EXIT_STATUS[signum]


def _main(argv: list[str]) -> int:
    args = None
    try:
        parser = build_parser(_command(argv))
        args = parser.parse_args(argv)
        if not getattr(args, "handler", None):
            parser.print_help()
            return EXIT_USAGE
        return int(args.handler(args) or 0)
    except BrokenPipeError:
        raise
    except (KeyboardInterrupt, Terminated) as exc:
        return _interrupted(exc)
    except Exception as exc:
        if signals.received() is not None:  # a library turned the signal's exception into an error of its own
            return _interrupted(signals.exception_for(signals.received()))  # (numpy's import: an ImportError)
        exc = _in_the_options_words(exc, parser, args, argv)
        if isinstance(exc, (UsageError, SeqgradError)) and _wants_json(argv):  # --json always prints an object
            print(json.dumps(_refusal(exc, argv, args), sort_keys=True))
        return _failed(exc)


def _in_the_options_words(exc: Exception, parser: Parser, args, argv: list[str] = ()) -> Exception:
    """A library's refusal of a keyword argument that came from an option (``points=0`` from ``--points 0``)
    names the option the user typed: ``--points=0 is not allowed: ...``.  It came from the option when the
    refused value is the option's (NaN is its own), or when the user gave that option (the library may show
    the value as it read it: ``--at "x=0"`` refused as ``x = 0``)."""
    argument = getattr(exc, "argument", None)
    if args is None or not isinstance(exc, (SeqgradValueError, SeqgradTypeError)) or not isinstance(argument, str):
        return exc
    option = _options(parser, args.command).get(argument)
    if option is None:
        return exc
    typed = getattr(args, argument, object())
    same = typed is exc.value or typed == exc.value or (typed != typed and exc.value != exc.value)
    given = any(a == option or a.startswith(option + "=") for a in argv)
    if not (same or given):
        return exc  # the library's own argument of that name, not the option's
    message = str(exc)
    if not message.startswith(f"{argument}="):
        return exc
    renamed = type(exc).__new__(type(exc))  # the same kind of error (a size guard stays one), in the option's words
    renamed.__dict__.update(vars(exc), argument=option)
    renamed.args = (option + message[len(argument):],)
    return renamed


def _options(parser: Parser, command: str | None) -> dict[str, str]:
    """The options of ``command``'s parser: destination name -> the option's long spelling."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return {a.dest: max(a.option_strings, key=len) for a in action.choices[command]._actions if a.option_strings}
    return {}


#: the commands whose --json promises one object on standard output, whatever happens
JSON_COMMANDS = ("claim", "verify")


def _wants_json(argv: list[str]) -> bool:
    return bool(argv) and argv[0] in JSON_COMMANDS and "--json" in argv


def _refusal(exc: Exception, argv: list[str], args) -> dict:
    """The one JSON object of a ``--json`` command that was refused: an unreadable statement is
    ``unparsable``, anything else (a missing argument, an option's value) ``usage-error``."""
    verdict = "unparsable" if isinstance(exc, ParseError) else "usage-error"
    refusal = {"verdict": verdict, "reason": str(exc)}
    if args is not None and argv[0] == "claim":
        refusal["claim"] = args.claim
    return refusal


def _failed(exc: Exception) -> int:
    """The one line for an error, and its exit status: 2 for bad input or a file, 1 for an internal failure."""
    if isinstance(exc, UsageError):
        print(f"{exc} (see seqgrad --help)", file=sys.stderr)
        return EXIT_USAGE
    if isinstance(exc, (SeqgradError, OSError)):  # OSError: a file that cannot be read or written, and why
        print(f"seqgrad: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if os.environ.get("SEQGRAD_DEBUG"):  # an internal failure: still one line unless debugging
        raise exc
    print(f"seqgrad: internal error: {type(exc).__name__}: {exc} (set SEQGRAD_DEBUG=1 for the traceback)", file=sys.stderr)
    return EXIT_FAIL


if __name__ == "__main__":  # pragma: no cover
    console()
