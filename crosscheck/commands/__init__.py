"""One module per ``seqgrad`` subcommand; see :mod:`crosscheck.cli`."""
