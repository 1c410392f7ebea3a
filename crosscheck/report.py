"""Write the ``seqgrad check`` report: report.json, report.md and report.tex.

The JSON schema is documented in docs/report-schema.md.  Only the fields named
there as timings differ between two runs on the same machine.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from seqgrad import __version__
from seqgrad.atomic import write_text
from seqgrad.latex_table import tex_escape

from .registry import Result

SCHEMA_VERSION = 1
TIMING_FIELDS = ("seconds", "total_seconds")
#: verdicts of the texts' claims that are listed as notes, not errata (derive.claims.STATUSES)
NOTE_VERDICTS = ("rounding-consistent", "truncated", "undecided")
UNITS_NOTE = "u: the discrepancy in units of the last printed digit (a check of printed numbers)"


def _json_number(x: float):
    """JSON has no inf or NaN: write them as strings so the file stays valid."""
    if isinstance(x, float) and not math.isfinite(x):
        return "inf" if x > 0 else ("-inf" if x < 0 else "nan")
    return x


def summary(results: list[Result]) -> dict:
    counts = {s: sum(r.status == s for r in results) for s in ("pass", "fail", "skip", "error")}
    return {"total": len(results), "passed": counts["pass"], "failed": counts["fail"] + counts["error"],
            "skipped": counts["skip"], "ok": counts["fail"] + counts["error"] == 0,
            "textbook_errata": sum(r.textbook == "contradicted" for r in results),
            "textbook_notes": sum(r.textbook in NOTE_VERDICTS for r in results)}


def as_json(results: list[Result], *, device: str, dtype: str, total_seconds: float, figures: list[str]) -> dict:
    checks = []
    for r in results:
        d = r.as_dict()
        d["max_abs_error"] = _json_number(d["max_abs_error"])
        d["max_rel_error"] = _json_number(d["max_rel_error"])
        checks.append(d)
    return {
        "schema_version": SCHEMA_VERSION,
        "seqgrad_version": __version__,
        "device": device,
        "dtype": dtype,
        "summary": summary(results),
        "checks": checks,
        "figures": sorted(figures),
        "total_seconds": round(total_seconds, 3),
    }


def fmt_error(x: float) -> str:
    if not math.isfinite(x):
        return "inf"
    return "0" if x == 0 else f"{x:.2e}"


def as_markdown(results: list[Result], *, device: str, dtype: str) -> str:
    s = summary(results)
    lines = [
        "# seqgrad check report",
        "",
        f"Device `{device}`, dtype `{dtype}`: {s['passed']} passed, {s['failed']} failed, {s['skipped']} skipped of {s['total']}.",
        "",
        "| check | source | max abs error | max rel error | result |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(f"| {r.name} | {r.source} | {fmt_error(r.max_abs_error)} | {relative_cell(r)} | {r.status} |")
    if any(r.units is not None for r in results):
        lines += ["", f"In the max rel error column, {UNITS_NOTE}."]
    lines += textbook_markdown(results)
    failed = [r for r in results if r.status in ("fail", "error")]
    if failed:
        lines += ["", "## Failures", ""]
        lines += [f"- **{r.name}**: {r.detail}" for r in failed]
    return "\n".join(lines) + "\n"


def relative_cell(r: Result) -> str:
    """The relative-error cell: for a check of printed numbers, the discrepancy in units of the last printed
    digit (``0.42 u``), since a raw ratio against a 3-figure table is easily misread."""
    return f"{r.units:.2f} u" if r.units is not None and math.isfinite(r.units) else fmt_error(r.max_rel_error)


def _verdict_line(r: Result) -> str:
    return f"{r.textbook}: {r.reason}" + (f" ({r.attribution})" if r.attribution else "")


def textbook_markdown(results: list[Result]) -> list[str]:
    """The errata (contradicted claims) and notes (rounding-consistent, truncated, undecided) of the texts."""
    lines = []
    errata = [r for r in results if r.textbook == "contradicted"]
    if errata:
        lines += ["", "## Textbook errata", "",
                  "Claims of the course texts that the computation contradicts (each check confirms the recorded erratum):", ""]
        lines += [f"- **{r.name}** ({r.source}): {_verdict_line(r)}" for r in errata]
    notes = [r for r in results if r.textbook in NOTE_VERDICTS]
    if notes:
        lines += ["", "## Textbook notes", "",
                  "Printed numbers that are not the rounded value but are explained (rounded or unrounded intermediates, "
                  "truncation), or that could not be decided:", ""]
        lines += [f"- **{r.name}** ({r.source}): {_verdict_line(r)}" for r in notes]
    return lines


def textbook_latex(results: list[Result]) -> str:
    """The errata and notes of the texts as LaTeX sections (empty when there are none)."""
    parts = []
    for title, chosen in (("Textbook errata", [r for r in results if r.textbook == "contradicted"]),
                          ("Textbook notes", [r for r in results if r.textbook in NOTE_VERDICTS])):
        if chosen:
            items = "\n".join(f"\\item \\texttt{{{tex_escape(r.name)}}} ({tex_escape(r.source)}): {tex_escape(_verdict_line(r))}"
                              for r in chosen)
            parts.append(f"\\subsection*{{{title}}}\n\\begin{{itemize}}\n{items}\n\\end{{itemize}}\n")
    return "".join(parts)


def as_latex(results: list[Result], *, device: str, dtype: str) -> str:
    s = summary(results)
    rows = "\n".join(
        f"{tex_escape(r.name)} & {tex_escape(r.source)} & {fmt_error(r.max_abs_error)} & {tex_escape(relative_cell(r))} & {r.status} \\\\"
        for r in results
    )
    units_note = f"\n{tex_escape(UNITS_NOTE)}.\n" if any(r.units is not None for r in results) else ""
    return (
        "\\documentclass{article}\n\\usepackage[margin=2cm]{geometry}\n\\usepackage{booktabs}\n\\usepackage{longtable}\n"
        "\\begin{document}\n\\section*{seqgrad check report}\n"
        f"Device \\texttt{{{tex_escape(device)}}}, dtype \\texttt{{{dtype}}}: {s['passed']} passed, {s['failed']} failed, "
        f"{s['skipped']} skipped of {s['total']}.\n\n"
        "{\\small\n\\begin{longtable}{p{5.2cm}p{4.2cm}llr}\n\\toprule\ncheck & source & max abs & max rel & result \\\\\n\\midrule\n\\endhead\n"
        f"{rows}\n\\bottomrule\n\\end{{longtable}}}}\n{units_note}{textbook_latex(results)}\\end{{document}}\n"
    )


def write(out_dir: str | Path, results: list[Result], *, device: str, dtype: str, total_seconds: float, figures: list[str]) -> dict[str, Path]:
    out = Path(out_dir)
    data = as_json(results, device=device, dtype=dtype, total_seconds=total_seconds, figures=figures)
    return {
        "json": write_text(out / "report.json", json.dumps(data, indent=2, sort_keys=False) + "\n"),
        "md": write_text(out / "report.md", as_markdown(results, device=device, dtype=dtype)),
        "tex": write_text(out / "report.tex", as_latex(results, device=device, dtype=dtype)),
    }
