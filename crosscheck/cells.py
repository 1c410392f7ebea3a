"""A cell's derivation compiled to a loop over t, and its autograd twin.

:class:`CellFunction` turns the general-t derivation of a
:class:`derive.cell.Cell` into one numpy or torch function that runs the
forward recursion in a ``for t in range(T)`` loop and the backward recursion in
a reversed loop; the code is the step's, so its size and compile time do not
grow with T.  Work that is not sequential leaves the loop: every term of a
step equation that reads only ``x_t`` and the parameters (the input
projection ``x_t W_x^T``) is computed for all t at once before the loop, and
every weight gradient ``sum_t (g_t^z)^T x_t`` and the input gradients are one
product of the stacked steps after it.  A vector cell built from gates (the
RNN, GRU, LSTM and a user's cell of the same form) is compiled in the faster
gate layout of :mod:`crosscheck.cell_loop`; every other cell gets the plain
loop.  Both are the IR of :mod:`crosscheck.loop_ir` (:func:`~crosscheck.loop_ir.cell_loop`
read off the derivation, rewritten by :func:`~crosscheck.loop_ir.hoist` and, for
a cell of gate form, by the fusion pass :func:`crosscheck.cell_loop.fuse_gates`),
printed by its one :class:`~crosscheck.loop_ir.Emitter`.

:func:`autograd_twin` is the cell's forward program evaluated node by node with
the operations' torch implementations (:mod:`crosscheck.twin`: no code printed,
so a printer fault cannot sit on both sides of a check); torch autograd
differentiates it, and :func:`against_autograd` compares every derived gradient
with it in float64.

>>> import numpy as np
>>> from seqgrad.derive.cell import Cell
>>> cell = Cell("z = w_x*x + w_h*h_prev; h = tanh(z)", states="h", params="w_x w_h w_o", head="w_o*h")
>>> f = CellFunction(cell)
>>> out = f({"w_x": 1.0, "w_h": 0.5, "w_o": 2.0}, np.array([[0.2, -0.1, 0.4]]), np.array([0.3]))
>>> round(float(out["L"]), 6), round(float(out["w_h"]), 6)
(0.105237, 0.076486)
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import sympy as sp

from seqgrad.derive.cell import Cell
from seqgrad.derive.sequence import t
from seqgrad.errors import NonFiniteError, SeqgradTypeError, SeqgradValueError, ShapeError

from . import buffered, cell_loop, loop_ir
from .cell_source import shape_of
from .code_printer import operation_namespace
from .lambdify import BACKENDS, _numpy_namespace, _torch_namespace, run_generated

__all__ = ["CellFunction", "RNNFunction", "autograd_twin", "autograd_gradients", "against_autograd", "random_case"]


class Arguments:
    """The argument list of a cell's loop (:meth:`prepare`: parameters, X, y validated and converted to the
    backend), for the compiled loops (:class:`CellFunction`) and the autograd twin alike."""

    def __init__(self, cell: Cell, backend: str = "numpy", device: str = "cpu"):
        self.cell, self.backend, self.device, self.names = cell, backend, device, cell.parameter_names

    def prepare(self, params: Mapping, X, y) -> list:
        """The argument list of the compiled function (validated, converted to the backend)."""
        cell = self.cell
        if not isinstance(params, Mapping):
            raise SeqgradTypeError("params", params, "a mapping parameter name -> value")
        unknown = sorted(set(params) - set(self.names))
        missing = [n for n in self.names if n not in params]
        if unknown or missing:
            raise SeqgradValueError("params", sorted(params), "exactly the names " + ", ".join(self.names))
        values = []
        for name, key in zip(self.names, cell.param_shapes):
            sym = cell.param_symbol(key)
            shape = shape_of(sym)
            arr = _as_array(name, params[name])
            if arr.shape != shape and not (len(shape) == 2 and shape[0] == 1 and arr.shape == shape[1:]):
                raise ShapeError(name, arr.shape, f"{shape} as declared by the cell" + (f" (or {shape[1:]})" if len(shape) == 2 and shape[0] == 1 else ""))
            values.append(arr.reshape(shape))
        X = _as_array("X", X)
        vector = cell.vector
        D = cell.sizes[cell.input_size] if vector else None
        if X.ndim != (3 if vector else 2) or (vector and X.shape[2] != D) or X.shape[1] < 1 or X.shape[0] < 1:
            raise ShapeError("X", X.shape, f"(B, T, {D})" if vector else "(B, T)")
        B, steps = X.shape[:2]
        positions = cell.loss.positions(steps)
        C = cell.sizes[cell.output_size] if vector else None
        y = self._targets(y, B, len(positions), C)
        index = np.full(steps, -1, dtype=np.int64)
        index[positions] = np.arange(len(positions))
        args = values + [X, y]
        if self.backend == "torch":
            import torch

            from seqgrad.numeric.device import resolve_device

            dev = resolve_device(self.device)
            args = [torch.as_tensor(np.ascontiguousarray(a), dtype=torch.float64, device=dev) for a in args]
        return args + [index.tolist(), len(positions)]

    def _targets(self, y, B, P, C):
        cell = self.cell
        final = cell.loss.on == "final"
        if cell.loss.kind == "cross_entropy":
            raw = np.asarray(y.detach().cpu() if hasattr(y, "detach") else y)
            if raw.dtype.kind in "iu":
                want = (B,) if final else (B, P)
                if raw.shape != want:
                    raise ShapeError("y", raw.shape, f"{want} class ids (or class distributions with a last axis of {C})")
                if raw.min() < 0 or raw.max() >= C:
                    raise SeqgradValueError("y", f"class ids {raw.min()}..{raw.max()}", f"class ids in 0..{C - 1}")
                y = np.eye(C)[raw]
        y = _as_array("y", y)
        if cell.vector:
            want = (B, C) if final else (B, P, C)
        else:
            want = (B,) if final else (B, P)
        if y.shape != want:
            raise ShapeError("y", y.shape, str(want).replace(" ", "") + (" (one target per loss position)" if not final else ""))
        if cell.loss.kind == "cross_entropy":
            if (y < 0).any() or not np.allclose(y.sum(axis=-1), 1.0, atol=1e-9):
                raise SeqgradValueError("y", "rows that do not sum to 1", "class distributions (one-hot or soft) or class ids")
        return y if final else np.moveaxis(y, 1, 0).copy()  # positions first: one slice per loss position


class CellFunction(Arguments):
    """Loss and every gradient of a cell, compiled once as loops over t (see the module docstring).

    Call it with the parameters (mapping name -> value, names as
    :attr:`derive.cell.Cell.parameter_names`), the inputs ``X`` ((B, T) scalar
    cell, (B, T, D) vector cell) and the targets ``y``: one per loss position,
    ``(B,)``/``(B, C)`` for the final step, ``(B, P)``/``(B, P, C)`` for P
    positions; for a cross-entropy loss each target is a class distribution
    over C (one-hot or soft rows summing to one) or an integer class id.
    Returns a dict with ``L``, each parameter's gradient and ``X`` (dL/dX).

    The gate loops keep the (T, B, H) stacks of a call (the LSTM's at B = 4096, T = 64, H = 8: about
    250 MiB) for the next call with the same shapes (:class:`crosscheck.cell_loop.Workspace`), so call one
    function from one thread at a time; the results never share memory with them.
    """

    def __init__(self, cell: Cell, backend: str = "numpy", device: str = "cpu"):
        if not isinstance(cell, Cell):
            raise SeqgradTypeError("cell", cell, "a derive.cell.Cell")
        if backend not in BACKENDS:
            raise SeqgradValueError("backend", backend, "one of " + ", ".join(BACKENDS))
        super().__init__(cell, backend, device)
        self.gen = gen = cell.general()
        self.source = _generate(cell, gen, backend)
        namespace = loop_namespace(cell, backend)
        #: what in the loops still allocates per step (crosscheck.buffered): an operation without an out= form
        #: in this backend, a parameter's gradient summed inside the loop; empty for the gate loops of RNN, GRU, LSTM
        self.fallbacks = [line.split("# allocates: ", 1)[1].split(" (", 1)[0]
                          for line in self.source.splitlines() if "# allocates: " in line]
        fn = run_generated(self.source, f"<seqgrad:{cell.name}_loop>", namespace, "_generated")
        if backend == "torch":  # the derived backward needs no tape
            import torch

            fn = torch.no_grad()(fn)
        self.fn = fn

    # -- arguments ---------------------------------------------------------------------
    def evaluate(self, args: list) -> dict:
        out = self.fn(*args)
        result = {"L": out[0]}
        for i, n in enumerate(self.names):
            result[n] = out[1 + i]
        result["X"] = out[-1]
        for key, value in result.items():
            if not _finite(value):
                raise SeqgradValueError("inputs", "<finite values>", f"values for which the compiled cell stays finite: "
                                        f"{key} overflowed to NaN or inf (rescale the weights or inputs)")
        return result

    def __call__(self, params: Mapping, X, y) -> dict:
        return self.evaluate(self.prepare(params, X, y))


class RNNFunction(CellFunction):
    """Loss and every gradient of an unrolled network (:func:`derive.rnn.unroll`, :func:`derive.gated.gru`,
    :func:`derive.gated.lstm`, ``Cell.unroll``), compiled once as loops over t from its cell; the
    unrolled program itself is never built.  Inputs must have the network's T steps."""

    def __init__(self, net, backend: str = "numpy", device: str = "cpu"):
        from seqgrad.derive.cell_unrolled import UnrolledCell

        if not isinstance(net, UnrolledCell):
            raise SeqgradTypeError("net", net, "an unrolled network (rnn.unroll, gated.gru, gated.lstm, Cell.unroll)")
        self.net = net
        super().__init__(net.cell, backend, device)

    def prepare(self, params: Mapping, X, y) -> list:
        X_arr = np.shape(X.detach().cpu() if hasattr(X, "detach") else X)
        if len(X_arr) >= 2 and X_arr[1] != self.net.steps:
            D = self.cell.sizes[self.cell.input_size] if self.cell.vector else None
            raise ShapeError("X", tuple(X_arr), f"(B, {self.net.steps}, {D})" if D else f"(B, {self.net.steps})")
        return super().prepare(params, X, y)


