"""crosscheck.conv_compile on loop_ir: index formulas compiled for numpy and torch from one IR, against conv1d / conv2d
autograd in float64 on cases the compiler was not written around (stride 2 with padding, 1-D, dilation, non-square
kernels, the input gradient with the kernel or G read backwards), and its refusals."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
import torch
import torch.nn.functional as F

from seqgrad.crosscheck import loop_ir
from seqgrad.crosscheck.conv_compile import Compiled
from seqgrad.derive import conv as dc
from seqgrad.errors import SeqgradTypeError, SeqgradValueError

BACKENDS = ("numpy", "torch")
OUT, KER, FREE, INP = (dc.i, dc.j), (dc.u, dc.v), (dc.p, dc.q), (dc.m, dc.n)
kernel_size = sp.symbols("k_0 k_1", integer=True, positive=True)
out_size = sp.symbols("O_0 O_1", integer=True, positive=True)


def derived(dims: int, stride: int, padding: int, dilation: int):
    """Y, dL/dK and dL/db of a ``dims``-D convolution at symbolic size (kernel k_0 x k_1, output O_0 x O_1), the
    gradients by differentiating ``L = sum G Y`` as derive.conv does, the padding and dilation in the index."""
    o, w = OUT[:dims], KER[:dims]
    at = [stride * a + dilation * c - padding for a, c in zip(o, w)]
    Y = sp.Sum(dc.K[w] * dc.X[at], *[(c, 0, kernel_size[n] - 1) for n, c in enumerate(w)]) + dc.b
    L = sp.Sum(dc.G[o] * Y, *[(a, 0, out_size[n] - 1) for n, a in enumerate(o)])
    dK = dc._drop_range_conditions(sp.diff(L, dc.K[FREE[:dims]]).doit())
    return Y, dK, sp.diff(L, dc.b).doit()


def input_gradient(dims: int, padding: int, dilation: int, flipped: bool):
    """dL/dX_m = sum_u K_u Ghat_{m + P - d u} (stride 1; G read backwards), or with the kernel read backwards:
    sum_u K_{k-1-u} Ghat_{m + P - d (k-1-u)}."""
    w, x = KER[:dims], INP[:dims]
    back = [kernel_size[n] - 1 - c for n, c in enumerate(w)]
    K_at = back if flipped else list(w)
    G_at = [a + padding - dilation * c for a, c in zip(x, K_at)]
    return sp.Sum(dc.K[K_at] * dc.Ghat[G_at], *[(c, 0, kernel_size[n] - 1) for n, c in enumerate(w)])


def torch_case(size, kernel, stride, padding, dilation, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(3, *size, generator=g, dtype=torch.float64, requires_grad=True)
    K = torch.randn(*kernel, generator=g, dtype=torch.float64, requires_grad=True)
    b = torch.randn((), generator=g, dtype=torch.float64, requires_grad=True)
    conv = F.conv1d if len(size) == 1 else F.conv2d
    Y = conv(X[:, None], K[None, None], b.reshape(1), stride=stride, padding=padding, dilation=dilation)[:, 0]
    G = torch.randn(Y.shape, generator=g, dtype=torch.float64)
    gX, gK, gb = torch.autograd.grad(Y, (X, K, b), G)
    return X.detach(), K.detach(), b.detach(), Y.detach(), G, gX, gK, gb


def run(fn, backend, **arrays):
    if backend == "numpy":
        return torch.as_tensor(fn(**{k: a.numpy() for k, a in arrays.items()}))
    return fn(**arrays)


def close(ours, ref):
    assert tuple(ours.shape) == tuple(ref.shape)
    assert float((ours - ref).abs().max()) < 1e-12


CASES = [  # size, kernel, stride, padding, dilation
    ((9, 8), (3, 2), 2, 1, 1),  # stride 2 with padding, a non-square kernel
    ((7, 10), (2, 4), 2, 2, 1),
    ((11,), (3,), 1, 0, 1),  # 1-D
    ((12,), (4,), 2, 1, 1),  # 1-D, stride 2 with padding
    ((10, 9), (3, 2), 1, 1, 2),  # dilation 2 (written into the index: derive.conv has no dilation)
    ((13,), (3,), 2, 2, 3),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("size,kernel,stride,padding,dilation", CASES)
def test_forward_and_kernel_gradient_match_autograd(size, kernel, stride, padding, dilation, backend):
    X, K, b, Y, G, _, gK, gb = torch_case(size, kernel, stride, padding, dilation)
    dims = len(size)
    Yf, dKf, dbf = derived(dims, stride, padding, dilation)
    sizes = {**dict(zip(kernel_size, kernel)), **dict(zip(out_size, Y.shape[1:]))}
    Y_fn = Compiled(Yf, dict(zip(OUT, Y.shape[1:])), sizes, batch="keep", backend=backend)
    dK_fn = Compiled(dKf, dict(zip(FREE, kernel)), sizes, backend=backend)
    db_fn = Compiled(dbf, {}, sizes, backend=backend)
    close(run(Y_fn, backend, X=X, K=K[None], b=b), Y)
    close(run(dK_fn, backend, G=G, X=X), gK)
    close(run(db_fn, backend, G=G), gb)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("flipped", [False, True])
@pytest.mark.parametrize("size,kernel,padding,dilation", [((6, 9), (3, 2), 1, 1), ((8,), (3,), 0, 1), ((10,), (4,), 2, 1),
                                                          ((9, 8), (2, 3), 1, 2)])
def test_input_gradient_matches_autograd(size, kernel, padding, dilation, flipped, backend):
    X, K, b, Y, G, gX, _, _ = torch_case(size, kernel, 1, padding, dilation, seed=1)
    dims = len(size)
    fn = Compiled(input_gradient(dims, padding, dilation, flipped), dict(zip(INP, size)), dict(zip(kernel_size, kernel)),
                  batch="keep", backend=backend)
    close(run(fn, backend, Ghat=G, K=K[None]), gX)


@pytest.mark.parametrize("backend", BACKENDS)
def test_derive_conv2d_input_gradient_with_padding(backend):
    """The derivation's own dL/dX (both forms) with the padding cropped, against conv2d autograd."""
    X, K, b, Y, G, gX, _, _ = torch_case((7, 6), (3, 3), 1, 1, 1, seed=2)
    unit = dc.Conv2d()
    for form in (unit.grad_X(), unit.grad_X_flipped()):
        shifted = form.xreplace({dc.m: dc.m + 1, dc.n: dc.n + 1})
        fn = Compiled(shifted, {dc.m: 7, dc.n: 6}, {dc.k: 3, dc.H_o: 7, dc.W_o: 6}, batch="keep", backend=backend)
        close(run(fn, backend, Ghat=G, K=K[None]), gX)


