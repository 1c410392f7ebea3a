"""``seqgrad claim "EXPRESSION = PRINTED"``: check one printed numeric claim.

The claim is read through the whitelist of :mod:`derive.whitelist` (never
``eval``), decided by :mod:`derive.claims` with certified evaluation, and the
verdict says why.  What the printed number means: an integer or an expression
is exact; a decimal is rounded at the digits written; ``≈``, ``--figures N``
and ``--decimals N`` say it is rounded; ``--exact`` asks for equality.

Exit status: 0 verified (or rounding-consistent), 1 contradicted or truncated,
2 the claim cannot be read or has no value (division by zero, an undefined
logarithm, overflow), 3 undecided, 4 an internal error (a bug of seqgrad: one
line on standard error, never the code of a verdict; ``--json`` still prints
one object, ``{"verdict": "internal-error", ...}``).
"""

from __future__ import annotations

import json
import os
import sys

EXIT = {"verified": 0, "rounding-consistent": 0, "truncated": 1, "contradicted": 1, "undecided": 3}
EXIT_INTERNAL = 4  # an internal error: not a verdict


def register(sub) -> None:
    p = sub.add_parser("claim", help="check one printed numeric claim: verified (exit 0), contradicted (1), undecided (3)",
                       description="Check a printed claim such as \"sin(1)*cos(2) + cos(1)*sin(2) = 0.1411\" "
                                   "or \"u*h + (1-u)*c = 0.410 where u=0.9, h=0.5, c=-0.4\". An integer or an expression "
                                   "after '=' is exact; a decimal is rounded at the digits written; '≈' rounds an integer "
                                   "at its last digit. Exit 0 verified or rounding-consistent, 1 contradicted or truncated, "
                                   "2 cannot be read or has no value, 3 undecided, 4 internal error.")
    p.add_argument("claim", metavar="CLAIM", help="EXPRESSION = PRINTED [where NAME = VALUE, ...]")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--figures", type=int, metavar="N", help="the printed number is rounded at N significant figures")
    how.add_argument("--decimals", type=int, metavar="N", help="the printed number is rounded at N decimals")
    how.add_argument("--exact", action="store_true", help="the two sides must be equal, even for a printed decimal")
    p.add_argument("--digits", type=int, default=1000, metavar="N",
                   help="the highest precision, in significant digits, the evaluation may rise to (default 1000, 20 to 10000)")
    p.add_argument("--json", action="store_true", help="print the verdict and its reason as one JSON object")
    p.set_defaults(handler=run)


def run(args) -> int:
    from seqgrad.derive.claims import parse_claim
    from seqgrad.errors import SeqgradError

    try:
        verdict = parse_claim(args.claim, figures=args.figures, decimals=args.decimals, exact=args.exact).verify(digits=args.digits)
        out = json.dumps(verdict.as_dict(), sort_keys=True, allow_nan=False) if args.json else verdict.line()
    except SeqgradError:  # the CLI prints the one-line error and exits 2; with --json also its object on stdout
        raise
    except Exception as exc:  # noqa: BLE001 - a bug, not a verdict: exit 4 with one line (the traceback with SEQGRAD_DEBUG)
        if os.environ.get("SEQGRAD_DEBUG"):
            raise
        reason = f"internal error: {type(exc).__name__}: {' '.join(str(exc).split())}"  # on one line
        if args.json:
            print(json.dumps({"verdict": "internal-error", "reason": reason, "claim": args.claim}, sort_keys=True))
        print(f"seqgrad: {reason} (set SEQGRAD_DEBUG=1 for the traceback)", file=sys.stderr)
        return EXIT_INTERNAL
    print(out)
    return EXIT[verdict.status]
