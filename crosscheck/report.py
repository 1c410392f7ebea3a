"""Write the ``seqgrad check`` report: report.json, report.md and report.tex.

The JSON schema is documented in docs/report-schema.md.  Only the fields named
there as timings differ between two runs on the same machine.
"""

from __future__ import annotations

import functools
import json
import math
import re
import textwrap
from pathlib import Path

from seqgrad import __version__
from seqgrad.atomic import write_text
from seqgrad.latex_table import CYRILLIC_PREAMBLE, tex_escape, with_cyrillic

from .registry import Result
from .tolerance import fmt_error

SCHEMA_VERSION = 2  # 2: summary.passed and .failed count toolkit checks only; summary.findings, checks[].kind
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
    """The counts of a run, each check counted once: a toolkit check passed, failed (or raised) or was skipped;
    an erratum or a finding (:func:`crosscheck.registry.kind_of`) is counted as that, whatever its status.
    ``ok``: no toolkit check failed, so ``seqgrad check`` exits 0 (without ``--strict``)."""
    toolkit = [r for r in results if r.kind == "toolkit"]
    failed = sum(r.status in ("fail", "error") for r in toolkit)
    return {"total": len(results), "passed": sum(r.status == "pass" for r in toolkit), "failed": failed,
            "skipped": sum(r.status == "skip" for r in toolkit), "ok": failed == 0,
            "textbook_errata": sum(r.kind == "erratum" for r in results),
            "findings": sum(r.kind == "finding" for r in results),
            "textbook_notes": sum(r.textbook in NOTE_VERDICTS for r in results)}


def exit_status(results: list[Result], strict: bool = False) -> int:
    """``seqgrad check``'s exit status: 1 when a toolkit check failed or raised, and under ``strict`` also when the
    texts have an erratum or the experiment a finding; else 0."""
    s = summary(results)
    return 0 if s["ok"] and not (strict and (s["textbook_errata"] or s["findings"])) else 1


def label(r: Result) -> str:
    """What a check came to, in one word: ``pass``, ``fail``, ``error``, ``skip``, ``erratum`` or ``finding``."""
    return r.status if r.kind == "toolkit" else r.kind


def counts_line(results: list[Result]) -> str:
    """``106 checks: 102 passed, 0 failed, 0 skipped; 3 textbook errata, 1 experiment finding``."""
    s = summary(results)
    plural = lambda n, one, many: f"{n} {one if n == 1 else many}"  # noqa: E731
    return (f"{plural(s['total'], 'check', 'checks')}: {s['passed']} passed, {s['failed']} failed, {s['skipped']} skipped; "
            f"{plural(s['textbook_errata'], 'textbook erratum', 'textbook errata')}, "
            f"{plural(s['findings'], 'experiment finding', 'experiment findings')}")


def verdict_line(results: list[Result], strict: bool = False) -> str:
    """What the exit status says, in words."""
    s = summary(results)
    if not s["ok"]:
        return f"The toolkit failed {s['failed']} of its checks: exit status 1."
    if strict and s["textbook_errata"] + s["findings"]:
        return "The toolkit passed; --strict fails on the errata and findings: exit status 1."
    tail = " (--strict fails on errata and findings)" if s["textbook_errata"] + s["findings"] else ""
    return f"The toolkit passed: exit status 0{tail}."


def why(r: Result) -> str:
    """The reason a check did not pass, or the erratum it confirms: for an erratum what is wrong in the text (the
    recorded erratum, else the first contradicted claim), for every other check its detail."""
    if r.kind != "erratum":
        return r.detail
    m = re.search(r"\[erratum: (.*?)\]\s*$", r.detail) or re.search(r"\[erratum: (.*)\]", r.detail)
    if m:
        text = m.group(1)
    else:
        first = re.search(r"contradicted: ([^;\[]*)", r.detail)
        text = first.group(1).strip() if first else r.detail
    return text if r.status == "pass" else f"new, not recorded as an erratum: {text}"


#: The sections of every report, in order: (title, which results, what they are).  A check is in at most one.
SECTIONS = (
    ("Toolkit failures", lambda r: r.kind == "toolkit" and r.status in ("fail", "error"),
     "Checks of the toolkit that failed or raised: a derivation that disagrees with its reference, or a crash."),
    ("Textbook errata", lambda r: r.kind == "erratum",
     "Claims of the course texts that the computation contradicts (recorded errata, confirmed, unless marked new)."),
    ("Experiment findings", lambda r: r.kind == "finding",
     "Trends the course text states that the recorded experiment does not show."),
    ("Skipped", lambda r: r.status == "skip", "Checks that could not run here."),
)


