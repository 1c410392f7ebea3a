"""Issue 25, fourth review, items 4-8: the appendix's table of the course texts' printed claims and its errata.

Each test reads the built handout (``standalone_notes``): a row's verdict points to an erratum only where one of the
row's own text and section is listed, a "number erratum" is in the list of wrong printed numbers, sizes are
products (``7 \\times 12``, not the letter x), and the loss of a derivative is the notes' script L.
"""

from __future__ import annotations

import re

import pytest

_ROW = re.compile(r"^\\texttt\{(?P<name>.*?)\} & (?P<source>.*?) & (?P<statement>.*) & (?P<verdict>.*?) \\\\$", re.M)


@pytest.fixture(scope="module")
def appendix(standalone_notes):
    source = standalone_notes.read_text(encoding="utf-8")
    return source[source.index("\\appendix"):]


@pytest.fixture(scope="module")
def claims(appendix):
    """The rows of the claims table (name -> source, statement, verdict) and its three lists of errata."""
    start = appendix.index("\\label{tab:claims}")
    table = appendix[start:appendix.index("\\end{longtable}", start)]
    rows = {m["name"].replace("\\allowbreak{}", "").replace("\\_", "_"): (m["source"], m["statement"], m["verdict"])
            for m in _ROW.finditer(table)}
    numbers = appendix[appendix.index("\\subsection*{Errata: printed numbers that are wrong}"):
                       appendix.index("\\subsection*{Printed numbers that follow")]
    statements = appendix[appendix.index("\\subsection*{Errata among the texts' statements}"):]
    return rows, numbers, statements


def test_the_table_is_read(claims):
    rows, numbers, statements = claims
    assert len(rows) > 80 and "flops_attention_vs_recurrent" in rows and "week06_exercise4" in rows
    assert "\\item" in numbers and "\\item" in statements


def test_a_row_points_only_to_an_erratum_of_its_own_text_and_section(claims):
    """Item 5: ``week06_exercise4`` said "see its erratum below" for an erratum of the wiki article (its number
    bears on the wiki's concatenation): a row points to an erratum only where one of its own source is listed."""
    rows, _, statements = claims
    pointing = {name: source for name, (source, _, verdict) in rows.items() if "see its erratum below" in verdict}
    assert pointing
    for name, source in pointing.items():
        assert f"({source})" in statements, (name, source)
    assert "erratum" not in rows["week06_exercise4"][2]


def test_the_cost_ratio_is_marked_with_the_erratum_on_the_projections(claims):
    """Item 4: "self-attention about 5.1 times cheaper" at n = 100, d = 512 counts the attention products only; the
    erratum of the same section says the projections dominate there, and the row says the statement is imprecise."""
    rows, _, statements = claims
    source, statement, verdict = rows["flops_attention_vs_recurrent"]
    assert "5.1 times cheaper" in statement and "imprecise (see its erratum below)" in verdict
    item = next(i for i in statements.split("\\item") if f"({source})" in i and "per-layer complexity" in i)
    assert "104{,}857{,}600" in item or "104,857,600" in item


def test_a_number_erratum_is_in_the_list_of_wrong_printed_numbers(claims):
    """Item 8: ``wiki_pe_distance_monotone`` was labelled a number erratum and left out of that list."""
    rows, numbers, _ = claims
    for name, (_, _, verdict) in rows.items():
        listed = "\\texttt{" + name.replace("_", "\\_\\allowbreak{}") + "}" in numbers
        assert ("\\textbf{erratum}" in verdict) == listed, (name, verdict)
    assert "statement is false" in rows["wiki_pe_distance_monotone"][2]


def test_sizes_are_products_and_an_instance_is_said_as_one(claims):
    """Item 6: "7 x 12" and "3 x 3" with the letter x; "Var(...) = 1(d_k = 64)" read as a product."""
    rows, _, _ = claims
    for name, (_, statement, _) in rows.items():
        assert not re.search(r"\d x \d", statement), (name, statement)
    assert "$7 \\times 12$" in rows["week06_exercise4"][1] and "$3 \\times 3$" in rows["lesson_task19"][1]
    assert "= 1$ (at $d_{k} = 64$)" in rows["lecture07_scaling_variance"][1]


def test_the_loss_of_a_derivative_is_script_l(appendix):
    """Item 7: Table 9's source note printed the loss of dL/dx_0 as an italic L (the notes' L is the depth)."""
    assert "\\partial L" not in appendix
    assert "\\partial \\mathcal{L}/\\partial x_{0}" in appendix


