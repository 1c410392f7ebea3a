"""The text of the LaTeX notes sections ``decoder`` and ``conv`` of ``seqgrad latex`` (see :mod:`crosscheck.notes`).

Each builds the derivations' own displays (rendered by the notation's printer through
:func:`derive.program.latex_aligned`), the verdict of each proof run now, and its figure set; the section's
verification mark (a footnote) is given; its identities and checks go to the appendix.
"""

from __future__ import annotations

from seqgrad.derive.counting import PARAMS_LAYER, PARAMS_STACK, PARAMS_WEIGHTS  # |theta|_layer, _weights, _stack

from .latex_parts import matrices





def decoder_body(b, mark: str, verification=None) -> str:
    """Cross-attention, the decoder block, the causal proof, the counts, the generation figure; ``mark`` the section's
    footnote mark, ``verification`` the notes' :func:`crosscheck.notes.verification` for the causal proof's remark
    (none: no remark)."""
    import sympy as sp

    from seqgrad.derive import blocks, decoder as dd
    from seqgrad.derive.program import latex_aligned

    from .latex_parts import _derivation, words

    q = blocks.QUERY_INDEX  # a query's row, as in the attention section and its figures

    small = dd.DecoderBlock()  # the symbolic block whose dependencies are followed (a small T)
    holds = all(dd.DecoderBlock(T=small.T, norm_first=nf).causal_proof()[0] for nf in (True, False))
    leaks = not dd.DecoderBlock(causal=False).causal_proof()[0]
    cross = blocks.cross_attention_program().program
    from seqgrad.derive.latex_layout import display
    from seqgrad.derive.prose import Sizes

    from .latex_parts import LAYERS

    # |theta| for a number of parameters (N would read as a number of layers, which is L throughout the notes)
    d_model, heads, d_ff, d_k, d_v, d = sp.symbols("d_model n_head d_ff d_k d_v d")  # h: the hidden state
    from seqgrad.derive.latex_layout import inline
    from seqgrad.numeric import course

    # the course's encoder (section encoder): n_head = 2 heads of d_v = 3 columns side by side, mapped back to d = 5 by W_O
    course_h, course_dv, course_d = len(course.attention().heads), len(course.HEAD1["W_V"]), len(course.E_VOCAB[0])
    course_fill = Sizes(sp.Eq(heads, course_h, evaluate=False), sp.Eq(d_v, course_dv, evaluate=False))
    at = Sizes(*(sp.Eq(k, v, evaluate=False) for k, v in ((d, 256), (heads, 4), (d_ff, 1024))))
    # the model width is d throughout the notes (the counts of derive.decoder call it d_model, as PyTorch does)
    width = lambda expr: expr.xreplace({s: d for s in expr.free_symbols if s.name == "d_model"})  # noqa: E731
    counts = display([(PARAMS_LAYER, width(dd.decoder_layer_params()), ("  (biases and the three LayerNorms counted)",)),
                      (PARAMS_LAYER, dd.decoder_layer_params(256, 4, 1024), ("  at ", at)),
                      (PARAMS_WEIGHTS, width(dd.decoder_layer_params(bias=False, norms=False)),
                       ("  (weight matrices only: no biases, no LayerNorms)",)),
                      (PARAMS_WEIGHTS, dd.decoder_layer_params(256, 4, 1024, bias=False, norms=False), ("  at ", at)),
                      (PARAMS_STACK, width(sp.expand(dd.decoder_stack_params(LAYERS, d_model=d_model, heads=heads,
                                                                             d_ff=d_ff, bias=False, norms=False))),
                       ("  (",) + (sp.Eq(PARAMS_STACK, sp.Mul(LAYERS, PARAMS_WEIGHTS, evaluate=False), evaluate=False), ")")),
                      (PARAMS_STACK, dd.task29()["decoder_stack"],
                       ("  (", sp.Eq(LAYERS, 6, evaluate=False), ", ", at, ")"))],
                     b.notation)
    parts = [words("The decoder generates the target one token at a time. Each block has a causal self-attention over "
                   "the target rows, a cross-attention whose queries come from the decoder and whose keys and values come "
                   "from the encoder's output `Z` (the memory), and an MLP, each with its residual and LayerNorm.",
                   matrices(b.notation, {"Z"}))
             + mark,
             "\\subsection{Cross-attention}\n" + words(
                 "The queries come from the decoder's rows `X` (`T` by `d`), the keys and values from the memory `Z` "
                 "(`T_src` by `d`), so that `S` and `A` are `T` by `T_src`. The forward pass, the backward pass and the "
                 "weight gradients, for any number of target rows `T`, memory rows `T_src` and widths:",
                 matrices(b.notation, {"X", "Z", "S", "A"}))
             # one display: the forward pass, the backward pass and the gradients line up at =
             + "\n" + latex_aligned([(line.target, line.value) for kinds in (("forward",), ("backward",), ("gradient",))
                                     for line in cross.definitions(kinds)], notation=b.notation),
             # the cross-attention figure anchored with cross-attention, not after the counts: at the section's end,
             # a figure that did not fit below the counts left their page half empty
             b.pointer("decoder", "decoder_cross_attention", words(
                 "shows the cross-attention weights of a small trained translation model: in each row the weights "
                 "over the source words sum to 1.", b.notation)),
             b.figures("decoder"),
             _block_names(b),
             _derivation("The pre-norm decoder block", dd.DecoderBlock().latex(b.notation),
                         words(f"output row `{q}` depends on no target row `j > {q}`, for every `T`", b.notation)
                         if holds else "\\textbf{NOT shown}"),
             (words(f"This holds for every `T`: the causal mask makes the weight of row `{q}` on every row `j > {q}` zero, so row "
                    f"`{q}` of the self-attention's output is a weighted sum of the value rows `j <= {q}`; the "
                    f"cross-attention's row `{q}` reads the target only through its own row `{q}` (its keys and values are "
                    "the memory's); the LayerNorms, the MLP and the residual sums act on each row alone. Each map of "
                    f"the block thus keeps row `{q}` a function of the rows up to `{q}`, and so does their composition: "
                    "the block, and a stack of blocks.", b.notation)
              # how it was verified is the section's footnote, not the text (issue 25, prose review, item 1)
              + (verification(b, appendix="decoder", remarks=[words(
                  f"Causality is also shown entry by entry in the symbolic block at `T = {small.T}`", b.notation)])
                 if verification is not None else "")
              if holds else ""),
             words(f"Without the mask, output row `{q}` depends on target rows after `{q}`. With it, one pass over a whole "
                   f"target computes at each position `{q}` what the decoder computes from the prefix up to `{q}` alone, "
                   "so training on a known target (teacher forcing) scores every position in one pass, while "
                   "generation, which feeds back the model's own tokens, runs one position at a time"
                   + ("." if leaks else " (NOT shown here)."), b.notation)
             # the mask drawn on the encoder's worked example here, where it is defined (in the encoder's section
             # it was a fifth figure in a row, floated three pages past the text that cited it)
             + (" " + b.pointer("encoder", "fig11_A_causal", words(
                 "shows what the mask makes of the weights of head 1 on `H_0` of the encoder's worked example "
                 "(Section", matrices(b.notation, {"H_0"})) + "~\\ref{sec:encoder}" + words(
                 "): each query keeps only itself and the earlier tokens.", b.notation))
                if b.shows("encoder", "fig11_A_causal") else ""),
             b.figures("encoder", ["fig11_A_causal"]),
             _block_backward(b),
             "\\paragraph{Parameter counts.} " + words(
                 "One layer counted as PyTorch's decoder layer builds it: a bias on each of its projections and linear "
                 "maps (the equations above leave them out) and its three LayerNorms (their "
                 "scales and shifts), in general and at "
                 "model width 256, 4 heads and MLP width 1024; then its weight matrices alone, and the stack of `L = 6` "
                 "layers as the course's exercise on the decoder stack counts it, weight matrices only, without biases "
                 "and LayerNorms. The count assumes that each head has widths ",
                 b.notation)
             + inline(sp.Eq(d_k, sp.Eq(d_v, d / heads, evaluate=False), evaluate=False), b.notation)
             + words(", so that the heads side by side are `d` wide: then it does not depend on the number of "
                     "heads. With other widths it does; the heads of the course's encoder (Section", b.notation)
             + "~\\ref{sec:encoder}" + words(f") are {course_h * course_dv} wide side by side (", b.notation)
             + inline(course_fill, b.notation) + words("), not ", b.notation) + inline(sp.Eq(d, course_d, evaluate=False), b.notation)
             + words(".", b.notation)+ "\n" + counts]
    return "\n\n".join(p for p in parts if p)


