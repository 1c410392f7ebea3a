r"""The course's recurrent cells as definitions on the cell engine (:mod:`derive.cell`).

Each is its step equations, in the text's notation and PyTorch's conventions:

* the RNN (text lines 65-176, 264-324): ``z_t = w_x x_t + w_h h_{t-1} (+ b_h)``, ``h_t = phi(z_t)``;
* the GRU (``torch.nn.GRU``: gates r, u (PyTorch's z), candidate; the reset gate multiplies the whole
  recurrent affine map, ``b_hn`` included), lines 362-382;
* the LSTM (``torch.nn.LSTM``: gates i, f, candidate c, o; each bias ``b_a`` is PyTorch's
  ``b_ih + b_hh``), lines 384-400.

>>> print(rnn_cell().general().backward_rows()[3])
g_t^z = g_t^h*(1 - h_t**2)
>>> lstm_cell(sizes=dict(D=2, H=3, C=1)).general().transition(of="c", wrt="c")  # the carry: diag(f_t)
diag(f_t)
"""

from __future__ import annotations

from typing import Mapping

from . import activations
from .cell import Cell

__all__ = ["rnn_cell", "gru_cell", "lstm_cell", "BUILTIN"]


def _rnn_activation(name: str) -> str:
    activations.get(name)  # validates the name (an operation of the registry, or phi)
    return {"identity": "z"}.get(name, f"{name}(z)")


def rnn_cell(activation: str = "tanh", sizes: Mapping[str, int] | None = None, bias: bool = False,
             loss: str = "squared", on="final", reduction: str = "sum", batch: str = "sum") -> Cell:
    """The text's RNN cell: ``z = w_x x + w_h h_prev (+ b_h)``, ``h = phi(z)``, head ``w_o h (+ b_o)``."""
    b, bo = (" + b_h", " + b_o") if bias else ("", "")
    params = {"w_x": ("H", "D"), "w_h": ("H", "H"), "w_o": ("C", "H")}
    if bias:
        params.update({"b_h": ("H",), "b_o": ("C",)})
    return Cell(f"z = w_x*x + w_h*h_prev{b}; h = {_rnn_activation(activation)}", states="h",
                params=params if sizes else list(params), head=f"w_o*h{bo}", sizes=sizes, loss=loss, on=on,
                reduction=reduction, batch=batch, name="rnn")


def gru_cell(sizes: Mapping[str, int] | None = None, loss: str = "squared", on="final", reduction: str = "sum",
             batch: str = "sum") -> Cell:
    """The GRU in PyTorch's convention; head ``w_o h`` (no bias)."""
    equations = """
        zr = w_xr*x + b_xr + w_hr*h_prev + b_hr
        r = sigmoid(zr)
        zu = w_xu*x + b_xu + w_hu*h_prev + b_hu
        u = sigmoid(zu)
        a = w_hn*h_prev + b_hn
        zn = w_xn*x + b_xn + r*a
        htilde = tanh(zn)
        h = u*h_prev + (1 - u)*htilde
    """
    params = {}
    for g in "run":
        params.update({f"w_x{g}": ("H", "D"), f"w_h{g}": ("H", "H"), f"b_x{g}": ("H",), f"b_h{g}": ("H",)})
    params["w_o"] = ("C", "H")
    return Cell(equations, states="h", params=params if sizes else list(params), head="w_o*h", sizes=sizes,
                loss=loss, on=on, reduction=reduction, batch=batch, name="gru",
                display={"zr": "z^r", "zu": "z^u", "zn": "z^n"})


def lstm_cell(sizes: Mapping[str, int] | None = None, loss: str = "squared", on="final", reduction: str = "sum",
              batch: str = "sum") -> Cell:
    """The LSTM in PyTorch's convention (no peepholes, no projection); head ``w_o h`` (no bias)."""
    equations = """
        zi = w_xi*x + w_hi*h_prev + b_i
        i = sigmoid(zi)
        zf = w_xf*x + w_hf*h_prev + b_f
        f = sigmoid(zf)
        zc = w_xc*x + w_hc*h_prev + b_c
        ctilde = tanh(zc)
        zo = w_xo*x + w_ho*h_prev + b_o
        o = sigmoid(zo)
        c = f*c_prev + i*ctilde
        h = o*tanh(c)
    """
    params = {}
    for g in "ifco":
        params.update({f"w_x{g}": ("H", "D"), f"w_h{g}": ("H", "H"), f"b_{g}": ("H",)})
    params["w_o"] = ("C", "H")
    return Cell(equations, states="h c", params=params if sizes else list(params), head="w_o*h", sizes=sizes,
                loss=loss, on=on, reduction=reduction, batch=batch, name="lstm",
                display={"zi": "z^i", "zf": "z^f", "zc": "z^c", "zo": "z^o"})


BUILTIN = {"rnn": rnn_cell, "gru": gru_cell, "lstm": lstm_cell}