def _as_array(name, value):
    try:
        arr = np.asarray(value.detach().cpu() if hasattr(value, "detach") else value, dtype=np.float64)
    except (TypeError, ValueError):
        raise SeqgradTypeError(name, value, "numbers or an array of numbers") from None
    if not np.all(np.isfinite(arr)):
        raise NonFiniteError(name)
    return arr


def _finite(value) -> bool:
    if hasattr(value, "detach"):
        import torch

        return bool(torch.isfinite(value).all())
    return bool(np.all(np.isfinite(value)))


def loop_namespace(cell: Cell, backend: str) -> dict:
    """The names a cell loop's source calls, bound in ``backend``: the kernels, the loops' helpers and every
    operation's implementation there (the same source runs on both backends)."""
    namespace = _numpy_namespace() if backend == "numpy" else _torch_namespace()
    namespace.update(operation_namespace(backend, cell.functions))
    namespace.update(_helpers(backend))
    namespace.update(cell_loop.helpers(backend))
    namespace.update(buffered.kernels(backend))
    return namespace


def _generate(cell: Cell, gen, backend: str) -> str:
    """The loop function's source: the IR of :mod:`crosscheck.loop_ir` (two loops over t read off the
    general-t derivation), rewritten by its passes (what is not sequential hoisted out of the loops; the gates
    fused when the cell has gate form, :func:`crosscheck.cell_loop.fuse_gates`), printed by its emitter."""
    fn = cell_loop.fuse_gates(loop_ir.hoist(loop_ir.cell_loop(cell, gen)))
    return loop_ir.Emitter(backend, fn.names).source(fn)


