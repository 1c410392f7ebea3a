"""The course's printed Tables 10-31 and inline values (``data/course_tables.json``), cell by cell.

The transcription is made once, exactly as printed; :func:`cells` expands it
into one :class:`Cell` per printed number with the intermediate it names, and
:func:`compare` holds each against a computed trace with
:func:`seqgrad.sigfig.matches` (half a unit in the third significant figure).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterator, Mapping

from seqgrad.sigfig import half_unit, matches

PATH = Path(__file__).resolve().parent / "data" / "course_tables.json"


@lru_cache(maxsize=1)
def load() -> dict:
    return json.loads(PATH.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Cell:
    where: str          # "Table 13, row '2: of', column 'S_6j'" or "L681 S_60"
    stage: str
    name: str
    index: tuple[int, ...]
    printed: float

    def label(self) -> str:
        return f"{self.where} = {self.name}[{', '.join(map(str, self.index))}]"


def _fill(index, values) -> tuple[int, ...]:
    it = iter(values)
    return tuple(next(it) if i is None else i for i in index)


def cells() -> Iterator[Cell]:
    """Every printed number of the transcription, tables first, then inline values."""
    doc = load()
    for t in doc["tables"]:
        for r, row in enumerate(t["rows"]):
            for c, printed in enumerate(row):
                if "columns" in t:
                    spec = t["columns"][c]
                    name, index = spec["name"], _fill(spec["index"], [r])
                elif "row_sources" in t:
                    spec = t["row_sources"][r]
                    name, index = spec["name"], _fill(spec["index"], [c])
                else:
                    name, index = t["name"], _fill(t.get("index", [None, None]), [r, c])
                where = f"{t['id']} (line {t['line']}), row '{t['row_labels'][r]}', column '{t['col_labels'][c]}'"
                yield Cell(where, t["stage"], name, index, float(printed))
    for item in doc["inline"]:
        index = item["index"]
        for k, printed in enumerate(item["values"]):
            full = _fill(index, [k]) if None in index else tuple(index)
            yield Cell(f"{item['id']} (line {item['line']})", item["stage"], item["name"], full, float(printed))


@dataclass
class Comparison:
    cell: Cell
    computed: float
    ok: bool

    @property
    def error(self) -> float:
        return abs(self.computed - self.cell.printed)

    @property
    def error_in_half_units(self) -> float:
        return self.error / half_unit(self.cell.printed)


def compare(traces: Mapping[str, Mapping], slack: float = 0.0) -> list[Comparison]:
    """Hold every cell against ``traces[stage][name][index]``.

    ``slack`` widens the half-unit bound by an absolute amount (0 in float64;
    the float32 tolerance for float32 runs, whose round-off can cross a rounding
    boundary such as U[6,4] = -0.0954499, 6.8e-8 from -0.09545).
    """
    out = []
    for cell in cells():
        value = float(traces[cell.stage][cell.name][cell.index])
        ok = matches(value, cell.printed) or abs(value - cell.printed) <= half_unit(cell.printed) + slack
        out.append(Comparison(cell, value, ok))
    return out
