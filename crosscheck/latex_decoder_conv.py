"""The text of the LaTeX notes sections ``decoder`` and ``conv`` of ``seqgrad latex`` (see :mod:`crosscheck.notes`).

Each builds the derivations' own displays (rendered by the notation's printer through
:func:`derive.program.latex_aligned`), the verdict of each proof run now, and its figure set; the section's
verification mark (a footnote) is given; its identities and checks go to the appendix.
"""

from __future__ import annotations


def decoder_body(b, mark: str) -> str:
    """Cross-attention, the decoder block, the causal proof, the counts, the generation figure."""
    import sympy as sp

    from seqgrad.derive import blocks, decoder as dd
    from seqgrad.derive.program import latex_aligned

    from .latexdoc import _derivation, text, words

    holds = all(dd.DecoderBlock(norm_first=nf).causal_proof()[0] for nf in (True, False))
    leaks = not dd.DecoderBlock(causal=False).causal_proof()[0]
    cross = blocks.cross_attention_program().program
    # N for a number of parameters (P is the positional encoding): one layer, then the stack of 6 layers
    counts = latex_aligned([(sp.Symbol("N_{\\mathrm{layer}}"), dd.decoder_layer_params()),
                            (sp.Symbol("N_{\\mathrm{layer}}(256, 4, 1024)"), dd.decoder_layer_params(256, 4, 1024)),
                            (sp.Symbol("N_{\\mathrm{stack}}"), dd.task29()["decoder_stack"])], notation=b.notation)
    parts = [words("The decoder generates the target one token at a time. Each block has a causal self-attention over "
                   "the target rows, a cross-attention whose queries come from the decoder and whose keys and values come "
                   "from the encoder's output `Z` (the memory), and an MLP, each with its residual and LayerNorm.", b.notation)
             + mark,
             _derivation("Cross-attention: queries from the decoder, keys and values from the memory Z",
                         "\n".join(latex_aligned([(line.target, line.value) for line in cross.definitions(kinds)],
                                                  notation=b.notation)
                                    for kinds in (("forward",), ("backward",), ("gradient",))),
                         words("the forward pass, the backward pass and the weight gradients of the block program, "
                               "for any number of target rows, memory rows and widths", b.notation)),
             _derivation("The decoder block (pre-norm)", dd.DecoderBlock().latex(b.notation),
                         words("output row `i` depends on no target row `j > i`: proved for pre- and post-norm", b.notation)
                         if holds else "\\textbf{NOT proved}"),
             text("Without the mask, output row i depends on target rows after i: the mask is what makes training "
                  "with the whole target in one pass equal to generating it token by token"
                  + ("." if leaks else " (NOT shown here).")),
             _derivation("Parameter counts: one layer with its biases and three LayerNorms, in general and at model "
                         "width 256, 4 heads, MLP width 1024 (the count does not depend on the number of heads); the stack "
                         "of 6 layers as lesson task 29 counts it, without biases and norms", counts),
             b.figures("decoder")]
    return "\n\n".join(p for p in parts if p)


def conv_body(b, mark: str) -> str:
    """The lecture's convolution, its gradients at symbolic size, max-pool (cut off in the source), the receptive
    field, the receptive-field figure."""
    import sympy as sp

    from seqgrad.derive import conv as dc
    from seqgrad.derive.program import latex_aligned

    from .latexdoc import _derivation, text, words

    proof = dc.prove_explicit(dc.ExplicitConv((4, 5), (3, 2), stride=2, padding=1))
    ks, ss = sp.symbols("k_1:4", positive=True), sp.symbols("s_1:4", positive=True)
    parts = [words("A convolution slides one small kernel `K` over the whole input, so a kernel entry is shared by every "
                   "output position and its gradient is a sum over them, as a recurrent weight's is a sum over the steps.",
                   b.notation) + mark,
             _derivation("Convolution and its gradients, symbolic sizes", dc.Conv2d().latex(b.notation),
                         "proved at concrete sizes with stride and padding" if proof.holds else "\\textbf{NOT proved}"),
             text("Max-pooling: the source's formula is cut off; each output is the largest entry of its "
                  "p × p window (windows s apart), and its gradient goes to the first maximal entry of the window in "
                  "row-major order (the PyTorch convention at ties)."),
             _derivation("Receptive field of three stacked layers with kernels k and strides s",
                         latex_aligned([(sp.Symbol("r_3"), dc.receptive_field(ks, ss))], notation=b.notation)),
             b.figures("conv")]
    return "\n\n".join(p for p in parts if p)
