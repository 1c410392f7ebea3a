"""report.tex of a real ``seqgrad check`` compiles with pdflatex without a defect, and reads right.

A small real run (the groups claims, experiment and decoder, with a failing, a crashing and a skipped check added
so that every section of the summary has an entry) is compiled; the test fails on any LaTeX error or overfull box
wider than 1 pt, renders every page to PNG under ``$SEQGRAD_ARTEFACTS`` (``report_check/``) for a person to look at,
and reads the PDF's text back: errata labelled ``erratum`` (never ``pass``), the failure and skip reasons printed,
the Cyrillic of a source typeset (or transliterated where TeX Live has no Cyrillic), the summary before the table.
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import subprocess

import pytest

from seqgrad.crosscheck import latexdoc, registry, report
from seqgrad.crosscheck.registry import Check
from seqgrad.crosscheck.tolerance import Outcome
from seqgrad.latex_table import CYRILLIC_PREAMBLE, with_cyrillic

MISSING = [tool for tool in ("pdflatex", "pdftoppm", "pdftotext", "kpsewhich") if shutil.which(tool) is None]
pytestmark = [pytest.mark.tex, pytest.mark.skipif(bool(MISSING), reason=f"no TeX engine/poppler ({', '.join(MISSING)})")]

CYRILLIC = shutil.which("kpsewhich") is not None and all(
    subprocess.run(["kpsewhich", f], capture_output=True, text=True).stdout.strip() for f in ("t2aenc.def", "russianb.ldf"))
SECTION = "Что устанавливает эксперимент практикума?"


def _added(monkeypatch) -> list[str]:
    """A failing toolkit check, one that raises and one that skips, each with a long source and a long reason."""
    def fails(ctx):
        return Outcome(0.5, 0.25, False, "dL/dW_h of the derived program differs from torch autograd by 0.5 at step "
                       "t = 3 of T = 8 (tolerance 1e-10): a toolkit fault, reported with its reason")

    def raises(ctx):
        raise RuntimeError("the check itself crashed")

    def skips(ctx):
        return Outcome.skip("no CUDA GPU: this check compares the CUDA float32 run with the CPU float64 one")

    long_source = ("lesson §Medium tasks:222-226 (tasks 14-16; l.254 confirms 262,144 and 4.72M); "
                   f"week06 §{SECTION}:1291; wiki §Decoder architecture:86-98")
    added = [Check("zz_render.derivation_vs_autograd_with_a_rather_long_check_name", long_source, "zz_render", fails),
             Check("zz_render.crashes", "week06 §BPTT:722", "zz_render", raises),
             Check("zz_render.needs_cuda", "week06 §PE:556", "zz_render", skips)]
    registry.load_builtin_checks()
    for item in added:
        monkeypatch.setitem(registry._REGISTRY, item.name, item)
    return [item.name for item in added]


def test_report_tex_of_a_real_check_compiles_renders_and_reads_right(tmp_path, monkeypatch):
    from test_latex_render import compile_and_render

    from seqgrad.crosscheck.cli import main

    added = _added(monkeypatch)
    out = tmp_path / "rep"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        status = main(["check", "--jobs", "1", "--only", "claims", "--only", "experiment", "--only", "decoder",
                       "--only", "zz_render", "--out", str(out)])
    assert status == 1, buf.getvalue()  # the added toolkit failure and crash, nothing else
    data = __import__("json").loads((out / "report.json").read_text())
    assert {c["name"] for c in data["checks"] if c["kind"] == "toolkit" and c["status"] in ("fail", "error")} == set(added[:2])
    errata = [c["name"] for c in data["checks"] if c["kind"] == "erratum"]
    assert errata, "the texts' recorded errata are among the claims"

    pdf, pngs = compile_and_render(out / "report.tex", tmp_path, "report_check")  # no error, no overfull box > 1 pt
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    flat = " ".join(text.split())
    summary, table = flat.split("Checks check source", 1)
    for title in ("Toolkit failures", "Textbook errata", "Skipped"):
        assert title in summary
    assert "differs from torch autograd by 0.5" in summary and "the check itself crashed" in summary
    assert "no CUDA GPU: this check compares" in summary
    for name in errata:  # each erratum's row ends in "erratum", never "pass"
        short = name.replace("_", " ")  # pdftotext reads the typewriter underscore as a space
        row = re.search(re.escape(short) + r"\s.*?\b(pass|erratum|fail|error|skip|finding)\b", table)
        assert row and row.group(1) == "erratum", (name, row and row.group(0))
    assert ("Что устанавливает эксперимент практикума" if CYRILLIC else "Chto ustanavlivaet eksperiment praktikuma") in flat
    assert "U+04" not in flat
    assert len(pngs) >= 3


def test_cyrillic_transliterates_where_tex_has_none(tmp_path):
    """The fallback branch of the preamble (no T2A/babel Russian): the report still compiles, in Latin letters."""
    body = with_cyrillic(f"week06 §{SECTION}:1291 and Я люблю МО")
    tex = tmp_path / "fallback.tex"
    tex.write_text("\\documentclass{article}\n" + CYRILLIC_PREAMBLE.replace("\\def\\seqgradhascyr{}", "")
                   + "\\begin{document}\n" + body + "\n\\end{document}\n")
    pdf = latexdoc.compile_pdf(tex, tmp_path / "build")
    text = " ".join(subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout.split())
    assert "week06 §Chto ustanavlivaet eksperiment praktikuma?:1291 and Ya lyublyu MO" in text


def test_the_report_sets_a_minus_sign_and_an_option_as_such():
    assert report.tex("which is -1.340, tasks 14-16, use --strict") == "which is $-$1.340, tasks 14-16, use \\texttt{-{}-strict}"