def test_one_ir_one_source_for_both_backends():
    """The plan is IR: a Loop per looped index variable holding the strided reads and one Contract; numpy and torch
    print the same source from it."""
    sizes = {dc.k: 5, dc.H_o: 60, dc.W_o: 60}
    ours = {b: Compiled(dc.Conv2d().grad_K(), {dc.p: 5, dc.q: 5}, sizes, backend=b) for b in BACKENDS}
    assert ours["numpy"].source == ours["torch"].source
    fn = ours["torch"].function
    outer = fn.loops()
    assert [loop.index for loop in outer] == [dc.p]
    inner = [s for s in outer[0].body if isinstance(s, loop_ir.Loop)]
    assert [loop.index for loop in inner] == [dc.q] and (inner[0].start, inner[0].length) == (0, 5)
    kinds = [type(s).__name__ for s in inner[0].body]
    assert kinds == ["Strided", "Contract"]  # X's slice moves with p, q; G's is read once, before the loops
    contract = inner[0].body[-1]
    assert contract.spec == "Bij,Bij->" and contract.at == (dc.p, dc.q)
    assert [type(s).__name__ for s in fn.body] == ["Output", "Strided", "Loop", "Return"]


def test_a_sum_over_an_index_no_factor_reads_counts_each_term():
    """Sum_{i<4} Sum_{u<3} G_i = 3 sum_i G_i (the old compiler added it once); a power of an entry is a product."""
    G = torch.arange(8.0, dtype=torch.float64).reshape(2, 4)
    total = Compiled(sp.Sum(dc.G[dc.i], (dc.i, 0, 3), (dc.u, 0, 2)), {}, {})
    assert float(total(G=G)) == 3 * float(G.sum())
    squares = Compiled(sp.Sum(dc.G[dc.i] ** 2, (dc.i, 0, 3)), {}, {}, backend="numpy")
    assert float(squares(G=G.numpy())) == float((G ** 2).sum())


def test_refusals_name_the_argument():
    grad = dc.Conv2d().grad_K()
    with pytest.raises(SeqgradValueError, match="sizes") as e:  # was a raw TypeError from sympy.Integer
        Compiled(grad, {dc.p: 2, dc.q: 2}, {dc.k: 2})
    assert "limits of i" in str(e.value)
    with pytest.raises(SeqgradTypeError, match="affine index expressions"):  # i**2 was read as the constant 0
        Compiled(sp.Sum(dc.G[dc.i] * dc.X[dc.i ** 2], (dc.i, 0, 3)), {}, {})
    with pytest.raises(SeqgradTypeError, match="affine index expressions"):
        Compiled(sp.Sum(dc.G[dc.i] * dc.X[dc.i * dc.p], (dc.i, 0, 3)), {dc.p: 2}, {})
    with pytest.raises(SeqgradTypeError, match="sizes are all given"):
        Compiled(sp.Sum(dc.G[dc.i] * dc.X[dc.i + dc.k], (dc.i, 0, 3)), {}, {})
    with pytest.raises(SeqgradValueError, match="batch"):
        Compiled(grad, {dc.p: 2, dc.q: 2}, {dc.k: 2, dc.H_o: 3, dc.W_o: 3}, batch="mean")
    with pytest.raises(SeqgradValueError, match="backend"):
        Compiled(grad, {dc.p: 2, dc.q: 2}, {dc.k: 2, dc.H_o: 3, dc.W_o: 3}, backend="jax")
    with pytest.raises(SeqgradTypeError, match="expr"):
        Compiled("G[i]", {}, {})
    with pytest.raises(SeqgradTypeError, match="expr"):
        Compiled(sp.Sum(sp.exp(dc.G[dc.i]), (dc.i, 0, 3)), {}, {})
    fn = Compiled(grad, {dc.p: 2, dc.q: 2}, {dc.k: 2, dc.H_o: 3, dc.W_o: 3})
    with pytest.raises(SeqgradValueError, match="arrays") as e:  # was a raw KeyError
        fn(G=torch.zeros(1, 3, 3))
    assert "G, X" in str(e.value)


