"""Issue 25, second review: the appendix's layout and its phrasing (one test, or more, per review item).

Each test reads the generated handout (``seqgrad latex notes.tex --standalone``, written once per module) and fails
on the output before the item was fixed.
"""

from __future__ import annotations

import re

import pytest

from test_latex_notes import body_and_appendix
from test_latex_render import cli


@pytest.fixture(scope="module")
def appendix(standalone_notes):
    """The appendix of the handout's LaTeX source."""
    path = standalone_notes
    return body_and_appendix(path.read_text(encoding="utf-8"))[1]


def _subsections(appendix: str) -> list[tuple[str, str]]:
    """Each numbered appendix subsection's label and text (up to the next one)."""
    pieces = re.split(r"\\subsection\{[^}]*\}\\label\{app:(\w+)\}", appendix)
    return list(zip(pieces[1::2], pieces[2::2]))


def _claims_table(appendix: str) -> str:
    start = appendix.rindex("\\begin{longtable}", 0, appendix.index("\\label{tab:claims}"))
    return appendix[start:appendix.index("\\end{longtable}", start)]


# --------------------------------------------------------------------------- 1. tables stay in their subsection

def test_1_every_appendix_table_is_set_where_it_stands(appendix):
    """Issue 25 (float placement): the appendix's tables were floats; one that did not fit below its text went to a
    page of its own, most of it white. Each is a longtable now, set in its subsection and continued over pages."""
    parts = _subsections(appendix)
    assert len(parts) >= 10
    assert "\\begin{table}" not in appendix
    tables = [(name, part) for name, part in parts if "\\begin{longtable}" in part]
    assert len(tables) >= 9
    for name, part in tables:
        assert part.count("\\begin{longtable}") == part.count("\\endhead") == part.count("\\caption[]"), name


# --------------------------------------------------------------------------- 2. the claims longtable: caption, headers

def test_2_the_claims_longtable_has_a_caption_and_repeats_its_headers(appendix):
    table = _claims_table(appendix)
    first, _, rest = table.partition("\\endfirsthead")
    assert re.search(r"\\caption\{[^}]+\}\\label\{tab:claims\}", first)
    head, _, rows = rest.partition("\\endhead")
    assert "entry & source & statement & verdict" in first and "entry & source & statement & verdict" in head
    assert "\\caption[]" in head  # the continued pages' headers, without a second number
    assert rows.count("\\\\") > 50


# --------------------------------------------------------------------------- 3. no log-like sentences

@pytest.mark.parametrize("phrase", [
    "checks verified on", ", run now.", "Identities, each proved now.", "each evaluated exactly now",
    "print alike", "proved (simplify)", "(simplify)", "ExplicitConv", "identity:pe-shift-", "identity:attention-",
    "seqgrad's decoder", "\\textbackslash{}max", "Every result of the notes, with",
])
def test_3_the_appendix_has_no_machine_phrasing(appendix, phrase):
    assert phrase not in appendix


def test_3_each_caption_says_what_its_table_lists(appendix):
    captions = re.findall(r"\\caption\{(.*?)\}(?:\\label|\\\\|\n)", appendix)
    assert len(captions) >= 14
    assert len(set(captions)) == len(captions), [c for c in captions if captions.count(c) > 1]
    for name, part in _subsections(appendix):
        if "check & source & max abs err" in part:  # a table of checks names its section and is cited
            assert f"\\caption{{The numeric checks of Section~\\ref{{sec:{name}}}" in part, name
            assert f"Table~\\ref{{tab:checks-{name}}} lists" in part, name


# --------------------------------------------------------------------------- 4. a search bound is not a value

def test_4_the_distance_erratum_says_what_the_statement_implies_in_words(appendix):
    from seqgrad.crosscheck.claims_catalogue import pe_distance_first_decrease

    assert pe_distance_first_decrease(512) == 44 and pe_distance_first_decrease(4) == 4
    # issue 25 (item 21): the wiki's statement has one erratum, among the statements' (the numbers' errata do not
    # repeat it); it says what holds instead, at the offset computed now
    errata = appendix[appendix.index("\\subsection*{Errata among the texts' statements}"):]
    item = next(i for i in errata.split("\\item ") if "oscillates" in i)
    assert "2001" not in item and "first decreases at $\\lvert i - j\\rvert = 44$" in item
    assert "wiki\\_\\allowbreak{}pe\\_\\allowbreak{}distance" not in appendix[:appendix.index("\\subsection*{Errata among")].split(
        "\\subsection*{Errata: printed numbers")[-1]


