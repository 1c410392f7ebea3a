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

from seqgrad.crosscheck import latexdoc, report

from seqgrad.crosscheck import latex_parts
from seqgrad.crosscheck.registry import Result
from seqgrad.derive.latex_layout import align, equation, equation_table
from seqgrad.derive.latex_settings import Notation

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
    from seqgrad.crosscheck.cli import main

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
    words = pdf_text(pdf)
    assert "week06 §Vector:249 &" in words and "#149 (§3.3, ≈ −0.5 ± 1 <|>)" in words  # specials as written, the one citation style


def test_compile_error_is_one_clear_line(tmp_path):
    tex = tmp_path / "bad.tex"
    tex.write_text("\\documentclass{article}\\begin{document}\\undefinedmacro\\end{document}\n")
    with pytest.raises(latexdoc.LatexError, match="Undefined control sequence"):
        latexdoc.compile_pdf(tex, tmp_path / "build")


@pytest.mark.slow
def test_every_available_section_with_figures(chapter_notes, chapter_pdf):
    """The whole document, figures included (slow: every proof and figure set runs; built and compiled once for the
    run, conftest's chapter)."""
    names = latexdoc.available_sections()
    if not names:
        pytest.skip("no section's package is in this checkout yet")
    assert "\\includegraphics" in chapter_notes.read_text(encoding="utf-8")
    words = pdf_text(chapter_pdf)
    for name in names:
        assert latexdoc.SECTIONS[name].title.split(":")[0] in words
    assert pages(chapter_pdf) >= len(names)


def _derivation_exports() -> dict[str, str]:
    """name -> the LaTeX that each kind of derivation object exports through its own ``latex()``."""
    import importlib.util

    out: dict[str, str] = {}

    def have(*modules):
        return all(importlib.util.find_spec(m) is not None for m in modules)

    if have("seqgrad.derive.rnn"):
        from seqgrad.derive import rnn
        net = rnn.unroll(steps=3, activation="tanh")
        out["rnn.unroll(3).latex()"] = net.latex()
        out["rnn.unroll(3).backward_table().latex()"] = net.backward_table().latex()
        out["rnn.unroll(2, vector).latex()"] = rnn.unroll(steps=2, activation="tanh", inputs=2, hidden=2, outputs=1).latex()
    if have("seqgrad.derive.gated"):
        from seqgrad.derive import gated
        gru, lstm = gated.gru(steps=2), gated.lstm(steps=2)
        out["gated.gru(2).latex()"] = gru.latex()
        out["gated.gru(2).step_jacobian(1).latex()"] = gru.step_jacobian(1).latex()
        out["gated.lstm(2).latex()"] = lstm.latex()
        out["gated.lstm(2).step_jacobian(1, wrt='h').latex()"] = lstm.step_jacobian(1, wrt="h").latex()
    if have("seqgrad.derive.activation_facts"):
        from seqgrad.derive import activation_facts
        out.update({f"activation_facts.{f.name}": f.latex() for f in activation_facts.FACTS.values()})
    if have("seqgrad.derive.positional"):
        from seqgrad.derive import positional
        pe = positional.Sinusoidal(5)
        out["Sinusoidal(5).latex()"] = pe.latex()
        out["Sinusoidal(5).rotation().latex()"] = pe.rotation().latex()
        out["Sinusoidal(5).shift_identity().latex()"] = pe.shift_identity().latex()
        out["unpaired_has_no_scalar_shift(Sinusoidal(5)).latex()"] = positional.unpaired_has_no_scalar_shift(pe).latex()
    if have("seqgrad.derive.softmax", "seqgrad.derive.attention"):
        from seqgrad.derive import attention, softmax
        out["SoftmaxJacobian(3).latex()"] = softmax.SoftmaxJacobian(3).latex()
        out["SelfAttention(T=2, d_model=2, d_k=2).latex()"] = attention.SelfAttention(T=2, d_model=2, d_k=2).latex()
    if have("seqgrad.derive.layernorm", "seqgrad.derive.residual"):
        from seqgrad.derive import layernorm, residual
        out["LayerNorm(3).latex()"] = layernorm.LayerNorm(3).latex()
        for placement in residual.ResidualJacobian.PLACEMENTS:
            out[f"ResidualJacobian(2, {placement!r}).latex()"] = residual.ResidualJacobian(2, placement).latex()
        out["EncoderBlock(2, 2).latex()"] = residual.EncoderBlock(2, 2).latex()
        out["DepthProduct(3, 2).latex()"] = residual.DepthProduct(3, 2).latex()
    if have("seqgrad.derive.decoder", "seqgrad.derive.conv"):
        from seqgrad.derive import conv, decoder
        out["CrossAttention(2, 2, 1, 1).latex()"] = decoder.CrossAttention(2, 2, 1, 1).latex()
        out["DecoderBlock().latex()"] = decoder.DecoderBlock().latex()
        out["Conv2d().latex()"] = conv.Conv2d().latex()
    if have("seqgrad.derive.attention"):
        from seqgrad.derive import attention
        out["MultiHeadAttention(2, 4, 2).latex()"] = attention.MultiHeadAttention(2, 4, 2).latex()
        out["Equivariance().latex()"] = attention.Equivariance().latex()
        out["SelfAttention(masked).latex()"] = attention.SelfAttention(2, 2, 2, mask=attention.causal_mask(2)).latex()
    if have("seqgrad.derive.verification"):
        from seqgrad.derive import verification
        out["verify(...).latex()"] = verification.verify("sin(x)**2 + cos(x)**2 = 1", variables="x").latex()
        out["verify(refuted).latex()"] = verification.verify("sin(x) = x", variables="x").latex()
    if have("seqgrad.derive.program"):
        from seqgrad.derive import rnn
        out["Definition.latex()"] = rnn.unroll(steps=2).program.definitions(("forward",))[0].latex()
    if have("seqgrad.derive.catalogue"):
        from seqgrad.derive import catalogue
        out.update({f"catalogue {e.name}": e.latex() for e in catalogue.entries() if len(e.latex()) <= 20000})
    return out


