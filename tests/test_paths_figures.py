"""numeric/figures_paths.py and the ``paths`` figure set: plotted data against the formulas, files written."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure

from seqgrad.crosscheck.figures import paths as figure_set
from seqgrad.crosscheck.tolerance import compare
from seqgrad.numeric import figures_paths as fp
from seqgrad.numeric import paths
from seqgrad.errors import SeqgradValueError
from seqgrad.sigfig import matches


def _ax():
    return Figure().add_subplot()


def _ok(computed, reference):
    outcome = compare(computed, reference)
    assert outcome.passed, (outcome.max_abs_error, outcome.max_rel_error)


def test_figure3_left_data_and_log_axis():
    ax = _ax()
    lines = fp.plot_power_curves(ax, n_max=30)
    assert len(lines) == 3 and ax.get_yscale() == "log"
    for line, r in zip(lines, (0.8, 1.0, 1.2)):
        n = line.get_xdata()
        _ok(line.get_ydata(), r ** n)
    assert matches(lines[0].get_ydata()[10], 0.1074, 4) and matches(lines[2].get_ydata()[30], 237.4, 4)


def _pair():
    return Figure().subplots(1, 2)


def test_figure3_right_data_matches_table():
    axes = _pair()
    zero, one = fp.plot_tanh_sensitivity(axes, T_max=30)
    assert all(a.get_yscale() == "log" for a in axes)
    assert list(zero.get_xdata()) == list(range(1, 31))
    _ok(zero.get_ydata(), 1.2 ** (zero.get_xdata() - 1))  # grows as 1.2^(T-1)
    y = one.get_ydata()
    assert y[0] == 1 and matches(y[1], 0.100033, 6) and matches(y[9], 2.0227e-11, 5) and matches(y[29], 1.05911e-35, 6)
    ratio = y[29] / y[28]
    assert matches(ratio, 0.061, 2)  # each step multiplies by about 0.061


def test_heatmap_data_is_log_path_product():
    ax = _ax()
    w_h = np.array([0.5, 1.0, 1.5])
    mesh, contour = fp.plot_sensitivity_heatmap(ax, w_h_values=w_h, T=10, x=0.0, clip=100.0)
    data = np.asarray(mesh.get_array()).reshape(3, 10)
    _ok(data, (9 - np.arange(10))[None, :] * np.log10(w_h)[:, None])  # x = 0: |w_h|^(T-1-t)
    _ok(mesh.log10_data, paths.log10_path_products(w_h, 0.0, 10))


def test_heatmap_clips_colours_not_data():
    mesh, _ = fp.plot_sensitivity_heatmap(_ax(), w_h_values=[0.1, 3.0], T=30, clip=5.0)
    data = np.asarray(mesh.get_array())
    assert data.min() == -5.0 and data.max() == 5.0
    assert mesh.log10_data.min() < -5 and mesh.log10_data.max() > 5


def test_jacobian_norm_plot_data():
    rng = np.random.default_rng(0)
    w = paths.RNNWeights.random(2, 4, rng, spectral_norm=1.3)
    X = rng.standard_normal((12, 2))
    measured, product, bound = fp.plot_jacobian_norms(_ax(), w, X)
    norms = paths.jacobian_product_norms(w, X)
    _ok(measured.get_ydata(), norms.measured)
    _ok(bound.get_ydata(), 1.3 ** bound.get_xdata())
    assert np.all(measured.get_ydata() <= product.get_ydata() * (1 + 1e-12))
    assert np.all(product.get_ydata() <= bound.get_ydata() * (1 + 1e-12))


def test_gradient_flow_plot_isolates_the_carry_path():
    """The gated-vs-RNN figure (week06 §LSTM:400): each cell at PyTorch's default initialisation and, for
    GRU and LSTM, with the keeping gate's bias raised; with it raised, the carry product stays near 1 and
    the gradient 11 steps back is much larger than the plain RNN's."""
    artists = fp.plot_gradient_flow(Figure().subplots(1, 2), width=5, T=12, gate_bias=3.0)
    labels = [a.get_label() for a in artists]
    assert [lab.split(",")[0] for lab in labels] == ["RNN", "GRU", "GRU", "GRU", "GRU", "LSTM", "LSTM", "LSTM", "LSTM"]
    assert "$u$'s bias raised by 3" in labels[3] and "$f$'s bias raised by 3" in labels[7]
    cells = fp.gradient_flow_cells(5)
    assert {w.hidden_size for w in cells.values()} == {5}
    X = np.random.default_rng(1).standard_normal((12, 4))
    _ok(artists[5].get_ydata(), paths.gradient_flow(cells["LSTM"], X).grad_norm)
    opened = paths.gradient_flow(fp.with_gate_bias(cells["LSTM"], "f", 3.0), X)
    _ok(artists[7].get_ydata(), opened.grad_norm)
    rnn_far, lstm_far = artists[0].get_ydata()[0], artists[7].get_ydata()[0]  # s = 0: 11 steps back
    assert lstm_far > 10 * rnn_far  # (about 46 times at T = 12; ten orders of magnitude at T = 60 in the figure)
    assert artists[8].get_ydata()[0] > 0.5  # prod f_t with f near sigmoid(3): the carry stays open


