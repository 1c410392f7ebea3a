"""The convolution layer of lecture 7 (seed 003 l.5-15) in torch: cross-correlation, max-pooling, receptive fields.

``conv(X, K, b)`` is the lecture's ``(X * K)_ij = sum_uv K_uv X_{i+u, j+v} + b`` (1-D or 2-D, one filter,
a leading batch axis), with stride s and zero padding P: output (i, j) reads ``X_{s i+u, s j+v}`` of the
padded input, and there are ``floor((H + 2P - k) / s) + 1`` outputs per axis.  It runs as one strided
slice per kernel entry, multiplied by that entry and added: the weight sharing of l.11 in code.

``max_pool2d`` takes the maximum over p x p windows (the lecture's formula is cut off after
``\\max_{0\\le u,v``); ``max_pool2d_backward`` routes each G_ij to its window's maximum, the first one in
row-major order at a tie (PyTorch's convention).
"""

from __future__ import annotations

import itertools

import torch
import torch.nn.functional as F

from seqgrad import validate
from seqgrad.errors import NonFiniteError, SeqgradTypeError, SeqgradValueError, ShapeError


def output_size(H: int, k: int, stride: int = 1, padding: int = 0, *, argument: str = "K") -> int:
    """``floor((H + 2P - k) / s) + 1``; a kernel larger than the padded input is refused."""
    if k > H + 2 * padding:
        raise ShapeError(argument, (k,), f"a kernel of at most H + 2P = {H} + 2*{padding} = {H + 2 * padding} entries per axis "
                                        f"(input size {H}, padding {padding})")
    return (H + 2 * padding - k) // stride + 1


def _check(X, K, stride, padding):
    if not isinstance(X, torch.Tensor) or not X.is_floating_point():
        raise SeqgradTypeError("X", type(X).__name__, "a floating-point tensor (B, W) or (B, H, W)")
    if not isinstance(K, torch.Tensor) or K.dim() not in (1, 2):
        raise SeqgradTypeError("K", type(K).__name__, "a kernel tensor (k,) or (k_h, k_w)")
    if X.dim() != K.dim() + 1 or any(d == 0 for d in X.shape):
        raise ShapeError("X", tuple(X.shape), f"(B, {', '.join(['size'] * K.dim())}) with every size >= 1, for a kernel {tuple(K.shape)}")
    if not bool(torch.isfinite(X).all()):
        raise NonFiniteError("X")
    stride = validate.integer("stride", stride, minimum=1)
    padding = validate.integer("padding", padding, minimum=0)
    out = tuple(output_size(h, k, stride, padding) for h, k in zip(X.shape[1:], K.shape))
    return stride, padding, out


def conv(X: torch.Tensor, K: torch.Tensor, b=0.0, *, stride: int = 1, padding: int = 0) -> torch.Tensor:
    """``Y_o = sum_w K_w X_{s o + w} + b`` over the zero-padded X (o, w index tuples of 1 or 2 axes)."""
    stride, padding, out = _check(X, K, stride, padding)
    Xp = F.pad(X, [padding] * (2 * K.dim())) if padding else X
    Y = torch.zeros(X.shape[0], *out, dtype=X.dtype, device=X.device) + b
    for w in itertools.product(*[range(k) for k in K.shape]):
        window = (slice(None),) + tuple(slice(c, c + stride * (n - 1) + 1, stride) for c, n in zip(w, out))
        Y = Y + K[w] * Xp[window]
    return Y


def _windows(X: torch.Tensor, pool: int, stride: int):
    if not isinstance(X, torch.Tensor) or X.dim() != 3 or not X.is_floating_point():
        raise ShapeError("X", tuple(getattr(X, "shape", ())), "a floating-point tensor (B, H, W)")
    pool = validate.integer("pool", pool, minimum=1)
    stride = pool if stride is None else validate.integer("stride", stride, minimum=1)
    Ho, Wo = output_size(X.shape[1], pool, stride, argument="pool"), output_size(X.shape[2], pool, stride, argument="pool")
    B, H, W = X.shape
    rows = (torch.arange(Ho, device=X.device) * stride)[:, None, None, None] + torch.arange(pool, device=X.device)[None, None, :, None]
    cols = (torch.arange(Wo, device=X.device) * stride)[None, :, None, None] + torch.arange(pool, device=X.device)[None, None, None, :]
    flat = (rows * W + cols).reshape(Ho, Wo, pool * pool)  # window entries in row-major order
    return flat, Ho, Wo


def max_pool2d(X: torch.Tensor, pool: int, stride: int | None = None) -> torch.Tensor:
    """``maxpool(X)_ij = max_{0<=u,v<p} X_{s i+u, s j+v}`` (stride defaults to p)."""
    flat, Ho, Wo = _windows(X, pool, stride)
    return X.reshape(X.shape[0], -1)[:, flat].amax(dim=-1)


def max_pool2d_backward(X: torch.Tensor, G: torch.Tensor, pool: int, stride: int | None = None) -> torch.Tensor:
    """dL/dX: each G_ij added at its window's argmax, the first maximal entry in row-major order at a tie."""
    flat, Ho, Wo = _windows(X, pool, stride)
    if tuple(G.shape) != (X.shape[0], Ho, Wo):
        raise ShapeError("G", tuple(G.shape), f"({X.shape[0]}, {Ho}, {Wo}) like the pooled output")
    Xf = X.reshape(X.shape[0], -1)
    first = Xf[:, flat].argmax(dim=-1)  # torch.argmax returns the first maximal index
    where = flat.expand(X.shape[0], -1, -1, -1).gather(-1, first[..., None]).squeeze(-1)
    dX = torch.zeros_like(Xf)
    dX.scatter_add_(1, where.reshape(X.shape[0], -1), G.reshape(X.shape[0], -1))
    return dX.reshape(X.shape)


def receptive_field(kernels, strides, *, dtype=torch.float64) -> int:
    """Measured, not computed: the extent (first to last input position) that a central output of a 1-D stack of
    convolutions reads, from the nonzero entries of its gradient (positive kernels, so no term can cancel).  With a
    stride larger than the next kernel some positions inside the extent are skipped; the extent still counts them."""
    kernels, strides = list(kernels), list(strides)
    if not kernels or len(kernels) != len(strides):
        raise SeqgradValueError("strides", strides, f"one stride per kernel ({len(kernels)} kernels)")
    for name, values in (("kernels", kernels), ("strides", strides)):
        for x in values:
            validate.integer(name, x, minimum=1)
    n = 4 * sum(kernels) * max(1, int(torch.tensor(strides).prod())) + 1  # a generous length: the window lies inside
    X = torch.ones(1, n, dtype=dtype, requires_grad=True)
    Y = X
    for k_, s_ in zip(kernels, strides):
        Y = conv(Y, torch.ones(k_, dtype=dtype), stride=s_)
    Y[0, Y.shape[1] // 2].backward()
    read = torch.nonzero(X.grad[0]).flatten()
    return int(read.max() - read.min()) + 1
