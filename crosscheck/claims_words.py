"""A printed claim's verdict as a sentence a reader of the notes' appendix understands.

Each sentence says three things: the number the text prints, the value computed now rounded to the digits the text
prints (so the two can be compared digit by digit), and the verdict in words.  A number explained by rounding (the text
computed it from its own unrounded or rounded intermediates) says which values give the printed digits; a truncated one
says so.  The machine reason of :meth:`derive.claims.Verdict.line` stays the terminal's and the report's.

>>> from seqgrad.derive.claims import parse_claim
>>> print(sentence(parse_claim("(-0.80 - 0.6125)/1.0538 = -1.341", decimals=3).verify()))
The text prints $-1.341$; the value is $-1.34039$, which is $-1.340$ at the printed digits (3 decimals): \\textbf{the printed number is wrong}.
>>> print(sentence(parse_claim("2000 + 1 = 2001", exact=True).verify()))
The text prints $2001$ (an exact number); the value is $2001$: verified.
"""

from __future__ import annotations

import re

__all__ = ["sentence", "sentences", "working_words", "verdict_words", "VERDICT_WORDS"]

#: a claim's status in the words of the appendix
VERDICT_WORDS = {"verified": "verified", "rounding-consistent": "explained by rounding",
                 "truncated": "\\textbf{erratum} (truncated, not rounded)", "contradicted": "\\textbf{erratum}", "undecided": "undecided"}


def _number(text: str) -> str:
    """A printed or computed number in math mode (its minus sign a minus), or a tuple of them."""
    from seqgrad.latex_table import tex_escape

    return "$" + tex_escape(str(text)).replace("inf", "\\infty") + "$"


def _digits(how: str) -> str:
    """The printed digits of a reading in words: ``rounded at the 4 decimals written`` -> ``4 decimals``."""
    m = re.search(r"(\d+) (decimals?|significant figures?)", how)
    return f"{m[1]} {m[2]}" if m else how


def _inputs(claim) -> str:
    """The inputs the text prints beside the claim (``A60 = 0.185``); none when one is an expression (a formula in
    code, ``(1.30 - 0.6125)**2``, is not the printed number a reader compares)."""
    from seqgrad.derive.claims import _bindings_text

    inputs = getattr(claim, "inputs", ())
    if not inputs or any(isinstance(v, str) and not re.fullmatch(r"-?[\d.]+", v.strip()) for _, v in inputs):
        return ""
    return _bindings_text(inputs)


def verdict_words(statuses) -> str:
    """The verdict of an entry (its claims' ``statuses``) for the appendix table: the worst of them, in words."""
    from seqgrad.derive.claims import SEVERITY

    return VERDICT_WORDS[max(statuses, key=SEVERITY.__getitem__)]


def sentence(verdict, derived: bool = False, implies: str = "", key: str | None = None) -> str:
    """The sentence of one claim's verdict (a :class:`~derive.claims.Verdict` or a vector's); ``derived``: the number
    compared is not printed in the text but follows from its statement (the entry's ``derived``); ``implies``: what the
    statement implies, in words, where the number compared is a search bound and not a value (the entry's ``implies``);
    ``key``: the course text the claim is printed in (the lines its words name are cited as its sections).

    >>> from seqgrad.derive.claims import Claim
    >>> claim = Claim.from_provider("the first offset at which the distance falls", lambda: 44, "2001", exact=True)
    >>> print(sentence(claim.verify(), derived=True))
    The text's statement implies $2001$ for the first offset at which the distance falls (the text prints no number here); the value is $44$: \\textbf{the statement is wrong}.
    >>> print(sentence(claim.verify(), derived=True, implies="the distance never falls"))
    The text's statement implies that the distance never falls; in fact the first offset at which the distance falls, is $44$: \\textbf{the statement is wrong}.
    """
    from .latex_parts import quotation

    entries = getattr(verdict, "entries", None)
    if entries is not None:  # a printed vector: the printed and the rounded vector, the entries that differ
        claim = verdict.claim
        rounded = "(" + ", ".join(v.rounded_text() for v in entries) + ")"
        bad = [i for i, v in enumerate(entries) if v.status != "verified"]
        how = _digits(entries[0].claim.reading.how)
        which = ("entry " if len(bad) == 1 else "entries ") + ", ".join(str(i) for i in bad) + " (counted from 0)"
        return (f"The text prints {_number(claim.printed)}; the value, at the printed digits ({how}), is {_number(rounded)}: "
                f"{which} {'differs' if len(bad) == 1 else 'differ'}; " + _verdict(verdict.status, entries[bad[0]], vector=True))
    c = verdict.claim
    given = _inputs(c)
    with_given = f" (with {quotation(given, key)} as printed)" if given else ""
    if derived:
        if implies:
            said = (f"The text's statement implies that {quotation(implies, key)}; in fact {quotation(c.text, key)}, is "
                    f"{_number(verdict.rounded_text())}")
            return said + ": " + ("verified." if verdict.verified else "\\textbf{the statement is wrong}.")
        said = (f"The text's statement implies {_number(c.printed)} for {quotation(c.text, key)} (the text prints no number "
                f"here); the value is {_number(verdict.rounded_text())}")
        return said + ": " + ("verified." if verdict.verified else "\\textbf{the statement is wrong}.")
    if c.reading.exact:
        said = f"The text prints {_number(c.printed)} (an exact number); the value{with_given} is {_number(verdict.computed_text(8))}"
    else:
        said = (f"The text prints {_number(c.printed)}; the value{with_given} is {_number(verdict.computed_text(6))}, which is "
                f"{_number(verdict.rounded_text())} at the printed digits ({_digits(c.reading.how)})")
    return said + ": " + _verdict(verdict.status, verdict, key=key)


