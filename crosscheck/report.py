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


def errata(results: list[Result]) -> list[tuple[str, str, str]]:
    """``(check, source, what is wrong)`` for every printed claim the computation contradicts, in the
    one citation style; the explanation is the recorded erratum (or the first contradicted claim)."""
    import re

    from seqgrad.sources import normalize

    out = []
    for r in results:
        if r.textbook != "contradicted":
            continue
        m = re.search(r"\[erratum: (.*?)\]\s*$", r.detail) or re.search(r"\[erratum: (.*)\]", r.detail)
        if m:
            why = m.group(1)
        else:
            first = re.search(r"contradicted: ([^;\[]*)", r.detail)
            why = first.group(1).strip() if first else r.detail
        out.append((r.name, normalize(r.source), why))
    return out


def errata_lines(results: list[Result]) -> list[str]:
    """One terminal line per erratum: ``ERRATUM claims.pe_d4_pos1 (lesson §PE:104): cos(0.01) = ...``."""
    return [f"ERRATUM {name} ({source}): {why}" for name, source, why in errata(results)]


def latex_figures(figures: list[str]) -> str:
    """The report's figures (paths relative to the report's directory), each with its figure set's caption."""
    from .figures import figure_sets
    from .latexdoc import figure_caption

    if not figures:
        return ""
    sets = figure_sets()
    parts = ["\\clearpage\n\\section*{Figures}"]
    for rel in sorted(figures):
        path = Path(rel)
        module = sets.get(path.parent.name)
        caption = figure_caption(module, path.stem) if module is not None else path.stem
        parts.append("\\begin{figure}[htbp]\n\\centering\n"
                     f"\\includegraphics[width=0.7\\linewidth]{{{path.as_posix()}}}\n"
                     f"\\caption{{{tex_escape(caption)}}}\n\\end{{figure}}")
    return "\n\n".join(parts) + "\n"


def latex_table(results: list[Result]) -> str:
    """Every check: name, source (one citation style, the formulas of its note typeset), largest errors, result;
    a longtable over pages."""
    from seqgrad.derive.prose import cited

    from .latexdoc import code

    rows = "\n".join(
        f"{code(r.name)} & {cited(r.source)} & {fmt_error(r.max_abs_error)} & {tex_escape(relative_cell(r))} & {r.status} \\\\"
        for r in results
    )
    return ("{\\small\n\\begin{longtable}{>{\\raggedright\\arraybackslash}p{5.2cm}>{\\raggedright\\arraybackslash}p{4.6cm}llr}\n"
            "\\toprule\ncheck & source & max abs & max rel & result \\\\\n\\midrule\n\\endhead\n"
            f"{rows}\n\\bottomrule\n\\end{{longtable}}}}\n")


def as_latex(results: list[Result], *, device: str, dtype: str, figures: list[str] = ()) -> str:
    s = summary(results)
    units_note = f"\n{tex_escape(UNITS_NOTE)}.\n" if any(r.units is not None for r in results) else ""
    return (
        "\\documentclass{article}\n\\usepackage[margin=2cm]{geometry}\n\\usepackage{booktabs}\n\\usepackage{longtable}\n"
        "\\usepackage{array}\n\\usepackage{graphicx}\n"
        "\\begin{document}\n\\sloppy\n\\section*{seqgrad check report}\n"
        f"Device \\texttt{{{tex_escape(device)}}}, dtype \\texttt{{{dtype}}}: {s['passed']} passed, {s['failed']} failed, "
        f"{s['skipped']} skipped of {s['total']}. Sources cite the course texts as \\texttt{{key §section:line}} "
        "(see docs/sources.md).\n\n"
        + textbook_latex(results) + "\n\\section*{Checks}\n" + latex_table(results) + units_note
        + latex_figures(list(figures)) + "\\end{document}\n"
    )


def write(out_dir: str | Path, results: list[Result], *, device: str, dtype: str, total_seconds: float, figures: list[str]) -> dict[str, Path]:
    out = Path(out_dir)
    data = as_json(results, device=device, dtype=dtype, total_seconds=total_seconds, figures=figures)
    return {
        "json": write_text(out / "report.json", json.dumps(data, indent=2, sort_keys=False) + "\n"),
        "md": write_text(out / "report.md", as_markdown(results, device=device, dtype=dtype)),
        "tex": write_text(out / "report.tex", as_latex(results, device=device, dtype=dtype, figures=figures)),
    }
