"""A vector cell's loop with its linear maps stacked by gate: the fast layout of :class:`~crosscheck.cells.CellFunction`.

Most cells are built from *gates*: pre-activations ``z_t^k = x_t W_xk^T + h_{t-1} W_hk^T + b_k`` (the
RNN's one, the GRU's r, u and n, the LSTM's i, f, c, o).  Read off the general-t derivation, the gates
of one cell are compiled together:

* the input parts of every gate, for every t, are one batched product of the stacked steps before the
  loop (``X W_x^T + b``, stacked as (gate, t, batch, unit));
* each step adds ``h_{t-1} W_h^T`` of all recurrent gates in one batched product, in place;
* gates with the same activation (the LSTM's three sigmoids) are activated by one call, in place;
* the backward pass writes each gate's sensitivity ``g_t^{z^k}`` into one preallocated stack, sends
  ``sum_k g_t^{z^k} W_hk`` to ``h_{t-1}`` in one batched product, and after the loop every weight and bias
  gradient and dL/dX are one product (or sum) over the stacked (T, B) axis;
* states live in preallocated (T + 1, B, H) stacks (``h_{-1} = 0`` first), so ``h_{t-1}`` of every step is
  a view of them.
* every other elementwise expression of a step is written into buffers allocated before the loop
  (:mod:`crosscheck.buffered`), and the stacks and buffers are kept for the next call of the same shapes
  (:class:`Workspace`): a step allocates nothing, a call nothing but its results.

The layout is read off the hoisted IR of :mod:`crosscheck.loop_ir` (:func:`gate_layout`): a gate is an
assignment of the forward loop whose terms are ``x_t W^T``, ``h_{t-1} W^T`` and biases, and the fused form
is used only when the IR's gradients are exactly the gate form (``dW_xk = sum_t (g_t^{z^k})^T x_t``,
``dW_hk = sum_t (g_t^{z^k})^T h_{t-1}``, ``db_k = sum_t g_t^{z^k}``, the carry to ``h_{t-1}`` containing
``g_t^{z^k} W_hk``, ``dL/dx_t = sum_k g_t^{z^k} W_xk``); a cell of another shape gets the plain loop of
:mod:`crosscheck.loop_ir`.  The gate fusion is a pass from IR to IR (:func:`fuse_gates`): it rewrites the
hoisted loops in the layout's statements (:class:`~crosscheck.loop_ir.Alloc`, :class:`~crosscheck.loop_ir.Call`,
:class:`~crosscheck.loop_ir.View`, :class:`~crosscheck.loop_ir.Write`, ...), keeping the IR's own loss, rho and
in-loop gradient statements, and the one :class:`~crosscheck.loop_ir.Emitter` prints the result for numpy and
torch; :func:`helpers` binds the layout's helpers in each backend.  A user's cell of gate form gets the same
layout as the built-in ones, and every gradient is checked against torch autograd in the tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import sympy as sp

from seqgrad.derive.elementwise import Elementwise
from seqgrad.derive.sequence import t

from . import loop_ir
from .cell_source import param_key, shape_of

__all__ = ["Gate", "GateLayout", "gate_layout", "fuse_gates", "helpers", "Workspace"]


@dataclass
class Gate:
    """One gate: the definition ``target = x_t W_x^T (+ ...) + h_{t-1} W_h^T + b (+ others)``."""

    target: sp.MatrixSymbol
    x_weights: list = field(default_factory=list)
    h_weight: sp.MatrixSymbol | None = None
    biases: list = field(default_factory=list)
    others: list = field(default_factory=list)
    adjoint: sp.Basic | None = None
    activation: tuple | None = None  # (the activation definition's target, its Lambda)


@dataclass
class GateLayout:
    """The gates in stack order (recurrent ones first, same activations adjacent), the recurrent state."""

    gates: list
    recurrent: int  # the first ``recurrent`` gates read h_{t-1} W_h^T
    state: str | None
    prev: sp.MatrixSymbol | None
    width: int
    carry_rest: sp.Basic | None  # the state's carry without the gates' g W_h terms
    runs: list  # (first, stop, Lambda): gates activated by one call

    def gate_of(self, target):
        return next((k for k, g in enumerate(self.gates) if g.target == target), None)


def _terms(expr):
    return list(expr.args) if isinstance(expr, sp.MatAdd) else [expr]


def _linear(term, left, params):
    """W for a term ``left W^T`` with W a parameter, else None."""
    if isinstance(term, sp.MatMul) and len(term.args) == 2 and term.args[0] == left:
        right = term.args[1]
        if isinstance(right, sp.Transpose) and right.arg in params:
            return right.arg
    return None


def _canon(expr):
    """A comparable form of ``expr`` in which the factors of a Hadamard product are unordered."""
    if isinstance(expr, sp.HadamardProduct):
        return ("Hadamard", tuple(sorted((_canon(a) for a in expr.args), key=str)))
    if expr.args:
        return (type(expr).__name__, tuple(_canon(a) for a in expr.args))
    return expr


def _is_outer(contrib, adjoint, right) -> bool:
    """True when ``contrib`` is ``adjoint^T right`` (the derived step term of a weight gradient)."""
    return (isinstance(contrib, sp.MatMul) and len(contrib.args) == 2 and contrib.args[1] == right
            and _canon(sp.Transpose(contrib.args[0]).doit()) == _canon(adjoint))


def _body(lam, var):
    """A one-argument Lambda's body with its variable replaced by ``var`` (equal bodies: the same function)."""
    return lam.expr.xreplace({lam.variables[0]: var})


