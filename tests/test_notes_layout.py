"""Issue 25, the handout's layout and wording as a lecturer reads it (one test, or more, per review item).

Each test reads the generated ``.tex`` (the whole handout, ``seqgrad latex notes.tex --standalone``, written once per
module) or a section's body, and fails on the output before the item was fixed.
"""

from __future__ import annotations

import re

import pytest

from seqgrad.crosscheck import latexdoc, notes
from seqgrad.crosscheck.latex_parts import Build
from seqgrad.crosscheck.registry import Result
from seqgrad.derive.latex_settings import DEFAULT

from test_latex_notes import body_and_appendix
from test_latex_render import cli


@pytest.fixture(scope="module")
def handout(standalone_notes):
    """The handout's LaTeX source, as ``seqgrad latex notes.tex --standalone`` writes it."""
    path = standalone_notes
    return path.read_text(encoding="utf-8")


def footnotes(text: str) -> list[str]:
    """The text of every ``\\footnote{...}`` in ``text`` (braces balanced)."""
    out, i = [], 0
    while (j := text.find("\\footnote{", i)) >= 0:
        depth = 0
        for k in range(j + len("\\footnote"), len(text)):
            depth += {"{": 1, "}": -1}.get(text[k], 0)
            if depth == 0:
                break
        out.append(text[j + len("\\footnote{"):k])
        i = k + 1
    return out


# --------------------------------------------------------------------------- 1. footnotes read as a textbook's

#: what check output looks like: a count of checks, a file's or text's key, a section's tag, an id
_CHECK_OUTPUT = re.compile(r"\b\d+\s+(?:of\s+\d+\s+)?checks?\b|checks? passed|\bSource:|\bweek0\d|"
                           r"\blesson\s*(?:\\S|§|;|\.\s|\.$)|\blecture0\d|\bseed\s?\d|\\S\{\}[A-Za-z]|\\texttt|\.txt\b|\d+ failed")


def _result(status="pass", error=1e-15):
    return Result("rnn.x", "week06 §Paths:188", "rnn", status, status == "pass", error, error, "cpu", "float64", "", 0.0)


def test_1_a_check_mark_says_how_close_never_how_many():
    mark = notes.check_mark([_result(), _result(error=3e-16), _result()], "cpu")
    assert mark == r"checked numerically in double precision, largest error $1.0 \cdot 10^{-15}$"
    failed = notes.check_mark([_result(), _result("fail", 0.5)], "cpu")
    assert "\\textbf{not every check passed}" in failed and not re.search(r"\d+ (of \d+ )?(checks|failed)", failed)


def test_1_a_footnote_cites_the_course_text_in_words():
    b = Build(notation=DEFAULT, tex_dir=None, figures_dir=None, appendix=True)
    mark = notes.verification(b, checks=[_result()], source="week06 §Paths:188-204, week06 §Jacobian:326; seed 001 l.95",
                              appendix="rnn")
    assert "Course notes, week 6, \\S{}5 and \\S{}7; Lesson on Transformers, \\S{}4." in mark
    assert "Details in Appendix~\\ref{app:rnn}" in mark
    assert not _CHECK_OUTPUT.search(mark), mark


def test_1_no_footnote_or_caption_of_the_handout_reads_like_check_output(handout):
    body, _ = body_and_appendix(handout)
    marks = footnotes(body)
    # one verification footnote per section (issue 25, review A item 16), not one per result
    sections = re.split(r"\\section\{", body)[2:]  # the sections after the notation
    assert len(sections) == 9
    for section in sections:
        said = [m for m in footnotes(section) if m.startswith("The results of this section")]
        assert len(said) == 1, section[:80]
    captions = re.findall(r"\\caption\{(.*?)\}(?:\\label|\n)", body, re.S)
    for text in marks + captions:
        assert not _CHECK_OUTPUT.search(text), text
    assert sum("Course notes, week 6" in m for m in marks) >= 8  # the sources are still cited, in words


# --------------------------------------------------------------------------- 2. the appendix's printed claims in sentences

def _claim_items(appendix: str, title: str) -> list[str]:
    part = appendix[appendix.index("\\subsection*{" + title):]
    part = part[:part.index("\\end{itemize}")]
    return [item.strip() for item in part.split("\\item ")[1:]]


