"""``python -m seqgrad`` is the ``seqgrad`` command."""

from seqgrad.crosscheck.cli import console

console()
