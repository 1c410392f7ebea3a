"""derive.blocks' Transformer programs (attention, LayerNorm, pre-/post-norm blocks) compiled and run against torch autograd.

The programs are over matrix symbols of symbolic shape; :func:`compiled`
lambdifies one through :func:`crosscheck.lambdify.lambdify` (the compiler of
the recurrent cells) with the sizes as arguments, so one compiled function
runs at every size.  :func:`reference` is an independent torch forward pass of
the same equations (``torch.softmax``, ``torch.nn.functional.layer_norm`` and ``rms_norm``);
:func:`compare_at` draws random inputs at one size, runs both, and returns the
derived gradients next to autograd's.
"""

from __future__ import annotations

import math
from functools import lru_cache

import sympy as sp
import torch

from seqgrad.derive import blocks
from seqgrad.derive.rules import EPS

from .lambdify import lambdify

LN_EPS = 1e-5  # torch.nn.LayerNorm's default, as the course uses


#: the normalisations of derive.blocks a program is compiled with, by name (kind "norm" is the norm alone)
NORMS = tuple(blocks.NORMS)


@lru_cache(maxsize=None)
def program(kind: str, heads: int = 1, masked: bool = False, norm: str = "layernorm"):
    """The symbolic-size program of ``kind`` ("attention", "cross-attention", "layernorm", "norm", "pre-norm",
    "post-norm", "mlp": the pre-norm block's MLP sublayer); ``norm`` is the normalisation of "norm" and of the blocks ("layernorm" is "norm" with LayerNorm)."""
    if kind == "attention":
        return blocks.attention_program(heads=heads, masked=masked)
    if kind == "cross-attention":
        return blocks.cross_attention_program(masked=masked)
    if kind in ("layernorm", "norm"):
        return blocks.norm_program("layernorm" if kind == "layernorm" else norm)
    if kind == "mlp":
        return blocks.mlp_program(norm=norm)
    return blocks.block_program(kind, heads=heads, norm=norm)


def _args(block) -> list:
    args = block.args()
    used = set().union(*[d.value.free_symbols for d in block.program])
    return args + ([EPS] if EPS in used else [])


@lru_cache(maxsize=None)
def compiled(kind: str, heads: int = 1, masked: bool = False, norm: str = "layernorm"):
    """(block, compiled function): outputs = [block output, every gradient], arguments = :func:`_args`."""
    block = program(kind, heads, masked, norm)
    outputs = [block.output] + list(block.gradients.values())
    return block, lambdify(block.program, outputs, _args(block), backend="torch", check_finite=not masked)


def _reference_heads(values: dict, X, heads: int, dk: int, M=None):
    outs = []
    for i in range(1, heads + 1):
        tag = "" if heads == 1 else f"^[{i}]"
        Q, K, V = (X @ values[f"W_{n}{tag}"].T for n in "QKV")
        S = Q @ K.T / math.sqrt(dk)
        if M is not None:
            S = S + M
        outs.append(torch.softmax(S, -1) @ V)
    if heads == 1:
        return outs[0]
    return torch.cat(outs, -1) @ values["W_O"].T


def _reference_norm(values: dict, X, tag: str = "", norm: str = "layernorm"):
    """torch's own normalisation: ``layer_norm``, or ``rms_norm`` (torch >= 2.4), eps = 1e-5 inside the root."""
    gamma = values["gamma" + tag].reshape(-1)
    if norm == "rmsnorm":
        return torch.nn.functional.rms_norm(X, (X.shape[-1],), gamma, LN_EPS)
    return torch.nn.functional.layer_norm(X, (X.shape[-1],), gamma, values["beta" + tag].reshape(-1), LN_EPS)


def reference(kind: str, values: dict, heads: int, dk: int, norm: str = "layernorm"):
    """The forward pass in plain torch (the equations of derive.blocks, written independently)."""
    if kind == "attention":
        return _reference_heads(values, values["X"], heads, dk, values.get("M"))
    if kind in ("layernorm", "norm"):
        return _reference_norm(values, values["X"], norm="layernorm" if kind == "layernorm" else norm)
    if kind == "mlp":  # H' = U + relu(N(U) W_1^T + b_1) W_2^T + b_2
        U = values["U"]
        hidden = torch.relu(_reference_norm(values, U, blocks.NORM_TAGS["mlp"], norm) @ values["W_1"].T + values["b_1"])
        return U + hidden @ values["W_2"].T + values["b_2"]
    H = values["H"]
    if kind == "pre-norm":
        return H + _reference_heads(values, _reference_norm(values, H, blocks.NORM_TAGS["attention"], norm), heads, dk)
    return _reference_norm(values, H + _reference_heads(values, H, heads, dk), blocks.NORM_TAGS["attention"], norm)


def causal(T: int, dtype, device):
    """The additive causal mask: 0 on and below the diagonal, -inf above."""
    return torch.triu(torch.full((T, T), float("-inf"), dtype=dtype, device=device), 1)


