"""The LaTeX notes sections ``decoder`` and ``conv`` of ``seqgrad latex`` (see :mod:`crosscheck.latexdoc`).

Each builds the derivations' own displays (rendered by SymPy's printers through
:func:`derive.program.latex_aligned`), the verdict of each proof run now, the status of the registered
checks of its group, and its figure set.
"""

from __future__ import annotations


def decoder_section(b) -> str:
    """Cross-attention, the decoder block, the causal proof, the counts, every decoder check, the generation figure."""
    import sympy as sp

    from seqgrad.derive import decoder as dd
    from seqgrad.derive.program import latex_aligned

    from .latexdoc import _catalogue_section, _derivation, checks_or_note, text, words

    holds = all(dd.DecoderBlock(norm_first=nf).causal_proof()[0] for nf in (True, False))
    leaks = not dd.DecoderBlock(causal=False).causal_proof()[0]
    counts = latex_aligned([(sp.Symbol("P_{layer}"), dd.decoder_layer_params()),
                            (sp.Symbol("P_{layer}(256, 4, 1024)"), dd.decoder_layer_params(256, 4, 1024)),
                            (sp.Symbol("P_{stack}^{N=6}"), dd.task29()["decoder_stack"])])
    parts = [_derivation("Cross-attention: queries from the decoder, keys and values from the memory Z", dd.CrossAttention(2, 2, 1, 1).latex(b.notation)),
             _derivation("The decoder block (pre-norm)", dd.DecoderBlock().latex(b.notation),
                         words("output row `i` depends on no target row `j > i`: proved for pre- and post-norm", b.notation)
                         if holds else "\\textbf{NOT proved}"),
             text("Without the mask every output row depends on every target row" + (" (shown)." if leaks else " (NOT shown).")),
             _derivation("Parameter counts (with biases and three LayerNorms; task 29 without)", counts),
             _catalogue_section(["derive.decoder"])(b),
             checks_or_note("decoder.*", b),
             b.figures("decoder")]
    return "\n\n".join(p for p in parts if p)


def conv_section(b) -> str:
    """The lecture's convolution, its gradients at symbolic size, max-pool (cut off in the source), the receptive
    field, every conv check, the receptive-field figure."""
    import sympy as sp

    from seqgrad.derive import conv as dc
    from seqgrad.derive.program import latex_aligned

    from .latexdoc import _catalogue_section, _derivation, checks_or_note, text

    proof = dc.prove_explicit(dc.ExplicitConv((4, 5), (3, 2), stride=2, padding=1))
    ks, ss = sp.symbols("k_1:4", positive=True), sp.symbols("s_1:4", positive=True)
    parts = [_derivation("Convolution and its gradients, symbolic sizes (lecture 7, l.9)", dc.Conv2d().latex(b.notation),
                         "proved at concrete sizes with stride and padding" if proof.holds else "\\textbf{NOT proved}"),
             text("Max-pooling (l.13): the source's formula is cut off; each output is the largest entry of its "
                  "p × p window (windows s apart), and its gradient goes to the first maximal entry of the window in "
                  "row-major order (the PyTorch convention at ties)."),
             _derivation("Receptive field of three stacked layers (l.15)",
                         latex_aligned([(sp.Symbol("r_3"), dc.receptive_field(ks, ss))])),
             _catalogue_section(["derive.conv"])(b),
             checks_or_note("conv.*", b),
             b.figures("conv")]
    return "\n\n".join(p for p in parts if p)
