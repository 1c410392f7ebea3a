"""Every row of docs/bad-input.md is a test: the call raises the documented class with the documented message."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bad_input_cases  # noqa: E402
from bad_input_cases import CASES, PAYLOAD  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("case", CASES, ids=[f"{c.area}:{c.call}"[:90] for c in CASES])
def test_bad_input_is_refused_clearly(case, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an injection payload would create ./pwned here; CLI outputs land here too
    with pytest.raises(case.error) as info:
        case.run()
    message = str(info.value)
    assert case.fragment in message, message
    assert "\n" not in message.strip(), message
    assert not (tmp_path / "pwned").exists(), f"{case.call} ran the injected code"


def test_the_table_covers_every_area_the_issue_names():
    text = " ".join(c.call + " " + c.error.__name__ for c in CASES)
    for needle in ("steps=0", "2.5", "swish", "ShapeError", "NonFiniteError", "SizeGuardError", "tau=0", "w_h=[]",
                   "mismatched widths", "gate weight", "unpaired", "heads that do not fit", "wrong-shape mask",
                   "every source masked", "eps=0", "out of range", "zebra", "NaN weights", "inf weights",
                   "unparsable claim", PAYLOAD, "frobnicate", "--sections", "--bogus"):
        assert needle in text, needle


def test_docs_page_is_up_to_date():
    page = ROOT / "docs" / "bad-input.md"
    assert page.read_text(encoding="utf-8") == bad_input_cases.markdown(), \
        "docs/bad-input.md is out of date: run  python tests/bad_input_cases.py > docs/bad-input.md"


def test_every_case_is_a_row_of_the_page():
    rows = [line for line in bad_input_cases.markdown().splitlines() if line.startswith("| `")]
    assert len(rows) == len(CASES)
    assert len({(c.area, c.call) for c in CASES}) == len(CASES), "two cases with the same description"
    assert all(re.search(r"`\w+`", r.split("|")[2]) for r in rows)
