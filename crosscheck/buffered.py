"""Step expressions written into preallocated buffers: the compiled loops allocate no step-sized array.

A step of a compiled cell loop evaluates a handful of elementwise expressions over (B, H) rows (the LSTM's
``c_t = f_t * c_{t-1} + i_t * ctilde_t``, the backward pass's ``g_t^c = g_t^h o_t (1 - tanh(c_t)^2) + rho_t^c``).
Printed as Python expressions each one allocates its temporaries anew at every step; at B = 4096, H = 8 those
are 256 KiB blocks that glibc returns to the system and faults in again, step after step (docs/benchmarks.md).
:class:`Writer` (the part of the IR's emitter, :class:`crosscheck.loop_ir.Emitter`, that prints a
:class:`~crosscheck.loop_ir.Write` statement) writes each expression instead as a short sequence of calls that name their output,

    _k_mul(c_prev, f_t, out=c_t)
    _k_mul(ctilde_t, i_t, out=_t0)
    _k_add(c_t, _t0, out=c_t)

into buffers declared once before the loop (:meth:`Writer.declarations`, printed where the IR's :class:`~crosscheck.loop_ir.Temporaries` stands): the expression's target (a slot of
a state stack, a gate's sensitivity, a definition's own buffer) and a pool of temporaries reused from
statement to statement.  The source is the same for numpy and torch; :func:`kernels` binds the ``_k_*`` names
to ``numpy.multiply(a, b, out=o)`` / ``torch.mul(a, b, out=o)`` and so on.  A registry operation is called with
``out=`` where its implementation in the backend takes one (:func:`out_form`: a numpy ufunc, a torch function
that accepts ``out``); one that does not (a composite such as GELU, numpy's erf) is evaluated as before and
copied into its buffer: :attr:`Writer.fallbacks` names each such place, and the generated line calls
``_alloc_into`` so it can be seen (and is listed by the tests).
"""

from __future__ import annotations

import functools

import numpy as np
import sympy as sp

from seqgrad.derive.operations import operation_of
from seqgrad.derive.elementwise import Elementwise

__all__ = ["Writer", "kernels", "out_form", "KERNELS"]

#: the kernels generated code calls, each with its output named: ``_k_mul(a, b, out=o)``
KERNELS = ("_k_mul", "_k_add", "_k_sub", "_k_rsub", "_k_div", "_k_rdiv", "_k_neg", "_k_square", "_k_pow", "_k_mm",
           "_k_maximum", "_k_minimum", "_k_heaviside", "_k_fill", "_alloc_into")


def kernels(backend: str) -> dict:
    """The ``_k_*`` names of :data:`KERNELS` in ``backend``.  In every call the first operand is an array; a
    number comes second (``_k_rsub(a, c, out=o)`` is ``c - a``, ``_k_rdiv(a, c, out=o)`` is ``c / a``)."""
    if backend == "numpy":
        return {"_k_mul": np.multiply, "_k_add": np.add, "_k_sub": np.subtract,
                "_k_rsub": lambda a, c, out: np.subtract(c, a, out=out), "_k_div": np.divide,
                "_k_rdiv": lambda a, c, out: np.divide(c, a, out=out), "_k_neg": np.negative, "_k_square": np.square,
                "_k_pow": np.power, "_k_mm": np.matmul, "_k_maximum": np.maximum, "_k_minimum": np.minimum,
                "_k_heaviside": lambda a, h0, out: np.heaviside(a, h0, out=out), "_k_fill": lambda out, c: out.fill(c),
                "_alloc_into": np.copyto}
    import torch

    @functools.lru_cache(maxsize=64)
    def number(c, dtype, device):  # a 0-d tensor for c - a and c / a (torch.sub and torch.div take no number first)
        return torch.tensor(c, dtype=dtype, device=device)

    def bound(tensors, keyword):
        def apply(a, b, out):
            if isinstance(b, torch.Tensor):
                return tensors(a, b, out=out)
            return torch.clamp(a, out=out, **{keyword: b})
        return apply

    return {"_k_mul": torch.mul, "_k_add": torch.add, "_k_sub": torch.sub,
            "_k_rsub": lambda a, c, out: torch.sub(number(float(c), a.dtype, a.device), a, out=out),
            "_k_div": torch.div, "_k_rdiv": lambda a, c, out: torch.div(number(float(c), a.dtype, a.device), a, out=out),
            "_k_neg": torch.neg, "_k_square": torch.square, "_k_pow": torch.pow, "_k_mm": torch.mm,
            "_k_maximum": bound(torch.maximum, "min"), "_k_minimum": bound(torch.minimum, "max"),
            "_k_heaviside": lambda a, h0, out: torch.heaviside(a, number(float(h0), a.dtype, a.device), out=out),
            "_k_fill": lambda out, c: out.fill_(c), "_alloc_into": lambda out, value: out.copy_(value)}