def test_2_each_printed_claim_that_is_not_its_rounded_value_is_a_sentence(handout):
    from seqgrad.crosscheck.claims_catalogue import unrounded_a60

    _, appendix = body_and_appendix(handout)
    assert "vs computed" not in appendix and "rounding-consistent" not in appendix
    assert "Contradicted claims" not in appendix and " of 2 contradicted" not in appendix
    errata = _claim_items(appendix, "Errata: printed numbers that are wrong")
    explained = _claim_items(appendix, "Printed numbers that follow the text's own working")
    assert len(errata) >= 3 and len(explained) >= 3
    for item in errata + explained:
        sentence = item[:item.index("\\\\ \\emph") if "\\\\ \\emph" in item else len(item)]
        assert "A60*" not in sentence and "**" not in sentence, sentence  # no code for the reader
        assert re.search(r"The text('s statement implies( that|)| prints) ", sentence), sentence
    for item in errata:
        assert "\\textbf{the printed number" in item or "\\textbf{the statement is wrong}" in item, item
        assert "at the printed digits" in item or "statement implies" in item, item
    a60 = [item for item in explained if item.startswith("\\texttt{contribution")]
    # one item for the entry, and (issue 25, fourth review, item 21) one sentence for its two numbers, which rounding
    # explains the same way: the printed weight gives 0.0370 and 0.0740 at the printed digits, the unrounded weight
    # 0.0371 and 0.0741
    assert len(a60) == 1 and a60[0].count("The text prints") == 1
    assert "$0.0370$ and $0.0740$ at the printed digits" in a60[0]
    assert "$0.0371$ and $0.0741$ at the printed digits, as printed" in a60[0]
    # every A_60 the items print is the encoder's unrounded value at its digits, or the printed 0.185
    numbers = [n for item in a60 for n in re.findall(r"A_\{60\} = ([\d.]+)", item)]
    assert "0.185" in numbers and len(numbers) >= 2
    for item in a60:
        for number in re.findall(r"A_\{60\} = ([\d.]+)", item):
            assert number == "0.185" or abs(float(number) - unrounded_a60()) < 10 ** -(len(number.split(".")[1])), number
    table = appendix[appendix.index("\\texttt{contribution"):]
    row = table[:table.index("\\\\\n")]
    assert "explained by rounding (2 numbers)" in row and "contradicted" not in row


# --------------------------------------------------------------------------- 3. the abstract says what the sections hold

def _sections(body: str) -> dict[str, str]:
    """Each section's text by its label (``sec:rnn`` -> ``rnn``), the notation left out."""
    pieces = re.split(r"\\section\{[^}]*\}\\label\{sec:(\w+)\}", body)
    return {name: text for name, text in zip(pieces[1::2], pieces[2::2]) if name != "notation"}


def test_3_the_abstract_promises_a_figure_and_an_example_only_where_there_are(handout):
    body, _ = body_and_appendix(handout)
    abstract = body[body.index("\\begin{abstract}"):body.index("\\end{abstract}")]
    sections = _sections(body)
    assert len(sections) == 9
    lacking = [n for n, text in sections.items() if "\\begin{figure}" not in text]
    assert lacking, "the handout has sections without a figure (the RNN, attention)"
    assert "a small worked example and a figure" not in abstract  # the old promise, untrue for those sections
    # how many sections have a figure and an example, said in a word that is true of them, not a list of exceptions
    assert "all but" not in abstract and "\\ref{sec:" not in abstract
    for have, plural in ((lambda t: "\\begin{figure}" in t, "have a figure that shows the point"),
                         (lambda t: notes.WORKED_EXAMPLE in t, "work a small instance as an example")):
        n = sum(map(have, sections.values()))
        said = re.search(r"(\w+)(?: of them then)? " + plural, abstract).group(1).lower()
        assert said == ("all" if n == len(sections) else "most" if 2 * n > len(sections) else "some"), (plural, n)
    # "every one" counts the sections after the notation, which has no figure (Section 1): the sentence says so
    assert "Each section after the notation states the model" in abstract and "every section" not in abstract
    assert notes.contents_sentence(sections) in abstract


def test_3_the_sentence_follows_the_sections():
    every = notes.contents_sentence({"a": "Worked example \\begin{figure}", "b": "Worked example \\begin{figure}"})
    assert every.endswith("then a small worked example and a figure that shows the point.")
    some = notes.contents_sentence({"a": "Worked example \\begin{figure}", "b": "", "c": "\\begin{figure}"})
    assert some.endswith("Some of them then work a small instance as an example, and most have a figure that shows the "
                         "point."), some
    assert "all but" not in some and "\\ref" not in some
    assert "Every one but" not in some and "; " not in some  # a sentence, not a list of exceptions


