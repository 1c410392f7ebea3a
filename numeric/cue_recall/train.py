"""One training run of the week-06 practicum (seed 000, line 1287).

60 epochs over the 4,096 training episodes, the same episodes and the same batch
order for every model and every initialisation seed (the order comes from
:data:`ORDER_SEED` and the delay only), Adam with learning rate 0.003, the gradient
clipped to global norm 1 with the project's :func:`numeric.clipping.clip_global_norm`
(``eps`` as ``torch.nn.utils.clip_grad_norm_``; the first step of every run compares the
two and records the difference), and the checkpoint of the epoch with the lowest
validation cue-recall cross-entropy kept for the test.

The text does not say what the models are trained on.  :data:`LOSS` is ``"all-tokens"``: the
mean next-token cross-entropy over every position of the episode (:func:`next_token_loss`: the
models as causal models of the robot language, whose random moves are unpredictable, so that
all but one of the ``d + 3`` positions add only noise to the gradient).  ``"recall"`` trains on
the cross-entropy at the recall query alone (:func:`recall_loss`), the quantity the text
measures and selects the checkpoint by.  Selection and test read the recall position only
(:func:`numeric.cue_recall.task.recall_metrics`) under either.  The choice matters: the runs of
docs/experiment-cue-recall.md recorded with the earlier, shared initialisation stream show the
GRU perfect at delays 16 and 32 under ``"recall"`` and far from it under ``"all-tokens"``.
The text gives no batch size; :data:`BATCH_SIZE` is 128 (32 updates per epoch, 1,920 in all):
chosen so that the full grid fits 15 minutes on a 2-core CPU.

Deterministic on CPU for a seed: run under :func:`numeric.device.one_thread` (the
experiment does), every random draw comes from a seeded generator.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from seqgrad import validate
from seqgrad.errors import NonFiniteError

from ..clipping import TORCH_EPS, clip_global_norm
from . import models, task

EPOCHS = 60
LEARNING_RATE = 0.003
CLIP_NORM = 1.0
BATCH_SIZE = 128
LOSSES = ("recall", "all-tokens")
LOSS = "all-tokens"
ORDER_SEED = 6060
SEEDS = (6206, 6207, 6208)


@dataclass
class Run:
    """What one (model, delay, seed) run produced."""

    model: str
    delay: int
    seed: int
    epochs: int
    parameters: int
    best_epoch: int                      # 1-based epoch of the selected checkpoint
    validation_accuracy: float           # at the selected checkpoint
    validation_cross_entropy: float
    test_accuracy: float
    test_cross_entropy: float
    clip_vs_torch: float                 # max |project clip - clip_grad_norm_| on the first step
    seconds: float                       # wall time of the run
    cpu_seconds: float                   # CPU time of the run's process (what a loaded machine does not inflate)
    history: dict = field(default_factory=dict)  # per epoch: train_loss, val_ce, val_acc

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def batch_orders(n: int, epochs: int, delay: int, batch_size: int = BATCH_SIZE) -> list[list[torch.Tensor]]:
    """The batches of every epoch: a permutation per epoch from ``(ORDER_SEED, delay)``, the same for every model and seed."""
    g = torch.Generator().manual_seed(ORDER_SEED * 1000 + delay)
    return [list(torch.randperm(n, generator=g).split(batch_size)) for _ in range(epochs)]


def next_token_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over every position of every episode."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def recall_loss(logits: torch.Tensor, targets: torch.Tensor, recall: int) -> torch.Tensor:
    """Mean cross-entropy at the recall query (input position ``recall``) of every episode."""
    return F.cross_entropy(logits[:, recall], targets[:, recall])


def training_loss(loss: str, delay: int):
    """The loss function ``(logits, targets) -> scalar`` that :data:`LOSSES` names ``loss``."""
    loss = validate.choice("loss", loss, LOSSES)
    if loss == "all-tokens":
        return next_token_loss
    recall = task.recall_position(delay)
    return lambda logits, targets: recall_loss(logits, targets, recall)


def clip_(parameters: list[torch.nn.Parameter], tau: float = CLIP_NORM) -> float:
    """Clip the gradients in place with :func:`numeric.clipping.clip_global_norm`; return the norm before."""
    grads = [p.grad for p in parameters]
    clipped = clip_global_norm(grads, tau, eps=TORCH_EPS)
    if clipped.coefficient < 1.0:
        for p, g in zip(parameters, clipped.grads):
            p.grad.copy_(g)
    return clipped.total_norm


def clip_difference(parameters: list[torch.nn.Parameter], tau: float = CLIP_NORM) -> float:
    """Largest difference between the project's clipping and ``torch.nn.utils.clip_grad_norm_`` on the current gradients."""
    mine = clip_global_norm([p.grad for p in parameters], tau, eps=TORCH_EPS).grads
    theirs = [torch.nn.Parameter(p.detach().clone()) for p in parameters]
    for t, p in zip(theirs, parameters):
        t.grad = p.grad.detach().clone()
    torch.nn.utils.clip_grad_norm_(theirs, tau)
    return max(float((a - b.grad).abs().max()) for a, b in zip(mine, theirs))


