"""docs/report-schema.md matches what crosscheck/report.py really writes, in both directions."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from seqgrad.crosscheck import report
from seqgrad.crosscheck.registry import Result, all_checks

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "docs" / "report-schema.md"

TYPES = {
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array of objects": lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v),
    "array of strings": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    "string or null": lambda v: v is None or isinstance(v, str),
    "number or null": lambda v: v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)),
    "number or string": lambda v: (isinstance(v, (int, float)) and not isinstance(v, bool)) or v in ("inf", "-inf", "nan"),
    "number, string or null": lambda v: v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
                                        or v in ("inf", "-inf", "nan"),
}


def documented() -> dict[str, dict[str, tuple[str, str]]]:
    """{table: {field: (type, meaning)}} for the tables headed 'Top level', '`summary`' and '`checks[]`'."""
    tables: dict[str, dict[str, tuple[str, str]]] = {}
    for block in re.split(r"^## ", SCHEMA.read_text(encoding="utf-8"), flags=re.M)[1:]:
        heading = block.splitlines()[0].strip().strip("`")
        rows = re.findall(r"^\| `(\w+)` \| ([^|]+?) \| (.+?) \|$", block, re.M)
        if rows:
            tables[heading] = {name: (kind, meaning) for name, kind, meaning in rows}
    return tables


def validate(data: dict) -> list[str]:
    """Every problem of ``data`` against the documented schema (empty when it conforms)."""
    docs = documented()
    problems = []

    def against(obj: dict, table: str):
        fields = docs[table]
        for name in obj:
            if name not in fields:
                problems.append(f"{table}: field {name!r} is written but not documented")
        for name, (kind, _) in fields.items():
            if name not in obj:
                problems.append(f"{table}: documented field {name!r} is not written")
            elif not TYPES[kind](obj[name]):
                problems.append(f"{table}: {name}={obj[name]!r} is not of the documented type {kind}")

    against(data, "Top level")
    against(data.get("summary", {}), "summary")
    for check in data.get("checks", []):
        against(check, "checks[]")
    return problems


def test_schema_page_has_the_three_tables_with_known_types():
    docs = documented()
    assert set(docs) == {"Top level", "summary", "checks[]"}
    for table in docs.values():
        for name, (kind, _) in table.items():
            assert kind in TYPES, f"{name}: unknown type {kind!r}"


def test_timing_fields_are_the_documented_ones():
    marked = {name for table in documented().values() for name, (_, meaning) in table.items() if "**timing**" in meaning}
    assert marked == set(report.TIMING_FIELDS)


def test_a_real_report_conforms(tmp_path, capsys):
    from seqgrad.crosscheck.cli import main

    names = [c.name for c in all_checks()]
    if not names:
        pytest.skip("no checks are registered yet")
    name = "encoder.layernorm_vs_torch" if "encoder.layernorm_vs_torch" in names else names[0]
    assert main(["check", "--only", name, "--out", str(tmp_path / "rep")]) in (0, 1), capsys.readouterr().err
    data = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert data["summary"]["total"] == 1
    assert validate(data) == []


def test_an_errored_check_conforms_and_the_validator_catches_drift(tmp_path):
    """An 'error' result (infinite errors written as "inf") conforms; an undocumented or mistyped field does not."""
    bad = Result("x.crash", "L1", "x", "error", False, float("inf"), float("inf"), "cpu", "float64", "ValueError: boom", 0.1)
    data = json.loads(report.write(tmp_path, [bad], device="cpu", dtype="float64", total_seconds=0.1, figures=[])["json"].read_text())
    assert validate(data) == []
    data["checks"][0]["extra"] = 1
    data["summary"]["ok"] = "yes"
    del data["figures"]
    problems = validate(data)
    assert any("'extra' is written but not documented" in p for p in problems)
    assert any("ok='yes'" in p for p in problems)
    assert any("'figures' is not written" in p for p in problems)
