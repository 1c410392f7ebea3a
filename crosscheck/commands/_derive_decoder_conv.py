"""``seqgrad derive decoder`` and ``seqgrad derive conv``: the models :mod:`crosscheck.commands.derive` adds from here.

Each entry is ``name -> (help, add_arguments, run returning the text to print)``, the shape of
:data:`crosscheck.commands.derive.MODELS`.
"""

from __future__ import annotations

import argparse
from typing import Callable

from ._common import add_notation
from ._derive_cell import latex_notation, printed_latex, printed_text

MAX_SIZE = 12  # the largest explicit convolution the command prints (every entry is a formula)
MAX_STACK = 100  # the most layers --receptive takes: the general formula over 100 symbolic layers takes 2 s, 1000 take 46 s


def _add_decoder(p: argparse.ArgumentParser) -> None:
    p.add_argument("--part", choices=("counts", "causal", "cross"), default="counts",
                   help="parameter counts (default), the causal block structure, or the cross-attention backward pass")
    p.add_argument("--d-model", type=int, default=256, metavar="D", help="model width for --part counts (default 256)")
    p.add_argument("--heads", type=int, default=4, metavar="H", help="heads for --part counts (default 4)")
    p.add_argument("--d-ff", type=int, default=1024, metavar="F", help="FFN width for --part counts (default 1024)")
    p.add_argument("--layers", type=int, default=6, metavar="N", help="decoder layers for --part counts (default 6)")
    p.add_argument("--positions", type=int, default=4, metavar="T", help="target positions for --part causal (default 4, at most 8)")
    p.add_argument("--post-norm", action="store_true", help="post-norm block for --part causal (default pre-norm)")
    p.add_argument("--entries", action="store_true",
                   help="for --part cross: every entry of one query over two keys (d_model = d_k = 1) instead of the "
                        "matrix program at symbolic size")
    p.add_argument("--latex", action="store_true", help="print LaTeX")
    add_notation(p)


def _run_decoder(args) -> str:
    import sympy as sp

    from seqgrad.derive import decoder as dd
    from seqgrad.derive.blocks import cross_attention_program
    from seqgrad.derive.program import latex_aligned
    from seqgrad.derive.program_text import sstr
    from seqgrad import validate
    from seqgrad.errors import SeqgradValueError

    latex_notation(args)  # the notation options are checked before any work
    if args.entries and args.part != "cross":
        raise SeqgradValueError("--part", args.part, "cross when --entries is given (the entries are the cross-attention's)")
    if args.part == "counts":
        D = validate.integer("--d-model", args.d_model, minimum=1)
        H = validate.integer("--heads", args.heads, minimum=1)
        F = validate.integer("--d-ff", args.d_ff, minimum=1)
        N = validate.integer("--layers", args.layers, minimum=1)
        rows = [(sp.Symbol("P_layer"), dd.decoder_layer_params()),
                (sp.Symbol("P_layer(%d, %d, %d)" % (D, H, F)), dd.decoder_layer_params(D, H, F)),
                (sp.Symbol("P_layer_no_bias_no_norm"), dd.decoder_layer_params(D, H, F, bias=False, norms=False)),
                (sp.Symbol("P_stack(N=%d)" % N), dd.decoder_stack_params(N, d_model=D, heads=H, d_ff=F)),
                (sp.Symbol("P_decoder_only_layer"), dd.decoder_layer_params(D, H, F, cross=False))]
        if args.latex:
            return printed_latex(lambda n: latex_aligned(rows, notation=n), args)
        t = dd.task29()
        task = (f"task 29: {int(t['encoder_stack']):,} + 6 * {int(t['cross_attention']):,} = {int(t['lesson_sum']):,} "
                f"(decoder stack without biases or norms at 256/4/1024: {int(t['decoder_stack']):,})")
        return printed_text(lambda n: "\n".join([f"{sstr(lhs, n)} = {sstr(rhs, n)}" for lhs, rhs in rows] + [task]), args)
    if args.part == "causal":
        T = validate.integer("--positions", args.positions, minimum=1, maximum=8)
        lines = []
        for causal in (True, False):
            block = dd.DecoderBlock(T, 3, causal=causal, norm_first=not args.post_norm)
            holds, blocks = block.causal_proof()
            deps = block.dependencies()
            lines.append(f"{'with' if causal else 'without'} the causal mask: output row i reads target rows")
            for i, d in enumerate(deps):
                lines.append(f"  row {i}: " + ", ".join(str(j) for (name, j) in sorted(d) if name == "h"))
            lines.append(f"  d out_i / d h_j = 0 for every j > i: {'proved' if holds else 'NO'}")
        value = dd.DecoderBlock(T, 3, causal=False).counterexample()
        lines.append(f"counterexample without the mask: dO_0/dx_{T - 1} = {float(sp.N(value, 15)):.6g} at an exact rational point")
        return printed_text(lambda n: "\n".join(lines), args)  # no formula: a --symbol renames nothing and is refused
    if not args.entries:  # the general result: one named matrix equation a line, at symbolic sizes
        block = cross_attention_program()
        if args.latex:
            return printed_latex(block.latex, args)
        return printed_text(lambda n: "\n".join(f"{sstr(d.target, n)} = {sstr(d.value, n)}"
                                                for d in block.program.definitions()), args)
    head = dd.CrossAttention(1, 2, 1, 1)
    grads = head.backward()
    rows = [(sp.Symbol(f"d{name}"), grads[name]) for name in ("X", "Z", "W_Q", "W_K", "W_V")]
    rows = [(sp.Symbol("O"), head.O)] + rows
    if args.latex:
        return printed_latex(lambda n: latex_aligned(rows, notation=n), args)
    return printed_text(lambda n: "\n".join(f"{sstr(lhs, n)} = {sstr(rhs, n)}" for lhs, rhs in rows), args)


