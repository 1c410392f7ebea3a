"""Symbolic derivations for sequence models, in SymPy only.

``import derive`` stays light: it never imports torch or the numeric layer,
and submodules are loaded when first used (``derive.rnn``, ``derive.positional``...).
``__all__`` lists every public submodule of the package (read from the package
folder, so that a new module is reachable as ``derive.NAME`` without an edit here).
"""

from __future__ import annotations

import importlib
import pkgutil

__all__ = sorted({m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")} | {"verify", "diff"})


def verify(lhs, rhs=None, **kwargs):
    """Prove ``lhs = rhs`` or check it at random points: see :func:`derive.verification.verify`."""
    from .verification import verify as _verify

    return _verify(lhs, rhs, **kwargs)


def diff(expr, wrt, shapes=None, variables=None, **kwargs):
    """The derivative of a matrix or vector expression at symbolic size: see :func:`derive.matcalc.diff`."""
    from .matcalc import diff as _diff

    return _diff(expr, wrt, shapes, variables, **kwargs)


def __getattr__(name: str):
    if name in __all__ and name not in ("verify", "diff"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