def _block_backward(b) -> str:
    """The decoder block's backward pass at the level of its sublayers (:func:`derive.blocks.decoder_block_rows`, the
    engine's program of the block read off, its attention sums written for every head): the residual sums, each
    sublayer's pullback to its LayerNorm, and the memory's gradient dZ through the cross-attention's keys and values."""
    import sympy as sp

    from seqgrad.derive import blocks
    from seqgrad.derive.latex_layout import inline
    from seqgrad.derive.program import latex_aligned

    from .latex_parts import words

    rows = blocks.decoder_block_rows(heads=2)
    m = lambda name: inline(sp.MatrixSymbol(name, 2, 2), b.notation)  # noqa: E731  (a matrix, bold)
    said = lambda text: words(text, b.notation)  # noqa: E731
    return (said("Backwards, at the level of the sublayers, with ") + m("dH'") + said(" the gradient of the block's "
            "output: a residual sum hands its gradient unchanged to both its terms, so the MLP receives ") + m("dH'")
            + said(", the cross-attention ") + m("dU_cross") + said(" and the self-attention ") + m("dU_self")
            + said("; each sublayer's backward pass (the MLP's and multi-head attention's of Section")
            + "~\\ref{sec:encoder}" + said(") gives the gradient of its LayerNorm's output, ") + m("dY_mlp") + ", "
            + m("dY_cross") + said(" and ") + m("dY_self") + said(", and the LayerNorm's backward pass adds what comes "
            "back through it to the shortcut's gradient in ") + m("dU_cross") + ", " + m("dU_self") + said(" and ") + m("dH")
            + said(" (") + m("sigma_mlp") + said(" and ") + m(blocks.NORMALIZED + "_mlp") + said(" are the statistics of ")
            + inline(sp.Function("LN_mlp")(sp.MatrixSymbol("U_cross", 2, 2)), b.notation)
            + said(", and so on). The cross-attention computes its keys and values from the memory ") + m("Z")
            + said(", so its backward pass also sends a gradient to ") + m("Z") + said(", summed over its heads: ")
            + m("dZ") + said(" is what the encoder's output receives from this block. The two attentions' symbols "
            "are told apart by a subscript, ") + m(f"W_K,cross^[{blocks.HEAD_INDEX}]") + said(" and ") + m(f"dK_cross^[{blocks.HEAD_INDEX}]")
            + said(" for head ") + inline(blocks.head, b.notation) + said(" of the cross-attention, ")
            + m(f"W_K,self^[{blocks.HEAD_INDEX}]") + said(" of the self-attention:")
            + "\n" + latex_aligned(rows, notation=b.notation))


