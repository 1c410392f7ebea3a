"""Every entry of the identity catalogue (derive.catalogue) as a check of ``seqgrad check``, group "identities".

A check passes when the exact proof holds and the numeric check agrees:
``policy`` numbers within the float64 tolerance policy, ``printed`` numbers
within half a unit of their 3rd significant figure, ``statistical`` estimates
within their stated tolerance, and ``differs`` (a documented failure) only
when the two sides are NOT equal within the policy.

Neither half depends on the run's device or dtype: the proof is exact, and the
numeric check evaluates both sides in derive (``mpmath`` at 30 digits, exact
rationals, or float64 Monte Carlo), never with torch.  So these checks declare no
torch needs (the registry gives them no ``ctx.dev``/``ctx.dt``), :func:`verify`
takes no device or dtype, and the numbers are compared under the policy of where
they are computed, float64 on the CPU, on every run.
"""

from __future__ import annotations

import numpy as np

from seqgrad.derive import catalogue
from seqgrad import validate
from seqgrad.errors import SeqgradTypeError
from seqgrad.sigfig import matches

from ..registry import Check, Context, register
from ..tolerance import Outcome, compare, errors

#: where the numeric checks' numbers are computed (derive, without torch): their tolerance policy
COMPUTED_IN = {"dtype": "float64", "device": "cpu"}


def verify(entry: catalogue.Identity, seed: int = 0) -> tuple[Outcome, catalogue.Proof]:
    """Prove ``entry`` exactly and run its numeric check (at points drawn from ``seed``); one Outcome for both."""
    if not isinstance(entry, catalogue.Identity):
        raise SeqgradTypeError("entry", entry, "an entry of the identity catalogue (derive.catalogue.get(name))")
    seed = validate.integer("seed", seed)
    proof = entry.prove()
    result = entry.check_numeric(seed)
    computed, reference = np.asarray(result.computed, float), np.asarray(result.reference, float)
    if result.rule == "policy":
        numeric = compare(computed, reference, **COMPUTED_IN)
    elif result.rule == "printed":
        abs_err, rel_err = errors(computed, reference)
        numeric = Outcome(abs_err, rel_err, all(matches(c, r) for c, r in zip(computed, reference)))
    elif result.rule == "statistical":
        abs_err, rel_err = errors(computed, reference)
        numeric = Outcome(abs_err, rel_err, bool(np.all(np.abs(computed - reference) <= result.tolerance)))
    else:  # "differs": the documented failure must show
        same = compare(computed, reference, **COMPUTED_IN)
        numeric = Outcome(0.0, 0.0, not same.passed)
    detail = f"{proof.summary()}; numeric ({result.rule}): {result.detail}"
    return Outcome(numeric.max_abs_error, numeric.max_rel_error, bool(proof.holds and numeric.passed), detail), proof


def _make(entry: catalogue.Identity):
    def run(ctx: Context) -> Outcome:
        return verify(entry, ctx.seed)[0]

    return run


for _entry in catalogue.entries():  # one shard per catalogue family (positional, attention, residual, ...): they run in parallel
    register(Check(f"identity:{_entry.name}", _entry.source, "identities", _make(_entry), _entry.title, needs_torch=False,
                   shard=_entry.family))
