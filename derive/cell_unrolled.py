r"""A cell unrolled for a concrete number of steps: the program of named intermediates.

Built from the same step equations as the general derivation, one step at a
time (each equation differentiated once and instantiated at every step), then
differentiated as a whole by :meth:`derive.program.Program.backward`; so the
unrolled backward pass is an independent derivation that the general-t
formulas are checked against.  The program is built when it is first read
(printing, closed forms, ``sympy.diff`` comparisons); compiled code reads the
step equations directly and never builds it.
"""

from __future__ import annotations

import functools

import sympy as sp

from seqgrad import validate
from seqgrad.errors import SeqgradValueError

from .cell_loss import CrossEntropy, _partials, error_value
from .cell_names import _Symbols
from .elementwise import SquaredNorm
from .program import Program
from .safe_parse import as_sympy
from .sequence import Sensitivity, SensitivityMatrix
from .step_sum import _StepSumMixin
from .unrolled import Unrolled

__all__ = ["UnrolledCell"]


class UnrolledCell(Unrolled):
    """``cell.unroll(T)``: the named program of T steps (attributes as :class:`derive.rnn.RNN`)."""

    def __init__(self, cell: "derive.cell.Cell", steps: int):  # noqa: F821
        self.cell, self.steps = cell, steps
        self.vector = cell.vector
        self.sym = _Symbols(cell)
        self.positions = cell.loss.positions(steps)
        self.parameters = {str(s): s for s in (cell.param_symbol(p) for p in cell.param_shapes)}

    # -- the step symbols, made when first read (compiled code needs none of them) --------------
    @functools.cached_property
    def x(self) -> list:
        return [self.sym.seq(self.cell.input, k, self.cell.shape_of(self.cell.input)) for k in range(self.steps)]

    @functools.cached_property
    def y(self):
        C = self.cell.target_shape()
        return self.sym.seq("y", None, C) if self.cell.loss.on == "final" else [self.sym.seq("y", k, C) for k in self.positions]

    @functools.cached_property
    def e(self):
        C = self.cell.target_shape()
        return self.sym.seq("e", None, C) if self.cell.loss.on == "final" else [self.sym.seq("e", k, C) for k in self.positions]

    # -- the program, built on first use ---------------------------------------------------
    @functools.cached_property
    def _built(self):
        c, sym = self.cell, self.sym
        prog = Program(f"{c.name}_T{self.steps}")
        bases: dict = {}
        prev = {}
        for s in c.states:
            shape = c.shape_of(s)
            init = prog.define(sym.seq(s, -1, shape), sp.ZeroMatrix(*shape) if shape else sp.Integer(0), kind="initial", step=-1)
            prev[s], bases[init] = init, s
        values = c.step_values()
        head = c.head_value()
        params = {c.local_symbol(p): c.param_symbol(p) for p in c.param_shapes}
        final = c.loss.on == "final"
        states: dict[str, list] = {s: [] for s in c.states}
        seqs: dict[str, list] = {n: [] for n, _ in values}
        yhats = []
        for k in range(self.steps):
            mapping = dict(params)
            mapping[c.local_symbol(c.input)] = self.x[k]
            mapping.update({c.local_symbol(f"{s}_prev"): prev[s] for s in c.states})
            for name, value in values:
                target = sym.seq(name, k, c.shape_of(name))
                value_k = value.xreplace(mapping)
                prog.define(target, value_k, step=k, partials=_partials(c, value, value_k, target, mapping))
                mapping[c.local_symbol(name)] = target
                bases[target] = name
                seqs[name].append(target)
            for s in c.states:
                prev[s] = mapping[c.local_symbol(s)]
                states[s].append(prev[s])
            if k in self.positions:
                yhat = sym.seq("yhat", None if final else k, c.target_shape())
                yhats.append(prog.define(yhat, head.xreplace(mapping), step=k))
        ys = [self.y] if final else self.y
        es = [self.e] if final else self.e
        scale = c.loss.scale(len(self.positions))
        if c.loss.kind == "squared":
            half = sp.Rational(1, 2)
            norm = SquaredNorm if self.vector else (lambda d: d ** 2)
            L = scale * half * sp.Add(*[norm(a - b) for a, b in zip(yhats, ys)])
        else:
            L = scale * sp.Add(*[CrossEntropy(a, b) for a, b in zip(yhats, ys)])
        L = prog.define(sp.Symbol("L"), L, kind="loss", step=self.steps - 1)
        seeds = {a: (sp.MatMul(scale, e) if self.vector else scale * e) if scale != 1 else e for a, e in zip(yhats, es)}
        emit = {a: [(e, error_value(c, a, b), "error")] for a, e, b in zip(yhats, es, ys)}

        def adjoint_name(target):
            base = bases.get(target)
            if base is None or base not in c.named:
                return None
            return sym.adjoint(base, prog[target].step, c.shape_of(base))

        gradients = prog.backward(seeds, adjoint_name, emit=emit)
        return prog, gradients, states, seqs, yhats, L

    @property
    def program(self) -> Program:
        return self._built[0]

    @property
    def gradients(self) -> dict:
        return self._built[1]

    @property
    def states(self) -> dict[str, list]:
        """Each state's symbols ``h_0 .. h_{T-1}``."""
        return self._built[2]

    def sequence(self, name: str) -> list:
        """The symbols of a step equation's quantity at every step (``z_0, z_1, ...``)."""
        seqs = self._built[3]
        if name not in seqs:
            raise SeqgradValueError("name", name, "one of " + ", ".join(seqs))
        return seqs[name]

    @property
    def yhat(self):
        yhats = self._built[4]
        return yhats[0] if self.cell.loss.on == "final" else yhats

    @property
    def L(self):
        return self._built[5]

    # -- reading ----------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"<UnrolledCell {self.cell.name!r} T={self.steps}>"

    def symbol(self, name: str):
        """The program symbol called ``name`` (``"w_h"``, ``"x_0"``, ``"h_1"``, ``"g_0^z"`` ...)."""
        for s in list(self.parameters.values()) + self.x:
            if str(s) == name:
                return s
        return self.program[name].target

    def sensitivity(self, of: str, t: int, expand: bool | str = False, max_terms: int | None = None):
        """``g_t^{of}`` for a named quantity (``"h"``, ``"z"``, ``"c"``, ``"z^r"``): the symbol, or its closed form."""
        named = sorted(self.cell.named)
        of = validate.choice("of", of, tuple(named))
        low = -1 if of in self.cell.states else 0
        t = validate.integer("t", t, minimum=low, maximum=self.steps - 1)
        symbol = self.program[self.sym.adjoint(of, t, self.cell.shape_of(of))].target
        return self._closed(symbol, expand, max_terms, str(symbol))

    def loss_closed_form(self, max_terms: int | None = None):
        """L fully nested in the parameters and data (guarded): what plain ``sympy.diff`` would start from."""
        return self.program.expand(self.L, kinds=None, max_terms=max_terms, what="L")

    def check_general(self) -> list[str]:
        """Every named sensitivity and every parameter gradient of this program against the general-t
        formulas instantiated at ``T = steps``; returns the names that differ (empty: all equal).

        A sensitivity the unrolled program never defines (no path to the loss, e.g. after the last loss
        position) is zero there, and is read as zero in the general formula too."""
        gen = self.cell.general()
        prog = self.program
        diff = []

        def concrete(expr, k):
            value = _instantiate_sums(expr, self.steps, gen)
            value = gen.instantiate(value, k, self.steps)
            zero = {s: (sp.ZeroMatrix(*s.shape) if isinstance(s, sp.MatrixSymbol) else sp.Integer(0))
                    for s in getattr(value, "free_symbols", ()) if isinstance(s, (Sensitivity, SensitivityMatrix))
                    and s not in prog}
            return value.xreplace(zero) if zero else value

        for d in gen.backward_defs:
            value = d.value.xreplace({gen.rho[s]: gen.rho_value[s] for s in gen.rho})
            for k in range(self.steps):
                target = gen.instantiate(d.target, k, self.steps)
                if target in prog and not _equal(concrete(value, k), prog[target].value):
                    diff.append(str(target))
        for p in gen.params:
            sym = self.cell.param_symbol(p)
            if not _equal(concrete(gen.gradient(p), self.steps - 1), self._gradient(sym)):
                diff.append(f"dL/d{sym}")
        return diff


