"""Issue 25 (second review of the handout, sections 1-10): the vector RNN's output layer is W_y, b_y; floats stay in
their sections; the decoder figure's rows name the token written.  Read from the handout as the command writes it."""
import re

import pytest

from seqgrad.crosscheck.cli import main


@pytest.fixture(scope="module")
def handout(standalone_notes):
    return standalone_notes.read_text()


def section(tex: str, title: str) -> str:
    """The text of the section called ``title``, up to the next section (or the appendix)."""
    start = tex.index("\\section{" + title)
    ends = [i for i in (tex.find("\\section{", start + 1), tex.find("\\appendix", start)) if i > 0]
    return tex[start:min(ends)]


def test_vector_rnn_output_layer_is_w_y(handout):
    rnn = section(handout, "Recurrent networks")
    assert r"\mathbf{W}_{o}" not in rnn and r"\mathbf{b}_{o}" not in rnn
    assert r"\mathbf{h}_{t} \mathbf{W}_{y}^{\top} + \mathbf{b}_{y}" in rnn
    assert r"\partial \mathbf{W}_{y}}" in rnn and r"\partial \mathbf{b}_{y}}" in rnn


def test_notation_table_names_the_output_weights_and_keeps_the_other_o(handout):
    notation = section(handout, "Notation")
    assert re.search(r"^\$\\mathbf\{W\}_\{y\}\$ & output weights of the vector cell", notation, re.M)
    assert "\n$W_{\\mathrm{out}}$ & number of output columns" in notation  # the convolution's output width: W_out
    assert "+ b_{o}" in section(handout, "Gated cells")  # and the LSTM's output-gate bias b_o


@pytest.mark.slow
@pytest.mark.tex
def test_every_figure_is_printed_inside_its_own_section(standalone_notes, standalone_pdf):
    """Compiled, each figure's caption is read (top to bottom, page by page) after its section's heading and before
    the next section's: a figure that floated past the next heading (Figure 3 into Section 6, 5 into 9, 6 into 10)
    is printed in the wrong section."""
    import shutil
    import subprocess

    from seqgrad.crosscheck import latexdoc

    if not (shutil.which("pdflatex") and shutil.which("pdftotext")):
        pytest.skip("no TeX engine/poppler")
    tex = standalone_notes
    source = tex.read_text()
    body = source[:source.index("\\appendix")]
    titles = re.findall(r"\\section\{([^}]*)\}", body)
    owner = {}  # figure number -> the index of the section whose source holds it
    for i, part in enumerate(re.split(r"\\section\{[^}]*\}", body)[1:]):
        for _ in re.findall(r"\\begin\{figure\}", part):
            owner[len(owner) + 1] = i
    assert len(owner) >= 7
    pdf = standalone_pdf
    pages = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True).stdout.split("\f")
    contents = max(i for i, page in enumerate(pages) if re.search(r"^\s*Contents\s*$", page, re.M))
    text = "\f".join(pages[contents + 1:])  # after the contents, which list the headings too
    starts, at = [], 0  # where each section's heading is printed
    for number, title in enumerate(titles, 1):
        heading = re.compile(rf"^\s*{number}\s+{re.escape(title[:20])}", re.M)
        at = heading.search(text, at).start()
        starts.append(at)
    starts.append(len(text))
    for number, section in owner.items():
        caption = text.index(f"Figure {number}:")
        assert starts[section] < caption < starts[section + 1], (number, titles[section])


def test_the_first_section_starts_below_the_notation_table(handout):
    """The notation table ended with a forced page break: its last page stayed three quarters empty."""
    between = handout[handout.index("\\end{longtable}"):handout.index("\\section{Recurrent")]
    assert "\\clearpage" not in between and "\\newpage" not in between


