"""Issue 25, the lecturer's third review: one symbol per meaning across the handout (body and appendix), the appendix
in the body's notation (adjoints, the positional encodings' pair index), the course's figures and tables never read
as the handout's own, no empty identity in the appendix, a column block printed as math.  Read from the handout as
``seqgrad latex notes.tex --standalone`` writes it."""
import re

import pytest
import sympy as sp


@pytest.fixture(scope="module")
def tex(standalone_notes):
    return standalone_notes.read_text(encoding="utf-8")


def part(tex: str, start: str, end: str) -> str:
    """The text from the heading ``start`` up to the next ``end``."""
    i = tex.index(start)
    return tex[i:tex.index(end, i + len(start))]


def _first_term(display_line: str) -> str:
    return display_line.split("&=", 1)[1].strip().split(" + ")[0]


def test_appendix_block_program_names_adjoints_as_the_body(tex):
    """The pre-norm block's dH starts with the gradient of its output U, dU in the body (encoder): the appendix's
    entry of the same program says dU too, not the LayerNorm's dY."""
    body = part(tex, "\\section{The Transformer encoder block}", "\\subsection")
    body_line = next(line for line in body.splitlines() if line.startswith("\\mathrm{d}\\mathbf{H} "))
    entry = part(tex, "\\texttt{residual-\\allowbreak{}pre-\\allowbreak{}norm-\\allowbreak{}block-\\allowbreak{}program}",
                 "\\end{align*}")
    entry_line = next(line for line in entry.splitlines() if line.startswith("\\mathrm{d}\\mathbf{H} "))
    assert _first_term(body_line) == _first_term(entry_line) == "\\mathrm{d}\\mathbf{U}"


def test_course_figures_and_tables_never_read_as_the_handouts(tex):
    """The handout's own figures and tables are referred to by \\ref; a course's is 'the course's Fig.~3', 'Tab.~4'."""
    plain = re.sub(r"\\texttt\{(?:[^{}]|\{[^{}]*\})*\}", "", tex)
    assert re.findall(r"\b(?:Figures?|Tables?)\s+\d", plain) == []
    assert "the course's Fig.~3, left" in tex and "Course notes, week 6, Tab.~4" in tex


def test_no_identity_that_says_nothing(tex):
    """(lambda I)^4 = lambda^4 I is a fact of scalar matrices: left out of the appendix (crosscheck.latex_parts.NOT_IN_NOTES)."""
    from seqgrad.crosscheck.latex_parts import NOT_IN_NOTES

    assert r"(\lambda \mathbf{I})^{4}" not in tex
    assert all(name.replace("-", "-\\allowbreak{}") not in tex for name in NOT_IN_NOTES)


def test_column_block_is_math_counted_from_one():
    """A block of columns prints as math, columns a + 1 to a + w counted from 1, and means the columns a .. a + w - 1
    counted from 0 (what its entries are): the printed range and the entries agree."""
    from seqgrad.derive.latex_settings import Notation
    from seqgrad.derive.rules import ColumnBlock

    W = sp.MatrixSymbol("W", 2, 6)
    block = ColumnBlock(W, 2, 3)
    assert Notation().latex(block) == r"(\mathbf{W})_{\bullet,\,3 \ldots 5}"
    assert [block[0, c] for c in range(3)] == [W[0, 2], W[0, 3], W[0, 4]]  # the 3rd to the 5th column


def test_column_block_defined_where_first_used(tex):
    """The handout prints no slice (``_{:,0:a}``), and says what the column block means right after its first display."""
    assert not re.search(r"_\{:,", tex)
    first = tex.index(r"_{\bullet,\,")
    definition = tex.index(r"Here $(\mathbf{W}_{O})_{\bullet,\,i \ldots j}$ is the block of columns $i$ to $j$")
    assert first < definition < tex.index("\\paragraph", first)