def _block_names(b) -> str:
    """The maps the decoder block's display names, each defined before it: the multi-head attention of the encoder's
    section with the causal mask and with the memory, and the three LayerNorms."""
    import sympy as sp

    from seqgrad.derive.blocks import NORM_TAGS
    from seqgrad.derive.latex_layout import inline

    from .latex_parts import words

    X, M, Z = (sp.MatrixSymbol(n, 2, 2) for n in "XMZ")  # X: the rows a map is applied to (H, U_self, U_cross below)
    f = lambda name, *args: inline(sp.Function(name)(*args), b.notation)  # noqa: E731
    return (words("The block below is written with the multi-head attention of Section", b.notation) + "~\\ref{sec:encoder}"
            + words(", for any rows `X` of the target: ", matrices(b.notation, {"X"}))
            + f("MHA_self", X, M) + words(" with the causal mask, ", b.notation) + f("MHA_cross", X, Z)
            + words(" with its keys and values from the memory; ", b.notation) + f("LN" + NORM_TAGS["self"], X) + ", "
            + f("LN" + NORM_TAGS["cross"], X) + words(" and ", b.notation) + f("LN" + NORM_TAGS["mlp"], X)
            + words(" are LayerNorms, each with its own scale and shift, named after the sublayer they feed.", b.notation))


