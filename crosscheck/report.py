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


def _json_number(x: float):
    """JSON has no inf or NaN: write them as strings so the file stays valid."""
    if isinstance(x, float) and not math.isfinite(x):
        return "inf" if x > 0 else ("-inf" if x < 0 else "nan")
    return x


def summary(results: list[Result]) -> dict:
    counts = {s: sum(r.status == s for r in results) for s in ("pass", "fail", "skip", "error")}
    return {"total": len(results), "passed": counts["pass"], "failed": counts["fail"] + counts["error"],
            "skipped": counts["skip"], "ok": counts["fail"] + counts["error"] == 0,
            "textbook_errata": sum(r.textbook == "contradicted" for r in results)}


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
        lines.append(f"| {r.name} | {r.source} | {fmt_error(r.max_abs_error)} | {fmt_error(r.max_rel_error)} | {r.status} |")
    errata = [r for r in results if r.textbook == "contradicted"]
    if errata:
        lines += ["", "## Textbook errata", "",
                  "Printed claims of the course texts that the computation contradicts (each check confirms the recorded erratum):", ""]
        lines += [f"- **{r.name}** ({r.source}): {r.detail}" for r in errata]
    failed = [r for r in results if r.status in ("fail", "error")]
    if failed:
        lines += ["", "## Failures", ""]
        lines += [f"- **{r.name}**: {r.detail}" for r in failed]
    return "\n".join(lines) + "\n"


def as_latex(results: list[Result], *, device: str, dtype: str) -> str:
    s = summary(results)
    rows = "\n".join(
        f"{tex_escape(r.name)} & {tex_escape(r.source)} & {fmt_error(r.max_abs_error)} & {fmt_error(r.max_rel_error)} & {r.status} \\\\"
        for r in results
    )
    return (
        "\\documentclass{article}\n\\usepackage[margin=2cm]{geometry}\n\\usepackage{booktabs}\n\\usepackage{longtable}\n"
        "\\begin{document}\n\\section*{seqgrad check report}\n"
        f"Device \\texttt{{{tex_escape(device)}}}, dtype \\texttt{{{dtype}}}: {s['passed']} passed, {s['failed']} failed, "
        f"{s['skipped']} skipped of {s['total']}.\n\n"
        "{\\small\n\\begin{longtable}{p{5.2cm}p{4.2cm}llr}\n\\toprule\ncheck & source & max abs & max rel & result \\\\\n\\midrule\n\\endhead\n"
        f"{rows}\n\\bottomrule\n\\end{{longtable}}}}\n\\end{{document}}\n"
    )


def write(out_dir: str | Path, results: list[Result], *, device: str, dtype: str, total_seconds: float, figures: list[str]) -> dict[str, Path]:
    out = Path(out_dir)
    data = as_json(results, device=device, dtype=dtype, total_seconds=total_seconds, figures=figures)
    return {
        "json": write_text(out / "report.json", json.dumps(data, indent=2, sort_keys=False) + "\n"),
        "md": write_text(out / "report.md", as_markdown(results, device=device, dtype=dtype)),
        "tex": write_text(out / "report.tex", as_latex(results, device=device, dtype=dtype)),
    }
