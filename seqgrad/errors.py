"""One small exception hierarchy for every bad input seqgrad refuses.

Every error names the argument, the value it got and what is allowed, so a
user never has to read a SymPy or torch traceback to learn what went wrong.
The CLI turns any :class:`SeqgradError` into a one-line message and exit 2.
"""

from __future__ import annotations


class SeqgradError(Exception):
    """Base class of all errors seqgrad raises on purpose."""


def _describe(argument: str, value: object, allowed: str) -> str:
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return f"{argument}={shown} is not allowed: {allowed}"


class SeqgradValueError(SeqgradError, ValueError):
    """An argument has the right type but a value that is not allowed."""

    def __init__(self, argument: str, value: object, allowed: str):
        self.argument = argument
        self.value = value
        self.allowed = allowed
        super().__init__(_describe(argument, value, allowed))


class SeqgradTypeError(SeqgradError, TypeError):
    """An argument has a type that is not allowed."""

    def __init__(self, argument: str, value: object, allowed: str):
        self.argument = argument
        self.value = value
        self.allowed = allowed
        super().__init__(_describe(argument, value, allowed))


class ShapeError(SeqgradValueError):
    """An array or matrix argument has a shape that does not fit."""

    def __init__(self, argument: str, shape: tuple, expected: str):
        super().__init__(argument, tuple(shape), f"shape must be {expected}")


class NonFiniteError(SeqgradValueError):
    """A numeric argument holds NaN or infinity."""

    def __init__(self, argument: str, value: object = "<array>"):
        super().__init__(argument, value, "every entry must be finite (no NaN or inf)")


class SizeGuardError(SeqgradValueError):
    """A closed form was requested that would exceed the documented size guard."""

    def __init__(self, argument: str, value: object, limit: int, estimate: int | None = None):
        extra = f" (estimated {estimate} terms)" if estimate is not None else ""
        super().__init__(
            argument,
            value,
            f"the expanded closed form would exceed the size guard of {limit} terms{extra}; "
            "use the recurrence form or raise max_terms explicitly",
        )


class ParseError(SeqgradValueError):
    """User text (an expression, a claim, a name) could not be parsed safely."""

    def __init__(self, argument: str, text: str, reason: str):
        super().__init__(argument, text, reason)


class UndefinedError(SeqgradValueError):
    """An expression has no (real, finite) value: division by zero, log of 0, a square root of a negative number."""

    def __init__(self, argument: str, text: str, reason: str):
        super().__init__(argument, text, reason)
