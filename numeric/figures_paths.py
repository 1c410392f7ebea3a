"""The five figures of vanishing and exploding path products (matplotlib's object-oriented API).

Each ``plot_*`` function draws on a given ``ax`` and returns the artists it made,
so tests read the plotted data back (``line.get_ydata()``, ``mesh.get_array()``)
and compare it with the formulas; nothing here touches ``pyplot``'s global state.

1. :func:`plot_power_curves` — Figure 3, left: ``rho^n`` for a factor rho = 0.8, 1, 1.2 (the notes' bound ``rho``).
2. :func:`plot_tanh_sensitivity` — Figure 3, right: ``|dh_{T-1}/dh_0|`` on tanh
   trajectories with ``w_h = 1.2``, ``w_x = 1``, constant input 0 or 1.
3. :func:`plot_sensitivity_heatmap` — ``log10 |dh_{T-1}/dh_t|`` over ``t`` and ``w_h``.
4. :func:`plot_jacobian_norms` — vector RNN: measured ``||J_t...J_{tau+1}||_2``
   against the norm product and the Pascanu bound, by distance.
5. :func:`plot_gradient_flow` — plain RNN, GRU and LSTM at the same width:
   ``||dL/dh_tau||_2`` by distance, with the fixed-gate carry products.

The letters are the notes' (``tau`` an earlier step, ``rho`` a factor's bound), so a figure reads like the text.
"""

from __future__ import annotations

import numpy as np

from seqgrad import validate

from . import gated, paths


def plot_power_curves(ax, rs=(0.8, 1.0, 1.2), n_max: int = 30) -> list:
    """Figure 3, left: ``rho^(t - tau)`` against the number of transitions ``t - tau = 0..n_max`` (log y), one curve
    per factor ``rho`` in ``rs`` (the notes' path length, from step ``tau`` to step ``t``)."""
    n_max = validate.integer("n_max", n_max, minimum=1)
    rs = paths.values("rs", rs, allow_scalar=False)
    n = np.arange(n_max + 1)
    lines = [ax.plot(n, paths.power_curve(r, n), marker=".", label=rf"$\rho = {r:g}$")[0] for r in rs]
    ax.set_yscale("log")
    ax.set_xlabel(r"number of transitions $t - \tau$")
    ax.set_ylabel(r"$\rho^{t - \tau}$")
    ax.set_title("Fixed transition factor raised to the path length")
    ax.legend(handles=top_down(lines))
    return lines


def top_down(lines) -> list:
    """``lines`` in the order they lie at the plot's right end, the highest first: the order a legend lists them in."""
    return sorted(lines, key=lambda line: -line.get_ydata()[-1])


def plot_tanh_sensitivity(axes, T_max: int = 30, w_h: float = 1.2, w_x: float = 1.0, inputs=(0.0, 1.0)) -> list:
    """Figure 3, right: ``|dh_{T-1}/dh_0|`` against ``T = 1..T_max`` for constant inputs (log y), in two panels,
    ``axes = (left, right)``: on the left the vanishing curves (dozens of decades), on the right the growing ones with
    the reference ``|w_h|^(T-1)``, each panel on its own log axis (on one axis, a growth like ``w_h^T`` would look
    flat beside the vanishing curve).  The reference is a dashed line and the curves are dots without a line, so a
    curve that lies on the reference is still seen; returns one line per input, in their order."""
    T_max = validate.integer("T_max", T_max, minimum=1)
    w_h = validate.real("w_h", w_h)
    inputs = paths.values("inputs", inputs, allow_scalar=False)
    panels = list(axes) if isinstance(axes, (list, tuple)) or getattr(axes, "ndim", 0) == 1 else [axes]
    if len(panels) != 2:
        raise ValueError("axes: a pair of matplotlib Axes (left, right), e.g. plt.subplots(1, 2)[1]; got "
                         f"{type(axes).__name__}" + (f" of {len(panels)}" if len(panels) != 1 else ""))
    left, right = panels
    T = np.arange(1, T_max + 1)
    sens = paths.sensitivity_vs_length(w_h, inputs, T_max, w_x=w_x)
    lines = []  # one per input, in the inputs' order
    for k, x in enumerate(inputs):
        growing = sens[k][-1] >= sens[k][0]
        lines.append((right if growing else left).plot(T, sens[k], marker="o", markersize=3.5, linestyle="none",
                                                       color=f"C{k}", label=f"$x_t = {x:g}$", zorder=3)[0])
    reference = right.plot(T, np.abs(w_h) ** (T - 1.0), linestyle="--", color="0.3", lw=1.2, zorder=2,
                           label=rf"${w_h:g}^{{T-1}}$ (reference)")[0]
    # each legend in the corner its curves leave free: a falling curve the upper right, a rising one the upper left
    for a, kind, corner in ((left, "vanishing", "upper right"), (right, "growing", "upper left")):
        a.set_yscale("log")
        a.set_xlabel("sequence length $T$")
        a.set_ylabel(r"$|\partial h_{T-1}/\partial h_0|$")
        a.set_title(kind)
        a.legend(loc=corner, fontsize=8)
    right.figure.suptitle(rf"tanh trajectories, $w_h={w_h:g}$, $w_x={w_x:g}$")
    return lines


