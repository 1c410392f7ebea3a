"""The document assembler (crosscheck/latexdoc.py) and ``seqgrad latex``; no TeX engine needed."""

from __future__ import annotations

import doctest

import re

import pytest
import sympy as sp

import seqgrad.crosscheck.latexdoc as latexdoc
import seqgrad.crosscheck.latex_parts as latex_parts
from seqgrad.crosscheck.cli import main
from seqgrad.crosscheck.latexdoc import Section, resolve_sections
from seqgrad.crosscheck.latex_parts import SectionUnavailable
from seqgrad.errors import SeqgradTypeError, SeqgradValueError


def test_module_examples():
    result = doctest.testmod(latexdoc, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_the_sections_in_order():
    # the course's order: RNN and BPTT, path products, gated cells, positions, attention, LayerNorm and residuals,
    # the encoder and its worked example, the decoder, convolution (the printed claims are in the appendix)
    assert latexdoc.SECTION_NAMES == ("rnn", "paths", "gates", "positional", "attention", "residual", "encoder", "decoder", "conv")


def test_resolve_sections():
    names = latexdoc.available_sections()
    if names:
        assert resolve_sections(",".join(reversed(names))) == list(reversed(names))  # the order asked for
        assert resolve_sections([names[0], names[0]]) == [names[0]]  # duplicates once
    assert resolve_sections(None) == names


@pytest.mark.parametrize("spec, error", [
    ("rnn,nope", SeqgradValueError),
    (" , ", SeqgradValueError),
    (["encoder", 3], SeqgradTypeError),
    (42, SeqgradTypeError),
])
def test_bad_section_specs(spec, error):
    with pytest.raises(error):
        resolve_sections(spec)


def test_a_missing_package_is_refused_not_faked(monkeypatch):
    fake = Section("gates", "Gated cells", ("seqgrad.derive.no_such_module_yet",), lambda b: "never built")
    monkeypatch.setitem(latexdoc.SECTIONS, "gates", fake)
    assert "gates" not in latexdoc.available_sections()
    with pytest.raises(SectionUnavailable, match="derive.no_such_module_yet"):
        resolve_sections("gates")
    with pytest.raises(SectionUnavailable):
        latexdoc.render(["gates"])
    unwired = Section("gates", "Gated cells", ("seqgrad.derive",), None)
    monkeypatch.setitem(latexdoc.SECTIONS, "gates", unwired)
    with pytest.raises(SectionUnavailable, match="section builder"):
        resolve_sections("gates")


def test_render_assembles_a_complete_document(monkeypatch):
    monkeypatch.setitem(latexdoc.SECTIONS, "rnn", Section("rnn", "Recurrent & co", ("seqgrad.derive",), lambda b: "Body $x$."))
    doc = latexdoc.render(["rnn"])
    assert doc.startswith("\\documentclass[11pt,a4paper]{article}")
    assert "\\section{Notation}" in doc and "\\tableofcontents" in doc and "\\appendix" in doc
    for package in ("amsmath", "booktabs", "graphicx"):
        assert f"\\usepackage{{{package}}}" in doc
    assert "\\section{Recurrent \\& co}\\label{sec:rnn}" in doc and "Body $x$." in doc
    assert doc.rstrip().endswith("\\end{document}")


def test_standalone_draws_only_the_figures_it_includes(monkeypatch, tmp_path):
    """The handout asks for the whole paths set and gets the figures of its points only, drawn and included."""
    def body(b):
        return b.figures("paths")
    monkeypatch.setitem(latexdoc.SECTIONS, "rnn", Section("rnn", "RNN", ("seqgrad.derive",), body))
    out = latexdoc.write(tmp_path / "n.tex", "rnn", standalone=True)
    included = sorted(re.findall(r"\\includegraphics\[[^]]*\]\{([^}]+)\}", out.read_text()))
    assert included == ["n-figures/paths/fig3-left-power-curves.pdf", "n-figures/paths/gradient-flow-rnn-gru-lstm.pdf"]
    on_disk = sorted(p.relative_to(tmp_path).as_posix() for p in (tmp_path / "n-figures").rglob("*.pdf"))
    assert on_disk == included
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n-figures", "n.tex"]  # nothing temporary left


def test_a_document_without_figures_leaves_no_folder(monkeypatch, tmp_path):
    monkeypatch.setitem(latexdoc.SECTIONS, "rnn", Section("rnn", "RNN", ("seqgrad.derive",), lambda b: "no figures"))
    (tmp_path / "n-figures").mkdir()  # an earlier document's figures: this one has none, so they go
    (tmp_path / "n-figures" / "old.pdf").write_bytes(b"%PDF")
    for standalone in (True, False):
        latexdoc.write(tmp_path / "n.tex", "rnn", standalone=standalone)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["n.tex"]


def test_a_failed_document_leaves_the_old_figures_and_nothing_else(monkeypatch, tmp_path):
    def body(b):
        b.figures("conv")  # drawn into the fresh folder, then the section fails
        raise RuntimeError("the section failed")
    monkeypatch.setitem(latexdoc.SECTIONS, "rnn", Section("rnn", "RNN", ("seqgrad.derive",), body))
    (tmp_path / "n-figures").mkdir()
    (tmp_path / "n-figures" / "old.pdf").write_bytes(b"%PDF")
    with pytest.raises(RuntimeError, match="the section failed"):
        latexdoc.write(tmp_path / "n.tex", "rnn", standalone=True)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["n-figures", "n-figures/old.pdf"]


def test_output_name_must_end_in_tex(tmp_path):
    with pytest.raises(SeqgradValueError, match="OUT"):
        latexdoc.write(tmp_path / "n.txt", None)


def test_text_escapes_specials_and_unicode():
    assert latex_parts.text("50% of a_b & $1") == r"50\% of a\_b \& \$1"
    assert latex_parts.text("x ≈ −0.5 ± 1") == r"x $\approx$ $-$0.5 $\pm$ 1"
    assert latex_parts.text("кот") == r"\texttt{U+043A}\texttt{U+043E}\texttt{U+0442}"


@pytest.mark.parametrize("argv, message", [
    (["latex", "x.tex", "--sections", "rnn,bogus"], "sections='bogus' is not allowed"),
    (["latex", "x.tex", "--sections", "encoder", "--symbol", "nonsense"], "--symbol='nonsense' is not allowed"),
    (["latex", "x.txt", "--sections", "encoder"], "OUT='x.txt' is not allowed"),
])
def test_cli_bad_input_is_one_line_exit_2(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "x.tex").exists()


def test_cli_notation_options(monkeypatch, tmp_path, capsys):
    seen = {}

    def body(b):
        seen["notation"] = b.notation
        return b.notation.latex(sp.Symbol("w_h") * sp.Symbol("g_0^z"))
    monkeypatch.setitem(latexdoc.SECTIONS, "rnn", Section("rnn", "RNN", ("seqgrad.derive",), body))
    out = tmp_path / "n.tex"
    assert main(["latex", str(out), "--sections", "rnn", "--standalone", "--decimal-comma", "--plain",
                 "--symbol", "w_h=W_{hh}", "--symbol", "g=\\delta", "--jobs", "1"]) == 0
    n = seen["notation"]
    assert n.decimal_comma and not n.bold and n.symbol_names == {"w_h": "W_{hh}", **latexdoc.NOTES_SYMBOL_NAMES} and n.letters["g"] == "\\delta"
    assert capsys.readouterr().out.strip() == str(out)
    assert "\\delta^{z}_{0} W_{hh}" in out.read_text()


@pytest.mark.parametrize("symbol, message", [
    ("w_h=W_{hh", "balanced braces"),          # would break the document
    ("w_h=$W$", "unescaped '$'"),
    ("zz=Q", "nothing in sections rnn is called that"),  # a rename of nothing is refused, not ignored
])
def test_cli_bad_symbol_is_refused(symbol, message, monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(latexdoc.SECTIONS, "rnn", Section("rnn", "RNN", ("seqgrad.derive",),
                                                          lambda b: b.notation.latex(sp.Symbol("w_h"))))
    assert main(["latex", str(tmp_path / "n.tex"), "--sections", "rnn", "--standalone", "--symbol", symbol]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "n.tex").exists()


class _SlowProof:
    name, method, source, title = "slow", "simplify", "nowhere", "a proof that never ends"

    def prove(self):
        import time
        time.sleep(30)
        raise AssertionError("the time budget did not interrupt the proof")


def test_a_slow_proof_is_reported_as_not_proved_here():
    assert latex_parts.prove_within(_SlowProof(), 0.2) is None


@pytest.mark.parametrize("value", [0, -1.0, float("nan")])
def test_bad_proof_seconds(value, monkeypatch):
    monkeypatch.setitem(latexdoc.SECTIONS, "rnn", Section("rnn", "RNN", ("seqgrad.derive",), lambda b: "x"))
    with pytest.raises(SeqgradValueError, match="proof_seconds"):
        latexdoc.render(["rnn"], proof_seconds=value)


@pytest.mark.parametrize("value, error", [(0, SeqgradValueError), (16, SeqgradValueError), (2.5, SeqgradTypeError)])
def test_bad_digits(value, error, monkeypatch):
    monkeypatch.setitem(latexdoc.SECTIONS, "rnn", Section("rnn", "RNN", ("seqgrad.derive",), lambda b: "x"))
    with pytest.raises(error, match="digits"):
        latexdoc.render(["rnn"], digits=value)


def test_text_escapes_comparison_signs():
    assert latex_parts.text("eps > 0 | x < 1") == r"eps \textgreater{} 0 \textbar{} x \textless{} 1"
