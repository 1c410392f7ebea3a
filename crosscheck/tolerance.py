"""The one tolerance policy of seqgrad, with its reasons.

Every numeric comparison in crosscheck/ (and in the tests) takes its
tolerance from :func:`tolerance`.  An entry passes when
``|computed - reference| <= atol + rtol * |reference|`` (numpy's ``allclose``
rule); the report shows the largest absolute error and the largest relative
error ``|computed - reference| / max(|reference|, atol)``.

Reasons for the numbers:

* float64 on CPU: derivations and autograd evaluate the same real function by
  different operation orders; in double precision the rounding differences of
  the models here (at most a few hundred operations per entry, condition
  numbers below 1e4) stay below 1e-12, so ``atol=1e-10, rtol=1e-9`` leaves a
  margin of 100 while still catching any wrong term (a wrong term changes a
  result at the 1e-3 level or more).
* float64 on CUDA: cuBLAS and cuDNN may reorder reductions and use fused
  multiply-add; a factor of 10 more than on CPU covers that.
* float32 on CPU: unit round-off is 6e-8; accumulated over the same operation
  counts it reaches 1e-6 relative, so ``atol=1e-5, rtol=1e-4``.
* float32 on CUDA: matrix products may use TF32 (10-bit mantissa) unless
  disabled, so ``atol=1e-3, rtol=1e-2``.
* printed textbook numbers are never compared with these: they use half a
  unit of their last significant figure (:mod:`seqgrad.sigfig`).
* trends are not equalities: the depth checks (crosscheck/checks/depth.py)
  assert inequalities between measured quantities of random stacks, with
  bounds stated in each check (a factor of 2 around a scaling law, measured
  margins of 1.3 to 1.4; a singular value below ``1e-10 * sigma_max`` counts
  as zero, since a float64 product of at most 48 well-scaled factors resolves
  about ``1e-14 * sigma_max`` and the LayerNorm null directions come out near
  ``1e-16``); the chain-rule identity of those checks uses this policy.
"""

from __future__ import annotations

import math

from dataclasses import dataclass

import numpy as np

from seqgrad.errors import SeqgradValueError


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float
    reason: str


POLICY: dict[tuple[str, str], Tolerance] = {
    ("float64", "cpu"): Tolerance(1e-10, 1e-9, "double precision, same function, different operation order"),
    ("float64", "cuda"): Tolerance(1e-9, 1e-8, "double precision with reordered GPU reductions and FMA"),
    ("float32", "cpu"): Tolerance(1e-5, 1e-4, "single precision round-off accumulated over the model"),
    ("float32", "cuda"): Tolerance(1e-3, 1e-2, "single precision, GPU matrix products may use TF32"),
}


def tolerance(dtype: str = "float64", device: str = "cpu") -> Tolerance:
    """The tolerance for comparisons in ``dtype`` on ``device`` (``cpu`` or ``cuda``)."""
    dtype = str(dtype).replace("torch.", "")
    device = str(device).split(":")[0]
    try:
        return POLICY[(dtype, device)]
    except KeyError:
        raise SeqgradValueError("dtype/device", (dtype, device), "float64 or float32 on cpu or cuda") from None


