"""The text of the LaTeX notes sections ``decoder`` and ``conv`` of ``seqgrad latex`` (see :mod:`crosscheck.notes`).

Each builds the derivations' own displays (rendered by the notation's printer through
:func:`derive.program.latex_aligned`), the verdict of each proof run now, and its figure set; the section's
verification mark (a footnote) is given; its identities and checks go to the appendix.
"""

from __future__ import annotations


class _Count(__import__("sympy").Symbol):
    """A number of parameters, ``|theta|`` with what it counts as a subscript (``layer``, ``stack``)."""

    def _latex(self, printer):
        return r"\lvert\theta\rvert_{\mathrm{%s}}" % self.name.split("_", 1)[1]

    def _sympystr(self, printer):
        return "|theta|_" + self.name.split("_", 1)[1]


#: the numbers of parameters of one decoder layer and of a stack of L layers
PARAMS_LAYER, PARAMS_STACK = _Count("params_layer"), _Count("params_stack")


def decoder_body(b, mark: str) -> str:
    """Cross-attention, the decoder block, the causal proof, the counts, the generation figure."""
    import sympy as sp

    from seqgrad.derive import blocks, decoder as dd
    from seqgrad.derive.program import latex_aligned

    from .latexdoc import _derivation, text, words

    holds = all(dd.DecoderBlock(norm_first=nf).causal_proof()[0] for nf in (True, False))
    leaks = not dd.DecoderBlock(causal=False).causal_proof()[0]
    cross = blocks.cross_attention_program().program
    from seqgrad.derive.latex_layout import display
    from seqgrad.derive.prose import Sizes

    from .notes import LAYERS

    # |theta| for a number of parameters (N would read as a number of layers, which is L throughout the notes)
    d_model, heads, d_ff = sp.symbols("d_model h d_ff")
    at = Sizes(*(sp.Eq(k, v, evaluate=False) for k, v in ((d_model, 256), (heads, 4), (d_ff, 1024))))
    counts = display([(PARAMS_LAYER, dd.decoder_layer_params(), ("  (biases and the three LayerNorms counted)",)),
                      (PARAMS_LAYER, dd.decoder_layer_params(256, 4, 1024), ("  at ", at)),
                      (PARAMS_STACK, dd.task29()["decoder_stack"],
                       ("  (", sp.Eq(LAYERS, 6, evaluate=False), ", ", at, "; no biases, no LayerNorms)"))],
                     b.notation)
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
             "\\paragraph{Parameter counts.} " + words(
                 "One layer counted with its biases and its three LayerNorms (their scales and shifts), in general and at "
                 "model width 256, 4 heads and MLP width 1024 (the count does not depend on the number of heads); then the "
                 "stack of `L = 6` layers as lesson task 29 counts it, weight matrices only, without biases and LayerNorms:",
                 b.notation) + "\n" + counts,
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