def _activation_key(activation):
    """A hashable form of an activation's Lambda (its body at a fixed variable)."""
    return sp.srepr(_body(activation[1], sp.Symbol("ACTIVATIONARG")))


def _through(terms, weights):
    """{W: g} for terms ``g W``, one per weight in ``weights`` (None when a weight has none or two)."""
    found = {}
    for term in terms:
        if isinstance(term, sp.MatMul) and len(term.args) >= 2 and term.args[-1] in weights:
            W = term.args[-1]
            if W in found:
                return None
            found[W] = term.args[0] if len(term.args) == 2 else sp.MatMul(*term.args[:-1])
    return found if all(W in found for W in weights) else None


def _gradients(fn, backward) -> dict:
    """{parameter: the statements summing its gradient}: :class:`loop_ir.Stacked` after the loop and
    :class:`loop_ir.Accumulate` inside it."""
    ret = fn.body[-1]
    params = [a for a in fn.args if a in fn.invariants]
    of = dict(zip(ret.values[1:], params))
    grads: dict = {}
    for s in list(backward.body) + fn.body:
        if isinstance(s, (loop_ir.Stacked, loop_ir.Accumulate)) and s.target in of:
            grads.setdefault(of[s.target], []).append(s)
    return grads


def _gradient_is(statements, adjoint, right, stacked, rights) -> bool:
    """True when ``statements`` sum exactly ``sum_t adjoint^T right`` (``right`` None: ``sum_t adjoint``)."""
    if not statements or len(statements) != 1:
        return False
    s = statements[0]
    if isinstance(s, loop_ir.Accumulate):
        if s.guard is not None:
            return False
        return _canon(s.value) == _canon(adjoint) if right is None else _is_outer(s.value, adjoint, right)
    if s.a not in stacked or _canon(stacked[s.a]) != _canon(adjoint):
        return False
    return s.kind == "sum" if right is None else (s.kind == "outer" and rights.get(s.b) == right)


