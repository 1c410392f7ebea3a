"""``seqgrad plot NAME``: write one set of figures (see crosscheck/figures/)."""

from __future__ import annotations

from pathlib import Path

from ._common import add_device, output_dir, removed_if_failed, resolved_device


def register(sub) -> None:
    from ..figures import FORMATS, figure_sets

    p = sub.add_parser("plot", help="write a set of figures")
    inner = p.add_subparsers(dest="figure_set", metavar="SET", parser_class=type(p))
    inner.required = True
    for name, module in figure_sets().items():
        q = inner.add_parser(name, help=module.HELP)
        q.add_argument("--out", default=f"seqgrad-figures/{name}", metavar="DIR", help="output directory")
        q.add_argument("--format", choices=FORMATS, default="png", help="file format (default png)")
        add_device(q)
        q.set_defaults(handler=run)


def run(args) -> int:
    from ..figures import figure_sets

    module = figure_sets()[args.figure_set]
    with removed_if_failed(args.out):  # a failed run (a full disk, a signal) leaves no empty directory
        output_dir("--out", args.out)
        written = module.write(Path(args.out), args.format, resolved_device(args.device))
    for path in written:
        print(path)
    return 0