def plot_sensitivity_heatmap(ax, w_h_values=None, T: int = 40, x=0.0, clip: float = 12.0) -> list:
    """``log10 |dh_{T-1}/dh_t|`` over step ``t`` (x axis) and ``w_h`` (y axis); the 0 contour
    separates the vanishing (below 1) and exploding (above 1) regions.  Colours are clipped at ``±clip``."""
    w_h_values = np.linspace(0.2, 2.0, 91) if w_h_values is None else paths.values("w_h_values", w_h_values, allow_scalar=False)
    T = validate.integer("T", T, minimum=2)
    clip = validate.real("clip", clip, positive=True)
    x = validate.real("x", x)
    logs = paths.log10_path_products(w_h_values, x, T)  # (len(w_h), T)
    t = np.arange(T)
    # rasterized: a vector mesh of 3600 cells shows hairline seams between them in a PDF viewer
    mesh = ax.pcolormesh(t, w_h_values, np.clip(logs, -clip, clip), shading="nearest", cmap="RdBu_r", vmin=-clip, vmax=clip,
                         rasterized=True)
    # the contour leaves out the last step, t = T - 1, where the product is empty and 1 at every w_h: there the level
    # 1 would be traced along the whole column, though nothing changes there
    contour = ax.contour(t[:-1], w_h_values, logs[:, :-1], levels=[0.0], colors="k", linewidths=1.0)
    ax.figure.colorbar(mesh, ax=ax, label=r"$\log_{10}|\partial h_{T-1}/\partial h_t|$")
    ax.set_xlabel("step t")
    ax.set_ylabel(r"recurrent weight $w_h$")
    ax.set_title(f"tanh RNN, T = {T}, constant input x = {x:g}")
    mesh.log10_data = logs  # the unclipped values, for readers of the artist
    return [mesh, contour]


def plot_jacobian_norms(ax, weights: paths.RNNWeights | None = None, X=None, seed: int = 0) -> list:
    """Measured ``||J_t ... J_{tau+1}||_2``, ``prod ||J_j||_2`` and Pascanu's bound ``(c ||W_h||_2)^(t-tau)`` by distance
    (``c`` the activation's largest slope: 1 for tanh, and the bound is then printed without it).

    Default: a tanh RNN with D = 4, H = 8, ``||W_h||_2 = 1.5``, 40 standard normal inputs.
    """
    rng = np.random.default_rng(validate.integer("seed", seed, minimum=0))
    if weights is None:
        weights = paths.RNNWeights.random(4, 8, rng, spectral_norm=1.5)
    if X is None:
        X = rng.standard_normal((40, weights.input_size))
    norms = paths.jacobian_product_norms(weights, X)
    slope = paths.gamma(weights.activation)
    d = norms.distance
    lines = [
        ax.plot(d, norms.measured, marker=".", label=r"measured $\|\mathbf{J}_t\cdots \mathbf{J}_{\tau+1}\|_2$")[0],
        ax.plot(d, norms.norm_product, ls="--", label=r"$\prod_{j=\tau+1}^{t} \|\mathbf{J}_j\|_2$")[0],
        ax.plot(d, norms.pascanu, ls=":", label="Pascanu bound " + (r"$\|\mathbf{W}_h\|_2^{\,t-\tau}$" if slope == 1 else
                                                                   rf"$({slope:g}\,\|\mathbf{{W}}_h\|_2)^{{t-\tau}}$"))[0],
    ]
    ax.set_yscale("log")
    ax.set_xlabel(r"distance $t - \tau$")
    ax.set_ylabel("spectral norm")
    ax.set_title(f"vector {weights.activation} RNN, state width {weights.hidden_size}, " + r"$\|\mathbf{W}_h\|_2$"
                 + f" = {np.linalg.norm(weights.W_h, 2):.3g}")
    # the legend lists the curves from the top one down, as they lie at the far end of the plot
    ax.legend(handles=top_down(lines))
    return lines


def gradient_flow_cells(width: int = 16, input_size: int = 4, seed: int = 0) -> dict:
    """An RNN, a GRU and an LSTM of the same width with PyTorch's default initialisation."""
    width = validate.integer("width", width, minimum=1)
    input_size = validate.integer("input_size", input_size, minimum=1)
    rng = np.random.default_rng(validate.integer("seed", seed, minimum=0))
    return {
        "RNN": paths.RNNWeights.random(input_size, width, rng),
        "GRU": gated.GRUWeights.random(input_size, width, rng),
        "LSTM": gated.LSTMWeights.random(input_size, width, rng),
    }


def with_gate_bias(weights, gate: str, bias: float):
    """A copy of GRU or LSTM weights with ``bias`` added to one gate's bias (the text's combined
    ``b_a = b_ih + b_hh``): ``with_gate_bias(lstm, "f", 3.0)`` opens the forget gate (``f_t`` near
    ``sigmoid(3) = 0.95``), ``with_gate_bias(gru, "u", 3.0)`` makes the GRU keep its state."""
    bias = validate.real("bias", bias)
    k = weights.GATES.index(validate.choice("gate", gate, weights.GATES))
    H = weights.hidden_size
    b = np.array(weights.bias_ih, dtype=np.float64, copy=True)
    b[k * H:(k + 1) * H] += bias
    return type(weights)(weights.weight_ih, weights.weight_hh, b, weights.bias_hh)


