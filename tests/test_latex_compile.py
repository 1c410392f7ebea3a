"""Exported LaTeX compiles with a real TeX engine: page counts by pdfinfo, a page rendered by pdftoppm.

These tests need pdflatex and poppler-utils (Debian: texlive-latex-base
texlive-latex-recommended texlive-latex-extra poppler-utils, as .ci/run installs).
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import sympy as sp

from crosscheck import latexdoc, report
from crosscheck.registry import Result
from derive.latex_layout import align, equation, equation_table
from derive.latex_settings import Notation

MISSING = [tool for tool in ("pdflatex", "pdfinfo", "pdftoppm", "pdftotext") if shutil.which(tool) is None]
pytestmark = [
    pytest.mark.tex,
    pytest.mark.skipif(bool(MISSING), reason=f"no TeX engine/poppler here ({', '.join(MISSING)} missing): install "
                       "texlive-latex-base texlive-latex-recommended texlive-latex-extra poppler-utils"),
]


def pages(pdf) -> int:
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    return int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))


def pdf_text(pdf) -> str:
    return subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout


def render_png(pdf, page: int, out_stem):
    subprocess.run(["pdftoppm", "-png", "-r", "80", "-f", str(page), "-l", str(page), "-singlefile", str(pdf), str(out_stem)],
                   check=True, capture_output=True)
    return out_stem.with_suffix(".png")


def ink_fraction(png) -> float:
    """Fraction of pixels that are not white: a blank page has 0."""
    import matplotlib.image as mpimg

    img = mpimg.imread(str(png))
    return float((img[..., :3].mean(axis=-1) < 0.9).mean())


def test_layout_pieces_compile_and_render(tmp_path):
    """Every layout piece in one document: aligned derivation with a long sum broken over lines,
    a split equation, the forward/backward table, bold vectors, a decimal comma."""
    g = [sp.Symbol(f"g_{t}^z") for t in range(12)]
    h = [sp.Symbol(f"h_{t - 1}") for t in range(12)]
    n = Notation(vectors={"h", "W", "g", "e"})
    body = "\n\n".join([
        "\\section{Layout}",
        align([(sp.Symbol("dL/dW_h"), sum(a * b for a, b in zip(g, h)))], n, width=60),
        equation(sp.Symbol("s"), sum(sp.Float(0.125) * x for x in sp.symbols("x0:16")), Notation(decimal_comma=True),
                 numbered=True, label="eq:s", width=50),
        equation_table(["forward pass", "backward pass"], [
            [(sp.Symbol("z_0"), sp.Symbol("w_x") * sp.Symbol("x_0")), (sp.Symbol("g_0^z"), sp.Symbol("g_0^h") * sp.Function("phi_d")(sp.Symbol("z_0")))],
            [(sp.Symbol("yhat"), sp.Symbol("w_o") * sp.Symbol("h_2")), (sp.Symbol("g_2^h"), sp.Symbol("e") * sp.Symbol("w_o"))],
        ]),
        "Matrix: " + "$" + n.latex(sp.MatrixSymbol("W_Q", 3, 5)) + "$.",
    ])
    tex = tmp_path / "layout.tex"
    tex.write_text(latexdoc.preamble("layout") + body + "\n\\end{document}\n")
    pdf = latexdoc.compile_pdf(tex, tmp_path / "build")
    assert pages(pdf) == 1
    words = pdf_text(pdf)
    assert "forward pass" in words and "backward pass" in words
    png = render_png(pdf, 1, tmp_path / "page")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert 0.002 < ink_fraction(png) < 0.5


def test_cli_document_compiles(tmp_path, capsys):
    """``seqgrad latex`` writes a complete document that pdflatex compiles."""
    from crosscheck.cli import main

    name = next((s for s in ("positional", "residual", "attention", "rnn") if s in latexdoc.available_sections()), None)
    if name is None:
        pytest.skip("no section's package is in this checkout yet")
    out = tmp_path / "notes.tex"
    assert main(["latex", str(out), "--sections", name, "--standalone", "--decimal-comma"]) == 0, capsys.readouterr().err
    source = out.read_text()
    for package in ("amsmath", "booktabs", "graphicx"):
        assert f"\\usepackage{{{package}}}" in source
    assert source.startswith("\\documentclass") and source.rstrip().endswith("\\end{document}")
    pdf = latexdoc.compile_pdf(out, tmp_path / "build")
    assert pages(pdf) >= 1
    assert latexdoc.SECTIONS[name].title.split(":")[0] in pdf_text(pdf)


def test_report_tex_compiles_and_breaks_over_pages(tmp_path):
    """The report.tex of ``seqgrad check`` compiles, whatever characters the check sources hold;
    a long report continues over pages (longtable)."""
    results = [Result(f"check_{i:03d}_{'x' * (i % 7)}", f"seed 000 L{100 + i} & table #{i} (§3.3, ≈ −0.5 ± 1 <|>)", "group_a",
                      ("pass", "fail", "skip", "error")[i % 4], i % 4 == 0, float("inf") if i % 4 == 3 else 1e-16 * i,
                      0.0, "cpu", "float64", "detail with 50% of ~ and $", 0.01) for i in range(150)]
    paths = report.write(tmp_path / "rep", results, device="cpu", dtype="float64", total_seconds=1.0, figures=[])
    pdf = latexdoc.compile_pdf(paths["tex"], tmp_path / "build")
    assert pages(pdf) >= 3
    assert "L249 & table #149" in pdf_text(pdf)  # escaped specials come out as written


def test_compile_error_is_one_clear_line(tmp_path):
    tex = tmp_path / "bad.tex"
    tex.write_text("\\documentclass{article}\\begin{document}\\undefinedmacro\\end{document}\n")
    with pytest.raises(latexdoc.LatexError, match="Undefined control sequence"):
        latexdoc.compile_pdf(tex, tmp_path / "build")


@pytest.mark.slow
def test_every_available_section_with_figures(tmp_path):
    """The whole document, figures included (slow: every proof and figure set runs)."""
    names = latexdoc.available_sections()
    if not names:
        pytest.skip("no section's package is in this checkout yet")
    out = latexdoc.write(tmp_path / "all.tex", names)
    pdf = latexdoc.compile_pdf(out, tmp_path / "build")
    words = pdf_text(pdf)
    for name in names:
        assert latexdoc.SECTIONS[name].title.split(":")[0] in words
    assert pages(pdf) >= len(names)
