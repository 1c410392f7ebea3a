"""Compile-and-render: what seqgrad prints as LaTeX pastes into a document and sets without defects.

Each snippet is compiled inside a minimal document (``article``, ``amsmath``, and ``booktabs``
for tables: the packages :data:`derive.latex_layout.PACKAGES` names) with a real TeX engine;
a test fails on any overfull box wider than 1 pt or any undefined control sequence in the log.
Every page is rendered to PNG (pdftoppm) under ``$SEQGRAD_ARTEFACTS`` (default: the test's
temporary directory) so that a person can look at them, and each page must carry ink.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import sympy as sp

from seqgrad.crosscheck import latexdoc

from seqgrad.crosscheck import latex_parts
from seqgrad.derive.latex_layout import PACKAGES

MISSING = [tool for tool in ("pdflatex", "pdftoppm", "pdfinfo") if shutil.which(tool) is None]
pytestmark = [pytest.mark.tex, pytest.mark.skipif(bool(MISSING), reason=f"no TeX engine/poppler ({', '.join(MISSING)})")]


def artefacts(tmp_path: Path, name: str) -> Path:
    root = os.environ.get("SEQGRAD_ARTEFACTS")
    out = (Path(root) / name) if root else (tmp_path / "pages")
    out.mkdir(parents=True, exist_ok=True)
    return out


def minimal(body: str) -> str:
    return ("\\documentclass{article}\n" + "".join(f"\\usepackage{{{p}}}\n" for p in PACKAGES)
            + "\\begin{document}\n" + body + "\n\\end{document}\n")


def compile_and_render(tex: Path, tmp_path: Path, name: str, passes: int = 1,
                       pdf: Path | None = None) -> tuple[Path, list[Path]]:
    """Compile ``tex`` (``passes`` times: a document with contents and references needs 2), or take its ``pdf``
    compiled already (its log beside it), assert that the log reports no overfull box > 1 pt and nothing undefined,
    render every page to PNG and assert that each has ink."""
    if pdf is None:
        pdf = latexdoc.compile_pdf(tex, tmp_path / f"build-{name}", passes=passes)
    log = (pdf.parent / (tex.stem + ".log")).read_text(errors="replace")
    problems = latexdoc.tex_problems(log)
    out = artefacts(tmp_path, name)
    subprocess.run(["pdftoppm", "-png", "-r", "60", str(pdf), str(out / "page")], check=True, capture_output=True)
    pngs = sorted(out.glob("page*.png"))
    assert problems == [], f"{name}: TeX reports layout defects:\n" + "\n".join(problems)
    assert pngs, f"{name}: no page rendered"
    import matplotlib.image as mpimg

    for k, png in enumerate(pngs):
        img = mpimg.imread(str(png))
        ink = float((img[..., :3].mean(axis=-1) < 0.9).mean())
        # the last page may hold only the line after the display ("Text after it.", about 0.0004 of the page)
        assert ink > (0.0001 if k == len(pngs) - 1 else 0.001), f"{png.name} is blank"
    return pdf, pngs


def cli(*argv) -> str:
    from seqgrad.crosscheck.cli import main
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(list(argv)) == 0
    return buf.getvalue()


SNIPPETS = {
    "derive rnn --steps 3 --latex": ("derive", "rnn", "--steps", "3", "--latex"),
    "derive rnn --steps 4 --expand --latex": ("derive", "rnn", "--steps", "4", "--expand", "--latex"),
    "derive rnn --steps 6 --expand --latex": ("derive", "rnn", "--steps", "6", "--expand", "--latex"),
    "derive rnn --steps 3 --inputs 2 --hidden 3 --outputs 1 --latex":
        ("derive", "rnn", "--steps", "3", "--inputs", "2", "--hidden", "3", "--outputs", "1", "--latex"),
    "derive rnn --steps 2 --hidden 2 --expand --latex": ("derive", "rnn", "--steps", "2", "--hidden", "2", "--expand", "--latex"),
    "derive rnn --steps 40 --latex": ("derive", "rnn", "--steps", "40", "--latex"),
    "derive gru --steps 2 --latex": ("derive", "gru", "--steps", "2", "--latex"),
    "derive lstm --steps 3 --latex": ("derive", "lstm", "--steps", "3", "--latex"),
    "derive lstm --steps 2 --hidden 2 --latex": ("derive", "lstm", "--steps", "2", "--hidden", "2", "--latex"),
    "derive rnn --general --latex": ("derive", "rnn", "--general", "--latex"),
    "derive lstm --general --latex": ("derive", "lstm", "--general", "--latex"),
    "encoder --stage attention_on_H0 --show H0 head1.A --latex":
        ("encoder", "--stage", "attention_on_H0", "--show", "H0", "head1.A", "--latex"),
    "identities --only softmax-* --latex": ("identities", "--only", "softmax-*", "--latex"),
    "identities --only pe-dot-offset-d6 --latex": ("identities", "--only", "pe-dot-offset-d6", "--latex"),
    "verify ... --latex": ("verify", "diff(sigmoid(x), x) = sigmoid(x)*(1 - sigmoid(x))", "--vars", "x", "--latex"),
    "derive conv --latex": ("derive", "conv", "--latex"),
    "derive decoder --latex": ("derive", "decoder", "--latex"),
}


@pytest.mark.parametrize("name", list(SNIPPETS))
def test_cli_snippet_pastes_into_a_document_body(name, tmp_path):
    snippet = cli(*SNIPPETS[name])
    assert not snippet.lstrip().startswith("$"), "a display, not inline math"
    tex = tmp_path / "snippet.tex"
    tex.write_text(minimal(f"Text before the display.\n{snippet}\nText after it.\n"))
    compile_and_render(tex, tmp_path, re.sub(r"\W+", "_", name))


def _exports() -> dict[str, str]:
    from seqgrad.derive import gated, rnn

    net = rnn.unroll(steps=4)
    return {
        "rnn.unroll(3).latex()": rnn.unroll(steps=3).latex(),
        "rnn.unroll(4) grad w_x expanded": __import__("seqgrad.derive.latex_layout", fromlist=["display"]).display(
            [(sp.Symbol("G"), net.grad("w_x", expand=True)), (sp.Symbol("H"), net.grad("w_h", expand=True))]),
        "gated.gru(2).latex()": gated.gru(steps=2).latex(),
        "gated.lstm(2).latex()": gated.lstm(steps=2).latex(),
        "gated.lstm(3).latex()": gated.lstm(steps=3).latex(),
        "gated.lstm(2, vector).latex()": gated.lstm(steps=2, inputs=2, hidden=2, outputs=1).latex(),
    }


def test_derivation_objects_paste_and_break_across_pages(tmp_path):
    """``.latex()`` of the recurrent derivations is a complete display: a long one (LSTM, 3 steps)
    continues over pages instead of running off the bottom, and no line is wider than the text."""
    exports = _exports()
    body = "\n\n".join(f"\\section*{{{latex_parts.text(k)}}}\n{v}" for k, v in exports.items())
    tex = tmp_path / "exports.tex"
    tex.write_text(minimal(body))
    pdf, pngs = compile_and_render(tex, tmp_path, "exports")
    assert len(pngs) >= 3


@pytest.mark.slow
def test_notes_document_standalone_and_with_figures(tmp_path):
    """``seqgrad latex`` (sections rnn and gates): standalone, and with its figures beside it."""
    for standalone in (True, False):
        out = tmp_path / ("alone" if standalone else "figs") / "notes.tex"
        out.parent.mkdir()
        argv = ["latex", str(out), "--sections", "rnn,gates", "--proof-seconds", "5"] + (["--standalone"] if standalone else [])
        cli(*argv)
        compile_and_render(out, tmp_path, f"notes_{'standalone' if standalone else 'figures'}")


@pytest.mark.slow
def test_whole_notes_document(chapter_notes):
    """Every section with its figures (slow: every proof and figure set runs; the chapter is built once for the run,
    and test_latex_notes compiles and renders it)."""
    import re

    source = chapter_notes.read_text(encoding="utf-8")
    # every figure of the chapter is pointed to from its text ("Figure n shows ..."), outside the figures themselves
    outside = re.sub(r"\\begin\{figure\}.*?\\end\{figure\}", "", source, flags=re.S)
    labels = re.findall(r"\\label\{(fig:[^}]+)\}", source)
    assert len(labels) == source.count("\\includegraphics") >= 18
    assert [label for label in labels if f"\\ref{{{label}}}" not in outside] == []


def test_report_tex(tmp_path):
    """report.tex of ``seqgrad check`` (a few real checks) compiles without layout defects."""
    from seqgrad.crosscheck import report
    from seqgrad.crosscheck.registry import all_checks, run_checks

    results = run_checks(all_checks("rnn.*")[:4], device="cpu", show_progress=False)
    paths = report.write(tmp_path / "rep", results, device="cpu", dtype="float64", total_seconds=1.0, figures=[])
    compile_and_render(Path(paths["tex"]), tmp_path, "report")


def test_a_defect_is_caught(tmp_path):
    """The check itself can fail: a line too long for the page and an unknown macro are both reported."""
    tex = tmp_path / "bad.tex"
    tex.write_text(minimal("\\[" + " + ".join(f"x_{{{i}}}" for i in range(80)) + "\\]\n\\relax"))
    build = tmp_path / "b"
    latexdoc.compile_pdf(tex, build)
    problems = latexdoc.tex_problems((build / "bad.log").read_text())
    assert problems and "Overfull" in problems[0]
    assert latexdoc.tex_problems("! Undefined control sequence.\nl.3 \\foo") == ["! Undefined control sequence."]
