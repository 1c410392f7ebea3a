"""No user text is ever run: every entry point refuses an injection payload, and no new eval/exec/sympify appears."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from injection_targets import targets  # noqa: E402
from seqgrad.errors import SeqgradError  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def payloads(sentinel: Path) -> list[str]:
    """Texts that would create ``sentinel`` if anything handed them to eval/exec/sympify."""
    return [
        f"__import__('os').system('touch {sentinel}')",
        f"open('{sentinel}', 'w')",
        f"(lambda: __import__('pathlib').Path('{sentinel}').touch())()",
        f"Symbol('x').__class__.__init__.__globals__['__builtins__']['open']('{sentinel}', 'w')",
    ]


@pytest.mark.parametrize("description,call", targets(), ids=[d for d, _ in targets()])
def test_entry_point_refuses_payload_and_runs_nothing(description, call, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sentinel = tmp_path / "SENTINEL"
    for payload in payloads(sentinel):
        with pytest.raises(SeqgradError):
            call(payload)
        assert not sentinel.exists(), f"{description} ran {payload!r}"


def test_sympify_itself_would_have_run_the_payload(tmp_path):
    """The payload is a real one: plain sympy.sympify executes it (so the tests above can fail)."""
    import sympy

    sentinel = tmp_path / "SENTINEL"
    sympy.sympify(f"__import__('os').system('touch {sentinel}')")
    assert sentinel.exists()


# ---------------------------------------------------------------- no new eval/exec/sympify in the source

#: calls that hand text to Python's or SymPy's evaluator; ``eval``/``exec``/``compile`` as builtins,
#: the SymPy ones however they are reached (``sp.sympify``, ``sympy.S``, ``parse_expr``)
BUILTINS = {"eval", "exec", "compile", "__import__"}
SYMPY = {"sympify", "parse_expr", "S", "parse_latex"}

#: (file, name) -> why it is safe.  A new entry needs a review.
ALLOWED = {
    ("crosscheck/lambdify.py", "exec"): "runs code generated from a Program by seqgrad's own printer, never user text",
    ("crosscheck/lambdify.py", "compile"): "compiles that generated code",
}


def _calls(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and (f.id in BUILTINS or f.id in SYMPY):
            if f.id == "__import__" and all(isinstance(a, ast.Constant) for a in node.args):
                continue  # __import__("math"): a fixed module name, no text
            yield f.id, node.lineno
        elif isinstance(f, ast.Attribute) and f.attr in SYMPY:
            yield f.attr, node.lineno


def test_no_new_eval_exec_or_sympify():
    found = []
    for package in ("derive", "numeric", "crosscheck", "seqgrad"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for name, line in _calls(path):
                if (rel, name) not in ALLOWED:
                    found.append(f"{rel}:{line}: {name}(...)")
    assert not found, ("text handed to an evaluator; use derive.safe_parse (parse_expression / as_sympy):\n"
                       + "\n".join(found))


def test_the_scan_finds_what_it_looks_for(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import sympy as sp\nx = sp.sympify(t)\ny = eval(t)\nz = sp.S(t)\nm.eval()\n")
    assert [n for n, _ in _calls(bad)] == ["sympify", "eval", "S"]
