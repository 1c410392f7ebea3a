"""seqgrad's small shared core: the error hierarchy, input validation,
significant-figure comparison and atomic file output.

This package imports only the standard library, so ``derive`` (SymPy only),
``numeric`` (numpy and torch) and ``crosscheck`` can all depend on it without
depending on each other.
"""

__version__ = "0.1.0"