def test_the_half_layout_at_odd_d_names_its_pairs_and_its_unpaired_coordinate(appendix):
    """Item 3: pe-shift-d5-half put pair i at coordinates i and i + d/2, not integers for d = 5; the heading now
    gives the coordinates the encoding has (its cosines after its three sines) and the unpaired sine."""
    from seqgrad.derive.positional import Sinusoidal

    pe = Sinusoidal(5, layout="half")
    assert pe.unpaired() == 2 and [(p.sin_index, p.cos_index) for p in pe.pairs()] == [(0, 3), (1, 4)]
    head = next(line for line in appendix.splitlines() if line.startswith("\\paragraph{")
                and "pe-\\allowbreak{}shift-\\allowbreak{}d5-\\allowbreak{}half" in line)
    scope = next(s for s in head.split("; instance") if "$d = 5$, half layout" in s)  # the heading's scope for it
    assert "\\frac{d}{2}" not in scope and "$j$ and $3 + j$" in scope, scope
    assert "for $j < 2$; coordinate 2, the unpaired sine, has no pair" in head


def test_every_proved_property_of_the_shift_is_an_identity_of_the_appendix(standalone_notes, appendix):
    """Item 2: the PE section's table marked "d/dpos R(k) = 0 ... proved: yes", an identity Appendix A.4 does not
    state; every "yes" now names the identity of A.4 that states it, and the table has a number and a caption."""
    source = standalone_notes.read_text(encoding="utf-8")
    body = source[source.index("\\label{sec:positional}"):source.index("\\label{sec:attention}")]
    table = body[body.index("\\label{tab:pe-shift-properties}"):]
    table = table[:table.index("\\end{table}")]
    assert "\\caption{" in body[body.rindex("\\begin{table}", 0, body.index("\\label{tab:pe-shift-properties}")):]
    # every statement is proved: no column "proved" that reads "yes" in every row (issue 25, figure review, item 2);
    # the caption says so
    rows = [r for r in table[table.index("\\midrule"):].split("\\\\\n") if " & " in r]
    assert len(rows) == 5 and "\\frac{\\mathrm{d}}{\\mathrm{d} \\mathrm{pos}}" not in table
    assert all(r.count(" & ") == 1 for r in rows) and "proved" not in table
    label = body.index("\\label{tab:pe-shift-properties}")
    caption = body[body.rindex("\\caption{", 0, label):label]
    assert "Appendix~\\ref{app:positional}" in caption and "named beside it" not in caption  # no names are shown
    assert "proves each of them" in caption
    assert "Table~\\ref{tab:pe-shift-properties}" in body  # the text cites the table
    assert "\\texttt" not in table  # no id before the appendix (the render test's rule)
    stated = appendix[appendix.index("\\label{app:positional}"):appendix.index("\\label{app:attention}")]
    headings = " ".join(line for line in stated.splitlines() if line.startswith("\\paragraph{"))
    from seqgrad.crosscheck.latex_parts import code, shift_report_statements
    from seqgrad.crosscheck.latexdoc import notes_notation
    from seqgrad.derive import positional
    from seqgrad.derive.latex_settings import DEFAULT

    statements = shift_report_statements(positional.shift_identity(d=5, layout="interleaved").prove(),
                                         notes_notation(DEFAULT))
    assert len(statements) == 5
    for *_, name in statements:  # each row's identity is one the appendix states under its name
        assert code(name) in headings, name


def test_the_odd_width_shift_is_stated_on_the_coordinates_its_rotation_acts_on(standalone_notes):
    """A lecturer's review: at d = 5 the notes said PE(pos + k) = PE(pos) R(k) with R(k) the block-diagonal matrix of
    the two pairs, a 4 x 4 matrix beside a row of 5 (and the notation table's d x d).  The shift is now stated on the
    row of the paired coordinates, whose width is R(k)'s, read off the proof's rotation."""
    import sympy as sp

    from seqgrad.crosscheck.latex_parts import paired_encoding
    from seqgrad.derive import positional

    source = standalone_notes.read_text(encoding="utf-8")
    body = source[source.index("\\label{sec:positional}"):source.index("\\label{sec:attention}")]
    example = body[body.index("Worked example, an odd width"):]
    example = example[:example.index("\\end{align*}")]
    assert "$4 \\times 4$ block-diagonal" in example
    paired = "\\operatorname{PE}_{0 \\ldots 3}"
    assert f"{paired}{{(\\mathrm{{pos}} + k)}} = {paired}{{(\\mathrm{{pos}})}} \\mathbf{{R}}{{(k)}}" in example
    assert "\\operatorname{PE}{(\\mathrm{pos} + k)} = \\operatorname{PE}{(\\mathrm{pos})} \\mathbf{R}{(k)}" not in body
    odd, even = (positional.shift_identity(d=d).prove() for d in (5, 4))
    assert odd.paired == (0, 1, 2, 3) and even.paired == (0, 1, 2, 3) and paired_encoding(even).__name__ == "PE"
    half = positional.shift_identity(d=5, layout="half").prove()  # the unpaired sine sits between the halves there
    assert half.unpaired not in half.paired and len(half.paired) == 4
    assert positional.Sinusoidal(5).rotation(sp.Symbol("k")).matrix().shape == (len(odd.paired),) * 2