def test_decoder_rows_name_the_token_read_and_the_token_written():
    """Row t of the cross-attention figure is the query of position t: its input is the token written at step t - 1
    (<start> at 0), and it writes gen.steps[t].token. The old labels counted rows from 1 and named only the token
    written, under a caption that said the row's peak was the word read to write it; head 2 peaks one word behind."""
    import numpy as np

    from seqgrad.crosscheck.figures import decoder
    from seqgrad.numeric.decoder import SOURCE_WORDS, TARGET_WORDS, lesson_example

    model, sv, tv, _ = lesson_example()
    gen = model.generate(sv.encode("I love ML"), 10, attention=True)
    labels = decoder.step_labels(gen, tv.words)
    assert labels[:4] == ["0: <start> \u2192 \u044f", "1: \u044f \u2192 \u043b\u044e\u0431\u043b\u044e",
                          "2: \u043b\u044e\u0431\u043b\u044e \u2192 \u043c\u043e", "3: \u043c\u043e \u2192 <end>"]
    # the caption's claim: some row peaks on the source word of the token it reads, not of the token it writes
    aligned = {TARGET_WORDS.index(w): SOURCE_WORDS.index(s) for w, s in zip(TARGET_WORDS[2:], SOURCE_WORDS)}
    behind = [(h, s.t) for s in gen.steps for h, row in enumerate(s.cross_attention.numpy())
              if gen.ids[s.t] in aligned and s.token in aligned and int(np.argmax(row)) == aligned[gen.ids[s.t]]]
    assert behind, "no row peaks on the source word of its input"
    caption = decoder.CAPTIONS["decoder_cross_attention"]
    assert "one word behind the word it writes" in caption and "positions from 0" in caption
    assert "reads to write that token" not in caption


def test_decoder_cells_have_one_format(tmp_path):
    from matplotlib.figure import Figure
    import numpy as np

    from seqgrad.crosscheck.figures import decoder

    fig = Figure()
    art = decoder.plot_cross_attention(fig.subplots(), np.array([[0.34, 0.0653, 0.5947], [0.00232, 0.017, 0.98068]]),
                                       ["i", "love", "ml"], ["0: a", "1: b"])
    assert [t.get_text() for t in art["texts"]] == ["0.340", "0.065", "0.595", "0.002", "0.017", "0.981"]


def test_the_title_page_has_no_program_as_author(handout):
    preamble = handout[:handout.index("\\begin{document}")]
    assert "\\author{}" in preamble and "\\date{}" in preamble and "seqgrad" not in preamble.split("\\title")[1]
    assert "generated by seqgrad" not in handout


def test_no_program_phrasing_in_the_text(handout):
    body = handout[:handout.index("\\appendix")]
    assert "\\text{carry}" not in body and "\\text{gates and candidate}" not in body  # words as left-hand sides
    assert "\\frac{\\partial h_{1}}{\\partial h_{0}} - u_{1} &=" in body  # the rest after the carry, as a formula
    for phrase in ("block program", "lesson task", "second evidence", "measured extent"):
        assert phrase not in body, phrase
    header = re.search(r"\\toprule\n(statement &[^\n]*)\\\\", section(handout, "Positional encoding")).group(1)
    assert all(cell.strip() for cell in header.split("&")) and "verdict" not in header


def test_a_footnote_says_a_scope_once(handout):
    """'Proved for every T, d, d_k, d_v >= 1; for every T >= 1.': the second scope is inside the first."""
    from seqgrad.crosscheck.notes import implied_scopes

    assert implied_scopes(["all T, d, d_k, d_v >= 1", "all T >= 1"]) == {"all T >= 1"}
    assert implied_scopes(["all T >= 1", "all d >= 1"]) == set()
    assert "\\geq 1$; for every $T \\geq 1$" not in handout


def test_the_receptive_field_title_is_a_sentence():
    from matplotlib.figure import Figure
    import numpy as np

    from seqgrad.crosscheck.figures import conv

    ax = Figure().subplots()
    kernels, strides = [3, 3, 3], [1, 1, 1]
    conv.plot_receptive_field(ax, conv.influence(kernels, strides), kernels, strides, 7)
    assert ax.get_title() == "kernels 3, 3, 3, strides 1, 1, 1\nreceptive field 7"  # no check printed in the picture
    with pytest.raises(ValueError, match="is 7 input positions, the formula gives 8"):  # a formula that disagrees
        conv.plot_receptive_field(Figure().subplots(), conv.influence(kernels, strides), kernels, strides, 8)


