"""derive.claims, seqgrad claim, and the catalogue of the course texts' own claims."""

from __future__ import annotations

import json
import math

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from derive.claims import Claim, parse_claim
from seqgrad.errors import NonFiniteError, ParseError, SeqgradTypeError, SeqgradValueError


# --------------------------------------------------------------------------- verdicts

def test_issue_example_is_verified_at_the_four_decimals_written():
    v = parse_claim("sin(1)*cos(2) + cos(1)*sin(2) = 0.1411").verify()
    assert v.verified and v.status == "verified"
    assert v.tolerance == sympy.Rational(1, 20000)
    assert abs(float(v.computed) - math.sin(3)) < 1e-15
    assert math.isclose(float(v.discrepancy), math.sin(3) - 0.1411, rel_tol=1e-12)
    assert v.claim.precision() == "the 4 decimals written"


def test_wrong_claim_is_contradicted_with_the_discrepancy():
    v = parse_claim("sin(1)*cos(2) + cos(1)*sin(2) = 0.1412").verify()
    assert not v.verified and v.status == "contradicted"
    assert math.isclose(float(v.discrepancy), 0.1412 - math.sin(3), rel_tol=1e-12)


def test_precision_comes_from_the_decimals_written():
    # 0.14 has two decimals: +-0.005, so a value 0.1411 is verified; 0.1400 has four: contradicted
    assert parse_claim("sin(3) = 0.14").verify().verified
    assert not parse_claim("sin(3) = 0.1400").verify().verified
    assert parse_claim("0.9*0.5 + 0.1*(-0.4) = 0.410").verify().tolerance == sympy.Rational(1, 2000)


@pytest.mark.parametrize("places", range(0, 12))
def test_tolerances_are_exact_half_units(places):
    printed = "1." + "0" * places if places else "1"
    assert parse_claim(f"1 = {printed}").verify().tolerance == sympy.Rational(1, 2 * 10 ** places)
    assert parse_claim(f"1 = {printed}", figures=places + 1).verify().tolerance == sympy.Rational(1, 2 * 10 ** places)


def test_significant_figures_replace_the_decimals_written():
    # the course tables strip trailing zeros: "0.65" at three figures stands for 0.650
    assert not parse_claim("0.6506 = 0.65", figures=3).verify().verified
    assert parse_claim("0.6506 = 0.65").verify().verified
    v = parse_claim("1234.4 = 1230", figures=3).verify()
    assert v.verified and v.tolerance == 5 and v.claim.precision() == "3 significant figures"


def test_evaluation_is_exact_next_to_a_rounding_boundary():
    # cos(0.01) = 0.99995000042 is 4.2e-10 past the boundary between 0.9999 and 1.0000
    assert not parse_claim("cos(0.01) = 0.9999").verify().verified
    assert parse_claim("cos(0.01) = 1.0000").verify().verified
    # a value exactly on the boundary is within half a unit either way
    assert parse_claim("0.4105 = 0.410").verify().verified
    assert parse_claim("0.4105 = 0.411").verify().verified
    assert not parse_claim("0.41050000000000000000001 = 0.410").verify().verified


def test_exact_claims():
    assert parse_claim("sigmoid(0)*(1 - sigmoid(0)) = 1/4").verify().verified   # an expression on the right is exact
    assert parse_claim("sin(1)**2 + cos(1)**2 = 1", exact=True).verify().verified
    assert not parse_claim("1 + 10**-30 = 1", exact=True).verify().verified
    assert parse_claim("1 + 10**-30 = 1").verify().verified                      # at the decimals written (+-0.5)
    assert parse_claim("2 = 1/4 + 7/4").verify().claim.precision() == "exact"


def test_inputs_in_a_where_clause():
    c = parse_claim("u*h_prev + (1 - u)*h_cand = 0.410 where u = 0.9, h_prev = 0.5, h_cand = -0.4")
    assert c.inputs == (("u", "0.9"), ("h_prev", "0.5"), ("h_cand", "-0.4"))
    assert {s.name for s in c.expression.free_symbols} == {"u", "h_prev", "h_cand"}
    v = c.verify()
    assert v.verified and v.discrepancy.is_zero
    assert "[u=0.9, h_prev=0.5, h_cand=-0.4]" in v.line()
    assert parse_claim("max(a, b) = 2 where a = max(1, 2), b = 1").verify().verified  # commas inside calls