def gate_layout(fn: loop_ir.Function) -> GateLayout | None:
    """The gate layout read off the hoisted IR of a cell's loops (:func:`loop_ir.hoist` of
    :func:`loop_ir.cell_loop`), or None when the cell is not of gate form.

    The forward loop's assignments (each hoisted input projection read back as ``x_t W^T``) give the gates;
    the backward loop gives each gate's sensitivity as what dL/dx_t and the carry to h_{t-1} send through
    its weights (``g^k W_xk``, ``g^k W_hk``), and the gate form holds only when every gate weight's and
    bias's gradient is exactly ``sum_t (g_t^k)^T x_t``, ``sum_t (g_t^k)^T h_{t-1}``, ``sum_t g_t^k`` (a
    :class:`loop_ir.Stacked` product after the loop or its step term summed inside it) with no loss-position
    term, and dL/dx_t is ``sum_k g_t^k W_xk`` and nothing else."""
    seq = next((s for s in fn.body if isinstance(s, loop_ir.Sequence)), None)
    loops = fn.loops()
    if seq is None or not isinstance(seq.X, sp.MatrixExpr) or len(loops) != 2:
        return None
    forward_loop, backward = loops
    params = set(fn.invariants)
    x = next(s.target for s in forward_loop.body if isinstance(s, loop_ir.Load) and s.array and s.source == seq.X)
    loadprev = [s for s in backward.body if isinstance(s, loop_ir.LoadPrev)]
    prevs = {s.target: s.state for s in loadprev}
    # the step program: each hoisted input projection X W^T read back as x_t W^T
    before = {s.target: s.value for s in fn.body if isinstance(s, loop_ir.Assign)}
    parts = {s.target: before[s.source].xreplace({seq.X: x}) for s in forward_loop.body
             if isinstance(s, loop_ir.Load) and s.array and s.source in before}
    forward = [loop_ir.Assign(s.target, s.value.xreplace(parts)) for s in forward_loop.body
               if isinstance(s, loop_ir.Assign) and s.target not in prevs]
    # the recurrent state: the one whose h_{t-1} W^T appears in the most definitions
    counts = {prev: sum(any(_linear(term, prev, params) for term in _terms(d.value)) for d in forward) for prev in prevs}
    prev = max(counts, key=counts.get) if counts and max(counts.values()) > 0 else None
    gates = []
    for d in forward:
        if not isinstance(d.target, sp.MatrixSymbol):
            continue
        gate = Gate(d.target)
        hs = []
        for term in _terms(d.value):
            W = _linear(term, x, params)
            if W is not None:
                gate.x_weights.append(W)
                continue
            W = _linear(term, prev, params) if prev is not None else None
            if W is not None:
                hs.append(W)
                continue
            if term in params and term.shape[0] == 1:
                gate.biases.append(term)
                continue
            gate.others.append(term)
        if len(hs) == 1 and not gate.others:
            gate.h_weight = hs[0]
        else:
            gate.others += [sp.MatMul(prev, sp.Transpose(W)) for W in hs]
        if gate.h_weight is not None or gate.x_weights:
            gates.append(gate)
    if not gates or len({g.target.shape for g in gates}) != 1:
        return None
    width = int(gates[0].target.shape[1])
    # what the backward loop sends to x_t and to each state's s_{t-1}, with the stacked sensitivities read back
    stacked = {s.stack: s.value for s in backward.body if isinstance(s, loop_ir.Store) and s.array}
    carry_of = {c for r in backward.body if isinstance(r, loop_ir.Rho) for c in r.carry}
    sent = {s.target: s.value for s in backward.body if isinstance(s, loop_ir.Assign)}
    carries = {state: sent.get(c) for state, c, _ in carry_of}
    dx = next((s.value for s in backward.body if isinstance(s, loop_ir.Store) and not s.array), None)
    if dx is None:
        ret = fn.body[-1]
        dx = next((s.value for s in fn.body if isinstance(s, loop_ir.Assign) and s.target == ret.values[-1]), None)
    if dx is None:
        return None
    dx = dx.xreplace(stacked)
    recurrent = [g for g in gates if g.h_weight is not None]
    carry = carries.get(prevs.get(prev)) if recurrent else None
    carry_terms = _terms(carry) if carry is not None else []
    through = _through(_terms(dx), [W for g in gates for W in g.x_weights])
    through_h = _through(carry_terms, [g.h_weight for g in recurrent])
    if through is None or through_h is None or len(through) != len(_terms(dx)):
        return None
    for gate in gates:
        sensitivities = [through[W] for W in gate.x_weights] + ([through_h[gate.h_weight]] if gate.h_weight is not None else [])
        if len({_canon(a) for a in sensitivities}) != 1:
            return None
        gate.adjoint = sensitivities[0]
    # the derived gradients must be exactly the gate form
    grads = _gradients(fn, backward)
    rights = {seq.X: x} | {s.target: prevs_of for s in fn.body if isinstance(s, loop_ir.PrevStack)
                           for prevs_of in [next(p.target for p in loadprev if p.source == s.source)]}
    for gate in gates:
        adj = gate.adjoint
        for W, right in [(W, x) for W in gate.x_weights] + ([(gate.h_weight, prev)] if gate.h_weight is not None else []):
            if not _gradient_is(grads.get(W), adj, right, stacked, rights):
                return None
        for b in gate.biases:
            if not _gradient_is(grads.get(b), adj, None, stacked, rights):
                return None
    carry_rest = None
    if recurrent:
        fused = {_canon(sp.MatMul(g.adjoint, g.h_weight)) for g in recurrent}
        rest = [term for term in carry_terms if _canon(term) not in fused]
        carry_rest = (sp.MatAdd(*rest) if len(rest) > 1 else rest[0]) if rest else None
    # activations of the recurrent gates: ``a = phi(z)`` definitions, computed by one call per run
    for gate in recurrent:
        for d in forward:
            if isinstance(d.value, Elementwise) and d.value.args[1] == gate.target:
                gate.activation = (d.target, d.value.args[0])
                break
    order = {}
    for g in recurrent:
        if g.activation is not None:
            order.setdefault(_activation_key(g.activation), len(order))
    recurrent.sort(key=lambda g: order[_activation_key(g.activation)] if g.activation is not None else len(order))
    runs = []
    for k, g in enumerate(recurrent):
        if g.activation is None:
            continue
        if runs and runs[-1][1] == k and _activation_key(recurrent[runs[-1][0]].activation) == _activation_key(g.activation):
            runs[-1][1] = k + 1
        else:
            runs.append([k, k + 1, g.activation[1]])
    others = [g for g in gates if g.h_weight is None]
    return GateLayout(recurrent + others, len(recurrent), prevs.get(prev), prev, width, carry_rest,
                      [tuple(r) for r in runs])


class Workspace:
    """The (T, B, H) stacks and step buffers of one call, kept for the next call of the same function: a call
    with the same shapes allocates (and faults in) nothing but its results.  One call at a time per compiled
    function (the stacks are reused, so two threads must not share one)."""

    def __init__(self, empty):
        self.empty, self.arrays, self.i = empty, [], 0

    def start(self):
        self.i = 0

    def take(self, shape, like=None):
        i, self.i = self.i, self.i + 1
        if i < len(self.arrays) and self._fits(self.arrays[i], shape, like):
            return self.arrays[i]
        array = self.empty(shape, like)
        self.arrays[i:i + 1] = [array]
        return array

    @staticmethod
    def _fits(array, shape, like):
        return tuple(array.shape) == tuple(shape) and (like is None or not hasattr(like, "device")
                                                       or (array.device == like.device and array.dtype == like.dtype))


