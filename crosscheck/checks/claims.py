"""Checks of group ``claims``: is the textbook itself right?

One check per entry of :mod:`crosscheck.claims_catalogue` (the texts' printed
arithmetic, closed forms and stated results) and one per printed table of the
Transformer walk-through, whose numbers are held against the numeric encoder
(always float64 on CPU: these checks judge the text, not the device).

Each outcome carries the textbook's verdict (``verified`` or ``contradicted``).
A check passes when every claim of its entry is verified -- or, for an entry
with a recorded erratum, when the printed claim is still contradicted: the
check then confirms the erratum, and the report lists it under textbook
errata.  Any unexpected verdict fails; the detail names the claim, its
computed value and the discrepancy.
"""

from __future__ import annotations

from functools import lru_cache

from ..claims_catalogue import Entry, entries, table_entries
from ..registry import check
from ..tolerance import Outcome

GROUP = "claims"


def outcome(entry: Entry) -> Outcome:
    """Verify every claim of ``entry``: the worst discrepancy, passed only if all are verified."""
    verdicts = [claim.verify() for claim in entry.claims]
    contradicted = [v for v in verdicts if not v.verified]
    abs_err = max(float(v.discrepancy) for v in verdicts)
    rel_err = max(v.relative_discrepancy for v in verdicts)
    detail = f"{len(verdicts) - len(contradicted)}/{len(verdicts)} verified"
    if contradicted:
        detail += "; " + "; ".join(v.line() for v in contradicted[:3])
        if len(contradicted) > 3:
            detail += f"; and {len(contradicted) - 3} more contradicted"
    if entry.note:
        detail += f" [{entry.note}]"
    if entry.erratum:
        detail += f" [erratum: {entry.erratum}]"
    textbook = "contradicted" if contradicted else "verified"
    expected = "contradicted" if entry.erratum else "verified"
    return Outcome(abs_err, rel_err, textbook == expected, detail, textbook=textbook)


@lru_cache(maxsize=None)
def _trace(stage: str) -> dict:
    from numeric import course

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