def _instantiate_sums(expr, steps, gen):
    """Every step sum inside ``expr`` written out for T = ``steps`` (the unrolled program's values)."""
    if isinstance(expr, _StepSumMixin):
        return expr.at(steps, gen.instantiate)
    if not getattr(expr, "args", ()):
        return expr
    args = [_instantiate_sums(a, steps, gen) for a in expr.args]
    return expr if all(a is b for a, b in zip(args, expr.args)) else expr.func(*args)


def _equal(a, b) -> bool:
    """Equal as expressions in the program's symbols (matrix expressions: equal entrywise at a random
    exact rational point; scalars: the difference expands to zero)."""
    if isinstance(a, sp.MatrixExpr) or isinstance(b, sp.MatrixExpr):
        return _matrix_equal(a, b)
    return sp.expand(as_sympy(a) - as_sympy(b)) == 0


def _matrix_equal(a, b) -> bool:
    import random

    rng = random.Random(0)
    leaves = {s for s in (getattr(a, "free_symbols", set()) | getattr(b, "free_symbols", set())) if isinstance(s, sp.MatrixSymbol)}
    values = {s: sp.ImmutableMatrix(s.shape[0], s.shape[1], lambda i, j: sp.Rational(rng.randint(-9, 9), rng.randint(1, 5)))
              for s in leaves}

    def explicit(m):
        m = m.xreplace(values).doit()
        return sp.ImmutableMatrix(m.as_explicit() if hasattr(m, "as_explicit") else m)

    return sp.simplify(explicit(a) - explicit(b)) == sp.zeros(*a.shape)
