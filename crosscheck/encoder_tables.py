"""The course encoder's named intermediates as labelled tables, as the text prints them.

Rows are tokens (``"t: word"``), columns features (``F0``, ...) or, for attention
scores and weights, source tokens (``"j=1: journey"``).  Shared by ``seqgrad encoder``
(text, Markdown, LaTeX) and the encoder section of the LaTeX document
(:mod:`crosscheck.latexdoc`); the cells are formatted by their printers.
"""

from __future__ import annotations


def labels(name: str, shape: tuple, tokens: list[str]) -> tuple[list[str], list[str]]:
    """Row and column labels of the intermediate ``name`` of ``shape`` for the phrase ``tokens``."""
    T = len(tokens)
    rows = [f"{t}: {w}" for t, w in enumerate(tokens)] if shape[0] == T else [str(i) for i in range(shape[0])]
    if len(shape) == 1:
        return rows, [name.rsplit(".", 1)[-1]]
    last = name.rsplit(".", 1)[-1]
    if last in ("S", "A", "QKt", "A_causal") and shape[1] == T:
        cols = [f"j={j}: {w}" for j, w in enumerate(tokens)]
    else:
        cols = [f"F{c}" for c in range(shape[1])]
    return rows, cols


def trace_tables(stage: str, record: dict, names: list[str], tokens: list[str]):
    """``(title, rows, row_labels, col_labels)`` for every name of ``names`` in the trace ``record``;
    a 3-D array (the contributions A_tj v_j) gives one table per query."""
    for name in names:
        value = record[name].detach().cpu().double()
        if value.dim() == 3:
            for t in range(value.shape[0]):
                rows, cols = labels(name, tuple(value.shape[1:]), tokens)
                yield f"{stage}: {name}[{t}] (query {t}: {tokens[t]})", value[t].tolist(), [f"j={j}: {w}" for j, w in enumerate(tokens)], cols
            continue
        rows, cols = labels(name, tuple(value.shape), tokens)
        data = value[:, None].tolist() if value.dim() == 1 else value.tolist()
        yield f"{stage}: {name}", data, rows, cols