def _helpers(backend: str) -> dict:
    if backend == "numpy":
        def zeros(B, H=None, batch=True):
            if not batch:
                return np.zeros((B, H))
            return np.zeros((B,)) if H is None else np.zeros((B, H))

        def logsumexp(a):
            m = a.max(axis=-1, keepdims=True)
            return (m + np.log(np.exp(a - m).sum(axis=-1, keepdims=True)))[..., 0]

        def softmax(a):
            e = np.exp(a - a.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True)

        def acc(value, shape):
            value = np.asarray(value)
            if shape == ():
                return value.sum()
            return value.sum(axis=0, keepdims=True) if value.shape[0] != shape[0] or value.ndim > len(shape) else value

        def prev_stack(states, B, H):
            first = np.zeros((B, 1) if H is None else (B, 1, H))
            rest = np.stack(states[:-1], 1) if len(states) > 1 else first[:, :0]
            return np.concatenate([first, rest], 1)

        def outer(g, v):
            if g.ndim == 2:
                return np.sum(g * v)
            return g.reshape(-1, g.shape[-1]).T @ v.reshape(-1, v.shape[-1])

        def total(g, vector):
            return g.reshape(-1, g.shape[-1]).sum(axis=0, keepdims=True) if vector else g.sum()

        def empty(B, T, H):
            return np.empty((B, T) if H is None else (B, T, H))

        return {"_zeros": zeros, "_like": lambda X: None, "_logsumexp": logsumexp, "_softmax": softmax, "_acc": acc,
                "_sum": np.sum, "_stack": lambda xs: np.stack(xs, 1), "_prev_stack": prev_stack, "_outer": outer,
                "_total": total, "_empty": empty}
    import torch

    state = {"like": None}

    def like(X):
        state["like"] = X

    def zeros(B, H=None, batch=True):
        X = state["like"]
        shape = (B, H) if (not batch or H is not None) else (B,)
        return torch.zeros(shape, dtype=X.dtype, device=X.device)

    def acc(value, shape):
        if not isinstance(value, torch.Tensor):
            return value
        if shape == ():
            return value.sum()
        return value.sum(dim=0, keepdim=True) if value.shape[0] != shape[0] else value

    def prev_stack(states, B, H):
        X = state["like"]
        first = torch.zeros((B, 1) if H is None else (B, 1, H), dtype=X.dtype, device=X.device)
        return torch.cat([first] + ([torch.stack(states[:-1], 1)] if len(states) > 1 else []), 1)

    def outer(g, v):
        if g.ndim == 2:
            return torch.sum(g * v)
        return g.reshape(-1, g.shape[-1]).T @ v.reshape(-1, v.shape[-1])

    def total(g, vector):
        return g.reshape(-1, g.shape[-1]).sum(dim=0, keepdim=True) if vector else g.sum()

    def empty(B, T, H):
        X = state["like"]
        return torch.empty((B, T) if H is None else (B, T, H), dtype=X.dtype, device=X.device)

    return {"_zeros": zeros, "_like": like, "_logsumexp": lambda a: torch.logsumexp(a, dim=-1),
            "_softmax": lambda a: torch.softmax(a, dim=-1), "_acc": acc, "_sum": torch.sum,
            "_stack": lambda xs: torch.stack(xs, 1), "_prev_stack": prev_stack, "_outer": outer, "_total": total,
            "_empty": empty}