@dataclass
class Outcome:
    """What one check found."""

    max_abs_error: float
    max_rel_error: float
    passed: bool
    detail: str = ""
    skipped: str | None = None  # the reason, when the check did not run here
    textbook: str | None = None  # for checks of the texts' claims: the verdict (derive.claims.STATUSES)
    reason: str | None = None  # why the text got that verdict
    attribution: str | None = None  # "printed in the text (cite)" or "derived here (not printed in the text)"
    units: float | None = None  # the largest discrepancy in units of the last printed digit
    #: the largest error of an entry divided by the tolerance that entry was held to (the check passes at 1 or below);
    #: None for a check that holds no value to a tolerance (an inequality, a count)
    tol_ratio: float | None = None
    single: bool = False  # a comparison was made in float32 (a module that runs in single precision)

    @classmethod
    def skip(cls, reason: str) -> "Outcome":
        return cls(0.0, 0.0, True, reason, skipped=reason)

    @classmethod
    def printed(cls, computed, printed, figures: int = 3, detail: str = "") -> "Outcome":
        """A comparison with numbers the course prints to ``figures`` significant figures: each computed value must
        round to its printed one (within half a unit of its last figure, :func:`seqgrad.sigfig.matches`).  Its
        measure is ``units``, the largest difference in units of the last printed digit, not a floating-point
        error; ``max_abs_error`` is the largest difference itself."""
        from seqgrad.sigfig import half_unit, matches

        pairs = [(float(c), float(p)) for c, p in zip(computed, printed, strict=True)]
        if not pairs:
            raise SeqgradValueError("printed", printed, "at least one printed number")
        diffs = [abs(c - p) for c, p in pairs]
        halves = [abs(c - p) / half_unit(p, figures) for c, p in pairs]
        finite = all(math.isfinite(c) for c, _ in pairs)
        ok = finite and all(matches(c, p, figures) for c, p in pairs)
        worst = max(halves) if finite else float("inf")
        rel = max(d / max(abs(p), 1e-12) for d, (_, p) in zip(diffs, pairs)) if finite else float("inf")
        return cls(max(diffs) if finite else float("inf"), rel, ok, detail, tol_ratio=worst, units=worst / 2)

    @classmethod
    def exact(cls, holds: bool, detail: str = "") -> "Outcome":
        """A symbolic proof: error 0 when it holds, inf when it does not."""
        err = 0.0 if holds else float("inf")
        return cls(err, err, bool(holds), detail, tol_ratio=err)


def _as_array(value) -> np.ndarray:
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    return np.asarray(value, dtype=np.float64)


def errors(computed, reference, atol: float = 1e-10) -> tuple[float, float]:
    """Largest absolute and relative error between two arrays of the same shape."""
    c, r = _as_array(computed), _as_array(reference)
    if c.shape != r.shape:
        raise SeqgradValueError("computed", c.shape, f"the reference's shape {r.shape}")
    if c.size == 0:
        return 0.0, 0.0
    diff = np.abs(c - r)
    if not np.all(np.isfinite(diff)):
        return float("inf"), float("inf")
    rel = diff / np.maximum(np.abs(r), atol)
    return float(diff.max()), float(rel.max())


def compare(computed, reference, *, dtype: str = "float64", device: str = "cpu", tol: Tolerance | None = None, detail: str = "") -> Outcome:
    """Compare under the policy for ``dtype`` and ``device``; NaN or inf never passes."""
    tol = tol or tolerance(dtype, device)
    c, r = _as_array(computed), _as_array(reference)
    abs_err, rel_err = errors(c, r, tol.atol)
    allowed = tol.atol + tol.rtol * np.abs(r)
    passed = bool(np.all(np.isfinite(c)) and np.all(np.isfinite(r)) and np.all(np.abs(c - r) <= allowed))
    finite = bool(np.all(np.isfinite(c)) and np.all(np.isfinite(r)))
    ratio = (float(np.max(np.abs(c - r) / allowed)) if c.size else 0.0) if finite else float("inf")
    return Outcome(abs_err, rel_err, passed, detail, tol_ratio=ratio,
                   single=str(dtype).replace("torch.", "") == "float32")


def combine(outcomes: list[Outcome], detail: str = "") -> Outcome:
    """One outcome for several comparisons: the worst errors, passed only if all passed."""
    if not outcomes:
        raise SeqgradValueError("outcomes", outcomes, "at least one outcome")
    ratios = [o.tol_ratio for o in outcomes if o.tol_ratio is not None]
    units = [o.units for o in outcomes if o.units is not None]  # a comparison with printed numbers keeps its measure
    return Outcome(
        max(o.max_abs_error for o in outcomes),
        max(o.max_rel_error for o in outcomes),
        all(o.passed for o in outcomes),
        detail or "; ".join(o.detail for o in outcomes if o.detail),
        tol_ratio=max(ratios) if ratios else None,
        single=any(o.single for o in outcomes),
        units=max(units) if units else None,
    )


def fmt_error(x: float) -> str:
    """A measured error for a table: ``0``, ``inf`` (not finite), else two decimals of its exponent form."""
    if not math.isfinite(x):
        return "inf"
    return "0" if x == 0 else f"{x:.2e}"
