"""Issue 25, the lecturer's third review: one symbol per meaning across the handout (body and appendix), the appendix
in the body's notation (adjoints, the positional encodings' pair index), the course's figures and tables never read
as the handout's own, no empty identity in the appendix, a column block printed as math.  Read from the handout as
``seqgrad latex notes.tex --standalone`` writes it."""
import re

import pytest
import sympy as sp

from test_notes_symbols import letters_of, math_runs


@pytest.fixture(scope="module")
def tex(standalone_notes):
    return standalone_notes.read_text(encoding="utf-8")


def part(tex: str, start: str, end: str) -> str:
    """The text from the heading ``start`` up to the next ``end``."""
    i = tex.index(start)
    return tex[i:tex.index(end, i + len(start))]


def formulas(text: str) -> list[str]:
    """Every formula of ``text``, body or appendix (:func:`test_notes_symbols.math_runs` reads up to the appendix)."""
    return math_runs(text.replace("\\appendix", ""))


def symbols(text: str, letter: str) -> list[str]:
    """The formulas of ``text`` in which ``letter`` stands as a symbol (not inside a word or a command's name)."""
    pattern = re.compile(rf"(?<![A-Za-z]){letter}(?![A-Za-z])")
    return [r for r in formulas(text) if pattern.search(letters_of(r))]


def test_symbols_reader_finds_a_kernel_index():
    """The reader itself: it finds the kernel's old index u in a sum and an entry, not in \\sum or \\mu."""
    text = r"the kernel $\kappa_{u,v}$ and \begin{align*} y &= \sum_{u} \mu \end{align*} and $\xi$"
    assert sorted(symbols(text, "u")) == sorted([r"\kappa_{u,v}", r" y &= \sum_{u} \mu "])


def test_conv_kernel_is_not_indexed_by_the_update_gate(tex):
    """u_t is the GRU's update gate, v_i a row's variance: the convolution (body and appendix) indexes its kernel
    by xi, zeta, and has no u or v of its own."""
    conv = part(tex, "\\section{The convolution layer}", "\\appendix") + part(tex, "\\label{app:conv}", "\\subsection")
    assert symbols(conv, "u") == [] and symbols(conv, "v") == []
    assert r"{\kappa}_{\xi,\zeta}" in conv and r"{\bar{X}}_{\xi + i \Delta,\zeta + j \Delta}" in conv


def test_residual_output_is_not_u(tex):
    """The output of a residual connection is x_out = x + F(x), in the body, the table and the appendix: no bold u
    anywhere (u is the update gate)."""
    assert "\\mathbf{u}" not in tex
    residual = part(tex, "\\subsection{Residual paths}", "\\section")
    assert r"\frac{\partial \mathbf{x}_{\mathrm{out}}}{\partial \mathbf{x}} &= \mathbf{I} + \mathbf{J}_{F}" in residual
    appendix = part(tex, "\\label{app:residual}", "\\subsection")
    assert appendix.count(r"\frac{\partial \mathbf{x}_{\mathrm{out}}}{\partial \mathbf{x}}") == 3


def test_r_is_only_the_reset_gate(tex):
    """r_t is the GRU's reset gate: LayerNorm fixes row t (a token's row), the masked softmax sums over s (the key,
    as A(Pi X)_{t,s}), RMSNorm divides by rms(x) by its name."""
    for name, start, end in (("residual", "\\section{LayerNorm and residual paths}", "\\section"),
                             ("attention", "\\section{Attention}", "\\section"),
                             ("residual appendix", "\\label{app:residual}", "\\subsection"),
                             ("attention appendix", "\\label{app:attention}", "\\subsection")):
        assert symbols(part(tex, start, end), "r") == [], name
    assert "fix one, row $t$" in tex and r"{X}_{t,j}" in tex


def test_notation_table_lists_each_symbol_once(tex):
    """Table 1: one row per symbol, the residual output and the kernel's indices as the sections print them."""
    table = part(tex, "\\label{tab:notation}", "\\end{longtable}").split("\\endhead", 1)[1]
    rows = [r.strip() for r in table.split("\\\\\n") if "&" in r]
    firsts = [r.split(" & ")[0] for r in rows]
    assert len(firsts) == len(set(firsts)), [f for f in firsts if firsts.count(f) > 1]
    assert "$\\mathbf{x}_{\\mathrm{out}}$ & output of a residual connection" in table
    assert "indexed ($\\xi$, $\\zeta$)" in table and "indexed ($u$, $v$)" not in table


def _first_term(display_line: str) -> str:
    return display_line.split("&=", 1)[1].strip().removesuffix("\\\\*").removesuffix("\\\\").strip().split(" + ")[0]  # a line may break after it


def test_appendix_block_program_names_adjoints_as_the_body(tex):
    """The pre-norm block's dH starts with the gradient of its output U, dU in the body (encoder): the appendix's
    entry of the same program says dU too, not the LayerNorm's dY."""
    body = part(tex, "\\section{The Transformer encoder block}", "\\subsection")
    body_line = next(line for line in body.splitlines() if line.startswith("\\mathrm{d}\\mathbf{H} "))
    entry = part(tex, "\\texttt{residual-\\allowbreak{}pre-\\allowbreak{}norm-\\allowbreak{}block-\\allowbreak{}program}",
                 "\\end{align*}")
    entry_line = next(line for line in entry.splitlines() if line.startswith("\\mathrm{d}\\mathbf{H} "))
    assert _first_term(body_line) == _first_term(entry_line) == "\\mathrm{d}\\mathbf{U}"


def test_appendix_positional_uses_the_pair_index_j(tex):
    """The body writes a pair's frequency omega_j; the appendix's positional identities too (i is the LSTM's input
    gate), in every sum over the pairs and every wavelength."""
    appendix = part(tex, "\\label{app:positional}", "\\subsection")
    assert symbols(appendix, "i") == []
    assert r"\sin({\omega}_{j} \mathrm{pos} + k {\omega}_{j})" in appendix and r"\sum_{j=0}^{3}" in appendix


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


def test_column_block_is_math_counted_from_zero():
    """A block of columns prints as math, columns a to a + w - 1 counted from 0 as its entries are (issue 25, prose
    review, item 4: it once printed a + 1 to a + w, counted from 1): the printed range and the entries agree."""
    from seqgrad.derive.latex_settings import Notation
    from seqgrad.derive.rules import ColumnBlock

    W = sp.MatrixSymbol("W", 2, 6)
    block = ColumnBlock(W, 2, 3)
    assert Notation().latex(block) == r"(\mathbf{W})_{\bullet,\,2 \ldots 4}"
    assert [block[0, c] for c in range(3)] == [W[0, 2], W[0, 3], W[0, 4]]  # columns 2 to 4, counted from 0


def test_column_block_defined_where_first_used(tex):
    """The handout prints no slice (``_{:,0:a}``), and says what the column block means right after its first display;
    the body names head h's block of columns (dC^[h]) instead, so the first block printed is the appendix's."""
    assert not re.search(r"_\{:,", tex)
    assert r"_{\bullet,\," not in tex.split("\\appendix")[0]
    # the appendix's block of W_O, defined right after its first display there
    first_W = tex.index(r"(\mathbf{W}_{O})_{\bullet,\,")
    definition = tex.index(r"Here $(\mathbf{W}_{O})_{\bullet,\,i \ldots j}$ is the block of columns $i$ to $j$")
    assert first_W < definition < tex.index("\\paragraph", first_W)
