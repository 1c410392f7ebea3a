"""Symbolic derivations for sequence models, in SymPy only.

``import derive`` stays light: it never imports torch or the numeric layer,
and submodules are loaded when first used (``derive.rnn``, ``derive.positional``...).
"""

from __future__ import annotations

import importlib

__all__ = ["rnn", "positional", "attention", "layernorm", "residual", "counting", "catalogue", "gated", "activations",
           "rules", "blocks", "verify"]


def verify(lhs, rhs=None, **kwargs):
    """Prove ``lhs = rhs`` or check it at random points: see :func:`derive.verification.verify`."""
    from .verification import verify as _verify

    return _verify(lhs, rhs, **kwargs)


def __getattr__(name: str):
    if name in __all__ and name != "verify":
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"{__name__}.{name}":
                raise AttributeError(f"module 'derive' has no submodule {name!r}") from None
            raise
    raise AttributeError(f"module 'derive' has no attribute {name!r}")
