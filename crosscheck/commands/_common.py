"""Options shared by several subcommands."""

from __future__ import annotations

import argparse


def add_device(parser: argparse.ArgumentParser, default: str = "cpu") -> None:
    parser.add_argument("--device", choices=("cpu", "cuda", "auto"), default=default,
                        help=f"where numeric work runs (default {default}; auto picks cuda when present)")


def resolved_device(name: str) -> str:
    from numeric.device import resolve_device

    return resolve_device(name).type
