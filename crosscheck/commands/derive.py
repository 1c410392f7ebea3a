"""``seqgrad derive MODEL``: print a derivation (recurrences by default, closed forms with ``--expand``).

Models are the keys of :data:`MODELS` (``rnn``, ``gru``, ``lstm``, ``cell``); each entry adds its
options to its own sub-parser and prints its derivation.  Every recurrent model is a cell of
:mod:`derive.cell`: ``--general`` prints its derivation at a general step t of length T,
``--steps T`` the unrolled program, ``--check`` compares every derived gradient (compiled as a
loop over t) with torch autograd through the same equations, in float64.
"""

from __future__ import annotations

import argparse
import itertools
from typing import Callable

from ._common import add_notation
from ._derive_cell import (MAX_STEPS, checks, latex_notation, loss_and_positions, printed_latex, printed_text, run_cell_object,
                           steps, usage)


def _add_common(p: argparse.ArgumentParser, sizes: bool = True) -> None:
    """The options every recurrent model shares (length, loss, sizes, output form, --check)."""
    when = p.add_mutually_exclusive_group(required=True)
    when.add_argument("--steps", type=int, metavar="T",
                      help=f"the unrolled program of T positions, 1 <= T <= {MAX_STEPS['text']} ({MAX_STEPS['latex']} "
                           "with --latex or --table; longer printouts: the Python API)")
    when.add_argument("--general", action="store_true", help="the derivation at a general step t of any length T")
    p.add_argument("--check", action="store_true",
                   help="compile every gradient (a loop over t) and compare it with torch autograd (float64); exit 1 on a mismatch")
    p.add_argument("--loss", choices=("final", "every", "squared", "cross-entropy"), default=None,
                   help="squared (default) or cross-entropy over classes; 'final'/'every' are short for --on")
    p.add_argument("--on", metavar="WHERE", help="loss positions: final (default), every, or a list such as 0,3,5")
    p.add_argument("--reduction", choices=("sum", "mean"), default="sum", help="sum or average over positions")
    p.add_argument("--batch", choices=("sum", "mean"), default="sum", help="sum or average over the batch (1/B)")
    if sizes:
        p.add_argument("--inputs", type=int, metavar="D", help="input width D (vector cell)")
        p.add_argument("--hidden", type=int, metavar="H", help="hidden width H (vector cell)")
        p.add_argument("--outputs", type=int, metavar="C", help="output width C (vector cell)")


def _add_rnn(p: argparse.ArgumentParser) -> None:
    _add_common(p)
    p.add_argument("--activation", default="tanh", metavar="NAME",
                   help="identity, tanh, sigmoid, relu or phi (generic; phi' stays a symbol); default tanh")
    p.add_argument("--bias", action="store_true", help="add the biases b_h and b_o")
    p.add_argument("--expand", action="store_true", help="print the closed forms instead of the recursion")
    p.add_argument("--max-terms", type=int, metavar="N", help="size guard for --expand (default 20000 tree nodes)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--latex", action="store_true",
                     help="print LaTeX: a complete display (align*, needs amsmath) to paste into a document body")
    out.add_argument("--table", action="store_true", help="print the forward/backward table (Table 3)")
    out.add_argument("--dot", action="store_true", help="print the dependency graph as Graphviz DOT")
    add_notation(p)


def _run_rnn(args) -> str:
    import sympy as sp

    from seqgrad.derive import rnn
    from seqgrad.derive.latex_settings import Partial
    from seqgrad.derive.program import latex_aligned
    from seqgrad import validate

    if args.general or args.check or args.loss in ("squared", "cross-entropy") or args.on is not None:
        from seqgrad.derive.builtin_cells import rnn_cell

        loss, on = loss_and_positions(args)
        cell = rnn_cell(args.activation, _sizes(args), args.bias, loss, on, args.reduction, args.batch)
        return run_cell_object(cell, args, _check_text)
    steps(args)
    _sizes(args)  # the width guards
    notation = latex_notation(args)
    net = rnn.unroll(steps=args.steps, activation=args.activation, inputs=args.inputs, hidden=args.hidden,
                     outputs=args.outputs, bias=args.bias, loss=args.loss or "final", reduction=args.reduction)
    max_terms = None if args.max_terms is None else validate.integer("--max-terms", args.max_terms, minimum=1,
                                                                     maximum=MAX_TERMS_LIMIT)
    if args.dot:
        return net.dot().rstrip()
    if args.table:
        return str(net.backward_table())
    grads = [(Partial(symbol), name) for name, symbol in net.parameters.items()]
    if not args.expand:
        if args.latex:
            return printed_latex(lambda n: net.latex(notation=n), args)
        # streamed, one definition a line, in the text's order of terms with the zero initial state dropped
        rows = [(d.target, [d.value]) for d in net.program] + [(lhs, [net.grad(name)]) for lhs, name in grads]
        if notation is None:
            return _text_lines(rows)
        return printed_text(lambda n: "\n".join(_text_lines(rows, n)), args)  # held whole: unused renames are refused
    from seqgrad.derive.program import MAX_TERMS
    from seqgrad.errors import SizeGuardError

    wanted = [net.sensitivity("z", t) for t in range(net.steps)] + [net.grad(name) for _, name in grads]
    total = sum(net.program.size(expr) for expr in wanted)
    limit = max_terms or MAX_TERMS
    if total > limit:  # the whole printout is guarded, not only each formula
        raise SizeGuardError("--expand", f"rnn --steps {net.steps}", limit, total)
    rows = [(net.sensitivity("z", t), net.sensitivity("z", t, expand=True, max_terms=limit)) for t in range(net.steps)]
    rows += [(lhs, net.grad(name, expand=True, max_terms=limit)) for lhs, name in grads]
    if args.latex:
        return printed_latex(lambda n: latex_aligned(rows, notation=n), args)
    return printed_text(lambda n: _text([(lhs, [rhs]) for lhs, rhs in rows], n), args)