def test_the_notation_tables_rotation_says_its_size_at_an_odd_width(standalone_notes):
    """The notation table gave R(k) as d x d only; at an odd width it is (d - 1) x (d - 1), the paired coordinates'
    (the worked example at d = 5 uses a 4 x 4 one).  The entry now says so, and the size is R(k)'s at d = 5."""
    import sympy as sp

    from seqgrad.derive import positional

    source = standalone_notes.read_text(encoding="utf-8")
    table = source[source.index("\\label{sec:notation}"):source.index("\\label{sec:rnn}")]
    row = next(line for line in table.splitlines() if line.startswith("$\\mathbf{R}{(k)}$ &"))
    assert "at an odd width it is $d - 1$ by $d - 1$" in row, row
    assert positional.Sinusoidal(5).rotation(sp.Symbol("k")).matrix().shape == (5 - 1, 5 - 1)


def test_the_references_list_the_course_texts_the_footnotes_cite(standalone_notes):
    """The footnotes cite "Course notes, week 6, §5" and "Lesson on Transformers, §4", but the reference list named
    only the published works: a reader could not tell which text, or which of its sections, §5 is.  Each course text
    cited is now listed with its title and the titles of the sections cited, found from its own section list."""
    from seqgrad.crosscheck import references
    from seqgrad.sources import NAMES_IN_WORDS, TEXTS, section_number

    source = standalone_notes.read_text(encoding="utf-8")
    start = source.index("\\section*{References}")
    refs = source[start:source.index("\\appendix")]
    body = source[:start]
    for key, name in NAMES_IN_WORDS.items():
        if name not in body:
            continue
        entry = next(line for line in refs.splitlines() if line.startswith(f"\\item \\emph{{{name}}}"))
        assert "\\seqgradcyr{" in entry  # the Russian title, set in Russian
        for tag in ("PE", "Attention", "Encoder"):
            if any(s.tag == tag for s in TEXTS[key].sections):
                n = section_number(key, tag)
                if f"{name}, \\S{{}}{n}" in body:  # cited: listed with its title
                    assert f"\\S{{}}{n} \\emph{{" in entry, (name, n)
    assert references._cited_sections("Course notes, week 6, \\S{}5 and \\S{}7; Lecture 7, \\S{}1", "Course notes, week 6") == [5, 7]
    assert references.section("no citation here") == ""


def test_tables_checked_alike_share_one_row(appendix):
    """Appendix review, item 5: the claims table repeated one row for each of twenty tables of the course
    (``table10`` ... ``table31``: "every printed number against the numeric encoder", "verified (35 numbers)"), rows
    alike but for the table's number.  A run of consecutive tables of one section, checked alike, is one row that
    names its first and last table and says how many numbers each has; nothing is dropped: every table is in a run."""
    start = appendix.index("\\label{tab:claims}")
    table = appendix[start:appendix.index("\\end{longtable}", start)]
    lines = [line for line in table.splitlines() if line.startswith("\\texttt{")]
    alike = [re.sub(r"(\\texttt\{table|Tab\.~)\d+", r"\1N", line) for line in lines]
    assert all(a != b for a, b in zip(alike, alike[1:])), "two rows alike but for their table's number"
    runs = re.findall(r"^\\texttt\{table(\d+)\}(?:--\\texttt\{table(\d+)\})? & .*? & the course's Tabs?\.~(\d+)(?:--(\d+))?:"
                      r".* & verified \((\d+) numbers( each)?\) \\\\$", table, re.M)
    assert any(last for _, last, *_ in runs)
    for first, last, tab_first, tab_last, _, each in runs:
        assert (first, last) == (tab_first, tab_last) and bool(last) == bool(each)
    said = int(re.search(r"lists the (\d+) printed statements", appendix).group(1))
    assert said == len(lines) + sum(int(last) - int(first) for first, last, *_ in runs if last)


def test_the_appendix_is_set_ragged_right(appendix):
    """Appendix review, item 6: the errata of the texts' statements (a citation, then a quoted formula that cannot
    break) were justified into lines of wide word spaces (underfull lines, page 59), and so were the entries' headings
    of typewriter names.  The appendix is set ragged right from its start, before its first section."""
    head = appendix[:appendix.index("\\section{")]
    assert re.search(r"\\raggedright\b", head)
