"""Cross-references of the notes when only some sections are built, or no appendix: every ``\\ref`` has its label
(a lecturer's review found "Section ??" and "Appendix ??" in notes of two sections without the appendix)."""

import re

import pytest


def _refs_and_labels(tex: str):
    return set(re.findall(r"\\ref\{([^}]*)\}", tex)), set(re.findall(r"\\label\{([^}]*)\}", tex))


@pytest.mark.parametrize("appendix", [False, True])
def test_notes_of_some_sections_refer_only_to_what_they_hold(appendix):
    from seqgrad.crosscheck import latexdoc

    tex = latexdoc.render(["paths", "positional"], appendix=appendix, proof_seconds=None)
    refs, labels = _refs_and_labels(tex)
    assert refs and refs <= labels, sorted(refs - labels)
    # what they cannot point to is said in words: the section by its title, the appendix as the complete notes'
    assert "the section \\emph{Recurrent networks and backpropagation through time} of the complete notes" in tex
    assert "the section \\emph{The Transformer decoder} of the complete notes" in tex
    assert ("the appendix of the complete notes" in tex) is not appendix or "app:attention" not in labels


def test_a_present_reference_is_kept():
    from seqgrad.crosscheck.latexdoc import without_absent_references

    document = "\\section{A}\\label{sec:rnn} see Section~\\ref{sec:rnn} and Appendix~\\ref{app:rnn}"
    assert without_absent_references(document, document) == (
        "\\section{A}\\label{sec:rnn} see Section~\\ref{sec:rnn} and the appendix of the complete notes")


def test_the_positional_section_points_to_the_section_that_sets_up_the_causal_mask(chapter_notes):
    """A reader sent to "Section 9" for the causal mask found it set up at the end of Section 6 (the mask M,
    M_{t,j} = -infinity for j > t): the pointer names that section first, and the decoder as the one using it."""
    tex = chapter_notes.read_text(encoding="utf-8")
    body = tex[:tex.index("\\appendix")]
    sections = dict(re.findall(r"\\section\{[^}]*\}\\label\{sec:(\w+)\}(.*?)(?=\\section|\Z)", body, re.S))
    defined = [name for name, text in sections.items() if "{M}_{t,j} = -\\infty" in text]
    assert defined == ["attention"]
    pointer = sections["positional"][sections["positional"].index("a causal mask"):]
    assert re.findall(r"\\ref\{sec:(\w+)\}", pointer[:pointer.index(")")]) == ["attention", "decoder"]