# --------------------------------------------------------------------------- 5. one erratum entry per statement

def test_5_each_entry_has_one_item_among_the_errata(appendix):
    items = re.findall(r"^\\item (\\texttt\{[^}]*(?:\}[^ ]*)?) \(", appendix, re.M)
    names = [re.sub(r"\\allowbreak\{\}|\\texttt\{|\}", "", i) for i in items]
    assert "layernorm\\_example\\_xhat" in names and "contribution\\_A60\\_v0" in names
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


# --------------------------------------------------------------------------- 6. the count is of the numbers shown

def test_6_the_verdict_counts_every_number_of_a_printed_vector(appendix):
    table = _claims_table(appendix)
    row = table[table.index("\\texttt{key\\_\\allowbreak{}value\\_\\allowbreak{}row0}"):]
    row = row[:row.index("\\\\\n")]
    assert row.endswith("verified (6 numbers) "), row


# --------------------------------------------------------------------------- 7. the measure the tolerance decides by

def test_7_compare_reports_the_error_over_the_tolerance_it_decides_by():
    from seqgrad.crosscheck.tolerance import combine, compare, tolerance

    tol = tolerance("float64", "cpu")
    near_zero = compare([1.0, 2e-12], [1.0, 1e-12])  # relative error 1e-2 on the near-zero entry, well inside atol
    assert near_zero.passed and near_zero.tol_ratio == pytest.approx(1e-12 / (tol.atol + tol.rtol * 1e-12))
    over = compare([1.0 + 3e-9], [1.0])
    assert not over.passed and over.tol_ratio == pytest.approx(3e-9 / (tol.atol + tol.rtol), rel=1e-6)
    assert combine([near_zero, over]).tol_ratio == over.tol_ratio
    assert compare([float("nan")], [1.0]).tol_ratio == float("inf")


def _number(cell: str) -> float:
    # "$\leq$ $5.6 \cdot 10^{-7}$": a bound on the ratio of a check that reports its error only (issue 25, item 4)
    m = re.fullmatch(r"(?:\$\\leq\$ )?\$(\d+(?:\.\d+)?)(?: \\cdot 10\^\{(-?\d+)\})?\$", cell.strip())
    assert m, cell
    return float(m.group(1)) * 10 ** int(m.group(2) or 0)


def test_7_every_check_table_prints_the_error_over_its_tolerance(appendix):
    assert "max rel err" not in appendix and "err\\,/\\,tol is the largest ratio of an error to its tolerance" in appendix
    rows = [line.split(" & ") for line in appendix.splitlines() if line.startswith("\\texttt{") and line.count(" & ") == 4]
    assert len(rows) > 60
    ratios = {row[0]: row[3] for row in rows}
    for row in rows:
        if row[4].strip().startswith("verified") and row[3] != "--":
            assert _number(row[3]) <= 1, row
    journey = next(v for k, v in ratios.items() if "causal\\_\\allowbreak{}journey" in k)
    assert 0.3 < _number(journey) <= 1  # 0.54 of half a unit of the third decimal printed in Table 16


# --------------------------------------------------------------------------- 8. quoted maths keeps its carets

def test_8_the_texts_plain_maths_is_typeset_as_math_never_a_raw_caret(appendix):
    from seqgrad.crosscheck.latex_parts import quotation

    # issue 25 (item 20) replaced the typewriter quotation: the texts' plain-text formulas are typeset as math
    assert quotation("||p_i - p_j||^2 and h_0^(0)") == "$\\lVert p_{i} - p_{j}\\rVert^{2}$ and $h_{0}^{(0)}$"
    # a caret in roman type is a raised accent ("h_0ˆ(0)"): no caret of the appendix is text
    assert "\\textasciicircum" not in appendix
    for typeset in ("h_{0}^{(0)}", "W_{K}^{\\top}", "n d^{2}", "\\sigma_{6}^{2}"):
        assert typeset in appendix, typeset