"""The prose statements of the four course texts, each with a verdict (crosscheck.claims_statements)."""

from __future__ import annotations

import fnmatch
from collections import Counter

import pytest

from seqgrad.crosscheck.claims_catalogue import entries
from seqgrad.crosscheck.claims_statements import VERDICTS, counts, statements
from seqgrad.sources import section_of


def _registered():
    from seqgrad.crosscheck.registry import all_checks

    return {c.name: c for c in all_checks()}


def test_every_text_has_statements_with_verdicts_and_a_reason():
    items = statements()
    assert {s.key for s in items} == {"week06", "lesson", "lecture07", "wiki"}
    for s in items:
        assert s.verdict in VERDICTS, s
        if s.verdict == "holds":
            assert s.checked_by or s.evidence, s
        elif s.verdict == "not checkable":
            assert s.reason and not s.checked_by and s.evidence is None, s
        else:
            assert s.precise, s  # the precise statement and what is missing, or the counterexample
        section_of(s.key, s.line)  # the citation names a line of its text
    per_text = counts()
    assert all(sum(c.values()) >= 19 for c in per_text.values()), per_text


def test_the_counts_in_the_docs_are_the_catalogues():
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "claims.md").read_text(encoding="utf-8")
    for key, c in counts().items():
        row = f"| {key} | {sum(c.values())} | {c['holds']} | {c['imprecise']} | {c['false']} | {c['not checkable']} |"
        assert row in text, row


def test_every_named_check_is_registered():
    names = list(_registered())
    for s in statements():
        for pattern in s.checked_by:
            assert fnmatch.filter(names, pattern), f"{s.cite}: no registered check {pattern}"
    lines = {s.line for s in statements() if s.key == "lecture07"}
    assert {9, 21, 25, 33, 37, 39, 41, 45, 47} <= lines  # every formula of the lecture
    assert {19, 20, 23, 27, 30, 32, 45, 58, 65, 72, 82, 90, 93, 96, 99, 101} <= {s.line for s in statements() if s.key == "wiki"}


def test_every_imprecise_or_false_statement_reaches_the_check_results_as_an_erratum():
    """A statement with a computation is a check of its own; one without leans on a claims entry that is an erratum."""
    registered = _registered()
    contradicted = {f"claims.{e.name}" for e in entries() if e.expected == "contradicted"}
    for s in statements():
        if not s.erratum:
            continue
        if s.evidence is not None:
            assert f"claims.{s.name}" in registered, s
        else:
            assert contradicted & set(s.checked_by), f"{s.cite}: an erratum no check reports"


def test_the_statement_checks_pass_with_the_texts_verdicts():
    from seqgrad.crosscheck.checks.claims import statement_outcome

    seen = Counter()
    for s in statements():
        if s.evidence is None:
            continue
        out = statement_outcome(s)
        assert out.passed, (s.cite, out.detail)
        assert out.textbook == ("contradicted" if s.erratum else "verified")
        assert out.reason.startswith(s.verdict + ":") or out.reason == s.verdict
        if s.erratum:  # the reports take what is wrong in the text from the detail's [erratum: ...]
            assert out.detail.endswith(f"[erratum: {s.verdict}: {s.precise}]"), out.detail
        seen[s.verdict] += 1
    assert seen["imprecise"] >= 10 and seen["false"] >= 2 and seen["holds"] >= 10


def test_a_statement_check_fails_when_its_computation_does_not_support_the_verdict():
    from dataclasses import replace

    from seqgrad.crosscheck.checks.claims import statement_outcome

    s = next(s for s in statements() if s.cite == "lecture07 §Positions:45")
    out = statement_outcome(replace(s, evidence=lambda: (False, "outputs unchanged by a permutation")))
    assert not out.passed and "no longer supports 'imprecise'" in out.detail


@pytest.mark.parametrize("cite, verdict", [
    ("lecture07 §Positions:45", "imprecise"),   # 'invariant': the outputs permute (equivariance), pooled is invariant
    ("week06 §Depth:1171", "holds"),            # the chapter says 'equivariance' and means it
    ("lesson §Encoder:130", "holds"),           # LayerNorm per example: does not depend on the batch
    ("wiki §Encoder:20", "false"),              # the distance of the sinusoidal encoding is not monotone
    ("week06 §Attention:683", "holds"),         # the variance argument, stated with its assumption
    ("lesson §Parallel:33", "imprecise"),       # O(n^2 d) leaves out the 4 n d^2 of the projections
    ("lesson §MHA:75", "false"),                # nine words precede 'она', and 'счастлива' follows it
    ("lesson §Takeaways:284", "false"),         # 'literally repeats': pre-norm is not the lesson's post-norm
])
def test_verdicts_of_the_issue(cite, verdict):
    assert [s.verdict for s in statements() if s.cite == cite][0] == verdict


def test_pre_norm_and_post_norm_are_different_functions_so_the_lessons_literally_the_same_is_false():
    s = [s for s in statements() if s.cite == "lesson §Encoder:130"][1]
    assert s.verdict == "false" and s.evidence()[0]


def test_the_whole_reading_of_week06_and_the_lesson_reaches_every_section():
    """Both texts were read sentence by sentence: every section holds statements, and the second finding on a
    line keeps the first pass's name (the lesson's l.164 and l.184 are imprecise in their second statement)."""
    from seqgrad.sources import TEXTS

    items = statements()
    for key in ("week06", "lesson"):
        sections = {section_of(key, s.line).tag for s in items if s.key == key}
        assert sections == {sec.tag for sec in TEXTS[key].sections}, key
        lines = [s.line for s in items if s.key == key]
        assert lines == sorted(lines), key  # in text order
    by_name = {s.name: s for s in items}
    assert by_name["statement_lesson_164"].verdict == "holds" and by_name["statement_lesson_164b"].verdict == "imprecise"
    assert by_name["statement_lesson_184b"].verdict == "imprecise"
    assert sum(s.key == "week06" for s in items) >= 143 and sum(s.key == "lesson" for s in items) >= 86
