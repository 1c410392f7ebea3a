"""Issue 25 (second review of the handout, sections 1-10): the vector RNN's output layer is W_y, b_y; floats stay in
their sections; the decoder figure's rows name the token written.  Read from the handout as the command writes it."""
import re

import pytest

from seqgrad.crosscheck.cli import main


@pytest.fixture(scope="module")
def handout(tmp_path_factory):
    out = tmp_path_factory.mktemp("front") / "notes.tex"
    assert main(["latex", str(out), "--standalone", "--jobs", "1"]) == 0
    return out.read_text()


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
    assert "$W_{o}$, of output columns" in notation  # the convolution's output width is still W_o
    assert "+ b_{o}" in section(handout, "Gated cells")  # and the LSTM's output-gate bias b_o
