"""``seqgrad derive MODEL``: print a derivation (recurrences by default, closed forms with ``--expand``).

Models are the keys of :data:`MODELS` (``rnn``); each entry adds its options
to its own sub-parser and prints its derivation.
"""

from __future__ import annotations

import argparse
from typing import Callable


#: the longest recurrence the command prints (the library has no such limit; T = 1000 takes seconds)
MAX_STEPS = 10_000


def _add_rnn(p: argparse.ArgumentParser) -> None:
    p.add_argument("--steps", type=int, required=True, metavar="T",
                   help=f"number of positions, 1 <= T <= {MAX_STEPS} (longer printouts: use the Python API)")
    p.add_argument("--activation", default="tanh", metavar="NAME",
                   help="identity, tanh, sigmoid, relu or phi (generic; phi' stays a symbol); default tanh")
    p.add_argument("--inputs", type=int, metavar="D", help="input width D (vector cell)")
    p.add_argument("--hidden", type=int, metavar="H", help="hidden width H (vector cell)")
    p.add_argument("--outputs", type=int, metavar="C", help="output width C (vector cell)")
    p.add_argument("--bias", action="store_true", help="add the biases b_h and b_o")
    p.add_argument("--loss", choices=("final", "every"), default="final",
                   help="target on the final position only (default) or on every position")
    p.add_argument("--reduction", choices=("sum", "mean"), default="sum", help="sum or average over positions")
    p.add_argument("--expand", action="store_true", help="print the closed forms instead of the recursion")
    p.add_argument("--max-terms", type=int, metavar="N", help="size guard for --expand (default 20000 tree nodes)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--latex", action="store_true",
                     help="print LaTeX: a complete display (align*, needs amsmath) to paste into a document body")
    out.add_argument("--table", action="store_true", help="print the forward/backward table (Table 3)")
    out.add_argument("--dot", action="store_true", help="print the dependency graph as Graphviz DOT")


def _run_rnn(args) -> str:
    import sympy as sp

    from derive import rnn
    from derive.latex_settings import Partial
    from derive.program import latex_aligned
    from seqgrad import validate

    validate.integer("--steps", args.steps, minimum=1, maximum=MAX_STEPS)
    net = rnn.unroll(steps=args.steps, activation=args.activation, inputs=args.inputs, hidden=args.hidden,
                     outputs=args.outputs, bias=args.bias, loss=args.loss, reduction=args.reduction)
    max_terms = None if args.max_terms is None else validate.integer("--max-terms", args.max_terms, minimum=1)
    if args.dot:
        return net.dot().rstrip()
    if args.table:
        return str(net.backward_table())
    grads = [(Partial(symbol), name) for name, symbol in net.parameters.items()]
    if not args.expand:
        if args.latex:
            return net.latex()
        rows = [(d.target, [d.value]) for d in net.program] + [(lhs, [net.grad(name)]) for lhs, name in grads]
        return _text(rows)
    from derive.program import MAX_TERMS
    from seqgrad.errors import SizeGuardError

    wanted = [net.sensitivity("z", t) for t in range(net.steps)] + [net.grad(name) for _, name in grads]
    total = sum(net.program.size(expr) for expr in wanted)
    limit = max_terms or MAX_TERMS
    if total > limit:  # the whole printout is guarded, not only each formula
        raise SizeGuardError("--expand", f"rnn --steps {net.steps}", limit, total)
    rows = [(sp.Symbol(f"g_{t}^z"), net.sensitivity("z", t, expand=True, max_terms=limit)) for t in range(net.steps)]
    rows += [(lhs, net.grad(name, expand=True, max_terms=limit)) for lhs, name in grads]
    if args.latex:
        return latex_aligned(rows)
    return _text([(lhs, [rhs]) for lhs, rhs in rows])


def _text(rows) -> str:
    """Plain-text rows as the text prints them: its order of terms, the zero initial state dropped."""
    from derive.program import sstr
    from derive.term_order import drop_zero_state

    return "\n".join(f"{sstr(lhs)} = {sstr(rhs[0])}" for lhs, rhs in drop_zero_state(rows))


#: model name -> (help, add_arguments, run returning the text to print)
MODELS: dict[str, tuple[str, Callable, Callable]] = {
    "rnn": ("the unrolled recurrent network (scalar or vector cell) and its BPTT", _add_rnn, _run_rnn),
}


def register(sub) -> None:
    p = sub.add_parser("derive", help="print a derivation: recurrences, closed forms, LaTeX, the graph")
    inner = p.add_subparsers(dest="model", metavar="MODEL", parser_class=type(p))
    inner.required = True
    for name, (help_text, add, _) in MODELS.items():
        q = inner.add_parser(name, help=help_text)
        add(q)
        q.set_defaults(handler=run)


def run(args) -> int:
    print(MODELS[args.model][2](args))
    return 0