_COMPLETE = ("\\begin{tabular}", "\\begin{align*}")


def _display(name: str, tex: str) -> str:
    """Every export is a complete display (``align*``, or a table) that goes into the body as it is."""
    assert tex.lstrip().startswith(_COMPLETE), f"{name}: not a complete display: {tex[:80]!r}"
    assert tex.count("\\begin{") == tex.count("\\end{"), name
    return tex


@pytest.mark.slow
def test_every_derivation_object_exports_latex_that_compiles(tmp_path):
    """Each derivation object's own ``latex()`` compiles in a document with amsmath (one compile; on a
    failure, each export is compiled alone to name the ones that break)."""
    exports = _derivation_exports()
    if not exports:
        pytest.skip("no derivation package is in this checkout yet")

    def compile_body(name: str, body: str):
        tex = tmp_path / f"{name}.tex"
        tex.write_text(latexdoc.preamble("exports") + body + "\n\\end{document}\n")
        return latexdoc.compile_pdf(tex, tmp_path / "build")

    try:
        pdf = compile_body("all", "\n\n".join(f"% {name}\n\\paragraph{{{latex_parts.text(name)}}}\n{_display(name, tex)}"
                                              for name, tex in exports.items()))
    except latexdoc.LatexError:
        pass
    else:  # it compiles: it must also set without an overfull box or anything undefined, and render
        problems = latexdoc.tex_problems((pdf.parent / "all.log").read_text(errors="replace"))
        assert problems == [], "exports that do not fit the page:\n" + "\n".join(problems)
        png = render_png(pdf, pages(pdf), tmp_path / "last")
        assert ink_fraction(png) > 0.001
        return
    broken = []
    for i, (name, tex) in enumerate(exports.items()):
        try:
            compile_body(f"one{i}", _display(name, tex))
        except latexdoc.LatexError as exc:
            broken.append(f"{name}: {str(exc).splitlines()[0][:160]}")
    assert not broken, "exports that do not compile:\n" + "\n".join(broken)
