"""``seqgrad encoder``, ``seqgrad plot encoder``, the figure functions and the booktabs helper."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.figure import Figure

from seqgrad.crosscheck import course_tables
from seqgrad.crosscheck.cli import main
from seqgrad.crosscheck.figures import encoder as figs
from seqgrad.numeric import course
from seqgrad.numeric.positions import sinusoidal
from seqgrad.errors import NonFiniteError, SeqgradValueError
from seqgrad.latex_table import booktabs, format_sigfig
from seqgrad.sigfig import matches


class Proc:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def run(capsys):
    """``seqgrad ARGS`` in this process (fast); one test below goes through a real subprocess."""

    def call(*args):
        code = main(list(args))
        out = capsys.readouterr()
        return Proc(code, out.out, out.err)

    return call


def test_json_holds_every_intermediate_of_both_stages(cli, tmp_path):
    out = tmp_path / "enc.json"
    proc = cli("encoder", "--json", "--out", str(out))  # the real console entry, in a subprocess
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    stages = doc["stages"]
    assert set(stages) == set(course.STAGES)
    for name in ("head1.Q", "head2.A", "head1.contrib", "head1.A_causal", "C", "B_att"):
        assert name in stages["attention_on_H0"]
    for name in ("block0.LN1.mean", "block0.X", "block0.head1.A", "block0.U", "block0.R", "block0.Z_mlp", "block0.J_mlp",
                 "block0.B_mlp", "H1", "H_enc", "LN_final.var"):
        assert name in stages["prenorm_block"]
    # the JSON reproduces every printed number too
    bad = [c.label() for c in course_tables.cells()
           if not matches(float(np.asarray(stages[c.stage][c.name])[c.index]), c.printed)]
    assert bad == []


def test_text_markdown_latex_and_show(run):
    proc = run("encoder", "--show", "H_enc", "--stage", "prenorm_block")
    assert proc.returncode == 0 and "6: begins" in proc.stdout and "-1.68" in proc.stdout
    assert "head1.Q" not in proc.stdout
    md = run("encoder", "--markdown", "--show", "head1.A_causal", "--stage", "attention_on_H0").stdout
    assert "| 1: journey | 0.389 | 0.611 | 0 |" in md
    tex = run("encoder", "--latex", "--decimal-comma", "--show", "block0.U").stdout
    assert r"\toprule" in tex and "$-0{,}0954$" in tex


def test_text_option_and_bad_input(run):
    proc = run("encoder", "--text", "a single step", "--show", "H0", "--stage", "attention_on_H0")
    assert proc.returncode == 0 and "2: step" in proc.stdout
    bad = run("encoder", "--text", "a journey of a thousand kilometres")
    assert bad.returncode == 2 and "'kilometres'" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    bad = run("encoder", "--show", "Q_att")
    assert bad.returncode == 2 and "head1.Q" in bad.stderr


def test_plot_encoder_writes_files(run, tmp_path):
    proc = run("plot", "encoder", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["fig06_identity_position.png", "fig08_begins_contributions.png", "fig09_S.png", "fig10_A.png",
                     "fig11_A_causal.png"]  # the wide positional encoding is the set ``positional``
    assert all((tmp_path / f).stat().st_size > 1000 for f in files)


@pytest.fixture(scope="module")
def tr():
    return {k: v.numpy() for k, v in course.trace("attention_on_H0").items()}


TOKENS = course.TEXT.split()


def test_figure6_shared_colour_scale(tr):
    axes = Figure().subplots(1, 3)
    art = figs.plot_identity_position_sum(axes, tr["E_seq"], tr["P"], tr["H0"], TOKENS)
    limits = {im.get_clim() for im in art["images"]}
    assert len(limits) == 1
    assert np.array_equal(art["images"][2].get_array(), tr["H0"])
    bound = max(abs(tr[k]).max() for k in ("E_seq", "P", "H0"))
    assert limits.pop() == (-bound, bound)


def test_causal_weights_mark_masked_cells(tr):
    ax = Figure().subplots()
    masked = np.triu(np.ones((7, 7), bool), 1)
    art = figs.plot_attention_matrix(ax, tr["head1.A_causal"], TOKENS, title="causal", masked=masked, vmin=0, vmax=1)
    crosses = art["crosses"].get_offsets()
    assert len(crosses) == 21 and {(int(x), int(y)) for x, y in crosses} == {(j, i) for i, j in zip(*np.nonzero(masked))}
    assert np.allclose(art["image"].get_array()[1, :2], [0.389, 0.611], atol=5e-4)
    assert len(art["texts"]) == 28


def test_contributions_and_column_sums(tr):
    ax = Figure().subplots()
    art = figs.plot_contributions(ax, tr["head1.contrib"][6], TOKENS)
    assert np.allclose(art["sums"], tr["head1.O"][6])
    grid = art["image"].get_array()
    assert np.allclose(grid[:7], tr["head1.contrib"][6]) and np.allclose(grid[8], tr["head1.O"][6])
    assert [t.get_text() for t in art["texts"][-3:]] == ["\u22120.025", "0.239", "0.563"]  # a true minus sign
    assert not any("-" in t.get_text() for t in art["texts"])


def test_positional_heatmap_d128():
    from seqgrad.crosscheck.figures import positional

    ax = Figure().subplots()
    P = sinusoidal(100, 128).numpy()
    art = positional.plot_positional_encoding(ax, P)
    assert art["image"].get_array().shape == (100, 128) and np.array_equal(art["image"].get_array(), P)


def test_format_sigfig_like_the_course():
    assert [format_sigfig(x) for x in (0.65, 1.2, 2.0, -0.0954499, 0.00189, 0.99996, -0.0, 1234.5)] == \
           ["0.65", "1.2", "2", "-0.0954", "0.00189", "1", "0", "1230"]
    with pytest.raises(NonFiniteError):
        format_sigfig(float("nan"))


def test_format_sigfig_keeps_its_figures_for_the_notes():
    """The notes' tables show every entry at its 3 figures ("0.200" beside "0.0502"; a reader found "0.2", "1"
    and "0.17" beside "0.0502" inconsistent); the course's own form strips them."""
    assert [format_sigfig(x, 3, trailing_zeros=True) for x in (0.2, 1, 0.17, -0.99, 0.0502, 0, 0.99996, 1234.5)] == \
        ["0.200", "1.00", "0.170", "-0.990", "0.0502", "0.00", "1.00", "1230"]
    table = booktabs([[0.2, 0.0502]], figures=3, trailing_zeros=True)
    assert "$0.200$ & $0.0502$" in table


def test_booktabs_layout():
    tex = booktabs([[0.65, -1.2], [0.0502, 2]], row_labels=["0: a_b", "1: c"], col_labels=["F0", "F1"], corner="t",
                   caption="H & co", decimal_comma=True)
    lines = tex.splitlines()
    assert lines[0] == r"\begin{table}[htbp]" and r"\caption{H \& co}" in lines
    assert r"\begin{tabular}{lrr}" in lines and lines.count(r"\midrule") == 1
    assert r"0: a\_b & $0{,}65$ & $-1{,}2$ \\" in lines
    with pytest.raises(SeqgradValueError):
        booktabs([[1, 2], [3]])
    with pytest.raises(SeqgradValueError):
        booktabs([[1, 2]], row_labels=["a", "b"])


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="checks the refusal on a machine without a GPU")
def test_cuda_without_gpu_is_a_clear_error(run):
    proc = run("encoder", "--device", "cuda", "--show", "H0")
    assert proc.returncode == 2 and "cuda" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
