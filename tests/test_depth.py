"""numeric/depth.py, numeric/figures_depth.py, the ``depth`` figure set and the depth checks: plotted data, not pixels."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

from seqgrad.crosscheck.figures import depth as figure_set
from seqgrad.crosscheck.registry import all_checks, run_checks
from seqgrad.crosscheck.tolerance import compare
from seqgrad.numeric import depth
from seqgrad.numeric import figures_depth as fd
from seqgrad.errors import SeqgradValueError

# one worker runs this module, so that its module fixtures are built once, not once per xdist worker
pytestmark = pytest.mark.xdist_group("depth")


def _ax():
    return Figure().add_subplot()


@pytest.fixture(scope="module")
def grads():
    return depth.gradient_study()


@pytest.fixture(scope="module")
def jacs():
    return depth.jacobian_study()


def test_profile_plot_is_the_study_data(grads):
    lines = fd.plot_layer_profile(_ax(), grads, "post-norm", depths=(4, 48))
    assert [len(line.get_xdata()) for line in lines] == [4, 48]
    assert list(lines[1].get_xdata()) == list(range(1, 49))
    np.testing.assert_array_equal(lines[1].get_ydata(), grads.profiles[("post-norm", 48)])


def test_profile_plot_shows_the_seeds_median_and_spread(grads):
    """A lecturer: the profiles rested on 2 seeds and showed no spread. The study keeps every seed's norms; the line
    is their median, and a band in the line's colour runs from the smallest seed to the largest at each layer."""
    from matplotlib.colors import to_rgba

    assert grads.seeds >= 8
    runs = grads.runs[("post-norm", 48)]
    assert runs.shape == (grads.seeds, 48)
    np.testing.assert_array_equal(grads.profiles[("post-norm", 48)], np.median(runs, axis=0))
    ax = _ax()
    lines = fd.plot_layer_profile(ax, grads, "post-norm", depths=(4, 48))
    bands = ax.collections
    assert len(bands) == len(lines) == 2
    for line, band, L in zip(lines, bands, (4, 48)):
        lo, hi = grads.spread("post-norm", L)
        (path,) = band.get_paths()
        ys = path.vertices[:, 1]
        assert np.isclose(ys.min(), lo.min()) and np.isclose(ys.max(), hi.max())
        assert np.all(lo <= line.get_ydata()) and np.all(line.get_ydata() <= hi)
        assert to_rgba(band.get_facecolor()[0], 1) == to_rgba(line.get_color(), 1)
    assert f"median of {grads.seeds} seeds" in ax.get_title()


def test_plotted_xiong_trend(grads):
    """Read the trend back from the plotted lines: pre-norm ~ 1/sqrt(L) near the output, post-norm flat."""
    ax = _ax()
    pre, post, reference = fd.plot_output_gradient_vs_depth(ax, grads)
    L = pre.get_xdata()
    assert list(L) == list(grads.depths) and ax.get_xscale() == ax.get_yscale() == "log"
    scaled = pre.get_ydata() * np.sqrt(L)
    assert scaled.max() / scaled.min() < 2.5
    assert post.get_ydata().max() / post.get_ydata().min() < 2.5
    ratio = post.get_ydata() / pre.get_ydata()
    assert ratio[-1] > 3 * ratio[0]  # near the output post-norm grows with depth relative to pre-norm
    np.testing.assert_allclose(reference.get_ydata(), pre.get_ydata()[0] / np.sqrt(L))


def test_plotted_singular_values_are_those_of_the_product(jacs):
    lines = fd.plot_singular_values(_ax(), jacs, "pre-norm")
    assert len(lines) == 2 * len(jacs.depths)
    sizes = jacs.sizes
    H0, _ = depth.inputs(sizes, 0)
    blocks = depth.stack(jacs.depths[-1], "pre-norm", sizes, seed=0)
    P = depth.products(depth.block_jacobians(blocks, H0, residual=True))
    for line, L in zip(lines[::2], jacs.depths):
        s = torch.linalg.svdvals(P[L - 1]).numpy()
        assert compare(line.get_ydata(), s).passed
        assert s[-1] > 1e-6 * s[0]  # the identity path keeps the product invertible
    without = lines[-1].get_ydata()  # deepest, no bypasses: vanished
    assert without[0] < 1e-2 * lines[1].get_ydata()[0]