def _add_conv(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stride", type=int, default=1, metavar="S", help="stride (default 1)")
    p.add_argument("--size", type=int, nargs="+", metavar="N",
                   help="an explicit input size (W, or H W; at most %d per axis): print every gradient entry" % MAX_SIZE)
    p.add_argument("--kernel", type=int, nargs="+", metavar="K", help="the explicit kernel size (one per axis of --size)")
    p.add_argument("--padding", type=int, default=0, metavar="P", help="zero padding of the explicit input, at most %d (default 0)" % MAX_SIZE)
    p.add_argument("--receptive", type=int, nargs="+", metavar="K", help="kernel sizes of a stack (at most %d layers): print its receptive field" % MAX_STACK)
    p.add_argument("--latex", action="store_true", help="print LaTeX")
    add_notation(p)


def _run_conv(args) -> str:
    import sympy as sp

    from seqgrad.derive import conv as dc
    from seqgrad.derive.program import latex_aligned
    from seqgrad.derive.program_text import sstr
    from seqgrad import validate
    from seqgrad.errors import SeqgradValueError

    from seqgrad.derive.latex_settings import Partial

    latex_notation(args)  # the notation options are checked before any work
    stride = validate.integer("--stride", args.stride, minimum=1)
    if args.receptive:
        if len(args.receptive) > MAX_STACK:
            raise SeqgradValueError("--receptive", f"{len(args.receptive)} kernel sizes", f"at most {MAX_STACK} layers")
        strides = [stride] * len(args.receptive)
        for k in args.receptive:
            validate.integer("--receptive", k, minimum=1)
        r = dc.receptive_field(args.receptive, strides)
        general = dc.receptive_field(sp.symbols(f"k_1:{len(args.receptive) + 1}"), sp.symbols(f"s_1:{len(args.receptive) + 1}"))
        return printed_text(lambda n: f"{sstr(sp.Symbol('r'), n)} = {sstr(general, n)}\n"
                                      f"r(kernels {args.receptive}, stride {stride}) = {r}", args)
    if args.size or args.kernel:
        if not args.size or not args.kernel:
            raise SeqgradValueError("--size/--kernel", (args.size, args.kernel), "both, with one kernel size per input axis")
        for n in args.size:
            validate.integer("--size", n, minimum=1, maximum=MAX_SIZE)
        validate.integer("--padding", args.padding, minimum=0, maximum=MAX_SIZE)
        ec = dc.ExplicitConv(args.size, args.kernel, stride=stride, padding=args.padding)
        f = ec.by_formula()
        # dL/dk_{0}, dL/db, dL/dx_{1}: the labels name the entries as the formulas do (k, x), so a rename reaches both
        entry = lambda name, key: sp.Symbol(f"{name.lower()}_{{{','.join(map(str, key))}}}" if key else name)
        rows = [(Partial(entry(name, key)), expr) for name in ("K", "b", "X") for key, expr in sorted(f[name].items())]
        proof = dc.prove_explicit(ec)
        if args.latex:
            return printed_latex(lambda n: latex_aligned(rows, notation=n), args)
        return printed_text(lambda n: "\n".join([f"{sstr(lhs, n)} = {sstr(rhs, n)}" for lhs, rhs in rows]
                                                 + [f"% {proof.summary()}"]), args)
    conv = dc.Conv2d(stride=stride)
    if args.latex:
        return printed_latex(conv.latex, args)
    rows = [(sp.Symbol("Y_ij"), conv.Y), (Partial(sp.Symbol("K_pq")), conv.grad_K()), (Partial(sp.Symbol("b")), conv.grad_b())]
    if stride == 1:
        rows += [(Partial(sp.Symbol("X_mn")), conv.grad_X()), (Partial(sp.Symbol("X_mn")), conv.grad_X_flipped())]
    return printed_text(lambda n: "\n".join(f"{sstr(lhs, n)} = {sstr(rhs, n)}" for lhs, rhs in rows), args)


MODELS: dict[str, tuple[str, Callable, Callable]] = {
    "decoder": ("the Transformer decoder: parameter counts, causal block structure, cross-attention backward", _add_decoder, _run_decoder),
    "conv": ("the convolution layer of lecture 7: gradients at symbolic or explicit size, receptive field", _add_conv, _run_conv),
}
