"""derive.tape: the mpmath tape of the numeric checks gives what sympy.lambdify gives, and falls back to it."""

from __future__ import annotations

import random

import mpmath
import pytest
import sympy as sp
from sympy.utilities.lambdify import implemented_function

from seqgrad.derive import tape

x, y, z = sp.symbols("x y z", real=True)
EPS = sp.Symbol("epsilon", positive=True)


def _lambdified(args, expr):
    return sp.lambdify(args, expr, modules=["mpmath"])


EXPRESSIONS = [
    sp.exp(x) * y + sp.Rational(1, 3),
    sp.sqrt(x ** 2 + y ** 2 + EPS) - 1 / sp.sqrt(z ** 2 + EPS),
    sp.tanh(x + 2 * y) ** 3 - sp.log(1 + x ** 2) / (y ** 2 + 1),
    sp.sin(x) ** 2 + sp.cos(x) ** 2 - sp.pi * sp.cos(y * sp.E),
    sp.Max(x, y, z) - sp.Abs(z) + sp.Float("0.125") * x,
    (x ** 2 + EPS) ** sp.Rational(3, 2) + (x ** 2 + 1) ** (y / 3),  # a non-integer power by mpmath.power
    sp.exp(x - sp.Max(x, y)) / (sp.exp(x - sp.Max(x, y)) + sp.exp(y - sp.Max(x, y))),  # shared subexpressions
    sp.Integer(7),
]


@pytest.mark.parametrize("expr", EXPRESSIONS, ids=range(len(EXPRESSIONS)))
def test_tape_matches_lambdify_at_random_points(expr):
    args = [x, y, z, EPS]
    ours, reference = tape.mpmath_function(args, expr), _lambdified(args, expr)
    rng = random.Random(7)
    with mpmath.workdps(30):
        for _ in range(5):
            point = [mpmath.mpf(rng.uniform(-2, 2)) for _ in range(3)] + [mpmath.mpf(rng.uniform(0.1, 1))]
            got, want = ours(*point), reference(*point)
            assert abs(got - want) <= mpmath.mpf(10) ** -27 * (1 + abs(want))


def test_tape_keeps_lambdify_shapes_and_works_at_the_callers_precision():
    M = sp.Matrix([[x + y, sp.Rational(1, 3)], [x * y, sp.exp(x)]])
    f = tape.mpmath_function([x, y], M)
    with mpmath.workdps(40):
        out = f(mpmath.mpf(1), mpmath.mpf(2))
        assert isinstance(out, mpmath.matrix) and (out.rows, out.cols) == (2, 2)
        assert out[0, 0] == 3 and out[1, 0] == 2
        assert abs(out[0, 1] - mpmath.mpf(1) / 3) < mpmath.mpf(10) ** -39  # the rational at 40 digits, not 15
        assert abs(out[1, 1] - mpmath.e) < mpmath.mpf(10) ** -39
    as_list = tape.mpmath_function([x, y], [x - y, x * y])(mpmath.mpf(5), mpmath.mpf(3))
    assert isinstance(as_list, list) and as_list == [2, 15]
    reference = sp.lambdify([x, y], (x - y, x * y), modules=["mpmath"])(mpmath.mpf(5), mpmath.mpf(3))
    assert tape.mpmath_function([x, y], (x - y, x * y))(mpmath.mpf(5), mpmath.mpf(3)) == reference  # a tuple, as lambdify's


def test_implemented_functions_call_their_implementation():
    f = implemented_function("f_concrete", lambda a, b: mpmath.tanh(2 * a - b))
    expr = f(x, y) ** 2 + f(x, y)
    ours = tape.mpmath_function([x, y], expr)
    with mpmath.workdps(30):
        value = mpmath.tanh(mpmath.mpf("0.75"))
        assert abs(ours(mpmath.mpf(0.5), mpmath.mpf(0.25)) - (value ** 2 + value)) < mpmath.mpf(10) ** -28


def test_a_repeated_subexpression_is_one_step():
    shared = sp.tanh(x * y + z)
    t = tape.Tape([x, y, z], [shared + 1, shared * 2, shared ** 2])
    assert len(t.steps) == 3 + 2 + 3  # x*y, x*y + z, tanh(.), once; the constants 1 and 2; the three outputs


def test_unknown_nodes_fall_back_to_lambdify():
    expr = sp.Piecewise((x, x > 0), (-x, True)) + sp.besselj(0, x)
    with pytest.raises(tape.Unsupported):
        tape.Tape([x], [expr])
    f = tape.mpmath_function([x], expr)
    with mpmath.workdps(30):
        assert abs(f(mpmath.mpf(-2)) - (2 + mpmath.besselj(0, -2))) < mpmath.mpf(10) ** -28


def test_a_free_symbol_that_is_not_an_argument_is_not_evaluated_silently():
    with pytest.raises(tape.Unsupported):
        tape.Tape([x], [x + y])
    with pytest.raises(TypeError):
        tape.Tape([x], [x + 1])(1, 2)


def test_free_symbols_of_shared_expressions_leave_bound_indices_out():
    k, n = sp.symbols("k n", integer=True)
    a = sp.IndexedBase("a")
    shared = sp.exp(x * y) + sp.Sum(a[k] * z, (k, 0, n - 1))
    assert tape.free_symbols([shared * 2, shared + EPS]) == {x, y, z, n, a.label, EPS} | sp.Sum(a[k], (k, 0, n)).free_symbols
    assert k not in tape.free_symbols([shared])
