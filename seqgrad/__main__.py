"""``python -m seqgrad`` is the ``seqgrad`` command."""

import sys

from seqgrad.crosscheck.cli import main

sys.exit(main())