def test_layernorm_jacobian_names_the_row_it_differentiates(handout):
    """The row statistics use i for the row and j for a feature; the Jacobian's i, j are two features of one row,
    with s and x_j undefined: the text now fixes a row t (a token's; r is the reset gate) and defines x, x_j, s and
    xhat_i from it."""
    residual = section(handout, "LayerNorm")
    start = residual.index(r"\frac{\partial}{\partial {x}_{j}}")
    before = residual[:start]
    lead = before[before.rindex("\\end{align*}"):]  # the words between the row statistics and the Jacobian
    assert "row $t$" in lead and r"${x}_{j} = {X}_{t,j}$" in lead and "$s_{t}$ for its standard deviation" in lead
    assert r"${\hat{x}}_{i} = {\hat{X}}_{t,i}$" in lead and "$i$ and $j$ both index features" in lead
    assert r"\frac{{\gamma}_{i}}{s_{t}}" in residual[start:]  # the row's deviation by its name, s_t


def test_gradient_flow_figure_labels_both_kinds_and_clips_nothing():
    """Figure 2: the y label covered only the gradient (solid), not the carry products (dashed); the axis stopped at
    the machine epsilon and cut the default GRU's carry product at step ~53; the raised-bias curves that lie on one
    another near 1 were told apart by colour and dash alone."""
    from matplotlib.figure import Figure
    import numpy as np

    from seqgrad.crosscheck.figures import paths as figure_paths
    from seqgrad.numeric import figures_paths as fp

    axes = Figure().subplots(1, 2)
    lines = fp.plot_gradient_flow(axes)
    assert "solid" in axes[0].get_ylabel() and "dashed" in axes[0].get_ylabel()
    assert all(np.min(line.get_ydata()) >= line.axes.get_ylim()[0] for line in lines)
    assert min(np.min(line.get_ydata()) for line in lines) < np.finfo(np.float64).eps  # what the caption says
    raised = [line for line in lines if "raised by 3" in line.get_label()]
    assert len(raised) == 4 and len({(line.get_marker(), line.get_linestyle(), line.get_color()) for line in raised}) == 4
    assert all(line.get_marker() not in (None, "None", "") for line in raised)
    caption = figure_paths.CAPTIONS["gradient-flow-rnn-gru-lstm"] + figure_paths.READINGS["gradient-flow-rnn-gru-lstm"]
    assert "The axis stops at the machine epsilon" not in caption and "The axis spans" not in caption  # no plotting notes (review A item 16)


def test_the_receptive_field_titles_fit_the_figure():
    """The one-line titles ran past the figure's edge at the size it is drawn ("... measured and by the fo")."""
    from matplotlib.figure import Figure

    from seqgrad.crosscheck.figures import conv

    fig = Figure(figsize=(6.5, 4.6), layout="constrained")  # as conv.write draws it
    for ax, strides in zip(fig.subplots(2, 1), ([1, 1, 1], [2, 2, 1])):
        conv.plot_receptive_field(ax, conv.influence([3, 3, 3], strides), [3, 3, 3], strides, 7 if strides[0] == 1 else 15)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    for ax in fig.axes:
        box = ax.title.get_window_extent(renderer)
        assert box.x0 >= 0 and box.x1 <= fig.bbox.x1, ax.get_title()


# -- issue 25, items 12-14: one notation in the body; every symbol of the body in the notation table ----------------

from test_notes_symbols import math_runs  # noqa: E402

