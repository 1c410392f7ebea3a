"""Positional encodings: the shift identity R(k), odd widths, both layouts, wavelengths, printed values, bad input."""

import math

import pytest
import sympy as sp
from hypothesis import given, settings, strategies as st

from seqgrad.derive import positional as P
from seqgrad.errors import SeqgradTypeError, SeqgradValueError
from seqgrad.sigfig import matches


@pytest.mark.parametrize("d", [1, 2, 5, 6, 8])
@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_shift_identity_proved_exactly(d, layout):
    report = P.Sinusoidal(d, layout=layout).shift_identity().prove()
    assert report.holds and report.shift and report.orthogonal and report.determinant_one and report.composition
    assert report.pos_independent
    assert (report.unpaired is None) == (d % 2 == 0)


def test_course_frequencies_and_values():
    pe = P.Sinusoidal(5)
    assert [pe.omega(j) for j in range(5)] == [1, 1, sp.Integer(10000) ** sp.Rational(-2, 5), sp.Integer(10000) ** sp.Rational(-2, 5),
                                              sp.Integer(10000) ** sp.Rational(-4, 5)]
    assert list(pe.vector(0)) == [0, 1, 0, 1, 0]
    printed = [0.141, -0.990, 0.0753, 0.997, 0.00189]
    assert all(matches(float(x), p) for x, p in zip(pe.vector(3), printed))


def test_rotation_matrix_shape_and_layouts_agree_up_to_permutation():
    inter, half = P.Sinusoidal(6).rotation(P.k), P.Sinusoidal(6, layout="half").rotation(P.k)
    Ri, Rh = inter.matrix(), half.matrix()
    assert Ri.shape == Rh.shape == (6, 6)
    perm = [0, 2, 4, 1, 3, 5]  # half coordinate -> interleaved coordinate
    Pm = sp.zeros(6, 6)
    for a, b in enumerate(perm):
        Pm[a, b] = 1
    assert sp.simplify(Pm * Ri * Pm.T - Rh) == sp.zeros(6, 6)
    # odd width: R acts on the d-1 paired coordinates only
    assert P.Sinusoidal(5).rotation(2).matrix().shape == (4, 4)
    assert P.Sinusoidal(5).rotation(2).coordinates == [0, 1, 2, 3]


def test_shift_numerically_at_integer_positions():
    pe = P.Sinusoidal(7)
    R = pe.rotation(3).matrix()
    for p in (0, 4, 11):
        lhs = [float(x) for x in pe.vector(p + 3)[:6]]
        rhs = [float(x) for x in R * pe.vector(p)[:6, :]]
        assert max(abs(a - b) for a, b in zip(lhs, rhs)) < 1e-12


def test_unpaired_coordinate_has_no_rotation_and_no_scalar_shift():
    pe = P.Sinusoidal(5)
    assert pe.unpaired() == 4
    with pytest.raises(SeqgradValueError, match="unpaired sine"):
        pe.rotation_block(4)
    with pytest.raises(SeqgradValueError, match="unpaired"):
        pe.partner(4)
    assert pe.partner(2) == 3 and pe.partner(3) == 2
    assert P.unpaired_has_no_scalar_shift(pe).holds
    with pytest.raises(SeqgradValueError, match="odd width"):
        P.NoScalarShift(P.Sinusoidal(4))


def test_dot_product_depends_only_on_offset_and_norm():
    pe = P.Sinusoidal(6)
    lhs, rhs = P.dot_product(pe), P.dot_product_offset_form(pe)
    assert sp.expand(sp.expand_trig(lhs - rhs)) == 0
    # invariance under a common shift of both positions: d/dp + d/dq = 0
    assert sp.simplify(sp.diff(rhs, P.pos) + sp.diff(rhs, P.q)) == 0
    norm = P.dot_product(pe, P.pos, P.pos)
    assert sp.simplify(norm) == 3


def test_wavelengths():
    pe = P.Sinusoidal(512)
    assert pe.wavelength(0) == 2 * sp.pi
    assert 2 * math.pi * 9000 < float(pe.wavelength(255)) < 2 * math.pi * 10000


def test_base_parameter():
    pe = P.Sinusoidal(4, base=100)
    assert pe.omega(2) == sp.Rational(1, 10)
    assert pe.shift_identity().prove().holds


@pytest.mark.parametrize("kwargs, error", [
    (dict(d=0), SeqgradValueError), (dict(d=2.5), SeqgradTypeError), (dict(d=4, base=1), SeqgradValueError),
    (dict(d=4, base=0.5), SeqgradValueError), (dict(d=4, layout="spiral"), SeqgradValueError),
])
def test_bad_input(kwargs, error):
    with pytest.raises(error):
        P.Sinusoidal(**kwargs)


def test_bad_coordinate_index():
    with pytest.raises(SeqgradValueError, match="j=9"):
        P.Sinusoidal(4).omega(9)


def test_latex_is_readable():
    text = P.Sinusoidal(5).shift_identity().latex()
    assert text.startswith(r"\begin{align*}") and text.rstrip().endswith(r"\end{align*}") and "unpaired" in text
    assert P.Sinusoidal(5).shift_identity()._repr_latex_() == text  # a complete display Jupyter renders as it is
    assert r"\documentclass" in P.Sinusoidal(4).rotation(P.k).document()


@settings(max_examples=15, deadline=None)
@given(d=st.integers(min_value=1, max_value=24), base=st.integers(min_value=2, max_value=20000),
       layout=st.sampled_from(P.LAYOUTS))
def test_property_shift_identity_any_width_and_base(d, base, layout):
    """Random widths (1..24), bases and layouts: the exact proof holds."""
    assert P.Sinusoidal(d, base=base, layout=layout).shift_identity().prove().holds


@settings(max_examples=25, deadline=None)
@given(d=st.integers(min_value=2, max_value=32), p=st.floats(-1e3, 1e3), shift=st.floats(-1e3, 1e3))
def test_property_shift_numerically(d, p, shift):
    pe = P.Sinusoidal(d)
    R = pe.rotation(sp.Float(shift, 30))
    coords = R.coordinates
    lhs = [float(pe.vector(sp.Float(p, 30) + sp.Float(shift, 30))[j]) for j in coords]
    rhs = [float(x) for x in R.apply(pe.vector(sp.Float(p, 30)))]
    assert max(abs(a - b) for a, b in zip(lhs, rhs)) < 1e-9
