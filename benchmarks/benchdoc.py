"""Record benchmark results in docs/benchmarks.md, one marked section per benchmark (used by the
scripts of this folder only: ``import benchdoc`` works because a script's folder is on sys.path).

Each benchmark script owns the section between ``<!-- bench:NAME -->`` and
``<!-- /bench:NAME -->``; re-running it replaces only that section, atomically.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import re
from pathlib import Path

from seqgrad.atomic import write_text

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
HEADER = "# Benchmarks\n\nEvery figure below is written by a script in `benchmarks/`; each compares against a baseline measured in the same run and reports the ratio.\nRe-run one with `python benchmarks/NAME.py`.\n"


def machine_line() -> str:
    import os

    return f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPU cores, {platform.machine()}"


def record(name: str, markdown: str, doc: Path | None = None) -> Path:
    """Replace (or append) the section ``name`` of the benchmarks page with ``markdown``."""
    doc = Path(doc or DOC)
    text = doc.read_text(encoding="utf-8") if doc.exists() else HEADER
    stamp = _dt.date.today().isoformat()
    block = f"<!-- bench:{name} -->\n{markdown.rstrip()}\n\n_Measured {stamp} on {machine_line()}._\n<!-- /bench:{name} -->"
    pattern = re.compile(rf"<!-- bench:{re.escape(name)} -->.*?<!-- /bench:{re.escape(name)} -->", re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _m: block, text)
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    return write_text(doc, text)


def table(headers: list[str], rows: list[list[object]]) -> str:
    """A Markdown table."""
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def arguments(doc: str, *, repeats: int, threads: int | None = 1,
              threads_help: str = "torch CPU threads (default 1: one thread, as the speed issue asks)") -> argparse.ArgumentParser:
    """The options every timing script shares: ``--repeats``, ``--threads`` (none for a script without
    torch), ``--no-record`` and ``--smoke``; a script adds its own before :func:`parse`."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--repeats", type=int, default=repeats)
    if threads is not None:
        p.add_argument("--threads", type=int, default=threads, help=threads_help)
    p.add_argument("--no-record", action="store_true", help="print only; do not update docs/benchmarks.md")
    p.add_argument("--smoke", action="store_true", help="one repeat, nothing recorded (CI's slow step)")
    return p


def parse(parser: argparse.ArgumentParser, argv=None, **smoke) -> argparse.Namespace:
    """The parsed options; ``--smoke`` means one repeat and nothing recorded, plus the script's own
    ``smoke`` settings (e.g. ``dtype="float64"``)."""
    args = parser.parse_args(argv)
    if args.smoke:
        args.repeats, args.no_record = 1, True
        for key, value in smoke.items():
            setattr(args, key, value)
    return args


def versus_torch_table(device: str, threads, results: list[dict], target: str) -> str:
    """The table of a seqgrad-against-torch.nn timing: one row per dtype result (``dtype``, ``ours`` and
    ``torch`` median seconds, their ``ratio``, ``agree`` the outputs' comparison)."""
    return table(["device", "dtype", "torch threads", "seqgrad (ms)", "torch.nn (ms)", "ratio", "target", "outputs agree"],
                 [[device, r["dtype"], threads, f"{r['ours'] * 1e3:.1f}", f"{r['torch'] * 1e3:.1f}", f"{r['ratio']:.3f}",
                   target, f"{r['agree'].passed} ({r['agree'].max_abs_error:.1e})"] for r in results])


def add_baseline_tree(parser: argparse.ArgumentParser, what: str) -> None:
    """``--baseline-tree DIR`` and ``--baseline-label``: a checkout of the code before a change (e.g.
    ``git archive BASE | tar -x -C DIR``) measured alongside this tree; ``what`` says what is compared."""
    parser.add_argument("--baseline-tree", metavar="DIR", help=f"a checkout of the code before a change, for {what} "
                        "(without it, or when it is this tree, nothing is compared)")
    parser.add_argument("--baseline-label", help="how the record names the baseline tree (default: its path), e.g. its commit")


def baseline_tree(args: argparse.Namespace, root: Path) -> Path | None:
    """The ``--baseline-tree`` to compare with: None when none was given, it does not exist, or it is ``root``."""
    if not args.baseline_tree:
        return None
    tree = Path(args.baseline_tree).resolve()
    return tree if tree.is_dir() and tree != root.resolve() else None


def tree_env(tree: Path) -> dict:
    """The environment that runs the code of ``tree`` (its packages first on the path)."""
    return dict(os.environ, PYTHONPATH=str(tree))
