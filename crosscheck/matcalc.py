"""``seqgrad diff``'s numeric side: the generated numpy and torch functions of a derivative, and ``--check``.

The derivative (:func:`seqgrad.derive.matcalc.diff`) is printed as a numpy and a torch function by the
project's printers (:mod:`crosscheck.code_printer`'s, with the matrix primitives added), and checked against
torch autograd in float64 at random sizes and values: autograd differentiates the *expression* evaluated
by the operations' torch implementations (:func:`seqgrad.derive.matcalc.evaluate` with :func:`torch_ops`),
never printed code, so a printer fault cannot sit on both sides of the comparison.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np
import sympy as sp
from sympy.printing.precedence import PRECEDENCE

from seqgrad.derive.matcalc import MatrixDerivative, evaluate, numpy_ops
from seqgrad.derive.matrix_text import is_matrix
from seqgrad.errors import SeqgradValueError

from .code_printer import _Printer, _TorchPrinter, identifier, operation_namespace
from .lambdify import _numpy_namespace, _torch_namespace, run_generated

__all__ = ["generated_source", "compile_derivative", "check", "CheckResult", "torch_ops", "TOLERANCE"]

#: float64 comparison of the derived formula with autograd: max |derived - autograd| <= TOLERANCE * (1 + max |autograd|)
TOLERANCE = 1e-9


class _MatrixPrinting:
    """The matrix primitives of derive.matcalc for both backends (mixed into the project's printers)."""

    _module = "numpy"

    def _print_MatMul(self, expr):
        coeff, mats = expr.as_coeff_matrices()
        text = " @ ".join(self._factor(m) for m in mats)
        return text if coeff == 1 else f"{self.parenthesize(coeff, PRECEDENCE['Mul'])}*({text})"

    def _factor(self, m) -> str:
        """A factor of ``@``: bracketed unless it is a name or a transposed name (``*`` binds as tightly as ``@``)."""
        text = self._print(m)
        simple = isinstance(m, sp.MatrixSymbol) or (isinstance(m, sp.Transpose) and isinstance(m.arg, sp.MatrixSymbol))
        return text if simple else f"({text})"

    _dtype = ""  # torch: float64, as every comparison of the project (torch's default would be float32)

    def _print_OneMatrix(self, expr):
        return f"{self._module}.ones(({self._print(expr.shape[0])}, {self._print(expr.shape[1])}){self._dtype})"

    def _print_ZeroMatrix(self, expr):  # a derivative that is 0 (X X^-1 = I): the zero matrix of its shape
        return f"{self._module}.zeros(({self._print(expr.shape[0])}, {self._print(expr.shape[1])}){self._dtype})"

    def _print_Identity(self, expr):
        return f"{self._module}.eye({self._print(expr.shape[0])}{self._dtype})"

    def _print_AsScalar(self, expr):
        return f"({self._print(expr.arg)})[0, 0]"

    def _print_Trace(self, expr):
        return f"{self._module}.trace({self._print(expr.arg)})"

    def _print_Determinant(self, expr):
        return f"{self._module}.linalg.det({self._print(expr.arg)})"

    def _print_Inverse(self, expr):
        return f"{self._module}.linalg.inv({self._print(expr.arg)})"

    def _print_MatPow(self, expr):
        if expr.exp.is_Integer and expr.exp < 0:
            base = f"{self._module}.linalg.inv({self._print(expr.base)})"
        else:
            base = self._print(expr.base)
        return f"{self._module}.linalg.matrix_power({base}, {abs(int(expr.exp))})"

    def _print_DiagonalOf(self, expr):
        return f"_diagonal({self._print(expr.arg)})"

    def _print_sign(self, expr):
        return f"{self._module}.sign({self._print(expr.args[0])})"

    def _print_Pow(self, expr, rational=False):
        if expr.free_symbols and all(s.is_integer for s in expr.free_symbols) and not expr.exp.is_Integer:
            return f"(float({self._print(expr.base)})**{float(expr.exp)!r})"  # a power of sizes: a Python float
        return super()._print_Pow(expr, rational)


class _NumpyMatrixPrinter(_MatrixPrinting, _Printer):
    _module = "numpy"


class _TorchMatrixPrinter(_MatrixPrinting, _TorchPrinter):
    _module = "torch"
    _dtype = ", dtype=torch.float64"


def _leaves(d: MatrixDerivative) -> list:
    symbols = set(d.expr.free_symbols) | set(getattr(d.value, "free_symbols", ()))
    declared = d.declared
    order = [*declared.matrices.values(), *declared.scalars.values()] if declared else sorted(symbols, key=str)
    leaves = [s for s in order if s in symbols]
    if d.G is not None:
        leaves.append(d.G)
    return leaves


def generated_source(d: MatrixDerivative, backend: str = "numpy", name: str = "gradient") -> tuple[str, list]:
    """The source of ``def name(<matrices>, <scalars>[, G])`` returning the derivative, and its arguments; the sizes
    are read off the arguments' shapes."""
    leaves = _leaves(d)
    taken: set = set()
    names = {s: identifier(s.name, taken) for s in leaves}
    sizes = {}
    for s in leaves:
        if isinstance(s, sp.MatrixSymbol):
            for axis, dim in enumerate(s.shape):
                if isinstance(dim, sp.Symbol) and dim not in sizes:
                    sizes[dim] = f"{names[s]}.shape[{axis}]"
    for dim in sizes:
        names[dim] = identifier(dim.name, taken)
    printer = (_NumpyMatrixPrinter if backend == "numpy" else _TorchMatrixPrinter)(names)
    lines = [f"def {name}({', '.join(names[s] for s in leaves)}):"]
    lines += [f"    {names[dim]} = {where}" for dim, where in sizes.items()]
    lines.append(f"    return {printer.doprint(d.value)}")
    return "\n".join(lines) + "\n", leaves


def compile_derivative(d: MatrixDerivative, backend: str = "numpy"):
    source, leaves = generated_source(d, backend)
    namespace = _numpy_namespace() if backend == "numpy" else _torch_namespace()
    namespace.update(operation_namespace(backend))  # the operation registry's _op_NAME
    return run_generated(source, f"<seqgrad diff {backend}>", namespace, "gradient"), leaves


class _TorchOps:
    def __init__(self, torch):
        self.t = torch
        self.functions = {"sin": torch.sin, "cos": torch.cos, "tan": torch.tan, "asin": torch.asin, "acos": torch.acos,
                          "atan": torch.atan, "sinh": torch.sinh, "cosh": torch.cosh, "tanh": torch.tanh, "exp": torch.exp,
                          "log": torch.log, "sqrt": torch.sqrt, "Abs": torch.abs, "floor": torch.floor, "sign": torch.sign,
                          "Max": self._maximum, "Min": self._minimum, "erf": torch.erf}

    def has(self, name):
        return name in self.functions

    def _tensor(self, x):
        return x if isinstance(x, self.t.Tensor) else self.t.tensor(float(x), dtype=self.t.float64)

    def _maximum(self, a, b):
        return self.t.maximum(self._tensor(a), self._tensor(b))

    def _minimum(self, a, b):
        return self.t.minimum(self._tensor(a), self._tensor(b))

    def fn(self, name):
        t, f = self.t, self.functions[name]
        if name in ("Max", "Min"):
            return f
        return lambda x: f(x if isinstance(x, t.Tensor) else t.tensor(float(x), dtype=t.float64))

    def matmul(self, a, b):
        return a @ b

    def transpose(self, a):
        return a.T

    def inv(self, a):
        return self.t.linalg.inv(a)

    def det(self, a):
        return self.t.linalg.det(a)

    def trace(self, a):
        return self.t.trace(a)

    def eye(self, n):
        return self.t.eye(n, dtype=self.t.float64)

    def ones(self, r, c):
        return self.t.ones((r, c), dtype=self.t.float64)

    def zeros(self, r, c):
        return self.t.zeros((r, c), dtype=self.t.float64)

    def softmax(self, S):
        return self.t.softmax(S, -1)

    def rowsum(self, X):
        return self.t.sum(X, -1, keepdim=True).expand_as(X)

    def rowmean(self, X):
        return self.t.mean(X, -1, keepdim=True).expand_as(X)

    def diag(self, v):
        return self.t.diag(v.reshape(-1))

    def diagonal(self, X):
        return self.t.diagonal(X).reshape(-1, 1)

    def item(self, M):
        return M[0, 0]

    def heaviside(self, x, h0):
        x = x if isinstance(x, self.t.Tensor) else self.t.tensor(float(x), dtype=self.t.float64)
        return self.t.heaviside(x, self.t.tensor(h0, dtype=x.dtype))


def torch_ops():
    """The torch backend of :func:`seqgrad.derive.matcalc.evaluate` (float64)."""
    import torch

    return _TorchOps(torch)


@dataclass
class CheckResult:
    """The derived formula (numpy and torch generated code) against torch autograd at each trial."""

    trials: list = field(default_factory=list)  # dicts: sizes, max_abs, max_rel, backend errors

    @property
    def passed(self) -> bool:
        return bool(self.trials) and all(t["passed"] for t in self.trials)

    def line(self) -> str:
        worst = max((t["max_abs"] for t in self.trials), default=float("nan"))
        sizes = "; ".join(", ".join(f"{k}={v}" for k, v in t["sizes"].items()) or "fixed" for t in self.trials)
        state = "agrees with" if self.passed else "DISAGREES with"
        jac = " (and the Jacobian with torch.autograd.functional.jacobian)" if any("jacobian_abs" in t for t in self.trials) else ""
        if any("vec_jacobian_abs" in t for t in self.trials):
            jac = " (and ∂vec(F)/∂vec(X) with torch.autograd.functional.jacobian of vec F, column-major)"
        return (f"check: {state} torch autograd (float64){jac} at {len(self.trials)} random trials, sizes [{sizes}]; "
                f"max |derived - autograd| = {worst:.3g} (tolerance {TOLERANCE:g} x (1 + max |autograd|))")


def _draw(shape, rng: np.random.Generator, square: bool):
    value = rng.standard_normal(shape)
    if square:  # away from singular: det and inverse stay well conditioned
        value = value / np.sqrt(shape[0]) + 2.0 * np.eye(shape[0])
    return value


def check(d: MatrixDerivative, trials: int = 4, seed: int = 0) -> CheckResult:
    """The derivative against torch autograd at ``trials`` random size assignments (size 1, small, larger) and values."""
    import torch

    rng = np.random.default_rng(seed)
    pick = random.Random(seed)
    size_symbols = sorted({dim for s in _leaves(d) if isinstance(s, sp.MatrixSymbol) for dim in s.shape
                           if isinstance(dim, sp.Symbol)}, key=str)
    result = CheckResult()
    numpy_fn, leaves = compile_derivative(d, "numpy")
    torch_fn, _ = compile_derivative(d, "torch")
    plans = [1, 2, None, 12][:max(trials, 1)] + [None] * max(trials - 4, 0)
    for plan in plans:
        sizes = {s: (plan if plan is not None else pick.randint(2, 7)) for s in size_symbols}
        if plan is not None and plan > 2:
            sizes = {s: pick.randint(8, plan) for s in size_symbols}
        env_np = {}
        for s in leaves:
            if isinstance(s, sp.MatrixSymbol):
                shape = tuple(int(dim.subs(sizes)) for dim in s.shape)
                env_np[s] = _draw(shape, rng, shape[0] == shape[1] and shape[0] > 1 and s is not d.G)
            else:
                env_np[s] = float(rng.uniform(0.5, 2.0))
        ops = torch_ops()
        env_t = {s: (torch.tensor(v, dtype=torch.float64, requires_grad=(s == d.wrt)) if isinstance(v, np.ndarray)
                     else torch.tensor(v, dtype=torch.float64, requires_grad=(s == d.wrt))) for s, v in env_np.items()}
        env_t.update({s: n for s, n in sizes.items()})
        value = evaluate(d.expr, env_t, ops)
        loss = (value * env_t[d.G]).sum() if d.G is not None else value
        (auto,) = torch.autograd.grad(loss, env_t[d.wrt])
        auto = auto.detach().numpy()
        args = [env_np[s] for s in leaves]
        derived_np = np.asarray(numpy_fn(*args), dtype=float)
        derived_t = torch_fn(*[torch.tensor(a, dtype=torch.float64) if isinstance(a, np.ndarray) else a for a in args])
        derived_t = np.asarray(derived_t.detach().numpy() if isinstance(derived_t, torch.Tensor) else derived_t, dtype=float)
        errors = []
        for derived in (derived_np, derived_t):
            derived = np.broadcast_to(derived, auto.shape) if derived.size in (1, auto.size) else derived
            if derived.shape != auto.shape:
                raise SeqgradValueError("derivative", str(d.value), f"a result of shape {auto.shape} (got {derived.shape})")
            errors.append(float(np.max(np.abs(derived - auto))) if auto.size else 0.0)
        scale = 1.0 + float(np.max(np.abs(auto))) if auto.size else 1.0
        ok = all(np.isfinite(e) and e <= TOLERANCE * scale for e in errors)
        trial = {"sizes": {str(k): v for k, v in sizes.items()}, "max_abs": max(errors),
                 "max_rel": max(errors) / scale, "numpy_abs": errors[0], "torch_abs": errors[1], "passed": ok}
        if d.jacobian is not None:  # the printed Jacobian against autograd's, entry by entry
            def forward(w):
                return evaluate(d.expr, {**env_t, d.wrt: w}, ops).reshape(-1)

            J_auto = torch.autograd.functional.jacobian(forward, env_t[d.wrt].detach()).reshape(-1, env_t[d.wrt].numel()).numpy()
            J = np.asarray(evaluate(d.jacobian, {**env_np, **sizes}, numpy_ops()), dtype=float)
            J = np.broadcast_to(J, J_auto.shape) if J.size == 1 else J
            gap = float(np.max(np.abs(J - J_auto))) if J.shape == J_auto.shape else float("inf")
            trial["jacobian_abs"] = gap
            trial["passed"] = ok and gap <= TOLERANCE * (1.0 + float(np.max(np.abs(J_auto))))
        if d.vec_jacobian is not None:  # ∂vec(F)/∂vec(X) against autograd's Jacobian of vec F in vec X (column-major)
            X0 = env_t[d.wrt].detach()
            rows, cols = X0.shape

            def forward_vec(w):
                F = evaluate(d.expr, {**env_t, d.wrt: w.reshape(cols, rows).T}, ops)
                return F.T.reshape(-1)

            J_auto = torch.autograd.functional.jacobian(forward_vec, X0.T.reshape(-1)).numpy()
            J = np.asarray(evaluate(d.vec_jacobian, {**env_np, **sizes}, numpy_ops()), dtype=float)
            gap = float(np.max(np.abs(J - J_auto))) if J.shape == J_auto.shape else float("inf")
            trial["vec_jacobian_abs"] = gap
            trial["passed"] = trial["passed"] and gap <= TOLERANCE * (1.0 + float(np.max(np.abs(J_auto))))
        result.trials.append(trial)
    return result


def values_finite(x) -> bool:
    return bool(np.all(np.isfinite(np.asarray(x, dtype=float))))


def is_matrix_expr(e) -> bool:
    return is_matrix(e)
