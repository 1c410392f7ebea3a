"""derive/activation_facts.py: each fact is proved, and the proofs can fail."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from seqgrad.derive import activation_facts as af
from seqgrad.errors import SeqgradValueError


@pytest.mark.parametrize("name", af.NAMES)
def test_every_fact_is_proved_and_has_latex(name):
    fact = af.get(name)
    proof = fact.prove()
    assert proof.holds, str(proof)
    assert proof.steps and fact.source
    tex = fact.latex()
    assert tex.startswith("\\begin{align*}") and tex.rstrip().endswith("\\end{align*}")  # a complete display
    assert fact._repr_latex_() == tex


def test_sigmoid_slope_bound_numerically():
    zs = np.linspace(-10, 10, 20001)
    s = 1 / (1 + np.exp(-zs))
    slope = s * (1 - s)
    assert slope.max() == pytest.approx(0.25) and zs[slope.argmax()] == pytest.approx(0.0)


def test_hochreiter_threshold_numerically():
    zs = np.linspace(-20, 20, 40001)
    s = 1 / (1 + np.exp(-zs))
    for w, below in ((3.99, True), (4.0, False), (-4.01, False), (-3.5, True)):
        assert bool(np.all(np.abs(s * (1 - s) * w) < 1)) is below


def test_hochreiter_proof_records_the_interval():
    steps = dict(af.get("hochreiter").prove().steps)
    assert steps["{w : |w|/4 < 1}"] == sp.Interval.open(-4, 4)


def test_pascanu_thresholds():
    assert af.gamma("tanh") == 1 and af.gamma("sigmoid") == sp.Rational(1, 4)
    steps = af.get("pascanu_sigmoid").prove().steps
    assert any(v == sp.Interval.Ropen(0, 4) for _, v in steps)


def test_relu_convention_is_stated_and_matches_torch():
    import torch

    from seqgrad.derive.activations import RELU_PRIME_AT_ZERO

    z = torch.zeros(1, requires_grad=True)
    torch.relu(z).sum().backward()
    assert float(z.grad) == RELU_PRIME_AT_ZERO == 0
    steps = dict(af.get("relu_at_zero").prove().steps)
    assert steps["right derivative at 0"] == 1 and steps["left derivative at 0"] == 0


def test_a_wrong_claim_is_not_proved(monkeypatch):
    # the tanh proof compares with derive.activations' slope; a wrong slope must be caught
    from seqgrad.derive import activations

    wrong = activations.Activation("tanh", sp.tanh, lambda z, h: 1 - h, r"\tanh", "wrong")
    monkeypatch.setitem(activations.ACTIVATIONS, "tanh", wrong)
    assert not af.get("tanh_prime").prove().holds


def test_unknown_fact_name():
    with pytest.raises(SeqgradValueError, match="fact"):
        af.get("relu_prime_max")
    with pytest.raises(SeqgradValueError, match="activation"):
        af.gamma("relu")


def test_sup_over_the_reals_from_critical_points_and_limits():
    """The maxima of the slope facts: a critical point's value, a limit at ±oo, or no verdict."""
    from seqgrad.derive.activation_facts import _sup_over_reals, z

    assert _sup_over_reals(3 - (z - 1) ** 2) == (3, sp.FiniteSet(1))
    assert _sup_over_reals(sp.tanh(z)) == (1, sp.S.EmptySet)  # never attained: the limit at +oo
    assert _sup_over_reals(sp.exp(-z ** 2) / 2 - 1)[0] == -sp.Rational(1, 2)
    assert _sup_over_reals(sp.sin(z))[0] is None  # infinitely many critical points: no verdict


def test_slope_maximum_is_the_facts_supremum_and_refuses_other_activations():
    from seqgrad.derive.activation_facts import slope_maximum
    from seqgrad.errors import SeqgradValueError

    assert slope_maximum("sigmoid") == sp.Rational(1, 4) and slope_maximum("tanh") == 1
    with pytest.raises(SeqgradValueError):
        slope_maximum("relu")
