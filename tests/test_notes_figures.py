"""The figures of the notes: the handout (``seqgrad latex --standalone``) draws and includes one figure per point,
and every caption of a figure it includes says what its data show (each number or claim computed again here from
the data the figure draws, with the figure's own plotting code)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from matplotlib.figure import Figure

from seqgrad.crosscheck import latexdoc, notes
from seqgrad.crosscheck.figures import figure_sets
from seqgrad.errors import SeqgradTypeError, SeqgradValueError

from test_parallel import needs_fork


def _ax():
    return Figure().add_subplot()


def test_every_handout_figure_is_a_figure_with_a_caption_and_its_section_draws_from_its_set():
    sets = figure_sets()
    for section, figures in notes.HANDOUT.items():
        assert section in latexdoc.SECTIONS and len(figures) == 1, section  # one figure per point
        set_name, stem = figures[0].split("/")
        assert stem in sets[set_name].CAPTIONS
        assert f"seqgrad.crosscheck.figures.{set_name}" in latexdoc.SECTIONS[section].requires


@pytest.mark.parametrize("name", sorted(figure_sets()))
def test_a_figure_set_draws_the_figures_asked_for_and_refuses_an_unknown_one(name, tmp_path):
    module = figure_sets()[name]
    with pytest.raises(SeqgradValueError, match="stems"):
        module.write(tmp_path, "pdf", "cpu", stems=["no-such-figure"])
    with pytest.raises(SeqgradTypeError, match="stems"):
        module.write(tmp_path, "pdf", "cpu", stems=next(iter(module.CAPTIONS)))  # a name, not a list of names
    assert module.write(tmp_path / "none", "pdf", "cpu", stems=[]) == []
    last = list(module.CAPTIONS)[-1]
    if name in ("conv", "decoder", "positional", "encoder"):  # the cheap ones: draw one and look
        written = module.write(tmp_path / "one", "pdf", "cpu", stems=[last])
        assert [p.name for p in written] == [f"{last}.pdf"] and [p.name for p in (tmp_path / "one").iterdir()] == [f"{last}.pdf"]


def test_the_handout_includes_what_it_draws_and_nothing_else(tmp_path):
    out = latexdoc.write(tmp_path / "notes.tex", "positional,conv", standalone=True, appendix=False, proof_seconds=5)
    source = out.read_text()
    included = sorted(re.findall(r"\\includegraphics\[[^]]*\]\{([^}]+)\}", source))
    assert included == ["notes-figures/conv/conv_receptive_field.pdf", "notes-figures/positional/positional_encoding_d128.pdf"]
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.pdf")) == included
    for rel in included:
        assert (tmp_path / rel).read_bytes().startswith(b"%PDF")
    assert ".new" not in source and sorted(p.name for p in tmp_path.iterdir()) == ["notes-figures", "notes.tex"]


@needs_fork
def test_the_parallel_handout_is_the_serial_one(tmp_path):
    docs = {}
    for jobs in (1, 2):
        root = tmp_path / f"jobs{jobs}"
        docs[jobs] = latexdoc.render("paths,conv", tex_dir=root, figures_dir=root / "figures", jobs=jobs, appendix=False,
                                     handout=True, proof_seconds=5)
        drawn = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.pdf"))
        assert drawn == ["figures/conv/conv_receptive_field.pdf", "figures/paths/fig3-left-power-curves.pdf"], jobs
    assert docs[1] == docs[2] and docs[2].count("\\includegraphics") == 2


def test_a_figure_link_names_the_folder_the_figures_will_be_moved_to(tmp_path):
    doc = latexdoc.render("conv", tex_dir=tmp_path, figures_dir=tmp_path / ".staging", figures_link=tmp_path / "n-figures",
                          appendix=False, handout=True)
    assert "{n-figures/conv/conv_receptive_field.pdf}" in doc and ".staging" not in doc


# --------------------------------------------------------------------------- captions against the data

def test_power_curves_caption():
    """'rho raised to n: below 1 it vanishes geometrically, above 1 it explodes; on the log scale straight lines'; the
    letter is the text's rho (the bound of a path product), not an undefined r."""
    from seqgrad.numeric import figures_paths as fp

    caption = figure_sets()["paths"].CAPTIONS["fig3-left-power-curves"]
    assert "`rho`" in caption and "`r`" not in caption
    ax = _ax()
    lines = fp.plot_power_curves(ax)
    for line in lines:
        rho = float(re.search(r"\\rho = ([\d.]+)", line.get_label())[1])
        n, y = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
        slope, intercept = np.polyfit(n, np.log(y), 1)
        assert np.allclose(np.log(y), slope * n + intercept, atol=1e-12)  # a straight line on the log scale
        assert (y[-1] < 1e-2) if rho < 1 else (y[-1] > 1e2) if rho > 1 else np.allclose(y, 1)
    assert ax.get_yscale() == "log" and "rho" in ax.get_ylabel()


