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

from .cell import Cell, CrossEntropy, _Symbols, _adjoint_name, _partials, error_value
from .program import Program, SquaredNorm
from .unrolled import Unrolled

__all__ = ["UnrolledCell"]


class UnrolledCell(Unrolled):
    """``cell.unroll(T)``: the named program of T steps (attributes as :class:`derive.rnn.RNN`)."""

    def __init__(self, cell: Cell, steps: int):
        self.cell, self.steps = cell, steps
        self.vector = cell.vector
        self.sym = _Symbols(cell)
        self.positions = cell.loss.positions(steps)
        self.parameters = {str(s): s for s in (cell.param_symbol(p) for p in cell.param_shapes)}
        self.x = [self.sym.seq(cell.input, k, cell.shape_of(cell.input)) for k in range(steps)]
        C = cell.target_shape()
        final = cell.loss.on == "final"
        self.y = self.sym.seq("y", None, C) if final else [self.sym.seq("y", k, C) for k in self.positions]
        self.e = self.sym.seq("e", None, C) if final else [self.sym.seq("e", k, C) for k in self.positions]

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
            return _adjoint_name(c.display.get(base, base), prog[target].step)

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
        symbol = self.program[_adjoint_name(self.cell.display.get(of, of), t)].target
        return self._closed(symbol, expand, max_terms, str(symbol))

    def loss_closed_form(self, max_terms: int | None = None):
        """L fully nested in the parameters and data (guarded): what plain ``sympy.diff`` would start from."""
        return self.program.expand(self.L, kinds=None, max_terms=max_terms, what="L")

    def check_general(self) -> list[str]:
        """Every named sensitivity and every gradient of this program against the general-t formulas at
        ``T = steps``; returns the names that differ (empty: all equal)."""
        gen = self.cell.general()
        diff = []
        prog = self.program
        for d in gen.step.definitions("backward"):
            for k in range(self.steps):
                general = _general_adjoint(gen, d, k, self.steps)
                name = str(gen.instantiate(d.target, k, self.steps, unrolled=self))
                if name not in prog._names:
                    continue
                if not _equal(general, prog[name].value.xreplace({}), prog, gen, self):
                    diff.append(name)
        for p in gen.params:
            general = gen.gradient(p)
            general = general.at(self.steps) if hasattr(general, "at") else _at_all(general, self.steps, gen, self)
            general = _at_all(general, self.steps, gen, self)
            if not _equal(general, self._gradient(self.cell.param_symbol(p)), prog, gen, self):
                diff.append(f"dL/d{p}")
        return diff


def _general_adjoint(gen, d, k, steps):
    """The general definition of a named sensitivity at step k (rho replaced by its value)."""
    value = d.value
    for s, rho in gen.rho.items():
        value = value.xreplace({rho: gen.rho_value[s]})
    return gen.instantiate(value, k, steps)


def _at_all(expr, steps, gen, unrolled):
    """Instantiate every step sum inside ``expr`` and rename its symbols to the unrolled program's."""
    from .cell import _StepSumMixin

    def walk(e):
        if isinstance(e, _StepSumMixin):
            return e.at(steps, lambda x, k, n: gen.instantiate(x, k, n, unrolled=unrolled))
        if not e.args:
            return e
        return e.func(*[walk(a) for a in e.args])

    return gen.instantiate(walk(expr), steps - 1, steps, unrolled=unrolled) if not isinstance(expr, _StepSumMixin) else walk(expr)


def _equal(a, b, prog, gen, unrolled) -> bool:
    """Equal as expressions in the program's symbols (matrix expressions: equal entrywise at a random
    exact point, after substituting every definition)."""
    if isinstance(a, sp.MatrixExpr) or isinstance(b, sp.MatrixExpr):
        return _matrix_equal(a, b, prog)
    return sp.expand(sp.sympify(a) - sp.sympify(b)) == 0


def _matrix_equal(a, b, prog) -> bool:
    import random

    rng = random.Random(0)
    leaves = {s for s in (getattr(a, "free_symbols", set()) | getattr(b, "free_symbols", set())) if isinstance(s, sp.MatrixSymbol)}
    values = {s: sp.ImmutableMatrix(s.shape[0], s.shape[1], lambda i, j: sp.Rational(rng.randint(-9, 9), rng.randint(1, 5)))
              for s in leaves}
    va = sp.ImmutableMatrix(a.xreplace(values).doit().as_explicit()) if not isinstance(a, sp.ZeroMatrix) else sp.zeros(*a.shape)
    vb = sp.ImmutableMatrix(b.xreplace(values).doit().as_explicit()) if not isinstance(b, sp.ZeroMatrix) else sp.zeros(*b.shape)
    return sp.simplify(va - vb) == sp.zeros(*va.shape)