def _text_lines(rows, notation=None):
    """Plain-text rows as the text prints them (its order of terms, the zero initial state dropped), one
    line at a time: a long derivation is streamed, never held as one string; under ``notation``'s renames."""
    from seqgrad.derive.program_text import sstr
    from seqgrad.derive.term_order import drop_zero_state

    return (f"{sstr(lhs, notation)} = {sstr(rhs[0], notation)}" for lhs, rhs in drop_zero_state(rows))


def _text(rows, notation=None) -> str:
    """:func:`_text_lines` as one string."""
    return "\n".join(_text_lines(rows, notation))


#: the largest --max-terms (docs/limits.md): 50 times the default guard; a closed form that size takes about 25 s
MAX_TERMS_LIMIT = 1_000_000

#: the largest width of a vector cell (docs/limits.md): the check against autograd holds H x H matrices and
#: their products for T = 25 steps; an LSTM with every width 256 is checked in about 8 s and 0.3 GB
MAX_WIDTH = 256


def _width(argument: str, value: int) -> int:
    from seqgrad import validate

    return validate.integer(argument, value, minimum=1, maximum=MAX_WIDTH)


def _sizes(args):
    given = {"D": ("--inputs", args.inputs), "H": ("--hidden", args.hidden), "C": ("--outputs", args.outputs)}
    if all(v is None for _, v in given.values()):
        return None
    return {k: (1 if v is None else _width(argument, v)) for k, (argument, v) in given.items()}


def _check_text(cell) -> str:
    """The autograd comparison as a few lines; marks the run failed when a gradient is off by more than the
    float64 policy allows (:mod:`crosscheck.tolerance`): atol + rtol times its largest entry, so a gradient that
    grows over 25 steps to 1e9 is judged by its relative error, not by an absolute 1e-9."""
    from seqgrad.crosscheck.cells import against_autograd
    from seqgrad.crosscheck.tolerance import tolerance

    tol = tolerance("float64", "cpu")
    rows = against_autograd(cell, steps=(1, 4, 25), trials=2)
    worst: dict = {}
    passed: dict = {}
    for T_, name, err, rel in rows:
        largest = err / rel if rel > 0 else 0.0  # the largest |entry| of autograd's gradient
        passed[name] = passed.get(name, True) and err <= tol.atol + tol.rtol * largest
        e, r = worst.get(name, (0.0, 0.0))
        worst[name] = (max(e, err), max(r, rel))
    ok = all(passed.values())
    lines = [f"check against torch autograd (float64, T = 1, 4, 25, 2 random points each; tolerance "
             f"{tol.atol:.0e} + {tol.rtol:.0e} x the largest entry): {'all gradients agree' if ok else 'MISMATCH'}"]
    lines += [f"  {name:<10} max abs {err:.1e}  max rel {rel:.1e}{'' if passed[name] else '  MISMATCH'}"
              for name, (err, rel) in worst.items()]
    checks.record(ok)
    return "\n".join(lines)


def _add_gated(p: argparse.ArgumentParser) -> None:
    _add_common(p)
    p.add_argument("--latex", action="store_true", help="print LaTeX: a complete display (align*, amsmath) that pastes into a document body")
    add_notation(p)


def _run_gated(kind):
    def run(args) -> str:
        from seqgrad.derive.builtin_cells import BUILTIN

        loss, on = loss_and_positions(args)
        cell = BUILTIN[kind](sizes=_sizes(args), loss=loss, on=on, reduction=args.reduction, batch=args.batch)
        return run_cell_object(cell, args, _check_text)

    return run