def helpers(backend: str) -> dict:
    """The stacked-gate operations of the generated loop, for one backend."""
    if backend == "numpy":
        ws = Workspace(lambda shape, like: np.empty(shape))

        def time_major(X):
            out = ws.take((X.shape[1], X.shape[0], X.shape[2]))
            np.copyto(out, X.transpose(1, 0, 2))
            return out

        def states(like, *shape):  # a stack of states: s_{-1} = 0 first, the rest written by the loop
            S = ws.take(shape)
            S[0].fill(0.0)
            return S

        def stack(like, mats, shape):
            return np.stack([sum(m[1:], m[0]) if m else np.zeros(shape) for m in mats])

        def sigmoid_into(z, out):  # 1 / (1 + e^-z): one exp (numpy's tanh costs about three); e^-z = inf gives 0
            with np.errstate(over="ignore"):
                np.negative(z, out=out)
                np.exp(out, out=out)
            out += 1.0
            np.reciprocal(out, out=out)

        def tanh_into(z, out):  # 2 / (1 + e^-2z) - 1 (five calls: for small arrays numpy's own tanh is faster)
            if np.size(z) < 1024:
                np.tanh(z, out=out)
                return
            with np.errstate(over="ignore"):
                np.multiply(z, -2.0, out=out)
                np.exp(out, out=out)
            out += 1.0
            np.divide(2.0, out, out=out)
            out -= 1.0

        def gate_inputs(Xf, WxT, b, T, B):
            Z = np.matmul(Xf, WxT, out=ws.take((WxT.shape[0], Xf.shape[0], WxT.shape[2])))
            if b is not None:
                Z += b
            return Z.reshape(WxT.shape[0], T, B, WxT.shape[2])

        def recur(z, h, WhT, tmp):  # z_k += h W_hk^T for the recurrent gates (the product into tmp, then added)
            tmp = tmp.reshape(-1)[:z[0].size].reshape(z[0].shape)  # (B, G H) scratch: its first (B, H) block
            for zk, WhTk in zip(z, WhT):
                np.matmul(h, WhTk, out=tmp)
                np.add(zk, tmp, out=zk)

        def recur_back(gz, Wh, out, tmp):  # out = sum_k g^k W_hk
            np.matmul(gz[0], Wh[0], out=out)
            for k in range(1, len(Wh)):
                np.matmul(gz[k], Wh[k], out=tmp)
                np.add(out, tmp, out=out)
            return out

        def stacked_sum(gz, Wh):  # sum_k g^k W_hk, a new array (dL/dX after the loop)
            out = gz[0] @ Wh[0]
            for k in range(1, len(Wh)):
                out += gz[k] @ Wh[k]
            return out

        def gate_grads(GZ, V):  # sum over t and the batch of g_t^T v_t for every gate: one product over (T B)
            return np.matmul(GZ.reshape(GZ.shape[0], -1, GZ.shape[-1]).transpose(0, 2, 1), V.reshape(-1, V.shape[-1]))

        return {"_gstack": stack, "_gT": lambda A: A.transpose(0, 2, 1),
                "_time_major": time_major, "_ws_start": ws.start,
                "_batch_major": lambda X: X.transpose(1, 0, 2), "_gate_inputs": gate_inputs, "_recur": recur,
                "_recur_back": recur_back, "_recur_weights": lambda Wh: list(Wh.transpose(0, 2, 1)), "_gate_grads": gate_grads,
                "_input_grads": lambda GZ, Wx: stacked_sum(GZ.reshape(GZ.shape[0], -1, GZ.shape[-1]), Wx).reshape(*GZ.shape[1:3], -1), "_sigmoid_into": sigmoid_into,
                "_tanh_into": tanh_into,
                "_empty_n": lambda like, *s: ws.take(s), "_run_rows": lambda like, n, *s: ws.take((n, 2) + s)[:, 0],
                "_states": states, "_colsums": lambda G: np.einsum("gnh->gh", G)[:, None, :],  # 3x numpy's sum over the middle axis
                "_steps": list, "_gate_steps": lambda Z: list(zip(*(list(g) for g in Z))),
                "_run_steps": lambda Z, a, b: list(Z[a:b].swapaxes(0, 1)), "_assign": np.copyto, "_copy": np.copy}
    import torch

    def t_stack(like, mats, shape):
        return torch.stack([sum(m[1:], m[0]) if m else torch.zeros(shape, dtype=like.dtype, device=like.device) for m in mats])

    # one 2-D product per gate: torch's batched product of small strided matrices is several times slower

    ws = Workspace(lambda shape, like: torch.empty(shape, dtype=like.dtype, device=like.device))

    def t_gate_inputs(Xf, WxT, b, T, B):
        Z = ws.take((WxT.shape[0], Xf.shape[0], WxT.shape[2]), Xf)
        for k in range(WxT.shape[0]):
            if b is None:
                torch.mm(Xf, WxT[k], out=Z[k])
            else:
                torch.addmm(b[k], Xf, WxT[k], out=Z[k])
        return Z.reshape(WxT.shape[0], T, B, WxT.shape[2])

    def t_recur(z, h, WhT, tmp):
        """z_k += h W_hk^T for every recurrent gate: one product h [W_h1^T ... W_hG^T] into the (B, G H) scratch,
        added to the gates' (G, B, H) views in one call (MKL's one product of G H columns is about twice as fast
        as G products of H at small H; numpy's G products are faster than its strided add)."""
        torch.mm(h, WhT, out=tmp)
        z.add_(tmp.view(tmp.shape[0], z.shape[0], -1).transpose(0, 1))

    def t_recur_back(gz, Wh, out, tmp):
        torch.mm(gz[0], Wh[0], out=out)
        for k in range(1, len(Wh)):
            out.addmm_(gz[k], Wh[k])
        return out

    def t_gate_grads(GZ, V):
        """sum over t and the batch of g_t^T v_t for every gate: one product over the stacked (T B) axis, or,
        for narrow gates (MKL's product of two very thin matrices is several times slower), one batched
        product over t, summed."""
        if min(GZ.shape[-1], V.shape[-1]) >= 16:
            Vf = V.reshape(-1, V.shape[-1])
            return torch.stack([GZ[k].reshape(-1, GZ.shape[-1]).T @ Vf for k in range(GZ.shape[0])])
        return torch.stack([torch.bmm(GZ[k].transpose(1, 2), V).sum(0) for k in range(GZ.shape[0])])

    def t_input_grads(GZ, Wx):
        """dL/dx_t = sum_k g_t^k W_xk for every t, (T, B, D), in blocks of about 2048 rows (MKL's one product of
        a very tall matrix is slower than a few blocks that stay in cache)."""
        G, T, B, _ = GZ.shape
        out = torch.empty((T, B, Wx.shape[-1]), dtype=GZ.dtype, device=GZ.device)
        step = max(1, 2048 // B) if not GZ.is_cuda else T
        for a in range(0, T, step):
            block = out[a:a + step].view(-1, out.shape[-1])
            torch.mm(GZ[0, a:a + step].reshape(-1, GZ.shape[-1]), Wx[0], out=block)
            for k in range(1, G):
                block.addmm_(GZ[k, a:a + step].reshape(-1, GZ.shape[-1]), Wx[k])
        return out

    def t_tanh_into(z, out):  # 2 sigmoid(2z) - 1: torch's float64 sigmoid is much faster than its tanh on CPU
        if z.numel() < 4096 or z.is_cuda:  # ... but costs four calls: small arrays (and the GPU) take tanh itself
            torch.tanh(z, out=out)
            return
        torch.mul(z, 2.0, out=out)
        torch.sigmoid(out, out=out)
        out.mul_(2.0).sub_(1.0)

    def t_states(like, *shape):
        """A stack of states: s_{-1} = 0 first, the rest written by the loop (no fill of the whole stack)."""
        S = ws.take(shape, like)
        S[0].zero_()
        return S

    return {"_gstack": t_stack, "_gT": lambda A: A.transpose(1, 2),
            "_time_major": lambda X: ws.take((X.shape[1], X.shape[0], X.shape[2]), X).copy_(X.transpose(0, 1)),
            "_ws_start": ws.start, "_batch_major": lambda X: X.transpose(0, 1),
            "_gate_inputs": t_gate_inputs, "_recur": t_recur,
            "_recur_back": t_recur_back, "_recur_weights": lambda Wh: torch.cat(list(Wh.transpose(1, 2)), 1), "_gate_grads": t_gate_grads, "_input_grads": t_input_grads,
            "_sigmoid_into": lambda z, out: torch.sigmoid(z, out=out), "_tanh_into": t_tanh_into,
            "_colsums": lambda G: G.sum(1, keepdim=True),
            "_empty_n": lambda like, *s: ws.take(s, like), "_states": t_states,
            "_run_rows": lambda like, n, *s: ws.take((n, 2) + s, like)[:, 0],
            "_steps": lambda A: A.unbind(0), "_gate_steps": lambda Z: list(zip(*(g.unbind(0) for g in Z))),
            "_run_steps": lambda Z, a, b: Z[a:b].unbind(1), "_assign": lambda dst, value: dst.copy_(value), "_copy": torch.clone}


class _Shared:
    """Activations ``phi(a)`` computed once per step in the forward loop and reused by the backward pass:
    the derivation's ``1 - tanh(c_t)^2`` and ``tanh(c_t)`` read the forward's stored ``tanh(c_t)``."""

    def __init__(self):
        self.values: list = []  # (argument, body at the canonical variable, symbol holding phi(argument))
        self.u = sp.Dummy("u")

    def add(self, elementwise, symbol):
        body = _body(elementwise.args[0], self.u)
        if body.has(self.u) and body != self.u:  # a function of its argument (not the identity, not a constant)
            self.values.append((elementwise.args[1], body, symbol))

    def __call__(self, expr):
        """``expr`` with each ``psi(a)`` whose body contains a stored ``phi(a)`` rewritten over the stored value."""
        if expr is None or not self.values:
            return expr

        def rewrite(e):
            body = _body(e.args[0], self.u)
            for arg, phi, symbol in self.values:
                if e.args[1] == arg and body.has(phi) and not body.xreplace({phi: sp.Dummy()}).has(self.u):
                    inner = body.xreplace({phi: self.u})
                    return symbol if inner == self.u else Elementwise(sp.Lambda(self.u, inner), symbol)
            return e

        return expr.replace(lambda e: isinstance(e, Elementwise), rewrite)


def fuse_gates(fn: loop_ir.Function) -> loop_ir.Function:
    """The gate fusion pass, from IR to IR: the hoisted IR of a cell's loops (:func:`loop_ir.hoist` of
    :func:`loop_ir.cell_loop`) rewritten in the gate layout of its :func:`gate_layout` (see the module
    docstring), or ``fn`` itself when the cell is not of gate form.  The result is printed by the one
    :class:`loop_ir.Emitter`, for numpy and torch alike: the gates' products are :class:`loop_ir.Call` statements
    of the :func:`helpers`, the stacks and step buffers :class:`loop_ir.Alloc` statements before the loops, and
    every other elementwise expression of a step a :class:`loop_ir.Write` into its buffer."""
    layout = gate_layout(fn)
    if layout is None:
        return fn
    forward_loop, backward_loop = fn.loops()
    loss = next(s for s in forward_loop.body if isinstance(s, loop_ir.Loss))
    rho = next(s for s in backward_loop.body if isinstance(s, loop_ir.Rho))
    e_all = next(s.source for s in backward_loop.body if isinstance(s, loop_ir.Load) and s.target == loss.gen.e)
    seq = next(s for s in fn.body if isinstance(s, loop_ir.Sequence))
    ret = fn.body[-1]
    out = loop_ir.Function(fn.name, fn.args, [], dict(fn.names), set(fn.taken), fn.invariants)
    return _Fusion(out, layout, loss, rho, e_all, seq.X, ret).build()


class _Fusion:
    """The statements of one cell's gate layout (:func:`fuse_gates`), built into the Function ``fn``."""

    def __init__(self, fn, layout, loss, rho, e_all, X, ret):
        self.fn, self.layout, self.gen, self.cell, self.X = fn, layout, loss.gen, loss.cell, X
        self.loss, self.e_all, self.carry = loss, e_all, {s: c for s, c, _ in rho.carry}
        self.params = [a for a in fn.args if a in fn.invariants]
        self.L, self.grad = ret.values[0], dict(zip(self.params, ret.values[1:]))
        self.B, self.T = sp.Symbol("_B"), sp.Symbol("_T")
        self.buffers: list = []  # the step buffers of their own, allocated before the loops

    def own(self, text, shape=None):
        return self.fn.internal(text, shape)

    def at(self, into: list, source, index, shape=None):
        """A symbol bound to the view ``source[index]`` by a :class:`~crosscheck.loop_ir.View` in the statements
        ``into`` (the one already there, or a new one appended)."""
        view = next((s for s in into if isinstance(s, loop_ir.View) and s.source == source and s.at == index), None)
        if view is None:
            view = self.fn.view(source, index, shape)
            into.append(view)
        return view.target

    def buffer(self, text, shape, kind="empty", target=None):
        """A step buffer of its own (``target``: a symbol of the derivation that lives in it), allocated before the loops."""
        sym = target if target is not None else self.own(text)
        self.buffers.append(loop_ir.Alloc(sym, shape, self.X, kind))
        return sym

    def build(self) -> loop_ir.Function:
        fn, layout, gen, cell, X, B, T = self.fn, self.layout, self.gen, self.cell, self.X, self.B, self.T
        Call, View, Write = loop_ir.Call, loop_ir.View, loop_ir.Write
        gates, n, Hw = layout.gates, layout.recurrent, layout.width
        G, D = len(gates), cell.sizes[cell.input_size]
        H = {s: cell.shape_of(s)[1] for s in cell.states}
        row, gate = (B, Hw), (1, Hw)  # a gate's (B, H) block at one step; the shape of a symbol standing for one
        state_of = {gen.at_t[s]: s for s in cell.states}
        recurrent_targets = {g.target: k for k, g in enumerate(gates[:n])}
        activated = {g.activation[0]: k for k, g in enumerate(gates[:n]) if g.activation is not None}
        # a run of one gate whose activation is a state writes straight into the state's stack
        direct = {a: state_of[gates[a].activation[0]] for a, b, _ in layout.runs
                  if b == a + 1 and gates[a].activation[0] in state_of}
        stored = [a for a, b, _ in layout.runs for a in range(a, b) if a not in direct]
        forward = gen.step.definitions("forward")
        definition = {d.target: d.value for d in forward}
        shared = _Shared()
        for g in gates[:n]:
            if g.activation is not None:
                shared.add(definition[g.activation[0]], g.activation[0])

        body = fn.body
        body += [loop_ir.Sequence(X), Call((), "_ws_start", (), "the stacks and buffers of the last call are reused (cell_loop.Workspace)")]
        Xt, Xf, Wx, WxT, Z = (self.own(f"_{a}") for a in ("Xt", "Xf", "Wx", "WxT", "Z"))
        body += [Call((Xt,), "_time_major", (X,)), loop_ir.Reshape(Xf, Xt, (T * B, D)),
                 Call((Wx,), "_gstack", (X, [tuple(g.x_weights) for g in gates], (Hw, D)), "x_t W_x^T of every gate"),
                 Call((WxT,), "_gT", (Wx,))]
        bias = None
        if any(g.biases for g in gates):
            bias = self.own("_bias")
            body.append(Call((bias,), "_gstack", (X, [tuple(g.biases) for g in gates], (1, Hw))))
        body.append(Call((Z,), "_gate_inputs", (Xf, WxT, bias, T, B), "the input part of every gate, every step"))
        if n:
            Wh, Whk, WhTk, Zh = (self.own(f"_{a}") for a in ("Wh", "Whk", "WhTk", "Zh"))
            body += [Call((Wh,), "_gstack", (X, [(g.h_weight,) for g in gates[:n]], (Hw, H[layout.state]))),
                     Call((Whk,), "_steps", (Wh,)), Call((WhTk,), "_recur_weights", (Wh,)),
                     Call((Zh,), "_run_steps", (Z, 0, n), "the recurrent gates' (G, B, H) block of each step")]
        if stored:
            A = self.own("_A")
            body.append(loop_ir.Alloc(A, (n, T, B, Hw), X))
        S = {s: self.own(f"_S{i}") for i, s in enumerate(cell.states)}  # (T + 1, B, H): s_{-1} = 0, then s_t at t + 1
        body += [loop_ir.Alloc(S[s], (T + 1, B, H[s]), X, "states") for s in cell.states]
        # each step's views of the stacks, made once (indexing a tensor inside the loop costs microseconds a step)
        Sv = {s: self.own(f"_S{i}v") for i, s in enumerate(cell.states)}
        body += [Call((Sv[s],), "_steps", (S[s],)) for s in cell.states]
        Xv, Zv, z = self.own("_Xv"), self.own("_Zv"), self.own("_z")
        body += [Call((Xv,), "_steps", (Xt,)), Call((Zv,), "_gate_steps", (Z,))]
        if stored:
            Av, a_ = self.own("_Av"), self.own("_a")
            body.append(Call((Av,), "_gate_steps", (A,)))
        Zr, Ar = {}, {}
        for a, b, _ in layout.runs:
            if a not in direct:
                Zr[a], Ar[a] = self.own(f"_Zr{a}"), self.own(f"_Ar{a}")
                body += [Call((Zr[a],), "_run_steps", (Z, a, b)), Call((Ar[a],), "_run_steps", (A, a, b))]
        mark = len(body)  # the step buffers of both loops are allocated here, once the loops are built
        body += [loop_ir.Temporaries(X), loop_ir.Assign(self.L, sp.Float(0.0))]
        kept = [d for d in forward if d.target not in recurrent_targets and d.target not in activated]
        temps = {}  # definition target -> [(temp symbol, phi(a))] computed just before it
        values = {}
        for d in kept:
            value = d.value
            if isinstance(value, Elementwise):
                shared.add(value, d.target)
            else:
                for e in sorted(value.atoms(Elementwise), key=sp.default_sort_key):
                    sym = self.own(f"_phi{sum(map(len, temps.values()))}", e.shape)
                    temps.setdefault(d.target, []).append((sym, e))
                    shared.add(e, sym)
                    value = value.xreplace({e: sym})
            values[d.target] = value
        stored_defs = {}  # a definition (or a temporary phi(a) of one) kept for the backward pass: its (T, B, W) stack
        for d in kept:
            for sym in [sym for sym, _ in temps.get(d.target, [])] + ([d.target] if d.target not in state_of else []):
                k = len(stored_defs)
                stack, stored_defs[sym] = self.own(f"_D{k}"), self.own(f"_D{k}v")
                body += [loop_ir.Alloc(stack, (T, B, sym.shape[1]), X), Call((stored_defs[sym],), "_steps", (stack,))]
        body.append(loop_ir.Stash(self.e_all))

        def views():
            """The step's inputs, previous states and gate blocks as views of the stacks."""
            out = [View(prev, Sv[s], t) for s, prev in gen.prev.items()] + [View(gen.x, Xv, t), View(z, Zv, t)]
            return out + ([View(a_, Av, t)] if stored else [])

        def gate_views():
            out = []
            for k, g in enumerate(gates[:n]):
                out.append(View(g.target, z, k))
                if g.activation is not None:
                    out.append(View(g.activation[0], *((Sv[direct[k]], t + 1) if k in direct else (a_, k))))
            return out

        step = views()
        if n:
            step.append(Call((), "_recur", (self.at(step, Zh, t), layout.prev, WhTk, self.buffer("_rf", (B, n * Hw)))))
        for a, b, _ in layout.runs:  # the activation of each run of gates, one call (in place for tanh, sigmoid)
            into = self.at(step, Sv[direct[a]], t + 1, gate) if a in direct else self.at(step, Ar[a], t, gate)
            block = self.at(step, z, a, gate) if a in direct else self.at(step, Zr[a], t, gate)
            value = definition[gates[a].activation[0]].xreplace({gates[a].target: block})
            step.append(Write(into, value, row if a in direct else (b - a, B, Hw)))
        step += gate_views()
        for g in gates[:n]:  # a state that is a gate's pre-activation itself
            if g.target in state_of:
                step.append(Call((), "_assign", (self.at(step, Sv[state_of[g.target]], t + 1), g.target)))
        for d in kept:
            k = layout.gate_of(d.target)
            value = values[d.target]
            if k is not None:  # an input-only gate: its stacked input part plus its other terms
                terms = [self.at(step, z, k, gate)] + gates[k].others
                value = sp.MatAdd(*terms) if len(terms) > 1 else terms[0]
            for sym, e in temps.get(d.target, []):
                step += [View(sym, stored_defs[sym], t), Write(sym, e, (B, sym.shape[1]))]
            step.append(View(d.target, Sv[state_of[d.target]], t + 1) if d.target in state_of
                        else View(d.target, stored_defs[d.target], t))
            step.append(Write(d.target, value, (B, d.target.shape[1])))
        step.append(self.loss)
        body.append(loop_ir.Loop(t, tuple(step)))
        # the reversed loop and the gradients after it (one product or sum over the stacked (T, B) axis each)
        fused = {W for g in gates for W in g.x_weights + g.biases + ([g.h_weight] if g.h_weight is not None else [])}
        reached = {p for p in self.params if gen.step_grads[param_key(gen, p)] is not None
                   or gen.head_grads[param_key(gen, p)] is not None}
        body += [loop_ir.Zeros(self.grad[p], shape=shape_of(p)) for p in self.params if p not in fused and p in reached]
        GZ, GZv, gz = self.own("_GZ"), self.own("_GZv"), self.own("_gz")
        body += [loop_ir.Alloc(GZ, (G, T, B, Hw), X, note="g_t of every gate"), Call((GZv,), "_gate_steps", (GZ,))]
        carried = [s for s in cell.states if (s == layout.state and n) or gen.carry[s] is not None]
        body += [loop_ir.Zeros(self.carry[s], H[s]) for s in cell.states]  # what step t + 1 sent to s_t
        sent = {s: self.buffer(f"_next_{s}", (B, H[s])) for s in carried}  # what step t sends (then swapped)
        # the slope of each activation run, once per step for the whole run (the LSTM's three y (1 - y))
        run_of = {k: a for a, b, _ in layout.runs if a not in direct for k in range(a, b)}
        width_of = {a: b - a for a, b, _ in layout.runs}
        u = sp.Dummy("u")
        found: dict = {}
        for expr in [d.value for d in gen.backward_defs] + [g.adjoint for g in gates] + [layout.carry_rest]:
            for e in (expr.atoms(Elementwise) if expr is not None else ()):
                k = activated.get(e.args[1])
                if k in run_of:
                    body_ = _body(e.args[0], u)
                    found.setdefault((run_of[k], sp.srepr(body_)), (body_, {}))[1].setdefault(k, []).append(e)
        slopes, slope_of = [], {}
        for (a, _), (slope, uses) in found.items():
            if len(uses) < 2:
                continue
            shape = (width_of[a], B, Hw)
            buffer = self.buffer(f"_dA{len(slopes)}", shape, "rows")
            run = self.at(slopes, Ar[a], t, gate)
            slopes.append(Write(buffer, Elementwise(sp.Lambda(u, slope), run), shape))
            for k, nodes in uses.items():
                sym = self.at(self.buffers, buffer, k - a, gate)  # a fixed gate of a buffer: viewed once, before the loops
                for e in nodes:
                    slope_of[e] = sym

        def rewrite(expr):
            return shared(expr).xreplace(slope_of) if expr is not None else None

        step = views() + [View(gz, GZv, t)] + slopes + gate_views()
        step += [View(gen.at_t[s], Sv[s], t + 1) for s in cell.states]
        step += [View(sym, views_, t) for sym, views_ in stored_defs.items()]
        step += [loop_ir.Load(gen.e, self.e_all), loop_ir.Rho(gen, cell, tuple((s, self.carry[s], H[s]) for s in cell.states), reset=False)]
        adjoint_of = {g.adjoint: k for k, g in enumerate(gates)}
        for d in gen.backward_defs:
            k = adjoint_of.get(d.target)
            value = rewrite(d.value)
            if k is not None:
                step += [View(d.target, gz, k), Write(d.target, value, row)]
            elif value in fn.names:  # another name for a value (g_t^h = rho_t^h)
                step.append(loop_ir.Assign(d.target, value))
            else:
                shape = (B, d.target.shape[1])
                step.append(Write(self.buffer(None, shape, target=d.target), value, shape))
        gzk = None
        for k, g in enumerate(gates):
            if g.adjoint not in fn.names:  # a sensitivity the derivation left unnamed (the GRU's g_t^a = g_t^{z^n} * r_t)
                gzk = gzk or self.own("_gzk")
                step += [View(gzk, gz, k), Write(gzk, rewrite(g.adjoint), row)]
        outside = [p for p in self.params if p not in fused]
        for s in loop_ir.gradient_terms(gen, outside, {p: self.grad[p] for p in outside}):
            if s.guard is None:
                p = next(p for p in outside if self.grad[p] == s.target)
                s = replace(s, allocates=f"the step term of dL/d{fn.names[p]} (a parameter outside the gates), summed in the loop")
            step.append(s)
        for s in carried:
            shape = (B, H[s])
            if s == layout.state and n:
                step.append(Call((), "_recur_back", (gz, Whk, sent[s], self.buffer("_rb", shape))))
                if layout.carry_rest is not None:
                    step.append(Write(sent[s], rewrite(layout.carry_rest), shape, add=True))
            else:
                step.append(Write(sent[s], rewrite(gen.carry[s]), shape))
        if carried:
            left = tuple(self.carry[s] for s in carried) + tuple(sent[s] for s in carried)
            step.append(loop_ir.Swap(left, left[len(carried):] + left[:len(carried)]))
        body.append(loop_ir.Loop(t, tuple(step), reversed=True))
        # every gate weight and bias gradient, and dL/dX, as one product (or sum) over the stacked (T, B) axis
        grads = dict(self.grad)
        if any(g.x_weights for g in gates):
            dWx = self.own("_dWx")
            body.append(Call((dWx,), "_gate_grads", (GZ, Xt)))
        if n:
            dWh = self.own("_dWh")  # (the recurrent gates come first in the stack)
            body.append(Call((dWh,), "_gate_grads", (self.at(body, GZ, slice(None, n)), self.at(body, S[layout.state], slice(None, -1)))))
        if any(g.biases for g in gates):
            Gf, db = self.own("_Gf"), self.own("_db")
            body += [loop_ir.Reshape(Gf, GZ, (G, T * B, Hw)), Call((db,), "_colsums", (Gf,))]
        for k, g in enumerate(gates):
            for W in g.x_weights:
                grads[W] = self.at(body, dWx, k)
            for j, b in enumerate(g.biases):  # two biases of one gate (a GRU's b_xr, b_hr) get equal, separate arrays
                grads[b] = self.at(body, db, k)
                if j:
                    body.append(Call((self.grad[b],), "_copy", (grads[b],)))
                    grads[b] = self.grad[b]
            if g.h_weight is not None:
                grads[g.h_weight] = self.at(body, dWh, k)
        dX = self.own("_dX")
        body += [Call((dX,), "_input_grads", (GZ, Wx)), Call((dX,), "_batch_major", (dX,))]
        body += [loop_ir.Zeros(self.grad[p], shape=shape_of(p)) for p in self.params if p not in fused and p not in reached]
        body.append(loop_ir.Return((self.L,) + tuple(grads[p] for p in self.params) + (dX,)))
        body[mark:mark] = self.buffers
        return fn