@functools.lru_cache(maxsize=None)
def _probe(backend: str, fn) -> bool:
    """True when ``fn(a, out=o)`` writes into ``o`` (tried once on a small array in 0.25..0.75)."""
    if backend == "numpy":
        a = np.linspace(0.25, 0.75, 4)
        o = np.empty(4)
    else:
        import torch

        a = torch.linspace(0.25, 0.75, 4, dtype=torch.float64)
        o = torch.empty(4, dtype=torch.float64)
    try:
        with np.errstate(all="ignore"):
            result = fn(a, out=o)
    except (TypeError, ValueError, RuntimeError):
        return False
    return result is o


def out_form(backend: str, op) -> bool:
    """Whether the registry operation ``op`` has an ``out=`` form in ``backend`` (its implementation there
    writes into a given array); the loops' tanh and sigmoid have their own in-place helpers."""
    from .code_printer import operation_backend

    if op.name in ("tanh", "sigmoid"):
        return True
    try:
        fn = operation_backend(backend, op).function(op.name)
    except Exception:  # no implementation in this backend: the printer refuses it by name
        return False
    return _probe(backend, fn)


class Writer:
    """Writes step expressions into named buffers (see the module docstring): the part of the IR's emitter
    (:class:`crosscheck.loop_ir.Emitter`) that prints a :class:`~crosscheck.loop_ir.Write` statement.

    ``names`` maps the step's symbols to identifiers (an expression of those prints as the name, no work);
    ``printer`` prints what the emitter does not compile (a fallback); ``hoisted`` collects loop-invariant
    subexpressions (parameters only: ``W^T``, ``1 - b``), computed once before the loop.
    """

    def __init__(self, backend: str, names: dict, printer, params):
        self.backend, self.names, self.printer = backend, names, printer
        self.params = set(params)
        self.lines: list[str] = []
        self.free: dict[str, list[str]] = {}  # shape text -> free temporaries
        self.buffers: list[tuple[str, str]] = []  # (name, shape text), declared before the loop
        self.hoisted: dict = {}  # expression -> name
        self.hoisted_lines: list[str] = []
        self.fallbacks: list[str] = []

    # -- buffers ---------------------------------------------------------------------------------------
    def buffer(self, name: str, shape: str) -> str:
        """Declare a buffer of its own (allocated once, before the loop)."""
        self.buffers.append((name, shape))
        return name

    def _temp(self, shape: str) -> str:
        pool = self.free.setdefault(shape, [])
        if pool:
            return pool.pop()
        return self.buffer(f"_t{len(self.buffers)}", shape)

    def _release(self, name, shape):
        if name is not None:
            self.free[shape].append(name)

    def declarations(self, like: str) -> list[str]:
        """The lines that compute the hoisted invariants and take the temporaries (of ``like``'s dtype and device)."""
        # a buffer of a run of gates, (gates, B, W), gets the layout of the runs' views of the (gate, t, B, W)
        # stacks (the gate axis not contiguous with the rows): numpy's iterator buffers (64 KiB per call) when an
        # operand coalesces into one block and another does not
        return self.hoisted_lines + [f"{n} = _empty_n({like}, {s})" if s.count(",") == 1 else f"{n} = _run_rows({like}, {s})"
                                     for n, s in self.buffers]

    # -- statements ------------------------------------------------------------------------------------
    def into(self, out: str, expr, shape: str) -> list[str]:
        """The lines that write ``expr`` into ``out`` (an array of shape text ``shape``)."""
        self.lines = []
        self._shape = shape
        self._write(expr, out)
        return self.lines

    def value(self, expr, shape: str) -> tuple[list[str], str, str | None]:
        """(lines, text holding ``expr``, temporary to release with :meth:`done` or None)."""
        self.lines = []
        self._shape = shape
        text, temp = self._operand(expr)
        return self.lines, text, temp

    def done(self, temp, shape):
        self._release(temp, shape)

    def _emit(self, text: str):
        self.lines.append(text)

    # -- expressions -----------------------------------------------------------------------------------
    def atom(self, e):
        """The text of an expression that needs no work here (a named symbol, a number, a hoisted
        invariant), else None."""
        if e in self.names:
            return self.names[e]
        if isinstance(e, sp.OneMatrix):
            return "1.0"
        if isinstance(e, sp.Expr) and not isinstance(e, sp.MatrixExpr) and e.is_number:
            return repr(float(e))
        free = {s for s in e.free_symbols if isinstance(s, (sp.Symbol, sp.MatrixSymbol))}
        if free and free <= self.params:  # loop-invariant: computed once, before the loop
            if e not in self.hoisted:
                name = f"_inv{len(self.hoisted)}"
                self.hoisted[e] = name
                self.hoisted_lines.append(f"{name} = {self.printer(e)}")
            return self.hoisted[e]
        return None

    def _operand(self, e):
        text = self.atom(e)
        if text is not None:
            return text, None
        temp = self._temp(self._shape)
        self._write(e, temp)
        return temp, temp

    def _write(self, e, out: str):
        """Emit the lines that write ``e`` into ``out``."""
        leaves = {self.names.get(s) for s in e.free_symbols}
        if out in leaves:  # out is read by e itself: compute elsewhere, then copy the result in
            temp = self._temp(self._shape)
            self._write(e, temp)
            self._emit(f"_k_mul({temp}, 1.0, out={out})")
            self._release(temp, self._shape)
            return
        atom = self.atom(e)
        if atom is not None:
            if self._number(e):
                self._emit(f"_k_fill({out}, {atom})")
            else:
                self._emit(f"_k_mul({atom}, 1.0, out={out})")
            return
        if isinstance(e, sp.MatMul):  # (before Mul: a MatMul is a Mul to SymPy)
            self._product(e, out) if self._scaling(e) else self._matmul(e, out)
        elif isinstance(e, (sp.HadamardProduct, sp.Mul)):
            self._product(e, out)
        elif isinstance(e, (sp.MatAdd, sp.Add)):
            self._sum(e, out)
        elif isinstance(e, Elementwise):
            self._elementwise(e, out)
        elif isinstance(e, sp.Pow):
            self._pow(e, out)
        elif isinstance(e, sp.Heaviside):
            arg, _ = self._operand(e.args[0])
            h0 = float(e.args[1]) if len(e.args) > 1 else 0.5
            self._emit(f"_k_heaviside({arg}, {h0!r}, out={out})")
        elif isinstance(e, (sp.Max, sp.Min)):
            self._fold("_k_maximum" if isinstance(e, sp.Max) else "_k_minimum", e.args, out)
        elif isinstance(e, sp.Function) and operation_of(e) is not None:
            self._function(e, out)
        else:
            self._fallback(e, out, type(e).__name__)

    def _fallback(self, e, out, why):
        self.fallbacks.append(why)
        self._emit(f"_alloc_into({out}, {self.printer(e)})  # allocates: {why} (no out= form in {self.backend})")

    @staticmethod
    def _scaling(e):
        coeff, mats = e.as_coeff_matrices()
        return len(mats) == 1

    def _factors(self, e):
        if isinstance(e, sp.MatMul):
            coeff, mats = e.as_coeff_matrices()
            return coeff, list(mats)
        if isinstance(e, sp.Mul):
            coeff, rest = e.as_coeff_mul()
            return coeff, list(rest)
        return sp.S.One, list(e.args)  # a Hadamard product

    def _product(self, e, out):
        coeff, factors = self._factors(e)
        acc = self._chain(factors, out)
        if coeff == -1:
            self._emit(f"_k_neg({acc}, out={out})")
        elif coeff != 1:
            self._emit(f"_k_mul({acc}, {float(coeff)!r}, out={out})")
        elif acc != out:
            self._emit(f"_k_mul({acc}, 1.0, out={out})")

    def _first(self, e, out):
        """The text holding the first operand of a chain: its name, or ``out`` after writing it there."""
        text = self.atom(e)
        if text is not None and not self._number(e):
            return text
        self._write(e, out)
        return out

    def _chain(self, args, out, kernel="_k_mul"):
        """The text holding args[0] (kernel) args[1] (kernel) ..., left to right (the printed expression's
        order): ``out``, or the one operand's own name."""
        acc = self._first(args[0], out)
        for a in args[1:]:
            text, t = self._operand(a)
            self._emit(f"{kernel}({acc}, {text}, out={out})")
            self._release(t, self._shape)
            acc = out
        return acc

    @staticmethod
    def _number(e):
        """A number, or the all-ones matrix (a number in every entry): never the first operand of a kernel."""
        return isinstance(e, sp.OneMatrix) or (isinstance(e, sp.Expr) and not isinstance(e, sp.MatrixExpr) and e.is_number)

    def _sum(self, e, out):
        """out = sum of the terms; a term with a negative coefficient is subtracted, numbers are added last."""
        const, pos, neg = 0.0, [], []
        for term in e.args:
            if self._number(term):
                const += float(self.atom(term))
            elif isinstance(term, sp.MatMul) and term.as_coeff_matrices()[1] == [sp.OneMatrix(*term.shape)]:
                const += float(term.as_coeff_matrices()[0])  # c 1: a number added to every entry
            elif isinstance(term, (sp.MatMul, sp.Mul)) and self._factors(term)[0].is_negative:
                neg.append(-term)
            else:
                pos.append(term)
        if pos:
            acc = self._first(pos[0], out) if len(pos) + len(neg) > 1 or const else None
            if acc is None:
                self._write(pos[0], out)
                acc = out
            pos = pos[1:]
        else:
            first = self._first(neg[0], out)
            if const:
                self._emit(f"_k_rsub({first}, {const!r}, out={out})")
            else:
                self._emit(f"_k_neg({first}, out={out})")
            neg, const, acc = neg[1:], 0.0, out
        for kernel, terms in (("_k_add", pos), ("_k_sub", neg)):
            for term in terms:
                text, t = self._operand(term)
                self._emit(f"{kernel}({acc}, {text}, out={out})")
                self._release(t, self._shape)
                acc = out
        if const:
            self._emit(f"_k_add({acc}, {const!r}, out={out})")
            acc = out
        if acc != out:
            self._emit(f"_k_mul({acc}, 1.0, out={out})")

    def _matmul(self, e, out):
        coeff, mats = e.as_coeff_matrices()
        if len(mats) != 2:
            return self._fallback(e, out, "a product of more than two matrices")
        left, right = mats
        rtext = self.atom(right)
        if rtext is None:
            return self._fallback(e, out, "a product with a step-dependent right factor")
        ltext, temp = self._operand(left)
        self._emit(f"_k_mm({ltext}, {rtext}, out={out})")
        self._release(temp, self._shape)
        if coeff != 1:
            self._emit(f"_k_mul({out}, {float(coeff)!r}, out={out})")

    def _pow(self, e, out):
        base, exp = e.args
        text, temp = self._operand(base)
        if exp == 2:
            self._emit(f"_k_square({text}, out={out})")
        elif exp == -1:
            self._emit(f"_k_rdiv({text}, 1.0, out={out})")
        elif exp.is_number:
            self._emit(f"_k_pow({text}, {float(exp)!r}, out={out})")
        else:
            self._release(temp, self._shape)
            return self._fallback(e, out, "a power with a step-dependent exponent")
        self._release(temp, self._shape)

    def _fold(self, kernel, args, out):
        numbers = [a for a in args if self._number(a)]
        acc = self._chain([a for a in args if a not in numbers] + numbers, out, kernel)
        if acc != out:
            self._emit(f"_k_mul({acc}, 1.0, out={out})")

    def _elementwise(self, e, out):
        lam, arg = e.args
        var, body = lam.variables[0], lam.expr
        op = operation_of(body)
        if op is not None and op.name in ("tanh", "sigmoid") and body.args == (var,):
            text, temp = self._operand(arg)
            self._emit(f"_{op.name}_into({text}, {out})")
            self._release(temp, self._shape)
            return
        text, temp = self._operand(arg)
        saved, memo = dict(self.names), getattr(self.printer, "memo", None)
        self.names[var] = text
        if memo is not None:  # what is printed while var stands for this operand is not kept for another
            self.printer.memo = {}
        try:
            self._write(body, out)
        finally:
            self.names.clear()
            self.names.update(saved)
            if memo is not None:
                self.printer.memo = memo
        self._release(temp, self._shape)

    def _function(self, e, out):
        op = operation_of(e)
        if not out_form(self.backend, op) or len(e.args) != 1:
            if op.definition is not None:  # a composite (a user's function): written as its definition
                from seqgrad.derive.operations import sympy_namespace

                expanded = op.definition(sympy_namespace(), *e.args)
                if expanded != e:
                    return self._write(expanded, out)
            return self._fallback(e, out, f"the {op.name!r} operation")
        text, temp = self._operand(e.args[0])
        if op.name in ("tanh", "sigmoid"):
            self._emit(f"_{op.name}_into({text}, {out})")
        else:
            self._emit(f"_op_{op.name}({text}, out={out})")  # bound by code_printer.operation_namespace
        self._release(temp, self._shape)
