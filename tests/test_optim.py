"""numeric.optim.Adam is torch.optim.Adam's update, bit for bit, and refuses bad arguments."""

import subprocess
import sys

import pytest
import torch

from seqgrad.numeric.decoder import EncoderDecoder, teacher_forcing_steps
from seqgrad.numeric.optim import Adam
from seqgrad.errors import SeqgradValueError


def _train(make_optimizer, steps: int = 25):
    model = EncoderDecoder.random(5, 6, 8, 2, 16, 1, start=0, end=1, seed=3, dtype=torch.float64)
    src, tgt = torch.tensor([2, 3, 4]), torch.tensor([0, 2, 3, 4, 1])
    losses = teacher_forcing_steps(model, src, tgt, make_optimizer(model.parameters()), steps)
    return losses, [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("lr, betas, eps", [(0.02, (0.9, 0.999), 1e-8), (0.003, (0.5, 0.9), 1e-6)])
def test_adam_matches_torch_optim_adam_bit_for_bit(lr, betas, eps):
    ours, ours_params = _train(lambda ps: Adam(ps, lr, betas, eps))
    theirs, their_params = _train(lambda ps: torch.optim.Adam(ps, lr=lr, betas=betas, eps=eps))
    assert ours == theirs
    assert ours[-1] < ours[0]  # it trains
    assert all(torch.equal(a, b) for a, b in zip(ours_params, their_params))


def test_a_parameter_without_gradient_is_left_alone():
    a = torch.ones(3, requires_grad=True)
    b = torch.ones(2, requires_grad=True)
    opt = Adam([a, b], lr=0.1)
    (a * torch.tensor([1.0, -2.0, 0.0])).sum().backward()
    opt.step()
    assert torch.equal(b, torch.ones(2))
    assert torch.allclose(a.detach(), torch.tensor([0.9, 1.1, 1.0]), atol=1e-6)  # first step: -lr sign(g)


def test_a_parameter_counts_only_the_steps_it_had_a_gradient_as_torch_does():
    def run(make):
        a = torch.tensor([1.0, -0.5], dtype=torch.float64, requires_grad=True)
        b = torch.tensor([0.3, 2.0], dtype=torch.float64, requires_grad=True)
        opt = make([a, b])
        for step in range(4):
            opt.zero_grad()
            loss = (a ** 2).sum() + ((b ** 3).sum() if step >= 2 else 0.0)  # b has no gradient at the first two steps
            loss.backward()
            opt.step()
        return a.detach(), b.detach()

    ours, theirs = run(lambda ps: Adam(ps, lr=0.05)), run(lambda ps: torch.optim.Adam(ps, lr=0.05))
    assert all(torch.equal(x, y) for x, y in zip(ours, theirs))


@pytest.mark.parametrize("kwargs, argument", [
    ({"params": []}, "params"),
    ({"params": [torch.ones(2)]}, "params"),
    ({"params": [torch.ones(2, requires_grad=True)], "lr": 0.0}, "lr"),
    ({"params": [torch.ones(2, requires_grad=True)], "betas": (0.9, 1.0)}, "betas"),
    ({"params": [torch.ones(2, requires_grad=True)], "eps": -1.0}, "eps"),
])
def test_bad_arguments_are_refused_by_name(kwargs, argument):
    with pytest.raises(SeqgradValueError, match=argument):
        Adam(**kwargs)


def test_the_lesson_example_does_not_import_the_compiler_stack():
    code = ("import sys; from numeric.decoder import lesson_example; lesson_example(steps=2); "
            "print('torch._dynamo' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
