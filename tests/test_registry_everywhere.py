"""Every operation of the registry reads the same in the cell equations, ``seqgrad claim``, ``verify`` and ``diff``.

The loops run over :func:`seqgrad.operations.operations`, so an operation added to the registry is covered
without a line here.  The oracle of each value is the operation's own mpmath implementation (a primitive) or
its definition over mpmath (a composite) at 40 digits, and of each derivative a central difference of it:
independent of the certified interval evaluator and of SymPy's differentiation that the tools use.
"""

from __future__ import annotations

import subprocess
import sys

import mpmath
import pytest
import sympy as sp

from seqgrad import operations as registry
from seqgrad.derive import diff, verify
from seqgrad.derive.claims import parse_claim
from seqgrad.derive.operations import mpmath_namespace

OPS = [op for op in registry.operations() if op.arity[0] == 1]
X0 = "0.3"  # inside every built-in domain (log, sqrt, asin, acos) and away from every kink (abs, relu, floor, sign)


def _mp_value(op, x):
    with mpmath.workdps(40):
        return getattr(mpmath_namespace(), op.name)(mpmath.mpf(x))


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_claim_reads_every_operation_and_bounds_it_certifiably(op):
    value = _mp_value(op, X0)
    printed = mpmath.nstr(value, 12, min_fixed=-30, max_fixed=30)
    v = parse_claim(f"{op.name}({X0}) = {printed}").verify()
    assert v.status == "verified", v.line()
    # a printed value off in the 9th digit is caught: the certified bounds are narrow, not merely wide enough
    off = mpmath.nstr(value + mpmath.mpf("1e-8") * (1 + abs(value)), 12)
    assert parse_claim(f"{op.name}({X0}) = {off}").verify().status == "contradicted", op.name


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_cell_equations_read_every_operation(op):
    from seqgrad.derive.cell import Cell

    cell = Cell(f"z = w_x*x + w_h*h_prev; h = {op.name}(z)", states="h", params="w_x w_h w_o", head="w_o*h")
    assert cell.general().backward_rows()  # derived, not refused


def test_erf_claims_at_the_reported_points():
    assert parse_claim("erf(0.5) = 0.5205").verify().status == "verified"
    assert parse_claim("erf(0) = 0").verify().reason.endswith("exact")
    assert parse_claim("erf(-1) = -erf(1)").verify().status == "verified"
    assert parse_claim("erf(0.5) = 0.5206").verify().status == "contradicted"
    assert parse_claim("gelu(1) = 1*(1 + erf(1/sqrt(2)))/2").verify().status == "verified"


def test_composites_are_exact_where_their_definition_is():
    assert parse_claim("relu(-2) = 0").verify().reason.endswith("exact")
    assert parse_claim("relu(3) = 3").verify().reason.endswith("exact")
    assert parse_claim("gelu(0) = 0").verify().reason.endswith("exact")
    assert parse_claim("sign(sin(pi)) = 0").verify().status == "verified"


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_verify_reads_every_operation_and_refutes_a_false_variant(op):
    f = op.name
    assert verify(f"{f}(x) = {f}(x)", variables="x").status == "proved"
    assert verify(f"{f}(x) + 1/1000 = {f}(x)", variables="x").status == "refuted", f


COMPOSITES = [op for op in OPS if op.definition is not None and not op.inline]


@pytest.mark.parametrize("op", COMPOSITES, ids=lambda op: op.name)
def test_verify_proves_a_composite_equal_to_its_definition_and_refutes_a_changed_one(op):
    from seqgrad.derive.operations import node

    x = sp.Symbol("x")
    definition = sp.sstr(node(op.name)(x).rewrite("definition"))
    assert verify(f"{op.name}(x) = {definition}", variables="x").status == "proved", definition
    assert verify(f"{op.name}(x) = {definition} + x/1000", variables="x").status == "refuted"


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_diff_reads_every_operation_against_a_central_difference(op):
    d = diff(f"{op.name}(x)", "x", variables="x")
    got = float(sp.sympify(d.value).subs(d.wrt, sp.Rational(3, 10)).evalf(30))
    h = mpmath.mpf("1e-12")
    with mpmath.workdps(40):
        want = (_mp_value(op, mpmath.mpf(X0) + h) - _mp_value(op, mpmath.mpf(X0) - h)) / (2 * h)
    assert abs(got - float(want)) < 1e-9 * (1 + abs(float(want))), (op.name, got, want)


def test_an_operation_registered_later_is_read_by_claim_verify_and_diff():
    swish = registry.Operation("swish_test", definition=lambda m, z: z * m.sigmoid(z))
    registry.register(swish)
    try:
        assert swish.interval == "definition"
        value = mpmath.nstr(mpmath.mpf("0.3") / (1 + mpmath.exp(mpmath.mpf("-0.3"))), 12)
        assert parse_claim(f"swish_test(0.3) = {value}").verify().status == "verified"
        assert verify("swish_test(x) = x*sigmoid(x)", variables="x").status in ("proved", "holds")
        assert diff("swish_test(x)", "x", variables="x").value != 0
    finally:
        registry.unregister("swish_test")


def test_a_primitive_without_an_interval_rule_is_refused_by_claim_by_name():
    from seqgrad.errors import ParseError

    op = registry.Operation("opaque_test", sympy=lambda s: s.Function("opaque_test"), derivative=lambda m, z, h: 1)
    registry.register(op)
    try:
        assert not op.claims
        with pytest.raises(ParseError, match="opaque_test"):
            parse_claim("opaque_test(1) = 1").verify()
    finally:
        registry.unregister("opaque_test")


def test_a_monotone_rule_needs_mpmath_and_a_kind_is_checked():
    from seqgrad.errors import SeqgradValueError

    with pytest.raises(SeqgradValueError, match="mpmath"):
        registry.Operation("m_test", sympy=lambda s: s.exp, derivative=lambda m, z, h: h, interval="increasing")
    with pytest.raises(SeqgradValueError, match="interval"):
        registry.Operation("m_test", sympy=lambda s: s.exp, derivative=lambda m, z, h: h, interval="sometimes")


def test_seqgrad_claim_cli_reads_erf():
    out = subprocess.run([sys.executable, "-m", "seqgrad", "claim", "erf(0.5) = 0.5205"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("verified: erf(0.5) = 0.52049"), out.stdout + out.stderr
