"""What every cell model of ``seqgrad derive`` shares (equations, built-in cells, a PyTorch module):
the loss options, the size guard of ``--steps``, printing a cell's derivation, and whether a ``--check``
of the run found a mismatch (the command then exits 1)."""

from __future__ import annotations

from typing import Callable

#: the longest recurrence the command prints, per output form (the library has no such limit).  Chosen
#: so that the largest allowed printout takes < 10 s and < 1 GB on a quiet machine (measured ratios:
#: at the same T, --latex costs about 2x and --table 1.5x the plain text; docs/limits.md)
MAX_STEPS = {"text": 10_000, "dot": 10_000, "table": 5_000, "latex": 5_000}


def steps(args) -> int:
    """``--steps`` within the size guard of the chosen output form (see :data:`MAX_STEPS`)."""
    from seqgrad import validate

    form = next((f for f in ("latex", "table", "dot") if getattr(args, f, False)), "text")
    return validate.integer("--steps", args.steps, minimum=1, maximum=MAX_STEPS[form])


def usage(argument: str, value, allowed: str):
    from seqgrad.errors import SeqgradValueError

    return SeqgradValueError(argument, value, allowed)


def loss_and_positions(args) -> tuple[str, object]:
    loss = {"cross-entropy": "cross_entropy"}.get(args.loss, "squared")
    on = args.on if args.on is not None else (args.loss if args.loss in ("final", "every") else "final")
    if on not in ("final", "every"):
        from seqgrad.derive.safe_parse import parse_number

        try:
            on = tuple(int(parse_number(p.strip(), "--on")) for p in on.split(","))
        except Exception:
            raise usage("--on", args.on, "final, every, or positions such as 0,3,5") from None
    return loss, on


def latex_notation(args):
    """The notation of ``--symbol``/``--plain``/``--decimal-comma`` (:func:`._common.notation_from`): with
    ``--latex`` all three; in plain text ``--symbol`` renames too (``--plain`` and ``--decimal-comma`` are LaTeX's
    and refused without ``--latex``, as are all three with ``--table`` or ``--dot``).  None without options."""
    from ._common import notation_from

    given = [o for o, v in (("--symbol", args.symbol), ("--plain", args.plain), ("--decimal-comma", args.decimal_comma)) if v]
    if args.latex:
        return notation_from(args)
    other = next((f"--{f}" for f in ("table", "dot") if getattr(args, f, False)), None)
    refused = given if other else [o for o in given if o != "--symbol"]
    if refused:
        allowed = f"--latex or plain text, not with {other}" if other and refused[0] == "--symbol" else "--latex too (LaTeX's setting)"
        raise usage(refused[0], getattr(args, refused[0][2:].replace("-", "_")), allowed)
    return notation_from(args) if given else None


def printed_text(print_with, args) -> str:
    """``print_with(notation)`` in plain text under ``--symbol``'s renames; a rename that reaches nothing printed
    is refused in one line, as with ``--latex``."""
    return printed_latex(print_with, args)


def printed_latex(print_with, args) -> str:
    """``print_with(notation)`` under the command line's notation; a ``--symbol`` that renames nothing it printed
    is refused (one line naming it), as ``seqgrad latex`` refuses it."""
    notation = latex_notation(args)
    text = print_with(notation)
    unused = notation.unused_renames() if notation is not None else []
    if unused:
        raise usage("--symbol", ", ".join(unused), "the name (or base letter) of a symbol this derivation prints")
    clash = notation.rename_collisions() if notation is not None else []
    if clash:
        out, names = clash[0]
        raise usage("--symbol", ", ".join(args.symbol), f"a new name that no other symbol of this derivation prints as "
                    f"({' and '.join(names)} would both print as {out})")
    return text


def run_cell_object(cell, args, check_text: Callable | None = None) -> str:
    """A cell's derivation (general t, or unrolled for --steps) and, with --check, ``check_text(cell)``."""
    from seqgrad.derive.latex_settings import Partial

    parts = []
    latex_notation(args)  # the notation options are checked before any work
    if args.steps is not None:
        net = cell.unroll(steps(args))
        parts.append(printed_latex(lambda n: net.latex(notation=n), args) if args.latex else printed_text(
            lambda n: net.program.text(n) + "\n\n" + "\n".join(
                f"{_sstr(Partial(symbol), n)} = {_sstr(net.grad(name), n)}" for name, symbol in net.parameters.items()), args))
    else:
        gen = cell.general()
        parts.append(printed_latex(gen.latex, args) if args.latex else printed_text(gen.text, args))
    if args.check and check_text is not None:
        parts.append(check_text(cell))
    return "\n\n".join(parts)


def _sstr(expr, notation=None) -> str:
    from seqgrad.derive.program_text import sstr

    return sstr(expr, notation)


class _Checks:
    """Whether a ``--check`` of this run found a mismatch."""

    def __init__(self):
        self.failed = False

    def reset(self) -> None:
        self.failed = False

    def record(self, ok: bool) -> None:
        self.failed = self.failed or not ok


checks = _Checks()
