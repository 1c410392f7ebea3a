"""Issue 24 part 3: a value at a step and an adjoint are SymPy nodes (derive.sequence); ranges are relations;
instantiation is substitution; the printers set every index, so a notation's letters for t and T and a renamed
parameter reach every formula; user names never collide with the engine's."""

from __future__ import annotations

import pickle
import re

import pytest
import sympy as sp

from seqgrad.derive.builtin_cells import gru_cell, lstm_cell, rnn_cell
from seqgrad.derive.cell import Cell, CellError
from seqgrad.derive.latex_settings import Notation
from seqgrad.derive.sequence import Sensitivity, Stepped, T, adjoint, stepped, t

LETTERS = {"t": "k", "T": "N"}


def tokens(tex: str) -> list[str]:
    """The LaTeX as tokens: commands (``\\tanh``), single letters, single other characters; the words of
    ``\\text{...}`` (``for``) are left out (they are prose, not symbols)."""
    tex = re.sub(r"\\(?:text|mathrm|operatorname|begin|end)\{[^{}]*\}", " ", tex)
    return re.findall(r"\\[A-Za-z]+|[A-Za-z]|\S", tex)


def contains(seq: list[str], part: list[str]) -> bool:
    n = len(part)
    return any(seq[i:i + n] == part for i in range(len(seq) - n + 1))


def printed(symbol, notation=None) -> list[str]:
    return tokens(Notation().latex(symbol) if notation is None else notation.latex(symbol))


def assert_renamed(tex: str, old_symbol, new_tex: str):
    toks = tokens(tex)
    assert not {"t", "T"} & set(toks), [m for m in re.findall(r".{30}\b[tT]\b.{10}", tex)][:3]
    assert not contains(toks, printed(old_symbol)), f"{old_symbol} still printed"
    assert contains(toks, tokens(new_tex)), f"{new_tex} not printed"


# -- the nodes -----------------------------------------------------------------------------------------------

def test_instantiation_is_substitution_and_nodes_are_not_names():
    h = stepped("h", t - 1)
    assert h.subs(t, 3) == stepped("h", 2) and h.subs(t, T) == stepped("h", T - 1)
    assert adjoint(stepped("z", t + 1)).subs(t, 1) == adjoint(stepped("z", 2))
    assert stepped("h", t) != sp.Symbol("h_t")  # a user's parameter called h_t is another value
    assert stepped("g^h", t) != adjoint(stepped("h", t))  # a user's value g^h is not the adjoint of h
    M = stepped("h", t - 1, (1, 3))
    assert M.shape == (1, 3) and M.subs(t, 0) == stepped("h", -1, (1, 3))
    for node in (h, adjoint(stepped("z", t)), M, adjoint(M)):
        assert pickle.loads(pickle.dumps(node)) == node
    assert sp.diff(h ** 2, h) == 2 * h and h.free_symbols == {h}


def test_ranges_are_relations():
    gen = rnn_cell().general()
    where = [r.where for r in gen.backward_rows() if r.where is not None]
    assert where == [sp.StrictLessThan(t, T - 1, evaluate=False)]
    positions = Cell("z = w_x*x + w_h*h_prev; h = tanh(z)", states="h", params="w_x w_h w_o", head="w_o*h",
                     on=(0, 2)).general()
    assert positions.forward_rows()[-2].where == sp.Contains(t, sp.FiniteSet(0, 2), evaluate=False)
    assert "k \\in" in positions.latex(Notation(letters=LETTERS))


# -- the notation reaches every formula --------------------------------------------------------------------------

CELLS = {
    "rnn": (lambda: rnn_cell(), "w_h", sp.Symbol("w_h")),
    "rnn_vector": (lambda: rnn_cell(sizes={"D": 2, "H": 3, "C": 1}, bias=True, on="every"), "W_h",
                   sp.MatrixSymbol("W_h", 3, 3)),
    "gru": (lambda: gru_cell(), "w_hn", sp.Symbol("w_hn")),
    "lstm": (lambda: lstm_cell(), "w_xi", sp.Symbol("w_xi")),
    "lstm_vector": (lambda: lstm_cell(sizes={"D": 2, "H": 2, "C": 1}), "W_xi", sp.MatrixSymbol("W_xi", 2, 2)),
}