@pytest.mark.parametrize("fmt, magic", [("png", b"\x89PNG"), ("pdf", b"%PDF"), ("svg", b"<?xml")])
def test_figure_set_writes_readable_files(tmp_path, fmt, magic, monkeypatch):
    # small sizes keep the test quick; the full set is exercised by the CLI test below
    monkeypatch.setattr(figure_set, "figures", lambda: {"fig3-left-power-curves": (fp.plot_power_curves, (4, 3)),
                                                        "fig3-right-tanh-sensitivity": (fp.plot_tanh_sensitivity, (4, 3))})
    written = figure_set.write(tmp_path / "out", fmt)
    assert [p.name for p in written] == [f"fig3-left-power-curves.{fmt}", f"fig3-right-tanh-sensitivity.{fmt}"]
    for p in written:
        assert p.read_bytes()[:5].startswith(magic)
    if fmt == "png":
        from matplotlib.image import imread

        assert imread(written[0]).shape[2] in (3, 4)


def test_figure_set_bad_format(tmp_path):
    with pytest.raises(SeqgradValueError, match="format"):
        figure_set.write(tmp_path, "jpg")


def test_cli_plot_paths_writes_all_five(cli, tmp_path):
    proc = cli("plot", "paths", "--out", str(tmp_path / "figs"), "--format", "svg")
    assert proc.returncode == 0, proc.stderr
    files = sorted(p.name for p in (tmp_path / "figs").iterdir())
    assert files == sorted(f"{stem}.svg" for stem in figure_set.figures())
    assert all((tmp_path / "figs" / f).stat().st_size > 1000 for f in files)


def test_cli_plot_paths_rejects_format(cli, tmp_path):
    proc = cli("plot", "paths", "--format", "gif", "--out", str(tmp_path))
    assert proc.returncode == 2


@pytest.mark.parametrize("name", ["conv", "decoder", "depth", "encoder", "paths"])
@pytest.mark.parametrize("fmt, device, argument", [("jpg2", "cpu", "format"), ("png", "gpu", "device")])
def test_every_figure_set_refuses_a_wrong_format_or_device_before_computing(tmp_path, name, fmt, device, argument):
    """The conv and decoder sets once ignored their device and passed a bad format to matplotlib (a raw
    ValueError after the plot was computed); every set now checks both first."""
    from seqgrad.crosscheck.figures import figure_sets

    with pytest.raises(SeqgradValueError, match=argument):
        figure_sets()[name].write(tmp_path / "out", fmt, device)
    assert not (tmp_path / "out").exists()


def test_heatmap_contour_leaves_out_the_empty_product_and_the_mesh_is_rasterized():
    """The 1-contour was traced down the whole last column (t = T - 1, the empty product, 1 at every w_h), drawing
    a vertical line at t = 39 that means nothing; and the vector mesh showed hairline seams between its cells."""
    mesh, contour = fp.plot_sensitivity_heatmap(_ax(), T=40)
    vertices = np.concatenate([p.vertices for p in contour.get_paths() if len(p.vertices)])
    assert vertices[:, 0].max() < 39 - 0.5, vertices[:, 0].max()
    assert mesh.get_rasterized()


def test_tanh_sensitivity_draws_each_curve_visibly_in_a_panel_of_its_own():
    """A lecturer: twin y-axes, and the dotted reference hidden behind the curve it coincides with. Now the vanishing
    curve has the left panel, the growing one and its reference the right, each on its own labelled log axis with a
    legend; the reference is a dashed line and the curves are dots without a line, so both are seen where they
    coincide."""
    from matplotlib.colors import to_rgba

    left, right = axes = _pair()
    zero, one = fp.plot_tanh_sensitivity(axes)
    assert one.axes is left and zero.axes is right
    assert len(left.figure.axes) == 2  # no twin axis
    (reference,) = [line for line in right.get_lines() if line is not zero]
    np.testing.assert_allclose(zero.get_ydata(), reference.get_ydata(), rtol=1e-12)  # it does coincide
    assert reference.get_linestyle() == "--" and zero.get_linestyle() == "None" and zero.get_marker() == "o"
    assert to_rgba(reference.get_color()) != to_rgba(zero.get_color())
    for a, curves in ((left, [one]), (right, [zero, reference])):
        assert a.get_ylabel() and a.get_xlabel() and a.get_title()
        assert [t.get_text() for t in a.get_legend().get_texts()] == [c.get_label() for c in curves]
    with pytest.raises(ValueError, match="axes"):
        fp.plot_tanh_sensitivity(_ax())


def test_jacobian_norm_legend_lists_the_curves_top_down_in_bold_matrices():
    """The legend listed the lowest curve first (measured, product, bound) beside a plot where the bound lies on top;
    it now lists them in the order they lie, and the matrices are bold, as in the text."""
    ax = _ax()
    lines = fp.plot_jacobian_norms(ax)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    ends = {line.get_label(): line.get_ydata()[-1] for line in lines}
    assert [ends[label] for label in legend] == sorted(ends.values(), reverse=True)
    assert legend[0].startswith("Pascanu bound") and all("\\mathbf{" in label for label in legend)


def test_power_curve_legend_lists_the_highest_curve_first():
    ax = _ax()
    lines = fp.plot_power_curves(ax)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == [r"$\rho = 1.2$", r"$\rho = 1$", r"$\rho = 0.8$"]
    assert [line.get_label() for line in fp.top_down(lines)] == legend


def test_the_heatmap_caption_names_the_level_its_contour_is_drawn_at():
    """The caption said "the black contour is 1": the contour is drawn at log10 = 0 of the colour's quantity, the
    sensitivity, and the caption says so (a sensitivity of exactly 1)."""
    from seqgrad.crosscheck.figures.paths import CAPTIONS

    _, contour = fp.plot_sensitivity_heatmap(_ax(), T=20)
    assert list(contour.levels) == [0.0]
    assert "the black contour marks a sensitivity of exactly 1 (log10 0" in CAPTIONS["sensitivity-heatmap"]