def test_gradient_flow_caption():
    """The numbers of the gradient-flow caption: default gates near 0.5 lose the gradient (< 1e-12 after 59 steps);
    a keeping gate at bias + 3 near 0.95; its carry product near 0.95 a step, about 0.05 after 59 steps, the
    gradient following it (within a factor 2)."""
    from seqgrad.numeric import figures_paths as fp

    # the numbers are said in the text that points to the figure (its READINGS), the caption says what to see
    caption = figure_sets()["paths"].READINGS["gradient-flow-rnn-gru-lstm"]
    lines = {a.get_label(): np.asarray(a.get_ydata(), float) for a in fp.plot_gradient_flow(Figure().subplots(1, 2))}
    far = {label: y[0] for label, y in lines.items()}  # the first point is the farthest step back
    distance = len(next(iter(lines.values()))) - 1
    assert f"after {distance} steps" in caption and f"twelve orders of magnitude over {distance} steps" in caption
    for cell in ("RNN", "GRU", "LSTM"):
        assert far[f"{cell}, default init: " + r"$\|\partial \mathcal{L}/\partial \mathbf{h}_\tau\|_2$"] < 1e-12
    for cell, gate in (("GRU", "u"), ("LSTM", "f")):
        carry = far[f"{cell}, ${gate}$'s bias raised by 3: mean " + rf"$\prod {gate}_t$"]
        grad = far[f"{cell}, ${gate}$'s bias raised by 3: " + r"$\|\partial \mathcal{L}/\partial \mathbf{h}_\tau\|_2$"]
        assert 0.03 < carry < 0.08 and 0.9 < carry ** (1 / distance) < 0.97  # "about 0.05", "near 0.95 a step"
        assert 0.5 < grad / carry < 2  # the gradient ends near the carry product
    near = lambda cell, gate: lines[f"{cell}, ${gate}$'s bias raised by 3: " + r"$\|\partial \mathcal{L}/\partial \mathbf{h}_\tau\|_2$"]  # noqa: E731
    carry = lambda cell, gate: lines[f"{cell}, ${gate}$'s bias raised by 3: mean " + rf"$\prod {gate}_t$"]  # noqa: E731
    # "the GRU's gradient follows its carry product all the way" (within a factor 2 at every distance)
    assert np.all((0.5 < near("GRU", "u") / carry("GRU", "u")) & (near("GRU", "u") / carry("GRU", "u") < 2))
    # "the LSTM's falls about tenfold in its first step back ... and from there on stays between 0.02 and 0.12"
    lstm = near("LSTM", "f")  # farthest first: lstm[-1] is distance 0, lstm[-2] distance 1
    assert 5 < lstm[-1] / lstm[-2] < 20 and 0.02 < lstm[:-1].min() and lstm[:-1].max() < 0.12
    assert all(y[-1] == pytest.approx(1.0) for y in lines.values())  # "at distance 0 every curve is 1"
    assert "falls about tenfold in its first step back" in caption and "stays between 0.02 and 0.12" in caption
    assert "With the raised bias the GRU's gradient follows its carry product" in caption
    said = figure_sets()["paths"].CAPTIONS["gradient-flow-rnn-gru-lstm"]  # the caption says the same, shorter
    assert "the GRU's gradient follows it, the LSTM's drops tenfold at once, then changes little" in said
    assert 1 / (1 + np.exp(-3)) == pytest.approx(0.95, abs=0.01)  # "gates near 0.95": sigmoid(3)


