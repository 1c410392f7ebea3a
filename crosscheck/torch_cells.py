"""A cell read from PyTorch (:meth:`derive.cell.Cell.from_torch`) checked against the module's own autograd.

:func:`against_autograd` runs the module itself (``nn.GRU``, an ``nn.LSTMCell`` stepped over t, your
step module stepped over t) in float64 at its own weights, applies the head and the loss, and lets
torch autograd differentiate it; the derived gradients come from the cell's compiled loop
(:class:`crosscheck.cells.CellFunction`) at the same weights (``cell.torch.values()``).  Each torch
parameter's gradient is assembled from the cell parameters that are blocks of it (``W_ir``, ``W_iz``,
``W_in`` are the rows of ``weight_ih_l0``) and compared with torch's, as are the loss and dL/dX.

>>> import torch
>>> from seqgrad.derive.cell import Cell
>>> torch.manual_seed(0) and None
>>> gru = torch.nn.GRU(3, 4, batch_first=True)
>>> check = against_autograd(Cell.from_torch(gru), gru)
>>> check.max_abs < 1e-10, sorted({name for _, name, _, _ in check})
(True, ['L', 'X', 'bias_hh_l0', 'bias_ih_l0', 'weight_hh_l0', 'weight_ih_l0'])
"""

from __future__ import annotations

import copy

import numpy as np

from seqgrad.derive.cell import Cell
from seqgrad.errors import SeqgradTypeError, ShapeError

from .cells import CellFunction, random_case

__all__ = ["against_autograd", "TorchCheck", "module_loss"]


class TorchCheck(list):
    """Rows ``(T, name, max abs error, max rel error)``: the loss ``L``, each torch parameter (the head's as
    ``head.NAME``) and ``X``."""

    @property
    def max_abs(self) -> float:
        return max((err for _, _, err, _ in self), default=0.0)

    def worst(self) -> dict:
        out: dict = {}
        for _, name, err, rel in self:
            if name not in out or err > out[name][0]:
                out[name] = (err, rel)
        return out

    def __str__(self) -> str:
        return "\n".join(f"  {name:<16} max abs {err:.1e}  max rel {rel:.1e}" for name, (err, rel) in self.worst().items())


def _source(cell):
    source = getattr(cell, "torch", None)
    if not isinstance(cell, Cell) or source is None:
        raise SeqgradTypeError("cell", cell, "a cell read from a torch module (Cell.from_torch)")
    return source


def against_autograd(cell, module=None, X=None, y=None, *, head=None, loss=None, steps=(1, 4, 9), batch: int = 3,
                     seed: int = 0, backend: str = "numpy") -> TorchCheck:
    """Every derived gradient of ``cell`` against ``module``'s own autograd (float64, at the module's weights).

    ``module``: the module the cell was read from (default) or another of the same structure (its weights
    are used).  ``X``: the inputs in the module's own layout ((T, B, D) for an ``nn.RNN``/``GRU``/``LSTM``
    with ``batch_first=False``, else (B, T, D)); ``y``: the targets as :class:`~crosscheck.cells.CellFunction`
    takes them; both random (unit scale, for each T in ``steps``) when X is None.  ``head``: a module or a
    function of the state (default: the cell's); a head other than the cell's is read into the cell first
    (``cell.torch.reread(head=...)``).  ``loss``: ``"squared"``, ``"cross_entropy"`` or
    ``nn.CrossEntropyLoss`` (the cell is read with it), or any callable ``loss(yhat_t, y_t)`` that computes
    the cell's loss on one position in torch: it is used on the torch side only, so a callable that computes
    something else shows as a mismatch.  Returns a :class:`TorchCheck`."""
    import torch

    source = _source(cell)
    module = source.module if module is None else module
    if not isinstance(module, torch.nn.Module):
        raise SeqgradTypeError("module", module, "the torch module the cell was read from (or one of its structure)")
    torch_loss = None
    changes = {}
    if head is not None and head is not source.head:
        changes["head"] = head
    if loss is not None and loss is not source.loss:
        if isinstance(loss, (str, torch.nn.CrossEntropyLoss)):
            changes["loss"] = loss
        elif callable(loss):
            torch_loss = loss
        else:
            raise SeqgradTypeError("loss", loss, "'squared', 'cross_entropy', nn.CrossEntropyLoss or a callable loss(yhat, y)")
    if changes:
        cell = source.reread(module, **changes)
        source = cell.torch
    head = source.head
    f = CellFunction(cell, backend)
    values = source.values(module, head)
    rng = np.random.default_rng(seed)
    cases = []
    if X is None:
        for T_ in steps:
            _, Xc, yc = random_case(cell, rng, T_, batch)
            cases.append((Xc, yc if y is None else y))
    else:
        Xc = _cell_layout(source, X)
        if y is None:
            _, _, y = random_case(cell, rng, Xc.shape[1], Xc.shape[0])
        cases.append((Xc, y))
    rows = TorchCheck()
    for Xc, yc in cases:
        ours = f(values, Xc, yc)
        theirs = _autograd(cell, source, module, head, Xc, yc, torch_loss)
        for name, ref in theirs.items():
            mine = ours["L"] if name == "L" else ours["X"] if name == "X" else _assemble(source, name, ours, ref.shape)
            mine = np.asarray(mine, dtype=np.float64).reshape(ref.shape)
            err = float(np.max(np.abs(mine - ref))) if ref.size else 0.0
            rel = err / max(float(np.max(np.abs(ref))) if ref.size else 0.0, 1e-300)
            rows.append((Xc.shape[1], name, err, rel))
    return rows


