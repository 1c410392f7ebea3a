"""Cells read from PyTorch (Cell.from_torch): torch.nn recurrent modules and step modules traced with
torch.fx, each checked against the module's own autograd in float64; bad modules refused with one error
naming the module, the operation and the line."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import sympy as sp

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from seqgrad.crosscheck import torch_examples as te  # noqa: E402
from seqgrad.crosscheck.cli import main  # noqa: E402
from seqgrad.crosscheck.torch_cells import against_autograd  # noqa: E402
from seqgrad.derive.cell import Cell  # noqa: E402
from seqgrad.derive.from_torch import TorchReadError  # noqa: E402
from seqgrad.derive.program_text import sstr  # noqa: E402

TOL = 1e-10
HERE = "test_from_torch.py"


def _all_names(module, head=None):
    names = {n for n, _ in module.named_parameters()} | {"L", "X"}
    if isinstance(head, nn.Module):
        names |= {"head." + n for n, _ in head.named_parameters()}
    return names


def _checked(cell, module, **kw):
    rows = against_autograd(cell, module, steps=(1, 5), **kw)
    assert {name for _, name, _, _ in rows} == _all_names(module, kw.get("head", cell.torch.head))
    assert rows.max_abs < TOL, str(rows)
    return rows


def test_import_derive_does_not_import_torch():
    code = ("import sys; import seqgrad.derive, seqgrad.derive.cell, seqgrad.derive.from_torch; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("make", [
    lambda: nn.RNN(3, 4),
    lambda: nn.RNN(3, 4, nonlinearity="relu", num_layers=2, batch_first=True),
    lambda: nn.GRU(3, 4, batch_first=True),
    lambda: nn.GRU(2, 3, num_layers=2, bias=False),
    lambda: nn.LSTM(3, 4, num_layers=2, batch_first=True),
    lambda: nn.RNNCell(3, 4, nonlinearity="relu"),
    lambda: nn.GRUCell(3, 4),
    lambda: nn.LSTMCell(3, 4, bias=False),
], ids=["rnn", "rnn-relu-2layers", "gru", "gru-2layers-nobias", "lstm-2layers", "rnncell-relu", "grucell", "lstmcell"])
def test_torch_nn_modules_against_their_own_autograd(make):
    torch.manual_seed(0)
    module = make()
    _checked(Cell.from_torch(module), module)


def test_gru_equations_in_torch_conventions_with_its_weights():
    torch.manual_seed(1)
    gru = nn.GRU(3, 4)
    cell = Cell.from_torch(gru)
    eqs = dict(cell.equations)
    assert [n for n, _ in cell.equations] == ["zr", "r", "zz", "z", "a", "zn", "n", "h"]
    assert eqs["h"] == (1 - sp.Symbol("z")) * sp.Symbol("n") + sp.Symbol("z") * sp.Symbol("h_prev")
    assert eqs["zn"].has(sp.Symbol("r") * sp.Symbol("a"))  # the reset gate multiplies W_hn h_{t-1} + b_hn
    values = cell.torch.values()
    w = gru.weight_ih_l0.detach().double().numpy()
    np.testing.assert_array_equal(values["W_iz"], w[4:8])  # gate order r, z, n
    np.testing.assert_array_equal(values["b_hn"], gru.bias_hh_l0.detach().double().numpy()[8:12])
    gen = cell.general()
    assert sstr(gen.grad("w_hn")) == "Sum_{t=0}^{T-1} ((g_t^{z^n}.T) ∘ (r_t.T))*h_{t-1}"


def test_lstm_gate_names_and_carry():
    cell = Cell.from_torch(nn.LSTMCell(2, 3))
    assert [n for n, _ in cell.equations][1::2][:4] == ["i", "f", "g", "o"]
    assert str(cell.general().transition(of="c", wrt="c")) == "diag(f_t)"
    assert "W_hg" in cell.parameter_names and "b_ig" in cell.parameter_names


def test_heads_losses_and_positions():
    torch.manual_seed(2)
    lstm = nn.LSTM(3, 4, batch_first=True)
    head = nn.Linear(4, 2)
    cell = Cell.from_torch(lstm, head=head, on="every", reduction="mean")
    _checked(cell, lstm)
    mlp = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3))
    cell = Cell.from_torch(lstm, head=mlp, loss=nn.CrossEntropyLoss(), on=(0, 2))
    assert cell.loss.kind == "cross_entropy" and cell.loss.batch == "mean"
    rows = against_autograd(cell, steps=(3, 6))
    assert rows.max_abs < TOL and "head.2.bias" in {n for _, n, _, _ in rows}
    # a head given to the check is read into the cell first; a function head has no parameters
    rows = against_autograd(Cell.from_torch(lstm), lstm, head=lambda h: torch.tanh(h) * 2, steps=(4,))
    assert rows.max_abs < TOL


def test_check_uses_the_module_and_fails_when_it_differs():
    torch.manual_seed(3)
    gru = nn.GRU(3, 4, batch_first=True)

    class Scaled(nn.GRU):  # same parameters, another forward
        def forward(self, x, h=None):
            out, hn = super().forward(x, h)
            return 1.01 * out, hn

    other = Scaled(3, 4, batch_first=True)
    other.load_state_dict(gru.state_dict())
    cell = Cell.from_torch(gru)
    assert against_autograd(cell, gru, steps=(3,)).max_abs < TOL
    assert against_autograd(cell, other, steps=(3,)).max_abs > 1e-4
    # a callable loss is used on the torch side only: one that is not the cell's loss shows as a mismatch
    assert against_autograd(cell, gru, loss=lambda yhat, y: ((yhat - y) ** 2).sum(), steps=(3,)).max_abs > 1e-4
    # the weights are the module's: another instance of the same structure, its own weights
    fresh = nn.GRU(3, 4, batch_first=True)
    assert against_autograd(cell, fresh, steps=(3,)).max_abs < TOL


def test_module_layout_of_X():
    torch.manual_seed(4)
    rnn = nn.RNN(3, 4)  # batch_first=False: X is (T, B, D), as the module takes it
    X = torch.randn(6, 2, 3)
    rows = against_autograd(Cell.from_torch(rnn), rnn, X)
    assert rows.max_abs < TOL and {T for T, *_ in rows} == {6}


@pytest.mark.parametrize("make, states, widths", [
    (te.ResetBeforeGRU, "h", (3, 4)),
    (te.PeepholeLSTM, "h c", (3, 4)),
    (te.MinimalGatedUnit, "h", (3, 4)),
], ids=["gru-variant", "peephole-lstm", "minimal-gated-unit"])
def test_step_modules_against_their_own_autograd(make, states, widths):
    torch.manual_seed(5)
    module = make(*widths)
    D, H = widths
    hs = [torch.zeros(2, H) for _ in states.split()]
    example = (torch.zeros(2, D), tuple(hs)) if len(hs) > 1 else (torch.zeros(2, D), hs[0])
    cell = Cell.from_torch(module, states=states, example=example)
    _checked(cell, module)
    _checked(Cell.from_torch(module, states=states, example=example, head=nn.Linear(H, 2), on="every"), module)


def test_step_module_names_from_the_code():
    cell = te.peephole_lstm()
    names = [n for n, _ in cell.equations]
    assert names == ["zi", "i", "zf", "f", "zg", "g", "c", "zo", "o", "h"]
    assert cell.parameter_names[:3] == ["b_i", "W_i", "U_i"]  # the chunk of W, U and b into i, f, g, o
    assert sstr(cell.general().grad("p_o")) == "Sum_{t=0}^{T-1} g_t^{z^o} ∘ c_t"
    mgu = te.minimal_gated_unit()
    assert {"W_fx", "W_fh"} <= set(mgu.parameter_names)  # torch.cat([x, h]) splits W_f by columns


class Ops(nn.Module):
    """Every supported operation once: @ with W.T and W, F.linear, split, narrow, column slices, activations."""

    def __init__(self, D=3, H=4):
        super().__init__()
        self.A = nn.Parameter(torch.randn(3 * H, D) * 0.5)
        self.Bt = nn.Parameter(torch.randn(H, 3 * H) * 0.5)  # used as h @ Bt (in x out)
        self.b = nn.Parameter(torch.randn(3 * H) * 0.1)
        self.C, self.c = nn.Parameter(torch.randn(H, H) * 0.5), nn.Parameter(torch.randn(H) * 0.1)
        self.act = nn.GELU(approximate="tanh")

    def forward(self, x, h):
        g = x @ self.A.T + h @ self.Bt + self.b
        a, rest = torch.split(g, [4, 8], dim=1)
        b = rest.narrow(1, 0, 4)
        c = rest[:, 4:8]
        u = F.silu(a) - F.softplus(b) / 2 + F.leaky_relu(c) + torch.relu(c) - self.act(a)
        return 0.5 * torch.tanh(F.linear(u, self.C, self.c)) + 0.5 * h


def test_every_supported_operation():
    torch.manual_seed(6)
    module = Ops()
    cell = Cell.from_torch(module, states="h", example=(torch.zeros(1, 3), torch.zeros(1, 4)))
    _checked(cell, module)


class _Step(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin, self.rec = nn.Linear(3, 4), nn.Linear(4, 4)


class Branchy(_Step):
    def forward(self, x, h):
        if h.sum() > 0:
            return torch.tanh(self.lin(x))
        return h


class InPlace(_Step):
    def forward(self, x, h):
        a = self.lin(x)
        a.mul_(2)
        return torch.tanh(a + self.rec(h))


class AugAssign(_Step):
    def forward(self, x, h):
        a = self.lin(x)
        a += self.rec(h)
        return torch.tanh(a)


class Unknown(_Step):
    def forward(self, x, h):
        return torch.exp(self.lin(x)) * h


class Elman(_Step):
    def forward(self, x, h):
        return torch.tanh(self.lin(x) + self.rec(h))


class NotRecurrent(_Step):
    def forward(self, x, h):
        return torch.tanh(self.lin(x))


class ExactGelu(_Step):
    def forward(self, x, h):
        return F.gelu(self.lin(x) + self.rec(h))


class TanhGelu(_Step):
    def __init__(self, approximate="tanh"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x, h):
        return F.gelu(self.lin(x) + self.rec(h), approximate=self.approximate)


@pytest.mark.parametrize("module, name", [(ExactGelu(), "gelu("), (TanhGelu(), "tanh(")], ids=["exact", "tanh"])
def test_gelu_both_forms_against_their_own_autograd(module, name):
    """torch's default GELU is the erf form: it is the registry's gelu (erf in the compiled loop), not the tanh
    approximation; both forms are checked against the module's own autograd."""
    torch.manual_seed(6)
    cell = Cell.from_torch(module, states="h", example=(X2, H2))
    assert name in str(cell.equations)
    _checked(cell, module)


