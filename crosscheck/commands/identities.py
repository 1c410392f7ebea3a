"""``seqgrad identities``: list the identity catalogue and verify every entry (exact proof + numeric check)."""

from __future__ import annotations

import json
import sys
import time


def register(sub) -> None:
    p = sub.add_parser("identities", help="list and verify the identity catalogue (exit 1 if one fails)")
    p.add_argument("--only", metavar="PATTERN", help="verify only entries whose name matches (glob or substring)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--latex", action="store_true", help="print each statement as a LaTeX display (align*, amsmath), "
                   "each result as a %% comment above it: the output pastes into a document body")
    p.add_argument("--list", action="store_true", help="list the entries without verifying them")
    p.set_defaults(handler=run)


def run(args) -> int:
    from seqgrad.derive import catalogue

    from ..checks.identities import verify

    entries = catalogue.select(args.only)
    if args.list:
        for e in entries:
            print(f"{e.name}\t{e.method}\t{e.scope}\t{e.source}")
        return 0
    rows = []
    for e in entries:
        start = time.perf_counter()
        outcome, proof = verify(e)
        rows.append({"name": e.name, "source": e.source, "title": e.title, "scope": e.scope, "assumptions": list(e.assumptions),
                     "method": e.method, "simplifier": e.simplifier,
                     "reason": e.reason, "relation": e.relation, "proved": bool(proof.holds), "passed": outcome.passed,
                     "max_abs_error": outcome.max_abs_error, "max_rel_error": outcome.max_rel_error,
                     "detail": outcome.detail, "seconds": round(time.perf_counter() - start, 3),
                     **({"latex": e.latex()} if args.latex else {})})
    failed = [r for r in rows if not r["passed"]]
    if args.json:
        json.dump({"entries": rows, "passed": len(rows) - len(failed), "failed": len(failed)}, sys.stdout, indent=2)
        print()
    else:
        width = max(len(r["name"]) for r in rows)
        comment = "% " if args.latex else ""  # with --latex, the results are TeX comments around the displays
        for r in rows:
            print(f"{comment}{r['name']:<{width}}  {r['method']:<14}  {'PASS' if r['passed'] else 'FAIL'}  {r['scope']}  [{r['source']}]")
            if args.latex:
                print(r["latex"])
        print(f"\n{comment}{len(rows) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0