def _cell_layout(source, X):
    arr = np.asarray(X.detach().cpu() if hasattr(X, "detach") else X, dtype=np.float64)
    if arr.ndim != 3:
        raise ShapeError("X", arr.shape, "(B, T, D)" + (" or (T, B, D) for batch_first=False" if source.kind == "sequence" else ""))
    return np.ascontiguousarray(arr.transpose(1, 0, 2)) if source.kind == "sequence" and not source.batch_first else arr


def _assemble(source, name, ours, shape):
    """The gradient of torch parameter ``name`` put together from the cell parameters that are blocks of it."""
    owner, qualname = ("head", name[5:]) if name.startswith("head.") else ("module", name)
    full = np.zeros(shape)
    for pname, ref in source.refs.items():
        if ref.owner == owner and ref.qualname == qualname:
            ref.place(full, np.asarray(ours[pname], dtype=np.float64))
    return full


def module_loss(kind: str, batch: str):
    """The cell's loss on one position, in torch: 1/2 ||yhat - y||^2 or softmax cross-entropy, summed over
    the batch (or averaged: ``batch="mean"``)."""
    import torch

    def loss(yhat, y):
        if kind == "squared":
            value = 0.5 * ((yhat - y) ** 2).sum()
        else:
            target = torch.nn.functional.one_hot(y, yhat.shape[-1]).to(yhat.dtype) if not y.is_floating_point() else y
            value = -(target * torch.log_softmax(yhat, dim=-1)).sum()
        return value / yhat.shape[0] if batch == "mean" else value

    return loss


def _autograd(cell, source, module, head, X, y, torch_loss) -> dict:
    """L, every parameter's gradient (module and head) and dL/dX by torch autograd through the module itself."""
    import torch

    mod = copy.deepcopy(module).double()
    hd = copy.deepcopy(head).double() if isinstance(head, torch.nn.Module) else head
    Xt = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    outputs = _run(source, mod, Xt)
    positions = cell.loss.positions(X.shape[1])
    yt = torch.as_tensor(np.asarray(y.detach().cpu() if hasattr(y, "detach") else y))
    yt = yt.double() if yt.is_floating_point() else yt
    loss = torch_loss or module_loss(cell.loss.kind, cell.loss.batch)
    terms = []
    for k, p in enumerate(positions):
        yhat = outputs[p] if hd is None else hd(outputs[p])
        target = yt if cell.loss.on == "final" else yt[:, k]
        terms.append(loss(yhat, target))
    L = sum(terms)
    if cell.loss.reduction == "mean":
        L = L / len(positions)
    named = [(n, p) for n, p in mod.named_parameters()]
    if isinstance(hd, torch.nn.Module):
        named += [("head." + n, p) for n, p in hd.named_parameters()]
    grads = torch.autograd.grad(L, [p for _, p in named] + [Xt], allow_unused=True)
    out = {"L": np.asarray(float(L.detach()))}
    for (n, p), g in zip(named + [("X", Xt)], grads):
        out[n] = np.zeros(tuple(p.shape)) if g is None else g.detach().numpy()
    return out


def _run(source, mod, X):
    """The module's output state at every step, (B, H) each: the module run as its user runs it."""
    import torch

    B, T = X.shape[:2]
    if source.kind == "sequence":
        out = mod(X if source.batch_first else X.transpose(0, 1))[0]
        out = out if source.batch_first else out.transpose(0, 1)
        return [out[:, t] for t in range(T)]
    states = [torch.zeros(B, source.state_widths[s], dtype=torch.float64) for s in source.states]
    outputs = []
    for t in range(T):
        if source.kind == "cell":
            result = mod(X[:, t], tuple(states) if len(states) > 1 else states[0])
        else:
            args, k = [X[:, t]], 0
            for spec in source.call:
                if spec == "s":
                    args.append(states[k])
                    k += 1
                else:
                    args.append(tuple(states[k:k + len(spec)]))
                    k += len(spec)
            result = mod(*args)
        states = list(result) if isinstance(result, (tuple, list)) else [result]
        outputs.append(states[source.states.index(source.output)])
    return outputs
