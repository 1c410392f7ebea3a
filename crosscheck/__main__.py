"""``python -m crosscheck`` is the ``seqgrad`` command."""

import sys

from crosscheck.cli import main

sys.exit(main())