def call(kind: str, values: dict, G: torch.Tensor, sizes: dict, heads: int = 1, masked: bool = False,
         norm: str = "layernorm") -> list:
    """The compiled program of ``kind`` at the inputs ``values`` (tensors by input name), the upstream ``G`` and the
    sizes (numbers by name): [output, every gradient in ``block.gradients`` order], the arguments put in the
    order of :func:`_args`."""
    block, f = compiled(kind, heads, masked, norm)
    scalar = lambda x: torch.tensor(float(x), dtype=G.dtype, device=G.device)
    names = {leaf: name for name, leaf in block.inputs.items()}
    args = [values[names[a]] if a in names else G if a == block.G else scalar(LN_EPS) if a == EPS else scalar(sizes[a.name])
            for a in _args(block)]
    return f(*args)


def compare_at(kind: str, sizes: dict, generator: torch.Generator, heads: int = 1, masked: bool = False,
               dtype=torch.float64, device="cpu", norm: str = "layernorm",
               reference_fn=None) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """(name, derived, autograd) for the output and every gradient at one size with random inputs; the autograd
    side is :func:`reference` (torch's own functions), or ``reference_fn(values)`` when given."""
    block, f = compiled(kind, heads, masked, norm)
    size_values = {s.name: sizes[s.name] for s in block.sizes if hasattr(s, "name")}
    if kind in ("pre-norm", "post-norm") and heads == 1:
        size_values["d_v"] = size_values["d"]
    at = {s: size_values[s.name] for s in block.sizes if hasattr(s, "name")}
    dims = lambda shape: tuple(int(sp.Integer(n) if isinstance(n, int) else n.subs(at)) for n in shape)
    values = {}
    for name, leaf in block.inputs.items():
        shape = dims(leaf.shape)
        if name == "M":
            values[name] = causal(shape[0], dtype, device)
        else:
            scale = 1.0 if name in ("X", "H", "U") or name.startswith(("gamma", "beta")) else 1 / math.sqrt(shape[1])
            offset = 1.0 if name.startswith("gamma") else 0.0
            values[name] = (offset + scale * torch.randn(*shape, generator=generator, dtype=torch.float64)).to(device, dtype)
    G = torch.randn(*dims(block.G.shape), generator=generator, dtype=torch.float64).to(device, dtype)
    derived = call(kind, values, G, size_values, heads, masked, norm)
    leaves = {n: v.clone().requires_grad_(n != "M") for n, v in values.items()}
    out = (reference(kind, leaves, heads, size_values.get("d_k", 1), norm) if reference_fn is None
           else reference_fn(leaves))
    (out * G).sum().backward()
    rows = [("forward", derived[0], out.detach())]
    for (name, _), value in zip(block.gradients.items(), derived[1:]):
        rows.append((f"d{name}", value, leaves[name].grad))
    return rows


def multihead_program(heads: int = 3):
    """The rows of multi-head attention written for every head (:func:`derive.blocks.multihead_rows`), as the notes
    print them, instantiated at ``n_head = heads``: a program of their own (each row of head ``i`` at every head
    ``k``, the sum over the heads and the concatenation written out), not the engine's lines they were read from.
    Returns ``(program, inputs by name, dB, outputs by name)``."""
    from seqgrad.derive.program import Program

    forward, backward = blocks.multihead_rows(heads=heads)
    prog = Program(f"multi-head attention, every head's rows at n_head = {heads}")
    written = lambda e: e.xreplace({x: x.at(heads) for x in e.atoms(blocks.HeadSum, blocks.HeadConcat)})  # noqa: E731
    for target, value in forward + backward:
        per_head = f"^[{blocks.HEAD_INDEX}]" in target.name
        for k in range(1, heads + 1) if per_head else (None,):
            at = (lambda e: blocks.at_head(e, k, heads)) if per_head else (lambda e: e.xreplace({blocks.n_head: heads}))
            prog.define(at(target), written(at(value)), kind="forward" if (target, value) in forward else "backward")
    defined = {d_.target for d_ in prog}
    used = set().union(*[d_.value.atoms(sp.MatrixSymbol) for d_ in prog])
    inputs = {s.name: s for s in sorted(used - defined, key=lambda s: s.name)}
    dB = inputs.pop("dB")
    outputs = {"forward": prog["B"].target, **{d_.target.name[1:]: d_.target for d_ in prog
                                               if d_.target.name.startswith("dW") or d_.target.name == "dX"}}
    return prog, inputs, dB, outputs


