"""General-t sums behave as SymPy's ``Sum`` under ``subs`` and ``doit``; derivation objects pickle
(a notebook's results can be cached, sent to a worker process, or saved)."""

from __future__ import annotations

import pickle

import pytest
import sympy as sp

from seqgrad.derive import rnn
from seqgrad.derive.builtin_cells import BUILTIN
from seqgrad.derive.cell import T, StepSum


def _general_grad(kind="rnn", name=None):
    cell = BUILTIN[kind]()
    gen = cell.general()
    name = name or next(iter(cell.param_shapes))
    return gen, gen.grad(name)


def test_subs_bounds_the_sum_and_doit_writes_it_out_as_for_sympy_sum():
    _, g = _general_grad("rnn", "w_h")
    assert isinstance(g, StepSum)
    bounded = g.subs(T, 3)
    assert isinstance(bounded, StepSum) and bounded.args[1:] == (0, 2)  # as Sum(f, (t, 0, T-1)).subs(T, 3)
    assert bounded.doit() == g.at(3)
    assert str(bounded.doit()) == "g_0^z*h_{-1} + g_1^z*h_0 + g_2^z*h_1"
    assert (5 * g).subs(T, 4).doit() == 5 * g.at(4)  # inside an expression too
    assert g.doit() == g  # a general T stays a sum, as Sum(..., (t, 0, T - 1)).doit() does


@pytest.mark.parametrize("kind", sorted(BUILTIN))
def test_general_and_unrolled_derivations_pickle(kind):
    cell = BUILTIN[kind]()
    gen = cell.general()
    again = pickle.loads(pickle.dumps(gen))
    for name in cell.param_shapes:
        assert again.grad(name) == gen.grad(name)
        if isinstance(gen.grad(name), StepSum):
            assert again.grad(name).subs(T, 3).doit() == gen.grad(name).at(3)
    net = cell.unroll(2)
    net_again = pickle.loads(pickle.dumps(net))
    assert [net_again.grad(n) for n in net.parameters] == [net.grad(n) for n in net.parameters]
    assert pickle.loads(pickle.dumps(cell)).general().grad(next(iter(cell.param_shapes))) == gen.grad(next(iter(cell.param_shapes)))


def test_the_textbook_rnn_pickles():
    net = rnn.unroll(steps=3, activation="tanh")
    again = pickle.loads(pickle.dumps(net))
    assert again.grad("w_h") == net.grad("w_h") and str(again.latex()) == str(net.latex())