#: a symbol as the notes print it: an operator name, a bold letter (its stem), each with the word that may follow it
#: as its subscript (B_mlp, Y_att, U_self, LN_cross: a symbol of its own, not its stem's), an accented plain letter
#: (the LSTM's candidate c~), a letter with a word as its subscript
_ATOM = re.compile(r"\\operatorname\{(?P<op>[^{}]+)\}(?:_\{\\mathrm\{(?P<opword>[^{}]+)\}\})?"
                   r"|\\(?:mathbf|boldsymbol)\{(?P<bold>\\?[A-Za-z0-9]+|\\(?:hat|bar|tilde)\{[A-Za-z]\})\}"
                   r"(?:_\{\\mathrm\{(?P<boldword>[^{}]+)\}\})?"
                   r"|(?P<accent>\\(?:widetilde|widehat|tilde|hat|bar)\{[A-Za-z]\})"
                   # an entry, {X}_{i,j} or (X_{in})_{i,j}, is its matrix's: not a symbol of its own
                   r"|(?<![\\A-Za-z{])(?P<word>[A-Za-z]_\{\\mathrm\{[^{}]+\}\})(?!\)_\{|\\right\)_\{)")


def _atoms(runs) -> set[tuple[str, str]]:
    found = set()
    for m in (m for run in runs for m in _ATOM.finditer(run)):
        g = m.groupdict()
        for kind in ("op", "bold"):
            if g[kind]:
                found.add((kind, g[kind] + ("_" + g[kind + "word"] if g[kind + "word"] else "")))
        found |= {(kind, g[kind]) for kind in ("accent", "word") if g[kind]}
    return found


def _stem(atom: tuple[str, str]) -> tuple[str, str]:
    return atom[0], atom[1].split("_")[0]


def _defined(rows) -> set[tuple[str, str]]:
    """The symbols the notation table defines: each row's symbol, and the siblings its meaning names (the symbol with
    another word as its subscript: LN's row names LN_att, LN_mlp; Y_att's names Y_mlp), never another letter's
    symbol that a meaning mentions in passing. An accented letter plain in the body is an entry of its bold matrix."""
    defined = set()
    for symbol, meaning, *_ in rows:
        own = _atoms([symbol])
        defined |= own | {a for a in _atoms(re.findall(r"\$([^$]*)\$", meaning)) if _stem(a) in {_stem(o) for o in own}}
    return defined | {("accent", v) for kind, v in defined if kind == "bold" and "{" in v}


def _notation_table(tex: str) -> tuple[list[list[str]], str]:
    """The rows (symbol, meaning, shape) of the notation table and the body after it, up to the appendix."""
    start = tex.index("\\begin{longtable}", tex.index("\\section{Notation}"))
    end = tex.index("\\end{longtable}", start)
    rows = [line.rstrip(" \\").split(" & ") for line in tex[start:end].splitlines() if line.count(" & ") == 2]
    return rows[1:], tex[end:].split("\\appendix")[0]  # the first row is the head


def test_every_symbol_the_body_prints_is_in_the_notation_table(handout):
    rows, body = _notation_table(handout)
    table = _defined(rows)
    missing = _atoms(math_runs(body)) - table
    assert not missing, f"printed in the body, not in the notation table: {sorted(missing)}"
    assert ("op", "softmax") in table and ("bold", "W") in table  # the reader of the test reads the table


def test_the_reader_of_the_symbols_tells_a_subscripted_matrix_from_its_stem():
    """B_mlp is not B, c~ is a symbol; a meaning defines the siblings of its row's symbol, not another letter's."""
    assert _atoms([r"\mathbf{B}_{\mathrm{mlp}} = \mathbf{B} + \widetilde{c}_{t}"]) == {
        ("bold", "B_mlp"), ("bold", "B"), ("accent", r"\widetilde{c}")}
    rows = [[r"$\mathbf{Y}_{\mathrm{att}}$", r"of $\mathbf{Y}_{\mathrm{mlp}}$ and $\mathbf{Z}_{\mathrm{mlp}}$", "$1$"]]
    assert _defined(rows) == {("bold", "Y_att"), ("bold", "Y_mlp")}


