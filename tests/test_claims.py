"""derive.claims, seqgrad claim, and the catalogue of the course texts' own claims."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from seqgrad.derive.claims import Claim, parse_claim
from seqgrad.errors import NonFiniteError, ParseError, SeqgradTypeError, SeqgradValueError, UndefinedError


# --------------------------------------------------------------------------- what a printed number means

def test_issue_example_is_verified_at_the_four_decimals_written():
    v = parse_claim("sin(1)*cos(2) + cos(1)*sin(2) = 0.1411").verify()
    assert v.verified and v.status == "verified"
    assert v.tolerance == Fraction(1, 20000)
    assert abs(float(v.computed) - math.sin(3)) < 1e-15
    assert math.isclose(float(v.discrepancy), math.sin(3) - 0.1411, rel_tol=1e-12)
    assert v.claim.precision() == "rounded at the 4 decimals written"


@pytest.mark.parametrize("text", [
    "sigmoid(1) = 1", "sqrt(5) = 2", "0.9*0.5+0.1*(-0.4) = 0", "softmax(1,2,3) = (0, 0, 1)", "mean(softmax(1,2,3)) = 0",
])
def test_an_integer_on_the_right_is_exact_the_issues_false_verifications(text):
    v = parse_claim(text).verify()
    assert v.status == "contradicted", v.line()


def test_the_departing_digit_and_the_exact_value_are_given():
    v = parse_claim("sqrt(5) = 2").verify()
    assert "2.2360679774997896964" in v.reason and "the 1st decimal" in v.reason
    assert "the units digit" in parse_claim("sigmoid(1) = 1").verify().reason
    ln = parse_claim("layernorm(1.30, 1.90, -0.80, 0.05) = (0.652, 1.222, -1.341, -0.534)").verify()
    assert "entry 2 contradicted" in ln.reason and "-1.340, which departs from the printed -1.341 at the 3rd decimal" in ln.reason


@pytest.mark.parametrize("text", ["sin(1) * cos(2) = \u22120.3502", "cos(3) = \u22120.9900", "0.5 = 0,5", "-0,3502 = \u22120.3502",
                                  "x = 0,5 where x = 0,5", "softmax(1,2; 0,5; 2,0) = (0,2687; 0,1334; 0,5979)"])
def test_typographic_minus_and_decimal_commas_are_read_as_everywhere(text):
    assert parse_claim(text).verify().verified


def test_approx_figures_and_decimals_say_the_number_is_rounded():
    assert not parse_claim("sqrt(5) = 2").verify().verified
    assert parse_claim("sqrt(5) \u2248 2").verify().verified
    assert parse_claim("sqrt(5) ~= 2").verify().verified
    assert parse_claim("1234.4 = 1230", figures=3).verify().verified
    assert parse_claim("0.50004 = 0.5", decimals=4).verify().verified
    assert not parse_claim("0.50006 = 0.5", decimals=4).verify().verified
    assert parse_claim("0.5 = 0.50").verify().tolerance == Fraction(1, 200)  # trailing zeros count
    assert parse_claim("0.5 = 0.5", exact=True).verify().verified
    assert not parse_claim("0.504 = 0.5", exact=True).verify().verified
    with pytest.raises(ParseError, match="plain decimal number"):
        parse_claim("1 \u2248 1/4")


@pytest.mark.parametrize("places", range(0, 12))
def test_tolerances_are_exact_half_units(places):
    printed = "1." + "0" * places if places else "1"
    reading = "\u2248" if not places else "="
    assert parse_claim(f"1 {reading} {printed}").verify().tolerance == Fraction(1, 2 * 10 ** places)
    assert parse_claim(f"1 = {printed}", figures=places + 1).verify().tolerance == Fraction(1, 2 * 10 ** places)


def test_ties_are_rounded_half_away_from_zero():
    assert parse_claim("0.25 = 0.3").verify().verified
    assert not parse_claim("0.25 = 0.2").verify().verified
    assert parse_claim("-0.25 = -0.3").verify().verified
    assert not parse_claim("-0.25 = -0.2").verify().verified
    assert parse_claim("2.5 \u2248 3").verify().verified
    assert not parse_claim("2.5 \u2248 2").verify().verified
    assert not parse_claim("2.5 = 2").verify().verified and not parse_claim("2.5 = 3").verify().verified  # exact
    assert "half away from zero" in parse_claim("0.4105 = 0.411").verify().line()
    assert not parse_claim("0.4105 = 0.410").verify().verified


def test_exactness_defeats_cancellation_and_huge_factors():
    v = parse_claim("(sin(pi/7)**2 + cos(pi/7)**2 - 1)*10**200 + 5 = 5").verify()
    assert v.verified, v.line()
    assert parse_claim("(sin(pi/7)**2 + cos(pi/7)**2 - 1)*10**200 + 5 = 5.0").verify().verified
    assert parse_claim("0**(sin(pi/7)**2+cos(pi/7)**2-1) = 1").verify().verified  # 0**0 = 1
    assert parse_claim("sin(1)**2 + cos(1)**2 = 1").verify().verified
    assert parse_claim("exp(1) = 2.718281828459045235360287471352662497757").verify().verified
    assert parse_claim("floor(exp(2000)) = 1").verify().status == "contradicted"
    assert parse_claim("(-2)**(2*sin(pi/2)) = 4").verify().verified  # an exponent proved an integer
    assert parse_claim("floor(pi + 10**16) = 10000000000000003").verify().verified  # beyond float precision (fuzz find)
    assert parse_claim("floor(exp(100)) = 26881171418161354484126255515800135873611118").verify().verified


@pytest.mark.parametrize("text, error, reason", [
    ("1/(sin(pi/7)**2 + cos(pi/7)**2 - 1) = 0", UndefinedError, "division by zero"),
    ("1/0 = 1", UndefinedError, "division by zero"),
    ("log(2, 0) = 0", UndefinedError, "base"),
    ("log(2, 1) = 0", UndefinedError, "which is 1"),
    ("log(0) = 0", UndefinedError, "undefined"),
    ("sqrt(-1) = 1", UndefinedError, "not a real number"),
    ("asin(2) = 1", UndefinedError, "outside"),
    ("tan(pi/2) = 1", UndefinedError, "pole"),
    ("(-8)**(1/3) = -2", UndefinedError, "non-integer power"),
    ("1 = 1e400", ParseError, "exponent"),
    ("1 # + 1 = 1", ParseError, "comment"),
    ("exp(5000) = 1", ParseError, "magnitude"),
    ("9**9**9**9 = 1", ParseError, "exponent"),
    ("inf = 1", ParseError, "inf is allowed only"),
])
def test_undefined_values_and_limits_are_clear_errors(text, error, reason):
    with pytest.raises(error, match=reason):
        parse_claim(text).verify()


def test_undecided_when_no_precision_and_no_proof_settles_it():
    near = "exp(pi*sqrt(163)) = 262537412640768744"  # 7.5e-13 below the integer: 30 digits tell them apart
    v = parse_claim(near).verify(digits=20)
    assert v.status == "undecided" and not v.verified and "20 digits" in v.reason
    assert parse_claim(near).verify().status == "contradicted"


def test_truncated_rather_than_rounded():
    v = parse_claim("cos(0.01) = 0.9999").verify()
    assert v.status == "truncated" and "rounded it is 1.0000" in v.reason
    assert parse_claim("cos(0.01) = 1.0000").verify().verified
    assert parse_claim("2/3 = 0.666").verify().status == "truncated"
    assert parse_claim("2/3 = 0.665").verify().status == "contradicted"


def test_rounding_consistent_with_recorded_intermediates():
    c = parse_claim("s1*c2 = -0.3502 where s1 = 0.8415, c2 = -0.4161",
                    intermediates={"the unrounded sin 1 and cos 2": "s1 = sin(1), c2 = cos(2)"})
    v = c.verify()
    assert v.status == "rounding-consistent" and "the unrounded sin 1 and cos 2" in v.reason and v.consistent
    assert parse_claim("s1*c2 = -0.3502 where s1 = 0.8415, c2 = -0.4161").verify().status == "contradicted"
    wrong = parse_claim("s1*c2 = -0.3600 where s1 = 0.8415, c2 = -0.4161", intermediates={"x": "s1 = sin(1), c2 = cos(2)"})
    assert wrong.verify().status == "contradicted"


def test_exact_claims():
    assert parse_claim("sigmoid(0)*(1 - sigmoid(0)) = 1/4").verify().verified   # an expression on the right is exact
    assert parse_claim("sin(1)**2 + cos(1)**2 = 1", exact=True).verify().verified
    assert not parse_claim("1 + 10**-30 = 1").verify().verified                  # an integer is exact
    assert parse_claim("1 + 10**-30 \u2248 1").verify().verified                    # rounded at the units digit
    assert parse_claim("2 = 1/4 + 7/4").verify().claim.precision() == "exact"
    assert parse_claim("10000**(-2*floor(3/2)/5) = 10000**(-2/5)").verify().verified
    assert parse_claim("sin((3 + 2)*w) = sin(3*w)*cos(2*w) + cos(3*w)*sin(2*w) where w = 1/100").verify().verified


def test_inputs_in_a_where_clause():
    c = parse_claim("u*h_prev + (1 - u)*h_cand = 0.410 where u = 0.9, h_prev = 0.5, h_cand = -0.4")
    assert c.inputs == (("u", "0.9"), ("h_prev", "0.5"), ("h_cand", "-0.4"))
    assert {s.name for s in c.expression.free_symbols} == {"u", "h_prev", "h_cand"}
    v = c.verify()
    assert v.verified and v.discrepancy == 0
    assert "[u=0.9, h_prev=0.5, h_cand=-0.4]" in v.line()
    assert parse_claim("max(a, b) = 2 where a = max(1, 2), b = 1").verify().verified  # commas inside calls
    assert parse_claim("a + b = 1 where a = 0,5; b = 0,5").verify().verified


def test_provider_claims():
    c = Claim.from_provider("a value from a computation", lambda: 0.97421453, "0.974")
    assert c.verify().verified
    assert not Claim.from_provider("x", lambda: sympy.Rational(1, 3), "0.334").verify().verified
    assert Claim.from_provider("x", lambda: float("-inf"), "-inf").verify().verified
    with pytest.raises(NonFiniteError):
        Claim.from_provider("x", lambda: float("nan"), "1").verify()
    with pytest.raises(SeqgradTypeError):
        Claim.from_provider("x", lambda: "1.0x", "1").verify()
    with pytest.raises(SeqgradTypeError):
        Claim.from_provider("x", 0.5, "1")  # type: ignore[arg-type]


def test_line_and_json_fields():
    v = parse_claim("sin(1)*cos(2) + cos(1)*sin(2) = 0.1411").verify()
    line = v.line()
    assert "\n" not in line
    for part in ("verified:", "0.1411200081", "printed 0.1411", "±5e-05", "off by 2.0e-05"):
        assert part in line
    d = v.as_dict()
    assert d["verdict"] == "verified" and d["printed"] == "0.1411" and d["tolerance"] == 5e-05 and d["reason"]
    assert d["computed_digits"].startswith("0.1411200080598672221007448")  # sin 3
    json.dumps(d, allow_nan=False)
    huge = parse_claim("floor(exp(2000)) = 1").verify().as_dict()
    assert huge["computed"] == "inf" and json.dumps(huge, allow_nan=False)  # never a bare Infinity


@pytest.mark.parametrize("text, reason", [
    ("sin(1)", "exactly one '='"),
    ("a = b = c", "exactly one '='"),
    ("sin(1) == 0.84", "comparisons are not allowed"),
    ("sin(1) = ", "printed result"),
    ("sin(1) = abc", "not on the whitelist"),
    ("x = 1", "the name 'x' is not on the whitelist"),
    ("x = 1 where x = 1, y = 2", "do not appear"),
    ("x = 1 where x = 1, x = 2", "given once"),
    ("x = 1 where x", "where name = value"),
    ("x = 1 where x = 1 where y = 2", "one 'where'"),
    ("x = 1 where pi = 3", "built-in name"),
    ("x = 1 where x = u", "not on the whitelist"),
    ("sin(1) = 0.84 extra", "not a well-formed"),
])
def test_bad_claims_are_parse_errors(text, reason):
    with pytest.raises(ParseError, match=reason):
        parse_claim(text).verify()


def test_bad_arguments():
    with pytest.raises(SeqgradTypeError):
        parse_claim(42)  # type: ignore[arg-type]
    with pytest.raises(SeqgradValueError):
        parse_claim("1 = 1", figures=0)
    with pytest.raises(ParseError, match="plain decimal number"):
        parse_claim("1 = 1/4", figures=3)
    with pytest.raises(SeqgradValueError):
        parse_claim("1 = 1").verify(digits=5)
    with pytest.raises(ParseError, match="at most"):
        parse_claim("1 + " * 400 + "1 = 401")
    with pytest.raises(ParseError, match="exclude"):
        parse_claim("1 = 1", figures=2, decimals=2)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=-10 ** 6, max_value=10 ** 6), st.integers(min_value=1, max_value=6),
       st.integers(min_value=-10 ** 6, max_value=10 ** 6))
def test_verdict_matches_exact_rounding_half_away_from_zero(mantissa, places, offset):
    """A value verifies against a printed decimal iff it rounds (half away from zero) to it."""
    scale = 10 ** places
    printed = Fraction(mantissa, scale)
    value = printed + Fraction(offset, scale * 10 ** 6)  # within +-1 unit of the last place
    text = f"{value.numerator}/{value.denominator} = {_decimal(mantissa, places)}"
    rounded = math.floor(abs(value) * scale + Fraction(1, 2)) * (1 if value >= 0 else -1)
    assert parse_claim(text).verify().verified == (rounded == mantissa)


def _decimal(mantissa: int, places: int) -> str:
    sign = "-" if mantissa < 0 else ""
    digits = str(abs(mantissa)).rjust(places + 1, "0")
    return f"{sign}{digits[:-places]}.{digits[-places:]}" if places else f"{sign}{digits}"


# --------------------------------------------------------------------------- vectors

def test_vector_claims_compare_entry_by_entry():
    from seqgrad.derive.claims import VectorClaim

    c = parse_claim("softmax(1.2, 0.5, 2.0) = (0.31, 0.15, 0.54)")
    assert isinstance(c, VectorClaim) and len(c.components) == 3
    v = c.verify()
    assert not v.verified and [e.status for e in v.entries] == ["contradicted"] * 3
    assert math.isclose(float(v.discrepancy), abs(0.54 - math.exp(2) / (math.exp(1.2) + math.exp(0.5) + math.exp(2))), rel_tol=1e-9)
    assert "entry 0 contradicted" in v.line() and "\n" not in v.line()
    ln = parse_claim("layernorm(1.30, 1.90, -0.80, 0.05) = (0.652, 1.222, -1.341, -0.534)").verify()
    assert [e.verified for e in ln.entries] == [True, True, False, True]
    assert parse_claim("layernorm((x, 1.90, -0.80, 0.05)) = (0.652, 1.222, -1.340, -0.534) where x = 1.30").verify().verified
    assert parse_claim("softmax(0, log(2), log(3)) = (1/6, 1/3, 1/2)").verify().verified
    assert parse_claim("dot(softmax(0, log(2), log(3)), (2, -1, 4)) = 2").verify().verified   # exercise 3, seed 000 line 1348
    assert parse_claim("(mean(1, 2, 3), var(1, 2, 3), norm(3, 4)) = (2, 2/3, 5)").verify().verified
    assert parse_claim("layernorm((1, 3), 1e-5) = (-1.0000, 1.0000)").verify().verified
    d = parse_claim("softmax(1, 2) = (0.27, 0.73)", figures=2).verify().as_dict()
    assert d["verdict"] == "verified" and len(d["computed"]) == 2 and d["precision"] == ["rounded at 2 significant figures"] * 2


def test_rmsnorm_claims_are_read_as_layernorm_claims_are():
    """rmsnorm(v[, eps]) = v / sqrt(mean(v o v) + eps): exact entries at eps = 0, rounding at the digits written,
    an eps that is not 0 felt at the printed digits (the old parser refused the name)."""
    assert parse_claim("rmsnorm((1, 2, 3)) = (1/sqrt(14/3), 2/sqrt(14/3), 3/sqrt(14/3))").verify().verified
    v = parse_claim("rmsnorm(1, 2, 3) = (0.4629, 0.9258, 1.3888)").verify()
    assert [e.status for e in v.entries] == ["verified", "verified", "contradicted"]
    assert parse_claim("rmsnorm((0.01, 0.02), 1e-5) = (0.6202, 1.2403)").verify().verified
    assert not parse_claim("rmsnorm((0.01, 0.02)) = (0.6202, 1.2403)").verify().verified  # eps = 0: 0.6325, 1.2649


def test_masked_softmax_is_typeable_with_minus_infinity():
    assert parse_claim("softmax(1.2, 0.5, 2.0, -inf) = (0.2687, 0.1334, 0.5979, 0)").verify().verified
    assert parse_claim("softmax(1.2, 0.5, 2.0, \u2212\u221e) = (0.2687, 0.1334, 0.5979, 0.00)").verify().verified
    v = parse_claim("softmax(1.2, 0.5, 2.0, -inf) = (0.31, 0.15, 0.54, 0.00)").verify()
    assert v.status == "contradicted" and [e.status for e in v.entries][3] == "verified"
    assert parse_claim("dot(softmax(0, log(2), -inf), (2, -1, 4)) = 0").verify().verified
    assert parse_claim("(max(1, -inf), min(1, -inf)) = (1, -inf)").verify().verified
    assert parse_claim("(sum(1, 2, 3), prod((1, 2, 3)), max(softmax(1, 1))) = (6, 6, 1/2)").verify().verified


@pytest.mark.parametrize("text, reason", [
    ("softmax(1, 2) = 0.3", "print them as"),
    ("sin(1) = (1, 2)", "must be one too"),
    ("softmax(1, 2, 3) = (0.1, 0.2)", "3 entries but 2 are printed"),
    ("softmax(1, 2) + 1 = 1", "gives a vector"),
    ("(1, 2) + (3, 4) = (4, 6)", "vectors outside"),
    ("dot((1, 2), (3,)) = 1", "same length"),
    ("layernorm(1, 1) = (0, 0)", "constant vector"),
    ("rmsnorm(0, 0) = (0, 0)", "zero vector"),
    ("rmsnorm((sin(1) - sin(1), 0)) = (0, 0)", "zero vector"),
    ("softmax(1e6, 0) = (1, 0)", "magnitude limit"),
    ("dot(1, 2) = 2", "is not a vector"),
    ("softmax(" + ", ".join(["1"] * 65) + ") = 1", "1 to 64 entries"),
    ("softmax(-inf, -inf) = (0, 0)", "all -inf"),
    ("mean(1, -inf) = 0", "infinite entry"),
])
def test_bad_vector_claims(text, reason):
    with pytest.raises(SeqgradValueError, match=reason):
        parse_claim(text).verify()


# --------------------------------------------------------------------------- seqgrad claim

def test_cli_exit_codes_and_one_line(cli):
    ok = cli("claim", "sin(1)*cos(2) + cos(1)*sin(2) = 0.1411")
    assert ok.returncode == 0 and ok.stdout.startswith("verified:") and ok.stdout.count("\n") == 1
    bad = cli("claim", "sigmoid(1) = 1")
    assert bad.returncode == 1 and bad.stdout.startswith("contradicted:")
    assert cli("claim", "cos(0.01) = 0.9999").stdout.startswith("truncated:")
    unparsable = cli("claim", "sin(1) = 0.84 = 0.8")
    assert unparsable.returncode == 2 and unparsable.stdout == ""
    assert len(unparsable.stderr.strip().splitlines()) == 1
    for text in ("1/(sin(pi/7)**2 + cos(pi/7)**2 - 1) = 0", "log(2, 0) = 0", "1 = 1e400", "floor(exp(5000)) = 1", "1 # + 1 = 1"):
        r = cli("claim", text)
        assert r.returncode == 2 and "internal error" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, (text, r.stderr)
    undecided = cli("claim", "--digits", "20", "exp(pi*sqrt(163)) = 262537412640768744")
    assert undecided.returncode == 3 and undecided.stdout.startswith("undecided:")


def test_cli_json_and_options(capsys):
    from seqgrad.crosscheck.cli import main

    assert main(["claim", "--json", "--figures", "3", "0.6576 = 0.65"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert d["verdict"] == "contradicted" and d["precision"] == "rounded at 3 significant figures" and d["reason"]
    assert main(["claim", "--json", "--figures", "3", "0.6506 = 0.65"]) == 1  # 0.651 rounded, 0.650 cut off
    assert json.loads(capsys.readouterr().out)["verdict"] == "truncated"
    assert main(["claim", "--exact", "sin(1)**2 + cos(1)**2 = 1"]) == 0
    capsys.readouterr()
    assert main(["claim", "--decimals", "4", "0.50004 = 0.5"]) == 0
    capsys.readouterr()
    assert main(["claim", "--digits", "200", "exp(1) = 2.718281828459045235360287471352662497757"]) == 0
    capsys.readouterr()
    assert main(["claim", "--json", "1 + = 2"]) == 2
    out = capsys.readouterr()
    assert json.loads(out.out)["verdict"] == "unparsable" and len(out.err.strip().splitlines()) == 1
    for argv in (["claim", "--figures", "0", "1 = 1"], ["claim", "--digits", "2", "1 = 1"],
                 ["claim", "--figures", "3", "--exact", "1 = 1"], ["claim"]):
        assert main(argv) == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1


# --------------------------------------------------------------------------- the catalogue

def test_catalogue_entries_name_their_source_and_attribution():
    from seqgrad.crosscheck.claims_catalogue import entries

    items = entries()
    assert len({e.name for e in items}) == len(items) >= 70
    for e in items:
        assert e.claims and all(c.source == e.source for c in e.claims)
        assert e.expected in ("verified", "rounding-consistent", "truncated", "contradicted")
        assert e.attribution.startswith("derived here" if e.derived else "printed in the text (")
        if e.cite:
            key, _, rest = e.cite.partition(" \u00a7")
            assert key in ("week06", "lesson", "lecture07", "wiki") and ":" in rest, e.cite
    derived = {e.name for e in items if e.derived}
    assert {"figure3_saturation", "figure3_growth"} <= derived  # the text never prints these numbers
    assert {f"lesson_task{n:02d}" for n in [*range(1, 20), 21, 22, 23, 25, 26, 27]} <= {e.name for e in items}
    assert {f"week06_exercise{n}" for n in (1, 2, 3, 4)} <= {e.name for e in items}


def test_catalogue_verdicts_are_the_recorded_ones():
    """Errata are contradicted, notes are rounding-consistent or truncated, everything else verified."""
    from seqgrad.crosscheck.checks.claims import outcome
    from seqgrad.crosscheck.claims_catalogue import entries

    found = {e.name: outcome(e).textbook for e in entries()}
    assert {n for n, v in found.items() if v == "contradicted"} == {e.name for e in entries() if e.erratum} == {
        "layernorm_example_xhat", "masked_softmax_example", "wiki_pe_distance_monotone"}
    assert found["pe_d4_pos1"] == "truncated"
    assert found["pe_shift_sin3_printed_factors"] == found["layernorm_example"] == found["contribution_A60_v0"] == "rounding-consistent"
    assert {n for n, v in found.items() if v not in ("verified", "contradicted")} == {
        "pe_d4_pos1", "pe_shift_sin3_printed_factors", "layernorm_example", "contribution_A60_v0"}
    assert all(outcome(e).passed for e in entries())


def test_every_printed_table_number_becomes_a_claim_against_the_encoder():
    from seqgrad.crosscheck import course_tables
    from seqgrad.crosscheck.checks.claims import _trace, outcome
    from seqgrad.crosscheck.claims_catalogue import table_entries

    tables = list(table_entries(_trace))
    assert sum(len(e.claims) for e in tables) == len(list(course_tables.cells())) == 714
    assert {e.name for e in tables} >= {f"table{n}" for n in (10, 13, 16, 20, 23, 24, 31)} | {"table_inline"}
    for e in tables:
        o = outcome(e)
        assert o.passed and o.units is not None and 0 <= o.units <= 0.5, o.detail


def test_claims_checks_are_registered_and_fail_on_a_contradiction():
    from seqgrad.crosscheck.checks.claims import outcome
    from seqgrad.crosscheck.claims_catalogue import Entry
    from seqgrad.crosscheck.registry import all_checks

    names = {c.name for c in all_checks("claims")}
    assert {"claims.gru_mixing", "claims.pe_d4_pos1", "claims.table13", "claims.table_inline", "claims.lesson_task27"} <= names
    assert all(c.group == "claims" for c in all_checks("claims.*"))
    good = Entry("x", "f", "1", "what", (parse_claim("0.9*0.5 + 0.1*(-0.4) = 0.410"),))
    assert outcome(good).passed and outcome(good).max_abs_error == 0
    wrong = Entry("y", "f", "1", "what", (parse_claim("0.9*0.5 + 0.1*(-0.4) = 0.420"),), note="a test")
    o = outcome(wrong)
    assert not o.passed and math.isclose(o.max_abs_error, 0.01) and "contradicted" in o.detail and o.textbook == "contradicted"
    assert math.isclose(o.units, 10.0) and o.attribution.startswith("printed in the text")
    # a recorded erratum: the check confirms the text is still wrong ...
    known = Entry("z", "f", "1", "what", (parse_claim("0.9*0.5 + 0.1*(-0.4) = 0.420"),), erratum="printed 0.420, is 0.410")
    o = outcome(known)
    assert o.passed and o.textbook == "contradicted" and "erratum" in o.detail and o.reason == "printed 0.420, is 0.410"
    # ... and fails if the claim it records as wrong turns out verified, or only truncated
    stale = Entry("w", "f", "1", "what", (parse_claim("0.9*0.5 + 0.1*(-0.4) = 0.410"),), erratum="not really")
    assert not outcome(stale).passed
    cut = Entry("v", "f", "1", "what", (parse_claim("2/3 = 0.666"),), erratum="not really")
    assert not outcome(cut).passed and outcome(cut).textbook == "truncated"


def test_report_carries_verdict_reason_and_units(tmp_path):
    from seqgrad.crosscheck import report
    from seqgrad.crosscheck.registry import all_checks, run_checks

    results = run_checks([c for c in all_checks("claims.*") if c.name in (
        "claims.pe_d4_pos1", "claims.masked_softmax_example", "claims.table13", "claims.gru_mixing")], show_progress=False)
    paths = report.write(tmp_path, results, device="cpu", dtype="float64", total_seconds=1.0, figures=[])
    data = json.loads(paths["json"].read_text())
    by = {c["name"]: c for c in data["checks"]}
    assert by["claims.pe_d4_pos1"]["textbook"] == "truncated" and by["claims.pe_d4_pos1"]["reason"]
    assert by["claims.masked_softmax_example"]["textbook"] == "contradicted"
    assert data["summary"]["textbook_errata"] == 1 and data["summary"]["textbook_notes"] == 1
    md = paths["md"].read_text()
    assert "## Textbook errata" in md and "## Textbook notes" in md and " u |" in md and "units of the last printed digit" in md
    errata = md.split("## Textbook errata")[1].split("## Textbook notes")[0]
    assert "masked_softmax_example" in errata and "pe_d4_pos1" not in errata
    tex = paths["tex"].read_text()
    assert "Textbook notes" in tex and "truncated" in tex


def test_text_facts_are_registered_checks_that_pass():
    from seqgrad.crosscheck.registry import all_checks, run_checks

    facts = [c for c in all_checks("claims.*") if c.name.startswith("claims.fact_")]
    assert {c.name for c in facts} == {
        "claims.fact_parameter_counts_vs_torch", "claims.fact_leakage_through_earlier_block", "claims.fact_nilpotent_w_h",
        "claims.fact_pooled_vs_per_sequence_mean", "claims.fact_step_size", "claims.fact_clipped_step_bound"}
    for r in run_checks(facts, show_progress=False):
        assert r.passed and r.textbook == "verified" and r.attribution.startswith("derived here"), r.detail


def test_the_adam_step_of_the_fact_check_is_torchs():
    import torch

    from seqgrad.crosscheck.checks.facts import adam_first_step

    g = torch.linspace(-3.0, 5.0, 7, dtype=torch.float64)
    p = torch.zeros(7, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([p], lr=0.1)
    p.grad = g.clone()
    opt.step()
    assert torch.allclose(p.detach(), adam_first_step(g, 0.1), atol=1e-15)


def test_seqgrad_claim_imports_no_sympy_torch_or_numpy():
    """A scalar claim is decided without SymPy, so that `seqgrad claim` starts fast (docs/benchmarks.md)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    probe = ("import sys; from crosscheck.cli import main; code = main(['claim', 'sin(1)*cos(2) + cos(1)*sin(2) = 0.1411']); "
             "print(code, sorted(m for m in ('sympy', 'torch', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, check=True,
                         env={**__import__("os").environ, "PYTHONPATH": str(root)})
    assert out.stdout.strip().splitlines()[-1] == "0 []"