def test_positional_caption():
    from seqgrad.numeric.positions import sinusoidal

    caption = figure_sets()["positional"].CAPTIONS["positional_encoding_d128"]
    P = sinusoidal(100, 128).numpy()
    signs = np.sign(P[:, 0])  # sin(pos): 0 at pos = 0, which is no sign, so no change there
    signs = signs[signs != 0]
    changes = int((signs[1:] != signs[:-1]).sum())  # crossings: successive nonzero samples of opposite sign
    assert changes == int(99 // np.pi) == 31  # the zeros k pi, k = 1 ... 31, inside (0, 99]
    assert f"coordinate 0 changes sign {changes} times" in caption
    assert np.ptp(P[:, -2:], axis=0).max() < 0.02 < np.ptp(P[:, :2], axis=0).min()  # "the last ones hardly change"
    wavelength = 2 * np.pi * 10000 ** (126 / 128)
    assert f"about {round(wavelength, -3):.0f} positions" in caption


def test_attention_weights_caption():
    """'Every row sums to 1, and no weight is near 0 or 1: every weight lies within a factor 3 of the uniform 1/7';
    the colour scale's range as printed."""
    from seqgrad.numeric import course

    caption = figure_sets()["encoder"].CAPTIONS["fig10_A"]
    A = course.trace("attention_on_H0")["head1.A"].detach().numpy()
    assert A.shape == (7, 7) and np.allclose(A.sum(axis=1), 1)
    assert (A > 1 / 7 / 3).all() and (A < 3 / 7).all()
    assert f"({A.min():.2g} to {A.max():.3g})" in caption
    assert "within a factor 3 of the uniform `1/7`" in caption and "far from" not in caption


def test_cross_attention_caption():
    """'Each row sums to 1', for every head and every generated token."""
    from seqgrad.numeric.decoder import lesson_example

    model, sv, _, _ = lesson_example()
    gen = model.generate(sv.encode("I love ML"), 10, attention=True)
    assert "each row sums to 1" in figure_sets()["decoder"].CAPTIONS["decoder_cross_attention"]
    for step in gen.steps:
        assert np.allclose(step.cross_attention.numpy().sum(axis=-1), 1)
    # "In head 2 each row from 1 on peaks on the source word of the word it reads ...; head 1 does so only in row 2"
    caption = figure_sets()["decoder"].CAPTIONS["decoder_cross_attention"]
    assert "In head 2 each row from 1 on peaks" in caption and "head 1 does so only in row 2" in caption
    read_source = {1: 0, 2: 1, 3: 2}  # row t reads the word written at t - 1, the translation of source word t - 1
    peaks = {(h, t): int(np.argmax(gen.steps[t].cross_attention.numpy()[h])) for h in (0, 1) for t in read_source}
    assert all(peaks[(1, t)] == s for t, s in read_source.items())
    assert [t for t, s in read_source.items() if peaks[(0, t)] == s] == [2]
    assert "Cyrillic" in caption  # the figure's labels are Cyrillic; the caption transliterates them


def test_cross_attention_caption_states_the_training():
    """A lecturer: "a small trained model" with no training details. The text by the figure states the model's sizes, the data
    (the one pair), the objective, the optimiser, its steps and learning rate, the seed and the loss before and after,
    each as numeric.decoder trains it."""
    import inspect

    from seqgrad.numeric import decoder
    from seqgrad.numeric.optim import Adam

    # in the text after the pointer to the figure, not the caption (a second lecturer: a 12-line caption with the
    # training recipe); the caption says where it is
    assert "(the text gives its training)" in figure_sets()["decoder"].CAPTIONS["decoder_cross_attention"]
    caption = figure_sets()["decoder"].READINGS["decoder_cross_attention"]
    kw = decoder.lesson_example.__kwdefaults__
    sizes = decoder.LESSON_SIZES
    assert (f"one pre-norm block in the encoder and one in the decoder, width {sizes['D']}, {sizes['n_heads']} heads, "
            f"MLP width {sizes['F_width']}") in caption and sizes["n_blocks"] == 1
    assert f"{kw['steps']} steps of Adam with learning rate {decoder.LESSON_LR}" in caption
    # the seed is the program's, not the reader's (a lecturer: a caption that names a seed reads like a log)
    assert "seed" not in caption and "trained on this one sentence pair alone, by teacher forcing" in caption
    # "the mean cross-entropy of each next word": the loss it trains on, at every position one target (v = 1)
    import torch

    from seqgrad.numeric.heads import valid_target_loss

    assert "valid_target_loss(" in inspect.getsource(decoder.EncoderDecoder.teacher_forcing_loss)
    logits, y = torch.randn(5, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(3)), torch.arange(5)
    assert float(valid_target_loss(logits, y, torch.ones(5))) == pytest.approx(float(torch.nn.functional.cross_entropy(logits, y)))
    assert "mean cross-entropy" in caption
    source = inspect.getsource(decoder._lesson_example.__wrapped__ if hasattr(decoder._lesson_example, "__wrapped__")
                               else decoder._lesson_example)
    assert "Adam(" in source and "lr=LESSON_LR" in source and "*LESSON_SIZES.values()" in source
    assert Adam.__module__.endswith("numeric.optim")
    model, _, _, losses = decoder.lesson_example()
    assert len(losses) == kw["steps"]
    assert f"the loss falls from {losses[0]:.2f} to {losses[-1]:.1g}" in caption
    assert all(b.norm_first for b in model.encoder.blocks + model.decoder.blocks)
    assert (len(model.encoder.blocks), len(model.decoder.blocks)) == (1, 1)


def test_receptive_field_caption():
    """'The black bar spans the receptive field of that output: 7 input positions ..., the values of rf_3', the
    numbers the formula gives, and the receptive field drawn (measured) is the formula's at every depth; the caption
    says the mathematics, not 'as measured' (issue 25, prose review: verification is a footnote)."""
    from seqgrad.crosscheck.figures import conv
    from seqgrad.derive.conv import receptive_field

    rf = [int(receptive_field([3, 3, 3], strides)) for strides in ([1, 1, 1], [2, 2, 1])]
    caption = conv.CAPTIONS["conv_receptive_field"]
    assert (f"{rf[0]} input positions at strides 1, 1, 1 and {rf[1]} at strides 2, 2, 1, the values of `rf_3` at "
            "kernel 3") in caption
    assert "measured" not in caption
    for strides in ([1, 1, 1], [2, 2, 1]):
        reads = conv.influence([3, 3, 3], strides)
        for layer in range(1, 4):  # the input positions under one unit of layer `layer`
            positions = conv.influence([3] * layer, strides[:layer])[0]
            assert positions.max() - positions.min() + 1 == int(receptive_field([3] * layer, strides[:layer]))
        assert reads[0].max() - reads[0].min() + 1 == int(receptive_field([3, 3, 3], strides))


def test_contributions_caption():
    """'Most of it comes from journey, miles and begins': the three largest weighted values of the query begins,
    together more than half of all of them (in norm)."""
    from seqgrad.numeric import course

    caption = figure_sets()["encoder"].CAPTIONS["fig08_begins_contributions"]
    C = course.trace("attention_on_H0")["head1.contrib"][6].detach().numpy()
    tokens = course.TEXT.split()
    norms = np.linalg.norm(C, axis=1)
    largest = sorted(np.argsort(norms)[-3:])
    assert [tokens[i] for i in largest] == ["journey", "miles", "begins"]
    assert "in norm, are those of “journey”, “miles” and “begins”" in caption and norms[largest].sum() > norms.sum() / 2


# --------------------------------------------------------------------------- what a reader sees in a figure

def test_no_caption_reads_like_code():
    """Captions are words and typeset formulas: no identifier with an underscore, option, dtype or call outside the
    backquoted formulas (``float64`` is 'double precision' in words)."""
    for name, module in figure_sets().items():
        for stem, caption in module.CAPTIONS.items():
            plain = re.sub(r"`[^`]*`", "", caption)
            assert not re.findall(r"\w*_\w*|--\w+|float\d+|\w+\(|\[", plain), (name, stem)


def _drawn(monkeypatch, set_name: str, stem: str, tmp_path):
    """The matplotlib figure that set ``set_name`` saves for ``stem``, drawn."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from seqgrad import atomic

    figures, save = [], atomic.save_figure
    def capture(fig, path, **kw):
        figures.append(fig)
        return save(fig, path, **kw)
    module = figure_sets()[set_name]
    monkeypatch.setattr(atomic, "save_figure", capture)
    if hasattr(module, "save_figure"):  # imported at the top of the set's module
        monkeypatch.setattr(module, "save_figure", capture)
    figure_sets()[set_name].write(tmp_path, "pdf", "cpu", stems=[stem])
    (fig,) = figures
    FigureCanvasAgg(fig).draw()
    return fig


@pytest.mark.parametrize("figure", sorted({f for figs in notes.HANDOUT.values() for f in figs}))
def test_a_handout_figure_has_no_label_under_another_panel_and_no_code_in_its_labels(figure, monkeypatch, tmp_path):
    """No title or axis label of a panel runs under another panel or its colour bar (the decoder's x label ran under
    the colour bar), and the labels are words and formulas, not code (``kernels [3, 3, 3]``, ``float64``)."""
    set_name, stem = figure.split("/")
    fig = _drawn(monkeypatch, set_name, stem, tmp_path)
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        for label in (ax.title, ax.xaxis.label, ax.yaxis.label):
            if not label.get_visible() or not label.get_text().strip():
                continue
            box = label.get_window_extent(renderer)
            for other in fig.axes:
                if other is not ax and not (other.bbox.bounds == ax.bbox.bounds):
                    assert not box.overlaps(other.get_window_extent(renderer)), (figure, label.get_text())
            plain = re.sub(r"\$[^$]*\$", "", label.get_text())
            assert not re.search(r"\[|float\d+|\w_\w", plain), (figure, label.get_text())
        ticks = [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels()]
        for tick in ticks:  # 'sum = o_6', '0..3 -> <end>' read as code
            assert not re.search(r"\w_\w|->|\.\.", re.sub(r"\$[^$]*\$", "", tick)), (figure, tick)


@pytest.mark.parametrize("stem", ["fig09_S", "fig10_A", "fig11_A_causal", "fig08_begins_contributions"])
def test_the_numbers_of_neighbouring_cells_do_not_touch(stem, monkeypatch, tmp_path):
    """Issue 25, figure review, item 4: drawn smaller, so that two share a page, the cells' numbers ran into their
    neighbours' ("0.06790.0678"); the contributions' square cells too ("0.03710.07410.0741", a later review)."""
    fig = _drawn(monkeypatch, "encoder", stem, tmp_path)
    renderer = fig.canvas.get_renderer()
    [ax] = [a for a in fig.axes if a.texts]
    boxes = [t.get_window_extent(renderer) for t in ax.texts]
    assert len(boxes) >= 24  # 7 x 7 cells, or 7 x 3 and their 3 sums
    touching = [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if a.overlaps(b)]
    assert touching == []


#: every figure that writes numbers in the cells of a heatmap: the encoder's scores, weights (plain and causal) and
#: weighted values of head 1 on H_0, and the decoder's cross-attention weights
HEATMAPS = [("encoder", "fig09_S"), ("encoder", "fig10_A"), ("encoder", "fig11_A_causal"),
            ("encoder", "fig08_begins_contributions"), ("decoder", "decoder_cross_attention")]


def _contrast(a, b) -> float:
    """The WCAG 2 contrast ratio of two colours."""
    from matplotlib.colors import to_rgb

    from seqgrad.crosscheck.figures import luminance

    hi, lo = sorted((luminance(to_rgb(a)), luminance(to_rgb(b))), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.mark.parametrize("set_name, stem", HEATMAPS)
def test_the_numbers_in_heatmap_cells_are_legible_in_one_format_and_contrast_with_their_cell(set_name, stem,
                                                                                             monkeypatch, tmp_path):
    """A lecturer's review of the rendered notes: the cell numbers of the attention heatmaps were tiny and in mixed
    digits (0.188, 0.0679, -0.00776, 1.34).  Every cell number is at least 7 pt at the size the notes include the
    figure (its drawn size times the inclusion scale the notes compute from its width), all of a figure's cell
    numbers have one format (a fixed number of decimals, a true minus sign), and each is black or white, whichever
    contrasts with its cell (WCAG ratio at least 4.5; white on a mid-green 0.527 of the decoder's was 3.6)."""
    from seqgrad.crosscheck.latex_parts import figure_scale

    fig = _drawn(monkeypatch, set_name, stem, tmp_path)
    scale = figure_scale(tmp_path / f"{stem}.pdf")
    panels = [ax for ax in fig.axes if ax.texts]
    assert panels
    formats = set()
    for ax in panels:
        image = ax.images[0]
        grid = np.asarray(image.get_array().filled(np.nan) if np.ma.isMaskedArray(image.get_array())
                          else image.get_array(), float)
        for text in ax.texts:
            label = text.get_text()
            assert text.get_fontsize() * scale >= 7.0, (stem, label, text.get_fontsize(), scale)
            found = re.fullmatch(r"\u2212?\d+\.(\d+)", label)
            assert found, (stem, label)  # digits and a decimal point, a true minus sign, no hyphen
            formats.add(len(found[1]))
            j, i = (int(round(c)) for c in text.get_position())
            assert abs(float(label.replace("\u2212", "-")) - grid[i, j]) <= 0.51 * 10.0 ** -len(found[1])
            assert _contrast(text.get_color(), image.cmap(image.norm(grid[i, j]))) >= 4.5, (stem, label)
    assert len(formats) == 1, (stem, formats)


@pytest.mark.parametrize("stem", ["fig09_S", "fig10_A", "fig11_A_causal"])
def test_an_attention_colour_bar_names_its_quantity_and_the_caption_says_once_that_the_scale_is_fitted(
        stem, monkeypatch, tmp_path):
    """The colour bars had a second line, "scale fitted to the data: -0.839 to 1.34", beside the range the bar shows:
    the bar's label names the quantity (score S_tj, weight A_tj), and the caption says once, in words, that the
    colour scale is fitted to the values it draws."""
    fig = _drawn(monkeypatch, "encoder", stem, tmp_path)
    [bar] = [ax for ax in fig.axes if not ax.texts and ax.get_ylabel()]
    label = bar.get_ylabel()
    assert "\n" not in label and "fitted" not in label and re.match(r"(score \$S_\{tj\}\$|weight \$A_\{tj\}\$)", label)
    caption = figure_sets()["encoder"].CAPTIONS[stem]
    assert caption.count("fitted") == 1 and "colour scale is fitted to the" in caption


def test_the_gradient_flow_plot_asks_for_its_two_panels():
    """One Axes (as the notebook passed before the figure had two panels) gets one error naming the argument."""
    from seqgrad.numeric import figures_paths as fp

    with pytest.raises(ValueError, match=r"axes: a pair of matplotlib Axes \(left, right\)"):
        fp.plot_gradient_flow(Figure().subplots())


def test_the_causal_figure_says_it_illustrates_the_decoders_mask_on_the_encoders_example():
    """A lecturer: the decoder's causal mask shown on the encoder's H_0 confuses students unless the caption says
    it is an illustration of the mask on the encoder example's scores."""
    caption = figure_sets()["encoder"].CAPTIONS["fig11_A_causal"]
    assert caption.startswith("What the decoder's causal mask does, shown on the encoder example's head 1 on `H_0`")
