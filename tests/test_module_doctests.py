"""Every module's docstring examples run as doctests (ELLIPSIS and NORMALIZE_WHITESPACE), so a docstring
cannot show output the code no longer prints.  Eight modules' examples had drifted unseen (the printer's ∘,
``X⁻ᵀ``, a term order, an error's wording) because only a few modules' doctests were run by their own tests."""

from __future__ import annotations

import doctest
import importlib
import itertools
import pkgutil

import pytest

import seqgrad
import seqgrad.crosscheck
import seqgrad.derive
import seqgrad.numeric

PACKAGES = (seqgrad, seqgrad.derive, seqgrad.numeric, seqgrad.crosscheck)
MODULES = sorted({info.name for info in itertools.chain(*(pkgutil.walk_packages(p.__path__, p.__name__ + ".")
                                                            for p in PACKAGES))
                  if not info.name.endswith("__main__")})


def test_every_package_is_walked():
    assert len(MODULES) > 100 and "seqgrad.derive.rules" in MODULES and "seqgrad.crosscheck.notes" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_module_doctests(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, report=True)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed (see the output above)"