# --------------------------------------------------------------------------- 4. a group of equations is one display

_DISPLAY = re.compile(r"\\begin\{(align\*?|equation\*?|gather\*?)\}.*?\\end\{\1\}", re.S)


def test_4_no_group_of_equations_is_split_into_separately_centred_displays(handout):
    """Two displays with nothing between them are one group cut in two: each centred on its own, their = signs do
    not line up. A tall group is one align* with permitted page breaks instead."""
    body, appendix = body_and_appendix(handout)
    for where, text in (("text", body), ("appendix", appendix)):
        spans = [m.span() for m in _DISPLAY.finditer(text)]
        for (_, end), (start, _) in zip(spans, spans[1:]):
            assert text[end:start].strip() != "", f"two displays back to back ({where}): {text[end - 120:start + 80]!r}"
    assert "\\displaybreak[0]" in body  # the tall groups (the GRU's and LSTM's BPTT, the encoder's backward pass)
    decoder = body[body.index("\\subsection{Cross-attention}"):body.index("\\paragraph{The pre-norm decoder block")]
    assert decoder.count("\\begin{align*}") == 1 and "\\mathrm{d}\\mathbf{W}_{V}" in decoder  # forward to gradients


def test_4_outside_a_document_a_tall_display_stays_several_displays():
    """A snippet for a notebook (MathJax has no \\displaybreak) keeps consecutive displays."""
    import sympy as sp

    from seqgrad.derive.latex_layout import display, page_breaks

    rows = [(sp.Symbol(f"x_{i}"), sp.Symbol("y") ** i) for i in range(30)]
    assert display(rows).count("\\begin{align*}") > 1 and "displaybreak" not in display(rows)
    with page_breaks():
        one = display(rows)
    assert one.count("\\begin{align*}") == 1 and one.count("\\displaybreak[0]") == display(rows).count("\\begin{align*}") - 1


# --------------------------------------------------------------------------- 5. the T = 3 table says which way it is read

def test_5_the_worked_table_says_the_backward_pass_is_read_upwards_and_is_so(handout):
    body, _ = body_and_appendix(handout)
    example = body[body.index("\\subsection{Worked example: three steps}"):]
    intro, table = example[:example.index("\\begin{tabular}")], example[example.index("\\begin{tabular}"):]
    table = table[:table.index("\\end{tabular}")]
    header, rows = table.split("\\midrule")
    assert "backward pass (read up: $t = 2$ down to $t = 0$)" in header and "forward pass (read down: $t = 0$ to $t = 2$)" in header
    assert "the backward pass up it, from the error $e$ in the last row, through $t = 2$ down to $t = 0$" in intro
    # what the labels say is how the table is built: the backward column's steps fall going up, e is computed first
    backward = [line.split(" & ")[1] for line in rows.strip().splitlines() if " & " in line]
    steps = [int(m[1]) for cell in backward for m in [re.search(r"g\^\{[hz]\}_\{(-?\d+)\} =", cell)] if m]
    assert steps == sorted(steps) and steps[0] == -1 and steps[-1] == 2
    assert backward[-1].startswith("$e =")


# --------------------------------------------------------------------------- 6. figures: legends clear of the data, labels in the text's symbols

def test_6_the_gradient_flow_legend_is_outside_the_curves():
    from matplotlib.figure import Figure

    from seqgrad.crosscheck.figures import paths
    from seqgrad.numeric import figures_paths as fp

    plot, size = paths.figures()["gradient-flow-rnn-gru-lstm"]
    fig = Figure(figsize=size, layout="constrained")
    axes = fig.subplots(1, paths.PANELS["gradient-flow-rnn-gru-lstm"])
    lines = fp.plot_gradient_flow(axes)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    for ax in axes:
        legend = ax.get_legend().get_window_extent(renderer)
        for other in axes:
            assert not legend.overlaps(other.get_window_extent(renderer)), "the legend sits on the axes, over the curves"
        assert fig.bbox.contains(legend.x0, legend.y0) and fig.bbox.contains(legend.x1, legend.y1)  # and is not cut off
    assert sum(len(ax.get_legend().get_texts()) for ax in axes) == len(lines)


