"""The registered checks of groups decoder and conv pass, and a broken model makes them fail."""

from __future__ import annotations

import pytest
import torch

from seqgrad.crosscheck.registry import all_checks, run_one

NAMES = [c.name for c in all_checks("decoder.*") + all_checks("conv.*")]


def test_groups_are_registered_with_citations():
    items = all_checks("decoder.*") + all_checks("conv.*")
    assert {c.group for c in items} == {"decoder", "conv"}
    assert len(items) >= 20
    for c in items:
        assert c.source.split(" §")[0] in ("lesson", "lecture07", "week06", "wiki"), c.source


@pytest.mark.parametrize("name", NAMES)
def test_check_passes(name):
    item = next(c for c in all_checks(name) if c.name == name)
    result = run_one(item, "cpu", "float64", seed=1)
    assert result.status == "pass", result.detail


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3, 4])
@pytest.mark.parametrize("name", NAMES)
def test_check_passes_more_seeds(name, seed):
    item = next(c for c in all_checks(name) if c.name == name)
    result = run_one(item, "cpu", "float64", seed=seed)
    assert result.status == "pass", result.detail


def test_a_wrong_cross_attention_fails_the_torch_comparison(monkeypatch):
    """Swap keys and values in the numeric cross-attention: the twin comparison must fail."""
    from seqgrad.numeric import attention

    original = attention.Head.project

    def swapped(self, X, memory=None):
        Q, K, V = original(self, X, memory)
        return Q, K * 1.001, V

    def explicit(self, X, M, memory=None):
        return torch.cat([h(X, M, None, memory=memory) for h in self.heads], dim=-1)

    monkeypatch.setattr(attention.Head, "project", swapped)
    monkeypatch.setattr(attention.MultiHeadAttention, "_fused", explicit)
    item = next(c for c in all_checks("decoder.layer_vs_torch"))
    result = run_one(item, "cpu", "float64")
    assert result.status == "fail", result.detail


def test_a_wrong_cross_attention_fails_the_derived_backward_check(monkeypatch):
    """Perturb the keys of the numeric head by 1 %: the derived program must disagree with its autograd."""
    from seqgrad.numeric import attention

    original = attention.Head.project

    def wrong_keys(self, X, memory=None):
        Q, K, V = original(self, X, memory)
        return Q, K * 1.01, V

    monkeypatch.setattr(attention.Head, "project", wrong_keys)
    item = next(c for c in all_checks("decoder.cross_attention_backward"))
    result = run_one(item, "cpu", "float64")
    assert result.status == "fail", result.detail
