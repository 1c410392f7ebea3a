"""``seqgrad latex OUT.tex``: write a complete LaTeX document of derivations, verified identities, tables and figures."""

from __future__ import annotations

import argparse
import sys

from ._common import add_device, add_notation, jobs_option, notation_from, output_file, resolved_device


#: the longest a single proof may be given (docs/limits.md): an hour, where a larger number only overflows the timer
MAX_PROOF_SECONDS = 3600.0


def register(sub) -> None:
    from ..latexdoc import SECTION_NAMES

    p = sub.add_parser("latex", help="write a compilable LaTeX document of the derivations, identities, tables and figures")
    p.add_argument("out", metavar="OUT.tex", help="the document to write (its figures go to OUT-figures/ beside it)")
    p.add_argument("--sections", metavar="LIST",
                   help="comma-separated sections, in order, from " + ",".join(SECTION_NAMES)
                   + " (default: every section whose package is present)")
    p.add_argument("--standalone", action="store_true",
                   help="the handout: each section includes the one figure of its point, and OUT-figures/ holds "
                        "exactly those (without it, every figure of the sets the sections draw from)")
    p.add_argument("--appendix", action=argparse.BooleanOptionalAction, default=True,
                   help="end with the verification appendix: every identity with its id and source, the checks run now "
                        "and the printed claims (default); --no-appendix leaves it out, and the footnotes then say how "
                        "each result was verified without pointing to it")
    add_notation(p)
    p.add_argument("--digits", type=int, default=3, metavar="N",
                   help="significant figures of the numeric tables (default 3, as the course prints them)")
    p.add_argument("--proof-seconds", type=float, default=20.0, metavar="S",
                   help="time one exact proof may take while the document is written (default 20); a proof that "
                        "takes longer is reported as not proved here, never as proved; at most 3600")
    p.add_argument("--jobs", type=int, metavar="N",
                   help="worker processes: the sections are built in parallel (default: one per usable CPU core on cpu, "
                        "1 on cuda; 1 builds them in this process); the document is the same")
    add_device(p)
    p.set_defaults(handler=run)


def run(args) -> int:
    from seqgrad import validate

    from .. import latexdoc

    validate.real("--proof-seconds", args.proof_seconds, positive=True, maximum=MAX_PROOF_SECONDS)
    notation = notation_from(args)
    output_file("OUT.tex", args.out)
    if args.sections is None:
        skipped = [n for n in latexdoc.SECTION_NAMES if n not in latexdoc.available_sections()]
        if skipped:
            print(f"seqgrad: sections not in this checkout, left out: {', '.join(skipped)}", file=sys.stderr)
    device = resolved_device(args.device)
    path = latexdoc.write(args.out, args.sections, notation, standalone=args.standalone,
                          device=device, proof_seconds=args.proof_seconds,
                          digits=args.digits, jobs=jobs_option(args.jobs, device), appendix=args.appendix)
    print(path)
    return 0