def test_6_the_singular_values_legend_clears_the_axis_label_at_the_size_drawn():
    """Drawn smaller, so that two share a page (item 4 of the figure review), the legend below the axes lay over
    the x label "rank of the singular value"."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from seqgrad.crosscheck.figures import depth as figure_set
    from seqgrad.numeric import depth, figures_depth

    study = depth.jacobian_study()
    for placement in depth.PLACEMENTS:
        fig = Figure(figsize=figure_set.size(f"jacobian-product-singular-values-{placement}"), layout="constrained")
        ax = fig.add_subplot()
        figures_depth.plot_singular_values(ax, study, placement)
        renderer = FigureCanvasAgg(fig).get_renderer()
        fig.draw(renderer)
        legend = ax.get_legend().get_window_extent(renderer)
        assert not legend.overlaps(ax.xaxis.label.get_window_extent(renderer)), placement
        assert fig.bbox.contains(legend.x0, legend.y0)  # and is not cut off


def test_6_the_gradient_flow_figure_is_two_panels_with_a_caption_that_says_what_to_see():
    """Issue 25, lecturer's figure review, item 1: nine curves crowded one panel under a nine-sentence caption.  The
    default initialisation is drawn on the left, the raised keeping-gate bias on the right; the caption says what to
    see in each in at most three sentences, and the numbers are said in the text that points to the figure."""
    from matplotlib.figure import Figure

    from seqgrad.crosscheck.figures import paths
    from seqgrad.numeric import figures_paths as fp

    left, right = Figure().subplots(1, paths.PANELS["gradient-flow-rnn-gru-lstm"])
    lines = fp.plot_gradient_flow((left, right))
    assert {line.get_label().split(":")[0] for line in lines if line.axes is left} == \
        {"RNN, default init", "GRU, default init", "LSTM, default init"}
    assert all("raised by 3" in line.get_label() for line in lines if line.axes is right) and len(right.get_lines()) == 4
    assert left.get_ylabel() == right.get_ylabel() != ""  # each panel has its own log scale, and names it
    caption = paths.CAPTIONS["gradient-flow-rnn-gru-lstm"]
    assert caption.count(". ") <= 2 and len(caption.split()) <= 50 and "Left:" in caption and "Right:" in caption
    reading = paths.READINGS["gradient-flow-rnn-gru-lstm"]
    assert "twelve orders of magnitude" in reading and "twelve orders" not in caption


def test_6_the_contributions_figure_names_the_head_and_its_output_as_the_text_does():
    from matplotlib.figure import Figure

    from seqgrad.crosscheck.figures import encoder
    from seqgrad.numeric import course
    from seqgrad.numeric.tokens import tokenize

    C = course.trace("attention_on_H0")["head1.contrib"][6].detach().numpy()
    ax = Figure().subplots()
    encoder.plot_contributions(ax, C, tokenize(course.TEXT), query=6, head=1)
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    assert ticks[-1] == r"sum: row 6 of $\mathbf{O}^{[1]}$" and not any("o_{6}" in t for t in ticks)
    assert r"$\mathbf{V}^{[1]}$" in ax.get_xlabel() and "source token" in ax.get_ylabel()
    assert "head 1" in ax.get_title() and "value 0" not in [t.get_text() for t in ax.get_xticklabels()]
    assert "head 1" in encoder.CAPTIONS["fig08_begins_contributions"].lower()


# --------------------------------------------------------------------------- 7. no page of the text ends half empty

def test_7_floats_stay_in_their_section(handout):
    body, _ = body_and_appendix(handout)
    preamble = handout[:handout.index("\\begin{document}")]
    assert "\\allowdisplaybreaks[1]" in preamble  # a tall group is not pushed whole to the next page
    assert "\\renewcommand{\\floatpagefraction}{0.5}" in preamble and "\\renewcommand{\\topfraction}{0.85}" in preamble
    # no barrier at a section's end in the text: it flushed a figure that did not fit onto a page of its own; a float
    # is kept in its section by placeins' barrier before each section heading, and is placed "here" where it fits
    assert "\\FloatBarrier" not in body
    assert "\\usepackage[section]{placeins}" in preamble and "\\begin{figure}[tbp]" not in body


@pytest.mark.slow
@pytest.mark.tex
def test_7_the_cross_attention_figure_stands_in_the_decoders_text(standalone_pdf):
    """Issue 25, third review, item 2: the cross-attention figure, one head under the other, was too tall to share a
    page: it took a float page of its own, a third of it empty, at the decoder section's end.  With the heads side
    by side its page also holds the section's text, before and after it."""
    import shutil
    import subprocess

    if not shutil.which("pdftotext"):
        pytest.skip("no poppler")
    pages = subprocess.run(["pdftotext", str(standalone_pdf), "-"], capture_output=True, text=True).stdout.split("\f")
    [n] = [i for i, p in enumerate(pages) if "Cross-attention in a toy translation model" in p]
    page = pages[n]
    caption = page.index("Cross-attention in a toy translation model")
    # the sentence that points to it, above it on its page or at the foot of the page before (a formula is no
    # longer broken across pages, so the text may reach the figure's page a few lines later than it once did)
    assert "shows the cross-attention weights" in page[:caption] or "shows the cross-attention weights" in pages[n - 1]
    after = page[caption:]
    # the decoder's text goes on below it: not a float page of its own
    assert "The block below is written with the multi-head attention" in after or "backward pass" in after