@pytest.mark.parametrize("symbol", [
    "$d_{x}$", "$d_{h}$", "$d_{k}$", "$d_{v}$", r"$T_{\mathrm{src}}$", r"$\mathbf{b}_{h}$",
    r"$\mathbf{b}_{y}$", r"$\mathbf{b}_{1}$", r"$\mathbf{b}_{2}$", "$g^{c}_{t}$", "$z_{n,t}$",
    r"$\operatorname{PE}{(\mathrm{pos})}$", r"$\operatorname{LN}{(\mathbf{X})}$", r"$\operatorname{MLP}{(\mathbf{X})}$",
    r"$\operatorname{MHA}{(\mathbf{X})}$", r"$H_{\mathrm{in}}$", r"$W_{\mathrm{out}}$", r"$\eta_{t}$", r"${\nu}_{i,j}$",
])
def test_a_symbol_the_reviewer_missed_is_defined_once_with_its_shape(handout, symbol):
    rows, body = _notation_table(handout)
    found = [row for row in rows if row[0] == symbol]
    assert len(found) == 1 and found[0][2].startswith("$") and found[0][1]
    assert symbol.strip("$").split("{(")[0] in body  # used in the body


def test_the_widths_of_a_cell_are_defined_before_they_are_used(handout):
    rows, _ = _notation_table(handout)
    symbols = [row[0] for row in rows]
    first_use = next(i for i, row in enumerate(rows) if "d_{x}" in row[1] + row[2])
    assert symbols.index("$d_{x}$") < first_use and symbols.index("$d_{y}$") < first_use
    assert len(symbols) == len(set(symbols))  # every symbol once


def test_one_name_and_one_letter_per_quantity_in_the_body(handout):
    _, body = _notation_table(handout)
    runs = "\n".join(math_runs(body))
    assert r"d_{\mathrm{model}}" not in runs and r"d/n_{\mathrm{head}}" in runs  # the model width is d
    assert r"\mathbf{G}" not in runs and r"\mathrm{d}\mathbf{O}" in runs  # the gradient of O is dO, as every gradient
    assert "H_{o}" not in runs and "W_{o}" not in runs and r"H_{\mathrm{in}}" in runs  # a convolution's sizes
    assert not re.search(r"(?<![\\A-Za-z])a_\{t\}", runs) and "{a}_{i,j}" not in runs  # a: the softmax's weights only
    assert r"\operatorname{MHA}{(\mathbf{X},\mathbf{M})}" not in runs  # a mask and a memory: not the same form
    assert r"\hat{X}}_{t,j}" in runs and "Xhat_tj" not in body and "_{ri}" not in runs  # entries with a comma
    assert r"\operatorname{PE}_{0 \ldots 3}{(\mathrm{pos} + k)} = \operatorname{PE}_{0 \ldots 3}{(\mathrm{pos})} \mathbf{R}{(k)}" in runs  # rows
    assert "as columns" not in body and "B_{i}" not in runs and r"\operatorname{PE}_{4}" not in runs


def test_words_in_subscripts_are_upright_everywhere(handout):
    for word in ("model", "head", "ff", "LN", "src", "seq", "self", "cross"):
        assert f"_{{{word}}}" not in handout, word
    assert r"n_{\mathrm{head}}" in handout and r"\mathbf{J}_{\mathrm{LN}}" in handout
    assert r"\operatorname{MHA}_{\mathrm{self}}" in handout


def test_the_body_has_no_program_words(handout):
    _, body = _notation_table(handout)
    body = body.replace("\\seqgradcyr{", "\\cyr{")  # the macro that sets Russian (the reference list): not a word shown
    for word in ("seqgrad", "torch.nn", "SymPy", "float32", "normalise"):
        assert word not in body, word
    assert "\\subsection{Cross-attention}" in body and "\\paragraph{Cross-attention" not in body
    assert "\\section{The Transformer encoder block}" in handout and "token embeddings" in handout
    assert "\n\nand with every" not in body
