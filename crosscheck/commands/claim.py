"""``seqgrad claim "EXPRESSION = PRINTED"``: check one printed numeric claim.

The claim is parsed through the whitelist of :mod:`derive.safe_parse` (never
``eval``), evaluated exactly by :mod:`derive.claims`, and compared with the
printed result at the decimals written (or ``--figures N`` significant figures,
or ``--exact``).  Exit status: 0 verified, 1 contradicted, 2 the claim cannot
be parsed.
"""

from __future__ import annotations

import json


def register(sub) -> None:
    p = sub.add_parser("claim", help="check one printed numeric claim: verified (exit 0) or contradicted (exit 1)",
                       description="Check a printed claim such as \"sin(1)*cos(2) + cos(1)*sin(2) = 0.1411\" "
                                   "or \"u*h + (1-u)*c = 0.410 where u=0.9, h=0.5, c=-0.4\". "
                                   "Exit 0 verified, 1 contradicted, 2 cannot be parsed.")
    p.add_argument("claim", metavar="CLAIM", help="EXPRESSION = PRINTED [where NAME = VALUE, ...]")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--figures", type=int, metavar="N", help="compare at N significant figures instead of the decimals written")
    how.add_argument("--exact", action="store_true", help="the two sides must be equal (to the evaluation precision less 10 digits)")
    p.add_argument("--digits", type=int, default=50, metavar="N", help="significant digits of the evaluation (default 50, 15 to 1000)")
    p.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    p.set_defaults(handler=run)


def run(args) -> int:
    from derive.claims import parse_claim

    verdict = parse_claim(args.claim, figures=args.figures, exact=args.exact).verify(digits=args.digits)
    print(json.dumps(verdict.as_dict(), sort_keys=True) if args.json else verdict.line())
    return 0 if verdict.verified else 1
