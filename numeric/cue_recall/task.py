"""The week-06 robot command language and its cue-recall episodes (seed 000, lines 1283-1287).

An episode is ``BOS cue m_1 ... m_d RECALL cue EOS``: the cue is one of four
movement directions, the ``d`` moves are independent uniform random
directions, and after ``RECALL`` the model must repeat the cue.  The
vocabulary has seven tokens (three markers, four directions).

The models read the episode without its last token and predict the next one
at every position (``y_t = k_{t+1}``); the cue position is fixed (index 1), the
recall query is the position holding ``RECALL`` (index ``d + 2``), whose target
is the cue.  *Cue-recall accuracy* is the fraction of episodes whose prediction
at that one position is the cue, and the cue-recall cross-entropy is the loss
there alone (a uniform guess over the four directions: accuracy 1/4, cross-entropy
log 4 = 1.39 nats).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from seqgrad import validate

TOKENS = ("BOS", "RECALL", "EOS", "north", "east", "south", "west")
BOS, RECALL, EOS = 0, 1, 2
DIRECTIONS = (3, 4, 5, 6)
K = len(TOKENS)  # seven robot tokens (line 1289)

CUE_POSITION = 1  # fixed: right after BOS
CHANCE_ACCURACY = 1 / len(DIRECTIONS)
CHANCE_CROSS_ENTROPY = math.log(len(DIRECTIONS))  # log 4 = 1.386 nats (line 1285)

# Episode-generation seeds, one per split, separate from the models' initialisation seeds
# (line 1287: "with separate episode-generation seeds").
GENERATION_SEEDS = {"train": 60_601, "validation": 60_602, "test": 60_603}
SIZES = {"train": 4096, "validation": 512, "test": 1024}  # per delay (line 1287)


def recall_position(d: int) -> int:
    """Index of the recall query in the input: BOS, cue, d moves, then RECALL."""
    return CUE_POSITION + d + 1


def input_length(d: int) -> int:
    """Length of a model input: the episode (d + 5 tokens) without its last token."""
    return d + 4


@dataclass(frozen=True)
class Episodes:
    """A batch of episodes as model inputs and next-token targets (both ``(n, d + 4)``)."""

    delay: int
    inputs: torch.Tensor   # k_0 ... k_{d+3}
    targets: torch.Tensor  # k_1 ... k_{d+4}
    cues: torch.Tensor     # the cue of each episode, (n,)

    def __len__(self) -> int:
        return int(self.inputs.shape[0])

    @property
    def recall(self) -> int:
        return recall_position(self.delay)

    def to(self, device) -> "Episodes":
        return Episodes(self.delay, self.inputs.to(device), self.targets.to(device), self.cues.to(device))

    def subset(self, index) -> "Episodes":
        return Episodes(self.delay, self.inputs[index], self.targets[index], self.cues[index])


def generate(n: int, d: int, seed: int) -> Episodes:
    """``n`` episodes with delay ``d`` from the generator seeded by ``(seed, d)``."""
    n = validate.integer("n", n, minimum=1)
    d = validate.integer("delay", d, minimum=1)
    seed = validate.integer("seed", seed, minimum=0)
    rng = np.random.default_rng([seed, d])
    directions = np.asarray(DIRECTIONS)
    cues = directions[rng.integers(0, len(DIRECTIONS), size=n)]
    moves = directions[rng.integers(0, len(DIRECTIONS), size=(n, d))]
    episode = np.concatenate([np.full((n, 1), BOS), cues[:, None], moves, np.full((n, 1), RECALL), cues[:, None],
                              np.full((n, 1), EOS)], axis=1)
    ids = torch.as_tensor(episode, dtype=torch.long)
    return Episodes(d, ids[:, :-1].contiguous(), ids[:, 1:].contiguous(), torch.as_tensor(cues, dtype=torch.long))


def split(name: str, d: int, size: int | None = None) -> Episodes:
    """The ``train``, ``validation`` or ``test`` episodes of delay ``d`` (default sizes 4,096/512/1,024)."""
    name = validate.choice("split", name, tuple(SIZES))
    return generate(SIZES[name] if size is None else size, d, GENERATION_SEEDS[name])


@dataclass(frozen=True)
class RecallMetrics:
    accuracy: float       # fraction of recall queries answered with the cue
    cross_entropy: float  # mean -log p(cue) at the recall position, nats


def recall_metrics(logits: torch.Tensor, episodes: Episodes) -> RecallMetrics:
    """Cue-recall accuracy and cross-entropy from next-token logits ``(n, d + 4, K)``: the recall position only.

    The prediction is the arg-max over all seven tokens (a model that answers a marker is wrong)."""
    at = logits[:, episodes.recall, :].double()
    cues = episodes.cues.to(at.device)
    ce = torch.nn.functional.cross_entropy(at, cues)
    accuracy = (at.argmax(dim=-1) == cues).double().mean()
    return RecallMetrics(float(accuracy), float(ce))