@torch.no_grad()
def evaluate(model, episodes: task.Episodes, chunk: int = 1024) -> task.RecallMetrics:
    model.eval()
    logits = torch.cat([model(episodes.inputs[i:i + chunk]) for i in range(0, len(episodes), chunk)])
    model.train()
    return task.recall_metrics(logits, episodes)


def train(model_name: str, delay: int, seed: int, data: dict[str, task.Episodes], *, epochs: int = EPOCHS,
          batch_size: int = BATCH_SIZE, loss: str = LOSS, device: str | torch.device = "cpu",
          bar=None) -> tuple[Run, dict]:
    """Train one model; return the :class:`Run` and the selected checkpoint's ``state_dict``.

    ``data`` holds the ``train``, ``validation`` and ``test`` episodes of ``delay``; ``bar``
    is an optional tqdm bar advanced once per epoch.
    """
    epochs = validate.integer("epochs", epochs, minimum=1)
    batch_size = validate.integer("batch_size", batch_size, minimum=1)
    objective = training_loss(loss, delay)
    start, cpu_start = time.perf_counter(), time.process_time()
    model = models.build(model_name, delay, seed, device=device)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(params, lr=LEARNING_RATE)
    train_set, val_set, test_set = (data[k].to(device) for k in ("train", "validation", "test"))
    history = {"train_loss": [], "val_ce": [], "val_acc": []}
    best = (math.inf, 0, None, None)
    clip_check = None
    for epoch, batches in enumerate(batch_orders(len(train_set), epochs, delay, batch_size), 1):
        total, count = 0.0, 0
        for index in batches:
            index = index.to(device)
            x, y = train_set.inputs[index], train_set.targets[index]
            optimizer.zero_grad(set_to_none=False)
            value = objective(model(x), y)
            if not torch.isfinite(value):
                raise NonFiniteError("training loss", f"{model_name} d={delay} seed={seed} epoch {epoch}")
            value.backward()
            if clip_check is None:
                clip_check = clip_difference(params)
            clip_(params)
            optimizer.step()
            total += float(value.detach()) * len(index)
            count += len(index)
        val = evaluate(model, val_set)
        history["train_loss"].append(total / count)
        history["val_ce"].append(val.cross_entropy)
        history["val_acc"].append(val.accuracy)
        if val.cross_entropy < best[0]:
            best = (val.cross_entropy, epoch, val, copy.deepcopy(model.state_dict()))
        if bar is not None:
            bar.set_postfix(val_ce=f"{val.cross_entropy:.3f}", val_acc=f"{val.accuracy:.3f}", refresh=False)
            bar.update(1)
    _, best_epoch, best_val, state = best
    model.load_state_dict(state)
    test = evaluate(model, test_set)
    run = Run(model_name, delay, seed, epochs, sum(p.numel() for p in params), best_epoch, best_val.accuracy,
              best_val.cross_entropy, test.accuracy, test.cross_entropy, clip_check, round(time.perf_counter() - start, 2),
              round(time.process_time() - cpu_start, 2), history)
    return run, {k: v.detach().cpu() for k, v in state.items()}
