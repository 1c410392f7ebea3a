"""Jacobi's formula at symbolic n: the det rule's proof, what verify says it rests on, and torch autograd at
sizes 1 and >= 16 as the independent oracle."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import sympy as sp

from seqgrad import derive
from seqgrad.derive import rules
from seqgrad.derive.matcalc import evaluate, numpy_ops


def test_the_det_rule_is_proved_at_symbolic_n_from_the_laplace_lemmas():
    steps = rules._jacobi_steps()
    assert len(steps) == 5 and all(r == 0 for _, r in steps), steps
    proof = rules.RULES["det"].prove()
    assert proof.holds
    assert "at symbolic n" in proof.method and "stated lemmas" in proof.method and "Laplace" in proof.method
    assert "n = 1, 2, 16, 24" in proof.method
    assert "n = 1, 2, 3" not in rules.RULES["det"].scope and "symbolic" in rules.RULES["det"].scope


def test_a_wrong_det_pullback_fails_the_symbolic_proof(monkeypatch):
    """det(X) X^-1 (the transpose forgotten) is wrong for every non-symmetric X: the last index step must see it."""
    good = rules.RULES["det"]
    wrong = dataclasses.replace(good, pull=lambda e, g, out: [(e.arg, sp.MatMul(g, e, sp.Inverse(e.arg)))])
    monkeypatch.setitem(rules.RULES, "det", wrong)
    steps = rules._jacobi_steps()
    assert steps[-1][1] != 0
    assert not wrong.prove().holds


def test_the_numeric_check_of_jacobis_formula_is_tight():
    assert rules._jacobi_numeric(sizes=(1, 17)) < 1e-20


@pytest.mark.parametrize("statement", [
    "diff(det(X), X) = det(X)*transpose(inv(X))",
    "diff(log(det(X)), X) = transpose(inv(X))",
    "diff(det(inv(X)), X) = -det(inv(X))*transpose(inv(X))",
    "diff(det(A*X*B), X) = det(A*X*B)*transpose(inv(X))",
])
def test_verify_proves_determinant_identities_and_says_what_the_proof_rests_on(statement):
    v = derive.verify(statement, shapes="A:n,n X:n,n B:n,n")
    assert v.status == "proved", v.line()
    assert "det (every n >= 1 (symbolic)" in v.detail and "stated lemmas" in v.detail
    assert v.sampled["sizes"][0] == 1 and max(v.sampled["sizes"]) >= 16


@pytest.mark.parametrize("statement", [
    "diff(det(X), X) = det(X)*inv(X)",
    "diff(log(det(X)), X) = inv(X)",
    "diff(det(X), X) = transpose(inv(X))",
])
def test_verify_refutes_wrong_determinant_identities(statement):
    assert derive.verify(statement, shapes="X:n,n").status == "refuted"


@pytest.mark.parametrize("n", [1, 2, 16, 23])
def test_the_derived_gradients_match_torch_autograd_at_sizes_1_and_beyond_16(n):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(n)
    X0 = rng.standard_normal((n, n)) / np.sqrt(n) + 2 * np.eye(n)
    for text, f in (("det(X)", torch.linalg.det), ("log(det(X))", lambda X: torch.log(torch.linalg.det(X)))):
        d = derive.diff(text, "X", shapes="X:n,n")
        size = d.wrt.shape[0]
        ours = np.asarray(evaluate(d.value, {d.wrt: X0, size: n}, numpy_ops()), dtype=float)
        X = torch.tensor(X0, dtype=torch.float64, requires_grad=True)
        f(X).backward()
        want = X.grad.numpy()
        assert np.max(np.abs(ours - want)) <= 1e-9 * (1 + np.max(np.abs(want))), (text, n)
