"""``seqgrad check``'s exit status and its reports: the toolkit fails the run, the texts do not.

Every result has one kind (``crosscheck.registry.kind_of``): a toolkit failure (a derivation against its reference,
a crash) exits 1; a textbook erratum (a claim whose verdict is ``contradicted``) or an experiment finding (a failing
check of the ``experiment`` group) is listed in a section of its own and exits 0, or 1 under ``--strict``.  The
terminal table fits 80 columns and gives the reason under every row that is not a pass.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from seqgrad.crosscheck import registry, report
from seqgrad.crosscheck.registry import Check, Result, kind_of
from seqgrad.crosscheck.tolerance import Outcome

LONG_SOURCE = ("week06 §Что устанавливает эксперимент практикума?:1291; lesson §Medium tasks:222-226 "
               "(tasks 14-16; l.254 confirms 262,144 and 4.72M)")


def _fake(name: str, group: str, outcome=None, *, raises: bool = False, finding=None, source: str = "week06 §BPTT:722"):
    def run(ctx):
        if raises:
            raise RuntimeError("boom in the check")
        return outcome

    return Check(name, source, group, run, finding=finding)


FAKES = {
    "toolkit": _fake("fake.derivation_vs_autograd", "fake", Outcome(0.5, 0.25, False, "dL/dW_h differs from autograd by 0.5")),
    "crash": _fake("experiment.fake_crash", "experiment", raises=True),
    "finding": _fake("experiment.fake_trend", "experiment",
                     Outcome(0.0, 0.0, False, "transformer d=32: 0.843, printed 1 (distance -0.157)"), source=LONG_SOURCE),
    "autograd_in_experiment": _fake("experiment.fake_paths_vs_autograd", "experiment",
                                    Outcome(1e-3, 1e-3, False, "path product differs from autograd"), finding=False),
    "erratum": _fake("claims.fake_erratum", "claims",
                     Outcome(0.01, 0.02, True, "0/1 verified; contradicted: 0.45 - 0.04 = 0.410, not 0.420 [erratum: printed "
                             "0.420, is 0.410]", textbook="contradicted", reason="printed 0.420, is 0.410",
                             attribution="printed in the text (week06 §GRU:370)", units=10.0)),
    "new_erratum": _fake("claims.fake_new_erratum", "claims",
                         Outcome(0.01, 0.02, False, "expected verified, found contradicted: 0/1 verified; contradicted: "
                                 "0.45 - 0.04 = 0.410, not 0.430", textbook="contradicted", reason="0.410, not 0.430")),
    "stale_erratum": _fake("claims.fake_stale_erratum", "claims",
                           Outcome(0.0, 0.0, False, "expected contradicted, found verified: 1/1 verified",
                                   textbook="verified", reason="every claim verified")),
    "skip": _fake("fake.needs_a_gpu", "fake", Outcome.skip("no CUDA GPU")),
    "pass": _fake("fake.fine", "fake", Outcome(1e-16, 1e-15, True, "agrees")),
}


@pytest.fixture
def fakes(monkeypatch):
    registry.load_builtin_checks()
    for item in FAKES.values():
        monkeypatch.setitem(registry._REGISTRY, item.name, item)
    return FAKES


def check(*args: str) -> tuple[int, str]:
    from seqgrad.crosscheck.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["check", "--jobs", "1", *args])
    return status, out.getvalue()


def only(*keys: str) -> list[str]:
    return [arg for k in keys for arg in ("--only", FAKES[k].name)]


def test_every_result_has_one_kind():
    results = {k: registry.run_one(item, "cpu") for k, item in FAKES.items()}
    assert {k: r.kind for k, r in results.items()} == {
        "toolkit": "toolkit", "crash": "toolkit", "finding": "finding", "autograd_in_experiment": "toolkit",
        "erratum": "erratum", "new_erratum": "erratum", "stale_erratum": "toolkit", "skip": "toolkit", "pass": "toolkit"}
    assert {k: report.label(r) for k, r in results.items()} == {
        "toolkit": "fail", "crash": "error", "finding": "finding", "autograd_in_experiment": "fail",
        "erratum": "erratum", "new_erratum": "erratum", "stale_erratum": "fail", "skip": "skip", "pass": "pass"}
    # a Result made by hand is classified by the same rule
    assert Result("experiment.x", "s", "experiment", "fail", False, 0.0, 0.0, "cpu", "float64", "d", 0.0).kind == "finding"
    assert kind_of("pass", "contradicted", "claims") == "erratum" and kind_of("error", "contradicted", "claims") == "toolkit"
    s = report.summary(list(results.values()))
    assert s == {"total": 9, "passed": 1, "failed": 4, "skipped": 1, "ok": False, "textbook_errata": 2, "findings": 1,
                 "textbook_notes": 0}
    assert s["total"] == s["passed"] + s["failed"] + s["skipped"] + s["textbook_errata"] + s["findings"]


def test_a_toolkit_failure_exits_1_and_is_listed_with_its_reason(fakes, tmp_path):
    status, out = check(*only("toolkit", "pass"), "--out", str(tmp_path / "rep"))
    assert status == 1
    assert "Toolkit failures (1)" in out and "dL/dW_h differs from autograd by 0.5" in out
    assert "exit status 1" in out
    md = (tmp_path / "rep" / "report.md").read_text()
    summary, table = md.split("## Checks")
    assert "## Toolkit failures" in summary and "dL/dW_h differs from autograd by 0.5" in summary
    assert "| fake.derivation_vs_autograd |" in table and "| fail |" in table
    assert json.loads((tmp_path / "rep" / "report.json").read_text())["summary"]["ok"] is False


@pytest.mark.parametrize("crash", ["crash", "autograd_in_experiment"])
def test_a_crash_or_an_autograd_check_of_the_experiment_group_is_the_toolkits(fakes, tmp_path, crash):
    status, out = check(*only(crash), "--out", str(tmp_path / "rep"))
    assert status == 1 and "Toolkit failures (1)" in out and "Experiment findings" not in out


@pytest.mark.parametrize("key, section, word", [("finding", "Experiment findings", "FINDING"),
                                                ("erratum", "Textbook errata", "ERRATUM"),
                                                ("new_erratum", "Textbook errata", "ERRATUM")])
def test_a_finding_or_an_erratum_alone_exits_0_is_listed_and_fails_under_strict(fakes, tmp_path, key, section, word):
    status, out = check(*only(key, "pass"), "--out", str(tmp_path / "rep"))
    assert status == 0, out
    row = next(line for line in out.splitlines() if line.startswith(FAKES[key].name))
    assert row.rstrip().endswith(word) and "PASS" not in row
    assert f"{section} (1)" in out and "Toolkit failures" not in out
    assert "exit status 0 (--strict fails on errata and findings)" in " ".join(out.split())
    md = (tmp_path / "rep" / "report.md").read_text()
    assert f"## {section}" in md.split("## Checks")[0] and f"| {word.lower()} |" in md
    data = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert data["summary"]["ok"] is True and data["summary"]["failed"] == 0
    assert {c["name"]: c["kind"] for c in data["checks"]}[FAKES[key].name] == word.lower()

    status, out = check(*only(key, "pass"), "--out", str(tmp_path / "rep"), "--strict")
    assert status == 1 and "--strict fails on the errata and findings: exit status 1" in " ".join(out.split())


def test_a_real_recorded_erratum_is_labelled_erratum_and_passes_the_run(tmp_path):
    status, out = check("--only", "claims.masked_softmax_example", "--out", str(tmp_path / "rep"))
    assert status == 0
    row = next(line for line in out.splitlines() if line.startswith("claims.masked_softmax_example"))
    assert row.rstrip().endswith("ERRATUM")
    assert "the printed (0.31, 0.15, 0.54) is not it" in " ".join(out.split("Textbook errata (1)")[1].split())
    assert check("--only", "claims.masked_softmax_example", "--out", str(tmp_path / "rep"), "--strict")[0] == 1


def test_terminal_fits_80_columns_gives_every_reason_and_cuts_no_source_mid_word(fakes, tmp_path):
    status, out = check(*only(*FAKES), "--out", str(tmp_path / "a-rather-long-output-directory-name-for-the-report"))
    assert status == 1
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80, max(lines, key=len)
    table = lines[:lines.index("")]
    for item in FAKES.values():
        at = next(i for i, line in enumerate(table) if line.startswith(item.name))
        if not table[at].rstrip().endswith("PASS"):
            assert table[at + 1].startswith("    ") and len(table[at + 1].strip()) > 5, (item.name, table[at + 1])
    assert "no CUDA GPU" in out and "boom in the check" in out and "Skipped (1)" in out
    # the long source of the finding, wrapped at spaces only: joined again, the lines give it back whole
    finding = out.split("Experiment findings (1)")[1]
    assert f"FINDING experiment.fake_trend ({LONG_SOURCE})" in " ".join(finding.split())


def test_markdown_starts_with_the_summary_then_the_table(fakes, tmp_path):
    check(*only(*FAKES), "--out", str(tmp_path / "rep"))
    md = (tmp_path / "rep" / "report.md").read_text()
    order = [md.index(h) for h in ("## Toolkit failures", "## Textbook errata", "## Experiment findings", "## Skipped",
                                   "## Checks")]
    assert order == sorted(order)
    assert md.index("## Toolkit failures") < md.index("| check | source |")
    counts = md.split("\n\n")[1]
    assert "9 checks: 1 passed, 4 failed, 1 skipped; 2 textbook errata, 1 experiment finding" in counts
    assert "boom in the check" in md.split("## Checks")[0] and "no CUDA GPU" in md.split("## Checks")[0]


def test_the_texts_own_errata_and_the_recorded_experiment_do_not_fail_a_correct_toolkit(tmp_path):
    """The README's main job in small: the claims of the texts (with their recorded errata) and the experiment's
    checks (with what the recorded run shows) exit 0 unless the toolkit fails; each erratum and finding is listed."""
    status, out = check("--only", "claims", "--only", "experiment", "--out", str(tmp_path / "rep"))
    data = json.loads((tmp_path / "rep" / "report.json").read_text())
    s = data["summary"]
    assert s["failed"] == 0, [c["name"] for c in data["checks"] if c["kind"] == "toolkit" and not c["passed"]]
    assert status == 0 and s["ok"], out
    assert s["textbook_errata"] >= 1
    for c in data["checks"]:
        if c["kind"] != "toolkit":
            assert f"{c['kind'].upper()} {c['name']}" in out


def test_the_experiments_own_consistency_checks_are_the_toolkits():
    """The record's consistency and the derived path product against autograd are the toolkit's checks: their
    failure fails the run; the trends of the text are findings."""
    by_name = {c.name: c for c in registry.all_checks("experiment")}
    assert by_name["experiment.cue_recall_gradient_paths"].finding is False
    assert by_name["experiment.cue_recall_record"].finding is False
    trends = [c for n, c in by_name.items() if n not in ("experiment.cue_recall_gradient_paths", "experiment.cue_recall_record")]
    assert trends and all(c.finding is None for c in trends)
    assert kind_of("fail", None, "experiment", by_name["experiment.cue_recall_gradient_paths"].finding) == "toolkit"
    assert kind_of("fail", None, "experiment", trends[0].finding) == "finding"
