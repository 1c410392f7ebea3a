"""crosscheck.lambdify: generated numpy/torch code from derivation programs."""

from __future__ import annotations

import doctest
import re

import numpy as np
import pytest
import sympy as sp
import torch

import seqgrad.crosscheck.lambdify as lam
from seqgrad.crosscheck.cells import RNNFunction
from seqgrad.crosscheck.code_printer import identifier
from seqgrad.crosscheck.lambdify import lambdify
from seqgrad.derive import rnn
from seqgrad.derive.program import Program
from seqgrad.errors import NonFiniteError, SeqgradValueError, ShapeError


def test_module_doctest():
    result = doctest.testmod(lam)
    assert result.attempted > 0 and result.failed == 0


def test_identifiers_are_python_names_and_unique():
    taken: set[str] = set()
    assert identifier("h_{-1}", taken) == "h_m1"
    assert identifier("g_0^z", taken) == "g_0_z"
    assert identifier("g_0^z", taken) == "g_0_z_2"
    assert identifier("lambda", taken) == "vlambda"


def test_each_definition_is_one_assignment_and_shared():
    net = rnn.unroll(steps=4, activation="tanh")
    f = lambdify(net.program, [net.grad("w_x"), net.grad("w_h")], net.program.leaves())
    body = f.source.splitlines()
    assert sum(line.strip().startswith("g_1_z =") for line in body) == 1
    assert not any("h_0 = numpy.tanh" in line and "z_0" not in line for line in body)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_relu_is_elementwise_maximum_and_slope_zero_at_zero(backend):
    z = sp.Symbol("z")
    prog = Program("relu")
    h = prog.define(sp.Symbol("h"), sp.Max(0, z))
    s = prog.define(sp.Symbol("s"), sp.Heaviside(z, 0))
    f = lambdify(prog, [h, s], [z], backend)
    values = np.array([-2.0, 0.0, 3.0])
    arg = torch.tensor(values, dtype=torch.float64) if backend == "torch" else values
    out_h, out_s = (np.asarray(o) for o in f(arg))
    assert out_h.tolist() == [0.0, 0.0, 3.0]
    assert out_s.tolist() == [0.0, 0.0, 1.0]
    assert "torch.max(" not in f.source


def test_vector_code_is_one_loop_over_t():
    net = rnn.unroll(steps=300, activation="tanh", inputs=4, hidden=5, outputs=2)
    f = RNNFunction(net, "numpy")
    src = f.source
    before, forward, backward = src.split("for t in")
    assert "_Z = _gate_inputs(" in before  # the input projection of every step at once, before the loop
    assert re.search(r"(\w+) = _Zh\[t\]\n\s+_recur\(\1, h_prev, _WhTk, _rf\)", forward)  # the step's view, then the product
    assert "_recur_back(_gz, _Whk, _next_h, _rb)" in backward
    after = [line.strip() for line in backward.splitlines() if line.startswith("    ") and not line.startswith("        ")]
    assert "_dWx = _gate_grads(_GZ, _Xt)" in after  # sum_t (g_t^z)^T x_t as one product of the stacked steps, after the loop
    assert len(src.splitlines()) < 80  # forward and backward loops, not a line per step


def test_generic_phi_cannot_be_evaluated():
    net = rnn.unroll(steps=2, activation="phi")
    with pytest.raises(SeqgradValueError, match="concrete activation"):
        RNNFunction(net)


def test_missing_argument_is_named():
    net = rnn.unroll(steps=2)
    with pytest.raises(SeqgradValueError, match="args"):
        lambdify(net.program, [net.L], [sp.Symbol("w_x")])


def _params(net):
    D, H, C = net.shape
    rng = np.random.default_rng(0)
    return {"W_x": rng.normal(size=(H, D)), "W_h": rng.normal(size=(H, H)), "W_o": rng.normal(size=(C, H))}


@pytest.mark.parametrize("name, shape", [("W_x", (3, 3)), ("W_h", (2, 3)), ("W_o", (3, 1))])
def test_weights_of_the_wrong_shape(name, shape):
    net = rnn.unroll(steps=2, inputs=2, hidden=3, outputs=1)
    params = _params(net)
    params[name] = np.zeros(shape)
    with pytest.raises(ShapeError, match=name):
        RNNFunction(net)(params, np.zeros((1, 2, 2)), np.zeros((1, 1)))


def test_inputs_of_the_wrong_shape():
    net = rnn.unroll(steps=2, inputs=2, hidden=3, outputs=1)
    with pytest.raises(ShapeError, match="X"):
        RNNFunction(net)(_params(net), np.zeros((1, 3, 2)), np.zeros((1, 1)))
    with pytest.raises(ShapeError, match="y"):
        RNNFunction(net)(_params(net), np.zeros((1, 2, 2)), np.zeros((1, 2)))
    with pytest.raises(SeqgradValueError, match="params"):
        RNNFunction(net)({"W_x": np.zeros((3, 2))}, np.zeros((1, 2, 2)), np.zeros((1, 1)))


@pytest.mark.parametrize("where", ["X", "y", "W_h"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_inputs(where, bad):
    net = rnn.unroll(steps=2, inputs=2, hidden=3, outputs=1)
    params, X, y = _params(net), np.zeros((2, 2, 2)), np.zeros((2, 1))
    {"X": X, "y": y, "W_h": params["W_h"]}[where][0, 0] = bad
    with pytest.raises(NonFiniteError, match=where):
        RNNFunction(net)(params, X, y)


def test_non_finite_scalar_argument_of_generated_function():
    net = rnn.unroll(steps=2)
    f = lambdify(net.program, [net.L], net.program.leaves())
    with pytest.raises(NonFiniteError, match="w_h"):
        f(float("nan"), 1.0, 0.1, 0.2, 1.0, 0.5)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_matches_cpu():
    net = rnn.unroll(steps=4, activation="tanh", inputs=2, hidden=3, outputs=1, bias=True)
    rng = np.random.default_rng(1)
    params = dict(_params(net), b_h=rng.normal(size=3), b_o=rng.normal(size=1))
    X, y = rng.normal(size=(5, 4, 2)), rng.normal(size=(5, 1))
    cpu = RNNFunction(net, "torch", "cpu")(params, X, y)
    gpu = RNNFunction(net, "torch", "cuda")(params, X, y)
    for k in cpu:
        assert gpu[k].device.type == "cuda"
        np.testing.assert_allclose(gpu[k].cpu().numpy(), cpu[k].numpy(), rtol=1e-9, atol=1e-10)


def test_bare_expression_without_a_program():
    x, w = sp.symbols("x w")
    f = lambdify(None, [sp.tanh(w * x), sp.Max(0, x - 1)], [x, w], "torch")
    a, b = f(torch.tensor([0.5, 2.0], dtype=torch.float64), 2.0)
    np.testing.assert_allclose(a.numpy(), np.tanh([1.0, 4.0]))
    assert b.tolist() == [0.0, 1.0]