@pytest.mark.slow
@pytest.mark.tex
def test_7_every_page_of_the_text_is_filled(standalone_pdf, tmp_path):
    """Rendered, every page between the notation and the appendix has ink down to three quarters of its height (the
    last page of each of those two parts may end short; they start a page by design)."""
    import shutil
    import subprocess

    import numpy as np
    from PIL import Image

    if not (shutil.which("pdflatex") and shutil.which("pdftoppm") and shutil.which("pdftotext")):
        pytest.skip("no TeX engine/poppler")
    pdf = standalone_pdf
    pages = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True).stdout.split("\f")
    # each heading is on the contents page and on its own page: the later one
    first = max(i for i, p in enumerate(pages) if re.search(r"^\s*2\s+Recurrent networks", p, re.M))
    appendix = max(i for i, p in enumerate(pages) if re.search(r"^\s*A\s+Verification", p, re.M))
    assert appendix - first > 10
    subprocess.run(["pdftoppm", "-png", "-r", "40", "-f", str(first + 1), "-l", str(appendix), str(pdf),
                    str(tmp_path / "p")], check=True)
    short = {}
    for png in sorted(tmp_path.glob("p-*.png"))[:-1]:  # the text's last page ends where the appendix starts a page
        ink = (np.asarray(Image.open(png).convert("L")) < 200).any(axis=1)
        rows = np.nonzero(ink[:int(len(ink) * 0.93)])[0]  # above the page number
        if rows[-1] / len(ink) < 0.75:
            short[png.name] = round(rows[-1] / len(ink), 2)
    assert short == {}, f"pages of the text that end half empty (their lowest ink, as a fraction of the page): {short}"


def test_1_a_sections_footnote_is_sentences_not_a_checklist(handout):
    """The section's footnote is written in sentences whose subject is the section's results ("The results of this
    section are proved for every d >= 1 ... The appendix states 9 more identities ..."), not a colon-and-semicolon
    list ("The results of this section: proved ...; the appendix states ...; checked ...")."""
    body, _ = body_and_appendix(handout)
    said = [m for m in footnotes(body) if m.startswith("The results of this section")]
    assert len(said) == 9
    for mark in said:
        assert re.match(r"The results of this section (are (proved|checked|refuted)|agree) ", mark), mark
        assert "; the appendix states" not in mark and "; checked numerically" not in mark, mark
        # every sentence after the first begins with a capital letter (inside \textbf too)
        for start in re.findall(r"\.\s+(?:\\textbf\{)?(\S)", re.sub(r"\$[^$]*\$", "x", mark)):
            assert start.isupper() or start == "\\", mark
        assert not re.search(r"identity: 1 ", mark), mark  # "1 identity, proved ...", not "1 identity: 1 proved"


def test_1_a_proof_mark_joins_scopes_with_semicolons_and_capitalizes_each_sentence():
    assert notes.capitalized("\\textbf{not proved}") == "\\textbf{Not proved}"
    b = Build(notation=DEFAULT, tex_dir=None, figures_dir=None, appendix=True)
    mark = notes.proof_mark(b, ["softmax-jacobian"], ["softmax-shift-invariance", "softmax-sums-to-one"])
    assert mark.startswith("proved for every ") and ". The appendix states 2 more identities" in mark, mark



def test_tall_displays_are_cut_into_chunks_of_about_equal_height(handout):
    """A 13-line derivation was cut 12 + 1 (d beta_2 alone at the top of a page): the permitted breaks of a tall
    display now cut it into chunks of about equal height."""
    from seqgrad.derive.latex_layout import _chunks

    for env in re.findall(r"\\begin\{align\*\}(.*?)\\end\{align\*\}", handout, re.S):
        if "\\displaybreak[0]" in env:
            rows = [p.count("\\\\") + 1 for p in env.split("\\displaybreak[0]")]
            assert min(rows) >= 3, rows  # no chunk of one or two lines
    assert [len(c) for c in _chunks(["x"] * 13)] == [7, 6]