@pytest.mark.parametrize("name", list(CELLS))
def test_general_derivation_prints_the_notations_letters_and_names(name):
    make, param, symbol = CELLS[name]
    gen = make().general()
    default = gen.latex()
    assert {"t", "T"} <= set(tokens(default)) and contains(tokens(default), printed(symbol))  # the test can fail
    notation = Notation(letters=LETTERS, symbol_names={param: r"Q_{r}"})
    # a renamed matrix keeps its kind: bold, as every matrix of the notes (a renamed scalar stays plain)
    assert_renamed(gen.latex(notation), symbol, r"\mathbf{Q}_{r}" if isinstance(symbol, sp.MatrixSymbol) else r"Q_{r}")
    assert notation.unused_renames() == []


def test_a_renamed_state_and_the_adjoint_letter_reach_superscripts_and_labels():
    gen = lstm_cell().general()
    toks = tokens(gen.latex(Notation(letters={**LETTERS, "g": r"\delta", "c": "s"})))
    assert "g" not in toks and contains(toks, tokens(r"\delta^{s}_{k}")) and contains(toks, tokens(r"s_{k-1}"))
    assert not contains(toks, tokens("c_{k}")) and not contains(toks, tokens(r"\delta^{c}"))


def test_cli_derive_latex_takes_the_notation(capsys):
    from seqgrad.crosscheck.cli import main

    assert main(["derive", "lstm", "--general", "--latex", "--symbol", "t=k", "--symbol", "T=N",
                 "--symbol", "w_xi=Q_{r}"]) == 0
    assert_renamed(capsys.readouterr().out, sp.Symbol("w_xi"), r"Q_{r}")
    assert main(["derive", "lstm", "--general", "--latex", "--symbol", "q=k"]) == 2
    assert "--symbol" in capsys.readouterr().err
    assert main(["derive", "lstm", "--general", "--plain"]) == 2  # bold or not is LaTeX's: refused in plain text
    assert "--latex" in capsys.readouterr().err


def _text_names(text: str) -> set:
    """The names a plain-text derivation prints: identifiers and their indices, split at the operators."""
    return set(re.findall(r"[A-Za-z]+(?:_(?:\{[^{}]*\}|[A-Za-z0-9]+))?(?:\^(?:\{[^{}]*\}|[A-Za-z0-9]+))?", text))


@pytest.mark.parametrize("name", ["rnn", "gru", "lstm", "lstm_vector"])
def test_plain_text_follows_the_notation(name):
    """GeneralDerivation.text(notation): the step letters and a renamed parameter reach every row of the plain
    text, indices, sum bounds, ranges and dL/d labels included (the old text printer ignored the notation)."""
    make, param, symbol = CELLS[name]
    gen = make().general()
    default = gen.text()
    assert default == str(gen) and param in default and "_t" in default and "T-1" in default  # the test can fail
    notation = Notation(letters=LETTERS, symbol_names={param: "Q"})
    text = gen.text(notation)
    assert param not in text and "dL/dQ" in text and notation.unused_renames() == []
    assert not re.search(r"_t\b|_\{t[-+]|(?<!\.)\bT\b|T-1|\bt\b", text), text
    assert "_k" in text and "N-1" in text and re.search(r"Sum_\{k=0\}\^\{N-1\}", text)


def test_cli_plain_text_takes_the_notation(capsys):
    from seqgrad.crosscheck.cli import main

    assert main(["derive", "rnn", "--general", "--symbol", "t=k", "--symbol", "T=N", "--symbol", "w_h=U"]) == 0
    out = capsys.readouterr().out
    assert "dL/dU = Sum_{k=0}^{N-1} g_k^z*h_{k-1}" in out and "g_k^h = g_{k+1}^z*U   (k < N - 1)" in out
    assert "w_h" not in out and "_t" not in out
    assert main(["derive", "rnn", "--steps", "2", "--symbol", "w_h=U"]) == 0
    out = capsys.readouterr().out
    assert "z_1 = w_x*x_1 + U*h_0" in out and "dL/dU = " in out and "w_h" not in out
    assert main(["derive", "lstm", "--general", "--symbol", "g=delta", "--symbol", "c=s"]) == 0
    out = capsys.readouterr().out
    assert "delta_t^s" in out and "s_{t-1}" in out and not re.search(r"\bc_|\bg_", out)
    assert main(["derive", "lstm", "--general", "--symbol", "q=k"]) == 2  # renames nothing printed: one line
    assert "--symbol" in capsys.readouterr().err