def test_layernorm_null_space_without_bypass():
    sizes = depth.Sizes(T=3, D=4, n_heads=2, F_width=8)
    H0, _ = depth.inputs(sizes, 1)
    blocks = depth.stack(2, "pre-norm", sizes, seed=3)
    for J in depth.block_jacobians(blocks, H0, residual=False):
        ones = torch.zeros(sizes.T * sizes.D, dtype=torch.float64)
        ones[: sizes.D] = 1.0  # the mean direction of row 0: LN1 removes it
        assert float(torch.linalg.norm(J @ ones)) < 1e-12


def test_figure_set_writes_files(tmp_path):
    paths = figure_set.write(tmp_path, "png", "cpu")
    assert len(paths) == 5 and all(p.exists() and p.stat().st_size > 0 for p in paths)


def test_bad_input():
    with pytest.raises(SeqgradValueError, match="placement"):
        depth.stack(2, "sandwich")
    with pytest.raises(SeqgradValueError, match="depth"):
        depth.stack(0, "pre-norm")
    with pytest.raises(SeqgradValueError, match="depth"):
        depth.gradient_study(depths=[0, 4])
    with pytest.raises(SeqgradValueError, match="depths"):
        depth.jacobian_study(depths=[])
    with pytest.raises(SeqgradValueError, match="depths"):
        depth.gradient_study(depths=["four"])
    with pytest.raises(SeqgradValueError, match="n_heads"):
        depth.Sizes(D=6, n_heads=4)
    with pytest.raises(SeqgradValueError, match="format"):
        figure_set.write("unused", "gif", "cpu")
    with pytest.raises(SeqgradValueError, match="depths"):
        fd.plot_layer_profile(_ax(), depth.gradient_study(), "pre-norm", depths=(5,))


def test_depth_checks_pass():
    results = run_checks(all_checks("depth.*"), show_progress=False)
    assert len(results) == 5
    assert all(r.status == "pass" for r in results), [(r.name, r.detail) for r in results if r.status != "pass"]


def test_gradient_norm_axes_label_ticks_as_plain_numbers(grads):
    """The gradient norms span about two decades; their log axes were labelled 3 x 10^1, 2 x 10^1, 6 x 10^0. They are
    labelled 30, 20, 6 now, and the legends' depths are math (L = 4), as in the text."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = Figure()
    ax = fig.add_subplot()
    fd.plot_layer_profile(ax, grads, "pre-norm")
    FigureCanvasAgg(fig).draw()
    labels = [t.get_text() for t in ax.get_yticklabels() + ax.get_yticklabels(minor=True) if t.get_text()]
    assert labels and not any("times" in text or "^" in text for text in labels), labels
    assert {"10", "20"} <= set(labels), labels
    post = Figure().add_subplot()  # the post-norm profile reaches below 1: 0.6, not 6e-01
    fd.plot_layer_profile(post, grads, "post-norm")
    FigureCanvasAgg(post.figure).draw()
    low = [t.get_text() for t in post.get_yticklabels() + post.get_yticklabels(minor=True) if t.get_text()]
    assert not any("e" in text for text in low) and any(text.startswith("0.") for text in low), low
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["$L = 4$", "$L = 16$", "$L = 48$"]


def test_depth_legend_lists_post_norm_first_as_it_lies_highest(grads):
    ax = _ax()
    pre, post, reference = fd.plot_output_gradient_vs_depth(ax, grads)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert post.get_ydata()[-1] > max(pre.get_ydata()[-1], reference.get_ydata()[-1])
    assert legend[0] == post.get_label()


def test_the_depth_figures_title_cites_no_work(grads):
    """"(Xiong et al. 2020)" in the title read as if the figure showed their data; it shows this experiment, whose
    setting differs from theirs (the text says how): the citation is the text's."""
    from seqgrad.crosscheck.references import CITATION

    ax = _ax()
    fd.plot_output_gradient_vs_depth(ax, grads)
    assert ax.get_title() and not CITATION.search(ax.get_title()), ax.get_title()