# --------------------------------------------------------------------------- 8. tables: every column tells rows apart

def table_columns(tex: str) -> list[tuple[str, list[list[str]]]]:
    """Each tabular or longtable of ``tex``: (the label of its table, or its first header cells, its body rows as
    lists of cells), the body being what stands after its last ``\\midrule``."""
    out = []
    for m in re.finditer(r"\\begin\{(tabular|longtable)\}[^\n]*\n(.*?)\\end\{\1\}", tex, re.S):
        head, _, body = m[2].rpartition("\\midrule")
        if not head:
            continue
        body = body.split("\\bottomrule")[0]
        rows = [[c.strip() for c in re.split(r"(?<!\\)&", r)] for r in body.split("\\\\") if "&" in r]
        label = re.search(r"\\label\{(tab:[^}]+)\}", tex[max(0, m.start() - 1500):m.start()])
        out.append((label[1] if label else head.strip()[:60], rows))
    return out


def test_8_no_table_has_a_column_that_reads_the_same_in_every_row(handout):
    """Issue 25, lecturer's figure review, item 2: the positional encoding's table had a column "proved" that read
    "yes" in every row.  A column whose body cells are all the same tells no row from another: no table has one."""
    tables = table_columns(handout)
    assert len(tables) >= 15 and any(name == "tab:pe-shift-properties" for name, _ in tables)
    for name, rows in tables:
        if len(rows) < 2:
            continue
        width = max(len(r) for r in rows)
        full = [r for r in rows if len(r) == width]
        for j in range(width):
            assert len({r[j] for r in full}) > 1, f"{name}: column {j} reads {full[0][j]!r} in every row"


def test_8_a_statement_that_is_not_proved_brings_the_proved_column_back():
    from dataclasses import replace

    from seqgrad.crosscheck.latex_parts import shift_report_rows
    from seqgrad.derive import positional

    report = positional.shift_identity(d=5, layout="interleaved").prove()
    assert {len(r) for r in shift_report_rows(report, DEFAULT)} == {2}
    rows = shift_report_rows(replace(report, composition=False), DEFAULT)
    assert [r[-1] for r in rows] == ["yes", "yes", "yes", "\\textbf{no}", "yes"]


def _captions(tex: str) -> dict[str, str]:
    """Each caption of ``tex`` by the label after it (braces balanced)."""
    out, i = {}, 0
    while (j := tex.find("\\caption{", i)) >= 0:
        depth = 0
        for k in range(j + len("\\caption"), len(tex)):
            depth += {"{": 1, "}": -1}.get(tex[k], 0)
            if depth == 0:
                break
        label = re.search(r"\\label\{([^}]+)\}", tex[k:k + 200])
        out[label[1] if label else f"@{j}"] = tex[j + len("\\caption{"):k]
        i = k + 1
    return out


def _sentences_and_words(caption: str) -> tuple[int, int]:
    plain = re.sub(r"\$[^$]*\$", "x", caption)
    return len(re.findall(r"[.!?](?:\s|$)", plain.strip())), len(plain.split())


def test_9_a_table_caption_says_what_the_table_shows_in_one_or_two_sentences(handout):
    """Issue 25, lecturer's figure review, item 3: Table 3's caption was a paragraph (how its sums are made, what the
    printed terms add up to): a caption says what the table shows; the rest is said in the text."""
    tables = {label: c for label, c in _captions(handout).items() if label.startswith("tab:")}
    assert len(tables) >= 15 and "tab:rnn-numbers" in tables
    long = {label: _sentences_and_words(c) for label, c in tables.items()
            if _sentences_and_words(c)[0] > 2 or _sentences_and_words(c)[1] > 50}
    assert long == {}, f"table captions (sentences, words) longer than two sentences or 50 words: {long}"


def test_9_the_path_and_depth_figures_captions_say_what_to_see_in_at_most_three_sentences():
    """The same for the figures the review named (Figure 5, the depth study): at most three sentences and 60 words;
    the experiment's sizes and numbers are said in the text that points to the figure (the set's READINGS)."""
    from seqgrad.crosscheck.figures import depth, paths

    named = {"gradient-flow-rnn-gru-lstm": paths.CAPTIONS["gradient-flow-rnn-gru-lstm"], **depth.CAPTIONS}
    assert len(named) == 6
    for stem, caption in named.items():
        sentences, words = _sentences_and_words(caption)
        assert sentences <= 3 and words <= 60, (stem, sentences, words)
