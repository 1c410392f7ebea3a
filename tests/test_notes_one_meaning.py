"""Issue 25, "course notes a lecturer hands out": one symbol, one meaning.  The subscripts 1 and 2 number the MLP's
two layers (W_1, W_2, as in Vaswani et al.), so the LayerNorms are named after the sublayer they feed; J names the
Jacobians, so the MLP's hidden activation has another letter; the LSTM's input gate i and the index i never meet
in one section; bold K is the keys, so the kernel side has a letter of its own.  Read from the handout as
``seqgrad latex notes.tex --standalone`` writes it."""
import re

import pytest

from test_notes_notation_clashes import formulas, part


@pytest.fixture(scope="module")
def tex(standalone_notes):
    return standalone_notes.read_text(encoding="utf-8")


#: the LayerNorm's symbols (the map, its Jacobian, its scale, shift, statistics, normalized rows and output) and a
#: residual sum, each with a numeric subscript: a number that reads as the MLP's layer 1 or 2
_NUMBERED_NORM = re.compile(r"\\operatorname\{LN\}_\{\d|\\mathrm\{LN\}\d|\\mathrm\{LN\},?\d|\\boldsymbol\{\\(?:gamma|beta)\}_\{\d"
                            r"|\\mathbf\{(?:\\hat\{x\}|s|Y|U)\}_\{\d")


def test_no_layernorm_is_numbered(tex):
    """Nowhere in the handout (body, notation table, appendix) is a LayerNorm, its parameters, statistics or output,
    or a decoder's residual sum, numbered 1, 2, 3; the MLP's W_1, W_2 keep their numbers."""
    numbered = [f for f in formulas(tex) if _NUMBERED_NORM.search(f)]
    assert numbered == []
    assert re.search(r"\\mathbf\{W\}_\{1\}", tex) and re.search(r"\\mathbf\{W\}_\{2\}", tex)


def _subscripts(text: str, pattern: str) -> set[str]:
    return set(re.findall(pattern + r"_\{\\mathrm\{([a-z]+)\}\}", text))


def test_layernorms_are_named_after_the_sublayer_they_feed(tex):
    """The encoder's two LayerNorms carry two names, the decoder's three carry three, and the residual section's
    block product and the notation table name the encoder's two as the encoder section does."""
    encoder = part(tex, "\\section{The Transformer encoder block}", "\\section{")
    decoder = part(tex, "\\section{The Transformer decoder}", "\\section{")
    in_encoder = _subscripts(encoder, r"\\boldsymbol\{\\gamma\}")
    assert len(in_encoder) == 2 and in_encoder == _subscripts(encoder, r"\\mathbf\{\\hat\{X\}\}")  # the normalized rows, X-hat
    in_decoder = _subscripts(decoder, r"\\operatorname\{LN\}")
    assert len(in_decoder) == 3
    jacobians = set(re.findall(r"\\mathbf\{J\}_\{\\mathrm\{LN\},\\mathrm\{([a-z]+)\}\}", tex))
    assert jacobians == in_encoder
    table = part(tex, "\\label{tab:notation}", "\\end{longtable}")
    assert _subscripts(table, r"\\operatorname\{LN\}") == in_encoder | in_decoder


def test_the_mlp_activation_is_not_a_jacobian_letter(tex):
    """The hidden activation of the MLP (the line that applies ReLU to Z_mlp) has a letter that no other symbol of
    the handout uses: not J, the Jacobians' letter, and nowhere without its subscript mlp."""
    encoder = part(tex, "\\section{The Transformer encoder block}", "\\section{")
    line = re.search(r"\n(\S+?)\s*&= \\max\(0, \\mathbf\{Z\}_\{\\mathrm\{mlp\}\}\)", encoder)
    assert line, "the MLP's ReLU line"
    symbol = line.group(1)
    letter = re.fullmatch(r"(\\(?:mathbf|boldsymbol)\{\\?[A-Za-z]+\})_\{\\mathrm\{mlp\}\}", symbol).group(1)
    assert letter != r"\mathbf{J}"
    others = [f for f in formulas(tex) if re.search(re.escape(letter) + r"(?!_\{\\mathrm\{mlp\}\})", f)]
    assert others == []


