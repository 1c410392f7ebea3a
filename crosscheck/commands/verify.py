"""``seqgrad verify "LHS = RHS"``: prove an identity of your own, or check it at random points.

The text goes through the whitelist of :mod:`derive.safe_parse` (never ``eval``) with ``diff(f, x)``,
``sum(f, i, a, b)``, vectors and softmax/layernorm/rmsnorm allowed; every free name must be declared with
``--vars`` (real variables) or ``--sizes`` (positive integers); ``--shape`` declares matrices and vectors
(the sides are then matrix expressions, :mod:`derive.matrix_verify`), ``--assume`` bounds variables.  Exit status: 0 proved or holds
numerically (the output says which), 1 refuted (with the counterexample), 2 bad input, 3 undecided
(the time limit was hit).
"""

from __future__ import annotations

import json


def register(sub) -> None:
    p = sub.add_parser("verify", help="prove an identity LHS = RHS or check it at random points (exit 0 proved/holds, "
                                      "1 refuted, 2 bad input, 3 undecided)",
                       description="Prove an identity such as \"sin(x)**2 + cos(x)**2 = 1\" or "
                                   "\"sum(i, i, 1, n) = n*(n + 1)/2\" symbolically within a time limit, else check it at "
                                   "random points. Exit 0 proved or holds numerically, 1 refuted, 2 bad input, 3 undecided.")
    p.add_argument("identity", metavar="IDENTITY", help="LHS = RHS (diff(f, x), sum(f, i, a, b), vectors (a, b), softmax, layernorm, rmsnorm allowed)")
    p.add_argument("--vars", default="", metavar="NAMES", help="the real variables, e.g. x,y (every free name must be declared)")
    p.add_argument("--sizes", default="", metavar="NAMES", help="positive integer sizes, e.g. n (bounds of sums)")
    p.add_argument("--shape", default="", metavar="SHAPES", help='matrices and column vectors at symbolic size, e.g. "A:n,m B:m,n x:n": '
                                                                 "the sides are then matrix expressions (* is the matrix product)")
    p.add_argument("--assume", default=None, metavar="BOUNDS", help='bounds on variables, e.g. "x > 0, y >= 1": the proof runs '
                                                                    "under them and the points are drawn inside them")
    p.add_argument("--time-limit", type=float, default=5.0, metavar="SECONDS", help="time limit for proof and check (default 5)")
    p.add_argument("--points", type=int, default=40, metavar="N", help="points of the numeric check (default 40)")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the random points, 0 <= N < 2**63 (default 0)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    out.add_argument("--latex", action="store_true", help="print the statement and its verdict as a LaTeX display (align*, amsmath) for notes")
    p.set_defaults(handler=run)


def run(args) -> int:
    from seqgrad import validate
    from seqgrad.derive.verification import verify

    validate.seed("--seed", args.seed)
    verdict = verify(args.identity, variables=args.vars, sizes=args.sizes, shapes=args.shape or None, assume=args.assume,
                     time_limit=args.time_limit, points=args.points, seed=args.seed)
    if args.json:
        print(json.dumps(verdict.as_dict(), sort_keys=True))
    elif args.latex:
        print(verdict.latex())
    else:
        print(verdict.line())
    return verdict.exit_code