def test_notes_recurrent_sections_print_the_notation():
    """The displays of the notes' RNN and GRU/LSTM sections (every align* block: the derivations, printed by the
    printers) under t -> k, T -> N and a renamed parameter."""
    from seqgrad.crosscheck import latexdoc

    notation = Notation(letters=LETTERS, symbol_names={"w_h": r"Q_{r}"})
    tex = latexdoc.render(["rnn", "gates"], notation, figures_dir=None, appendix=False, proof_seconds=5)
    blocks = re.findall(r"\\begin\{align\*\}.*?\\end\{align\*\}", tex, re.S)
    assert len(blocks) >= 10
    assert_renamed("\n".join(blocks), sp.Symbol("w_h"), r"Q_{r}")


# -- user names never collide with the engine's ----------------------------------------------------------------

@pytest.mark.parametrize("name", ["g", "dh", "d", "g_t", "gz", "rho_h", "h_t"])
def test_engine_like_names_are_legal_and_derive_right(name):
    from seqgrad.crosscheck.cells import against_autograd

    as_state = Cell(f"z = w_x*x + w_h*{name}_prev; {name} = tanh(z)", states=name, params="w_x w_h w_o",
                    head=f"w_o*{name}")
    as_param = Cell(f"z = w_x*x + {name}*h_prev; h = tanh(z)", states="h", params=f"w_x {name} w_o", head="w_o*h")
    as_intermediate = Cell(f"{name} = w_x*x + w_h*h_prev; h = tanh({name})", states="h", params="w_x w_h w_o",
                           head="w_o*h", named=[name])
    for cell in (as_state, as_param, as_intermediate):
        assert cell.unroll(3).check_general() == []
        worst = max(err for _, _, err, _ in against_autograd(cell, steps=(1, 4), trials=1))
        assert worst < 1e-12, (name, worst)


@pytest.mark.parametrize("name", ["e", "L", "t", "T", "yhat", "y", "B"])
@pytest.mark.parametrize("role", ["states", "params", "equations"])
def test_each_reserved_name_is_refused_with_a_message_naming_it(name, role):
    eq = {"states": f"z = w_x*x + w_h*{name}_prev; {name} = tanh(z)", "params": f"z = w_x*x + {name}*h_prev; h = tanh(z)",
          "equations": f"{name} = w_x*x + w_h*h_prev; h = tanh({name})"}[role]
    kwargs = dict(states=name if role == "states" else "h", head=f"w_o*{name}" if role == "states" else "w_o*h",
                  params=f"w_x {name} w_o" if role == "params" else "w_x w_h w_o")
    with pytest.raises(CellError, match=rf"a name other than '{re.escape(name)}': the derivation's own name for"):
        Cell(eq, **kwargs)


def test_the_input_and_duplicates_are_refused():
    with pytest.raises(CellError, match="the input"):
        Cell("z = x*x + w_h*h_prev; h = tanh(z)", states="h", params="x w_h w_o", head="w_o*h")
    with pytest.raises(CellError, match="each parameter named once"):
        Cell("z = w_x*x + w_h*h_prev; h = tanh(z)", states="h", params=["w_x", "w_h", "w_h", "w_o"], head="w_o*h")
    with pytest.raises(CellError, match="each name once"):
        Cell("z = w_x*x + w_h*h_prev; h = tanh(z)", states="h h", params="w_x w_h w_o", head="w_o*h")


def test_nodes_are_what_the_derivation_holds():
    gen = rnn_cell().general()
    assert isinstance(gen.prev["h"], Stepped) and gen.prev["h"].index == t - 1
    assert isinstance(gen.backward_rows()[1].lhs, Sensitivity)


def test_repr_latex_honours_use_in_notebook():
    from seqgrad.derive import latex_settings

    gen = rnn_cell().general()
    try:
        latex_settings.use_in_notebook(Notation(letters=LETTERS))
        toks = tokens(gen._repr_latex_())
        assert "k" in toks and not {"t", "T"} & set(toks)
    finally:
        latex_settings.use_in_notebook(None)
    assert {"t", "T"} <= set(tokens(gen._repr_latex_()))


