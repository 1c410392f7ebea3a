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