def _add_cell(p: argparse.ArgumentParser) -> None:
    p.add_argument("equations", metavar="EQUATIONS",
                   help="the step equations, e.g. 'z = w_x*x + w_h*h_prev; h = tanh(z)' (NAME_prev: the state at t-1)")
    p.add_argument("--states", required=True, metavar="NAMES", help="the states carried to the next step, e.g. 'h' or 'h c'")
    p.add_argument("--params", required=True, metavar="SPEC",
                   help="parameters: 'w_x w_h w_o' (scalar cell) or with shapes 'w_x:H,D w_h:H,H b:H w_o:C,H' (vector cell)")
    p.add_argument("--head", required=True, metavar="EXPR", help="the output head, e.g. 'w_o*h'")
    p.add_argument("--input", default="x", metavar="NAME", help="the input's name (default x)")
    p.add_argument("--sizes", metavar="D=3,H=4,C=2", help="widths of the vector cell (leave out for the scalar cell)")
    p.add_argument("--function", action="append", default=[], metavar="'f(z) = EXPR'",
                   help="an activation of your own, e.g. 'lrelu(z) = max(z, z/10)' (repeatable)")
    _add_common(p, sizes=False)
    p.add_argument("--latex", action="store_true", help="print LaTeX: a complete display (align*, amsmath) that pastes into a document body")
    add_notation(p)


def _parse_sizes(text):
    if text is None:
        return None
    out = {}
    for part in text.split(","):
        key, eq, value = part.partition("=")
        if not eq or not value.strip().isdigit():
            raise usage("--sizes", text, "widths as D=3,H=4,C=2")
        out[key.strip()] = _width(f"--sizes {key.strip()}", int(value))
    return out


def _parse_params(text, vector):
    out = {}
    for item in text.replace(";", " ").split():
        name, colon, shape = item.partition(":")
        if vector and not colon:
            raise usage("--params", item, "a shape for every parameter of the vector cell, e.g. w_x:H,D b_h:H")
        out[name] = tuple(shape.split(",")) if colon else ()
    return out if vector else list(out)


def _parse_functions(items):
    import re

    import sympy as sp

    from seqgrad.derive.safe_parse import parse_expression

    out = {}
    for item in items:
        m = re.fullmatch(r"\s*([A-Za-z]\w*)\s*\(\s*([A-Za-z]\w*)\s*\)\s*=(.+)", item)
        if not m:
            raise usage("--function", item, "a definition such as 'lrelu(z) = max(z, z/10)'")
        name, var, body = m.groups()
        expr = parse_expression(body, variables=[var], argument="--function", functions=out)  # the registry's and earlier ones
        v = next(s for s in expr.free_symbols if s.name == var) if expr.free_symbols else sp.Symbol(var)
        out[name] = sp.Lambda(v, expr)
    return out


def _run_cell(args) -> str:
    from seqgrad.derive.cell import Cell

    sizes = _parse_sizes(args.sizes)
    loss, on = loss_and_positions(args)
    cell = Cell(args.equations, states=args.states, params=_parse_params(args.params, sizes is not None), head=args.head,
                input=args.input, sizes=sizes, functions=_parse_functions(args.function), loss=loss, on=on,
                reduction=args.reduction, batch=args.batch)
    return run_cell_object(cell, args, _check_text)


#: model name -> (help, add_arguments, run returning the text to print)
MODELS: dict[str, tuple[str, Callable, Callable]] = {
    "rnn": ("the unrolled recurrent network (scalar or vector cell) and its BPTT", _add_rnn, _run_rnn),
    "gru": ("the GRU (PyTorch's convention): general t, unrolled, checked", _add_gated, _run_gated("gru")),
    "lstm": ("the LSTM (PyTorch's convention): general t, unrolled, checked", _add_gated, _run_gated("lstm")),
    "cell": ("your own recurrent cell from its step equations: general t, unrolled, checked", _add_cell, _run_cell),
}
from ._derive_decoder_conv import MODELS as _DECODER_CONV  # noqa: E402  (decoder, conv: issue 14)

MODELS.update(_DECODER_CONV)
from ._derive_torch import MODELS as _TORCH  # noqa: E402  (torch MODULE_PATH:NAME: issue 27)

MODELS.update(_TORCH)


def register(sub) -> None:
    p = sub.add_parser("derive", help="print a derivation: recurrences, closed forms, LaTeX, the graph")
    inner = p.add_subparsers(dest="model", metavar="MODEL", parser_class=type(p))
    inner.required = True
    for name, (help_text, add, _) in MODELS.items():
        q = inner.add_parser(name, help=help_text)
        add(q)
        q.set_defaults(handler=run)


def run(args) -> int:
    checks.reset()
    out = MODELS[args.model][2](args)
    for line in [out] if isinstance(out, str) else out:  # a long derivation is printed as it is rendered
        print(line)
    return 1 if checks.failed else 0