def plot_gradient_flow(axes, width: int = 16, T: int = 60, seed: int = 0, gate_bias: float = 3.0) -> list:
    """The text's point about gates (week06 §LSTM:400, §GRU:382): at fixed gates the carry derivative is
    ``diag(f_t)`` (LSTM) or ``diag(u_t)`` (GRU), so a gate held near 1 carries the gradient back where the
    plain RNN's products of ``diag(phi') W_h`` shrink it.  Solid: ``||dL/dh_s||_2`` by autograd
    (``L = h_{T-1} . v``) against the distance ``T-1-s``; dashed: the mean fixed-gate carry product ``prod u_t`` /
    ``prod f_t``.  Two panels, ``axes = (left, right)``: on the left the RNN, the GRU and the LSTM at PyTorch's default
    initialisation (gate biases near 0, gates near 0.5), on the right the GRU and the LSTM with the keeping gate's bias
    raised by ``gate_bias``.  Each axis spans every value drawn in it.  The artists are returned cell by cell (RNN,
    GRU, GRU raised, LSTM, LSTM raised), each labelled with its cell and setting."""
    T = validate.integer("T", T, minimum=2)
    gate_bias = validate.real("gate_bias", gate_bias)
    panels = list(axes) if isinstance(axes, (list, tuple)) or getattr(axes, "ndim", 0) == 1 else [axes]
    if len(panels) != 2:
        raise ValueError("axes: a pair of matplotlib Axes (left, right), e.g. plt.subplots(1, 2)[1]; got "
                         f"{type(axes).__name__}" + (f" of {len(panels)}" if len(panels) != 1 else ""))
    left, right = panels
    cells = gradient_flow_cells(width, seed=seed)
    raised_words = {"u": f"$u$'s bias raised by {gate_bias:g}", "f": f"$f$'s bias raised by {gate_bias:g}"}
    variants = [("RNN", cells["RNN"], "default init"),
                ("GRU", cells["GRU"], "default init"),
                ("GRU", with_gate_bias(cells["GRU"], "u", gate_bias), raised_words["u"]),
                ("LSTM", cells["LSTM"], "default init"),
                ("LSTM", with_gate_bias(cells["LSTM"], "f", gate_bias), raised_words["f"])]
    colors = {"RNN": "0.2", "GRU": "tab:orange", "LSTM": "tab:green"}
    X = np.random.default_rng(seed + 1).standard_normal((T, 4))
    grad = r"$\|\partial \mathcal{L}/\partial \mathbf{h}_\tau\|_2$"
    # each cell its own colour and marker (GRU circles, LSTM squares; filled on the gradient, open on the carry
    # product), set at different steps so that curves lying on one another stay visible
    marks = {"RNN": ("^", 0), "GRU": ("o", 0), "LSTM": ("s", 5)}
    artists, short, lowest = [], {left: [], right: []}, {left: np.inf, right: np.inf}
    for name, w, setting in variants:
        ax = left if setting == "default init" else right
        flow = paths.gradient_flow(w, X)
        marker, start = marks[name]
        line = ax.plot(flow.distance, flow.grad_norm, color=colors[name], lw=1.8, marker=marker, ms=4,
                       markevery=(start, 10), label=f"{name}, {setting}: " + grad)[0]
        artists.append(line)
        short[ax].append(f"{name}: gradient")
        lowest[ax] = min(lowest[ax], np.min(flow.grad_norm))
        if flow.carry_at_fixed_gates is not None:
            gate = "u" if name == "GRU" else "f"
            artists.append(ax.plot(flow.distance, flow.carry_at_fixed_gates, ls="--", color=colors[name], lw=1.1,
                                   marker=marker, ms=5, mfc="white", markevery=(start + 2, 10),
                                   label=f"{name}, {setting}: mean " + rf"$\prod {gate}_t$")[0])
            short[ax].append(f"{name}: mean " + rf"$\prod {gate}_t$")
            lowest[ax] = min(lowest[ax], np.min(flow.carry_at_fixed_gates))
    for ax, title in ((left, "default initialisation"), (right, "keeping gate's bias raised by " + f"{gate_bias:g}")):
        ax.set_yscale("log")
        # every value drawn: a product of gates is not limited by the machine epsilon (the default GRU's goes below it)
        ax.set_ylim(bottom=lowest[ax] / 3, top=3)
        ax.set_xlabel(r"steps back $T - 1 - \tau$")
        ax.set_title(title, fontsize=10)
        # below the axes: inside, at any corner, it hid curves
        lines = [a for a in artists if a.axes is ax]
        ax.legend(lines, short[ax], fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False, ncol=2)
    for ax in (left, right):  # each panel its own log scale, so each names it
        ax.set_ylabel("gradient norm (solid),\nmean carry product (dashed)")
    return artists
