"""Issue 25, a lecturer's review of the chapter (items beyond the floats of :mod:`test_notes_floats`): the space
between a table's caption and its rule, the MLP sublayer's backward pass, the wording of measured numbers, the
attention footnote's source, the appendix's introduction.

Each test fails on the output before the item was fixed.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from seqgrad.crosscheck import latexdoc


def _word_boxes(pdf) -> dict[str, tuple[float, float]]:
    """The first box (yMin, yMax, in points from the top) of each word of the PDF's first page."""
    out = subprocess.run(["pdftotext", "-bbox", "-f", "1", "-l", "1", str(pdf), "-"], capture_output=True, text=True,
                         check=True).stdout
    boxes: dict = {}
    for m in re.finditer(r'<word xMin="[\d.]+" yMin="([\d.]+)" xMax="[\d.]+" yMax="([\d.]+)">([^<]*)<', out):
        boxes.setdefault(m[3], (float(m[1]), float(m[2])))
    return boxes


@pytest.mark.tex
@pytest.mark.skipif(not (shutil.which("pdflatex") and shutil.which("pdftotext")), reason="no TeX engine/poppler")
@pytest.mark.parametrize("environment", ["table", "longtable"])
def test_a_caption_above_a_table_stands_clear_of_its_top_rule(tmp_path, environment):
    """Item 2: a caption above a table touched its top rule (LaTeX sets its skip above a caption, where a figure's
    goes). Compiled with the notes' preamble, the caption's words end at least 10 pt above the header's."""
    rows = "\\toprule\nHeadA & HeadB \\\\\n\\midrule\n1 & 2 \\\\\n\\bottomrule\n"
    table = ("\\begin{table}[h]\\centering\\caption{Probe caption words.}\n\\begin{tabular}{ll}\n" + rows
             + "\\end{tabular}\\end{table}\n" if environment == "table" else
             "\\begin{longtable}{ll}\n\\caption{Probe caption words.}\\\\\n" + rows + "\\end{longtable}\n")
    tex = tmp_path / "caption.tex"
    tex.write_text(latexdoc.preamble("caption") + "Text before.\n\n" + table + "\\end{document}\n")
    pdf = latexdoc.compile_pdf(tex, tmp_path / "build")
    boxes = _word_boxes(pdf)
    assert boxes["HeadA"][0] - boxes["Probe"][1] >= 10


@pytest.fixture(scope="module")
def handout(standalone_notes):
    """The handout's LaTeX source, as ``seqgrad latex notes.tex --standalone`` writes it."""
    return standalone_notes.read_text(encoding="utf-8")


def test_every_footnote_names_the_section_of_each_course_text_it_cites(handout):
    """Item 5: the attention section's footnote cited "Lecture 7" alone (the catalogue's source had no line), where
    every other footnote names the text's section, "Course notes, week 6, §14 One attention head"."""
    from seqgrad.sources import NAMES_IN_WORDS

    from test_notes_layout import footnotes

    notes = footnotes(handout[:handout.index("\\appendix")])
    assert len(notes) >= 9
    bare = [(name, note[:80]) for note in notes for name in NAMES_IN_WORDS.values()
            for _ in re.finditer(re.escape(name) + r"(?!, \\S\{\})", note)]
    assert bare == []
    assert any("Lecture 7, \\S{}3; Course notes, week 6, \\S{}14." in note for note in notes)  # the attention section


def test_the_appendix_says_in_plain_sentences_whom_it_is_for_and_what_it_holds(handout):
    """Item 6: the appendix opened as instructor material ("gives the evidence behind the notes, section by section");
    its first sentence now addresses the chapter's reader who wants the proofs and the checks, and the introduction
    names each part the appendix holds, in the order they come."""
    intro = handout[handout.index("\\section{Verification}"):]
    intro = intro[:intro.index("\\subsection{")]
    first = intro.split("\n\n", 1)[1].split(". ", 1)[0]
    assert first == "This appendix is for the reader of the chapter who wants the proofs and the checks behind its formulas"
    parts = [intro.index(p) for p in ("identities proved", "numeric checks", "every number printed in the course texts")]
    assert parts == sorted(parts)
    assert "evidence behind the notes" not in intro


def test_the_encoder_section_gives_the_mlp_sublayers_backward_pass_from_its_derivation(handout):
    """Item 3: the encoder section gave the attention sublayer's backward pass only. The MLP sublayer's follows its
    forward lines now: every line of :func:`derive.blocks.mlp_program`'s backward pass, printed by the notes' printer,
    the second shortcut in dU = dH' + ..., and ReLU's slope as the bracket [Z_mlp > 0]."""
    import sympy as sp

    from seqgrad.derive import blocks
    from seqgrad.derive.latex_settings import DEFAULT

    start = handout.index("\\section{The Transformer encoder block}")
    section = handout[start:handout.index("\\section{", start + 1)]
    mlp = blocks.mlp_program()
    notation = latexdoc.notes_notation(DEFAULT)
    d_out = sp.MatrixSymbol("d" + mlp.output.name, *mlp.G.shape)
    backward = section[section.index("\\begin{align*}", section.index("Backwards, the second shortcut")):]
    backward = backward[:backward.index("\\end{align*}")]
    backward = re.sub(r"\\\\\*?\n\s*&\\quad \{\}\+", " +", backward)  # a line broken for the page's width, joined again
    # rows end in \\ (or \\*, where the page may not break: after the first row, before the last)
    rows = [re.sub(r"\s+", " ", row.strip()) for row in re.split(r"\\\\\*?\n", backward.split("\n", 1)[1])]
    printed = [re.sub(r"\s+", " ", f"{notation.latex(d.target)} &= {notation.latex(d.value.xreplace({mlp.G: d_out}))}")
               for d in mlp.backward_lines()]
    assert [row.replace(" \\displaybreak[0]", "") for row in rows if row] == printed
    assert any(row.startswith("\\mathrm{d}\\mathbf{U} &= \\mathrm{d}\\mathbf{H'} + ") for row in rows)
    assert "\\odot [\\mathbf{Z}_{\\mathrm{mlp}} > 0]" in backward
    assert section.index("Backwards, the residual shows") < section.index("Backwards, the second shortcut")


def test_a_display_after_text_stands_in_that_paragraph(chapter_notes):
    """A blank line between a sentence and its display ended the paragraph: LaTeX opened an empty one for the display
    and left a line's gap above it (a lecturer saw white gaps above the LayerNorm, residual and worked-example
    displays).  In the chapter's body every display after a line of text (or another display) follows it directly."""
    tex = chapter_notes.read_text(encoding="utf-8")
    body = tex[tex.index("\\section{Recurrent"):tex.index("\\appendix")]
    gaps = [m.group(1)[-60:] for m in re.finditer(r"(?m)^(.*)\n\n\\begin\{align\*\}", body)
            if not re.match(r"\\(sub)*section|\\end\{(figure|table)\}", m.group(1))]
    assert gaps == [], gaps
    assert body.count("\\begin{align*}") > 60  # displays there are, and most follow their sentence
