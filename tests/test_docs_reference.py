"""The CLI reference cannot rot: it is compared with the real argparse parser.

Every subcommand of ``seqgrad`` has a page ``docs/cli/NAME.md`` linked from
``docs/cli.md``; every option and positional argument of it (and of its own
subcommands, such as the figure sets of ``seqgrad plot``) is named on that page
in backticks; and no page describes a command that does not exist.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from seqgrad.crosscheck.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
CLI_INDEX = ROOT / "docs" / "cli.md"
CLI_PAGES = ROOT / "docs" / "cli"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    out = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            out.update(action.choices)
    return out


def _arguments(parser: argparse.ArgumentParser) -> list[str]:
    """What a reader types: option strings (``--out``) and positional metavars (``OUT.tex``)."""
    names = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if action.option_strings:
            names += action.option_strings
        else:
            names.append(action.metavar or action.dest)
    return names


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...]):
    """(command path, parser) for a command and every nested subcommand."""
    yield path, parser
    for name, sub in _subcommands(parser).items():
        yield from _walk(sub, path + (name,))


COMMANDS = _subcommands(build_parser())


def _documented(word: str, page: str) -> bool:
    """``word`` appears in backticks, alone or followed by its value (``--out DIR``, ``--format {png,...}``)."""
    return re.search(r"`" + re.escape(word) + r"(?:[ =\[{][^`]*)?`", page) is not None


def test_parser_has_commands():
    assert {"check", "latex", "plot"} <= set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_a_page_linked_from_the_index(name):
    page = CLI_PAGES / f"{name}.md"
    assert page.exists(), f"docs/cli/{name}.md is missing: document `seqgrad {name}`"
    assert f"(cli/{name}.md)" in CLI_INDEX.read_text(encoding="utf-8"), f"docs/cli.md does not link cli/{name}.md"
    assert f"`seqgrad {name}" in page.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_is_documented(name):
    page_path = CLI_PAGES / f"{name}.md"
    if not page_path.exists():
        pytest.fail(f"docs/cli/{name}.md is missing")
    page = page_path.read_text(encoding="utf-8")
    missing = []
    for path, parser in _walk(COMMANDS[name], ("seqgrad", name)):
        if len(path) > 2 and not _documented(" ".join(path), page):
            missing.append(" ".join(path))
        missing += [f"{' '.join(path)} {arg}" for arg in _arguments(parser) if not _documented(arg, page)]
    assert not missing, f"docs/cli/{name}.md does not document: " + "; ".join(missing)


def test_no_page_for_a_command_that_does_not_exist():
    stale = sorted(p.stem for p in CLI_PAGES.glob("*.md") if p.stem not in COMMANDS)
    assert not stale, f"docs/cli/ describes commands that do not exist: {stale}"
    linked = set(re.findall(r"\(cli/([\w-]+)\.md\)", CLI_INDEX.read_text(encoding="utf-8")))
    assert linked <= set(COMMANDS) | {p.stem for p in CLI_PAGES.glob("*.md")}


def test_documented_checker_is_strict():
    """The matcher itself: a bare mention in prose does not count, a backticked one with its value does."""
    page = "Use `--out DIR` here; --only is mentioned only in prose; `--format {png,pdf}`."
    assert _documented("--out", page) and _documented("--format", page)
    assert not _documented("--only", page)
    assert not _documented("--o", page)


DOCS = ROOT / "docs"
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _links(page: Path) -> list[Path]:
    """Relative links of a Markdown page, resolved against its folder (web links are left out)."""
    out = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue
        out.append((page.parent / target).resolve())
    return out


def test_relative_links_resolve():
    broken = [f"{p.relative_to(ROOT)} -> {t}" for p in sorted(DOCS.rglob("*.md")) for t in _links(p) if not t.exists()]
    assert not broken, "broken links: " + "; ".join(broken)


def test_every_page_is_reachable_from_the_index():
    seen, todo = set(), [(DOCS / "index.md").resolve()]
    while todo:
        page = todo.pop()
        if page in seen or not page.exists() or page.suffix != ".md":
            continue
        seen.add(page)
        todo += _links(page)
    unreachable = sorted(str(p.relative_to(ROOT)) for p in DOCS.rglob("*.md") if p.resolve() not in seen)
    assert not unreachable, f"pages no link from docs/index.md leads to: {unreachable}"