def _verdict(status: str, verdict, vector: bool = False, key: str | None = None) -> str:
    if status == "verified":
        return "verified."
    if status == "contradicted":
        return "\\textbf{the printed " + ("numbers are" if vector else "number is") + " wrong}."
    if status == "truncated":
        return "\\textbf{the printed number is wrong}: it is the value cut off at the printed digits, not rounded."
    if status == "rounding-consistent" and verdict.alternative is not None:
        description, bindings, other = verdict.alternative
        from .latex_parts import quotation

        return (f"the printed number follows from {quotation(description, key)} ({quotation(bindings, key)}), which give "
                f"{_number(other.computed_text(6))}, {_number(other.rounded_text())} at the printed digits, as printed.")
    return "undecided at the precision tried."


def _and(items) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _same_working(verdicts) -> bool:
    """Whether rounding explains each of ``verdicts`` in the same way (the same inputs, the same digits, the same
    values of the text's working): their sentences say it once."""
    if len(verdicts) < 2 or any(getattr(v, "entries", None) is not None or v.status != "rounding-consistent"
                                or v.alternative is None for v in verdicts):
        return False
    first = verdicts[0]
    return all(_inputs(v.claim) == _inputs(first.claim) and v.claim.reading.how == first.claim.reading.how
               and v.alternative[:2] == first.alternative[:2] for v in verdicts)


def sentences(verdicts, derived: bool = False, implies: str = "", key: str | None = None) -> str:
    """The sentences of an entry's ``verdicts`` (:func:`sentence`), each fact once: a number of a printed vector
    checked again on its own is said by the vector's sentence, and numbers that rounding explains the same way share
    one sentence.

    >>> from seqgrad.derive.claims import parse_claim
    >>> vs = [parse_claim(t, decimals=3).verify() for t in ("0.1234 + 0 = 0.123", "0.4567 + 0 = 0.457")]
    >>> sentences(vs).count("The text prints")
    2
    """
    from .latex_parts import quotation

    vectors = [e.claim.printed for v in verdicts for e in (getattr(v, "entries", None) or ())]
    verdicts = [v for v in verdicts if getattr(v, "entries", None) is not None or v.claim.printed not in vectors]
    if not _same_working(verdicts):
        return " ".join(sentence(v, derived, implies, key=key) for v in verdicts)
    first = verdicts[0]
    given = _inputs(first.claim)
    description, bindings, _ = first.alternative
    others = [v.alternative[2] for v in verdicts]
    return (f"The text prints {_and(_number(v.claim.printed) for v in verdicts)}; the values"
            + (f" (with {quotation(given, key)} as printed)" if given else "")
            + f" are {_and(_number(v.computed_text(6)) for v in verdicts)}, which are "
            f"{_and(_number(v.rounded_text()) for v in verdicts)} at the printed digits ({_digits(first.claim.reading.how)}): "
            f"the printed numbers follow from {quotation(description, key)} ({quotation(bindings, key)}), which give "
            f"{_and(_number(o.computed_text(6)) for o in others)}, {_and(_number(o.rounded_text()) for o in others)} at the "
            "printed digits, as printed.")


def working_words(found) -> str:
    """What is true of every printed number that follows the text's own working (``found``: (entry, verdicts)
    pairs): which are right at the printed digits, only a recomputation from the text's rounded inputs differing,
    and which follow from intermediate values the text rounded."""
    right = [_number(v.claim.printed) for _, vs in found for v in vs if _inputs(v.claim)]
    rounded = [_number(v.claim.printed) for _, vs in found for v in vs if not _inputs(v.claim)]
    said = ["None of these is an erratum: each printed number follows from the text's own working."]
    if right:
        said.append(f"{_and(right)} {'is' if len(right) == 1 else 'are'} right at the printed digits; only a "
                    "recomputation from the text's rounded inputs differs.")
    if rounded:
        said.append(f"{_and(rounded)} {'follows' if len(rounded) == 1 else 'follow'} from intermediate values the "
                    "text rounded.")
    return " ".join(said)
