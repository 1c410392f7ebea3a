"""crosscheck/checks/gated.py: the registered checks pass, and they fail when the reference is wrong."""

from __future__ import annotations

import numpy as np

from seqgrad.crosscheck.registry import all_checks, run_checks
from seqgrad.numeric import clipping, gated


def test_gated_checks_registered_and_pass():
    items = all_checks("gated.*")
    names = {c.name for c in items}
    for expected in ("gated.gru_vs_torch", "gated.lstm_vs_torch", "gated.gru_carry_jacobian", "gated.lstm_carry_jacobian",
                     "gated.clipping_vs_torch", "gated.pascanu_bound", "gated.gru_mixing_example",
                     "gated.derived_gru_vector_vs_torch", "gated.derived_lstm_scalar_jacobian", "gated.fact.hochreiter"):
        assert expected in names
    assert {c.group for c in items} == {"gated"}
    results = run_checks(items)
    bad = [(r.name, r.detail) for r in results if r.status != "pass"]
    assert not bad


def _run(name):
    (item,) = [c for c in all_checks(name) if c.name == name]
    return run_checks([item])[0]


def test_wrong_gru_convention_fails_the_torch_check(monkeypatch):
    def reset_before(w, x_t, h_prev, gate_h=None):
        h = gated.gru_step_reset_before(w, x_t, h_prev)
        return gated.GRUStep(h, h, h, h, h)

    monkeypatch.setattr(gated, "gru_step", reset_before)
    assert _run("gated.gru_vs_torch").status in ("fail", "error")


def test_clipping_without_direction_fails(monkeypatch):
    real = clipping.clip_global_norm

    def clamp_entries(grads, tau, eps=0.0):  # a wrong "clipping": entrywise clamp changes the direction
        out = real(grads, tau, eps)
        return out._replace(grads=[np.clip(g, -tau / 3, tau / 3) for g in grads])

    monkeypatch.setattr(clipping, "clip_global_norm", clamp_entries)
    assert _run("gated.clipping_vs_torch").status == "fail"
