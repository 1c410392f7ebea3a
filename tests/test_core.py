"""The shared core: errors, validation, significant figures, atomic output, tolerance policy."""

import math
import os
import subprocess
import sys

import numpy as np
import pytest

from seqgrad import atomic, sigfig, validate
from seqgrad.errors import NonFiniteError, SeqgradError, SeqgradTypeError, SeqgradValueError
from seqgrad.crosscheck import tolerance


def test_import_derive_does_not_import_torch():
    """Every module of derive/ imports without torch, numeric/ or matplotlib."""
    code = (
        "import sys, importlib, pkgutil, seqgrad.derive as derive\n"
        "for m in pkgutil.walk_packages(derive.__path__, 'seqgrad.derive.'): importlib.import_module(m.name)\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
        "assert 'seqgrad.numeric' not in sys.modules and 'matplotlib' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=os.path.dirname(os.path.dirname(__file__)))


def test_errors_name_argument_and_allowed():
    err = SeqgradValueError("steps", 0, "an integer >= 1")
    assert isinstance(err, ValueError) and isinstance(err, SeqgradError)
    assert "steps=0" in str(err) and ">= 1" in str(err)
    assert isinstance(SeqgradTypeError("x", "a", "a number"), TypeError)


@pytest.mark.parametrize("value", [True, 1.5, "3", None])
def test_integer_refuses_non_integers(value):
    with pytest.raises(SeqgradTypeError, match="steps"):
        validate.integer("steps", value, minimum=1)


def test_integer_range():
    assert validate.integer("steps", np.int64(3), minimum=1) == 3
    with pytest.raises(SeqgradValueError, match=">= 1"):
        validate.integer("steps", 0, minimum=1)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_real_refuses_non_finite(value):
    with pytest.raises(NonFiniteError, match="tau"):
        validate.real("tau", value)


def test_real_positive():
    with pytest.raises(SeqgradValueError, match="> 0"):
        validate.real("tau", 0.0, positive=True)


def test_choice():
    assert validate.choice("activation", "tanh", ["tanh", "relu"]) == "tanh"
    with pytest.raises(SeqgradValueError, match="one of tanh, relu"):
        validate.choice("activation", "__import__('os')", ["tanh", "relu"])


@pytest.mark.parametrize(
    "computed, printed, ok",
    [(0.6499, 0.65, True), (0.6506, 0.65, False), (-0.0954499, -0.0954, True), (-0.09545001, -0.0954, False),
     (0.00189, 0.00189, True), (1.0451, 1.04, False), (1.0449, 1.04, True), (1.0449, 1.045, True), (-1.68, -1.68, True)],
)
def test_sigfig_half_unit(computed, printed, ok):
    assert sigfig.matches(computed, printed) is ok


def test_decimals_tolerance():
    assert math.isclose(sigfig.decimals_tolerance("0.1411"), 5e-5)
    assert math.isclose(sigfig.decimals_tolerance("-2"), 0.5)
    with pytest.raises(SeqgradValueError):
        sigfig.decimals_tolerance("abc")


def test_atomic_write_replaces_whole_and_leaves_no_temp(tmp_path):
    target = tmp_path / "report.json"
    atomic.write_text(target, "old")
    with pytest.raises(RuntimeError):
        with atomic.atomic_open(target) as fh:
            fh.write("half")
            raise RuntimeError("interrupted")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["report.json"]
    atomic.write_text(target, "new")
    assert target.read_text() == "new"


def test_tolerance_policy_and_compare():
    tol = tolerance.tolerance("float64", "cpu")
    assert tol.atol <= 1e-9
    assert tolerance.tolerance("float32", "cuda").rtol > tol.rtol
    good = tolerance.compare([1.0, 2.0], [1.0, 2.0 + 1e-13])
    assert good.passed and good.max_abs_error < 1e-12
    bad = tolerance.compare([1.0, 2.0], [1.0, 2.001])
    assert not bad.passed and bad.max_abs_error == pytest.approx(1e-3)
    nan = tolerance.compare([float("nan")], [float("nan")])
    assert not nan.passed
    with pytest.raises(SeqgradValueError):
        tolerance.tolerance("float16", "cpu")
