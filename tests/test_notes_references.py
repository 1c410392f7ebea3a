"""The notes' reference list: every work the handout cites by author and year is listed, once, before the appendix,
and only those (a lecturer's review: "no reference list")."""

from __future__ import annotations

import re

from seqgrad.crosscheck import latexdoc, references


def _reference_list(source: str) -> str:
    start = source.index("\\section*{References}")
    return source[start:source.index("\\end{itemize}", start)]


def test_every_citation_of_the_handout_has_its_entry_before_the_appendix(standalone_notes):
    source = standalone_notes.read_text(encoding="utf-8")
    citations = {m.group(0) for m in references.CITATION.finditer(source)}
    assert len(citations) >= 5  # Xiong, Pascanu, He, Vaswani, Hochreiter, Zhang & Sennrich
    assert [c for c in citations if not references.cited(c)] == []  # each citation is a work of the table
    listed = _reference_list(source)
    assert source.index("\\section*{References}") < source.index("\\appendix")
    works = references.cited(source)
    assert [line[len("\\item "):] for line in listed.splitlines() if line.startswith("\\item ")] == [r.entry for r in works]
    assert "Xiong" in listed and "Pascanu" in listed


def test_a_document_that_cites_nothing_has_no_reference_list():
    assert references.section("no work and no course text named here") == ""
    # the convolution section cites no work by author and year, only a course text: the list holds that text alone
    source = latexdoc.render("conv", appendix=False, proof_seconds=None)
    refs = source[source.index("\\section*{References}"):]
    assert not references.CITATION.search(source) and "\\item \\emph{Lecture 7}" in refs
    assert refs.index("\\paragraph{The course texts.}") < refs.index("\\begin{itemize}")
    assert refs.count("\\begin{itemize}") == 1  # no list of works


def test_the_citation_pattern_reads_the_forms_the_notes_write():
    text = ("Xiong et al. 2020; Pascanu, Mikolov and Bengio (2013); Zhang \\& Sennrich 2019; Hochreiter (1991); "
            "He et al., 2016")
    assert [m.group(0) for m in references.CITATION.finditer(text)] == [
        "Xiong et al. 2020", "Pascanu, Mikolov and Bengio (2013", "Zhang \\& Sennrich 2019", "Hochreiter (1991",
        "He et al., 2016"]
    assert [r.key for r in references.cited(text)] == ["He 2016", "Hochreiter 1991", "Pascanu 2013", "Xiong 2020",
                                                       "Zhang 2019"]
    assert not re.search(references.REFERENCES[0].names[0], "Xiong et al. 2020")


def test_the_works_the_sections_rest_on_are_cited_in_the_body(standalone_notes):
    """A lecturer's review: Vaswani et al., He et al. and Hochreiter were listed but cited only in the appendix's
    entries; the sections that rest on them (the sinusoidal encoding, residual connections, the vanishing
    gradient) cite them where they introduce it.  Zhang & Sennrich's RMSNorm too, cited in the appendix alone
    before: the LayerNorm section states it as LayerNorm's variant, with its Jacobian."""
    source = standalone_notes.read_text(encoding="utf-8")
    body = source[:source.index("\\section*{References}")]
    in_body = {r.key for r in references.cited(body)}
    assert {"Vaswani 2017", "He 2016", "Hochreiter 1991", "Xiong 2020", "Pascanu 2013"} <= in_body
    # and the works that introduced the gated cells and LayerNorm, where their sections introduce them
    gates = body[body.index("\\section{Gated cells"):body.index("\\subsection{The GRU}")]
    assert {r.key for r in references.cited(gates)} == {"Hochreiter 1997", "Cho 2014"}
    assert "Ba 2016" in {r.key for r in references.cited(body[body.index("\\section{LayerNorm"):])}
    appendix_only = {r.key for r in references.cited(source)} - in_body
    assert appendix_only == set() and "Zhang 2019" in in_body
    section = body[body.index("\\section{LayerNorm and residual paths}"):body.index("\\subsection{Residual paths}")]
    assert "RMSNorm (Zhang \\& Sennrich 2019)" in section


def test_the_layernorm_section_states_rmsnorm_and_its_proved_jacobian(tmp_path):
    """The RMSNorm paragraph of the LayerNorm section cites its work and displays the Jacobian the appendix proves
    (the catalogue's statement, typeset by the notes' printer), with rms(x) and the scaled entries defined."""
    from seqgrad.crosscheck import notes
    from seqgrad.crosscheck.latexdoc import NOTES_LETTERS, NOTES_MATRICES
    from seqgrad.crosscheck.latex_parts import Build
    from seqgrad.derive import catalogue
    from seqgrad.derive.latex_settings import DEFAULT

    notation = DEFAULT.replace(letters={**DEFAULT.letters, **NOTES_LETTERS}, vectors=DEFAULT.vectors | NOTES_MATRICES)
    b = Build(notation=notation, tex_dir=tmp_path, figures_dir=None)
    body = notes.residual_section(b).body
    section = body[:body.index("\\subsection{Residual paths}")]
    assert "RMSNorm (Zhang \\& Sennrich 2019)" in section
    assert [r.key for r in references.cited(section)] == ["Ba 2016", "Zhang 2019"]  # LayerNorm's own work too
    rms = catalogue.get("rmsnorm-jacobian").statement()
    assert notes._display([(rms.lhs, notes.scaled_bracket(rms.rhs))], b) in section
    assert notes._inline(notes._rms_of_row(rms.rhs), b) in section and notes._inline(notes._rms_scaled(rms.rhs), b) in section
    assert section.index("RMSNorm") > section.index("\\mathrm{d}\\boldsymbol{\\beta}")  # after LayerNorm's backward pass
    assert str(notes._rms_scaled(rms.rhs)) == "Eq(xtilde[i], x[i]/rms(x))"
    assert str(notes._rms_of_row(rms.rhs).rhs) == "sqrt(epsilon + Sum(x[j]**2, (j, 0, d - 1))/d)"


def test_the_body_cites_a_work_by_author_and_year_only(chapter_notes):
    """One citation style: "Xiong et al. (2020)", never the work's title in the text ("Xiong et al., On Layer
    Normalization in the Transformer Architecture, 2020" in a paragraph of the residual section); the title is the
    reference list's."""
    source = chapter_notes.read_text(encoding="utf-8")
    body = source[:source.index("\\section*{References}")]
    for work in references.REFERENCES:
        title = re.sub(r"^.*?[a-z]\. ", "", work.entry.replace("~", " ")).split(". ")[0]  # after the authors' names
        assert len(title.split()) >= 2 and title.lower() not in body.replace("~", " ").lower(), (work.key, title)
