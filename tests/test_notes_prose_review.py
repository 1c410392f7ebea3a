"""Issue 25, the lecturer's prose review: verification is a footnote, not the text.

1. The body (up to the appendix) of the handout and of the full notes reads as a textbook: no sentence outside a
   footnote tallies agreement with tables, PyTorch or a measured error.
2. A footnote that counts identities refuted (or not proved) names each: its statement as math and the page of the
   appendix that discusses it.
(3, the display breaking after a leading 1/s, is tested on the rule in tests/test_printing.py; 4, one counting
convention, in tests/test_notes_symbols.py.)"""
import re

import pytest


@pytest.fixture(scope="module")
def full_notes(chapter_notes):
    """The notes as ``seqgrad latex notes.tex`` writes them (every figure of the sets, their captions)."""
    return chapter_notes.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def handout(standalone_notes):
    return standalone_notes.read_text(encoding="utf-8")


def footnotes(tex: str) -> list[tuple[int, int]]:
    """The (start, end) of every ``\\footnote{...}`` of ``tex``, its braces balanced."""
    spans, start = [], tex.find("\\footnote{")
    while start >= 0:
        depth, k = 1, start + len("\\footnote{")
        while depth:
            depth += {"{": 1, "}": -1}.get(tex[k], 0)
            k += 1
        spans.append((start, k))
        start = tex.find("\\footnote{", k)
    return spans


def without_footnotes(tex: str) -> str:
    out, i = [], 0
    for start, end in footnotes(tex):
        out.append(tex[i:start])
        i = end
    return "".join(out + [tex[i:]])


def body(tex: str) -> str:
    return tex[:tex.index("\\appendix")]


#: Phrases of a check log, not of a textbook: agreement with tables or PyTorch, errors measured, a verification.
LOG = re.compile(r"\bagrees? with\b|\bchecked\b|\bcourse's tables\b|\b(?:max(?:imum)?|largest) (?:abs\w* )?errors?\b"
                 r"|\bmeasured\b|\bautograd\b|\bverified\b|\brefuted\b"
                 r"|\b\d+ of \d+ (?:hold|pass)|\bautomatic differentiation\b", re.I)


def test_the_log_reader_finds_a_log_phrase_and_skips_footnotes():
    text = (r"A formula.\footnote{Checked numerically, largest error $1 \cdot 10^{-15}$ {nested}.} "
            r"Every intermediate agrees with the course's tables. \appendix checked")
    assert LOG.findall(without_footnotes(body(text))) == ["agrees with", "course's tables"]


@pytest.mark.parametrize("which", ["handout", "full_notes"])
def test_no_check_log_in_the_body(which, request):
    """Outside its footnotes the body says no tally of agreement ("Every intermediate agrees with the course's
    tables", "the autograd derivatives ... are exactly 0", "as measured", "was verified when these notes were
    written"): each became a footnote or a sentence about the mathematics."""
    text = without_footnotes(body(request.getfixturevalue(which)))
    found = [text[max(0, m.start() - 80):m.end() + 40].replace("\n", " ") for m in LOG.finditer(text)]
    assert found == []


def test_what_the_sentences_became(handout):
    """The verification went into footnotes, where the reader who wants it finds it."""
    notes = [handout[s:e] for s, e in footnotes(body(handout))]
    assert any("Each was verified when these notes were written" in n for n in notes)  # the abstract's
    assert any("Causality is also shown entry by entry in the symbolic block at $T = 4$" in n
               for n in notes)  # the decoder's
    # the encoder's worked example: compared with the course's printed numbers, said in the section's footnote
    assert any("They agree with the numbers the course prints" in n for n in notes)


def parenthesized(text: str) -> str:
    """What the parentheses that ``text`` opens with enclose (nested ones balanced)."""
    depth = 0
    for k, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0:
            return text[1:k]
    raise AssertionError(text)


_COUNTED = re.compile(r"(\d+) (?:of them )?(refuted by an exact counterexample|\\textbf\{not (?:every statement is )?proved\})")


def test_a_refuted_identity_is_named_with_its_page(handout):
    """A footnote's count "k refuted by an exact counterexample" names the k identities: each statement as math
    (as the appendix prints it), or in words where its symbols are the appendix's own, and the page of its heading in the appendix, which carries the label."""
    from seqgrad.crosscheck.latexdoc import notes_notation
    from seqgrad.crosscheck.notes import FOOTNOTE_WORDS
    from seqgrad.derive import catalogue
    from seqgrad.derive.latex_settings import DEFAULT

    notation = notes_notation(DEFAULT)
    notes = [handout[s:e] for s, e in footnotes(body(handout))]
    counted = [(n, m) for n in notes for m in _COUNTED.finditer(n)]
    assert len(counted) >= 2  # the positional encodings' and attention's footnotes
    for note, match in counted:
        said = note[match.end():]
        assert said.startswith(" ("), note
        named = re.findall(r"\\pageref\{id:([a-z0-9-]+)\}", parenthesized(said[1:]))
        assert len(named) == int(match.group(1)), note
        for name in named:
            entry = catalogue.get(name)
            assert entry.method == "counterexample"
            # as math, or in the words of notes.FOOTNOTE_WORDS where the statement's symbols are the appendix's own
            expected = FOOTNOTE_WORDS.get(name, f"${notation.latex(entry.statement())}$")
            assert f"{expected}, p.~\\pageref{{id:{name}}}" in note
            heading = "\\paragraph{\\texttt{" + "-\\allowbreak{}".join(name.split("-")) + "}}"
            assert heading + f"\\label{{id:{name}}}" in handout[handout.index("\\appendix"):], name