X2, H2 = torch.zeros(2, 3), torch.zeros(2, 4)


@pytest.mark.parametrize("module, kw, words", [
    (nn.Linear(3, 4), {}, ["Linear", "recurrent"]),
    (nn.GRU(3, 4, bidirectional=True), {}, ["GRU", "bidirectional"]),
    (nn.LSTM(3, 4, proj_size=2), {}, ["LSTM", "proj_size"]),
    (nn.GRU(3, 4, num_layers=2, dropout=0.5), {}, ["dropout"]),
    (Branchy(), dict(states="h", example=(X2, H2)), ["Branchy", "control flow", HERE, "if h.sum() > 0"]),
    (InPlace(), dict(states="h", example=(X2, H2)), ["InPlace", "mul_", HERE, "a.mul_(2)"]),
    (AugAssign(), dict(states="h", example=(X2, H2)), ["AugAssign", "in-place", HERE, "a += self.rec(h)"]),
    (Unknown(), dict(states="h", example=(X2, H2)), ["Unknown", "torch.exp", HERE]),
    (Elman(), dict(states="h c", example=(X2, H2)), ["Elman", "states"]),
    (Elman(), dict(states="h", example=(X2, torch.zeros(2, 5))), ["Elman", "self.rec", HERE, "example"]),
    (Elman(), dict(states="h", example=(torch.zeros(2, 6), H2)), ["Elman", "self.lin", HERE]),
    (Elman(), dict(states="h", example=(torch.zeros(3), H2)), ["Elman", "example x", "(B, width)"]),
    (NotRecurrent(), dict(states="h", example=(X2, H2)), ["NotRecurrent", "previous state"]),
    (Elman(), dict(states="h", example=(X2, H2), loss=nn.MSELoss()), ["MSELoss", "squared"]),
    (Elman(), dict(states="h", example=(X2, H2), head=nn.Linear(5, 2)), ["head", "width 4"]),
    (nn.GRU(3, 4), dict(states="h", example=(X2, H2)), ["states"]),
], ids=["linear", "bidirectional", "proj", "dropout", "control-flow", "inplace-method", "augmented", "unknown",
        "state-arity", "state-shape", "input-shape", "not-2d", "not-recurrent", "mse", "head-width",
        "nn-with-states"])
