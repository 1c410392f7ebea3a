"""Every identity of the catalogue holds numerically at random points other than the seed the report uses.

Each entry's numeric check (``Identity.check_numeric(seed)``) draws its random parameters from ``seed``;
hypothesis draws the seed.  The default run tries one fresh seed per entry, the slow run several.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seqgrad.crosscheck.checks.identities import verify
from seqgrad.derive import catalogue

ENTRIES = catalogue.entries()
seeds = st.integers(1, 2**31 - 1)


def _numeric_holds(entry, seed: int) -> None:
    outcome, proof = verify(entry, seed=seed)
    assert outcome.passed, f"{entry.name} at seed {seed}: {outcome.detail}"


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.name for e in ENTRIES])
@settings(max_examples=1, deadline=None, database=None)
@given(seed=seeds)
def test_identity_holds_at_a_random_point(entry, seed):
    _numeric_holds(entry, seed)


@pytest.mark.slow
@pytest.mark.parametrize("entry", ENTRIES, ids=[e.name for e in ENTRIES])
@settings(max_examples=10, deadline=None, database=None)
@given(seed=seeds)
def test_identity_holds_at_many_random_points(entry, seed):
    _numeric_holds(entry, seed)
