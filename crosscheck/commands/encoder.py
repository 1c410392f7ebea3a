"""``seqgrad encoder``: the course example's intermediates, by name, as text, JSON, Markdown or LaTeX."""

from __future__ import annotations

import json
import sys

from ._common import add_device, output_file, resolved_device


def register(sub) -> None:
    p = sub.add_parser("encoder", help="print the named intermediates of the course's Transformer encoder example")
    p.add_argument("--text", default=None, help='input phrase (default "a journey of a thousand miles begins"); '
                                                "words must be in the course vocabulary")
    p.add_argument("--stage", choices=("attention_on_H0", "prenorm_block", "all"), default="all",
                   help="attention_on_H0: two heads read H0 directly (Tables 10-20); prenorm_block: one pre-norm "
                        "block and the final LayerNorm (Tables 23-31); all (default): both")
    p.add_argument("--show", nargs="+", metavar="NAME", help="only these intermediates (e.g. H0 head1.A block0.U H_enc)")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="every named intermediate as nested lists, keyed by stage and name")
    fmt.add_argument("--markdown", action="store_true", help="Markdown tables at 3 significant figures")
    fmt.add_argument("--latex", action="store_true", help="booktabs tables at 3 significant figures")
    p.add_argument("--decimal-comma", action="store_true", help="LaTeX: write 0{,}65 instead of 0.65")
    p.add_argument("--dtype", choices=("float64", "float32"), default="float64", help="numeric precision (default float64)")
    p.add_argument("--out", metavar="FILE", help="write to FILE (atomically) instead of standard output")
    add_device(p)
    p.set_defaults(handler=run)


def _text_table(title, rows, row_labels, col_labels, markdown: bool) -> str:
    from seqgrad.latex_table import format_sigfig

    cells = [[format_sigfig(x) for x in r] for r in rows]
    if markdown:
        out = [f"### {title}", "", "| | " + " | ".join(col_labels) + " |", "|---|" + "---:|" * len(col_labels)]
        out += [f"| {row_labels[i]} | " + " | ".join(c) + " |" for i, c in enumerate(cells)]
        return "\n".join(out) + "\n"
    lw = max(len(s) for s in row_labels)
    cw = [max(len(col_labels[j]), *(len(c[j]) for c in cells)) for j in range(len(col_labels))]
    out = [title, " " * lw + "  " + "  ".join(h.rjust(cw[j]) for j, h in enumerate(col_labels))]
    out += [row_labels[i].ljust(lw) + "  " + "  ".join(c[j].rjust(cw[j]) for j in range(len(c))) for i, c in enumerate(cells)]
    return "\n".join(out) + "\n"


def run(args) -> int:
    from seqgrad.numeric import course
    from seqgrad.numeric.tokens import tokenize
    from seqgrad.atomic import write_text

    from ..encoder_tables import trace_tables
    from seqgrad.errors import SeqgradValueError
    from seqgrad.latex_table import booktabs

    device = resolved_device(args.device)
    if args.out is not None:
        output_file("--out", args.out)
    text = course.TEXT if args.text is None else args.text
    ids = course.token_ids(text)
    tokens = tokenize(text)
    stages = course.STAGES if args.stage == "all" else (args.stage,)
    traces = {s: course.trace(s, text, device=device, dtype=args.dtype) for s in stages}
    if args.show:
        known = sorted({n for r in traces.values() for n in r})
        for name in args.show:
            if not any(name in r for r in traces.values()):
                raise SeqgradValueError("--show", name, "a name of an intermediate: " + ", ".join(known))
    # text formats leave out the 3-D contributions unless asked for; JSON holds every name
    default = (lambda r: list(r)) if args.json else (lambda r: [n for n, v in r.items() if v.dim() < 3])
    chosen = {s: [n for n in (args.show or default(r)) if n in r] for s, r in traces.items()}

    if args.json:
        doc = {"source": "shared/seeds/000_a7606e3a9f173091.txt", "text": text, "tokens": tokens, "ids": ids,
               "dtype": args.dtype, "device": device,
               "stages": {s: {n: traces[s][n].detach().cpu().tolist() for n in chosen[s]} for s in stages}}
        out = json.dumps(doc, indent=1) + "\n"
    else:
        parts = []
        for s in stages:
            for title, rows, rl, cl in trace_tables(s, traces[s], chosen[s], tokens):
                if args.latex:
                    parts.append(booktabs(rows, row_labels=rl, col_labels=cl, corner="t", caption=title,
                                          decimal_comma=args.decimal_comma))
                else:
                    parts.append(_text_table(title, rows, rl, cl, markdown=args.markdown))
        out = "\n".join(parts)
    if args.out is not None:
        print(write_text(args.out, out))
    else:
        sys.stdout.write(out)
    return 0