def test_bad_modules_one_clear_error(module, kw, words):
    with pytest.raises(TorchReadError) as info:
        Cell.from_torch(module, **kw)
    message = str(info.value)
    assert "\n" not in message
    for w in words:
        assert w in message, (w, message)


def test_not_a_module():
    from seqgrad.errors import SeqgradTypeError

    with pytest.raises(SeqgradTypeError, match="torch.nn.Module"):
        Cell.from_torch("gru")


def test_cli_derive_torch(capsys, tmp_path, monkeypatch):
    assert main(["derive", "torch", "seqgrad.crosscheck.torch_examples:peephole_lstm", "--check"]) == 0
    out = capsys.readouterr().out
    assert "dL/dp_o = Sum_{t=0}^{T-1} g_t^{z^o} ∘ c_t" in out and "all gradients agree" in out
    (tmp_path / "mycells.py").write_text("import torch\ncell = torch.nn.GRUCell(2, 3)\n"
                                         "from seqgrad.crosscheck.torch_examples import MinimalGatedUnit\n"
                                         "mgu = MinimalGatedUnit(2, 3)\n")
    monkeypatch.chdir(tmp_path)
    assert main(["derive", "torch", "mycells:cell", "--latex"]) == 0
    assert "\\begin{align*}" in capsys.readouterr().out
    assert main(["derive", "torch", "mycells:mgu", "--states", "h", "--example", "x=2,h=3", "--steps", "2"]) == 0
    assert "h_1 =" in capsys.readouterr().out
    for argv in (["mycells:nothing"], ["nosuchmodule:x"], ["mycells:mgu"], ["mycells:mgu", "--states", "h", "--example", "x=2"],
                 ["1+1"]):
        assert main(["derive", "torch", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and "error" in err


def test_printer_parenthesises_products_in_matrix_products():
    """A Hadamard factor of a matrix product (and a matrix product inside a Hadamard product) is printed in
    parentheses: Python's @ and * bind alike, so a*b @ W is (a*b) @ W (the Ops cell above met both)."""
    from seqgrad.crosscheck.code_printer import _Printer

    a, b = sp.MatrixSymbol("a", 1, 3), sp.MatrixSymbol("b", 1, 3)
    W = sp.MatrixSymbol("W", 3, 3)
    p = _Printer({})
    assert p._print(sp.HadamardProduct(a, sp.MatMul(b, W))) == "a*(b @ W)"
    assert p._print(sp.MatMul(W, sp.HadamardProduct(a.T, b.T))) == "W @ (a.T*b.T)"


def test_module_docstring_examples():
    import doctest

    from seqgrad.crosscheck import torch_cells

    result = doctest.testmod(torch_cells, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("of, wrt", [("h", "h"), ("c", "c"), ("c", "h")])
def test_transition_jacobian_of_a_step_module_is_torchs(of, wrt):
    """J_t = d s_t / d s'_{t-1}, derived from the traced equations and evaluated along a trajectory at the
    module's weights, against torch's Jacobian of the module's own step at the same states."""
    from seqgrad.crosscheck.cell_paths import transition_jacobians

    torch.manual_seed(7)
    step = te.PeepholeLSTM(3, 4).double()
    cell = Cell.from_torch(step, states="h c", example=(torch.zeros(1, 3), (torch.zeros(1, 4), torch.zeros(1, 4))))
    x = torch.randn(6, 3, dtype=torch.float64)
    ours = transition_jacobians(cell, cell.torch.values(), x.numpy(), of=of, wrt=wrt)
    h, c = torch.zeros(1, 4, dtype=torch.float64), torch.zeros(1, 4, dtype=torch.float64)
    k_of, k_wrt = "hc".index(of), "hc".index(wrt)
    for t in range(6):
        def one(s, t=t, h=h, c=c):
            state = [h, c]
            state[k_wrt] = s.reshape(1, 4)
            return step(x[t:t + 1], tuple(state))[k_of].reshape(4)

        J = torch.autograd.functional.jacobian(one, (h, c)[k_wrt].reshape(4))
        np.testing.assert_allclose(ours[t], J.numpy(), atol=1e-12, rtol=0)
        with torch.no_grad():
            h, c = step(x[t:t + 1], (h, c))


def test_the_equation_check_points_to_the_module_check():
    from seqgrad.crosscheck import cells
    from seqgrad.errors import SeqgradTypeError

    gru = nn.GRU(3, 4)
    with pytest.raises(SeqgradTypeError, match="torch_cells.against_autograd"):
        cells.against_autograd(Cell.from_torch(gru), gru)


def test_an_equation_named_g_is_not_taken_for_a_sensitivity():
    """The LSTM's candidate gate is torch's g: the engine's symbol cache keyed sensitivities by "g" and read
    a sequence named g as one (an AttributeError in every general derivation of a cell with a g)."""
    cell = Cell("zg = w_x*x + w_h*h_prev; g = tanh(zg); h = 0.5*h_prev + g", states="h", params="w_x w_h w_o",
                head="w_o*h")
    assert sstr(cell.general().transition()) == "1/2 + w_h*(1 - g_t**2)"