def sections(results: list[Result]) -> list[tuple[str, str, list[Result]]]:
    """``(title, what, results)`` for every section of :data:`SECTIONS` that has results."""
    return [(title, what, chosen) for title, pick, what in SECTIONS if (chosen := [r for r in results if pick(r)])]


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


def as_markdown(results: list[Result], *, device: str, dtype: str) -> str:
    """The summary first (the counts, what the exit status says, then each section of :data:`SECTIONS` with the
    source and the reason of every entry), the notes on the texts, then the table of every check."""
    lines = ["# seqgrad check report", "", f"Device `{device}`, dtype `{dtype}`. {counts_line(results)}.", "",
             verdict_line(results).replace("--strict", "`--strict`")]
    for title, what, chosen in sections(results):
        lines += ["", f"## {title}", "", what, ""]
        lines += [f"- **{r.name}** ({r.source}): {why(r)}" for r in chosen]
    lines += textbook_markdown(results)
    lines += ["", "## Checks", "", "| check | source | max abs error | max rel error | result |", "|---|---|---|---|---|"]
    lines += [f"| {r.name} | {_md(r.source)} | {fmt_error(r.max_abs_error)} | {relative_cell(r)} | {label(r)} |"
              for r in results]
    if any(r.units is not None for r in results):
        lines += ["", f"In the max rel error column, {UNITS_NOTE}."]
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    """Text inside a Markdown table cell or list item: a ``|`` would end the cell."""
    return text.replace("|", "\\|")


def relative_cell(r: Result) -> str:
    """The relative-error cell: for a check of printed numbers, the discrepancy in units of the last printed
    digit (``0.42 u``), since a raw ratio against a 3-figure table is easily misread."""
    return f"{r.units:.2f} u" if r.units is not None and math.isfinite(r.units) else fmt_error(r.max_rel_error)


def _verdict_line(r: Result) -> str:
    return f"{r.textbook}: {r.reason}" + (f" ({r.attribution})" if r.attribution else "")


def textbook_markdown(results: list[Result]) -> list[str]:
    """The notes on the texts: printed numbers that are not the rounded value but are explained (rounding-consistent,
    truncated), or that could not be decided (the errata are a section of their own)."""
    notes = [r for r in results if r.textbook in NOTE_VERDICTS]
    if not notes:
        return []
    return (["", "## Textbook notes", "", NOTES_WHAT, ""]
            + [f"- **{r.name}** ({r.source}): {_verdict_line(r)}" for r in notes])


NOTES_WHAT = ("Printed numbers that are not the rounded value but are explained (rounded or unrounded intermediates, "
              "truncation), or that could not be decided:")


def terminal(results: list[Result], *, strict: bool = False, ran: str = "", width: int = 80) -> str:
    """What ``seqgrad check`` prints, at most ``width`` columns wide: the table, one row per check (its name, largest
    errors and result, ``ERRATUM`` and ``FINDING`` included) and under each row that is not a pass its reason,
    shortened at a word; each section of :data:`SECTIONS` with every entry's source and full reason, wrapped at
    words; the counts (followed by ``ran``, e.g. the time taken) and what the exit status says."""
    fixed = 2 + 8 + 2 + 8 + 2 + 7
    w = min(max([len(r.name) for r in results] + [5]), width - fixed)
    wrap = functools.partial(textwrap.wrap, width=width, break_on_hyphens=False)
    lines = [f"{'check':<{w}}  {'max abs':>8}  {'max rel':>8}  result"]
    for r in results:
        word = label(r)
        cells = f"  {fmt_error(r.max_abs_error):>8}  {relative_cell(r):>8}  {word if word == 'skip' else word.upper()}"
        if len(r.name) > w:  # a name too long for its column gets a line of its own
            lines += [r.name, " " * w + cells]
        else:
            lines.append(f"{r.name:<{w}}{cells}")
        if word != "pass":
            lines.append(textwrap.shorten(why(r), width, initial_indent="    ", placeholder=" ..."))
    for title, what, chosen in sections(results):
        lines += [""] + wrap(f"{title} ({len(chosen)}): {what}")
        for r in chosen:
            lines += wrap(f"{label(r).upper()} {r.name} ({r.source})", initial_indent="  ", subsequent_indent="      ")
            lines += wrap(why(r), initial_indent="      ", subsequent_indent="      ")
    lines += [""] + wrap(counts_line(results) + ran) + wrap(verdict_line(results, strict))
    return "\n".join(lines)