def autograd_twin(cell: Cell, device: str = "cpu") -> "TorchTwin":
    """The cell's forward program evaluated node by node with the operations' torch implementations
    (:class:`crosscheck.twin.TorchTwin`; no code printed); differentiate it with torch autograd
    (:func:`autograd_gradients`)."""
    from .twin import TorchTwin  # below this module: it imports nothing of crosscheck's compilers

    return TorchTwin(cell, device)


def autograd_gradients(cell: Cell, params: Mapping, X, y, device: str = "cpu", twin: "TorchTwin | None" = None) -> dict:
    """Loss and gradients of the cell by torch autograd through its forward program (float64)."""
    import torch

    twin = twin or autograd_twin(cell, device)
    args = Arguments(cell, "torch", device).prepare(params, X, y)
    leaves = args[:len(twin.names)] + [args[len(twin.names)]]
    for a in leaves:
        a.requires_grad_(True)
    (L,) = twin.fn(*args)
    grads = torch.autograd.grad(L, leaves, allow_unused=True)
    out = {"L": L.detach()}
    for n, g, a in zip(twin.names + ["X"], grads, leaves):
        out[n] = torch.zeros_like(a) if g is None else g
    return out


def random_case(cell: Cell, rng: np.random.Generator, steps: int, batch: int = 3, scale: float = 0.6):
    """Random parameters, inputs and targets for ``cell`` at T = ``steps`` (unit-scale data)."""
    params = {}
    for name, key in zip(cell.parameter_names, cell.param_shapes):
        shape = shape_of(cell.param_symbol(key))
        fan = shape[-1] if shape else 1
        params[name] = rng.normal(size=shape) * (scale / np.sqrt(fan))
    if cell.vector:
        X = rng.normal(size=(batch, steps, cell.sizes[cell.input_size]))
        C = cell.sizes[cell.output_size]
    else:
        X = rng.normal(size=(batch, steps))
        C = None
    P = len(cell.loss.positions(steps))
    final = cell.loss.on == "final"
    if cell.loss.kind == "cross_entropy":
        ids = rng.integers(0, C, size=(batch,) if final else (batch, P))
        y = np.eye(C)[ids]
    else:
        shape = (batch,) + (() if final else (P,)) + ((C,) if cell.vector else ())
        y = rng.normal(size=shape)
    return params, X, y


def against_autograd(cell: Cell, steps=(1, 3, 8), trials: int = 2, seed: int = 0, backend: str = "torch",
                     device: str = "cpu", batch: int = 3):
    """Every derived gradient of ``cell`` (compiled loop) against torch autograd through its forward equations,
    float64, at random unit-scale points: a list of (T, name, max abs error, max rel error)."""
    import torch

    if isinstance(steps, torch.nn.Module):
        raise SeqgradTypeError("steps", type(steps).__name__, "step counts such as (1, 3, 8); to check a cell read "
                               "from a torch module against the module's own autograd: "
                               "crosscheck.torch_cells.against_autograd(cell, module, X)")
    f = CellFunction(cell, backend, device=device)
    twin = autograd_twin(cell, device)
    rng = np.random.default_rng(seed)
    rows = []
    for T_ in steps:
        for _ in range(trials):
            params, X, y = random_case(cell, rng, T_, batch)
            ours = f(params, X, y)
            ref = autograd_gradients(cell, params, X, y, device, twin)
            for key, value in ref.items():
                a = np.asarray(ours[key].detach().cpu() if hasattr(ours[key], "detach") else ours[key], dtype=np.float64)
                b = value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else np.asarray(value)
                a = a.reshape(b.shape)
                err = float(np.max(np.abs(a - b))) if b.size else 0.0
                rel = err / max(float(np.max(np.abs(b))) if b.size else 0.0, 1e-300)
                rows.append((T_, key, err, rel))
    return rows
