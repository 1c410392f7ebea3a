"""The unrolled BPTT of derive.bptt: the double sum over t and tau with the ordered product of Jacobians, as the
notes print it, evaluated at T = 4 entry by entry (crosscheck.bptt_eval) and compared with torch autograd in float64."""

from __future__ import annotations

import numpy as np
import pytest

from seqgrad.derive import bptt, builtin_cells
from seqgrad.derive.latex_settings import DEFAULT
from seqgrad.errors import SeqgradValueError

pytest.importorskip("torch")

from seqgrad.crosscheck.bptt_eval import autograd_case, evaluate  # noqa: E402

STEPS, D, H = 4, 2, 3


def _unrolled():
    return bptt.Unrolled(builtin_cells.rnn_cell(sizes={"D": D, "H": H, "C": 1}, bias=True, on="every").general())


@pytest.mark.parametrize("name", ["w_h", "w_x", "b_h"])
def test_the_double_sum_matches_torch_autograd(name):
    p, values, grads = autograd_case(np.random.default_rng(0), STEPS, D, H)
    closed = evaluate(_unrolled(), name, p, values, STEPS)
    expected = grads[name].reshape(closed.shape)
    assert np.max(np.abs(closed - expected)) < 1e-12, (closed, expected)


def test_the_wrong_order_of_the_product_is_caught():
    """The comparison can fail: with the Jacobians multiplied earliest first the sum disagrees with autograd."""
    p, values, grads = autograd_case(np.random.default_rng(0), STEPS, D, H)
    wrong = evaluate(_unrolled(), "w_h", p, values, STEPS, latest_first=False)
    assert np.max(np.abs(wrong - grads["w_h"])) > 1e-3


def test_the_registered_check_passes():
    from seqgrad.crosscheck.registry import all_checks, run_checks

    [result] = run_checks(all_checks("rnn.bptt_closed_form"), device="cpu", show_progress=False)
    assert result.status == "pass" and result.max_abs_error < 1e-12


def test_the_induction_step_is_the_derivations_recursion():
    assert _unrolled().one_step_holds()


def test_the_rows_print_the_textbook_product_and_sums():
    tex = [DEFAULT.latex(lhs) + " = " + DEFAULT.latex(rhs) for lhs, rhs in _unrolled().rows(("w_h",))]
    assert tex[0] == (r"\frac{\partial \mathbf{h}_{t}}{\partial \mathbf{h}_{\tau}} = \mathbf{J}_{t} \mathbf{J}_{t-1} \cdots "
                      r"\mathbf{J}_{\tau+1}")  # J_t a matrix, bold as the state
    assert tex[1] == r"\mathbf{J}_{t} = \operatorname{diag}(1 - \mathbf{h}_{t}^{2}) \mathbf{W}_{h}"
    assert tex[2].startswith(r"\mathbf{g}^{h}_{\tau} = \sum_{t=\tau}^{T - 1} \mathbf{e}_{t} \mathbf{W}_{o} \frac{")
    assert tex[3].startswith(r"\frac{\partial \mathcal{L}}{\partial \mathbf{W}_{h}} = \sum_{t=0}^{T - 1} \sum_{\tau=0}^{t} ")
    assert r"\right)^{\top} \mathbf{h}_{\tau-1}" in tex[3] and "tau" not in tex[3].replace(r"\tau", "")


def test_a_cell_it_does_not_cover_is_one_clear_error():
    with pytest.raises(SeqgradValueError, match="on='every'"):
        bptt.Unrolled(builtin_cells.rnn_cell(sizes={"D": 2, "H": 3, "C": 1}).general())
    with pytest.raises(SeqgradValueError, match="one state"):
        bptt.Unrolled(builtin_cells.lstm_cell(on="every").general())
    with pytest.raises(SeqgradValueError, match="used at every step"):
        _unrolled().gradient("w_o")