def latex_figures(figures: list[str]) -> str:
    """The report's figures (paths relative to the report's directory), each with its figure set's caption."""
    from .figures import figure_sets
    from .latex_parts import figure_caption, words

    if not figures:
        return ""
    sets = figure_sets()
    parts = ["\\clearpage\n\\section*{Figures}"]
    for rel in sorted(figures):
        path = Path(rel)
        module = sets.get(path.parent.name)
        caption = (words(figure_caption(module, path.stem), **getattr(module, "FORMULAS", {})) if module is not None
                   else tex_escape(path.stem))
        parts.append("\\begin{figure}[htbp]\n\\centering\n"
                     f"\\includegraphics[width=\\linewidth,height=0.4\\textheight,keepaspectratio]{{{path.as_posix()}}}\n"
                     f"\\caption{{{caption}}}\n\\end{{figure}}")
    return "\n\n".join(parts) + "\n"


_MINUS = re.compile(r"(?<![\w)\-])-(?=\d|inf\b)")  # a sign before a number, not a hyphen: "is -1.340", not "14-16"


def tex(text: str) -> str:
    """Plain text for report.tex: escaped, Cyrillic set in Russian (or transliterated where TeX lacks it), a
    minus sign before a number set as one (a hyphen may end a line: "which is -" / "1.340"), an option in
    typewriter type (``--strict`` would set as an en dash)."""
    escaped = with_cyrillic(text)
    return _MINUS.sub("$-$", re.sub(r"--([a-z][a-z-]*)", r"\\texttt{-{}-\1}", escaped))


def tex_source(source: str) -> str:
    """A source for report.tex in the one citation style, the formulas of its note typeset, Cyrillic set."""
    from seqgrad.derive.prose import Prose
    from seqgrad.sources import normalize

    return with_cyrillic(normalize(getattr(source, "recorded", source)), lambda part: Prose(part).latex())


def latex_table(results: list[Result]) -> str:
    """Every check: name, source (one citation style, the formulas of its note typeset), largest errors, result;
    a longtable over pages."""
    from .latex_parts import code

    rows = "\n".join(
        f"{code(r.name)} & {tex_source(r.source)} & {fmt_error(r.max_abs_error)} & {tex_escape(relative_cell(r))} & "
        f"{_tex_label(r)} \\\\"
        for r in results
    )
    return ("{\\small\n\\begin{longtable}{>{\\raggedright\\arraybackslash}p{5.2cm}>{\\raggedright\\arraybackslash}p{5.4cm}llr}\n"
            "\\toprule\ncheck & source & max abs & max rel & result \\\\\n\\midrule\n\\endhead\n"
            f"{rows}\n\\bottomrule\n\\end{{longtable}}}}\n")


def _tex_label(r: Result) -> str:
    word = label(r)
    return word if word in ("pass", "skip") else f"\\textbf{{{word}}}"


def latex_sections(results: list[Result]) -> str:
    """The summary's sections (:data:`SECTIONS`) and the notes on the texts, each entry with its source and reason."""
    from .latex_parts import code

    parts = []
    for title, what, chosen in sections(results):
        items = "\n".join(f"\\item {code(r.name)} ({tex_source(r.source)}): {tex(why(r))}" for r in chosen)
        parts.append(f"\\subsection*{{{title}}}\n{tex(what)}\n\\begin{{itemize}}\n{items}\n\\end{{itemize}}\n")
    notes = [r for r in results if r.textbook in NOTE_VERDICTS]
    if notes:
        items = "\n".join(f"\\item {code(r.name)} ({tex_source(r.source)}): {tex(_verdict_line(r))}" for r in notes)
        parts.append(f"\\subsection*{{Textbook notes}}\n{tex(NOTES_WHAT)}\n\\begin{{itemize}}\n{items}\n\\end{{itemize}}\n")
    return "".join(parts)


def as_latex(results: list[Result], *, device: str, dtype: str, figures: list[str] = ()) -> str:
    from seqgrad.derive.latex_layout import PACKAGES

    units_note = f"\n{tex_escape(UNITS_NOTE)}.\n" if any(r.units is not None for r in results) else ""
    return (
        "\\documentclass{article}\n\\usepackage[margin=2cm]{geometry}\n" + CYRILLIC_PREAMBLE
        + "".join(f"\\usepackage{{{p}}}\n" for p in PACKAGES)
        + "\\usepackage{longtable}\n\\usepackage{array}\n\\usepackage{graphicx}\n"
        "\\setlength{\\parindent}{0pt}\n\\setlength{\\parskip}{0.6ex}\n"
        "\\begin{document}\n\\sloppy\n\\section*{seqgrad check report}\n"
        f"Device \\texttt{{{tex_escape(device)}}}, dtype \\texttt{{{dtype}}}. {tex(counts_line(results))}.\n\n"
        f"{tex(verdict_line(results))}\n\n"
        "Sources cite the course texts as \\texttt{key \\S{}section:line} (see docs/sources.md).\n\n"
        + latex_sections(results) + "\n\\section*{Checks}\n" + latex_table(results) + units_note
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
