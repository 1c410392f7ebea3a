"""Every entry of the identity catalogue (derive.catalogue) as a check of ``seqgrad check``, group "identities".

A check passes when the exact proof holds and the numeric check agrees:
``policy`` numbers within the float64 tolerance policy, ``printed`` numbers
within half a unit of their 3rd significant figure, ``statistical`` estimates
within their stated tolerance, and ``differs`` (a documented failure) only
when the two sides are NOT equal within the policy.
"""

from __future__ import annotations

import numpy as np

from derive import catalogue
from seqgrad.sigfig import matches

from ..registry import Check, Context, register
from ..tolerance import Outcome, compare, errors


def verify(entry: catalogue.Identity, dtype: str = "float64", device: str = "cpu", seed: int = 0) -> tuple[Outcome, catalogue.Proof]:
    """Prove ``entry`` exactly and run its numeric check; one Outcome for both."""
    proof = entry.prove()
    result = entry.check_numeric(seed)
    computed, reference = np.asarray(result.computed, float), np.asarray(result.reference, float)
    if result.rule == "policy":
        numeric = compare(computed, reference, dtype="float64", device="cpu")
    elif result.rule == "printed":
        abs_err, rel_err = errors(computed, reference)
        numeric = Outcome(abs_err, rel_err, all(matches(c, r) for c, r in zip(computed, reference)))
    elif result.rule == "statistical":
        abs_err, rel_err = errors(computed, reference)
        numeric = Outcome(abs_err, rel_err, bool(np.all(np.abs(computed - reference) <= result.tolerance)))
    else:  # "differs": the documented failure must show
        same = compare(computed, reference, dtype="float64", device="cpu")
        numeric = Outcome(0.0, 0.0, not same.passed)
    detail = f"{proof.summary()}; numeric ({result.rule}): {result.detail}"
    return Outcome(numeric.max_abs_error, numeric.max_rel_error, bool(proof.holds and numeric.passed), detail), proof


def _make(entry: catalogue.Identity):
    def run(ctx: Context) -> Outcome:
        return verify(entry, ctx.dtype, ctx.device, ctx.seed)[0]

    return run


for _entry in catalogue.entries():  # one shard per catalogue family (positional, attention, residual, ...): they run in parallel
    register(Check(f"identity:{_entry.name}", _entry.source, "identities", _make(_entry), _entry.title, shard=_entry.family))
