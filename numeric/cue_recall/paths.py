"""Why the recurrent models forget: the gradient paths from the recall loss back to the cue.

For a trained RNN or GRU, with ``q`` the recall position and ``c`` the cue position
(``q - c = d + 1`` transitions), the recall loss ``L = -log p_q(cue)`` reaches the cue
only through the chain of states (seed 000, L198 and §2.5)::

    g_c^h = dL/dh_c = g_q^h J_q J_{q-1} ... J_{c+1},     g_q^h = (p_q - y) W_o,

so ``||dL/dh_c|| <= ||g_q^h|| ||J_q ... J_{c+1}||_2``.  This module measures, on the
trained float64 weights and on test episodes:

* ``||dL/dh_c||`` by torch autograd (:func:`numeric.paths.gradient_flow` with the readout
  ``v = g_q^h``), and its ratio to ``||g_q^h||``: the share of the recall gradient that
  arrives at the cue;
* the path product ``P = J_q ... J_{c+1}`` from the derived one-step Jacobians: the RNN's
  ``J_t = diag(1 - h_t^2) W_h`` (:func:`numeric.paths.rnn_trajectory`) and the GRU's full
  Jacobian with its gate terms (:func:`numeric.gated.gru_jacobian`), with ``||P||_2``;
* ``||g_q^h P||`` against autograd's ``||dL/dh_c||`` (the derived path product checked on the
  trained weights: :attr:`PathSummary.chain_rule_error`), and the numeric cells' states
  against the trained ``torch.nn.RNN``/``GRU``'s.

For the Transformer the cue is one attention step away from the recall query: the
attention weight ``A_{q,c}`` of each head (its causal uniform value is ``1/(q+1)``), and
``||dL/dh^{(0)}_c|| / ||dL/dh^{(0)}_q||`` by autograd on the input representation.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass

import numpy as np
import torch

from .. import gated
from ..paths import RNNWeights, gradient_flow, rnn_trajectory, spectral_norm
from . import task
from .models import RecurrentModel, TransformerModel

EPISODES = 32  # test episodes per trained model (the quick run uses fewer)


@dataclass(frozen=True)
class PathSummary:
    """Means over test episodes for one trained model."""

    model: str
    delay: int
    seed: int
    episodes: int
    grad_cue: float          # ||dL/dh_c|| (Transformer: ||dL/dh^(0)_c||)
    grad_recall: float       # ||dL/dh_q|| (Transformer: ||dL/dh^(0)_q||)
    ratio: float             # mean of ||dL/dh_c|| / ||dL/dh_q||
    path_norm: float | None  # mean ||J_q ... J_{c+1}||_2 (recurrent models)
    carry: float | None      # GRU: mean over coordinates of prod u_t from c+1 to q (the fixed-gate carry)
    attention: list | None   # Transformer: mean A_{q,c} per head
    uniform_attention: float | None  # 1/(q+1)
    chain_rule_error: float | None   # max relative | ||g_q P|| - ||dL/dh_c|| | / ||dL/dh_c||

    def as_dict(self) -> dict:
        return asdict(self)


def _readout(model, logits_q: torch.Tensor, cues: torch.Tensor) -> np.ndarray:
    """``g_q^h = (p_q - y) W_o``: dL/dh_q of the recall cross-entropy, one row per episode."""
    p = torch.softmax(logits_q, dim=-1)
    p[torch.arange(len(cues)), cues] -= 1.0
    return (p @ model.head.W_o).detach().numpy()


def recurrent_paths(model: RecurrentModel, episodes: task.Episodes, seed: int) -> PathSummary:
    """Gradient paths of a trained RNN or GRU on ``episodes`` (float64 copy of the weights)."""
    model = copy.deepcopy(model).double().eval()
    q, c = episodes.recall, task.CUE_POSITION
    ids = episodes.inputs[:, : q + 1]
    with torch.no_grad():
        X = model.embedding(ids)
        states = model.states(ids)
        g_q = _readout(model, model.head(states[:, q]), episodes.cues)
    cell = model.cell
    if model.kind == "rnn":
        weights = RNNWeights(cell.weight_ih_l0.detach().numpy(), cell.weight_hh_l0.detach().numpy(),
                             b_h=(cell.bias_ih_l0 + cell.bias_hh_l0).detach().numpy(), activation="tanh")
    else:
        weights = gated.GRUWeights.from_torch(cell).to_numpy()
    grad_cue, grad_recall, ratio, norms, carries, errors = [], [], [], [], [], []
    for n in range(len(episodes)):
        x = X[n].numpy()
        flow = gradient_flow(weights, x, g_q[n])
        P, h = _path_product(weights, x, c, q)
        if not np.allclose(h, states[n].numpy(), rtol=1e-9, atol=1e-12):
            raise AssertionError("the numeric cell's states differ from the torch.nn cell's")
        derived = g_q[n] @ P
        g_c = flow.grad_norm[c]
        gap = abs(float(np.linalg.norm(derived)) - g_c)  # the norms: gradient_flow returns ||dL/dh_s|| only
        errors.append(gap / g_c if g_c > 0 else (0.0 if gap == 0 else np.inf))
        grad_cue.append(g_c)
        grad_recall.append(flow.grad_norm[q])
        ratio.append(g_c / flow.grad_norm[q])
        norms.append(float(spectral_norm(P)))
        if flow.carry_at_fixed_gates is not None:
            carries.append(flow.carry_at_fixed_gates[c])
    return PathSummary(model.kind, episodes.delay, seed, len(episodes), float(np.mean(grad_cue)), float(np.mean(grad_recall)),
                       float(np.mean(ratio)), float(np.mean(norms)), float(np.mean(carries)) if carries else None,
                       None, None, float(np.max(np.abs(errors))))


def _path_product(weights, x: np.ndarray, c: int, q: int) -> tuple[np.ndarray, np.ndarray]:
    """``P = J_q ... J_{c+1}`` from the derived one-step Jacobians, and the states ``h_0..h_q``."""
    if isinstance(weights, RNNWeights):
        traj = rnn_trajectory(weights, x)
        J, h = traj.J, traj.h
    else:
        h, _ = gated.gru_forward(weights, x)
        h_prev = np.vstack([np.zeros((1, weights.hidden_size)), h[:-1]])
        J = np.stack([gated.gru_jacobian(weights, x[t], h_prev[t])[0] for t in range(len(x))])
    P = np.eye(weights.hidden_size)
    for t in range(q, c, -1):  # P = J_q J_{q-1} ... J_{c+1}: multiply on the right as t falls
        P = P @ J[t]
    return P, h


def transformer_paths(model: TransformerModel, episodes: task.Episodes, seed: int) -> PathSummary:
    """Attention weights recall -> cue and input-gradient ratio of a trained Transformer."""
    model = copy.deepcopy(model).double().eval()
    q, c = episodes.recall, task.CUE_POSITION
    ids = episodes.inputs
    record: dict = {}
    H0 = model.encoder.embed(ids).detach().requires_grad_(True)
    logits = model.head(model.encoder.encode(H0, causal=True, record=record))
    loss = torch.nn.functional.cross_entropy(logits[:, q], episodes.cues, reduction="sum")
    loss.backward()
    g = H0.grad.norm(dim=-1)  # (n, T): each episode's loss reaches only its own H0
    heads = sorted(k for k in record if k.endswith(".A"))
    attention = [float(record[k][:, q, c].detach().mean()) for k in heads]
    return PathSummary("transformer", episodes.delay, seed, len(episodes), float(g[:, c].mean()), float(g[:, q].mean()),
                       float((g[:, c] / g[:, q]).mean()), None, None, attention, 1.0 / (q + 1), None)


def summarize(model, episodes: task.Episodes, seed: int, n: int = EPISODES) -> PathSummary:
    """The :class:`PathSummary` of a trained model on the first ``n`` of ``episodes``."""
    episodes = episodes.subset(slice(0, n))
    if isinstance(model, TransformerModel):
        return transformer_paths(model, episodes, seed)
    return recurrent_paths(model, episodes, seed)