def test_provider_claims():
    c = Claim.from_provider("a value from a computation", lambda: 0.97421453, "0.974")
    assert c.verify().verified
    assert not Claim.from_provider("x", lambda: sympy.Rational(1, 3), "0.334").verify().verified
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
    for part in ("verified:", "0.1411200081", "printed 0.1411", "tolerance ±5e-05", "discrepancy 2.0e-05"):
        assert part in line
    d = v.as_dict()
    assert d["verdict"] == "verified" and d["printed"] == "0.1411" and d["tolerance"] == 5e-05
    assert d["computed_digits"] == "0.141120008059867222100744802808"  # sin 3 to 30 digits
    json.dumps(d)
    # a discrepancy next to the tolerance is shown with enough figures to tell them apart
    assert "discrepancy 5.00004e-05" in parse_claim("cos(0.01) = 0.9999").verify().line()


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
    ("sqrt(-1) = 1", "not a real number"),
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


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=-10 ** 6, max_value=10 ** 6), st.integers(min_value=0, max_value=6),
       st.integers(min_value=-10 ** 6, max_value=10 ** 6))
def test_verdict_matches_exact_rounding(mantissa, places, offset):
    """A value verifies against a printed decimal iff it lies within half a unit of its last place."""
    scale = 10 ** places
    printed = sympy.Rational(mantissa, scale)
    value = printed + sympy.Rational(offset, scale * 10 ** 6)  # within +-1 unit of the last place
    text = f"{value.p}/{value.q} = {_decimal(mantissa, places)}"
    expected = abs(value - printed) <= sympy.Rational(1, 2 * scale)
    assert parse_claim(text).verify().verified == expected


def _decimal(mantissa: int, places: int) -> str:
    sign = "-" if mantissa < 0 else ""
    digits = str(abs(mantissa)).rjust(places + 1, "0")
    return f"{sign}{digits[:-places]}.{digits[-places:]}" if places else f"{sign}{digits}"


# --------------------------------------------------------------------------- vectors

def test_vector_claims_compare_entry_by_entry():
    from derive.claims import VectorClaim

    c = parse_claim("softmax(1.2, 0.5, 2.0) = (0.31, 0.15, 0.54)")
    assert isinstance(c, VectorClaim) and len(c.components) == 3
    v = c.verify()
    assert not v.verified and [e.status for e in v.entries] == ["contradicted"] * 3
    assert math.isclose(float(v.discrepancy), 0.54 - math.exp(2) / (math.exp(1.2) + math.exp(0.5) + math.exp(2)), rel_tol=1e-9) or \
        math.isclose(float(v.discrepancy), math.exp(2) / (math.exp(1.2) + math.exp(0.5) + math.exp(2)) - 0.54, rel_tol=1e-9)
    assert "entries 0, 1, 2 contradicted" in v.line() and "\n" not in v.line()
    ln = parse_claim("layernorm(1.30, 1.90, -0.80, 0.05) = (0.652, 1.222, -1.341, -0.534)").verify()
    assert [e.verified for e in ln.entries] == [True, True, False, True]
    assert parse_claim("layernorm((x, 1.90, -0.80, 0.05)) = (0.652, 1.222, -1.340, -0.534) where x = 1.30").verify().verified
    assert parse_claim("softmax(0, log(2), log(3)) = (1/6, 1/3, 1/2)").verify().verified
    assert parse_claim("dot(softmax(0, log(2), log(3)), (2, -1, 4)) = 2").verify().verified   # exercise 3, seed 000 line 1348
    assert parse_claim("(mean(1, 2, 3), var(1, 2, 3), norm(3, 4)) = (2, 2/3, 5)").verify().verified
    assert parse_claim("layernorm((1, 3), 1e-5) = (-1.0000, 1.0000)").verify().verified
    d = parse_claim("softmax(1, 2) = (0.27, 0.73)", figures=2).verify().as_dict()
    assert d["verdict"] == "verified" and len(d["computed"]) == 2 and d["precision"] == ["2 significant figures"] * 2


@pytest.mark.parametrize("text, reason", [
    ("softmax(1, 2) = 0.3", "print them as"),
    ("sin(1) = (1, 2)", "must be one too"),
    ("softmax(1, 2, 3) = (0.1, 0.2)", "3 entries but 2 are printed"),
    ("softmax(1, 2) + 1 = 1", "gives a vector"),
    ("(1, 2) + (3, 4) = (4, 6)", "vectors outside"),
    ("dot((1, 2), (3,)) = 1", "same length"),
    ("layernorm(1, 1) = (0, 0)", "constant vector"),
    ("softmax(1e6, 0) = (1, 0)", "magnitude limit"),
    ("dot(1, 2) = 2", "is not a vector"),
    ("softmax(" + ", ".join(["1"] * 65) + ") = 1", "1 to 64 entries"),
])
def test_bad_vector_claims(text, reason):
    with pytest.raises(ParseError, match=reason):
        parse_claim(text).verify()


# --------------------------------------------------------------------------- seqgrad claim

