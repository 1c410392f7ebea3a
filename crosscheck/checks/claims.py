"""Checks of group ``claims``: is the textbook itself right?

One check per entry of :mod:`crosscheck.claims_catalogue` (the texts' printed
arithmetic, closed forms, stated results and exercises) and one per printed
table of the Transformer walk-through, whose numbers are held against the
numeric encoder (always float64 on CPU: these checks judge the text, not the
device).

Each outcome carries the text's verdict (:data:`derive.claims.STATUSES`: the
worst verdict of the entry's claims), the reason, and the attribution: whether
the check compares with numbers printed in the text (with the citation) or
with values derived here.  A check passes when the verdict is the one the
catalogue recorded for the entry (``verified`` unless an erratum or a note
says otherwise); any other verdict fails, with the claims that departed.
The report lists the contradicted entries as textbook errata and the others
(rounding-consistent, truncated) as notes.

One check more per prose statement with a computation behind its verdict
(:mod:`crosscheck.claims_statements`, ``claims.statement_<text>_<line>``): it
passes while the computation comes out as the verdict says; its textbook
verdict is ``contradicted`` for an imprecise or false statement (an erratum,
the reason beginning ``imprecise:`` or ``false:``) and ``verified`` for one
that holds.
"""

from __future__ import annotations

import math
from functools import lru_cache

from seqgrad.derive.claims import SEVERITY

from ..claims_catalogue import Entry, entries, table_entries
from ..claims_statements import Statement, statements
from ..registry import check
from ..tolerance import Outcome

GROUP = "claims"


def outcome(entry: Entry) -> Outcome:
    """Decide every claim of ``entry``: passed when the worst verdict is the one recorded for it."""
    verdicts = [claim.verify() for claim in entry.claims]
    textbook = max((v.status for v in verdicts), key=SEVERITY.__getitem__)
    departed = [v for v in verdicts if v.status != "verified"]
    finite = [float(v.discrepancy) for v in verdicts if v.status != "undecided"]
    abs_err = max(finite, default=float("inf"))
    rel_err = max((v.relative_discrepancy for v in verdicts if v.status != "undecided"), default=float("inf"))
    units = [v.units for v in verdicts if v.status != "undecided" and v.units is not None and math.isfinite(v.units)]
    detail = f"{len(verdicts) - len(departed)}/{len(verdicts)} verified"
    if departed:
        detail += "; " + "; ".join(v.line() for v in departed[:3])
        if len(departed) > 3:
            detail += f"; and {len(departed) - 3} more not verified"
    if entry.note:
        detail += f" [{entry.note}]"
    if entry.erratum:
        detail += f" [erratum: {entry.erratum}]"
    if textbook != entry.expected:
        detail = f"expected {entry.expected}, found {textbook}: " + detail
    reason = entry.erratum or entry.note or (departed[0].reason if departed else "every claim verified")
    return Outcome(abs_err, rel_err, textbook == entry.expected, detail, textbook=textbook, reason=reason,
                   attribution=entry.attribution, units=max(units, default=None))


def statement_outcome(statement: Statement) -> Outcome:
    """The computation behind a statement's verdict: passed when it comes out as the verdict says."""
    holds, detail = statement.evidence()
    detail = f"{statement.verdict}: {detail}" + ("" if holds else f" -- the computation no longer supports '{statement.verdict}'")
    if statement.erratum:  # what is wrong in the text, where the reports look for an erratum
        detail += f" [erratum: {statement.summary}]"
    error = 0.0 if holds else float("inf")
    return Outcome(error, error, holds, detail, textbook=statement.textbook, reason=statement.summary,
                   attribution="a prose statement of the text, computed here")


@lru_cache(maxsize=None)
def _trace(stage: str) -> dict:
    from seqgrad.numeric import course

    return {name: value.detach().cpu().numpy() for name, value in course.trace(stage, device="cpu", dtype="float64").items()}


def _register(entry: Entry) -> None:
    def run(ctx, entry=entry) -> Outcome:
        return outcome(entry)

    run.__doc__ = entry.what
    check(f"claims.{entry.name}", source=entry.source, group=GROUP, description=entry.what)(run)


for _entry in entries():
    _register(_entry)
for _entry in table_entries(_trace):
    _register(_entry)


def _register_statement(statement: Statement) -> None:
    def run(ctx, statement=statement) -> Outcome:
        return statement_outcome(statement)

    run.__doc__ = statement.text
    check(f"claims.{statement.name}", source=statement.cite, group=GROUP, description=f"{statement.text} ({statement.verdict})")(run)


for _statement in statements():
    if _statement.evidence is not None:
        _register_statement(_statement)
