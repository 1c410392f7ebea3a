"""``seqgrad diff EXPR --wrt NAME``: the derivative of a matrix or vector expression at symbolic size.

The expression is read by :mod:`derive.matrix_text` (a whitelist, never ``eval``) over the names declared with
``--shape`` (matrices ``A:n,m``, column vectors ``x:n``) and ``--vars`` (real scalars), differentiated through
the rule table (:func:`derive.matcalc.diff`) and printed in textbook form; ``--latex`` gives the LaTeX display,
``--code`` the generated numpy / torch function, ``--check`` compares the result with torch autograd (float64)
at random sizes and values.  Exit 0 (and 1 when ``--check`` disagrees), 2 bad input.
"""

from __future__ import annotations

import json


def register(sub) -> None:
    p = sub.add_parser("diff", help="derivative of a matrix/vector expression at symbolic size (gradient, or pullback dX for G)",
                       description="The derivative of a matrix or vector expression such as \"x.T*A*x\" or "
                                   "\"softmax(Q*K.T/sqrt(d))*V\" at symbolic size, through the project's proved rule table: "
                                   "the gradient for a scalar expression, the pullback dX for an upstream G otherwise. "
                                   "Exit 0, 1 when --check disagrees with torch autograd, 2 bad input.")
    p.add_argument("expression", metavar="EXPR", help="the expression (* is the matrix product; A.T, trace, det, inv, diag, "
                                                      "outer, dot, hadamard, sum, mean, norm, softmax, layernorm, exp, log, tanh ...)")
    p.add_argument("--wrt", required=True, metavar="NAME", help="the matrix, vector or scalar to differentiate with respect to")
    p.add_argument("--shape", default="", metavar="SHAPES", help='the matrices and column vectors, e.g. "A:n,n x:n" (sizes are names or integers)')
    p.add_argument("--vars", default="", metavar="NAMES", help="real scalar variables, e.g. c,lam")
    p.add_argument("--at", metavar="POINT", help='the derivative at a point of the scalar variables, e.g. "x=0, y=1" (exact; '
                                                 'refused, exit 2, where the expression is undefined or not differentiable)')
    p.add_argument("--check", action="store_true", help="compare with torch autograd (float64) at random sizes and values")
    p.add_argument("--trials", type=int, default=4, metavar="N", help="random size/value trials of --check (default 4, 1 to 50)")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="seed of --check (default 0)")
    p.add_argument("--code", choices=("numpy", "torch", "both"), help="print the generated function")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--latex", action="store_true", help="print the result as a LaTeX display (align*, amsmath)")
    out.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.set_defaults(handler=run)


def run(args) -> int:
    from seqgrad.derive.matcalc import diff, display_form
    from seqgrad.derive.program_text import pretty
    from seqgrad.errors import SeqgradValueError

    if not 1 <= args.trials <= 50:
        raise SeqgradValueError("--trials", args.trials, "a number of trials from 1 to 50")
    d = diff(args.expression, args.wrt, args.shape, args.vars, at=args.at)
    result = None
    if args.check:
        from seqgrad.crosscheck.matcalc import check

        result = check(d, trials=args.trials, seed=args.seed)
    sources = {}
    if args.code:
        from seqgrad.crosscheck.matcalc import generated_source

        for backend in (("numpy", "torch") if args.code == "both" else (args.code,)):
            sources[backend] = generated_source(d, backend)[0]
    if args.json:
        out = d.as_dict()
        if result is not None:
            out["check"] = {"passed": result.passed, "trials": result.trials}
        if sources:
            out["code"] = sources
        print(json.dumps(out, sort_keys=True))
    elif args.latex:
        print(d.latex())
    else:
        what = "gradient" if d.kind == "gradient" else f"pullback for the upstream {d.G} = dL/d(expression)"
        print(f"{pretty(display_form(d.expr))}: {what} with respect to {args.wrt}")
        print(d.pretty())
        print("rules: " + (", ".join(d.rules) + " (each proved in derive.rules: derive.rules.proved(name))" if d.rules
                           else "the scalar chain rule only (sympy.diff of a scalar expression)"))
        for kink in d.kinks():
            print(f"note: not differentiable where {pretty(kink)} = 0 (the formula uses sign or a step there)")
        for jump in d.jumps():
            print(f"note: not differentiable where {pretty(jump)} is an integer (floor and ceiling jump there)")
    for backend, source in sources.items():
        if not args.json:
            print(f"# {backend}\n{source}", end="")
    if result is not None and not args.json:
        print(result.line())
    return 0 if result is None or result.passed else 1