def conv_body(b, mark: str) -> str:
    """The lecture's convolution (a cross-correlation), its sizes, its strided forward pass and gradients at symbolic
    size, the input gradient through the zero-extended G-hat (stride 1), max-pooling forward and backward, the
    receptive field for any number of layers, the receptive-field figure."""
    import sympy as sp

    from seqgrad.derive import conv as dc
    from seqgrad.derive.latex_layout import display
    from seqgrad.derive.latex_settings import Partial

    from seqgrad.derive.latex_layout import inline

    from .latex_parts import words
    from .latex_parts import LAYERS

    explicit = dc.ExplicitConv((4, 5), (3, 2), stride=2, padding=1)
    proof = dc.prove_explicit(explicit)
    # a check at particular sizes, not a proof for every size: the verdict names the sizes
    # the sizes of the check are the appendix's; the body says only when the check fails
    verdict = "" if proof.holds else " (\\textbf{NOT checked})"
    H, W, P = sp.symbols("H_in W_in pad", integer=True, positive=True)  # the padding, printed p (P: the positional encodings)
    strided = dc.Conv2d(stride=dc.s)
    plain = dc.Conv2d()
    rows = strided.rows()
    pool = dc.max_pool_rows(pool=dc.k)  # a window of the kernel's side
    rows[1] = (Partial(dc.K[dc.p, dc.q]), rows[1][1])  # the kernel's entry as its sums index it (a name K_pq keeps its letters)
    # every entry written as the sums write one, X_{i,j} (the derivation's labels Y_ij, X_mn name them)
    rows[0] = (sp.IndexedBase("Y")[dc.i, dc.j], rows[0][1])
    # pooling reads its input itself, X_in (the convolution's sums read the padded input, X printed Xbar)
    unpadded = {dc.X: sp.IndexedBase("X_in")}
    pool = [(sp.IndexedBase("Y")[dc.i, dc.j], pool[0][1].xreplace(unpadded)),
            (Partial(dc.X[dc.m, dc.n].xreplace(unpadded)), pool[1][1].xreplace(unpadded))]
    entry = lambda name, *at: inline(sp.IndexedBase(name)[at], b.notation)  # noqa: E731
    # kernel sizes and strides are positive integers, as derive.conv declares them (a size, not a state s: the
    # textbook order then writes rf_3 = k_1 + s_1 (k_2 - 1) + s_1 s_2 (k_3 - 1), layer by layer)
    ks, ss = sp.symbols("k_1:4", positive=True, integer=True), sp.symbols("s_1:4", positive=True, integer=True)
    r_L, formula = dc.receptive_field_formula()
    depth = next(a for a in r_L.free_symbols if a.name == "L")
    rf = {r_L.base: sp.IndexedBase("rf"), depth: LAYERS}  # the notes' name: r_t is the GRU's reset gate
    whole = matrices(b.notation, {"X", "X_in", "Y", "Ghat", "K"})  # the words about whole matrices: bold, as the displays
    parts = [
        words("A convolution slides one small kernel `K` over the whole input, so a kernel entry is shared by every "
              "output position and its gradient is a sum over them, as a recurrent weight's is a sum over the steps. As "
              "deep-learning libraries do (PyTorch's convolution among them), the layer computes a cross-correlation: the kernel is not "
              "flipped.", whole) + mark,
        words("Sizes: the input `X_in` has `H_in` rows and `W_in` columns (one channel, `pad` rows and columns of zeros padded on every side), the "
              "kernel `K` is `k` by `k`, indexed (`p`, `q`), the stride is `s` and `b` is the bias. The output `Y` then has `H_o` rows and "
              "`W_o` columns, and `dY` is the gradient of the loss with respect to `Y` (also `H_o` by `W_o`):",
              whole),
        display([(dc.H_o, dc.output_size(H, dc.k, dc.s, P)), (dc.W_o, dc.output_size(W, dc.k, dc.s, P))], b.notation),
        words("Output position (`i`, `j`) reads the window that starts at row `s*i` and column `s*j` of the padded "
              "input (in these sums and below, `X` is the input with its zeros, `2*pad + H_in` rows by `2*pad + W_in` "
              "columns, indexed from 0); the kernel's gradient sums over every output position, the bias's too"
              + verdict + ":", whole),
        display([rows[0], rows[1], rows[2]], b.notation),
        words("The input's gradient, for stride 1: an input entry is read by every output whose window covers it. Write "
              "`Ghat` for `dY` extended by zeros outside its `H_o` by `W_o` entries (the padded gradient), so that the sum "
              "may run over the whole kernel; reindexed, it is a full cross-correlation of `Ghat` with the flipped kernel:",
              whole),
        display([(Partial(dc.X[dc.m, dc.n]), [plain.grad_X(), plain.grad_X_flipped()])], b.notation),
        words("This is the gradient of the padded input. The gradient with respect to the input itself, without its "
              "zeros, is that gradient cropped by `pad` rows and columns on every side: entry (`m`, `n`) of the input is entry "
              "(`m + pad`, `n + pad`) of the padded one, for `0 <= m <= H_in - 1` and `0 <= n <= W_in - 1`.", b.notation),
        words("With a stride `s > 1` the same sum holds with `Ghat` dilated: entry (`s*i`, `s*j`) of `Ghat` is ", whole)
        + entry("G", dc.i, dc.j) + words(", "
              "every other entry is 0, with `s - 1` zeros between two entries of `dY`. Where `s` does not divide `2*pad + H_in - k`, the last rows (or columns) of the padded input "
              "lie in no window and their gradient is 0.",
              whole),
        "\\paragraph{Receptive field.} " + words(
            "Layer `l` reads `k_l` neighbouring positions of its input, so it widens the field by `k_l - 1` of them; "
            "and one position of layer `l`'s input stands for as many positions of the network's input as the strides "
            "of the layers below it multiply to. A stack of `L` layers with kernel sides `k_l` and strides "
            "`s_l` therefore sees", b.notation),
        display([(r_L.xreplace(rf), formula.xreplace(rf))], b.notation),
        words("input positions; for three layers:", b.notation),
        display([(sp.Symbol("rf_3"), dc.receptive_field(ks, ss))], b.notation),
        b.pointer("conv", "conv_receptive_field", words(
            "draws the receptive fields of three layers of kernel 3, at strides 1, 1, 1 and 2, 2, 1.", b.notation)),
        b.figures("conv"),
        "\\paragraph{Max-pooling.} " + words(
            "Each output is the largest entry of its `k` by `k` window (windows `s` apart). The maximum passes one entry "
            "through, so its gradient routes the whole ", b.notation) + entry("G", dc.i, dc.j)
        + words(" to the window's argmax ", b.notation) + inline(dc.WindowArgmax(dc.i, dc.j), b.notation) + words(
            " and gives 0 to the rest; at a "
            "tie the derivative does not exist, and PyTorch routes to the first maximal entry in row-major order. The "
            "bracket ", b.notation) + inline(next(iter(pool[1][1].atoms(dc._Routed))), b.notation)
        + words(" is 1 where the statement in it holds and 0 elsewhere (Iverson's bracket):", b.notation),
        display(pool, b.notation)]
    return "\n\n".join(p for p in parts if p)