def test_cli_exit_codes_and_one_line(cli):
    ok = cli("claim", "sin(1)*cos(2) + cos(1)*sin(2) = 0.1411")
    assert ok.returncode == 0 and ok.stdout.startswith("verified:") and ok.stdout.count("\n") == 1
    bad = cli("claim", "cos(0.01) = 0.9999")
    assert bad.returncode == 1 and bad.stdout.startswith("contradicted:")
    unparsable = cli("claim", "sin(1) = 0.84 = 0.8")
    assert unparsable.returncode == 2 and unparsable.stdout == ""
    assert len(unparsable.stderr.strip().splitlines()) == 1


def test_cli_json_and_options(capsys):
    from crosscheck.cli import main

    assert main(["claim", "--json", "--figures", "3", "0.6506 = 0.65"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert d["verdict"] == "contradicted" and d["precision"] == "3 significant figures"
    assert main(["claim", "--exact", "sin(1)**2 + cos(1)**2 = 1"]) == 0
    capsys.readouterr()
    assert main(["claim", "--digits", "200", "exp(1) = 2.718281828459045235360287471352662497757"]) == 0
    capsys.readouterr()
    for argv in (["claim", "--figures", "0", "1 = 1"], ["claim", "--digits", "2", "1 = 1"],
                 ["claim", "--figures", "3", "--exact", "1 = 1"], ["claim"]):
        assert main(argv) == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1


# --------------------------------------------------------------------------- the catalogue

def test_catalogue_entries_name_their_source():
    from crosscheck.claims_catalogue import SEED000, SEED001, entries

    items = entries()
    assert len({e.name for e in items}) == len(items) >= 40
    for e in items:
        assert e.seed in (SEED000, SEED001)
        assert all(part.isdigit() for part in e.line.split("-")), e.line
        assert e.claims and all(c.source == e.source for c in e.claims)


def test_catalogue_verdicts_errata_are_contradicted_and_everything_else_verified():
    """The texts' wrong claims stay in the catalogue as printed and are found contradicted."""
    from crosscheck.claims_catalogue import entries

    contradicted = {}
    for e in entries():
        bad = [c.text for c in e.claims if not c.verify().verified]
        if bad:
            contradicted[e.name] = bad
    errata = {e.name for e in entries() if e.erratum}
    assert set(contradicted) == errata
    assert contradicted["pe_d4_pos1"] == ["cos(1*10000**(-2*floor(3/2)/4)) = 0.9999"]
    assert contradicted["masked_softmax_example"] == ["softmax(1.2, 0.5, 2.0) = (0.31, 0.15, 0.54)"]
    assert contradicted["pe_shift_sin3_printed_factors"] == ["0.8415*(-0.4161) = -0.3502"]
    assert len(contradicted["layernorm_example"]) == 2  # the sum of squares and the vector x_hat (its entry 2)
    assert len(contradicted["contribution_A60_v0"]) == 2


def test_every_printed_table_number_becomes_a_claim_against_the_encoder():
    from crosscheck import course_tables
    from crosscheck.checks.claims import _trace, outcome
    from crosscheck.claims_catalogue import table_entries

    tables = list(table_entries(_trace))
    assert sum(len(e.claims) for e in tables) == len(list(course_tables.cells())) == 714
    assert {e.name for e in tables} >= {f"table{n}" for n in (10, 13, 16, 20, 23, 24, 31)} | {"table_inline"}
    for e in tables:
        assert outcome(e).passed, outcome(e).detail


def test_claims_checks_are_registered_and_fail_on_a_contradiction():
    from crosscheck.checks.claims import outcome
    from crosscheck.claims_catalogue import Entry
    from crosscheck.registry import all_checks

    names = {c.name for c in all_checks("claims")}
    assert {"claims.gru_mixing", "claims.pe_d4_pos1", "claims.table13", "claims.table_inline"} <= names
    assert all(c.group == "claims" for c in all_checks("claims.*"))
    good = Entry("x", "f", "1", "what", (parse_claim("0.9*0.5 + 0.1*(-0.4) = 0.410"),))
    assert outcome(good).passed and outcome(good).max_abs_error == 0
    wrong = Entry("y", "f", "1", "what", (parse_claim("0.9*0.5 + 0.1*(-0.4) = 0.420"),), note="a test")
    o = outcome(wrong)
    assert not o.passed and math.isclose(o.max_abs_error, 0.01) and "contradicted" in o.detail and o.textbook == "contradicted"
    # a recorded erratum: the check confirms the text is still wrong ...
    known = Entry("z", "f", "1", "what", (parse_claim("0.9*0.5 + 0.1*(-0.4) = 0.420"),), erratum="printed 0.420, is 0.410")
    o = outcome(known)
    assert o.passed and o.textbook == "contradicted" and "erratum" in o.detail
    # ... and fails if the claim it records as wrong turns out verified
    stale = Entry("w", "f", "1", "what", (parse_claim("0.9*0.5 + 0.1*(-0.4) = 0.410"),), erratum="not really")
    assert not outcome(stale).passed