def _sections(tex: str) -> list[str]:
    """The handout cut at every section and subsection heading (body and appendix): the units a reader reads at once."""
    return re.split(r"\\(?:sub)?section\*?\{", tex)


#: the LSTM's input gate as the notes write it: at a step (i_t, i_1), or as a gate's index (z_{i,t}, w_{hi}, b_{i},
#: g^{z_{i}}), and the letter i where it stands as a symbol
_GATE_I = re.compile(r"(?<![A-Za-z\\])i_\{(?:t|\d+)\}|z_\{i,t\}|[wb]_\{[xh]?i\}|z_\{i\}")
_LETTER_I = re.compile(r"(?<![A-Za-z\\])i(?![A-Za-z])")


def test_the_index_i_and_the_input_gate_never_share_a_section(tex):
    """Where the LSTM's input gate i_t is written, i is nothing else; and the head index, which would share the
    encoder section with the row index i (row i is the query), is another letter, the one the notation table gives."""
    from test_notes_symbols import letters_of

    for section in _sections(tex):
        if "\\label{sec:notation}" in section:
            continue  # the table lists the gate and the index, each in a row of its own (below)
        runs = formulas(section)
        if any(_GATE_I.search(f) for f in runs):
            other = [f for f in runs if _LETTER_I.search(letters_of(_GATE_I.sub(" ", f)))]
            assert other == [], section[:60]
    assert "^{[i]}" not in tex
    table = part(tex, "\\label{tab:notation}", "\\end{longtable}")
    heads = re.search(r"a superscript in brackets names a head and its maps \(\$\\mathbf\{W\}\^\{\[(\w)\]\}_\{Q\}\$: "
                      r"head \$(\w)\$'s query map\)", table)
    assert heads and heads.group(1) == heads.group(2) != "i"
    rows = [line.split(" & ") for line in table.splitlines() if line.count(" & ") == 2]
    assert [m for s, m, _ in rows if s == "$i_{t}$"] == ["input gate of the LSTM"]
    index = [m for s, m, _ in rows if s in ("$i$", "$i, j$")]
    assert len(index) == 1 and "$i_{t}$" in index[0]  # the index, once, and told apart from the gate
    encoder = part(tex, "\\section{The Transformer encoder block}", "\\section{")
    assert f"each head ${heads.group(1)}$ has maps of its own" in encoder


def test_the_kernel_side_is_not_the_keys_letter(tex):
    """Bold K is the keys; the side of a convolution kernel (and of a pooling window) has a letter that the notation
    table gives nothing else, and the convolution section, its receptive-field formula and the figure's caption
    write that letter, never an italic K."""
    table = part(tex, "\\label{tab:notation}", "\\end{longtable}")
    rows = [line.split(" & ") for line in table.splitlines() if line.count(" & ") == 2]
    side = next(symbol for symbol, meaning, _ in rows if meaning.startswith("side of a convolution kernel"))
    letter = re.fullmatch(r"\$(\\?[A-Za-z]+)\$", side).group(1)  # a letter, or a Greek one's command
    assert letter != "K"
    assert [s for s, *_ in rows].count(side) == 1
    assert not [s for s, *_ in rows if re.fullmatch(r"\$\\mathbf\{%s\}\$" % re.escape(letter), s) or re.fullmatch(r"\$\\boldsymbol\{%s\}\$" % re.escape(letter), s)]  # nor bold, as K and the keys
    assert f"kernel $\\boldsymbol{{\\kappa}}$ is ${letter}$ by ${letter}$" in tex
    conv = part(tex, "\\section{The convolution layer}", "\\section")
    assert re.search(r"\\mathrm\{rf\}\}_\{L\} &= 1 \+ .*\(\{%s\}_\{l\} - 1\)" % re.escape(letter), conv)
    caption = conv[conv.index("\\caption{Receptive fields"):]
    assert f"each layer adds ${letter} - 1$ times" in caption
    assert not [f for f in formulas(conv) if re.search(r"(?<![A-Za-z\\])K(?![A-Za-z])", re.sub(r"\\mathbf\{K\}", "", f))]