@pytest.mark.parametrize("argv, renamed, gone", [
    (["derive", "conv", "--latex", "--symbol", "K=W"], r"{W}_{u,v}", "{K}"),
    (["derive", "conv", "--stride", "2", "--latex", "--symbol", "K=W"], r"\partial W_{pq}", "K_{pq}"),
    (["derive", "conv", "--size", "2", "--kernel", "2", "--latex", "--symbol", "k=W"], r"\partial W_{0}} &= g_{0} x_{0}", "k_{"),
    (["derive", "conv", "--size", "2", "--kernel", "2", "--symbol", "k=W"], "dL/dW_{1} = g_{0}*x_{1}", "k_"),
    (["derive", "conv", "--symbol", "K=W", "--symbol", "G=D"], "dL/dW_pq = Sum(D[i, j]*X[i + p, j + q]", "K"),
    (["derive", "decoder", "--latex", "--symbol", "d_model=D"], "8 D^{2}", "d_{model}"),
    (["derive", "decoder", "--symbol", "d_ff=F"], "2*F*d_model", "d_ff"),
    (["derive", "decoder", "--part", "cross", "--entries", "--latex", "--symbol", "w=U"], "U_{Q,0,0}", "w_{"),
    (["derive", "decoder", "--part", "cross", "--latex", "--symbol", "W_Q=U"], r"\mathbf{X} \mathbf{U}^{\top}", "W_{Q}"),
    (["derive", "decoder", "--part", "cross", "--symbol", "d_k=n"], "dK = 1/sqrt(n)*dS.T*Q", "d_k"),
])
def test_cli_derive_decoder_and_conv_take_the_notation(argv, renamed, gone, capsys):
    """seqgrad derive decoder / conv take --symbol (and --plain, --decimal-comma with --latex) and every formula they
    print follows it (the old parsers refused the options, exit 2)."""
    from seqgrad.crosscheck.cli import main

    assert main(argv) == 0
    out = capsys.readouterr().out
    assert renamed in out and gone not in out, out


def test_cli_derive_decoder_and_conv_refuse_a_rename_that_reaches_nothing(capsys):
    from seqgrad.crosscheck.cli import main

    for argv in (["derive", "decoder", "--part", "causal", "--symbol", "x=y"], ["derive", "conv", "--latex", "--symbol", "zeta=k"],
                 ["derive", "conv", "--plain"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and ("--symbol" in err or "--plain" in err), err
    assert main(["derive", "decoder", "--latex", "--plain", "--decimal-comma"]) == 0
    assert r"\mathbf" not in capsys.readouterr().out


@pytest.mark.parametrize("argv, clash", [
    (["derive", "decoder", "--part", "cross", "--latex", "--symbol", "W_Q=V"], r"V and W_Q would both print as \mathbf{V}"),
    (["derive", "decoder", "--part", "cross", "--symbol", "W_Q=V"], "V and W_Q would both print as V"),
    (["derive", "rnn", "--general", "--latex", "--symbol", "w_h=w_x"], "w_h and w_x would both print as w_x"),  # w_{x} reads w_x
    (["derive", "conv", "--latex", "--symbol", "K=X"], "K and X would both print as X"),
])
def test_cli_derive_refuses_a_rename_that_prints_two_symbols_alike(argv, clash, capsys):
    """A --symbol that gave one symbol the printed form of another (the weight matrix W_Q renamed V, beside the
    values V) printed a formula in which two quantities read the same; it is refused, naming both."""
    from seqgrad.crosscheck.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert clash in err and err.count("\n") == 1, err


def test_cli_derive_decoder_entries_only_with_the_cross_part(capsys):
    from seqgrad.crosscheck.cli import main

    assert main(["derive", "decoder", "--entries"]) == 2
    assert "--entries" in capsys.readouterr().err


def test_cross_attention_program_prints_under_a_notation():
    """BlockProgram.latex took no notation, so a block's display could not follow the notes' letters."""
    from seqgrad.derive.blocks import cross_attention_program
    from seqgrad.derive.latex_settings import Notation

    tex = cross_attention_program().latex(Notation(symbol_names={"W_V": "U", "d_k": "n"}))
    assert r"\mathrm{d}\mathbf{U}&=\mathrm{d}\mathbf{V}^{\top}\mathbf{Z}" in tex.replace(" ", "") and r"\sqrt{n}" in tex and "W_{V}" not in tex