def compare_multihead_at(sizes: dict, generator: torch.Generator, heads: int = 3, dtype=torch.float64,
                         device="cpu") -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """(name, from the printed rows, autograd) for ``B`` and every gradient of multi-head attention at one size, with
    random inputs: :func:`multihead_program` compiled against :func:`reference` (plain torch) and its autograd."""
    prog, inputs, dB, outputs = multihead_program(heads)
    size_symbols = [s for s in (blocks.T, blocks.d, blocks.d_k, blocks.d_v)]
    f = lambdify(prog, list(outputs.values()), list(inputs.values()) + [dB] + size_symbols, backend="torch")
    at = {s: sizes[s.name] for s in size_symbols}
    dims = lambda shape: tuple(int(n.subs(at)) if isinstance(n, sp.Basic) else int(n) for n in shape)  # noqa: E731
    values = {name: (torch.randn(*dims(leaf.shape), generator=generator, dtype=torch.float64)
                     / (1.0 if name == "X" else math.sqrt(dims(leaf.shape)[1]))).to(device, dtype)
              for name, leaf in inputs.items()}
    G = torch.randn(*dims(dB.shape), generator=generator, dtype=torch.float64).to(device, dtype)
    scalar = lambda x: torch.tensor(float(x), dtype=dtype, device=device)  # noqa: E731
    derived = f(*values.values(), G, *(scalar(sizes[s.name]) for s in size_symbols))
    leaves = {n: v.clone().requires_grad_() for n, v in values.items()}
    out = reference("attention", leaves, heads, sizes["d_k"])
    (out * G).sum().backward()
    return [(name, value, out.detach() if name == "forward" else leaves[name].grad)
            for name, value in zip(outputs, derived)]


def reference_decoder(values: dict, heads: int, dk: int):
    """The pre-norm decoder block in plain torch (:func:`derive.blocks.decoder_block_program`, written independently):
    ``U_self = H + MHA_self(LN_self(H), M)``, ``U_cross = U_self + MHA_cross(LN_cross(U_self), Z)``,
    ``H' = U_cross + MLP(LN_mlp(U_cross))`` (the LayerNorms' parameters named as :data:`derive.blocks.NORM_TAGS` says)."""
    tags = blocks.NORM_TAGS
    def attention(X, source, role, M=None):
        outs = []
        for i in range(1, heads + 1):
            Q, K, V = (rows @ values[f"W_{n},{role}^[{i}]"].T for n, rows in (("Q", X), ("K", source), ("V", source)))
            S = Q @ K.T / math.sqrt(dk)
            outs.append(torch.softmax(S if M is None else S + M, -1) @ V)
        return torch.cat(outs, -1) @ values[f"W_O,{role}"].T

    H, Z = values["H"], values["Z"]
    Y_self = _reference_norm(values, H, tags["self"])
    U1 = H + attention(Y_self, Y_self, "self", values["M"])
    U2 = U1 + attention(_reference_norm(values, U1, tags["cross"]), Z, "cross")
    hidden = torch.relu(_reference_norm(values, U2, tags["mlp"]) @ values["W_1"].T + values["b_1"])
    return U2 + hidden @ values["W_2"].T + values["b_2"]


def compare_decoder_at(sizes: dict, generator: torch.Generator, heads: int = 2, dtype=torch.float64,
                       device="cpu") -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """(name, derived, autograd) for the decoder block's output and every gradient (the memory's dZ among them) at one
    size with random inputs and the causal mask: :func:`derive.blocks.decoder_block_program` compiled against
    :func:`reference_decoder` and its autograd."""
    block = blocks.decoder_block_program(heads=heads)
    args = [*block.inputs.values(), block.G, *[s for s in block.sizes if isinstance(s, sp.Symbol)], EPS]
    f = lambdify(block.program, [block.output, *block.gradients.values()], args, backend="torch", check_finite=False)
    at = {s: sizes[s.name] for s in block.sizes if isinstance(s, sp.Symbol)}
    dims = lambda shape: tuple(int(n.subs(at)) if isinstance(n, sp.Basic) else int(n) for n in shape)  # noqa: E731
    values = {}
    for name, leaf in block.inputs.items():
        shape = dims(leaf.shape)
        if name == "M":
            values[name] = causal(shape[0], dtype, device)
            continue
        scale = 1.0 if name in ("H", "Z") or name.startswith(("gamma", "beta")) else 1 / math.sqrt(shape[1])
        offset = 1.0 if name.startswith("gamma") else 0.0
        values[name] = (offset + scale * torch.randn(*shape, generator=generator, dtype=torch.float64)).to(device, dtype)
    G = torch.randn(*dims(block.G.shape), generator=generator, dtype=torch.float64).to(device, dtype)
    scalar = lambda x: torch.tensor(float(x), dtype=dtype, device=device)  # noqa: E731
    derived = f(*values.values(), G, *(scalar(v) for v in at.values()), scalar(LN_EPS))
    leaves = {n: v.clone().requires_grad_(n != "M") for n, v in values.items()}
    out = reference_decoder(leaves, heads, sizes["d_k"])
    (out * G).sum().backward()
    return [("forward", derived[0], out.detach())] + [(f"d{name}", value, leaves[name].grad)
                                                      for name, value in zip(block.gradients, derived[1:])]