def test_numpy_result_is_a_numpy_array():
    fn = Compiled(dc.Conv2d().grad_b(), {}, {dc.H_o: 2, dc.W_o: 2}, backend="numpy")
    value = fn(G=np.ones((3, 2, 2)))
    assert isinstance(value, np.ndarray) and float(value) == 12.0


def strided_input_gradient(dims: int, stride: int, padding: int):
    """dL/dX of a ``dims``-D convolution with stride s and padding P, derived: ``diff`` of L = sum G Y at X[x]
    (deltas [x = s o + u - P]), the sums over the output positions taken first (derive.conv.dilated_input_gradient):
    sum_u K_u Ghat^(s)_{x + P - u}, G dilated by the stride."""
    o, w, x = OUT[:dims], KER[:dims], INP[:dims]
    Y = sp.Sum(dc.K[w] * dc.X[[stride * a + c - padding for a, c in zip(o, w)]],
               *[(c, 0, kernel_size[n] - 1) for n, c in enumerate(w)]) + dc.b
    L = sp.Sum(dc.G[o] * Y, *[(a, 0, out_size[n] - 1) for n, a in enumerate(o)])
    return dc.dilated_input_gradient(sp.diff(L, dc.X[x]), stride)


STRIDED = [  # size, kernel, stride, padding: lengths that the stride does not divide evenly among them
    ((11,), (3,), 2, 0), ((12,), (4,), 3, 1), ((10,), (1,), 3, 0), ((9,), (5,), 2, 2), ((8,), (3,), 1, 1),
    ((9, 8), (3, 2), 2, 1), ((7, 10), (2, 4), 3, 2), ((8, 8), (3, 3), 3, 0), ((6, 7), (2, 2), 1, 0),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("size,kernel,stride,padding", STRIDED)
def test_strided_input_gradient_compiles_from_its_derivation(size, kernel, stride, padding, backend):
    X, K, b, Y, G, gX, _, _ = torch_case(size, kernel, stride, padding, 1, seed=3)
    dims = len(size)
    formula = strided_input_gradient(dims, stride, padding)
    assert formula.has(sp.IndexedBase(dc.Dilated(dc.G, stride)))  # G dilated, not read as G
    sizes = {**dict(zip(kernel_size, kernel)), **dict(zip(out_size, Y.shape[1:]))}
    fn = Compiled(formula, dict(zip(INP, size)), sizes, batch="keep", backend=backend)
    assert "_dilate(G, " in fn.source and fn.arguments == ("G", "K")
    close(run(fn, backend, G=G, K=K[None]), gX)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("size,k,stride,padding", [((9, 8), 3, 2, 1), ((10, 7), 2, 3, 0), ((11, 11), 4, 3, 2), ((7, 9), 3, 2, 0)])
def test_derive_conv2d_strided_input_gradient_matches_autograd(size, k, stride, padding, backend):
    """Conv2d(stride=s).grad_X() and its flipped form (the dilated G correlated with the flipped kernel), the
    padding cropped, against conv2d autograd."""
    X, K, b, Y, G, gX, _, _ = torch_case(size, (k, k), stride, padding, 1, seed=4)
    conv = dc.Conv2d(stride=stride)
    for form in (conv.grad_X(), conv.grad_X_flipped()):
        shifted = form.xreplace({dc.m: dc.m + padding, dc.n: dc.n + padding})
        fn = Compiled(shifted, {dc.m: size[0], dc.n: size[1]}, {dc.k: k, dc.H_o: Y.shape[1], dc.W_o: Y.shape[2]},
                      batch="keep", backend=backend)
        close(run(fn, backend, G=G, K=K[None]), gX)


def test_the_symbolic_stride_is_refused_until_it_is_given():
    formula = dc.Conv2d(stride=dc.s).grad_X()
    sizes = {dc.k: 2, dc.H_o: 3, dc.W_o: 3}
    with pytest.raises(SeqgradValueError, match="sizes") as e:
        Compiled(formula, {dc.m: 6, dc.n: 6}, sizes)
    assert "stride s of the dilated G" in str(e.value)
    X, K, b, Y, G, gX, _, _ = torch_case((6, 6), (2, 2), 2, 0, 1, seed=5)
    fn = Compiled(formula, {dc.m: 6, dc.n: 6}, {**sizes, dc.s: 2}, batch="keep")
    close(fn(G=G, K=K[None]), gX)
    with pytest.raises(SeqgradValueError, match="stride"):
        Compiled(formula, {dc.m: 6, dc.n: 6}, {**sizes, dc.s: 0})
